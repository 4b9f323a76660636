//! The dense engine's original-graph optimizer: what it rewrites before placement, through
//! checked patches (docs/patch.md), so that its kernels compute more per pass over memory.
//!
//! - **BatchNormalization folded into the Conv or ConvTranspose before it** (inference mode,
//!   constant weights and statistics): `W' = W·s`, `B' = (B − mean)·s + beta` with
//!   `s = gamma / sqrt(var + eps)` per output channel.
//! - **Epilogues**: a Conv or MatMul followed by an Add of a per-channel constant (the bias), an
//!   Add of a tensor of its output's shape (a residual), and an activation (Relu, Clip,
//!   LeakyRelu, Sigmoid, HardSigmoid, HardSwish, Tanh, SiLU as `x·Sigmoid(x)` or `Swish` with
//!   alpha 1, Gelu) becomes one
//!   `ai.rge` `FusedConv` / `FusedMatMul` whose kernel applies them to each output tile while
//!   it is in cache. Only when every value inside the chain has no other reader and is not a
//!   graph output; a near miss (wrong broadcast axis, a second reader, another dtype) is left
//!   as it is.
//!
//! - **Transposed B** (`fuse_transpose.rs`): `MatMul(A, Transpose(B))` swapping B's last two
//!   dims becomes a FusedMatMul with `transB = 1`.
//!
//! - **Channels-last regions** (`layout.rs`): connected convolutions with a depthwise one
//!   become FusedConvNhwc, with Transposes only at the region's borders.
//!
//! - **Input prologues** (`prologue_fold.rs`): a region's per-channel affine map (a
//!   BatchNormalization) and Relu before a pointwise FusedConvNhwc become the convolution's
//!   input prologue.
//!
//! Each rewrite is recorded on the new node (`_rge_fused`: the node names it replaced), which
//! `rge explain` shows.

use std::collections::HashSet;

use rge_engine::{EngineError, EngineResult, GraphOptimizer, GraphRewriter};
use rge_ir::{
    AttrValue, ComputeGraph, DataType, GraphPatch, NodeId, OpDesc, OutAnchor, Outlet,
    Tensor as IrTensor,
};
use rge_kernels::{tensor_from_ir, tensor_to_ir, Tensor};

/// The domain of rge's fused ops.
pub const RGE_DOMAIN: &str = "ai.rge";
/// The node attribute listing the nodes a fused node replaced.
pub const FUSED_ATTR: &str = "_rge_fused";

/// The dense engine's original-graph optimizer (see the module docs).
#[derive(Debug, Clone)]
pub struct DenseFusion {
    /// False when the dense engine is excluded: its fused ops would have no engine to run.
    pub enabled: bool,
    /// Whether convolutions may move to channels-last regions (`layout.rs`): off when an
    /// engine placed before dense (the gpu) would run them, as FusedConvNhwc only runs here.
    pub channels_last: bool,
}

impl GraphOptimizer for DenseFusion {
    fn optimize_original_graph(&self, graph: &mut GraphRewriter<'_>) -> EngineResult<()> {
        if !self.enabled {
            return Ok(());
        }
        let engine = graph.engine().to_string();
        let err = |e: String| EngineError::engine(engine.clone(), e);
        // BatchNormalization folds first, so the Conv it leaves can take its epilogue.
        while let Some(p) = next_bn_fold(graph.graph()).map_err(err)? {
            graph.apply(p)?;
        }
        while let Some(p) = next_epilogue(graph.graph()).map_err(err)? {
            graph.apply(p)?;
        }
        // After the epilogues: a FusedMatMul takes a transposed B as well as a MatMul does.
        while let Some(p) = crate::fuse_transpose::next_transposed_b(graph.graph()).map_err(err)? {
            graph.apply(p)?;
        }
        // Last, on the fused convolutions: the regions that run channels-last.
        if self.channels_last {
            while let Some(p) =
                crate::layout::next_channels_last_region(graph.graph()).map_err(err)?
            {
                graph.apply(p)?;
            }
            // Then what the regions' pointwise convolutions can read through.
            for c in crate::prologue_fold::candidates(graph.graph()) {
                if let Some(p) = crate::prologue_fold::fold_into(graph.graph(), c).map_err(err)? {
                    graph.apply(p)?;
                }
            }
        }
        Ok(())
    }
}

/// The tensor of a Const/Constant node with a `value`.
fn const_of(g: &ComputeGraph, n: NodeId) -> Option<&IrTensor> {
    g.op(n)?.const_value()
}

/// The constant feeding input `i` of `n`.
pub(crate) fn const_input(g: &ComputeGraph, n: NodeId, i: usize) -> Option<(NodeId, Tensor)> {
    let src = g.node(n)?.peer_of_input(i)?;
    let t = tensor_from_ir(const_of(g, src.node)?).ok()?;
    Some((src.node, t))
}

pub(crate) fn producer(g: &ComputeGraph, n: NodeId, i: usize) -> Option<OutAnchor> {
    g.node(n)?.peer_of_input(i)
}

/// The only reader of output `o` of `n` (none when it has several, none, control readers,
/// or is a graph output).
pub(crate) fn single_reader(g: &ComputeGraph, n: NodeId, o: usize) -> Option<(NodeId, usize)> {
    let node = g.node(n)?;
    let readers = node.peers_of_output(o);
    g.graph_of(n)?;
    if readers.len() != 1 || g.is_output_node(n) {
        return None;
    }
    Some((readers[0].node, readers[0].index.max(0) as usize))
}

pub(crate) fn is_f32_out(g: &ComputeGraph, n: NodeId) -> bool {
    g.op(n)
        .and_then(|o| o.output(0))
        .is_some_and(|d| d.dtype() == DataType::Float)
}

pub(crate) fn has_control(g: &ComputeGraph, n: NodeId) -> bool {
    g.node(n)
        .is_some_and(|nd| !nd.in_ctrl_peers().is_empty() || !nd.out_ctrl_peers().is_empty())
}

pub(crate) fn f32s(t: &Tensor) -> Option<Vec<f32>> {
    t.as_slice::<f32>().ok().map(<[f32]>::to_vec)
}

/// A new Const op named `name` holding `t`.
pub(crate) fn const_op(name: String, t: &Tensor) -> OpDesc {
    let value = tensor_to_ir(t);
    let mut op = OpDesc::new(name, "Const");
    // A new op has no output yet, so adding one cannot fail.
    let _ = op.add_output("y", value.desc.clone());
    op.attrs_mut().set("value", value);
    op
}

/// Removes the const nodes in `consts` that only `removed` nodes read.
fn drop_dead_consts(
    g: &ComputeGraph,
    patch: &mut GraphPatch,
    consts: &[NodeId],
    removed: &HashSet<NodeId>,
) {
    let mut seen = HashSet::new();
    for &c in consts {
        if !seen.insert(c) {
            continue;
        }
        let Some(node) = g.node(c) else { continue };
        let listed = g.is_output_node(c);
        let only_removed = node
            .peers_of_output(0)
            .iter()
            .all(|p| removed.contains(&p.node));
        if only_removed && !listed && node.out_ctrl_peers().is_empty() {
            patch.remove(c);
        }
    }
}

/// The next BatchNormalization to fold into its Conv, as a patch.
fn next_bn_fold(g: &ComputeGraph) -> Result<Option<GraphPatch>, String> {
    let root = g.root();
    for bn in g.nodes_of(root) {
        let Some(op) = g.op(bn) else { continue };
        if op.op_type() != "BatchNormalization" || !is_f32_out(g, bn) || has_control(g, bn) {
            continue;
        }
        let training = op
            .attrs()
            .get_int("training_mode")
            .ok()
            .flatten()
            .unwrap_or(0);
        let node = g.node(bn).ok_or("stale node")?;
        let extra_outputs = (1..node.out_data_count()).any(|o| !node.peers_of_output(o).is_empty());
        if training != 0 || extra_outputs {
            continue;
        }
        let Some(src) = producer(g, bn, 0) else {
            continue;
        };
        let conv = src.node;
        let Some(cop) = g.op(conv) else { continue };
        let transposed = cop.op_type() == "ConvTranspose";
        if !(cop.op_type() == "Conv" || transposed)
            || has_control(g, conv)
            || single_reader(g, conv, 0) != Some((bn, 0))
        {
            continue;
        }
        let Some((w_node, w)) = const_input(g, conv, 1) else {
            continue;
        };
        let bias = match producer(g, conv, 2) {
            None => None,
            Some(_) => match const_input(g, conv, 2) {
                Some(b) => Some(b),
                None => continue,
            },
        };
        let Some(wv) = f32s(&w) else {
            continue;
        };
        // A Conv's W is `[M, C/g, k…]`; a ConvTranspose's `[C, M/g, k…]`, its output channel
        // `gi·(M/g) + m` at `[c, m]` for the inputs `c` of group `gi`.
        let group = cop
            .attrs()
            .get_int("group")
            .ok()
            .flatten()
            .unwrap_or(1)
            .max(1) as usize;
        let cout = match (transposed, w.shape()) {
            (false, [m, ..]) => *m,
            (true, [_, mg, _, ..]) => mg * group,
            _ => 0,
        };
        let Some(bn_stats) = (cout > 0).then(|| bn_stats(g, bn, cout)).flatten() else {
            continue;
        };
        let BnStats {
            s,
            beta,
            mean,
            nodes: param_nodes,
        } = bn_stats;
        let b0 = match &bias {
            Some((_, b)) => match f32s(b) {
                Some(v) if v.len() == cout => v,
                _ => continue,
            },
            None => vec![0.0; cout],
        };
        let mut w2 = wv.clone();
        if transposed {
            let (cin, mg) = (w.shape()[0], cout / group);
            let taps = wv.len() / (cin * mg).max(1);
            for (ci, block) in w2.chunks_mut(mg * taps).enumerate() {
                let gi = ci / (cin / group).max(1);
                for (ml, x) in block.chunks_mut(taps).enumerate() {
                    x.iter_mut().for_each(|x| *x *= s[gi * mg + ml]);
                }
            }
        } else {
            let per = wv.len() / cout;
            for (c, x) in w2.chunks_mut(per).enumerate() {
                x.iter_mut().for_each(|x| *x *= s[c]);
            }
        }
        let b2: Vec<f32> = (0..cout)
            .map(|c| (b0[c] - mean[c]) * s[c] + beta[c])
            .collect();
        let w2 = Tensor::from_vec(w.shape(), w2).map_err(|e| e.to_string())?;
        let b2 = Tensor::from_vec(&[cout], b2).map_err(|e| e.to_string())?;
        let mut patch = GraphPatch::in_graph(root);
        patch.remove(conv).remove(bn);
        let wk = patch.add_node(const_op(format!("{}_bn_w", cop.name()), &w2));
        let bk = patch.add_node(const_op(format!("{}_bn_b", cop.name()), &b2));
        let mut new_conv = cop.clone();
        new_conv.set_name(format!("{}_bn", cop.name()));
        if new_conv.input_count() < 3 {
            let d = rge_ir::TensorDesc::new(
                rge_ir::Shape::new([cout as i64]),
                DataType::Float,
                rge_ir::Format::ND,
            );
            new_conv.add_input("B", d).map_err(|e| e.to_string())?;
        }
        if let Some(d) = op.output(0) {
            if let Some(slot) = new_conv.output_mut(0) {
                *slot = d.clone();
            }
        }
        new_conv.attrs_mut().set(
            FUSED_ATTR,
            AttrValue::ListString(vec![cop.name().into(), op.name().into()]),
        );
        let ck = patch.add_node(new_conv);
        let x = producer(g, conv, 0).ok_or("Conv without input")?;
        patch.connect(Outlet::old(x.node, x.index.max(0) as usize), ck, 0);
        patch.connect(Outlet::new_node(wk, 0), ck, 1);
        patch.connect(Outlet::new_node(bk, 0), ck, 2);
        patch.shunt(bn, 0, Outlet::new_node(ck, 0));
        let removed: HashSet<NodeId> = [conv, bn].into_iter().collect();
        let mut consts: Vec<NodeId> = vec![w_node];
        consts.extend(bias.iter().map(|b| b.0));
        consts.extend(param_nodes);
        drop_dead_consts(g, &mut patch, &consts, &removed);
        patch.drop_control();
        return Ok(Some(patch));
    }
    Ok(None)
}

/// An inference BatchNormalization's per-channel statistics, read from its four constant
/// inputs (`channels` values each): `s = gamma / sqrt(var + eps)`, beta and mean (so
/// `y = (x − mean)·s + beta`), and the nodes holding them.
pub(crate) struct BnStats {
    pub(crate) s: Vec<f32>,
    pub(crate) beta: Vec<f32>,
    pub(crate) mean: Vec<f32>,
    pub(crate) nodes: Vec<NodeId>,
}

/// [`BnStats`] of BatchNormalization `bn`, if its parameters are constants of `channels`
/// values.
pub(crate) fn bn_stats(g: &ComputeGraph, bn: NodeId, channels: usize) -> Option<BnStats> {
    let op = g.op(bn)?;
    let mut nodes = Vec::with_capacity(4);
    let mut p = Vec::with_capacity(4);
    for i in 1..5 {
        let (node, t) = const_input(g, bn, i)?;
        let v = f32s(&t).filter(|v| v.len() == channels)?;
        nodes.push(node);
        p.push(v);
    }
    let eps = op
        .attrs()
        .get_float("epsilon")
        .ok()
        .flatten()
        .unwrap_or(1e-5);
    let (scale, var) = (&p[0], &p[3]);
    let s = (0..channels)
        .map(|c| scale[c] / (var[c] + eps).sqrt())
        .collect();
    let mean = p.swap_remove(2);
    let beta = p.swap_remove(1);
    Some(BnStats {
        s,
        beta,
        mean,
        nodes,
    })
}

/// An activation the fused kernels apply, with its parameters.
fn activation_of(g: &ComputeGraph, n: NodeId) -> Option<(&'static str, Vec<f32>)> {
    let op = g.op(n)?;
    let a = op.attrs();
    let f = |k: &str, d: f32| a.get_float(k).ok().flatten().unwrap_or(d);
    Some(match op.op_type() {
        "Relu" => ("Relu", vec![]),
        "Sigmoid" => ("Sigmoid", vec![]),
        "Tanh" => ("Tanh", vec![]),
        "HardSwish" => ("HardSwish", vec![]),
        "LeakyRelu" => ("LeakyRelu", vec![f("alpha", 0.01)]),
        "HardSigmoid" => ("HardSigmoid", vec![f("alpha", 0.2), f("beta", 0.5)]),
        // SiLU as the graph optimizations write it (x·Sigmoid(x) fused into ONNX Swish).
        "Swish" if f("alpha", 1.0) == 1.0 => ("Silu", vec![]),
        "Gelu" => match a.get_str("approximate").ok().flatten().unwrap_or("none") {
            "tanh" => ("GeluTanh", vec![]),
            _ => ("Gelu", vec![]),
        },
        "Clip" => {
            // Opset 11+: min and max are optional constant inputs; before: attributes.
            let bound = |i: usize, d: f32| -> Option<f32> {
                match producer(g, n, i) {
                    None => Some(d),
                    Some(_) => {
                        let (_, t) = const_input(g, n, i)?;
                        f32s(&t)?.first().copied()
                    }
                }
            };
            if op.input_count() > 1 {
                ("Clip", vec![bound(1, f32::MIN)?, bound(2, f32::MAX)?])
            } else {
                ("Clip", vec![f("min", f32::MIN), f("max", f32::MAX)])
            }
        }
        _ => return None,
    })
}

/// Whether constant `t` is a per-channel bias for an output of rank `rank` with `channels`
/// channels on `axis`: `[C]` on the last axis, or `[C, 1, …]` / `[1, C, 1, …]` for channel 1.
fn bias_for(t: &Tensor, rank: usize, axis: usize, channels: usize) -> bool {
    let s = t.shape();
    if s.iter().product::<usize>() != channels || s.len() > rank {
        return false;
    }
    // Align the bias's dims to the output's trailing dims.
    let off = rank - s.len();
    s.iter().enumerate().all(|(i, &d)| {
        if i + off == axis {
            d == channels
        } else {
            d == 1
        }
    })
}

/// What follows an anchor: the bias and residual Adds, the activation, the nodes absorbed.
struct Chain {
    bias: Option<(NodeId, usize, NodeId)>,
    residual: Option<OutAnchor>,
    activation: Option<(&'static str, Vec<f32>)>,
    absorbed: Vec<NodeId>,
    /// The node whose output the fused node takes over.
    last: NodeId,
}

/// The other input of a two-input Add `add` read from (`from`, output 0).
fn other_input(g: &ComputeGraph, add: NodeId, from: NodeId) -> Option<(usize, OutAnchor)> {
    let node = g.node(add)?;
    if node.in_data_count() != 2 {
        return None;
    }
    let (a, b) = (node.peer_of_input(0)?, node.peer_of_input(1)?);
    if a.node == from && b.node != from {
        Some((1, b))
    } else if b.node == from && a.node != from {
        Some((0, a))
    } else {
        None
    }
}

fn same_shape(g: &ComputeGraph, a: OutAnchor, n: NodeId) -> bool {
    let da = g.op(a.node).and_then(|o| o.output(a.index.max(0) as usize));
    let dn = g.op(n).and_then(|o| o.output(0));
    match (da, dn) {
        (Some(x), Some(y)) => {
            x.shape().is_fully_known() && x.shape() == y.shape() && x.dtype() == y.dtype()
        }
        _ => false,
    }
}

/// The chain after `anchor` (a Conv or MatMul) that its kernel can take as an epilogue.
fn chain_after(g: &ComputeGraph, anchor: NodeId, conv: bool, has_bias: bool) -> Chain {
    let mut c = Chain {
        bias: None,
        residual: None,
        activation: None,
        absorbed: Vec::new(),
        last: anchor,
    };
    let Some(out) = g.op(anchor).and_then(|o| o.output(0)) else {
        return c;
    };
    let dims = out.shape().dims().to_vec();
    let rank = dims.len();
    let (axis, channels) = if conv {
        (1, dims.get(1))
    } else {
        (rank.saturating_sub(1), dims.last())
    };
    let channels = channels.copied().unwrap_or(-1);
    let ok_node = |n: NodeId| g.op(n).is_some() && !has_control(g, n) && is_f32_out(g, n);
    // Bias: Add of a per-channel constant.
    if let Some((add, _)) = single_reader(g, c.last, 0) {
        if !has_bias
            && channels > 0
            && ok_node(add)
            && g.op(add).is_some_and(|o| o.op_type() == "Add")
        {
            if let Some((k, other)) = other_input(g, add, c.last) {
                if let Some(t) = const_of(g, other.node).and_then(|t| tensor_from_ir(t).ok()) {
                    if bias_for(&t, rank, axis, channels as usize) {
                        c.bias = Some((add, k, other.node));
                        c.absorbed.push(add);
                        c.last = add;
                    }
                }
            }
        }
    }
    // Residual: Add of a computed tensor of the same shape.
    if let Some((add, _)) = single_reader(g, c.last, 0) {
        if ok_node(add) && g.op(add).is_some_and(|o| o.op_type() == "Add") {
            if let Some((_, other)) = other_input(g, add, c.last) {
                if const_of(g, other.node).is_none() && same_shape(g, other, c.last) {
                    c.residual = Some(other);
                    c.absorbed.push(add);
                    c.last = add;
                }
            }
        }
    }
    // Activation, or SiLU written as x·Sigmoid(x).
    if let Some((act, _)) = single_reader(g, c.last, 0) {
        if ok_node(act) {
            if let Some(a) = activation_of(g, act) {
                c.activation = Some(a);
                c.absorbed.push(act);
                c.last = act;
                return c;
            }
        }
    }
    if let Some(node) = g.node(c.last) {
        let readers = node.peers_of_output(0);
        let listed = g.is_output_node(c.last);
        if readers.len() == 2 && !listed {
            let (r0, r1) = (readers[0].node, readers[1].node);
            let is = |n: NodeId, t: &str| g.op(n).is_some_and(|o| o.op_type() == t);
            let (sig, mul) = if is(r0, "Sigmoid") && is(r1, "Mul") {
                (r0, r1)
            } else if is(r1, "Sigmoid") && is(r0, "Mul") {
                (r1, r0)
            } else {
                return c;
            };
            let mul_reads_sig = other_input(g, mul, c.last).is_some_and(|(_, o)| o.node == sig);
            let sig_only_to_mul = single_reader(g, sig, 0).is_some_and(|(m, _)| m == mul);
            if mul_reads_sig && sig_only_to_mul && ok_node(sig) && ok_node(mul) {
                c.activation = Some(("Silu", vec![]));
                c.absorbed.push(sig);
                c.absorbed.push(mul);
                c.last = mul;
            }
        }
    }
    c
}

/// The next Conv/MatMul with an epilogue to fuse, as a patch.
fn next_epilogue(g: &ComputeGraph) -> Result<Option<GraphPatch>, String> {
    let root = g.root();
    for n in g.nodes_of(root) {
        let Some(op) = g.op(n) else { continue };
        let conv = match op.op_type() {
            "Conv" if op.domain().is_empty() => true,
            "MatMul" if op.domain().is_empty() => false,
            _ => continue,
        };
        if !is_f32_out(g, n) || has_control(g, n) {
            continue;
        }
        if conv
            && g.op(n)
                .and_then(|o| o.input(1))
                .is_none_or(|d| !matches!(d.shape().rank(), Some(3 | 4)))
        {
            continue;
        }
        let has_bias = conv && producer(g, n, 2).is_some();
        let chain = chain_after(g, n, conv, has_bias);
        if chain.absorbed.is_empty() {
            continue;
        }
        let mut fused = OpDesc::new(
            format!("{}_fused", op.name()),
            if conv { "FusedConv" } else { "FusedMatMul" },
        );
        fused.set_domain(RGE_DOMAIN);
        fused.set_opset(Some(1));
        fused.set_engine_name("");
        for (k, v) in op.attrs().iter() {
            fused.attrs_mut().set(k, v.clone());
        }
        let (name, params) = chain.activation.clone().unwrap_or(("", vec![]));
        fused.attrs_mut().set("activation", name);
        fused
            .attrs_mut()
            .set("activation_params", AttrValue::ListFloat(params));
        // The original nodes, through earlier rewrites (a Conv that a BatchNormalization was
        // folded into names both).
        let mut replaced = match op.attrs().get(FUSED_ATTR) {
            Some(AttrValue::ListString(v)) => v.clone(),
            _ => vec![op.name().to_string()],
        };
        replaced.extend(chain.absorbed.iter().map(|&a| g.name_of(a).to_string()));
        fused
            .attrs_mut()
            .set(FUSED_ATTR, AttrValue::ListString(replaced));
        let desc = |n: NodeId, i: usize| {
            g.op(n)
                .and_then(|o| o.input(i))
                .cloned()
                .unwrap_or_default()
        };
        fused
            .add_input("X", desc(n, 0))
            .map_err(|e| e.to_string())?;
        fused
            .add_input("W", desc(n, 1))
            .map_err(|e| e.to_string())?;
        let bias_src: Option<OutAnchor> = if has_bias {
            producer(g, n, 2)
        } else {
            chain.bias.and_then(|(add, k, _)| producer(g, add, k))
        };
        let bias_desc = bias_src.and_then(|a| {
            g.op(a.node)
                .and_then(|o| o.output(a.index.max(0) as usize))
                .cloned()
        });
        fused
            .add_input("B", bias_desc.clone().unwrap_or_default())
            .map_err(|e| e.to_string())?;
        let z_desc = chain.residual.and_then(|a| {
            g.op(a.node)
                .and_then(|o| o.output(a.index.max(0) as usize))
                .cloned()
        });
        fused
            .add_input("Z", z_desc.unwrap_or_default())
            .map_err(|e| e.to_string())?;
        let out_desc = g
            .op(chain.last)
            .and_then(|o| o.output(0))
            .cloned()
            .unwrap_or_default();
        fused.add_output("Y", out_desc).map_err(|e| e.to_string())?;
        let mut patch = GraphPatch::in_graph(root);
        patch.remove(n);
        for &a in &chain.absorbed {
            patch.remove(a);
        }
        let k = patch.add_node(fused);
        for i in 0..2 {
            let a = producer(g, n, i).ok_or("anchor input missing")?;
            patch.connect(Outlet::old(a.node, a.index.max(0) as usize), k, i);
        }
        if let Some(b) = bias_src {
            patch.connect(Outlet::old(b.node, b.index.max(0) as usize), k, 2);
        }
        if let Some(z) = chain.residual {
            patch.connect(Outlet::old(z.node, z.index.max(0) as usize), k, 3);
        }
        patch.shunt(chain.last, 0, Outlet::new_node(k, 0));
        let removed: HashSet<NodeId> = std::iter::once(n)
            .chain(chain.absorbed.iter().copied())
            .collect();
        // Clip's bounds, once read by the removed Clip only.
        let mut consts = Vec::new();
        for &a in &chain.absorbed {
            if let Some(node) = g.node(a) {
                for i in 0..node.in_data_count() {
                    if let Some(p) = node.peer_of_input(i) {
                        if const_of(g, p.node).is_some() && Some(p.node) != chain.bias.map(|b| b.2)
                        {
                            consts.push(p.node);
                        }
                    }
                }
            }
        }
        drop_dead_consts(g, &mut patch, &consts, &removed);
        patch.drop_control();
        return Ok(Some(patch));
    }
    Ok(None)
}
