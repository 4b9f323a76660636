//! `rge compile MODEL -o OUT`: compiles a model (inference, placement, partitioning, streams,
//! lowering and memory planning) and writes the compiled model — the compiled graph with its
//! engines and streams, the plan's figures and the weights — to one file (GE ModelDef
//! container, `.om` by convention); `rge run OUT` runs it without compiling again.

use std::path::Path;

use rge_runtime::{save_model, save_model_into, ExecutorKind, ThreadPinning};

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
    let saved = match std::sync::Arc::try_unwrap(m) {
        Ok(m) => save_model_into(m, output),
        Err(shared) => save_model(&shared, output),
    };
    saved.map_err(|e| CliError::new(e.to_string()))?;
    timed("save", start);
    Ok(summary)
}
