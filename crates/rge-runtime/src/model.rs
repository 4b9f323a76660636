//! A built model: the lowered root program with its memory plan and streams, ready to run from
//! many threads at once (`Send + Sync`; each run takes its own arena from a pool).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rge_ir::ComputeGraph;
use rge_kernels::{Value, ValueRef};

use crate::error::{RuntimeError, RuntimeResult};
use crate::exec::{run_program, ExecutorKind, RunOptions};
use crate::keep_awake;
use crate::plan::MemoryPlan;
use crate::profile::Profiler;
use crate::program::{InputSource, InputSpec, Program};

/// The run keys of one model: a base drawn from the session's entropy when the model is built,
/// and a counter of the model's runs (no process-wide state: two models, or two sessions, draw
/// independent keys). Each run's key mixes the two, so unseeded random ops differ per run.
#[derive(Debug)]
pub(crate) struct RunKeys {
    base: u64,
    runs: AtomicU64,
}

impl RunKeys {
    pub(crate) fn new(base: u64) -> Self {
        RunKeys {
            base,
            runs: AtomicU64::new(0),
        }
    }

    /// The next run's key (SplitMix64 of base + run number).
    pub(crate) fn next(&self) -> u64 {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        let mut x = self
            .base
            .wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        x ^ (x >> 31)
    }
}

/// A model ready to run.
pub struct Model {
    pub(crate) program: Arc<Program>,
    /// The compiled graph (engines and streams recorded on its ops); what a save writes.
    pub(crate) graph: Arc<ComputeGraph>,
    pub(crate) pool: Option<Arc<rayon::ThreadPool>>,
    pub(crate) executor: ExecutorKind,
    pub(crate) kernel_threads: usize,
    /// Where each run's key comes from (unseeded random ops draw from it).
    pub(crate) run_keys: RunKeys,
    /// Streams from stream assignment.
    pub stream_count: u32,
    /// Cross-stream events from stream assignment.
    pub event_count: usize,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("graph", &self.graph.name())
            .field("steps", &self.program.steps.len())
            .field("plan", &self.program.plan)
            .field("executor", &self.executor)
            .finish()
    }
}

impl Model {
    /// The lowered root program.
    pub fn program(&self) -> &Program {
        &self.program
    }

    /// The compiled graph.
    pub fn graph(&self) -> &ComputeGraph {
        &self.graph
    }

    /// The memory plan of the root graph.
    pub fn plan(&self) -> &MemoryPlan {
        &self.program.plan
    }

    /// The default executor of this model.
    pub fn executor(&self) -> ExecutorKind {
        self.executor
    }

    /// The graph inputs, in the order [`Model::run`] takes them.
    pub fn inputs(&self) -> Vec<&InputSpec> {
        let mut v: Vec<&InputSpec> = self
            .program
            .inputs
            .iter()
            .filter(|s| matches!(s.source, InputSource::Formal(_)))
            .collect();
        v.sort_by_key(|s| match s.source {
            InputSource::Formal(k) => k,
            InputSource::Parent(_) => usize::MAX,
        });
        v
    }

    /// The graph output names.
    pub fn output_names(&self) -> Vec<&str> {
        self.program.outputs.iter().map(|o| o.0.as_str()).collect()
    }

    /// Hands a run's outputs back once the caller is done with them: the next runs' outputs
    /// outside the arena (a graph output is one) take their buffers instead of fresh memory,
    /// which comes zeroed. ONNX Runtime's arena does the same with released outputs. In a
    /// single-Conv model the zeroing was 14% of a run, on the calling thread.
    pub fn recycle(&self, outputs: Vec<Value>) {
        for v in outputs {
            self.program.allocator.recycle(v);
        }
    }

    /// Runs with inputs in order, with the model's executor.
    pub fn run(&self, inputs: &[Value]) -> RuntimeResult<Vec<Value>> {
        self.run_with(inputs, self.executor, None)
    }

    /// Runs with inputs in order, with `executor`, timing each step into `profile`.
    pub fn run_with(
        &self,
        inputs: &[Value],
        executor: ExecutorKind,
        profile: Option<&Profiler>,
    ) -> RuntimeResult<Vec<Value>> {
        let refs: Vec<ValueRef<'_>> = inputs.iter().map(Value::as_ref).collect();
        self.run_refs(&refs, executor, profile)
    }

    /// [`Model::run_with`] over borrowed inputs (memory the caller owns, e.g. a numpy array's:
    /// nothing is copied).
    pub fn run_refs(
        &self,
        inputs: &[ValueRef<'_>],
        executor: ExecutorKind,
        profile: Option<&Profiler>,
    ) -> RuntimeResult<Vec<Value>> {
        let refs: Vec<Option<ValueRef<'_>>> = inputs.iter().map(|v| Some(*v)).collect();
        let expected = self.inputs().len();
        if inputs.len() > expected {
            return Err(RuntimeError::input(
                format!("#{expected}"),
                format!("{} inputs given, the graph has {expected}", inputs.len()),
            ));
        }
        let opts = RunOptions {
            executor,
            pool: self.pool.as_deref(),
            kernel_threads: self.kernel_threads,
            profile,
            run_key: self.run_keys.next(),
        };
        match self.pool.as_deref() {
            // Kernels split large ops with rayon: run them on the session's pool so they use
            // the session's thread count, not the process-wide pool; the other workers stay
            // awake for the run, so parallel ops do not wait for them to wake.
            Some(pool) if self.kernel_threads > 1 => {
                keep_awake::install(pool, || run_program(&self.program, &refs, &[], &opts))
            }
            _ => run_program(&self.program, &refs, &[], &opts),
        }
    }

    /// Runs with inputs by name (every input must be given once).
    pub fn run_named(&self, inputs: &[(String, Value)]) -> RuntimeResult<Vec<Value>> {
        let ordered = self.order_inputs(inputs)?;
        self.run(&ordered)
    }

    /// Puts named inputs in the model's input order; errors name unknown or missing inputs.
    pub fn order_inputs(&self, inputs: &[(String, Value)]) -> RuntimeResult<Vec<Value>> {
        let specs = self.inputs();
        for (name, _) in inputs {
            if !specs.iter().any(|s| &s.name == name) {
                let known: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
                return Err(RuntimeError::input(
                    name,
                    format!("the graph has no such input (inputs: {})", known.join(", ")),
                ));
            }
        }
        specs
            .iter()
            .map(|s| {
                inputs
                    .iter()
                    .find(|(n, _)| n == &s.name)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| RuntimeError::input(&s.name, "missing"))
            })
            .collect()
    }
}
