//! The compile pipeline (engines.md §4.7): infer → engines' original-graph optimization →
//! place → re-assign → partition (composite, then atomic) → engines' fused-graph optimization
//! (parallel) → merge → whole-graph optimization → compile ops → running parameters →
//! kernel generation → streams → [`CompiledModel`]. Every stage is named (`STAGE_NAMES`),
//! timed, dumped, and in debug builds verified; more passes can be inserted after a stage by
//! name ([`Pipeline::with_stage_after`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use rayon::prelude::*;
use slotmap::SecondaryMap;

use rge_engine::{
    default_running_params, EngineError, GraphOptimizer, GraphRewriter, OptimizeStage,
    RunningParams,
};
use rge_ir::{ComputeGraph, NodeId};

use crate::dump::Dumper;
use crate::error::{CompileError, CompileResult};
use crate::manager::{EngineId, EngineManager};
use crate::model::{CompiledModel, CompiledNode, PartitionSummary};
use crate::optimize::{check_disabled, run_passes, OptPass, PassReport, Phase};
use crate::options::CompileOptions;
use crate::partition::{partition, PartitionMode, PartitionPlan};
use crate::placement::Placement;
use crate::placer::{PlaceMode, Placer};
use crate::reassign::{default_passes, ReassignCtx, ReassignPass};
use crate::stages::{
    check_insert_point, log_enabled_by_env, StageClock, FIXED_NODE_STAGES, INPUT_STAGE,
};
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
    /// `(stage, pass)`: passes run as stages of their own right after `stage`.
    inserted: Vec<(String, Box<dyn GraphPass>)>,
    /// The graph optimizations (stages `optimize_graph` and `optimize_graph_late`).
    graph_passes: Vec<Arc<dyn OptPass>>,
}

fn stage_err(stage: &str, e: impl std::fmt::Display) -> CompileError {
    CompileError::Stage {
        stage: stage.to_string(),
        message: e.to_string(),
    }
}

/// What the compile stages share while they run.
/// What a partition stage hands on.
struct Partitioned {
    plan: PartitionPlan,
    /// The partitions as planned (streams not yet assigned).
    summaries: Vec<PartitionSummary>,
    /// Each root node's partition.
    partition_of: SecondaryMap<NodeId, u32>,
    placement: Placement,
}

/// A composite engine's name and its optimizer, run in place of its partitions.
type InPlaceOptimizer<'a> = (&'a str, &'a dyn GraphOptimizer);

struct Run {
    clock: StageClock,
    dump: Dumper,
}

impl Pipeline {
    pub fn new(manager: Arc<EngineManager>, options: CompileOptions) -> Self {
        Pipeline {
            manager,
            options,
            infer: None,
            reassign: default_passes(),
            inserted: Vec::new(),
            graph_passes: Vec::new(),
        }
    }

    /// Sets the graph optimizations (docs/optimizations.md): the early ones run as stage
    /// `optimize_graph` after `infer`, the late ones as `optimize_graph_late` after
    /// `optimize_original`, those the options' level and disabled list enable. Without any,
    /// both stages are skipped.
    pub fn with_graph_passes(mut self, passes: Vec<Arc<dyn OptPass>>) -> Self {
        self.graph_passes = passes;
        self
    }

    /// Runs the graph passes of `phase` as stage `name`.
    fn optimize_graph(
        &self,
        name: &str,
        phase: Phase,
        graph: &mut ComputeGraph,
        run: &mut Run,
        reports: &mut Vec<PassReport>,
    ) -> CompileResult<()> {
        if self.graph_passes.is_empty() {
            return Ok(());
        }
        let log = self.options.verbose || log_enabled_by_env();
        let excl = self.manager.exclusions(&self.options)?;
        let manager = &self.manager;
        // An op type some engine in use has a kernel for.
        let supports = |t: &str| {
            manager.ids().any(|id| {
                !excl.is_excluded(id)
                    && manager
                        .engine(id)
                        .kernel_store()
                        .is_some_and(|s| s.op_info(t).is_some())
            })
        };
        let r = self.stage(name, graph, run, |g| {
            run_passes(
                g,
                &self.graph_passes,
                &self.options.optimization,
                phase,
                &supports,
                log,
            )
            .map_err(|m| stage_err(name, m))
        })?;
        reports.extend(r);
        Ok(())
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

    /// Inserts `pass` as a stage of its own (named `pass.name()`: timed, logged, dumped,
    /// verified) right after stage `after`: one of [`crate::stages::STAGE_NAMES`] that works
    /// on the whole graph, or `"input"` to run first. Passes after one stage run in the order
    /// inserted; they run at that point even when the stage itself is skipped. Nodes a pass
    /// adds after `place` and before `compile_ops` are placed (their recorded engine kept);
    /// after `compile_ops` a pass may not add or remove nodes. A bad `after` is an error of
    /// `compile`.
    pub fn with_stage_after(mut self, after: impl Into<String>, pass: Box<dyn GraphPass>) -> Self {
        self.inserted.push((after.into(), pass));
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

    /// Runs `stage` of every engine's optimizer on `graph`, in cost order, each through its
    /// own rewriter.
    fn optimize_all(&self, graph: &mut ComputeGraph, stage: OptimizeStage) -> CompileResult<()> {
        // An excluded engine takes no part: its rewrites would make ops only it runs.
        let excl = self.manager.exclusions(&self.options)?;
        for &id in self.manager.by_cost() {
            if excl.is_excluded(id) {
                continue;
            }
            if let Some(o) = self.manager.engine(id).graph_optimizer() {
                let mut rw = GraphRewriter::new(graph, self.manager.name(id), stage);
                o.optimize(&mut rw)
                    .map_err(|e| stage_err(&format!("optimize_{}", stage.name()), e))?;
            }
        }
        Ok(())
    }

    /// Runs the passes inserted after `after`; true when one ran.
    fn run_inserted(
        &self,
        after: &str,
        graph: &mut ComputeGraph,
        run: &mut Run,
    ) -> CompileResult<bool> {
        let mut ran = false;
        for (at, pass) in self.inserted.iter().filter(|(at, _)| at == after) {
            let name = pass.name();
            let count = graph.total_node_count();
            run.clock.run(name, || {
                pass.run(graph, &self.options)
                    .map_err(|m| stage_err(name, m))
            })?;
            if FIXED_NODE_STAGES.contains(&at.as_str()) && graph.total_node_count() != count {
                return Err(stage_err(
                    name,
                    format!(
                        "it added or removed nodes after `{at}`, where the nodes are compiled; insert it before `compile_ops`"
                    ),
                ));
            }
            run.clock.verify(name, graph)?;
            run.dump.graph(name, graph)?;
            ran = true;
        }
        Ok(ran)
    }

    /// Runs the passes inserted after `after`, then places the nodes they added.
    fn run_inserted_placed(
        &self,
        after: &str,
        graph: &mut ComputeGraph,
        placement: Placement,
        run: &mut Run,
    ) -> CompileResult<Placement> {
        if self.run_inserted(after, graph, run)? {
            self.place_new(placement, graph)
        } else {
            Ok(placement)
        }
    }

    /// Keeps the placement of live nodes and places the others (`PlaceMode::KeepPlaced`).
    fn place_new(
        &self,
        placement: Placement,
        graph: &mut ComputeGraph,
    ) -> CompileResult<Placement> {
        let mut placement = placement.retain_live(graph);
        let new = self
            .placer(PlaceMode::KeepPlaced)
            .run_new(graph, &placement)?;
        placement.absorb(new);
        Ok(placement)
    }

    /// The re-assign passes over a placement, recorded on the ops (every node's record when
    /// `record_all`, else the moved nodes').
    fn reassign(
        &self,
        graph: &mut ComputeGraph,
        placement: &mut Placement,
        attributed: &[NodeId],
        record_all: bool,
    ) -> CompileResult<()> {
        let excl = self.manager.exclusions(&self.options)?;
        let ctx = ReassignCtx {
            graph,
            manager: &self.manager,
            exclusions: &excl,
            attributed,
        };
        for p in &self.reassign {
            p.run(&ctx, placement)?;
        }
        if record_all {
            crate::placer::record(graph, placement);
        } else {
            // Placement recorded every node, and nothing changed them since but the moves.
            crate::placer::record_reassigned(graph, placement);
        }
        Ok(())
    }

    /// Partitions `graph` and runs, in parallel, the optimizers of the engines this mode
    /// optimizes (composite engines' in composite mode, atomic engines' in atomic mode) on
    /// their partitions: those partitions move out of the graph and back in
    /// (`take_partitions`, `merge_in_place`); the others stay where they are. Three stages.
    fn partition_stage(
        &self,
        graph: &mut ComputeGraph,
        placement: Placement,
        mode: PartitionMode,
        times: u32,
        run: &mut Run,
    ) -> CompileResult<Partitioned> {
        let tag = match mode {
            PartitionMode::Composite => "composite",
            PartitionMode::Atomic => "atomic",
        };
        let (pname, oname, mname) = (
            format!("partition_{tag}"),
            format!("optimize_fused_{tag}"),
            format!("merge_{tag}"),
        );
        let manager = &self.manager;
        let optimizer_of = |info: &crate::partition::PartitionInfo| {
            let engine = manager.get(&info.engine)?;
            let composite = !engine.attributes().is_atomic();
            let wanted = match mode {
                PartitionMode::Composite => composite,
                PartitionMode::Atomic => !composite,
            };
            engine
                .graph_optimizer()
                .filter(|_| wanted && !info.is_input_graph())
                .map(|o| (o, engine.name()))
        };
        if mode == PartitionMode::Composite && !run.dump.enabled() {
            if let Some(engines) = self.composite_optimizers_in_place()? {
                return self.composite_in_place(graph, placement, times, run, &engines);
            }
        }
        let (plan, summaries, mut taken, mut dumped) = run.clock.run(&pname, || {
            let plan = partition(graph, manager, &self.options, mode, times)?;
            // Names are read now: the taken partitions' nodes leave the graph.
            let summaries = PartitionSummary::all(&plan, graph, &[]);
            let dumped = if run.dump.enabled() {
                plan.materialize(graph)?
            } else {
                Vec::new()
            };
            let wanted: Vec<u32> = (0..plan.partitions.len() as u32)
                .filter(|&p| optimizer_of(&plan.partitions[p as usize]).is_some())
                .collect();
            let taken = plan.take_partitions(graph, wanted)?;
            Ok((plan, summaries, taken, dumped))
        })?;
        run.clock.verify_all(&pname, &taken.graphs)?;
        run.dump.partitions(&pname, &dumped)?;

        run.clock.run(&oname, || {
            taken
                .graphs
                .par_iter_mut()
                .zip(taken.partitions.par_iter())
                .try_for_each(|(g, &p)| -> Result<(), EngineError> {
                    let Some((o, engine)) = optimizer_of(&plan.partitions[p as usize]) else {
                        return Ok(());
                    };
                    let mut rw = GraphRewriter::new(g, engine, OptimizeStage::Fused);
                    o.optimize_fused_graph(&mut rw)
                })
                .map_err(|e| stage_err(&oname, e))
        })?;
        run.clock.verify_all(&oname, &taken.graphs)?;
        if run.dump.enabled() {
            for (&p, g) in taken.partitions.iter().zip(&taken.graphs) {
                dumped[p as usize] = g.clone();
            }
        }
        run.dump.partitions(&oname, &dumped)?;

        let (partition_of, placement) = run.clock.run(&mname, || {
            let merged = plan.merge_in_place(graph, taken)?;
            let mut placement = placement.remap_moved(&merged.moved, graph);
            let new = self
                .placer(PlaceMode::KeepPlaced)
                .run_new(graph, &placement)?;
            placement.absorb(new);
            Ok((merged.partition_of, placement))
        })?;
        run.clock.verify(&mname, graph)?;
        run.dump.graph(&mname, graph)?;
        Ok(Partitioned {
            plan,
            summaries,
            partition_of,
            placement,
        })
    }

    /// The composite engines in use whose optimizers run, with those optimizers, when every
    /// one of them can run in place of its partitions (`GraphOptimizer::fused_in_place`);
    /// `None` otherwise.
    fn composite_optimizers_in_place(&self) -> CompileResult<Option<Vec<InPlaceOptimizer<'_>>>> {
        let excl = self.manager.exclusions(&self.options)?;
        let mut engines = Vec::new();
        for id in self.manager.ids() {
            let engine = self.manager.engine(id);
            if engine.attributes().is_atomic() || excl.is_excluded(id) {
                continue;
            }
            if let Some(o) = engine.graph_optimizer() {
                if !o.fused_in_place() {
                    return Ok(None);
                }
                engines.push((self.manager.name(id), o));
            }
        }
        Ok(Some(engines))
    }

    /// The composite stage without moving partitions: each composite optimizer runs once on
    /// the root graph, in place of its partitions (`composite_optimizers_in_place`), and the
    /// merge only places the nodes it added. The plan is still made: it is what the compiled
    /// model reports. Moving a 100k-node partition out and back cost a sixth of its compile.
    fn composite_in_place(
        &self,
        graph: &mut ComputeGraph,
        placement: Placement,
        times: u32,
        run: &mut Run,
        engines: &[InPlaceOptimizer<'_>],
    ) -> CompileResult<Partitioned> {
        let manager = &self.manager;
        let (plan, summaries) = run.clock.run("partition_composite", || {
            let plan = partition(
                graph,
                manager,
                &self.options,
                PartitionMode::Composite,
                times,
            )?;
            let summaries = PartitionSummary::all(&plan, graph, &[]);
            Ok((plan, summaries))
        })?;
        run.clock.verify("partition_composite", graph)?;
        run.clock.run("optimize_fused_composite", || {
            for &(name, o) in engines {
                let mut rw = GraphRewriter::new(graph, name, OptimizeStage::Fused);
                o.optimize_fused_graph(&mut rw)
                    .map_err(|e| stage_err("optimize_fused_composite", e))?;
            }
            Ok(())
        })?;
        run.clock.verify("optimize_fused_composite", graph)?;
        let placement = run
            .clock
            .run("merge_composite", || self.place_new(placement, graph))?;
        run.clock.verify("merge_composite", graph)?;
        Ok(Partitioned {
            plan,
            summaries,
            partition_of: SecondaryMap::new(),
            placement,
        })
    }

    /// A whole-graph stage: timed, verified, dumped, then the passes inserted after it.
    fn stage<T>(
        &self,
        name: &str,
        graph: &mut ComputeGraph,
        run: &mut Run,
        f: impl FnOnce(&mut ComputeGraph) -> CompileResult<T>,
    ) -> CompileResult<T> {
        let out = run.clock.run(name, || f(graph))?;
        run.clock.verify(name, graph)?;
        run.dump.graph(name, graph)?;
        Ok(out)
    }

    /// Compiles `graph`.
    pub fn compile(&self, mut graph: ComputeGraph) -> CompileResult<CompiledModel> {
        for (after, pass) in &self.inserted {
            check_insert_point(after).map_err(|m| {
                stage_err(
                    pass.name(),
                    format!("cannot insert it after `{after}`: {m}"),
                )
            })?;
        }
        if !self.graph_passes.is_empty() {
            check_disabled(&self.graph_passes, &self.options.optimization).map_err(|m| {
                CompileError::Option {
                    key: crate::optimize::OPTION_DISABLED_PASSES.into(),
                    message: m,
                }
            })?;
        }
        let mut run = Run {
            clock: StageClock::new(self.options.verbose || log_enabled_by_env()),
            dump: Dumper::new(self.options.resolved_dump_dir())?,
        };
        let mut optimizations = Vec::new();
        run.dump.graph(INPUT_STAGE, &graph)?;
        self.run_inserted(INPUT_STAGE, &mut graph, &mut run)?;
        if let Some(infer) = &self.infer {
            self.stage("infer", &mut graph, &mut run, |g| {
                infer
                    .run(g, &self.options)
                    .map_err(|m| stage_err(&format!("infer ({})", infer.name()), m))
            })?;
        }
        self.run_inserted("infer", &mut graph, &mut run)?;
        self.optimize_graph(
            "optimize_graph",
            Phase::Early,
            &mut graph,
            &mut run,
            &mut optimizations,
        )?;
        self.run_inserted("optimize_graph", &mut graph, &mut run)?;
        self.stage("optimize_original", &mut graph, &mut run, |g| {
            self.optimize_all(g, OptimizeStage::Original)
        })?;
        self.run_inserted("optimize_original", &mut graph, &mut run)?;
        self.optimize_graph(
            "optimize_graph_late",
            Phase::Late,
            &mut graph,
            &mut run,
            &mut optimizations,
        )?;
        self.run_inserted("optimize_graph_late", &mut graph, &mut run)?;

        // The re-assign passes look only at ops that carried attributes before placement.
        let mut attributed: Vec<NodeId> = graph
            .all_nodes(graph.root())
            .into_iter()
            .filter(|&n| graph.op(n).is_some_and(|o| !o.attrs().is_empty()))
            .collect();
        let mut placement = self.stage("place", &mut graph, &mut run, |g| {
            self.placer(PlaceMode::Fresh).with_passes(Vec::new()).run(g)
        })?;
        // Passes inserted after placement may edit the ops: then every record is made again.
        let edited = self.run_inserted("place", &mut graph, &mut run)?;
        if edited {
            placement = self.place_new(placement, &mut graph)?;
            attributed = placement.nodes().to_vec();
        }
        self.stage("reassign", &mut graph, &mut run, |g| {
            self.reassign(g, &mut placement, &attributed, edited)
        })?;
        let mut placement =
            self.run_inserted_placed("reassign", &mut graph, placement, &mut run)?;

        let mut times = 0;
        let mut composite_partitions = Vec::new();
        if self.composite_in_use(&graph)? {
            let done = self.partition_stage(
                &mut graph,
                placement,
                PartitionMode::Composite,
                times,
                &mut run,
            )?;
            times += 1;
            composite_partitions = done.summaries;
            placement = done.placement;
        }
        let placement =
            self.run_inserted_placed("merge_composite", &mut graph, placement, &mut run)?;
        let Partitioned {
            plan,
            summaries: mut partitions,
            partition_of,
            placement,
        } = self.partition_stage(
            &mut graph,
            placement,
            PartitionMode::Atomic,
            times,
            &mut run,
        )?;
        let pstreams = assign_partition_streams(&plan, &self.manager, &self.options);
        for (s, &stream) in partitions.iter_mut().zip(&pstreams.streams) {
            s.stream = stream;
        }
        let placement =
            self.run_inserted_placed("merge_atomic", &mut graph, placement, &mut run)?;

        let placement = self.stage("optimize_whole", &mut graph, &mut run, |g| {
            self.optimize_all(g, OptimizeStage::Whole)?;
            // Nodes the whole-graph optimizers added need engines too.
            self.place_new(placement, g)
        })?;
        let placement =
            self.run_inserted_placed("optimize_whole", &mut graph, placement, &mut run)?;

        let nodes: Vec<(NodeId, EngineId)> = placement
            .nodes()
            .iter()
            .filter_map(|&n| placement.engine_id(n).map(|e| (n, e)))
            .collect();
        self.stage("compile_ops", &mut graph, &mut run, |g| {
            self.compile_ops(g, &nodes)
        })?;
        self.run_inserted("compile_ops", &mut graph, &mut run)?;

        let params = self.stage("running_params", &mut graph, &mut run, |g| {
            let params = running_params(&self.manager, g, &nodes)?;
            for (&(n, _), p) in nodes.iter().zip(&params) {
                let op = g.op_mut(n).expect("live node");
                // Most ops ask for no workspace: their compile state stays unallocated.
                if !p.workspace.is_empty() || op.compile_state().is_some() {
                    op.compile_state_mut().workspace_bytes = p.workspace.clone();
                }
                for (i, &size) in p.output_sizes.iter().enumerate() {
                    if let Some(d) = op.output_mut(i) {
                        if size >= 0 {
                            d.set_size(size);
                        }
                    }
                }
            }
            Ok(params)
        })?;
        self.run_inserted("running_params", &mut graph, &mut run)?;

        let kernels = run.clock.run("generate_kernels", || {
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
                .map_err(|e| stage_err("generate_kernels", e))
        })?;
        run.clock.verify("generate_kernels", &graph)?;
        self.run_inserted("generate_kernels", &mut graph, &mut run)?;

        // Streams: a root node takes its partition's stream; a subgraph node its parent's.
        let (node_streams, stream_events) = self.stage("streams", &mut graph, &mut run, |g| {
            let mut node_streams: SecondaryMap<NodeId, Option<u32>> = SecondaryMap::new();
            for &(n, _) in &nodes {
                let mut top = n;
                while let Some(p) = g.graph_of(top).and_then(|x| g.parent_node(x)) {
                    top = p;
                }
                let s = partition_of
                    .get(top)
                    .and_then(|&p| pstreams.streams.get(p as usize).copied().flatten());
                node_streams.insert(n, s);
                g.op_mut(n)
                    .expect("live node")
                    .set_stream_id(s.map_or(-1, i64::from));
            }
            let stream_events = events(g, &node_streams);
            Ok((node_streams, stream_events))
        })?;
        self.run_inserted("streams", &mut graph, &mut run)?;

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
            events: stream_events,
            nodes: compiled,
            dumps: run.dump.written().to_vec(),
            manager: self.manager.clone(),
            stage_times: run.clock.into_times(),
            optimizations,
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
