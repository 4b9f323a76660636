//! `rge run --check DIR [--rtol R] [--atol A]` (onnx_test_runner's job): runs an ONNX test
//! folder — `model.onnx` and `test_data_set_*/{input,output}_N.pb` — through the whole pipeline
//! with the command line's engines and compares every output with the stored one: each element
//! within `atol + rtol·|expected|` (onnxruntime's rule; rge-conformance). Prints one line per
//! data set and fails (exit 1) naming the first output and element that differ.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use rge_conformance::{compare_values, load_test, Tolerance};
use rge_runtime::ExecutorKind;

use super::{CliError, CliResult};
use crate::engines::EngineArgs;

/// What `--check` was asked.
#[derive(Debug, Clone)]
pub struct CheckArgs<'a> {
    pub dir: &'a Path,
    pub rtol: Option<f64>,
    pub atol: Option<f64>,
    pub executor: ExecutorKind,
    pub threads: Option<usize>,
    pub pin_threads: rge_runtime::ThreadPinning,
    pub engines: &'a EngineArgs,
}

fn tolerance(rtol: Option<f64>, atol: Option<f64>) -> Result<Tolerance, CliError> {
    let mut t = Tolerance::default();
    for (name, v, slot) in [("--rtol", rtol, &mut t.rtol), ("--atol", atol, &mut t.atol)] {
        if let Some(v) = v {
            if !v.is_finite() || v < 0.0 {
                return Err(CliError::new(format!(
                    "option `{name}`: {v} is not a tolerance (a finite number ≥ 0)"
                )));
            }
            *slot = v;
        }
    }
    Ok(t)
}

/// `rge run --check DIR`.
pub fn run(args: &CheckArgs<'_>) -> CliResult {
    let tol = tolerance(args.rtol, args.atol)?;
    if !args.dir.is_dir() {
        return Err(CliError::new(format!(
            "--check {}: not a folder (expected model.onnx and test_data_set_*/)",
            args.dir.display()
        )));
    }
    let test = load_test(args.dir).map_err(|e| CliError::new(format!("--check: {e}")))?;
    if test.data_sets.is_empty() {
        return Err(CliError::new(format!(
            "--check {}: no test_data_set_* folder in it",
            args.dir.display()
        )));
    }
    let s = super::run::session(args.executor, args.threads, args.pin_threads, args.engines)?;
    let t0 = Instant::now();
    let model = s
        .compile_graph(test.model.graph.clone())
        .map_err(|e| CliError::new(format!("{}: {e}", args.dir.join("model.onnx").display())))?;
    let compile_ms = t0.elapsed().as_secs_f64() * 1e3;
    let names: Vec<String> = model.output_names().iter().map(|s| s.to_string()).collect();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: compiled in {compile_ms:.1} ms; rtol {}, atol {}",
        test.name, tol.rtol, tol.atol
    );
    for (k, set) in test.data_sets.iter().enumerate() {
        let t = Instant::now();
        let got = model
            .run_with(&set.inputs, args.executor, None)
            .map_err(|e| CliError::with_output(out.clone(), format!("data set {k}: {e}")))?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if got.len() != set.outputs.len() {
            return Err(CliError::with_output(
                out,
                format!(
                    "data set {k}: {} outputs, the folder has {}",
                    got.len(),
                    set.outputs.len()
                ),
            ));
        }
        for (j, (want, got)) in set.outputs.iter().zip(&got).enumerate() {
            if let Err(e) = compare_values(want, got, tol) {
                let name = names.get(j).map_or("?", String::as_str);
                return Err(CliError::with_output(
                    out,
                    format!("data set {k}, output {j} `{name}`: {e}"),
                ));
            }
        }
        let _ = writeln!(
            out,
            "data set {k}: {} outputs match ({ms:.3} ms)",
            got.len()
        );
    }
    let _ = writeln!(out, "{} passed, 0 failed", test.data_sets.len());
    Ok(out)
}
