//! Dropout removal for inference: a `Dropout` that runs in inference mode passes its input
//! through, so its readers read the input. Inference mode: opset 7–11 always; opset 12+ when
//! `training_mode` is absent or a constant false; before 7 when `is_test` is 1. A Dropout
//! whose mask output is read, or in training mode, stays.

use rge_ir::{ComputeGraph, DataType, NodeId};

use super::util::{bypass, input_const, onnx_op, onnx_opset, producer, readers, removable};
use super::{OptLevel, OptPass};

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct DropoutRemoval;

fn inference_mode(g: &ComputeGraph, n: NodeId) -> bool {
    let Some(op) = onnx_op(g, n, "Dropout") else {
        return false;
    };
    let opset = onnx_opset(g, op).unwrap_or(i64::MAX);
    if opset < 7 {
        return op.attrs().get_int("is_test").ok().flatten().unwrap_or(0) != 0;
    }
    if opset < 12 {
        return true;
    }
    match producer(g, n, 2) {
        None => true,
        Some(_) => input_const(g, n, 2)
            .is_some_and(|t| t.desc.dtype() == DataType::Bool && t.data.iter().all(|&b| b == 0)),
    }
}

impl OptPass for DropoutRemoval {
    fn name(&self) -> &'static str {
        "dropout_removal"
    }
    fn level(&self) -> OptLevel {
        OptLevel::Basic
    }
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        Some(&["Dropout"])
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let mut done = 0;
        for n in super::util::root_nodes(g) {
            if !inference_mode(g, n) || !removable(g, n) {
                continue;
            }
            let mask_read = g
                .node(n)
                .is_some_and(|nd| nd.out_data_count() > 1 && !readers(g, n, 1).is_empty());
            let Some(src) = producer(g, n, 0) else {
                continue;
            };
            if mask_read || !super::identity::is_tensor_value(g, n) {
                continue;
            }
            bypass(g, n, src)?;
            done += 1;
        }
        Ok(done)
    }
}
