//! The nodes of a graph being imported: its decoded `NodeProto`s, or for the model's graph a
//! table made by `decode.rs` where each node of strings only is a view of the file (no
//! `NodeProto`, no string copied: at 100k nodes those were most of the decode and of its
//! memory) and any other node is decoded as usual.

use crate::onnx_proto::{AttributeProto, NodeProto, StringStringEntryProto};

/// A node of strings only, as the file has it.
pub(super) struct NodeView<'b> {
    pub(super) name: &'b str,
    pub(super) op_type: &'b str,
    pub(super) domain: &'b str,
    pub(super) overload: &'b str,
    pub(super) doc_string: &'b str,
    /// The inputs, then the outputs.
    pub(super) io: Io<'b>,
    pub(super) inputs: usize,
}

/// A node's input and output names: in place for up to four (no allocation to make or free).
/// (A `SmallVec` would make the table invariant in `'b`.)
pub(super) enum Io<'b> {
    Inline([&'b str; 4], usize),
    Heap(Box<[&'b str]>),
}

impl<'b> Io<'b> {
    pub(super) fn new(n: usize) -> Self {
        if n <= 4 {
            Io::Inline([""; 4], n)
        } else {
            Io::Heap(vec![""; n].into_boxed_slice())
        }
    }

    pub(super) fn as_slice(&self) -> &[&'b str] {
        match self {
            Io::Inline(a, n) => &a[..*n],
            Io::Heap(b) => b,
        }
    }

    pub(super) fn as_mut_slice(&mut self) -> &mut [&'b str] {
        match self {
            Io::Inline(a, n) => &mut a[..*n],
            Io::Heap(b) => b,
        }
    }
}

pub(super) enum Item<'b> {
    View(NodeView<'b>),
    Proto(Box<NodeProto>),
}

/// A graph's nodes in file order.
pub(super) struct NodeTable<'b> {
    pub(super) items: Vec<Item<'b>>,
}

impl NodeTable<'_> {
    /// Its `NodeProto`s, which own what they hold (to drop elsewhere), boxed as they are.
    #[allow(clippy::vec_box)]
    pub(super) fn into_protos(self) -> Vec<Box<NodeProto>> {
        self.items
            .into_iter()
            .filter_map(|i| match i {
                Item::Proto(p) => Some(p),
                Item::View(_) => None,
            })
            .collect()
    }
}

/// The nodes of one graph.
#[derive(Clone, Copy)]
pub(super) enum Nodes<'p> {
    Protos(&'p [NodeProto]),
    Table(&'p NodeTable<'p>),
}

impl<'p> Nodes<'p> {
    pub(super) fn len(self) -> usize {
        match self {
            Nodes::Protos(n) => n.len(),
            Nodes::Table(t) => t.items.len(),
        }
    }

    pub(super) fn get(self, i: usize) -> Option<NodeRef<'p>> {
        match self {
            Nodes::Protos(n) => n.get(i).map(NodeRef::Proto),
            Nodes::Table(t) => t.items.get(i).map(|it| match it {
                Item::View(v) => NodeRef::View(v),
                Item::Proto(p) => NodeRef::Proto(p),
            }),
        }
    }

    pub(super) fn iter(self) -> impl Iterator<Item = NodeRef<'p>> + Clone {
        (0..self.len()).map(move |i| self.get(i).expect("in range"))
    }
}

/// One node.
#[derive(Clone, Copy)]
pub(super) enum NodeRef<'p> {
    Proto(&'p NodeProto),
    View(&'p NodeView<'p>),
}

impl<'p> NodeRef<'p> {
    pub(super) fn name(self) -> &'p str {
        match self {
            NodeRef::Proto(n) => &n.name,
            NodeRef::View(v) => v.name,
        }
    }
    pub(super) fn op_type(self) -> &'p str {
        match self {
            NodeRef::Proto(n) => &n.op_type,
            NodeRef::View(v) => v.op_type,
        }
    }
    pub(super) fn domain(self) -> &'p str {
        match self {
            NodeRef::Proto(n) => &n.domain,
            NodeRef::View(v) => v.domain,
        }
    }
    pub(super) fn overload(self) -> &'p str {
        match self {
            NodeRef::Proto(n) => &n.overload,
            NodeRef::View(v) => v.overload,
        }
    }
    pub(super) fn doc_string(self) -> &'p str {
        match self {
            NodeRef::Proto(n) => &n.doc_string,
            NodeRef::View(v) => v.doc_string,
        }
    }
    pub(super) fn input(self) -> Strs<'p> {
        match self {
            NodeRef::Proto(n) => Strs::Owned(&n.input),
            NodeRef::View(v) => Strs::Borrowed(&v.io.as_slice()[..v.inputs]),
        }
    }
    pub(super) fn output(self) -> Strs<'p> {
        match self {
            NodeRef::Proto(n) => Strs::Owned(&n.output),
            NodeRef::View(v) => Strs::Borrowed(&v.io.as_slice()[v.inputs..]),
        }
    }
    pub(super) fn attribute(self) -> &'p [AttributeProto] {
        match self {
            NodeRef::Proto(n) => &n.attribute,
            NodeRef::View(_) => &[],
        }
    }
    pub(super) fn metadata_props(self) -> &'p [StringStringEntryProto] {
        match self {
            NodeRef::Proto(n) => &n.metadata_props,
            NodeRef::View(_) => &[],
        }
    }
}

/// A node's input or output names.
#[derive(Clone, Copy)]
pub(super) enum Strs<'p> {
    Owned(&'p [String]),
    Borrowed(&'p [&'p str]),
}

impl<'p> Strs<'p> {
    pub(super) fn len(self) -> usize {
        match self {
            Strs::Owned(s) => s.len(),
            Strs::Borrowed(s) => s.len(),
        }
    }

    pub(super) fn get(self, i: usize) -> Option<&'p str> {
        match self {
            Strs::Owned(s) => s.get(i).map(String::as_str),
            Strs::Borrowed(s) => s.get(i).copied(),
        }
    }

    pub(super) fn iter(self) -> impl DoubleEndedIterator<Item = &'p str> + ExactSizeIterator {
        (0..self.len()).map(move |i| self.get(i).expect("in range"))
    }
}
