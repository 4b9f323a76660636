//! Materializing a plan: one `ComputeGraph` per partition (built in parallel), holding copies
//! of its nodes and the End/PlaceHolder nodes of its crossing links, with GE's names and
//! attributes (ge-reference §4.4, §4.6).

use rayon::prelude::*;

use slotmap::SecondaryMap;

use rge_ir::{AttrValue, ComputeGraph, GraphId, IrError, NodeId, OpDesc, OutAnchor, TensorDesc};

use super::plan::location;
use super::{CrossingEdge, ItemKind, PartitionPlan};
use crate::attr_names::*;
use crate::error::{CompileError, CompileResult};
use crate::graph_copy::{copy_node, move_node};

pub(crate) fn materialize(
    plan: &PartitionPlan,
    graph: &ComputeGraph,
) -> CompileResult<Vec<ComputeGraph>> {
    (0..plan.partitions.len() as u32)
        .into_par_iter()
        .map(|p| build_one(plan, &mut Copies(graph), p))
        .collect()
}

/// Builds the graphs of the partitions `wanted` says, moving their ops out of `graph` (whose
/// nodes there are left as shells, [`super::in_place`]). `moved` gets each moved node, nested
/// ones included: original node → (position in the result, node in that partition's graph).
pub(crate) fn materialize_moving(
    plan: &PartitionPlan,
    graph: &mut ComputeGraph,
    wanted: &[u32],
    moved: &mut SecondaryMap<NodeId, (u32, NodeId)>,
) -> CompileResult<Vec<ComputeGraph>> {
    // Boundary ops read both ends' ops, so they are made before any op moves.
    let mut ends: Vec<Option<OpDesc>> = vec![None; plan.edges.len()];
    let mut plds: Vec<Option<OpDesc>> = vec![None; plan.edges.len()];
    for &p in wanted {
        for item in plan.items_of(p) {
            match item.kind() {
                ItemKind::End(e) => {
                    ends[e as usize] = Some(end_op(plan, graph, &plan.edges[e as usize]));
                }
                ItemKind::Pld(e) => {
                    plds[e as usize] = Some(placeholder_op(plan, graph, &plan.edges[e as usize]));
                }
                ItemKind::Node(_) => {}
            }
        }
    }
    let mut out = Vec::with_capacity(wanted.len());
    for (i, &p) in wanted.iter().enumerate() {
        let mut map = SecondaryMap::new();
        let mut source = Moves {
            graph: &mut *graph,
            ends: &mut ends,
            plds: &mut plds,
            map: &mut map,
        };
        out.push(build_one(plan, &mut source, p)?);
        for (n, m) in map {
            moved.insert(n, (i as u32, m));
        }
    }
    Ok(out)
}

/// Where a partition graph's nodes come from.
trait NodeSource {
    /// The graph the plan was made for (its links; its ops when copied).
    fn graph(&self) -> &ComputeGraph;
    /// Adds original node `n` (with its subgraphs) to graph `g` of `dst`.
    fn add(&mut self, n: NodeId, dst: &mut ComputeGraph, g: GraphId) -> Result<NodeId, IrError>;
    fn end(&mut self, plan: &PartitionPlan, e: u32) -> OpDesc;
    fn placeholder(&mut self, plan: &PartitionPlan, e: u32) -> OpDesc;
}

/// Copies of the original nodes (GE's partitions: the original graph stays whole).
struct Copies<'a>(&'a ComputeGraph);

impl NodeSource for Copies<'_> {
    fn graph(&self) -> &ComputeGraph {
        self.0
    }
    fn add(&mut self, n: NodeId, dst: &mut ComputeGraph, g: GraphId) -> Result<NodeId, IrError> {
        copy_node(self.0, n, None, dst, g)
    }
    fn end(&mut self, plan: &PartitionPlan, e: u32) -> OpDesc {
        end_op(plan, self.0, &plan.edges[e as usize])
    }
    fn placeholder(&mut self, plan: &PartitionPlan, e: u32) -> OpDesc {
        placeholder_op(plan, self.0, &plan.edges[e as usize])
    }
}

/// The original nodes' ops moved out, boundary ops made beforehand.
struct Moves<'a> {
    graph: &'a mut ComputeGraph,
    ends: &'a mut [Option<OpDesc>],
    plds: &'a mut [Option<OpDesc>],
    map: &'a mut SecondaryMap<NodeId, NodeId>,
}

impl NodeSource for Moves<'_> {
    fn graph(&self) -> &ComputeGraph {
        self.graph
    }
    fn add(&mut self, n: NodeId, dst: &mut ComputeGraph, g: GraphId) -> Result<NodeId, IrError> {
        move_node(self.graph, n, dst, g, self.map)
    }
    fn end(&mut self, _: &PartitionPlan, e: u32) -> OpDesc {
        self.ends[e as usize]
            .take()
            .expect("made for every wanted partition")
    }
    fn placeholder(&mut self, _: &PartitionPlan, e: u32) -> OpDesc {
        self.plds[e as usize]
            .take()
            .expect("made for every wanted partition")
    }
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

fn build_one(
    plan: &PartitionPlan,
    source: &mut impl NodeSource,
    p: u32,
) -> CompileResult<ComputeGraph> {
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
                let new = source.add(id, &mut g, root).map_err(ir)?;
                local[slot as usize] = Some(new);
                let node = source.graph().node(id).expect("live node");
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
                let end = g.add_node(root, source.end(plan, n)).map_err(ir)?;
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
                let pld = g.add_node(root, source.placeholder(plan, n)).map_err(ir)?;
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
