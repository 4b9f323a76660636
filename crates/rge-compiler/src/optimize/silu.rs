//! SiLU (Swish) fusion: `x · Sigmoid(x)` becomes one ONNX `Swish` (opset 24, `alpha` 1), the
//! standard op for it, which the `cpu` engine runs and the dense engine takes into a Conv or
//! MatMul epilogue. The Sigmoid must be read only by the Mul, and the type f32 or f64.

use rge_ir::{ComputeGraph, DataType};

use super::util::{
    fused_op, is_op, other_input, out_desc, out_dtype, producer, removable, replace_pattern,
    root_nodes, single_reader, NewOp,
};
use super::{OptLevel, OptPass};

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct SiluFusion;

impl OptPass for SiluFusion {
    fn name(&self) -> &'static str {
        "silu_fusion"
    }
    fn level(&self) -> OptLevel {
        OptLevel::All
    }
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        Some(&["Sigmoid"])
    }
    fn makes(&self) -> &'static [&'static str] {
        &["Swish"]
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let mut done = 0;
        for s in root_nodes(g) {
            // The pattern's shape first; the costlier checks (graph outputs, dtypes) only on
            // a match.
            if !is_op(g, s, "Sigmoid") {
                continue;
            }
            let Some((m, _)) = single_reader(g, s, 0) else {
                continue;
            };
            let Some(x) = producer(g, s, 0) else { continue };
            if !is_op(g, m, "Mul") || other_input(g, m, s.out(0)).is_none_or(|(_, o)| o != x) {
                continue;
            }
            if !removable(g, s)
                || !matches!(out_dtype(g, x), Some(DataType::Float | DataType::Double))
            {
                continue;
            }
            let x_desc = out_desc(g, x).cloned().unwrap_or_default();
            let out = g
                .op(m)
                .and_then(|o| o.output(0))
                .cloned()
                .ok_or("stale node")?;
            if out.shape() != x_desc.shape() && out.shape().is_fully_known() {
                continue;
            }
            let nodes = [s, m];
            let spec = NewOp {
                base: format!("{}_silu", g.name_of(m)),
                op_type: "Swish",
                opset: 24,
                inputs: vec![("X", x_desc)],
                out,
            };
            let mut op = fused_op(g, spec, self.name(), &nodes)?;
            op.attrs_mut().set("alpha", 1.0f32);
            if replace_pattern(g, &nodes, m, op, &[Some(x)])? {
                done += 1;
            }
        }
        Ok(done)
    }
}
