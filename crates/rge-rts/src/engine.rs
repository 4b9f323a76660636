//! The `rts` engine (the seed's DNN_VM_RTS, cost 2, `skip_assign_stream` and `attach` as in
//! GE's engine_conf): it claims If, Case, While and Loop when they and their subgraphs have
//! static shapes, and lowers them into the flat program (`rge_runtime::flat`). Its
//! original-graph optimizer records, on every control-flow node, whether it can be lowered so
//! (`_rts_flat`) and why not (`_rts_nested_reason`): placement then declines a dynamic node
//! with that reason, and it stays nested on `cpu`.

use rge_engine::{
    BasicEngine, EngineAttributes, EngineKind, EngineResult, GraphOptimizer, GraphRewriter,
    KernelStore, RuntimeType, SchedulingFlags,
};
use rge_ir::OpDesc;
use rge_kernels::{KernelDef, KernelSet};
use rge_runtime::flat::{flat_blocker, FLAT_OPS};

/// The engine's name.
pub const RTS: &str = "rts";
/// Set by the optimizer: true when the node can be lowered into the flat program.
pub const FLAT_ATTR: &str = "_rts_flat";
/// Set by the optimizer: why the node stays nested (empty when it does not).
pub const NESTED_REASON_ATTR: &str = "_rts_nested_reason";

/// Placement's question: the optimizer's answer recorded on the node.
fn static_control_flow(op: &OpDesc) -> Result<(), String> {
    if op.attrs().get_bool(FLAT_ATTR).ok().flatten() == Some(true) {
        return Ok(());
    }
    match op.attrs().get_str(NESTED_REASON_ATTR).ok().flatten() {
        Some(why) if !why.is_empty() => Err(format!("stays nested: {why}")),
        _ => Err("stays nested: the rts engine's optimizer did not analyse this node".into()),
    }
}

/// The rts engine's kernel definitions: each control-flow op, checked by the optimizer's
/// answer. The factory is the runtime's nested kernel, which serves a node the flat lowering
/// gives back (a run-time value among its inputs).
pub fn kernel_set() -> KernelSet {
    let builtin = rge_runtime::kernels::builtin_kernels();
    let mut set = KernelSet::new();
    for &op in FLAT_OPS {
        if let Some(f) = builtin.get("", op) {
            set.add(
                KernelDef::from_fn(format!("{RTS}.{op}"), "", op, f)
                    .with_check(static_control_flow),
            );
        }
    }
    set
}

/// Marks every control-flow node of the graph (root and subgraphs) flat or nested.
#[derive(Debug, Default)]
pub struct RtsAnalysis;

impl GraphOptimizer for RtsAnalysis {
    fn optimize_original_graph(&self, rw: &mut GraphRewriter<'_>) -> EngineResult<()> {
        let graph = rw.graph();
        let mut marks = Vec::new();
        for n in graph.all_nodes(graph.root()) {
            let Some(op) = graph.op(n) else { continue };
            if !FLAT_OPS.contains(&op.op_type()) {
                continue;
            }
            marks.push((n, flat_blocker(graph, n)));
        }
        for (n, why) in marks {
            rw.set_attr(n, FLAT_ATTR, why.is_none())?;
            rw.set_attr(n, NESTED_REASON_ATTR, why.unwrap_or_default())?;
        }
        Ok(())
    }
}

/// The rts engine: cost 2, device runtime, skip stream assignment and attach (its steps run on
/// the stream of the region's neighbours), its kernels and its analysis.
pub fn rts_engine() -> EngineResult<BasicEngine> {
    let engine = match BasicEngine::standard(RTS) {
        Some(e) => e,
        None => BasicEngine::new(EngineAttributes {
            name: RTS.into(),
            mem_types: vec!["HBM".into()],
            compute_cost: 2,
            runtime: RuntimeType::Device,
            input_format: rge_ir::Format::RESERVED,
            output_format: rge_ir::Format::RESERVED,
            kind: EngineKind::Atomic,
        }),
    };
    Ok(engine
        .with_flags(SchedulingFlags::SKIP_ATTACH)
        .with_store(KernelStore::new(RTS, "rts_kernels", 2, kernel_set()))
        .with_optimizer(RtsAnalysis))
}
