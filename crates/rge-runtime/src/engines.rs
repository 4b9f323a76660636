//! The engines the runtime executes, as an engine manager built from a kernel registry:
//! `local` (GE_LOCAL, cost 9) claims the no-compute ops, `cpu` (AI CPU Ascend, cost 3) every op
//! type with a kernel (the runtime's control-flow kernels included) except the local ones, and
//! `host` (Host CPU, cost 10, HOST runtime) anything with a kernel, as the last resort.

use std::sync::Arc;

use rge_compiler::{CompileOptions, EngineManager, FnPass, Pipeline};
use rge_engine::{BasicEngine, TableStore};
use rge_kernels::KernelRegistry;
use rge_ops::OpRegistry;

use crate::error::{RuntimeError, RuntimeResult};
use crate::kernels::builtin_op_types;

/// Op types the local engine runs without computing: graph I/O, constants, views.
pub const LOCAL_OPS: &[&str] = &[
    "Data",
    "RefData",
    "Const",
    "Constant",
    "NetOutput",
    "NoOp",
    "Identity",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
    "PhonyConcat",
    "PhonySplit",
    "PlaceHolder",
    "End",
];

/// True for an op type of the local engine.
pub fn is_local_op(op_type: &str) -> bool {
    LOCAL_OPS.contains(&op_type)
}

fn engine(name: &str, store: TableStore) -> RuntimeResult<BasicEngine> {
    Ok(BasicEngine::standard(name)
        .ok_or_else(|| RuntimeError::Other(format!("`{name}` is not a standard engine")))?
        .with_store(store))
}

/// Every op type with a kernel: the registry's (any domain) plus the runtime's own.
pub fn kernel_op_types(kernels: &KernelRegistry) -> Vec<String> {
    let mut v: Vec<String> = kernels
        .op_types()
        .map(|(_, t)| t.to_string())
        .chain(builtin_op_types().iter().map(|t| t.to_string()))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The engine manager for `kernels`: `local`, `cpu` and `host`.
pub fn manager_for(kernels: &KernelRegistry) -> RuntimeResult<Arc<EngineManager>> {
    let types = kernel_op_types(kernels);
    let cpu_types: Vec<&String> = types.iter().filter(|t| !is_local_op(t)).collect();
    let mut b = EngineManager::builder();
    b.register(engine(
        "local",
        TableStore::new("local", "local_kernels", 9).with_ops(LOCAL_OPS.iter().copied()),
    )?);
    b.register(engine(
        "cpu",
        TableStore::new("cpu", "cpu_kernels", 3).with_ops(cpu_types.iter().map(|s| s.as_str())),
    )?);
    b.register(engine(
        "host",
        TableStore::new("host", "host_kernels", 10)
            .with_ops(types.iter().map(String::as_str))
            .with_ops(LOCAL_OPS.iter().copied()),
    )?);
    b.build().map_err(|e| RuntimeError::Compile(e.to_string()))
}

/// The compile pipeline the runtime uses: rge-ops' inference and constant folding (with the
/// host kernels), then the engines of [`manager_for`].
pub fn pipeline_for(
    kernels: &KernelRegistry,
    ops: Arc<OpRegistry>,
    options: CompileOptions,
) -> RuntimeResult<Pipeline> {
    let manager = manager_for(kernels)?;
    let fold_kernels = kernels.clone();
    let infer = FnPass::new("rge-ops inference + constant folding", move |g, _| {
        let infer_opts = rge_ops::InferOptions::default();
        rge_ops::infer_graph(g, &ops, &infer_opts).map_err(|e| e.to_string())?;
        // Constant folding on the host engine's kernels (engines.md: the host engine folds).
        let report =
            crate::fold::fold_constants(g, &fold_kernels, &crate::fold::FoldOptions::default())
                .map_err(|e| e.to_string())?;
        if report.folded_nodes > 0 {
            // Shapes that were unknown before folding flow out of the new Consts.
            rge_ops::infer_graph(g, &ops, &infer_opts).map_err(|e| e.to_string())?;
        }
        Ok(())
    });
    Ok(Pipeline::new(manager, options).with_infer(infer))
}
