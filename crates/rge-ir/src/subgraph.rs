//! Subgraph I/O binding: a subgraph's Data nodes map to parent inputs and its NetOutput inputs
//! to parent outputs, both through `_parent_node_index`; and structural graph equality.

use crate::attr_names::PARENT_NODE_INDEX;
use crate::graph::{ComputeGraph, GraphId};
use crate::node::NodeId;
use crate::op_types;

impl ComputeGraph {
    /// The Data node of subgraph `g` bound to parent input `index`.
    pub fn subgraph_data_for_parent_input(&self, g: GraphId, index: i64) -> Option<NodeId> {
        self.nodes_of(g).find(|&n| {
            let op = &self.nodes[n].op;
            op_types::is_data(op.op_type())
                && op.attrs().get_int(PARENT_NODE_INDEX).ok().flatten() == Some(index)
        })
    }

    /// The parent input a subgraph Data node is bound to.
    pub fn parent_input_of_data(&self, data: NodeId) -> Option<i64> {
        self.nodes
            .get(data)?
            .op
            .attrs()
            .get_int(PARENT_NODE_INDEX)
            .ok()
            .flatten()
    }

    /// The NetOutput node of graph `g` (the first, as GE keeps one).
    pub fn net_output(&self, g: GraphId) -> Option<NodeId> {
        self.nodes_of(g)
            .find(|&n| self.nodes[n].op_type() == op_types::NET_OUTPUT)
    }

    /// `(NetOutput, input index)` of subgraph `g` that produces parent output `index`.
    pub fn subgraph_output_for_parent_output(
        &self,
        g: GraphId,
        index: i64,
    ) -> Option<(NodeId, usize)> {
        let n = self.net_output(g)?;
        let op = &self.nodes[n].op;
        (0..op.input_count())
            .find(|&i| {
                op.input(i)
                    .and_then(|d| d.attrs().get_int(PARENT_NODE_INDEX).ok().flatten())
                    == Some(index)
            })
            .map(|i| (n, i))
    }

    /// Structural equality: same graph names, node order by name, ops, links (with peer order),
    /// input/output lists, attributes and subgraph ownership. Handles need not be equal.
    pub fn structurally_equal(&self, other: &ComputeGraph) -> bool {
        if self.subgraphs.len() != other.subgraphs.len() {
            return false;
        }
        let pairs = std::iter::once((self.root, Some(other.root))).chain(
            self.subgraphs
                .iter()
                .map(|&g| (g, other.subgraph_by_name(&self.graphs[g].name))),
        );
        for (a, b) in pairs {
            let Some(b) = b else {
                return false;
            };
            if !self.graph_equal(a, other, b) {
                return false;
            }
        }
        true
    }

    fn graph_equal(&self, a: GraphId, other: &ComputeGraph, b: GraphId) -> bool {
        let (da, db) = (&self.graphs[a], &other.graphs[b]);
        let parent_name = |g: &ComputeGraph, p: Option<NodeId>| p.map(|p| g.name_of(p).to_string());
        if da.name != db.name
            || da.attrs != db.attrs
            || da.len != db.len
            || parent_name(self, da.parent_node) != parent_name(other, db.parent_node)
        {
            return false;
        }
        let names = |g: &ComputeGraph, v: &[NodeId]| -> Vec<String> {
            v.iter().map(|&n| g.name_of(n).to_string()).collect()
        };
        if names(self, &da.inputs) != names(other, &db.inputs) {
            return false;
        }
        let outs = |g: &ComputeGraph, v: &[(NodeId, u32)]| -> Vec<(String, u32)> {
            v.iter()
                .map(|&(n, i)| (g.name_of(n).to_string(), i))
                .collect()
        };
        if outs(self, &da.outputs) != outs(other, &db.outputs) {
            return false;
        }
        for (x, y) in self.nodes_of(a).zip(other.nodes_of(b)) {
            let (nx, ny) = (&self.nodes[x], &other.nodes[y]);
            if nx.op != ny.op {
                return false;
            }
            let ins = |g: &ComputeGraph, n: &crate::node::Node| -> Vec<Option<(String, i32)>> {
                n.in_data
                    .iter()
                    .map(|p| p.map(|p| (g.name_of(p.node).to_string(), p.index)))
                    .chain(
                        n.ctrl_in()
                            .iter()
                            .map(|p| Some((g.name_of(p.node).to_string(), p.index))),
                    )
                    .collect()
            };
            let outs = |g: &ComputeGraph, n: &crate::node::Node| -> Vec<Vec<(String, i32)>> {
                n.out_data
                    .iter()
                    .map(|v| v.as_slice())
                    .chain(std::iter::once(n.ctrl_out()))
                    .map(|ps| {
                        ps.iter()
                            .map(|p| (g.name_of(p.node).to_string(), p.index))
                            .collect()
                    })
                    .collect()
            };
            if ins(self, nx) != ins(other, ny) || outs(self, nx) != outs(other, ny) {
                return false;
            }
        }
        true
    }
}

impl PartialEq for ComputeGraph {
    fn eq(&self, other: &Self) -> bool {
        self.structurally_equal(other)
    }
}
