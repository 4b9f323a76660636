//! Running the node-test suite: listing folders, running each through a runner, reporting.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use rge_ir::{op_types, ComputeGraph};
use rge_kernels::{KernelRegistry, Value};

use crate::compare::{compare_values, Tolerance};
use crate::data::{load_test, NodeTest};
use crate::distribution::{compare_by_distribution, DistRule};
use crate::reference::interpret;

/// The node tests folder: `RGE_ONNX_NODE_TESTS`, else `<workspace>/build/onnx-node-tests/node`.
pub fn node_tests_dir() -> PathBuf {
    match std::env::var_os("RGE_ONNX_NODE_TESTS") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../build/onnx-node-tests/node"),
    }
}

/// Test folders under `dir` (those with a model.onnx), sorted, filtered by a regex on the name.
pub fn list_tests(dir: &Path, filter: Option<&str>) -> Result<Vec<PathBuf>, String> {
    let re = filter
        .map(regex::Regex::new)
        .transpose()
        .map_err(|e| format!("--filter: {e}"))?;
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            re.as_ref().is_none_or(|r| r.is_match(&name))
        })
        .collect();
    v.sort();
    Ok(v)
}

/// Runs one test's graph on one data set's inputs and returns its outputs.
pub type Runner<'a> = dyn Fn(&NodeTest, &[Value]) -> Result<Vec<Value>, String> + Sync + 'a;
/// Says whether a runner can attempt a test (`Err`: the op types it lacks).
pub type Coverage<'a> = dyn Fn(&NodeTest) -> Result<(), Vec<String>> + Sync + 'a;

/// The result of one test.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Passed,
    Failed(String),
    /// The runner has no kernel for these op types (a family runs only what it covers).
    Uncovered(Vec<String>),
}

/// Results of a suite run, in test-name order.
#[derive(Debug, Default)]
pub struct SuiteReport {
    pub results: Vec<(String, Outcome)>,
    /// Each test's wall time (load, compile, run, compare), milliseconds, as `results`.
    pub times_ms: Vec<f64>,
}

impl SuiteReport {
    pub fn passed(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.1 == Outcome::Passed)
            .count()
    }

    pub fn failed(&self) -> Vec<(&str, &str)> {
        self.results
            .iter()
            .filter_map(|(n, o)| match o {
                Outcome::Failed(m) => Some((n.as_str(), m.as_str())),
                _ => None,
            })
            .collect()
    }

    pub fn uncovered(&self) -> usize {
        self.results
            .iter()
            .filter(|r| matches!(r.1, Outcome::Uncovered(_)))
            .count()
    }
}

/// (domain, op type) of every node of the graph (subgraphs included) but Data/Const/NetOutput.
pub fn op_types_of(g: &ComputeGraph) -> Vec<(String, String)> {
    let mut out = std::collections::BTreeSet::new();
    let mut graphs = vec![g.root()];
    graphs.extend_from_slice(g.subgraphs());
    for gid in graphs {
        for n in g.nodes_of(gid) {
            let Some(op) = g.op(n) else { continue };
            let t = op.op_type();
            if op_types::is_data(t) || t == op_types::CONST || t == op_types::NET_OUTPUT {
                continue;
            }
            out.insert((op.domain().to_string(), t.to_string()));
        }
    }
    out.into_iter().collect()
}

/// Runs one loaded test with `run` (graph, opsets, inputs → outputs) over every data set.
pub fn run_test(test: &NodeTest, tol: Tolerance, run: &Runner<'_>) -> Outcome {
    run_test_by(test, tol, None, run)
}

/// [`run_test`], comparing by distribution when `rule` is given (see [`crate::distribution`]).
pub fn run_test_by(
    test: &NodeTest,
    tol: Tolerance,
    rule: Option<DistRule>,
    run: &Runner<'_>,
) -> Outcome {
    for (k, set) in test.data_sets.iter().enumerate() {
        let got = match run(test, &set.inputs) {
            Ok(v) => v,
            Err(e) => return Outcome::Failed(e),
        };
        if let Some(rule) = rule {
            if let Err(e) = compare_by_distribution(rule, &set.inputs, &set.outputs, &got) {
                return Outcome::Failed(format!("data set {k} (by distribution): {e}"));
            }
            continue;
        }
        if got.len() != set.outputs.len() {
            return Outcome::Failed(format!(
                "data set {k}: {} outputs, expected {}",
                got.len(),
                set.outputs.len()
            ));
        }
        for (j, (w, g)) in set.outputs.iter().zip(&got).enumerate() {
            if let Err(e) = compare_values(w, g, tol) {
                return Outcome::Failed(format!("data set {k}, output {j}: {e}"));
            }
        }
    }
    Outcome::Passed
}

/// Runs every test folder in `dirs`: `covered` decides which the runner can attempt (the
/// others are [`Outcome::Uncovered`]); a panic inside a runner is caught and reported as a
/// failure, so one bad kernel cannot stop the suite. Tests run on `threads` threads.
pub fn run_suite(
    dirs: &[PathBuf],
    tol: Tolerance,
    covered: &Coverage<'_>,
    run: &Runner<'_>,
    threads: usize,
) -> SuiteReport {
    run_suite_with(dirs, tol, &[], covered, run, threads, &|| {})
}

/// [`run_suite`] with the tests named in `rules` compared by distribution.
pub fn run_suite_by(
    dirs: &[PathBuf],
    tol: Tolerance,
    rules: &[(String, DistRule)],
    covered: &Coverage<'_>,
    run: &Runner<'_>,
    threads: usize,
) -> SuiteReport {
    run_suite_with(dirs, tol, rules, covered, run, threads, &|| {})
}

/// [`run_suite_by`], calling `done` after each test (from the thread that ran it): a progress
/// bar.
pub fn run_suite_with(
    dirs: &[PathBuf],
    tol: Tolerance,
    rules: &[(String, DistRule)],
    covered: &Coverage<'_>,
    run: &Runner<'_>,
    threads: usize,
    done: &(dyn Fn() + Sync),
) -> SuiteReport {
    let next = AtomicUsize::new(0);
    type Slot = std::sync::Mutex<Option<(String, Outcome, f64)>>;
    let slots: Vec<Slot> = (0..dirs.len())
        .map(|_| std::sync::Mutex::new(None))
        .collect();
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(dir) = dirs.get(i) else { break };
                let name = dir
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .to_string();
                let t0 = std::time::Instant::now();
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    match load_test(dir) {
                        Err(e) => Outcome::Failed(format!("cannot load: {e}")),
                        Ok(test) => match covered(&test) {
                            Err(missing) => Outcome::Uncovered(missing),
                            Ok(()) => {
                                let rule = rules.iter().find(|r| r.0 == name).map(|r| r.1);
                                run_test_by(&test, tol, rule, run)
                            }
                        },
                    }
                }))
                .unwrap_or_else(|p| {
                    let msg = p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    Outcome::Failed(format!("panicked: {msg}"))
                });
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                *slots[i].lock().unwrap_or_else(|p| p.into_inner()) = Some((name, outcome, ms));
                done();
            });
        }
    });
    let mut report = SuiteReport::default();
    for (name, outcome, ms) in slots
        .into_iter()
        .filter_map(|m| m.into_inner().unwrap_or_else(|p| p.into_inner()))
    {
        report.results.push((name, outcome));
        report.times_ms.push(ms);
    }
    report
}

/// The reference runner over `registry`.
pub fn reference_runner(
    registry: &KernelRegistry,
) -> impl Fn(&NodeTest, &[Value]) -> Result<Vec<Value>, String> + Sync + '_ {
    move |test, inputs| {
        interpret(
            &test.model.graph,
            registry,
            &test.model.opset_imports,
            inputs,
        )
    }
}

/// True when every op of the test's graph has a kernel in `registry` and the graph has no
/// subgraphs (the reference interpreter does not run them).
pub fn registry_covers(registry: &KernelRegistry, test: &NodeTest) -> Result<(), Vec<String>> {
    let g = &test.model.graph;
    let mut missing: Vec<String> = op_types_of(g)
        .into_iter()
        .filter(|(d, t)| !registry.contains(d, t))
        .map(|(d, t)| if d.is_empty() { t } else { format!("{d}.{t}") })
        .collect();
    if !g.subgraphs().is_empty() {
        missing.push("(subgraphs)".into());
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing)
    }
}

/// The check a kernel family's `tests/onnx_nodes.rs` runs: every node test whose ops are all
/// in `registry` goes through the reference interpreter; failures are printed, and the test
/// fails on any failure not listed in the family's `tests/known_failures.txt` (one test name
/// per line, `#` starts a comment giving the reason). Filter with `RGE_NODE_FILTER=regex`.
/// Without the test data the check is skipped, unless `CI` is set.
#[track_caller]
pub fn check_family(family: &str, registry: &KernelRegistry) {
    let dir = node_tests_dir();
    if !dir.is_dir() {
        let msg = format!(
            "ONNX node tests not found at {} (run scripts/gen_onnx_node_tests.sh)",
            dir.display()
        );
        assert!(
            std::env::var_os("CI").is_none(),
            "{msg}; CI must generate them first"
        );
        eprintln!("note: {msg}; skipping");
        return;
    }
    let filter = std::env::var("RGE_NODE_FILTER").ok();
    let dirs = list_tests(&dir, filter.as_deref()).expect("list tests");
    let runner = reference_runner(registry);
    let covered = |t: &NodeTest| registry_covers(registry, t);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let report = run_suite(&dirs, Tolerance::default(), &covered, &runner, threads);
    let known_path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(format!("rge-kernels-{family}"))
        .join("tests/known_failures.txt");
    let known: Vec<String> = std::fs::read_to_string(&known_path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let mut unexpected = 0;
    for (name, why) in report.failed() {
        let listed = known.iter().any(|k| k == name);
        if !listed {
            unexpected += 1;
        }
        eprintln!("{} {name}: {why}", if listed { "known" } else { "FAIL " });
    }
    eprintln!(
        "{family}: {} passed, {} failed ({unexpected} not in known_failures.txt), {} not covered",
        report.passed(),
        report.failed().len(),
        report.uncovered()
    );
    assert_eq!(unexpected, 0, "{unexpected} node tests failed (see above)");
}
