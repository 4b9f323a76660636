//! `rge inspect FILE --shapes [--json]`: every tensor's inferred dtype and shape (-1 for an
//! unknown dim). Tensors are named by their ONNX value name when the model is ONNX, else
//! `node:output`.

use std::path::Path;

use rge_ir::{ComputeGraph, GraphId};
use rge_ops::{infer_graph, InferOptions, OpRegistry};
use serde_json::json;

use super::{CliError, CliResult};
use crate::model;

/// `(graph, tensor name, dtype name, dims)` for every output of every node.
pub fn tensors(g: &ComputeGraph) -> Vec<(String, String, String, Vec<i64>)> {
    let graphs: Vec<GraphId> = std::iter::once(g.root())
        .chain(g.subgraphs().iter().copied())
        .collect();
    let mut out = Vec::new();
    for gid in graphs {
        let gname = g.graph_name(gid).unwrap_or("").to_string();
        for n in g.nodes_of(gid) {
            let op = g.op(n).expect("live node");
            for (i, d) in op.outputs().iter().enumerate() {
                let name = match d.attrs().get_str("_onnx_name").ok().flatten() {
                    Some(v) => v.to_string(),
                    None => format!("{}:{i}", op.name()),
                };
                out.push((
                    gname.clone(),
                    name,
                    d.dtype().name().to_string(),
                    d.shape().dims().to_vec(),
                ));
            }
        }
    }
    out
}

pub fn run(file: &Path, as_json: bool) -> CliResult {
    run_with_shapes(file, as_json, &[])
}

/// `rge inspect --shapes` with `--shape NAME=DIMS` options applied before inference.
pub fn run_with_shapes(file: &Path, as_json: bool, shapes: &[String]) -> CliResult {
    let shapes = super::shape_args::parse(shapes)?;
    let (mut m, _) = model::load(file)?;
    super::shape_args::apply(m.graph_mut(), &shapes)
        .map_err(|e| CliError::new(format!("{}: {}", file.display(), e.message)))?;
    let reg = OpRegistry::builtin();
    infer_graph(m.graph_mut(), &reg, &InferOptions::default())
        .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
    let ts = tensors(m.graph());
    if as_json {
        let list: Vec<_> = ts
            .iter()
            .map(|(g, n, d, s)| json!({ "graph": g, "name": n, "dtype": d, "shape": s }))
            .collect();
        let v = json!({ "file": file.display().to_string(), "tensors": list });
        return Ok(format!(
            "{}\n",
            serde_json::to_string_pretty(&v).expect("plain json")
        ));
    }
    let mut out = String::new();
    for (g, n, d, s) in ts {
        let dims: Vec<String> = s.iter().map(|x| x.to_string()).collect();
        out.push_str(&format!("{g}/{n}: {d}[{}]\n", dims.join(",")));
    }
    Ok(out)
}
