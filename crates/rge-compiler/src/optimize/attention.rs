//! Attention fusion: scaled dot-product attention as exporters write it,
//! `MatMul(Softmax(MatMul(Q, Kᵀ) ⊘ s (+ mask)), V)` with `⊘ s` a Div or Mul by a scalar
//! constant (or absent) and the mask additive, or a `Where(cond, ·, fill)` with a constant
//! bool `cond` in which every row attends somewhere and `fill` ≤ −1e30 (GPT-2's causal mask;
//! it becomes a bool `attn_mask`), over 4-D `[batch, heads, seq, dim]` f32 tensors, becomes one ONNX
//! `Attention` (opset 23: `Q`, `K`, `V`, `attn_mask`; `scale`), whose kernel computes each
//! head's scores, mask, softmax and weighted sum in one pass per row block.
//!
//! `Kᵀ` is usually a `Transpose` of K's heads; the fused op reads K itself, so that Transpose
//! is replaced by one with the last two axes swapped back (or dropped when that is the
//! identity); any other `Kᵀ` gets a new `Transpose` of its last two axes. The mask must
//! broadcast to the scores' shape and have rank 1 to 4 (what the op takes). Near misses (softmax over another axis, a non-constant
//! scale, an inner value read elsewhere, another rank or type) are left as they are.

use rge_ir::{AttrValue, ComputeGraph, DataType, GraphPatch, NodeId, OutAnchor, Outlet};

use super::util::{
    const_inputs_of, drop_dead_consts, is_op, known_dims, onnx_op, onnx_opset, out_desc, outlet,
    producer, removable, root_nodes, scalar_operand, single_reader, transpose_perm, unique_name,
};
use super::{OptLevel, OptPass, REWRITE_ATTR as REWRITE};

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct AttentionFusion;

/// The only reader of `n`, when `n` may go.
fn next(g: &ComputeGraph, n: NodeId) -> Option<NodeId> {
    if !removable(g, n) {
        return None;
    }
    single_reader(g, n, 0).map(|r| r.0)
}

/// Whether Softmax `n` normalizes the last axis of a rank-4 value.
fn softmax_last(g: &ComputeGraph, n: NodeId) -> bool {
    let Some(op) = onnx_op(g, n, "Softmax") else {
        return false;
    };
    let opset = onnx_opset(g, op).unwrap_or(i64::MAX);
    let default = if opset < 13 { 1 } else { -1 };
    let axis = op.attrs().get_int("axis").ok().flatten().unwrap_or(default);
    axis == -1 || axis == 3
}

fn f32_rank4(g: &ComputeGraph, a: OutAnchor) -> Option<Vec<i64>> {
    let d = known_dims(g, a)?;
    (d.len() == 4 && out_desc(g, a)?.dtype() == DataType::Float).then_some(d)
}

/// Whether `mask` dims broadcast (right-aligned) to `to`.
fn broadcasts(mask: &[i64], to: &[i64]) -> bool {
    !mask.is_empty()
        && mask.len() <= to.len()
        && mask
            .iter()
            .rev()
            .zip(to.iter().rev())
            .all(|(&m, &t)| m == 1 || m == t)
}

/// The largest fill value of a `Where` mask taken as "masked out": its exp underflows to 0
/// against any finite score, as the bool mask's −∞ does.
const MASKED_MAX: f64 = -1e30;

/// Whether a constant bool mask lets every query row attend to at least one key (a fully
/// masked row is uniform under `Where` but zero under the fused op's bool mask).
fn every_row_attends(t: &rge_ir::Tensor) -> bool {
    let Some(&last) = t.desc.shape().dims().last() else {
        return false;
    };
    t.desc.dtype() == DataType::Bool
        && last > 0
        && t.data
            .chunks(last as usize)
            .all(|row| row.iter().any(|&b| b != 0))
}

/// A match.
struct Found {
    q: OutAnchor,
    kt: OutAnchor,
    v: OutAnchor,
    mask: Option<OutAnchor>,
    scale: f64,
    nodes: Vec<NodeId>,
    last: NodeId,
}

fn find(g: &ComputeGraph, sm: NodeId) -> Option<Found> {
    if !softmax_last(g, sm) || !removable(g, sm) {
        return None;
    }
    let mut nodes = vec![sm];
    let mut cur = producer(g, sm, 0)?;
    // Optional additive mask.
    let mut mask = None;
    if is_op(g, cur.node, "Add") && next(g, cur.node) == Some(sm) {
        let add = cur.node;
        let (a, b) = (producer(g, add, 0)?, producer(g, add, 1)?);
        // The scores side: a MatMul, or a scale of one.
        let scores_side = |x: OutAnchor| {
            is_op(g, x.node, "MatMul")
                || ((is_op(g, x.node, "Div") || is_op(g, x.node, "Mul"))
                    && scalar_operand(g, x.node).is_some_and(|(y, _)| is_op(g, y.node, "MatMul")))
        };
        let (s, m) = if scores_side(a) {
            (a, b)
        } else if scores_side(b) {
            (b, a)
        } else {
            return None;
        };
        let sd = f32_rank4(g, s)?;
        let md = known_dims(g, m)?;
        if out_desc(g, m)?.dtype() != DataType::Float || !broadcasts(&md, &sd) {
            return None;
        }
        mask = Some(m);
        nodes.push(add);
        cur = s;
    } else if is_op(g, cur.node, "Where") && next(g, cur.node) == Some(sm) {
        // Where(cond, scores, very negative): a bool mask (true attends).
        let w = cur.node;
        let (c, s) = (producer(g, w, 0)?, producer(g, w, 1)?);
        let neg = super::util::input_scalar(g, w, 2)?;
        let sd = f32_rank4(g, s)?;
        let cond = super::util::input_const(g, w, 0)?;
        let cd = cond.desc.shape().dims().to_vec();
        if neg > MASKED_MAX || !broadcasts(&cd, &sd) || !every_row_attends(cond) {
            return None;
        }
        mask = Some(c);
        nodes.push(w);
        cur = s;
    }
    // Optional scale.
    let mut scale = 1.0;
    if (is_op(g, cur.node, "Div") || is_op(g, cur.node, "Mul"))
        && next(g, cur.node) == Some(*nodes.last()?)
    {
        let n = cur.node;
        let (x, c) = scalar_operand(g, n)?;
        if c == 0.0 || !c.is_finite() {
            return None;
        }
        if is_op(g, n, "Div") {
            if producer(g, n, 0) != Some(x) {
                return None;
            }
            scale = 1.0 / c;
        } else {
            scale = c;
        }
        nodes.push(n);
        cur = x;
    }
    let qk = cur.node;
    if !is_op(g, qk, "MatMul") || next(g, qk) != Some(*nodes.last()?) {
        return None;
    }
    nodes.push(qk);
    let (q, kt) = (producer(g, qk, 0)?, producer(g, qk, 1)?);
    let (qd, ktd) = (f32_rank4(g, q)?, f32_rank4(g, kt)?);
    let out = next(g, sm)?;
    if !is_op(g, out, "MatMul") || producer(g, out, 0) != Some(sm.out(0)) {
        return None;
    }
    let v = producer(g, out, 1)?;
    let vd = f32_rank4(g, v)?;
    // [B, H, S, D] · [B, H, D, L] and [B, H, L, Dv], no broadcasting over batch or heads.
    let same_bh = qd[..2] == ktd[..2] && qd[..2] == vd[..2];
    if !same_bh || qd[3] != ktd[2] || ktd[3] != vd[2] {
        return None;
    }
    Some(Found {
        q,
        kt,
        v,
        mask,
        scale,
        nodes,
        last: out,
    })
}

impl AttentionFusion {
    fn rewrite(&self, g: &mut ComputeGraph, f: Found) -> Result<bool, String> {
        let gid = g.root();
        let mut taken = std::collections::HashSet::new();
        let base = g.name_of(f.last).to_string();
        let mut all = f.nodes.clone();
        all.push(f.last);
        if all.iter().any(|&n| super::util::has_control(g, n)) {
            return Ok(false);
        }
        let mut patch = GraphPatch::in_graph(gid);
        for &n in &all {
            patch.remove(n);
        }
        // K from Kᵀ: swap the last two axes back.
        let kt_desc = out_desc(g, f.kt).cloned().ok_or("stale node")?;
        let mut k_desc = kt_desc.clone();
        let kd = kt_desc.shape().dims().to_vec();
        k_desc.set_shape(rge_ir::Shape::new([kd[0], kd[1], kd[3], kd[2]]));
        k_desc.attrs_mut().clear();
        let inner_t = f.kt.node;
        let (k_src, perm): (OutAnchor, Vec<usize>) = match onnx_op(g, inner_t, "Transpose") {
            Some(op)
                if single_reader(g, inner_t, 0) == Some((f.nodes[f.nodes.len() - 1], 1))
                    && removable(g, inner_t) =>
            {
                let src = producer(g, inner_t, 0).ok_or("Transpose without input")?;
                let mut p = transpose_perm(op, 4).ok_or("bad perm")?;
                p.swap(2, 3);
                patch.remove(inner_t);
                all.push(inner_t);
                (src, p)
            }
            _ => (f.kt, vec![0, 1, 3, 2]),
        };
        let k_outlet = if perm == [0, 1, 2, 3] {
            outlet(k_src)
        } else {
            let name = unique_name(g, gid, &format!("{base}_k"), &taken);
            taken.insert(name.clone());
            let mut t = rge_ir::OpDesc::new(name, "Transpose");
            t.add_input("data", out_desc(g, k_src).cloned().unwrap_or_default())
                .map_err(|e| e.to_string())?;
            t.add_output("transposed", k_desc.clone())
                .map_err(|e| e.to_string())?;
            t.attrs_mut().set(
                "perm",
                AttrValue::ListInt(perm.iter().map(|&x| x as i64).collect()),
            );
            let k = patch.add_node(t);
            patch.connect(outlet(k_src), k, 0);
            Outlet::new_node(k, 0)
        };
        let name = unique_name(g, gid, &format!("{base}_attention"), &taken);
        let mut op = rge_ir::OpDesc::new(name, "Attention");
        op.set_opset(Some(23));
        let d = |a: OutAnchor| out_desc(g, a).cloned().unwrap_or_default();
        op.add_input("Q", d(f.q)).map_err(|e| e.to_string())?;
        op.add_input("K", k_desc).map_err(|e| e.to_string())?;
        op.add_input("V", d(f.v)).map_err(|e| e.to_string())?;
        if let Some(m) = f.mask {
            op.add_input("attn_mask", d(m)).map_err(|e| e.to_string())?;
        }
        let out = g
            .op(f.last)
            .and_then(|o| o.output(0))
            .cloned()
            .ok_or("stale node")?;
        op.add_output("Y", out).map_err(|e| e.to_string())?;
        op.attrs_mut().set("scale", f.scale as f32);
        let mut list = vec![self.name().to_string()];
        list.extend(all.iter().map(|&n| g.name_of(n).to_string()));
        op.attrs_mut().set(REWRITE, AttrValue::ListString(list));
        let a = patch.add_node(op);
        patch.connect(outlet(f.q), a, 0);
        patch.connect(k_outlet, a, 1);
        patch.connect(outlet(f.v), a, 2);
        if let Some(m) = f.mask {
            patch.connect(outlet(m), a, 3);
        }
        patch.shunt(f.last, 0, Outlet::new_node(a, 0));
        let removed = all.iter().copied().collect();
        let consts: Vec<NodeId> = const_inputs_of(g, &all)
            .into_iter()
            .filter(|&c| f.mask.is_none_or(|m| m.node != c))
            .collect();
        drop_dead_consts(g, &mut patch, &consts, &removed);
        patch.drop_control();
        g.apply_patch(patch).map_err(|e| e.to_string())?;
        Ok(true)
    }
}

impl OptPass for AttentionFusion {
    fn name(&self) -> &'static str {
        "attention_fusion"
    }
    fn level(&self) -> OptLevel {
        OptLevel::All
    }
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        Some(&["Softmax"])
    }
    fn makes(&self) -> &'static [&'static str] {
        &["Attention"]
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let mut done = 0;
        for n in root_nodes(g) {
            if g.node(n).is_none() {
                continue;
            }
            if let Some(f) = find(g, n) {
                if self.rewrite(g, f)? {
                    done += 1;
                }
            }
        }
        Ok(done)
    }
}
