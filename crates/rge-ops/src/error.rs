//! Errors of the op layer. Every error that concerns a node names it (and its op type), so a
//! message alone tells a user where to look (ARCHITECTURE.md decision 7).

use thiserror::Error;

/// An error from an op's verify or infer function, before the pass adds the node's name.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("{0}")]
pub struct OpError(pub String);

impl OpError {
    pub fn new(msg: impl Into<String>) -> Self {
        OpError(msg.into())
    }
}

impl From<rge_ir::IrError> for OpError {
    fn from(e: rge_ir::IrError) -> Self {
        OpError(e.to_string())
    }
}

/// Builds an [`OpError`] with `format!` syntax and returns it.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::OpError(format!($($arg)*)))
    };
}

/// The errors of the registry, the inference pass and op libraries.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum OpsError {
    #[error(
        "node `{node}`: no prototype for op type `{op_type}`{} (opset {opset})",
        domain_suffix(domain)
    )]
    UnknownOp {
        node: String,
        domain: String,
        op_type: String,
        opset: i64,
    },
    #[error("node `{node}` ({op_type}): {message}")]
    Node {
        node: String,
        op_type: String,
        message: String,
    },
    #[error("op `{op_type}`{} version {since_version} is already registered (by {existing}); registering it again needs an open override window", domain_suffix(domain))]
    Duplicate {
        domain: String,
        op_type: String,
        since_version: i64,
        existing: String,
    },
    #[error("op prototype `{op_type}`: {message}")]
    BadPrototype { op_type: String, message: String },
    #[error("op library `{path}`: {message}")]
    Library { path: String, message: String },
    #[error("op library `{path}` has ABI version {found}; this rge speaks ABI version {expected}")]
    AbiVersion {
        path: String,
        found: u32,
        expected: u32,
    },
    #[error("graph `{graph}`: {message}")]
    Graph { graph: String, message: String },
    #[error(transparent)]
    Ir(#[from] rge_ir::IrError),
}

fn domain_suffix(d: &str) -> String {
    if d.is_empty() {
        String::new()
    } else {
        format!(" in domain `{d}`")
    }
}

pub type OpResult<T> = std::result::Result<T, OpError>;
