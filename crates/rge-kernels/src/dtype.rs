//! Runtime element types. Kernels work in ONNX's type system (`TensorProto.DataType`
//! numbering); every ONNX type has an rge-ir `DataType` of its own, so [`DType::to_ir`] and
//! [`DType::from_ir`] are lossless.

use std::fmt;

use rge_ir::{DataType, TensorDesc};

macro_rules! dtypes {
    ($($var:ident = $code:literal, $name:literal, bits $bits:literal, ir $ir:ident;)*) => {
        /// An element type; the discriminant is ONNX's `TensorProto.DataType` value.
        #[repr(i32)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum DType {
            $(#[doc = $name] $var = $code,)*
        }

        impl DType {
            /// Every type.
            pub const ALL: &'static [DType] = &[$(DType::$var),*];

            /// The type for an ONNX `TensorProto.DataType` value.
            pub const fn from_onnx(code: i32) -> Option<DType> {
                match code {
                    $($code => Some(DType::$var),)*
                    _ => None,
                }
            }

            /// ONNX's name of the type, e.g. "FLOAT16".
            pub const fn name(self) -> &'static str {
                match self {
                    $(DType::$var => $name,)*
                }
            }

            /// Bits per element (strings: the size of a `String`, not meaningful for planning).
            pub const fn bits(self) -> u32 {
                match self {
                    $(DType::$var => $bits,)*
                }
            }

            /// The rge-ir type.
            pub const fn to_ir(self) -> DataType {
                match self {
                    $(DType::$var => DataType::$ir,)*
                }
            }
        }
    };
}

dtypes! {
    Float = 1, "FLOAT", bits 32, ir Float;
    Uint8 = 2, "UINT8", bits 8, ir Uint8;
    Int8 = 3, "INT8", bits 8, ir Int8;
    Uint16 = 4, "UINT16", bits 16, ir Uint16;
    Int16 = 5, "INT16", bits 16, ir Int16;
    Int32 = 6, "INT32", bits 32, ir Int32;
    Int64 = 7, "INT64", bits 64, ir Int64;
    String = 8, "STRING", bits 0, ir String;
    Bool = 9, "BOOL", bits 8, ir Bool;
    Float16 = 10, "FLOAT16", bits 16, ir Float16;
    Double = 11, "DOUBLE", bits 64, ir Double;
    Uint32 = 12, "UINT32", bits 32, ir Uint32;
    Uint64 = 13, "UINT64", bits 64, ir Uint64;
    Complex64 = 14, "COMPLEX64", bits 64, ir Complex64;
    Complex128 = 15, "COMPLEX128", bits 128, ir Complex128;
    Bfloat16 = 16, "BFLOAT16", bits 16, ir Bf16;
    Float8E4M3Fn = 17, "FLOAT8E4M3FN", bits 8, ir Float8E4M3Fn;
    Float8E4M3Fnuz = 18, "FLOAT8E4M3FNUZ", bits 8, ir Float8E4M3Fnuz;
    Float8E5M2 = 19, "FLOAT8E5M2", bits 8, ir Float8E5M2;
    Float8E5M2Fnuz = 20, "FLOAT8E5M2FNUZ", bits 8, ir Float8E5M2Fnuz;
    Uint4 = 21, "UINT4", bits 4, ir Uint4;
    Int4 = 22, "INT4", bits 4, ir Int4;
    Float4E2M1 = 23, "FLOAT4E2M1", bits 4, ir Float4E2M1;
    Float8E8M0 = 24, "FLOAT8E8M0", bits 8, ir Float8E8M0;
    Uint2 = 25, "UINT2", bits 2, ir Uint2;
    Int2 = 26, "INT2", bits 2, ir Int2;
}

impl DType {
    /// The ONNX `TensorProto.DataType` value.
    pub const fn onnx(self) -> i32 {
        self as i32
    }

    /// The runtime type of an rge-ir type; `None` for GE-only types with no ONNX counterpart
    /// (the quantized DT_Q* types run as the plain integer of their width).
    pub fn from_ir(dt: DataType) -> Option<DType> {
        use DataType as D;
        Some(match dt {
            D::Float => DType::Float,
            D::Uint8 => DType::Uint8,
            D::Int8 => DType::Int8,
            D::Uint16 => DType::Uint16,
            D::Int16 => DType::Int16,
            D::Int32 => DType::Int32,
            D::Int64 => DType::Int64,
            D::String => DType::String,
            D::Bool => DType::Bool,
            D::Float16 => DType::Float16,
            D::Double => DType::Double,
            D::Uint32 => DType::Uint32,
            D::Uint64 => DType::Uint64,
            D::Complex64 => DType::Complex64,
            D::Complex128 => DType::Complex128,
            D::Bf16 => DType::Bfloat16,
            D::Float8E4M3Fn => DType::Float8E4M3Fn,
            D::Float8E4M3Fnuz => DType::Float8E4M3Fnuz,
            D::Float8E5M2 => DType::Float8E5M2,
            D::Float8E5M2Fnuz => DType::Float8E5M2Fnuz,
            D::Int4 => DType::Int4,
            D::Uint4 => DType::Uint4,
            D::Float4E2M1 => DType::Float4E2M1,
            D::Float8E8M0 => DType::Float8E8M0,
            D::Uint2 => DType::Uint2,
            D::Int2 => DType::Int2,
            D::Qint8 => DType::Int8,
            D::Quint8 => DType::Uint8,
            D::Qint16 => DType::Int16,
            D::Quint16 => DType::Uint16,
            D::Qint32 => DType::Int32,
            _ => return None,
        })
    }

    /// The runtime type a tensor desc describes.
    pub fn from_desc(desc: &TensorDesc) -> Option<DType> {
        DType::from_ir(desc.dtype())
    }

    /// Bytes needed for `n` elements (sub-byte types packed, rounded up; strings: 0).
    pub const fn bytes_for(self, n: usize) -> usize {
        (n * self.bits() as usize).div_ceil(8)
    }

    /// True for strings (stored as a `Vec<String>`, not bytes).
    pub const fn is_string(self) -> bool {
        matches!(self, DType::String)
    }

    /// True for real floating types (float8/float4 included).
    pub const fn is_float(self) -> bool {
        matches!(
            self,
            DType::Float
                | DType::Float16
                | DType::Double
                | DType::Bfloat16
                | DType::Float8E4M3Fn
                | DType::Float8E4M3Fnuz
                | DType::Float8E5M2
                | DType::Float8E5M2Fnuz
                | DType::Float4E2M1
                | DType::Float8E8M0
        )
    }

    /// True for integer types (sub-byte included; not bool).
    pub const fn is_integer(self) -> bool {
        matches!(
            self,
            DType::Uint8
                | DType::Int8
                | DType::Uint16
                | DType::Int16
                | DType::Int32
                | DType::Int64
                | DType::Uint32
                | DType::Uint64
                | DType::Uint4
                | DType::Int4
                | DType::Uint2
                | DType::Int2
        )
    }

    /// True for signed integer types.
    pub const fn is_signed_integer(self) -> bool {
        matches!(
            self,
            DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64 | DType::Int4 | DType::Int2
        )
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn onnx_codes_round_trip() {
        for &dt in DType::ALL {
            assert_eq!(DType::from_onnx(dt.onnx()), Some(dt));
        }
        assert_eq!(DType::from_onnx(0), None);
    }

    #[test]
    fn ir_types_are_lossless_for_every_onnx_type() {
        for &dt in DType::ALL {
            assert_eq!(DType::from_ir(dt.to_ir()), Some(dt), "{dt}");
            if !dt.is_string() {
                assert_eq!(dt.to_ir().bits(), Some(dt.bits()), "{dt}");
            }
        }
        let mut desc = TensorDesc::default();
        desc.set_dtype(DataType::Uint8);
        assert_eq!(DType::from_desc(&desc), Some(DType::Uint8));
        desc.set_dtype(DataType::Float8E4M3Fnuz);
        assert_eq!(DType::from_desc(&desc), Some(DType::Float8E4M3Fnuz));
        desc.set_dtype(DataType::Uint4);
        assert_eq!(DType::from_desc(&desc), Some(DType::Uint4));
    }

    #[test]
    fn packed_sizes() {
        assert_eq!(DType::Int4.bytes_for(3), 2);
        assert_eq!(DType::Float.bytes_for(3), 12);
        assert_eq!(DType::Uint2.bytes_for(5), 2);
    }
}
