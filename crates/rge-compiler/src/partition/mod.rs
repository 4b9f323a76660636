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
//! `ComputeGraph` per partition in parallel, and [`merge_partitions`] merges them back (GE's
//! way, copies). The pipeline instead moves only the partitions its optimizers rewrite out of
//! the graph and back ([`PartitionPlan::take_partitions`], [`PartitionPlan::merge_in_place`]).
//! Nodes inside subgraphs (control-flow bodies) travel with their parent node.

mod build;
mod dense;
mod ge_ref;
mod in_place;
mod merge;
mod merge_back;
mod order;
mod plan;

use std::sync::Arc;

use hashbrown::HashMap;
use slotmap::SecondaryMap;

use rge_ir::{op_types, AttrMap, ComputeGraph, InAnchor, NodeId, OpDesc, OutAnchor};

use crate::attr_names::{STAGE_LEVEL, STREAM_LABEL};
use crate::error::{CompileError, CompileResult};
use crate::manager::EngineManager;
use crate::options::CompileOptions;

pub use dense::{dense_graph, Csr, DenseGraph};
pub use ge_ref::ge_merge_clusters;
pub use in_place::{InPlace, Taken};
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
/// Packed in 4 bytes (a plan of a million-node graph holds several million): the kind in the
/// top two bits, then a node's position in its partition's nodes, or a crossing link's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Item(u32);

/// An [`Item`] unpacked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemKind {
    /// The node at this position of the partition's nodes (`nodes_of`).
    Node(u32),
    /// The End of this crossing link.
    End(u32),
    /// The PlaceHolder of this crossing link.
    Pld(u32),
}

impl Item {
    const SHIFT: u32 = 30;
    const MASK: u32 = (1 << Self::SHIFT) - 1;

    pub(crate) fn new(kind: ItemKind) -> Self {
        let (tag, x) = match kind {
            ItemKind::Node(x) => (0, x),
            ItemKind::End(x) => (1, x),
            ItemKind::Pld(x) => (2, x),
        };
        assert!(x <= Self::MASK, "more than 2^30 nodes or links in a plan");
        Item(tag << Self::SHIFT | x)
    }

    pub(crate) fn kind(self) -> ItemKind {
        let x = self.0 & Self::MASK;
        match self.0 >> Self::SHIFT {
            0 => ItemKind::Node(x),
            1 => ItemKind::End(x),
            _ => ItemKind::Pld(x),
        }
    }
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
    let excl = manager.exclusions(options);
    if excl.is_err() {
        // A broken graph is reported before bad options, as it always was.
        dense_graph(graph, root)?;
    }
    let excl = excl?;
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

    // Per node, read in the same parallel pass that builds the topology: data-like?, engine
    // key, label, stage, unknown shape.
    // Kept small (16 bytes): a million-node graph has a million of them. Stages and labels
    // are rare, so they sit in a box of their own.
    struct NodeKeys<'a> {
        /// The engine key; `NO_ENGINE`: unplaced or on an unknown engine.
        engine: u32,
        data: bool,
        unknown: bool,
        rare: Option<Box<(Option<i64>, Option<&'a str>)>>,
    }
    const NO_ENGINE: u32 = u32::MAX;
    let (dense, infos) = dense::with_info(graph, root, |node| {
        let op = node.op();
        let data = is_data_like_source(op, node.in_link_count());
        let attrs = op.attrs();
        let stage = attrs.get_int(STAGE_LEVEL).ok().flatten();
        let label = attrs.get_str(STREAM_LABEL).ok().flatten();
        NodeKeys {
            engine: if data {
                0
            } else {
                let e = op.engine_name();
                key_of_engine.get(e).copied().unwrap_or(NO_ENGINE)
            },
            data,
            unknown: has_unknown_shape(op),
            rare: (stage.is_some() || label.is_some()).then(|| Box::new((stage, label))),
        }
    })?;
    let n = dense.len();
    let mut labels: HashMap<&str, u32> = HashMap::new();
    // Label `k` is `label_names[k]`; 0 is no label.
    let mut label_names: Vec<&str> = vec![""];
    let mut data = vec![false; n];
    let mut engine = vec![0u32; n];
    let mut label = vec![0u32; n];
    // Per node its stage; empty when no node has one (the usual case).
    let mut stage: Vec<Option<i64>> = Vec::new();
    let mut unknown = vec![false; n];
    for (v, info) in infos.iter().enumerate() {
        data[v] = info.data;
        unknown[v] = info.unknown;
        if let Some(rare) = &info.rare {
            if rare.0.is_some() {
                if stage.is_empty() {
                    stage = vec![None; n];
                }
                stage[v] = rare.0;
            }
            if let Some(l) = rare.1 {
                let k = labels.len() as u32 + 1;
                label[v] = *labels.entry(l).or_insert_with(|| {
                    label_names.push(l);
                    k
                });
            }
        }
        if info.engine == NO_ENGINE {
            let id = dense.ids[v];
            let name = graph.name_of(id);
            let e = graph.op(id).expect("live node").engine_name();
            return Err(perr(if e.is_empty() {
                format!("node `{name}` is not placed; place the graph first")
            } else {
                format!("node `{name}` is on unknown engine `{e}`")
            }));
        }
        engine[v] = info.engine;
    }
    drop(infos);

    let mut levels = Vec::new();
    // Per node its cluster at the previous level (empty before the first level).
    let mut group: Vec<u32> = Vec::new();
    let key_of = |v: usize, k: u32| if data[v] { NO_MERGE } else { k };
    if !stage.is_empty() {
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
            .map(|v| {
                key_of(
                    v,
                    int.key((group.get(v).copied().unwrap_or(0), unknown[v] as u32, 0)),
                )
            })
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
        label: &label,
        label_names: &label_names,
        clusters: levels.last().map_or(n, |l| l.stats.clusters),
        stage: &stage,
        unknown: &unknown,
        mode,
        times,
    })?;
    plan.levels = levels;
    Ok(plan)
}
