//! `rge run MODEL [--input NAME=FILE]... [--output-dir DIR] [--executor KIND] [--threads N]
//! [--profile trace.json]`: compiles (or loads a compiled model) and runs it. Inputs come from
//! `.npy` or ONNX `TensorProto` `.pb` files; with none given they are random, of the declared
//! dtype and shape (`cli::inputs`). Outputs are summarized and, with `--output-dir`, written as
//! `.npy`; `--profile` adds the Chrome trace and the per-op summary (`cli::profile_summary`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use rge_kernels::{Tensor, TensorData, Value};
use rge_runtime::{io, ExecutorKind, Model, Profiler, Session, SessionOptions, ThreadPinning};

use super::{CliError, CliResult};
use crate::engines::{engine_set, EngineArgs};
use crate::model;

/// What `rge run` was asked.
#[derive(Debug, Clone, Default)]
pub struct RunArgs {
    pub model: PathBuf,
    /// `NAME=FILE` pairs.
    pub inputs: Vec<String>,
    pub output_dir: Option<PathBuf>,
    pub executor: Option<String>,
    pub threads: Option<usize>,
    /// `--pin-threads`.
    pub pin_threads: ThreadPinning,
    pub profile: Option<PathBuf>,
    pub engines: EngineArgs,
    /// `--random-inputs` and `--seed`.
    pub random: super::inputs::RandomInputs,
}

/// A session over the command line's engine set.
pub fn session(
    executor: ExecutorKind,
    threads: Option<usize>,
    pin_threads: ThreadPinning,
    engines: &EngineArgs,
) -> Result<Session, CliError> {
    session_keeping(executor, threads, pin_threads, engines, false)
}

/// [`session`], keeping the compile-time kernel state (prepacked weights) in built models when
/// `keep` (what `rge compile` saves).
pub fn session_keeping(
    executor: ExecutorKind,
    threads: Option<usize>,
    pin_threads: ThreadPinning,
    engines: &EngineArgs,
    keep: bool,
) -> Result<Session, CliError> {
    Ok(Session::new(SessionOptions {
        executor,
        threads: threads.unwrap_or(0),
        // Large kernels split their work over the same number of threads.
        kernel_threads: threads.unwrap_or(1),
        keep_compiled_state: keep,
        // The command runs its models from this thread, for the life of the process.
        caller_in_pool: true,
        pin_threads,
        ..SessionOptions::with_engines(engine_set(engines)?)
    })?)
}

/// The graph of a loaded model.
pub fn graph_of(m: model::Model) -> rge_ir::ComputeGraph {
    match m {
        model::Model::Onnx(o) => o.graph,
        model::Model::Ge(g) => g.graph,
    }
}

/// Builds `path`: a compiled model (recognised by its content, whatever the file's name) is
/// loaded, anything else compiled.
pub fn build(s: &Session, path: &Path) -> Result<Arc<Model>, CliError> {
    if rge_runtime::is_compiled_model(path) {
        return Ok(s.load_model(path)?);
    }
    let (m, _) = model::load(path)?;
    let graph = graph_of(m);
    s.compile_graph(graph)
        .map(Arc::new)
        .map_err(|e| CliError::new(format!("{}: {e}", path.display())))
}

/// The first values, and min/max/mean: only the six shown are formatted, and f32 data is read
/// in place (a model's logits are millions of values; formatting all of them cost GPT-2's run
/// 230 MB of transient memory).
fn summary(t: &Tensor) -> String {
    let head = |shown: Vec<String>, total: usize| {
        let more = if total > 6 { ", …" } else { "" };
        format!("[{}{more}]", shown.join(", "))
    };
    if let TensorData::Strings(s) = t.data() {
        return head(
            s.iter().take(6).map(|x| format!("{x:?}")).collect(),
            s.len(),
        );
    }
    let numbers = |v: &mut dyn Iterator<Item = f64>, total: usize| {
        if total == 0 {
            return "[]".to_string();
        }
        let (mut min, mut max, mut sum) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
        let mut shown = Vec::with_capacity(6);
        for x in v {
            if shown.len() < 6 {
                shown.push(format!("{x:.6}"));
            }
            min = min.min(x);
            max = max.max(x);
            sum += x;
        }
        let mean = sum / total as f64;
        format!(
            "{} min {min:.6} max {max:.6} mean {mean:.6}",
            head(shown, total)
        )
    };
    if let Ok(v) = t.as_slice::<f32>() {
        return numbers(&mut v.iter().map(|&x| f64::from(x)), v.len());
    }
    match t.view().to_f64_vec() {
        Ok(v) => numbers(&mut v.iter().copied(), v.len()),
        Err(_) => format!("({} bytes)", t.dtype().bytes_for(t.len())),
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Tensor(t) => format!("{}{:?} {}", t.dtype(), t.shape(), summary(t)),
        Value::Sequence { elem, items } => format!("sequence<{elem}> of {}", items.len()),
        Value::Optional(None) => "optional: empty".into(),
        Value::Optional(Some(v)) => format!("optional: {}", describe(v)),
        Value::Map(m) => format!(
            "map<{}, {}> of {}: {}",
            m.keys().dtype(),
            m.values().dtype(),
            m.len(),
            map_summary(m)
        ),
        Value::MapSequence { key, value, items } => match items.first() {
            Some(first) => format!(
                "sequence<map<{key}, {value}>> of {}; first: {}",
                items.len(),
                map_summary(first)
            ),
            None => format!("sequence<map<{key}, {value}>> of 0"),
        },
    }
}

/// The first entries of a map, `{key: value, …}`.
fn map_summary(m: &rge_kernels::MapValue) -> String {
    let text = |t: &Tensor| -> Vec<String> {
        match t.data() {
            TensorData::Strings(s) => s.iter().map(|x| format!("{x:?}")).collect(),
            _ => t
                .view()
                .to_f64_vec()
                .map(|v| v.iter().map(|x| format!("{x}")).collect())
                .unwrap_or_default(),
        }
    };
    let entries: Vec<String> = text(m.keys())
        .into_iter()
        .zip(text(m.values()))
        .take(6)
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    let more = if m.len() > 6 { ", …" } else { "" };
    format!("{{{}{more}}}", entries.join(", "))
}

/// `name` as a safe file name (what `--output-dir` writes as NAME.npy).
pub(crate) fn file_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        format!("out_{s}")
    } else {
        s
    }
}

/// `rge run`.
pub fn run(args: &RunArgs) -> CliResult {
    run_with_shapes(args, &[])
}

/// The executor `--executor` names (sequential when not given), and a note when `--threads`
/// asks for more threads than that executor runs nodes on (the kernels still use them).
pub fn executor_of(
    executor: Option<&str>,
    threads: Option<usize>,
) -> Result<(ExecutorKind, Option<String>), CliError> {
    let kind: ExecutorKind = match executor {
        Some(e) => e.parse()?,
        None => ExecutorKind::Sequential,
    };
    if threads == Some(0) {
        return Err(CliError::new("option `--threads`: must be at least 1"));
    }
    let note = match threads {
        Some(t) if t > 1 && kind != ExecutorKind::Parallel => Some(format!(
            "note: --threads {t} sets the threads of each kernel; the {kind} executor runs one node at a time (--executor parallel runs nodes on {t} threads)"
        )),
        _ => None,
    };
    Ok((kind, note))
}

/// `rge run` with `--shape NAME=DIMS` options (`shape_args`): inputs fixed before compiling;
/// inputs left with unknown dims are compiled for the shapes they are run with.
pub fn run_with_shapes(args: &RunArgs, shapes: &[String]) -> CliResult {
    let (executor, note) = executor_of(args.executor.as_deref(), args.threads)?;
    let given = super::inputs::read(&args.inputs)?;
    let s = session(executor, args.threads, args.pin_threads, &args.engines)?;
    let t0 = Instant::now();
    let built = super::shape_args::build(&s, &args.model, shapes)?;
    let mut build_ms = t0.elapsed().as_secs_f64() * 1e3;
    let mut out = String::new();
    if let Some(n) = note {
        let _ = writeln!(out, "{n}");
    }
    let given = super::inputs::fill(&built, given, args.random, &mut out)?;
    let inputs = built.order_inputs(&super::inputs::named(&given))?;
    let t0 = Instant::now();
    let m = built.model_for(&inputs)?;
    build_ms += t0.elapsed().as_secs_f64() * 1e3;
    if let super::shape_args::Built::PerShape(_) = &built {
        let _ = writeln!(
            out,
            "inputs with unknown dims: compiled for the given shapes"
        );
    }
    let profiler = args.profile.as_ref().map(|_| Profiler::new());
    let t1 = Instant::now();
    let outs = m.run_with(&inputs, executor, profiler.as_ref())?;
    let run_ms = t1.elapsed().as_secs_f64() * 1e3;
    let plan = m.plan();
    let _ = writeln!(
        out,
        "{}: {} steps, {} streams, arena {} bytes (lower bound {}), build {build_ms:.1} ms, run {run_ms:.3} ms ({executor})",
        args.model.display(),
        m.program().steps.len(),
        m.stream_count.max(1),
        plan.arena_bytes,
        plan.lower_bound
    );
    write_outputs(
        &m.output_names(),
        &outs,
        args.output_dir.as_deref(),
        &mut out,
    )?;
    if let (Some(p), Some(path)) = (&profiler, &args.profile) {
        std::fs::write(path, p.chrome_trace())
            .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        let events = p.events();
        let _ = writeln!(out, "profile: {} ({} events)", path.display(), events.len());
        let summary = super::profile_summary::summarize(&events, 1);
        out.push_str(&super::profile_summary::text(&summary));
    }
    Ok(out)
}

/// Describes each output in `out` and, with a directory, writes it there as `NAME.npy`.
pub(crate) fn write_outputs(
    names: &[&str],
    outs: &[Value],
    dir: Option<&Path>,
    out: &mut String,
) -> Result<(), CliError> {
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .map_err(|e| CliError::new(format!("{}: {e}", dir.display())))?;
    }
    for (name, v) in names.iter().zip(outs) {
        let _ = writeln!(out, "output {name}: {}", describe(v));
        if let (Some(dir), Value::Tensor(t)) = (dir, v) {
            let path = dir.join(format!("{}.npy", file_name(name)));
            let bytes = io::npy_bytes(t)?;
            std::fs::write(&path, bytes)
                .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        }
    }
    Ok(())
}
