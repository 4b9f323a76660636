//! The rts engine end to end: static-shape If and Loop are placed on `rts` and lowered into the
//! flat program (label, switch and memcpy steps, no nested programs); `--control-flow nested`
//! and an engine set without rts keep them on `cpu` with nested programs; both give the same
//! outputs on the control-flow node tests and on a VAD-like model (If over an LSTM and a GRU
//! branch, a Loop over the frames; test data from scripts/gen_rts_test_models.py, outputs
//! from onnxruntime), on every executor; bad predicates and trip counts are errors naming the
//! node.

use std::path::{Path, PathBuf};

use rge::engines::{engine_set, EngineArgs};
use rge_conformance::{compare_values, load_test, Tolerance};
use rge_kernels::Value;
use rge_runtime::{ExecutorKind, Model, Session, SessionOptions};

fn session(control_flow: &str, exclude: Option<&str>, executor: ExecutorKind) -> Session {
    let set = engine_set(&EngineArgs {
        control_flow: Some(control_flow.to_string()),
        exclude_engines: exclude.map(str::to_string),
        ..EngineArgs::default()
    })
    .unwrap();
    Session::new(SessionOptions {
        executor,
        threads: 2,
        ..SessionOptions::with_engines(set)
    })
    .unwrap()
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/rts")
        .join(name)
}

fn compile(dir: &Path, control_flow: &str, exclude: Option<&str>, executor: ExecutorKind) -> Model {
    let test = load_test(dir).unwrap();
    session(control_flow, exclude, executor)
        .compile_graph(test.model.graph)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
}

fn step_types(m: &Model) -> Vec<String> {
    m.program()
        .steps
        .iter()
        .map(|s| s.op_type.clone())
        .collect()
}

fn engine_of(m: &Model, name: &str) -> String {
    let g = m.graph();
    g.nodes_of(g.root())
        .find(|&n| g.name_of(n) == name)
        .and_then(|n| g.op(n))
        .map(|op| op.engine_name().to_string())
        .unwrap_or_default()
}

fn bytes(v: &Value) -> Vec<u8> {
    v.as_tensor().unwrap().view().bytes().unwrap().to_vec()
}

fn same(a: &[Value], b: &[Value], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: output count");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert_eq!(bytes(x), bytes(y), "{what}: output {i}");
    }
}

#[test]
fn vad_like_model_is_lowered_flat_and_matches_nested_and_onnxruntime() {
    let dir = data("vad_like");
    let test = load_test(&dir).unwrap();
    let flat = compile(&dir, "rts", None, ExecutorKind::Sequential);
    let nested = compile(&dir, "nested", None, ExecutorKind::Sequential);
    assert_eq!(engine_of(&flat, "branch"), "rts");
    assert_eq!(engine_of(&flat, "frames"), "rts");
    assert_eq!(engine_of(&nested, "branch"), "cpu");
    assert_eq!(engine_of(&nested, "frames"), "cpu");
    let kinds = step_types(&flat);
    for want in [
        "StreamActive",
        "LabelSwitch",
        "LabelSet",
        "LabelGoto",
        "StreamSwitch",
        "MemcpyAsync",
        "LSTM",
        "GRU",
    ] {
        assert!(
            kinds.iter().any(|k| k == want),
            "no {want} step in {kinds:?}"
        );
    }
    assert!(flat.program().steps.iter().all(|s| s.subgraphs.is_empty()));
    assert!(!step_types(&nested).iter().any(|k| k == "LabelSwitch"));
    assert!(nested
        .program()
        .steps
        .iter()
        .any(|s| !s.subgraphs.is_empty()));
    for (k, set) in test.data_sets.iter().enumerate() {
        let want = nested.run(&set.inputs).unwrap();
        for (o, (w, e)) in want.iter().zip(&set.outputs).enumerate() {
            compare_values(e, w, Tolerance::default())
                .unwrap_or_else(|m| panic!("data set {k} output {o} against onnxruntime: {m}"));
        }
        for executor in ExecutorKind::ALL {
            let m = compile(&dir, "rts", None, executor);
            for run in 0..2 {
                let got = m.run(&set.inputs).unwrap();
                same(&want, &got, &format!("data set {k}, {executor}, run {run}"));
            }
        }
    }
    // The two branches really differ: the flag selects.
    let a = flat.run(&test.data_sets[0].inputs).unwrap();
    let b = flat.run(&test.data_sets[1].inputs).unwrap();
    assert_ne!(bytes(&a[2]), bytes(&b[2]));
}

#[test]
fn without_the_rts_engine_control_flow_falls_to_cpu_nested() {
    let dir = data("vad_like");
    let m = compile(&dir, "rts", Some("rts"), ExecutorKind::Sequential);
    assert_eq!(engine_of(&m, "branch"), "cpu");
    assert_eq!(engine_of(&m, "frames"), "cpu");
    let kinds = step_types(&m);
    assert!(!kinds.iter().any(|k| k.starts_with("Label")), "{kinds:?}");
}

/// The control-flow node tests (`test_if*`, `test_loop*`, `test_range_*_expanded`, `test_scan*`):
/// rts and nested give the same bytes and both match the expected outputs; `test_if` is
/// lowered flat, the dynamic ones stay nested under rts too.
#[test]
fn control_flow_node_tests_agree_between_nested_and_rts() {
    let dir = rge_conformance::node_tests_dir();
    if !dir.is_dir() {
        assert!(
            std::env::var_os("CI").is_none(),
            "ONNX node tests missing at {}; CI must generate them",
            dir.display()
        );
        eprintln!("note: no node tests at {}; skipping", dir.display());
        return;
    }
    let names =
        rge_conformance::list_tests(&dir, Some("^test_(if|loop|scan|range_.*_expanded)")).unwrap();
    assert!(names.len() >= 10, "{names:?}");
    let mut flat_count = 0;
    for t in &names {
        let test = load_test(t).unwrap();
        let name = test.name.clone();
        let rts = session("rts", None, ExecutorKind::Sequential)
            .compile_graph(test.model.graph.clone())
            .unwrap_or_else(|e| panic!("{name} (rts): {e}"));
        let nested = session("nested", None, ExecutorKind::Sequential)
            .compile_graph(test.model.graph.clone())
            .unwrap_or_else(|e| panic!("{name} (nested): {e}"));
        let flat = step_types(&rts).iter().any(|k| k == "StreamActive");
        flat_count += usize::from(flat);
        if name == "test_if" {
            assert!(flat, "test_if is static: it must be lowered flat");
        }
        for (k, set) in test.data_sets.iter().enumerate() {
            let a = rts
                .run(&set.inputs)
                .unwrap_or_else(|e| panic!("{name} (rts): {e}"));
            let b = nested
                .run(&set.inputs)
                .unwrap_or_else(|e| panic!("{name} (nested): {e}"));
            assert_eq!(a.len(), b.len());
            for (o, (x, y)) in a.iter().zip(&b).enumerate() {
                match (x.as_tensor(), y.as_tensor()) {
                    (Some(_), Some(_)) => {
                        assert_eq!(bytes(x), bytes(y), "{name} set {k} output {o}")
                    }
                    // Sequences and optionals (test_if_seq, test_loop13_seq …) run nested both ways.
                    _ => compare_values(
                        x,
                        y,
                        Tolerance {
                            rtol: 0.0,
                            atol: 0.0,
                        },
                    )
                    .unwrap_or_else(|m| panic!("{name} set {k} output {o}: {m}")),
                }
            }
            for (o, (e, x)) in set.outputs.iter().zip(&a).enumerate() {
                compare_values(e, x, Tolerance::default())
                    .unwrap_or_else(|m| panic!("{name} set {k} output {o}: {m}"));
            }
        }
    }
    eprintln!(
        "{} control-flow node tests, {flat_count} lowered flat",
        names.len()
    );
    assert!(flat_count >= 1);
}

/// Compiling a model that must fail (its folder holds only `model.onnx`) with the rts engine.
fn compile_err(name: &str) -> String {
    let model = rge_formats::onnx::import_file(data(name).join("model.onnx")).unwrap();
    session("rts", None, ExecutorKind::Sequential)
        .compile_graph(model.graph)
        .map(|_| ())
        .unwrap_err()
        .to_string()
}

#[test]
fn a_condition_of_the_wrong_dtype_and_shape_is_an_error_naming_the_node() {
    let e = compile_err("bad_cond");
    assert!(e.contains("pick") && e.contains("cond"), "{e}");
}

#[test]
fn a_trip_count_that_is_not_a_scalar_is_an_error_naming_the_node() {
    let e = compile_err("bad_trip");
    assert!(e.contains("count") && e.contains("trip count"), "{e}");
}

#[test]
fn rge_engines_lists_rts_with_its_flags() {
    let text = rge::cli::engines::list(&EngineArgs::default(), false).unwrap();
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("rts"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("skip+attach") && line.contains('2'), "{line}");
}
