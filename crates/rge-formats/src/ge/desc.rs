//! `TensorDescriptor` ↔ `TensorDesc` and `TensorDef` ↔ `Tensor` (reference §2, §7.3).
//!
//! Reading follows GE's priorities: `format_for_int` over `layout`, `origin_format_for_int`
//! over `origin_format`, the legacy `__tensor_desc_data_type__` over `dtype`, and the legacy
//! ext attrs (`size`, `weight_size`, `reuse_input`, …) over the ext fields. The attrs that map
//! to TensorDesc fields are taken out of the attribute map; the writer derives them again.

use bytes::Bytes;
use rge_ir::{AttrValue, DataType, DeviceType, Format, Shape, ShapeRange, Tensor, TensorDesc};

use super::attr::utf8;
use super::entries::{Entries, Entry};
use super::error::{fault, Fault, Within};
use super::keys::*;
use super::reader::Reader;
use super::writer::Writer;
use crate::ge_proto::attr_def::Value as V;
use crate::ge_proto::{AttrDef, ShapeDef, TensorDef, TensorDescriptor};

/// A declared tensor without data may describe at most this many bytes (64 GiB); a larger one
/// is taken for a corrupt shape.
pub const MAX_DATALESS_TENSOR_BYTES: i64 = 1 << 36;

/// Checks dims: each is ≥ 0 or -1 (unknown), or the shape is exactly `[-2]` (unknown rank) or
/// `[-3]` (GE's dummy shape).
pub(crate) fn check_dims(dims: &[i64]) -> Result<(), Fault> {
    if let [d] = dims {
        if *d == -2 || *d == -3 {
            return Ok(());
        }
    }
    match dims.iter().position(|&d| d < -1) {
        Some(i) => Err(fault(format!(
            "dim {i} is {} (dims must be >= -1, or the shape exactly [-2] or [-3])",
            dims[i]
        ))),
        None => Ok(()),
    }
}

fn get<'a>(td: &'a TensorDescriptor, key: &str) -> Option<&'a V> {
    td.attr.get(key).and_then(|a| a.value.as_ref())
}

fn get_i(td: &TensorDescriptor, key: &str) -> Option<i64> {
    match get(td, key) {
        Some(V::I(i)) => Some(*i),
        _ => None,
    }
}

fn get_s<'a>(td: &'a TensorDescriptor, key: &str) -> Option<&'a Bytes> {
    match get(td, key) {
        Some(V::S(s)) => Some(s),
        _ => None,
    }
}

fn get_b(td: &TensorDescriptor, key: &str) -> Option<bool> {
    match get(td, key) {
        Some(V::B(b)) => Some(*b),
        _ => None,
    }
}

/// A format int from a `*_for_int` attr, if it is a valid `ge::Format`.
fn format_from_int(v: Option<i64>) -> Option<Format> {
    Format::from_raw(u32::try_from(v?).ok()?).ok()
}

/// A serial format string; unknown strings are FORMAT_RESERVED (`SerialStringToFormat`).
fn format_from_str(s: &[u8]) -> Format {
    std::str::from_utf8(s)
        .ok()
        .and_then(|s| Format::parse_layout(s).ok())
        .unwrap_or(Format::RESERVED)
}

/// A `shape_range`-style attr as a `ShapeRange`, if it is a non-empty list of [min, max] pairs.
fn as_range(v: Option<&V>) -> Option<ShapeRange> {
    let Some(V::ListListInt(l)) = v else {
        return None;
    };
    let pairs: Option<Vec<(i64, i64)>> = l
        .list_list_i
        .iter()
        .map(|p| match p.list_i[..] {
            [a, b] => Some((a, b)),
            _ => None,
        })
        .collect();
    pairs.filter(|p| !p.is_empty()).map(ShapeRange::new)
}

impl Reader<'_> {
    /// Reads a TensorDescriptor.
    pub(crate) fn read_desc(&mut self, td: &TensorDescriptor) -> Result<TensorDesc, Fault> {
        let mut d = TensorDesc::default();
        if let Some(s) = &td.shape {
            check_dims(&s.dim).within(|| "shape".into())?;
            d.set_shape(Shape::from_slice(&s.dim));
        }
        let dtype = match td.attr.get(LEGACY_DTYPE).and_then(|a| a.value.as_ref()) {
            Some(V::I(v)) => DataType::legacy_override(*v).unwrap_or(DataType::Undefined),
            Some(_) => DataType::Undefined,
            None => DataType::from_proto_value(td.dtype).unwrap_or(DataType::Undefined),
        };
        d.set_dtype(dtype);
        check_desc_size(&d)?;
        d.set_format(
            format_from_int(get_i(td, FORMAT_FOR_INT))
                .unwrap_or_else(|| format_from_str(td.layout.as_bytes())),
        );
        let origin_format = format_from_int(get_i(td, ORIGIN_FORMAT_FOR_INT))
            .or_else(|| get_s(td, ORIGIN_FORMAT).map(|s| format_from_str(s)));
        if let Some(f) = origin_format {
            d.set_origin_format(f);
        }
        if let Some(s) = get_s(td, ORIGIN_DATA_TYPE) {
            let name = std::str::from_utf8(s).unwrap_or("");
            d.set_origin_dtype(DataType::from_name(name).unwrap_or(DataType::Undefined));
        }
        let origin_dims = match get(td, ORIGIN_SHAPE) {
            Some(V::List(l)) => Some(l.i.as_slice()),
            _ => None,
        };
        match (get_b(td, ORIGIN_SHAPE_INITIALIZED), origin_dims) {
            (Some(false), _) | (None, None) => {}
            (_, dims) => {
                let dims = dims.unwrap_or(&[]);
                check_dims(dims).within(|| format!("attr `{ORIGIN_SHAPE}`"))?;
                d.set_origin_shape(Shape::from_slice(dims));
            }
        }
        let range = as_range(get(td, SHAPE_RANGE));
        let origin_range = as_range(get(td, ORIGIN_SHAPE_RANGE));
        self.read_ext(td, &mut d)?;
        let skip = |k: &str| {
            RESERVED_DESC_KEYS.contains(&k)
                || LEGACY_EXT.contains(&k)
                || (k == SHAPE_RANGE && range.is_some())
                || (k == ORIGIN_SHAPE_RANGE && origin_range.is_some())
        };
        *d.attrs_mut() = self.read_attrs(&td.attr, &skip)?;
        if td.shape.is_none() {
            d.attrs_mut().set(SHAPE_UNSET, true);
        }
        if let Some(r) = range {
            d.set_shape_range(r);
        }
        if let Some(r) = origin_range {
            d.set_origin_shape_range(r);
        }
        Ok(d)
    }

    /// The extension fields, overridden by legacy attrs of the same name and matching type.
    fn read_ext(&mut self, td: &TensorDescriptor, d: &mut TensorDesc) -> Result<(), Fault> {
        let i = |k: &str, field: i64| get_i(td, k).unwrap_or(field);
        let b = |k: &str, field: bool| get_b(td, k).unwrap_or(field);
        d.set_size(i("size", td.size));
        d.set_weight_size(i("weight_size", td.weight_size));
        d.set_reuse_input(b("reuse_input", td.reuse_input));
        d.set_output_tensor(b("output_tensor", td.output_tensor));
        d.set_input_tensor(b("input_tensor", td.input_tensor));
        d.set_real_dim_cnt(i("real_dim_cnt", td.real_dim_cnt));
        d.set_reuse_input_index(i("reuse_input_index", td.reuse_input_index));
        d.set_data_offset(i("data_offset", td.data_offset));
        d.set_cmps_size(i("cmps_size", td.cmps_size));
        d.set_cmps_tab_offset(i("cmps_tab_offset", td.cmps_tab_offset));
        let device = match get_s(td, "device_type") {
            Some(s) => utf8(s).within(|| "attr `device_type`".into())?,
            None => td.device_type.clone(),
        };
        d.set_device_type(DeviceType::parse(&device).unwrap_or_default());
        match get_s(td, "cmps_tab") {
            Some(s) => d.set_cmps_tab(utf8(s).within(|| "attr `cmps_tab`".into())?),
            None => d.set_cmps_tab(td.cmps_tab.clone()),
        }
        Ok(())
    }

    /// Reads a TensorDef; the data stays a slice of the input buffer. The declared size must
    /// not exceed the data (see [`check_tensor`]).
    pub(crate) fn read_tensor(&mut self, t: &TensorDef) -> Result<Tensor, Fault> {
        let desc = match &t.desc {
            Some(td) => self.read_desc(td).within(|| "desc".into())?,
            None => TensorDesc::default(),
        };
        check_tensor(&desc, t.data.len())?;
        Ok(Tensor::new(desc, t.data.clone()))
    }
}

/// Checks that a desc's static shape stays under [`MAX_DATALESS_TENSOR_BYTES`]: its element
/// count and byte size must not overflow, so that nothing later sizes an allocation by it.
fn check_desc_size(d: &TensorDesc) -> Result<(), Fault> {
    let dt = d.dtype();
    let bytes = match d.shape().byte_size(dt) {
        Ok(Some(n)) => n,
        // Strings and undefined dtypes: the element count alone (one byte each, at least).
        Ok(None) => match d.shape().element_count() {
            Ok(n) => n.unwrap_or(0),
            Err(e) => return Err(fault(format!("the shape {} overflows: {e}", d.shape()))),
        },
        Err(e) => return Err(fault(format!("the shape {} overflows: {e}", d.shape()))),
    };
    if bytes > MAX_DATALESS_TENSOR_BYTES {
        return Err(fault(format!(
            "a {dt} tensor of shape {} declares {bytes} bytes (at most {MAX_DATALESS_TENSOR_BYTES} allowed)",
            d.shape()
        )));
    }
    Ok(())
}

/// Checks a tensor's declared size against its data: with data, the data must hold at least
/// the declared bytes; without data, the declared size must stay under
/// [`MAX_DATALESS_TENSOR_BYTES`]. Strings, compressed tensors and unknown shapes are not sized.
pub(crate) fn check_tensor(desc: &TensorDesc, data_len: usize) -> Result<(), Fault> {
    let dt = desc.dtype();
    if matches!(dt, DataType::String | DataType::StringRef) || desc.cmps_size() != 0 {
        return Ok(());
    }
    let declared = match desc.shape().byte_size(dt) {
        Ok(Some(n)) => n,
        Ok(None) => return Ok(()),
        Err(_) => {
            return Err(fault(format!(
                "the size of a {dt} tensor of shape {} overflows",
                desc.shape()
            )))
        }
    };
    let data = i64::try_from(data_len).unwrap_or(i64::MAX);
    if data == 0 && declared > MAX_DATALESS_TENSOR_BYTES {
        return Err(fault(format!(
            "a {dt} tensor of shape {} declares {declared} bytes and has no data \
             (at most {MAX_DATALESS_TENSOR_BYTES} allowed)",
            desc.shape()
        )));
    }
    if data != 0 && data < declared {
        return Err(fault(format!(
            "{data} bytes of data for a {dt} tensor of shape {}, which needs {declared}",
            desc.shape()
        )));
    }
    Ok(())
}

fn range_attr(w: &Writer<'_>, r: &ShapeRange) -> AttrDef {
    let pairs = r.0.iter().map(|&(a, b)| vec![a, b]).collect();
    w.write_value(&AttrValue::ListListInt(pairs))
}

impl Writer<'_> {
    /// A desc's attribute map: its own attrs, then what GE derives from its fields.
    fn desc_entries<'d>(&self, d: &'d TensorDesc) -> Entries<'d> {
        let skip = |k: &str| RESERVED_DESC_KEYS.contains(&k) || LEGACY_EXT.contains(&k);
        let mut e = Entries::with_capacity(d.attrs().len() + 6);
        for (k, v) in d.attrs().iter().filter(|(k, _)| !skip(k)) {
            e.push(k, Entry::Value(v));
        }
        if !d.shape_range().is_empty() {
            e.push(
                SHAPE_RANGE,
                Entry::Def(Box::new(range_attr(self, d.shape_range()))),
            );
        }
        if !d.origin_shape_range().is_empty() {
            let r = range_attr(self, d.origin_shape_range());
            e.push(ORIGIN_SHAPE_RANGE, Entry::Def(Box::new(r)));
        }
        let origin_format = d.origin_format().to_layout_string();
        e.push(ORIGIN_FORMAT, Entry::Str(origin_format.into()));
        e.push(
            ORIGIN_FORMAT_FOR_INT,
            Entry::Int(i64::from(d.origin_format().raw())),
        );
        e.push(FORMAT_FOR_INT, Entry::Int(i64::from(d.format().raw())));
        if d.origin_dtype() != DataType::Undefined {
            e.push(ORIGIN_DATA_TYPE, Entry::Str(d.origin_dtype().name().into()));
        }
        e.push(
            ORIGIN_SHAPE_INITIALIZED,
            Entry::Bool(d.origin_shape_initialized()),
        );
        if let Some(s) = d.origin_shape() {
            let dims = self.write_value(&AttrValue::ListInt(s.dims().to_vec()));
            e.push(ORIGIN_SHAPE, Entry::Def(Box::new(dims)));
        }
        e
    }

    /// The shape GE writes: none for a scalar marked unset.
    fn written_dims(d: &TensorDesc) -> Option<&[i64]> {
        let shape_unset =
            d.attrs().get_bool(SHAPE_UNSET).ok().flatten() == Some(true) && d.shape().is_scalar();
        (!shape_unset).then(|| d.shape().dims())
    }

    /// Writes a TensorDescriptor as GE's `GeTensorDescAsProto` does.
    pub(crate) fn write_desc(&self, d: &TensorDesc) -> TensorDescriptor {
        TensorDescriptor {
            name: String::new(),
            dtype: d.dtype().proto_value(),
            shape: Self::written_dims(d).map(|dims| ShapeDef { dim: dims.to_vec() }),
            layout: d.format().to_layout_string(),
            attr: self.desc_entries(d).into_map(self),
            attr_groups: None,
            has_out_attr: false,
            size: d.size(),
            weight_size: d.weight_size(),
            reuse_input: d.reuse_input(),
            output_tensor: d.output_tensor(),
            device_type: d.device_type().as_str().to_string(),
            input_tensor: d.input_tensor(),
            real_dim_cnt: d.real_dim_cnt(),
            reuse_input_index: d.reuse_input_index(),
            data_offset: d.data_offset(),
            cmps_size: d.cmps_size(),
            cmps_tab: d.cmps_tab().to_string(),
            cmps_tab_offset: d.cmps_tab_offset(),
        }
    }

    /// [`Writer::write_desc`]'s message encoded straight into `out` (its body, without key or
    /// length): the same bytes as prost's, without building the message.
    pub(crate) fn encode_desc(&self, d: &TensorDesc, out: &mut Vec<u8>) {
        use prost::encoding::{encode_key, encode_varint, encoded_len_varint, WireType};
        let varint = |tag: u32, v: u64, out: &mut Vec<u8>| {
            if v != 0 {
                encode_key(tag, WireType::Varint, out);
                encode_varint(v, out);
            }
        };
        let string = |tag: u32, s: &str, out: &mut Vec<u8>| {
            if !s.is_empty() {
                encode_key(tag, WireType::LengthDelimited, out);
                encode_varint(s.len() as u64, out);
                out.extend_from_slice(s.as_bytes());
            }
        };
        // Field numbers of ge_ir.proto's TensorDescriptor.
        varint(2, d.dtype().proto_value() as u64, out);
        if let Some(dims) = Self::written_dims(d) {
            let packed: usize = dims.iter().map(|&x| encoded_len_varint(x as u64)).sum();
            let body = if dims.is_empty() {
                0
            } else {
                1 + encoded_len_varint(packed as u64) + packed
            };
            encode_key(3, WireType::LengthDelimited, out);
            encode_varint(body as u64, out);
            if !dims.is_empty() {
                encode_key(1, WireType::LengthDelimited, out);
                encode_varint(packed as u64, out);
                for &x in dims {
                    encode_varint(x as u64, out);
                }
            }
        }
        string(4, &d.format().to_layout_string(), out);
        self.desc_entries(d).encode(self, 5, out);
        varint(10, d.size() as u64, out);
        varint(11, d.weight_size() as u64, out);
        varint(12, u64::from(d.reuse_input()), out);
        varint(13, u64::from(d.output_tensor()), out);
        string(14, d.device_type().as_str(), out);
        varint(15, u64::from(d.input_tensor()), out);
        varint(16, d.real_dim_cnt() as u64, out);
        varint(17, d.reuse_input_index() as u64, out);
        varint(18, d.data_offset() as u64, out);
        varint(19, d.cmps_size() as u64, out);
        string(20, d.cmps_tab(), out);
        varint(21, d.cmps_tab_offset() as u64, out);
    }

    pub(crate) fn write_tensor(&self, t: &Tensor) -> TensorDef {
        TensorDef {
            desc: Some(self.write_desc(&t.desc)),
            data: t.data.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::attr::dt_from_ge;
    use super::*;

    #[test]
    fn dims_rules() {
        assert!(check_dims(&[]).is_ok());
        assert!(check_dims(&[1, -1, 0]).is_ok());
        assert!(check_dims(&[-2]).is_ok());
        assert!(check_dims(&[-3]).is_ok());
        assert!(check_dims(&[2, -2]).is_err());
        assert!(check_dims(&[-5]).is_err());
    }

    #[test]
    fn tensor_sizes() {
        let d = TensorDesc::with_shape_dtype(Shape::new([3]), DataType::Float);
        assert!(check_tensor(&d, 12).is_ok());
        assert!(check_tensor(&d, 0).is_ok());
        assert!(check_tensor(&d, 8).is_err());
        let huge =
            TensorDesc::with_shape_dtype(Shape::new([1_000_000_000_000_000]), DataType::Uint8);
        assert!(check_tensor(&huge, 0).is_err());
        assert!(check_tensor(&huge, 4).is_err());
        let over = TensorDesc::with_shape_dtype(Shape::new([i64::MAX, 4]), DataType::Float);
        assert!(check_tensor(&over, 0).is_err());
        let s = TensorDesc::with_shape_dtype(Shape::new([4]), DataType::String);
        assert!(check_tensor(&s, 1).is_ok());
    }

    #[test]
    fn unknown_formats_are_reserved() {
        assert_eq!(format_from_str(b"NCHW"), Format::NCHW);
        assert_eq!(format_from_str(b"bogus"), Format::RESERVED);
        assert_eq!(format_from_int(Some(-1)), None);
        assert_eq!(format_from_int(Some(0x1000_0000 | 200)), None);
        assert_eq!(dt_from_ge(3), DataType::Int32);
    }
}
