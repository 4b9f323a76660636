//! The `fused` engine: attributes (the standard table's ffts_plus row) and its optimizer.

use rge_engine::{BasicEngine, EngineError, EngineResult, GraphOptimizer, GraphRewriter};
use rge_ir::OpDesc;

/// The engine's name.
pub const FUSED: &str = "fused";

/// The attribute a FusedElementwise node carries: why it was fused, then the nodes it replaced
/// (`rge explain` prints it).
pub const REGION_ATTR: &str = "_rge_fused_region";

/// The fused engine's optimizer: elementwise trees into FusedElementwise nodes, region by
/// region (the composite stage's fused-graph optimization).
#[derive(Debug, Clone, Default)]
pub struct ElementwiseFusion;

impl GraphOptimizer for ElementwiseFusion {
    /// Regions hold only nodes placed on `vector`, and a value leaves a region's inside only
    /// when every reader is in the region: the same regions in a partition or in the whole
    /// graph.
    fn fused_in_place(&self) -> bool {
        true
    }

    fn optimize_fused_graph(&self, graph: &mut GraphRewriter<'_>) -> EngineResult<()> {
        let engine = graph.engine().to_string();
        // Each batch is applied before the next is built: the patches waiting stay few.
        let Some(mut regions) = crate::region::RegionFinder::new(graph.graph()) else {
            // A graph with a cycle has no regions (the verifier reports the cycle).
            return Ok(());
        };
        // Freeing the replaced ops (names, attributes, descs: a few allocations each) is a
        // sixth of this stage on a large graph, and nothing waits for it: a thread of its own
        // frees them (not the session's pool, which builds the next batch meanwhile).
        std::thread::scope(|scope| {
            let (to_free, freed) = std::sync::mpsc::channel::<Vec<Vec<OpDesc>>>();
            scope.spawn(move || freed.into_iter().for_each(drop));
            loop {
                let patches = regions
                    .next_batch(graph.graph(), PATCHES_PER_BATCH)
                    .map_err(|e| EngineError::engine(engine.clone(), e))?;
                if patches.is_empty() {
                    return Ok(());
                }
                let mut removed = Vec::with_capacity(patches.len());
                for p in patches {
                    removed.push(graph.apply(p)?.removed);
                }
                // The thread ends only with the scope: a send cannot fail before that.
                let _ = to_free.send(removed);
            }
        })
    }
}

/// Region patches built before they are applied.
const PATCHES_PER_BATCH: usize = 1024;

/// The fused engine: cost 1, composite over `dense` and `vector` (the standard table's row),
/// with its optimizer.
pub fn fused_engine() -> EngineResult<BasicEngine> {
    let engine = BasicEngine::standard(FUSED).ok_or_else(|| {
        EngineError::engine(FUSED, "the standard engine table has no `fused` row")
    })?;
    Ok(engine.with_optimizer(ElementwiseFusion))
}
