//! Runtime values: a tensor, a sequence of tensors, an optional (ONNX's three value kinds), and
//! ai.onnx.ml's maps and sequences of maps.

use crate::dtype::DType;
use crate::error::{KernelError, KernelResult};
use crate::tensor::{Tensor, TensorRef};

/// An owned value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Tensor(Tensor),
    /// A sequence; `elem` is the element type (known even when empty).
    Sequence {
        elem: DType,
        items: Vec<Tensor>,
    },
    /// An optional; `None` is an empty optional of the given inner kind.
    Optional(Option<Box<Value>>),
    /// A map (ai.onnx.ml's `map(K, V)`).
    Map(MapValue),
    /// A sequence of maps (ZipMap's output); `key`/`value` are the maps' types (known even
    /// when empty).
    MapSequence {
        key: DType,
        value: DType,
        items: Vec<MapValue>,
    },
}

/// A map: keys and values as two 1-D tensors of one length, entry `i` being
/// `keys[i] -> values[i]`, in the order the producer wrote them; keys are distinct.
#[derive(Clone, Debug, PartialEq)]
pub struct MapValue {
    keys: Tensor,
    values: Tensor,
}

impl MapValue {
    /// A map of `keys[i] -> values[i]`: both 1-D of one length, keys int64 or string and
    /// distinct.
    pub fn new(keys: Tensor, values: Tensor) -> KernelResult<Self> {
        if keys.shape().len() != 1 || values.shape().len() != 1 {
            return Err(KernelError::invalid(format!(
                "a map's keys and values must be 1-D, got {:?} and {:?}",
                keys.shape(),
                values.shape()
            )));
        }
        if keys.shape() != values.shape() {
            return Err(KernelError::invalid(format!(
                "a map has {} keys but {} values",
                keys.shape()[0],
                values.shape()[0]
            )));
        }
        let distinct = match keys.dtype() {
            DType::Int64 => {
                let k = keys.as_slice::<i64>()?;
                k.iter().collect::<std::collections::HashSet<_>>().len() == k.len()
            }
            DType::String => {
                let k = keys.view().as_strings()?;
                k.iter().collect::<std::collections::HashSet<_>>().len() == k.len()
            }
            other => {
                return Err(KernelError::unsupported(format!(
                    "map keys of type {other} (int64 and string are supported)"
                )))
            }
        };
        if !distinct {
            return Err(KernelError::invalid("a map's keys repeat"));
        }
        Ok(MapValue { keys, values })
    }

    pub fn keys(&self) -> &Tensor {
        &self.keys
    }

    pub fn values(&self) -> &Tensor {
        &self.values
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.keys.shape()[0]
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A borrowed value, as kernels receive inputs.
#[derive(Clone, Copy, Debug)]
pub enum ValueRef<'a> {
    Tensor(TensorRef<'a>),
    Sequence {
        elem: DType,
        items: &'a [Tensor],
    },
    Optional(Option<&'a Value>),
    Map(&'a MapValue),
    MapSequence {
        key: DType,
        value: DType,
        items: &'a [MapValue],
    },
}

impl Value {
    /// A borrowed view.
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Tensor(t) => ValueRef::Tensor(t.view()),
            Value::Sequence { elem, items } => ValueRef::Sequence { elem: *elem, items },
            Value::Optional(v) => ValueRef::Optional(v.as_deref()),
            Value::Map(m) => ValueRef::Map(m),
            Value::MapSequence { key, value, items } => ValueRef::MapSequence {
                key: *key,
                value: *value,
                items,
            },
        }
    }

    /// The tensor, or an error naming the kind found.
    pub fn into_tensor(self) -> KernelResult<Tensor> {
        match self {
            Value::Tensor(t) => Ok(t),
            other => Err(KernelError::invalid(format!(
                "expected a tensor, got {}",
                other.kind()
            ))),
        }
    }

    /// The tensor, borrowed.
    pub fn as_tensor(&self) -> Option<&Tensor> {
        match self {
            Value::Tensor(t) => Some(t),
            _ => None,
        }
    }

    /// "tensor", "sequence", "optional", "map" or "sequence of maps".
    pub fn kind(&self) -> &'static str {
        self.as_ref().kind()
    }
}

impl From<Tensor> for Value {
    fn from(t: Tensor) -> Self {
        Value::Tensor(t)
    }
}

impl<'a> ValueRef<'a> {
    /// The tensor, or an error naming the kind found.
    pub fn tensor(&self) -> KernelResult<TensorRef<'a>> {
        match self {
            ValueRef::Tensor(t) => Ok(*t),
            other => Err(KernelError::invalid(format!(
                "expected a tensor, got {}",
                other.kind()
            ))),
        }
    }

    /// "tensor", "sequence", "optional", "map" or "sequence of maps".
    pub fn kind(&self) -> &'static str {
        match self {
            ValueRef::Tensor(_) => "tensor",
            ValueRef::Sequence { .. } => "sequence",
            ValueRef::Optional(_) => "optional",
            ValueRef::Map(_) => "map",
            ValueRef::MapSequence { .. } => "sequence of maps",
        }
    }

    /// An owned copy.
    pub fn to_owned(&self) -> Value {
        match self {
            ValueRef::Tensor(t) => Value::Tensor(t.to_owned()),
            ValueRef::Sequence { elem, items } => Value::Sequence {
                elem: *elem,
                items: items.to_vec(),
            },
            ValueRef::Optional(v) => Value::Optional(v.map(|v| Box::new(v.clone()))),
            ValueRef::Map(m) => Value::Map((*m).clone()),
            ValueRef::MapSequence { key, value, items } => Value::MapSequence {
                key: *key,
                value: *value,
                items: items.to_vec(),
            },
        }
    }
}
