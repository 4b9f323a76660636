//! The error type of ONNX import and export. Every variant names the file (the `origin` given
//! to the importer) and the graph, node, value or field at fault.

use thiserror::Error;

/// An ONNX import or export failure.
#[derive(Debug, Error)]
pub enum OnnxError {
    /// The file could not be read or written.
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a protobuf `ModelProto` (truncated, corrupt, wrong wire types,
    /// strings that are not UTF-8).
    #[error("{file}: not a valid ONNX ModelProto: {source}")]
    Decode {
        file: String,
        #[source]
        source: prost::DecodeError,
    },
    /// The model is well-formed protobuf but breaks an ONNX rule rge relies on.
    #[error("{file}: {at}: {msg}")]
    Invalid {
        file: String,
        at: String,
        msg: String,
    },
    /// A node (or graph output) names a value that nothing in scope produces.
    #[error("{file}: {at}: value `{value}` is not produced by any node, graph input or initializer in scope")]
    UnknownValue {
        file: String,
        at: String,
        value: String,
    },
    /// The nodes of a graph consume each other's outputs in a cycle.
    #[error("{file}: graph `{graph}` has a cycle: {}", nodes.join(" -> "))]
    Cycle {
        file: String,
        graph: String,
        nodes: Vec<String>,
    },
    /// A tensor's external data cannot be used.
    #[error("{file}: tensor `{tensor}`: external data: {msg}")]
    ExternalData {
        file: String,
        tensor: String,
        msg: String,
    },
    /// The model uses an ONNX feature rge does not import.
    #[error("{file}: {at}: unsupported: {what}")]
    Unsupported {
        file: String,
        at: String,
        what: String,
    },
    /// rge-ir refused a graph edit or the imported graph failed `verify()`.
    #[error("{file}: {at}: {source}")]
    Ir {
        file: String,
        at: String,
        #[source]
        source: Box<rge_ir::IrError>,
    },
    /// The rge graph cannot be written as ONNX.
    #[error("export: {at}: {msg}")]
    Export { at: String, msg: String },
}

/// Result with [`OnnxError`].
pub type Result<T, E = OnnxError> = std::result::Result<T, E>;
