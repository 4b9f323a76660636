//! Constant folding as a graph optimization pass (`constant_folding`, level basic): the same
//! folding the host engine does before placement ([`crate::fold`]), run inside the
//! `optimize_graph` stage right after `shape_to_const`, so the shape chains that pass made
//! constant are computed before the fusions and cancellations that need constant shapes.

use std::sync::Arc;

use rge_compiler::optimize::{standard_passes, OptLevel, OptPass};
use rge_ir::ComputeGraph;
use rge_kernels::KernelRegistry;

use crate::fold::{fold_constants, FoldOptions};

/// The pass (see the module docs).
pub struct ConstantFolding {
    pub kernels: KernelRegistry,
    pub options: FoldOptions,
}

impl OptPass for ConstantFolding {
    fn name(&self) -> &'static str {
        "constant_folding"
    }
    fn level(&self) -> OptLevel {
        OptLevel::Basic
    }
    fn run(&self, graph: &mut ComputeGraph) -> Result<usize, String> {
        fold_constants(graph, &self.kernels, &self.options)
            .map(|r| r.folded_nodes)
            .map_err(|e| e.to_string())
    }
}

/// The standard graph passes with constant folding over `kernels` after `shape_to_const`.
pub fn graph_passes(kernels: &KernelRegistry) -> Vec<Arc<dyn OptPass>> {
    let mut passes = standard_passes();
    let at = passes
        .iter()
        .position(|p| p.name() == "shape_to_const")
        .map_or(0, |i| i + 1);
    passes.insert(
        at,
        Arc::new(ConstantFolding {
            kernels: kernels.clone(),
            options: FoldOptions::default(),
        }),
    );
    passes
}
