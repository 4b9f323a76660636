//! Transpose cancellation and sinking:
//!
//! - a `Transpose` with the identity permutation goes;
//! - `Transpose(Transpose(x, p), q)` becomes one `Transpose(x, p∘q)`, or nothing when that is
//!   the identity;
//! - `Transpose(U(Transpose(x, p)), q)` with `p∘q` the identity and `U` an elementwise op of
//!   one tensor (a unary op, or a binary op with a scalar constant) becomes `U(x)`: the two
//!   transposes cancel once `U` is moved past the first.
//!
//! Inner values must have no other reader and not be graph outputs.

use rge_ir::{ComputeGraph, GraphPatch, NodeId, OutAnchor, Outlet};

use super::util::{
    bypass, input_const, onnx_op, outlet, producer, rank_of, removable, root_nodes, scalar_value,
    single_reader, unique_name,
};
use super::{OptLevel, OptPass};

/// Elementwise ops of one input that commute with any transpose.
const UNARY: &[&str] = &[
    "Relu",
    "Sigmoid",
    "Tanh",
    "Exp",
    "Log",
    "Neg",
    "Abs",
    "Sqrt",
    "Erf",
    "Reciprocal",
    "Floor",
    "Ceil",
    "Round",
    "Sign",
    "Sin",
    "Cos",
    "Softplus",
    "Softsign",
    "Elu",
    "Selu",
    "LeakyRelu",
    "HardSigmoid",
    "HardSwish",
    "Gelu",
    "Mish",
    "Celu",
    "Not",
    "IsNaN",
    "Cast",
];
/// Elementwise ops of two inputs: commute with a transpose when the other input is a scalar.
const BINARY: &[&str] = &["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"];

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct TransposeCancellation;

/// The permutation of Transpose node `n` (reading a value of known rank).
fn perm_of(g: &ComputeGraph, n: NodeId) -> Option<Vec<usize>> {
    let op = onnx_op(g, n, "Transpose")?;
    let rank = rank_of(g, producer(g, n, 0)?)?;
    super::util::transpose_perm(op, rank)
}

/// `Transpose(Transpose(x, p), q)` = `Transpose(x, r)` with `r[i] = p[q[i]]`.
fn compose(p: &[usize], q: &[usize]) -> Vec<usize> {
    q.iter().map(|&i| p[i]).collect()
}

fn is_identity(p: &[usize]) -> bool {
    p.iter().enumerate().all(|(i, &x)| i == x)
}

/// Whether `n` is elementwise over one tensor input (the others scalar constants); that input.
fn elementwise_one(g: &ComputeGraph, n: NodeId) -> Option<(usize, OutAnchor)> {
    let op = g.op(n)?;
    if !op.domain().is_empty() && op.domain() != "ai.onnx" {
        return None;
    }
    let t = op.op_type();
    let node = g.node(n)?;
    if UNARY.contains(&t) && node.in_data_count() == 1 {
        return Some((0, producer(g, n, 0)?));
    }
    if BINARY.contains(&t) && node.in_data_count() == 2 {
        for (x, c) in [(0, 1), (1, 0)] {
            let is_scalar = input_const(g, n, c)
                .is_some_and(|t| t.desc.shape().dims().iter().all(|&d| d == 1) && scalar_ok(t));
            if is_scalar && input_const(g, n, x).is_none() {
                return Some((x, producer(g, n, x)?));
            }
        }
    }
    None
}

/// A one-element constant of rank 0 or 1 (broadcasting it cannot raise the rank).
fn scalar_ok(t: &rge_ir::Tensor) -> bool {
    t.desc.shape().dims().len() <= 1 && (scalar_value(t).is_some() || t.data.len() <= 8)
}

impl TransposeCancellation {
    fn rewrite(&self, g: &mut ComputeGraph, n: NodeId) -> Result<bool, String> {
        let Some(q) = perm_of(g, n) else {
            return Ok(false);
        };
        // A bypass needs `n` removable; a rewrite that takes over its output (and keeps its
        // desc, graph-output name included) only needs it free of control edges.
        if super::util::has_control(g, n) || !g.node_subgraphs(n).is_empty() {
            return Ok(false);
        }
        let Some(src) = producer(g, n, 0) else {
            return Ok(false);
        };
        if is_identity(&q) {
            if !removable(g, n) {
                return Ok(false);
            }
            bypass(g, n, src)?;
            return Ok(true);
        }
        // Transpose of a transpose.
        if let Some(p) = perm_of(g, src.node) {
            let Some(x) = producer(g, src.node, 0) else {
                return Ok(false);
            };
            let r = compose(&p, &q);
            if is_identity(&r) {
                if !removable(g, n) {
                    return Ok(false);
                }
                bypass(g, n, x)?;
                return Ok(true);
            }
            if single_reader(g, src.node, 0) != Some((n, 0)) || !removable(g, src.node) {
                return Ok(false);
            }
            let gid = g.root();
            let mut op = g.op(n).ok_or("stale node")?.clone();
            op.set_name(unique_name(
                g,
                gid,
                &format!("{}_merged", g.name_of(n)),
                &Default::default(),
            ));
            op.attrs_mut().set(
                "perm",
                rge_ir::AttrValue::ListInt(r.iter().map(|&v| v as i64).collect()),
            );
            if let (Some(slot), Some(d)) = (
                op.input_mut(0),
                g.op(x.node).and_then(|o| o.output(x.index.max(0) as usize)),
            ) {
                *slot = d.clone();
            }
            let mut patch = GraphPatch::in_graph(gid);
            patch.remove(n).remove(src.node);
            let k = patch.add_node(op);
            patch.connect(outlet(x), k, 0);
            patch.shunt(n, 0, Outlet::new_node(k, 0));
            patch.drop_control();
            g.apply_patch(patch).map_err(|e| e.to_string())?;
            return Ok(true);
        }
        // Transpose(U(Transpose(x, p)), q) with p∘q the identity: U(x).
        let u = src.node;
        let Some((ui, t1)) = elementwise_one(g, u) else {
            return Ok(false);
        };
        let Some(p) = perm_of(g, t1.node) else {
            return Ok(false);
        };
        if !is_identity(&compose(&p, &q))
            || single_reader(g, u, 0) != Some((n, 0))
            || single_reader(g, t1.node, 0) != Some((u, ui))
            || !removable(g, u)
            || !removable(g, t1.node)
        {
            return Ok(false);
        }
        let Some(x) = producer(g, t1.node, 0) else {
            return Ok(false);
        };
        let gid = g.root();
        let mut op = g.op(u).ok_or("stale node")?.clone();
        op.set_name(unique_name(
            g,
            gid,
            &format!("{}_sunk", g.name_of(u)),
            &Default::default(),
        ));
        let x_desc = g
            .op(x.node)
            .and_then(|o| o.output(x.index.max(0) as usize))
            .cloned();
        let out_desc = g.op(n).and_then(|o| o.output(0)).cloned();
        if let (Some(slot), Some(d)) = (op.input_mut(ui), x_desc) {
            *slot = d;
        }
        if let (Some(slot), Some(d)) = (op.output_mut(0), out_desc) {
            *slot = d;
        }
        let node_inputs = g.node(u).map_or(0, |nd| nd.in_data_count());
        let mut patch = GraphPatch::in_graph(gid);
        patch.remove(n).remove(u).remove(t1.node);
        let k = patch.add_node(op);
        for i in 0..node_inputs {
            let from = if i == ui { Some(x) } else { producer(g, u, i) };
            if let Some(a) = from {
                patch.connect(outlet(a), k, i);
            }
        }
        patch.shunt(n, 0, Outlet::new_node(k, 0));
        patch.drop_control();
        g.apply_patch(patch).map_err(|e| e.to_string())?;
        Ok(true)
    }
}

impl OptPass for TransposeCancellation {
    fn name(&self) -> &'static str {
        "transpose_cancellation"
    }
    fn level(&self) -> OptLevel {
        OptLevel::Basic
    }
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        Some(&["Transpose"])
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let mut done = 0;
        for n in root_nodes(g) {
            if g.node(n).is_some() && self.rewrite(g, n)? {
                done += 1;
            }
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutations_compose() {
        // [0,2,3,1] then [0,3,1,2] is the identity.
        assert!(is_identity(&compose(&[0, 2, 3, 1], &[0, 3, 1, 2])));
        assert_eq!(compose(&[0, 2, 1, 3], &[0, 1, 3, 2]), [0, 2, 3, 1]);
    }
}
