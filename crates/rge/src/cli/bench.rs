//! `rge bench MODEL [--input NAME=FILE]… [--shape NAME=DIMS]… [--threads N] [--runs N]
//! [--warmup N] [--executor KIND] [--output-dir DIR] [--json]`: compiles once (timed: load,
//! compile pipeline, lowering, memory plan), runs the warm-up, then times each run; prints
//! min/median/p90 and each op type's share of the step time, from separate profiled runs after
//! the timed ones (so the timed runs carry no profiling cost), and the per-op summary with shapes
//! (`cli::profile_summary`). Inputs are given or random as for `rge run` (`cli::inputs`). `--threads N` sets the
//! session's executor pool and the kernel threads, as `rge run` does. Page: `docs/bench.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use rge_kernels::Value;
use rge_runtime::{io, Profiler};
use serde_json::json;

use super::{CliError, CliResult};
use crate::engines::EngineArgs;

/// Timed runs unless told otherwise.
pub const DEFAULT_RUNS: usize = 10;
/// Warm-up runs unless told otherwise.
pub const DEFAULT_WARMUP: usize = 2;
/// Profiled runs (after the timed ones) the op shares come from, at most.
pub const PROFILED_RUNS: usize = 3;

/// What `rge bench` was asked.
#[derive(Debug, Clone)]
pub struct BenchArgs {
    pub model: PathBuf,
    /// `NAME=FILE` pairs (.npy or ONNX TensorProto .pb).
    pub inputs: Vec<String>,
    /// `NAME=D0,D1,…` pairs.
    pub shapes: Vec<String>,
    pub threads: Option<usize>,
    /// `--pin-threads`.
    pub pin_threads: rge_runtime::ThreadPinning,
    pub executor: Option<String>,
    pub runs: usize,
    pub warmup: usize,
    pub json: bool,
    /// Write the outputs of the last timed run as DIR/NAME.npy.
    pub output_dir: Option<PathBuf>,
    pub engines: EngineArgs,
    /// `--random-inputs` and `--seed`.
    pub random: super::inputs::RandomInputs,
}

impl Default for BenchArgs {
    fn default() -> Self {
        BenchArgs {
            model: PathBuf::new(),
            inputs: Vec::new(),
            shapes: Vec::new(),
            threads: None,
            pin_threads: Default::default(),
            executor: None,
            runs: DEFAULT_RUNS,
            warmup: DEFAULT_WARMUP,
            json: false,
            output_dir: None,
            engines: EngineArgs::default(),
            random: Default::default(),
        }
    }
}

/// Min, median, p90 (nearest rank), mean and max of `times`, which must not be empty.
pub fn stats(times: &[f64]) -> (f64, f64, f64, f64, f64) {
    let mut v = times.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    let p90 = v[((n as f64 * 0.9).ceil() as usize).clamp(1, n) - 1];
    let mean = v.iter().sum::<f64>() / n as f64;
    (v[0], median, p90, mean, v[n - 1])
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn write_outputs(dir: &Path, names: &[&str], outs: &[Value]) -> Result<(), CliError> {
    std::fs::create_dir_all(dir).map_err(|e| CliError::new(format!("{}: {e}", dir.display())))?;
    for (name, v) in names.iter().zip(outs) {
        if let Value::Tensor(t) = v {
            let path = dir.join(format!("{}.npy", super::run::file_name(name)));
            std::fs::write(&path, io::npy_bytes(t)?)
                .map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        }
    }
    Ok(())
}

/// `rge bench`.
pub fn run(args: &BenchArgs) -> CliResult {
    let (executor, note) = super::run::executor_of(args.executor.as_deref(), args.threads)?;
    if args.runs == 0 {
        return Err(CliError::new("option `--runs`: must be at least 1"));
    }
    let s = super::run::session(executor, args.threads, args.pin_threads, &args.engines)?;

    // Inputs from files first, so reading them is not part of the compile time.
    let given = super::inputs::read(&args.inputs)?;

    let t0 = Instant::now();
    let built = super::shape_args::build(&s, &args.model, &args.shapes)?;
    let mut compile_ms = ms(t0);
    let mut random_lines = String::new();
    let given = super::inputs::fill(&built, given, args.random, &mut random_lines)?;
    let sources: BTreeMap<String, String> = given
        .iter()
        .map(|g| (g.name.clone(), g.source.clone()))
        .collect();
    let inputs = built.order_inputs(&super::inputs::named(&given))?;
    let t1 = Instant::now();
    let m = built.model_for(&inputs)?;
    compile_ms += ms(t1);

    let run_once = |profile: Option<&Profiler>| -> Result<Vec<Value>, CliError> {
        m.run_with(&inputs, executor, profile)
            .map_err(|e| CliError::new(format!("{}: {e}", args.model.display())))
    };
    // Each run's outputs go back to the model before the next (`Model::recycle`), as a serving
    // loop would hand them back: the runs measure the model, not fresh zeroed memory.
    let mut outs = Vec::new();
    for _ in 0..args.warmup {
        m.recycle(std::mem::take(&mut outs));
        outs = run_once(None)?;
    }
    let mut times = Vec::with_capacity(args.runs);
    for _ in 0..args.runs {
        m.recycle(std::mem::take(&mut outs));
        let t = Instant::now();
        outs = run_once(None)?;
        times.push(ms(t));
    }
    let profiled = args.runs.min(PROFILED_RUNS);
    let profiler = Profiler::new();
    for _ in 0..profiled {
        run_once(Some(&profiler))?;
    }
    let events = profiler.events();
    let summary = super::profile_summary::summarize(&events, profiled);
    let mut by_op: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    for e in events {
        let slot = by_op.entry(e.op_type).or_default();
        slot.0 += e.dur_us;
        slot.1 += 1;
    }
    let total_us: f64 = by_op.values().map(|v| v.0).sum();
    let mut shares: Vec<(String, f64, f64, usize)> = by_op
        .into_iter()
        .map(|(op, (us, count))| {
            let share = if total_us > 0.0 { us / total_us } else { 0.0 };
            (
                op,
                share,
                us / 1e3 / profiled as f64,
                count / profiled.max(1),
            )
        })
        .collect();
    shares.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));

    let names = m.output_names();
    if let Some(dir) = &args.output_dir {
        write_outputs(dir, &names, &outs)?;
    }
    let (min, median, p90, mean, max) = stats(&times);
    let threads = args.threads.unwrap_or(1);
    let plan = m.plan();
    let steps = m.program().steps.len();
    let input_list: Vec<_> = built
        .inputs()
        .iter()
        .zip(&inputs)
        .map(|(spec, v)| {
            let (dtype, shape) = match v {
                Value::Tensor(t) => (t.dtype().to_string(), t.shape().to_vec()),
                _ => ("non-tensor".to_string(), Vec::new()),
            };
            json!({
                "name": spec.name,
                "dtype": dtype,
                "shape": shape,
                "source": sources.get(&spec.name).cloned().unwrap_or_default(),
            })
        })
        .collect();
    if args.json {
        let op_share: serde_json::Map<String, serde_json::Value> = shares
            .iter()
            .map(|(op, share, _, _)| (op.clone(), json!(share)))
            .collect();
        let op_ms: serde_json::Map<String, serde_json::Value> = shares
            .iter()
            .map(|(op, _, ms, _)| (op.clone(), json!(ms)))
            .collect();
        let v = json!({
            "model": args.model.display().to_string(),
            "executor": executor.to_string(),
            "threads": threads,
            "runs": args.runs,
            "warmup": args.warmup,
            "compile_ms": compile_ms,
            "min_ms": min,
            "median_ms": median,
            "p90_ms": p90,
            "mean_ms": mean,
            "max_ms": max,
            "times_ms": times,
            "profiled_runs": profiled,
            "op_share": op_share,
            "op_ms": op_ms,
            "profile": super::profile_summary::to_json(&summary),
            "steps": steps,
            "arena_bytes": plan.arena_bytes,
            "compilations": built.compilations(),
            "inputs": input_list,
            "outputs": names,
        });
        return Ok(format!(
            "{}\n",
            serde_json::to_string_pretty(&v).expect("plain json")
        ));
    }
    let mut out = String::new();
    if let Some(n) = note {
        let _ = writeln!(out, "{n}");
    }
    for i in &input_list {
        let _ = writeln!(
            out,
            "input {}: {}{} ({})",
            i["name"].as_str().unwrap_or(""),
            i["dtype"].as_str().unwrap_or(""),
            i["shape"],
            i["source"].as_str().unwrap_or("")
        );
    }
    let _ = writeln!(
        out,
        "{}: compile {compile_ms:.1} ms, {steps} steps, arena {} bytes; {executor} executor, {threads} thread{}",
        args.model.display(),
        plan.arena_bytes,
        if threads == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        out,
        "{} runs after {} warm-up: min {min:.3} ms, median {median:.3} ms, p90 {p90:.3} ms (mean {mean:.3}, max {max:.3})",
        args.runs, args.warmup
    );
    let _ = writeln!(
        out,
        "time by op type ({profiled} profiled run{}):",
        if profiled == 1 { "" } else { "s" }
    );
    for (op, share, ms, count) in &shares {
        let _ = writeln!(
            out,
            "  {op:<24} {:>6.2}%  {ms:>9.3} ms  {count:>5} steps",
            share * 100.0
        );
    }
    out.push_str(&super::profile_summary::text(&summary));
    Ok(out)
}
