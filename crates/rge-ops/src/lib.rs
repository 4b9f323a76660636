//! rge-ops: operators for rge (seed AscendIR §4.4 and §5).
//!
//! - [`proto`]: op prototypes — inputs (required, optional, dynamic) with type parameters,
//!   outputs, attributes with type/default/required, type constraints, subgraph IR names, and
//!   the infer/verify/format functions; per (domain, op type) and version range.
//! - [`registry`]: [`OpRegistryBuilder`] → frozen, shared [`OpRegistry`] (`Arc`); duplicate
//!   registration is an error unless the override window is open; OpDesc creation from a
//!   prototype and standard input names.
//! - [`pass`]: [`infer_graph`], the inference pass over a graph and its subgraphs, with small
//!   constant values propagated so that shape-computing subgraphs fold.
//! - [`ops`]: the built-in ops (every op type of the ONNX backend node tests that rge infers).
//! - [`library`] and [`abi`]: op libraries loaded at run time through a versioned C ABI.
//! - [`listing`]: the op list for `rge ops`.
//! - [`upgrade`]: old op versions rewritten into newer ones before inference.

pub mod abi;
pub mod ctx;
pub mod error;
pub mod gradient;
pub mod library;
pub mod listing;
pub mod onnx_types;
pub mod ops;
pub mod pass;
pub mod proto;
pub mod registry;
pub mod upgrade;
pub mod value;
mod verify;

pub use ctx::{InferCtx, MapKey, SubgraphInfer, TensorInfo, ValueKind, VALUE_KIND_ATTR};
pub use error::{OpError, OpResult, OpsError};
pub use library::{load_op_library, load_op_library_symbol, LibraryInfo};
pub use listing::{list_ops, render_ops_text, OpInfo};
pub use pass::{graph_outputs, infer_graph, topo_order, InferOptions, InferReport, UnknownOps};
pub use proto::{
    AttrProto, AttrType, FormatRule, InferFn, InputProto, OpProto, OutputProto, TypeConstraint,
};
pub use registry::{OpRegistry, OpRegistryBuilder};
pub use value::{Value, ValueData};

/// Root graph attributes `<prefix><domain>` = the opset version the graph imports for that
/// domain (the ONNX frontend's convention); read when [`InferOptions::opsets`] is empty.
pub const OPSET_ATTR_PREFIX: &str = "_onnx_opset_";
/// Node attribute: the ONNX attribute each subgraph slot came from (`then_branch`, `body`).
pub const SUBGRAPH_ATTRS_ATTR: &str = "_onnx_subgraph_attrs";
/// Node attribute: the number of the node's own inputs when outer-scope captures of its
/// bodies were appended after them (the ONNX frontend's convention).
pub const FORMAL_INPUTS_ATTR: &str = "_onnx_formal_inputs";
