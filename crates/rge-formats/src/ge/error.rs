//! Errors of the GE `ModelDef` reader and writer.
//!
//! Every error names the file (or the in-memory origin) and, for content errors, the place at
//! fault: graph, op, desc, attribute or field, e.g.
//! `model.txt: graph `main`, op `conv` (Conv2D), input_desc[1]: dim 0 is -5`.

use crate::text_format::TextFormatError;

/// The largest model GE reads (`CodedInputStream::SetTotalBytesLimit(INT32_MAX)`).
pub const MAX_MODEL_BYTES: u64 = i32::MAX as u64;

/// An error reading or writing a GE model.
#[derive(Debug, thiserror::Error)]
pub enum GeError {
    /// The file (or an external weight file) could not be read or written.
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// The file is larger than GE's limit.
    #[error("{file}: {size} bytes is more than the {limit}-byte limit of a GE model")]
    TooLarge { file: String, size: u64, limit: u64 },
    /// The bytes are not a binary `ge.proto.ModelDef` (truncated, corrupt, wrong wire types).
    #[error("{file}: not a valid binary ge.proto.ModelDef: {source}")]
    Decode {
        file: String,
        #[source]
        source: prost::DecodeError,
    },
    /// The text is not a `ge.proto.ModelDef` in protobuf text format.
    #[error("{file}:{source}")]
    Text {
        file: String,
        #[source]
        source: TextFormatError,
    },
    /// An op names a subgraph that the model does not hold (see `ReadOptions`).
    #[error("{file}: {at}: op `{op}` names subgraph `{subgraph}`, which is not in the model")]
    MissingSubgraph {
        file: String,
        at: String,
        op: String,
        subgraph: String,
    },
    /// The content is not a valid GE model: the message says what, `at` says where.
    #[error("{file}: {at}: {message}")]
    Invalid {
        file: String,
        at: String,
        message: String,
    },
}

impl GeError {
    /// The file (or origin) the error is about.
    pub fn file(&self) -> &str {
        match self {
            GeError::Io { file, .. }
            | GeError::TooLarge { file, .. }
            | GeError::Decode { file, .. }
            | GeError::Text { file, .. }
            | GeError::MissingSubgraph { file, .. }
            | GeError::Invalid { file, .. } => file,
        }
    }
}

/// What went wrong, before the location is known in full.
#[derive(Debug)]
pub(crate) enum FaultKind {
    Invalid(String),
    /// An op's bytes do not decode (a model read op by op): decode it whole for the error.
    BadOp,
    MissingSubgraph {
        op: String,
        subgraph: String,
    },
}

/// An internal error: a message plus the places it passed through (innermost first). It
/// becomes a [`GeError`] at the API boundary, where the file name is known.
#[derive(Debug)]
pub(crate) struct Fault {
    kind: FaultKind,
    at: Vec<String>,
}

impl Fault {
    pub(crate) fn missing_subgraph(op: &str, subgraph: &str) -> Self {
        Fault {
            kind: FaultKind::MissingSubgraph {
                op: op.to_string(),
                subgraph: subgraph.to_string(),
            },
            at: Vec::new(),
        }
    }

    /// Adds an outer place, e.g. "op `x` (Add)".
    pub(crate) fn within(mut self, place: String) -> Self {
        self.at.push(place);
        self
    }

    pub(crate) fn into_error(self, file: &str) -> GeError {
        let at = if self.at.is_empty() {
            "model".to_string()
        } else {
            self.at.iter().rev().cloned().collect::<Vec<_>>().join(", ")
        };
        let file = file.to_string();
        match self.kind {
            FaultKind::Invalid(message) => GeError::Invalid { file, at, message },
            FaultKind::BadOp => GeError::Invalid {
                file,
                at,
                message: "an op does not decode".into(),
            },
            FaultKind::MissingSubgraph { op, subgraph } => GeError::MissingSubgraph {
                file,
                at,
                op,
                subgraph,
            },
        }
    }
}

/// A fault with message `msg`.
pub(crate) fn fault(msg: impl Into<String>) -> Fault {
    Fault {
        kind: FaultKind::Invalid(msg.into()),
        at: Vec::new(),
    }
}

impl Fault {
    /// True for an op whose bytes do not decode.
    pub(crate) fn is_bad_op(&self) -> bool {
        matches!(self.kind, FaultKind::BadOp)
    }
}

impl From<super::stream::BadOp> for Fault {
    fn from(_: super::stream::BadOp) -> Self {
        Fault {
            kind: FaultKind::BadOp,
            at: Vec::new(),
        }
    }
}

impl From<rge_ir::IrError> for Fault {
    fn from(e: rge_ir::IrError) -> Self {
        fault(e.to_string())
    }
}

/// Adds a place to the error of a result; the place is only formatted on error.
pub(crate) trait Within<T> {
    fn within(self, place: impl FnOnce() -> String) -> Result<T, Fault>;
}

impl<T, E: Into<Fault>> Within<T> for Result<T, E> {
    fn within(self, place: impl FnOnce() -> String) -> Result<T, Fault> {
        self.map_err(|e| e.into().within(place()))
    }
}
