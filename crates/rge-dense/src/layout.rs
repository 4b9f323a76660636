//! Channels-last regions: the dense engine's choice of layout (`engines.md`'s private formats;
//! GE inserts TransData at the borders of the ops that want another format).
//!
//! In NCHW a depthwise convolution works plane by plane (a padded copy of each channel, or
//! 16×16 transposes into blocks), a 1×1 convolution over a small plane is a GEMM whose
//! columns are the few pixels, and a 3×3 one is Winograd or an im2col GEMM. Channels-last
//! (NHWC) makes every tap of a filter a few contiguous channel vectors: a depthwise filter
//! runs on whole vectors, a 1×1 convolution is a GEMM over pixels × output channels with the
//! input read in place, and any other one runs directly (`direct_nhwc.rs`: no patch matrix,
//! the weights in L1/L2, 74–85% of the FMA peak). So connected groups of convolutions (through
//! their data input and residual) — MobileNet's inverted residual blocks, ResNet's stages —
//! are rewritten to `ai.rge` FusedConvNhwc, with a Transpose into NHWC where a value enters
//! the region and one back where a value leaves it (to a node outside or as a graph output):
//! never between two ops of the region.
//!
//! What a region takes: Conv or FusedConv, 2-D, f32, every shape known, constant weights (and
//! bias), ungrouped or depthwise, no control edges. Groups of fewer than three convolutions
//! stay in NCHW (the two Transposes would cost what they save), and a convolution outside a
//! region keeps the NCHW kernels (Winograd for 3×3 stride 1). Measured on ResNet-18 against
//! NCHW with Winograd: 28.2 → 26.4 ms at 1 thread, 16.0 → 14.6 at 2.

use std::collections::{HashMap, HashSet};

use rge_ir::{
    AttrValue, ComputeGraph, Format, GraphPatch, NodeId, OpDesc, OutAnchor, Outlet, Shape,
    TensorDesc,
};

use crate::conv_nhwc::supported_grouping;
use crate::fuse::{has_control, is_f32_out, producer, FUSED_ATTR, RGE_DOMAIN};

/// The op a region's convolutions become.
pub const CONV_NHWC: &str = "FusedConvNhwc";

/// The fewest convolutions a region must have.
const MIN_REGION: usize = 3;

fn dims_of(d: Option<&TensorDesc>) -> Option<Vec<i64>> {
    let d = d?;
    d.shape()
        .is_fully_known()
        .then(|| d.shape().dims().to_vec())
        .filter(|v| v.len() == 4)
}

fn ints_or_ones(op: &OpDesc, key: &str) -> Vec<i64> {
    match op.attrs().get(key) {
        Some(AttrValue::ListInt(v)) => v.clone(),
        _ => vec![1, 1],
    }
}

fn is_const(g: &ComputeGraph, n: NodeId, i: usize) -> bool {
    producer(g, n, i).is_some_and(|a| g.op(a.node).is_some_and(|o| o.const_value().is_some()))
}

/// Whether `n` may join a channels-last region.
fn candidate(g: &ComputeGraph, n: NodeId) -> Option<()> {
    let op = g.op(n)?;
    let ok_type = match op.op_type() {
        "Conv" => op.domain().is_empty(),
        "FusedConv" => op.domain() == RGE_DOMAIN,
        _ => false,
    };
    if !ok_type || !is_f32_out(g, n) || has_control(g, n) {
        return None;
    }
    let x = dims_of(op.input(0))?;
    let w = dims_of(op.input(1))?;
    let y = dims_of(op.output(0))?;
    if !is_const(g, n, 1) || (producer(g, n, 2).is_some() && !is_const(g, n, 2)) {
        return None;
    }
    if let Some(z) = producer(g, n, 3) {
        let zd = g.op(z.node)?.output(z.index.max(0) as usize);
        if dims_of(zd)? != y {
            return None;
        }
    }
    let group = op.attrs().get_int("group").ok().flatten().unwrap_or(1);
    if !supported_grouping(&w, group) || x[1] != w[1] * group {
        return None;
    }
    let (strides, dils) = (ints_or_ones(op, "strides"), ints_or_ones(op, "dilations"));
    (strides.len() == 2 && dils.len() == 2).then_some(())
}

/// `[N, C, H, W]` as `[N, H, W, C]`, format NHWC.
fn nhwc_desc(d: &TensorDesc) -> TensorDesc {
    let v = d.shape().dims();
    TensorDesc::new(
        Shape::new([v[0], v[2], v[3], v[1]]),
        d.dtype(),
        Format::NHWC,
    )
}

fn find(parent: &mut HashMap<NodeId, NodeId>, n: NodeId) -> NodeId {
    let mut r = n;
    while parent[&r] != r {
        r = parent[&r];
    }
    let mut c = n;
    while parent[&c] != r {
        let next = parent[&c];
        parent.insert(c, r);
        c = next;
    }
    r
}

/// The regions worth converting, each in graph order.
fn regions(g: &ComputeGraph) -> Vec<Vec<NodeId>> {
    let root = g.root();
    let cands: Vec<NodeId> = g
        .nodes_of(root)
        .filter(|&n| candidate(g, n).is_some())
        .collect();
    let mut parent: HashMap<NodeId, NodeId> = cands.iter().map(|&n| (n, n)).collect();
    for &n in &cands {
        for i in [0, 3] {
            if let Some(src) = producer(g, n, i) {
                if src.index == 0 && parent.contains_key(&src.node) {
                    let (a, b) = (find(&mut parent, n), find(&mut parent, src.node));
                    parent.insert(a, b);
                }
            }
        }
    }
    let mut groups: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    let mut order = Vec::new();
    for &n in &cands {
        let r = find(&mut parent, n);
        groups
            .entry(r)
            .or_insert_with(|| {
                order.push(r);
                Vec::new()
            })
            .push(n);
    }
    order
        .into_iter()
        .filter_map(|r| groups.remove(&r))
        .filter(|nodes| nodes.len() >= MIN_REGION)
        .collect()
}

/// A name not used in the graph nor by this patch.
fn fresh_name(g: &ComputeGraph, base: String, taken: &mut HashSet<String>) -> String {
    let mut name = base.clone();
    let mut k = 1;
    while g.find_node(g.root(), &name).is_some() || taken.contains(&name) {
        name = format!("{base}_{k}");
        k += 1;
    }
    taken.insert(name.clone());
    name
}

fn transpose_op(
    name: String,
    input: TensorDesc,
    output: TensorDesc,
    perm: [i64; 4],
) -> Result<OpDesc, String> {
    let mut t = OpDesc::new(name, "Transpose");
    t.add_input("data", input).map_err(|e| e.to_string())?;
    t.add_output("transposed", output)
        .map_err(|e| e.to_string())?;
    t.attrs_mut().set("perm", AttrValue::ListInt(perm.to_vec()));
    Ok(t)
}

/// The next region to convert, as one patch: its convolutions replaced by FusedConvNhwc,
/// Transposes at its borders.
pub(crate) fn next_channels_last_region(g: &ComputeGraph) -> Result<Option<GraphPatch>, String> {
    let Some(region) = regions(g).into_iter().next() else {
        return Ok(None);
    };
    let members: HashSet<NodeId> = region.iter().copied().collect();
    let mut patch = GraphPatch::in_graph(g.root());
    let mut taken = HashSet::new();
    let out_desc = |a: OutAnchor| -> Result<TensorDesc, String> {
        g.op(a.node)
            .and_then(|o| o.output(a.index.max(0) as usize))
            .cloned()
            .ok_or_else(|| format!("`{}` has no output {}", g.name_of(a.node), a.index))
    };
    let mut new_of: HashMap<NodeId, usize> = HashMap::new();
    for &n in &region {
        let op = g.op(n).ok_or("stale node")?;
        let mut conv = OpDesc::new(
            fresh_name(g, format!("{}_nhwc", op.name()), &mut taken),
            CONV_NHWC,
        );
        conv.set_domain(RGE_DOMAIN);
        conv.set_opset(Some(1));
        conv.set_engine_name("");
        for (k, v) in op.attrs().iter() {
            conv.attrs_mut().set(k, v.clone());
        }
        if op.attrs().get(FUSED_ATTR).is_none() {
            conv.attrs_mut().set(
                FUSED_ATTR,
                AttrValue::ListString(vec![op.name().to_string()]),
            );
        }
        for (i, port) in ["X", "W", "B", "Z"].into_iter().enumerate() {
            let d = op.input(i).cloned().unwrap_or_default();
            let d = if (i == 0 || i == 3) && producer(g, n, i).is_some() {
                nhwc_desc(&d)
            } else {
                d
            };
            conv.add_input(port, d).map_err(|e| e.to_string())?;
        }
        let y = op.output(0).ok_or("Conv without output")?;
        conv.add_output("Y", nhwc_desc(y))
            .map_err(|e| e.to_string())?;
        patch.remove(n);
        new_of.insert(n, patch.add_node(conv));
    }
    // Inputs: from the region directly, else through one Transpose per value entering.
    let mut entering: HashMap<(NodeId, i32), usize> = HashMap::new();
    for &n in &region {
        let k = new_of[&n];
        for i in 0..4 {
            let Some(src) = producer(g, n, i) else {
                continue;
            };
            let from = if (i == 0 || i == 3) && src.index == 0 && members.contains(&src.node) {
                Outlet::new_node(new_of[&src.node], 0)
            } else if i == 0 || i == 3 {
                let t = match entering.get(&(src.node, src.index)) {
                    Some(&t) => t,
                    None => {
                        let d = out_desc(src)?;
                        let name =
                            fresh_name(g, format!("{}_to_nhwc", g.name_of(src.node)), &mut taken);
                        let t = patch.add_node(transpose_op(
                            name,
                            d.clone(),
                            nhwc_desc(&d),
                            [0, 2, 3, 1],
                        )?);
                        patch.connect(Outlet::old(src.node, src.index.max(0) as usize), t, 0);
                        entering.insert((src.node, src.index), t);
                        t
                    }
                };
                Outlet::new_node(t, 0)
            } else {
                Outlet::old(src.node, src.index.max(0) as usize)
            };
            patch.connect(from, k, i);
        }
    }
    // Outputs read outside the region (or listed as graph outputs) leave through a Transpose.
    for &n in &region {
        let node = g.node(n).ok_or("stale node")?;
        let inside =
            |p: &rge_ir::InAnchor| members.contains(&p.node) && (p.index == 0 || p.index == 3);
        let leaves = g.is_output_node(n) || !node.peers_of_output(0).iter().all(inside);
        if leaves {
            let op = g.op(n).ok_or("stale node")?;
            let y = op.output(0).ok_or("Conv without output")?.clone();
            let name = fresh_name(g, format!("{}_to_nchw", op.name()), &mut taken);
            let t = patch.add_node(transpose_op(name, nhwc_desc(&y), y, [0, 3, 1, 2])?);
            patch.connect(Outlet::new_node(new_of[&n], 0), t, 0);
            patch.shunt(n, 0, Outlet::new_node(t, 0));
        }
    }
    patch.drop_control();
    Ok(Some(patch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_ir::DataType;

    #[test]
    fn nhwc_desc_moves_channels_last() {
        let d = TensorDesc::new(Shape::new([2, 3, 5, 7]), DataType::Float, Format::NCHW);
        let n = nhwc_desc(&d);
        assert_eq!(n.shape().dims(), &[2, 5, 7, 3]);
        assert_eq!(n.format(), Format::NHWC);
        assert_eq!(n.dtype(), DataType::Float);
    }
}
