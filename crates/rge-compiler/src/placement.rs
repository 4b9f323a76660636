//! The placement report: per node, its engine and why — which engines were considered, in cost
//! order, and what each answered (ARCHITECTURE.md decision 5).

use std::fmt;

use hashbrown::HashMap;
use slotmap::SecondaryMap;

use rge_ir::{ComputeGraph, GraphId, NodeId};

use crate::attr_names::SPECIFIED_ENGINE_NAME;
use crate::manager::{EngineId, ExcludeReason};

/// An engine's answer about one op type before its store is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeAnswer {
    /// Asked per op instance (its store has an info for the type).
    Candidate,
    /// The store has no kernel for the type (or the engine has no store).
    NoKernel,
    Excluded(ExcludeReason),
}

impl fmt::Display for TypeAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeAnswer::Candidate => f.write_str("candidate"),
            TypeAnswer::NoKernel => f.write_str("no kernel for this op type"),
            TypeAnswer::Excluded(r) => r.fmt(f),
        }
    }
}

/// How a node's engine was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// `_specified_engine_name` (with `_specified_kernel_lib_name`).
    Specified,
    /// The first engine in cost order whose store supports the op.
    Cost,
    /// An engine already recorded on the op (re-placement after a merge).
    Kept,
    /// A re-assign pass moved the node ([`NodePlacement::reassignment`] says why).
    Reassigned,
}

/// Why a re-assign pass moved a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reassignment {
    pub pass: String,
    /// The engine the node had before.
    pub from: EngineId,
    pub why: String,
}

/// The rarely present parts of a placement.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct Detail {
    kernel_lib: Option<Box<str>>,
    rejected: Vec<(EngineId, Box<str>)>,
    reassignment: Option<Reassignment>,
}

/// One node's placement: 16 bytes while the first engine asked takes the node with its own
/// kernel library (graphs may have millions of nodes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePlacement {
    pub engine: EngineId,
    pub decision: Decision,
    detail: Option<Box<Detail>>,
}

impl NodePlacement {
    /// A placement on `engine`; `kernel_lib` when not the engine store's.
    pub fn new(engine: EngineId, decision: Decision, kernel_lib: Option<&str>) -> Self {
        let detail = kernel_lib.map(|l| {
            Box::new(Detail {
                kernel_lib: Some(l.into()),
                ..Default::default()
            })
        });
        NodePlacement {
            engine,
            decision,
            detail,
        }
    }

    fn detail_mut(&mut self) -> &mut Detail {
        self.detail.get_or_insert_with(Default::default)
    }

    /// The kernel library when not the engine store's.
    pub fn kernel_lib_override(&self) -> Option<&str> {
        self.detail.as_ref().and_then(|d| d.kernel_lib.as_deref())
    }

    /// The engines asked before the chosen one that declined, with their reasons, in order.
    pub fn rejected(&self) -> &[(EngineId, Box<str>)] {
        self.detail.as_ref().map_or(&[], |d| &d.rejected)
    }

    /// Records the engines that declined.
    pub fn set_rejected(&mut self, rejected: Vec<(EngineId, Box<str>)>) {
        if !rejected.is_empty() {
            self.detail_mut().rejected = rejected;
        }
    }

    /// Why a re-assign pass moved the node.
    pub fn reassignment(&self) -> Option<&Reassignment> {
        self.detail.as_ref().and_then(|d| d.reassignment.as_ref())
    }
}

/// Every node's placement in one graph (root and subgraphs), keyed by node.
#[derive(Debug, Clone, Default)]
pub struct Placement {
    pub(crate) nodes: SecondaryMap<NodeId, NodePlacement>,
    /// Nodes in placement order (the pre-order walk over root and subgraphs).
    pub(crate) order: Vec<NodeId>,
    pub(crate) engine_names: Vec<String>,
    /// Each engine's store's kernel library name.
    pub(crate) kernel_libs: Vec<String>,
    /// Per op type, every atomic engine in cost order with its type-level answer.
    pub(crate) type_answers: HashMap<String, Vec<(EngineId, TypeAnswer)>>,
}

impl Placement {
    pub fn len(&self) -> usize {
        self.order.len()
    }
    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }
    /// Nodes in placement order.
    pub fn nodes(&self) -> &[NodeId] {
        &self.order
    }
    pub fn get(&self, n: NodeId) -> Option<&NodePlacement> {
        self.nodes.get(n)
    }
    pub fn engine_id(&self, n: NodeId) -> Option<EngineId> {
        self.nodes.get(n).map(|p| p.engine)
    }
    /// The engine name of node `n`.
    pub fn engine(&self, n: NodeId) -> Option<&str> {
        self.engine_id(n).map(|id| self.engine_name(id))
    }
    pub fn engine_name(&self, id: EngineId) -> &str {
        &self.engine_names[id.index()]
    }

    /// The kernel library of node `n`.
    pub fn kernel_lib(&self, n: NodeId) -> Option<&str> {
        let p = self.nodes.get(n)?;
        Some(
            p.kernel_lib_override()
                .unwrap_or(&self.kernel_libs[p.engine.index()]),
        )
    }

    /// Moves node `n` to `to` (a re-assign pass), recording why; `kernel_lib` is `to`'s
    /// store's unless given.
    pub fn reassign(
        &mut self,
        n: NodeId,
        to: EngineId,
        kernel_lib: Option<&str>,
        pass: &str,
        why: String,
    ) {
        if let Some(p) = self.nodes.get_mut(n) {
            let from = p.engine;
            p.engine = to;
            p.decision = Decision::Reassigned;
            let d = p.detail_mut();
            d.kernel_lib = kernel_lib.map(Box::from);
            d.reassignment = Some(Reassignment {
                pass: pass.to_string(),
                from,
                why,
            });
        }
    }

    /// The cost walk for `n`'s op type up to `winner`: each engine's answer.
    fn cost_walk(
        &self,
        graph: &ComputeGraph,
        n: NodeId,
        p: &NodePlacement,
        winner: EngineId,
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        let op_type = graph.op(n).map_or("", |o| o.op_type());
        let Some(list) = self.type_answers.get(op_type) else {
            return out;
        };
        for (id, a) in list {
            let name = self.engine_name(*id).to_string();
            match a {
                TypeAnswer::Candidate => {
                    if let Some((_, r)) = p.rejected().iter().find(|(e, _)| e == id) {
                        out.push((name, format!("unsupported: {r}")));
                    } else if *id == winner {
                        out.push((name, "supported".into()));
                        return out;
                    } else {
                        return out;
                    }
                }
                other => out.push((name, other.to_string())),
            }
        }
        out
    }

    /// Every engine considered for node `n` in order, with its answer, up to the chosen one.
    pub fn explain(&self, graph: &ComputeGraph, n: NodeId) -> Vec<(String, String)> {
        let Some(p) = self.nodes.get(n) else {
            return Vec::new();
        };
        let name = |id: EngineId| self.engine_name(id).to_string();
        match p.decision {
            Decision::Specified => {
                vec![(
                    name(p.engine),
                    format!("specified by {SPECIFIED_ENGINE_NAME}"),
                )]
            }
            Decision::Kept => vec![(name(p.engine), "kept from an earlier placement".into())],
            Decision::Cost => self.cost_walk(graph, n, p, p.engine),
            Decision::Reassigned => {
                let r = p.reassignment().expect("re-assigned nodes say why");
                let mut out = self.cost_walk(graph, n, p, r.from);
                if out.is_empty() {
                    out.push((name(r.from), "placed first".into()));
                }
                out.push((
                    name(p.engine),
                    format!("re-assigned by {}: {}", r.pass, r.why),
                ));
                out
            }
        }
    }

    /// One line: why node `n` is on its engine.
    pub fn reason(&self, graph: &ComputeGraph, n: NodeId) -> String {
        let Some(p) = self.nodes.get(n) else {
            return "not placed".into();
        };
        let steps = self.explain(graph, n);
        let head = match p.decision {
            Decision::Specified => "specified".to_string(),
            Decision::Kept => "kept".to_string(),
            Decision::Cost => "first supporting engine by cost".to_string(),
            Decision::Reassigned => format!(
                "re-assigned by {}",
                p.reassignment().map_or("?", |r| r.pass.as_str())
            ),
        };
        let steps: Vec<String> = steps.iter().map(|(e, a)| format!("{e}: {a}")).collect();
        format!("{head} ({})", steps.join("; "))
    }

    /// The same placement for `to`, a graph holding nodes of the same names (in graphs of the
    /// same names) as `from`, the graph this placement was made on. Nodes without a
    /// counterpart are dropped.
    pub fn remap_by_name(&self, from: &ComputeGraph, to: &ComputeGraph) -> Placement {
        let mut out = Placement {
            nodes: SecondaryMap::with_capacity(self.nodes.len()),
            order: Vec::with_capacity(self.order.len()),
            engine_names: self.engine_names.clone(),
            kernel_libs: self.kernel_libs.clone(),
            type_answers: self.type_answers.clone(),
        };
        let graph_in_to = |g: GraphId| -> Option<GraphId> {
            if g == from.root() {
                Some(to.root())
            } else {
                to.subgraph_by_name(from.graph_name(g)?)
            }
        };
        for &n in &self.order {
            let Some(node) = from.node(n) else { continue };
            let Some(m) = graph_in_to(node.graph()).and_then(|g| to.find_node(g, node.name()))
            else {
                continue;
            };
            out.nodes.insert(m, self.nodes[n].clone());
            out.order.push(m);
        }
        out
    }

    /// The placement after partitions were merged back in place: a node that moved follows
    /// `moved` (original node → node now), one that stayed keeps its entry, one that is gone
    /// from `graph` is dropped.
    pub fn remap_moved(
        mut self,
        moved: &SecondaryMap<NodeId, NodeId>,
        graph: &ComputeGraph,
    ) -> Placement {
        if moved.is_empty() {
            return self.retain_live(graph);
        }
        let mut nodes = SecondaryMap::with_capacity(self.nodes.len());
        let mut order = Vec::with_capacity(self.order.len());
        for n in std::mem::take(&mut self.order) {
            let Some(p) = self.nodes.remove(n) else {
                continue;
            };
            let now = match moved.get(n) {
                Some(&m) => m,
                None if graph.contains_node(n) => n,
                None => continue,
            };
            nodes.insert(now, p);
            order.push(now);
        }
        self.nodes = nodes;
        self.order = order;
        self
    }

    /// The entries whose nodes are still in `graph` (the graph this placement was made on,
    /// after edits).
    pub fn retain_live(mut self, graph: &ComputeGraph) -> Placement {
        self.order.retain(|&n| graph.contains_node(n));
        self.nodes.retain(|n, _| graph.contains_node(n));
        self
    }

    /// Adds the entries of `other` (made with the same engines) for nodes not placed here.
    pub fn absorb(&mut self, other: Placement) {
        for n in other.order {
            if !self.nodes.contains_key(n) {
                self.nodes.insert(n, other.nodes[n].clone());
                self.order.push(n);
            }
        }
        for (k, v) in other.type_answers {
            self.type_answers.entry(k).or_insert(v);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_node_placement_is_small() {
        assert_eq!(std::mem::size_of::<super::NodePlacement>(), 16);
    }
}
