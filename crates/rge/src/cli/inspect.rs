//! `rge inspect FILE [--json] [--all-ops]`: the model summary: format, IR version, producer,
//! opset imports, graphs, node counts by op type (Data, NetOutput and Const left out unless
//! `--all-ops`), inputs and outputs with dtype and shape (the model's dim names kept), parameter
//! count and weight bytes, and FLOPs (2 per multiply-add, from inferred shapes).

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

/// What the file says about where the model comes from (ONNX).
#[derive(Default)]
pub struct Origin {
    pub ir_version: Option<i64>,
    pub producer: String,
    pub opsets: Vec<(String, i64)>,
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
    /// Elements of every constant (the parameters).
    pub params: u64,
    pub origin: Origin,
}

/// Data, NetOutput and Const: graph plumbing, not ops.
fn is_plumbing(t: &str) -> bool {
    op_types::is_data(t) || op_types::is_const(t) || t == op_types::NET_OUTPUT
}

fn params(g: &ComputeGraph) -> u64 {
    let mut total = 0u64;
    for gid in every_graph(g) {
        for n in g.nodes_of(gid) {
            let Some(op) = g.op(n) else { continue };
            if !op_types::is_const(op.op_type()) {
                continue;
            }
            if let Some(d) = op.output(0) {
                let dims = d.shape().dims();
                if dims.iter().all(|&x| x >= 0) {
                    total += dims.iter().map(|&x| x as u64).product::<u64>();
                }
            }
        }
    }
    total
}

/// FLOPs of the root graph after shape inference (2 per multiply-add); `None` when inference
/// fails or a dim stays unknown in a counted op.
fn flops(m: &model::Model) -> Option<u64> {
    let mut g = m.graph().clone();
    let reg = rge_ops::OpRegistry::builtin();
    rge_ops::infer_graph(&mut g, &reg, &rge_ops::InferOptions::default()).ok()?;
    let mut total = 0u64;
    for n in g.nodes_of(g.root()) {
        total = total.checked_add(crate::explain::flops::node_flops(&g, n))?;
    }
    Some(total)
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
        params: params(g),
        origin: match m {
            model::Model::Onnx(o) => Origin {
                ir_version: Some(o.ir_version),
                producer: format!("{} {}", o.producer_name, o.producer_version)
                    .trim()
                    .to_string(),
                opsets: o.opset_imports.clone(),
            },
            model::Model::Ge(_) => Origin::default(),
        },
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
    let dims: Option<Vec<Value>> = crate::ports::dims_of(&p.desc).map(|d| {
        d.iter()
            .map(|x| match x {
                crate::ports::Dim::Known(v) => json!(v),
                crate::ports::Dim::Named(n) => json!(n),
                crate::ports::Dim::Unknown => Value::Null,
            })
            .collect()
    });
    json!({
        "name": p.name,
        "dtype": p.desc.dtype().name(),
        "shape": p.desc.shape().dims(),
        "dims": dims,
    })
}

fn port_text(p: &Port) -> String {
    let dims = crate::ports::Port {
        name: String::new(),
        dtype: p.desc.dtype(),
        dims: crate::ports::dims_of(&p.desc),
    }
    .dims_text();
    format!("  {}: {}{dims}\n", p.name, p.desc.dtype().name())
}

fn opset_name(domain: &str) -> &str {
    if domain.is_empty() {
        "ai.onnx"
    } else {
        domain
    }
}

/// `1234567` as `1.23M`.
fn si(v: u64) -> String {
    let f = v as f64;
    if v < 10_000 {
        v.to_string()
    } else if f < 1e6 {
        format!("{:.2}K", f / 1e3)
    } else if f < 1e9 {
        format!("{:.2}M", f / 1e6)
    } else if f < 1e12 {
        format!("{:.2}G", f / 1e9)
    } else {
        format!("{:.2}T", f / 1e12)
    }
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
    run_with(file, as_json, false)
}

/// `rge inspect`, with `--all-ops`.
pub fn run_with(file: &Path, as_json: bool, all_ops: bool) -> CliResult {
    let (m, format) = model::load(file)?;
    let mut s = summarize(&m, format);
    if !all_ops {
        s.op_types.retain(|t, _| !is_plumbing(t));
    }
    let flops = flops(&m);
    let compiled = compiled_info(&m);
    let dim_names: Vec<String> = {
        let mut v: Vec<String> = crate::ports::inputs(m.graph())
            .into_iter()
            .chain(crate::ports::outputs(m.graph()))
            .flat_map(|p| p.dims.unwrap_or_default())
            .filter_map(|d| match d {
                crate::ports::Dim::Named(n) => Some(n),
                _ => None,
            })
            .collect();
        v.sort();
        v.dedup();
        v
    };
    if as_json {
        let v = json!({
            "file": file.display().to_string(),
            "format": s.format,
            "ir_version": s.origin.ir_version,
            "producer": s.origin.producer,
            "opsets": s.origin.opsets.iter().map(|(d, v)| json!({"domain": opset_name(d), "version": v})).collect::<Vec<_>>(),
            "graphs": s.graphs,
            "nodes": s.nodes,
            "op_types": s.op_types,
            "params": s.params,
            "flops": flops,
            "dim_names": dim_names,
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
    if let Some(ir) = s.origin.ir_version {
        let opsets: Vec<String> = s
            .origin
            .opsets
            .iter()
            .map(|(d, v)| format!("{} {v}", opset_name(d)))
            .collect();
        out.push_str(&format!(
            "IR version {ir}, opsets {}, producer {}\n",
            opsets.join(", "),
            if s.origin.producer.is_empty() {
                "(none)"
            } else {
                &s.origin.producer
            }
        ));
    }
    out.push_str(&format!(
        "params: {} ({} weight bytes), FLOPs: {}\n",
        si(s.params),
        s.weight_bytes,
        flops.map_or(
            "unknown (open dims; fix them with inspect --shapes --shape)".into(),
            si
        )
    ));
    if !dim_names.is_empty() {
        out.push_str(&format!("dim names: {}\n", dim_names.join(", ")));
    }
    out.push_str(&format!("graphs: {}\n", s.graphs.join(", ")));
    out.push_str("inputs:\n");
    s.inputs.iter().for_each(|p| out.push_str(&port_text(p)));
    out.push_str("outputs:\n");
    s.outputs.iter().for_each(|p| out.push_str(&port_text(p)));
    out.push_str(if all_ops {
        "op types:\n"
    } else {
        "op types (without Data, NetOutput, Const; --all-ops counts them):\n"
    });
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
