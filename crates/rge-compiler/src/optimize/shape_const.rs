//! Constant propagation through shapes: `Shape` and `Size` of a value whose shape is fully
//! known at compile time become `Const`s (`Shape` with its opset-15 `start`/`end`). The
//! chains exporters build on them (Gather, Concat, Unsqueeze, Slice, Cast …) are then all
//! constant, and the constant-folding pass that runs next (the runtime adds it; it is the
//! host engine's folding) computes them, so Reshapes get constant shapes.

use rge_ir::{ComputeGraph, DataType, GraphPatch, NodeId, Outlet, Shape, Tensor as IrTensor};

use super::util::{const_op, known_dims, onnx_op, producer, removable, root_nodes, unique_name};
use super::{OptLevel, OptPass};

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShapeToConst;

/// The value `n` (a Shape or Size) has, when its input's shape is known.
fn value_of(g: &ComputeGraph, n: NodeId) -> Option<IrTensor> {
    let src = producer(g, n, 0)?;
    let dims = known_dims(g, src)?;
    if let Some(op) = onnx_op(g, n, "Shape") {
        let r = dims.len() as i64;
        let clamp = |v: i64| {
            let v = if v < 0 { v + r } else { v };
            v.clamp(0, r) as usize
        };
        let start = clamp(op.attrs().get_int("start").ok().flatten().unwrap_or(0));
        let end = clamp(op.attrs().get_int("end").ok().flatten().unwrap_or(r));
        let v: Vec<i64> = if start < end {
            dims[start..end].to_vec()
        } else {
            Vec::new()
        };
        return Some(IrTensor::from_i64(Shape::new([v.len() as i64]), &v));
    }
    onnx_op(g, n, "Size")?;
    let count = dims.iter().try_fold(1i64, |a, &d| a.checked_mul(d))?;
    Some(IrTensor::from_i64(Shape::scalar(), &[count]))
}

impl OptPass for ShapeToConst {
    fn name(&self) -> &'static str {
        "shape_to_const"
    }
    fn level(&self) -> OptLevel {
        OptLevel::Basic
    }
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        Some(&["Shape", "Size"])
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let mut done = 0;
        for n in root_nodes(g) {
            // The op type first: the other checks read neighbours and allocate.
            let shape_op = g
                .op(n)
                .is_some_and(|o| matches!(o.op_type(), "Shape" | "Size"));
            if !shape_op || !removable(g, n) {
                continue;
            }
            let Some(t) = value_of(g, n) else { continue };
            let Some(desc) = g.op(n).and_then(|o| o.output(0)).cloned() else {
                continue;
            };
            if desc.dtype() != DataType::Int64 {
                continue;
            }
            let gid = g.root();
            let name = unique_name(
                g,
                gid,
                &format!("{}_const", g.name_of(n)),
                &Default::default(),
            );
            let mut patch = GraphPatch::in_graph(gid);
            patch.remove(n);
            let k = patch.add_node(const_op(name, t, desc));
            patch.shunt(n, 0, Outlet::new_node(k, 0));
            patch.drop_control();
            g.apply_patch(patch).map_err(|e| e.to_string())?;
            done += 1;
        }
        Ok(done)
    }
}
