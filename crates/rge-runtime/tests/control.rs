//! Control flow: If, Loop and Scan run their bodies, with captured outer values; GE's While,
//! Case, PartitionedCall and If aliases run graphs built with the rge-ir API.

mod common;

use common::ge_graphs::*;
use common::*;
use rge_ir::{ComputeGraph, DataType, NodeId, TensorDesc};
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

/// Outputs handed back with `Model::recycle` are the next run's output buffers (no fresh
/// zeroed memory), and that run overwrites their old values. 64 KiB: an output that large has
/// a buffer of its own rather than a place in the arena.
#[test]
fn recycled_outputs_become_the_next_runs_buffers() {
    let m = model(
        graph(
            "static",
            vec![node("Add", "add", &["x", "x"], &["y"])],
            vec![vi("x", F32, Some(&[128, 128]))],
            vec![vi("y", F32, Some(&[128, 128]))],
            vec![],
        ),
        17,
    );
    let mut s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    s.add_graph(0, to_graph(&m)).unwrap();
    let model = s.build_graph(0).unwrap();
    let first = model
        .run(&[tensor(&[128, 128], vec![3.0; 128 * 128])])
        .unwrap();
    let hits = model.program().allocator.stats().0;
    model.recycle(first);
    let x: Vec<f32> = (0..128 * 128).map(|i| (i % 97) as f32 - 48.0).collect();
    let out = model.run(&[tensor(&[128, 128], x.clone())]).unwrap();
    assert_eq!(model.program().allocator.stats().0, hits + 1);
    let want: Vec<f32> = x.iter().map(|v| 2.0 * v).collect();
    assert_eq!(
        out[0].as_tensor().unwrap().as_slice::<f32>().unwrap(),
        &want[..]
    );
}

#[test]
fn scan8_with_sequence_lens_and_reverse_direction() {
    // Scan-8: batch axis first; batch item 1 scans 2 of 3 steps, reversed; its third scan
    // output row is zeros.
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
    let mut n = node("Scan", "scan", &["lens", "s0", "xs"], &["s_final", "ys"]);
    n.attribute = vec![
        attr_graph("body", body),
        attr_int("num_scan_inputs", 1),
        attr_ints("directions", &[1]),
    ];
    let m = model(
        graph(
            "scan8",
            vec![n],
            vec![
                vi("lens", I64, Some(&[2])),
                vi("s0", F32, Some(&[2, 2])),
                vi("xs", F32, Some(&[2, 3, 2])),
            ],
            vec![
                vi("s_final", F32, Some(&[2, 2])),
                vi("ys", F32, Some(&[2, 3, 2])),
            ],
            vec![],
        ),
        8,
    );
    let lens = Value::Tensor(Tensor::from_slice(&[2], &[3i64, 2]).unwrap());
    let s0 = tensor(&[2, 2], vec![0.0, 0.0, 100.0, 100.0]);
    let xs = tensor(
        &[2, 3, 2],
        vec![
            1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0,
        ],
    );
    let outs = run_all(&m, &[lens, s0.clone(), xs.clone()]);
    assert_eq!(floats(&outs[0]), vec![9.0, 12.0, 140.0, 160.0]);
    let ys = outs[1].as_tensor().unwrap();
    assert_eq!(ys.shape(), &[2, 3, 2]);
    assert_eq!(
        ys.as_slice::<f32>().unwrap(),
        &[5.0, 6.0, 8.0, 10.0, 9.0, 12.0, 130.0, 140.0, 140.0, 160.0, 0.0, 0.0]
    );
    // A length past the sequence is an error naming it.
    let bad = Value::Tensor(Tensor::from_slice(&[2], &[4i64, 2]).unwrap());
    let mut s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    s.add_graph(0, to_graph(&m)).unwrap();
    let model = s.build_graph(0).unwrap();
    let err = model.run(&[bad, s0, xs]).unwrap_err().to_string();
    assert!(err.contains("sequence length 4"), "{err}");
}

// ---- GE's functional ops, graphs built with the rge-ir API ----

/// Builds `g` in a session and runs it on every executor (the same outputs each time), and
/// through a saved and reloaded model.
fn run_ge(g: ComputeGraph, inputs: &[Value]) -> Vec<Value> {
    let mut s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    s.add_graph(0, g).unwrap();
    let model = s.build_graph(0).unwrap();
    let first = model.run(inputs).unwrap();
    for kind in ExecutorKind::ALL {
        assert_eq!(model.run_with(inputs, kind, None).unwrap(), first, "{kind}");
    }
    first
}

#[test]
fn ge_while_and_its_aliases_loop_until_cond_is_false() {
    for op_type in ["While", "_While", "StatelessWhile"] {
        let x = tensor(&[2], vec![1.0, 2.0]);
        let outs = run_ge(ge_while(op_type), &[tensor(&[], vec![0.0]), x.clone()]);
        assert_eq!(floats(&outs[0]), vec![3.0], "{op_type}");
        assert_eq!(floats(&outs[1]), vec![8.0, 16.0], "{op_type}");
        // The condition false at once: the inputs come back.
        let outs = run_ge(ge_while(op_type), &[tensor(&[], vec![5.0]), x]);
        assert_eq!(floats(&outs[0]), vec![5.0], "{op_type}");
        assert_eq!(floats(&outs[1]), vec![1.0, 2.0], "{op_type}");
    }
}

#[test]
fn ge_while_survives_a_saved_model() {
    let s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    let built = s.compile_graph(ge_while("While")).unwrap();
    let inputs = [tensor(&[], vec![1.0]), tensor(&[2], vec![0.5, -1.0])];
    let want = built.run(&inputs).unwrap();
    assert_eq!(floats(&want[1]), vec![2.0, -4.0]);
    let path = std::env::temp_dir().join(format!("rge-while-{}.om", std::process::id()));
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
fn ge_case_runs_the_selected_branch() {
    let x = tensor(&[2], vec![-1.0, 3.0]);
    for (k, want) in [
        (0i32, vec![0.0, 3.0]),
        (1, vec![-2.0, 6.0]),
        (2, vec![1.0, 9.0]),
    ] {
        let idx = Value::Tensor(Tensor::scalar(k));
        let outs = run_ge(ge_case(desc(DataType::Int32, &[])), &[idx, x.clone()]);
        assert_eq!(floats(&outs[0]), want, "branch {k}");
    }
    // Without a branch count from the frontend, an index past the branches is an error.
    let mut s = Session::new(SessionOptions::with_kernels(kernels())).unwrap();
    s.add_graph(0, ge_case(desc(DataType::Int32, &[]))).unwrap();
    let model = s.build_graph(0).unwrap();
    let err = model
        .run(&[Value::Tensor(Tensor::scalar(-1i32)), x])
        .unwrap_err()
        .to_string();
    assert!(err.contains("branch_index -1"), "{err}");
}

#[test]
fn ge_partitioned_call_runs_f_with_a_while_inside() {
    // PartitionedCall(x, y) = (x + y, x - y), then a While on the sum inside another call.
    let mut b = Ge::new("call_graph");
    let root = b.root();
    let v = f32d(&[2]);
    let x = b.data(root, "x", 0, None, v.clone());
    let y = b.data(root, "y", 1, None, v.clone());
    let call = b.op(
        root,
        "call",
        "PartitionedCall",
        &[(x, 0), (y, 0)],
        &[v.clone(), v.clone()],
    );
    b.output(root, &[(call, 0), (call, 1)]);
    let f = b.sub(call, 0, "call_f");
    let fx = b.data(f, "f_x", 0, Some(0), v.clone());
    let fy = b.data(f, "f_y", 1, Some(1), v.clone());
    let add = b.op(
        f,
        "f_add",
        "Add",
        &[(fx, 0), (fy, 0)],
        std::slice::from_ref(&v),
    );
    let sub = b.op(
        f,
        "f_sub",
        "Sub",
        &[(fx, 0), (fy, 0)],
        std::slice::from_ref(&v),
    );
    b.output(f, &[(add, 0), (sub, 0)]);
    let outs = run_ge(
        b.0,
        &[tensor(&[2], vec![1.0, 2.0]), tensor(&[2], vec![0.5, 4.0])],
    );
    assert_eq!(floats(&outs[0]), vec![1.5, 6.0]);
    assert_eq!(floats(&outs[1]), vec![0.5, -2.0]);

    // StatefulPartitionedCall whose `f` holds a While.
    let mut b = Ge::new("nested_graph");
    let root = b.root();
    let s = f32d(&[]);
    let i = b.data(root, "i", 0, None, s.clone());
    let x = b.data(root, "x", 1, None, v.clone());
    let call = b.op(
        root,
        "call",
        "StatefulPartitionedCall",
        &[(i, 0), (x, 0)],
        std::slice::from_ref(&v),
    );
    b.output(root, &[(call, 0)]);
    let f = b.sub(call, 0, "nested_f");
    let fi = b.data(f, "f_i", 0, Some(0), s.clone());
    let fx = b.data(f, "f_x", 1, Some(1), v.clone());
    let w = b.op(
        f,
        "f_loop",
        "While",
        &[(fi, 0), (fx, 0)],
        &[s.clone(), v.clone()],
    );
    b.output(f, &[(w, 1)]);
    b.counter_cond(w, "nested_cond", 2.0, &s, &v);
    let body = b.sub(w, 1, "nested_body");
    let bi = b.data(body, "b_i", 0, Some(0), s.clone());
    let bx = b.data(body, "b_x", 1, Some(1), v.clone());
    let one = b.konst(body, "b_one", rge_ir::Tensor::scalar_f32(1.0));
    let inc = b.op(body, "b_inc", "Add", &[(bi, 0), (one, 0)], &[s]);
    let sq = b.op(
        body,
        "b_sq",
        "Mul",
        &[(bx, 0), (bx, 0)],
        std::slice::from_ref(&v),
    );
    b.output(body, &[(inc, 0), (sq, 0)]);
    let outs = run_ge(
        b.0,
        &[tensor(&[], vec![0.0]), tensor(&[2], vec![2.0, -3.0])],
    );
    assert_eq!(floats(&outs[0]), vec![16.0, 81.0]);
}

/// GE's If over `x`: then Relu(x), else x + x; `cond` of `cond_desc`.
fn ge_if(op_type: &str, cond_desc: TensorDesc) -> ComputeGraph {
    let mut b = Ge::new("if_graph");
    let root = b.root();
    let v = f32d(&[2]);
    let c = b.data(root, "c", 0, None, cond_desc);
    let x = b.data(root, "x", 1, None, v.clone());
    let n = b.op(
        root,
        "if",
        op_type,
        &[(c, 0), (x, 0)],
        std::slice::from_ref(&v),
    );
    b.output(root, &[(n, 0)]);
    for (k, (name, ty, two)) in [("then", "Relu", false), ("else", "Add", true)]
        .into_iter()
        .enumerate()
    {
        let g = b.sub(n, k, &format!("if_{name}"));
        let d = b.data(g, &format!("{name}_x"), 0, Some(1), v.clone());
        let ins: &[(NodeId, usize)] = if two { &[(d, 0), (d, 0)] } else { &[(d, 0)] };
        let o = b.op(g, &format!("{name}_op"), ty, ins, std::slice::from_ref(&v));
        b.output(g, &[(o, 0)]);
    }
    b.0
}

#[test]
fn ge_if_and_its_aliases_pass_inputs_to_the_branches() {
    let x = tensor(&[2], vec![-1.0, 3.0]);
    let (then, els) = (vec![0.0, 3.0], vec![-2.0, 6.0]);
    let b = desc(DataType::Bool, &[]);
    for (c, want) in [(true, &then), (false, &els)] {
        let outs = run_ge(
            ge_if("If", b.clone()),
            &[Value::Tensor(Tensor::scalar(c)), x.clone()],
        );
        assert_eq!(&floats(&outs[0]), want, "If {c}");
    }
    // `_If` / StatelessIf take any cond: a scalar by value, a tensor by being non-empty.
    let ints = |dims: &[usize], v: &[i32]| Value::Tensor(Tensor::from_slice(dims, v).unwrap());
    for op_type in ["_If", "StatelessIf"] {
        for (dims, v, want) in [
            (vec![], vec![7], &then),
            (vec![], vec![0], &els),
            (vec![2], vec![0, 0], &then),
            (vec![0], vec![], &els),
        ] {
            let d: Vec<i64> = dims.iter().map(|&x| x as i64).collect();
            let g = ge_if(op_type, desc(DataType::Int32, &d));
            let outs = run_ge(g, &[ints(&dims, &v), x.clone()]);
            assert_eq!(&floats(&outs[0]), want, "{op_type} {dims:?} {v:?}");
        }
    }
}
