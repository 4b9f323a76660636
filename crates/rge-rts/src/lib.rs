//! rge's `rts` engine (the seed's DNN_VM_RTS, cost 2): control flow lowered into the flat
//! program, as GE's static graphs run it. If and Case become a LabelSwitch over label-delimited
//! branches, While and Loop a StreamSwitch at a loop head with a LabelGoto back, and values
//! move between the node and its subgraphs by MemcpyAsync steps, all in the parent program
//! instead of nested subgraph programs (see `docs/rts-engine.md`).

pub mod engine;
pub mod kernels;

use rge_ir::NodeId;
use rge_runtime::lower::Lowering;
use rge_runtime::{EngineSetBuilder, Placement, RuntimeError, RuntimeResult};

pub use engine::{kernel_set, rts_engine, RtsAnalysis, FLAT_ATTR, NESTED_REASON_ATTR, RTS};
pub use kernels::RtsFlow;

/// The rts engine's converter: the flat lowering with the engine's control steps, or (when a
/// value it needs exists only at run time) one step with nested programs.
pub fn lower_rts(cx: &mut Lowering<'_>, n: NodeId) -> RuntimeResult<()> {
    if cx.lower_flat_control(n, &RtsFlow)? {
        return Ok(());
    }
    cx.kernel_step(n)
}

/// Registers the rts engine and its converter in an engine set.
pub fn register(b: &mut EngineSetBuilder) -> RuntimeResult<()> {
    let engine = rts_engine().map_err(|e| RuntimeError::Compile(e.to_string()))?;
    b.register(engine);
    b.converters_mut()
        .register(RTS, Placement::Device, lower_rts);
    Ok(())
}
