//! `GraphPatch`: a checked, all-or-nothing rewrite of one graph (root or subgraph), after
//! tract's ModelPatch (ARCHITECTURE.md decision 12). A patch removes a set of existing nodes
//! and adds new ones; it says where each new input comes from, what replaces each removed
//! output that is still read ("shunts"), which kept inputs read something else ("rewires"),
//! and where the removed nodes' control edges go. `ComputeGraph::apply_patch` (in
//! `patch_apply.rs`) checks all of it before it changes anything.

use thiserror::Error;

use crate::error::{AnchorSide, IrError};
use crate::graph::{ComputeGraph, GraphId};
use crate::node::{InAnchor, NodeId, OutAnchor};
use crate::op_desc::OpDesc;

/// An output a patch reads: output `out` of new node `node` (its index in the patch), or of
/// an existing node the patch keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outlet {
    New { node: usize, out: usize },
    Old { node: NodeId, out: usize },
}

impl Outlet {
    /// Output `out` of the patch's new node `node`.
    pub fn new_node(node: usize, out: usize) -> Self {
        Outlet::New { node, out }
    }
    /// Output `out` of existing node `node`.
    pub fn old(node: NodeId, out: usize) -> Self {
        Outlet::Old { node, out }
    }
}

/// A node named by a patch's control edges: a new node (by index) or an existing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchNode {
    New(usize),
    Old(NodeId),
}

/// What becomes of the control edges between the removed nodes and the rest of the graph
/// (control links, and data links into or out of a control anchor).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ControlCarry {
    /// Not said: a patch whose removed nodes have such edges is refused, so that ordering is
    /// never lost by accident.
    #[default]
    Unset,
    /// They move to this node: its in-control anchor takes the incoming ones, its out-control
    /// anchor the outgoing ones.
    To(PatchNode),
    /// They are dropped (asked for explicitly).
    Drop,
}

/// A rewrite of one graph. Build it with the methods below (or a convenience constructor),
/// then hand it to [`ComputeGraph::apply_patch`].
#[derive(Debug, Clone, Default)]
pub struct GraphPatch {
    pub(crate) graph: Option<GraphId>,
    pub(crate) remove: Vec<NodeId>,
    pub(crate) nodes: Vec<OpDesc>,
    /// `(source, new node, input)`.
    pub(crate) inputs: Vec<(Outlet, usize, usize)>,
    /// `(removed node, output, replacement)`.
    pub(crate) shunts: Vec<(NodeId, usize, Outlet)>,
    /// `(kept node, input, new source)`.
    pub(crate) rewires: Vec<(NodeId, usize, Outlet)>,
    pub(crate) control: ControlCarry,
    pub(crate) control_edges: Vec<(PatchNode, PatchNode)>,
}

/// What an applied patch did: the id of each new node by its patch index, and the removed ops
/// (in the order they were listed).
#[derive(Debug, Clone, PartialEq)]
pub struct PatchResult {
    pub nodes: Vec<NodeId>,
    pub removed: Vec<OpDesc>,
}

impl PatchResult {
    /// The id of new node `index`.
    pub fn node(&self, index: usize) -> Option<NodeId> {
        self.nodes.get(index).copied()
    }
}

/// Why a patch was refused. Every variant names the node and anchor at fault; a refused patch
/// changed nothing.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum PatchError {
    #[error("{what} is a stale node handle")]
    StaleNode { what: String },
    #[error("the patch's graph handle is stale")]
    StaleGraph,
    #[error("node `{node}` is in graph `{graph}`, the patch edits graph `{expected}`")]
    WrongGraph {
        node: String,
        graph: String,
        expected: String,
    },
    #[error("the patch has no new node {index} (it adds {count})")]
    NoSuchNewNode { index: usize, count: usize },
    #[error("node `{node}` has no {side} {index} (it has {count})")]
    AnchorOutOfRange {
        node: String,
        side: AnchorSide,
        index: usize,
        count: usize,
    },
    #[error("input {index} of node `{node}` is given two sources")]
    InputLinkedTwice { node: String, index: usize },
    #[error("{what} reads output {index} of `{node}`, which the patch removes")]
    ReadsRemoved {
        node: String,
        index: usize,
        what: String,
    },
    #[error(
        "output {index} of removed node `{node}` feeds {consumer}, and the patch does not say what replaces it"
    )]
    UnmappedOutput {
        node: String,
        index: usize,
        consumer: String,
    },
    #[error("output {index} of `{node}` is shunted, but the patch does not remove `{node}`")]
    ShuntNotRemoved { node: String, index: usize },
    #[error("output {index} of `{node}` is shunted twice")]
    ShuntTwice { node: String, index: usize },
    #[error("input {index} of `{node}` is rewired, but the patch removes `{node}`")]
    RewireRemoved { node: String, index: usize },
    #[error("graph `{graph}` already has a node named `{name}`")]
    DuplicateName { graph: String, name: String },
    #[error(
        "removed node `{node}` has control edges (with `{peer}`); carry them to a node or drop them explicitly"
    )]
    ControlUnhandled { node: String, peer: String },
    #[error("the patch links control to `{node}`, which it removes")]
    ControlToRemoved { node: String },
    #[error("node `{node}` is an input of graph `{graph}`; a patch cannot remove it")]
    RemovesGraphInput { node: String, graph: String },
    #[error("node `{node}` is an output of graph `{graph}` with no data outputs to replace it by")]
    RemovesGraphOutput { node: String, graph: String },
    #[error("node `{node}` ({op_type}) is protected here and cannot be removed or changed")]
    Protected { node: String, op_type: String },
    #[error("new node `{node}` names subgraph `{subgraph}`, which {problem}")]
    Subgraph {
        node: String,
        subgraph: String,
        problem: String,
    },
    #[error("replacing `{node}`: it has {expected} {side}s, the new op {found}")]
    PortCountMismatch {
        node: String,
        side: AnchorSide,
        expected: usize,
        found: usize,
    },
    #[error("input {index} of `{node}` has no data producer to bypass to")]
    NoProducer { node: String, index: usize },
    #[error("`{src}` and `{dst}` are not linked by a data edge")]
    NotLinked { src: String, dst: String },
    #[error("the patch would make a cycle through {}", nodes.join(" -> "))]
    Cycle { nodes: Vec<String> },
    #[error(transparent)]
    Ir(#[from] IrError),
}

impl GraphPatch {
    /// An empty patch; its graph is that of the existing nodes it names (the root when none).
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty patch of graph `g` (needed only when it names no existing node).
    pub fn in_graph(g: GraphId) -> Self {
        GraphPatch {
            graph: Some(g),
            ..Self::default()
        }
    }

    /// Removes existing node `n`. New nodes take the place in the node order of the first
    /// node removed (with none, right after the producer of the first existing input
    /// connected, else at the end).
    pub fn remove(&mut self, n: NodeId) -> &mut Self {
        self.remove.push(n);
        self
    }

    /// Adds a new node; returns its index in the patch.
    pub fn add_node(&mut self, op: OpDesc) -> usize {
        self.nodes.push(op);
        self.nodes.len() - 1
    }

    /// Input `input` of new node `node` reads `from`. Inputs never connected stay unlinked.
    pub fn connect(&mut self, from: Outlet, node: usize, input: usize) -> &mut Self {
        self.inputs.push((from, node, input));
        self
    }

    /// Every kept consumer of output `out` of removed node `node` (and the graph's output
    /// list) reads `to` instead.
    pub fn shunt(&mut self, node: NodeId, out: usize, to: Outlet) -> &mut Self {
        self.shunts.push((node, out, to));
        self
    }

    /// Input `input` of kept node `node` reads `from` instead of what it reads now.
    pub fn rewire(&mut self, node: NodeId, input: usize, from: Outlet) -> &mut Self {
        self.rewires.push((node, input, from));
        self
    }

    /// The removed nodes' control edges with kept nodes move to `to`.
    pub fn carry_control_to(&mut self, to: PatchNode) -> &mut Self {
        self.control = ControlCarry::To(to);
        self
    }

    /// The removed nodes' control edges with kept nodes are dropped.
    pub fn drop_control(&mut self) -> &mut Self {
        self.control = ControlCarry::Drop;
        self
    }

    /// A control edge `from → to` (new or kept nodes).
    pub fn add_control_edge(&mut self, from: PatchNode, to: PatchNode) -> &mut Self {
        self.control_edges.push((from, to));
        self
    }

    /// The nodes to remove, as listed.
    pub fn removed(&self) -> &[NodeId] {
        &self.remove
    }

    /// The new ops, by index.
    pub fn new_ops(&self) -> &[OpDesc] {
        &self.nodes
    }

    /// The new op `index`, to adjust it before applying.
    pub fn new_op_mut(&mut self, index: usize) -> Option<&mut OpDesc> {
        self.nodes.get_mut(index)
    }

    pub fn control(&self) -> ControlCarry {
        self.control
    }

    /// True when the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.remove.is_empty()
            && self.nodes.is_empty()
            && self.rewires.is_empty()
            && self.control_edges.is_empty()
    }

    /// Replaces node `n` by `op`, which has the same number of inputs and outputs: inputs read
    /// what `n`'s read, `n`'s consumers read the new node, control edges move to it. To keep
    /// `n`'s subgraphs, give `op` the same subgraph instance names.
    pub fn replace_node(graph: &ComputeGraph, n: NodeId, op: OpDesc) -> Result<Self, PatchError> {
        let node = graph.node(n).ok_or_else(|| PatchError::StaleNode {
            what: "the replaced node".into(),
        })?;
        for (side, expected, found) in [
            (AnchorSide::In, node.in_data_count(), op.input_count()),
            (AnchorSide::Out, node.out_data_count(), op.output_count()),
        ] {
            if expected != found {
                return Err(PatchError::PortCountMismatch {
                    node: node.name().to_string(),
                    side,
                    expected,
                    found,
                });
            }
        }
        let mut p = GraphPatch::new();
        p.remove(n);
        let k = p.add_node(op);
        for (i, src) in node.input_peers().iter().enumerate() {
            // A control producer of a data input is a control edge: the carry moves it.
            if let Some(src) = src.filter(|s| !s.is_control()) {
                p.connect(Outlet::old(src.node, src.index as usize), k, i);
            }
        }
        for o in 0..node.out_data_count() {
            p.shunt(n, o, Outlet::new_node(k, o));
        }
        p.carry_control_to(PatchNode::New(k));
        Ok(p)
    }

    /// Removes node `n`; the consumers of its output `output` read the producer of its input
    /// `input`. Its other outputs must be unused. Its control edges are left to the caller
    /// (`carry_control_to` or `drop_control`) when it has any.
    pub fn bypass_node(
        graph: &ComputeGraph,
        n: NodeId,
        output: usize,
        input: usize,
    ) -> Result<Self, PatchError> {
        let node = graph.node(n).ok_or_else(|| PatchError::StaleNode {
            what: "the bypassed node".into(),
        })?;
        if input >= node.in_data_count() {
            return Err(PatchError::AnchorOutOfRange {
                node: node.name().to_string(),
                side: AnchorSide::In,
                index: input,
                count: node.in_data_count(),
            });
        }
        let src = node
            .peer_of_input(input)
            .filter(|s| !s.is_control())
            .ok_or_else(|| PatchError::NoProducer {
                node: node.name().to_string(),
                index: input,
            })?;
        let mut p = GraphPatch::new();
        p.remove(n)
            .shunt(n, output, Outlet::old(src.node, src.index as usize));
        Ok(p)
    }

    /// Inserts `op` on the data edge `src → dst`: `src` feeds its input `node_in`, its output
    /// `node_out` feeds `dst`. The new node's index is 0.
    pub fn insert_on_edge(
        graph: &ComputeGraph,
        src: OutAnchor,
        dst: InAnchor,
        op: OpDesc,
        node_in: usize,
        node_out: usize,
    ) -> Result<Self, PatchError> {
        if src.is_control() || dst.is_control() || !graph.is_linked(src, dst) {
            return Err(PatchError::NotLinked {
                src: format!("{}:{}", graph.name_of(src.node), src.index),
                dst: format!("{}:{}", graph.name_of(dst.node), dst.index),
            });
        }
        let mut p = match graph.graph_of(src.node) {
            Some(g) => GraphPatch::in_graph(g),
            None => GraphPatch::new(),
        };
        let k = p.add_node(op);
        p.connect(Outlet::old(src.node, src.index as usize), k, node_in)
            .rewire(dst.node, dst.index as usize, Outlet::new_node(k, node_out));
        Ok(p)
    }
}
