//! Runtime tensors: [`Tensor`] (owned) and [`TensorRef`] (a borrowed view the runtime builds
//! over its arena or over an owned tensor). Data is row-major; sub-byte types are packed as
//! ONNX packs them (low nibble first); strings are a `Vec<String>`.

use ndarray::{ArrayViewD, IxDyn};
use smallvec::SmallVec;

use crate::buffer::Buffer;
use crate::dtype::DType;
use crate::elem::{as_bytes, cast_pod, cast_slice, cast_slice_mut, may_view, Elem};
use crate::error::{KernelError, KernelResult};

/// Dims of a runtime tensor.
pub type Dims = SmallVec<[usize; 4]>;

/// Element count of `shape`, `None` on overflow.
#[inline]
pub fn element_count(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))
}

/// Tensor data: bytes, or strings.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    Bytes(Buffer),
    Strings(Vec<String>),
}

/// An owned tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    dtype: DType,
    shape: Dims,
    data: TensorData,
}

/// Borrowed data of a [`TensorRef`].
#[derive(Clone, Copy, Debug)]
pub enum DataRef<'a> {
    Bytes(&'a [u8]),
    Strings(&'a [String]),
}

/// A borrowed tensor.
#[derive(Clone, Copy, Debug)]
pub struct TensorRef<'a> {
    dtype: DType,
    shape: &'a [usize],
    data: DataRef<'a>,
}

fn check_len(dtype: DType, shape: &[usize], have: usize) -> KernelResult<()> {
    let n = element_count(shape)
        .ok_or_else(|| KernelError::invalid(format!("shape {shape:?} overflows")))?;
    let want = dtype.bytes_for(n);
    if have != want {
        return Err(KernelError::invalid(format!(
            "{dtype} tensor of shape {shape:?} needs {want} bytes, got {have}"
        )));
    }
    Ok(())
}

fn check_bools(dtype: DType, bytes: &[u8]) -> KernelResult<()> {
    if dtype == DType::Bool && bytes.iter().any(|&b| b > 1) {
        return Err(KernelError::invalid(
            "bool tensor holds a byte other than 0 or 1",
        ));
    }
    Ok(())
}

impl Tensor {
    /// A zero-filled tensor (empty strings for STRING).
    pub fn zeros(dtype: DType, shape: &[usize]) -> KernelResult<Self> {
        let n = element_count(shape)
            .ok_or_else(|| KernelError::invalid(format!("shape {shape:?} overflows")))?;
        let data = if dtype.is_string() {
            TensorData::Strings(vec![String::new(); n])
        } else {
            TensorData::Bytes(Buffer::zeroed(dtype.bytes_for(n)))
        };
        Ok(Tensor {
            dtype,
            shape: Dims::from_slice(shape),
            data,
        })
    }

    /// A tensor from typed elements; errors when the count does not fit the shape.
    pub fn from_vec<T: Elem>(shape: &[usize], values: Vec<T>) -> KernelResult<Self> {
        Tensor::from_slice(shape, &values)
    }

    /// A tensor copied from typed elements.
    pub fn from_slice<T: Elem>(shape: &[usize], values: &[T]) -> KernelResult<Self> {
        Tensor::from_bytes(T::DTYPE, shape, as_bytes(values))
    }

    /// A scalar.
    pub fn scalar<T: Elem>(v: T) -> Self {
        Tensor::from_slice(&[], &[v]).expect("one element fits a scalar")
    }

    /// A tensor copied from raw bytes, checked against the shape (and bools against 0/1).
    pub fn from_bytes(dtype: DType, shape: &[usize], bytes: &[u8]) -> KernelResult<Self> {
        if dtype.is_string() {
            return Err(KernelError::invalid(
                "string tensors hold strings, not bytes",
            ));
        }
        check_len(dtype, shape, bytes.len())?;
        check_bools(dtype, bytes)?;
        Ok(Tensor {
            dtype,
            shape: Dims::from_slice(shape),
            data: TensorData::Bytes(Buffer::from_bytes(bytes)),
        })
    }

    /// A tensor over `bytes`, shared without a copy when they are 16-byte aligned (checked like
    /// [`Tensor::from_bytes`]).
    pub fn from_shared_bytes(
        dtype: DType,
        shape: &[usize],
        bytes: bytes::Bytes,
    ) -> KernelResult<Self> {
        if dtype.is_string() {
            return Err(KernelError::invalid(
                "string tensors hold strings, not bytes",
            ));
        }
        check_len(dtype, shape, bytes.len())?;
        check_bools(dtype, &bytes)?;
        Ok(Tensor {
            dtype,
            shape: Dims::from_slice(shape),
            data: TensorData::Bytes(Buffer::from_shared(bytes)),
        })
    }

    /// The tensor with its data released: same dtype and shape, no bytes (what a program keeps
    /// of a constant whose every reader absorbed it, `Kernel::absorbed_inputs`). Reading its
    /// bytes is an error.
    pub fn released(&self) -> Self {
        Tensor {
            dtype: self.dtype,
            shape: self.shape.clone(),
            data: match &self.data {
                TensorData::Bytes(_) => TensorData::Bytes(Buffer::default()),
                TensorData::Strings(s) => TensorData::Strings(s.clone()),
            },
        }
    }

    /// A tensor owning `buffer` (checked like [`Tensor::from_bytes`]).
    pub fn from_buffer(dtype: DType, shape: &[usize], buffer: Buffer) -> KernelResult<Self> {
        if dtype.is_string() {
            return Err(KernelError::invalid(
                "string tensors hold strings, not bytes",
            ));
        }
        check_len(dtype, shape, buffer.len())?;
        check_bools(dtype, buffer.as_slice())?;
        Ok(Tensor {
            dtype,
            shape: Dims::from_slice(shape),
            data: TensorData::Bytes(buffer),
        })
    }

    /// A string tensor.
    pub fn from_strings(shape: &[usize], values: Vec<String>) -> KernelResult<Self> {
        let n = element_count(shape)
            .ok_or_else(|| KernelError::invalid(format!("shape {shape:?} overflows")))?;
        if n != values.len() {
            return Err(KernelError::invalid(format!(
                "string tensor of shape {shape:?} needs {n} strings, got {}",
                values.len()
            )));
        }
        Ok(Tensor {
            dtype: DType::String,
            shape: Dims::from_slice(shape),
            data: TensorData::Strings(values),
        })
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The dims.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element count.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The data.
    pub fn data(&self) -> &TensorData {
        &self.data
    }

    /// The data, taken (a runtime recycles the buffer).
    pub fn into_data(self) -> TensorData {
        self.data
    }

    /// A borrowed view.
    pub fn view(&self) -> TensorRef<'_> {
        TensorRef {
            dtype: self.dtype,
            shape: &self.shape,
            data: match &self.data {
                TensorData::Bytes(b) => DataRef::Bytes(b.as_slice()),
                TensorData::Strings(s) => DataRef::Strings(s),
            },
        }
    }

    /// Typed elements (see [`TensorRef::as_slice`]).
    pub fn as_slice<T: Elem>(&self) -> KernelResult<&[T]> {
        self.view().as_slice()
    }

    /// Typed elements, mutable.
    pub fn as_mut_slice<T: Elem>(&mut self) -> KernelResult<&mut [T]> {
        if !may_view::<T>(self.dtype) {
            return Err(KernelError::invalid(format!(
                "{} tensor read as {}",
                self.dtype,
                T::DTYPE
            )));
        }
        match &mut self.data {
            TensorData::Bytes(b) => cast_slice_mut(b.as_mut_slice())
                .ok_or_else(|| KernelError::invalid("misaligned tensor data")),
            TensorData::Strings(_) => Err(KernelError::invalid("string tensor read as numbers")),
        }
    }

    /// Same data, new dims (element count must match).
    pub fn reshaped(mut self, shape: &[usize]) -> KernelResult<Self> {
        if element_count(shape) != Some(self.len()) {
            return Err(KernelError::invalid(format!(
                "cannot reshape {:?} to {shape:?}",
                self.shape
            )));
        }
        self.shape = Dims::from_slice(shape);
        Ok(self)
    }

    /// Relabels the element type of byte data with one of the same bit width (e.g. bytes
    /// read as UINT8 that are FLOAT8E4M3FNUZ).
    pub fn with_dtype(mut self, dtype: DType) -> KernelResult<Self> {
        if dtype.bits() != self.dtype.bits() || dtype.is_string() || self.dtype.is_string() {
            return Err(KernelError::invalid(format!(
                "cannot relabel {} as {dtype}",
                self.dtype
            )));
        }
        if let TensorData::Bytes(b) = &self.data {
            check_bools(dtype, b.as_slice())?;
        }
        self.dtype = dtype;
        Ok(self)
    }
}

impl<'a> TensorRef<'a> {
    /// A view over raw bytes, checked against the shape (and bools against 0/1).
    pub fn new(dtype: DType, shape: &'a [usize], bytes: &'a [u8]) -> KernelResult<Self> {
        if dtype.is_string() {
            return Err(KernelError::invalid(
                "string tensors hold strings, not bytes",
            ));
        }
        check_len(dtype, shape, bytes.len())?;
        check_bools(dtype, bytes)?;
        Ok(TensorRef {
            dtype,
            shape,
            data: DataRef::Bytes(bytes),
        })
    }

    /// A view over raw bytes the caller vouches for (length fits, bools are 0/1): the runtime
    /// uses it for memory its own kernels wrote. Length is still checked in debug builds.
    pub fn new_trusted(dtype: DType, shape: &'a [usize], bytes: &'a [u8]) -> Self {
        debug_assert!(check_len(dtype, shape, bytes.len()).is_ok());
        TensorRef {
            dtype,
            shape,
            data: DataRef::Bytes(bytes),
        }
    }

    /// A view over strings.
    pub fn strings(shape: &'a [usize], values: &'a [String]) -> KernelResult<Self> {
        if element_count(shape) != Some(values.len()) {
            return Err(KernelError::invalid(format!(
                "string tensor of shape {shape:?} has {} strings",
                values.len()
            )));
        }
        Ok(TensorRef {
            dtype: DType::String,
            shape,
            data: DataRef::Strings(values),
        })
    }

    /// The element type.
    #[inline]
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// The dims.
    pub fn shape(&self) -> &'a [usize] {
        self.shape
    }

    /// The rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The element count.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The data.
    pub fn data(&self) -> DataRef<'a> {
        self.data
    }

    /// The raw bytes; errors for strings.
    #[inline]
    pub fn bytes(&self) -> KernelResult<&'a [u8]> {
        match self.data {
            DataRef::Bytes(b) if b.is_empty() && self.shape.iter().all(|&d| d > 0) => {
                // Only a released constant has no bytes for a non-empty shape.
                Err(KernelError::invalid(
                    "the data of this constant was released into a kernel's packed copy",
                ))
            }
            DataRef::Bytes(b) => Ok(b),
            DataRef::Strings(_) => Err(KernelError::invalid("string tensor read as bytes")),
        }
    }

    /// The strings; errors for other types.
    pub fn as_strings(&self) -> KernelResult<&'a [String]> {
        match self.data {
            DataRef::Strings(s) => Ok(s),
            DataRef::Bytes(_) => Err(KernelError::invalid(format!(
                "{} tensor read as strings",
                self.dtype
            ))),
        }
    }

    /// Typed elements; errors unless `T` is the tensor's type (or `u8` over a one-byte type).
    pub fn as_slice<T: Elem>(&self) -> KernelResult<&'a [T]> {
        if !may_view::<T>(self.dtype) {
            return Err(KernelError::invalid(format!(
                "{} tensor read as {}",
                self.dtype,
                T::DTYPE
            )));
        }
        cast_slice(self.bytes()?)
            .ok_or_else(|| KernelError::invalid("misaligned tensor data (or a bool byte not 0/1)"))
    }

    /// The elements as words of the element's width (`u8`, `u16`, `u32`, `u64`, `u128`) for
    /// kernels that move data without reading it (`dispatch_by_size!`); any non-string type
    /// whose element is exactly `T`'s size.
    pub fn as_raw<T: bytemuck::Pod>(&self) -> KernelResult<&'a [T]> {
        if self.dtype.bits() as usize != std::mem::size_of::<T>() * 8 {
            return Err(KernelError::invalid(format!(
                "{} tensor read as {}-byte words",
                self.dtype,
                std::mem::size_of::<T>()
            )));
        }
        cast_pod(self.bytes()?).ok_or_else(|| KernelError::invalid("misaligned tensor data"))
    }

    /// An ndarray view of the elements.
    pub fn array<T: Elem>(&self) -> KernelResult<ArrayViewD<'a, T>> {
        let s = self.as_slice::<T>()?;
        ArrayViewD::from_shape(IxDyn(self.shape), s)
            .map_err(|e| KernelError::invalid(format!("tensor view: {e}")))
    }

    /// The elements as i64 (any integer type or bool); for shape-like inputs.
    pub fn to_i64_vec(&self) -> KernelResult<Vec<i64>> {
        Ok(match self.dtype {
            DType::Int64 => self.as_slice::<i64>()?.to_vec(),
            DType::Int32 => self.as_slice::<i32>()?.iter().map(|&v| v as i64).collect(),
            DType::Int16 => self.as_slice::<i16>()?.iter().map(|&v| v as i64).collect(),
            DType::Int8 => self.as_slice::<i8>()?.iter().map(|&v| v as i64).collect(),
            DType::Uint8 => self.as_slice::<u8>()?.iter().map(|&v| v as i64).collect(),
            DType::Uint16 => self.as_slice::<u16>()?.iter().map(|&v| v as i64).collect(),
            DType::Uint32 => self.as_slice::<u32>()?.iter().map(|&v| v as i64).collect(),
            DType::Uint64 => self.as_slice::<u64>()?.iter().map(|&v| v as i64).collect(),
            DType::Bool => self.as_slice::<bool>()?.iter().map(|&v| v as i64).collect(),
            dt => {
                return Err(KernelError::invalid(format!(
                    "expected an integer tensor, got {dt}"
                )))
            }
        })
    }

    /// The elements as i64 from an integer tensor, or from a float one whose values are whole
    /// numbers (old op versions give sizes in the data's type: Split 1, Tile 1).
    pub fn to_whole_i64_vec(&self) -> KernelResult<Vec<i64>> {
        if !matches!(
            self.dtype,
            DType::Float | DType::Double | DType::Float16 | DType::Bfloat16
        ) {
            return self.to_i64_vec();
        }
        self.to_f64_vec()?
            .into_iter()
            .map(|x| {
                if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.0e15 {
                    Ok(x as i64)
                } else {
                    Err(KernelError::invalid(format!("{x} is not a whole number")))
                }
            })
            .collect()
    }

    /// The elements as f64 (any real numeric type); for scalars and small parameters.
    pub fn to_f64_vec(&self) -> KernelResult<Vec<f64>> {
        Ok(match self.dtype {
            DType::Float => self.as_slice::<f32>()?.iter().map(|&v| v as f64).collect(),
            DType::Double => self.as_slice::<f64>()?.to_vec(),
            DType::Float16 => self
                .as_slice::<half::f16>()?
                .iter()
                .map(|v| v.to_f64())
                .collect(),
            DType::Bfloat16 => self
                .as_slice::<half::bf16>()?
                .iter()
                .map(|v| v.to_f64())
                .collect(),
            _ => self.to_i64_vec()?.into_iter().map(|v| v as f64).collect(),
        })
    }

    /// An owned copy.
    pub fn to_owned(&self) -> Tensor {
        Tensor {
            dtype: self.dtype,
            shape: Dims::from_slice(self.shape),
            data: match self.data {
                DataRef::Bytes(b) => TensorData::Bytes(Buffer::from_bytes(b)),
                DataRef::Strings(s) => TensorData::Strings(s.to_vec()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typed_views_check_type_and_size() {
        let t = Tensor::from_vec(&[2, 2], vec![1.0f32, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(t.as_slice::<f32>().unwrap(), &[1.0, 2.0, 3.0, 4.0]);
        assert!(t.as_slice::<i32>().is_err());
        assert!(Tensor::from_vec(&[3], vec![1.0f32]).is_err());
        assert_eq!(t.view().array::<f32>().unwrap()[[1, 0]], 3.0);
    }

    #[test]
    fn bools_are_validated() {
        assert!(Tensor::from_bytes(DType::Bool, &[2], &[0, 2]).is_err());
        let t = Tensor::from_bytes(DType::Bool, &[2], &[0, 1]).unwrap();
        assert_eq!(t.as_slice::<bool>().unwrap(), &[false, true]);
    }

    #[test]
    fn packed_types_and_relabel() {
        let t = Tensor::from_bytes(DType::Int4, &[3], &[0x21, 0x03]).unwrap();
        assert!(Tensor::from_bytes(DType::Int4, &[3], &[0x21]).is_err());
        assert!(t.with_dtype(DType::Uint8).is_err());
        let u = Tensor::from_vec(&[1], vec![7u8]).unwrap();
        assert_eq!(
            u.with_dtype(DType::Float8E4M3Fnuz).unwrap().dtype(),
            DType::Float8E4M3Fnuz
        );
    }
}
