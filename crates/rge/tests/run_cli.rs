//! `rge run` and `rge compile` on a model of local-engine ops (views), which need no kernel
//! family: inputs from .npy and .pb, outputs as .npy, a profile, a compiled model, bad input.

use std::path::PathBuf;

use rge::cli;
use rge::cli::run::RunArgs;
use rge_ir::{ComputeGraph, DataType, OpDesc, Shape, Tensor, TensorDesc};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rge-run-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// x: f32[2, 3] → Reshape to [3, 2] → y.
fn views_model(tag: &str) -> PathBuf {
    let f = |dims: &[i64]| TensorDesc::with_shape_dtype(Shape::from_slice(dims), DataType::Float);
    let i = |dims: &[i64]| TensorDesc::with_shape_dtype(Shape::from_slice(dims), DataType::Int64);
    let mut g = ComputeGraph::new("views");
    let mut x = OpDesc::new("x", "Data")
        .with_input("x", f(&[2, 3]))
        .with_output("y", f(&[2, 3]));
    x.attrs_mut().set("index", 0i64);
    let mut c = OpDesc::new("shape", "Const").with_output("y", i(&[2]));
    c.attrs_mut()
        .set("value", Tensor::from_i64(Shape::from_slice(&[2]), &[3, 2]));
    let r = OpDesc::new("reshape", "Reshape")
        .with_input("data", f(&[2, 3]))
        .with_input("shape", i(&[2]))
        .with_output("reshaped", f(&[3, 2]));
    let out = OpDesc::new("out", "NetOutput").with_input("y", f(&[3, 2]));
    let (x, c, r, out) = (
        g.add_root_node(x).unwrap(),
        g.add_root_node(c).unwrap(),
        g.add_root_node(r).unwrap(),
        g.add_root_node(out).unwrap(),
    );
    g.add_input_node(x).unwrap();
    g.add_edge(x, 0, r, 0).unwrap();
    g.add_edge(c, 0, r, 1).unwrap();
    g.add_edge(r, 0, out, 0).unwrap();
    g.add_output_node(r, 0).unwrap();
    let path = tmp(&format!("views_{tag}.pb"));
    rge_formats::ge::GeModel::new(g)
        .write_binary(&path, &Default::default())
        .unwrap();
    path
}

fn npy_f32(path: &PathBuf, shape: &[usize], v: &[f32]) {
    let t = rge_kernels::Tensor::from_vec(shape, v.to_vec()).unwrap();
    std::fs::write(path, rge_runtime::io::npy_bytes(&t).unwrap()).unwrap();
}

#[test]
fn run_with_npy_input_writes_npy_outputs_and_a_trace() {
    let model = views_model("run");
    let x = tmp("x.npy");
    npy_f32(&x, &[2, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let dir = tmp("outs");
    let trace = tmp("trace.json");
    for exec in [
        "sequential",
        "topological",
        "parallel",
        "priority",
        "stream",
    ] {
        let out = cli::run::run(&RunArgs {
            model: model.clone(),
            inputs: vec![format!("x={}", x.display())],
            output_dir: Some(dir.clone()),
            executor: Some(exec.into()),
            threads: Some(2),
            // Pinned workers run every executor too.
            pin_threads: rge_runtime::ThreadPinning::On,
            profile: Some(trace.clone()),
            engines: Default::default(),
            random: Default::default(),
        })
        .unwrap();
        assert!(out.contains("FLOAT[3, 2]"), "{out}");
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
        assert_eq!(files.len(), 1);
        let path = files[0].as_ref().unwrap().path();
        let t = rge_runtime::io::read_tensor(&path).unwrap();
        assert_eq!(t.shape(), &[3, 2]);
        assert_eq!(
            t.as_slice::<f32>().unwrap(),
            &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
        );
        assert!(std::fs::read_to_string(&trace)
            .unwrap()
            .contains("traceEvents"));
    }
}

#[test]
fn compile_then_run_the_compiled_model() {
    let model = views_model("compile");
    let om = tmp("views.om");
    let out = cli::compile::run(&model, &om, &Default::default()).unwrap();
    assert!(out.contains("views"), "{out}");
    let out = cli::run::run(&RunArgs {
        model: om,
        ..Default::default()
    })
    .unwrap();
    assert!(out.contains("input x: random FLOAT[2, 3]"), "{out}");
    assert!(out.contains("FLOAT[3, 2]"), "{out}");
}

#[test]
fn bad_input_files_and_options_are_clear_errors() {
    let model = views_model("bad");
    let run = |inputs: Vec<String>, executor: Option<&str>| {
        cli::run::run(&RunArgs {
            model: model.clone(),
            inputs,
            executor: executor.map(str::to_string),
            ..Default::default()
        })
    };
    let x = tmp("short.npy");
    npy_f32(&x, &[2, 3], &[0.0; 6]);
    let bytes = std::fs::read(&x).unwrap();
    std::fs::write(&x, &bytes[..bytes.len() - 4]).unwrap();
    let e = run(vec![format!("x={}", x.display())], None)
        .unwrap_err()
        .message;
    assert!(e.contains("short.npy") && e.contains("holds 20"), "{e}");
    let wrong = tmp("wrong.npy");
    npy_f32(&wrong, &[3, 2], &[0.0; 6]);
    let e = run(vec![format!("x={}", wrong.display())], None)
        .unwrap_err()
        .message;
    assert!(e.contains("input `x`") && e.contains("shape"), "{e}");
    let e = run(vec!["nope".into()], None).unwrap_err().message;
    assert!(e.contains("NAME=FILE"), "{e}");
    let e = run(vec![], Some("fastest")).unwrap_err().message;
    assert!(e.contains("executor"), "{e}");
}
