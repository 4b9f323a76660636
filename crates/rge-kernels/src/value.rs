//! Runtime values: a tensor, a sequence of tensors, or an optional (ONNX's three value kinds).

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
}

/// A borrowed value, as kernels receive inputs.
#[derive(Clone, Copy, Debug)]
pub enum ValueRef<'a> {
    Tensor(TensorRef<'a>),
    Sequence { elem: DType, items: &'a [Tensor] },
    Optional(Option<&'a Value>),
}

impl Value {
    /// A borrowed view.
    pub fn as_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Tensor(t) => ValueRef::Tensor(t.view()),
            Value::Sequence { elem, items } => ValueRef::Sequence { elem: *elem, items },
            Value::Optional(v) => ValueRef::Optional(v.as_deref()),
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

    /// "tensor", "sequence" or "optional".
    pub fn kind(&self) -> &'static str {
        match self {
            Value::Tensor(_) => "tensor",
            Value::Sequence { .. } => "sequence",
            Value::Optional(_) => "optional",
        }
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

    /// "tensor", "sequence" or "optional".
    pub fn kind(&self) -> &'static str {
        match self {
            ValueRef::Tensor(_) => "tensor",
            ValueRef::Sequence { .. } => "sequence",
            ValueRef::Optional(_) => "optional",
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
        }
    }
}
