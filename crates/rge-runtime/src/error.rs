//! Runtime errors. Every error names what is at fault: the node, the input, the option, the file.

use thiserror::Error;

/// What went wrong while building or running a model.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RuntimeError {
    /// The compile pipeline failed.
    #[error("compile: {0}")]
    Compile(String),
    /// A node could not be lowered (no converter, no kernel, a bad attribute).
    #[error("lowering node `{node}` ({op_type}): {msg}")]
    Lower {
        node: String,
        op_type: String,
        msg: String,
    },
    /// A kernel failed at run time.
    #[error("node `{node}` ({op_type}): {msg}")]
    Kernel {
        node: String,
        op_type: String,
        msg: String,
    },
    /// A graph input is missing, or of the wrong kind, dtype or shape.
    #[error("input `{name}`: {msg}")]
    Input { name: String, msg: String },
    /// An option is out of range, or the model breaks an option's limit.
    #[error("option `{option}`: {msg}")]
    Option { option: String, msg: String },
    /// An engine's kernel definition contradicts its op's prototype.
    #[error("engine `{engine}`, kernel `{kernel}`: {msg}")]
    KernelDef {
        engine: String,
        kernel: String,
        msg: String,
    },
    /// No graph with this id in the session.
    #[error("graph {0} is not in the session")]
    UnknownGraph(u32),
    /// A file could not be read or written, or is malformed.
    #[error("{path}: {msg}")]
    File { path: String, msg: String },
    /// Anything else (internal consistency; a bug if seen).
    #[error("{0}")]
    Other(String),
}

/// Runtime result.
pub type RuntimeResult<T> = Result<T, RuntimeError>;

impl RuntimeError {
    pub(crate) fn input(name: impl Into<String>, msg: impl Into<String>) -> Self {
        RuntimeError::Input {
            name: name.into(),
            msg: msg.into(),
        }
    }

    pub(crate) fn file(path: impl std::fmt::Display, msg: impl std::fmt::Display) -> Self {
        RuntimeError::File {
            path: path.to_string(),
            msg: msg.to_string(),
        }
    }

    pub(crate) fn option(option: impl Into<String>, msg: impl Into<String>) -> Self {
        RuntimeError::Option {
            option: option.into(),
            msg: msg.into(),
        }
    }
}
