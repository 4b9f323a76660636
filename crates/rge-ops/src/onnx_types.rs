//! ONNX `TensorProto.DataType` codes ↔ rge data types (for attributes such as Cast's `to`).

use rge_ir::DataType;

/// The rge data type of ONNX element type `code`; `None` for UNDEFINED and unknown codes.
pub fn from_onnx(code: i32) -> Option<DataType> {
    use DataType::*;
    Some(match code {
        1 => Float,
        2 => Uint8,
        3 => Int8,
        4 => Uint16,
        5 => Int16,
        6 => Int32,
        7 => Int64,
        8 => String,
        9 => Bool,
        10 => Float16,
        11 => Double,
        12 => Uint32,
        13 => Uint64,
        14 => Complex64,
        15 => Complex128,
        16 => Bf16,
        17 => Float8E4M3Fn,
        18 => Float8E4M3Fnuz,
        19 => Float8E5M2,
        20 => Float8E5M2Fnuz,
        21 => Uint4,
        22 => Int4,
        23 => Float4E2M1,
        24 => Float8E8M0,
        25 => Uint2,
        26 => Int2,
        27 => Float6E2M3,
        28 => Float6E3M2,
        _ => return None,
    })
}

/// The ONNX element type code of `dt`, `None` where ONNX has none.
pub fn to_onnx(dt: DataType) -> Option<i32> {
    (1..=28).find(|&c| from_onnx(c) == Some(dt))
}

/// The frontend's desc attribute holding an encoded non-tensor ONNX `TypeProto`.
pub const ONNX_TYPE_ATTR: &str = "_onnx_type";

/// A minimal protobuf reader over the few `TypeProto` fields inference needs.
struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let (&x, rest) = self.b.split_first()?;
            self.b = rest;
            v |= u64::from(x & 0x7f) << shift;
            if x & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }

    /// The next (field, wire type, payload): varints as their value, length-delimited as bytes.
    fn next(&mut self) -> Option<(u64, Field<'a>)> {
        if self.b.is_empty() {
            return None;
        }
        let key = self.varint()?;
        let (field, wire) = (key >> 3, key & 7);
        let f = match wire {
            0 => Field::Varint(self.varint()?),
            2 => {
                let n = self.varint()? as usize;
                if n > self.b.len() {
                    return None;
                }
                let (x, rest) = self.b.split_at(n);
                self.b = rest;
                Field::Bytes(x)
            }
            1 => {
                self.b = self.b.get(8..)?;
                Field::Other
            }
            5 => {
                self.b = self.b.get(4..)?;
                Field::Other
            }
            _ => return None,
        };
        Some((field, f))
    }
}

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Other,
}

/// A decoded `TypeProto`: the kind of value, and its (element) tensor type and dims (`None`
/// dims = unknown rank; -1 = unknown dim).
pub type DecodedType = (crate::ctx::ValueKind, Option<DataType>, Option<Vec<i64>>);

fn decode_tensor_type(b: &[u8]) -> (Option<DataType>, Option<Vec<i64>>) {
    let mut r = Reader { b };
    let (mut dt, mut dims) = (None, None);
    while let Some((f, v)) = r.next() {
        match (f, v) {
            (1, Field::Varint(x)) => dt = from_onnx(x as i32),
            (2, Field::Bytes(shape)) => {
                let mut d = Vec::new();
                let mut s = Reader { b: shape };
                while let Some((f, v)) = s.next() {
                    if let (1, Field::Bytes(dim)) = (f, v) {
                        let mut value = -1i64;
                        let mut dr = Reader { b: dim };
                        while let Some((f, v)) = dr.next() {
                            if let (1, Field::Varint(x)) = (f, v) {
                                value = x as i64;
                            }
                        }
                        d.push(value);
                    }
                }
                dims = Some(d);
            }
            _ => {}
        }
    }
    (dt, dims)
}

/// A `TypeProto.Map`: the key type (int64 or string keys only) and the value type (a tensor
/// element type, as ai.onnx.ml's maps hold).
fn decode_map_type(b: &[u8]) -> Option<DecodedType> {
    use crate::ctx::{MapKey, ValueKind};
    let mut r = Reader { b };
    let (mut key, mut value) = (None, None);
    while let Some((f, v)) = r.next() {
        match (f, v) {
            (1, Field::Varint(x)) => key = from_onnx(x as i32).and_then(MapKey::of),
            (2, Field::Bytes(x)) => value = decode_type_proto(x),
            _ => {}
        }
    }
    let (vk, dt, _) = value?;
    (vk == ValueKind::Tensor).then_some((ValueKind::Map(key?), dt, Some(vec![-1])))
}

/// Decodes an encoded ONNX `TypeProto` (tensor, sequence of tensors or of maps, optional of a
/// tensor or a sequence, map of int64 or string keys); `None` for what rge does not hold.
pub fn decode_type_proto(b: &[u8]) -> Option<DecodedType> {
    use crate::ctx::ValueKind;
    let mut r = Reader { b };
    while let Some((f, v)) = r.next() {
        let Field::Bytes(inner) = v else {
            continue;
        };
        match f {
            1 => {
                let (dt, dims) = decode_tensor_type(inner);
                return Some((ValueKind::Tensor, dt, dims));
            }
            4 | 9 => {
                // Sequence / Optional: field 1 is the element TypeProto.
                let mut e = Reader { b: inner };
                let mut elem = None;
                while let Some((f, v)) = e.next() {
                    if let (1, Field::Bytes(x)) = (f, v) {
                        elem = decode_type_proto(x);
                    }
                }
                let (ek, dt, dims) = elem.unwrap_or((ValueKind::Tensor, None, None));
                let kind = match (f, ek) {
                    (4, ValueKind::Map(key)) => ValueKind::SequenceOfMaps(key),
                    (_, ValueKind::Map(_) | ValueKind::SequenceOfMaps(_)) => return None,
                    (4, _) => ValueKind::Sequence,
                    (_, ValueKind::Sequence) => ValueKind::OptionalSequence,
                    _ => ValueKind::OptionalTensor,
                };
                return Some((kind, dt, dims));
            }
            5 => return decode_map_type(inner),
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        // Every ONNX type has an rge type of its own, and back.
        for c in 1..=28 {
            let dt = from_onnx(c).unwrap_or_else(|| panic!("ONNX type {c}"));
            assert_eq!(to_onnx(dt), Some(c));
        }
        assert_eq!(from_onnx(18), Some(DataType::Float8E4M3Fnuz));
        assert_eq!(from_onnx(20), Some(DataType::Float8E5M2Fnuz));
        assert_eq!(from_onnx(21), Some(DataType::Uint4));
        assert_eq!(from_onnx(0), None);
        assert_eq!(from_onnx(29), None);
    }

    #[test]
    fn decodes_sequence_and_optional_types() {
        use crate::ctx::ValueKind;
        // seq(tensor(float)[2, ?]): TypeProto{4: Sequence{1: TypeProto{1: Tensor{1: 1, 2: Shape{1: {1: 2}, 1: {}}}}}}
        let shape = [0x12, 0x06, 0x0a, 0x02, 0x08, 0x02, 0x0a, 0x00];
        let mut tensor = vec![0x08, 0x01];
        tensor.extend_from_slice(&shape);
        let mut tp = vec![0x0a, tensor.len() as u8];
        tp.extend_from_slice(&tensor);
        let mut seq = vec![0x0a, tp.len() as u8];
        seq.extend_from_slice(&tp);
        let mut outer = vec![0x22, seq.len() as u8];
        outer.extend_from_slice(&seq);
        let (k, dt, dims) = decode_type_proto(&outer).unwrap();
        assert_eq!(
            (k, dt, dims),
            (
                ValueKind::Sequence,
                Some(DataType::Float),
                Some(vec![2, -1])
            )
        );
        let mut opt = vec![0x4a, seq.len() as u8];
        opt.extend_from_slice(&seq);
        let (k, _, _) = decode_type_proto(&opt).unwrap();
        assert_eq!(k, ValueKind::OptionalTensor);
        assert!(decode_type_proto(&[0x22, 0x09]).is_none());
    }

    #[test]
    fn decodes_map_types() {
        use crate::ctx::{MapKey, ValueKind};
        // map(string, tensor(float)): TypeProto{5: Map{1: 8, 2: TypeProto{1: Tensor{1: 1}}}}
        let value = [0x0a, 0x02, 0x08, 0x01];
        let mut map = vec![0x08, 0x08, 0x12, value.len() as u8];
        map.extend_from_slice(&value);
        let mut tp = vec![0x2a, map.len() as u8];
        tp.extend_from_slice(&map);
        let (k, dt, _) = decode_type_proto(&tp).unwrap();
        assert_eq!(
            (k, dt),
            (ValueKind::Map(MapKey::String), Some(DataType::Float))
        );
        // seq(map(string, float)).
        let mut seq = vec![0x0a, tp.len() as u8];
        seq.extend_from_slice(&tp);
        let mut outer = vec![0x22, seq.len() as u8];
        outer.extend_from_slice(&seq);
        let (k, dt, _) = decode_type_proto(&outer).unwrap();
        assert_eq!(
            (k, dt),
            (
                ValueKind::SequenceOfMaps(MapKey::String),
                Some(DataType::Float)
            )
        );
        // Keys of another type (double) are not held.
        let mut bad = map.clone();
        bad[1] = 0x0b;
        let mut tp = vec![0x2a, bad.len() as u8];
        tp.extend_from_slice(&bad);
        assert!(decode_type_proto(&tp).is_none());
    }
}
