//! `rge convert IN OUT`: between `.onnx`, GE ModelDef binary (`.pb`) and text (`.txt`,
//! `.pbtxt`), the readable dump (`.dump`) and DOT (`.dot`), by extension.

use std::path::Path;

use super::CliResult;
use crate::model;

pub fn run(input: &Path, output: &Path) -> CliResult {
    let (m, from) = model::load(input)?;
    let to = model::FileFormat::from_path(output)?;
    model::save(&m, output)?;
    Ok(format!(
        "{} ({}) -> {} ({}): {} nodes\n",
        input.display(),
        from.name(),
        output.display(),
        to.name(),
        m.graph().total_node_count()
    ))
}
