//! Node-test folders and their value files (`TensorProto`, `SequenceProto`, `OptionalProto`,
//! `MapProto`).

use std::path::{Path, PathBuf};

use prost::Message;
use rge_formats::onnx::{self, names, OnnxModel};
use rge_formats::onnx_proto::{type_proto, TensorProto, TypeProto};
use rge_ir::{op_types, AttrValue, TensorDesc};
use rge_kernels::{tensor_from_ir, DType, MapValue, Tensor, TensorData, Value};

/// ONNX `SequenceProto` (onnx-data.proto, which rge-formats does not build).
#[derive(Clone, PartialEq, prost::Message)]
pub struct SequenceProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int32, tag = "2")]
    pub elem_type: i32,
    #[prost(message, repeated, tag = "3")]
    pub tensor_values: Vec<TensorProto>,
    #[prost(message, repeated, tag = "6")]
    pub map_values: Vec<MapProto>,
}

/// ONNX `MapProto`: int64 or string keys, the values a sequence of scalar tensors.
#[derive(Clone, PartialEq, prost::Message)]
pub struct MapProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int32, tag = "2")]
    pub key_type: i32,
    #[prost(int64, repeated, tag = "3")]
    pub keys: Vec<i64>,
    #[prost(bytes = "vec", repeated, tag = "4")]
    pub string_keys: Vec<Vec<u8>>,
    #[prost(message, optional, tag = "5")]
    pub values: Option<SequenceProto>,
}

/// ONNX `OptionalProto`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OptionalProto {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(int32, tag = "2")]
    pub elem_type: i32,
    #[prost(message, optional, tag = "3")]
    pub tensor_value: Option<TensorProto>,
    #[prost(message, optional, tag = "5")]
    pub sequence_value: Option<SequenceProto>,
}

/// What kind of value a graph input or output holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Tensor,
    /// A sequence of tensors of the given ONNX element type (0: unknown).
    Sequence(i32),
    /// An optional of the inner kind.
    Optional(Box<Kind>),
    /// A map (ai.onnx.ml).
    Map,
    /// A sequence of maps (ZipMap's output).
    MapSequence,
}

fn kind_of_type(tp: &TypeProto) -> Kind {
    match &tp.value {
        Some(type_proto::Value::MapType(_)) => Kind::Map,
        Some(type_proto::Value::SequenceType(s))
            if matches!(
                s.elem_type.as_deref().and_then(|t| t.value.as_ref()),
                Some(type_proto::Value::MapType(_))
            ) =>
        {
            Kind::MapSequence
        }
        Some(type_proto::Value::SequenceType(s)) => {
            let elem = s
                .elem_type
                .as_deref()
                .and_then(|t| match &t.value {
                    Some(type_proto::Value::TensorType(tt)) => Some(tt.elem_type),
                    _ => None,
                })
                .unwrap_or(0);
            Kind::Sequence(elem)
        }
        Some(type_proto::Value::OptionalType(o)) => Kind::Optional(Box::new(
            o.elem_type.as_deref().map_or(Kind::Tensor, kind_of_type),
        )),
        _ => Kind::Tensor,
    }
}

/// The value kind a desc describes (the ONNX frontend keeps non-tensor `TypeProto`s).
pub fn kind_of_desc(desc: &TensorDesc) -> Kind {
    match desc.attrs().get(names::ONNX_TYPE) {
        Some(AttrValue::Bytes(b)) => TypeProto::decode(&b[..])
            .map(|tp| kind_of_type(&tp))
            .unwrap_or(Kind::Tensor),
        _ => Kind::Tensor,
    }
}

/// A runtime tensor from a decoded `TensorProto`.
pub fn tensor_from_proto(tp: &TensorProto, origin: &str) -> Result<Tensor, String> {
    let t = onnx::tensor_from_proto(tp, origin).map_err(|e| e.to_string())?;
    tensor_from_ir(&t).map_err(|e| format!("{origin}: {e}"))
}

fn sequence_from_proto(s: &SequenceProto, origin: &str) -> Result<Value, String> {
    let items = s
        .tensor_values
        .iter()
        .map(|t| tensor_from_proto(t, origin))
        .collect::<Result<Vec<_>, _>>()?;
    let elem = items
        .first()
        .map(|t| t.dtype())
        .or_else(|| DType::from_onnx(s.elem_type))
        .or_else(|| DType::from_onnx(s.tensor_values.first().map_or(0, |t| t.data_type)))
        .unwrap_or(DType::Float);
    Ok(Value::Sequence { elem, items })
}

/// A map from its `MapProto`: keys int64 or string, values one scalar tensor each.
fn map_from_proto(m: &MapProto, origin: &str) -> Result<MapValue, String> {
    let keys = match DType::from_onnx(m.key_type) {
        Some(DType::String) => Tensor::from_strings(
            &[m.string_keys.len()],
            m.string_keys
                .iter()
                .map(|k| String::from_utf8_lossy(k).into_owned())
                .collect(),
        ),
        Some(DType::Int64) => Tensor::from_vec(&[m.keys.len()], m.keys.clone()),
        _ => {
            return Err(format!(
                "{origin}: map key type {} (int64 and string keys are supported)",
                m.key_type
            ))
        }
    }
    .map_err(|e| format!("{origin}: {e}"))?;
    let items = m.values.as_ref().map_or(&[][..], |v| &v.tensor_values[..]);
    let scalars = items
        .iter()
        .map(|t| tensor_from_proto(t, origin))
        .collect::<Result<Vec<_>, _>>()?;
    let values = concat_scalars(&scalars).map_err(|e| format!("{origin}: map values: {e}"))?;
    MapValue::new(keys, values).map_err(|e| format!("{origin}: {e}"))
}

/// One 1-D tensor of scalar tensors of one dtype.
fn concat_scalars(items: &[Tensor]) -> Result<Tensor, String> {
    let Some(first) = items.first() else {
        return Tensor::from_vec::<f32>(&[0], Vec::new()).map_err(|e| e.to_string());
    };
    if items
        .iter()
        .any(|t| t.len() != 1 || t.dtype() != first.dtype())
    {
        return Err("not scalars of one type".into());
    }
    let t = match first.data() {
        TensorData::Strings(_) => Tensor::from_strings(
            &[items.len()],
            items
                .iter()
                .map(|t| t.view().as_strings().map(|s| s[0].clone()))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?,
        ),
        _ => {
            let mut bytes = Vec::new();
            for t in items {
                bytes.extend_from_slice(t.view().bytes().map_err(|e| e.to_string())?);
            }
            Tensor::from_bytes(first.dtype(), &[items.len()], &bytes)
        }
    };
    t.map_err(|e| e.to_string())
}

/// Reads a value file of the given kind.
pub fn read_value(path: &Path, kind: &Kind) -> Result<Value, String> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("{origin}: {e}"))?;
    let decode_err = |e: prost::DecodeError| format!("{origin}: {e}");
    match kind {
        Kind::Tensor => {
            let tp = TensorProto::decode(&bytes[..]).map_err(decode_err)?;
            tensor_from_proto(&tp, &origin).map(Value::Tensor)
        }
        Kind::Sequence(_) => {
            let s = SequenceProto::decode(&bytes[..]).map_err(decode_err)?;
            sequence_from_proto(&s, &origin)
        }
        Kind::Optional(_) => {
            let o = OptionalProto::decode(&bytes[..]).map_err(decode_err)?;
            let inner = match (&o.tensor_value, &o.sequence_value) {
                (Some(t), _) => Some(Box::new(Value::Tensor(tensor_from_proto(t, &origin)?))),
                (_, Some(s)) => Some(Box::new(sequence_from_proto(s, &origin)?)),
                _ => None,
            };
            Ok(Value::Optional(inner))
        }
        Kind::Map => {
            let m = MapProto::decode(&bytes[..]).map_err(decode_err)?;
            map_from_proto(&m, &origin).map(Value::Map)
        }
        Kind::MapSequence => {
            let s = SequenceProto::decode(&bytes[..]).map_err(decode_err)?;
            let items = s
                .map_values
                .iter()
                .map(|m| map_from_proto(m, &origin))
                .collect::<Result<Vec<_>, _>>()?;
            let (key, value) = items.first().map_or((DType::Int64, DType::Float), |m| {
                (m.keys().dtype(), m.values().dtype())
            });
            Ok(Value::MapSequence { key, value, items })
        }
    }
}

/// One `test_data_set_*` folder.
#[derive(Debug, Clone)]
pub struct TestDataSet {
    pub inputs: Vec<Value>,
    pub outputs: Vec<Value>,
}

/// A loaded node test.
pub struct NodeTest {
    pub name: String,
    pub dir: PathBuf,
    pub model: OnnxModel,
    pub data_sets: Vec<TestDataSet>,
}

/// The kinds of the graph's inputs (Data nodes in input order) and outputs (NetOutput inputs).
pub fn io_kinds(model: &OnnxModel) -> (Vec<Kind>, Vec<Kind>) {
    let g = &model.graph;
    let root = g.root();
    let inputs = g
        .input_nodes(root)
        .iter()
        .filter_map(|&n| g.op(n))
        .filter(|op| op_types::is_data(op.op_type()))
        .map(|op| op.output(0).map_or(Kind::Tensor, kind_of_desc))
        .collect();
    let outputs = g
        .net_output(root)
        .and_then(|n| g.op(n))
        .map(|op| {
            (0..op.input_count())
                .map(|i| op.input(i).map_or(Kind::Tensor, kind_of_desc))
                .collect()
        })
        .unwrap_or_default();
    (inputs, outputs)
}

fn numbered(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<(usize, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let k = name
                .strip_prefix(prefix)?
                .strip_suffix(".pb")?
                .parse()
                .ok()?;
            Some((k, e.path()))
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, p)| p).collect()
}

/// Loads a node-test folder: the model and every data set. Errors name the file at fault.
pub fn load_test(dir: &Path) -> Result<NodeTest, String> {
    let name = dir.file_name().map_or_else(
        || dir.display().to_string(),
        |n| n.to_string_lossy().to_string(),
    );
    let model_path = dir.join("model.onnx");
    if !model_path.is_file() {
        return Err(format!("{}: missing", model_path.display()));
    }
    let model = onnx::import_file(&model_path).map_err(|e| e.to_string())?;
    let (in_kinds, out_kinds) = io_kinds(&model);
    let mut sets: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("test_data_set_")
        })
        .map(|e| e.path())
        .collect();
    sets.sort();
    if sets.is_empty() {
        return Err(format!("{}: no test_data_set_* folder", dir.display()));
    }
    let mut data_sets = Vec::new();
    for set in sets {
        let ins = numbered(&set, "input_");
        let outs = numbered(&set, "output_");
        if ins.len() > in_kinds.len() {
            return Err(format!(
                "{}: {} inputs, the model has {}",
                set.display(),
                ins.len(),
                in_kinds.len()
            ));
        }
        if outs.len() != out_kinds.len() {
            return Err(format!(
                "{}: {} expected outputs, the model has {}",
                set.display(),
                outs.len(),
                out_kinds.len()
            ));
        }
        let inputs = ins
            .iter()
            .zip(&in_kinds)
            .map(|(p, k)| read_value(p, k))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = outs
            .iter()
            .zip(&out_kinds)
            .map(|(p, k)| read_value(p, k))
            .collect::<Result<Vec<_>, _>>()?;
        data_sets.push(TestDataSet { inputs, outputs });
    }
    Ok(NodeTest {
        name,
        dir: dir.to_path_buf(),
        model,
        data_sets,
    })
}
