//! The graph optimizer (GE's `GraphOptimizer`): an engine's passes over the original graph,
//! over each of its partitions (the fused graph) and over the merged whole graph. Every stage
//! is optional; the defaults do nothing. An optimizer never holds the graph mutably: it gets a
//! [`GraphRewriter`] that lends it read-only and changes it only through checked patches and
//! attribute calls (ARCHITECTURE.md decision 12).

use crate::error::EngineResult;
use crate::rewriter::GraphRewriter;

/// The stages at which the pipeline calls an engine's optimizer (the value crosses the C ABI).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OptimizeStage {
    /// The whole graph before placement (GE's `OptimizeOriginalGraph`).
    Original = 0,
    /// One partition placed on this engine, after partitioning (GE's `OptimizeFusedGraph`).
    Fused = 1,
    /// The merged graph after partitions are merged back (GE's `OptimizeWholeGraph`).
    Whole = 2,
}

impl OptimizeStage {
    pub const ALL: [OptimizeStage; 3] = [
        OptimizeStage::Original,
        OptimizeStage::Fused,
        OptimizeStage::Whole,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            OptimizeStage::Original => "original",
            OptimizeStage::Fused => "fused",
            OptimizeStage::Whole => "whole",
        }
    }

    pub fn from_value(v: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|s| *s as u32 == v)
    }
}

/// GE's `GraphOptimizer`. Partitions are optimized in parallel, so an optimizer may be called
/// from several threads at once (each call with its own graph and rewriter).
pub trait GraphOptimizer: Send + Sync {
    /// Before placement, on the whole graph.
    fn optimize_original_graph(&self, graph: &mut GraphRewriter<'_>) -> EngineResult<()> {
        let _ = graph;
        Ok(())
    }

    /// On one partition placed on this engine. The partition's boundary nodes (types `End`
    /// and `PlaceHolder`) are how the partition is merged back: the rewriter refuses to remove
    /// or annotate them.
    fn optimize_fused_graph(&self, graph: &mut GraphRewriter<'_>) -> EngineResult<()> {
        let _ = graph;
        Ok(())
    }

    /// Whether [`GraphOptimizer::optimize_fused_graph`] may be given the whole graph (the
    /// root graph's top level) in place of each partition: true for an optimizer that touches
    /// only nodes placed on this engine's atomic engines and keeps every value that a node it
    /// does not rewrite reads. The pipeline then skips moving the partitions out and back
    /// (when no dump asks for the partition graphs).
    fn fused_in_place(&self) -> bool {
        false
    }

    /// After merging, on the whole graph.
    fn optimize_whole_graph(&self, graph: &mut GraphRewriter<'_>) -> EngineResult<()> {
        let _ = graph;
        Ok(())
    }

    /// Runs `graph.stage()`.
    fn optimize(&self, graph: &mut GraphRewriter<'_>) -> EngineResult<()> {
        match graph.stage() {
            OptimizeStage::Original => self.optimize_original_graph(graph),
            OptimizeStage::Fused => self.optimize_fused_graph(graph),
            OptimizeStage::Whole => self.optimize_whole_graph(graph),
        }
    }
}
