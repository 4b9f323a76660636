//! Identity removal: an `Identity` whose output is not a graph output is bypassed (its
//! readers read its input). Identities of sequences and optionals stay (their values are not
//! tensors the rest of the graph can alias freely).

use rge_ir::ComputeGraph;

use super::util::{bypass, is_op, producer, removable, root_nodes};
use super::{OptLevel, OptPass};

/// The desc attributes of a frontend's non-tensor type (rge-ops' `_onnx_type`, `_value_kind`).
pub(crate) fn is_tensor_value(g: &ComputeGraph, n: rge_ir::NodeId) -> bool {
    g.op(n).is_some_and(|op| {
        op.inputs().iter().chain(op.outputs()).all(|d| {
            !d.attrs()
                .keys()
                .any(|k| k == "_onnx_type" || k == "_value_kind")
        })
    })
}

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct IdentityRemoval;

impl OptPass for IdentityRemoval {
    fn name(&self) -> &'static str {
        "identity_removal"
    }
    fn level(&self) -> OptLevel {
        OptLevel::Basic
    }
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        Some(&["Identity"])
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let mut n_done = 0;
        for n in root_nodes(g) {
            if !is_op(g, n, "Identity") || !removable(g, n) || !is_tensor_value(g, n) {
                continue;
            }
            let Some(src) = producer(g, n, 0) else {
                continue;
            };
            bypass(g, n, src)?;
            n_done += 1;
        }
        Ok(n_done)
    }
}
