//! Reshape cancellation: a `Reshape` (or `Flatten`, `Squeeze`, `Unsqueeze`) whose output has
//! the shape of its input goes; a chain of them, `Reshape(Reshape(x, s1), s2)`, becomes one
//! `Reshape` of `x` to the chain's (known) output shape, or nothing when that is `x`'s own
//! shape. Only on fully known shapes; inner values must have no other reader.

use rge_ir::{ComputeGraph, DataType, GraphPatch, NodeId, Outlet, Shape, Tensor as IrTensor};

use super::util::{
    bypass, const_op, known_dims, onnx_op, outlet, producer, removable, root_nodes, single_reader,
    unique_name,
};
use super::{OptLevel, OptPass};

/// Ops that only change the shape of their first input.
const SHAPE_OPS: &[&str] = &["Reshape", "Flatten", "Squeeze", "Unsqueeze"];

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReshapeCancellation;

fn is_shape_op(g: &ComputeGraph, n: NodeId) -> bool {
    SHAPE_OPS.iter().any(|t| onnx_op(g, n, t).is_some())
}

impl ReshapeCancellation {
    fn rewrite(&self, g: &mut ComputeGraph, n: NodeId) -> Result<bool, String> {
        // The merge takes over `n`'s output (its desc, graph-output name included); only the
        // bypasses need `n` removable.
        if !is_shape_op(g, n) || super::util::has_control(g, n) {
            return Ok(false);
        }
        let (Some(src), Some(out)) = (producer(g, n, 0), known_dims(g, n.out(0))) else {
            return Ok(false);
        };
        let Some(in_dims) = known_dims(g, src) else {
            return Ok(false);
        };
        if in_dims == out {
            if !removable(g, n) {
                return Ok(false);
            }
            bypass(g, n, src)?;
            return Ok(true);
        }
        // A chain: the inner shape op's input reshaped straight to `out`.
        if !is_shape_op(g, src.node)
            || single_reader(g, src.node, 0) != Some((n, 0))
            || !removable(g, src.node)
        {
            return Ok(false);
        }
        let Some(x) = producer(g, src.node, 0) else {
            return Ok(false);
        };
        let Some(x_dims) = known_dims(g, x) else {
            return Ok(false);
        };
        if x_dims == out {
            if !removable(g, n) {
                return Ok(false);
            }
            bypass(g, n, x)?;
            return Ok(true);
        }
        if out.contains(&0) {
            // A 0 in a shape constant means "copy that dim" (allowzero 0): keep the chain.
            return Ok(false);
        }
        let gid = g.root();
        let taken = Default::default();
        let base = g.name_of(n).to_string();
        let name = unique_name(g, gid, &format!("{base}_merged"), &taken);
        let shape_name = unique_name(g, gid, &format!("{base}_merged_shape"), &taken);
        let shape_t = IrTensor::from_i64(Shape::new([out.len() as i64]), &out);
        let shape_desc = rge_ir::TensorDesc::new(
            Shape::new([out.len() as i64]),
            DataType::Int64,
            rge_ir::Format::ND,
        );
        let out_desc = g
            .op(n)
            .and_then(|o| o.output(0))
            .cloned()
            .ok_or("stale node")?;
        let x_desc = g
            .op(x.node)
            .and_then(|o| o.output(x.index.max(0) as usize))
            .cloned()
            .unwrap_or_default();
        let mut op = rge_ir::OpDesc::new(name, "Reshape");
        op.add_input("data", x_desc).map_err(|e| e.to_string())?;
        op.add_input("shape", shape_desc.clone())
            .map_err(|e| e.to_string())?;
        op.add_output("reshaped", out_desc)
            .map_err(|e| e.to_string())?;
        let mut patch = GraphPatch::in_graph(gid);
        patch.remove(n).remove(src.node);
        let c = patch.add_node(const_op(shape_name, shape_t, shape_desc));
        let k = patch.add_node(op);
        patch.connect(outlet(x), k, 0);
        patch.connect(Outlet::new_node(c, 0), k, 1);
        patch.shunt(n, 0, Outlet::new_node(k, 0));
        let removed = [n, src.node].into_iter().collect();
        let consts = super::util::const_inputs_of(g, &[n, src.node]);
        super::util::drop_dead_consts(g, &mut patch, &consts, &removed);
        patch.drop_control();
        g.apply_patch(patch).map_err(|e| e.to_string())?;
        Ok(true)
    }
}

impl OptPass for ReshapeCancellation {
    fn name(&self) -> &'static str {
        "reshape_cancellation"
    }
    fn level(&self) -> OptLevel {
        OptLevel::Basic
    }
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        Some(SHAPE_OPS)
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
