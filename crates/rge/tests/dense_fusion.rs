//! The dense engine end to end: BatchNormalization folded into Conv, epilogues (bias, residual,
//! activation, SiLU) fused into FusedConv/FusedMatMul, outputs the same as the `cpu` engine's
//! (dense excluded), and near misses left unfused with the graph still right.

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

fn graph_of(m: &ModelProto) -> rge_ir::ComputeGraph {
    rge_formats::onnx::import_bytes(bytes::Bytes::from(m.encode_to_vec()), "t.onnx")
        .unwrap()
        .graph
}

/// Compiles `m` with and without the dense engine; returns the op types of the dense compile
/// and checks both give the same outputs.
fn compile_both(m: &ModelProto, x: &[(usize, Vec<usize>)]) -> Vec<String> {
    let inputs: Vec<Value> = x
        .iter()
        .map(|(seed, shape)| {
            let n: usize = shape.iter().product();
            let v: Vec<f32> = (0..n)
                .map(|i| ((i * 37 + seed * 11) % 101) as f32 / 50.0 - 1.0)
                .collect();
            Value::from(Tensor::from_vec(shape, v).unwrap())
        })
        .collect();
    let mut outs = Vec::new();
    let mut types = Vec::new();
    for exclude in [None, Some("dense")] {
        let set = engine_set(&EngineArgs {
            exclude_engines: exclude.map(str::to_string),
            ..EngineArgs::default()
        })
        .unwrap();
        let s = Session::new(SessionOptions::with_engines(set)).unwrap();
        let model = s.compile_graph(graph_of(m)).unwrap();
        if exclude.is_none() {
            let g = model.graph();
            types = g
                .nodes_of(g.root())
                .map(|n| g.op(n).unwrap().op_type().to_string())
                .collect();
        }
        let out = model.run(&inputs).unwrap();
        outs.push(
            out[0]
                .as_tensor()
                .unwrap()
                .as_slice::<f32>()
                .unwrap()
                .to_vec(),
        );
    }
    for (a, b) in outs[0].iter().zip(&outs[1]) {
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1.0), "{a} vs {b}");
    }
    types
}

fn conv_bn_relu() -> ModelProto {
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
            node("Relu", "relu", &["n"], &["y"], vec![]),
        ],
        vec![vi("x", 1, &[1, 3, 8, 8])],
        vi("y", 1, &[1, 4, 8, 8]),
        vec![
            init("w", &[4, 3, 3, 3], 1),
            init("s", &[4], 2),
            init("b", &[4], 3),
            init("m", &[4], 4),
            TensorProto {
                name: "v".into(),
                dims: vec![4],
                data_type: 1,
                float_data: vec![0.5, 1.0, 1.5, 2.0],
                ..Default::default()
            },
        ],
    )
}

#[test]
fn batch_norm_folds_and_relu_fuses_into_the_conv() {
    let types = compile_both(&conv_bn_relu(), &[(1, vec![1, 3, 8, 8])]);
    assert!(types.contains(&"FusedConv".to_string()), "{types:?}");
    for gone in ["BatchNormalization", "Relu", "Conv"] {
        assert!(!types.contains(&gone.to_string()), "{types:?}");
    }
}

/// A DB head's upsample: a ConvTranspose (2×2/2, 4 input channels in 2 groups, 3 outputs per
/// group, with a bias) and the BatchNormalization after it, folded into the ConvTranspose's
/// weights (per output channel, axis 1 of each group's block) and bias.
#[test]
fn batch_norm_folds_into_a_conv_transpose() {
    let m = model(
        vec![
            node(
                "ConvTranspose",
                "up",
                &["x", "w", "wb"],
                &["c"],
                vec![
                    ints("strides", &[2, 2]),
                    AttributeProto {
                        name: "group".into(),
                        r#type: AttributeType::Int as i32,
                        i: 2,
                        ..Default::default()
                    },
                ],
            ),
            node(
                "BatchNormalization",
                "bn",
                &["c", "s", "b", "m", "v"],
                &["y"],
                vec![],
            ),
        ],
        vec![vi("x", 1, &[1, 4, 5, 6])],
        vi("y", 1, &[1, 6, 10, 12]),
        vec![
            init("w", &[4, 3, 2, 2], 1),
            init("wb", &[6], 5),
            init("s", &[6], 2),
            init("b", &[6], 3),
            init("m", &[6], 4),
            TensorProto {
                name: "v".into(),
                dims: vec![6],
                data_type: 1,
                float_data: vec![0.5, 1.0, 1.5, 2.0, 0.25, 3.0],
                ..Default::default()
            },
        ],
    );
    let types = compile_both(&m, &[(1, vec![1, 4, 5, 6])]);
    assert!(types.contains(&"ConvTranspose".to_string()), "{types:?}");
    assert!(
        !types.contains(&"BatchNormalization".to_string()),
        "{types:?}"
    );
}

#[test]
fn residual_and_silu_fuse() {
    // y = silu(conv(x) + bias + x2): ResNet's skip and YOLO's SiLU.
    let m = model(
        vec![
            node(
                "Conv",
                "conv",
                &["x", "w"],
                &["c"],
                vec![ints("pads", &[1, 1, 1, 1])],
            ),
            node("Add", "bias", &["c", "bb"], &["cb"], vec![]),
            node("Add", "skip", &["cb", "x2"], &["r"], vec![]),
            node("Sigmoid", "sig", &["r"], &["s"], vec![]),
            node("Mul", "silu", &["r", "s"], &["y"], vec![]),
        ],
        vec![vi("x", 1, &[1, 3, 6, 6]), vi("x2", 1, &[1, 5, 6, 6])],
        vi("y", 1, &[1, 5, 6, 6]),
        vec![init("w", &[5, 3, 3, 3], 1), init("bb", &[1, 5, 1, 1], 2)],
    );
    let types = compile_both(&m, &[(1, vec![1, 3, 6, 6]), (2, vec![1, 5, 6, 6])]);
    assert_eq!(
        types.iter().filter(|t| *t == "FusedConv").count(),
        1,
        "{types:?}"
    );
    for gone in ["Add", "Sigmoid", "Mul", "Conv"] {
        assert!(!types.contains(&gone.to_string()), "{types:?}");
    }
}

#[test]
fn matmul_bias_relu_fuses() {
    let m = model(
        vec![
            node("MatMul", "mm", &["x", "w"], &["h"], vec![]),
            node("Add", "bias", &["h", "b"], &["hb"], vec![]),
            node("Relu", "act", &["hb"], &["y"], vec![]),
        ],
        vec![vi("x", 1, &[2, 7, 16])],
        vi("y", 1, &[2, 7, 24]),
        vec![init("w", &[16, 24], 1), init("b", &[24], 2)],
    );
    let types = compile_both(&m, &[(1, vec![2, 7, 16])]);
    assert_eq!(
        types.iter().filter(|t| *t == "FusedMatMul").count(),
        1,
        "{types:?}"
    );
    assert!(!types.contains(&"Add".to_string()), "{types:?}");
}

#[test]
fn near_misses_stay_unfused_and_right() {
    // The Conv's output has a second reader: Relu must not swallow it.
    let two_readers = model(
        vec![
            node("Conv", "conv", &["x", "w"], &["c"], vec![]),
            node("Relu", "relu", &["c"], &["r"], vec![]),
            node("Add", "add", &["r", "c"], &["y"], vec![]),
        ],
        vec![vi("x", 1, &[1, 2, 5, 5])],
        vi("y", 1, &[1, 3, 3, 3]),
        vec![init("w", &[3, 2, 3, 3], 1)],
    );
    let types = compile_both(&two_readers, &[(1, vec![1, 2, 5, 5])]);
    // The Conv stays plain; Relu and Add may form one vector elementwise tree.
    assert!(types.contains(&"Conv".to_string()), "{types:?}");
    assert!(
        types.contains(&"Relu".to_string()) || types.contains(&"FusedElementwise".to_string()),
        "{types:?}"
    );
    // A bias along the wrong axis ([W], not [C,1,1]) is not a per-channel bias.
    let wrong_axis = model(
        vec![
            node("Conv", "conv", &["x", "w"], &["c"], vec![]),
            node("Add", "add", &["c", "b"], &["y"], vec![]),
        ],
        vec![vi("x", 1, &[1, 2, 5, 5])],
        vi("y", 1, &[1, 3, 3, 3]),
        vec![init("w", &[3, 2, 3, 3], 1), init("b", &[3], 2)],
    );
    let types = compile_both(&wrong_axis, &[(1, vec![1, 2, 5, 5])]);
    assert!(types.contains(&"Add".to_string()), "{types:?}");
    // The activation is a graph output that a second node also reads: the chain stops there.
    let listed = model(
        vec![
            node("MatMul", "mm", &["x", "w"], &["h"], vec![]),
            node("Sigmoid", "sig", &["h"], &["y"], vec![]),
        ],
        vec![vi("x", 1, &[3, 4])],
        vi("h", 1, &[3, 6]),
        vec![init("w", &[4, 6], 1)],
    );
    let types = compile_both(&listed, &[(1, vec![3, 4])]);
    assert!(types.contains(&"MatMul".to_string()), "{types:?}");
}

#[test]
fn explain_says_what_was_fused() {
    let dir = std::env::temp_dir().join(format!("rge-dense-fusion-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("cbr.onnx");
    std::fs::write(&path, conv_bn_relu().encode_to_vec()).unwrap();
    let out = rge::cli::explain::run(&path, &EngineArgs::default(), true, None).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let fused = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["op_type"] == "FusedConv")
        .unwrap();
    assert_eq!(fused["engine"], "dense");
    assert_eq!(fused["kernel"], "dense.FusedConv");
    let notes = fused["notes"].to_string();
    assert!(
        notes.contains("conv") && notes.contains("bn") && notes.contains("relu"),
        "{notes}"
    );
}

#[test]
fn a_transposed_b_is_read_by_the_gemm_not_transposed_each_run() {
    // x · wᵀ with a constant w (GPT-2's tied head): no Transpose step, the same outputs.
    let head = model(
        vec![
            node(
                "Transpose",
                "wt",
                &["w"],
                &["t"],
                vec![ints("perm", &[1, 0])],
            ),
            node("MatMul", "head", &["x", "t"], &["y"], vec![]),
        ],
        vec![vi("x", 1, &[2, 5, 8])],
        vi("y", 1, &[2, 5, 6]),
        vec![init("w", &[6, 8], 3)],
    );
    // (A weight this small is folded instead; large ones are not, and reach the rewrite.)
    let types = compile_both(&head, &[(1, vec![2, 5, 8])]);
    assert!(!types.contains(&"Transpose".to_string()), "{types:?}");
    // Q · Kᵀ over batches of computed matrices (attention scores), default perm for a matrix.
    let scores = model(
        vec![
            node(
                "Transpose",
                "kt",
                &["k"],
                &["t"],
                vec![ints("perm", &[0, 1, 3, 2])],
            ),
            node("MatMul", "qk", &["q", "t"], &["y"], vec![]),
        ],
        vec![vi("q", 1, &[2, 3, 4, 8]), vi("k", 1, &[2, 3, 5, 8])],
        vi("y", 1, &[2, 3, 4, 5]),
        vec![],
    );
    let types = compile_both(&scores, &[(1, vec![2, 3, 4, 8]), (2, vec![2, 3, 5, 8])]);
    assert!(!types.contains(&"Transpose".to_string()), "{types:?}");
    assert!(types.contains(&"FusedMatMul".to_string()), "{types:?}");
    let plain = model(
        vec![
            node("Transpose", "wt", &["w"], &["t"], vec![]),
            node("MatMul", "mm", &["x", "t"], &["y"], vec![]),
        ],
        vec![vi("x", 1, &[3, 7]), vi("w", 1, &[4, 7])],
        vi("y", 1, &[3, 4]),
        vec![],
    );
    let types = compile_both(&plain, &[(1, vec![3, 7]), (2, vec![4, 7])]);
    assert!(!types.contains(&"Transpose".to_string()), "{types:?}");
    assert!(types.contains(&"FusedMatMul".to_string()), "{types:?}");
}

#[test]
fn transposes_that_are_not_a_last_two_swap_or_have_other_readers_stay() {
    // perm [1, 0, 2] moves a batch dim: not B's matrix transpose.
    let batch_perm = model(
        vec![
            node(
                "Transpose",
                "bt",
                &["b"],
                &["t"],
                vec![ints("perm", &[1, 0, 2])],
            ),
            node("MatMul", "mm", &["a", "t"], &["y"], vec![]),
        ],
        vec![vi("a", 1, &[3, 2, 4]), vi("b", 1, &[4, 3, 5])],
        vi("y", 1, &[3, 2, 5]),
        vec![],
    );
    let types = compile_both(&batch_perm, &[(1, vec![3, 2, 4]), (2, vec![4, 3, 5])]);
    assert!(types.contains(&"Transpose".to_string()), "{types:?}");
    // The transposed value is also a reader's input elsewhere: the Transpose stays for it.
    let shared = model(
        vec![
            node(
                "Transpose",
                "wt",
                &["w"],
                &["t"],
                vec![ints("perm", &[1, 0])],
            ),
            node("MatMul", "mm", &["x", "t"], &["m"], vec![]),
            node("ReduceSum", "rs", &["t"], &["r"], vec![]),
            node("Add", "add", &["m", "r"], &["y"], vec![]),
        ],
        vec![vi("x", 1, &[3, 7]), vi("w", 1, &[4, 7])],
        vi("y", 1, &[3, 4]),
        vec![],
    );
    let types = compile_both(&shared, &[(1, vec![3, 7]), (2, vec![4, 7])]);
    assert!(types.contains(&"Transpose".to_string()), "{types:?}");
}
