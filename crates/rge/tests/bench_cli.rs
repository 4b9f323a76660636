//! `rge bench` (its JSON keys and sane values, never timings), `--shape` on run, compile,
//! bench and inspect (and its errors), and models with unknown input dims compiled per input
//! shapes (the shape cache).

use std::path::{Path, PathBuf};

use rge::cli;
use rge::cli::bench::BenchArgs;
use rge::cli::run::RunArgs;
use rge_ir::{ComputeGraph, DataType, OpDesc, Shape, Tensor, TensorDesc};
use rge_kernels::Value;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn tiny_cnn() -> PathBuf {
    examples().join("tiny_cnn.onnx")
}

fn image_input() -> String {
    format!("image={}", examples().join("tiny_cnn_image.npy").display())
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rge-bench-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const BIAS: [f32; 3] = [1.0, -2.0, 0.5];

/// x: f32[batch, 3] (batch unknown) → Add(x, [1, -2, 0.5]) → Relu → y: f32[batch, 3].
fn dynamic_graph() -> ComputeGraph {
    let f = |dims: &[i64]| TensorDesc::with_shape_dtype(Shape::from_slice(dims), DataType::Float);
    let mut g = ComputeGraph::new("dyn_batch");
    let mut x = OpDesc::new("x", "Data")
        .with_input("x", f(&[-1, 3]))
        .with_output("y", f(&[-1, 3]));
    x.attrs_mut().set("index", 0i64);
    let mut c = OpDesc::new("bias", "Const").with_output("y", f(&[3]));
    c.attrs_mut()
        .set("value", Tensor::from_f32(Shape::from_slice(&[3]), &BIAS));
    let add = OpDesc::new("add", "Add")
        .with_input("A", f(&[-1, 3]))
        .with_input("B", f(&[3]))
        .with_output("C", f(&[-1, 3]));
    let relu = OpDesc::new("relu", "Relu")
        .with_input("X", f(&[-1, 3]))
        .with_output("Y", f(&[-1, 3]));
    let out = OpDesc::new("out", "NetOutput").with_input("y", f(&[-1, 3]));
    let (x, c, add, relu, out) = (
        g.add_root_node(x).unwrap(),
        g.add_root_node(c).unwrap(),
        g.add_root_node(add).unwrap(),
        g.add_root_node(relu).unwrap(),
        g.add_root_node(out).unwrap(),
    );
    g.add_input_node(x).unwrap();
    g.add_edge(x, 0, add, 0).unwrap();
    g.add_edge(c, 0, add, 1).unwrap();
    g.add_edge(add, 0, relu, 0).unwrap();
    g.add_edge(relu, 0, out, 0).unwrap();
    g.add_output_node(relu, 0).unwrap();
    g
}

fn dynamic_model(tag: &str) -> PathBuf {
    let path = tmp(&format!("dyn_{tag}.pb"));
    rge_formats::ge::GeModel::new(dynamic_graph())
        .write_binary(&path, &Default::default())
        .unwrap();
    path
}

fn expected(x: &[f32]) -> Vec<f32> {
    x.iter()
        .enumerate()
        .map(|(i, v)| (v + BIAS[i % 3]).max(0.0))
        .collect()
}

fn batch(n: usize) -> Vec<f32> {
    (0..n * 3).map(|i| i as f32 * 0.75 - 2.0).collect()
}

#[test]
fn bench_json_has_the_keys_and_sane_values() {
    let out = cli::bench::run(&BenchArgs {
        model: tiny_cnn(),
        inputs: vec![image_input()],
        runs: 4,
        warmup: 1,
        json: true,
        ..BenchArgs::default()
    })
    .unwrap_or_else(|e| panic!("{}", e.message));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in [
        "median_ms",
        "min_ms",
        "p90_ms",
        "runs",
        "threads",
        "compile_ms",
        "op_share",
    ] {
        assert!(v.get(k).is_some(), "no `{k}` in {out}");
    }
    let f = |k: &str| v[k].as_f64().unwrap();
    assert_eq!(v["runs"], 4);
    assert_eq!(v["threads"], 1);
    assert_eq!(v["times_ms"].as_array().unwrap().len(), 4);
    assert!(f("min_ms") > 0.0 && f("compile_ms") > 0.0, "{out}");
    assert!(f("min_ms") <= f("median_ms") && f("median_ms") <= f("p90_ms"));
    assert!(f("p90_ms") <= f("max_ms"));
    let shares = v["op_share"].as_object().unwrap();
    // Conv, or a fused form of it, depending on the engines.
    assert!(shares.keys().any(|k| k.contains("Conv")), "{out}");
    let total: f64 = shares.values().map(|s| s.as_f64().unwrap()).sum();
    assert!((total - 1.0).abs() < 1e-6, "{total}");
    assert!(shares
        .values()
        .all(|s| (0.0..=1.0).contains(&s.as_f64().unwrap())));
    assert_eq!(v["inputs"][0]["name"], "image");
    assert_eq!(v["compilations"], 1);
    assert!(v["arena_bytes"].as_u64().unwrap() > 0);

    // Threads are reported as set; text mode; outputs written.
    let dir = tmp("bench_outs");
    let out = cli::bench::run(&BenchArgs {
        model: tiny_cnn(),
        threads: Some(2),
        runs: 2,
        warmup: 0,
        output_dir: Some(dir.clone()),
        ..BenchArgs::default()
    })
    .unwrap_or_else(|e| panic!("{}", e.message));
    assert!(out.contains("median") && out.contains("p90"), "{out}");
    assert!(out.contains("2 threads") && out.contains("Conv"), "{out}");
    assert!(
        out.contains("input image: FLOAT[1,1,28,28] (random)"),
        "{out}"
    );
    let probs = rge_runtime::io::read_tensor(&dir.join("probs.npy")).unwrap();
    assert_eq!(probs.shape(), &[1, 10]);
}

#[test]
fn bench_bad_options_are_clear_errors() {
    let bench = |f: &dyn Fn(&mut BenchArgs)| {
        let mut a = BenchArgs {
            model: tiny_cnn(),
            runs: 1,
            warmup: 0,
            ..BenchArgs::default()
        };
        f(&mut a);
        cli::bench::run(&a).unwrap_err().message
    };
    let e = bench(&|a| a.runs = 0);
    assert!(e.contains("--runs"), "{e}");
    let e = bench(&|a| a.threads = Some(0));
    assert!(e.contains("--threads"), "{e}");
    let e = bench(&|a| a.executor = Some("fastest".into()));
    assert!(e.contains("executor"), "{e}");
    let e = bench(&|a| a.inputs = vec!["image".into()]);
    assert!(e.contains("NAME=FILE"), "{e}");
    let e = bench(&|a| a.inputs = vec!["image=/no/such/file.npy".into()]);
    assert!(e.contains("--input `image=/no/such/file.npy`"), "{e}");
    let e = bench(&|a| a.inputs = vec![format!("photo={}", &image_input()[6..])]);
    assert!(e.contains("photo") && e.contains("image"), "{e}");
    let e = bench(&|a| a.model = PathBuf::from("/no/such/model.onnx"));
    assert!(e.contains("/no/such/model.onnx"), "{e}");
}

#[test]
fn shape_option_errors_name_the_option() {
    let cases: &[(&str, &[&str])] = &[
        (
            "foo=1,1,28,28",
            &["--shape `foo=1,1,28,28`", "no input `foo`", "image"],
        ),
        ("image=1,28,28", &["--shape `image=1,28,28`", "rank 4"]),
        (
            "image=2,1,28,28",
            &["--shape `image=2,1,28,28`", "dim 0", "is 1"],
        ),
        (
            "image=0,1,28,28",
            &["--shape `image=0,1,28,28`", "not positive"],
        ),
        (
            "image=-1,1,28,28",
            &["--shape `image=-1,1,28,28`", "not positive"],
        ),
        (
            "image=1,a,28,28",
            &["--shape `image=1,a,28,28`", "`a` is not an integer"],
        ),
        ("image", &["--shape `image`", "NAME=D0,D1"]),
        ("=1,2", &["--shape `=1,2`", "no input name"]),
    ];
    let om = tmp("never.om");
    for (spec, wants) in cases {
        let shapes = vec![spec.to_string()];
        let errors = [
            cli::run::run_with_shapes(
                &RunArgs {
                    model: tiny_cnn(),
                    ..RunArgs::default()
                },
                &shapes,
            ),
            cli::compile::run_with_shapes(&tiny_cnn(), &om, &Default::default(), &shapes),
            cli::bench::run(&BenchArgs {
                model: tiny_cnn(),
                shapes: shapes.clone(),
                runs: 1,
                ..BenchArgs::default()
            }),
            cli::shapes::run_with_shapes(&tiny_cnn(), false, &shapes),
        ];
        for r in errors {
            let e = r.unwrap_err().message;
            for w in *wants {
                assert!(e.contains(w), "`{spec}`: `{w}` not in: {e}");
            }
        }
    }
    let e = cli::shapes::run_with_shapes(
        &tiny_cnn(),
        false,
        &["image=1,1,28,28".into(), "image=1,1,28,28".into()],
    )
    .unwrap_err()
    .message;
    assert!(e.contains("already fixed"), "{e}");
    // The model's own static shape is fine.
    cli::run::run_with_shapes(
        &RunArgs {
            model: tiny_cnn(),
            ..RunArgs::default()
        },
        &["image=1,1,28,28".into()],
    )
    .unwrap_or_else(|e| panic!("{}", e.message));
    // A compiled model's shapes are fixed.
    cli::compile::run(&tiny_cnn(), &om, &Default::default()).unwrap();
    let e = cli::run::run_with_shapes(
        &RunArgs {
            model: om.clone(),
            ..RunArgs::default()
        },
        &["image=1,1,28,28".into()],
    )
    .unwrap_err()
    .message;
    assert!(e.contains("--shape") && e.contains("compiled model"), "{e}");
}

#[test]
fn shape_option_fixes_dynamic_dims_before_compiling() {
    let model = dynamic_model("fix");
    // Inference sees the static shape.
    let out = cli::shapes::run_with_shapes(&model, false, &["x=4,3".into()]).unwrap();
    assert!(out.contains("relu:0: DT_FLOAT[4,3]"), "{out}");
    let out = cli::shapes::run(&model, false).unwrap();
    assert!(out.contains("relu:0: DT_FLOAT[-1,3]"), "{out}");
    let e = cli::shapes::run_with_shapes(&model, false, &["x=4,5".into()])
        .unwrap_err()
        .message;
    assert!(e.contains("--shape `x=4,5`") && e.contains("dim 1"), "{e}");

    // run: random inputs of the fixed shape, a planned arena.
    let out = cli::run::run_with_shapes(
        &RunArgs {
            model: model.clone(),
            ..RunArgs::default()
        },
        &["x=4,3".into()],
    )
    .unwrap_or_else(|e| panic!("{}", e.message));
    assert!(out.contains("input x: random FLOAT[4, 3]"), "{out}");
    assert!(out.contains("output relu:0: FLOAT[4, 3]"), "{out}");
    assert!(!out.contains("arena 0 bytes"), "{out}");

    // compile: the compiled model has the static input.
    let om = tmp("dyn_fixed.om");
    let out = cli::compile::run_with_shapes(&model, &om, &Default::default(), &["x=4,3".into()])
        .unwrap_or_else(|e| panic!("{}", e.message));
    assert!(!out.contains("arena 0 bytes"), "{out}");
    let out = cli::run::run(&RunArgs {
        model: om,
        ..RunArgs::default()
    })
    .unwrap_or_else(|e| panic!("{}", e.message));
    assert!(out.contains("input x: random FLOAT[4, 3]"), "{out}");

    // bench with a shape.
    let out = cli::bench::run(&BenchArgs {
        model,
        shapes: vec!["x=5,3".into()],
        runs: 1,
        warmup: 0,
        json: true,
        ..BenchArgs::default()
    })
    .unwrap_or_else(|e| panic!("{}", e.message));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["inputs"][0]["shape"], serde_json::json!([5, 3]));
    assert!(v["arena_bytes"].as_u64().unwrap() > 0, "{out}");
}

#[test]
fn unknown_input_dims_are_compiled_per_shape_with_a_plan() {
    let s = cli::run::session(
        rge_runtime::ExecutorKind::Sequential,
        Some(1),
        Default::default(),
        &Default::default(),
    )
    .unwrap();
    // Compiled once for unknown dims, the model has no plan for the batch-dependent tensors.
    let generic = s.compile_graph(dynamic_graph()).unwrap();
    assert_eq!(
        rge_runtime::shape_cache::dynamic_inputs(&generic),
        vec!["x".to_string()]
    );
    let m = s.compile_graph_for_shapes(dynamic_graph()).unwrap();
    assert_eq!(m.compilations(), 0);
    assert_eq!(m.inputs()[0].dims, Some(vec![-1, 3]));
    for (k, n) in [2usize, 3, 2].into_iter().enumerate() {
        let x = batch(n);
        let inputs = vec![Value::Tensor(
            rge_kernels::Tensor::from_vec(&[n, 3], x.clone()).unwrap(),
        )];
        let planned = m.model_for(&inputs).unwrap();
        assert!(planned.plan().arena_bytes > 0, "batch {n}: no plan");
        assert!(
            rge_runtime::shape_cache::dynamic_inputs(&planned).is_empty(),
            "batch {n}"
        );
        let outs = m.run(&inputs).unwrap();
        let Value::Tensor(t) = &outs[0] else {
            panic!("not a tensor")
        };
        assert_eq!(t.shape(), &[n, 3]);
        assert_eq!(t.as_slice::<f32>().unwrap(), expected(&x).as_slice());
        assert_eq!(m.compilations(), [1, 2, 2][k], "after batch {n}");
    }
    assert_eq!(
        m.cached_shapes(),
        vec![vec![Some(vec![2, 3])], vec![Some(vec![3, 3])]]
    );
    // A shape that contradicts a static dim, or a wrong input count, is an error naming it.
    let bad = vec![Value::Tensor(
        rge_kernels::Tensor::from_vec(&[2, 4], vec![0f32; 8]).unwrap(),
    )];
    let e = m.run(&bad).unwrap_err().to_string();
    assert!(e.contains("input `x`") && e.contains("[2,4]"), "{e}");
    assert!(m.run(&[]).is_err());
    assert_eq!(m.compilations(), 2);

    // The cache keeps the most recent shapes.
    let small = m.with_capacity(1);
    for n in [1usize, 4, 1] {
        let inputs = vec![Value::Tensor(
            rge_kernels::Tensor::from_vec(&[n, 3], batch(n)).unwrap(),
        )];
        small.run(&inputs).unwrap();
    }
    assert_eq!(small.cached_shapes().len(), 1);
    assert_eq!(small.compilations(), 2 + 3);
}

#[test]
fn rge_run_compiles_unknown_dims_for_the_given_shapes() {
    let model = dynamic_model("run");
    let x = tmp("x3.npy");
    let t = rge_kernels::Tensor::from_vec(&[3, 3], batch(3)).unwrap();
    std::fs::write(&x, rge_runtime::io::npy_bytes(&t).unwrap()).unwrap();
    let dir = tmp("dyn_outs");
    let out = cli::run::run(&RunArgs {
        model,
        inputs: vec![format!("x={}", x.display())],
        output_dir: Some(dir.clone()),
        ..RunArgs::default()
    })
    .unwrap_or_else(|e| panic!("{}", e.message));
    assert!(out.contains("compiled for the given shapes"), "{out}");
    assert!(!out.contains("arena 0 bytes"), "{out}");
    let y = rge_runtime::io::read_tensor(&dir.join("relu_0.npy")).unwrap();
    assert_eq!(y.shape(), &[3, 3]);
    assert_eq!(y.as_slice::<f32>().unwrap(), expected(&batch(3)).as_slice());
}
