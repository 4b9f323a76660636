//! ONNX element types and `TypeProto`s ↔ rge `DataType`s and `TensorDesc`s.

use bytes::Bytes;
use prost::Message;
use rge_ir::{AttrValue, DataType, Shape, TensorDesc, UNKNOWN_DIM};

use super::names;
use crate::onnx_proto::tensor_shape_proto::{dimension, Dimension};
use crate::onnx_proto::{type_proto, TensorShapeProto, TypeProto};

/// The rge type for ONNX data type `v`; `None` for values outside the ONNX enum. Every ONNX
/// type has its own rge type.
pub(crate) fn dtype_from_onnx(v: i32) -> Option<DataType> {
    use DataType as D;
    Some(match v {
        0 => D::Undefined,
        1 => D::Float,
        2 => D::Uint8,
        3 => D::Int8,
        4 => D::Uint16,
        5 => D::Int16,
        6 => D::Int32,
        7 => D::Int64,
        8 => D::String,
        9 => D::Bool,
        10 => D::Float16,
        11 => D::Double,
        12 => D::Uint32,
        13 => D::Uint64,
        14 => D::Complex64,
        15 => D::Complex128,
        16 => D::Bf16,
        17 => D::Float8E4M3Fn,
        18 => D::Float8E4M3Fnuz,
        19 => D::Float8E5M2,
        20 => D::Float8E5M2Fnuz,
        21 => D::Uint4,
        22 => D::Int4,
        23 => D::Float4E2M1,
        24 => D::Float8E8M0,
        25 => D::Uint2,
        26 => D::Int2,
        27 => D::Float6E2M3,
        28 => D::Float6E3M2,
        _ => return None,
    })
}

/// The ONNX data type of an rge type, `None` where ONNX has none.
pub(crate) fn dtype_to_onnx(dt: DataType) -> Option<i32> {
    use DataType as D;
    Some(match dt {
        D::Undefined => 0,
        D::Float => 1,
        D::Uint8 => 2,
        D::Int8 => 3,
        D::Uint16 => 4,
        D::Int16 => 5,
        D::Int32 => 6,
        D::Int64 => 7,
        D::String => 8,
        D::Bool => 9,
        D::Float16 => 10,
        D::Double => 11,
        D::Uint32 => 12,
        D::Uint64 => 13,
        D::Complex64 => 14,
        D::Complex128 => 15,
        D::Bf16 => 16,
        D::Float8E4M3Fn => 17,
        D::Float8E4M3Fnuz => 18,
        D::Float8E5M2 => 19,
        D::Float8E5M2Fnuz => 20,
        D::Uint4 => 21,
        D::Int4 => 22,
        D::Float4E2M1 => 23,
        D::Float8E8M0 => 24,
        D::Uint2 => 25,
        D::Int2 => 26,
        D::Float6E2M3 => 27,
        D::Float6E3M2 => 28,
        _ => return None,
    })
}

/// Sets `desc`'s data type from ONNX value `v`; errors on unknown values.
pub(crate) fn set_onnx_dtype(desc: &mut TensorDesc, v: i32) -> Result<(), String> {
    let dt = dtype_from_onnx(v).ok_or_else(|| format!("unknown ONNX data type {v}"))?;
    desc.set_dtype(dt);
    Ok(())
}

/// The ONNX data type of `desc`.
pub(crate) fn onnx_dtype(desc: &TensorDesc) -> Option<i32> {
    dtype_to_onnx(desc.dtype())
}

/// Applies a `TensorShapeProto` to `desc`: no shape is an unknown rank (`[-2]`), a dim with a
/// `dim_param` or no value is -1 (the symbols go to `_onnx_dim_params`), a dim below -1 is an
/// error.
fn set_shape(desc: &mut TensorDesc, shape: Option<&TensorShapeProto>) -> Result<(), String> {
    let Some(shape) = shape else {
        desc.set_shape(Shape::unknown_rank());
        return Ok(());
    };
    let mut dims = Vec::with_capacity(shape.dim.len());
    let mut params: Vec<String> = Vec::new();
    for (i, d) in shape.dim.iter().enumerate() {
        let (v, p) = match &d.value {
            Some(dimension::Value::DimValue(v)) if *v >= UNKNOWN_DIM => (*v, ""),
            Some(dimension::Value::DimValue(v)) => {
                return Err(format!("dim {i} is {v} (dims must be ≥ -1)"))
            }
            Some(dimension::Value::DimParam(p)) => (UNKNOWN_DIM, p.as_str()),
            None => (UNKNOWN_DIM, ""),
        };
        if !p.is_empty() {
            params.resize(i, String::new());
            params.push(p.to_string());
        }
        dims.push(v);
    }
    if !params.is_empty() {
        params.resize(dims.len(), String::new());
        desc.attrs_mut().set(names::DIM_PARAMS, params);
    }
    desc.set_shape(Shape::new(dims));
    Ok(())
}

/// The desc a `TypeProto` describes. Tensor types map to dtype and shape; any other type
/// (sequence, map, optional, sparse, opaque) leaves the desc undefined and keeps the encoded
/// `TypeProto` in `_onnx_type` so that export restores it.
pub(crate) fn desc_from_type(tp: Option<&TypeProto>) -> Result<TensorDesc, String> {
    let mut desc = TensorDesc::default();
    let Some(tp) = tp else {
        return Ok(desc);
    };
    match &tp.value {
        Some(type_proto::Value::TensorType(t)) => {
            set_onnx_dtype(&mut desc, t.elem_type)?;
            set_shape(&mut desc, t.shape.as_ref())?;
        }
        _ => {
            desc.attrs_mut()
                .set(names::ONNX_TYPE, AttrValue::Bytes(tp.encode_to_vec()));
        }
    }
    Ok(desc)
}

/// The `TypeProto` of `desc`, `None` for a desc that says nothing (undefined type, scalar shape,
/// no symbols): the reverse of [`desc_from_type`].
pub(crate) fn type_from_desc(desc: &TensorDesc) -> Option<TypeProto> {
    if let Ok(Some(b)) = desc.attrs().get_as::<&[u8]>(names::ONNX_TYPE) {
        return TypeProto::decode(Bytes::copy_from_slice(b)).ok();
    }
    let params: &[String] = desc
        .attrs()
        .get_as(names::DIM_PARAMS)
        .ok()
        .flatten()
        .unwrap_or(&[]);
    let shape = desc.shape();
    if desc.dtype() == DataType::Undefined && shape.is_scalar() {
        return None;
    }
    let shape = if shape.is_unknown_rank() {
        None
    } else {
        Some(TensorShapeProto {
            dim: shape
                .dims()
                .iter()
                .enumerate()
                .map(|(i, &d)| {
                    let value = match params.get(i).filter(|p| !p.is_empty()) {
                        Some(p) => Some(dimension::Value::DimParam(p.clone())),
                        None if d >= 0 => Some(dimension::Value::DimValue(d)),
                        None => None,
                    };
                    Dimension {
                        value,
                        ..Default::default()
                    }
                })
                .collect(),
        })
    };
    Some(TypeProto {
        value: Some(type_proto::Value::TensorType(type_proto::Tensor {
            elem_type: onnx_dtype(desc).unwrap_or(0),
            shape,
        })),
        ..Default::default()
    })
}
