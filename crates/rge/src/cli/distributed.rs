//! Distributed runs (`mpirun -np N rge run MODEL --data-parallel` or `--tensor-parallel N`):
//! each process is one rank of the comm engine's world (MPI when built with feature `mpi` and
//! started by an MPI launcher; otherwise a world of one).
//!
//! - Data parallel: every rank reads the same inputs, keeps its share of the batch (dim 0 of
//!   every input, split as evenly as possible), compiles the model for its share and runs it;
//!   the outputs (batch in dim 0) are gathered on rank 0, which prints and writes them as a
//!   single-process run does.
//! - Tensor parallel: the graph is sharded for this rank by `rge_comm::tensor_parallel` (MatMul
//!   and Gemm weights split Megatron-style, collectives inserted), then compiled and run on the
//!   full inputs; every rank ends with the same outputs, rank 0 prints them.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rge_comm::{gather_to_root, Communicator, Groups, WORLD_GROUP};
use rge_kernels::{Tensor, Value};
use rge_runtime::io;

use super::run::{executor_of, session, write_outputs, RunArgs};
use super::{CliError, CliResult};
use crate::engines::EngineArgs;

/// The distributed options of `rge run`.
#[derive(Debug, Clone, Default)]
pub struct DistArgs {
    /// `--data-parallel`.
    pub data_parallel: bool,
    /// `--tensor-parallel N`.
    pub tensor_parallel: Option<usize>,
    /// `--comm-group NAME=R0,R1,…` (repeatable).
    pub groups: Vec<String>,
    /// `--comm-timeout SECS`: how long a collective waits for the other ranks.
    pub timeout: Option<f64>,
}

impl DistArgs {
    /// True when the run is distributed (or defines groups).
    pub fn active(&self) -> bool {
        self.data_parallel || self.tensor_parallel.is_some() || !self.groups.is_empty()
    }

    fn timeout(&self) -> Result<Duration, CliError> {
        match self.timeout {
            None => Ok(rge_comm::DEFAULT_TIMEOUT),
            Some(t) if t > 0.0 && t.is_finite() => Ok(Duration::from_secs_f64(t)),
            Some(t) => Err(CliError::new(format!(
                "option `--comm-timeout`: {t} is not a positive number of seconds"
            ))),
        }
    }
}

/// This process's communicator: MPI's world under an MPI launcher (feature `mpi`), else a
/// world of one rank.
pub fn world(dist: &DistArgs) -> Result<Arc<dyn Communicator>, CliError> {
    let timeout = dist.timeout()?;
    #[cfg(feature = "mpi")]
    if rge_comm::mpi_backend::launched_by_mpi() {
        let c = rge_comm::mpi_backend::MpiComm::init(&dist.groups, timeout)?;
        return Ok(Arc::new(c));
    }
    let mut groups = Groups::world(1);
    for g in &dist.groups {
        groups.define_spec(g)?;
    }
    let comm = rge_comm::local_world(groups, timeout)
        .pop()
        .ok_or_else(|| CliError::new("a world of one rank has no rank"))?;
    Ok(Arc::new(comm))
}

/// The rows `[start, end)` of a batch of `batch` that rank `r` of `n` runs.
pub fn share(batch: usize, r: usize, n: usize) -> (usize, usize) {
    (r * batch / n, (r + 1) * batch / n)
}

/// Rows `[start, end)` of `t` along dim 0.
fn rows(t: &Tensor, start: usize, end: usize) -> Result<Tensor, CliError> {
    let shape = t.shape();
    let row_bytes = t.dtype().bytes_for(shape[1..].iter().product());
    let b = t.view().bytes()?;
    let mut s = shape.to_vec();
    s[0] = end - start;
    Ok(Tensor::from_bytes(
        t.dtype(),
        &s,
        &b[start * row_bytes..end * row_bytes],
    )?)
}

fn rank_error(comm: &dyn Communicator, msg: impl std::fmt::Display) -> CliError {
    CliError::new(format!(
        "rank {} of {} ({}): {msg}",
        comm.rank(),
        comm.size(),
        comm.backend()
    ))
}

/// The full inputs: given files, then random ones (same seed on every rank) for the rest.
fn full_inputs(g: &rge_ir::ComputeGraph, args: &RunArgs) -> Result<Vec<(String, Value)>, CliError> {
    let given = super::inputs::read(&args.inputs)?;
    let specs = rge_runtime::shape_cache::graph_inputs(g);
    let mut out = super::inputs::named(&given);
    let fill = given.is_empty() || args.random.forced;
    let seed = args.random.seed.unwrap_or(super::inputs::DEFAULT_SEED);
    for (k, (_, spec)) in specs.iter().enumerate() {
        if out.iter().any(|(n, _)| *n == spec.name) {
            continue;
        }
        if !fill {
            return Err(CliError::new(format!(
                "missing input `{}`: give it with --input NAME=FILE, or add --random-inputs",
                spec.name
            )));
        }
        let dims = spec.dims.clone().unwrap_or_default();
        if dims.iter().any(|&d| d < 0) {
            return Err(CliError::new(format!(
                "input `{}` has dims the model leaves open: give it with --input, or fix them with --shape",
                spec.name
            )));
        }
        let t = io::random_tensor(
            spec.dtype.unwrap_or(rge_kernels::DType::Float),
            &dims,
            seed.wrapping_add(k as u64),
        )?;
        out.push((spec.name.clone(), Value::Tensor(t)));
    }
    Ok(out)
}

/// `rge run … --data-parallel` / `--tensor-parallel N`.
pub fn run(args: &RunArgs, shapes: &[String], dist: &DistArgs) -> CliResult {
    run_on(world(dist)?, args, shapes, dist)
}

/// [`run`] as rank `comm.rank()` of `comm`'s world (tests run in-process worlds with it).
pub fn run_on(
    comm: Arc<dyn Communicator>,
    args: &RunArgs,
    shapes: &[String],
    dist: &DistArgs,
) -> CliResult {
    let (rank, n) = (comm.rank(), comm.size());
    if let Some(tp) = dist.tensor_parallel {
        if dist.data_parallel {
            return Err(rank_error(
                &*comm,
                "--data-parallel and --tensor-parallel cannot be combined (yet)",
            ));
        }
        if tp > n {
            return Err(rank_error(&*comm, format!(
                "--tensor-parallel {tp} is greater than the number of ranks ({n}): start {tp} ranks (mpirun -np {tp} rge run …)"
            )));
        }
        if tp != n || tp == 0 {
            return Err(rank_error(
                &*comm,
                format!("--tensor-parallel {tp} must equal the number of ranks ({n})"),
            ));
        }
    }
    let (executor, _) = executor_of(args.executor.as_deref(), args.threads)?;
    let engines = EngineArgs {
        comm: Some(comm.clone()),
        ..args.engines.clone()
    };
    let s = session(executor, args.threads, args.pin_threads, &engines)?;
    // Tensor parallel: weights stay in the mapped file until sharded, so each rank reads
    // only its parts of the sharded ones (its peak holds 1/N of them, not the whole model).
    let (mut g, mut mapped) = if dist.tensor_parallel.is_some() {
        super::shape_args::load_graph_mapped(&args.model, shapes)?
    } else {
        (super::shape_args::load_graph(&args.model, shapes)?, None)
    };
    let inputs = full_inputs(&g, args)?;
    let mut out = String::new();
    let mut batch_rows = None;
    let inputs = if dist.data_parallel {
        let (local, b) = split_batch(&*comm, &inputs)?;
        let (start, end) = share(b, rank, n);
        let _ = writeln!(
            out,
            "data parallel: {n} ranks, batch {b} (rank 0 runs rows {start}..{end})"
        );
        batch_rows = Some(b);
        local
    } else {
        inputs
    };
    // The graph is compiled for the shapes this rank runs (its batch share; open dims fixed).
    let fixed: Vec<String> = inputs
        .iter()
        .filter_map(|(name, v)| v.as_tensor().map(|t| (name, t)))
        .filter(|(_, t)| !t.shape().is_empty() && t.shape().iter().all(|&d| d > 0))
        .map(|(name, t)| {
            let d: Vec<String> = t.shape().iter().map(|d| d.to_string()).collect();
            format!("{name}={}", d.join(","))
        })
        .collect();
    if dist.data_parallel {
        // Dim 0 is the batch each rank runs a share of: a batch the model fixes is opened.
        release_batch(&mut g);
    }
    super::shape_args::apply(&mut g, &super::shape_args::parse(&fixed)?)
        .map_err(|e| rank_error(&*comm, e.message))?;
    if let Some(tp) = dist.tensor_parallel {
        // Each weight's pages go back as soon as this rank's part is copied out of them.
        let mut hand_back = |b: &[u8]| {
            if let Some(file) = &mapped {
                file.hand_back(b);
            }
        };
        let report = rge_comm::tensor_parallel::shard_with(&mut g, rank, tp, &mut hand_back)
            .map_err(|e| rank_error(&*comm, e))?;
        let _ = writeln!(out, "tensor parallel: {tp} ranks; {}", report.summary());
        if let Some(file) = mapped.take() {
            rge_formats::onnx::own_weights(&mut g, &file);
        }
    }
    let t0 = Instant::now();
    let m = s
        .compile_graph(g)
        .map_err(|e| rank_error(&*comm, format!("{}: {e}", args.model.display())))?;
    let build_ms = t0.elapsed().as_secs_f64() * 1e3;
    let ordered = m.order_inputs(&inputs)?;
    let t1 = Instant::now();
    let outs = m
        .run_with(&ordered, executor, None)
        .map_err(|e| rank_error(&*comm, e))?;
    let run_ms = t1.elapsed().as_secs_f64() * 1e3;
    let outs = match batch_rows {
        Some(b) => match gather_outputs(&*comm, &outs, b)? {
            Some(full) => full,
            None => return Ok(String::new()),
        },
        None if rank != 0 => return Ok(String::new()),
        None => outs,
    };
    let _ = writeln!(
        out,
        "{}: rank 0 of {n} ({}): build {build_ms:.1} ms, run {run_ms:.3} ms ({executor})",
        args.model.display(),
        comm.backend()
    );
    write_outputs(
        &m.output_names(),
        &outs,
        args.output_dir.as_deref(),
        &mut out,
    )?;
    Ok(out)
}

/// Makes dim 0 of every tensor input unknown, so that a model declaring a static batch is
/// compiled for this rank's share (shape inference then derives every other shape from it).
fn release_batch(g: &mut rge_ir::ComputeGraph) {
    for (n, spec) in rge_runtime::shape_cache::graph_inputs(g) {
        if !spec.tensor || spec.dims.as_ref().is_none_or(|d| d.is_empty()) {
            continue;
        }
        let Some(op) = g.op_mut(n) else { continue };
        // Dim 0 exists (rank ≥ 1 checked above), so set_dim cannot fail.
        if let Some(d) = op.input_mut(0) {
            let _ = d.shape_mut().set_dim(0, -1);
        }
        if let Some(d) = op.output_mut(0) {
            let _ = d.shape_mut().set_dim(0, -1);
        }
    }
}

/// This rank's share of every input (all must carry the same batch in dim 0), and the batch.
fn split_batch(
    comm: &dyn Communicator,
    inputs: &[(String, Value)],
) -> Result<(Vec<(String, Value)>, usize), CliError> {
    let (rank, n) = (comm.rank(), comm.size());
    let mut batch = None;
    let mut local = Vec::with_capacity(inputs.len());
    for (name, v) in inputs {
        let t = v.as_tensor().ok_or_else(|| {
            rank_error(
                comm,
                format!("--data-parallel: input `{name}` is not a tensor"),
            )
        })?;
        let Some(&b) = t.shape().first() else {
            return Err(rank_error(
                comm,
                format!(
                "--data-parallel: input `{name}` is a scalar; every input needs the batch in dim 0"
            ),
            ));
        };
        if let Some((b0, first)) = &batch {
            if *b0 != b {
                return Err(rank_error(comm, format!(
                    "--data-parallel: input `{name}` has batch {b} in dim 0, input `{first}` has {b0}"
                )));
            }
        } else {
            batch = Some((b, name.clone()));
        }
        if b < n {
            return Err(rank_error(
                comm,
                format!(
                "--data-parallel: the batch of {b} (input `{name}`) is smaller than the {n} ranks"
            ),
            ));
        }
        let (start, end) = share(b, rank, n);
        local.push((name.clone(), Value::Tensor(rows(t, start, end)?)));
    }
    Ok((local, batch.map_or(0, |b| b.0)))
}

/// The outputs of every rank concatenated along dim 0 on rank 0 (`None` on the others).
fn gather_outputs(
    comm: &dyn Communicator,
    outs: &[Value],
    batch: usize,
) -> Result<Option<Vec<Value>>, CliError> {
    let (rank, n) = (comm.rank(), comm.size());
    let (start, end) = share(batch, rank, n);
    let mut full = Vec::with_capacity(outs.len());
    for (k, v) in outs.iter().enumerate() {
        let t = v.as_tensor().ok_or_else(|| {
            rank_error(comm, format!("--data-parallel: output {k} is not a tensor"))
        })?;
        if t.shape().first() != Some(&(end - start)) {
            return Err(rank_error(comm, format!(
                "--data-parallel: output {k} of shape {:?} does not carry this rank's {} batch rows in dim 0",
                t.shape(),
                end - start
            )));
        }
        let parts = gather_to_root(comm, WORLD_GROUP, t.view().bytes()?, 0)
            .map_err(|e| rank_error(comm, e))?;
        let Some(parts) = parts else { continue };
        let mut shape = t.shape().to_vec();
        shape[0] = batch;
        let bytes = parts.concat();
        let tensor = Tensor::from_bytes(t.dtype(), &shape, &bytes).map_err(|e| {
            rank_error(
                comm,
                format!("--data-parallel: output {k}: the ranks' parts do not form {shape:?}: {e}"),
            )
        })?;
        full.push(Value::Tensor(tensor));
    }
    Ok((rank == 0).then_some(full))
}

/// True when this `rge` (built with feature `mpi`) was started by an MPI launcher: its runs
/// join the MPI world even without `--data-parallel` (models with Hcom ops of their own).
pub fn under_mpi() -> bool {
    #[cfg(feature = "mpi")]
    {
        rge_comm::mpi_backend::launched_by_mpi()
    }
    #[cfg(not(feature = "mpi"))]
    {
        false
    }
}
