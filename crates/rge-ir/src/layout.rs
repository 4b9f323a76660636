//! Node order, kept apart from op data (ARCHITECTURE.md decision 2): a doubly linked list over
//! node ids, so insert and remove anywhere are O(1) and reordering never touches ops.

use crate::error::{IrError, Result};
use crate::graph::{ComputeGraph, GraphId};
use crate::node::NodeId;

impl ComputeGraph {
    pub(crate) fn layout_push_back(&mut self, g: GraphId, n: NodeId) {
        self.touch();
        let last = self.graphs[g].last;
        {
            let node = &mut self.nodes[n];
            node.prev = last;
            node.next = None;
        }
        match last {
            Some(l) => self.nodes[l].next = Some(n),
            None => self.graphs[g].first = Some(n),
        }
        let d = &mut self.graphs[g];
        d.last = Some(n);
        d.len += 1;
    }

    pub(crate) fn layout_remove(&mut self, n: NodeId) {
        self.touch();
        let (g, prev, next) = {
            let node = &self.nodes[n];
            (node.graph, node.prev, node.next)
        };
        match prev {
            Some(p) => self.nodes[p].next = next,
            None => self.graphs[g].first = next,
        }
        match next {
            Some(x) => self.nodes[x].prev = prev,
            None => self.graphs[g].last = prev,
        }
        let node = &mut self.nodes[n];
        node.prev = None;
        node.next = None;
        self.graphs[g].len -= 1;
    }

    /// Links the unplaced node `n` right before `before` (same graph).
    pub(crate) fn layout_insert_before(&mut self, before: NodeId, n: NodeId) {
        self.touch();
        let g = self.nodes[before].graph;
        let prev = self.nodes[before].prev;
        {
            let node = &mut self.nodes[n];
            node.prev = prev;
            node.next = Some(before);
        }
        self.nodes[before].prev = Some(n);
        match prev {
            Some(p) => self.nodes[p].next = Some(n),
            None => self.graphs[g].first = Some(n),
        }
        self.graphs[g].len += 1;
    }

    pub(crate) fn layout_insert_after(&mut self, after: NodeId, n: NodeId) {
        self.touch();
        match self.nodes[after].next {
            Some(next) => self.layout_insert_before(next, n),
            None => {
                let g = self.nodes[after].graph;
                self.layout_push_back(g, n)
            }
        }
    }

    /// Moves `n` to just before `before` in the order (both in one graph).
    pub fn move_node_before(&mut self, n: NodeId, before: NodeId) -> Result<()> {
        self.touch();
        self.check_same_graph_order(n, before)?;
        if n != before {
            self.layout_remove(n);
            self.layout_insert_before(before, n);
        }
        Ok(())
    }

    /// Moves `n` to just after `after` in the order (both in one graph).
    pub fn move_node_after(&mut self, n: NodeId, after: NodeId) -> Result<()> {
        self.touch();
        self.check_same_graph_order(n, after)?;
        if n != after {
            self.layout_remove(n);
            self.layout_insert_after(after, n);
        }
        Ok(())
    }

    fn check_same_graph_order(&self, a: NodeId, b: NodeId) -> Result<()> {
        let (ga, gb) = (self.node_ref(a)?.graph, self.node_ref(b)?.graph);
        if ga != gb {
            return Err(IrError::CrossGraphLink {
                src: self.name_of(a).into(),
                src_graph: self.graphs[ga].name.clone(),
                dst: self.name_of(b).into(),
                dst_graph: self.graphs[gb].name.clone(),
            });
        }
        Ok(())
    }

    /// Replaces graph `g`'s order by `order`, which must hold exactly its nodes.
    pub fn set_node_order(&mut self, g: GraphId, order: &[NodeId]) -> Result<()> {
        self.touch();
        let d = self.gdata(g)?;
        if order.len() != d.len {
            return Err(IrError::Verify(format!(
                "new order of graph `{}` has {} nodes, the graph has {}",
                d.name,
                order.len(),
                d.len
            )));
        }
        let mut seen = slotmap::SecondaryMap::<NodeId, ()>::with_capacity(order.len());
        for &n in order {
            let node = self.node_ref(n)?;
            if node.graph != g || seen.insert(n, ()).is_some() {
                return Err(IrError::Verify(format!(
                    "new order of graph `{}` repeats or misplaces node `{}`",
                    d.name,
                    node.name()
                )));
            }
        }
        self.relink_order(g, order);
        Ok(())
    }

    /// Relinks the order list from a checked permutation.
    pub(crate) fn relink_order(&mut self, g: GraphId, order: &[NodeId]) {
        self.touch();
        let mut prev: Option<NodeId> = None;
        for &n in order {
            let node = &mut self.nodes[n];
            node.prev = prev;
            node.next = None;
            if let Some(p) = prev {
                self.nodes[p].next = Some(n);
            }
            prev = Some(n);
        }
        let d = &mut self.graphs[g];
        d.first = order.first().copied();
        d.last = order.last().copied();
        d.len = order.len();
    }

    /// The node before `n` in its graph's order.
    pub fn prev_node(&self, n: NodeId) -> Option<NodeId> {
        self.nodes.get(n)?.prev
    }
    /// The node after `n` in its graph's order.
    pub fn next_node(&self, n: NodeId) -> Option<NodeId> {
        self.nodes.get(n)?.next
    }
    pub fn first_node(&self, g: GraphId) -> Option<NodeId> {
        self.graphs.get(g)?.first
    }
    pub fn last_node(&self, g: GraphId) -> Option<NodeId> {
        self.graphs.get(g)?.last
    }
}
