//! Cast elimination: a `Cast` to the type its input already has goes; `Cast(Cast(x, T1), T2)`
//! with `T2` the type of `x` goes when `T1` holds every value of that type exactly (f32 →
//! f64 → f32, i32 → i64 → i32, bool → any number → bool …), so the pair gives `x` back bit for
//! bit. A pair through a narrower type (f32 → f16 → f32 rounds) stays.

use rge_ir::{ComputeGraph, DataType, NodeId};

use super::util::{bypass, onnx_op, out_dtype, producer, removable, root_nodes};
use super::{OptLevel, OptPass};

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct CastElimination;

/// Whether every value of `from` is exactly a value of `to` (and casting back gives it).
pub(crate) fn holds_exactly(from: DataType, to: DataType) -> bool {
    use DataType::*;
    if from == to {
        return true;
    }
    let wider: &[DataType] = match from {
        Bool => &[
            Int8, Uint8, Int16, Uint16, Int32, Uint32, Int64, Uint64, Float16, Bf16, Float, Double,
        ],
        Int8 => &[Int16, Int32, Int64, Float16, Bf16, Float, Double],
        Uint8 => &[
            Int16, Uint16, Int32, Uint32, Int64, Uint64, Float16, Bf16, Float, Double,
        ],
        Int16 => &[Int32, Int64, Float, Double],
        Uint16 => &[Int32, Uint32, Int64, Uint64, Float, Double],
        Int32 => &[Int64, Double],
        Uint32 => &[Int64, Uint64, Double],
        Float16 | Bf16 => &[Float, Double],
        Float => &[Double],
        _ => &[],
    };
    wider.contains(&to)
}

/// The type Cast node `n` makes (its output desc, which inference wrote from `to`).
fn cast_to(g: &ComputeGraph, n: NodeId) -> Option<DataType> {
    let op = onnx_op(g, n, "Cast")?;
    op.attrs().get_int("to").ok().flatten()?;
    let dt = op.output(0)?.dtype();
    (dt != DataType::Undefined).then_some(dt)
}

impl OptPass for CastElimination {
    fn name(&self) -> &'static str {
        "cast_elimination"
    }
    fn level(&self) -> OptLevel {
        OptLevel::Basic
    }
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        Some(&["Cast"])
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let mut done = 0;
        for n in root_nodes(g) {
            let Some(to) = cast_to(g, n) else { continue };
            if !removable(g, n) {
                continue;
            }
            let Some(src) = producer(g, n, 0) else {
                continue;
            };
            let Some(from) = out_dtype(g, src) else {
                continue;
            };
            if from == to && from != DataType::Undefined {
                bypass(g, n, src)?;
                done += 1;
                continue;
            }
            // A round trip through a type that holds the original exactly.
            let Some(mid) = cast_to(g, src.node) else {
                continue;
            };
            let Some(x) = producer(g, src.node, 0) else {
                continue;
            };
            let Some(orig) = out_dtype(g, x) else {
                continue;
            };
            if orig == to && orig != DataType::Undefined && holds_exactly(orig, mid) {
                bypass(g, n, x)?;
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
    fn exact_round_trips() {
        assert!(holds_exactly(DataType::Float, DataType::Double));
        assert!(holds_exactly(DataType::Int32, DataType::Int64));
        assert!(holds_exactly(DataType::Bool, DataType::Float));
        assert!(!holds_exactly(DataType::Float, DataType::Float16));
        assert!(!holds_exactly(DataType::Int64, DataType::Double));
        assert!(!holds_exactly(DataType::Int32, DataType::Float));
    }
}
