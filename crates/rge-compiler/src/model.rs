//! The compiled model (GE's GeRootModel, engines.md §4.7): the merged graph, the placement with
//! its reasons, the partitions, streams and events, and per node its running parameters and
//! kernel (a trait object from its engine).

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use slotmap::SecondaryMap;

use rge_engine::{Kernel, RunningParams};
use rge_ir::{ComputeGraph, NodeId};

use crate::manager::EngineManager;
use crate::partition::PartitionPlan;
use crate::placement::Placement;
use crate::stages::StageTime;
use crate::streams::Event;

/// One partition, as the compiled model and the command line report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionSummary {
    pub name: String,
    pub engine: String,
    pub rank: u32,
    pub stream: Option<u32>,
    /// Original node names, in topological order.
    pub nodes: Vec<String>,
    pub end_count: usize,
    pub placeholder_count: usize,
    pub unknown_shape: bool,
    pub stage: Option<i64>,
}

impl PartitionSummary {
    /// The summary of partition `p` of `plan` (made on `graph`).
    pub fn of(plan: &PartitionPlan, p: u32, graph: &ComputeGraph, stream: Option<u32>) -> Self {
        let info = &plan.partitions[p as usize];
        PartitionSummary {
            name: info.name(),
            engine: info.engine.to_string(),
            rank: info.rank,
            stream,
            nodes: plan
                .nodes_of(p)
                .iter()
                .map(|&n| graph.name_of(n).to_string())
                .collect(),
            end_count: info.end_count,
            placeholder_count: info.placeholder_count,
            unknown_shape: info.unknown_shape,
            stage: info.stage,
        }
    }

    /// All partitions of `plan`.
    pub fn all(plan: &PartitionPlan, graph: &ComputeGraph, streams: &[Option<u32>]) -> Vec<Self> {
        (0..plan.partitions.len())
            .map(|i| Self::of(plan, i as u32, graph, streams.get(i).copied().flatten()))
            .collect()
    }
}

/// What the pipeline produced for one node.
#[derive(Debug)]
pub struct CompiledNode {
    pub engine: String,
    pub params: RunningParams,
    /// `None` when the engine has no kernel builder.
    pub kernel: Option<Box<dyn Kernel>>,
}

/// The result of [`crate::Pipeline::compile`].
#[derive(Debug)]
pub struct CompiledModel {
    /// The merged graph (engines, kernel libraries and stream ids recorded on its ops).
    pub graph: ComputeGraph,
    /// Every node's engine and why, keyed by `graph`'s nodes.
    pub placement: Placement,
    /// Partitions of the composite-engine stage (empty when no composite engine is in use).
    pub composite_partitions: Vec<PartitionSummary>,
    /// Partitions of the atomic-engine stage, with their streams.
    pub partitions: Vec<PartitionSummary>,
    pub stream_count: u32,
    /// Each node's stream (`None`: a skipped engine, or the input graph).
    pub node_streams: SecondaryMap<NodeId, Option<u32>>,
    pub events: Vec<Event>,
    pub nodes: SecondaryMap<NodeId, CompiledNode>,
    /// Dump files written, in stage order.
    pub dumps: Vec<PathBuf>,
    /// The engines (kept alive as long as their kernels are).
    pub manager: Arc<EngineManager>,
    /// How long each pipeline stage took, in the order they ran.
    pub stage_times: Vec<StageTime>,
    /// What each graph optimization pass did, in the order they ran (docs/optimizations.md).
    pub optimizations: Vec<crate::optimize::PassReport>,
}

impl CompiledModel {
    /// A root node by name.
    pub fn find(&self, name: &str) -> Option<NodeId> {
        self.graph.find_node(self.graph.root(), name)
    }

    /// A node's kernel.
    pub fn kernel(&self, n: NodeId) -> Option<&dyn Kernel> {
        self.nodes.get(n).and_then(|c| c.kernel.as_deref())
    }

    /// A short text summary: partitions with engines and streams, then events.
    pub fn summary(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "graph {}: {} nodes, {} partitions, {} streams, {} events",
            self.graph.name(),
            self.graph.total_node_count(),
            self.partitions.len(),
            self.stream_count,
            self.events.len()
        );
        for p in &self.partitions {
            let stream = p.stream.map_or("-".to_string(), |x| x.to_string());
            let _ = writeln!(
                s,
                "  {} engine={} stream={} nodes={} ends={} placeholders={}",
                p.name,
                p.engine,
                stream,
                p.nodes.len(),
                p.end_count,
                p.placeholder_count
            );
        }
        for e in &self.events {
            let _ = writeln!(
                s,
                "  event {}: {} (stream {}) -> {} (stream {})",
                e.id,
                self.graph.name_of(e.src),
                e.src_stream,
                self.graph.name_of(e.dst),
                e.dst_stream
            );
        }
        s
    }
}
