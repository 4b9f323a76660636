//! The engine partitioner (GE's `EnginePartitioner`, engines.md §4.4.3, ge-reference §4).
//!
//! [`partition`] computes a [`PartitionPlan`] for the root graph of a placed graph: cluster
//! levels — stage (`_stage_level`), dynamic shape (known vs unknown), then composite engines
//! (in [`PartitionMode::Composite`]) or atomic engines (in [`PartitionMode::Atomic`]), each
//! level merging only inside the clusters of the previous one — then partitions numbered and
//! named as GE names them, with one End/PlaceHolder pair per crossing link (data and control)
//! and data-like source nodes in a rank-0 `inputNodeGraph`.
//!
//! The plan is cheap (no graph is built); [`PartitionPlan::materialize`] builds one
//! `ComputeGraph` per partition in parallel, and [`merge_partitions`] merges them back.
//! Nodes inside subgraphs (control-flow bodies) travel with their parent node.

mod build;
mod dense;
mod ge_ref;
mod merge;
mod merge_back;
mod order;
mod plan;

use std::sync::Arc;

use hashbrown::HashMap;
use rayon::prelude::*;
use slotmap::SecondaryMap;

use rge_ir::{op_types, AttrMap, ComputeGraph, InAnchor, NodeId, OpDesc, OutAnchor};

use crate::attr_names::{STAGE_LEVEL, STREAM_LABEL};
use crate::error::{CompileError, CompileResult};
use crate::manager::EngineManager;
use crate::options::CompileOptions;

pub use dense::{Csr, DenseGraph};
pub use ge_ref::ge_merge_clusters;
pub use merge::{merge_clusters, MergeStats, NO_MERGE};
pub use merge_back::{merge_partitions, Merged};

/// GE's partition modes used by the pipeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PartitionMode {
    /// Clusters by composite engine (a node on a member of a composite engine counts as the
    /// composite), so the composite engine sees whole regions (GE's
    /// kCompositeEnginePartitioning).
    Composite,
    /// Clusters by atomic engine (GE's kAtomicEnginePartitioning).
    Atomic,
}

impl PartitionMode {
    /// GE's dump-suffix name.
    pub fn name(self) -> &'static str {
        match self {
            PartitionMode::Composite => "CompositeEnginePartitioning",
            PartitionMode::Atomic => "AtomicEnginePartitioning",
        }
    }
}

/// Which merge algorithm clusters the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum MergeAlgorithm {
    /// rge's order-based merge (`merge.rs`): near-linear.
    #[default]
    Incremental,
    /// GE's `HasSecondPath` merge (`ge_ref.rs`): the reference, quadratic on bad shapes.
    GeReference,
}

/// One partition of a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionInfo {
    /// The `k` of `new_sub_graph<k>` (clusters counted in order of first node, data clusters
    /// included); `u32::MAX` for the input graph.
    pub k: u32,
    /// 0 for the input graph, else 1, 2… in order of first node.
    pub rank: u32,
    /// GE's `partition_times` of the plan.
    pub times: u32,
    /// The engine (composite or atomic) of its nodes, or `inputNodesSubGraph`.
    pub engine: Arc<str>,
    pub stream_label: Option<String>,
    pub stage: Option<i64>,
    pub unknown_shape: bool,
    /// (start, len) of its original nodes in the plan's node array ([`PartitionPlan::nodes_of`]).
    pub(crate) nodes: (u32, u32),
    pub end_count: usize,
    pub placeholder_count: usize,
    /// (start, len) in the plan's item array.
    pub(crate) items: (u32, u32),
}

impl PartitionInfo {
    /// `partition<times>_rank<rank>_<old name>`.
    pub fn name(&self) -> String {
        format!(
            "partition{}_rank{}_{}",
            self.times,
            self.rank,
            self.old_name()
        )
    }

    /// The number of original nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.1 as usize
    }

    /// `new_sub_graph<k>`, or `inputNodeGraph`: the name before ranking, which End and
    /// PlaceHolder node names keep as their prefix.
    pub fn old_name(&self) -> String {
        if self.k == u32::MAX {
            crate::attr_names::INPUT_NODE_GRAPH.to_string()
        } else {
            format!("new_sub_graph{}", self.k)
        }
    }

    pub fn is_input_graph(&self) -> bool {
        self.rank == 0
    }
}

/// What a partition graph holds, in GE's order: a node, then the PlaceHolders of its inputs
/// from other partitions; End nodes join the source's partition as their links are met.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Item {
    Node(NodeId),
    End(u32),
    Pld(u32),
}

/// A link between two partitions: one End/PlaceHolder pair, `index` being GE's `peerIndex`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CrossingEdge {
    pub index: u32,
    /// The producer anchor in the original graph (index -1: control).
    pub src: OutAnchor,
    /// The consumer anchor in the original graph (index -1: control).
    pub dst: InAnchor,
    pub src_partition: u32,
    pub dst_partition: u32,
    /// `k` of the producer's and consumer's `new_sub_graph<k>` (End/PlaceHolder name prefixes).
    pub(crate) src_k: u32,
    pub(crate) dst_k: u32,
}

/// Statistics of one cluster level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelStats {
    pub level: &'static str,
    pub stats: MergeStats,
}

/// A partitioning of a graph's root: partitions in rank order and the crossing links.
#[derive(Debug, Clone)]
pub struct PartitionPlan {
    pub mode: PartitionMode,
    /// GE's `partition_times` (the `N` of `partition<N>_rank…`).
    pub times: u32,
    pub graph_name: String,
    pub partitions: Vec<PartitionInfo>,
    pub edges: Vec<CrossingEdge>,
    pub levels: Vec<LevelStats>,
    /// Original nodes grouped by partition, each group in topological order.
    pub(crate) nodes: Vec<NodeId>,
    pub(crate) items: Vec<Item>,
    /// Original node → (partition, position in its partition's `nodes`, its `k`).
    pub(crate) location: SecondaryMap<NodeId, (u32, u32, u32)>,
    pub(crate) graph_attrs: AttrMap,
    pub(crate) inputs: Vec<String>,
    pub(crate) outputs: Vec<(String, u32)>,
}

impl PartitionPlan {
    /// The original nodes of partition `p`, in topological order.
    pub fn nodes_of(&self, p: u32) -> &[NodeId] {
        let (a, l) = self.partitions[p as usize].nodes;
        &self.nodes[a as usize..(a + l) as usize]
    }

    /// The items of partition `p`.
    pub(crate) fn items_of(&self, p: u32) -> &[Item] {
        let (a, l) = self.partitions[p as usize].items;
        &self.items[a as usize..(a + l) as usize]
    }

    /// The partition of original node `n`.
    pub fn partition_of(&self, n: NodeId) -> Option<u32> {
        self.location.get(n).map(|l| l.0)
    }

    /// The End node name of crossing link `e`.
    pub fn end_name(&self, e: &CrossingEdge) -> String {
        format!("new_sub_graph{}_End{}", e.src_k, e.index)
    }

    /// The PlaceHolder node name of crossing link `e`.
    pub fn placeholder_name(&self, e: &CrossingEdge) -> String {
        format!("new_sub_graph{}_PlaceHolder{}", e.dst_k, e.index)
    }

    /// The partitions in a topological order of the partition graph (rank breaks ties), or
    /// `None` if the partition graph has a cycle (which the partitioner never makes).
    pub fn topological_order(&self) -> Option<Vec<u32>> {
        plan::partition_topo_order(self)
    }

    /// Builds each partition's graph, in parallel, from the graph the plan was made for.
    pub fn materialize(&self, graph: &ComputeGraph) -> CompileResult<Vec<ComputeGraph>> {
        build::materialize(self, graph)
    }
}

/// Is `op` (with `in_links` links in) a data-like source (GE's `ENGINE_DEFAULT_DATA` nodes)?
pub fn is_data_like_source(op: &OpDesc, in_links: usize) -> bool {
    let t = op.op_type();
    in_links == 0 && (op_types::is_const(t) || op_types::is_data(t) || op_types::is_variable(t))
}

fn has_unknown_shape(op: &OpDesc) -> bool {
    op.inputs()
        .iter()
        .chain(op.outputs())
        .any(|d| d.shape().is_unknown())
}

/// Interns tuples as dense keys.
#[derive(Default)]
struct Interner(HashMap<(u32, u32, u32), u32>);

impl Interner {
    fn key(&mut self, t: (u32, u32, u32)) -> u32 {
        let n = self.0.len() as u32;
        *self.0.entry(t).or_insert(n)
    }
}

fn run_level(
    dense: &DenseGraph,
    keys: &[u32],
    options: &CompileOptions,
    level: &'static str,
    levels: &mut Vec<LevelStats>,
) -> Vec<u32> {
    let (roots, stats) = match options.merge_algorithm {
        MergeAlgorithm::Incremental => merge_clusters(dense, keys, options.merge_search_budget),
        MergeAlgorithm::GeReference => ge_merge_clusters(dense, keys),
    };
    levels.push(LevelStats { level, stats });
    roots
}

/// Partitions the root graph of `graph`, whose nodes must be placed (their op descs name their
/// engines). `times` is GE's partition counter, the `N` of the partition names.
pub fn partition(
    graph: &ComputeGraph,
    manager: &EngineManager,
    options: &CompileOptions,
    mode: PartitionMode,
    times: u32,
) -> CompileResult<PartitionPlan> {
    let root = graph.root();
    let dense = DenseGraph::new(graph, root)?;
    let n = dense.len();
    let excl = manager.exclusions(options)?;
    let perr = |message: String| CompileError::Partition {
        graph: graph.name().to_string(),
        message,
    };

    // Engine keys: each engine's name → the key of the engine its partitions are named after
    // (a composite engine's members share its key in composite mode).
    let mut engine_names: Vec<String> = Vec::new();
    let mut key_of_engine: HashMap<&str, u32> = HashMap::new();
    for id in manager.ids() {
        let shown = match mode {
            PartitionMode::Composite => manager
                .composite_of(id)
                .filter(|c| !excl.is_excluded(*c))
                .unwrap_or(id),
            PartitionMode::Atomic => id,
        };
        let shown = manager.name(shown);
        let k = match engine_names.iter().position(|x| x == shown) {
            Some(p) => p as u32,
            None => {
                engine_names.push(shown.to_string());
                engine_names.len() as u32 - 1
            }
        };
        key_of_engine.insert(manager.name(id), k);
    }

    // Per node, read in parallel: data-like?, engine key, label, stage, unknown shape.
    struct NodeKeys<'a> {
        data: bool,
        unknown: bool,
        stage: Option<i64>,
        label: Option<&'a str>,
        engine: Result<u32, &'a str>,
    }
    let infos: Vec<NodeKeys<'_>> = dense
        .ids
        .par_iter()
        .with_min_len(4096)
        .map(|&id| {
            let node = graph.node(id).expect("live node");
            let op = node.op();
            let data = is_data_like_source(op, node.in_link_count());
            let e = op.engine_name();
            NodeKeys {
                data,
                unknown: has_unknown_shape(op),
                stage: op.attrs().get_int(STAGE_LEVEL).ok().flatten(),
                label: op.attrs().get_str(STREAM_LABEL).ok().flatten(),
                engine: if data {
                    Ok(0)
                } else {
                    key_of_engine.get(e).copied().ok_or(e)
                },
            }
        })
        .collect();
    let mut labels: HashMap<&str, u32> = HashMap::new();
    let mut data = vec![false; n];
    let mut engine = vec![0u32; n];
    let mut label = vec![0u32; n];
    let mut stage: Vec<Option<i64>> = vec![None; n];
    let mut unknown = vec![false; n];
    for (v, info) in infos.iter().enumerate() {
        data[v] = info.data;
        unknown[v] = info.unknown;
        stage[v] = info.stage;
        if let Some(l) = info.label {
            let k = labels.len() as u32 + 1;
            label[v] = *labels.entry(l).or_insert(k);
        }
        engine[v] = match info.engine {
            Ok(k) => k,
            Err(e) => {
                let name = graph.name_of(dense.ids[v]);
                return Err(perr(if e.is_empty() {
                    format!("node `{name}` is not placed; place the graph first")
                } else {
                    format!("node `{name}` is on unknown engine `{e}`")
                }));
            }
        };
    }
    drop(infos);

    let mut levels = Vec::new();
    let mut group = vec![0u32; n];
    let key_of = |v: usize, k: u32| if data[v] { NO_MERGE } else { k };
    if stage.iter().any(Option::is_some) {
        let mut int: HashMap<Option<i64>, u32> = HashMap::new();
        let keys: Vec<u32> = (0..n)
            .map(|v| {
                let l = int.len() as u32;
                key_of(v, *int.entry(stage[v]).or_insert(l))
            })
            .collect();
        group = run_level(&dense, &keys, options, "stage", &mut levels);
    }
    if unknown.iter().any(|&u| u) {
        let mut int = Interner::default();
        let keys: Vec<u32> = (0..n)
            .map(|v| key_of(v, int.key((group[v], unknown[v] as u32, 0))))
            .collect();
        group = run_level(&dense, &keys, options, "dynamic shape", &mut levels);
    }
    let keys: Vec<u32> = if levels.is_empty() {
        // No earlier level: the key is (engine, label) as a number.
        let width = labels.len() as u32 + 1;
        (0..n)
            .map(|v| key_of(v, engine[v] * width + label[v]))
            .collect()
    } else {
        let mut int = Interner::default();
        (0..n)
            .map(|v| key_of(v, int.key((group[v], engine[v], label[v]))))
            .collect()
    };
    let level = match mode {
        PartitionMode::Composite => "composite engine",
        PartitionMode::Atomic => "atomic engine",
    };
    let roots = run_level(&dense, &keys, options, level, &mut levels);

    let mut plan = plan::build_plan(plan::PlanInput {
        graph,
        dense: &dense,
        roots: &roots,
        data: &data,
        engine: &engine,
        engine_names: &engine_names,
        stage: &stage,
        unknown: &unknown,
        mode,
        times,
    })?;
    plan.levels = levels;
    Ok(plan)
}
