//! Control flow: If, Loop and Scan run their bodies, with captured outer values.

mod common;

use common::*;
use rge_kernels::{Tensor, Value};
use rge_runtime::{ExecutorKind, Session, SessionOptions};

fn run_all(m: &rge_formats::onnx_proto::ModelProto, inputs: &[Value]) -> Vec<Value> {
    let mut s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    s.add_graph(0, to_graph(m)).unwrap();
    let model = s.build_graph(0).unwrap();
    let first = model.run(inputs).unwrap();
    for kind in ExecutorKind::ALL {
        assert_eq!(model.run_with(inputs, kind, None).unwrap(), first, "{kind}");
    }
    first
}

#[test]
fn if_with_captures() {
    let then_g = graph(
        "then",
        vec![node("Add", "t_add", &["x", "x"], &["t_out"])],
        vec![],
        vec![vi("t_out", F32, Some(&[2]))],
        vec![],
    );
    let else_g = graph(
        "else",
        vec![node("Sub", "e_sub", &["x", "y"], &["e_out"])],
        vec![],
        vec![vi("e_out", F32, Some(&[2]))],
        vec![],
    );
    let mut n = node("If", "if", &["c"], &["z"]);
    n.attribute = vec![
        attr_graph("then_branch", then_g),
        attr_graph("else_branch", else_g),
    ];
    let m = model(
        graph(
            "if_test",
            vec![n],
            vec![
                vi("c", BOOL, Some(&[])),
                vi("x", F32, Some(&[2])),
                vi("y", F32, Some(&[2])),
            ],
            vec![vi("z", F32, Some(&[2]))],
            vec![],
        ),
        17,
    );
    let x = tensor(&[2], vec![1.0, 2.0]);
    let y = tensor(&[2], vec![0.5, 0.25]);
    let t = Value::Tensor(Tensor::scalar(true));
    let f = Value::Tensor(Tensor::scalar(false));
    assert_eq!(
        floats(&run_all(&m, &[t, x.clone(), y.clone()])[0]),
        vec![2.0, 4.0]
    );
    assert_eq!(floats(&run_all(&m, &[f, x, y])[0]), vec![0.5, 1.75]);
}

#[test]
fn loop_with_capture_and_scan_output() {
    let body = graph(
        "body",
        vec![
            node("Identity", "b_cond", &["cond_in"], &["cond_out"]),
            node("Add", "b_add", &["v_in", "y"], &["v_out"]),
            node("Mul", "b_mul", &["v_out", "v_out"], &["sq"]),
        ],
        vec![
            vi("i", I64, Some(&[])),
            vi("cond_in", BOOL, Some(&[])),
            vi("v_in", F32, Some(&[2])),
        ],
        vec![
            vi("cond_out", BOOL, Some(&[])),
            vi("v_out", F32, Some(&[2])),
            vi("sq", F32, Some(&[2])),
        ],
        vec![],
    );
    let mut n = node("Loop", "loop", &["trip", "", "x"], &["v_final", "sqs"]);
    n.attribute = vec![attr_graph("body", body)];
    let m = model(
        graph(
            "loop_test",
            vec![n],
            vec![vi("x", F32, Some(&[2])), vi("y", F32, Some(&[2]))],
            vec![vi("v_final", F32, Some(&[2])), vi("sqs", F32, None)],
            vec![i64_tensor("trip", &[], &[3])],
        ),
        17,
    );
    let outs = run_all(
        &m,
        &[tensor(&[2], vec![1.0, 0.0]), tensor(&[2], vec![1.0, -1.0])],
    );
    assert_eq!(floats(&outs[0]), vec![4.0, -3.0]);
    let sq = outs[1].as_tensor().unwrap();
    assert_eq!(sq.shape(), &[3, 2]);
    assert_eq!(
        sq.as_slice::<f32>().unwrap(),
        &[4.0, 1.0, 9.0, 4.0, 16.0, 9.0]
    );
}

#[test]
fn scan_cumulative_sum() {
    let body = graph(
        "body",
        vec![
            node("Add", "b_add", &["s_in", "x_in"], &["s_out"]),
            node("Identity", "b_id", &["s_out"], &["y_out"]),
        ],
        vec![vi("s_in", F32, Some(&[2])), vi("x_in", F32, Some(&[2]))],
        vec![vi("s_out", F32, Some(&[2])), vi("y_out", F32, Some(&[2]))],
        vec![],
    );
    let mut n = node("Scan", "scan", &["s0", "xs"], &["s_final", "ys"]);
    n.attribute = vec![attr_graph("body", body), attr_int("num_scan_inputs", 1)];
    let m = model(
        graph(
            "scan_test",
            vec![n],
            vec![vi("s0", F32, Some(&[2])), vi("xs", F32, Some(&[3, 2]))],
            vec![vi("s_final", F32, Some(&[2])), vi("ys", F32, Some(&[3, 2]))],
            vec![],
        ),
        11,
    );
    let outs = run_all(
        &m,
        &[
            tensor(&[2], vec![0.0, 10.0]),
            tensor(&[3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
        ],
    );
    assert_eq!(floats(&outs[0]), vec![9.0, 22.0]);
    assert_eq!(floats(&outs[1]), vec![1.0, 12.0, 4.0, 16.0, 9.0, 22.0]);
}

#[test]
fn control_flow_survives_a_saved_model() {
    let body = graph(
        "body",
        vec![
            node("Identity", "b_cond", &["cond_in"], &["cond_out"]),
            node("Add", "b_add", &["v_in", "y"], &["v_out"]),
        ],
        vec![
            vi("i", I64, Some(&[])),
            vi("cond_in", BOOL, Some(&[])),
            vi("v_in", F32, Some(&[2])),
        ],
        vec![
            vi("cond_out", BOOL, Some(&[])),
            vi("v_out", F32, Some(&[2])),
        ],
        vec![],
    );
    let mut n = node("Loop", "loop", &["trip", "", "x"], &["v_final"]);
    n.attribute = vec![attr_graph("body", body)];
    let m = model(
        graph(
            "loop_saved",
            vec![n],
            vec![vi("x", F32, Some(&[2])), vi("y", F32, Some(&[2]))],
            vec![vi("v_final", F32, Some(&[2]))],
            vec![i64_tensor("trip", &[], &[4])],
        ),
        17,
    );
    let s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    let built = s.compile_graph(to_graph(&m)).unwrap();
    let inputs = [tensor(&[2], vec![1.0, 2.0]), tensor(&[2], vec![0.5, -1.0])];
    let want = built.run(&inputs).unwrap();
    assert_eq!(floats(&want[0]), vec![3.0, -2.0]);
    let path = std::env::temp_dir().join(format!("rge-loop-{}.om", std::process::id()));
    rge_runtime::save_model(&built, &path).unwrap();
    let loaded = s.load_model(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    for kind in ExecutorKind::ALL {
        assert_eq!(
            loaded.run_with(&inputs, kind, None).unwrap(),
            want,
            "{kind}"
        );
    }
}

#[test]
fn dynamic_shapes_run_from_run_time_buffers() {
    // x has a symbolic batch dim: nothing downstream is planned; Reshape copies.
    let m = model(
        graph(
            "dynamic",
            vec![
                node("Add", "add", &["x", "x"], &["a"]),
                node("Relu", "relu", &["a"], &["r"]),
                node("Reshape", "reshape", &["r", "shape"], &["y"]),
            ],
            vec![vi("x", F32, Some(&[-1, 2]))],
            vec![vi("y", F32, None)],
            vec![i64_tensor("shape", &[1], &[-1])],
        ),
        17,
    );
    let mut s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    s.add_graph(0, to_graph(&m)).unwrap();
    let model = s.build_graph(0).unwrap();
    assert_eq!(model.plan().arena_bytes, 0);
    for (rows, kind) in [
        (1usize, ExecutorKind::Sequential),
        (3, ExecutorKind::Parallel),
        (5, ExecutorKind::Topological),
    ] {
        let x: Vec<f32> = (0..rows * 2).map(|i| i as f32 - 2.0).collect();
        let out = model
            .run_with(&[tensor(&[rows, 2], x.clone())], kind, None)
            .unwrap();
        let t = out[0].as_tensor().unwrap();
        assert_eq!(t.shape(), &[rows * 2]);
        let want: Vec<f32> = x.iter().map(|v| (2.0 * v).max(0.0)).collect();
        assert_eq!(t.as_slice::<f32>().unwrap(), want.as_slice());
    }
    // Same shapes again: buffers come from the caching allocator.
    let before = model.program().allocator.stats().0;
    for _ in 0..3 {
        model.run(&[tensor(&[3, 2], vec![1.0; 6])]).unwrap();
    }
    assert!(model.program().allocator.stats().0 > before);
}
