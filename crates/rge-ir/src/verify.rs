//! The verifier: one function that checks every structural invariant of a `ComputeGraph`.
//! Tests call it after each mutation; loaders call it before handing a graph out.

use rayon::prelude::*;

use crate::error::{IrError, Result};
use crate::graph::{ComputeGraph, GraphId};
use crate::node::{InAnchor, NodeId, OutAnchor, CONTROL_INDEX};

/// At most this many problems are listed in one error.
const MAX_PROBLEMS: usize = 20;

struct Problems(Vec<String>);

/// Nodes per parallel part of the node checks.
const VERIFY_CHUNK: usize = 4096;

impl Problems {
    fn push(&mut self, msg: String) {
        if self.0.len() < MAX_PROBLEMS {
            self.0.push(msg);
        }
    }
}

impl ComputeGraph {
    /// Checks peer symmetry, one peer per in-data anchor, anchor counts and indexes, links inside
    /// one graph, unique node names per graph, input/output lists, subgraph ownership and names,
    /// and that each graph's order holds exactly its nodes.
    pub fn verify(&self) -> Result<()> {
        let mut p = Problems(Vec::new());
        self.verify_orders(&mut p);
        // The long out lists (wide fan-out) as sets, so each in-link is checked in O(1).
        let long: hashbrown::HashMap<OutAnchor, hashbrown::HashSet<InAnchor>> = self
            .nodes
            .iter()
            .flat_map(|(id, n)| {
                n.out_data
                    .iter()
                    .enumerate()
                    .map(move |(i, l)| (id.out(i), l.as_slice()))
                    .chain(std::iter::once((id.out_ctrl(), n.ctrl_out())))
            })
            .filter(|(_, l)| l.len() > LONG_LIST)
            .map(|(a, l)| (a, l.iter().copied().collect()))
            .collect();
        // Each node's checks read only the graph: a large graph's in parts on the rayon pool
        // it runs in, the problems kept in node order (a tenth of reading a 100k-node model
        // was this loop).
        let ids: Vec<NodeId> = self.nodes.keys().collect();
        let check = |chunk: &[NodeId]| {
            let mut p = Problems(Vec::new());
            for &id in chunk {
                self.verify_node(id, &long, &mut p);
                let node = &self.nodes[id];
                if !self.graphs.contains_key(node.graph) {
                    p.push(format!("node `{}` belongs to a removed graph", node.name()));
                }
            }
            p
        };
        let per_chunk: Vec<Problems> = if ids.len() > VERIFY_CHUNK {
            ids.par_chunks(VERIFY_CHUNK).map(check).collect()
        } else {
            vec![check(&ids)]
        };
        for msg in per_chunk.into_iter().flat_map(|c| c.0) {
            p.push(msg);
        }
        self.verify_io_lists(&mut p);
        self.verify_subgraphs(&mut p);
        if p.0.is_empty() {
            Ok(())
        } else {
            Err(IrError::Verify(p.0.join("; ")))
        }
    }

    fn verify_orders(&self, p: &mut Problems) {
        let mut total = 0usize;
        for (g, d) in &self.graphs {
            let mut count = 0usize;
            let mut prev: Option<NodeId> = None;
            let mut cur = d.first;
            while let Some(n) = cur {
                let Some(node) = self.nodes.get(n) else {
                    p.push(format!("order of graph `{}` holds a removed node", d.name));
                    break;
                };
                if node.graph != g {
                    p.push(format!(
                        "order of graph `{}` holds node `{}` of another graph",
                        d.name,
                        node.name()
                    ));
                }
                if node.prev != prev {
                    p.push(format!(
                        "node `{}` has a wrong back link in the order",
                        node.name()
                    ));
                }
                count += 1;
                if count > self.nodes.len() {
                    p.push(format!("order of graph `{}` loops", d.name));
                    break;
                }
                prev = Some(n);
                cur = node.next;
            }
            if d.last != prev {
                p.push(format!("graph `{}` has a wrong last node", d.name));
            }
            if count != d.len {
                p.push(format!(
                    "graph `{}` counts {} nodes, its order holds {count}",
                    d.name, d.len
                ));
            }
            if d.names.len() != d.len {
                p.push(format!(
                    "graph `{}` indexes {} names for {} nodes (duplicate or stale names)",
                    d.name,
                    d.names.len(),
                    d.len
                ));
            }
            for n in self.nodes_of(g).take(d.len) {
                if self.find_node(g, self.nodes[n].name()) != Some(n) {
                    p.push(format!(
                        "graph `{}` does not find node `{}` by its name (duplicate name?)",
                        d.name,
                        self.nodes[n].name()
                    ));
                }
            }
            total += count;
        }
        if total != self.nodes.len() {
            p.push(format!(
                "{} nodes exist, the graph orders hold {total}",
                self.nodes.len()
            ));
        }
    }

    fn out_list(&self, a: OutAnchor) -> Option<&[InAnchor]> {
        let n = self.nodes.get(a.node)?;
        if a.index == CONTROL_INDEX {
            Some(n.ctrl_out())
        } else {
            n.out_data
                .get(usize::try_from(a.index).ok()?)
                .map(|v| v.as_slice())
        }
    }

    fn verify_node(
        &self,
        id: NodeId,
        long: &hashbrown::HashMap<OutAnchor, hashbrown::HashSet<InAnchor>>,
        p: &mut Problems,
    ) {
        let node = &self.nodes[id];
        let name = node.name();
        if node.in_data.len() != node.op.input_count() {
            p.push(format!(
                "node `{name}` has {} in-data anchors for {} input descs",
                node.in_data.len(),
                node.op.input_count()
            ));
        }
        if node.out_data.len() != node.op.output_count() {
            p.push(format!(
                "node `{name}` has {} out-data anchors for {} output descs",
                node.out_data.len(),
                node.op.output_count()
            ));
        }
        let ins = node
            .in_data
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|s| (s, id.input(i))))
            .chain(node.ctrl_in().iter().map(|&s| (s, id.in_ctrl())));
        for (src, dst) in ins {
            match self.out_list(src) {
                None => p.push(format!(
                    "input {} of `{name}` points at missing anchor {}:{}",
                    dst.index,
                    self.name_of(src.node),
                    src.index
                )),
                Some(list) => {
                    // A long list (wide fan-out) is checked through a set: linear overall.
                    let hits = if let Some(set) = long.get(&src) {
                        usize::from(set.contains(&dst))
                    } else {
                        list.iter().filter(|&&x| x == dst).count()
                    };
                    if hits != 1 {
                        p.push(format!(
                            "link {}:{} -> {name}:{} is recorded {hits} times at the source",
                            self.name_of(src.node),
                            src.index,
                            dst.index
                        ));
                    }
                    if self.nodes[src.node].graph != node.graph {
                        p.push(format!(
                            "`{name}` is linked from another graph's node `{}`",
                            self.name_of(src.node)
                        ));
                    }
                }
            }
        }
        let ctrl_in = node.ctrl_in();
        for k in repeats(ctrl_in) {
            p.push(format!(
                "in-control anchor of `{name}` lists `{}` twice",
                self.name_of(ctrl_in[k].node)
            ));
        }
        let outs = node
            .out_data
            .iter()
            .enumerate()
            .map(|(i, l)| (id.out(i), l.as_slice()))
            .chain(std::iter::once((id.out_ctrl(), node.ctrl_out())));
        for (src, list) in outs {
            for k in repeats(list) {
                p.push(format!(
                    "output {} of `{name}` lists `{}:{}` twice",
                    src.index,
                    self.name_of(list[k].node),
                    list[k].index
                ));
            }
            for dst in list {
                let Some(peer) = self.nodes.get(dst.node) else {
                    p.push(format!(
                        "output {} of `{name}` points at a removed node",
                        src.index
                    ));
                    continue;
                };
                let back = if dst.index == CONTROL_INDEX {
                    peer.ctrl_in().contains(&src)
                } else {
                    usize::try_from(dst.index)
                        .ok()
                        .and_then(|i| peer.in_data.get(i))
                        .is_some_and(|s| *s == Some(src))
                };
                if !back {
                    p.push(format!(
                        "link {name}:{} -> {}:{} is missing at the destination",
                        src.index,
                        peer.name(),
                        dst.index
                    ));
                }
            }
        }
    }

    fn verify_io_lists(&self, p: &mut Problems) {
        for (g, d) in &self.graphs {
            for &n in &d.inputs {
                if self.nodes.get(n).is_none_or(|x| x.graph != g) {
                    p.push(format!(
                        "input list of graph `{}` names a node not in it",
                        d.name
                    ));
                }
            }
            for &(n, i) in &d.outputs {
                match self.nodes.get(n) {
                    Some(x) if x.graph == g => {
                        if !x.out_data.is_empty() && i as usize >= x.out_data.len() {
                            p.push(format!(
                                "graph `{}` outputs `{}:{i}`, which has no such output",
                                d.name,
                                x.name()
                            ));
                        }
                    }
                    _ => p.push(format!(
                        "output list of graph `{}` names a node not in it",
                        d.name
                    )),
                }
            }
        }
    }

    fn verify_subgraphs(&self, p: &mut Problems) {
        if self.graphs.len() != self.subgraphs.len() + 1 {
            p.push(format!(
                "{} graphs exist, the root lists {} subgraphs",
                self.graphs.len(),
                self.subgraphs.len()
            ));
        }
        if self.subgraph_names.len() != self.subgraphs.len() {
            p.push("subgraph name index is out of step with the subgraph list".into());
        }
        for &g in &self.subgraphs {
            let Some(d) = self.graphs.get(g) else {
                p.push("the subgraph list names a removed graph".into());
                continue;
            };
            if g == self.root {
                p.push("the root graph is listed as its own subgraph".into());
            }
            if self.subgraph_names.get(&d.name) != Some(&g) {
                p.push(format!("subgraph `{}` is not found by its name", d.name));
            }
            if let Some(pn) = d.parent_node {
                match self.nodes.get(pn) {
                    None => p.push(format!("subgraph `{}` has a removed parent node", d.name)),
                    Some(parent) => {
                        if !parent.op.subgraph_instance_names().contains(&d.name) {
                            p.push(format!(
                                "parent node `{}` does not name its subgraph `{}`",
                                parent.name(),
                                d.name
                            ));
                        }
                        if d.parent_graph != Some(parent.graph) {
                            p.push(format!(
                                "subgraph `{}` has a parent graph other than its parent node's",
                                d.name
                            ));
                        }
                    }
                }
            }
            if self.owner_chain_len(g).is_none() {
                p.push(format!("subgraph `{}` is its own ancestor", d.name));
            }
        }
        for node in self.nodes.values() {
            for s in node.op.subgraph_instance_names() {
                if s.is_empty() {
                    continue;
                }
                match self.subgraph_names.get(s) {
                    None => p.push(format!(
                        "node `{}` names missing subgraph `{s}`",
                        node.name()
                    )),
                    Some(&g) => {
                        if self
                            .graphs
                            .get(g)
                            .and_then(|d| d.parent_node)
                            .map(|pn| self.name_of(pn))
                            != Some(node.name())
                        {
                            p.push(format!(
                                "subgraph `{s}` of node `{}` has another parent",
                                node.name()
                            ));
                        }
                    }
                }
            }
        }
    }

    /// Steps from `g` up to the root, or None on an ownership cycle.
    fn owner_chain_len(&self, g: GraphId) -> Option<usize> {
        let mut cur = g;
        for steps in 0..=self.graphs.len() {
            match self.graphs.get(cur)?.parent_graph {
                None => return Some(steps),
                Some(pg) => cur = pg,
            }
        }
        None
    }
}

/// Lists longer than this are checked through hash sets.
const LONG_LIST: usize = 32;

/// The indexes of `list` whose entry appeared before (through a set for long lists, so a wide
/// fan-out is checked in linear time).
fn repeats<T: std::hash::Hash + Eq + Copy>(list: &[T]) -> Vec<usize> {
    if list.len() <= LONG_LIST {
        return (0..list.len())
            .filter(|&k| list[..k].contains(&list[k]))
            .collect();
    }
    let mut seen = hashbrown::HashSet::with_capacity(list.len());
    (0..list.len()).filter(|&k| !seen.insert(list[k])).collect()
}
