//! Conformance of inference against the ONNX backend node tests (onnx 1.23.2, made by
//! `scripts/gen_onnx_node_tests.sh`). For every test whose ops are all registered ("covered"),
//! the model is imported, inferred with its graph inputs' types (and the values of small
//! inputs, as a compile session knows a const input), and every graph output's inferred data
//! type and shape is compared with the expected output stored with the test (`output_N.pb`,
//! not the model's declared type, which some tests leave without a shape).
//!
//! A dim inferred as -1 is "unknown" (data-dependent: NonZero, Unique, a loop's trip count…);
//! it matches any expected dim but the test counts such outputs as partial. Any known dim or
//! data type that differs, or an inference error, is a disagreement and fails the test.
//!
//! The data lives in RGE_ONNX_NODE_TESTS (default <workspace>/build/onnx-node-tests/node).
//! Without it the test prints a note and passes, unless CI is set (CI generates it first).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use prost::Message;
use rge_formats::onnx_proto::TensorProto;
use rge_ir::{op_types, ComputeGraph, DataType};
use rge_ops::{graph_outputs, infer_graph, InferOptions, OpRegistry, Value, ValueKind};

/// ONNX `SequenceProto` (onnx-data.proto; not in the onnx-ml schema rge-formats builds).
#[derive(Clone, PartialEq, prost::Message)]
struct SequenceProto {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(int32, tag = "2")]
    elem_type: i32,
    #[prost(message, repeated, tag = "3")]
    tensor_values: Vec<TensorProto>,
}

/// ONNX `OptionalProto`.
#[derive(Clone, PartialEq, prost::Message)]
struct OptionalProto {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(int32, tag = "2")]
    elem_type: i32,
    #[prost(message, optional, tag = "3")]
    tensor_value: Option<TensorProto>,
    #[prost(message, optional, tag = "5")]
    sequence_value: Option<SequenceProto>,
}

fn tests_dir() -> PathBuf {
    match std::env::var_os("RGE_ONNX_NODE_TESTS") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../build/onnx-node-tests/node"),
    }
}

/// The rge type an ONNX element type is read as (every ONNX type has its own).
fn expected_dtype(code: i32) -> Option<DataType> {
    rge_ops::onnx_types::from_onnx(code)
}

/// The value of a small numeric input tensor.
fn tensor_value(t: &TensorProto) -> Option<Value> {
    let dt = expected_dtype(t.data_type)?;
    let dims = t.dims.clone();
    let n = dims
        .iter()
        .try_fold(1i64, |a, &d| (d >= 0).then(|| a.checked_mul(d)).flatten())?;
    if n as usize > rge_ops::value::MAX_VALUE_ELEMENTS {
        return None;
    }
    let raw = &t.raw_data[..];
    let ints: Option<Vec<i64>> = match dt {
        DataType::Int64 if !raw.is_empty() => Some(
            raw.chunks_exact(8)
                .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        DataType::Int64 => Some(t.int64_data.clone()),
        DataType::Int32 if !raw.is_empty() => Some(
            raw.chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as i64)
                .collect(),
        ),
        DataType::Int32
        | DataType::Int8
        | DataType::Int16
        | DataType::Uint8
        | DataType::Uint16
        | DataType::Bool
            if raw.is_empty() =>
        {
            Some(t.int32_data.iter().map(|&x| x as i64).collect())
        }
        DataType::Int8 => Some(raw.iter().map(|&b| b as i8 as i64).collect()),
        DataType::Uint8 | DataType::Bool => Some(raw.iter().map(|&b| b as i64).collect()),
        _ => None,
    };
    if let Some(v) = ints {
        return (v.len() as i64 == n).then(|| Value::ints(dt, dims, v));
    }
    let floats: Option<Vec<f64>> = match dt {
        DataType::Float if !raw.is_empty() => Some(
            raw.chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
                .collect(),
        ),
        DataType::Float => Some(t.float_data.iter().map(|&x| x as f64).collect()),
        DataType::Double if !raw.is_empty() => Some(
            raw.chunks_exact(8)
                .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                .collect(),
        ),
        DataType::Double => Some(t.double_data.clone()),
        _ => None,
    };
    floats
        .filter(|v| v.len() as i64 == n)
        .map(|v| Value::floats(dt, dims, v))
}

/// (domain, op type) of every node, subgraphs included, but the IR's own.
fn ops_of(g: &ComputeGraph) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    let mut graphs = vec![g.root()];
    graphs.extend_from_slice(g.subgraphs());
    for gid in graphs {
        for n in g.nodes_of(gid) {
            let op = g.op(n).unwrap();
            let t = op.op_type();
            if op_types::is_data(t) || t == op_types::CONST || t == op_types::NET_OUTPUT {
                continue;
            }
            out.insert((
                rge_ops::registry::normalize_domain(op.domain()).to_string(),
                t.to_string(),
            ));
        }
    }
    out
}

enum Outcome {
    Uncovered(Vec<String>),
    ImportFailed(String),
    Pass { partial: bool },
    Disagree(String),
}

/// What an expected output is: kind, element type, dims (None when they vary / are unknown).
/// (kind, element type, dims).
type Expected = (ValueKind, Option<DataType>, Option<Vec<i64>>);

fn expected_output(path: &Path, declared_kind: ValueKind) -> Result<Expected, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let tensor = |t: &TensorProto| (expected_dtype(t.data_type), Some(t.dims.clone()));
    let seq = |s: &SequenceProto| {
        let dt = s
            .tensor_values
            .first()
            .and_then(|t| expected_dtype(t.data_type));
        let first = s.tensor_values.first().map(|t| t.dims.clone());
        let same = s
            .tensor_values
            .iter()
            .all(|t| Some(&t.dims) == first.as_ref());
        (dt, if same { first } else { None })
    };
    Ok(match declared_kind {
        ValueKind::Sequence => {
            let s = SequenceProto::decode(&bytes[..]).map_err(|e| e.to_string())?;
            let (dt, d) = seq(&s);
            (ValueKind::Sequence, dt, d)
        }
        ValueKind::OptionalTensor | ValueKind::OptionalSequence => {
            let o = OptionalProto::decode(&bytes[..]).map_err(|e| e.to_string())?;
            match (&o.tensor_value, &o.sequence_value) {
                (Some(t), _) => {
                    let (dt, d) = tensor(t);
                    (ValueKind::OptionalTensor, dt, d)
                }
                (_, Some(s)) => {
                    let (dt, d) = seq(s);
                    (ValueKind::OptionalSequence, dt, d)
                }
                _ => (declared_kind, None, None),
            }
        }
        ValueKind::Tensor => {
            let t = TensorProto::decode(&bytes[..]).map_err(|e| e.to_string())?;
            let (dt, d) = tensor(&t);
            (ValueKind::Tensor, dt, d)
        }
        // No node test of the default domain has map outputs (the ai.onnx.ml suite does).
        ValueKind::Map(_) | ValueKind::SequenceOfMaps(_) => {
            return Err(format!("{}: a map output", path.display()))
        }
    })
}

fn run_one(dir: &Path, reg: &OpRegistry) -> Outcome {
    let mut model = match rge_formats::onnx::import_file(dir.join("model.onnx")) {
        Ok(m) => m,
        Err(e) => return Outcome::ImportFailed(e.to_string()),
    };
    let opsets: Vec<(String, i64)> = model.opset_imports.clone();
    let missing: Vec<String> = ops_of(&model.graph)
        .into_iter()
        .filter(|(d, t)| {
            let v = opsets
                .iter()
                .find(|(od, _)| rge_ops::registry::normalize_domain(od) == d)
                .map_or(i64::MAX, |o| o.1);
            reg.lookup(d, t, v).is_none()
        })
        .map(|(d, t)| if d.is_empty() { t } else { format!("{d}.{t}") })
        .collect();
    if !missing.is_empty() {
        return Outcome::Uncovered(missing);
    }
    let mut opts = InferOptions::with_opsets(opsets.iter().map(|(d, v)| (d.as_str(), *v)));
    let data = dir.join("test_data_set_0");
    let g = &mut model.graph;
    let inputs: Vec<_> = g.input_nodes(g.root()).to_vec();
    let mut k = 0;
    for n in inputs {
        let op = g.op(n).unwrap();
        if op.op_type() != op_types::DATA {
            continue;
        }
        // Only plain tensors (a sequence or optional input is another message).
        if op
            .output(0)
            .is_none_or(|d| d.dtype() == DataType::Undefined)
        {
            k += 1;
            continue;
        }
        if let Ok(bytes) = std::fs::read(data.join(format!("input_{k}.pb"))) {
            if let Ok(t) = TensorProto::decode(&bytes[..]) {
                if let Some(v) = tensor_value(&t) {
                    opts.input_values.insert(op.name().to_string(), v);
                }
            }
        }
        k += 1;
    }
    if let Err(e) = infer_graph(g, reg, &opts) {
        return Outcome::Disagree(format!("inference failed: {e}"));
    }
    let outs = graph_outputs(g, g.root());
    let mut partial = false;
    for (j, got) in outs.iter().enumerate() {
        let path = data.join(format!("output_{j}.pb"));
        let (kind, dt, dims) = match expected_output(&path, got.kind) {
            Ok(x) => x,
            Err(e) => {
                return Outcome::Disagree(format!(
                    "output {j}: cannot read expected ({e}); inferred kind {:?}",
                    got.kind
                ))
            }
        };
        if kind != got.kind {
            return Outcome::Disagree(format!(
                "output {j}: kind {:?}, expected {kind:?}",
                got.kind
            ));
        }
        if let Some(dt) = dt {
            if dt != got.dtype {
                return Outcome::Disagree(format!(
                    "output {j}: dtype {}, expected {dt}",
                    got.dtype
                ));
            }
        }
        let Some(dims) = dims else {
            continue;
        };
        let Some(gd) = got.dims() else {
            partial = true;
            continue;
        };
        let ok = gd.len() == dims.len() && gd.iter().zip(&dims).all(|(&a, &b)| a == -1 || a == b);
        if !ok {
            return Outcome::Disagree(format!(
                "output {j}: shape {}, expected {:?}",
                got.shape, dims
            ));
        }
        partial |= gd.contains(&-1);
    }
    Outcome::Pass { partial }
}

#[test]
fn onnx_node_tests_inference() {
    let dir = tests_dir();
    if !dir.is_dir() {
        let msg = format!(
            "ONNX node tests not found at {} (run scripts/gen_onnx_node_tests.sh)",
            dir.display()
        );
        if std::env::var_os("CI").is_some() {
            panic!("{msg}; CI must generate them first");
        }
        eprintln!("note: {msg}; skipping");
        return;
    }
    let reg = OpRegistry::builtin();
    let mut names: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("model.onnx").is_file())
        .collect();
    names.sort();
    if let Ok(filter) = std::env::var("RGE_ONNX_NODE_FILTER") {
        names.retain(|p| p.file_name().unwrap().to_string_lossy().contains(&filter));
    }
    let (mut exact, mut partial, mut import_failed) = (0, 0, Vec::new());
    let mut partial_names: Vec<String> = Vec::new();
    let mut disagree: Vec<String> = Vec::new();
    let mut uncovered_ops: BTreeMap<String, usize> = BTreeMap::new();
    let mut uncovered_tests = 0;
    let mut all_ops: BTreeSet<String> = BTreeSet::new();
    let mut covered_ops: BTreeSet<String> = BTreeSet::new();
    for p in &names {
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        // Op types of the test (for the coverage figure), from the raw model.
        let ops = rge_formats::onnx::import_file(p.join("model.onnx"))
            .map(|m| ops_of(&m.graph))
            .unwrap_or_default();
        let labels: Vec<String> = ops
            .iter()
            .map(|(d, t)| {
                if d.is_empty() {
                    t.clone()
                } else {
                    format!("{d}.{t}")
                }
            })
            .collect();
        all_ops.extend(labels.iter().cloned());
        match run_one(p, &reg) {
            Outcome::Uncovered(m) => {
                uncovered_tests += 1;
                for op in m {
                    *uncovered_ops.entry(op).or_default() += 1;
                }
            }
            Outcome::ImportFailed(e) => import_failed.push(format!("{name}: {e}")),
            Outcome::Pass { partial: false } => {
                exact += 1;
                covered_ops.extend(labels);
            }
            Outcome::Pass { partial: true } => {
                partial += 1;
                partial_names.push(name.clone());
                covered_ops.extend(labels);
            }
            Outcome::Disagree(e) => {
                covered_ops.extend(labels);
                disagree.push(format!("{name}: {e}"));
            }
        }
    }
    let registered_ops: BTreeSet<String> = all_ops
        .iter()
        .filter(|o| !uncovered_ops.contains_key(*o))
        .cloned()
        .collect();
    println!(
        "ONNX node tests: {} tests, {} op types",
        names.len(),
        all_ops.len()
    );
    println!(
        "ops registered: {} of {} op types; tests covered: {} ({} exact, {} with unknown dims, {} disagree), uncovered: {uncovered_tests}, import failed: {}",
        registered_ops.len(),
        all_ops.len(),
        exact + partial + disagree.len(),
        exact,
        partial,
        disagree.len(),
        import_failed.len()
    );
    if !uncovered_ops.is_empty() {
        let list: Vec<String> = uncovered_ops
            .iter()
            .map(|(o, n)| format!("{o} ({n})"))
            .collect();
        println!("uncovered ops (tests needing them): {}", list.join(", "));
    }
    if !partial_names.is_empty() {
        println!(
            "with unknown (data-dependent) dims: {}",
            partial_names.join(", ")
        );
    }
    for e in import_failed.iter().take(20) {
        println!("import failed: {e}");
    }
    for d in &disagree {
        println!("DISAGREE {d}");
    }
    assert!(
        disagree.is_empty(),
        "{} covered tests disagree (listed above)",
        disagree.len()
    );
}
