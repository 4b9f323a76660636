//! LayerNorm fusion: LayerNorm written out as
//! `d = x − ReduceMean(x)`, `y = d / Sqrt(ReduceMean(d²) + ε) · γ (+ β)` (both means over the
//! same trailing axes, keepdims, `d²` as `Pow(d, 2)`) becomes one ONNX
//! `LayerNormalization` (opset 17) over those axes with that ε.
//!
//! Left alone (each a near miss the tests cover): axes that are not the trailing ones or
//! differ between the two means, an inner value read outside the pattern, ε not a scalar
//! constant or added after the Sqrt, γ/β not constants of the normalized shape, a type other
//! than f32/f64.

use rge_ir::{ComputeGraph, DataType, NodeId, OutAnchor};

use super::util::{
    const_tensor, fused_op, input_const, input_scalar, int_values, is_op, onnx_op, out_desc,
    out_dtype, producer, rank_of, readers, removable, replace_pattern, root_nodes, single_reader,
    NewOp,
};
use super::{OptLevel, OptPass};

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct LayerNormFusion;

/// The first normalized axis of ReduceMean `n` over the trailing axes of a rank-`rank` input,
/// with keepdims.
fn trailing_mean(g: &ComputeGraph, n: NodeId, rank: usize) -> Option<usize> {
    let op = onnx_op(g, n, "ReduceMean")?;
    if op.attrs().get_int("keepdims").ok().flatten().unwrap_or(1) != 1 {
        return None;
    }
    let axes: Vec<i64> = match op.attrs().get_list_int("axes").ok().flatten() {
        Some(a) => a.to_vec(),
        None => int_values(input_const(g, n, 1)?)?,
    };
    if axes.is_empty() || rank == 0 {
        return None;
    }
    let r = rank as i64;
    let mut norm: Vec<i64> = axes
        .iter()
        .map(|&a| if a < 0 { a + r } else { a })
        .collect();
    norm.sort_unstable();
    norm.dedup();
    let first = *norm.first()?;
    let trailing = norm.len() == axes.len()
        && first >= 0
        && norm.iter().enumerate().all(|(i, &a)| a == first + i as i64)
        && *norm.last()? == r - 1;
    trailing.then_some(first as usize)
}

/// The only reader of `n`, when `n` may go.
fn next(g: &ComputeGraph, n: NodeId) -> Option<NodeId> {
    if !removable(g, n) {
        return None;
    }
    single_reader(g, n, 0).map(|r| r.0)
}

/// Whether constant `c` has the normalized dims `dims` (leading 1s allowed).
fn param_fits(g: &ComputeGraph, c: OutAnchor, dims: &[i64], dtype: DataType) -> bool {
    let Some(t) = const_tensor(g, c.node) else {
        return false;
    };
    let s = t.desc.shape().dims();
    let lead = s.len().saturating_sub(dims.len());
    t.desc.dtype() == dtype
        && s.len() >= dims.len()
        && s[..lead].iter().all(|&d| d == 1)
        && &s[lead..] == dims
}

/// The constant input of two-input `n` other than `from` that fits the normalized shape.
fn param_of(
    g: &ComputeGraph,
    n: NodeId,
    from: OutAnchor,
    dims: &[i64],
    dtype: DataType,
) -> Option<OutAnchor> {
    let (_, o) = super::util::other_input(g, n, from)?;
    param_fits(g, o, dims, dtype).then_some(o)
}

/// A match: (x, γ, β, ε, first axis, nodes, last node).
type Found = (
    OutAnchor,
    OutAnchor,
    Option<OutAnchor>,
    f64,
    usize,
    Vec<NodeId>,
    NodeId,
);

fn find(g: &ComputeGraph, r1: NodeId) -> Option<Found> {
    let x = producer(g, r1, 0)?;
    let rank = rank_of(g, x)?;
    let axis = trailing_mean(g, r1, rank)?;
    let dtype = out_dtype(g, x)?;
    if !matches!(dtype, DataType::Float | DataType::Double) {
        return None;
    }
    let dims = super::util::known_dims(g, x)?;
    let norm_dims = &dims[axis..];
    // d = x − mean.
    let d = next(g, r1)?;
    if !is_op(g, d, "Sub") || producer(g, d, 0) != Some(x) || producer(g, d, 1) != Some(r1.out(0)) {
        return None;
    }
    let d_readers = readers(g, d, 0);
    if d_readers.len() != 2 || !removable(g, d) {
        return None;
    }
    // d² and the Div reading d.
    let (mut sq, mut div) = (None, None);
    for &(r, i) in &d_readers {
        if is_op(g, r, "Div") && i == 0 {
            div = Some(r);
        } else if is_op(g, r, "Pow") && i == 0 && input_scalar(g, r, 1).is_some_and(|v| v == 2.0) {
            sq = Some(r);
        }
    }
    let (sq, div) = (sq?, div?);
    let r2 = next(g, sq)?;
    if trailing_mean(g, r2, rank) != Some(axis) {
        return None;
    }
    let e = next(g, r2)?;
    let (v, eps) = super::util::scalar_operand(g, e)?;
    if !is_op(g, e, "Add") || v != r2.out(0) || eps < 0.0 {
        return None;
    }
    let s = next(g, e)?;
    if !is_op(g, s, "Sqrt") || next(g, s) != Some(div) || producer(g, div, 1) != Some(s.out(0)) {
        return None;
    }
    let m = next(g, div)?;
    if !is_op(g, m, "Mul") {
        return None;
    }
    let gamma = param_of(g, m, div.out(0), norm_dims, dtype)?;
    let mut nodes = vec![r1, d, sq, r2, e, s, div];
    let mut last = m;
    let mut beta = None;
    if let Some(b) = next(g, m) {
        if is_op(g, b, "Add") {
            if let Some(p) = param_of(g, b, m.out(0), norm_dims, dtype) {
                nodes.push(m);
                beta = Some(p);
                last = b;
            }
        }
    }
    Some((x, gamma, beta, eps, axis, nodes, last))
}

impl OptPass for LayerNormFusion {
    fn name(&self) -> &'static str {
        "layernorm_fusion"
    }
    fn level(&self) -> OptLevel {
        OptLevel::All
    }
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        Some(&["ReduceMean"])
    }
    fn makes(&self) -> &'static [&'static str] {
        &["LayerNormalization"]
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let mut done = 0;
        for n in root_nodes(g) {
            if g.node(n).is_none() {
                continue;
            }
            let Some((x, gamma, beta, eps, axis, mut nodes, last)) = find(g, n) else {
                continue;
            };
            nodes.push(last);
            let desc = |a: OutAnchor| out_desc(g, a).cloned().unwrap_or_default();
            let mut ins = vec![("X", desc(x)), ("Scale", desc(gamma))];
            if let Some(b) = beta {
                ins.push(("B", desc(b)));
            }
            let out = g
                .op(last)
                .and_then(|o| o.output(0))
                .cloned()
                .ok_or("stale node")?;
            let spec = NewOp {
                base: format!("{}_layernorm", g.name_of(last)),
                op_type: "LayerNormalization",
                opset: 17,
                inputs: ins,
                out,
            };
            let mut op = fused_op(g, spec, self.name(), &nodes)?;
            op.attrs_mut().set("axis", axis as i64);
            op.attrs_mut().set("epsilon", eps as f32);
            if replace_pattern(g, &nodes, last, op, &[Some(x), Some(gamma), beta])? {
                done += 1;
            }
        }
        Ok(done)
    }
}
