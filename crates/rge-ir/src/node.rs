//! Nodes and anchors. There are no edge objects: each node stores its peers per anchor, and a
//! link changes both ends (ARCHITECTURE.md decision 1). An anchor is a value `(node, index)`;
//! index -1 is the node's control anchor.

use slotmap::new_key_type;
use smallvec::SmallVec;

use crate::op_desc::OpDesc;

new_key_type! {
    /// A node handle. Generational: a handle to a removed node is detected, never reused.
    pub struct NodeId;
}

/// The index of a node's control anchor (in or out).
pub const CONTROL_INDEX: i32 = -1;

/// An output-side anchor: out-data anchor `index`, or the out-control anchor when -1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OutAnchor {
    pub node: NodeId,
    pub index: i32,
}

/// An input-side anchor: in-data anchor `index`, or the in-control anchor when -1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InAnchor {
    pub node: NodeId,
    pub index: i32,
}

impl OutAnchor {
    pub fn is_control(self) -> bool {
        self.index == CONTROL_INDEX
    }
}

impl InAnchor {
    pub fn is_control(self) -> bool {
        self.index == CONTROL_INDEX
    }
}

impl NodeId {
    /// Out-data anchor `index` of this node.
    pub fn out(self, index: usize) -> OutAnchor {
        OutAnchor {
            node: self,
            index: index as i32,
        }
    }
    /// In-data anchor `index` of this node.
    pub fn input(self, index: usize) -> InAnchor {
        InAnchor {
            node: self,
            index: index as i32,
        }
    }
    pub fn out_ctrl(self) -> OutAnchor {
        OutAnchor {
            node: self,
            index: CONTROL_INDEX,
        }
    }
    pub fn in_ctrl(self) -> InAnchor {
        InAnchor {
            node: self,
            index: CONTROL_INDEX,
        }
    }
}

/// A node: its op and its anchors. Owned by the root `ComputeGraph`'s arena; `graph` says which
/// (sub)graph it belongs to, `prev`/`next` are its place in that graph's node order.
#[derive(Debug, Clone)]
pub struct Node {
    pub(crate) op: OpDesc,
    pub(crate) graph: crate::graph::GraphId,
    pub(crate) prev: Option<NodeId>,
    pub(crate) next: Option<NodeId>,
    /// Per in-data anchor: its one peer (an out-data anchor, or an out-control anchor).
    /// Inline for up to two inputs: most nodes have one or two.
    pub(crate) in_data: SmallVec<[Option<OutAnchor>; 2]>,
    /// Per out-data anchor: its peers in link order (in-data anchors or in-control anchors).
    /// Inline for one output: most nodes have one.
    pub(crate) out_data: SmallVec<[Vec<InAnchor>; 1]>,
    /// Control anchors' peers, allocated on the first control link: most nodes have none.
    pub(crate) ctrl: Option<Box<ControlPeers>>,
}

/// The peers of a node's control anchor pair.
#[derive(Debug, Clone, Default)]
pub(crate) struct ControlPeers {
    /// Peers of the in-control anchor.
    ins: Vec<OutAnchor>,
    /// Peers of the out-control anchor.
    outs: Vec<InAnchor>,
}

impl Node {
    pub(crate) fn new(op: OpDesc, graph: crate::graph::GraphId) -> Self {
        let in_data = smallvec::smallvec![None; op.input_count()];
        let out_data = (0..op.output_count()).map(|_| Vec::new()).collect();
        Node {
            op,
            graph,
            prev: None,
            next: None,
            in_data,
            out_data,
            ctrl: None,
        }
    }

    pub(crate) fn ctrl_in(&self) -> &[OutAnchor] {
        self.ctrl.as_deref().map_or(&[], |c| &c.ins)
    }
    pub(crate) fn ctrl_out(&self) -> &[InAnchor] {
        self.ctrl.as_deref().map_or(&[], |c| &c.outs)
    }
    pub(crate) fn ctrl_in_mut(&mut self) -> &mut Vec<OutAnchor> {
        &mut self.ctrl.get_or_insert_with(Default::default).ins
    }
    pub(crate) fn ctrl_out_mut(&mut self) -> &mut Vec<InAnchor> {
        &mut self.ctrl.get_or_insert_with(Default::default).outs
    }
    /// Both out-side peer lists for in-place edits: data lists, then the control list.
    pub(crate) fn out_lists_mut(&mut self) -> impl Iterator<Item = &mut Vec<InAnchor>> {
        self.out_data
            .iter_mut()
            .chain(self.ctrl.as_deref_mut().map(|c| &mut c.outs))
    }

    pub fn op(&self) -> &OpDesc {
        &self.op
    }
    pub fn name(&self) -> &str {
        self.op.name()
    }
    pub fn op_type(&self) -> &str {
        self.op.op_type()
    }
    /// The (sub)graph this node belongs to.
    pub fn graph(&self) -> crate::graph::GraphId {
        self.graph
    }

    pub fn in_data_count(&self) -> usize {
        self.in_data.len()
    }
    pub fn out_data_count(&self) -> usize {
        self.out_data.len()
    }
    /// The peer of in-data anchor `index`: O(1).
    pub fn peer_of_input(&self, index: usize) -> Option<OutAnchor> {
        self.in_data.get(index).copied().flatten()
    }
    /// The peers of out-data anchor `index`, in link order.
    pub fn peers_of_output(&self, index: usize) -> &[InAnchor] {
        self.out_data.get(index).map_or(&[], |v| v.as_slice())
    }
    /// All in-data anchors' peers in index order.
    pub fn input_peers(&self) -> &[Option<OutAnchor>] {
        &self.in_data
    }
    pub fn in_ctrl_peers(&self) -> &[OutAnchor] {
        self.ctrl_in()
    }
    pub fn out_ctrl_peers(&self) -> &[InAnchor] {
        self.ctrl_out()
    }
    /// Peers of any in-anchor: -1 gives the in-control peers.
    pub fn peers_of_in(&self, index: i32) -> &[OutAnchor] {
        if index == CONTROL_INDEX {
            self.ctrl_in()
        } else {
            match self.in_data.get(index as usize) {
                Some(Some(p)) => std::slice::from_ref(p),
                _ => &[],
            }
        }
    }
    /// Peers of any out-anchor: -1 gives the out-control peers.
    pub fn peers_of_out(&self, index: i32) -> &[InAnchor] {
        if index == CONTROL_INDEX {
            self.ctrl_out()
        } else {
            self.peers_of_output(index as usize)
        }
    }

    /// Every producer anchor feeding this node (data, then control), with duplicates.
    pub fn all_in_peers(&self) -> impl Iterator<Item = OutAnchor> + '_ {
        self.in_data
            .iter()
            .flatten()
            .copied()
            .chain(self.ctrl_in().iter().copied())
    }
    /// Every consumer anchor of this node (data anchors in order, then control).
    pub fn all_out_peers(&self) -> impl Iterator<Item = InAnchor> + '_ {
        self.out_data
            .iter()
            .flatten()
            .copied()
            .chain(self.ctrl_out().iter().copied())
    }
    /// Number of incoming links (data and control).
    pub fn in_link_count(&self) -> usize {
        self.in_data.iter().filter(|p| p.is_some()).count() + self.ctrl_in().len()
    }
    /// Number of outgoing links (data and control).
    pub fn out_link_count(&self) -> usize {
        self.out_data.iter().map(Vec::len).sum::<usize>() + self.ctrl_out().len()
    }
    /// Distinct producer nodes, in anchor order (GE's GetInAllNodes without duplicates).
    pub fn in_nodes(&self) -> Vec<NodeId> {
        let mut out = Vec::new();
        for p in self.all_in_peers() {
            if !out.contains(&p.node) {
                out.push(p.node);
            }
        }
        out
    }
    /// Distinct consumer nodes, in anchor order.
    pub fn out_nodes(&self) -> Vec<NodeId> {
        let mut out = Vec::new();
        for p in self.all_out_peers() {
            if !out.contains(&p.node) {
                out.push(p.node);
            }
        }
        out
    }
    /// Distinct producer nodes over data anchors only (GE's GetInDataNodes).
    pub fn in_data_nodes(&self) -> Vec<NodeId> {
        let mut out = Vec::new();
        for p in self.in_data.iter().flatten() {
            if !out.contains(&p.node) {
                out.push(p.node);
            }
        }
        out
    }
    /// Distinct consumer nodes over data anchors only (GE's GetOutDataNodes).
    pub fn out_data_nodes(&self) -> Vec<NodeId> {
        let mut out = Vec::new();
        for p in self.out_data.iter().flatten() {
            if !out.contains(&p.node) {
                out.push(p.node);
            }
        }
        out
    }
}
