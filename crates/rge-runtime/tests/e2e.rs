//! End to end: ONNX models built here and fixtures, compiled, lowered, planned and run with every
//! executor; concurrent runs; bad input.

mod common;

use std::sync::Arc;

use common::*;
use rge_kernels::{Tensor, Value};
use rge_runtime::{ExecutorKind, Model, RuntimeError, Session, SessionOptions};

fn mlp() -> rge_formats::onnx_proto::ModelProto {
    let w1: Vec<f32> = (0..8 * 16).map(|i| ((i % 7) as f32 - 3.0) * 0.1).collect();
    let b1: Vec<f32> = (0..4 * 16).map(|i| (i % 5) as f32 * 0.05 - 0.1).collect();
    let w2: Vec<f32> = (0..8 * 4).map(|i| ((i % 3) as f32 - 1.0) * 0.2).collect();
    model(
        graph(
            "mlp",
            vec![
                node("MatMul", "mm1", &["x", "w1"], &["m1"]),
                node("Add", "add1", &["m1", "b1"], &["a1"]),
                node("Relu", "relu1", &["a1"], &["h"]),
                node("Reshape", "reshape", &["h", "shape"], &["r"]),
                node("Mul", "mul", &["r", "s"], &["mr"]),
                node("Relu", "relu2", &["mr"], &["g"]),
                node("Sub", "sub", &["r", "s"], &["k"]),
                node("Add", "add2", &["g", "k"], &["out"]),
                node("MatMul", "mm2", &["x", "w2"], &["o2"]),
            ],
            vec![vi("x", F32, Some(&[4, 8]))],
            vec![vi("out", F32, Some(&[8, 8])), vi("o2", F32, Some(&[4, 4]))],
            vec![
                f32_tensor("w1", &[8, 16], &w1),
                f32_tensor("b1", &[4, 16], &b1),
                f32_tensor("w2", &[8, 4], &w2),
                f32_tensor("s", &[1], &[-0.5]),
                i64_tensor("shape", &[2], &[8, 8]),
            ],
        ),
        17,
    )
}

fn mlp_reference(x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let w1: Vec<f32> = (0..8 * 16).map(|i| ((i % 7) as f32 - 3.0) * 0.1).collect();
    let b1: Vec<f32> = (0..4 * 16).map(|i| (i % 5) as f32 * 0.05 - 0.1).collect();
    let w2: Vec<f32> = (0..8 * 4).map(|i| ((i % 3) as f32 - 1.0) * 0.2).collect();
    let mut h = vec![0f32; 64];
    for i in 0..4 {
        for j in 0..16 {
            let m: f32 = (0..8).map(|p| x[i * 8 + p] * w1[p * 16 + j]).sum();
            h[i * 16 + j] = (m + b1[i * 16 + j]).max(0.0);
        }
    }
    let out: Vec<f32> = h
        .iter()
        .map(|&r| (r * -0.5).max(0.0) + (r - -0.5))
        .collect();
    let mut o2 = vec![0f32; 16];
    for i in 0..4 {
        for j in 0..4 {
            o2[i * 4 + j] = (0..8).map(|p| x[i * 8 + p] * w2[p * 4 + j]).sum();
        }
    }
    (out, o2)
}

fn session(executor: ExecutorKind) -> Session {
    Session::new(SessionOptions {
        executor,
        threads: 4,
        ..SessionOptions::with_kernels(kernels())
    })
    .unwrap()
}

fn build(m: &rge_formats::onnx_proto::ModelProto) -> Arc<Model> {
    let mut s = session(ExecutorKind::Sequential);
    s.add_graph(1, to_graph(m)).unwrap();
    s.build_graph(1).unwrap()
}

fn input_x(seed: usize) -> Vec<f32> {
    (0..32)
        .map(|i| ((i * 7 + seed * 13) % 11) as f32 * 0.25 - 1.0)
        .collect()
}

#[test]
fn mlp_every_executor_matches_the_reference() {
    let model = build(&mlp());
    let plan = model.plan().clone();
    assert!(plan.views >= 1, "Reshape is a view: {plan:?}");
    assert!(plan.in_place >= 1, "Relu writes over its input: {plan:?}");
    assert!(plan.arena_bytes >= plan.lower_bound && plan.arena_bytes <= plan.total_bytes);
    let x = input_x(1);
    let (want_out, want_o2) = mlp_reference(&x);
    for kind in ExecutorKind::ALL {
        let outs = model
            .run_with(&[tensor(&[4, 8], x.clone())], kind, None)
            .unwrap();
        assert_eq!(outs.len(), 2);
        assert_eq!(floats(&outs[0]), want_out, "{kind}");
        assert_eq!(floats(&outs[1]), want_o2, "{kind}");
        assert_eq!(outs[0].as_tensor().unwrap().shape(), &[8, 8]);
    }
}

#[test]
fn eight_threads_two_hundred_runs_each() {
    let model = build(&mlp());
    std::thread::scope(|sc| {
        for t in 0..8 {
            let model = &model;
            sc.spawn(move || {
                let kind = ExecutorKind::ALL[t % ExecutorKind::ALL.len()];
                for r in 0..200 {
                    let x = input_x(t * 1000 + r);
                    let (want, want2) = mlp_reference(&x);
                    let outs = model.run_with(&[tensor(&[4, 8], x)], kind, None).unwrap();
                    assert_eq!(floats(&outs[0]), want);
                    assert_eq!(floats(&outs[1]), want2);
                }
            });
        }
    });
}

#[test]
fn a_session_with_the_caller_in_its_pool_runs_from_any_thread() {
    // A fresh thread: the caller becomes worker 0 of the first session's pool, for good.
    std::thread::spawn(|| {
        let opts = |threads| SessionOptions {
            threads,
            kernel_threads: threads,
            caller_in_pool: true,
            ..SessionOptions::with_kernels(kernels())
        };
        let build = |s: &mut Session| {
            s.add_graph(1, to_graph(&mlp())).unwrap();
            s.build_graph(1).unwrap()
        };
        let x = input_x(3);
        let (want, want2) = mlp_reference(&x);
        let check = |m: &Model, kind: ExecutorKind| {
            let outs = m
                .run_with(&[tensor(&[4, 8], x.clone())], kind, None)
                .unwrap();
            assert_eq!(floats(&outs[0]), want, "{kind}");
            assert_eq!(floats(&outs[1]), want2, "{kind}");
        };
        {
            let mut s = Session::new(opts(2)).unwrap();
            assert_eq!(rayon::current_thread_index(), Some(0), "the caller joined");
            let model = build(&mut s);
            for kind in ExecutorKind::ALL {
                check(&model, kind);
            }
        }
        // The first session is gone; its pool is not (the thread is still its worker 0): a
        // later session shares it, and one of another thread count gets threads of its own.
        let mut s2 = Session::new(opts(2)).unwrap();
        let model2 = build(&mut s2);
        let mut s3 = Session::new(opts(3)).unwrap();
        let model3 = build(&mut s3);
        for kind in ExecutorKind::ALL {
            check(&model2, kind);
            check(&model3, kind);
        }
        // From a thread of no pool: the run is handed to the pool's other worker.
        std::thread::scope(|sc| {
            sc.spawn(|| {
                for kind in ExecutorKind::ALL {
                    check(&model2, kind);
                }
            });
        });
    })
    .join()
    .unwrap();
}

#[test]
fn add_chain_plans_two_buffers_and_runs() {
    let model = build(&add_chain(1000));
    let plan = model.plan();
    assert_eq!(plan.arena_bytes, plan.lower_bound, "{plan:?}");
    for kind in ExecutorKind::ALL {
        let outs = model
            .run_with(&[tensor(&[1], vec![0.5])], kind, None)
            .unwrap();
        assert_eq!(floats(&outs[0]), vec![1000.5], "{kind}");
    }
}

#[test]
fn large_outputs_are_written_in_their_own_buffers_and_moved_out() {
    // h (128 KiB) is a graph output and Mul's input: it leaves the arena. r is a view
    // (Reshape) of n, so n stays planned and r is copied out.
    let m = model(
        graph(
            "large_outputs",
            vec![
                node("Relu", "relu", &["x"], &["h"]),
                node("Mul", "neg", &["h", "minus_one"], &["n"]),
                node("Reshape", "reshape", &["n", "shape"], &["r"]),
            ],
            vec![vi("x", F32, Some(&[128, 256]))],
            vec![
                vi("h", F32, Some(&[128, 256])),
                vi("r", F32, Some(&[256, 128])),
            ],
            vec![
                i64_tensor("shape", &[2], &[256, 128]),
                f32_tensor("minus_one", &[1], &[-1.0]),
            ],
        ),
        17,
    );
    let model = build(&m);
    let plan = model.plan().clone();
    let bytes = 128 * 256 * 4;
    assert!(
        plan.arena_bytes >= bytes && plan.arena_bytes < 2 * bytes,
        "n alone is planned: {plan:?}"
    );
    for kind in ExecutorKind::ALL {
        for run in 0..3 {
            let x: Vec<f32> = (0..128 * 256)
                .map(|i| ((i * 7 + run) % 13) as f32 - 6.0)
                .collect();
            let outs = model
                .run_with(&[tensor(&[128, 256], x.clone())], kind, None)
                .unwrap();
            let relu: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
            assert_eq!(floats(&outs[0]), relu, "{kind}");
            assert_eq!(outs[1].as_tensor().unwrap().shape(), &[256, 128]);
            let neg: Vec<f32> = relu.iter().map(|v| -v).collect();
            assert_eq!(floats(&outs[1]), neg, "{kind}");
        }
    }
}

#[test]
fn fixture_clip() {
    let mut s = session(ExecutorKind::Sequential);
    let g = rge_formats::onnx::import_file(fixture("onnx_clip_v9.onnx"))
        .unwrap()
        .graph;
    s.add_graph(0, g).unwrap();
    let m = s.build_graph(0).unwrap();
    let x: Vec<f32> = (0..60).map(|i| i as f32 - 30.0).collect();
    let outs = m.run(&[tensor(&[3, 4, 5], x.clone())]).unwrap();
    let got = floats(&outs[0]);
    assert_eq!(got.len(), 60);
    // The same clamp on every element; the fixture's bounds are whatever it says.
    let (lo, hi) = (got[0], got[59]);
    for (g, v) in got.iter().zip(&x) {
        assert_eq!(*g, v.clamp(lo, hi));
    }
}

#[test]
fn fixture_if() {
    let mut s = session(ExecutorKind::Sequential);
    let mut g = rge_formats::onnx::import_file(fixture("onnx_if.onnx"))
        .unwrap()
        .graph;
    // The fixture's `cond` is a float, which ONNX's If forbids (GE's parser tolerates it):
    // retype it as bool.
    let c = g.find_node(g.root(), "cond").unwrap();
    let op = g.op_mut(c).unwrap();
    if let Some(d) = op.input_mut(0) {
        d.set_dtype(rge_ir::DataType::Bool);
    }
    if let Some(d) = op.output_mut(0) {
        d.set_dtype(rge_ir::DataType::Bool);
    }
    s.add_graph(0, g).unwrap();
    let m = s.build_graph(0).unwrap();
    let specs: Vec<String> = m
        .inputs()
        .iter()
        .map(|s| format!("{}:{:?}{:?}", s.name, s.dtype, s.dims))
        .collect();
    let inputs: Vec<Value> = m
        .inputs()
        .iter()
        .map(|s| {
            let dims: Vec<usize> = s
                .dims
                .clone()
                .unwrap_or_default()
                .iter()
                .map(|&d| d.max(1) as usize)
                .collect();
            let n: usize = dims.iter().product();
            if s.dtype == Some(rge_kernels::DType::Bool) {
                Value::Tensor(Tensor::from_vec(&dims, vec![true; n]).unwrap())
            } else {
                Value::Tensor(Tensor::from_vec(&dims, vec![1.0f32; n]).unwrap())
            }
        })
        .collect();
    let a = m.run(&inputs).unwrap();
    for kind in ExecutorKind::ALL {
        assert_eq!(
            m.run_with(&inputs, kind, None).unwrap(),
            a,
            "{kind} {specs:?}"
        );
    }
}

#[test]
fn bad_inputs_are_clear_errors_and_the_session_stays_usable() {
    let mut s = session(ExecutorKind::Sequential);
    s.add_graph(1, to_graph(&mlp())).unwrap();
    let m = s.build_graph(1).unwrap();
    let e = m.run(&[]).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::Input { name, .. } if name == "x"),
        "{e}"
    );
    let e = m
        .run(&[Value::Tensor(
            Tensor::from_vec(&[4, 8], vec![1i64; 32]).unwrap(),
        )])
        .unwrap_err();
    assert!(e.to_string().contains("dtype"), "{e}");
    let e = m.run(&[tensor(&[8, 4], vec![0.0; 32])]).unwrap_err();
    assert!(e.to_string().contains("shape"), "{e}");
    let e = m
        .run_named(&[("y".into(), tensor(&[4, 8], vec![0.0; 32]))])
        .unwrap_err();
    assert!(e.to_string().contains("no such input"), "{e}");
    // Still fine.
    let x = input_x(3);
    let outs = s.run_graph(1, &[tensor(&[4, 8], x.clone())]).unwrap();
    assert_eq!(floats(&outs[0]), mlp_reference(&x).0);

    // A memory limit below the plan.
    let mut small = Session::new(SessionOptions {
        memory_limit: Some(200),
        ..SessionOptions::with_kernels(kernels())
    })
    .unwrap();
    small.add_graph(7, to_graph(&mlp())).unwrap();
    let e = small.build_graph(7).unwrap_err();
    assert!(e.to_string().contains("memory_limit"), "{e}");
    small.add_graph(8, to_graph(&add_chain(3))).unwrap();
    small.build_graph(8).unwrap();
    small.remove_graph(7).unwrap();
    assert!(matches!(
        small.build_graph(7),
        Err(RuntimeError::UnknownGraph(7))
    ));

    // An op without a kernel names the node.
    let mut m2 = add_chain(2);
    m2.graph.as_mut().unwrap().node[1].op_type = "Tanh".into();
    s.add_graph(2, to_graph(&m2)).unwrap();
    let e = s.build_graph(2).unwrap_err();
    assert!(
        e.to_string().contains("add1") || e.to_string().contains("Tanh"),
        "{e}"
    );
}

#[test]
fn stream_labels_make_streams_and_the_stream_executor_agrees() {
    let mut g = to_graph(&mlp());
    for name in ["mm2", "sub"] {
        let n = g.find_node(g.root(), name).unwrap();
        g.op_mut(n)
            .unwrap()
            .attrs_mut()
            .set(rge_ir::attr_names::STREAM_LABEL, "side");
    }
    let mut s = session(ExecutorKind::Stream);
    s.add_graph(1, g).unwrap();
    let m = s.build_graph(1).unwrap();
    assert!(
        m.program().stream_count() > 1,
        "streams: {}",
        m.stream_count
    );
    for seed in 0..20 {
        let x = input_x(seed);
        let (want, want2) = mlp_reference(&x);
        let outs = m.run(&[tensor(&[4, 8], x)]).unwrap();
        assert_eq!(floats(&outs[0]), want);
        assert_eq!(floats(&outs[1]), want2);
    }
}

#[test]
fn models_and_sessions_cross_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Model>();
    send_sync::<rge_runtime::Program>();
    fn send<T: Send>() {}
    send::<Session>();
}

#[test]
fn a_large_output_listed_twice_is_moved_once_and_cloned() {
    let m = model(
        graph(
            "dup",
            vec![node("Relu", "relu", &["x"], &["h"])],
            vec![vi("x", F32, Some(&[128, 256]))],
            vec![
                vi("h", F32, Some(&[128, 256])),
                vi("h", F32, Some(&[128, 256])),
            ],
            vec![],
        ),
        17,
    );
    let model = build(&m);
    let x: Vec<f32> = (0..128 * 256).map(|i| (i % 13) as f32 - 6.0).collect();
    let outs = model
        .run_with(
            &[tensor(&[128, 256], x.clone())],
            ExecutorKind::Sequential,
            None,
        )
        .unwrap();
    assert_eq!(outs.len(), 2);
    assert_eq!(model.plan().arena_bytes, 0, "h has its own buffer");
    let relu: Vec<f32> = x.iter().map(|v| v.max(0.0)).collect();
    assert_eq!(floats(&outs[0]), relu);
    assert_eq!(floats(&outs[1]), relu);
}

/// A graph output list of hundreds of values, each from its own step, with several of them
/// listed more than once: the NetOutput's dependencies past a few dozen are kept in a set
/// (they were a quadratic scan), in order and each once, and every executor returns each value.
#[test]
fn a_netoutput_reading_hundreds_of_values_runs() {
    let n = 300;
    let mut nodes = Vec::new();
    let mut outs = Vec::new();
    for i in 0..n {
        nodes.push(node(
            "Add",
            &format!("add{i}"),
            &["x", &format!("c{}", i % 7)],
            &[&format!("y{i}")],
        ));
        outs.push(vi(&format!("y{i}"), F32, Some(&[1])));
    }
    // The same values again: a NetOutput input may repeat a producer.
    for i in 0..40 {
        outs.push(vi(&format!("y{i}"), F32, Some(&[1])));
    }
    let consts = (0..7)
        .map(|k| f32_tensor(&format!("c{k}"), &[1], &[k as f32]))
        .collect();
    let m = model(
        graph("wide", nodes, vec![vi("x", F32, Some(&[1]))], outs, consts),
        17,
    );
    let want: Vec<f32> = (0..n).chain(0..40).map(|i| 2.0 + (i % 7) as f32).collect();
    for kind in ExecutorKind::ALL {
        let built = session(kind).compile_graph(to_graph(&m)).unwrap();
        let got = built.run(&[tensor(&[1], vec![2.0])]).unwrap();
        let got: Vec<f32> = got.iter().flat_map(floats).collect();
        assert_eq!(got, want, "{kind}");
    }
}
