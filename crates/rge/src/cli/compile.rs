//! `rge compile MODEL -o OUT`: compiles a model (inference, placement, partitioning, streams,
//! lowering and memory planning) and writes the compiled model — the compiled graph with its
//! engines and streams, the plan's figures and the weights — to one file (GE ModelDef
//! container, `.om` by convention); `rge run OUT` runs it without compiling again.

use std::path::Path;

use rge_runtime::{save_model, ExecutorKind};

use super::{CliError, CliResult};
use crate::engines::EngineArgs;

/// `rge compile`.
pub fn run(input: &Path, output: &Path, engines: &EngineArgs) -> CliResult {
    let s = super::run::session(ExecutorKind::Sequential, Some(1), engines)?;
    let m = super::run::build(&s, input)?;
    save_model(&m, output).map_err(|e| CliError::new(e.to_string()))?;
    let plan = m.plan();
    Ok(format!(
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
    ))
}
