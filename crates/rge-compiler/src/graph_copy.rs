//! Copying nodes with their subgraphs between `ComputeGraph`s (rge-ir has no cross-graph move):
//! partitions take copies of the original nodes, and merging copies them back.

use slotmap::SecondaryMap;

use rge_ir::{ComputeGraph, GraphId, IrError, NodeId, OpDesc};

/// Adds to graph `g` of `dst` a copy of node `n` of `src`: its op (`op` when given, else a clone)
/// and, recursively, the subgraphs it owns.
pub fn copy_node(
    src: &ComputeGraph,
    n: NodeId,
    op: Option<OpDesc>,
    dst: &mut ComputeGraph,
    g: GraphId,
) -> Result<NodeId, IrError> {
    let mut op = match op {
        Some(op) => op,
        None => src.op(n).ok_or(IrError::StaleNode)?.clone(),
    };
    let slots: Vec<String> = op.subgraph_instance_names().to_vec();
    if slots.is_empty() {
        return dst.add_node(g, op);
    }
    op.clear_subgraph_instance_names();
    let new = dst.add_node(g, op)?;
    for (slot, name) in slots.iter().enumerate() {
        if name.is_empty() {
            continue;
        }
        let Some(sg) = src.subgraph_by_name(name) else {
            // A dangling instance name stays a name.
            dst.op_mut(new)
                .expect("just added")
                .set_subgraph_instance_name(slot, name.clone());
            continue;
        };
        if src.parent_node(sg) != Some(n) {
            dst.op_mut(new)
                .expect("just added")
                .set_subgraph_instance_name(slot, name.clone());
            continue;
        }
        let new_g = dst.add_subgraph(new, slot, name.clone())?;
        copy_graph_body(src, sg, dst, new_g)?;
    }
    Ok(new)
}

/// Copies the nodes, links, attributes and input/output lists of `src`'s graph `sg` into the
/// empty graph `dg` of `dst`.
pub fn copy_graph_body(
    src: &ComputeGraph,
    sg: GraphId,
    dst: &mut ComputeGraph,
    dg: GraphId,
) -> Result<(), IrError> {
    let mut map: SecondaryMap<NodeId, NodeId> = SecondaryMap::new();
    let nodes: Vec<NodeId> = src.nodes_of(sg).collect();
    for &n in &nodes {
        let m = copy_node(src, n, None, dst, dg)?;
        map.insert(n, m);
    }
    for &n in &nodes {
        copy_in_links(src, n, dst, &map)?;
    }
    if let Some(a) = src.graph_attrs(sg) {
        *dst.graph_attrs_mut(dg).ok_or(IrError::StaleGraph)? = a.clone();
    }
    let inputs = src
        .input_nodes(sg)
        .iter()
        .filter_map(|i| map.get(*i).copied())
        .collect();
    dst.set_input_nodes(dg, inputs)?;
    let outputs = src
        .output_nodes(sg)
        .iter()
        .filter_map(|&(o, i)| map.get(o).map(|&m| (m, i)))
        .collect();
    dst.set_output_nodes(dg, outputs)
}

/// Links, in `dst`, every in-link of `src`'s node `n` whose producer is mapped.
pub fn copy_in_links(
    src: &ComputeGraph,
    n: NodeId,
    dst: &mut ComputeGraph,
    map: &SecondaryMap<NodeId, NodeId>,
) -> Result<(), IrError> {
    let node = src.node(n).ok_or(IrError::StaleNode)?;
    let to = map[n];
    for (i, p) in node.input_peers().iter().enumerate() {
        if let Some(p) = p {
            if let Some(&from) = map.get(p.node) {
                dst.link(
                    rge_ir::OutAnchor {
                        node: from,
                        index: p.index,
                    },
                    to.input(i),
                )?;
            }
        }
    }
    for p in node.in_ctrl_peers() {
        if let Some(&from) = map.get(p.node) {
            dst.link(
                rge_ir::OutAnchor {
                    node: from,
                    index: p.index,
                },
                to.in_ctrl(),
            )?;
        }
    }
    Ok(())
}
