//! `rge engines`, `rge place` and `rge partition`.

use std::path::Path;

use rge_compiler::report;
use rge_ops::OpRegistry;

use super::{CliError, CliResult};
use crate::{engines, model};

fn pretty(v: serde_json::Value) -> String {
    format!(
        "{}\n",
        serde_json::to_string_pretty(&v).expect("plain json")
    )
}

/// `rge engines [--json]`: engines with cost, runtime, atomic/composite, stream flags, and how
/// many op types each supports.
pub fn list(as_json: bool) -> CliResult {
    let m = engines::default_manager(&OpRegistry::builtin())?;
    let rows = report::list_engines(&m);
    Ok(if as_json {
        pretty(report::engines_json(&rows))
    } else {
        report::engines_text(&rows)
    })
}

/// `rge place FILE [--exclude-engines a,b] [--engine-type T] [--json]`.
pub fn place(
    file: &Path,
    exclude: Option<&str>,
    engine_type: Option<&str>,
    as_json: bool,
) -> CliResult {
    let (mut m, _) = model::load(file)?;
    let options = report::cli_options(exclude, engine_type)?;
    let manager = engines::default_manager(&OpRegistry::builtin())?;
    let rows = report::place_graph(m.graph_mut(), &manager, &options)
        .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
    Ok(if as_json {
        pretty(report::place_json(&rows))
    } else {
        report::place_text(&rows)
    })
}

/// `rge partition FILE [--dot OUT] [--json]`.
pub fn partition(file: &Path, dot: Option<&Path>, as_json: bool) -> CliResult {
    let (mut m, _) = model::load(file)?;
    let options = report::cli_options(None, None)?;
    let manager = engines::default_manager(&OpRegistry::builtin())?;
    let rep = report::partition_graph(m.graph_mut(), &manager, &options)
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
