//! [`GeModel`] → `ModelDef` (reference §7): graph[0] the root, then every subgraph in the
//! root's flat order; per op the OpDef fields, the special attrs and the `input` list.

use rge_ir::{ComputeGraph, GraphId, InAnchor, NodeId, OutAnchor, PrimaryFormat, TensorDesc};

use super::attr::bare_list_i;
use super::keys::{DATA_INPUT_COUNT, SRC_OUT_PEER_INDEX};
use super::{GeModelRef, WriteOptions};
use crate::ge_proto::attr_def::Value as V;
use crate::ge_proto::{AttrDef, GraphDef, ModelDef, OpDef};

/// Writing state: the options.
pub(crate) struct Writer<'o> {
    pub(crate) opts: &'o WriteOptions,
}

/// A desc GE does not count as an input (`FORMAT_RESERVED` and `DT_UNDEFINED`): an unset
/// optional input such as Conv2D's `offset_w` (SOURCES.md fact 2).
fn is_unset_input(d: &TensorDesc) -> bool {
    d.format().primary() == PrimaryFormat::Reserved && d.dtype() == rge_ir::DataType::Undefined
}

/// The place of `dst` in the peer list of `src`, -1 if absent.
fn peer_position(cg: &ComputeGraph, src: OutAnchor, dst: InAnchor) -> i64 {
    cg.node(src.node)
        .and_then(|n| n.peers_of_out(src.index).iter().position(|&p| p == dst))
        .map_or(-1, |p| p as i64)
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
        let Some(node) = cg.node(n) else {
            return OpDef::default();
        };
        let op = node.op();
        let mut def = self.write_op_desc(op);
        let peers = node.input_peers();
        let mut k = peers.len();
        while k > 0 && peers[k - 1].is_none() && op.input(k - 1).is_some_and(is_unset_input) {
            k -= 1;
        }
        let mut keys = Vec::with_capacity(k + node.in_ctrl_peers().len());
        let mut cross = false;
        for (i, p) in peers[..k].iter().enumerate() {
            match p {
                Some(p) => {
                    def.input
                        .push(format!("{}:{}", cg.name_of(p.node), p.index));
                    cross |= p.is_control();
                    keys.push(peer_position(cg, *p, n.input(i)));
                }
                None => {
                    def.input.push(String::new());
                    keys.push(-1);
                }
            }
        }
        for p in node.in_ctrl_peers() {
            def.input
                .push(format!("{}:{}", cg.name_of(p.node), p.index));
            cross |= !p.is_control();
            keys.push(peer_position(cg, *p, n.in_ctrl()));
        }
        if cross {
            def.attr.insert(
                DATA_INPUT_COUNT.into(),
                AttrDef {
                    value: Some(V::I(k as i64)),
                },
            );
        }
        if self.opts.dump {
            def.attr
                .insert(SRC_OUT_PEER_INDEX.into(), bare_list_i(keys));
        }
        def
    }
}
