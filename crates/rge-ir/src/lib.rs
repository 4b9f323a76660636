//! rge-ir: the graph IR of rge, after GE's AscendIR.
//!
//! `ComputeGraph` (a root graph that owns every subgraph) → nodes with anchors → `OpDesc` →
//! `TensorDesc`, typed attributes on all three, four topological sorts, a verifier and dumps.
//! See `docs/ir.md` for the map and the seed terms.

pub mod attr;
pub mod dtype;
pub mod dump;
pub mod error;
pub mod format;
pub mod graph;
mod graph_edit;
mod layout;
mod link;
pub mod node;
pub mod op_desc;
pub mod patch;
mod patch_apply;
mod patch_ranks;
mod ports;
pub mod shape;
mod small_set;
pub mod sort;
pub mod string_data;
mod subgraph;
pub mod tensor;
pub mod tensor_desc;
pub mod topology;
pub mod verify;

pub use attr::{AttrMap, AttrValue, FromAttr, HasAttrs, NamedAttrs};
pub use dtype::DataType;
pub use error::{AnchorSide, IrError, Result};
pub use format::{Format, PrimaryFormat};
pub use graph::{ComputeGraph, GraphId};
pub use node::{InAnchor, Node, NodeId, OutAnchor, CONTROL_INDEX};
pub use op_desc::{IrInputKind, IrOutputKind, OpDesc};
pub use patch::{ControlCarry, GraphPatch, Outlet, PatchError, PatchNode, PatchResult};
pub use shape::{Shape, ShapeRange, UNKNOWN_DIM, UNKNOWN_RANK};
pub use sort::{SortMode, SortOptions};
pub use tensor::Tensor;
pub use tensor_desc::{DeviceType, TensorDesc};
pub use topology::{Csr, Topology};

/// Op type names the IR itself gives meaning to.
pub mod op_types {
    pub const DATA: &str = "Data";
    pub const REF_DATA: &str = "RefData";
    pub const AIPP_DATA: &str = "AippData";
    pub const CONST: &str = "Const";
    pub const CONSTANT: &str = "Constant";
    pub const CONST_PLACEHOLDER: &str = "ConstPlaceHolder";
    pub const VARIABLE: &str = "Variable";
    pub const VARIABLE_V2: &str = "VariableV2";
    pub const NET_OUTPUT: &str = "NetOutput";
    pub const NEXT_ITERATION: &str = "NextIteration";
    pub const REF_NEXT_ITERATION: &str = "RefNextIteration";
    pub const RECV: &str = "Recv";
    pub const SEND: &str = "Send";
    pub const NO_OP: &str = "NoOp";

    /// Const-like ops: their output lives as long as the graph.
    pub fn is_const(op_type: &str) -> bool {
        matches!(op_type, CONST | CONSTANT)
    }

    /// Graph inputs (GE's `OpTypeUtils::IsDataNode` plus the Recv/Send seeds of the sorter).
    pub fn is_data(op_type: &str) -> bool {
        matches!(
            op_type,
            DATA | REF_DATA | AIPP_DATA | "AnnData" | "MultisliceData"
        )
    }

    pub fn is_variable(op_type: &str) -> bool {
        matches!(
            op_type,
            VARIABLE | VARIABLE_V2 | "VarHandleOp" | "TemporaryVariable"
        )
    }

    pub fn is_next_iteration(op_type: &str) -> bool {
        matches!(op_type, NEXT_ITERATION | REF_NEXT_ITERATION)
    }
}

/// Well-known attribute names.
pub mod attr_names {
    pub const PARENT_NODE_INDEX: &str = "_parent_node_index";
    pub const STREAM_LABEL: &str = "_stream_label";
    pub const DATA_INDEX: &str = "index";
    pub const SUPER_KERNEL_SCOPE: &str = "_super_kernel_scope";
    pub const OP_AICORE_NUM: &str = "_op_aicore_num";
    pub const OP_VECTORCORE_NUM: &str = "_op_vectorcore_num";
}
