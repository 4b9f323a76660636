//! Element data types: `ge::DataType` with both of GE's numberings.
//!
//! GE has two integer encodings of a data type (reference §9 fact 1):
//! * the in-memory `ge::DataType` value ([`DataType::ge_value`]), used by attribute `dt` slots,
//!   `format_for_int`-style ints and the C API (DT_FLOAT = 0, DT_INT32 = 3, DT_UNDEFINED = 28);
//! * the `ge.proto.DataType` enum ([`DataType::proto_value`]), used only by
//!   `TensorDescriptor.dtype` (DT_UNDEFINED = 0, DT_FLOAT = 1, DT_INT32 = 7).
//!
//! Three ONNX types have no GE value: DT_FLOAT8_E4M3FNUZ, DT_FLOAT8_E5M2FNUZ and DT_UINT4.
//! rge numbers them 200, 201, 202 in both numberings (see docs/types.md).

use std::fmt;
use std::str::FromStr;

use crate::error::{IrError, Result};

macro_rules! data_types {
    ($(
        $(#[$meta:meta])*
        $var:ident = $ge:literal, proto $proto:literal, $name:literal, $pname:literal, bits $bits:expr;
    )*) => {
        /// An element data type; the discriminant is GE's in-memory `ge::DataType` value.
        #[repr(u8)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
        pub enum DataType {
            $(
                $(#[$meta])*
                #[doc = $name]
                $var = $ge,
            )*
        }

        impl DataType {
            /// Every data type, in `ge::DataType` value order (rge's own types last).
            pub const ALL: [DataType; 45] = [$(DataType::$var),*];

            /// The `ge.proto.DataType` enum value (`TensorDescriptor.dtype`).
            pub const fn proto_value(self) -> i32 {
                match self {
                    $(DataType::$var => $proto,)*
                }
            }

            /// The `ge.proto.DataType` from its enum value; 0 is `DT_UNDEFINED`.
            pub const fn from_proto_value(v: i32) -> Option<Self> {
                match v {
                    $($proto => Some(DataType::$var),)*
                    _ => None,
                }
            }

            /// The `ge::DataType` from its in-memory value (5 is reserved and has none).
            pub const fn from_ge_value(v: i64) -> Option<Self> {
                match v {
                    $($ge => Some(DataType::$var),)*
                    _ => None,
                }
            }

            /// GE's serial string (`TypeUtils::DataTypeToSerialString`); DT_BF16 is "DT_BFLOAT16".
            pub const fn name(self) -> &'static str {
                match self {
                    $(DataType::$var => $name,)*
                }
            }

            /// The `ge.proto.DataType` enum value name, e.g. "DT_BF16".
            pub const fn proto_name(self) -> &'static str {
                match self {
                    $(DataType::$var => $pname,)*
                }
            }

            /// The `ge.proto.DataType` from its enum value name.
            pub fn from_proto_name(s: &str) -> Option<Self> {
                match s {
                    $($pname => Some(DataType::$var),)*
                    _ => None,
                }
            }

            /// Element size in bits; `None` when the type has no fixed size (DT_UNDEFINED).
            ///
            /// Strings count as 16 bytes (`TypeUtils::GetDataTypeLength`), DT_DUAL as 5 bytes.
            pub const fn bits(self) -> Option<u32> {
                match self {
                    $(DataType::$var => $bits,)*
                }
            }

            fn from_serial_name(s: &str) -> Option<Self> {
                match s {
                    $($name => Some(DataType::$var),)*
                    _ => None,
                }
            }
        }
    };
}

data_types! {
    Float = 0, proto 1, "DT_FLOAT", "DT_FLOAT", bits Some(32);
    Float16 = 1, proto 2, "DT_FLOAT16", "DT_FLOAT16", bits Some(16);
    Int8 = 2, proto 3, "DT_INT8", "DT_INT8", bits Some(8);
    Int32 = 3, proto 7, "DT_INT32", "DT_INT32", bits Some(32);
    Uint8 = 4, proto 4, "DT_UINT8", "DT_UINT8", bits Some(8);
    Int16 = 6, proto 5, "DT_INT16", "DT_INT16", bits Some(16);
    Uint16 = 7, proto 6, "DT_UINT16", "DT_UINT16", bits Some(16);
    Uint32 = 8, proto 9, "DT_UINT32", "DT_UINT32", bits Some(32);
    Int64 = 9, proto 8, "DT_INT64", "DT_INT64", bits Some(64);
    Uint64 = 10, proto 10, "DT_UINT64", "DT_UINT64", bits Some(64);
    Double = 11, proto 12, "DT_DOUBLE", "DT_DOUBLE", bits Some(64);
    Bool = 12, proto 11, "DT_BOOL", "DT_BOOL", bits Some(8);
    String = 13, proto 13, "DT_STRING", "DT_STRING", bits Some(128);
    DualSubInt8 = 14, proto 14, "DT_DUAL_SUB_INT8", "DT_DUAL_SUB_INT8", bits Some(8);
    DualSubUint8 = 15, proto 15, "DT_DUAL_SUB_UINT8", "DT_DUAL_SUB_UINT8", bits Some(8);
    Complex64 = 16, proto 16, "DT_COMPLEX64", "DT_COMPLEX64", bits Some(64);
    Complex128 = 17, proto 17, "DT_COMPLEX128", "DT_COMPLEX128", bits Some(128);
    Qint8 = 18, proto 18, "DT_QINT8", "DT_QINT8", bits Some(8);
    Qint16 = 19, proto 19, "DT_QINT16", "DT_QINT16", bits Some(16);
    Qint32 = 20, proto 20, "DT_QINT32", "DT_QINT32", bits Some(32);
    Quint8 = 21, proto 21, "DT_QUINT8", "DT_QUINT8", bits Some(8);
    Quint16 = 22, proto 22, "DT_QUINT16", "DT_QUINT16", bits Some(16);
    Resource = 23, proto 23, "DT_RESOURCE", "DT_RESOURCE", bits Some(64);
    StringRef = 24, proto 24, "DT_STRING_REF", "DT_STRING_REF", bits Some(128);
    Dual = 25, proto 25, "DT_DUAL", "DT_DUAL", bits Some(40);
    Variant = 26, proto 26, "DT_VARIANT", "DT_VARIANT", bits Some(64);
    Bf16 = 27, proto 27, "DT_BFLOAT16", "DT_BF16", bits Some(16);
    #[default]
    Undefined = 28, proto 0, "DT_UNDEFINED", "DT_UNDEFINED", bits None;
    Int4 = 29, proto 28, "DT_INT4", "DT_INT4", bits Some(4);
    Uint1 = 30, proto 29, "DT_UINT1", "DT_UINT1", bits Some(1);
    Int2 = 31, proto 30, "DT_INT2", "DT_INT2", bits Some(2);
    Uint2 = 32, proto 31, "DT_UINT2", "DT_UINT2", bits Some(2);
    Complex32 = 33, proto 32, "DT_COMPLEX32", "DT_COMPLEX32", bits Some(32);
    HiFloat8 = 34, proto 33, "DT_HIFLOAT8", "DT_HIFLOAT8", bits Some(8);
    Float8E5M2 = 35, proto 34, "DT_FLOAT8_E5M2", "DT_FLOAT8_E5M2", bits Some(8);
    Float8E4M3Fn = 36, proto 35, "DT_FLOAT8_E4M3FN", "DT_FLOAT8_E4M3FN", bits Some(8);
    Float8E8M0 = 37, proto 36, "DT_FLOAT8_E8M0", "DT_FLOAT8_E8M0", bits Some(8);
    Float6E3M2 = 38, proto 37, "DT_FLOAT6_E3M2", "DT_FLOAT6_E3M2", bits Some(6);
    Float6E2M3 = 39, proto 38, "DT_FLOAT6_E2M3", "DT_FLOAT6_E2M3", bits Some(6);
    Float4E2M1 = 40, proto 39, "DT_FLOAT4_E2M1", "DT_FLOAT4_E2M1", bits Some(4);
    Float4E1M2 = 41, proto 40, "DT_FLOAT4_E1M2", "DT_FLOAT4_E1M2", bits Some(4);
    HiFloat4 = 42, proto 41, "DT_HIFLOAT4", "DT_HIFLOAT4", bits Some(4);
    // rge's own: ONNX types GE has no value for. Both numberings use 200.. (far from GE's
    // 0..=43, which grows by appending) so that a future GE type cannot collide; GE reads
    // them as unmapped (DT_UNDEFINED), and GE text prints the proto value as a number.
    Float8E4M3Fnuz = 200, proto 200, "DT_FLOAT8_E4M3FNUZ", "DT_FLOAT8_E4M3FNUZ", bits Some(8);
    Float8E5M2Fnuz = 201, proto 201, "DT_FLOAT8_E5M2FNUZ", "DT_FLOAT8_E5M2FNUZ", bits Some(8);
    Uint4 = 202, proto 202, "DT_UINT4", "DT_UINT4", bits Some(4);
}

impl DataType {
    /// The in-memory `ge::DataType` value (attribute `dt`, C API).
    pub const fn ge_value(self) -> i32 {
        self as i32
    }

    /// Parses GE's serial string; also accepts "DT_BF16", "DT_FLOAT32" (→ DT_FLOAT) and
    /// "RESERVED" (→ DT_UNDEFINED) as `TypeUtils::SerialStringToDataType` does.
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "DT_BF16" => Some(DataType::Bf16),
            "DT_FLOAT32" => Some(DataType::Float),
            "RESERVED" => Some(DataType::Undefined),
            _ => Self::from_serial_name(s),
        }
    }

    /// The element size in bytes, for types of at least one byte; `None` for sub-byte types
    /// and types without a fixed size.
    pub const fn byte_size(self) -> Option<u32> {
        match self.bits() {
            Some(b) if b % 8 == 0 => Some(b / 8),
            _ => None,
        }
    }

    /// True for types narrower than a byte (packed several to a byte).
    pub const fn is_sub_byte(self) -> bool {
        matches!(self.bits(), Some(b) if b < 8)
    }

    /// True for real floating-point types (including 8/6/4-bit floats; not complex).
    pub const fn is_float(self) -> bool {
        use DataType::*;
        matches!(
            self,
            Float
                | Float16
                | Double
                | Bf16
                | HiFloat8
                | Float8E5M2
                | Float8E4M3Fn
                | Float8E4M3Fnuz
                | Float8E5M2Fnuz
                | Float8E8M0
                | Float6E3M2
                | Float6E2M3
                | Float4E2M1
                | Float4E1M2
                | HiFloat4
        )
    }

    /// True for plain (non-quantized) integer types, sub-byte ones included; not bool.
    pub const fn is_integer(self) -> bool {
        use DataType::*;
        matches!(
            self,
            Int8 | Int16
                | Int32
                | Int64
                | Uint8
                | Uint16
                | Uint32
                | Uint64
                | Int4
                | Uint4
                | Uint1
                | Int2
                | Uint2
        )
    }

    /// True for types that can hold negative values (signed ints, floats, complex, qint).
    pub const fn is_signed(self) -> bool {
        use DataType::*;
        self.is_float()
            || self.is_complex()
            || matches!(
                self,
                Int8 | Int16 | Int32 | Int64 | Int4 | Int2 | Qint8 | Qint16 | Qint32 | DualSubInt8
            )
    }

    /// True for complex types.
    pub const fn is_complex(self) -> bool {
        matches!(
            self,
            DataType::Complex32 | DataType::Complex64 | DataType::Complex128
        )
    }

    /// True for the quantized types (DT_QINT*, DT_QUINT*).
    pub const fn is_quantized(self) -> bool {
        use DataType::*;
        matches!(self, Qint8 | Qint16 | Qint32 | Quint8 | Quint16)
    }

    /// The data type a legacy `__tensor_desc_data_type__` attr value stands for (§2.1).
    pub const fn legacy_override(v: i64) -> Option<Self> {
        use DataType::*;
        Some(match v {
            13 => Dual,
            14 => DualSubInt8,
            15 => DualSubUint8,
            16 => Complex64,
            17 => Complex128,
            18 => Qint8,
            19 => Qint16,
            20 => Qint32,
            21 => Quint8,
            22 => Quint16,
            33 => Complex32,
            _ => return None,
        })
    }
}

impl fmt::Display for DataType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for DataType {
    type Err = IrError;

    fn from_str(s: &str) -> Result<Self> {
        DataType::from_name(s).ok_or_else(|| IrError::Invalid {
            what: "data type",
            value: s.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ge_values_round_trip() {
        for (i, dt) in DataType::ALL.iter().enumerate() {
            let v = dt.ge_value();
            assert_eq!(DataType::from_ge_value(v as i64), Some(*dt));
            // ALL is in value order: GE's skipping only the reserved 5, then rge's 200...
            let expect = match i {
                0..=4 => i,
                5..=41 => i + 1,
                _ => i - 42 + 200,
            };
            assert_eq!(v as usize, expect, "{dt:?}");
        }
        assert_eq!(DataType::from_ge_value(5), None);
        assert_eq!(DataType::from_ge_value(43), None);
        assert_eq!(DataType::from_ge_value(199), None);
        assert_eq!(DataType::from_ge_value(203), None);
        assert_eq!(DataType::from_ge_value(-1), None);
    }

    #[test]
    fn proto_values_round_trip_and_are_a_bijection() {
        let mut seen = HashSet::new();
        for dt in DataType::ALL {
            let p = dt.proto_value();
            assert!(seen.insert(p), "duplicate proto value {p}");
            assert_eq!(DataType::from_proto_value(p), Some(dt));
            assert_eq!(DataType::from_proto_name(dt.proto_name()), Some(dt));
        }
        assert_eq!(seen, (0..=41).chain(200..=202).collect::<HashSet<_>>());
        assert_eq!(DataType::from_proto_value(42), None);
        assert_eq!(DataType::from_proto_value(203), None);
    }

    #[test]
    fn numberings_differ() {
        assert_eq!(DataType::Int32.ge_value(), 3);
        assert_eq!(DataType::Int32.proto_value(), 7);
        assert_eq!(DataType::Undefined.ge_value(), 28);
        assert_eq!(DataType::Undefined.proto_value(), 0);
        assert_eq!(DataType::Float.ge_value(), 0);
        assert_eq!(DataType::Float.proto_value(), 1);
        assert_eq!(DataType::Bool.proto_value(), 11);
        assert_eq!(DataType::Double.proto_value(), 12);
        assert_eq!(DataType::Int4.proto_value(), 28);
        assert_eq!(DataType::HiFloat4.proto_value(), 41);
        // rge's own values, the same in both numberings.
        assert_eq!(DataType::Float8E4M3Fnuz.ge_value(), 200);
        assert_eq!(DataType::Float8E5M2Fnuz.proto_value(), 201);
        assert_eq!(DataType::Uint4.ge_value(), 202);
        assert_eq!(DataType::Uint4.proto_value(), 202);
        assert_eq!(DataType::default(), DataType::Undefined);
    }

    #[test]
    fn names_round_trip() {
        for dt in DataType::ALL {
            assert_eq!(DataType::from_name(dt.name()), Some(dt));
            assert_eq!(dt.to_string().parse::<DataType>().unwrap(), dt);
        }
        assert_eq!(DataType::Bf16.name(), "DT_BFLOAT16");
        assert_eq!(DataType::Bf16.proto_name(), "DT_BF16");
        assert_eq!(DataType::from_name("DT_BF16"), Some(DataType::Bf16));
        assert_eq!(DataType::from_name("DT_FLOAT32"), Some(DataType::Float));
        assert_eq!(DataType::from_name("RESERVED"), Some(DataType::Undefined));
        assert_eq!(DataType::from_proto_name("DT_BFLOAT16"), None);
        let err = "DT_NOPE".parse::<DataType>().unwrap_err();
        assert_eq!(
            err,
            IrError::Invalid {
                what: "data type",
                value: "DT_NOPE".into()
            }
        );
    }

    #[test]
    fn bits_and_classes() {
        assert_eq!(DataType::Float.bits(), Some(32));
        assert_eq!(DataType::Int4.bits(), Some(4));
        assert_eq!(DataType::Uint1.bits(), Some(1));
        assert_eq!(DataType::Int2.bits(), Some(2));
        assert_eq!(DataType::Uint2.bits(), Some(2));
        assert_eq!(DataType::Float6E3M2.bits(), Some(6));
        assert_eq!(DataType::Float4E2M1.bits(), Some(4));
        assert_eq!(DataType::HiFloat8.bits(), Some(8));
        assert_eq!(DataType::Float8E4M3Fn.bits(), Some(8));
        assert_eq!(DataType::Float8E4M3Fnuz.bits(), Some(8));
        assert_eq!(DataType::Float8E5M2Fnuz.byte_size(), Some(1));
        assert_eq!(DataType::Uint4.bits(), Some(4));
        assert_eq!(DataType::Uint4.name(), "DT_UINT4");
        assert_eq!(
            DataType::from_name("DT_FLOAT8_E5M2FNUZ"),
            Some(DataType::Float8E5M2Fnuz)
        );
        assert_eq!(DataType::String.bits(), Some(128));
        assert_eq!(DataType::StringRef.bits(), Some(128));
        assert_eq!(DataType::Dual.bits(), Some(40));
        assert_eq!(DataType::Undefined.bits(), None);
        assert_eq!(DataType::Int4.byte_size(), None);
        assert_eq!(DataType::Complex128.byte_size(), Some(16));
        let sub: Vec<_> = DataType::ALL
            .into_iter()
            .filter(|d| d.is_sub_byte())
            .collect();
        use DataType::*;
        assert_eq!(
            sub,
            vec![
                Int4, Uint1, Int2, Uint2, Float6E3M2, Float6E2M3, Float4E2M1, Float4E1M2, HiFloat4,
                Uint4
            ]
        );
        assert!(Float8E4M3Fnuz.is_float() && Float8E5M2Fnuz.is_signed());
        assert!(Uint4.is_integer() && !Uint4.is_signed() && !Uint4.is_float());
        assert!(Float16.is_float() && !Complex64.is_float() && !Int32.is_float());
        assert!(Int4.is_integer() && !Bool.is_integer() && !Qint8.is_integer());
        assert!(Int8.is_signed() && !Uint8.is_signed() && Float.is_signed() && !Quint8.is_signed());
        assert!(Complex32.is_complex() && Qint32.is_quantized() && !Int32.is_quantized());
    }

    #[test]
    fn legacy_overrides() {
        assert_eq!(DataType::legacy_override(13), Some(DataType::Dual));
        assert_eq!(DataType::legacy_override(33), Some(DataType::Complex32));
        assert_eq!(DataType::legacy_override(22), Some(DataType::Quint16));
        assert_eq!(DataType::legacy_override(12), None);
        assert_eq!(DataType::legacy_override(23), None);
    }
}
