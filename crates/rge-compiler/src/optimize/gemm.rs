//! MatMul+Add → Gemm: `Add(MatMul(A, B), C)` with 2-D `A` `[M, K]` and `B` `[K, N]` and `C`
//! broadcasting to `[M, N]` one way (`[N]`, `[1, N]`, `[M, 1]`, `[M, N]`, a scalar) becomes
//! one `Gemm(A, B, C)` (opset 13): one pass over the output instead of two.
//!
//! It runs late (stage `optimize_graph_late`, after the engines' optimizers): the dense
//! engine fuses its f32 MatMul+bias (+activation) into a `FusedMatMul` first, which is
//! faster, so this pass only takes the pairs left (the dense engine excluded, f64, …).

use rge_ir::{ComputeGraph, DataType};

use super::util::{
    fused_op, is_op, known_dims, other_input, out_desc, out_dtype, producer, removable,
    replace_pattern, root_nodes, single_reader, NewOp,
};
use super::{OptLevel, OptPass, Phase};

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct GemmFusion;

/// Whether `c` broadcasts one way to `[m, n]`.
fn bias_fits(c: &[i64], m: i64, n: i64) -> bool {
    match c {
        [] => true,
        [x] => *x == n || *x == 1,
        [a, b] => (*a == m || *a == 1) && (*b == n || *b == 1),
        _ => false,
    }
}

impl OptPass for GemmFusion {
    fn name(&self) -> &'static str {
        "gemm_fusion"
    }
    fn level(&self) -> OptLevel {
        OptLevel::All
    }
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        Some(&["MatMul"])
    }
    fn makes(&self) -> &'static [&'static str] {
        &["Gemm"]
    }
    fn phase(&self) -> Phase {
        Phase::Late
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let mut done = 0;
        for mm in root_nodes(g) {
            if !is_op(g, mm, "MatMul") || !removable(g, mm) {
                continue;
            }
            let (Some(a), Some(b)) = (producer(g, mm, 0), producer(g, mm, 1)) else {
                continue;
            };
            let (Some(ad), Some(bd)) = (known_dims(g, a), known_dims(g, b)) else {
                continue;
            };
            if ad.len() != 2 || bd.len() != 2 {
                continue;
            }
            let dtype = out_dtype(g, mm.out(0));
            if !matches!(dtype, Some(DataType::Float | DataType::Double)) {
                continue;
            }
            let Some((add, _)) = single_reader(g, mm, 0) else {
                continue;
            };
            if !is_op(g, add, "Add") {
                continue;
            }
            let Some((_, c)) = other_input(g, add, mm.out(0)) else {
                continue;
            };
            let Some(cd) = known_dims(g, c) else { continue };
            if out_dtype(g, c) != dtype || !bias_fits(&cd, ad[0], bd[1]) {
                continue;
            }
            let out = g
                .op(add)
                .and_then(|o| o.output(0))
                .cloned()
                .ok_or("stale node")?;
            let d = |x| out_desc(g, x).cloned().unwrap_or_default();
            let nodes = [mm, add];
            let spec = NewOp {
                base: format!("{}_gemm", g.name_of(mm)),
                op_type: "Gemm",
                opset: 13,
                inputs: vec![("A", d(a)), ("B", d(b)), ("C", d(c))],
                out,
            };
            let op = fused_op(g, spec, self.name(), &nodes)?;
            if replace_pattern(g, &nodes, add, op, &[Some(a), Some(b), Some(c)])? {
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
    fn bias_shapes() {
        assert!(bias_fits(&[8], 4, 8));
        assert!(bias_fits(&[4, 1], 4, 8));
        assert!(bias_fits(&[], 4, 8));
        assert!(!bias_fits(&[4], 4, 8));
        assert!(!bias_fits(&[2, 4, 8], 4, 8));
    }
}
