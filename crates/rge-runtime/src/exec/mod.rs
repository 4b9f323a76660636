//! Executors (the seed's V2 executors): all run the same program over the same frame and give
//! identical outputs; they differ in how they order and spread the steps.
//!
//! | kind | order |
//! |---|---|
//! | `sequential` | the precomputed order, one thread (static graphs: no per-node work but the call) |
//! | `topological` | a ready queue over the dependency counts, one thread |
//! | `parallel` | the ready queue over a worker pool (rayon), several steps at once |
//! | `priority` | the ready step with the longest path to the end first, one thread |
//! | `stream` | one thread per stream, each in program order, waiting on other streams' steps |

mod queue;
mod stream;

use std::str::FromStr;

use rge_kernels::{Value, ValueRef};

use crate::error::{RuntimeError, RuntimeResult};
use crate::frame::Frame;
use crate::profile::Profiler;
use crate::program::{InputSource, Program};

/// Which executor runs a program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum ExecutorKind {
    #[default]
    Sequential,
    Topological,
    Parallel,
    Priority,
    Stream,
}

impl ExecutorKind {
    /// Every kind.
    pub const ALL: [ExecutorKind; 5] = [
        ExecutorKind::Sequential,
        ExecutorKind::Topological,
        ExecutorKind::Parallel,
        ExecutorKind::Priority,
        ExecutorKind::Stream,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ExecutorKind::Sequential => "sequential",
            ExecutorKind::Topological => "topological",
            ExecutorKind::Parallel => "parallel",
            ExecutorKind::Priority => "priority",
            ExecutorKind::Stream => "stream",
        }
    }
}

impl FromStr for ExecutorKind {
    type Err = RuntimeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ExecutorKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                RuntimeError::option(
                    "executor",
                    format!(
                        "`{s}`: expected sequential, topological, parallel, priority or stream"
                    ),
                )
            })
    }
}

impl std::fmt::Display for ExecutorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How one run goes.
#[derive(Clone, Copy)]
pub struct RunOptions<'a> {
    pub executor: ExecutorKind,
    /// The worker pool of the parallel executor (none: the global rayon pool).
    pub pool: Option<&'a rayon::ThreadPool>,
    /// Threads a kernel may use.
    pub kernel_threads: usize,
    /// Where step timings go.
    pub profile: Option<&'a Profiler>,
    /// This run's key for unseeded random kernels ([`rge_kernels::KernelCtx::run_key`]).
    pub run_key: u64,
}

impl Default for RunOptions<'_> {
    fn default() -> Self {
        RunOptions {
            executor: ExecutorKind::Sequential,
            pool: None,
            kernel_threads: 1,
            profile: None,
            run_key: 0,
        }
    }
}

impl<'a> RunOptions<'a> {
    /// Options for a subgraph run inside a step: sequential, no profile.
    pub fn for_subgraph(&self) -> RunOptions<'a> {
        RunOptions {
            executor: ExecutorKind::Sequential,
            profile: None,
            ..*self
        }
    }
}

/// Checks the inputs of `prog` and gathers them in program-input order.
fn bind_inputs<'v>(
    prog: &Program,
    formal: &[Option<ValueRef<'v>>],
    parent: &[Option<ValueRef<'v>>],
) -> RuntimeResult<Vec<Option<ValueRef<'v>>>> {
    let mut out = Vec::with_capacity(prog.inputs.len());
    for spec in &prog.inputs {
        let v = match spec.source {
            InputSource::Formal(k) => formal.get(k).copied().flatten(),
            InputSource::Parent(i) => parent.get(i).copied().flatten(),
        };
        let Some(v) = v else {
            return Err(RuntimeError::input(
                &spec.name,
                format!("missing ({} inputs given)", formal.len()),
            ));
        };
        if spec.tensor {
            let t = v
                .tensor()
                .map_err(|e| RuntimeError::input(&spec.name, e.to_string()))?;
            if let Some(dt) = spec.dtype {
                if t.dtype() != dt {
                    return Err(RuntimeError::input(
                        &spec.name,
                        format!("expected dtype {dt}, got {}", t.dtype()),
                    ));
                }
            }
            if let Some(dims) = &spec.dims {
                let ok = dims.len() == t.rank()
                    && dims
                        .iter()
                        .zip(t.shape())
                        .all(|(&d, &s)| d < 0 || d as usize == s);
                if !ok {
                    return Err(RuntimeError::input(
                        &spec.name,
                        format!("expected shape {dims:?}, got {:?}", t.shape()),
                    ));
                }
            }
        }
        out.push(Some(v));
    }
    Ok(out)
}

/// Runs `prog` with its formal inputs (and, in a subgraph, the parent node's inputs for
/// captures) and returns its outputs.
pub fn run_program(
    prog: &Program,
    formal: &[Option<ValueRef<'_>>],
    parent: &[Option<ValueRef<'_>>],
    opts: &RunOptions<'_>,
) -> RuntimeResult<Vec<Value>> {
    let inputs = bind_inputs(prog, formal, parent)?;
    let mut frame = Frame::new(prog, &inputs, opts);
    match opts.executor {
        ExecutorKind::Sequential => {
            for i in 0..prog.steps.len() {
                frame.run_unit(i, 0)?;
            }
        }
        ExecutorKind::Topological => queue::topological(&frame)?,
        ExecutorKind::Priority => queue::priority(&frame)?,
        ExecutorKind::Parallel => queue::parallel(&frame, opts.pool)?,
        ExecutorKind::Stream => stream::streams(&frame)?,
    }
    frame.outputs()
}
