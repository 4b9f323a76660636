//! `TensorProto` ↔ rge `Tensor`.
//!
//! Import: `raw_data` becomes the tensor's `Bytes` (one aligned owned copy for large tensors,
//! `External::own`; a slice of the model buffer for small ones); the typed fields (`float_data`, `int32_data`, `int64_data`, `double_data`, `uint64_data`) are
//! converted to little-endian bytes packed as `raw_data` would be; external data is read from
//! its file. Every length is checked against dims × element size before anything is allocated
//! from it. `string_data` becomes GE's string tensor layout (see [`encode_strings`]).
//! Export writes `raw_data` (a clone of the `Bytes`, no copy) or `string_data`.

use bytes::Bytes;
use rge_ir::{DataType, Shape, Tensor, TensorDesc};

use super::error::{OnnxError, Result};
use super::external::External;
use super::types::{onnx_dtype, set_onnx_dtype};
use crate::onnx_proto::TensorProto;

/// `TensorProto.DataLocation.EXTERNAL`.
const EXTERNAL: i32 = 1;

/// Where a tensor is, for messages: the file and a location such as "initializer `W`".
pub(crate) struct At<'a> {
    pub file: &'a str,
    /// Formatted only for a message: an import passes one per attribute.
    pub at: &'a dyn std::fmt::Display,
}

impl At<'_> {
    pub(crate) fn invalid(&self, msg: impl Into<String>) -> OnnxError {
        OnnxError::Invalid {
            file: self.file.to_string(),
            at: self.at.to_string(),
            msg: msg.into(),
        }
    }
}

/// Converts a `TensorProto` into a tensor (see the module docs).
pub(crate) fn tensor_from_proto(tp: &TensorProto, ext: &mut External, at: &At) -> Result<Tensor> {
    if tp.segment.is_some() {
        return Err(OnnxError::Unsupported {
            file: at.file.to_string(),
            at: at.at.to_string(),
            what: "segmented tensors (TensorProto.segment)".into(),
        });
    }
    let mut desc = TensorDesc::default();
    set_onnx_dtype(&mut desc, tp.data_type).map_err(|m| at.invalid(m))?;
    let dt = desc.dtype();
    if dt == DataType::Undefined {
        return Err(at.invalid("tensor data type is UNDEFINED"));
    }
    if let Some((i, d)) = tp.dims.iter().enumerate().find(|(_, &d)| d < 0) {
        return Err(at.invalid(format!("dim {i} is {d}; tensor dims must be ≥ 0")));
    }
    let shape = Shape::from_slice(&tp.dims);
    let count = shape
        .element_count()
        .map_err(|e| at.invalid(e.to_string()))?
        .expect("dims are known");
    let bytes = shape
        .byte_size(dt)
        .map_err(|e| at.invalid(e.to_string()))?
        .expect("known shape, sized type");
    desc.set_shape(shape);
    let typed = [
        ("float_data", tp.float_data.len()),
        ("int32_data", tp.int32_data.len()),
        ("string_data", tp.string_data.len()),
        ("int64_data", tp.int64_data.len()),
        ("double_data", tp.double_data.len()),
        ("uint64_data", tp.uint64_data.len()),
    ];
    let mut present = typed.iter().filter(|(_, n)| *n > 0).map(|(f, _)| *f);
    let field = present.next();
    if let Some(second) = present.next() {
        return Err(at.invalid(format!(
            "both {} and {second} hold data",
            field.unwrap_or_default()
        )));
    }
    let external = tp.data_location == EXTERNAL;
    if external && (field.is_some() || !tp.raw_data.is_empty()) {
        return Err(at.invalid("external data and inline data are both set"));
    }
    if let (Some(f), false) = (field, tp.raw_data.is_empty()) {
        return Err(at.invalid(format!("both raw_data and {f} hold data")));
    }
    let n = usize::try_from(count).unwrap_or(usize::MAX);
    let data = if dt == DataType::String {
        if external || !tp.raw_data.is_empty() {
            return Err(at.invalid("a STRING tensor must use string_data"));
        }
        if tp.string_data.len() != n {
            return Err(at.invalid(format!(
                "{} strings for {count} elements",
                tp.string_data.len()
            )));
        }
        encode_strings(&tp.string_data)
    } else if external {
        ext.load(tp, bytes, at)?
    } else if let Some(f) = field {
        typed_to_bytes(tp, f, dt, n).map_err(|m| at.invalid(m))?
    } else {
        if usize::try_from(bytes).ok() != Some(tp.raw_data.len()) {
            return Err(at.invalid(format!(
                "raw_data has {} bytes; {count} elements of {dt} need {bytes}",
                tp.raw_data.len()
            )));
        }
        ext.own(&tp.raw_data)
    };
    Ok(Tensor::new(desc, data))
}

fn count_error(field: &str, have: usize, want: usize, dt: DataType) -> String {
    format!("{field} has {have} values; the {dt} tensor needs {want}")
}

/// The typed field `field` (checked non-empty, the only one set) as little-endian bytes.
fn typed_to_bytes(tp: &TensorProto, field: &str, dt: DataType, n: usize) -> Result<Bytes, String> {
    use DataType as D;
    let wrong = || format!("{field} cannot hold a {dt} tensor");
    // Elements per field value: complex types take two.
    let pairs = |k: usize| n.saturating_mul(k);
    macro_rules! le {
        ($v:expr, $want:expr, $t:ty, $conv:expr) => {{
            let v = $v;
            if v.len() != $want {
                return Err(count_error(field, v.len(), $want, dt));
            }
            let mut out = Vec::with_capacity(v.len() * std::mem::size_of::<$t>());
            for &x in v.iter() {
                let y: $t = $conv(x);
                out.extend_from_slice(&y.to_le_bytes());
            }
            Ok(Bytes::from(out))
        }};
    }
    match field {
        "float_data" => match dt {
            D::Float => le!(&tp.float_data, n, f32, |x: f32| x),
            D::Complex64 => le!(&tp.float_data, pairs(2), f32, |x: f32| x),
            _ => Err(wrong()),
        },
        "double_data" => match dt {
            D::Double => le!(&tp.double_data, n, f64, |x: f64| x),
            D::Complex128 => le!(&tp.double_data, pairs(2), f64, |x: f64| x),
            _ => Err(wrong()),
        },
        "int64_data" => match dt {
            D::Int64 => le!(&tp.int64_data, n, i64, |x: i64| x),
            _ => Err(wrong()),
        },
        "uint64_data" => match dt {
            D::Uint64 => le!(&tp.uint64_data, n, u64, |x: u64| x),
            D::Uint32 => {
                if let Some(x) = tp.uint64_data.iter().find(|&&x| x > u64::from(u32::MAX)) {
                    return Err(format!("uint64_data value {x} does not fit DT_UINT32"));
                }
                le!(&tp.uint64_data, n, u32, |x: u64| x as u32)
            }
            _ => Err(wrong()),
        },
        "int32_data" => int32_to_bytes(&tp.int32_data, dt, n).ok_or_else(wrong)?,
        _ => Err(wrong()),
    }
}

/// `int32_data` → bytes: one element per value for types of a byte or more (truncated to the
/// element width), one packed byte per value for 4-bit (2 elements) and 2-bit (4 elements)
/// types, one 6-bit element per value for the 6-bit floats (packed LSB first). `None` when the
/// field cannot hold `dt`.
fn int32_to_bytes(v: &[i32], dt: DataType, n: usize) -> Option<Result<Bytes, String>> {
    use DataType as D;
    let check = |want: usize| {
        if v.len() == want {
            Ok(())
        } else {
            Err(count_error("int32_data", v.len(), want, dt))
        }
    };
    let bytes: Vec<u8> = match dt {
        D::Int32 => {
            if let Err(e) = check(n) {
                return Some(Err(e));
            }
            v.iter().flat_map(|x| x.to_le_bytes()).collect()
        }
        D::Int16 | D::Uint16 | D::Float16 | D::Bf16 => {
            if let Err(e) = check(n) {
                return Some(Err(e));
            }
            v.iter().flat_map(|&x| (x as u16).to_le_bytes()).collect()
        }
        D::Int8
        | D::Uint8
        | D::Bool
        | D::Float8E4M3Fn
        | D::Float8E4M3Fnuz
        | D::Float8E5M2
        | D::Float8E5M2Fnuz
        | D::Float8E8M0 => {
            if let Err(e) = check(n) {
                return Some(Err(e));
            }
            v.iter().map(|&x| x as u8).collect()
        }
        D::Int4 | D::Uint4 | D::Float4E2M1 | D::Int2 | D::Uint2 => {
            let per = if dt.bits() == Some(2) { 4 } else { 2 };
            if let Err(e) = check(n.div_ceil(per)) {
                return Some(Err(e));
            }
            v.iter().map(|&x| x as u8).collect()
        }
        D::Float6E2M3 | D::Float6E3M2 => {
            if let Err(e) = check(n) {
                return Some(Err(e));
            }
            let mut out = vec![0u8; (n * 6).div_ceil(8)];
            for (i, &x) in v.iter().enumerate() {
                let bits = (x as u32 & 0x3f) << ((i * 6) % 8);
                let b = i * 6 / 8;
                out[b] |= bits as u8;
                if bits > 0xff {
                    out[b + 1] |= (bits >> 8) as u8;
                }
            }
            out
        }
        _ => return None,
    };
    Some(Ok(Bytes::from(bytes)))
}

/// GE's string tensor layout ([`rge_ir::string_data`]) as shared bytes.
pub fn encode_strings(strings: &[Bytes]) -> Bytes {
    Bytes::from(rge_ir::string_data::encode_strings(strings))
}

/// Reads `n` strings in the layout of [`encode_strings`], checking every head.
pub fn decode_strings(data: &Bytes, n: usize) -> Result<Vec<Bytes>, String> {
    Ok(rge_ir::string_data::string_ranges(data, n)?
        .into_iter()
        .map(|r| data.slice(r))
        .collect())
}

/// The `TensorProto` of a tensor, named `name`: `raw_data` (shares the tensor's bytes) or
/// `string_data`. The shape must be fully known and the data must fit it.
pub(crate) fn tensor_to_proto(t: &Tensor, name: &str) -> Result<TensorProto, String> {
    let dt = t.desc.dtype();
    let data_type = onnx_dtype(&t.desc).ok_or_else(|| format!("{dt} has no ONNX type"))?;
    let shape = t.desc.shape();
    if !shape.is_fully_known() {
        return Err(format!("tensor shape {shape} is not fully known"));
    }
    let mut tp = TensorProto {
        dims: shape.dims().to_vec(),
        data_type,
        name: name.to_string(),
        ..Default::default()
    };
    if matches!(dt, DataType::String | DataType::StringRef) {
        let n = shape
            .element_count()
            .ok()
            .flatten()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| format!("string tensor shape {shape} is too large"))?;
        tp.string_data = decode_strings(&t.data, n)?;
    } else {
        t.validate().map_err(|e| e.to_string())?;
        tp.raw_data = t.data.clone();
    }
    Ok(tp)
}
