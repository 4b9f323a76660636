//! The vector engine end to end: with `--engine-type vector` a model's elementwise,
//! normalization, reduction and pooling nodes are placed on `vector`, `dense` is excluded and
//! `vector` runs the matrix ops too, and the outputs match the `cpu` engine's within 1e-4
//! relative; by default `vector` takes the elementwise, normalization, reduction and pooling
//! nodes (dense the matrix ones), and the `fused` engine folds the Erf-GELU tree into one
//! FusedElementwise step on `vector`.

use prost::Message;
use rge::engines::{engine_set, EngineArgs};
use rge_formats::onnx_proto::{
    attribute_proto::AttributeType, tensor_shape_proto, type_proto, AttributeProto, GraphProto,
    ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto,
    ValueInfoProto,
};
use rge_kernels::{Tensor, Value};
use rge_runtime::{Session, SessionOptions};

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

fn init(name: &str, dims: &[i64], seed: u32) -> TensorProto {
    let n: i64 = dims.iter().product();
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: 1,
        float_data: (0..n)
            .map(|i| {
                ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 1000.0
                    - 0.5
            })
            .collect(),
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

fn ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn model(
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    out: ValueInfoProto,
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
            output: vec![out],
            initializer: inits,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn float(name: &str, v: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Float as i32,
        f: v,
        ..Default::default()
    }
}

fn int(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Int as i32,
        i: v,
        ..Default::default()
    }
}

/// A small CNN-and-transformer mix: Conv, BatchNormalization, Clip, MaxPool, Sigmoid·Mul
/// (SiLU), Add with a per-channel bias, GlobalAveragePool, a MatMul, Erf-GELU pieces,
/// LayerNormalization, Softmax, ReduceMean.
fn mixed() -> ModelProto {
    model(
        vec![
            node(
                "Conv",
                "conv",
                &["x", "w"],
                &["c"],
                vec![ints("pads", &[1, 1, 1, 1])],
            ),
            node(
                "BatchNormalization",
                "bn",
                &["c", "s", "b", "m", "v"],
                &["n"],
                vec![],
            ),
            node("Clip", "clip", &["n", "lo", "hi"], &["r"], vec![]),
            node(
                "MaxPool",
                "pool",
                &["r"],
                &["p"],
                vec![
                    ints("kernel_shape", &[3, 3]),
                    ints("strides", &[2, 2]),
                    ints("pads", &[1, 1, 1, 1]),
                ],
            ),
            node("Sigmoid", "sig", &["p"], &["sg"], vec![]),
            node("Mul", "silu", &["p", "sg"], &["sl"], vec![]),
            node("Add", "bias", &["sl", "cb"], &["a"], vec![]),
            node("GlobalAveragePool", "gap", &["a"], &["g"], vec![]),
            node("Flatten", "flat", &["g"], &["f"], vec![]),
            node("MatMul", "fc", &["f", "fw"], &["h"], vec![]),
            node("Div", "scale", &["h", "sqrt2"], &["hd"], vec![]),
            node("Erf", "erf", &["hd"], &["he"], vec![]),
            node("Add", "one", &["he", "onec"], &["h1"], vec![]),
            node("Mul", "gelu", &["h", "h1"], &["hg"], vec![]),
            node(
                "LayerNormalization",
                "ln",
                &["hg", "lg", "lb"],
                &["l"],
                vec![float("epsilon", 1e-5)],
            ),
            node("Softmax", "sm", &["l"], &["y0"], vec![int("axis", -1)]),
            node(
                "ReduceMean",
                "rm",
                &["y0"],
                &["y"],
                vec![int("keepdims", 1)],
            ),
        ],
        vec![vi("x", 1, &[2, 3, 12, 12])],
        vi("y", 1, &[2, 1]),
        vec![
            init("w", &[8, 3, 3, 3], 1),
            init("s", &[8], 2),
            init("b", &[8], 3),
            init("m", &[8], 4),
            TensorProto {
                name: "v".into(),
                dims: vec![8],
                data_type: 1,
                float_data: vec![0.5, 1.0, 1.5, 2.0, 0.25, 0.75, 1.25, 3.0],
                ..Default::default()
            },
            TensorProto {
                name: "lo".into(),
                dims: vec![],
                data_type: 1,
                float_data: vec![0.0],
                ..Default::default()
            },
            TensorProto {
                name: "hi".into(),
                dims: vec![],
                data_type: 1,
                float_data: vec![6.0],
                ..Default::default()
            },
            init("cb", &[1, 8, 1, 1], 5),
            init("fw", &[8, 16], 6),
            TensorProto {
                name: "sqrt2".into(),
                dims: vec![],
                data_type: 1,
                float_data: vec![std::f32::consts::SQRT_2],
                ..Default::default()
            },
            TensorProto {
                name: "onec".into(),
                dims: vec![],
                data_type: 1,
                float_data: vec![1.0],
                ..Default::default()
            },
            init("lg", &[16], 7),
            init("lb", &[16], 8),
        ],
    )
}

/// Runs `m` with `args`; returns the output and each compute step's (node, engine).
fn run(m: &ModelProto, args: EngineArgs) -> (Vec<f32>, Vec<(String, String)>) {
    let set = engine_set(&args).unwrap();
    let s = Session::new(SessionOptions::with_engines(set)).unwrap();
    let g = rge_formats::onnx::import_bytes(bytes::Bytes::from(m.encode_to_vec()), "t.onnx")
        .unwrap()
        .graph;
    let model = s.compile_graph(g).unwrap();
    let placed = model
        .program()
        .steps
        .iter()
        .map(|st| (st.node.clone(), st.engine.to_string()))
        .collect();
    let n = 2 * 3 * 12 * 12;
    let x: Vec<f32> = (0..n)
        .map(|i| ((i * 37) % 101) as f32 / 25.0 - 2.0)
        .collect();
    let out = model
        .run(&[Value::from(Tensor::from_vec(&[2, 3, 12, 12], x).unwrap())])
        .unwrap();
    (
        out[0]
            .as_tensor()
            .unwrap()
            .as_slice::<f32>()
            .unwrap()
            .to_vec(),
        placed,
    )
}

fn engine<'a>(placed: &'a [(String, String)], node: &str) -> &'a str {
    placed
        .iter()
        .find(|(n, _)| n == node)
        .map(|(_, e)| e.as_str())
        .unwrap_or_else(|| panic!("no step for {node}: {placed:?}"))
}

fn close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() <= 1e-4 * y.abs().max(1e-3), "{x} vs {y}");
    }
}

/// The nodes vector takes unfused (the graph passes fuse Sigmoid·Mul into one Swish,
/// `silu_silu`; the per-channel bias Add is a broadcast the fused kernel does not take).
const VECTOR_NODES: &[&str] = &["pool", "silu_silu", "bias", "gap", "ln", "sm", "rm"];

/// The Erf-GELU pieces the fused engine makes one FusedElementwise of (named after its root).
/// The GELU tree's inner nodes (its root `gelu` names the fused step).
const GELU_TREE: &[&str] = &["scale", "erf", "one"];

/// By default vector takes the elementwise nodes, the fused engine makes one step of the
/// Erf-GELU tree, and the outputs match the cpu engine's (vector and fused excluded).
#[test]
fn default_set_places_elementwise_nodes_on_vector_and_fuses_the_gelu_tree() {
    let m = mixed();
    let (y, placed) = run(&m, EngineArgs::default());
    assert_eq!(engine(&placed, "conv_bn_fused"), "dense");
    assert_eq!(engine(&placed, "fc"), "dense");
    for n in VECTOR_NODES {
        assert_eq!(engine(&placed, n), "vector", "{n}: {placed:?}");
    }
    assert_eq!(engine(&placed, "gelu"), "vector", "{placed:?}");
    for n in GELU_TREE {
        assert!(
            placed.iter().all(|(p, _)| p != n),
            "{n} still a step: {placed:?}"
        );
    }
    let (want, placed_cpu) = run(
        &m,
        EngineArgs {
            exclude_engines: Some("vector,fused".into()),
            ..EngineArgs::default()
        },
    );
    for n in VECTOR_NODES.iter().chain(GELU_TREE).chain(&["gelu"]) {
        assert_eq!(engine(&placed_cpu, n), "cpu", "{n}: {placed_cpu:?}");
    }
    close(&y, &want);
    // Without the fused engine the tree stays four vector steps.
    let (y2, placed2) = run(
        &m,
        EngineArgs {
            exclude_engines: Some("fused".into()),
            ..EngineArgs::default()
        },
    );
    for n in GELU_TREE.iter().chain(&["gelu"]) {
        assert_eq!(engine(&placed2, n), "vector", "{n}: {placed2:?}");
    }
    close(&y2, &want);
    // Without dense, the matrix ops fall to vector's reference kernels.
    let (y3, placed3) = run(
        &m,
        EngineArgs {
            exclude_engines: Some("dense".into()),
            ..EngineArgs::default()
        },
    );
    assert_eq!(engine(&placed3, "fc"), "vector");
    close(&y3, &want);
}

#[test]
fn engine_type_vector_excludes_dense_and_runs_the_matrix_ops() {
    let m = mixed();
    let (y, placed) = run(
        &m,
        EngineArgs {
            engine_type: Some("vector".into()),
            ..EngineArgs::default()
        },
    );
    assert!(placed.iter().all(|(_, e)| e != "dense"), "{placed:?}");
    assert_eq!(engine(&placed, "fc"), "vector");
    assert_eq!(engine(&placed, "conv"), "vector");
    for n in VECTOR_NODES.iter().chain(&["clip", "gelu"]) {
        assert_eq!(engine(&placed, n), "vector", "{n}");
    }
    let (want, _) = run(
        &m,
        EngineArgs {
            exclude_engines: Some("vector,dense,fused".into()),
            ..EngineArgs::default()
        },
    );
    close(&y, &want);
    // The dense type excludes vector: the elementwise nodes go to cpu.
    let (_, placed) = run(
        &m,
        EngineArgs {
            engine_type: Some("dense".into()),
            ..EngineArgs::default()
        },
    );
    assert_eq!(engine(&placed, "silu_silu"), "cpu");
    assert_eq!(engine(&placed, "fc"), "dense");
}
