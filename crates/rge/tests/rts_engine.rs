//! The rts engine end to end: static-shape If and Loop are placed on `rts` and lowered into the
//! flat program (label, switch and memcpy steps, no nested programs); `--control-flow nested`
//! and an engine set without rts keep them on `cpu` with nested programs; both give the same
//! outputs on the control-flow node tests and on a VAD-like model (If over an LSTM and a GRU
//! branch, a Loop over the frames; test data from scripts/gen_rts_test_models.py, outputs
//! from onnxruntime), on every executor; bad predicates and trip counts are errors naming the
//! node. GE's Case and While (graphs built with the rge-ir API) are lowered flat too and agree
//! with nested, out-of-range Case indices included.

// The GE graph builder and the While/Case graphs of rge-runtime's control-flow tests.
#[path = "../../rge-runtime/tests/common/ge_graphs.rs"]
mod ge_graphs;

use std::path::{Path, PathBuf};

use ge_graphs::*;
use rge::engines::{engine_set, EngineArgs};
use rge_conformance::{compare_values, load_test, Tolerance};
use rge_ir::{ComputeGraph, DataType};
use rge_kernels::{Tensor, Value};
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
        .map(|s| s.op_type.to_string())
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
    assert_flat(
        &flat,
        "branch",
        &[
            "StreamActive",
            "LabelSwitch",
            "LabelSet",
            "LabelGoto",
            "StreamSwitch",
            "MemcpyAsync",
            "LSTM",
            "GRU",
        ],
    );
    assert_eq!(engine_of(&flat, "frames"), "rts");
    assert_eq!(engine_of(&nested, "branch"), "cpu");
    assert_eq!(engine_of(&nested, "frames"), "cpu");
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

/// The control-flow node tests (`test_if*`, `test_loop*`, `test_range_*_expanded`, `test_scan*`)
/// and the static Loop models of scripts/gen_rts_test_models.py (`static_loop`, `loop_with_if`):
/// rts and nested give the same bytes and both match the expected outputs; exactly the static
/// ones (`FLAT` below) are lowered flat, the dynamic ones stay nested under rts too.
#[test]
fn control_flow_node_tests_agree_between_nested_and_rts() {
    // The tests whose control flow is static: lowered flat under rts. Every other one stays
    // nested (test_loop11: its scan output grows with a run-time trip count; the _seq and
    // _opt ones: sequences and optionals; Scan and the Range expansions: Loops with dynamic
    // trip counts or op types rts does not lower).
    const FLAT: &[&str] = &["test_if", "static_loop", "loop_with_if"];
    let dir = rge_conformance::node_tests_dir();
    let mut dirs = vec![data("static_loop"), data("loop_with_if")];
    if dir.is_dir() {
        let names =
            rge_conformance::list_tests(&dir, Some("^test_(if|loop|scan|range_.*_expanded)"))
                .unwrap();
        assert!(names.len() >= 10, "{names:?}");
        dirs.extend(names);
    } else {
        assert!(
            std::env::var_os("CI").is_none(),
            "ONNX node tests missing at {}; CI must generate them",
            dir.display()
        );
        eprintln!(
            "note: no node tests at {}; only the rts test models",
            dir.display()
        );
    }
    let mut flat_names = Vec::new();
    for t in &dirs {
        let test = load_test(t).unwrap();
        let name = t.file_name().unwrap().to_string_lossy().to_string();
        let rts = session("rts", None, ExecutorKind::Sequential)
            .compile_graph(test.model.graph.clone())
            .unwrap_or_else(|e| panic!("{name} (rts): {e}"));
        let nested = session("nested", None, ExecutorKind::Sequential)
            .compile_graph(test.model.graph.clone())
            .unwrap_or_else(|e| panic!("{name} (nested): {e}"));
        let kinds = step_types(&rts);
        let flat = kinds.iter().any(|k| k == "StreamActive");
        if flat {
            flat_names.push(name.clone());
            // Lowered flat: no step of the program runs nested programs.
            assert!(
                rts.program().steps.iter().all(|s| s.subgraphs.is_empty()),
                "{name}: {kinds:?}"
            );
        }
        assert!(
            !step_types(&nested).iter().any(|k| k == "StreamActive"),
            "{name}: nested has flat steps"
        );
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
        "{} control-flow tests, lowered flat: {flat_names:?}",
        dirs.len()
    );
    let mut want: Vec<String> = FLAT
        .iter()
        .filter(|n| dirs.iter().any(|d| d.file_name().is_some_and(|f| f == **n)))
        .map(|n| n.to_string())
        .collect();
    want.sort();
    flat_names.sort();
    assert_eq!(flat_names, want, "the control-flow tests lowered flat");
}

/// A static Loop (constant trip count, a carried vector and a scan output) and an If inside a
/// Loop's body: both lowered flat (the If's LabelSwitch inside the Loop's region), the same
/// bytes as nested on every executor, and as onnxruntime.
#[test]
fn a_static_loop_and_an_if_inside_a_loop_are_lowered_flat() {
    for (model, node, inner) in [
        ("static_loop", "accumulate_loop", None),
        ("loop_with_if", "parity_loop", Some("parity_if")),
    ] {
        let dir = data(model);
        let test = load_test(&dir).unwrap();
        let flat = compile(&dir, "rts", None, ExecutorKind::Sequential);
        let nested = compile(&dir, "nested", None, ExecutorKind::Sequential);
        assert_flat(
            &flat,
            node,
            &[
                "StreamActive",
                "LoopInit",
                "StreamSwitch",
                "LoopIncrement",
                "LabelGoto",
            ],
        );
        assert_eq!(engine_of(&nested, node), "cpu", "{model}");
        let kinds = step_types(&flat);
        let switches = kinds.iter().filter(|k| *k == "LabelSwitch").count();
        let actives = kinds.iter().filter(|k| *k == "StreamActive").count();
        if let Some(inner) = inner {
            // The If is a region of its own inside the Loop's, lowered from the body.
            assert_eq!((switches, actives), (1, 2), "{model}: {kinds:?}");
            assert!(
                flat.program()
                    .steps
                    .iter()
                    .any(|s| s.node == inner && &*s.op_type == "LabelSwitch"),
                "{model}: {kinds:?}"
            );
            assert!(kinds.iter().any(|k| k == "Mod") && kinds.iter().any(|k| k == "Sub"));
        } else {
            assert_eq!((switches, actives), (0, 1), "{model}: {kinds:?}");
            assert!(
                kinds.iter().any(|k| k == "ScanWrite") && kinds.iter().any(|k| k == "ScanCheck")
            );
        }
        for (k, set) in test.data_sets.iter().enumerate() {
            let want = nested.run(&set.inputs).unwrap();
            for (o, (w, e)) in want.iter().zip(&set.outputs).enumerate() {
                compare_values(e, w, Tolerance::default()).unwrap_or_else(|m| {
                    panic!("{model} set {k} output {o} against onnxruntime: {m}")
                });
            }
            for executor in ExecutorKind::ALL {
                let m = compile(&dir, "rts", None, executor);
                for run in 0..2 {
                    let got = m.run(&set.inputs).unwrap();
                    same(
                        &want,
                        &got,
                        &format!("{model} set {k}, {executor}, run {run}"),
                    );
                }
            }
        }
    }
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
fn a_bool_condition_of_the_wrong_shape_is_an_error_naming_the_node() {
    // If: bool[2] (the right dtype, the wrong shape).
    let e = compile_err("bad_cond_shape");
    assert!(
        e.contains("`pick2`") && e.contains("condition") && e.contains("[2]"),
        "{e}"
    );
    // Loop: an initial condition of bool[2].
    let e = compile_err("bad_loop_cond");
    assert!(
        e.contains("`count2`") && e.contains("condition") && e.contains("[2]"),
        "{e}"
    );
    // At run time a static region's condition cannot change shape: a bool[2] fed for the VAD
    // model's bool[] flag is refused at the input, naming it, on every executor (the switch
    // kernels' own checks are unit tests of crates/rge-rts).
    let dir = data("vad_like");
    let test = load_test(&dir).unwrap();
    let mut inputs = test.data_sets[0].inputs.clone();
    inputs[1] = Value::Tensor(Tensor::from_vec(&[2], vec![true, false]).unwrap());
    for executor in ExecutorKind::ALL {
        let e = compile(&dir, "rts", None, executor)
            .run(&inputs)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("use_lstm") && e.contains("[2]"),
            "{executor}: {e}"
        );
    }
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

// ---- GE's Case and While (graphs built with the rge-ir API, as in rge-runtime's control.rs) ----

/// The same Case as a frontend that names the branch slots makes it (the ONNX importer's
/// `_onnx_subgraph_attrs`): the branch count is then known, and an index out of range runs
/// the last branch.
fn ge_case_with_named_branches() -> ComputeGraph {
    let mut g = ge_case(desc(DataType::Int32, &[]));
    let root = g.root();
    let case = g.nodes_of(root).find(|&n| g.name_of(n) == "case").unwrap();
    g.op_mut(case)
        .unwrap()
        .attrs_mut()
        .set("_onnx_subgraph_attrs", vec!["branches".to_string(); 3]);
    g
}

fn ge_compile(g: &ComputeGraph, control_flow: &str, executor: ExecutorKind) -> Model {
    session(control_flow, None, executor)
        .compile_graph(g.clone())
        .unwrap_or_else(|e| panic!("{control_flow}: {e}"))
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_tensor()
        .unwrap()
        .view()
        .as_slice::<f32>()
        .unwrap()
        .to_vec()
}

/// `m` was lowered flat: the node is on `rts`, the program has each of `want` and no step runs
/// nested programs.
fn assert_flat(m: &Model, node: &str, want: &[&str]) {
    assert_eq!(engine_of(m, node), "rts", "{node}");
    let kinds = step_types(m);
    for w in want {
        assert!(kinds.iter().any(|k| k == w), "no {w} step in {kinds:?}");
    }
    assert!(
        m.program().steps.iter().all(|s| s.subgraphs.is_empty()),
        "{kinds:?}"
    );
}

/// `m` runs `node` nested on `cpu`.
fn assert_nested(m: &Model, node: &str) {
    assert_eq!(engine_of(m, node), "cpu", "{node}");
    let kinds = step_types(m);
    assert!(!kinds.iter().any(|k| k.starts_with("Label")), "{kinds:?}");
    assert!(m.program().steps.iter().any(|s| !s.subgraphs.is_empty()));
}

/// Runs `inputs` nested (sequential) and flat on every executor, twice each: the same bytes.
fn agree_on_every_executor(g: &ComputeGraph, inputs: &[Value], what: &str) -> Vec<Value> {
    let want = ge_compile(g, "nested", ExecutorKind::Sequential)
        .run(inputs)
        .unwrap_or_else(|e| panic!("{what} (nested): {e}"));
    for executor in ExecutorKind::ALL {
        let m = ge_compile(g, "rts", executor);
        for run in 0..2 {
            let got = m
                .run(inputs)
                .unwrap_or_else(|e| panic!("{what} (rts, {executor}): {e}"));
            same(&want, &got, &format!("{what}, {executor}, run {run}"));
        }
    }
    want
}

#[test]
fn ge_case_is_lowered_flat_on_rts_and_matches_nested_on_every_executor() {
    let g = ge_case(desc(DataType::Int32, &[]));
    let flat = ge_compile(&g, "rts", ExecutorKind::Sequential);
    assert_flat(
        &flat,
        "case",
        &[
            "StreamActive",
            "LabelSwitch",
            "LabelSet",
            "LabelGoto",
            "MemcpyAsync",
            "Relu",
            "Mul",
        ],
    );
    // One LabelSet per branch and one at the end; a LabelGoto out of every branch but the last.
    let kinds = step_types(&flat);
    assert_eq!(
        kinds.iter().filter(|k| *k == "LabelSet").count(),
        4,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| *k == "LabelGoto").count(),
        2,
        "{kinds:?}"
    );
    assert_nested(&ge_compile(&g, "nested", ExecutorKind::Sequential), "case");
    let x = Value::Tensor(Tensor::from_vec(&[2], vec![-1.0f32, 3.0]).unwrap());
    for (k, want) in [
        (0i32, vec![0.0, 3.0]),
        (1, vec![-2.0, 6.0]),
        (2, vec![1.0, 9.0]),
    ] {
        let idx = Value::Tensor(Tensor::scalar(k));
        let outs = agree_on_every_executor(&g, &[idx, x.clone()], &format!("branch {k}"));
        assert_eq!(floats(&outs[0]), want, "branch {k}");
    }
    // An int64 index selects the same way.
    let g64 = ge_case(desc(DataType::Int64, &[]));
    assert_flat(
        &ge_compile(&g64, "rts", ExecutorKind::Sequential),
        "case",
        &["LabelSwitch"],
    );
    let outs = agree_on_every_executor(&g64, &[Value::Tensor(Tensor::scalar(1i64)), x], "int64");
    assert_eq!(floats(&outs[0]), vec![-2.0, 6.0]);
}

#[test]
fn a_case_index_out_of_range_agrees_between_rts_and_nested() {
    let x = Value::Tensor(Tensor::from_vec(&[2], vec![-1.0f32, 3.0]).unwrap());
    // A GE graph names no branch count: an index out of range is an error naming the node,
    // the same both ways.
    let g = ge_case(desc(DataType::Int32, &[]));
    for k in [-1i32, 3, 100, i32::MIN, i32::MAX] {
        let inputs = [Value::Tensor(Tensor::scalar(k)), x.clone()];
        let nested = ge_compile(&g, "nested", ExecutorKind::Sequential)
            .run(&inputs)
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(nested.contains("case"), "{nested}");
        for executor in ExecutorKind::ALL {
            let e = ge_compile(&g, "rts", executor)
                .run(&inputs)
                .map(|_| ())
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("`case`") && e.contains(&format!("branch_index {k}")),
                "{executor}: {e}"
            );
        }
    }
    // With the branch count named (a frontend's slot names): the last branch, both ways.
    let g = ge_case_with_named_branches();
    assert_flat(
        &ge_compile(&g, "rts", ExecutorKind::Sequential),
        "case",
        &["LabelSwitch"],
    );
    for k in [-1i32, 3, 100, i32::MIN] {
        let inputs = [Value::Tensor(Tensor::scalar(k)), x.clone()];
        let outs = agree_on_every_executor(&g, &inputs, &format!("named, index {k}"));
        assert_eq!(floats(&outs[0]), vec![1.0, 9.0], "index {k}");
    }
    let inputs = [Value::Tensor(Tensor::scalar(0i32)), x];
    let outs = agree_on_every_executor(&g, &inputs, "named, index 0");
    assert_eq!(floats(&outs[0]), vec![0.0, 3.0]);
}

#[test]
fn ge_while_and_its_aliases_are_lowered_flat_on_rts_and_match_nested() {
    for op_type in ["While", "_While", "StatelessWhile"] {
        let g = ge_while(op_type);
        let flat = ge_compile(&g, "rts", ExecutorKind::Sequential);
        assert_flat(
            &flat,
            "loop",
            &[
                "StreamActive",
                "StreamSwitch",
                "LabelSet",
                "LabelGoto",
                "MemcpyAsync",
                "Less",
                "Add",
            ],
        );
        assert_nested(&ge_compile(&g, "nested", ExecutorKind::Sequential), "loop");
        let x = Value::Tensor(Tensor::from_vec(&[2], vec![1.0f32, 2.0]).unwrap());
        let i0 = |v: f32| Value::Tensor(Tensor::from_vec(&[], vec![v]).unwrap());
        let outs = agree_on_every_executor(&g, &[i0(0.0), x.clone()], op_type);
        assert_eq!(floats(&outs[0]), vec![3.0], "{op_type}");
        assert_eq!(floats(&outs[1]), vec![8.0, 16.0], "{op_type}");
        // The condition false at once: the inputs come back.
        let outs = agree_on_every_executor(&g, &[i0(5.0), x.clone()], op_type);
        assert_eq!(floats(&outs[0]), vec![5.0], "{op_type}");
        assert_eq!(floats(&outs[1]), vec![1.0, 2.0], "{op_type}");
        // A fractional start: 2.5 → 3.5 after one iteration.
        let outs = agree_on_every_executor(&g, &[i0(2.5), x], op_type);
        assert_eq!(floats(&outs[0]), vec![3.5], "{op_type}");
        assert_eq!(floats(&outs[1]), vec![2.0, 4.0], "{op_type}");
    }
}

#[test]
fn a_case_index_of_the_wrong_shape_is_an_error_naming_the_node() {
    let compile_error = |index| {
        session("rts", None, ExecutorKind::Sequential)
            .compile_graph(ge_case(index))
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    let e = compile_error(desc(DataType::Int32, &[2]));
    assert!(
        e.contains("`case`") && e.contains("branch_index") && e.contains("[2]"),
        "{e}"
    );
    let e = compile_error(desc(DataType::Float, &[]));
    // A float index: refused by inference already, naming the node and the input.
    assert!(
        e.contains("`case`") && e.contains("branch_index") && e.contains("int32, int64"),
        "{e}"
    );
}

/// A real VAD model (Silero VAD 6.2.3 from its PyPI wheel, written into the com.microsoft suite
/// by scripts/gen_ms_tests.py): If on the sample rate, nested Ifs and an LSTM per branch, the
/// branch not taken unfit for the given window. Nested and rts give the same bytes on every
/// executor, and onnxruntime's outputs, at both rates.
#[test]
fn silero_vad_agrees_between_nested_and_rts_and_with_onnxruntime() {
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../build/ml-ms-tests/ms");
    for rate in ["16k", "8k"] {
        let dir = suite.join(format!("silero_vad_{rate}"));
        if !dir.is_dir() {
            assert!(
                std::env::var_os("CI").is_none(),
                "{} missing; CI must generate it (scripts/gen_ml_ms_tests.sh)",
                dir.display()
            );
            eprintln!("note: no {}; skipped", dir.display());
            continue;
        }
        let test = load_test(&dir).unwrap();
        let set = &test.data_sets[0];
        let want = compile(&dir, "nested", None, ExecutorKind::Sequential)
            .run(&set.inputs)
            .unwrap();
        for (o, (e, w)) in set.outputs.iter().zip(&want).enumerate() {
            compare_values(e, w, Tolerance::default())
                .unwrap_or_else(|m| panic!("{rate} output {o} against onnxruntime: {m}"));
        }
        for executor in ExecutorKind::ALL {
            let got = compile(&dir, "rts", None, executor)
                .run(&set.inputs)
                .unwrap();
            same(&want, &got, &format!("silero {rate}, {executor}"));
        }
    }
}
