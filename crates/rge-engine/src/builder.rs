//! The kernel builder (GE's `OpsKernelBuilder`): running parameters of an op (output sizes and
//! workspace) and its task or kernel, which the compiled model keeps as a trait object.

use std::any::Any;
use std::fmt;

use rge_ir::{ComputeGraph, NodeId};

use crate::error::{EngineError, EngineResult};

/// What an op needs at run time besides its inputs (GE's `CalcOpRunningParam` results).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunningParams {
    /// Bytes per output; -1 for an output whose size is known only at run time.
    pub output_sizes: Vec<i64>,
    /// Scratch buffers in bytes.
    pub workspace: Vec<i64>,
}

/// A node's executable form, produced by its engine (GE's task defs; a kernel closure or a
/// plugin's opaque task bytes in rge). The runtime downcasts through [`Kernel::as_any`].
pub trait Kernel: Send + Sync + fmt::Debug {
    /// The engine that produced it.
    fn engine(&self) -> &str;
    /// A short description for listings.
    fn describe(&self) -> String {
        format!("{self:?}")
    }
    fn as_any(&self) -> &dyn Any;
}

/// GE's `OpsKernelBuilder`. Calls for different nodes may run in parallel.
pub trait KernelBuilder: Send + Sync {
    /// Output sizes and workspace of `node`. The default sizes each output from its tensor desc
    /// (`calc_tensor_mem_size`, -1 when unknown) and asks for no workspace.
    fn calc_running_params(
        &self,
        graph: &ComputeGraph,
        node: NodeId,
    ) -> EngineResult<RunningParams> {
        default_running_params(graph, node)
    }

    /// The node's kernel or task.
    fn generate_kernel(
        &self,
        graph: &ComputeGraph,
        node: NodeId,
        params: &RunningParams,
    ) -> EngineResult<Box<dyn Kernel>>;
}

/// Output sizes from the output descs (-1 when unknown), no workspace.
pub fn default_running_params(graph: &ComputeGraph, node: NodeId) -> EngineResult<RunningParams> {
    let op = graph
        .op(node)
        .ok_or_else(|| EngineError::engine("", "stale node handle"))?;
    let mut output_sizes = Vec::with_capacity(op.output_count());
    for d in op.outputs() {
        let size = d
            .calc_tensor_mem_size()
            .map_err(|e| EngineError::engine("", format!("op `{}`: {e}", op.name())))?;
        output_sizes.push(size.unwrap_or(-1));
    }
    Ok(RunningParams {
        output_sizes,
        workspace: Vec::new(),
    })
}

/// A kernel that only names its op: what engines without real kernels generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedKernel {
    pub engine: String,
    pub op_type: String,
}

impl Kernel for NamedKernel {
    fn engine(&self) -> &str {
        &self.engine
    }
    fn describe(&self) -> String {
        format!("{}:{}", self.engine, self.op_type)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
