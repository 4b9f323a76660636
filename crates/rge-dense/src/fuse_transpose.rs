//! MatMul over a transposed B: `MatMul(A, Transpose(B))` whose Transpose swaps B's last two
//! dims (GPT-2's tied LM head `x·wteᵀ`, attention's `Q·Kᵀ`) becomes an `ai.rge` FusedMatMul with
//! `transB = 1`. The GEMM reads B transposed (a constant B is packed so once), and the
//! Transpose, a full pass over B on every run (154 MB for GPT-2's head), goes when the MatMul
//! was its only reader. A Transpose with another perm, other readers of the MatMul's inputs
//! and FusedMatMuls that already have `transB` are left as they are.

use rge_ir::{AttrValue, ComputeGraph, DataType, GraphPatch, OpDesc, Outlet};

use crate::fuse::{has_control, is_f32_out, producer, single_reader, FUSED_ATTR, RGE_DOMAIN};

/// Whether Transpose `op` over a rank-`rank` input swaps the last two dims only.
fn swaps_last_two(op: &OpDesc, rank: usize) -> bool {
    match op.attrs().get("perm") {
        Some(AttrValue::ListInt(p)) => {
            p.len() == rank
                && p[..rank - 2]
                    .iter()
                    .enumerate()
                    .all(|(i, &v)| v == i as i64)
                && p[rank - 2] == (rank - 1) as i64
                && p[rank - 1] == (rank - 2) as i64
        }
        // The default perm reverses the dims: the swap for a matrix.
        None => rank == 2,
        _ => false,
    }
}

/// The next MatMul over a transposed B, rewritten; `None` when there is none.
pub fn next_transposed_b(g: &ComputeGraph) -> Result<Option<GraphPatch>, String> {
    let root = g.root();
    for n in g.nodes_of(root) {
        let Some(op) = g.op(n) else { continue };
        let plain = op.op_type() == "MatMul" && op.domain().is_empty();
        let fused = op.op_type() == "FusedMatMul"
            && op.domain() == RGE_DOMAIN
            && !matches!(op.attrs().get("transB"), Some(AttrValue::Int(v)) if *v != 0);
        if !(plain || fused) || !is_f32_out(g, n) || has_control(g, n) {
            continue;
        }
        let Some(t) = producer(g, n, 1).map(|a| a.node) else {
            continue;
        };
        let Some(top) = g.op(t) else { continue };
        if top.op_type() != "Transpose" || !top.domain().is_empty() || has_control(g, t) {
            continue;
        }
        let Some(b_desc) = top.input(0) else { continue };
        let Some(rank) = b_desc.shape().rank() else {
            continue;
        };
        if rank < 2 || b_desc.dtype() != DataType::Float || !swaps_last_two(top, rank) {
            continue;
        }
        let Some(b_src) = producer(g, t, 0) else {
            continue;
        };
        let mut m = OpDesc::new(op.name(), "FusedMatMul");
        m.set_domain(RGE_DOMAIN);
        m.set_opset(Some(1));
        m.set_engine_name("");
        for (k, v) in op.attrs().iter() {
            m.attrs_mut().set(k, v.clone());
        }
        m.attrs_mut().set("transB", AttrValue::Int(1));
        let mut replaced = match op.attrs().get(FUSED_ATTR) {
            Some(AttrValue::ListString(v)) => v.clone(),
            _ => vec![op.name().to_string()],
        };
        replaced.push(top.name().to_string());
        m.attrs_mut()
            .set(FUSED_ATTR, AttrValue::ListString(replaced));
        let desc = |i: usize| op.input(i).cloned().unwrap_or_default();
        m.add_input("X", desc(0)).map_err(|e| e.to_string())?;
        m.add_input("W", b_desc.clone())
            .map_err(|e| e.to_string())?;
        m.add_input("B", desc(2)).map_err(|e| e.to_string())?;
        m.add_input("Z", desc(3)).map_err(|e| e.to_string())?;
        m.add_output("Y", op.output(0).cloned().unwrap_or_default())
            .map_err(|e| e.to_string())?;
        let mut patch = GraphPatch::in_graph(root);
        patch.remove(n);
        if single_reader(g, t, 0) == Some((n, 1)) {
            patch.remove(t);
        }
        let k = patch.add_node(m);
        let a = producer(g, n, 0).ok_or("MatMul input A missing")?;
        patch.connect(Outlet::old(a.node, a.index.max(0) as usize), k, 0);
        patch.connect(Outlet::old(b_src.node, b_src.index.max(0) as usize), k, 1);
        for i in 2..4 {
            if let Some(p) = producer(g, n, i) {
                patch.connect(Outlet::old(p.node, p.index.max(0) as usize), k, i);
            }
        }
        patch.shunt(n, 0, Outlet::new_node(k, 0));
        patch.drop_control();
        return Ok(Some(patch));
    }
    Ok(None)
}
