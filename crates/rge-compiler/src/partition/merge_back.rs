//! Merging partitions back into one graph (GE's `MergeSubGraph`, ge-reference §4.7): every
//! node but End and PlaceHolder is copied, partitions in a topological order of the partition
//! graph, nodes in partition order; then each End's producer is linked to every consumer of
//! the PlaceHolder with the same `peerIndex`. The graph keeps the original's name, attributes
//! and input/output lists.

use slotmap::SecondaryMap;

use rge_ir::{ComputeGraph, InAnchor, NodeId, OutAnchor};

use super::PartitionPlan;
use crate::attr_names::{END, PEER_INDEX, PLACEHOLDER};
use crate::error::{CompileError, CompileResult};
use crate::graph_copy::{copy_in_links, copy_node};

/// The merged graph, and the partition each of its (root) nodes came from.
#[derive(Debug, Clone)]
pub struct Merged {
    pub graph: ComputeGraph,
    pub partition_of: SecondaryMap<NodeId, u32>,
}

/// End and PlaceHolder nodes of the partition graphs by `peerIndex`: (position of the graph,
/// node).
pub(crate) type Boundaries = Vec<Option<(usize, NodeId)>>;

/// Whether node `n` of partition graph `g` (at position `p`) is an End or a PlaceHolder; one is
/// recorded in `ends` or `plds` under its `peerIndex`, which must be valid and not taken.
pub(crate) fn boundary_of(
    plan: &PartitionPlan,
    p: usize,
    g: &ComputeGraph,
    n: NodeId,
    ends: &mut Boundaries,
    plds: &mut Boundaries,
) -> Result<bool, String> {
    let op = g.op(n).expect("live node");
    let is_end = op.op_type() == END;
    if !is_end && op.op_type() != PLACEHOLDER {
        return Ok(false);
    }
    let idx = op
        .attrs()
        .get_int(PEER_INDEX)
        .ok()
        .flatten()
        .filter(|&i| i >= 0 && (i as usize) < plan.edges.len())
        .ok_or_else(|| format!("{} `{}` has no valid {PEER_INDEX}", op.op_type(), op.name()))?
        as usize;
    let slot = if is_end {
        &mut ends[idx]
    } else {
        &mut plds[idx]
    };
    if slot.replace((p, n)).is_some() {
        return Err(format!(
            "two {} nodes with {PEER_INDEX} {idx}",
            op.op_type()
        ));
    }
    Ok(true)
}

/// The producer feeding End `end` of partition graph `g`, as the merged graph's anchor
/// (`map`: the partition's nodes → merged nodes).
pub(crate) fn end_producer(
    g: &ComputeGraph,
    end: NodeId,
    map: &SecondaryMap<NodeId, NodeId>,
) -> Result<OutAnchor, String> {
    let node = g.node(end).expect("live node");
    let src = node
        .input_peers()
        .iter()
        .flatten()
        .chain(node.in_ctrl_peers())
        .next()
        .ok_or_else(|| format!("End `{}` has no producer", node.name()))?;
    let merged = map
        .get(src.node)
        .ok_or_else(|| format!("End `{}` is fed by a boundary node", node.name()))?;
    Ok(OutAnchor {
        node: *merged,
        index: src.index,
    })
}

/// The consumers of PlaceHolder `pld` of partition graph `g`, as the merged graph's anchors
/// (`map`: the partition's nodes → merged nodes).
pub(crate) fn placeholder_consumers(
    g: &ComputeGraph,
    pld: NodeId,
    map: &SecondaryMap<NodeId, NodeId>,
) -> Result<Vec<InAnchor>, String> {
    let node = g.node(pld).expect("live node");
    node.all_out_peers()
        .map(|c| {
            let to = map
                .get(c.node)
                .ok_or_else(|| format!("PlaceHolder `{}` feeds a boundary node", node.name()))?;
            Ok(InAnchor {
                node: *to,
                index: c.index,
            })
        })
        .collect()
}

/// Sets a merged graph's input and output lists from the plan's names, and restores a
/// topological node order if an optimizer left a partition out of order.
pub(crate) fn restore_io_and_order(
    plan: &PartitionPlan,
    out: &mut ComputeGraph,
) -> CompileResult<()> {
    let root = out.root();
    let ir = |e| CompileError::ir(&plan.graph_name, e);
    let find = |name: &str| out.find_node(root, name);
    let inputs: Vec<NodeId> = plan.inputs.iter().filter_map(|s| find(s)).collect();
    let outputs: Vec<(NodeId, u32)> = plan
        .outputs
        .iter()
        .filter_map(|(s, i)| find(s).map(|n| (n, *i)))
        .collect();
    out.set_input_nodes(root, inputs).map_err(ir)?;
    out.set_output_nodes(root, outputs).map_err(ir)?;
    let dense = super::dense_graph(out, root)?;
    if dense.ids.iter().copied().ne(out.nodes_of(root)) {
        out.set_node_order(root, &dense.ids).map_err(ir)?;
    }
    Ok(())
}

/// Merges `graphs` (the plan's partitions, in plan order, possibly optimized) into one graph.
pub fn merge_partitions(plan: &PartitionPlan, graphs: &[ComputeGraph]) -> CompileResult<Merged> {
    let err = |message: String| CompileError::Partition {
        graph: plan.graph_name.clone(),
        message,
    };
    if graphs.len() != plan.partitions.len() {
        return Err(err(format!(
            "{} partition graphs for {} partitions",
            graphs.len(),
            plan.partitions.len()
        )));
    }
    let order = plan
        .topological_order()
        .ok_or_else(|| err("the partition graph has a cycle".into()))?;
    let total: usize = graphs.iter().map(ComputeGraph::total_node_count).sum();
    let mut out = ComputeGraph::new(plan.graph_name.clone());
    out.reserve_nodes(total);
    let root = out.root();
    let ir = |e| CompileError::ir(&plan.graph_name, e);
    // Per partition: local node → merged node; End / PlaceHolder by peerIndex.
    let mut maps: Vec<SecondaryMap<NodeId, NodeId>> = vec![SecondaryMap::new(); graphs.len()];
    let mut ends: Boundaries = vec![None; plan.edges.len()];
    let mut plds: Boundaries = vec![None; plan.edges.len()];
    for &p in &order {
        let p = p as usize;
        let g = &graphs[p];
        for n in g.nodes_of(g.root()) {
            if boundary_of(plan, p, g, n, &mut ends, &mut plds).map_err(err)? {
                continue;
            }
            let m = copy_node(g, n, None, &mut out, root).map_err(ir)?;
            maps[p].insert(n, m);
        }
    }
    for &p in &order {
        let p = p as usize;
        let g = &graphs[p];
        for n in g.nodes_of(g.root()) {
            if maps[p].contains_key(n) {
                copy_in_links(g, n, &mut out, &maps[p]).map_err(ir)?;
            }
        }
    }
    for (idx, (end, pld)) in ends.iter().zip(&plds).enumerate() {
        let (Some((pe, end)), Some((pp, pld))) = (*end, *pld) else {
            return Err(err(format!("the End/PlaceHolder pair {idx} is incomplete")));
        };
        let from = end_producer(&graphs[pe], end, &maps[pe]).map_err(err)?;
        for to in placeholder_consumers(&graphs[pp], pld, &maps[pp]).map_err(err)? {
            if !out.is_linked(from, to) {
                out.link(from, to).map_err(ir)?;
            }
        }
    }
    *out.graph_attrs_mut(root).expect("root") = plan.graph_attrs.clone();
    restore_io_and_order(plan, &mut out)?;
    let mut partition_of = SecondaryMap::with_capacity(total);
    for (p, map) in maps.iter().enumerate() {
        for (_, &m) in map {
            partition_of.insert(m, p as u32);
        }
    }
    Ok(Merged {
        graph: out,
        partition_of,
    })
}
