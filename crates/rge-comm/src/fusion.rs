//! Communication fusion (GE's hcom_reduce_fusion), the comm engine's original-graph pass:
//! HcomAllReduce nodes with `fusion` = 2 and the same `fusion_id`, group, reduction and dtype,
//! none depending on another, become one all-reduce of a single buffer —
//! `Reshape(x_i, [-1])` each, `Concat` along 0, one `HcomAllReduce`, `Split` back into the
//! members' sizes, `Reshape` to each member's shape — so many small collectives pay one
//! latency. Members need fully known shapes; the fused node is named after the first.

use std::collections::{BTreeMap, HashSet};

use rge_engine::{EngineError, EngineResult, GraphOptimizer, GraphRewriter};
use rge_ir::{
    op_types, ComputeGraph, DataType, GraphPatch, NodeId, OpDesc, Outlet, Shape, TensorDesc,
};

/// The attribute naming the all-reduces a fused one replaced (shown by `rge explain`).
pub const FUSED_FROM_ATTR: &str = "_fused_all_reduces";

/// The comm engine's graph optimizer: the fusion pass.
#[derive(Debug, Default, Clone, Copy)]
pub struct AllReduceFusion;

/// One member: node, input source, dtype, dims.
struct Member {
    node: NodeId,
    src: rge_ir::OutAnchor,
    dims: Vec<i64>,
}

fn str_attr(op: &OpDesc, k: &str) -> String {
    op.attrs()
        .get_str(k)
        .ok()
        .flatten()
        .unwrap_or("")
        .to_string()
}

/// What all-reduces must share to fuse: (group, reduction, dtype, fusion_id).
type FusionKey = (String, String, String, i64);

/// Groups of fusable all-reduces by [`FusionKey`], in node order.
fn fusion_groups(g: &ComputeGraph) -> Vec<(DataType, Vec<Member>)> {
    let mut by: BTreeMap<FusionKey, (DataType, Vec<Member>)> = BTreeMap::new();
    for n in g.nodes_of(g.root()) {
        let Some(op) = g.op(n) else { continue };
        if op.op_type() != "HcomAllReduce" || op.attrs().get_int("fusion").ok().flatten() != Some(2)
        {
            continue;
        }
        let id = op.attrs().get_int("fusion_id").ok().flatten().unwrap_or(-1);
        let Some(desc) = op.input(0) else { continue };
        let dims = desc.shape().dims().to_vec();
        if desc.shape().is_unknown_rank() || dims.iter().any(|&d| d < 0) {
            continue;
        }
        let Some(src) = g.node(n).and_then(|x| x.peer_of_input(0)) else {
            continue;
        };
        let key = (
            str_attr(op, "group"),
            str_attr(op, "reduction"),
            format!("{:?}", desc.dtype()),
            id,
        );
        by.entry(key)
            .or_insert_with(|| (desc.dtype(), Vec::new()))
            .1
            .push(Member { node: n, src, dims });
    }
    by.into_values().filter(|(_, m)| m.len() > 1).collect()
}

/// Nodes reachable from `from` along data and control edges.
fn downstream(g: &ComputeGraph, from: NodeId) -> HashSet<NodeId> {
    let mut seen = HashSet::new();
    let mut stack = vec![from];
    while let Some(n) = stack.pop() {
        if let Some(node) = g.node(n) {
            for m in node.out_nodes() {
                if seen.insert(m) {
                    stack.push(m);
                }
            }
        }
    }
    seen
}

/// Members none of which depends on another (a later one reached from an earlier is left out).
fn independent(g: &ComputeGraph, members: Vec<Member>) -> Vec<Member> {
    let mut kept: Vec<Member> = Vec::new();
    let mut reach: HashSet<NodeId> = HashSet::new();
    for m in members {
        let down = downstream(g, m.node);
        let depends = reach.contains(&m.node) || kept.iter().any(|k| down.contains(&k.node));
        if !depends {
            reach.extend(down);
            kept.push(m);
        }
    }
    kept
}

fn desc(dtype: DataType, dims: &[i64]) -> TensorDesc {
    TensorDesc::with_shape_dtype(Shape::from_slice(dims), dtype)
}

fn int64_const(name: String, v: &[i64]) -> Result<OpDesc, String> {
    let t = rge_ir::Tensor::from_i64(Shape::new([v.len() as i64]), v);
    let mut op = OpDesc::new(name, op_types::CONST);
    op.add_output("y", t.desc.clone())
        .map_err(|e| e.to_string())?;
    op.attrs_mut().set("value", t);
    Ok(op)
}

/// The patch fusing `members` (dtype `dt`).
fn fuse(g: &ComputeGraph, dt: DataType, members: &[Member]) -> Result<GraphPatch, String> {
    let e = |x: rge_ir::IrError| x.to_string();
    let first = g.op(members[0].node).ok_or("no node")?;
    let base = first.name().to_string();
    let opset = first.opset();
    let sizes: Vec<i64> = members.iter().map(|m| m.dims.iter().product()).collect();
    let total: i64 = sizes.iter().sum();
    let mut p = GraphPatch::in_graph(g.root());
    let flat_shape = p.add_node(int64_const(format!("{base}/fusion_flat_shape"), &[-1])?);
    let mut concat = OpDesc::new(format!("{base}/fusion_concat"), "Concat");
    concat.set_opset(opset);
    concat.attrs_mut().set("axis", 0i64);
    let mut flats = Vec::new();
    for (i, m) in members.iter().enumerate() {
        let mut r = OpDesc::new(format!("{base}/fusion_flatten_{i}"), "Reshape");
        r.set_opset(opset.map(|o| o.max(5)));
        r.add_input("data", desc(dt, &m.dims)).map_err(e)?;
        r.add_input("shape", desc(DataType::Int64, &[1]))
            .map_err(e)?;
        r.add_output("reshaped", desc(dt, &[sizes[i]])).map_err(e)?;
        let ri = p.add_node(r);
        p.connect(Outlet::old(m.src.node, m.src.index as usize), ri, 0);
        p.connect(Outlet::new_node(flat_shape, 0), ri, 1);
        concat
            .add_input(&format!("inputs{i}"), desc(dt, &[sizes[i]]))
            .map_err(e)?;
        flats.push(ri);
    }
    concat
        .add_output("concat_result", desc(dt, &[total]))
        .map_err(e)?;
    let ci = p.add_node(concat);
    for (i, &ri) in flats.iter().enumerate() {
        p.connect(Outlet::new_node(ri, 0), ci, i);
    }
    let mut ar = first.clone();
    ar.set_name(format!("{base}/fused"));
    ar.attrs_mut().set("fusion", 0i64);
    ar.attrs_mut().set(
        FUSED_FROM_ATTR,
        rge_ir::AttrValue::ListString(
            members
                .iter()
                .map(|m| g.name_of(m.node).to_string())
                .collect(),
        ),
    );
    if let Some(d) = ar.input_mut(0) {
        *d = desc(dt, &[total]);
    }
    if let Some(d) = ar.output_mut(0) {
        *d = desc(dt, &[total]);
    }
    let ai = p.add_node(ar);
    p.connect(Outlet::new_node(ci, 0), ai, 0);
    let mut split = OpDesc::new(format!("{base}/fusion_split"), "Split");
    let split_opset = opset.map_or(13, |o| o.max(13));
    split.set_opset(Some(split_opset));
    split.attrs_mut().set("axis", 0i64);
    split.add_input("input", desc(dt, &[total])).map_err(e)?;
    split
        .add_input("split", desc(DataType::Int64, &[sizes.len() as i64]))
        .map_err(e)?;
    for (i, &s) in sizes.iter().enumerate() {
        split
            .add_output(&format!("outputs{i}"), desc(dt, &[s]))
            .map_err(e)?;
    }
    let split_sizes = p.add_node(int64_const(format!("{base}/fusion_split_sizes"), &sizes)?);
    let si = p.add_node(split);
    p.connect(Outlet::new_node(ai, 0), si, 0);
    p.connect(Outlet::new_node(split_sizes, 0), si, 1);
    for (i, m) in members.iter().enumerate() {
        let shape = p.add_node(int64_const(format!("{base}/fusion_shape_{i}"), &m.dims)?);
        let mut r = OpDesc::new(format!("{base}/fusion_unflatten_{i}"), "Reshape");
        r.set_opset(opset.map(|o| o.max(5)));
        r.add_input("data", desc(dt, &[sizes[i]])).map_err(e)?;
        r.add_input("shape", desc(DataType::Int64, &[m.dims.len() as i64]))
            .map_err(e)?;
        r.add_output("reshaped", desc(dt, &m.dims)).map_err(e)?;
        let ri = p.add_node(r);
        p.connect(Outlet::new_node(si, i), ri, 0);
        p.connect(Outlet::new_node(shape, 0), ri, 1);
        p.remove(m.node);
        p.shunt(m.node, 0, Outlet::new_node(ri, 0));
    }
    p.carry_control_to(rge_ir::PatchNode::New(ai));
    Ok(p)
}

/// Fuses every group in `g` (outside an engine, e.g. in tests); returns the fused nodes' names.
pub fn fuse_all_reduces(g: &mut ComputeGraph) -> Result<Vec<String>, String> {
    let mut fused = Vec::new();
    for (dt, members) in fusion_groups(g) {
        let members = independent(g, members);
        if members.len() < 2 {
            continue;
        }
        let name = format!("{}/fused", g.name_of(members[0].node));
        let patch = fuse(g, dt, &members)?;
        g.apply_patch(patch).map_err(|e| e.to_string())?;
        fused.push(name);
    }
    Ok(fused)
}

impl GraphOptimizer for AllReduceFusion {
    fn optimize_original_graph(&self, graph: &mut GraphRewriter<'_>) -> EngineResult<()> {
        let engine = graph.engine().to_string();
        let err = |e: String| EngineError::engine(engine.clone(), e);
        for (dt, members) in fusion_groups(graph.graph()) {
            let members = independent(graph.graph(), members);
            if members.len() < 2 {
                continue;
            }
            let patch = fuse(graph.graph(), dt, &members).map_err(err)?;
            graph.apply(patch)?;
        }
        Ok(())
    }
}
