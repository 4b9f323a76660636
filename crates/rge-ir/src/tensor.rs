//! Tensors with data (`ge::GeTensor` / `TensorDef`): a descriptor plus little-endian bytes.

use bytes::Bytes;

use crate::dtype::DataType;
use crate::error::{IrError, Result};
use crate::format::Format;
use crate::shape::Shape;
use crate::tensor_desc::TensorDesc;

/// A tensor: its descriptor and its raw data (little-endian, packed as GE stores it).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Tensor {
    /// The descriptor.
    pub desc: TensorDesc,
    /// The data bytes.
    pub data: Bytes,
}

macro_rules! numeric {
    ($($from:ident, $as:ident, $scalar:ident: $t:ty => $dt:ident;)*) => {
        impl Tensor {
            $(
                #[doc = concat!("A `", stringify!($dt), "` tensor in format ND with the given values. ",
                                "Does not check the count against `shape`; see [`Tensor::validate`].")]
                pub fn $from(shape: Shape, values: &[$t]) -> Self {
                    let mut data = Vec::with_capacity(values.len() * std::mem::size_of::<$t>());
                    for v in values {
                        data.extend_from_slice(&v.to_le_bytes());
                    }
                    Tensor::new(
                        TensorDesc::new(shape, DataType::$dt, Format::ND),
                        Bytes::from(data),
                    )
                }

                #[doc = concat!("Decodes the data as `", stringify!($t), "`; errors unless the data type is `",
                                stringify!($dt), "` and the data length fits the shape.")]
                pub fn $as(&self) -> Result<Vec<$t>> {
                    const N: usize = std::mem::size_of::<$t>();
                    self.check_decode(DataType::$dt, N)?;
                    Ok(self
                        .data
                        .chunks_exact(N)
                        .map(|c| <$t>::from_le_bytes(c.try_into().expect("chunk of N bytes")))
                        .collect())
                }
            )*
            $(
                #[doc = concat!("A scalar `", stringify!($dt), "` tensor.")]
                pub fn $scalar(v: $t) -> Self {
                    Tensor::$from(Shape::scalar(), &[v])
                }
            )*
        }
    };
}

numeric! {
    from_f32, as_f32, scalar_f32: f32 => Float;
    from_i64, as_i64, scalar_i64: i64 => Int64;
    from_i32, as_i32, scalar_i32: i32 => Int32;
    from_u8, as_u8, scalar_u8: u8 => Uint8;
}

impl Tensor {
    /// A tensor from a descriptor and its data.
    pub fn new(desc: TensorDesc, data: impl Into<Bytes>) -> Self {
        Tensor {
            desc,
            data: data.into(),
        }
    }

    /// Checks the shape and, when the shape is known and the data type has a fixed size, that
    /// the data length equals the described byte size. String types are exempt.
    pub fn validate(&self) -> Result<()> {
        self.desc.shape().validate()?;
        let dt = self.desc.dtype();
        if matches!(dt, DataType::String | DataType::StringRef) {
            return Ok(());
        }
        match self.desc.shape().byte_size(dt)? {
            Some(n) if usize::try_from(n).ok() != Some(self.data.len()) => Err(IrError::Invalid {
                what: "tensor data",
                value: format!(
                    "{} bytes for a {dt} tensor of shape {} ({n} bytes expected)",
                    self.data.len(),
                    self.desc.shape()
                ),
            }),
            _ => Ok(()),
        }
    }

    fn check_decode(&self, want: DataType, elem: usize) -> Result<()> {
        let dt = self.desc.dtype();
        if dt != want {
            return Err(IrError::Invalid {
                what: "tensor data type",
                value: format!("{dt}, expected {want}"),
            });
        }
        let ok = match self.desc.shape().byte_size(dt)? {
            Some(n) => usize::try_from(n).ok() == Some(self.data.len()),
            None => self.data.len() % elem == 0,
        };
        if ok {
            Ok(())
        } else {
            Err(IrError::Invalid {
                what: "tensor data",
                value: format!(
                    "{} bytes do not fit a {dt} tensor of shape {}",
                    self.data.len(),
                    self.desc.shape()
                ),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let t = Tensor::from_f32(Shape::new([2]), &[1.5, -2.0]);
        assert_eq!(t.desc.dtype(), DataType::Float);
        assert_eq!(t.desc.format(), Format::ND);
        assert_eq!(&t.data[..], &[0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0]);
        assert_eq!(t.as_f32().unwrap(), vec![1.5, -2.0]);
        t.validate().unwrap();
        let t = Tensor::from_i64(Shape::new([3]), &[1, -1, i64::MAX]);
        assert_eq!(t.as_i64().unwrap(), vec![1, -1, i64::MAX]);
        let t = Tensor::from_i32(Shape::new([1, 2]), &[7, 8]);
        assert_eq!(t.as_i32().unwrap(), vec![7, 8]);
        let t = Tensor::from_u8(Shape::new([2]), &[1, 255]);
        assert_eq!(t.as_u8().unwrap(), vec![1, 255]);
        assert_eq!(Tensor::scalar_i64(4).as_i64().unwrap(), vec![4]);
        assert_eq!(Tensor::scalar_f32(0.5).desc.shape(), &Shape::scalar());
        assert_eq!(Tensor::scalar_i32(3).data.len(), 4);
        assert_eq!(Tensor::scalar_u8(3).data.len(), 1);
    }

    #[test]
    fn decode_errors() {
        let t = Tensor::from_i32(Shape::new([2]), &[1, 2]);
        let e = t.as_f32().unwrap_err();
        assert!(e.to_string().contains("DT_INT32"), "{e}");
        let bad = Tensor::from_f32(Shape::new([3]), &[1.0, 2.0]);
        assert!(bad.as_f32().is_err());
        assert!(bad.validate().is_err());
        // Unknown shape: any whole number of elements decodes.
        let dynamic = Tensor::from_f32(Shape::new([-1]), &[1.0, 2.0]);
        assert_eq!(dynamic.as_f32().unwrap().len(), 2);
        dynamic.validate().unwrap();
        let ragged = Tensor::new(dynamic.desc.clone(), vec![0u8; 5]);
        assert!(ragged.as_f32().is_err());
    }

    #[test]
    fn validate_rules() {
        let s = Tensor::new(
            TensorDesc::with_shape_dtype(Shape::new([2]), DataType::String),
            b"anything".to_vec(),
        );
        s.validate().unwrap();
        let packed = Tensor::new(
            TensorDesc::with_shape_dtype(Shape::new([3]), DataType::Int4),
            vec![0u8; 2],
        );
        packed.validate().unwrap();
        let undef = Tensor::new(TensorDesc::default(), vec![1u8, 2, 3]);
        undef.validate().unwrap();
        let bad_shape = Tensor::new(
            TensorDesc::with_shape_dtype(Shape::new([-3]), DataType::Float),
            Vec::<u8>::new(),
        );
        assert!(bad_shape.validate().is_err());
        assert_eq!(Tensor::default().data.len(), 0);
    }
}
