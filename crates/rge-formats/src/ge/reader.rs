//! `ModelDef` → [`GeModel`]: graphs, nodes, edges, graph I/O and subgraph ownership
//! (reference §7.2, §7.5).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet, VecDeque};

use rge_ir::{ComputeGraph, GraphId, InAnchor, IrError, NodeId, OutAnchor, CONTROL_INDEX};

use super::error::{fault, Fault, Within};
use super::keys::DATA_INPUT_COUNT;
use super::stream::{OpSource, SplitModel};
use super::{GeModel, ReadContext};
use crate::ge_proto::{GraphDef, ModelDef, OpDef};

/// Attribute values (tensor descs, tensors, graphs, lists, named attrs) nest at most this deep.
const MAX_DEPTH: usize = 64;

/// Reading state: the context and the current nesting depth.
pub(crate) struct Reader<'c> {
    pub(crate) ctx: &'c ReadContext,
    depth: usize,
}

/// One `input` entry to link (owning its names: the op it came from may be dropped by then).
struct Edge {
    dst: NodeId,
    /// In-data anchor, or -1 for the in-control anchor.
    dst_index: i32,
    /// The entry `"<src>:<index>"`; the source's name is its first `src_len` bytes.
    entry: String,
    src_len: usize,
    /// Out-data anchor, or -1 for the out-control anchor.
    src_index: i32,
    /// `_src_out_peer_index_for_ge_txt_load` for this entry.
    key: Option<i64>,
    op: String,
}

impl Edge {
    fn src(&self) -> &str {
        &self.entry[..self.src_len]
    }
}

/// Splits `"<node>:<index>"` at the last ':'; the index is an out-data anchor or -1.
pub(crate) fn split_entry(entry: &str) -> Result<(&str, i32), Fault> {
    let Some((name, idx)) = entry.rsplit_once(':') else {
        return Err(fault(
            "no `:` separates the node name from the output index",
        ));
    };
    let idx: i32 = idx
        .parse()
        .map_err(|_| fault(format!("output index `{idx}` is not a 32-bit integer")))?;
    if idx < CONTROL_INDEX {
        return Err(fault(format!(
            "output index {idx} is negative (only -1, the control output, is allowed)"
        )));
    }
    Ok((name, idx))
}

impl<'c> Reader<'c> {
    pub(crate) fn new(ctx: &'c ReadContext) -> Self {
        Reader { ctx, depth: 0 }
    }

    pub(crate) fn enter(&mut self) -> Result<(), Fault> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(fault(format!(
                "attribute values nest more than {MAX_DEPTH} levels deep"
            )));
        }
        Ok(())
    }

    pub(crate) fn leave(&mut self) {
        self.depth -= 1;
    }

    pub(crate) fn read_model(&mut self, def: &ModelDef) -> Result<GeModel, Fault> {
        let graphs: Vec<(&GraphDef, OpSource<'_>)> = def
            .graph
            .iter()
            .map(|gd| (gd, OpSource::Decoded(&gd.op)))
            .collect();
        self.read_model_parts(def, &graphs)
    }

    /// A model split by [`SplitModel`]: each op decoded only while it is read.
    pub(crate) fn read_split_model(&mut self, m: &SplitModel) -> Result<GeModel, Fault> {
        let graphs: Vec<(&GraphDef, OpSource<'_>)> = m
            .graphs
            .iter()
            .map(|g| (&g.header, OpSource::Encoded(&g.ops)))
            .collect();
        self.read_model_parts(&m.header, &graphs)
    }

    /// `def`'s fields but its graphs, and the graphs (their ops from the sources).
    fn read_model_parts(
        &mut self,
        def: &ModelDef,
        graphs: &[(&GraphDef, OpSource<'_>)],
    ) -> Result<GeModel, Fault> {
        let attrs = self
            .read_attrs(&def.attr, &|_| false)
            .within(|| "model attrs".into())?;
        let Some(&(root_def, _)) = graphs.first() else {
            return Err(fault("the model holds no graph (graph[0] is the root)"));
        };
        let mut names = HashSet::new();
        for (i, (gd, _)) in graphs.iter().enumerate() {
            if !names.insert(gd.name.as_str()) {
                return Err(fault(format!(
                    "graph[{i}] is named `{}` like an earlier graph; graph names must be unique",
                    gd.name
                )));
            }
        }
        let mut cg = ComputeGraph::new(root_def.name.clone());
        let mut ids = vec![cg.root()];
        for (gd, _) in &graphs[1..] {
            ids.push(cg.add_detached_subgraph(gd.name.clone())?);
        }
        for (&(gd, ops), &g) in graphs.iter().zip(&ids) {
            self.fill_graph(&mut cg, g, gd, ops, true)
                .within(|| format!("graph `{}`", gd.name))?;
        }
        self.rebuild_ownership(&mut cg)?;
        Ok(GeModel {
            name: def.name.clone(),
            version: def.version,
            custom_version: def.custom_version.clone(),
            attrs,
            graph: cg,
        })
    }

    /// A graph held in an attribute (`g`, `list.g`): one graph, subgraphs not resolved.
    pub(crate) fn read_nested_graph(&mut self, gd: &GraphDef) -> Result<ComputeGraph, Fault> {
        let mut cg = ComputeGraph::new(gd.name.clone());
        let root = cg.root();
        self.fill_graph(&mut cg, root, gd, OpSource::Decoded(&gd.op), false)
            .within(|| format!("graph `{}`", gd.name))?;
        Ok(cg)
    }

    /// Fills graph `g` from `gd` (its ops from `ops`): attrs, nodes, edges, inputs and outputs.
    fn fill_graph(
        &mut self,
        cg: &mut ComputeGraph,
        g: GraphId,
        gd: &GraphDef,
        ops: OpSource<'_>,
        top: bool,
    ) -> Result<(), Fault> {
        let attrs = self
            .read_attrs(&gd.attr, &|_| false)
            .within(|| "graph attrs".into())?;
        if let Some(a) = cg.graph_attrs_mut(g) {
            *a = attrs;
        }
        let mut edges = Vec::new();
        ops.for_each(|od| -> Result<(), Fault> {
            let place = || format!("op `{}` ({})", od.name, od.r#type);
            let rd = self.read_op(od).within(place)?;
            let mut op = rd.op;
            if top {
                self.load_external_weights(&mut op).within(place)?;
            }
            let n = cg.add_node(g, op).within(place)?;
            parse_inputs(
                od,
                n,
                rd.peer_keys.as_deref(),
                rd.data_input_count,
                &mut edges,
            )
            .within(place)
        })?;
        link_edges(cg, g, &edges)?;
        for (k, entry) in gd.input.iter().enumerate() {
            let place = || format!("graph input[{k}] `{entry}`");
            let (name, _) = split_entry(entry).within(place)?;
            let n = cg
                .find_node(g, name)
                .ok_or_else(|| fault(format!("no node named `{name}`")))
                .within(place)?;
            cg.add_input_node(n).within(place)?;
        }
        for (k, entry) in gd.output.iter().enumerate() {
            let place = || format!("graph output[{k}] `{entry}`");
            let (name, idx) = split_entry(entry).within(place)?;
            let n = cg
                .find_node(g, name)
                .ok_or_else(|| fault(format!("no node named `{name}`")))
                .within(place)?;
            let idx = u32::try_from(idx)
                .map_err(|_| fault("a graph output must be a data output"))
                .within(place)?;
            cg.add_output_node(n, idx).within(place)?;
        }
        Ok(())
    }

    /// GE's RebuildOwnership: a BFS from the root over `subgraph_name`, making each named
    /// graph a subgraph of the naming node. Unnamed graphs stay detached.
    fn rebuild_ownership(&mut self, cg: &mut ComputeGraph) -> Result<(), Fault> {
        let root = cg.root();
        let root_name = cg.name().to_string();
        let mut owner: HashMap<GraphId, String> = HashMap::new();
        let mut queue = VecDeque::from([root]);
        while let Some(g) = queue.pop_front() {
            let gname = cg.graph_name(g).unwrap_or_default().to_string();
            let nodes: Vec<NodeId> = cg.nodes_of(g).collect();
            for n in nodes {
                let op_name = cg.name_of(n).to_string();
                let subs = cg.op(n).map(|o| o.subgraph_instance_names().to_vec());
                for s in subs.unwrap_or_default() {
                    if s.is_empty() {
                        continue;
                    }
                    let place = || format!("graph `{gname}`, op `{op_name}`");
                    if s == root_name {
                        return Err(fault(format!(
                            "op `{op_name}` names the root graph `{s}` as its subgraph \
                             (cyclic ownership)"
                        )))
                        .within(place);
                    }
                    let Some(sg) = cg.subgraph_by_name(&s) else {
                        if self.ctx.options.allow_missing_subgraphs {
                            continue;
                        }
                        return Err(Fault::missing_subgraph(&op_name, &s)).within(place);
                    };
                    if let Some(first) = owner.get(&sg) {
                        return Err(fault(format!(
                            "subgraph `{s}` already belongs to op `{first}` \
                             (shared or cyclic ownership)"
                        )))
                        .within(place);
                    }
                    owner.insert(sg, op_name.clone());
                    cg.set_subgraph_parent(sg, n).within(place)?;
                    queue.push_back(sg);
                }
            }
        }
        Ok(())
    }
}

/// Turns an op's `input` list into edges. Without `_rge_data_input_count`, GE's rule: a counter
/// names the in-data anchor and advances for "" and every index ≥ 0; index -1 is a control
/// edge. With it, the first entries map one to one onto in-data anchors and the rest onto the
/// in-control anchor, whatever their indexes (cross links).
fn parse_inputs(
    od: &OpDef,
    dst: NodeId,
    keys: Option<&[i64]>,
    data_count: Option<i64>,
    edges: &mut Vec<Edge>,
) -> Result<(), Fault> {
    let n_in = od.input_desc.len();
    let data_part = match data_count {
        None => None,
        Some(m) => match usize::try_from(m) {
            Ok(m) if m <= od.input.len() && m <= n_in => Some(m),
            _ => {
                return Err(fault(format!(
                    "attr `{DATA_INPUT_COUNT}` is {m}, but the op has {} input entries and {n_in} \
                     input descs",
                    od.input.len()
                )))
            }
        },
    };
    let mut counter = 0usize;
    for (k, entry) in od.input.iter().enumerate() {
        let place = || format!("input[{k}] `{entry}`");
        let positional = data_part.map(|m| k < m);
        if entry.is_empty() {
            if positional == Some(false) {
                return Err(fault("an empty entry among the control inputs")).within(place);
            }
            counter += 1;
            continue;
        }
        let (src, src_index) = split_entry(entry).within(place)?;
        let dst_index = match positional {
            Some(true) => k,
            Some(false) => usize::MAX,
            None if src_index >= 0 => {
                counter += 1;
                counter - 1
            }
            None => usize::MAX,
        };
        let dst_index = if dst_index == usize::MAX {
            CONTROL_INDEX
        } else if dst_index < n_in {
            dst_index as i32
        } else {
            return Err(fault(format!(
                "the entry feeds input {dst_index}, but the op has {n_in} input descs"
            )))
            .within(place);
        };
        edges.push(Edge {
            dst,
            dst_index,
            entry: entry.clone(),
            src_len: src.len(),
            src_index,
            key: keys.map(|k2| k2[k]),
            op: od.name.clone(),
        });
    }
    Ok(())
}

/// Links the edges of one graph. Each source anchor's peers are linked in the order of their
/// peer keys (file order without keys), and each in-control anchor's peers in file order.
fn link_edges(cg: &mut ComputeGraph, g: GraphId, edges: &[Edge]) -> Result<(), Fault> {
    let place = |e: &Edge| format!("op `{}`, input `{}`", e.op, e.entry);
    let mut resolved = Vec::with_capacity(edges.len());
    for e in edges {
        let Some(src) = cg.find_node(g, e.src()) else {
            return Err(fault(format!("no node named `{}` in this graph", e.src())))
                .within(|| place(e));
        };
        let outs = cg.node(src).map_or(0, |n| n.out_data_count());
        if e.src_index >= 0 && e.src_index as usize >= outs {
            return Err(fault(format!(
                "`{}` has {outs} outputs, so no output {}",
                e.src(),
                e.src_index
            )))
            .within(|| place(e));
        }
        resolved.push((
            OutAnchor {
                node: src,
                index: e.src_index,
            },
            InAnchor {
                node: e.dst,
                index: e.dst_index,
            },
        ));
    }
    for i in link_order(edges, &resolved) {
        let (s, d) = resolved[i];
        match cg.link(s, d) {
            Ok(()) => {}
            // A repeated control input: GE's LinkTo fails and it goes on.
            Err(IrError::AlreadyLinked { .. }) if d.index == CONTROL_INDEX => {}
            Err(e) => return Err(Fault::from(e)).within(|| place(&edges[i])),
        }
    }
    Ok(())
}

/// The order to link edges in: a topological order of the constraints "before the next peer of
/// the same source anchor" (by peer key, then file order) and "before the next peer of the same
/// in-control anchor" (file order), smallest file position first. A cycle among them (possible
/// only with hand-made peer keys) is broken at the smallest file position.
fn link_order(edges: &[Edge], resolved: &[(OutAnchor, InAnchor)]) -> Vec<usize> {
    let n = edges.len();
    const NONE: usize = usize::MAX;
    let mut succ = vec![[NONE; 2]; n];
    let mut indeg = vec![0u8; n];
    let mut by_src: HashMap<OutAnchor, Vec<usize>> = HashMap::new();
    let mut by_dst: HashMap<NodeId, Vec<usize>> = HashMap::new();
    for (i, (s, d)) in resolved.iter().enumerate() {
        by_src.entry(*s).or_default().push(i);
        if d.index == CONTROL_INDEX {
            by_dst.entry(d.node).or_default().push(i);
        }
    }
    for chain in by_src.values_mut() {
        chain.sort_by_key(|&i| (edges[i].key.is_none(), edges[i].key, i));
        for w in chain.windows(2) {
            succ[w[0]][0] = w[1];
            indeg[w[1]] += 1;
        }
    }
    for chain in by_dst.values() {
        for w in chain.windows(2) {
            succ[w[0]][1] = w[1];
            indeg[w[1]] += 1;
        }
    }
    let mut heap: BinaryHeap<Reverse<usize>> =
        (0..n).filter(|&i| indeg[i] == 0).map(Reverse).collect();
    let mut done = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut next = 0;
    while order.len() < n {
        let i = match heap.pop() {
            Some(Reverse(i)) if done[i] => continue,
            Some(Reverse(i)) => i,
            None => {
                while done[next] {
                    next += 1;
                }
                next
            }
        };
        done[i] = true;
        order.push(i);
        for s in succ[i] {
            if s != NONE && !done[s] {
                indeg[s] -= 1;
                if indeg[s] == 0 {
                    heap.push(Reverse(s));
                }
            }
        }
    }
    order
}
