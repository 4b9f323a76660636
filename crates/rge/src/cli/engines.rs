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

/// `rge engines [--json]`: the engines of the set (cost, runtime, atomic/composite, stream
/// flags, how many op types each supports), then the rows of the seed's engine table that no
/// engine of the set stands for yet (listed as absent with the reason, never as engines).
pub fn list(engines: &EngineArgs, as_json: bool) -> CliResult {
    let set = engine_set(engines)?;
    let rows = report::list_engines(set.manager());
    let absent: Vec<&rge_engine::StandardEngine> = rge_engine::STANDARD_ENGINES
        .iter()
        .filter(|e| !rows.iter().any(|r| r.name == e.name))
        .collect();
    Ok(if as_json {
        let mut v = report::engines_json(&rows);
        v["not_in_this_build"] = absent
            .iter()
            .map(|e| {
                serde_json::json!({
                    "name": e.name,
                    "ge_counterpart": e.ge_counterpart,
                    "cost": e.compute_cost,
                    "runtime": e.runtime.name(),
                    "streams": e.flags.describe(),
                    "reason": absent_reason(e.name),
                })
            })
            .collect();
        #[cfg(feature = "gpu")]
        if set.manager().get(rge_gpu::GPU).is_none() {
            v["gpu_absent"] = crate::gpu::absent_line().into();
        }
        pretty(v)
    } else {
        let mut text = report::engines_text(&rows);
        #[cfg(feature = "gpu")]
        if set.manager().get(rge_gpu::GPU).is_none() {
            text.push_str(&format!("{}\n", crate::gpu::absent_line()));
        }
        if !absent.is_empty() {
            text.push_str("\nnot in this build (the seed's engine table):\n");
            for e in absent {
                text.push_str(&format!(
                    "{:<12} {:>4}  {:<7} {:<22} {:<18} {}\n",
                    e.name,
                    e.compute_cost,
                    e.runtime.name(),
                    e.ge_counterpart,
                    e.flags.describe(),
                    absent_reason(e.name)
                ));
            }
        }
        text
    })
}

/// Why a row of the seed's table has no engine in the set.
fn absent_reason(name: &str) -> &'static str {
    match name {
        "custom" => {
            "created by the engine manager for custom op types (GE's OpsKernelManager); \
             this set was built without it"
        }
        _ => "not registered in this build's engine set",
    }
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
