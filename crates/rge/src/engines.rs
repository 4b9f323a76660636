//! The engines rge has today, as an engine manager for the command line and the pipeline.
//!
//! The destination table is in docs/engines.md; what is registered here is what runs now:
//! `local` (GE_LOCAL, cost 9) for the no-compute ops, `cpu` (AI CPU Ascend, cost 3) and `host`
//! (Host CPU, cost 10, HOST runtime) as the last resort and host-exec target.
//!
//! Two flavours: [`runtime_manager`] / [`runtime_pipeline`] claim exactly the op types with a
//! kernel in [`crate::kernels::default_kernels`] (what `rge run` and `rge compile` use, built by
//! `rge_runtime::manager_for`); [`default_manager`] / [`default_pipeline`] claim every op type
//! the op registry knows, for the commands that only place and partition.

use std::sync::Arc;

use rge_compiler::{CompileResult, EngineManager};
use rge_engine::{BasicEngine, TableStore};
use rge_ops::OpRegistry;

/// Op types the local engine runs without computing: graph I/O, constants, views.
pub use rge_runtime::engines::LOCAL_OPS;

/// The engine manager of the runtime: `local`, and `cpu`/`host` claiming the op types of the
/// default kernels (and the runtime's control-flow kernels).
pub fn runtime_manager() -> rge_runtime::RuntimeResult<Arc<EngineManager>> {
    rge_runtime::manager_for(&crate::kernels::default_kernels())
}

/// The compile pipeline of the runtime: rge-ops' inference, then [`runtime_manager`]'s engines.
pub fn runtime_pipeline(
    options: rge_compiler::CompileOptions,
) -> rge_runtime::RuntimeResult<rge_compiler::Pipeline> {
    rge_runtime::pipeline_for(
        &crate::kernels::default_kernels(),
        OpRegistry::builtin(),
        options,
    )
}

fn engine(name: &str, store: TableStore) -> BasicEngine {
    BasicEngine::standard(name)
        .unwrap_or_else(|| panic!("`{name}` is in the standard engine table"))
        .with_store(store)
}

/// The default engine manager: `local`, `cpu` (every registered op type) and `host`.
// CompileError is large by design (it carries node names and reasons); rge-compiler allows it too.
#[allow(clippy::result_large_err)]
pub fn default_manager(registry: &OpRegistry) -> CompileResult<Arc<EngineManager>> {
    let all_types: Vec<String> = rge_ops::list_ops(registry)
        .into_iter()
        .map(|o| o.op_type)
        .filter(|t| !LOCAL_OPS.contains(&t.as_str()))
        .collect();
    let mut b = EngineManager::builder();
    b.register(engine(
        "local",
        TableStore::new("local", "local_kernels", 9).with_ops(LOCAL_OPS.iter().copied()),
    ));
    b.register(engine(
        "cpu",
        TableStore::new("cpu", "cpu_kernels", 3).with_ops(all_types.iter().cloned()),
    ));
    b.register(engine(
        "host",
        TableStore::new("host", "host_kernels", 10).with_any_op(),
    ));
    b.build()
}

/// The compile pipeline with rge's parts in place: rge-ops' inference as the infer stage and
/// the default engines.
#[allow(clippy::result_large_err)]
pub fn default_pipeline(
    registry: Arc<OpRegistry>,
    options: rge_compiler::CompileOptions,
) -> CompileResult<rge_compiler::Pipeline> {
    let manager = default_manager(&registry)?;
    let infer = rge_compiler::FnPass::new("rge-ops inference", move |g, _| {
        rge_ops::infer_graph(g, &registry, &rge_ops::InferOptions::default())
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    Ok(rge_compiler::Pipeline::new(manager, options).with_infer(infer))
}
