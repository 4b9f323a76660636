//! The fused engine end to end: a tree of f32 elementwise nodes on `vector` runs as one
//! FusedElementwise step and computes what the `cpu` engine computes (NaN and infinities
//! included); the near misses stay unfused and correct: an inner value with a reader outside
//! the tree, a broadcast the fused kernel does not take, a dtype it lacks.

#[path = "common/net.rs"]
mod net;

use net::{graph_of, vi};
use rge::engines::{engine_set, EngineArgs};
use rge_formats::onnx_proto::{
    GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto, ValueInfoProto,
};
use rge_kernels::{Tensor, Value};
use rge_runtime::{Session, SessionOptions};

const FLOAT: i32 = 1;
const DOUBLE: i32 = 11;

fn node(op: &str, name: &str, ins: &[&str], out: &str) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: name.into(),
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: vec![out.to_string()],
        ..Default::default()
    }
}

fn model(
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    inits: Vec<TensorProto>,
) -> ModelProto {
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            name: "g".into(),
            node: nodes,
            input: inputs,
            output: outputs,
            initializer: inits,
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Inputs of `shape` with NaN, ±inf and ±0 among ordinary values.
fn values(n: usize, seed: usize) -> Vec<f32> {
    (0..n)
        .map(|i| match (i * 7 + seed) % 53 {
            0 => f32::NAN,
            1 => f32::INFINITY,
            2 => f32::NEG_INFINITY,
            3 => -0.0,
            k => ((i * 37 + seed * 11) % 101) as f32 / 12.5 - 4.0 + k as f32 * 1e-3,
        })
        .collect()
}

/// Runs `m` with `args` on `inputs`; returns the outputs and each step's (node, engine).
fn run(m: &ModelProto, args: EngineArgs, inputs: &[Value]) -> (Vec<Tensor>, Vec<(String, String)>) {
    let set = engine_set(&args).unwrap();
    let s = Session::new(SessionOptions::with_engines(set)).unwrap();
    let model = s.compile_graph(graph_of(m)).unwrap();
    let placed = model
        .program()
        .steps
        .iter()
        .map(|st| (st.node.clone(), st.engine.to_string()))
        .collect();
    let out = model.run(inputs).unwrap();
    (
        out.iter().map(|v| v.as_tensor().unwrap().clone()).collect(),
        placed,
    )
}

/// The steps that compute (not graph I/O or constants).
fn compute_steps(placed: &[(String, String)]) -> Vec<(String, String)> {
    placed
        .iter()
        .filter(|(_, e)| e != "local" && e != "host")
        .cloned()
        .collect()
}

fn cpu() -> EngineArgs {
    EngineArgs {
        exclude_engines: Some("vector,fused".into()),
        ..EngineArgs::default()
    }
}

/// Same shapes; NaN where the reference has NaN, equal infinities, else within 1e-5 relative.
fn same(got: &[Tensor], want: &[Tensor]) {
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g.shape(), w.shape());
        let (g, w) = (g.as_slice::<f32>().unwrap(), w.as_slice::<f32>().unwrap());
        for (i, (a, b)) in g.iter().zip(w).enumerate() {
            let ok = if b.is_nan() {
                a.is_nan()
            } else if b.is_infinite() {
                a == b
            } else {
                (a - b).abs() <= 1e-5 * b.abs().max(1e-3)
            };
            assert!(ok, "element {i}: {a} vs {b}");
        }
    }
}

fn tensor(shape: &[usize], seed: usize) -> Value {
    let n = shape.iter().product();
    Value::from(Tensor::from_vec(shape, values(n, seed)).unwrap())
}

#[test]
fn an_elementwise_tree_runs_as_one_step_and_matches_cpu() {
    // z = (a·sigmoid(a) - tanh(x))·r with a = x + y, r a row broadcast over the last dim.
    let row: Vec<f32> = (0..300).map(|i| i as f32 / 150.0 - 1.0).collect();
    let m = model(
        vec![
            node("Add", "a", &["x", "y"], "a"),
            node("Sigmoid", "s", &["a"], "s"),
            node("Mul", "m", &["a", "s"], "m"),
            node("Tanh", "t", &["x"], "t"),
            node("Sub", "o", &["m", "t"], "o"),
            node("Mul", "z", &["o", "r"], "z"),
        ],
        vec![vi("x", FLOAT, &[4, 300]), vi("y", FLOAT, &[4, 300])],
        vec![vi("z", FLOAT, &[4, 300])],
        vec![TensorProto {
            name: "r".into(),
            dims: vec![300],
            data_type: FLOAT,
            float_data: row,
            ..Default::default()
        }],
    );
    let inputs = [tensor(&[4, 300], 1), tensor(&[4, 300], 2)];
    let (got, placed) = run(&m, EngineArgs::default(), &inputs);
    let steps = compute_steps(&placed);
    assert_eq!(
        steps,
        vec![("z".to_string(), "vector".to_string())],
        "{placed:?}"
    );
    let (want, placed_cpu) = run(&m, cpu(), &inputs);
    assert!(compute_steps(&placed_cpu).len() >= 5, "{placed_cpu:?}");
    same(&got, &want);
    // Another input set: the same values.
    let many = [tensor(&[4, 300], 3), tensor(&[4, 300], 4)];
    let (got, _) = run(&m, EngineArgs::default(), &many);
    let (want, _) = run(&m, cpu(), &many);
    same(&got, &want);
}

#[test]
fn an_inner_value_with_an_outside_reader_stays_materialized() {
    // `a` is a graph output and `e` is read by a ReduceSum: neither joins a tree below it.
    let m = model(
        vec![
            node("Add", "a", &["x", "y"], "a"),
            node("Exp", "e", &["a"], "e"),
            node("Neg", "n", &["e"], "n"),
            node("Mul", "o", &["n", "x"], "o"),
            node("ReduceSum", "rs", &["e"], "rs"),
        ],
        vec![vi("x", FLOAT, &[3, 64]), vi("y", FLOAT, &[3, 64])],
        vec![
            vi("o", FLOAT, &[3, 64]),
            vi("a", FLOAT, &[3, 64]),
            vi("rs", FLOAT, &[1, 1]),
        ],
        vec![],
    );
    let inputs = [tensor(&[3, 64], 5), tensor(&[3, 64], 6)];
    let (got, placed) = run(&m, EngineArgs::default(), &inputs);
    let steps = compute_steps(&placed);
    let names: Vec<&str> = steps.iter().map(|(n, _)| n.as_str()).collect();
    assert!(names.contains(&"a") && names.contains(&"e"), "{steps:?}");
    // `n` and `o` are one fused step, named after its root `o`.
    assert!(names.contains(&"o") && !names.contains(&"n"), "{steps:?}");
    assert_eq!(steps.len(), 4, "{steps:?}");
    let (want, _) = run(&m, cpu(), &inputs);
    same(&got, &want);
}

#[test]
fn a_broadcast_the_kernel_does_not_take_stays_unfused() {
    // A per-channel [1, C, 1, 1] operand: not the output's shape, one value or trailing dims.
    let m = model(
        vec![
            node("Mul", "mul", &["x", "c"], "m"),
            node("Relu", "relu", &["m"], "y"),
        ],
        vec![vi("x", FLOAT, &[2, 3, 4, 4])],
        vec![vi("y", FLOAT, &[2, 3, 4, 4])],
        vec![TensorProto {
            name: "c".into(),
            dims: vec![1, 3, 1, 1],
            data_type: FLOAT,
            float_data: vec![0.5, -2.0, 3.0],
            ..Default::default()
        }],
    );
    let inputs = [tensor(&[2, 3, 4, 4], 7)];
    let (got, placed) = run(&m, EngineArgs::default(), &inputs);
    let steps = compute_steps(&placed);
    assert_eq!(
        steps,
        vec![
            ("mul".to_string(), "vector".to_string()),
            ("relu".to_string(), "vector".to_string())
        ],
        "{placed:?}"
    );
    let (want, _) = run(&m, cpu(), &inputs);
    same(&got, &want);
}

#[test]
fn a_dtype_the_kernel_lacks_stays_unfused() {
    let m = model(
        vec![
            node("Add", "a", &["x", "x"], "a"),
            node("Sigmoid", "s", &["a"], "y"),
        ],
        vec![vi("x", DOUBLE, &[8])],
        vec![vi("y", DOUBLE, &[8])],
        vec![],
    );
    let x: Vec<f64> = (0..8).map(|i| i as f64 - 4.0).collect();
    let inputs = [Value::from(Tensor::from_vec(&[8], x.clone()).unwrap())];
    let (got, placed) = run(&m, EngineArgs::default(), &inputs);
    let steps = compute_steps(&placed);
    assert_eq!(steps.len(), 2, "{placed:?}");
    assert!(
        steps
            .iter()
            .all(|(n, e)| (n == "a" || n == "s") && e == "cpu"),
        "{steps:?}"
    );
    let y = got[0].as_slice::<f64>().unwrap();
    for (v, x) in y.iter().zip(&x) {
        assert!((v - 1.0 / (1.0 + (-2.0 * x).exp())).abs() < 1e-12);
    }
}

#[test]
fn thousands_of_regions_fuse_in_batches_and_match_cpu() {
    // x_{k+1} = sigmoid(x_k + y), every x_k a graph output: one region per block, 2500 of
    // them, more than one batch of patches, each region's input the root of the next one
    // found (the patches are built in reverse order).
    const BLOCKS: usize = 2500;
    let mut nodes = Vec::new();
    let mut outputs = Vec::new();
    for k in 0..BLOCKS {
        let x = if k == 0 {
            "x".to_string()
        } else {
            format!("x{k}")
        };
        nodes.push(node("Add", &format!("a{k}"), &[&x, "y"], &format!("a{k}")));
        let next = format!("x{}", k + 1);
        nodes.push(node("Sigmoid", &next, &[&format!("a{k}")], &next));
        outputs.push(vi(&next, FLOAT, &[1, 16]));
    }
    let m = model(
        nodes,
        vec![vi("x", FLOAT, &[1, 16]), vi("y", FLOAT, &[1, 16])],
        outputs,
        vec![],
    );
    let inputs = [tensor(&[1, 16], 5), tensor(&[1, 16], 6)];
    let (got, placed) = run(&m, EngineArgs::default(), &inputs);
    let steps = compute_steps(&placed);
    assert_eq!(steps.len(), BLOCKS, "one fused step per block");
    assert!(steps.iter().all(|(_, e)| e == "vector"), "{steps:?}");
    let (want, _) = run(&m, cpu(), &inputs);
    same(&got, &want);
}

#[test]
fn trailing_rows_of_any_length_match_cpu() {
    // y = relu(x·s + t) with s, t rows over the last dim (a BatchNormalization on channels-last
    // data): rows far shorter than the kernel's tile (read many times per tile), one that
    // divides it, and one longer than it.
    for c in [7usize, 256, 1500] {
        let row = |k: usize| TensorProto {
            name: format!("r{k}"),
            dims: vec![c as i64],
            data_type: FLOAT,
            float_data: (0..c)
                .map(|i| ((i * (k + 3)) % 17) as f32 / 8.0 - 1.0)
                .collect(),
            ..Default::default()
        };
        let dims = [3, 5, c as i64];
        let m = model(
            vec![
                node("Mul", "m", &["x", "r0"], "m"),
                node("Add", "a", &["m", "r1"], "a"),
                node("Relu", "y", &["a"], "y"),
            ],
            vec![vi("x", FLOAT, &dims)],
            vec![vi("y", FLOAT, &dims)],
            vec![row(0), row(1)],
        );
        let inputs = [tensor(&[3, 5, c], 5)];
        let (got, placed) = run(&m, EngineArgs::default(), &inputs);
        assert_eq!(compute_steps(&placed).len(), 1, "{c}: {placed:?}");
        let (want, _) = run(&m, cpu(), &inputs);
        same(&got, &want);
    }
}
