//! `rge sort FILE --mode bfs|dfs|rdfs|stable-rdfs [--memory-priority]`: node names in sorted
//! order, one per line (each subgraph after a `# subgraph NAME` line). A cycle is an error that
//! lists the nodes on it.

use std::path::Path;

use rge_ir::{SortMode, SortOptions};

use super::CliResult;
use crate::model;

pub fn parse_mode(s: &str) -> Result<SortMode, String> {
    match s {
        "bfs" => Ok(SortMode::Bfs),
        "dfs" => Ok(SortMode::Dfs),
        "rdfs" => Ok(SortMode::Rdfs),
        "stable-rdfs" | "stable_rdfs" | "stablerdfs" => Ok(SortMode::StableRdfs),
        other => Err(format!(
            "unknown sort mode `{other}` (expected bfs, dfs, rdfs or stable-rdfs)"
        )),
    }
}

pub fn run(file: &Path, mode: SortMode, memory_priority: bool) -> CliResult {
    let (mut m, _) = model::load(file)?;
    let g = m.graph_mut();
    let opts = SortOptions {
        mode,
        memory_priority,
        ..Default::default()
    };
    g.topological_sort(&opts)
        .map_err(|e| super::CliError::new(format!("{}: {e}", file.display())))?;
    let mut out = String::new();
    for n in g.nodes_of(g.root()) {
        out.push_str(g.name_of(n));
        out.push('\n');
    }
    for &s in g.subgraphs() {
        out.push_str(&format!("# subgraph {}\n", g.graph_name(s).unwrap_or("")));
        for n in g.nodes_of(s) {
            out.push_str(g.name_of(n));
            out.push('\n');
        }
    }
    Ok(out)
}
