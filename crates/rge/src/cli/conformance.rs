//! `rge conformance DIR [--filter REGEX] [--json] [--min-pass N]`: runs ONNX backend node-test
//! folders through the whole pipeline (import, infer, place, partition, compile, run) and
//! compares with the stored outputs by ONNX Runtime's rule (rge-conformance). Prints one line per
//! failing test with the reason, then `N passed, N failed`. Exits 1 when a test fails (with
//! `--min-pass N`: when fewer than N pass) or when `--filter` matches no test; `--json` has each
//! test's status, reason and time. A progress bar shows on a terminal.

use std::path::Path;

use rge_conformance::{list_tests, run_suite_with, NodeTest, Outcome, Tolerance};
use rge_kernels::Value;
use rge_runtime::{Session, SessionOptions};
use serde_json::json;

use super::{CliError, CliResult};

/// Tests that cannot pass for a reason outside rge, with the reason (conformance/known_failures.txt).
pub const KNOWN_FAILURES: &str = include_str!("../../../../conformance/known_failures.txt");

/// Tests compared by distribution, with their rule (conformance/compared_by_distribution.txt).
pub const BY_DISTRIBUTION: &str =
    include_str!("../../../../conformance/compared_by_distribution.txt");

/// (test name, reason) of every listed test.
pub fn known_failures() -> Vec<(&'static str, &'static str)> {
    KNOWN_FAILURES
        .lines()
        .filter_map(|l| {
            let (name, why) = l.split_once('#').unwrap_or((l, ""));
            let name = name.trim();
            (!name.is_empty()).then_some((name, why.trim()))
        })
        .collect()
}

/// Options of a run.
pub struct ConformanceArgs<'a> {
    pub dir: &'a Path,
    pub filter: Option<&'a str>,
    pub json: bool,
    /// Fail (exit 1) when fewer tests pass.
    pub min_pass: Option<usize>,
    /// Test-level parallelism (0: one per core).
    pub jobs: usize,
}

fn session() -> Result<Session, String> {
    // The command line's engine set: the node tests run on the engines `rge run` uses.
    let engines = crate::engines::default_engine_set().map_err(|e| e.to_string())?;
    Session::new(SessionOptions::with_engines(engines)).map_err(|e| e.to_string())
}

pub fn run(args: &ConformanceArgs<'_>) -> CliResult {
    if !args.dir.is_dir() {
        return Err(CliError::new(format!(
            "{}: not a folder of ONNX node tests (scripts/gen_onnx_node_tests.sh makes one)",
            args.dir.display()
        )));
    }
    let dirs = list_tests(args.dir, args.filter).map_err(CliError::new)?;
    if dirs.is_empty() {
        return Err(CliError::new(match args.filter {
            Some(f) => format!("--filter `{f}` matches no test in {}", args.dir.display()),
            None => format!("{}: no node-test folders in it", args.dir.display()),
        }));
    }
    let session = session().map_err(CliError::new)?;
    let runner = |test: &NodeTest, inputs: &[Value]| -> Result<Vec<Value>, String> {
        let model = session
            .compile_graph(test.model.graph.clone())
            .map_err(|e| e.to_string())?;
        model.run(inputs).map_err(|e| e.to_string())
    };
    let covered = |_: &NodeTest| Ok(());
    let jobs = if args.jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        args.jobs
    };
    let rules = rge_conformance::parse_rules(BY_DISTRIBUTION)
        .map_err(|e| CliError::new(format!("conformance/compared_by_distribution.txt: {e}")))?;
    let bar = super::progress::bar(dirs.len() as u64, "conformance");
    let done = || {
        if let Some(b) = &bar {
            b.inc(1);
        }
    };
    let t0 = std::time::Instant::now();
    let report = run_suite_with(
        &dirs,
        Tolerance::default(),
        &rules,
        &covered,
        &runner,
        jobs,
        &done,
    );
    let total_ms = t0.elapsed().as_secs_f64() * 1e3;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let known = known_failures();
    let reason_listed = |name: &str| known.iter().find(|k| k.0 == name).map(|k| k.1);
    let passed = report.passed();
    let failed = report.failed();
    let mut out = String::new();
    if args.json {
        let results: Vec<_> = report
            .results
            .iter()
            .zip(&report.times_ms)
            .map(|((name, o), ms)| match o {
                Outcome::Passed => json!({"name": name, "status": "passed", "ms": ms}),
                Outcome::Failed(why) => json!({
                    "name": name, "status": "failed", "reason": why,
                    "known": reason_listed(name), "ms": ms,
                }),
                Outcome::Uncovered(ops) => json!({
                    "name": name, "status": "uncovered", "reason": format!("no kernel for {}", ops.join(", ")),
                    "ops": ops, "ms": ms,
                }),
            })
            .collect();
        out = serde_json::to_string_pretty(&json!({
            "passed": passed,
            "failed": failed.len(),
            "total_ms": total_ms,
            "results": results,
        }))
        .map_err(CliError::new)?;
        out.push('\n');
    } else {
        for (name, why) in &failed {
            match reason_listed(name) {
                Some(k) => out.push_str(&format!("{name}: {why} (known: {k})\n")),
                None => out.push_str(&format!("{name}: {why}\n")),
            }
        }
        out.push_str(&format!("{passed} passed, {} failed\n", failed.len()));
    }
    let verdict = match args.min_pass {
        Some(min) if passed < min => Some(format!(
            "{passed} node tests passed, below the floor of {min}"
        )),
        None if !failed.is_empty() => Some(format!(
            "{} of {} node tests failed",
            failed.len(),
            report.results.len()
        )),
        _ => None,
    };
    match verdict {
        Some(msg) => Err(CliError::with_output(out, msg)),
        None => Ok(out),
    }
}
