//! Copying and moving nodes with their subgraphs between `ComputeGraph`s. The GE-faithful
//! partition path copies (`materialize`, `merge_partitions`); the pipeline moves ops instead
//! (`move_node`), so that a compile never clones a node's op to partition it.

use slotmap::SecondaryMap;

use rge_ir::{ComputeGraph, GraphId, IrError, NodeId, OpDesc};

/// Where a transfer gets the op of a node of the source graph.
type OpOf<'a> = dyn FnMut(&ComputeGraph, NodeId) -> Result<OpDesc, IrError> + 'a;
/// What a transfer tells about each node it added: (source node, new node).
type Record<'a> = dyn FnMut(NodeId, NodeId) + 'a;

/// Adds to graph `g` of `dst` a copy of node `n` of `src`: its op (`op` when given, else a clone)
/// and, recursively, the subgraphs it owns.
pub fn copy_node(
    src: &ComputeGraph,
    n: NodeId,
    op: Option<OpDesc>,
    dst: &mut ComputeGraph,
    g: GraphId,
) -> Result<NodeId, IrError> {
    let op = match op {
        Some(op) => op,
        None => src.op(n).ok_or(IrError::StaleNode)?.clone(),
    };
    transfer(src, n, op, dst, g, &mut clone_op, &mut |_, _| {})
}

fn clone_op(src: &ComputeGraph, n: NodeId) -> Result<OpDesc, IrError> {
    src.op(n).cloned().ok_or(IrError::StaleNode)
}

/// Moves node `n` of `src`, with the subgraphs it owns, into graph `g` of `dst`. The ops are
/// taken, not cloned: `n` stays in `src` as a shell (links and order only) for the caller to
/// remove, and its subgraphs leave `src` (their names are free again). `map` gets each moved
/// node, `n` and the nodes of its subgraphs, as source node → new node.
pub fn move_node(
    src: &mut ComputeGraph,
    n: NodeId,
    dst: &mut ComputeGraph,
    g: GraphId,
    map: &mut SecondaryMap<NodeId, NodeId>,
) -> Result<NodeId, IrError> {
    let op = src.take_op(n)?;
    if op.subgraph_instance_names().is_empty() {
        let new = dst.add_node(g, op)?;
        map.insert(n, new);
        return Ok(new);
    }
    // Take every op under `n` first; the structure is then read from `src` as for a copy.
    let mut taken = SecondaryMap::new();
    let mut owned = Vec::new();
    take_subgraph_ops(src, n, &op, &mut taken, Some(&mut owned))?;
    let new = transfer(
        src,
        n,
        op,
        dst,
        g,
        &mut |_, m| taken.remove(m).ok_or(IrError::StaleNode),
        &mut |a, b| {
            map.insert(a, b);
        },
    )?;
    for sg in owned {
        src.remove_subgraph(sg)?;
    }
    Ok(new)
}

/// Takes the ops of every node in the subgraphs `op` (node `owner`'s op) owns, recursively;
/// `top` gets the directly owned subgraphs.
fn take_subgraph_ops(
    src: &mut ComputeGraph,
    owner: NodeId,
    op: &OpDesc,
    taken: &mut SecondaryMap<NodeId, OpDesc>,
    mut top: Option<&mut Vec<GraphId>>,
) -> Result<(), IrError> {
    for name in op.subgraph_instance_names() {
        let Some(sg) = src
            .subgraph_by_name(name)
            .filter(|&sg| src.parent_node(sg) == Some(owner))
        else {
            continue;
        };
        if let Some(top) = top.as_deref_mut() {
            top.push(sg);
        }
        let nodes: Vec<NodeId> = src.nodes_of(sg).collect();
        for m in nodes {
            let mop = src.take_op(m)?;
            take_subgraph_ops(src, m, &mop, taken, None)?;
            taken.insert(m, mop);
        }
    }
    Ok(())
}

/// Adds `op` (node `n` of `src`) to graph `g` of `dst` with copies of the subgraphs it owns,
/// their nodes' ops from `op_of`.
fn transfer(
    src: &ComputeGraph,
    n: NodeId,
    mut op: OpDesc,
    dst: &mut ComputeGraph,
    g: GraphId,
    op_of: &mut OpOf<'_>,
    record: &mut Record<'_>,
) -> Result<NodeId, IrError> {
    let slots: Vec<String> = op.subgraph_instance_names().to_vec();
    if slots.is_empty() {
        let new = dst.add_node(g, op)?;
        record(n, new);
        return Ok(new);
    }
    op.clear_subgraph_instance_names();
    let new = dst.add_node(g, op)?;
    record(n, new);
    for (slot, name) in slots.iter().enumerate() {
        if name.is_empty() {
            continue;
        }
        let owned = src
            .subgraph_by_name(name)
            .filter(|&sg| src.parent_node(sg) == Some(n));
        let Some(sg) = owned else {
            // A dangling instance name, or another node's subgraph: it stays a name.
            dst.op_mut(new)
                .expect("just added")
                .set_subgraph_instance_name(slot, name.clone());
            continue;
        };
        let new_g = dst.add_subgraph(new, slot, name.clone())?;
        transfer_body(src, sg, dst, new_g, op_of, record)?;
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
    transfer_body(src, sg, dst, dg, &mut clone_op, &mut |_, _| {})
}

fn transfer_body(
    src: &ComputeGraph,
    sg: GraphId,
    dst: &mut ComputeGraph,
    dg: GraphId,
    op_of: &mut OpOf<'_>,
    record: &mut Record<'_>,
) -> Result<(), IrError> {
    let mut map: SecondaryMap<NodeId, NodeId> = SecondaryMap::new();
    let nodes: Vec<NodeId> = src.nodes_of(sg).collect();
    for &n in &nodes {
        let op = op_of(src, n)?;
        let m = transfer(src, n, op, dst, dg, op_of, record)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use rge_ir::TensorDesc;

    fn op(name: &str, ins: usize) -> OpDesc {
        let mut o = OpDesc::new(name, "T");
        for _ in 0..ins {
            o = o.with_input("", TensorDesc::default());
        }
        o.with_output("", TensorDesc::default())
    }

    /// x → c (owns `body`: a → b, where b owns `inner`: i) → y.
    fn nested() -> (ComputeGraph, NodeId) {
        let mut g = ComputeGraph::new("g");
        let root = g.root();
        let x = g.add_node(root, op("x", 0)).unwrap();
        let c = g.add_node(root, op("c", 1)).unwrap();
        let y = g.add_node(root, op("y", 1)).unwrap();
        g.add_edge(x, 0, c, 0).unwrap();
        g.add_edge(c, 0, y, 0).unwrap();
        let body = g.add_subgraph(c, 0, "body").unwrap();
        let a = g.add_node(body, op("a", 0)).unwrap();
        let b = g.add_node(body, op("b", 1)).unwrap();
        g.add_edge(a, 0, b, 0).unwrap();
        g.set_output_nodes(body, vec![(b, 0)]).unwrap();
        let inner = g.add_subgraph(b, 0, "inner").unwrap();
        g.add_node(inner, op("i", 0)).unwrap();
        (g, c)
    }

    #[test]
    fn a_moved_node_takes_its_subgraphs_and_equals_a_copy() {
        let (mut src, c) = nested();
        let mut copied = ComputeGraph::new("d");
        let mut moved = ComputeGraph::new("d");
        let (rc, rm) = (copied.root(), moved.root());
        copy_node(&src, c, None, &mut copied, rc).unwrap();
        let before: Vec<NodeId> = src
            .all_nodes(src.root())
            .into_iter()
            .filter(|&n| n != c && src.graph_of(n) != Some(src.root()))
            .collect();
        let mut map = SecondaryMap::new();
        let new = move_node(&mut src, c, &mut moved, rm, &mut map).unwrap();
        assert!(moved.structurally_equal(&copied));
        assert_eq!(moved.name_of(new), "c");
        // Every moved node is mapped to its namesake: c, a, b and i.
        assert_eq!(map.len(), 4);
        assert_eq!(map[c], new);
        for n in before {
            assert!(!src.contains_node(n), "nested nodes leave the source");
            assert!(map.contains_key(n));
        }
        // The source keeps a nameless shell with its links, and no subgraph.
        assert!(src.subgraphs().is_empty());
        assert_eq!(src.name_of(c), "");
        assert!(src.find_node(src.root(), "c").is_none());
        assert_eq!(src.node(c).unwrap().in_link_count(), 1);
        src.remove_node_unlinked(c).unwrap();
        assert_eq!(src.node_count(src.root()), 2);
        // The names are free again: the node can move back.
        let mut back = SecondaryMap::new();
        let root = src.root();
        move_node(&mut moved, new, &mut src, root, &mut back).unwrap();
        assert_eq!(src.subgraphs().len(), 2);
        assert_eq!(back.len(), 4);
    }
}
