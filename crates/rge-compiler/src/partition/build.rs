//! Materializing a plan: one `ComputeGraph` per partition (built in parallel), holding copies
//! of its nodes and the End/PlaceHolder nodes of its crossing links, with GE's names and
//! attributes (ge-reference §4.4, §4.6).

use rayon::prelude::*;

use rge_ir::{AttrValue, ComputeGraph, NodeId, OpDesc, OutAnchor, TensorDesc};

use super::plan::location;
use super::{CrossingEdge, ItemKind, PartitionPlan};
use crate::attr_names::*;
use crate::error::{CompileError, CompileResult};
use crate::graph_copy::copy_node;

pub(crate) fn materialize(
    plan: &PartitionPlan,
    graph: &ComputeGraph,
) -> CompileResult<Vec<ComputeGraph>> {
    (0..plan.partitions.len() as u32)
        .into_par_iter()
        .map(|p| build_one(plan, graph, p))
        .collect()
}

fn end_op(plan: &PartitionPlan, graph: &ComputeGraph, e: &CrossingEdge) -> OpDesc {
    let src = graph.op(e.src.node).expect("live node");
    let dst = graph.op(e.dst.node).expect("live node");
    let mut desc = if e.src.is_control() {
        TensorDesc::default()
    } else {
        src.output(e.src.index as usize)
            .cloned()
            .unwrap_or_default()
    };
    if !e.src.is_control() {
        desc.set_real_dim_cnt(desc.shape().dims().len() as i64);
    }
    let mut op = OpDesc::new(plan.end_name(e), END).with_input("", desc);
    let a = op.attrs_mut();
    a.set(PEER_INDEX, i64::from(e.index));
    a.set(PARENT_OP_TYPE, dst.op_type());
    a.set(END_REAR_NODE_ENGINE_NAME, dst.engine_name());
    op
}

fn placeholder_op(plan: &PartitionPlan, graph: &ComputeGraph, e: &CrossingEdge) -> OpDesc {
    let src = graph.op(e.src.node).expect("live node");
    let dst = graph.op(e.dst.node).expect("live node");
    let desc = if e.dst.is_control() {
        TensorDesc::default()
    } else {
        dst.input(e.dst.index as usize).cloned().unwrap_or_default()
    };
    let mut op = OpDesc::new(plan.placeholder_name(e), PLACEHOLDER).with_output("", desc);
    let a = op.attrs_mut();
    a.set(PEER_INDEX, i64::from(e.index));
    a.set(PARENT_OP_TYPE, src.op_type());
    a.set(PARENT_NODE_NAME, src.name());
    a.set(PLD_FRONT_NODE_ENGINE_NAME, src.engine_name());
    a.set(PARENT_ID, format!("new_sub_graph{}:{}", e.src_k, src.id()));
    a.set(ANCHOR_INDEX, i64::from(e.src.index));
    a.set(PEER_NODE_NAME, plan.end_name(e));
    for key in [TASK_L2_FUSION_INFO, DATA_ANCHOR_INDEX_FOR_LXFUSION] {
        if let Some(v) = src.attrs().get(key) {
            a.set(key, v.clone());
        }
    }
    op
}

fn build_one(plan: &PartitionPlan, graph: &ComputeGraph, p: u32) -> CompileResult<ComputeGraph> {
    let info = &plan.partitions[p as usize];
    let name = info.name();
    let ir = |e| CompileError::ir(&name, e);
    let mut g = ComputeGraph::new(name.clone());
    let items = plan.items_of(p);
    g.reserve_nodes(items.len());
    let root = g.root();
    let mut local: Vec<Option<NodeId>> = vec![None; info.node_count()];
    let mapped = |local: &[Option<NodeId>], n: NodeId| -> Option<NodeId> {
        location(plan, n)
            .filter(|l| l.0 == p)
            .and_then(|l| local[l.1 as usize])
    };
    let nodes = plan.nodes_of(p);
    for item in items {
        match item.kind() {
            ItemKind::Node(slot) => {
                let id = nodes[slot as usize];
                let new = copy_node(graph, id, None, &mut g, root).map_err(ir)?;
                local[slot as usize] = Some(new);
                let node = graph.node(id).expect("live node");
                for (i, peer) in node.input_peers().iter().enumerate() {
                    if let Some(peer) = peer {
                        if let Some(from) = mapped(&local, peer.node) {
                            let src = OutAnchor {
                                node: from,
                                index: peer.index,
                            };
                            g.link(src, new.input(i)).map_err(ir)?;
                        }
                    }
                }
                for peer in node.in_ctrl_peers() {
                    if let Some(from) = mapped(&local, peer.node) {
                        let src = OutAnchor {
                            node: from,
                            index: peer.index,
                        };
                        g.link(src, new.in_ctrl()).map_err(ir)?;
                    }
                }
            }
            ItemKind::End(n) => {
                let e = &plan.edges[n as usize];
                let end = g.add_node(root, end_op(plan, graph, e)).map_err(ir)?;
                let from = mapped(&local, e.src.node).expect("producer precedes its End");
                let src = OutAnchor {
                    node: from,
                    index: e.src.index,
                };
                let dst = if e.src.is_control() {
                    end.in_ctrl()
                } else {
                    end.input(0)
                };
                g.link(src, dst).map_err(ir)?;
            }
            ItemKind::Pld(n) => {
                let e = &plan.edges[n as usize];
                let pld = g
                    .add_node(root, placeholder_op(plan, graph, e))
                    .map_err(ir)?;
                let to = mapped(&local, e.dst.node).expect("consumer precedes its PlaceHolder");
                let (src, dst) = if e.dst.is_control() {
                    (pld.out_ctrl(), to.in_ctrl())
                } else {
                    (pld.out(0), to.input(e.dst.index as usize))
                };
                g.link(src, dst).map_err(ir)?;
            }
        }
    }
    let attrs = g.graph_attrs_mut(root).expect("root");
    attrs.set(PARENT_GRAPH_NAME, plan.graph_name.as_str());
    attrs.set(IS_ROOT_GRAPH, AttrValue::Bool(true));
    attrs.set(IS_UNKNOWN_SHAPE, info.unknown_shape);
    Ok(g)
}
