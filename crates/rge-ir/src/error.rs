//! The one error type of the IR. Every variant names what is at fault (node, anchor, attribute,
//! field) so that a message alone tells a user where to look.

use thiserror::Error;

/// Which side of a node an anchor sits on, for error messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnchorSide {
    In,
    Out,
}

impl std::fmt::Display for AnchorSide {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AnchorSide::In => "input",
            AnchorSide::Out => "output",
        })
    }
}

#[derive(Debug, Error, Clone, PartialEq)]
pub enum IrError {
    #[error("attribute `{name}` is {found}, not {expected}")]
    AttrTypeMismatch {
        name: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("required attribute `{name}` is missing")]
    AttrMissing { name: String },
    #[error("{what} overflows 64 bits")]
    Overflow { what: String },
    #[error("invalid {what}: {value}")]
    Invalid { what: &'static str, value: String },
    #[error("node handle is stale or from another graph")]
    StaleNode,
    #[error("graph handle is stale or from another graph")]
    StaleGraph,
    #[error("node `{node}` has no {side} anchor {index} (it has {count} data {side}s)")]
    AnchorOutOfRange {
        node: String,
        side: AnchorSide,
        index: i32,
        count: usize,
    },
    #[error("input anchor {index} of node `{node}` is already linked to `{peer}`")]
    InputAlreadyLinked {
        node: String,
        index: i32,
        peer: String,
    },
    #[error("`{src}:{src_index}` and `{dst}:{dst_index}` are not linked")]
    NotLinked {
        src: String,
        src_index: i32,
        dst: String,
        dst_index: i32,
    },
    #[error("`{src}:{src_index}` is already linked to `{dst}:{dst_index}`")]
    AlreadyLinked {
        src: String,
        src_index: i32,
        dst: String,
        dst_index: i32,
    },
    #[error("nodes `{src}` (graph `{src_graph}`) and `{dst}` (graph `{dst_graph}`) are in different graphs")]
    CrossGraphLink {
        src: String,
        src_graph: String,
        dst: String,
        dst_graph: String,
    },
    #[error("graph `{graph}` already has a node named `{name}`")]
    DuplicateNodeName { graph: String, name: String },
    #[error("a subgraph named `{name}` already exists")]
    DuplicateGraphName { name: String },
    #[error("no subgraph named `{name}`")]
    NoSuchGraph { name: String },
    #[error("op `{op}` has no {side} named `{name}`")]
    NoSuchPort {
        op: String,
        side: AnchorSide,
        name: String,
    },
    #[error("op `{op}` already has an {side} named `{name}`")]
    DuplicatePortName {
        op: String,
        side: AnchorSide,
        name: String,
    },
    #[error("graph `{graph}` has a cycle through {}", nodes.join(" -> "))]
    Cycle { graph: String, nodes: Vec<String> },
    #[error("invalid graph: {0}")]
    Verify(String),
    #[error("{0}")]
    Other(String),
}

pub type Result<T, E = IrError> = std::result::Result<T, E>;
