//! Small constant values carried through inference, so that shape-computing subgraphs
//! (Shape → Gather → Concat → Reshape, ConstantOfShape, Range …) fold and dims become known.
//!
//! Integers and bools are kept as `i64`, floating types as `f64`. Only tensors of at most
//! [`MAX_VALUE_ELEMENTS`] elements are kept; anything bigger is "not known".

use rge_ir::{DataType, Shape, Tensor};

use crate::error::OpResult;

/// The largest tensor whose values the pass keeps.
pub const MAX_VALUE_ELEMENTS: usize = 4096;

/// The element data of a [`Value`].
#[derive(Debug, Clone, PartialEq)]
pub enum ValueData {
    /// Integers and bools (0/1).
    Int(Vec<i64>),
    /// Floating-point types.
    Float(Vec<f64>),
}

/// A known tensor value: data type, dims and row-major elements.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    pub dtype: DataType,
    pub dims: Vec<i64>,
    pub data: ValueData,
}

/// True for the types kept as `i64`.
pub fn is_int_like(dt: DataType) -> bool {
    dt.is_integer() || dt == DataType::Bool
}

impl Value {
    /// An int value of `dtype` (an integer type or bool) with `dims`.
    pub fn ints(dtype: DataType, dims: Vec<i64>, data: Vec<i64>) -> Self {
        Value {
            dtype,
            dims,
            data: ValueData::Int(data),
        }
    }

    /// A float value of `dtype` with `dims`.
    pub fn floats(dtype: DataType, dims: Vec<i64>, data: Vec<f64>) -> Self {
        Value {
            dtype,
            dims,
            data: ValueData::Float(data),
        }
    }

    /// A 1-D int64 value.
    pub fn i64_vec(data: Vec<i64>) -> Self {
        let n = data.len() as i64;
        Value::ints(DataType::Int64, vec![n], data)
    }

    /// A value from `f64` elements, stored as the kind `dtype` calls for (ints truncate).
    pub fn from_f64s(dtype: DataType, dims: Vec<i64>, data: Vec<f64>) -> Self {
        if is_int_like(dtype) {
            Value::ints(dtype, dims, data.into_iter().map(|x| x as i64).collect())
        } else {
            Value::floats(dtype, dims, data)
        }
    }

    pub fn len(&self) -> usize {
        match &self.data {
            ValueData::Int(v) => v.len(),
            ValueData::Float(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn shape(&self) -> Shape {
        Shape::from_slice(&self.dims)
    }

    /// The elements as `i64` (floats truncated toward zero).
    pub fn as_i64(&self) -> Vec<i64> {
        match &self.data {
            ValueData::Int(v) => v.clone(),
            ValueData::Float(v) => v.iter().map(|&x| x as i64).collect(),
        }
    }

    /// The elements as `f64`.
    pub fn as_f64(&self) -> Vec<f64> {
        match &self.data {
            ValueData::Int(v) => v.iter().map(|&x| x as f64).collect(),
            ValueData::Float(v) => v.clone(),
        }
    }

    /// Element `i` as `f64`.
    pub fn get_f64(&self, i: usize) -> f64 {
        match &self.data {
            ValueData::Int(v) => v[i] as f64,
            ValueData::Float(v) => v[i],
        }
    }

    /// Element `i` as `i64`.
    pub fn get_i64(&self, i: usize) -> i64 {
        match &self.data {
            ValueData::Int(v) => v[i],
            ValueData::Float(v) => v[i] as i64,
        }
    }

    /// The same elements under another data type (as Cast does; floats to ints truncate,
    /// to bool compare with zero).
    pub fn cast(&self, to: DataType) -> Value {
        let data = if to == DataType::Bool {
            ValueData::Int(self.as_f64().iter().map(|&x| i64::from(x != 0.0)).collect())
        } else if is_int_like(to) {
            ValueData::Int(self.as_i64())
        } else {
            ValueData::Float(self.as_f64())
        };
        Value {
            dtype: to,
            dims: self.dims.clone(),
            data,
        }
    }

    /// Decodes a tensor attribute's data when it is small and of a supported type.
    pub fn from_tensor(t: &Tensor) -> Option<Value> {
        let dims = t.desc.shape().dims().to_vec();
        let count = t.desc.shape().element_count().ok()??;
        if count as usize > MAX_VALUE_ELEMENTS {
            return None;
        }
        let n = count as usize;
        let b = &t.data[..];
        let dt = t.desc.dtype();
        let elem = dt.byte_size()? as usize;
        if b.len() != n * elem {
            return None;
        }
        use DataType::*;
        let chunks = b.chunks_exact(elem);
        let data = match dt {
            Int64 => ValueData::Int(
                chunks
                    .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            Int32 => ValueData::Int(
                chunks
                    .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as i64)
                    .collect(),
            ),
            Int16 => ValueData::Int(
                chunks
                    .map(|c| i16::from_le_bytes(c.try_into().unwrap()) as i64)
                    .collect(),
            ),
            Int8 => ValueData::Int(chunks.map(|c| c[0] as i8 as i64).collect()),
            Uint8 | Bool => ValueData::Int(chunks.map(|c| c[0] as i64).collect()),
            Uint16 => ValueData::Int(
                chunks
                    .map(|c| u16::from_le_bytes(c.try_into().unwrap()) as i64)
                    .collect(),
            ),
            Uint32 => ValueData::Int(
                chunks
                    .map(|c| u32::from_le_bytes(c.try_into().unwrap()) as i64)
                    .collect(),
            ),
            Uint64 => ValueData::Int(
                chunks
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap()) as i64)
                    .collect(),
            ),
            Float => ValueData::Float(
                chunks
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
                    .collect(),
            ),
            Double => ValueData::Float(
                chunks
                    .map(|c| f64::from_le_bytes(c.try_into().unwrap()))
                    .collect(),
            ),
            _ => return None,
        };
        Some(Value {
            dtype: dt,
            dims,
            data,
        })
    }

    /// Reads an index value (int64/int32 or any int) as `Vec<i64>`; an error names `what`.
    pub fn indices(&self, what: &str) -> OpResult<Vec<i64>> {
        match &self.data {
            ValueData::Int(v) => Ok(v.clone()),
            ValueData::Float(_) => Err(crate::error::OpError(format!(
                "{what} must be an integer tensor, got {}",
                self.dtype
            ))),
        }
    }
}

/// Row-major strides of `dims`.
pub fn strides(dims: &[i64]) -> Vec<usize> {
    let mut s = vec![1usize; dims.len()];
    for i in (0..dims.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * dims[i + 1].max(0) as usize;
    }
    s
}

/// The element count of fully known `dims`, if it is at most [`MAX_VALUE_ELEMENTS`].
pub fn small_count(dims: &[i64]) -> Option<usize> {
    let mut n: usize = 1;
    for &d in dims {
        if d < 0 {
            return None;
        }
        n = n.checked_mul(d as usize)?;
        if n > MAX_VALUE_ELEMENTS {
            return None;
        }
    }
    Some(n)
}
