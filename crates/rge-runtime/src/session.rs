//! The session (the seed's `Session::AddGraph` flow): made with options, it takes graphs by id,
//! builds them (compile pipeline, then lowering and memory planning), runs them, and removes
//! them. A failed build or run leaves the session usable.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use rge_ir::ComputeGraph;
use rge_kernels::{KernelRegistry, Value};

use crate::engines::EngineSet;
use crate::error::{RuntimeError, RuntimeResult};
use crate::exec::ExecutorKind;
use crate::lower::{graph_opsets, lower_graph, LowerEnv};
use crate::model::{Model, RunKeys};
use crate::pinning::{pin_current_thread, ThreadPinning};
use crate::single_op::SingleOp;

/// Session options.
#[derive(Debug, Clone)]
pub struct SessionOptions {
    /// Worker threads of the parallel executor (0: one per core).
    pub threads: usize,
    /// The executor runs use unless told otherwise.
    pub executor: ExecutorKind,
    /// The largest arena a build may plan, in bytes.
    pub memory_limit: Option<usize>,
    /// The engines (with the compile options they were built with); `None`: the standard
    /// set over `kernels`.
    pub engines: Option<Arc<EngineSet>>,
    /// Kernels of the standard engines when `engines` is `None`.
    pub kernels: KernelRegistry,
    /// Threads a kernel may use.
    pub kernel_threads: usize,
    /// Keep what compile-time kernel work recorded on the ops (prepacked weights …) in the
    /// built model's graph, so saving it keeps them (`rge compile`); off, they are dropped
    /// once the kernels are built, which saves their memory.
    pub keep_compiled_state: bool,
    /// Make the thread that creates the session one of its pool's workers (when it uses more
    /// than one thread and belongs to no pool yet). A run called from that thread then runs
    /// on it, taking part in each parallel op, instead of handing the run to a worker and
    /// sleeping until it ends: 20-70 µs less per run at 2 threads (a GEMV layer ran 0.093 ms
    /// against 0.050 at 1 thread). For a process that runs its models from the thread that
    /// made them, as `rge run` and `rge bench` do: parallel work that thread starts outside a
    /// run goes to this pool rather than rayon's global one. Sessions of the same thread count
    /// made on that thread share the pool, which lives as long as the thread.
    pub caller_in_pool: bool,
    /// Whether the pool's workers are pinned to CPUs (see [`ThreadPinning`]).
    pub pin_threads: ThreadPinning,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            threads: 0,
            executor: ExecutorKind::Sequential,
            memory_limit: None,
            engines: None,
            kernels: KernelRegistry::default(),
            kernel_threads: 1,
            keep_compiled_state: false,
            caller_in_pool: false,
            pin_threads: ThreadPinning::Auto,
        }
    }
}

impl SessionOptions {
    /// Options with the standard engines over `kernels`, defaults otherwise.
    pub fn with_kernels(kernels: KernelRegistry) -> Self {
        SessionOptions {
            kernels,
            ..Self::default()
        }
    }

    /// Options with the engine set `engines`, defaults otherwise.
    pub fn with_engines(engines: Arc<EngineSet>) -> Self {
        SessionOptions {
            engines: Some(engines),
            ..Self::default()
        }
    }
}

struct Entry {
    graph: ComputeGraph,
    built: Option<Arc<Model>>,
}

/// A session: graphs by id, built and run with one set of options.
pub struct Session {
    options: SessionOptions,
    engines: Arc<EngineSet>,
    pool: Option<Arc<rayon::ThreadPool>>,
    graphs: BTreeMap<u32, Entry>,
    ops_cache: Mutex<HashMap<String, Arc<SingleOp>>>,
    /// Models this session lowered (mixed into their run keys).
    models_built: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("options", &self.options)
            .field("graphs", &self.graphs.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A pool of `threads` workers, worker `i` pinned to `cpus[i]` when `cpus` is given.
fn pool_builder(threads: usize, cpus: Option<Arc<[usize]>>) -> rayon::ThreadPoolBuilder {
    let b = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("rge-worker-{i}"));
    match cpus {
        // A CPU the OS refuses leaves its worker unpinned: slower at worst, never wrong.
        Some(cpus) => b.start_handler(move |i| {
            if let Some(&cpu) = cpus.get(i) {
                pin_current_thread(cpu);
            }
        }),
        None => b,
    }
}

thread_local! {
    /// The pool this thread joined as worker 0 (`SessionOptions::caller_in_pool`). Kept for
    /// the thread's life: rayon leaves a joined thread registered with the pool, and parallel
    /// work it started after the pool ended would find a terminated pool (rayon aborts).
    static JOINED: std::cell::RefCell<Option<Arc<rayon::ThreadPool>>> =
        const { std::cell::RefCell::new(None) };
}

/// The pool of `threads` threads this thread is worker 0 of: the one it joined before when it
/// has that many threads, else a new one when the thread is in no pool yet; `None` otherwise
/// (the caller makes a pool of its own threads).
fn joined_pool(threads: usize, cpus: Option<Arc<[usize]>>) -> Option<Arc<rayon::ThreadPool>> {
    JOINED
        .try_with(|j| {
            let mut j = j.try_borrow_mut().ok()?;
            if let Some(p) = j.as_ref() {
                return (p.current_num_threads() == threads).then(|| Arc::clone(p));
            }
            if rayon::current_thread_index().is_some() {
                return None;
            }
            let p = pool_builder(threads, cpus.clone())
                .use_current_thread()
                .build()
                .ok()?;
            // rayon runs no start handler on the thread it takes over: worker 0 is pinned here.
            if let Some(&cpu) = cpus.as_deref().and_then(|c| c.first()) {
                pin_current_thread(cpu);
            }
            let p = Arc::new(p);
            *j = Some(Arc::clone(&p));
            Some(p)
        })
        .ok()
        .flatten()
}

impl Session {
    /// A session with `options`.
    pub fn new(options: SessionOptions) -> RuntimeResult<Self> {
        let threads = if options.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            options.threads
        };
        if threads > 4096 {
            return Err(RuntimeError::option(
                "threads",
                format!("{threads} is too many"),
            ));
        }
        // Kernels split over the pool, or nodes run side by side: every worker has work.
        let busy = options.kernel_threads > 1
            || !matches!(
                options.executor,
                ExecutorKind::Sequential | ExecutorKind::Topological
            );
        let cpus: Option<Arc<[usize]>> = options.pin_threads.cpus_for(threads, busy).map(Arc::from);
        let joined = (options.caller_in_pool && threads > 1)
            .then(|| joined_pool(threads, cpus.clone()))
            .flatten();
        let pool = match joined {
            Some(p) => p,
            None => Arc::new(
                pool_builder(threads, cpus)
                    .build()
                    .map_err(|e| RuntimeError::option("threads", e.to_string()))?,
            ),
        };
        let engines = match &options.engines {
            Some(e) => e.clone(),
            None => EngineSet::standard(&options.kernels)?,
        };
        Ok(Session {
            engines,
            pool: Some(pool),
            graphs: BTreeMap::new(),
            ops_cache: Mutex::new(HashMap::new()),
            models_built: Default::default(),
            options,
        })
    }

    /// The options.
    pub fn options(&self) -> &SessionOptions {
        &self.options
    }

    /// The engine set every build of this session uses.
    pub fn engines(&self) -> &Arc<EngineSet> {
        &self.engines
    }

    /// Adds `graph` as `id`; an id in use is an error.
    pub fn add_graph(&mut self, id: u32, graph: ComputeGraph) -> RuntimeResult<()> {
        if self.graphs.contains_key(&id) {
            return Err(RuntimeError::Other(format!(
                "graph {id} is already in the session"
            )));
        }
        self.graphs.insert(id, Entry { graph, built: None });
        Ok(())
    }

    /// Removes graph `id`; running models built from it keep working.
    pub fn remove_graph(&mut self, id: u32) -> RuntimeResult<()> {
        self.graphs
            .remove(&id)
            .map(|_| ())
            .ok_or(RuntimeError::UnknownGraph(id))
    }

    /// The graph ids.
    pub fn graph_ids(&self) -> Vec<u32> {
        self.graphs.keys().copied().collect()
    }

    /// Compiles and lowers graph `id` (once; later calls return the same model).
    pub fn build_graph(&mut self, id: u32) -> RuntimeResult<Arc<Model>> {
        let entry = self.graphs.get(&id).ok_or(RuntimeError::UnknownGraph(id))?;
        if let Some(m) = &entry.built {
            return Ok(m.clone());
        }
        let model = Arc::new(self.compile_graph(entry.graph.clone())?);
        if let Some(e) = self.graphs.get_mut(&id) {
            e.built = Some(model.clone());
        }
        Ok(model)
    }

    /// Lowers an already compiled graph (a loaded compiled model) into a runnable model.
    pub fn model_from_compiled(
        &self,
        graph: ComputeGraph,
        stream_count: u32,
        event_count: usize,
    ) -> RuntimeResult<Model> {
        self.model_from_saved(graph, stream_count, event_count, None)
    }

    /// [`Session::model_from_compiled`] with the root graph's buffer offsets when a saved model
    /// has them (checked, then used instead of planning again).
    pub(crate) fn model_from_saved(
        &self,
        graph: ComputeGraph,
        stream_count: u32,
        event_count: usize,
        saved_offsets: Option<&[usize]>,
    ) -> RuntimeResult<Model> {
        let mut graph = graph;
        // Built for running: each weight a kernel packed is dropped once its last reader is
        // built, so a weight and its packed copy are not both held through the lowering.
        let taken = (!self.options.keep_compiled_state)
            .then(|| crate::release::TakenConsts::take_root(&mut graph));
        let env = LowerEnv {
            engines: &self.engines,
            opsets: graph_opsets(&graph),
            saved_offsets,
            taken: taken.as_ref(),
        };
        let lowered = lower_graph(&env, &graph, graph.root());
        if let Some(t) = taken {
            t.restore(&mut graph);
        }
        let mut program = lowered?;
        if !self.options.keep_compiled_state {
            rge_engine::strip_prepared(&mut graph);
            // Built for running: weights that kernels packed are held once, packed.
            let released = crate::release::release_absorbed(&mut program);
            crate::release::release_graph_consts(&mut graph, &released);
        }
        if let Some(limit) = self.options.memory_limit {
            if program.plan.arena_bytes > limit {
                return Err(RuntimeError::option(
                    "memory_limit",
                    format!(
                        "graph `{}` plans {} bytes of activations (lower bound {}), the limit is {limit}",
                        graph.name(),
                        program.plan.arena_bytes,
                        program.plan.lower_bound
                    ),
                ));
            }
        }
        Ok(Model {
            program: Arc::new(program),
            graph: Arc::new(graph),
            pool: self.pool.clone(),
            executor: self.options.executor,
            kernel_threads: self.options.kernel_threads,
            run_keys: RunKeys::new(self.entropy()),
            stream_count,
            event_count,
        })
    }

    /// Runs graph `id` (building it first when needed) with inputs in order.
    pub fn run_graph(&mut self, id: u32, inputs: &[Value]) -> RuntimeResult<Vec<Value>> {
        let m = self.build_graph(id)?;
        m.run(inputs)
    }

    /// Runs the compile pipeline on `graph` and lowers the result.
    pub fn compile_graph(&self, graph: ComputeGraph) -> RuntimeResult<Model> {
        let mut graph = graph;
        if !self.options.keep_compiled_state {
            if let Some(a) = graph.graph_attrs_mut(graph.root()) {
                a.set(rge_engine::SKIP_PREPARE_ATTR, true);
            }
        }
        // Lowering needs the graph and two counts: the rest of the compile's result (its
        // per-node table, placement, partitions, streams) is dropped before lowering starts,
        // not beside the program (about 250 MB for a million nodes).
        let (mut graph, stream_count, event_count) = {
            let compiled = self.engines.compile(graph)?;
            (compiled.graph, compiled.stream_count, compiled.events.len())
        };
        if let Some(a) = graph.graph_attrs_mut(graph.root()) {
            a.remove(rge_engine::SKIP_PREPARE_ATTR);
        }
        // Lowering and memory planning, logged like the compile stages.
        let start = std::time::Instant::now();
        let model = self.model_from_compiled(graph, stream_count, event_count);
        if self.engines.options().verbose || rge_compiler::stages::log_enabled_by_env() {
            eprintln!(
                "{}",
                rge_compiler::stages::stage_log_line("lower", start.elapsed())
            );
        }
        model
    }

    /// A session with the same options, engines and thread pool, and no graphs (what a
    /// shape-specialized model compiles with).
    pub(crate) fn share(&self) -> Session {
        Session {
            options: self.options.clone(),
            engines: self.engines.clone(),
            pool: self.pool.clone(),
            graphs: BTreeMap::new(),
            ops_cache: Mutex::new(HashMap::new()),
            models_built: Default::default(),
        }
    }

    /// 64 fresh bits for a model's run keys: std's per-process random hash keys (drawn from
    /// the OS once per thread, then stepped per `RandomState`), hashed with a counter of this
    /// session's models.
    fn entropy(&self) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(
            self.models_built
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        );
        h.finish()
    }

    pub(crate) fn op_cache(&self) -> &Mutex<HashMap<String, Arc<SingleOp>>> {
        &self.ops_cache
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pinning::allowed_cpus;

    fn worker_masks(pin: ThreadPinning) -> Vec<Option<Vec<usize>>> {
        let s = Session::new(SessionOptions {
            threads: 2,
            pin_threads: pin,
            ..SessionOptions::default()
        })
        .expect("session");
        let pool = s.pool.as_ref().expect("a pool");
        pool.broadcast(|_| allowed_cpus())
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn pinned_workers_each_run_on_one_allowed_cpu() {
        let allowed = allowed_cpus().expect("affinity mask");
        let masks = worker_masks(ThreadPinning::On);
        let want: Vec<Option<Vec<usize>>> = (0..2)
            .map(|i| Some(vec![allowed[i % allowed.len()]]))
            .collect();
        assert_eq!(masks, want);
        // Unpinned workers keep the process's mask.
        let free = worker_masks(ThreadPinning::Off);
        assert!(
            free.iter().all(|m| m.as_ref() == Some(&allowed)),
            "{free:?}"
        );
    }
}
