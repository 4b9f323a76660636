//! Kernel errors. The runtime adds the node name and op type when it reports one.

use thiserror::Error;

/// What went wrong in a kernel or while building one.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum KernelError {
    /// An input that breaks the op's rules (shape, dtype, index out of range …).
    #[error("{0}")]
    Invalid(String),
    /// An attribute missing or out of range.
    #[error("attribute '{name}': {msg}")]
    Attr { name: String, msg: String },
    /// Valid input that this kernel does not handle (a dtype, a mode).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// The runtime refused an output (memory limit, second allocation of one output).
    #[error("output {index}: {msg}")]
    Output { index: usize, msg: String },
}

/// Kernel result.
pub type KernelResult<T> = Result<T, KernelError>;

impl KernelError {
    /// An [`KernelError::Invalid`].
    pub fn invalid(msg: impl Into<String>) -> Self {
        KernelError::Invalid(msg.into())
    }

    /// An [`KernelError::Unsupported`].
    pub fn unsupported(msg: impl Into<String>) -> Self {
        KernelError::Unsupported(msg.into())
    }

    /// An [`KernelError::Attr`].
    pub fn attr(name: impl Into<String>, msg: impl Into<String>) -> Self {
        KernelError::Attr {
            name: name.into(),
            msg: msg.into(),
        }
    }
}
