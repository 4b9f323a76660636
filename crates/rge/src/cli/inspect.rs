//! `rge inspect FILE [--json]`: format, graphs, node counts by op type, inputs and outputs with
//! dtype and shape, subgraphs, weight bytes.

use std::collections::BTreeMap;
use std::path::Path;

use rge_ir::{op_types, AttrValue, ComputeGraph, GraphId, NodeId, TensorDesc};
use serde_json::{json, Value};

use super::CliResult;
use crate::model;

/// One graph input or output.
pub struct Port {
    pub name: String,
    pub desc: TensorDesc,
}

/// What `inspect` reports.
pub struct Summary {
    pub format: &'static str,
    pub graphs: Vec<String>,
    pub op_types: BTreeMap<String, usize>,
    pub inputs: Vec<Port>,
    pub outputs: Vec<Port>,
    pub weight_bytes: u64,
    pub nodes: usize,
}

fn every_graph(g: &ComputeGraph) -> Vec<GraphId> {
    std::iter::once(g.root())
        .chain(g.subgraphs().iter().copied())
        .collect()
}

/// The ONNX value name of an output when the importer kept one, else `node:index`.
fn output_name(g: &ComputeGraph, n: NodeId, i: usize) -> String {
    let desc = g.op(n).and_then(|op| op.output(i));
    match desc.and_then(|d| d.attrs().get_str("_onnx_name").ok().flatten()) {
        Some(name) => name.to_string(),
        None => format!("{}:{i}", g.name_of(n)),
    }
}

fn weight_bytes(g: &ComputeGraph) -> u64 {
    let mut total = 0u64;
    for gid in every_graph(g) {
        for n in g.nodes_of(gid) {
            let op = g.op(n).expect("live node");
            if !op_types::is_const(op.op_type()) {
                continue;
            }
            match op.attrs().get("value") {
                Some(AttrValue::Tensor(t)) if !t.data.is_empty() => total += t.data.len() as u64,
                _ => {
                    if let Ok(Some(len)) = op.attrs().get_int("length") {
                        total += len.max(0) as u64;
                    }
                }
            }
        }
    }
    total
}

pub fn summarize(m: &model::Model, format: model::FileFormat) -> Summary {
    let g = m.graph();
    let mut op_types = BTreeMap::new();
    for gid in every_graph(g) {
        for n in g.nodes_of(gid) {
            *op_types.entry(g.name_of_type(n)).or_insert(0) += 1;
        }
    }
    let inputs = g
        .input_nodes(g.root())
        .iter()
        .map(|&n| Port {
            name: g.name_of(n).to_string(),
            desc: g
                .op(n)
                .and_then(|o| o.output(0))
                .cloned()
                .unwrap_or_default(),
        })
        .collect();
    let outputs = g
        .output_nodes(g.root())
        .iter()
        .map(|&(n, i)| Port {
            name: output_name(g, n, i as usize),
            desc: g
                .op(n)
                .and_then(|o| o.output(i as usize))
                .cloned()
                .unwrap_or_default(),
        })
        .collect();
    Summary {
        format: format.name(),
        graphs: every_graph(g)
            .iter()
            .map(|&x| g.graph_name(x).unwrap_or("").to_string())
            .collect(),
        op_types,
        inputs,
        outputs,
        weight_bytes: weight_bytes(g),
        nodes: g.total_node_count(),
    }
}

trait TypeName {
    fn name_of_type(&self, n: NodeId) -> String;
}

impl TypeName for ComputeGraph {
    fn name_of_type(&self, n: NodeId) -> String {
        self.op(n)
            .map_or(String::new(), |o| o.op_type().to_string())
    }
}

fn port_json(p: &Port) -> Value {
    json!({
        "name": p.name,
        "dtype": p.desc.dtype().name(),
        "shape": p.desc.shape().dims(),
    })
}

fn port_text(p: &Port) -> String {
    format!(
        "  {}: {}{}\n",
        p.name,
        p.desc.dtype().name(),
        p.desc.shape()
    )
}

/// For a compiled model: nodes per engine, and the planned arena bytes.
fn compiled_info(m: &model::Model) -> Option<(BTreeMap<String, usize>, i64)> {
    let model::Model::Ge(ge) = m else {
        return None;
    };
    if !ge.attrs.contains(rge_runtime::saved::COMPILED_ATTR) {
        return None;
    }
    let g = &ge.graph;
    let mut engines = BTreeMap::new();
    for n in g.nodes_of(g.root()) {
        if let Some(op) = g.op(n) {
            let engine = op
                .attrs()
                .get_str(rge_compiler::attr_names::LXFUSION_ENGINE_NAME)
                .ok()
                .flatten()
                .unwrap_or(op.engine_name());
            *engines.entry(engine.to_string()).or_insert(0) += 1;
        }
    }
    let memory = match ge.attrs.get("memory_size") {
        Some(AttrValue::Int(v)) => *v,
        _ => 0,
    };
    Some((engines, memory))
}

pub fn run(file: &Path, as_json: bool) -> CliResult {
    let (m, format) = model::load(file)?;
    let s = summarize(&m, format);
    let compiled = compiled_info(&m);
    if as_json {
        let v = json!({
            "file": file.display().to_string(),
            "format": s.format,
            "graphs": s.graphs,
            "nodes": s.nodes,
            "op_types": s.op_types,
            "inputs": s.inputs.iter().map(port_json).collect::<Vec<_>>(),
            "outputs": s.outputs.iter().map(port_json).collect::<Vec<_>>(),
            "weight_bytes": s.weight_bytes,
            "compiled": compiled.as_ref().map(|(e, mem)| json!({
                "engines": e,
                "memory_size": mem,
            })),
        });
        return Ok(format!(
            "{}\n",
            serde_json::to_string_pretty(&v).expect("plain json")
        ));
    }
    let mut out = format!(
        "{}: {} model, {} nodes\n",
        file.display(),
        s.format,
        s.nodes
    );
    out.push_str(&format!("graphs: {}\n", s.graphs.join(", ")));
    out.push_str("inputs:\n");
    s.inputs.iter().for_each(|p| out.push_str(&port_text(p)));
    out.push_str("outputs:\n");
    s.outputs.iter().for_each(|p| out.push_str(&port_text(p)));
    out.push_str("op types:\n");
    for (t, c) in &s.op_types {
        out.push_str(&format!("  {t}: {c}\n"));
    }
    out.push_str(&format!("weight bytes: {}\n", s.weight_bytes));
    if let Some((engines, mem)) = &compiled {
        out.push_str(&format!(
            "compiled model: arena {mem} bytes; nodes per engine:\n"
        ));
        for (e, c) in engines {
            out.push_str(&format!("  {e}: {c}\n"));
        }
    }
    Ok(out)
}
