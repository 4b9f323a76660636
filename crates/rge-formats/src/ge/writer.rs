//! [`GeModel`] → `ModelDef` (reference §7): graph[0] the root, then every subgraph in the
//! root's flat order; per op the OpDef fields, the special attrs and the `input` list.

use std::collections::{HashMap, HashSet};

use rge_ir::{ComputeGraph, GraphId, InAnchor, NodeId, OutAnchor, PrimaryFormat, TensorDesc};

use super::entries::{Entries, Entry};
use super::keys::{DATA_INPUT_COUNT, SRC_OUT_PEER_INDEX};
use super::{GeModelRef, WriteOptions};
use crate::ge_proto::{GraphDef, ModelDef, OpDef};

/// Writing state: the options.
pub(crate) struct Writer<'o> {
    pub(crate) opts: &'o WriteOptions,
}

/// A desc GE does not count as an input (`FORMAT_RESERVED` and `DT_UNDEFINED`): an unset
/// optional input such as Conv2D's `offset_w` (SOURCES.md fact 2).
fn is_unset_input(d: &TensorDesc) -> bool {
    d.format().primary() == PrimaryFormat::Reserved && d.dtype() == rge_ir::DataType::Undefined
}

/// The place of each of `links` (`(src, dst)`, `dst` an anchor of one node) in its source's
/// peer list, -1 if absent. Each distinct source's list is walked once, so a node reading one
/// value through 100k inputs costs 100k steps, not 100k².
fn peer_positions(cg: &ComputeGraph, links: &[(OutAnchor, InAnchor)]) -> Vec<i64> {
    let mut at: HashMap<(OutAnchor, InAnchor), i64> = HashMap::with_capacity(links.len());
    let mut walked: HashSet<OutAnchor> = HashSet::new();
    for &(src, dst) in links {
        if !walked.insert(src) {
            continue;
        }
        let Some(node) = cg.node(src.node) else {
            continue;
        };
        for (k, &p) in node.peers_of_out(src.index).iter().enumerate() {
            if p.node == dst.node {
                at.entry((src, p)).or_insert(k as i64);
            }
        }
    }
    links
        .iter()
        .map(|l| at.get(l).copied().unwrap_or(-1))
        .collect()
}

impl Writer<'_> {
    pub(crate) fn write_model(&self, m: &GeModelRef<'_>) -> ModelDef {
        let cg = m.graph;
        let graph = std::iter::once(cg.root())
            .chain(cg.subgraphs().iter().copied())
            .map(|g| self.write_graph(cg, g))
            .collect();
        ModelDef {
            name: m.name.to_string(),
            version: m.version,
            custom_version: m.custom_version.to_string(),
            graph,
            attr: self.write_attrs(m.attrs, &|_| false),
            attr_groups: None,
        }
    }

    /// A graph held in an attribute: its root graph only.
    pub(crate) fn write_nested_graph(&self, cg: &ComputeGraph) -> GraphDef {
        self.write_graph(cg, cg.root())
    }

    fn write_graph(&self, cg: &ComputeGraph, g: GraphId) -> GraphDef {
        GraphDef {
            op: cg.nodes_of(g).map(|n| self.write_node(cg, n)).collect(),
            ..self.write_graph_fields(cg, g)
        }
    }

    /// A graph's fields but its ops.
    pub(crate) fn write_graph_fields(&self, cg: &ComputeGraph, g: GraphId) -> GraphDef {
        GraphDef {
            name: cg.graph_name(g).unwrap_or_default().to_string(),
            input: cg
                .input_nodes(g)
                .iter()
                .map(|&n| format!("{}:0", cg.name_of(n)))
                .collect(),
            output: cg
                .output_nodes(g)
                .iter()
                .map(|&(n, i)| format!("{}:{i}", cg.name_of(n)))
                .collect(),
            op: Vec::new(),
            attr: cg
                .graph_attrs(g)
                .map(|a| self.write_attrs(a, &|_| false))
                .unwrap_or_default(),
            attr_groups: None,
        }
    }

    /// One node: data inputs in anchor order ("" for an unlinked anchor; trailing unlinked
    /// unset descs get no entry), then one entry per in-control peer.
    pub(crate) fn write_node(&self, cg: &ComputeGraph, n: NodeId) -> OpDef {
        let Some(op) = cg.op(n) else {
            return OpDef::default();
        };
        OpDef {
            input_desc: op.inputs().iter().map(|d| self.write_desc(d)).collect(),
            output_desc: op.outputs().iter().map(|d| self.write_desc(d)).collect(),
            ..self.write_node_fields(cg, n)
        }
    }

    /// [`Writer::write_node`] without the `input_desc` and `output_desc`.
    pub(crate) fn write_node_fields(&self, cg: &ComputeGraph, n: NodeId) -> OpDef {
        let (def, attr) = self.node_fields_and_attrs(cg, n);
        OpDef {
            attr: attr.into_map(self),
            ..def
        }
    }

    /// [`Writer::write_node_fields`] with the attribute map apart, as entries to encode.
    pub(crate) fn node_fields_and_attrs<'g>(
        &self,
        cg: &'g ComputeGraph,
        n: NodeId,
    ) -> (OpDef, Entries<'g>) {
        let Some(node) = cg.node(n) else {
            return (OpDef::default(), Entries::default());
        };
        let op = node.op();
        let mut def = self.op_fields_but_attr(op);
        let mut attr = self.op_entries(op);
        let peers = node.input_peers();
        let mut k = peers.len();
        while k > 0 && peers[k - 1].is_none() && op.input(k - 1).is_some_and(is_unset_input) {
            k -= 1;
        }
        // (source, this node's anchor) per `input` entry; `None` for an unlinked anchor.
        let mut links: Vec<Option<(OutAnchor, InAnchor)>> =
            Vec::with_capacity(k + node.in_ctrl_peers().len());
        let mut cross = false;
        for (i, p) in peers[..k].iter().enumerate() {
            match p {
                Some(p) => {
                    def.input
                        .push(format!("{}:{}", cg.name_of(p.node), p.index));
                    cross |= p.is_control();
                    links.push(Some((*p, n.input(i))));
                }
                None => {
                    def.input.push(String::new());
                    links.push(None);
                }
            }
        }
        for p in node.in_ctrl_peers() {
            def.input
                .push(format!("{}:{}", cg.name_of(p.node), p.index));
            cross |= !p.is_control();
            links.push(Some((*p, n.in_ctrl())));
        }
        if cross {
            attr.push(DATA_INPUT_COUNT, Entry::Int(k as i64));
        }
        if self.opts.dump {
            let linked: Vec<(OutAnchor, InAnchor)> = links.iter().flatten().copied().collect();
            let mut found = peer_positions(cg, &linked).into_iter();
            let keys: Vec<i64> = links
                .iter()
                .map(|l| l.map_or(-1, |_| found.next().unwrap_or(-1)))
                .collect();
            attr.push(SRC_OUT_PEER_INDEX, Entry::BareInts(keys));
        }
        (def, attr)
    }
}
