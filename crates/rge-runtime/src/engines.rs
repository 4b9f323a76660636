//! The engine set: every engine a process compiles and runs with, built once and handed to the
//! command line, the Session and the single-op API (ARCHITECTURE.md decision 9). It holds the
//! engine manager (each engine with its kernel store, optimizer and memory space), the node
//! converters, the op registry, and the engine options (exclusions, core engine type) every
//! compilation uses, so `rge place` shows the placement `rge run` executes.
//!
//! The standard set: `local` (GE_LOCAL, cost 9) for the no-compute ops, `cpu` (AI CPU Ascend,
//! cost 3) with every kernel of the given registry and the runtime's control-flow kernels, and
//! `host` (Host CPU, cost 10, HOST runtime) with the same kernels as the last resort; the host
//! engine's original-graph optimizer folds constants (engines.md §4.5.9).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use rge_compiler::{
    CompileOptions, CompiledModel, EngineManager, EngineManagerBuilder, FnPass, Pipeline,
};
use rge_engine::{BasicEngine, Engine, KernelStore};
use rge_kernels::{KernelDef, KernelRegistry, KernelSet, MemSpace};
use rge_ops::OpRegistry;

use crate::converters::ConverterRegistry;
use crate::error::{RuntimeError, RuntimeResult};
use crate::kernels::builtin_kernels;
use crate::memory::SpaceAllocator;

/// Op types the local engine runs without computing: graph I/O, constants, views.
pub const LOCAL_OPS: &[&str] = &[
    "Data",
    "RefData",
    "Const",
    "Constant",
    "NetOutput",
    "NoOp",
    "Identity",
    "Reshape",
    "Squeeze",
    "Unsqueeze",
    "Flatten",
    "PhonyConcat",
    "PhonySplit",
    "PlaceHolder",
    "End",
];

/// True for an op type of the local engine.
pub fn is_local_op(op_type: &str) -> bool {
    LOCAL_OPS.contains(&op_type)
}

/// The engines of a process, with the options every compilation uses.
pub struct EngineSet {
    manager: Arc<EngineManager>,
    converters: ConverterRegistry,
    ops: Arc<OpRegistry>,
    options: CompileOptions,
    fold_kernels: KernelRegistry,
    allocators: HashMap<MemSpace, Arc<dyn SpaceAllocator>>,
    transfers: bool,
}

impl std::fmt::Debug for EngineSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EngineSet")
            .field(
                "engines",
                &self
                    .manager
                    .ids()
                    .map(|i| self.manager.name(i))
                    .collect::<Vec<_>>(),
            )
            .field("options", &self.options)
            .finish()
    }
}

impl EngineSet {
    /// A builder with the op registry `ops` and no engine yet.
    pub fn builder(ops: Arc<OpRegistry>) -> EngineSetBuilder {
        EngineSetBuilder {
            manager: EngineManager::builder(),
            converters: ConverterRegistry::default(),
            ops,
            options: CompileOptions::default(),
            fold_kernels: KernelRegistry::default(),
            allocators: HashMap::new(),
            transfers: true,
        }
    }

    /// The standard set over `kernels` (see the module docs), default options.
    pub fn standard(kernels: &KernelRegistry) -> RuntimeResult<Arc<EngineSet>> {
        let mut b = EngineSet::builder(OpRegistry::builtin());
        b.standard_engines(kernels)?;
        b.build()
    }

    pub fn manager(&self) -> &Arc<EngineManager> {
        &self.manager
    }

    pub fn converters(&self) -> &ConverterRegistry {
        &self.converters
    }

    pub fn ops(&self) -> &Arc<OpRegistry> {
        &self.ops
    }

    /// The options every compilation with this set uses.
    pub fn options(&self) -> &CompileOptions {
        &self.options
    }

    /// The kernels constant folding runs (the host engine's).
    pub fn fold_kernels(&self) -> &KernelRegistry {
        &self.fold_kernels
    }

    /// The engine called `name`.
    pub fn engine(&self, name: &str) -> Option<&dyn Engine> {
        self.manager.get(name)
    }

    /// The allocator of memory space `space` (none for the host's, which the runtime owns).
    pub fn allocator(&self, space: &MemSpace) -> Option<Arc<dyn SpaceAllocator>> {
        self.allocators.get(space).cloned()
    }

    /// Compiles `graph` with [`EngineSet::pipeline`].
    pub fn compile(&self, graph: rge_ir::ComputeGraph) -> RuntimeResult<CompiledModel> {
        self.pipeline()
            .compile(graph)
            .map_err(|e| RuntimeError::Compile(e.to_string()))
    }

    /// The compile pipeline over this set's engines with its options: rge-ops' inference;
    /// the graph optimizations of the options' level (docs/optimizations.md); the engines'
    /// original-graph optimizers (the host engine's folds constants), then
    /// inference again where folding made new constants; placement and the rest; the kernel
    /// of every node recorded; transfers between memory spaces.
    pub fn pipeline(&self) -> Pipeline {
        let ops = self.ops.clone();
        let manager = self.manager.clone();
        let infer_pass = FnPass::new("rge-ops inference", move |g, _| infer(g, &ops, &manager));
        let ops = self.ops.clone();
        let manager = self.manager.clone();
        let reinfer = FnPass::new("infer_folded", move |g, _| {
            // Shapes that were unknown before folding flow out of the new Consts.
            if has_folded_consts(g) {
                infer(g, &ops, &manager)?;
            }
            Ok(())
        });
        let mut p = Pipeline::new(self.manager.clone(), self.options.clone())
            .with_infer(infer_pass)
            .with_graph_passes(crate::fold_pass::graph_passes(&self.fold_kernels))
            .with_stage_after("optimize_original", Box::new(reinfer));
        // The kernel each node runs is chosen at compile time and recorded on its op, so a
        // compiled model names it and loading checks the engine set still selects it.
        let manager = self.manager.clone();
        p = p.with_stage_after(
            "compile_ops",
            Box::new(FnPass::new("select_kernels", move |g, _| {
                select_kernels(g, &manager)
            })),
        );
        if !self.transfers {
            return p;
        }
        // After the last stage that may add nodes, before the engines compile theirs: the
        // transfers are placed (on the engine the stage names) and get streams like any node.
        let manager = self.manager.clone();
        let transfers = FnPass::new(crate::transfer::STAGE, move |g, _| {
            crate::transfer::insert_transfers(g, &manager).map(|_| ())
        });
        p.with_stage_after("optimize_whole", Box::new(transfers))
    }

    /// What the pipeline does before placement: inference and constant folding (for the
    /// commands that partition without compiling).
    pub fn prepare(&self, graph: &mut rge_ir::ComputeGraph) -> Result<(), String> {
        infer(graph, &self.ops, &self.manager)?;
        let report = crate::fold::fold_constants(
            graph,
            &self.fold_kernels,
            &crate::fold::FoldOptions::default(),
        )
        .map_err(|e| e.to_string())?;
        if report.folded_nodes > 0 {
            infer(graph, &self.ops, &self.manager)?;
        }
        Ok(())
    }

    /// The name of the kernel definition that runs `op` on its engine, when it has one.
    pub fn kernel_name(&self, op: &rge_ir::OpDesc) -> Option<String> {
        let store = self.engine(op.engine_name())?.kernel_store()?;
        let set = store.kernel_set()?;
        set.select(op, rge_engine::op_domain(op), rge_engine::op_opset(op))
            .ok()
            .map(|d| d.name.clone())
    }
}

/// Records on every node with a kernel the definition its engine selects (`_rge_kernel`); a
/// node its engine cannot run is an error naming both (the first such node in graph order).
///
/// The selections are read-only, so they run on the session's threads; the names are then
/// recorded in order.
fn select_kernels(g: &mut rge_ir::ComputeGraph, manager: &EngineManager) -> Result<(), String> {
    use rayon::prelude::*;
    let graphs: Vec<rge_ir::GraphId> = std::iter::once(g.root())
        .chain(g.subgraphs().iter().copied())
        .collect();
    for gid in graphs {
        let nodes: Vec<rge_ir::NodeId> = g.nodes_of(gid).collect();
        let graph: &rge_ir::ComputeGraph = g;
        let selected: Vec<Result<Option<String>, String>> = nodes
            .par_iter()
            .with_min_len(1024)
            .map(|&n| selected_kernel(graph, n, manager))
            .collect();
        for (&n, name) in nodes.iter().zip(selected) {
            if let (Some(name), Some(op)) = (name?, g.op_mut(n)) {
                op.attrs_mut().set_static(crate::lower::KERNEL_ATTR, name);
            }
        }
    }
    Ok(())
}

/// The name of the kernel definition that runs node `n`, or `None` for a node lowered without
/// one (graph I/O, constants, boundaries, transfers).
fn selected_kernel(
    g: &rge_ir::ComputeGraph,
    n: rge_ir::NodeId,
    manager: &EngineManager,
) -> Result<Option<String>, String> {
    let Some(op) = g.op(n) else { return Ok(None) };
    if op.op_type() == crate::transfer::TRANSFER_OP {
        return Ok(None);
    }
    let engine_name = crate::lower::effective_engine(op);
    let Some(engine) = manager.get(engine_name) else {
        return Err(format!(
            "node `{}` is placed on engine `{engine_name}`, which is not registered",
            op.name()
        ));
    };
    let Some(set) = engine.kernel_store().and_then(|s| s.kernel_set()) else {
        return Ok(None);
    };
    if !set.has_op(rge_engine::op_domain(op), op.op_type()) {
        return Ok(None);
    }
    let def = set
        .select(op, rge_engine::op_domain(op), rge_engine::op_opset(op))
        .map_err(|why| {
            format!(
                "node `{}` ({}): engine `{engine_name}` cannot run it: {why}",
                op.name(),
                op.op_type()
            )
        })?;
    Ok(Some(def.name.clone()))
}

/// True when constant folding added constants to the root graph.
fn has_folded_consts(g: &rge_ir::ComputeGraph) -> bool {
    g.nodes_of(g.root()).any(|n| {
        g.op(n)
            .is_some_and(|op| op.attrs().contains(crate::fold::FOLDED_ATTR))
    })
}

/// rge-ops' inference. Ops without a prototype are an error unless an engine claims them (a
/// plugin's own ops): those keep the outputs the model declares, or get them from their
/// kernel at run time.
fn infer(
    g: &mut rge_ir::ComputeGraph,
    ops: &OpRegistry,
    manager: &EngineManager,
) -> Result<(), String> {
    let mut infer_opts = rge_ops::InferOptions::default();
    let root = g.root();
    let claimed_unknown = g.all_nodes(root).into_iter().any(|n| {
        g.op(n).is_some_and(|op| {
            !ops.contains(op.domain(), op.op_type())
                && manager.ids().any(|id| {
                    manager
                        .engine(id)
                        .kernel_store()
                        .is_some_and(|s| s.op_info(op.op_type()).is_some())
                })
        })
    });
    if claimed_unknown {
        infer_opts.unknown_ops = rge_ops::UnknownOps::Skip;
    }
    rge_ops::infer_graph(g, ops, &infer_opts)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Collects the engines of a set.
pub struct EngineSetBuilder {
    manager: EngineManagerBuilder,
    converters: ConverterRegistry,
    ops: Arc<OpRegistry>,
    options: CompileOptions,
    fold_kernels: KernelRegistry,
    allocators: HashMap<MemSpace, Arc<dyn SpaceAllocator>>,
    transfers: bool,
}

fn kernel_set(prefix: &str, kernels: &KernelRegistry, builtin: &KernelRegistry) -> KernelSet {
    let mut set = KernelSet::new();
    set.add_registry(prefix, kernels);
    for (domain, op) in builtin.op_types() {
        if !kernels.contains(domain, op) {
            if let Some(f) = builtin.get(domain, op) {
                set.add(KernelDef::from_fn(format!("{prefix}.{op}"), domain, op, f));
            }
        }
    }
    set
}

fn standard(name: &str) -> RuntimeResult<BasicEngine> {
    BasicEngine::standard(name)
        .ok_or_else(|| RuntimeError::Other(format!("`{name}` is not a standard engine")))
}

impl EngineSetBuilder {
    /// Registers `local`, `cpu` and `host` over `kernels` (and the runtime's own kernels);
    /// constant folding uses `kernels`.
    pub fn standard_engines(&mut self, kernels: &KernelRegistry) -> RuntimeResult<&mut Self> {
        let builtin = builtin_kernels();
        let all = kernel_set("cpu", kernels, &builtin);
        let mut cpu = KernelSet::new();
        for d in all.iter().filter(|d| !is_local_op(&d.op_type)) {
            cpu.add(d.clone());
        }
        // The local engine: views first from the runtime's own (copying) kernels, then the
        // families'; graph I/O, constants and boundary markers are lowered without a kernel.
        let mut local = KernelSet::new();
        for &t in LOCAL_OPS {
            let f = builtin.get("", t).or_else(|| kernels.get("", t));
            if let Some(f) = f {
                local.add(KernelDef::from_fn(format!("local.{t}"), "", t, f));
            }
        }
        let host = kernel_set("host", kernels, &builtin);
        self.manager.register(standard("local")?.with_store(
            KernelStore::new("local", "local_kernels", 9, local).with_ops_without_kernel(LOCAL_OPS),
        ));
        self.manager
            .register(standard("cpu")?.with_store(KernelStore::new("cpu", "cpu_kernels", 3, cpu)));
        self.manager.register(
            standard("host")?
                .with_store(
                    KernelStore::new("host", "host_kernels", 10, host)
                        .with_ops_without_kernel(LOCAL_OPS),
                )
                .with_optimizer(crate::fold::HostFold {
                    kernels: kernels.clone(),
                    options: crate::fold::FoldOptions::default(),
                }),
        );
        self.fold_kernels = kernels.clone();
        Ok(self)
    }

    /// Registers an engine.
    pub fn register(&mut self, engine: impl Engine + 'static) -> &mut Self {
        self.manager.register(engine);
        self
    }

    /// Loads an engine plugin (a shared library) and registers its engines.
    pub fn load_plugin(&mut self, path: &Path) -> RuntimeResult<&mut Self> {
        self.manager
            .load_plugin(path)
            .map_err(|e| RuntimeError::file(path.display(), e))?;
        Ok(self)
    }

    /// The engine options (exclusions, core engine type) every compilation uses; checked at
    /// [`EngineSetBuilder::build`].
    pub fn options(&mut self, options: CompileOptions) -> &mut Self {
        self.options = options;
        self
    }

    /// Registers the allocator of a memory space (every space an engine names, other than the
    /// host's, needs one).
    pub fn memory_space(&mut self, allocator: Arc<dyn SpaceAllocator>) -> &mut Self {
        self.allocators.insert(allocator.space(), allocator);
        self
    }

    /// Leaves the transfer stage out (for tests showing what it is for: kernels of a separate
    /// memory space then see host memory and refuse it).
    pub fn without_transfer_stage(&mut self) -> &mut Self {
        self.transfers = false;
        self
    }

    /// The converters (to add one for an engine with its own lowering).
    pub fn converters_mut(&mut self) -> &mut ConverterRegistry {
        &mut self.converters
    }

    /// Checks and freezes the set: engine names unique, options naming known engines, every
    /// kernel definition consistent with its op's prototype.
    pub fn build(self) -> RuntimeResult<Arc<EngineSet>> {
        let manager = self
            .manager
            .build()
            .map_err(|e| RuntimeError::Compile(e.to_string()))?;
        manager
            .exclusions(&self.options)
            .map_err(|e| RuntimeError::Compile(e.to_string()))?;
        for id in manager.ids() {
            let engine = manager.engine(id);
            let space = engine.memory_space();
            if !space.is_host() && !self.allocators.contains_key(&space) {
                return Err(RuntimeError::Compile(format!(
                    "engine `{}` keeps its tensors in memory space `{space}`, which has no allocator",
                    engine.name()
                )));
            }
            let Some(set) = engine.kernel_store().and_then(|s| s.kernel_set()) else {
                continue;
            };
            for def in set.iter() {
                crate::kernel_check::check_def(&self.ops, engine.name(), def)?;
            }
        }
        Ok(Arc::new(EngineSet {
            manager,
            converters: self.converters,
            ops: self.ops,
            options: self.options,
            fold_kernels: self.fold_kernels,
            allocators: self.allocators,
            transfers: self.transfers,
        }))
    }
}
