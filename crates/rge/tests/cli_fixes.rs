//! The command-line fixes of issue 19, each on a small hand-made ONNX model: inputs (missing,
//! duplicate, random, seeded, open dims), dim names and the model summary in `inspect`, an
//! opset newer than rge knows, pooling an input shorter than the kernel (onnxruntime's output
//! size; never NaN), `--threads` without the parallel executor, `run --check`, the per-op
//! profile, broken pipes and help texts through the binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use prost::Message;
use rge::cli;
use rge::cli::run::RunArgs;
use rge_formats::onnx_proto::{
    attribute_proto, tensor_proto, tensor_shape_proto, type_proto, AttributeProto, GraphProto,
    ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto,
    ValueInfoProto,
};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rge-cli-fixes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A dim: a number, or a name (`dim_param`).
enum D {
    N(i64),
    P(&'static str),
}

fn value_info(name: &str, dims: &[D]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|d| tensor_shape_proto::Dimension {
            value: Some(match d {
                D::N(v) => tensor_shape_proto::dimension::Value::DimValue(*v),
                D::P(p) => tensor_shape_proto::dimension::Value::DimParam(p.to_string()),
            }),
            ..Default::default()
        })
        .collect();
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: tensor_proto::DataType::Float as i32,
                shape: Some(TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_proto::AttributeType::Ints as i32,
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn model(
    opset: i64,
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
) -> ModelProto {
    ModelProto {
        ir_version: 9,
        producer_name: "rge-tests".into(),
        producer_version: "1".into(),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        graph: Some(GraphProto {
            name: "g".into(),
            node: nodes,
            input: inputs,
            output: outputs,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn save(m: &ModelProto, name: &str) -> PathBuf {
    let path = tmp(name);
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    path
}

fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: name.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

/// y = a + b, both f32[a_dims].
fn add_model(name: &str, a_dims: Vec<D>, b_dims: Vec<D>, y_dims: Vec<D>, opset: i64) -> PathBuf {
    let m = model(
        opset,
        vec![node("Add", "add", &["a", "b"], &["y"])],
        vec![value_info("a", &a_dims), value_info("b", &b_dims)],
        vec![value_info("y", &y_dims)],
    );
    save(&m, name)
}

fn static_add(name: &str) -> PathBuf {
    add_model(
        name,
        vec![D::N(2), D::N(3)],
        vec![D::N(2), D::N(3)],
        vec![D::N(2), D::N(3)],
        17,
    )
}

fn npy(name: &str, shape: &[usize], v: &[f32]) -> String {
    let path = tmp(name);
    let t = rge_kernels::Tensor::from_vec(shape, v.to_vec()).unwrap();
    std::fs::write(&path, rge_runtime::io::npy_bytes(&t).unwrap()).unwrap();
    path.display().to_string()
}

fn run(model: &Path, inputs: &[String], random: cli::inputs::RandomInputs) -> cli::CliResult {
    cli::run::run(&RunArgs {
        model: model.to_path_buf(),
        inputs: inputs.to_vec(),
        random,
        ..Default::default()
    })
}

#[test]
fn a_missing_input_is_an_error_unless_random_inputs_is_asked() {
    let m = static_add("missing.onnx");
    let a = npy("a.npy", &[2, 3], &[1.0; 6]);
    let e = run(&m, &[format!("a={a}")], Default::default())
        .unwrap_err()
        .message;
    assert!(
        e.contains("missing input `b`") && e.contains("--random-inputs"),
        "{e}"
    );
    let out = run(
        &m,
        &[format!("a={a}")],
        cli::inputs::RandomInputs {
            forced: true,
            seed: None,
        },
    )
    .unwrap();
    assert!(out.contains("input b: random FLOAT[2, 3]"), "{out}");
    assert!(!out.contains("input a: random"), "{out}");
    // No input at all: every input random, as before.
    let out = run(&m, &[], Default::default()).unwrap();
    assert!(
        out.contains("input a: random") && out.contains("input b: random"),
        "{out}"
    );
}

#[test]
fn the_same_input_twice_is_an_error() {
    let m = static_add("twice.onnx");
    let a = npy("a2.npy", &[2, 3], &[1.0; 6]);
    let e = run(
        &m,
        &[format!("a={a}"), format!("a={a}")],
        Default::default(),
    )
    .unwrap_err()
    .message;
    assert!(e.contains("input `a` is already given"), "{e}");
    let e = run(&m, &[format!("c={a}")], Default::default())
        .unwrap_err()
        .message;
    assert!(
        e.contains("no input `c`") && e.contains("inputs: a, b"),
        "{e}"
    );
}

#[test]
fn the_seed_decides_the_random_inputs() {
    let m = static_add("seed.onnx");
    let with = |seed: u64| {
        run(
            &m,
            &[],
            cli::inputs::RandomInputs {
                forced: false,
                seed: Some(seed),
            },
        )
        .unwrap()
        .lines()
        .find(|l| l.starts_with("output y"))
        .unwrap()
        .to_string()
    };
    assert_eq!(with(7), with(7));
    assert_ne!(with(7), with(8));
}

#[test]
fn open_dims_without_inputs_name_the_inputs_unless_shape_fixes_them() {
    let m = add_model(
        "open.onnx",
        vec![D::P("batch"), D::N(3)],
        vec![D::P("batch"), D::N(3)],
        vec![D::P("batch"), D::N(3)],
        17,
    );
    let e = run(&m, &[], Default::default()).unwrap_err().message;
    assert!(
        e.contains("`a` [batch,3]") && e.contains("`b` [batch,3]") && e.contains("--shape"),
        "{e}"
    );
    let out = cli::run::run_with_shapes(
        &RunArgs {
            model: m.clone(),
            ..Default::default()
        },
        &["a=4,3".into(), "b=4,3".into()],
    )
    .unwrap_or_else(|e| panic!("{}", e.message));
    assert!(out.contains("output y: FLOAT[4, 3]"), "{out}");
}

#[test]
fn inspect_shows_dim_names_and_the_model_summary() {
    let m = add_model(
        "names.onnx",
        vec![D::P("batch"), D::P("height")],
        vec![D::P("batch"), D::P("height")],
        vec![D::P("batch"), D::P("height")],
        17,
    );
    let out = cli::inspect::run(&m, false).unwrap();
    assert!(out.contains("a: DT_FLOAT[batch,height]"), "{out}");
    assert!(out.contains("dim names: batch, height"), "{out}");
    assert!(
        out.contains("IR version 9, opsets ai.onnx 17, producer rge-tests 1"),
        "{out}"
    );
    let v: serde_json::Value = serde_json::from_str(&cli::inspect::run(&m, true).unwrap()).unwrap();
    assert_eq!(
        v["inputs"][0]["dims"],
        serde_json::json!(["batch", "height"])
    );
    assert_eq!(v["ir_version"], 9);
    assert_eq!(v["opsets"][0]["version"], 17);
    // Data and NetOutput are not ops unless asked for.
    assert_eq!(v["op_types"], serde_json::json!({"Add": 1}));
    let all: serde_json::Value =
        serde_json::from_str(&cli::inspect::run_with(&m, true, true).unwrap()).unwrap();
    assert!(all["op_types"]["Data"].as_u64().unwrap() >= 2, "{all}");
}

#[test]
fn inspect_counts_params_and_flops() {
    // y = x · W, x f32[2, 4], W f32[4, 5] (an initializer): 20 params, 2·2·5·4 FLOPs.
    let w = TensorProto {
        name: "w".into(),
        dims: vec![4, 5],
        data_type: tensor_proto::DataType::Float as i32,
        float_data: vec![0.5; 20],
        ..Default::default()
    };
    let mut m = model(
        17,
        vec![node("MatMul", "mm", &["x", "w"], &["y"])],
        vec![value_info("x", &[D::N(2), D::N(4)])],
        vec![value_info("y", &[D::N(2), D::N(5)])],
    );
    m.graph.as_mut().unwrap().initializer.push(w);
    let path = save(&m, "matmul.onnx");
    let v: serde_json::Value =
        serde_json::from_str(&cli::inspect::run(&path, true).unwrap()).unwrap();
    assert_eq!(v["params"], 20);
    assert_eq!(v["flops"], 2 * 2 * 5 * 4);
    assert_eq!(v["op_types"], serde_json::json!({"MatMul": 1}));
}

#[test]
fn an_opset_newer_than_rge_knows_is_refused_naming_it() {
    let m = add_model(
        "opset99.onnx",
        vec![D::N(3)],
        vec![D::N(3)],
        vec![D::N(3)],
        99,
    );
    for e in [
        run(&m, &[], Default::default()).unwrap_err().message,
        cli::inspect::run(&m, false).unwrap_err().message,
    ] {
        assert!(e.contains("opset 99") && e.contains("newest is 28"), "{e}");
    }
}

/// x f32[1, 1, h, 4] → MaxPool(kernel, stride 2) → GlobalAveragePool → y.
fn pool_model(name: &str, kernel: i64) -> PathBuf {
    let mut pool = node("MaxPool", "pool", &["x"], &["p"]);
    pool.attribute = vec![
        ints("kernel_shape", &[kernel, kernel]),
        ints("strides", &[2, 2]),
    ];
    let m = model(
        13,
        vec![pool, node("GlobalAveragePool", "gap", &["p"], &["y"])],
        vec![value_info("x", &[D::N(1), D::N(1), D::P("h"), D::N(4)])],
        vec![value_info("y", &[D::N(1), D::N(1), D::N(1), D::N(1)])],
    );
    save(&m, name)
}

#[test]
fn pooling_a_map_shorter_than_the_kernel_follows_onnxruntime_never_nan() {
    // Height 1, kernel 2, stride 2: onnxruntime gives one window over the row (max of
    // columns 0-1 and 2-3: 1 and 3), so the average is 2.
    let m = pool_model("pool_short.onnx", 2);
    let x = npy("x_short.npy", &[1, 1, 1, 4], &[0.0, 1.0, 2.0, 3.0]);
    let out = run(&m, &[format!("x={x}")], Default::default())
        .unwrap_or_else(|e| panic!("{}", e.message));
    assert!(
        out.contains("output y: FLOAT[1, 1, 1, 1] [2.000000]"),
        "{out}"
    );
    // Kernel 3 over height 1: no window at all; an error naming the node, not NaN.
    let m = pool_model("pool_empty.onnx", 3);
    let e = run(&m, &[format!("x={x}")], Default::default())
        .unwrap_err()
        .message;
    assert!(e.contains("pool") && !e.contains("NaN"), "{e}");
}

#[test]
fn threads_without_the_parallel_executor_say_what_they_do() {
    let m = static_add("threads.onnx");
    let out = cli::run::run(&RunArgs {
        model: m.clone(),
        threads: Some(4),
        ..Default::default()
    })
    .unwrap();
    assert!(
        out.contains("note: --threads 4 sets the threads of each kernel"),
        "{out}"
    );
    let out = cli::run::run(&RunArgs {
        model: m,
        threads: Some(4),
        executor: Some("parallel".into()),
        ..Default::default()
    })
    .unwrap();
    assert!(!out.contains("note:"), "{out}");
}

fn floats(name: &str, v: &[f32]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: vec![2, 3],
        data_type: tensor_proto::DataType::Float as i32,
        float_data: v.to_vec(),
        ..Default::default()
    }
}

/// A test folder for `--check`: the static add model, a + b = y (y as given).
fn check_dir(name: &str, y: &[f32]) -> PathBuf {
    let dir = tmp(name);
    let set = dir.join("test_data_set_0");
    std::fs::create_dir_all(&set).unwrap();
    std::fs::copy(static_add(&format!("{name}.onnx")), dir.join("model.onnx")).unwrap();
    std::fs::write(
        set.join("input_0.pb"),
        floats("a", &[1.0; 6]).encode_to_vec(),
    )
    .unwrap();
    std::fs::write(
        set.join("input_1.pb"),
        floats("b", &[0.5; 6]).encode_to_vec(),
    )
    .unwrap();
    std::fs::write(set.join("output_0.pb"), floats("y", y).encode_to_vec()).unwrap();
    dir
}

#[test]
fn run_check_compares_with_the_folders_outputs_at_the_tolerance_given() {
    let engines = Default::default();
    let check = |dir: &Path, rtol: Option<f64>, atol: Option<f64>| {
        cli::check::run(&cli::check::CheckArgs {
            dir,
            rtol,
            atol,
            executor: rge_runtime::ExecutorKind::Sequential,
            threads: None,
            pin_threads: Default::default(),
            engines: &engines,
        })
    };
    let good = check_dir("check_good", &[1.5; 6]);
    let out = check(&good, None, None).unwrap_or_else(|e| panic!("{}", e.message));
    assert!(out.contains("data set 0: 1 outputs match"), "{out}");
    assert!(out.ends_with("1 passed, 0 failed\n"), "{out}");
    // Off by 0.01: fails at the default tolerance, passes with --atol 0.02.
    let off = check_dir("check_off", &[1.51; 6]);
    let e = check(&off, None, None).unwrap_err();
    assert!(e.message.contains("output 0 `y`"), "{}", e.message);
    assert!(check(&off, None, Some(0.02)).is_ok());
    let e = check(&off, Some(-1.0), None).unwrap_err();
    assert!(e.message.contains("--rtol"), "{}", e.message);
    let e = check(&tmp("no_such_dir"), None, None).unwrap_err();
    assert!(e.message.contains("not a folder"), "{}", e.message);
}

#[test]
fn run_profile_prints_the_per_op_summary_and_the_trace_has_shapes() {
    let m = static_add("profile.onnx");
    let trace = tmp("profile.json");
    let out = cli::run::run(&RunArgs {
        model: m,
        profile: Some(trace.clone()),
        ..Default::default()
    })
    .unwrap();
    assert!(out.contains("by op type:"), "{out}");
    let add = out
        .lines()
        .find(|l| l.trim_start().starts_with("Add "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(add.contains("[2,3] [2,3] -> [2,3]"), "{add}");
    assert!(out.contains("slowest nodes"), "{out}");
    let t = std::fs::read_to_string(&trace).unwrap();
    assert!(t.contains("\"shapes\":\"[2,3] [2,3] -> [2,3]\""), "{t}");
}

fn rge_bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rge"))
}

#[test]
fn a_closed_pipe_ends_every_printing_command_quietly() {
    let m = static_add("pipe.onnx");
    let m = m.to_str().unwrap();
    for args in [
        vec!["place", m],
        vec!["place", m, "--json"],
        vec!["inspect", m, "--shapes", "--json"],
        vec!["ops", "--json"],
        vec!["ops"],
        vec!["engines", "--json"],
    ] {
        let mut child = rge_bin()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Close the reading end before the command prints (what `| head -1` does once it has
        // its line): every write then fails with a broken pipe.
        drop(child.stdout.take().unwrap());
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
        assert!(
            out.status.code() == Some(0),
            "{args:?}: {:?} {err}",
            out.status
        );
    }
}

#[test]
fn help_texts_list_values_and_defaults() {
    let help = |cmd: &str| {
        let o = rge_bin().args([cmd, "--help"]).output().unwrap();
        String::from_utf8(o.stdout).unwrap()
    };
    let run = help("run");
    assert!(run.contains("[default: sequential]"), "{run}");
    assert!(run.contains("parallel"), "{run}");
    assert!(
        run.contains("--random-inputs") && run.contains("--seed"),
        "{run}"
    );
    assert!(run.contains("--check <DIR>"), "{run}");
    let sort = help("sort");
    assert!(
        sort.contains("[possible values: bfs, dfs, rdfs, stable-rdfs]"),
        "{sort}"
    );
    for cmd in [
        "inspect",
        "place",
        "ops",
        "engines",
        "explain",
        "partition",
        "bench",
        "conformance",
    ] {
        let h = help(cmd);
        assert!(h.contains("Print JSON instead of text"), "{cmd}: {h}");
    }
}

#[test]
fn no_progress_bar_when_the_output_is_piped() {
    let root = tmp("progress_root");
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root).unwrap();
    let dir = check_dir("progress_test", &[1.5; 6]);
    std::fs::rename(&dir, root.join("test_add_progress")).unwrap();
    let out = rge_bin()
        .args(["conformance", root.to_str().unwrap(), "--jobs", "1"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.ends_with("1 passed, 0 failed\n"), "{stdout}");
    assert!(stderr.is_empty(), "a bar was drawn on a pipe: {stderr:?}");
}
