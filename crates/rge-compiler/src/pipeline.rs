//! The compile pipeline (engines.md §4.7): infer → engines' original-graph optimization →
//! place → re-assign → partition (composite, then atomic) → engines' fused-graph optimization
//! (parallel) → merge → whole-graph optimization → compile ops → running parameters →
//! kernel generation → streams → [`CompiledModel`]. Every stage can dump the graph.

use std::collections::BTreeMap;
use std::sync::Arc;

use rayon::prelude::*;
use slotmap::SecondaryMap;

use rge_engine::{default_running_params, EngineError, OptimizeStage, RunningParams};
use rge_ir::{ComputeGraph, NodeId};

use crate::dump::Dumper;
use crate::error::{CompileError, CompileResult};
use crate::manager::{EngineId, EngineManager};
use crate::model::{CompiledModel, CompiledNode, PartitionSummary};
use crate::options::CompileOptions;
use crate::partition::{merge_partitions, partition, Merged, PartitionMode, PartitionPlan};
use crate::placement::Placement;
use crate::placer::{PlaceMode, Placer};
use crate::reassign::{default_passes, ReassignPass};
use crate::streams::{assign_partition_streams, events};

/// A whole-graph pass the pipeline runs (the infer stage; `rge-ops`' inference pass is wired
/// in through this).
pub trait GraphPass: Send + Sync {
    fn name(&self) -> &str;
    fn run(&self, graph: &mut ComputeGraph, options: &CompileOptions) -> Result<(), String>;
}

/// A [`GraphPass`] from a closure.
pub struct FnPass<F> {
    pub name: String,
    pub f: F,
}

impl<F> FnPass<F>
where
    F: Fn(&mut ComputeGraph, &CompileOptions) -> Result<(), String> + Send + Sync,
{
    pub fn new(name: impl Into<String>, f: F) -> Self {
        FnPass {
            name: name.into(),
            f,
        }
    }
}

impl<F> GraphPass for FnPass<F>
where
    F: Fn(&mut ComputeGraph, &CompileOptions) -> Result<(), String> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn run(&self, graph: &mut ComputeGraph, options: &CompileOptions) -> Result<(), String> {
        (self.f)(graph, options)
    }
}

/// Compiles graphs with one engine manager and one set of options.
pub struct Pipeline {
    manager: Arc<EngineManager>,
    options: CompileOptions,
    infer: Option<Box<dyn GraphPass>>,
    reassign: Vec<Arc<dyn ReassignPass>>,
}

fn stage_err(stage: &str, e: impl std::fmt::Display) -> CompileError {
    CompileError::Stage {
        stage: stage.to_string(),
        message: e.to_string(),
    }
}

impl Pipeline {
    pub fn new(manager: Arc<EngineManager>, options: CompileOptions) -> Self {
        Pipeline {
            manager,
            options,
            infer: None,
            reassign: default_passes(),
        }
    }

    /// Sets the infer stage (without one, the stage is skipped).
    pub fn with_infer(mut self, pass: impl GraphPass + 'static) -> Self {
        self.infer = Some(Box::new(pass));
        self
    }

    /// Replaces the re-assign passes (default: [`default_passes`]).
    pub fn with_reassign_passes(mut self, passes: Vec<Arc<dyn ReassignPass>>) -> Self {
        self.reassign = passes;
        self
    }

    pub fn options(&self) -> &CompileOptions {
        &self.options
    }

    pub fn manager(&self) -> &Arc<EngineManager> {
        &self.manager
    }

    fn placer(&self, mode: PlaceMode) -> Placer<'_> {
        Placer::new(&self.manager, &self.options)
            .with_passes(self.reassign.clone())
            .with_mode(mode)
    }

    /// Runs `stage` of every engine's optimizer on `graph`, in cost order.
    fn optimize_all(&self, graph: &mut ComputeGraph, stage: OptimizeStage) -> CompileResult<()> {
        for &id in self.manager.by_cost() {
            if let Some(o) = self.manager.engine(id).graph_optimizer() {
                o.optimize(stage, graph)
                    .map_err(|e| stage_err(&format!("optimize_{}", stage.name()), e))?;
            }
        }
        Ok(())
    }

    /// Partitions, optimizes the partitions in parallel (composite engines' in composite mode,
    /// atomic engines' in atomic mode), and merges them back.
    fn partition_stage(
        &self,
        graph: &ComputeGraph,
        mode: PartitionMode,
        times: u32,
        dump: &mut Dumper,
    ) -> CompileResult<(PartitionPlan, Merged)> {
        let plan = partition(graph, &self.manager, &self.options, mode, times)?;
        let mut graphs = plan.materialize(graph)?;
        let tag = match mode {
            PartitionMode::Composite => "composite",
            PartitionMode::Atomic => "atomic",
        };
        dump.partitions(&format!("partition_{tag}"), &graphs)?;
        let manager = &self.manager;
        graphs
            .par_iter_mut()
            .zip(plan.partitions.par_iter())
            .try_for_each(|(g, info)| -> Result<(), EngineError> {
                let Some(engine) = manager.get(&info.engine) else {
                    return Ok(());
                };
                let composite = !engine.attributes().is_atomic();
                let wanted = match mode {
                    PartitionMode::Composite => composite,
                    PartitionMode::Atomic => !composite,
                };
                match engine.graph_optimizer() {
                    Some(o) if wanted && !info.is_input_graph() => o.optimize_fused_graph(g),
                    _ => Ok(()),
                }
            })
            .map_err(|e| stage_err(&format!("optimize_fused_{tag}"), e))?;
        dump.partitions(&format!("optimize_fused_{tag}"), &graphs)?;
        let merged = merge_partitions(&plan, &graphs)?;
        dump.graph(&format!("merge_{tag}"), &merged.graph)?;
        Ok((plan, merged))
    }

    /// Places the nodes of a merged graph: the earlier placement carried over by name, nodes
    /// new since (from optimizers) placed afresh.
    fn replace(
        &self,
        before: &ComputeGraph,
        placement: &Placement,
        merged: &mut ComputeGraph,
    ) -> CompileResult<Placement> {
        let mut carried = placement.remap_by_name(before, merged);
        let fresh = self.placer(PlaceMode::KeepPlaced).run(merged)?;
        carried.absorb(fresh);
        Ok(carried)
    }

    /// Compiles `graph`.
    pub fn compile(&self, mut graph: ComputeGraph) -> CompileResult<CompiledModel> {
        let mut dump = Dumper::new(self.options.resolved_dump_dir())?;
        dump.graph("input", &graph)?;
        if let Some(infer) = &self.infer {
            infer
                .run(&mut graph, &self.options)
                .map_err(|m| stage_err(&format!("infer ({})", infer.name()), m))?;
            dump.graph("infer", &graph)?;
        }
        self.optimize_all(&mut graph, OptimizeStage::Original)?;
        dump.graph("optimize_original", &graph)?;
        let mut placement = self.placer(PlaceMode::Fresh).run(&mut graph)?;
        dump.graph("place", &graph)?;

        let mut times = 0;
        let mut composite_partitions = Vec::new();
        if self.composite_in_use(&graph)? {
            let (plan, mut merged) =
                self.partition_stage(&graph, PartitionMode::Composite, times, &mut dump)?;
            times += 1;
            composite_partitions = PartitionSummary::all(&plan, &graph, &[]);
            placement = self.replace(&graph, &placement, &mut merged.graph)?;
            graph = merged.graph;
        }
        let (plan, mut merged) =
            self.partition_stage(&graph, PartitionMode::Atomic, times, &mut dump)?;
        let placement = self.replace(&graph, &placement, &mut merged.graph)?;
        let pstreams = assign_partition_streams(&plan, &self.manager, &self.options);
        let partitions = PartitionSummary::all(&plan, &graph, &pstreams.streams);
        drop(graph);
        let Merged {
            mut graph,
            partition_of,
        } = merged;

        self.optimize_all(&mut graph, OptimizeStage::Whole)?;
        dump.graph("optimize_whole", &graph)?;
        // Nodes the whole-graph optimizers added need engines too.
        let mut placement = placement.retain_live(&graph);
        placement.absorb(self.placer(PlaceMode::KeepPlaced).run(&mut graph)?);

        let nodes: Vec<(NodeId, EngineId)> = placement
            .nodes()
            .iter()
            .filter_map(|&n| placement.engine_id(n).map(|e| (n, e)))
            .collect();
        self.compile_ops(&mut graph, &nodes)?;
        dump.graph("compile_ops", &graph)?;

        let params = running_params(&self.manager, &graph, &nodes)?;
        for (&(n, _), p) in nodes.iter().zip(&params) {
            let op = graph.op_mut(n).expect("live node");
            op.compile_state_mut().workspace_bytes = p.workspace.clone();
            for (i, &size) in p.output_sizes.iter().enumerate() {
                if let Some(d) = op.output_mut(i) {
                    if size >= 0 {
                        d.set_size(size);
                    }
                }
            }
        }
        dump.graph("running_params", &graph)?;

        let kernels = {
            let g = &graph;
            let manager = &self.manager;
            nodes
                .par_iter()
                .zip(params.par_iter())
                .with_min_len(256)
                .map(|(&(n, id), p)| match manager.engine(id).kernel_builder() {
                    Some(b) => b.generate_kernel(g, n, p).map(Some),
                    None => Ok(None),
                })
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| stage_err("generate_kernels", e))?
        };

        // Streams: a root node takes its partition's stream; a subgraph node its parent's.
        let mut node_streams: SecondaryMap<NodeId, Option<u32>> = SecondaryMap::new();
        for &(n, _) in &nodes {
            let mut top = n;
            while let Some(p) = graph.graph_of(top).and_then(|g| graph.parent_node(g)) {
                top = p;
            }
            let s = partition_of
                .get(top)
                .and_then(|&p| pstreams.streams.get(p as usize).copied().flatten());
            node_streams.insert(n, s);
            graph
                .op_mut(n)
                .expect("live node")
                .set_stream_id(s.map_or(-1, i64::from));
        }
        let events = events(&graph, &node_streams);
        dump.graph("streams", &graph)?;

        let mut compiled = SecondaryMap::with_capacity(nodes.len());
        for ((&(n, id), p), k) in nodes.iter().zip(params).zip(kernels) {
            compiled.insert(
                n,
                CompiledNode {
                    engine: self.manager.name(id).to_string(),
                    params: p,
                    kernel: k,
                },
            );
        }
        Ok(CompiledModel {
            graph,
            placement,
            composite_partitions,
            partitions,
            stream_count: pstreams.stream_count,
            node_streams,
            events,
            nodes: compiled,
            dumps: dump.written().to_vec(),
            manager: self.manager.clone(),
        })
    }

    /// Whether some node is on an atomic engine with a composite engine that is not excluded.
    fn composite_in_use(&self, graph: &ComputeGraph) -> CompileResult<bool> {
        let excl = self.manager.exclusions(&self.options)?;
        let mut composite = vec![false; self.manager.len()];
        for id in self.manager.ids() {
            composite[id.index()] = self
                .manager
                .composite_of(id)
                .is_some_and(|c| !excl.is_excluded(c));
        }
        Ok(graph.nodes_of(graph.root()).any(|n| {
            self.manager
                .id(graph.op(n).map_or("", |o| o.engine_name()))
                .is_some_and(|id| composite[id.index()])
        }))
    }

    /// GE's `CompileOp`: each engine's store compiles the nodes placed on it.
    fn compile_ops(
        &self,
        graph: &mut ComputeGraph,
        nodes: &[(NodeId, EngineId)],
    ) -> CompileResult<()> {
        let mut by_engine: BTreeMap<EngineId, Vec<NodeId>> = BTreeMap::new();
        for &(n, id) in nodes {
            by_engine.entry(id).or_default().push(n);
        }
        for (id, ns) in by_engine {
            if let Some(s) = self.manager.engine(id).kernel_store() {
                s.compile_ops(graph, &ns)
                    .map_err(|e| stage_err("compile_ops", e))?;
            }
        }
        Ok(())
    }
}

/// Running parameters for every node of `graph` on its engine.
fn running_params(
    manager: &EngineManager,
    graph: &ComputeGraph,
    nodes: &[(NodeId, EngineId)],
) -> CompileResult<Vec<RunningParams>> {
    nodes
        .par_iter()
        .with_min_len(256)
        .map(|&(n, id)| match manager.engine(id).kernel_builder() {
            Some(b) => b.calc_running_params(graph, n),
            None => default_running_params(graph, n),
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| stage_err("running_params", e))
}
