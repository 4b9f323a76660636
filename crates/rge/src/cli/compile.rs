//! `rge compile MODEL -o OUT`: compiles a model (inference, placement, partitioning, streams,
//! lowering and memory planning) and writes the compiled model — the compiled graph with its
//! engines and streams, the plan's figures and the weights — to one file (GE ModelDef
//! container, `.om` by convention); `rge run OUT` runs it without compiling again.

use std::path::Path;
use std::sync::Arc;

use rge_runtime::{save_model, save_model_into, ExecutorKind, Model, ThreadPinning};

use super::{CliError, CliResult};
use crate::engines::EngineArgs;

/// `rge compile`.
pub fn run(input: &Path, output: &Path, engines: &EngineArgs) -> CliResult {
    run_with_shapes(input, output, engines, &[])
}

/// `rge compile` with `--shape NAME=DIMS` options: those inputs fixed before compiling.
pub fn run_with_shapes(
    input: &Path,
    output: &Path,
    engines: &EngineArgs,
    shapes: &[String],
) -> CliResult {
    compile_to(input, output, engines, shapes).map(|c| c.summary)
}

/// What [`compile_to`] wrote: its summary line, and the compiled model (without its steps:
/// it can be saved again, not run).
pub struct Compiled {
    pub summary: String,
    pub model: Arc<Model>,
}

/// [`run_with_shapes`], handing back the model so that a process about to end can leave
/// freeing it to the exit (`rge compile`: 80 ms of a 100k-node DAG's 2.1 s went to freeing its
/// graph node by node).
pub fn compile_to(
    input: &Path,
    output: &Path,
    engines: &EngineArgs,
    shapes: &[String],
) -> Result<Compiled, CliError> {
    // The compiled model keeps the kernels' compile-time state (prepacked weights).
    let s = super::run::session_keeping(
        ExecutorKind::Sequential,
        Some(1),
        ThreadPinning::Auto,
        engines,
        true,
    )?;
    let log = engines.verbose || rge_compiler::stages::log_enabled_by_env();
    let timed = |name: &str, start: std::time::Instant| {
        if log {
            eprintln!(
                "{}",
                rge_compiler::stages::stage_log_line(name, start.elapsed())
            );
        }
    };
    let start = std::time::Instant::now();
    let m = super::shape_args::build_once(&s, input, shapes)?;
    timed("total_build", start);
    let plan = m.plan();
    let summary = format!(
        "{} -> {}: {} steps, {} streams, {} events, arena {} bytes (lower bound {}, {} in place, {} views)\n",
        input.display(),
        output.display(),
        m.program().steps.len(),
        m.stream_count,
        m.event_count,
        plan.arena_bytes,
        plan.lower_bound,
        plan.in_place,
        plan.views
    );
    let start = std::time::Instant::now();
    let (saved, model) = match Arc::try_unwrap(m) {
        Ok(mut m) => (save_model_into(&mut m, output), Arc::new(m)),
        Err(shared) => (save_model(&shared, output), shared),
    };
    saved.map_err(|e| CliError::new(e.to_string()))?;
    timed("save", start);
    Ok(Compiled { summary, model })
}
