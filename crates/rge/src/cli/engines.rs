//! `rge engines`, `rge place` and `rge partition`, over the command line's one engine set.

use std::path::Path;

use std::sync::Arc;

use rge_compiler::{report, CompiledModel};
use rge_runtime::EngineSet;

use super::{CliError, CliResult};
use crate::engines::{engine_set, EngineArgs};
use crate::model;

pub(crate) fn pretty(v: serde_json::Value) -> String {
    format!(
        "{}\n",
        serde_json::to_string_pretty(&v).expect("plain json")
    )
}

/// `rge engines [--json]`: engines with cost, runtime, atomic/composite, stream flags, and how
/// many op types each supports.
pub fn list(engines: &EngineArgs, as_json: bool) -> CliResult {
    let set = engine_set(engines)?;
    let rows = report::list_engines(set.manager());
    Ok(if as_json {
        pretty(report::engines_json(&rows))
    } else {
        report::engines_text(&rows)
    })
}

/// Loads `file` and compiles it with the engine set of `engines`, as `rge run` does.
pub(crate) fn compile_file(
    file: &Path,
    engines: &EngineArgs,
) -> Result<(Arc<EngineSet>, CompiledModel), CliError> {
    let (m, _) = model::load(file)?;
    let set = engine_set(engines)?;
    let compiled = set
        .pipeline()
        .compile(super::run::graph_of(m))
        .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
    Ok((set, compiled))
}

/// `rge place FILE [engine options] [--json]`: the placement of the compiled graph, as
/// `rge run` executes it (inference and constant folding first).
pub fn place(file: &Path, engines: &EngineArgs, as_json: bool) -> CliResult {
    let (_, compiled) = compile_file(file, engines)?;
    let rows = report::place_rows(&compiled.graph, &compiled.placement);
    Ok(if as_json {
        pretty(report::place_json(&rows))
    } else {
        report::place_text(&rows)
    })
}

/// `rge partition FILE [engine options] [--dot OUT] [--json]`.
pub fn partition(
    file: &Path,
    engines: &EngineArgs,
    dot: Option<&Path>,
    as_json: bool,
) -> CliResult {
    let (m, _) = model::load(file)?;
    let set = engine_set(engines)?;
    let mut graph = super::run::graph_of(m);
    set.prepare(&mut graph)
        .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
    let rep = report::partition_graph(&mut graph, set.manager(), set.options())
        .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
    if let Some(out) = dot {
        std::fs::write(out, &rep.dot)
            .map_err(|e| CliError::new(format!("{}: {e}", out.display())))?;
    }
    Ok(if as_json {
        pretty(report::partitions_json(&rep))
    } else {
        report::partitions_text(&rep)
    })
}
