//! ONNX `AttributeProto` ↔ rge `AttrValue`.
//!
//! | ONNX | rge |
//! |---|---|
//! | FLOAT, INT | `Float`, `Int` |
//! | STRING | `String` (UTF-8) or `Bytes` (not UTF-8) |
//! | TENSOR | `Tensor` |
//! | GRAPH, GRAPHS | subgraphs of the node (not attributes), see `import` |
//! | FLOATS, INTS | `ListFloat`, `ListInt` |
//! | STRINGS | `ListString` (all UTF-8) or `ListBytes` |
//! | TENSORS | `ListTensor` |
//! | SPARSE_TENSOR(S) | `NamedAttrs` `onnx.SparseTensorProto` {values, indices, dims} (list of) |
//! | TYPE_PROTO(S) | `TensorDesc` for tensor types, else `NamedAttrs` `onnx.TypeProto` {bytes} (list of) |
//!
//! Export maps back; `Bool`/`ListBool` and `DataType`/`ListDataType` (as ONNX type numbers)
//! become INT/INTS; kinds ONNX cannot hold (graph values, list of lists, other named bundles,
//! tensor descs lists mixed with bundles) are left out.

use bytes::Bytes;
use prost::Message;
use rge_ir::{AttrValue, NamedAttrs, Tensor, TensorDesc};

use super::error::Result;
use super::external::External;
use super::names;
use super::tensor::{tensor_from_proto, tensor_to_proto, At};
use super::types::{desc_from_type, dtype_to_onnx, type_from_desc};
use crate::onnx_proto::attribute_proto::AttributeType as T;
use crate::onnx_proto::{type_proto, AttributeProto, GraphProto, SparseTensorProto, TypeProto};

/// An imported attribute: a value, or body graphs that become subgraphs.
pub(crate) enum Imported<'p> {
    Value(AttrValue),
    Graphs(Vec<&'p GraphProto>, bool),
}

/// The attribute's type; for IR 0.0.1 files without `type`, guessed from the field in use.
fn attr_type(a: &AttributeProto) -> Option<T> {
    if a.r#type != 0 {
        return T::try_from(a.r#type).ok();
    }
    Some(if !a.floats.is_empty() {
        T::Floats
    } else if !a.ints.is_empty() {
        T::Ints
    } else if !a.strings.is_empty() {
        T::Strings
    } else if !a.tensors.is_empty() {
        T::Tensors
    } else if !a.graphs.is_empty() {
        T::Graphs
    } else if a.t.is_some() {
        T::Tensor
    } else if a.g.is_some() {
        T::Graph
    } else if a.sparse_tensor.is_some() {
        T::SparseTensor
    } else if a.tp.is_some() {
        T::TypeProto
    } else if !a.s.is_empty() {
        T::String
    } else if a.i != 0 {
        T::Int
    } else if a.f != 0.0 {
        T::Float
    } else {
        return None;
    })
}

fn string_value(b: &Bytes) -> Result<String, Vec<u8>> {
    std::str::from_utf8(b)
        .map(str::to_string)
        .map_err(|_| b.to_vec())
}

fn tensor(t: &crate::onnx_proto::TensorProto, ext: &mut External, at: &At) -> Result<Tensor> {
    tensor_from_proto(t, ext, at)
}

/// A sparse tensor as a named bundle (its values and indices are checked tensors).
pub(crate) fn sparse_from_proto(
    sp: &SparseTensorProto,
    ext: &mut External,
    at: &At,
) -> Result<NamedAttrs> {
    let values = sp
        .values
        .as_ref()
        .ok_or_else(|| at.invalid("sparse tensor without values"))?;
    let indices = sp
        .indices
        .as_ref()
        .ok_or_else(|| at.invalid("sparse tensor without indices"))?;
    if let Some(d) = sp.dims.iter().find(|&&d| d < 0) {
        return Err(at.invalid(format!("sparse tensor dim {d} is negative")));
    }
    let mut na = NamedAttrs::new(names::SPARSE_TENSOR);
    na.attrs.set("values", tensor(values, ext, at)?);
    na.attrs.set("indices", tensor(indices, ext, at)?);
    na.attrs.set("dims", sp.dims.clone());
    Ok(na)
}

fn type_bundle(tp: &TypeProto) -> NamedAttrs {
    let mut na = NamedAttrs::new(names::TYPE_PROTO);
    na.attrs.set("bytes", tp.encode_to_vec());
    na
}

fn is_tensor_type(tp: &TypeProto) -> bool {
    matches!(tp.value, Some(type_proto::Value::TensorType(_)))
}

/// Converts one attribute. GRAPH and GRAPHS come back as `Imported::Graphs` (the flag is true
/// for GRAPHS).
pub(crate) fn attr_from_proto<'p>(
    a: &'p AttributeProto,
    ext: &mut External,
    at: &At,
) -> Result<Imported<'p>> {
    let ty =
        attr_type(a).ok_or_else(|| at.invalid(format!("attribute `{}` has no type", a.name)))?;
    let missing = || at.invalid(format!("attribute `{}` ({ty:?}) has no value", a.name));
    let desc = |tp: &TypeProto| desc_from_type(Some(tp)).map_err(|m| at.invalid(m));
    let v = match ty {
        T::Undefined => return Err(missing()),
        T::Float => AttrValue::Float(a.f),
        T::Int => AttrValue::Int(a.i),
        T::String => match string_value(&a.s) {
            Ok(s) => AttrValue::String(s),
            Err(b) => AttrValue::Bytes(b),
        },
        T::Tensor => tensor(a.t.as_ref().ok_or_else(missing)?, ext, at)?.into(),
        T::Graph => {
            return Ok(Imported::Graphs(
                vec![a.g.as_ref().ok_or_else(missing)?],
                false,
            ))
        }
        T::Graphs => return Ok(Imported::Graphs(a.graphs.iter().collect(), true)),
        T::Floats => AttrValue::ListFloat(a.floats.clone()),
        T::Ints => AttrValue::ListInt(a.ints.clone()),
        T::Strings => {
            let strs: Result<Vec<String>, _> = a.strings.iter().map(string_value).collect();
            match strs {
                Ok(s) => AttrValue::ListString(s),
                Err(_) => AttrValue::ListBytes(a.strings.iter().map(|b| b.to_vec()).collect()),
            }
        }
        T::Tensors => AttrValue::ListTensor(
            a.tensors
                .iter()
                .map(|t| tensor(t, ext, at))
                .collect::<Result<_>>()?,
        ),
        T::SparseTensor => {
            sparse_from_proto(a.sparse_tensor.as_ref().ok_or_else(missing)?, ext, at)?.into()
        }
        T::SparseTensors => AttrValue::ListNamedAttrs(
            a.sparse_tensors
                .iter()
                .map(|s| sparse_from_proto(s, ext, at))
                .collect::<Result<_>>()?,
        ),
        T::TypeProto => {
            let tp = a.tp.as_ref().ok_or_else(missing)?;
            if is_tensor_type(tp) {
                desc(tp)?.into()
            } else {
                type_bundle(tp).into()
            }
        }
        T::TypeProtos => {
            if a.type_protos.iter().all(is_tensor_type) {
                AttrValue::ListTensorDesc(a.type_protos.iter().map(desc).collect::<Result<_>>()?)
            } else {
                AttrValue::ListNamedAttrs(a.type_protos.iter().map(type_bundle).collect())
            }
        }
    };
    Ok(Imported::Value(v))
}

fn sparse_to_proto(na: &NamedAttrs) -> Result<SparseTensorProto, String> {
    let t = |k: &str| -> Result<_, String> {
        let t: &Tensor = na
            .attrs
            .get_as(k)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("sparse tensor without `{k}`"))?;
        tensor_to_proto(t, "")
    };
    let mut values = t("values")?;
    values.name.clear();
    Ok(SparseTensorProto {
        values: Some(values),
        indices: Some(t("indices")?),
        dims: na
            .attrs
            .get_list_int("dims")
            .map_err(|e| e.to_string())?
            .unwrap_or(&[])
            .to_vec(),
    })
}

fn type_to_proto(d: &TensorDesc) -> TypeProto {
    type_from_desc(d).unwrap_or_else(|| TypeProto {
        value: Some(type_proto::Value::TensorType(type_proto::Tensor {
            elem_type: 0,
            shape: Some(Default::default()),
        })),
        ..Default::default()
    })
}

fn bundle_type(na: &NamedAttrs) -> Option<TypeProto> {
    let b: &[u8] = na.attrs.get_as("bytes").ok().flatten()?;
    TypeProto::decode(b).ok()
}

/// The ONNX attribute for `(name, v)`; `None` for values ONNX cannot hold.
pub(crate) fn attr_to_proto(name: &str, v: &AttrValue) -> Result<Option<AttributeProto>, String> {
    let mut a = AttributeProto {
        name: name.to_string(),
        ..Default::default()
    };
    let ty = match v {
        AttrValue::Int(i) => {
            a.i = *i;
            T::Int
        }
        AttrValue::Bool(b) => {
            a.i = i64::from(*b);
            T::Int
        }
        AttrValue::DataType(dt) => match dtype_to_onnx(*dt) {
            Some(x) => {
                a.i = i64::from(x);
                T::Int
            }
            None => return Ok(None),
        },
        AttrValue::Float(f) => {
            a.f = *f;
            T::Float
        }
        AttrValue::String(s) => {
            a.s = Bytes::copy_from_slice(s.as_bytes());
            T::String
        }
        AttrValue::Bytes(b) => {
            a.s = Bytes::copy_from_slice(b);
            T::String
        }
        AttrValue::Tensor(t) => {
            a.t = Some(tensor_to_proto(t, "")?);
            T::Tensor
        }
        AttrValue::TensorDesc(d) => {
            a.tp = Some(type_to_proto(d));
            T::TypeProto
        }
        AttrValue::NamedAttrs(na) if na.name == names::SPARSE_TENSOR => {
            a.sparse_tensor = Some(sparse_to_proto(na)?);
            T::SparseTensor
        }
        AttrValue::NamedAttrs(na) if na.name == names::TYPE_PROTO => match bundle_type(na) {
            Some(tp) => {
                a.tp = Some(tp);
                T::TypeProto
            }
            None => return Ok(None),
        },
        AttrValue::ListInt(v) => {
            a.ints = v.clone();
            T::Ints
        }
        AttrValue::ListBool(v) => {
            a.ints = v.iter().map(|&b| i64::from(b)).collect();
            T::Ints
        }
        AttrValue::ListDataType(v) => {
            let ints: Option<Vec<i64>> =
                v.iter().map(|&d| dtype_to_onnx(d).map(i64::from)).collect();
            match ints {
                Some(ints) => a.ints = ints,
                None => return Ok(None),
            }
            T::Ints
        }
        AttrValue::ListFloat(v) => {
            a.floats = v.clone();
            T::Floats
        }
        AttrValue::ListString(v) => {
            a.strings = v
                .iter()
                .map(|s| Bytes::copy_from_slice(s.as_bytes()))
                .collect();
            T::Strings
        }
        AttrValue::ListBytes(v) => {
            a.strings = v.iter().map(|s| Bytes::copy_from_slice(s)).collect();
            T::Strings
        }
        AttrValue::ListTensor(v) => {
            a.tensors = v
                .iter()
                .map(|t| tensor_to_proto(t, ""))
                .collect::<Result<_, _>>()?;
            T::Tensors
        }
        AttrValue::ListTensorDesc(v) => {
            a.type_protos = v.iter().map(type_to_proto).collect();
            T::TypeProtos
        }
        AttrValue::ListNamedAttrs(v) if v.iter().all(|n| n.name == names::SPARSE_TENSOR) => {
            a.sparse_tensors = v.iter().map(sparse_to_proto).collect::<Result<_, _>>()?;
            T::SparseTensors
        }
        AttrValue::ListNamedAttrs(v) if v.iter().all(|n| n.name == names::TYPE_PROTO) => {
            match v.iter().map(bundle_type).collect::<Option<Vec<_>>>() {
                Some(tps) => a.type_protos = tps,
                None => return Ok(None),
            }
            T::TypeProtos
        }
        _ => return Ok(None),
    };
    a.r#type = ty as i32;
    Ok(Some(a))
}
