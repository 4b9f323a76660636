//! Applying a [`GraphPatch`]: a plan is made and checked on the unchanged graph (handles,
//! graph, ports, names, subgraphs, every kept consumer of a removed output remapped, one source
//! per in-data anchor, control edges accounted for, no cycle), and only then carried out by
//! steps that cannot fail. So a refused patch leaves the graph exactly as it was.

use smallvec::SmallVec;

use crate::error::AnchorSide;
use crate::graph::{ComputeGraph, GraphId};
use crate::node::{InAnchor, Node, NodeId, OutAnchor, CONTROL_INDEX};
use crate::patch::{ControlCarry, GraphPatch, Outlet, PatchError, PatchNode, PatchResult};
use crate::patch_ranks::TopoRanks;
use crate::small_set::{SmallMap, SmallSet};

/// A node of the patched graph: kept, or new by patch index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum V {
    Old(NodeId),
    New(usize),
}

/// An anchor of the patched graph (`CONTROL_INDEX` for the control anchor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct At {
    v: V,
    index: i32,
}

impl At {
    fn out(a: OutAnchor) -> Self {
        At {
            v: V::Old(a.node),
            index: a.index,
        }
    }
    fn input(a: InAnchor) -> Self {
        At {
            v: V::Old(a.node),
            index: a.index,
        }
    }
    fn ctrl(v: V) -> Self {
        At {
            v,
            index: CONTROL_INDEX,
        }
    }
}

/// Where the new nodes go in the node order.
#[derive(Debug, Clone, Copy)]
enum Position {
    After(NodeId),
    Front,
    Back,
}

/// Everything `commit` does, decided and checked beforehand.
pub(crate) struct Plan {
    g: GraphId,
    removed: Vec<NodeId>,
    /// Links to make, without duplicates, none already present.
    links: Vec<(At, At)>,
    /// Kept links to cut (rewired inputs).
    unlinks: Vec<(OutAnchor, InAnchor)>,
    /// The graph's new output list, when a removed node was on it.
    outputs: Vec<(usize, V, u32)>,
    /// `(subgraph, new node)`: subgraphs a new node takes over from a removed one.
    takeovers: Vec<(GraphId, usize)>,
    position: Position,
}

/// The checks, over the unchanged graph.
struct Checker<'a> {
    graph: &'a ComputeGraph,
    patch: &'a GraphPatch,
    g: GraphId,
    removed: SmallSet<NodeId>,
    links: Vec<(At, At)>,
    seen: SmallSet<(At, At)>,
    /// In-data anchors given a source, so none gets two.
    assigned: SmallSet<At>,
}

impl<'a> Checker<'a> {
    fn gname(&self) -> &str {
        self.graph.graph_name(self.g).unwrap_or("?")
    }

    fn name(&self, v: V) -> String {
        match v {
            V::Old(n) => self.graph.name_of(n).to_string(),
            V::New(k) => self.patch.nodes[k].name().to_string(),
        }
    }

    /// A live node of the patched graph.
    fn old(&self, n: NodeId, what: impl FnOnce() -> String) -> Result<&'a Node, PatchError> {
        let node = self
            .graph
            .node(n)
            .ok_or_else(|| PatchError::StaleNode { what: what() })?;
        if node.graph() != self.g {
            return Err(PatchError::WrongGraph {
                node: node.name().to_string(),
                graph: self.graph.graph_name(node.graph()).unwrap_or("?").into(),
                expected: self.gname().into(),
            });
        }
        Ok(node)
    }

    fn new_index(&self, k: usize) -> Result<(), PatchError> {
        if k >= self.patch.nodes.len() {
            return Err(PatchError::NoSuchNewNode {
                index: k,
                count: self.patch.nodes.len(),
            });
        }
        Ok(())
    }

    /// A data outlet the patched graph has: of a new node, or of a kept one.
    fn outlet(&self, o: Outlet, what: impl Fn() -> String) -> Result<At, PatchError> {
        let (v, out, node, count) = match o {
            Outlet::New { node, out } => {
                self.new_index(node)?;
                let op = &self.patch.nodes[node];
                (V::New(node), out, op.name(), op.output_count())
            }
            Outlet::Old { node, out } => {
                let n = self.old(node, &what)?;
                if self.removed.contains(&node) {
                    return Err(PatchError::ReadsRemoved {
                        node: n.name().to_string(),
                        index: out,
                        what: what(),
                    });
                }
                (V::Old(node), out, n.name(), n.out_data_count())
            }
        };
        if out >= count {
            return Err(PatchError::AnchorOutOfRange {
                node: node.to_string(),
                side: AnchorSide::Out,
                index: out,
                count,
            });
        }
        Ok(At {
            v,
            index: out as i32,
        })
    }

    fn patch_node(&self, p: PatchNode, what: &str) -> Result<V, PatchError> {
        match p {
            PatchNode::New(k) => {
                self.new_index(k)?;
                Ok(V::New(k))
            }
            PatchNode::Old(n) => {
                let node = self.old(n, || what.to_string())?;
                if self.removed.contains(&n) {
                    return Err(PatchError::ControlToRemoved {
                        node: node.name().to_string(),
                    });
                }
                Ok(V::Old(n))
            }
        }
    }

    /// Plans link `src → dst`; an in-data destination takes one source only.
    fn link(&mut self, src: At, dst: At) -> Result<(), PatchError> {
        if dst.index != CONTROL_INDEX && !self.assigned.insert(dst) {
            return Err(PatchError::InputLinkedTwice {
                node: self.name(dst.v),
                index: dst.index as usize,
            });
        }
        if let (V::Old(s), V::Old(d)) = (src.v, dst.v) {
            // A kept control link already there stays as it is (kept data inputs were cut).
            let (sa, da) = (
                OutAnchor {
                    node: s,
                    index: src.index,
                },
                InAnchor {
                    node: d,
                    index: dst.index,
                },
            );
            if dst.index == CONTROL_INDEX && self.graph.is_linked(sa, da) {
                return Ok(());
            }
        }
        if self.seen.insert((src, dst)) {
            self.links.push((src, dst));
        }
        Ok(())
    }
}

impl ComputeGraph {
    /// Applies `patch`: everything is checked first, and a refused patch changes nothing.
    pub fn apply_patch(&mut self, patch: GraphPatch) -> Result<PatchResult, PatchError> {
        self.apply_patch_protecting(patch, &[])
    }

    /// [`ComputeGraph::apply_patch`], refusing to remove nodes of the `protected` op types
    /// (a fused-graph optimization keeps its partition's `End` and `PlaceHolder` nodes).
    pub fn apply_patch_protecting(
        &mut self,
        patch: GraphPatch,
        protected: &[&str],
    ) -> Result<PatchResult, PatchError> {
        // The ranks are taken out while the patch's own edits invalidate the field, then put
        // back kept valid (or forgotten when the patch left no room).
        let g = self.patch_graph(&patch)?;
        let mut ranks = std::mem::take(&mut self.topo_ranks);
        let held = ranks.of(self, g);
        let plan = match self.plan_patch(&patch, protected, held) {
            Ok(plan) => plan,
            Err(e) => {
                self.topo_ranks = ranks;
                return Err(e);
            }
        };
        let links: Vec<(V, V)> = plan.links.iter().map(|(s, d)| (s.v, d.v)).collect();
        let result = self.commit_patch(patch, plan);
        if let Ok(r) = &result {
            ranks.absorb(&links, &r.nodes);
        } else {
            ranks.invalidate();
        }
        self.topo_ranks = ranks;
        result
    }

    /// The graph a patch edits: its own, else that of the first existing node it names.
    fn patch_graph(&self, p: &GraphPatch) -> Result<GraphId, PatchError> {
        if let Some(g) = p.graph {
            return self
                .contains_graph(g)
                .then_some(g)
                .ok_or(PatchError::StaleGraph);
        }
        let named = p
            .remove
            .iter()
            .copied()
            .chain(p.inputs.iter().filter_map(|(o, _, _)| match o {
                Outlet::Old { node, .. } => Some(*node),
                Outlet::New { .. } => None,
            }))
            .chain(p.rewires.iter().map(|r| r.0))
            .chain(
                p.control_edges
                    .iter()
                    .flat_map(|&(a, b)| [a, b])
                    .filter_map(|x| match x {
                        PatchNode::Old(n) => Some(n),
                        PatchNode::New(_) => None,
                    }),
            );
        Ok(named
            .filter_map(|n| self.graph_of(n))
            .next()
            .unwrap_or(self.root))
    }

    pub(crate) fn plan_patch(
        &self,
        p: &GraphPatch,
        protected: &[&str],
        ranks: Option<&TopoRanks>,
    ) -> Result<Plan, PatchError> {
        let g = self.patch_graph(p)?;
        let mut c = Checker {
            graph: self,
            patch: p,
            g,
            removed: SmallSet::new(),
            links: Vec::new(),
            seen: SmallSet::new(),
            assigned: SmallSet::new(),
        };
        let gd = &self.graphs[g];
        let mut removed = Vec::with_capacity(p.remove.len());
        for (i, &n) in p.remove.iter().enumerate() {
            let node = c.old(n, || format!("removed node #{i}"))?;
            if protected.contains(&node.op_type()) {
                return Err(PatchError::Protected {
                    node: node.name().to_string(),
                    op_type: node.op_type().to_string(),
                });
            }
            if gd.inputs.contains(&n) {
                return Err(PatchError::RemovesGraphInput {
                    node: node.name().to_string(),
                    graph: gd.name.clone(),
                });
            }
            if c.removed.insert(n) {
                removed.push(n);
            }
        }

        // Names are unique per graph; a new node may reuse a removed node's name.
        let mut names = SmallSet::new();
        for op in &p.nodes {
            let taken = self
                .find_node(g, op.name())
                .is_some_and(|e| !c.removed.contains(&e));
            if taken || !names.insert(op.name()) {
                return Err(PatchError::DuplicateName {
                    graph: gd.name.clone(),
                    name: op.name().to_string(),
                });
            }
        }
        let takeovers = self.plan_takeovers(p, &c.removed)?;

        for &(from, k, j) in &p.inputs {
            c.new_index(k)?;
            let op = &p.nodes[k];
            if j >= op.input_count() {
                return Err(PatchError::AnchorOutOfRange {
                    node: op.name().to_string(),
                    side: AnchorSide::In,
                    index: j,
                    count: op.input_count(),
                });
            }
            let src = c.outlet(from, || format!("input {j} of new node `{}`", op.name()))?;
            c.link(
                src,
                At {
                    v: V::New(k),
                    index: j as i32,
                },
            )?;
        }

        let mut shunts: SmallMap<(NodeId, usize), At> = SmallMap::new();
        for &(n, o, to) in &p.shunts {
            let node = c.old(n, || "a shunted node".into())?;
            if !c.removed.contains(&n) {
                return Err(PatchError::ShuntNotRemoved {
                    node: node.name().to_string(),
                    index: o,
                });
            }
            check_range(node, AnchorSide::Out, o)?;
            let src = c.outlet(to, || {
                format!("the replacement of output {o} of `{}`", node.name())
            })?;
            if shunts.insert((n, o), src).is_some() {
                return Err(PatchError::ShuntTwice {
                    node: node.name().to_string(),
                    index: o,
                });
            }
        }

        let mut unlinks = Vec::new();
        for &(n, j, from) in &p.rewires {
            let node = c.old(n, || "a rewired node".into())?;
            if c.removed.contains(&n) {
                return Err(PatchError::RewireRemoved {
                    node: node.name().to_string(),
                    index: j,
                });
            }
            check_range(node, AnchorSide::In, j)?;
            let src = c.outlet(from, || format!("input {j} of `{}`", node.name()))?;
            c.link(src, At::input(n.input(j)))?;
            if let Some(cur) = node
                .peer_of_input(j)
                .filter(|s| !c.removed.contains(&s.node))
            {
                unlinks.push((cur, n.input(j)));
            }
        }

        // The removed nodes' edges with kept nodes: data consumers need a shunt (or a rewire);
        // anything through a control anchor is a control edge for the carry.
        let mut ctrl_in: Vec<(NodeId, OutAnchor)> = Vec::new();
        let mut ctrl_out: Vec<(NodeId, InAnchor)> = Vec::new();
        for &r in &removed {
            let node = &self.nodes[r];
            for (o, peers) in node.out_data.iter().enumerate() {
                for &d in peers {
                    if c.removed.contains(&d.node) {
                        continue;
                    }
                    if d.is_control() {
                        ctrl_out.push((r, d));
                    } else if let Some(&src) = shunts.get(&(r, o)) {
                        c.link(src, At::input(d))?;
                    } else if !c.assigned.contains(&At::input(d)) {
                        return Err(PatchError::UnmappedOutput {
                            node: node.name().to_string(),
                            index: o,
                            consumer: format!("`{}:{}`", self.name_of(d.node), d.index),
                        });
                    }
                }
            }
            for &d in node.ctrl_out() {
                if !c.removed.contains(&d.node) {
                    ctrl_out.push((r, d));
                }
            }
            // A control producer of a data input counts as a control edge too.
            let ctrl_sources = node.in_data.iter().flatten().filter(|s| s.is_control());
            for &s in ctrl_sources.chain(node.ctrl_in()) {
                if !c.removed.contains(&s.node) {
                    ctrl_in.push((r, s));
                }
            }
        }
        let outputs = self.plan_outputs(g, &c.removed, &shunts)?;

        match p.control {
            ControlCarry::Unset => {
                let first = ctrl_in
                    .first()
                    .map(|&(r, s)| (r, s.node))
                    .or_else(|| ctrl_out.first().map(|&(r, d)| (r, d.node)));
                if let Some((r, peer)) = first {
                    return Err(PatchError::ControlUnhandled {
                        node: self.name_of(r).to_string(),
                        peer: self.name_of(peer).to_string(),
                    });
                }
            }
            ControlCarry::Drop => {}
            ControlCarry::To(t) => {
                let tv = c.patch_node(t, "the control carry target")?;
                for (_, s) in ctrl_in {
                    if V::Old(s.node) != tv {
                        c.link(At::out(s), At::ctrl(tv))?;
                    }
                }
                for (_, d) in ctrl_out {
                    if V::Old(d.node) != tv {
                        c.link(At::ctrl(tv), At::input(d))?;
                    }
                }
            }
        }
        for &(a, b) in &p.control_edges {
            let (va, vb) = (
                c.patch_node(a, "a control edge's source")?,
                c.patch_node(b, "a control edge's destination")?,
            );
            if va == vb {
                return Err(PatchError::Cycle {
                    nodes: vec![c.name(va), c.name(vb)],
                });
            }
            c.link(At::ctrl(va), At::ctrl(vb))?;
        }

        let cut: SmallSet<(OutAnchor, InAnchor)> = unlinks.iter().copied().collect();
        check_acyclic(&c, &cut, ranks)?;
        let position = self.patch_position(p, &removed, &c.removed);
        Ok(Plan {
            g,
            removed,
            links: c.links,
            unlinks,
            outputs,
            takeovers,
            position,
        })
    }

    /// Subgraphs named by new ops: each must belong to a removed node, and go to one new node.
    fn plan_takeovers(
        &self,
        p: &GraphPatch,
        removed: &SmallSet<NodeId>,
    ) -> Result<Vec<(GraphId, usize)>, PatchError> {
        let mut out: Vec<(GraphId, usize)> = Vec::new();
        for (k, op) in p.nodes.iter().enumerate() {
            for s in op
                .subgraph_instance_names()
                .iter()
                .filter(|s| !s.is_empty())
            {
                let err = |problem: &str| PatchError::Subgraph {
                    node: op.name().to_string(),
                    subgraph: s.clone(),
                    problem: problem.to_string(),
                };
                let sg = self
                    .subgraph_by_name(s)
                    .ok_or_else(|| err("does not exist"))?;
                if !self.parent_node(sg).is_some_and(|pn| removed.contains(&pn)) {
                    return Err(err("does not belong to a node the patch removes"));
                }
                if out.iter().any(|&(o, _)| o == sg) {
                    return Err(err("another new node takes too"));
                }
                out.push((sg, k));
            }
        }
        Ok(out)
    }

    /// The entries of the output list that name removed nodes, each with the shunt that
    /// replaces it: (position, new source, its output). Only those entries change, so a patch
    /// costs its own size, not the list's (a graph with thousands of outputs had each patch
    /// rebuild them all).
    fn plan_outputs(
        &self,
        g: GraphId,
        removed: &SmallSet<NodeId>,
        shunts: &SmallMap<(NodeId, usize), At>,
    ) -> Result<Vec<(usize, V, u32)>, PatchError> {
        let gd = &self.graphs[g];
        let mut hit: Vec<NodeId> = removed
            .iter()
            .filter(|n| gd.output_refs.contains_key(n))
            .collect();
        // In list order, so that an error names the first entry at fault.
        hit.sort_unstable_by_key(|&n| gd.output_positions(n)[0]);
        let mut out = Vec::new();
        for n in hit {
            let node = &self.nodes[n];
            for &pos in gd.output_positions(n) {
                let (pos, i) = (pos as usize, gd.outputs[pos as usize].1);
                if node.out_data.is_empty() {
                    return Err(PatchError::RemovesGraphOutput {
                        node: node.name().to_string(),
                        graph: gd.name.clone(),
                    });
                }
                let src =
                    shunts
                        .get(&(n, i as usize))
                        .ok_or_else(|| PatchError::UnmappedOutput {
                            node: node.name().to_string(),
                            index: i as usize,
                            consumer: format!("the output list of graph `{}`", gd.name),
                        })?;
                out.push((pos, src.v, src.index as u32));
            }
        }
        Ok(out)
    }

    /// New nodes go where the first removed node was (after its nearest kept predecessor);
    /// with nothing removed, after the first existing producer they read, else at the end.
    fn patch_position(
        &self,
        p: &GraphPatch,
        removed: &[NodeId],
        set: &SmallSet<NodeId>,
    ) -> Position {
        if let Some(&first) = removed.first() {
            let mut prev = self.nodes[first].prev;
            while let Some(x) = prev.filter(|x| set.contains(x)) {
                prev = self.nodes[x].prev;
            }
            return prev.map_or(Position::Front, Position::After);
        }
        p.inputs
            .iter()
            .find_map(|(o, _, _)| match o {
                Outlet::Old { node, .. } => Some(Position::After(*node)),
                Outlet::New { .. } => None,
            })
            .unwrap_or(Position::Back)
    }

    /// Carries out a checked plan. Nothing here can fail on a plan `plan_patch` made.
    fn commit_patch(&mut self, patch: GraphPatch, plan: Plan) -> Result<PatchResult, PatchError> {
        let g = plan.g;
        // Detached, a taken-over subgraph survives the removal of its old parent.
        for &(sg, _) in &plan.takeovers {
            self.graphs[sg].parent_node = None;
        }
        for &(s, d) in &plan.unlinks {
            self.unlink_unchecked(s, d);
        }
        // The output entries of removed nodes are let go first (their nodes then leave
        // without a search of the list) and filled once the new nodes exist.
        for &(pos, _, _) in &plan.outputs {
            self.graphs[g].release_output(pos);
        }
        let mut removed = Vec::with_capacity(plan.removed.len());
        for &r in &plan.removed {
            removed.push(self.remove_node_unlinked(r)?);
        }
        let mut ids = Vec::with_capacity(patch.nodes.len());
        let mut pos = plan.position;
        for op in patch.nodes {
            let id = self.add_node(g, op)?;
            match pos {
                Position::After(p) => {
                    self.layout_remove(id);
                    self.layout_insert_after(p, id);
                }
                Position::Front => {
                    self.layout_remove(id);
                    match self.graphs[g].first {
                        Some(first) => self.layout_insert_before(first, id),
                        None => self.layout_push_back(g, id),
                    }
                }
                Position::Back => {}
            }
            if !matches!(pos, Position::Back) {
                pos = Position::After(id);
            }
            ids.push(id);
        }
        for &(sg, k) in &plan.takeovers {
            let d = &mut self.graphs[sg];
            d.parent_node = Some(ids[k]);
            d.parent_graph = Some(g);
        }
        let node_of = |v: V| match v {
            V::Old(n) => n,
            V::New(k) => ids[k],
        };
        for &(s, d) in &plan.links {
            let (s, d) = (
                OutAnchor {
                    node: node_of(s.v),
                    index: s.index,
                },
                InAnchor {
                    node: node_of(d.v),
                    index: d.index,
                },
            );
            if !self.is_linked(s, d) {
                self.link_unchecked(s, d);
            }
        }
        for &(pos, v, i) in &plan.outputs {
            self.graphs[g].fill_output(pos, node_of(v), i);
        }
        Ok(PatchResult {
            nodes: ids,
            removed,
        })
    }
}

fn check_range(node: &Node, side: AnchorSide, index: usize) -> Result<(), PatchError> {
    let count = match side {
        AnchorSide::In => node.in_data_count(),
        AnchorSide::Out => node.out_data_count(),
    };
    if index >= count {
        return Err(PatchError::AnchorOutOfRange {
            node: node.name().to_string(),
            side,
            index,
            count,
        });
    }
    Ok(())
}

/// True when no new cycle can exist by ranks alone: no planned link joins two new nodes, and
/// every kept node a planned link leaves ranks below every kept node a planned link enters.
/// A new cycle holds a planned link into a kept node `d` (a new node's links all lead to kept
/// ones), and from `d` it must climb kept links to the kept source of a planned link: ranked
/// at least as high as `d`. A region replaced by one node (the fused engine's, one patch per
/// region) always separates so: its inputs come before it, its readers after.
fn ranks_separate(links: &[(At, At)], ranks: &TopoRanks) -> bool {
    let (mut top_source, mut low_dest) = (0u64, u64::MAX);
    for &(s, d) in links {
        match (s.v, d.v) {
            (V::New(_), V::New(_)) => return false,
            (sv, dv) => {
                if let V::Old(n) = sv {
                    let Some(r) = ranks.get(n) else { return false };
                    top_source = top_source.max(r);
                }
                if let V::Old(n) = dv {
                    let Some(r) = ranks.get(n) else { return false };
                    low_dest = low_dest.min(r);
                }
            }
        }
    }
    top_source < low_dest
}

/// Refuses a plan whose result has a cycle. A new cycle runs through a planned link, so a
/// depth-first search from the planned links' destinations over the patched graph (kept
/// links minus those cut or into removed nodes, plus the planned ones) finds it; it visits
/// only what lies downstream of the patch.
///
/// With `ranks`, kept nodes ranked above every kept source of a planned link are not visited:
/// kept links only climb in rank, so no path from there leads back into a cycle.
fn check_acyclic(
    c: &Checker<'_>,
    cut: &SmallSet<(OutAnchor, InAnchor)>,
    ranks: Option<&TopoRanks>,
) -> Result<(), PatchError> {
    if ranks.is_some_and(|r| ranks_separate(&c.links, r)) {
        return Ok(());
    }
    let mut extra: SmallMap<V, SmallVec<[V; 2]>> = SmallMap::new();
    for &(s, d) in &c.links {
        extra.get_or_insert_with(s.v, SmallVec::new).push(d.v);
    }
    // The highest rank a node on a new cycle can have (`None`: no bound known).
    let bound = ranks.and_then(|r| {
        c.links.iter().try_fold(0u64, |m, (s, _)| match s.v {
            V::Old(n) => r.get(n).map(|x| m.max(x)),
            V::New(_) => Some(m),
        })
    });
    let beyond = |n: NodeId| match (bound, ranks.and_then(|r| r.get(n))) {
        (Some(b), Some(x)) => x > b,
        _ => false,
    };
    let succs = |v: V| -> SmallVec<[V; 4]> {
        let mut out: SmallVec<[V; 4]> = extra
            .get(&v)
            .map_or_else(SmallVec::new, |x| x.iter().copied().collect());
        if let V::Old(n) = v {
            let node = &c.graph.nodes[n];
            let lists = node
                .out_data
                .iter()
                .enumerate()
                .map(|(i, l)| (n.out(i), l.as_slice()))
                .chain(std::iter::once((n.out_ctrl(), node.ctrl_out())));
            for (src, list) in lists {
                for &d in list {
                    if !c.removed.contains(&d.node) && !cut.contains(&(src, d)) && !beyond(d.node) {
                        out.push(V::Old(d.node));
                    }
                }
            }
        }
        out
    };
    // 1: on the stack, 2: done.
    let mut color: SmallMap<V, u8> = SmallMap::new();
    for &(_, start) in &c.links {
        if color.get(&start.v).is_some() {
            continue;
        }
        let mut stack: Vec<(V, SmallVec<[V; 4]>, usize)> = vec![(start.v, succs(start.v), 0)];
        color.insert(start.v, 1);
        while let Some((v, next, i)) = stack.last_mut() {
            let Some(&w) = next.get(*i) else {
                color.insert(*v, 2);
                stack.pop();
                continue;
            };
            *i += 1;
            match color.get(&w) {
                Some(1) => {
                    let from = stack.iter().position(|(x, _, _)| *x == w).unwrap_or(0);
                    let mut nodes: Vec<String> =
                        stack[from..].iter().map(|(x, _, _)| c.name(*x)).collect();
                    nodes.push(c.name(w));
                    return Err(PatchError::Cycle { nodes });
                }
                Some(_) => {}
                None => {
                    color.insert(w, 1);
                    let s = succs(w);
                    stack.push((w, s, 0));
                }
            }
        }
    }
    Ok(())
}
