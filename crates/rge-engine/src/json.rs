//! The JSON documents that cross the plugin ABI (schemas in `docs/engines.md`): an op, a graph
//! view, graph edits, running parameters, the engine list a plugin describes itself with
//! (kernel definitions included), and a kernel's op and per-call output answer.

use serde_json::{json, Map, Value};

use rge_ir::{AttrMap, AttrValue, ComputeGraph, DataType, Format, OpDesc, Shape, TensorDesc};
use rge_kernels::{DType, KernelInit, TypeSet};

use crate::attrs::{EngineAttributes, EngineKind, RuntimeType, SchedulingFlags};
use crate::builder::RunningParams;

fn desc_json(d: &TensorDesc) -> Value {
    json!({
        "dtype": d.dtype().name(),
        "shape": d.shape().dims(),
        "format": d.format().to_string(),
    })
}

/// A tensor desc from its JSON form (missing fields take defaults).
pub fn desc_from_json(v: &Value) -> TensorDesc {
    let dtype = v
        .get("dtype")
        .and_then(Value::as_str)
        .and_then(DataType::from_name)
        .unwrap_or_default();
    let dims: Vec<i64> = v
        .get("shape")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_i64).collect())
        .unwrap_or_default();
    let format = v
        .get("format")
        .and_then(Value::as_str)
        .and_then(|s| Format::parse_layout(s).ok())
        .unwrap_or(Format::ND);
    TensorDesc::new(Shape::new(dims), dtype, format)
}

/// One attribute as JSON: ints, floats, strings, bools and their lists natively; a data type
/// as `{"dtype": name}`; other kinds as `{"kind": kind_name}` (opaque).
pub fn attr_json(v: &AttrValue) -> Value {
    match v {
        AttrValue::Int(i) => json!(i),
        AttrValue::Float(f) => json!(f),
        AttrValue::String(s) => json!(s),
        AttrValue::Bool(b) => json!(b),
        AttrValue::DataType(d) => json!({ "dtype": d.name() }),
        AttrValue::ListInt(v) => json!(v),
        AttrValue::ListFloat(v) => json!(v),
        AttrValue::ListString(v) => json!(v),
        AttrValue::ListBool(v) => json!(v),
        AttrValue::ListListInt(v) => json!(v),
        other => json!({ "kind": other.kind_name() }),
    }
}

/// An attribute from JSON (the inverse of [`attr_json`] for the native kinds); `None` for
/// null, objects other than `{"dtype"}`, and mixed or nested lists other than lists of int lists.
pub fn attr_from_json(v: &Value) -> Option<AttrValue> {
    Some(match v {
        Value::Bool(b) => AttrValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => AttrValue::Int(i),
            None => AttrValue::Float(n.as_f64()? as f32),
        },
        Value::String(s) => AttrValue::String(s.clone()),
        Value::Object(o) => AttrValue::DataType(DataType::from_name(o.get("dtype")?.as_str()?)?),
        Value::Array(a) => {
            if a.iter().all(|x| x.as_i64().is_some()) {
                AttrValue::ListInt(a.iter().filter_map(Value::as_i64).collect())
            } else if a.iter().all(Value::is_number) {
                AttrValue::ListFloat(
                    a.iter()
                        .filter_map(|x| x.as_f64().map(|f| f as f32))
                        .collect(),
                )
            } else if a.iter().all(Value::is_string) {
                AttrValue::ListString(
                    a.iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect(),
                )
            } else if a.iter().all(Value::is_boolean) {
                AttrValue::ListBool(a.iter().filter_map(Value::as_bool).collect())
            } else if a.iter().all(Value::is_array) {
                let mut out = Vec::with_capacity(a.len());
                for x in a {
                    let row = x.as_array()?;
                    if !row.iter().all(|y| y.as_i64().is_some()) {
                        return None;
                    }
                    out.push(row.iter().filter_map(Value::as_i64).collect());
                }
                AttrValue::ListListInt(out)
            } else {
                return None;
            }
        }
        Value::Null => return None,
    })
}

fn attrs_json(a: &AttrMap) -> Value {
    Value::Object(
        a.iter()
            .map(|(k, v)| (k.to_string(), attr_json(v)))
            .collect::<Map<String, Value>>(),
    )
}

/// An op as JSON: `{"name", "type", "attrs", "inputs": [desc], "outputs": [desc]}`, a desc
/// being `{"dtype", "shape", "format"}`.
pub fn op_json(op: &OpDesc) -> Value {
    json!({
        "name": op.name(),
        "type": op.op_type(),
        "attrs": attrs_json(op.attrs()),
        "inputs": op.inputs().iter().map(desc_json).collect::<Vec<_>>(),
        "outputs": op.outputs().iter().map(desc_json).collect::<Vec<_>>(),
    })
}

/// An op from its JSON form (for plugins written in Rust and for tests).
pub fn op_from_json(v: &Value) -> Option<OpDesc> {
    let mut op = OpDesc::new(v.get("name")?.as_str()?, v.get("type")?.as_str()?);
    for d in v
        .get("inputs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        op.add_input("", desc_from_json(d)).ok()?;
    }
    for d in v
        .get("outputs")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        op.add_output("", desc_from_json(d)).ok()?;
    }
    if let Some(attrs) = v.get("attrs").and_then(Value::as_object) {
        for (k, a) in attrs {
            if let Some(a) = attr_from_json(a) {
                op.attrs_mut().set(k.clone(), a);
            }
        }
    }
    Some(op)
}

/// The root graph as JSON: `{"name", "nodes": [op + "inputs_from": ["src:idx" | ""],
/// "control_from": [src]]}` in node order.
pub fn graph_json(g: &ComputeGraph) -> Value {
    let nodes: Vec<Value> = g
        .nodes_of(g.root())
        .map(|n| {
            let node = g.node(n).expect("live node");
            let mut v = op_json(node.op());
            let inputs: Vec<String> = node
                .input_peers()
                .iter()
                .map(|p| {
                    p.map_or_else(String::new, |p| {
                        format!("{}:{}", g.name_of(p.node), p.index)
                    })
                })
                .collect();
            let ctrl: Vec<&str> = node
                .in_ctrl_peers()
                .iter()
                .map(|p| g.name_of(p.node))
                .collect();
            v["inputs_from"] = json!(inputs);
            v["control_from"] = json!(ctrl);
            v
        })
        .collect();
    json!({ "name": g.name(), "nodes": nodes })
}

/// Applies an edit list `{"set_attrs": [{"node": name, "attrs": {...}}]}` to the root graph.
pub fn apply_graph_edits(g: &mut ComputeGraph, edits: &Value) -> Result<(), String> {
    let Some(list) = edits.get("set_attrs") else {
        return Ok(());
    };
    let list = list.as_array().ok_or("`set_attrs` is not a list")?;
    for e in list {
        let name = e
            .get("node")
            .and_then(Value::as_str)
            .ok_or("an edit has no `node` name")?;
        let n = g
            .find_node(g.root(), name)
            .ok_or_else(|| format!("edit names unknown node `{name}`"))?;
        let attrs = e
            .get("attrs")
            .and_then(Value::as_object)
            .ok_or_else(|| format!("edit of `{name}` has no `attrs` object"))?;
        let op = g.op_mut(n).expect("found node");
        for (k, v) in attrs {
            let a = attr_from_json(v).ok_or_else(|| {
                format!("edit of `{name}`: attribute `{k}` has an unsupported value")
            })?;
            op.attrs_mut().set(k.clone(), a);
        }
    }
    Ok(())
}

/// Parses `{"output_sizes": [...], "workspace": [...]}`.
pub fn running_params_from_json(v: &Value) -> Result<RunningParams, String> {
    let list = |key: &str| -> Result<Vec<i64>, String> {
        match v.get(key) {
            None => Ok(Vec::new()),
            Some(a) => a
                .as_array()
                .and_then(|a| a.iter().map(Value::as_i64).collect::<Option<Vec<_>>>())
                .ok_or_else(|| format!("`{key}` is not a list of integers")),
        }
    };
    Ok(RunningParams {
        output_sizes: list("output_sizes")?,
        workspace: list("workspace")?,
    })
}

/// The element type with ONNX's name `name` ("FLOAT", "INT64" …).
pub fn dtype_from_onnx_name(name: &str) -> Option<DType> {
    DType::ALL.iter().copied().find(|t| t.name() == name)
}

/// A kernel's op as the plugin's `kernel_create` reads it: `{"name", "type", "domain",
/// "opset", "attrs", "inputs": [{"dtype": "FLOAT" | null}], "outputs": [...]}`.
pub fn kernel_op_json(init: &KernelInit<'_>) -> Value {
    let ports = |types: &[Option<DType>]| -> Vec<Value> {
        types
            .iter()
            .map(|t| json!({ "dtype": t.map(DType::name) }))
            .collect()
    };
    json!({
        "name": init.node_name,
        "type": init.op_type,
        "domain": init.domain,
        "opset": init.opset,
        "attrs": attrs_json(init.attrs),
        "inputs": ports(init.input_types),
        "outputs": ports(init.output_types),
    })
}

/// One output of `kernel_infer`'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InferredOutput {
    pub dtype: DType,
    pub shape: Vec<usize>,
}

/// `kernel_infer`'s answer: per output its type and shape (`None`: not produced), and the
/// workspace bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InferResult {
    pub outputs: Vec<Option<InferredOutput>>,
    pub workspace: usize,
}

/// Parses `{"outputs": [{"dtype": name | code, "shape": [..]} | null], "workspace": n}`.
pub fn infer_result_from_json(v: &Value) -> Result<InferResult, String> {
    let list = v
        .get("outputs")
        .and_then(Value::as_array)
        .ok_or("the answer has no `outputs` list")?;
    let mut outputs = Vec::with_capacity(list.len());
    for (i, o) in list.iter().enumerate() {
        if o.is_null() {
            outputs.push(None);
            continue;
        }
        let dtype = match o.get("dtype") {
            Some(Value::String(s)) => dtype_from_onnx_name(s),
            Some(Value::Number(n)) => n
                .as_i64()
                .and_then(|c| i32::try_from(c).ok())
                .and_then(DType::from_onnx),
            _ => None,
        }
        .ok_or_else(|| format!("output {i}: `dtype` is not an ONNX type name or code"))?;
        let shape = o
            .get("shape")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .map(|d| d.as_u64().and_then(|d| usize::try_from(d).ok()))
                    .collect::<Option<Vec<usize>>>()
            })
            .ok_or_else(|| format!("output {i}: `shape` is not a list of dims >= 0"))?;
        outputs.push(Some(InferredOutput { dtype, shape }));
    }
    let workspace = match v.get("workspace") {
        None | Some(Value::Null) => 0,
        Some(w) => w
            .as_u64()
            .and_then(|w| usize::try_from(w).ok())
            .ok_or("`workspace` is not a byte count")?,
    };
    Ok(InferResult { outputs, workspace })
}

/// One kernel an engine defines in `get_engines` (its `kernels` list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelDescription {
    pub op_type: String,
    /// "" for the default ONNX domain.
    pub domain: String,
    /// The opset versions served, both ends included.
    pub since: i64,
    pub until: i64,
    /// Per input the accepted types (the last repeats; empty: any input).
    pub inputs: Vec<TypeSet>,
    /// Per output likewise.
    pub outputs: Vec<TypeSet>,
}

fn kernel_from_json(i: usize, k: &Value) -> Result<KernelDescription, String> {
    let op_type = k
        .get("op_type")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| format!("kernel {i} has no `op_type`"))?;
    let ctx = |m: String| format!("kernel `{op_type}`: {m}");
    let domain = match k.get("domain") {
        None | Some(Value::Null) => "",
        Some(d) => d
            .as_str()
            .ok_or_else(|| ctx("`domain` is not a string".into()))?,
    };
    let version = |key: &str, default: i64| -> Result<i64, String> {
        match k.get(key) {
            None | Some(Value::Null) => Ok(default),
            Some(v) => v
                .as_i64()
                .filter(|v| *v >= 0)
                .ok_or_else(|| ctx(format!("`{key}` is not an opset version"))),
        }
    };
    let since = version("since", 1)?;
    let until = version("until", i64::MAX)?;
    if since > until {
        return Err(ctx(format!("`since` {since} is after `until` {until}")));
    }
    let ports = |key: &str| -> Result<Vec<TypeSet>, String> {
        let Some(list) = k.get(key) else {
            return Ok(Vec::new());
        };
        let list = list
            .as_array()
            .ok_or_else(|| ctx(format!("`{key}` is not a list of dtype lists")))?;
        let port = &key[..key.len() - 1];
        list.iter()
            .enumerate()
            .map(|(p, names)| {
                let names = names
                    .as_array()
                    .filter(|n| !n.is_empty())
                    .ok_or_else(|| ctx(format!("{port} {p} is not a non-empty list of dtypes")))?;
                let mut types = Vec::with_capacity(names.len());
                for n in names {
                    let t = n.as_str().and_then(dtype_from_onnx_name).ok_or_else(|| {
                        ctx(format!(
                            "{port} {p}: unknown dtype {n} (ONNX names such as \"FLOAT\")"
                        ))
                    })?;
                    types.push(t);
                }
                Ok(TypeSet::of(&types))
            })
            .collect()
    };
    Ok(KernelDescription {
        op_type: op_type.to_string(),
        domain: if domain == "ai.onnx" { "" } else { domain }.to_string(),
        since,
        until,
        inputs: ports("inputs")?,
        outputs: ports("outputs")?,
    })
}

/// One engine a plugin describes in `get_engines`.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineDescription {
    pub attrs: EngineAttributes,
    pub flags: SchedulingFlags,
    pub kernel_lib: String,
    /// Op types with kernels (each with GE's partial/async flags).
    pub ops: Vec<(String, bool, bool)>,
    /// The store claims every op type.
    pub any_op: bool,
    /// Which optimizer stages the plugin implements.
    pub optimizer_stages: Vec<crate::optimizer::OptimizeStage>,
    /// The plugin builds kernels for this engine.
    pub builder: bool,
    /// Runnable kernels (ABI version 2).
    pub kernels: Vec<KernelDescription>,
}

fn get_bool(v: &Value, key: &str) -> Result<bool, String> {
    match v.get(key) {
        None => Ok(false),
        Some(b) => b.as_bool().ok_or_else(|| format!("`{key}` is not a bool")),
    }
}

/// Parses the `{"engines": [...]}` document of `get_engines`.
pub fn engines_from_json(v: &Value) -> Result<Vec<EngineDescription>, String> {
    let list = v
        .get("engines")
        .and_then(Value::as_array)
        .ok_or("the document has no `engines` list")?;
    let mut out = Vec::with_capacity(list.len());
    for (i, e) in list.iter().enumerate() {
        let name = e
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("engine {i} has no `name`"))?;
        let ctx = |m: String| format!("engine `{name}`: {m}");
        let cost = e
            .get("cost")
            .and_then(Value::as_u64)
            .filter(|c| *c <= u64::from(crate::attrs::MAX_COMPUTE_COST))
            .ok_or_else(|| ctx("`cost` must be an integer 0..=10".into()))?;
        let mut attrs = EngineAttributes::new(name, cost as u8);
        if let Some(r) = e.get("runtime") {
            attrs.runtime = r
                .as_str()
                .and_then(RuntimeType::parse)
                .ok_or_else(|| ctx("`runtime` must be \"HOST\" or \"DEVICE\"".into()))?;
        }
        if let Some(m) = e.get("mem_types").and_then(Value::as_array) {
            attrs.mem_types = m
                .iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect();
        }
        for (key, slot) in [
            ("input_format", &mut attrs.input_format),
            ("output_format", &mut attrs.output_format),
        ] {
            if let Some(f) = e.get(key) {
                *slot = f
                    .as_str()
                    .and_then(|s| Format::parse_layout(s).ok())
                    .ok_or_else(|| ctx(format!("`{key}` is not a format name")))?;
            }
        }
        if let Some(m) = e.get("composite_members").and_then(Value::as_array) {
            if !m.is_empty() {
                attrs.kind = EngineKind::Composite {
                    members: m
                        .iter()
                        .filter_map(|x| x.as_str().map(String::from))
                        .collect(),
                };
            }
        }
        let flags = SchedulingFlags {
            independent: get_bool(e, "independent").map_err(ctx)?,
            attach: get_bool(e, "attach").map_err(ctx)?,
            skip_assign_stream: get_bool(e, "skip_assign_stream").map_err(ctx)?,
        };
        let mut ops = Vec::new();
        for o in e.get("ops").and_then(Value::as_array).into_iter().flatten() {
            let t = o
                .get("type")
                .and_then(Value::as_str)
                .ok_or_else(|| ctx("an op has no `type`".into()))?;
            ops.push((
                t.to_string(),
                get_bool(o, "flag_partial").map_err(ctx)?,
                get_bool(o, "flag_async").map_err(ctx)?,
            ));
        }
        let mut kernels = Vec::new();
        if let Some(list) = e.get("kernels") {
            let list = list
                .as_array()
                .ok_or_else(|| ctx("`kernels` is not a list".into()))?;
            for (k, v) in list.iter().enumerate() {
                kernels.push(kernel_from_json(k, v).map_err(ctx)?);
            }
        }
        let mut stages = Vec::new();
        if let Some(o) = e.get("optimizer") {
            for s in crate::optimizer::OptimizeStage::ALL {
                if get_bool(o, s.name()).map_err(ctx)? {
                    stages.push(s);
                }
            }
        }
        out.push(EngineDescription {
            attrs,
            flags,
            kernel_lib: e
                .get("kernel_lib")
                .and_then(Value::as_str)
                .map_or_else(|| format!("{name}_kernel_store"), String::from),
            ops,
            any_op: get_bool(e, "any_op").map_err(ctx)?,
            optimizer_stages: stages,
            builder: get_bool(e, "builder").map_err(ctx)?,
            kernels,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_round_trips_through_json() {
        let mut op = OpDesc::new("a", "Add")
            .with_input(
                "",
                TensorDesc::new(Shape::new([2, 3]), DataType::Float, Format::NCHW),
            )
            .with_output(
                "",
                TensorDesc::with_shape_dtype(Shape::new([-1]), DataType::Int64),
            );
        op.attrs_mut().set("i", 3i64);
        op.attrs_mut().set("f", 0.5f32);
        op.attrs_mut().set("s", "x");
        op.attrs_mut().set("l", vec![1i64, 2]);
        op.attrs_mut().set("dt", DataType::Int32);
        let back = op_from_json(&op_json(&op)).unwrap();
        assert_eq!(back.name(), "a");
        assert_eq!(back.input(0).unwrap().format(), Format::NCHW);
        assert_eq!(back.output(0).unwrap().shape().dims(), &[-1]);
        assert_eq!(back.attrs(), op.attrs());
    }

    #[test]
    fn engines_document_is_checked() {
        let doc = json!({"engines": [{"name": "e", "cost": 6, "runtime": "HOST",
            "attach": true, "ops": [{"type": "X"}], "optimizer": {"fused": true}, "builder": true}]});
        let e = &engines_from_json(&doc).unwrap()[0];
        assert_eq!(e.attrs.compute_cost, 6);
        assert_eq!(e.attrs.runtime, RuntimeType::Host);
        assert!(e.flags.attach && !e.flags.independent);
        assert_eq!(e.ops[0].0, "X");
        assert_eq!(e.optimizer_stages, [crate::optimizer::OptimizeStage::Fused]);
        let bad = json!({"engines": [{"name": "e", "cost": 12}]});
        assert!(engines_from_json(&bad).unwrap_err().contains("cost"));
    }

    #[test]
    fn kernel_lists_are_checked() {
        let doc = |k: Value| json!({"engines": [{"name": "e", "cost": 6, "kernels": [k]}]});
        let ok = doc(json!({"op_type": "Relu", "since": 6,
            "inputs": [["FLOAT", "DOUBLE"]], "outputs": [["FLOAT"]]}));
        let k = &engines_from_json(&ok).unwrap()[0].kernels[0];
        assert_eq!((k.domain.as_str(), k.since, k.until), ("", 6, i64::MAX));
        assert!(k.inputs[0].contains(DType::Double) && !k.outputs[0].contains(DType::Double));
        let err = |k: Value| engines_from_json(&doc(k)).unwrap_err();
        assert_eq!(
            err(json!({"op_type": "Relu", "inputs": [["FLOT"]]})),
            "engine `e`: kernel `Relu`: input 0: unknown dtype \"FLOT\" (ONNX names such as \"FLOAT\")"
        );
        assert_eq!(
            err(json!({"op_type": "Relu", "since": 9, "until": 7})),
            "engine `e`: kernel `Relu`: `since` 9 is after `until` 7"
        );
        assert_eq!(
            err(json!({"op_type": ""})),
            "engine `e`: kernel 0 has no `op_type`"
        );
        assert!(err(json!({"op_type": "X", "outputs": [[]]})).contains("output 0"));
    }

    #[test]
    fn infer_answers_are_checked() {
        let r = infer_result_from_json(&json!({"outputs": [{"dtype": "FLOAT", "shape": [2, 3]},
            null, {"dtype": 7, "shape": []}], "workspace": 64}))
        .unwrap();
        assert_eq!(r.workspace, 64);
        assert_eq!(r.outputs[0].as_ref().unwrap().shape, [2, 3]);
        assert!(r.outputs[1].is_none());
        assert_eq!(r.outputs[2].as_ref().unwrap().dtype, DType::Int64);
        assert!(
            infer_result_from_json(&json!({"outputs": [{"dtype": "F", "shape": []}]}))
                .unwrap_err()
                .contains("output 0")
        );
        assert!(
            infer_result_from_json(&json!({"outputs": [{"dtype": 1, "shape": [-1]}]}))
                .unwrap_err()
                .contains("shape")
        );
    }
}
