//! The rng engine end to end: the random ops and training-mode Dropout are placed on `rng`
//! (on `cpu` when rng is excluded); seeded outputs are the same on every executor, thread
//! count, run and session; unseeded ones differ per run; a non-integer seed is an error
//! naming the node.

use prost::Message;
use rge::engines::{engine_set, EngineArgs};
use rge_formats::onnx_proto::{
    attribute_proto::AttributeType, tensor_shape_proto, type_proto, AttributeProto, GraphProto,
    ModelProto, NodeProto, OperatorSetIdProto, TensorShapeProto, TypeProto, ValueInfoProto,
};
use rge_kernels::{Tensor, Value};
use rge_runtime::{ExecutorKind, Model, Session, SessionOptions};

fn vi(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: elem,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| tensor_shape_proto::Dimension {
                            value: Some(tensor_shape_proto::dimension::Value::DimValue(d)),
                            ..Default::default()
                        })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn attr_f(name: &str, v: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Float as i32,
        f: v,
        ..Default::default()
    }
}

fn attr_i(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Int as i32,
        i: v,
        ..Default::default()
    }
}

fn attr_ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn node(
    op: &str,
    name: &str,
    ins: &[&str],
    outs: &[&str],
    attrs: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: name.into(),
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: outs.iter().map(|s| s.to_string()).collect(),
        attribute: attrs,
        ..Default::default()
    }
}

const N: i64 = 70_000;

/// x [N] f32, p [N] f32, r [] f32, t [] bool → u (seeded RandomUniformLike), z (unseeded
/// RandomNormal), b (seeded Bernoulli), d and m (seeded training Dropout), k (Multinomial).
fn model(uniform_seed: f32) -> rge_ir::ComputeGraph {
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            name: "g".into(),
            node: vec![
                node(
                    "RandomUniformLike",
                    "uniform",
                    &["x"],
                    &["u"],
                    vec![attr_f("seed", uniform_seed)],
                ),
                node(
                    "RandomNormal",
                    "normal",
                    &[],
                    &["z"],
                    vec![attr_ints("shape", &[N])],
                ),
                node(
                    "Bernoulli",
                    "bern",
                    &["p"],
                    &["b"],
                    vec![attr_f("seed", 3.0)],
                ),
                node(
                    "Dropout",
                    "drop",
                    &["x", "r", "t"],
                    &["d", "m"],
                    vec![attr_i("seed", 1)],
                ),
                node("Unsqueeze", "unsq", &["p", "ax"], &["p2"], vec![]),
                node(
                    "Multinomial",
                    "multi",
                    &["p2"],
                    &["k"],
                    vec![attr_f("seed", 9.0), attr_i("sample_size", 500)],
                ),
            ],
            initializer: vec![rge_formats::onnx_proto::TensorProto {
                name: "ax".into(),
                dims: vec![1],
                data_type: 7,
                int64_data: vec![0],
                ..Default::default()
            }],
            input: vec![
                vi("x", 1, &[N]),
                vi("p", 1, &[N]),
                vi("r", 1, &[]),
                vi("t", 9, &[]),
            ],
            output: vec![
                vi("u", 1, &[N]),
                vi("z", 1, &[N]),
                vi("b", 1, &[N]),
                vi("d", 1, &[N]),
                vi("m", 9, &[N]),
                vi("k", 6, &[1, 500]),
            ],
            ..Default::default()
        }),
        ..Default::default()
    };
    rge_formats::onnx::import_bytes(bytes::Bytes::from(m.encode_to_vec()), "rng.onnx")
        .unwrap()
        .graph
}

fn inputs() -> Vec<Value> {
    let n = N as usize;
    let x: Vec<f32> = (0..n).map(|i| 1.0 + (i % 13) as f32).collect();
    let p: Vec<f32> = (0..n).map(|i| (i % 11) as f32 / 10.0).collect();
    vec![
        Value::from(Tensor::from_vec(&[n], x).unwrap()),
        Value::from(Tensor::from_vec(&[n], p).unwrap()),
        Value::from(Tensor::from_vec(&[], vec![0.4f32]).unwrap()),
        Value::from(Tensor::from_vec(&[], vec![true]).unwrap()),
    ]
}

fn session(exclude: Option<&str>, threads: usize, executor: ExecutorKind) -> Session {
    let set = engine_set(&EngineArgs {
        exclude_engines: exclude.map(str::to_string),
        ..EngineArgs::default()
    })
    .unwrap();
    Session::new(SessionOptions {
        threads,
        kernel_threads: threads,
        executor,
        ..SessionOptions::with_engines(set)
    })
    .unwrap()
}

fn engine_of(m: &Model, name: &str) -> String {
    let g = m.graph();
    g.nodes_of(g.root())
        .find(|&n| g.name_of(n) == name)
        .and_then(|n| g.op(n))
        .map(|op| op.engine_name().to_string())
        .unwrap_or_default()
}

fn bytes_of(v: &Value) -> Vec<u8> {
    v.as_tensor().unwrap().view().bytes().unwrap().to_vec()
}

const RANDOM_NODES: [&str; 5] = ["uniform", "normal", "bern", "drop", "multi"];

#[test]
fn random_ops_are_placed_on_rng_and_fall_to_cpu_without_it() {
    let m = session(None, 1, ExecutorKind::Sequential)
        .compile_graph(model(5.0))
        .unwrap();
    for n in RANDOM_NODES {
        assert_eq!(engine_of(&m, n), "rng", "{n}");
    }
    let m = session(Some("rng"), 1, ExecutorKind::Sequential)
        .compile_graph(model(5.0))
        .unwrap();
    for n in RANDOM_NODES {
        assert_eq!(engine_of(&m, n), "cpu", "{n} without rng");
    }
    // Both engine sets give outputs of the same dtypes and shapes.
    let out = m.run(&inputs()).unwrap();
    assert_eq!(out.len(), 6);
}

#[test]
fn seeded_outputs_are_the_same_everywhere_and_unseeded_differ_per_run() {
    let ins = inputs();
    let base = session(None, 1, ExecutorKind::Sequential)
        .compile_graph(model(5.0))
        .unwrap();
    let first = base.run(&ins).unwrap();
    let second = base.run(&ins).unwrap();
    // z (unseeded) differs between two runs of one model; the seeded outputs do not.
    assert_ne!(bytes_of(&first[1]), bytes_of(&second[1]));
    let seeded = [0usize, 2, 3, 4, 5];
    for &i in &seeded {
        assert_eq!(bytes_of(&first[i]), bytes_of(&second[i]), "output {i}");
    }
    for executor in ExecutorKind::ALL {
        for threads in [1, 3] {
            let m = session(None, threads, executor)
                .compile_graph(model(5.0))
                .unwrap();
            let out = m.run(&ins).unwrap();
            for &i in &seeded {
                assert_eq!(
                    bytes_of(&first[i]),
                    bytes_of(&out[i]),
                    "{executor}, {threads} threads, output {i}"
                );
            }
            assert_ne!(
                bytes_of(&first[1]),
                bytes_of(&out[1]),
                "{executor}: a new session's z"
            );
        }
    }
    // Another seed, other values.
    let other = base_session_run(6.0, &ins);
    assert_ne!(bytes_of(&first[0]), bytes_of(&other[0]));
}

fn base_session_run(seed: f32, ins: &[Value]) -> Vec<Value> {
    session(None, 1, ExecutorKind::Sequential)
        .compile_graph(model(seed))
        .unwrap()
        .run(ins)
        .unwrap()
}

#[test]
fn a_seed_that_is_not_an_integer_is_an_error_naming_the_node() {
    let e = session(None, 1, ExecutorKind::Sequential)
        .compile_graph(model(1.5))
        .and_then(|m| m.run(&inputs()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("uniform") && e.contains("seed"), "{e}");
}

#[test]
fn rge_engines_lists_rng() {
    let v: serde_json::Value =
        serde_json::from_str(&rge::cli::engines::list(&EngineArgs::default(), true).unwrap())
            .unwrap();
    let text = v.to_string();
    assert!(text.contains("\"rng\""), "{text}");
}
