//! GELU fusion: the two ways exporters write GELU become one ONNX `Gelu` (opset 20):
//!
//! - erf: `x · 0.5 · (1 + Erf(x / √2))` (or `x · (1/√2)` inside) → `Gelu(approximate="none")`;
//! - tanh: `x · 0.5 · (1 + Tanh(√(2/π) · (x + 0.044715 · x³)))` with `x³` as `Pow(x, 3)` →
//!   `Gelu(approximate="tanh")`.
//!
//! The outer product may be grouped any way: `(x·a)·0.5`, `x·(a·0.5)`, `(x·0.5)·a`. Every
//! constant must be a scalar within 1e-4 of its value, every inner value read only inside
//! the pattern, and the type f32 or f64; otherwise the nodes stay as they are. The dense
//! engine then takes the `Gelu` into the epilogue of the MatMul before it.

use rge_ir::{ComputeGraph, DataType, NodeId, OutAnchor};

use super::util::{
    fused_op, is_op, near, other_input, out_desc, out_dtype, producer, removable, replace_pattern,
    root_nodes, scalar_operand, single_reader, NewOp,
};
use super::{OptLevel, OptPass};

/// Relative tolerance on the pattern's constants.
const TOL: f64 = 1e-4;

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct GeluFusion;

/// The node reading `n`'s output when it is the only reader and `n` may go.
fn next(g: &ComputeGraph, n: NodeId) -> Option<NodeId> {
    if !removable(g, n) {
        return None;
    }
    single_reader(g, n, 0).map(|r| r.0)
}

/// Whether `n` is `op(from, c)` (either order for Mul/Add) with scalar constant `c ≈ want`.
fn scaled(g: &ComputeGraph, n: NodeId, op: &str, from: OutAnchor, want: f64) -> bool {
    if !is_op(g, n, op) {
        return false;
    }
    match scalar_operand(g, n) {
        Some((a, v)) if a == from && near(v, want, TOL) => {
            // Div and Sub are not commutative: the variable must come first.
            !matches!(op, "Div" | "Sub") || producer(g, n, 0) == Some(from)
        }
        _ => false,
    }
}

/// The `x · 0.5 · a` around `a` (the `1 + f(…)` value): (inner nodes, the last node).
fn half_product(g: &ComputeGraph, x: OutAnchor, a: NodeId) -> Option<(Vec<NodeId>, NodeId)> {
    let m = next(g, a)?;
    if !is_op(g, m, "Mul") {
        return None;
    }
    let a_out = a.out(0);
    // x · (a · 0.5).
    if scaled(g, m, "Mul", a_out, 0.5) {
        let last = next(g, m)?;
        if is_op(g, last, "Mul") && other_input(g, last, m.out(0)).is_some_and(|(_, o)| o == x) {
            return Some((vec![m], last));
        }
        return None;
    }
    // (x · a) · 0.5 or (x · 0.5) · a.
    if let Some((_, o)) = other_input(g, m, a_out) {
        if o == x {
            let last = next(g, m)?;
            return scaled(g, last, "Mul", m.out(0), 0.5).then(|| (vec![m], last));
        }
        if removable(g, o.node)
            && single_reader(g, o.node, 0).map(|r| r.0) == Some(m)
            && scaled(g, o.node, "Mul", x, 0.5)
        {
            return Some((vec![o.node], m));
        }
    }
    None
}

/// `Erf(x / √2) + 1` from the Erf node: (x, the nodes up to the Add).
fn erf_form(g: &ComputeGraph, e: NodeId) -> Option<(OutAnchor, Vec<NodeId>)> {
    if !is_op(g, e, "Erf") {
        return None;
    }
    let d = producer(g, e, 0)?.node;
    let (x, _) = scalar_operand(g, d)?;
    let ok = scaled(g, d, "Div", x, std::f64::consts::SQRT_2)
        || scaled(g, d, "Mul", x, std::f64::consts::FRAC_1_SQRT_2);
    if !ok || next(g, d) != Some(e) {
        return None;
    }
    let a = next(g, e)?;
    scaled(g, a, "Add", e.out(0), 1.0).then(|| (x, vec![d, e, a]))
}

/// `Tanh(√(2/π) · (x + 0.044715 · x³)) + 1` from the Tanh node.
fn tanh_form(g: &ComputeGraph, t: NodeId) -> Option<(OutAnchor, Vec<NodeId>)> {
    if !is_op(g, t, "Tanh") {
        return None;
    }
    let i = producer(g, t, 0)?.node;
    let (s_out, _) = scalar_operand(g, i)?;
    let k = (2.0 / std::f64::consts::PI).sqrt();
    if !scaled(g, i, "Mul", s_out, k) || next(g, i) != Some(t) {
        return None;
    }
    let s = s_out.node;
    if !is_op(g, s, "Add") || next(g, s) != Some(i) {
        return None;
    }
    // One input of the Add is x, the other 0.044715 · Pow(x, 3).
    for (xi, mi) in [(0, 1), (1, 0)] {
        let (Some(x), Some(m)) = (producer(g, s, xi), producer(g, s, mi)) else {
            continue;
        };
        let m = m.node;
        let Some((p_out, _)) = scalar_operand(g, m) else {
            continue;
        };
        let p = p_out.node;
        let cube = is_op(g, p, "Pow")
            && producer(g, p, 0) == Some(x)
            && super::util::input_scalar(g, p, 1).is_some_and(|v| v == 3.0);
        if scaled(g, m, "Mul", p_out, 0.044715)
            && cube
            && next(g, p) == Some(m)
            && next(g, m) == Some(s)
        {
            let a = next(g, t)?;
            if scaled(g, a, "Add", t.out(0), 1.0) {
                return Some((x, vec![p, m, s, i, t, a]));
            }
        }
    }
    None
}

impl OptPass for GeluFusion {
    fn name(&self) -> &'static str {
        "gelu_fusion"
    }
    fn level(&self) -> OptLevel {
        OptLevel::All
    }
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        Some(&["Erf", "Tanh"])
    }
    fn makes(&self) -> &'static [&'static str] {
        &["Gelu"]
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let mut done = 0;
        for n in root_nodes(g) {
            if g.node(n).is_none() {
                continue;
            }
            let (found, approximate) = match erf_form(g, n) {
                Some(f) => (Some(f), "none"),
                None => (tanh_form(g, n), "tanh"),
            };
            let Some((x, mut nodes)) = found else {
                continue;
            };
            if !matches!(out_dtype(g, x), Some(DataType::Float | DataType::Double)) {
                continue;
            }
            let Some(&a) = nodes.last() else { continue };
            let Some((outer, last)) = half_product(g, x, a) else {
                continue;
            };
            nodes.extend(outer);
            nodes.push(last);
            let x_desc = out_desc(g, x).cloned().unwrap_or_default();
            let out = g
                .op(last)
                .and_then(|o| o.output(0))
                .cloned()
                .ok_or("stale node")?;
            let spec = NewOp {
                base: format!("{}_gelu", g.name_of(last)),
                op_type: "Gelu",
                opset: 20,
                inputs: vec![("X", x_desc)],
                out,
            };
            let mut op = fused_op(g, spec, self.name(), &nodes)?;
            op.attrs_mut().set("approximate", approximate);
            if replace_pattern(g, &nodes, last, op, &[Some(x)])? {
                done += 1;
            }
        }
        Ok(done)
    }
}
