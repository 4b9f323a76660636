//! The placer (GE's `EnginePlacer`, engines.md §4.4.2, ge-reference §5.3): every node gets an
//! engine. A specified engine wins; otherwise atomic engines are asked in ascending compute
//! cost (ties in registration order), excluded ones skipped, and the first whose store supports
//! the op wins. Nodes are decided in parallel; re-assign passes then run in order; the winner
//! is recorded on each op desc (engine, kernel library, and GE's three attributes).

use std::sync::{Arc, Mutex, PoisonError};

use hashbrown::HashMap;
use rayon::prelude::*;
use slotmap::SecondaryMap;

use rge_engine::Support;
use rge_ir::{AttrValue, ComputeGraph, GraphId, NodeId, OpDesc};

use crate::attr_names::{
    LXFUSION_ENGINE_NAME, LXFUSION_OP_KERNEL_LIB_NAME, OP_KERNEL_LIB_NAME, SPECIFIED_ENGINE_NAME,
    SPECIFIED_KERNEL_LIB_NAME,
};
use crate::error::{CompileError, CompileResult, NoEngine};
use crate::manager::{EngineId, EngineManager, Exclusions};
use crate::options::CompileOptions;
use crate::placement::{Decision, NodePlacement, Placement, TypeAnswer};

/// Every engine's answer for one op type, shared by the workers that decide nodes.
type Answers = Arc<Vec<(EngineId, TypeAnswer)>>;

/// A placement decision before it is recorded.
fn placed(engine: EngineId, decision: Decision, kernel_lib: Option<&str>) -> NodePlacement {
    NodePlacement::new(engine, decision, kernel_lib)
}
use crate::reassign::{default_passes, ReassignCtx, ReassignPass};

/// Whether engines already recorded on ops are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlaceMode {
    /// Decide every node afresh (specified engines still win).
    #[default]
    Fresh,
    /// Keep an engine recorded on the op (its engine name, or `_lxfusion_engine_name` after a
    /// reload); decide only the others. Used after partitions are merged back.
    KeepPlaced,
}

/// Places graphs with one manager and one set of options.
pub struct Placer<'a> {
    manager: &'a EngineManager,
    options: &'a CompileOptions,
    passes: Vec<Arc<dyn ReassignPass>>,
    mode: PlaceMode,
}

/// Places every node of `graph` with the default re-assign passes.
pub fn place(
    graph: &mut ComputeGraph,
    manager: &EngineManager,
    options: &CompileOptions,
) -> CompileResult<Placement> {
    Placer::new(manager, options).run(graph)
}

/// A string attribute, or "" when absent or not a string.
fn str_attr<'a>(op: &'a OpDesc, name: &str) -> &'a str {
    match op.attrs().get(name) {
        Some(AttrValue::String(s)) => s,
        _ => "",
    }
}

impl<'a> Placer<'a> {
    /// A placer with the default re-assign passes (host-exec, dynamic data flow).
    pub fn new(manager: &'a EngineManager, options: &'a CompileOptions) -> Self {
        Placer {
            manager,
            options,
            passes: default_passes(),
            mode: PlaceMode::Fresh,
        }
    }

    /// Replaces the re-assign passes (run in order).
    pub fn with_passes(mut self, passes: Vec<Arc<dyn ReassignPass>>) -> Self {
        self.passes = passes;
        self
    }

    pub fn with_mode(mut self, mode: PlaceMode) -> Self {
        self.mode = mode;
        self
    }

    /// Every atomic engine in cost order with its answer for `op_type`.
    fn type_answers(&self, op_type: &str, excl: &Exclusions) -> Vec<(EngineId, TypeAnswer)> {
        let m = self.manager;
        m.by_cost()
            .iter()
            .filter(|&&id| m.engine(id).attributes().is_atomic())
            .map(|&id| {
                let a = if let Some(r) = excl.reason(id) {
                    TypeAnswer::Excluded(r.clone())
                } else if m
                    .engine(id)
                    .kernel_store()
                    .is_some_and(|s| s.op_info(op_type).is_some())
                {
                    TypeAnswer::Candidate
                } else {
                    TypeAnswer::NoKernel
                };
                (id, a)
            })
            .collect()
    }

    fn engine_of(&self, op: &OpDesc, name: &str, what: &str) -> CompileResult<EngineId> {
        let id = self
            .manager
            .id(name)
            .ok_or_else(|| CompileError::Placement {
                node: op.name().to_string(),
                message: format!("{what} engine `{name}` is not registered"),
            })?;
        if !self.manager.engine(id).attributes().is_atomic() {
            return Err(CompileError::Placement {
                node: op.name().to_string(),
                message: format!(
                    "{what} engine `{name}` is composite; nodes are placed on atomic engines"
                ),
            });
        }
        Ok(id)
    }

    /// Decides one node; `list` is every engine's answer for its op type.
    fn decide(
        &self,
        op: &OpDesc,
        list: &[(EngineId, TypeAnswer)],
    ) -> Result<NodePlacement, Box<CompileError>> {
        let m = self.manager;
        let specified = str_attr(op, SPECIFIED_ENGINE_NAME);
        if !specified.is_empty() {
            let id = self
                .engine_of(op, specified, "specified")
                .map_err(Box::new)?;
            let lib = str_attr(op, SPECIFIED_KERNEL_LIB_NAME);
            let lib = (!lib.is_empty() && lib != m.kernel_lib(id)).then_some(lib);
            return Ok(placed(id, Decision::Specified, lib));
        }
        if self.mode == PlaceMode::KeepPlaced {
            let mut kept = op.engine_name();
            if kept.is_empty() {
                kept = str_attr(op, LXFUSION_ENGINE_NAME);
            }
            if !kept.is_empty() {
                let id = self.engine_of(op, kept, "recorded").map_err(Box::new)?;
                let lib = op.kernel_lib_name();
                let lib = (!lib.is_empty() && lib != m.kernel_lib(id)).then_some(lib);
                return Ok(placed(id, Decision::Kept, lib));
            }
        }
        let mut rejected: Vec<(EngineId, Box<str>)> = Vec::new();
        for (id, a) in list {
            if *a != TypeAnswer::Candidate {
                continue;
            }
            let store = m
                .engine(*id)
                .kernel_store()
                .expect("candidates have stores");
            match store.check_supported(op) {
                Support::Yes => {
                    let mut p = placed(*id, Decision::Cost, None);
                    p.set_rejected(rejected);
                    return Ok(p);
                }
                Support::No(r) => rejected.push((*id, r.into_boxed_str())),
            }
        }
        let mut rejected = rejected.into_iter();
        let reasons = list
            .iter()
            .map(|(id, a)| {
                let answer = match a {
                    TypeAnswer::Candidate => rejected
                        .next()
                        .map_or_else(|| "not asked".into(), |(_, r)| format!("unsupported: {r}")),
                    other => other.to_string(),
                };
                (m.name(*id).to_string(), answer)
            })
            .collect();
        Err(Box::new(CompileError::NoEngine(Box::new(NoEngine {
            node: op.name().to_string(),
            op_type: op.op_type().to_string(),
            reasons,
        }))))
    }

    /// Decides every node (root and subgraphs), runs the re-assign passes, and records the
    /// results on the op descs. On error the graph is unchanged.
    pub fn run(&self, graph: &mut ComputeGraph) -> CompileResult<Placement> {
        let order = graph.all_nodes(graph.root());
        self.run_on(graph, order)
    }

    /// [`Placer::run`] on the nodes `known` does not place (what an optimizer added), the
    /// others left as they are: a merge after the fused stage places its few new nodes
    /// without re-deciding and re-recording the whole graph (150 ms of a 100k-node compile).
    ///
    /// The new nodes are found by one sweep of the node table (storage order: following the
    /// graph's order is a cache miss per node), keeping those of the root graph and the
    /// subgraphs it owns.
    pub fn run_new(&self, graph: &mut ComputeGraph, known: &Placement) -> CompileResult<Placement> {
        let root = graph.root();
        let g: &ComputeGraph = graph;
        let under_root = |mut at: GraphId| {
            // The verifier rejects ownership cycles; the bound keeps a broken graph finite.
            for _ in 0..1024 {
                if at == root {
                    return true;
                }
                match g.parent_graph(at) {
                    Some(p) => at = p,
                    None => return false,
                }
            }
            false
        };
        let order: Vec<NodeId> = g
            .nodes_unordered()
            .filter(|&(n, node)| known.get(n).is_none() && under_root(node.graph()))
            .map(|(n, _)| n)
            .collect();
        self.run_on(graph, order)
    }

    fn run_on(&self, graph: &mut ComputeGraph, order: Vec<NodeId>) -> CompileResult<Placement> {
        let excl = self.manager.exclusions(self.options)?;
        let g: &ComputeGraph = graph;
        // One pass over the nodes: each worker keeps the type answers it has met (computed
        // once per type overall, in `types`), decides, and notes whether the op carries any
        // attribute (the re-assign passes look only at those).
        let types: Mutex<HashMap<&str, Answers>> = Mutex::new(HashMap::new());
        let decided: Vec<(Result<NodePlacement, Box<CompileError>>, bool)> = order
            .par_iter()
            .with_min_len(4096)
            .map_init(HashMap::<&str, Answers>::new, |seen, &n| {
                let op = g.op(n).expect("live node");
                let t = op.op_type();
                let list = seen.entry(t).or_insert_with(|| {
                    let mut all = types.lock().unwrap_or_else(PoisonError::into_inner);
                    all.entry(t)
                        .or_insert_with(|| Arc::new(self.type_answers(t, &excl)))
                        .clone()
                });
                (self.decide(op, list), !op.attrs().is_empty())
            })
            .collect();
        let mut nodes = SecondaryMap::with_capacity(order.len());
        let mut attributed = Vec::new();
        for (&n, (d, has_attrs)) in order.iter().zip(decided) {
            nodes.insert(n, d.map_err(|e| *e)?);
            if has_attrs {
                attributed.push(n);
            }
        }
        let types = types.into_inner().unwrap_or_else(PoisonError::into_inner);
        let mut placement = Placement {
            nodes,
            order,
            engine_names: self
                .manager
                .ids()
                .map(|id| self.manager.name(id).to_string())
                .collect(),
            kernel_libs: self
                .manager
                .ids()
                .map(|id| self.manager.kernel_lib(id).to_string())
                .collect(),
            type_answers: types
                .into_iter()
                .map(|(k, v)| {
                    let v = Arc::try_unwrap(v).unwrap_or_else(|v| (*v).clone());
                    (k.to_string(), v)
                })
                .collect(),
        };
        let ctx = ReassignCtx {
            graph,
            manager: self.manager,
            exclusions: &excl,
            attributed: &attributed,
        };
        for p in &self.passes {
            p.run(&ctx, &mut placement)?;
        }
        record(graph, &placement);
        Ok(placement)
    }
}

/// GE's attributes naming a node's kernel library and engine, in the order of their values
/// `[lib, engine, lib]`.
const GE_ATTRS: [&str; 3] = [
    OP_KERNEL_LIB_NAME,
    LXFUSION_ENGINE_NAME,
    LXFUSION_OP_KERNEL_LIB_NAME,
];

/// Writes each node's engine and kernel library onto its op desc, with GE's attributes
/// `_ge_attr_op_kernel_lib_name`, `_lxfusion_engine_name`, `_lxfusion_op_kernel_lib_name`.
///
/// Allocation-bound, so it allocates as little as it can (attribute names are never copied,
/// the attribute vector is sized once, values already recorded, as on a re-placement, are left
/// alone) and runs on the session's threads (the 100k-node DAG's place stage, median of five
/// alternated runs on two threads: 74 → 61 ms).
pub fn record(graph: &mut ComputeGraph, placement: &Placement) {
    record_nodes(graph, placement, |_| true);
}

/// [`record`] for the nodes a re-assign pass moved: the others are as the placement recorded
/// them (the second pass over a 100k-node graph's attributes was a third of recording).
pub(crate) fn record_reassigned(graph: &mut ComputeGraph, placement: &Placement) {
    record_nodes(graph, placement, |p| p.decision == Decision::Reassigned);
}

/// Records the placed nodes whose placement passes `wanted`.
fn record_nodes(
    graph: &mut ComputeGraph,
    placement: &Placement,
    wanted: impl Fn(&NodePlacement) -> bool + Sync,
) {
    // One shared text per engine and library: the ops' names point at them.
    let shared = |names: &[String]| -> Vec<Arc<str>> {
        names.iter().map(|s| Arc::from(s.as_str())).collect()
    };
    let (engines, libs) = (
        shared(&placement.engine_names),
        shared(&placement.kernel_libs),
    );
    let mut ops: Vec<(NodeId, &mut OpDesc, &NodePlacement)> = graph
        .ops_mut()
        .filter_map(|(n, op)| Some((n, op, placement.get(n).filter(|p| wanted(p))?)))
        .collect();
    ops.par_iter_mut()
        .with_min_len(RECORD_CHUNK)
        .for_each(|(n, op, p)| {
            let e = p.engine.index();
            let lib = placement.kernel_lib(*n).unwrap_or_default();
            let lib = if *libs[e] == *lib {
                libs[e].clone()
            } else {
                Arc::from(lib)
            };
            record_in_place(op, &engines[e], &lib);
        });
}

/// Ops recorded per parallel task, at least.
const RECORD_CHUNK: usize = 2048;

/// Records `engine` and `lib` on `op`, leaving values already there (most ops have none: the
/// three attributes then go into one vector sized for them).
fn record_in_place(op: &mut OpDesc, engine: &Arc<str>, lib: &Arc<str>) {
    if op.engine_name() != &**engine {
        op.set_engine_name_shared(engine);
    }
    if op.kernel_lib_name() != &**lib {
        op.set_kernel_lib_name_shared(lib);
    }
    let attrs = op.attrs_mut();
    let present = GE_ATTRS.iter().filter(|k| attrs.contains(k)).count();
    attrs.reserve(GE_ATTRS.len() - present);
    for (key, value) in GE_ATTRS.into_iter().zip([&**lib, &**engine, &**lib]) {
        if present == 0 || attrs.get_str(key) != Ok(Some(value)) {
            attrs.set_static(key, value);
        }
    }
}

/// The engine of `n` as recorded on its op ("" when unplaced).
pub fn recorded_engine(graph: &ComputeGraph, n: NodeId) -> &str {
    graph.op(n).map_or("", |o| o.engine_name())
}
