//! What the graph passes share: reading the graph around a node (producers, readers,
//! constants), the checks every rewrite makes (no control edges, not a graph output), and
//! making the fused op and its patch.

use std::collections::HashSet;

use rge_ir::{
    op_types, AttrValue, ComputeGraph, DataType, GraphId, GraphPatch, NodeId, OpDesc, OutAnchor,
    Outlet, Tensor as IrTensor, TensorDesc,
};

use super::REWRITE_ATTR;

/// The op of `n` when it is `op_type` in the ONNX domain.
pub fn onnx_op<'g>(g: &'g ComputeGraph, n: NodeId, op_type: &str) -> Option<&'g OpDesc> {
    let op = g.op(n)?;
    (op.op_type() == op_type && (op.domain().is_empty() || op.domain() == "ai.onnx")).then_some(op)
}

/// True when `n` is `op_type` in the ONNX domain.
pub fn is_op(g: &ComputeGraph, n: NodeId, op_type: &str) -> bool {
    onnx_op(g, n, op_type).is_some()
}

/// The producer of data input `i` of `n`.
pub fn producer(g: &ComputeGraph, n: NodeId, i: usize) -> Option<OutAnchor> {
    g.node(n)?.peer_of_input(i).filter(|a| !a.is_control())
}

/// The outlet of an existing anchor.
pub fn outlet(a: OutAnchor) -> Outlet {
    Outlet::old(a.node, a.index.max(0) as usize)
}

/// The desc of output anchor `a`.
pub fn out_desc(g: &ComputeGraph, a: OutAnchor) -> Option<&TensorDesc> {
    g.op(a.node)?.output(a.index.max(0) as usize)
}

/// The dtype of output anchor `a`.
pub fn out_dtype(g: &ComputeGraph, a: OutAnchor) -> Option<DataType> {
    out_desc(g, a).map(TensorDesc::dtype)
}

/// The fully known dims of output anchor `a`.
pub fn known_dims(g: &ComputeGraph, a: OutAnchor) -> Option<Vec<i64>> {
    let d = out_desc(g, a)?;
    let s = d.shape();
    (!s.is_unknown_rank() && s.is_fully_known()).then(|| s.dims().to_vec())
}

/// The rank of output anchor `a`, when known.
pub fn rank_of(g: &ComputeGraph, a: OutAnchor) -> Option<usize> {
    out_desc(g, a)?.shape().rank()
}

/// True when `n` has control edges.
pub fn has_control(g: &ComputeGraph, n: NodeId) -> bool {
    g.node(n)
        .is_some_and(|nd| !nd.in_ctrl_peers().is_empty() || !nd.out_ctrl_peers().is_empty())
}

/// True when an output of `n` is a graph output (listed, or read by a NetOutput).
pub fn is_graph_output(g: &ComputeGraph, n: NodeId) -> bool {
    if g.graph_of(n).is_none() || g.is_output_node(n) {
        return true;
    }
    g.node(n).is_some_and(|nd| {
        (0..nd.out_data_count()).any(|o| {
            nd.peers_of_output(o).iter().any(|p| {
                g.op(p.node)
                    .is_some_and(|x| x.op_type() == op_types::NET_OUTPUT)
            })
        })
    })
}

/// The readers of output `o` of `n`: (node, input index).
pub fn readers(g: &ComputeGraph, n: NodeId, o: usize) -> Vec<(NodeId, usize)> {
    g.node(n).map_or_else(Vec::new, |nd| {
        nd.peers_of_output(o)
            .iter()
            .map(|p| (p.node, p.index.max(0) as usize))
            .collect()
    })
}

/// The only reader of output `o` of `n`, when `n` is not a graph output, reads nothing else
/// from `n`, and has no control edges.
pub fn single_reader(g: &ComputeGraph, n: NodeId, o: usize) -> Option<(NodeId, usize)> {
    let r = readers(g, n, o);
    if r.len() != 1 || is_graph_output(g, n) || has_control(g, n) {
        return None;
    }
    Some(r[0])
}

/// True when `n` is a plain node a rewrite may remove: live, no control edges, no subgraphs,
/// not a graph output.
pub fn removable(g: &ComputeGraph, n: NodeId) -> bool {
    g.node(n).is_some()
        && !has_control(g, n)
        && !is_graph_output(g, n)
        && g.node_subgraphs(n).is_empty()
        && g.op(n)
            .is_some_and(|o| o.subgraph_instance_names().is_empty())
}

/// An inner value of a pattern: `n`'s only output is read exactly by `expect` readers, every
/// one of them inside the pattern, and `n` may be removed.
pub fn inner(g: &ComputeGraph, n: NodeId, inside: &[NodeId]) -> bool {
    removable(g, n)
        && g.node(n).is_some_and(|nd| {
            (0..nd.out_data_count()).all(|o| {
                nd.peers_of_output(o)
                    .iter()
                    .all(|p| inside.contains(&p.node))
            })
        })
}

/// The tensor of a constant node (Const/Constant with a value, no inputs).
pub fn const_tensor(g: &ComputeGraph, n: NodeId) -> Option<&IrTensor> {
    let node = g.node(n)?;
    if node.input_peers().iter().any(Option::is_some) {
        return None;
    }
    node.op().const_value()
}

/// The constant feeding data input `i` of `n`.
pub fn input_const(g: &ComputeGraph, n: NodeId, i: usize) -> Option<&IrTensor> {
    let a = producer(g, n, i)?;
    if a.index != 0 {
        return None;
    }
    const_tensor(g, a.node)
}

/// The values of a float constant (f32, f64 or f16) as f64.
pub fn float_values(t: &IrTensor) -> Option<Vec<f64>> {
    let d = &t.data;
    match t.desc.dtype() {
        DataType::Float => Some(
            d.chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]) as f64)
                .collect(),
        ),
        DataType::Double => Some(
            d.chunks_exact(8)
                .map(|c| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(c);
                    f64::from_le_bytes(b)
                })
                .collect(),
        ),
        DataType::Float16 => Some(
            d.chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f64())
                .collect(),
        ),
        _ => None,
    }
}

/// The value of a one-element float constant.
pub fn scalar_value(t: &IrTensor) -> Option<f64> {
    let v = float_values(t)?;
    (v.len() == 1).then(|| v[0])
}

/// The values of an integer constant (i64 or i32).
pub fn int_values(t: &IrTensor) -> Option<Vec<i64>> {
    match t.desc.dtype() {
        DataType::Int64 => t.as_i64().ok(),
        DataType::Int32 => t
            .as_i32()
            .ok()
            .map(|v| v.into_iter().map(i64::from).collect()),
        _ => None,
    }
}

/// The one-element float constant feeding input `i` of `n`.
pub fn input_scalar(g: &ComputeGraph, n: NodeId, i: usize) -> Option<f64> {
    scalar_value(input_const(g, n, i)?)
}

/// Whether `v` is `want` to within `tol` relative.
pub fn near(v: f64, want: f64, tol: f64) -> bool {
    (v - want).abs() <= tol * want.abs().max(1e-30)
}

/// For a two-input node `n` reading `from` on one input: (that input, the other's producer).
pub fn other_input(g: &ComputeGraph, n: NodeId, from: OutAnchor) -> Option<(usize, OutAnchor)> {
    let node = g.node(n)?;
    if node.in_data_count() != 2 {
        return None;
    }
    let (a, b) = (producer(g, n, 0)?, producer(g, n, 1)?);
    if a == from && b != from {
        Some((0, b))
    } else if b == from && a != from {
        Some((1, a))
    } else {
        None
    }
}

/// For a two-input node `n` with one constant scalar input: (the other input, the scalar).
pub fn scalar_operand(g: &ComputeGraph, n: NodeId) -> Option<(OutAnchor, f64)> {
    let node = g.node(n)?;
    if node.in_data_count() != 2 {
        return None;
    }
    for (c, x) in [(1, 0), (0, 1)] {
        if let Some(v) = input_scalar(g, n, c) {
            if input_const(g, n, x).is_none() {
                return Some((producer(g, n, x)?, v));
            }
        }
    }
    None
}

/// A name free in graph `gid` and not in `taken`, from `base`.
pub fn unique_name(g: &ComputeGraph, gid: GraphId, base: &str, taken: &HashSet<String>) -> String {
    let free = |s: &str| g.find_node(gid, s).is_none() && !taken.contains(s);
    if free(base) {
        return base.to_string();
    }
    (1..)
        .map(|k| format!("{base}_{k}"))
        .find(|s| free(s))
        .unwrap_or_else(|| base.to_string())
}

/// A new op the fusion passes make: `op_type` of `opset`, named after `base`, with `inputs`
/// descs and one output of `out` (the desc of the value it takes over, graph-output name
/// included).
pub struct NewOp<'a> {
    pub base: String,
    pub op_type: &'a str,
    pub opset: i64,
    pub inputs: Vec<(&'a str, TensorDesc)>,
    pub out: TensorDesc,
}

/// The op of `spec`, recording the pass and the nodes it replaces ([`REWRITE_ATTR`]).
pub fn fused_op(
    g: &ComputeGraph,
    spec: NewOp<'_>,
    pass: &str,
    replaced: &[NodeId],
) -> Result<OpDesc, String> {
    let name = unique_name(g, g.root(), &spec.base, &HashSet::new());
    let mut op = OpDesc::new(name, spec.op_type);
    op.set_opset(Some(spec.opset));
    for (n, d) in spec.inputs {
        op.add_input(n, d).map_err(|e| e.to_string())?;
    }
    op.add_output("Y", spec.out).map_err(|e| e.to_string())?;
    let mut list = vec![pass.to_string()];
    list.extend(replaced.iter().map(|&n| g.name_of(n).to_string()));
    op.attrs_mut()
        .set(REWRITE_ATTR, AttrValue::ListString(list));
    Ok(op)
}

/// Removes from `patch` the constant nodes among `consts` that only `removed` nodes read.
pub fn drop_dead_consts(
    g: &ComputeGraph,
    patch: &mut GraphPatch,
    consts: &[NodeId],
    removed: &HashSet<NodeId>,
) {
    let mut seen = HashSet::new();
    for &c in consts {
        if !seen.insert(c) || removed.contains(&c) || const_tensor(g, c).is_none() {
            continue;
        }
        let Some(node) = g.node(c) else { continue };
        let only_removed = node
            .peers_of_output(0)
            .iter()
            .all(|p| removed.contains(&p.node));
        if only_removed && !is_graph_output(g, c) && !has_control(g, c) {
            patch.remove(c);
        }
    }
}

/// The constant producers of every data input of `nodes`.
pub fn const_inputs_of(g: &ComputeGraph, nodes: &[NodeId]) -> Vec<NodeId> {
    let mut out = Vec::new();
    for &n in nodes {
        let Some(node) = g.node(n) else { continue };
        for i in 0..node.in_data_count() {
            if let Some(a) = producer(g, n, i) {
                if const_tensor(g, a.node).is_some() {
                    out.push(a.node);
                }
            }
        }
    }
    out
}

/// Replaces the pattern `nodes` (the last one's output 0 taken over) by `op`, fed from
/// `inputs`; the constants only the pattern read go too. Applies the patch; false (nothing
/// done) when a node of the pattern has control edges or subgraphs.
pub fn replace_pattern(
    g: &mut ComputeGraph,
    nodes: &[NodeId],
    last: NodeId,
    op: OpDesc,
    inputs: &[Option<OutAnchor>],
) -> Result<bool, String> {
    if nodes
        .iter()
        .any(|&n| has_control(g, n) || !g.node_subgraphs(n).is_empty())
    {
        return Ok(false);
    }
    let gid = g.graph_of(last).ok_or("stale node")?;
    let mut patch = GraphPatch::in_graph(gid);
    for &n in nodes {
        patch.remove(n);
    }
    let k = patch.add_node(op);
    for (i, a) in inputs.iter().enumerate() {
        if let Some(a) = a {
            patch.connect(outlet(*a), k, i);
        }
    }
    patch.shunt(last, 0, Outlet::new_node(k, 0));
    let removed: HashSet<NodeId> = nodes.iter().copied().collect();
    // Constants the new node reads stay.
    let consts: Vec<NodeId> = const_inputs_of(g, nodes)
        .into_iter()
        .filter(|c| !inputs.iter().flatten().any(|a| a.node == *c))
        .collect();
    drop_dead_consts(g, &mut patch, &consts, &removed);
    patch.drop_control();
    g.apply_patch(patch).map_err(|e| e.to_string())?;
    Ok(true)
}

/// Removes `n`, its readers of output 0 reading `to` instead. Applies the patch.
pub fn bypass(g: &mut ComputeGraph, n: NodeId, to: OutAnchor) -> Result<(), String> {
    let gid = g.graph_of(n).ok_or("stale node")?;
    let mut patch = GraphPatch::in_graph(gid);
    patch.remove(n).shunt(n, 0, outlet(to));
    // Constants only `n` read go, unless its readers now read one.
    let consts: Vec<NodeId> = const_inputs_of(g, &[n])
        .into_iter()
        .filter(|&c| c != to.node)
        .collect();
    let removed: HashSet<NodeId> = [n].into_iter().collect();
    drop_dead_consts(g, &mut patch, &consts, &removed);
    patch.drop_control();
    g.apply_patch(patch).map_err(|e| e.to_string())?;
    Ok(())
}

/// The root graph's nodes, in a snapshot (rewrites may remove some while a pass walks them).
pub fn root_nodes(g: &ComputeGraph) -> Vec<NodeId> {
    g.nodes_of(g.root()).collect()
}

/// The root graph's nodes in a topological order: the graph's shared topology (its own order
/// when it already is one, as frontends leave it); a graph with a cycle gives its own order.
pub fn topological_root_nodes(g: &ComputeGraph) -> Vec<NodeId> {
    g.topology(g.root())
        .map(|t| t.ids.clone())
        .unwrap_or_else(|_| root_nodes(g))
}

/// The graph attribute prefix of the imported opsets (rge-ops' `OPSET_ATTR_PREFIX`).
const OPSET_PREFIX: &str = "_onnx_opset_";

/// The ONNX-domain opset of `op`: its own record, else the root graph's import (`None` when
/// neither says).
pub fn onnx_opset(g: &ComputeGraph, op: &OpDesc) -> Option<i64> {
    op.opset().or_else(|| {
        let attrs = g.graph_attrs(g.root())?;
        ["", "ai.onnx"]
            .iter()
            .find_map(|d| match attrs.get(&format!("{OPSET_PREFIX}{d}")) {
                Some(AttrValue::Int(v)) => Some(*v),
                _ => None,
            })
    })
}

/// The `perm` of a Transpose of rank `rank` (reversed dims by default).
pub fn transpose_perm(op: &OpDesc, rank: usize) -> Option<Vec<usize>> {
    match op.attrs().get_list_int("perm").ok().flatten() {
        Some(p) => {
            let p: Option<Vec<usize>> = p.iter().map(|&x| usize::try_from(x).ok()).collect();
            let p = p?;
            let mut seen = vec![false; p.len()];
            for &x in &p {
                if x >= p.len() || std::mem::replace(&mut seen[x], true) {
                    return None;
                }
            }
            (p.len() == rank).then_some(p)
        }
        None => Some((0..rank).rev().collect()),
    }
}

/// A Const op named `name` holding `t`, its output desc `desc` with `t`'s type and shape.
pub fn const_op(name: String, t: IrTensor, mut desc: TensorDesc) -> OpDesc {
    desc.set_dtype(t.desc.dtype());
    desc.set_shape(t.desc.shape().clone());
    if desc.origin_shape_initialized() {
        desc.set_origin_shape(t.desc.shape().clone());
        desc.set_origin_dtype(t.desc.dtype());
    }
    let mut op = OpDesc::new(name, op_types::CONST);
    // A new op has no output yet, so adding one cannot fail.
    let _ = op.add_output("y", desc);
    op.attrs_mut().set("value", t);
    op
}
