//! Channels-last regions: the dense engine's choice of layout (`engines.md`'s private formats;
//! GE inserts TransData at the borders of the ops that want another format).
//!
//! In NCHW a depthwise convolution works plane by plane (a padded copy of each channel, or
//! 16×16 transposes into blocks), a 1×1 convolution over a small plane is a GEMM whose
//! columns are the few pixels, and a 3×3 one is Winograd or an im2col GEMM. Channels-last
//! (NHWC) makes every tap of a filter a few contiguous channel vectors: a depthwise filter
//! runs on whole vectors, a 1×1 convolution is a GEMM over pixels × output channels with the
//! input read in place, a 3×3 stride-1 one as Winograd on channel vectors (`winograd_nhwc.rs`,
//! chosen here from the static shapes: the node's `winograd = 1`), and any other one runs
//! directly (`direct_nhwc.rs`: no patch matrix, the weights in L1/L2, 74–85% of the FMA peak). So connected groups of convolutions (through
//! their data input and residual) — MobileNet's inverted residual blocks, ResNet's stages —
//! are rewritten to `ai.rge` FusedConvNhwc, with a Transpose into NHWC where a value enters
//! the region and one back where a value leaves it (to a node outside or as a graph output):
//! never between two ops of the region.
//!
//! What a region takes: Conv or FusedConv, 2-D, f32, every shape known, constant weights (and
//! bias), ungrouped or depthwise, no control edges; pools fed by a member; and, fed by a
//! member, ops that run unchanged on NHWC data (elementwise ones over 4-D operands, Concat and
//! Split of the channels, Resize of the image axes, BatchNormalization as a per-channel Mul and
//! Add: `SameKind`). Groups of fewer than three convolutions stay in NCHW (the two Transposes
//! would cost what they save), and a convolution outside a region keeps the NCHW kernels
//! (Winograd for 3×3 stride 1). Measured on ResNet-18 against NCHW with Winograd: 28.2 → 26.4
//! ms at 1 thread, 16.0 → 14.6 at 2.

use std::collections::{HashMap, HashSet};

use rge_ir::{
    AttrValue, ComputeGraph, Format, GraphPatch, NodeId, OpDesc, OutAnchor, Outlet, Shape,
    Tensor as IrTensor, TensorDesc,
};

use crate::conv_nhwc::{supported_grouping, FEW_PIXELS, FEW_PIXELS_ATTR};
use crate::fuse::{
    bn_stats, const_op, has_control, is_f32_out, producer, BnStats, FUSED_ATTR, RGE_DOMAIN,
};
use crate::pool_nhwc::{AVG_POOL_NHWC, MAX_POOL_NHWC};
use crate::winograd_nhwc::{self, WINOGRAD_ATTR};

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

/// What a region member is: a convolution (data inputs X and Z), a pool (X), or an op that
/// runs as it is on channels-last data ([`same_op_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Member {
    Conv,
    Pool,
    Same(SameKind),
}

/// The ops that run on channels-last data as the same ONNX op: elementwise ones (their 4-D
/// operands all permuted alike, so broadcasting is unchanged), Concat and Split along the
/// channels (along the last axis in NHWC), and Resize of the image axes (its constant scales
/// or sizes permuted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SameKind {
    Elementwise,
    Concat,
    Split,
    Resize,
    /// BatchNormalization (inference, constant parameters), as `x·s + t` with `[C]` constants
    /// (a Mul and an Add, which the fused engine makes one pass with what follows).
    BatchNorm,
}

/// Elementwise ops that may run on channels-last data (every operand 4-D or one value).
const SAME_ELEMENTWISE: &[&str] = &[
    "Relu",
    "LeakyRelu",
    "Clip",
    "Sigmoid",
    "HardSigmoid",
    "HardSwish",
    "Tanh",
    "Add",
    "Sub",
    "Mul",
    "Div",
];

/// The inputs of member `n` that carry NCHW data (the others, weights, bias, scalars, split
/// sizes and resize scales, are not permuted as data).
fn data_inputs(g: &ComputeGraph, n: NodeId, kind: Member) -> Vec<usize> {
    match kind {
        Member::Conv => vec![0, 3],
        Member::Pool => vec![0],
        Member::Same(SameKind::Split | SameKind::Resize | SameKind::BatchNorm) => vec![0],
        Member::Same(SameKind::Concat | SameKind::Elementwise) => g
            .op(n)
            .map(|op| {
                (0..op.input_count())
                    .filter(|&i| dims_of(op.input(i)).is_some())
                    .collect()
            })
            .unwrap_or_default(),
    }
}

/// The op's axis attribute, normalized against rank 4.
fn axis_of(op: &OpDesc, default: i64) -> Option<i64> {
    let a = op.attrs().get_int("axis").ok()?.unwrap_or(default);
    let a = if a < 0 { a + 4 } else { a };
    (0..4).contains(&a).then_some(a)
}

/// The four values of the constant input `i` of `n`, if it is one.
fn const_four(g: &ComputeGraph, n: NodeId, i: usize) -> Option<IrTensor> {
    let src = producer(g, n, i)?;
    let t = g.op(src.node)?.const_value()?;
    (t.desc.shape().dims() == [4]).then(|| t.clone())
}

/// Whether `n` may run as it is on channels-last data, and as what.
fn same_op_kind(g: &ComputeGraph, n: NodeId) -> Option<SameKind> {
    let op = g.op(n)?;
    if !op.domain().is_empty() || !is_f32_out(g, n) || has_control(g, n) {
        return None;
    }
    // Already channels-last (a member of a region converted before).
    let outs: Vec<Vec<i64>> = (0..op.output_count())
        .map(|o| dims_of(op.output(o)))
        .collect::<Option<_>>()?;
    if outs.is_empty() || op.outputs().iter().any(|d| d.format() == Format::NHWC) {
        return None;
    }
    let is_data = |i: usize| dims_of(op.input(i)).is_some();
    let single = |i: usize| {
        op.input(i).is_some_and(|d| {
            d.shape().is_fully_known() && d.shape().dims().iter().product::<i64>() == 1
        })
    };
    let absent = |i: usize| producer(g, n, i).is_none();
    let kind = match op.op_type() {
        t if SAME_ELEMENTWISE.contains(&t) => {
            let ok = (0..op.input_count()).all(|i| is_data(i) || single(i) || absent(i));
            (ok && is_data(0) && op.output_count() == 1).then_some(SameKind::Elementwise)?
        }
        "Concat" => {
            let ok = (0..op.input_count()).all(is_data) && axis_of(op, 0)? == 1;
            ok.then_some(SameKind::Concat)?
        }
        "Split" => {
            // Split sizes (opset 13 on) come as a constant input; before, as an attribute.
            let sizes_ok = op.input_count() < 2 || absent(1) || const_one_d(g, n, 1);
            (is_data(0) && sizes_ok && axis_of(op, 0)? == 1).then_some(SameKind::Split)?
        }
        "Resize" => {
            let empty = |i: usize| {
                absent(i)
                    || op
                        .input(i)
                        .is_some_and(|d| d.shape().dims().iter().product::<i64>() == 0)
            };
            let scales = const_four(g, n, 2).is_some() && absent(3);
            let sizes = empty(2) && const_four(g, n, 3).is_some();
            let ok =
                is_data(0) && empty(1) && (scales || sizes) && op.attrs().get("axes").is_none();
            ok.then_some(SameKind::Resize)?
        }
        "BatchNormalization" => {
            bn_affine(g, n)?;
            SameKind::BatchNorm
        }
        _ => return None,
    };
    Some(kind)
}

/// A BatchNormalization's `(s, t)` with `y = x·s + t` per channel: inference (one output, no
/// training mode), a 4-D input, its four parameters constants of one value per channel.
fn bn_affine(g: &ComputeGraph, n: NodeId) -> Option<(Vec<f32>, Vec<f32>)> {
    let op = g.op(n)?;
    let training = op
        .attrs()
        .get_int("training_mode")
        .ok()
        .flatten()
        .unwrap_or(0)
        != 0;
    if training || op.output_count() != 1 || op.input_count() != 5 {
        return None;
    }
    let c = *dims_of(op.input(0))?.get(1)? as usize;
    let BnStats { s, beta, mean, .. } = bn_stats(g, n, c)?;
    let t: Vec<f32> = (0..c).map(|k| beta[k] - mean[k] * s[k]).collect();
    Some((s, t))
}

/// Whether input `i` of `n` is a 1-D constant.
fn const_one_d(g: &ComputeGraph, n: NodeId, i: usize) -> bool {
    producer(g, n, i)
        .and_then(|a| g.op(a.node)?.const_value())
        .is_some_and(|t| t.desc.shape().dims().len() == 1)
}

/// Whether convolution `n` may join a channels-last region.
fn conv_candidate(g: &ComputeGraph, n: NodeId) -> Option<()> {
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

/// The channels-last form of pool `n` (ONNX MaxPool or AveragePool, 2-D, f32, shapes known,
/// no Indices output read, no control edges; or GlobalMaxPool, GlobalAveragePool of a 4-D
/// input of known height and width, a window of the whole image), if it has one.
fn pool_nhwc_op(g: &ComputeGraph, n: NodeId) -> Option<&'static str> {
    let op = g.op(n)?;
    let global = |name| {
        // `dims_of` gives 4-D shapes only.
        let dims = dims_of(op.input(0))?;
        let whole = dims[2] > 0 && dims[3] > 0;
        (whole && is_f32_out(g, n) && !has_control(g, n) && dims_of(op.output(0)).is_some())
            .then_some(name)
    };
    let name = match op.op_type() {
        "MaxPool" if op.domain().is_empty() => MAX_POOL_NHWC,
        "AveragePool" if op.domain().is_empty() => AVG_POOL_NHWC,
        "GlobalMaxPool" if op.domain().is_empty() => return global(MAX_POOL_NHWC),
        "GlobalAveragePool" if op.domain().is_empty() => return global(AVG_POOL_NHWC),
        _ => return None,
    };
    if !is_f32_out(g, n) || has_control(g, n) {
        return None;
    }
    let indices_read =
        op.output_count() > 1 && (g.is_output_node(n) || !g.node(n)?.peers_of_output(1).is_empty());
    if indices_read {
        return None;
    }
    dims_of(op.input(0))?;
    dims_of(op.output(0))?;
    match op.attrs().get("kernel_shape") {
        Some(AttrValue::ListInt(k)) if k.len() == 2 => Some(name),
        _ => None,
    }
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

/// The members of every region worth converting, each region in graph order.
///
/// Convolutions join through their data input and residual. A pool joins when its input comes
/// from a member (a pool fed from outside would move the Transpose to its larger input); a
/// region needs [`MIN_REGION`] convolutions.
fn regions(g: &ComputeGraph) -> Vec<Vec<(NodeId, Member)>> {
    let root = g.root();
    let nodes: Vec<NodeId> = g.nodes_of(root).collect();
    let mut kind: HashMap<NodeId, Member> = nodes
        .iter()
        .filter(|&&n| conv_candidate(g, n).is_some())
        .map(|&n| (n, Member::Conv))
        .collect();
    // Every region holds a convolution: a graph without one has none to look for.
    if kind.is_empty() {
        return Vec::new();
    }
    // Pools and ops that run as they are, fed by members, to a fixed point (a chain of pools,
    // as in YOLO's SPPF; a Split, the convolutions after it and their Concat, as in its C2f).
    let joiners: Vec<(NodeId, Member)> = nodes
        .iter()
        .filter_map(|&n| {
            if pool_nhwc_op(g, n).is_some() {
                Some((n, Member::Pool))
            } else {
                same_op_kind(g, n).map(|k| (n, Member::Same(k)))
            }
        })
        .collect();
    loop {
        let before = kind.len();
        for &(n, k) in &joiners {
            if kind.contains_key(&n) {
                continue;
            }
            let fed = data_inputs(g, n, k)
                .into_iter()
                .any(|i| producer(g, n, i).is_some_and(|a| kind.contains_key(&a.node)));
            if fed {
                kind.insert(n, k);
            }
        }
        if kind.len() == before {
            break;
        }
    }
    let cands: Vec<NodeId> = nodes.into_iter().filter(|n| kind.contains_key(n)).collect();
    let mut parent: HashMap<NodeId, NodeId> = cands.iter().map(|&n| (n, n)).collect();
    for &n in &cands {
        for i in data_inputs(g, n, kind[&n]) {
            if let Some(src) = producer(g, n, i) {
                if parent.contains_key(&src.node) {
                    let (a, b) = (find(&mut parent, n), find(&mut parent, src.node));
                    parent.insert(a, b);
                }
            }
        }
    }
    let mut groups: HashMap<NodeId, Vec<(NodeId, Member)>> = HashMap::new();
    let mut order = Vec::new();
    for &n in &cands {
        let r = find(&mut parent, n);
        groups
            .entry(r)
            .or_insert_with(|| {
                order.push(r);
                Vec::new()
            })
            .push((n, kind[&n]));
    }
    order
        .into_iter()
        .filter_map(|r| groups.remove(&r))
        .filter(|m| m.iter().filter(|(_, k)| *k == Member::Conv).count() >= MIN_REGION)
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

/// A new, unplaced `ai.rge` op of type `ty` named after `op`, with no ports yet.
fn nhwc_op(g: &ComputeGraph, op: &OpDesc, ty: &str, taken: &mut HashSet<String>) -> OpDesc {
    let mut new = OpDesc::new(fresh_name(g, format!("{}_nhwc", op.name()), taken), ty);
    new.set_domain(RGE_DOMAIN);
    new.set_opset(Some(1));
    new.set_engine_name("");
    new
}

/// Whether a region's convolution runs as channels-last Winograd (its shapes are static:
/// `conv_candidate`).
fn runs_as_winograd(op: &OpDesc) -> bool {
    let (Some(w), Some(y)) = (dims_of(op.input(1)), dims_of(op.output(0))) else {
        return false;
    };
    let two = |v: Vec<i64>| -> Option<[usize; 2]> {
        Some([
            usize::try_from(*v.first()?).ok()?,
            usize::try_from(*v.get(1)?).ok()?,
        ])
    };
    let group = op.attrs().get_int("group").ok().flatten().unwrap_or(1);
    let (Some(strides), Some(dils), Some(kernel), Some(out)) = (
        two(ints_or_ones(op, "strides")),
        two(ints_or_ones(op, "dilations")),
        two(w[2..].to_vec()),
        two(y[2..].to_vec()),
    ) else {
        return false;
    };
    let (cout, cin) = (w[0] as usize, w[1] as usize);
    group == 1 && winograd_nhwc::suits(kernel, strides, dils, cin, cout, out)
}

/// Whether `op`'s window is pointwise: ungrouped, a 1×1 W, stride 1, unpadded (a Conv or a
/// FusedConvNhwc: the attributes are the same).
pub(crate) fn pointwise_window(op: &OpDesc) -> bool {
    let all = |key: &str, v: i64| match op.attrs().get(key) {
        Some(AttrValue::ListInt(x)) => x.iter().all(|&e| e == v),
        _ => true,
    };
    let auto_pad = match op.attrs().get("auto_pad") {
        Some(AttrValue::String(s)) => s.as_str(),
        _ => "NOTSET",
    };
    op.attrs().get_int("group").ok().flatten().unwrap_or(1) == 1
        && op
            .input(1)
            .is_some_and(|d| matches!(d.shape().dims(), [_, _, 1, 1]))
        && all("strides", 1)
        && all("pads", 0)
        && matches!(auto_pad, "NOTSET" | "VALID")
}

/// Whether a region's convolution is pointwise with an output of at most `FEW_PIXELS` pixels:
/// the kernel's choice of the GEMM then differs (`conv_nhwc::pointwise_as_gemm`).
fn pointwise_with_few_pixels(op: &OpDesc) -> bool {
    pointwise_window(op)
        && dims_of(op.output(0)).is_some_and(|y| y[2].saturating_mul(y[3]) <= FEW_PIXELS)
}

/// The FusedConvNhwc of convolution `n`.
fn conv_nhwc_op(
    g: &ComputeGraph,
    n: NodeId,
    op: &OpDesc,
    taken: &mut HashSet<String>,
) -> Result<OpDesc, String> {
    let mut conv = nhwc_op(g, op, CONV_NHWC, taken);
    for (k, v) in op.attrs().iter() {
        conv.attrs_mut().set(k, v.clone());
    }
    if op.attrs().get(FUSED_ATTR).is_none() {
        conv.attrs_mut().set(
            FUSED_ATTR,
            AttrValue::ListString(vec![op.name().to_string()]),
        );
    }
    if runs_as_winograd(op) {
        conv.attrs_mut().set(WINOGRAD_ATTR, AttrValue::Int(1));
    }
    if pointwise_with_few_pixels(op) {
        conv.attrs_mut().set(FEW_PIXELS_ATTR, AttrValue::Int(1));
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
    Ok(conv)
}

/// The attributes the channels-last pools share with ONNX's.
const POOL_ATTRS: [&str; 7] = [
    "auto_pad",
    "ceil_mode",
    "count_include_pad",
    "dilations",
    "kernel_shape",
    "pads",
    "strides",
];

/// The MaxPoolNhwc or AveragePoolNhwc of pool `n`, with the attributes they share with ONNX's
/// (MaxPool's storage_order only orders Indices, which a member does not have).
fn pool_op(
    g: &ComputeGraph,
    n: NodeId,
    op: &OpDesc,
    taken: &mut HashSet<String>,
) -> Result<OpDesc, String> {
    let ty = pool_nhwc_op(g, n).ok_or("not a channels-last pool")?;
    let mut pool = nhwc_op(g, op, ty, taken);
    let x = op.input(0).ok_or("a pool without input")?;
    if op.op_type().starts_with("Global") {
        // The whole image is the window (its height and width are known: `pool_nhwc_op`).
        let d = x.shape().dims();
        pool.attrs_mut()
            .set("kernel_shape", AttrValue::ListInt(vec![d[2], d[3]]));
    }
    for (k, v) in op.attrs().iter() {
        if POOL_ATTRS.contains(&k) {
            pool.attrs_mut().set(k, v.clone());
        }
    }
    pool.add_input("X", nhwc_desc(x))
        .map_err(|e| e.to_string())?;
    let y = op.output(0).ok_or("a pool without output")?;
    pool.add_output("Y", nhwc_desc(y))
        .map_err(|e| e.to_string())?;
    Ok(pool)
}

/// The channels-last form of `op` (member `n` of kind `kind`): the same op on NHWC descs, with
/// Concat's and Split's axis moved to the last; for Resize, also the permuted constant scales
/// or sizes (input index and the new Const), which the caller wires instead of the old one.
fn same_op(
    g: &ComputeGraph,
    n: NodeId,
    op: &OpDesc,
    kind: SameKind,
    taken: &mut HashSet<String>,
) -> Result<(OpDesc, Option<(usize, OpDesc)>), String> {
    let mut new = OpDesc::new(
        fresh_name(g, format!("{}_nhwc", op.name()), taken),
        op.op_type(),
    );
    new.set_domain(op.domain());
    new.set_opset(op.opset());
    new.set_engine_name("");
    for (k, v) in op.attrs().iter() {
        new.attrs_mut().set(k, v.clone());
    }
    if matches!(kind, SameKind::Concat | SameKind::Split) {
        new.attrs_mut().set("axis", AttrValue::Int(3));
    }
    let data = data_inputs(g, n, Member::Same(kind));
    for i in 0..op.input_count() {
        let d = op.input(i).cloned().unwrap_or_default();
        let d = if data.contains(&i) { nhwc_desc(&d) } else { d };
        let name = op.input_name(i).unwrap_or_default().into_owned();
        new.add_input(&name, d).map_err(|e| e.to_string())?;
    }
    for o in 0..op.output_count() {
        let d = op.output(o).ok_or("a member without its output")?;
        let name = op.output_name(o).unwrap_or_default().into_owned();
        new.add_output(&name, nhwc_desc(d))
            .map_err(|e| e.to_string())?;
    }
    let mut constant = None;
    if kind == SameKind::Resize {
        let (i, mut t) = match const_four(g, n, 3) {
            Some(t) => (3, t),
            None => (
                2,
                const_four(g, n, 2).ok_or("Resize without constant scales or sizes")?,
            ),
        };
        // [N, C, H, W] → [N, H, W, C], as the data.
        let mut bytes = t.data.to_vec();
        let elem = bytes.len() / 4;
        if elem == 0 || bytes.len() != 4 * elem {
            return Err("Resize scales or sizes of unexpected size".into());
        }
        bytes[elem..].rotate_left(elem);
        t.data = bytes.into();
        let name = fresh_name(
            g,
            format!(
                "{}_nhwc_{}",
                op.name(),
                if i == 3 { "sizes" } else { "scales" }
            ),
            taken,
        );
        let mut c = OpDesc::new(name, "Const");
        c.add_output("y", t.desc.clone())
            .map_err(|e| e.to_string())?;
        c.attrs_mut().set("value", t);
        constant = Some((i, c));
    }
    Ok((new, constant))
}

/// BatchNormalization `n` on NHWC data as `Add(Mul(x, s), t)` with `[C]` constants (which
/// broadcast along the last axis), added to `patch`: the Mul (to wire x into) and the Add.
fn bn_nodes(
    g: &ComputeGraph,
    n: NodeId,
    op: &OpDesc,
    patch: &mut GraphPatch,
    taken: &mut HashSet<String>,
) -> Result<(usize, usize), String> {
    let (s, t) = bn_affine(g, n).ok_or("not an inference BatchNormalization")?;
    let y = nhwc_desc(op.output(0).ok_or("BatchNormalization without output")?);
    let x = nhwc_desc(op.input(0).ok_or("BatchNormalization without input")?);
    let c = s.len();
    let mut node = |ty: &str, suffix: &str, a: TensorDesc, out: TensorDesc| {
        let mut new = OpDesc::new(fresh_name(g, format!("{}_{suffix}", op.name()), taken), ty);
        new.set_engine_name("");
        let b = TensorDesc::new(Shape::new([c as i64]), rge_ir::DataType::Float, Format::ND);
        new.add_input("A", a).map_err(|e| e.to_string())?;
        new.add_input("B", b).map_err(|e| e.to_string())?;
        new.add_output("C", out).map_err(|e| e.to_string())?;
        new.attrs_mut().set(
            FUSED_ATTR,
            AttrValue::ListString(vec![op.name().to_string()]),
        );
        Ok::<OpDesc, String>(new)
    };
    let mul = node("Mul", "nhwc_scale", x, y.clone())?;
    let add = node("Add", "nhwc_shift", y.clone(), y)?;
    let constant = |v: Vec<f32>, suffix: &str, taken: &mut HashSet<String>| {
        let t = rge_kernels::Tensor::from_vec(&[c], v).map_err(|e| e.to_string())?;
        Ok::<OpDesc, String>(const_op(
            fresh_name(g, format!("{}_{suffix}", op.name()), taken),
            &t,
        ))
    };
    let (sk, tk) = (constant(s, "nhwc_s", taken)?, constant(t, "nhwc_t", taken)?);
    let (m, a) = (patch.add_node(mul), patch.add_node(add));
    let (sk, tk) = (patch.add_node(sk), patch.add_node(tk));
    patch.connect(Outlet::new_node(sk, 0), m, 1);
    patch.connect(Outlet::new_node(m, 0), a, 0);
    patch.connect(Outlet::new_node(tk, 0), a, 1);
    Ok((m, a))
}

/// The next region to convert, as one patch: its convolutions replaced by FusedConvNhwc, its
/// pools by their channels-last forms, its other members by the same ops on NHWC data;
/// Transposes at its borders.
pub(crate) fn next_channels_last_region(g: &ComputeGraph) -> Result<Option<GraphPatch>, String> {
    let Some(region) = regions(g).into_iter().next() else {
        return Ok(None);
    };
    let members: HashMap<NodeId, Member> = region.iter().copied().collect();
    let data: HashMap<NodeId, Vec<usize>> = region
        .iter()
        .map(|&(n, k)| (n, data_inputs(g, n, k)))
        .collect();
    // Whether input `i` of `n` is a data input of a member (read in NHWC).
    let reads_nhwc = |n: NodeId, i: usize| data.get(&n).is_some_and(|d| d.contains(&i));
    let mut patch = GraphPatch::in_graph(g.root());
    let mut taken = HashSet::new();
    let out_desc = |a: OutAnchor| -> Result<TensorDesc, String> {
        g.op(a.node)
            .and_then(|o| o.output(a.index.max(0) as usize))
            .cloned()
            .ok_or_else(|| format!("`{}` has no output {}", g.name_of(a.node), a.index))
    };
    let mut new_of: HashMap<NodeId, usize> = HashMap::new();
    // A member's input wired to a new node instead (Resize's permuted constant).
    let mut replaced: HashMap<(NodeId, usize), usize> = HashMap::new();
    // The new node that takes a member's data, where it is not the one that gives its output
    // (a BatchNormalization's Mul; its Add gives the output).
    let mut takes_input: HashMap<NodeId, usize> = HashMap::new();
    for &(n, kind) in &region {
        let op = g.op(n).ok_or("stale node")?;
        if kind == Member::Same(SameKind::BatchNorm) {
            let (mul, add) = bn_nodes(g, n, op, &mut patch, &mut taken)?;
            patch.remove(n);
            takes_input.insert(n, mul);
            new_of.insert(n, add);
            continue;
        }
        let nhwc = match kind {
            Member::Conv => conv_nhwc_op(g, n, op, &mut taken)?,
            Member::Pool => pool_op(g, n, op, &mut taken)?,
            Member::Same(k) => {
                let (new, constant) = same_op(g, n, op, k, &mut taken)?;
                if let Some((i, c)) = constant {
                    replaced.insert((n, i), patch.add_node(c));
                }
                new
            }
        };
        patch.remove(n);
        new_of.insert(n, patch.add_node(nhwc));
    }
    // Inputs: from the region directly, else through one Transpose per value entering.
    let mut entering: HashMap<(NodeId, i32), usize> = HashMap::new();
    for &(n, kind) in &region {
        let k = takes_input.get(&n).copied().unwrap_or(new_of[&n]);
        let arity = match kind {
            Member::Conv => 4,
            Member::Pool | Member::Same(SameKind::BatchNorm) => 1,
            Member::Same(_) => g.op(n).map_or(0, OpDesc::input_count),
        };
        for i in 0..arity {
            if let Some(&c) = replaced.get(&(n, i)) {
                patch.connect(Outlet::new_node(c, 0), k, i);
                continue;
            }
            let Some(src) = producer(g, n, i) else {
                continue;
            };
            let data = reads_nhwc(n, i);
            let from = if data && members.contains_key(&src.node) {
                Outlet::new_node(new_of[&src.node], src.index.max(0) as usize)
            } else if data {
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
    let graph_outputs: HashSet<(NodeId, u32)> = g.output_nodes(g.root()).iter().copied().collect();
    for &(n, _) in &region {
        let node = g.node(n).ok_or("stale node")?;
        let op = g.op(n).ok_or("stale node")?;
        let inside = |p: &rge_ir::InAnchor| p.index >= 0 && reads_nhwc(p.node, p.index as usize);
        for o in 0..op.output_count() {
            let readers = node.peers_of_output(o);
            // (An output nobody reads, MaxPool's Indices say, stays as it is.)
            let leaves = graph_outputs.contains(&(n, o as u32)) || !readers.iter().all(inside);
            if !leaves {
                continue;
            }
            let y = op.output(o).ok_or("a member without output")?.clone();
            let name = fresh_name(g, format!("{}_to_nchw", op.name()), &mut taken);
            let t = patch.add_node(transpose_op(name, nhwc_desc(&y), y, [0, 3, 1, 2])?);
            patch.connect(Outlet::new_node(new_of[&n], o), t, 0);
            patch.shunt(n, o, Outlet::new_node(t, 0));
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
