//! Synthetic ONNX models for the import, round-trip and checker tests. Each is valid ONNX
//! unless its entry says otherwise.

use bytes::Bytes;
use rge_formats::onnx_proto::attribute_proto::AttributeType as T;
use rge_formats::onnx_proto::tensor_shape_proto::{dimension, Dimension};
use rge_formats::onnx_proto::{
    type_proto, AttributeProto, FunctionProto, ModelProto, OperatorSetIdProto, SparseTensorProto,
    StringStringEntryProto, TensorProto, TensorShapeProto, TypeProto, ValueInfoProto,
};

use super::*;

/// A named model and whether `onnx.checker` (not full) should accept its export.
pub struct Case {
    pub name: &'static str,
    pub model: ModelProto,
    pub checker_ok: bool,
}

pub fn i64_tensor(name: &str, dims: &[i64], v: &[i64]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: 7,
        int64_data: v.to_vec(),
        ..Default::default()
    }
}

pub fn bool_scalar(name: &str, v: bool) -> TensorProto {
    TensorProto {
        name: name.into(),
        data_type: 9,
        int32_data: vec![i32::from(v)],
        ..Default::default()
    }
}

fn attr(name: &str, ty: T, f: impl FnOnce(&mut AttributeProto)) -> AttributeProto {
    let mut a = AttributeProto {
        name: name.into(),
        r#type: ty as i32,
        ..Default::default()
    };
    f(&mut a);
    a
}

pub fn dims_type(elem: i32, dims: &[Option<&str>]) -> TypeProto {
    let mut t = tensor_type(elem, &[]);
    if let Some(type_proto::Value::TensorType(tt)) = &mut t.value {
        tt.shape = Some(TensorShapeProto {
            dim: dims
                .iter()
                .map(|d| Dimension {
                    value: d.map(|p| match p.parse::<i64>() {
                        Ok(v) => dimension::Value::DimValue(v),
                        Err(_) => dimension::Value::DimParam(p.to_string()),
                    }),
                    ..Default::default()
                })
                .collect(),
        });
    }
    t
}

/// Loop with a nested If: captures of root values through two levels of bodies.
pub fn loop_capture() -> ModelProto {
    let then_g = graph(
        "then_g",
        vec![node("Mul", "t_mul", &["v2", "w"], &["t_out"])],
        vec![],
        vec![vi("t_out", 1, &[2])],
        vec![],
    );
    let else_g = graph(
        "else_g",
        vec![node("Identity", "e_id", &["x"], &["e_out"])],
        vec![],
        vec![vi("e_out", 1, &[2])],
        vec![],
    );
    let body = graph(
        "loop_body",
        vec![
            node("Add", "b_add", &["v", "w"], &["v2"]),
            node("Identity", "b_cond", &["cond_in"], &["cond_out"]),
            with_attr(
                with_attr(
                    node("If", "b_if", &["cond_in"], &["v3"]),
                    attr_graph("else_branch", else_g),
                ),
                attr_graph("then_branch", then_g),
            ),
            node("Identity", "b_scan", &["v3"], &["s"]),
        ],
        vec![vi("iter", 7, &[]), vi("cond_in", 9, &[]), vi("v", 1, &[2])],
        vec![vi("cond_out", 9, &[]), vi("v3", 1, &[2]), vi("s", 1, &[2])],
        vec![],
    );
    let mut root = graph(
        "loop_model",
        vec![with_attr(
            node("Loop", "loop", &["M", "cond", "x"], &["y", "scan_out"]),
            attr_graph("body", body),
        )],
        vec![vi("M", 7, &[]), vi("cond", 9, &[]), vi("x", 1, &[2])],
        vec![vi("y", 1, &[2])],
        vec![f32_tensor("w", &[2], &[0.5, 0.25])],
    );
    root.output.push(ValueInfoProto {
        name: "scan_out".into(),
        r#type: Some(dims_type(1, &[Some("N"), Some("2")])),
        ..Default::default()
    });
    model(root, 13)
}

/// Nodes out of file order (forward references); valid once sorted.
pub fn unsorted() -> ModelProto {
    model(
        graph(
            "unsorted",
            vec![
                node("Relu", "c", &["b_out"], &["y"]),
                node("Neg", "b", &["a_out"], &["b_out"]),
                node("Abs", "a", &["x"], &["a_out"]),
            ],
            vec![vi("x", 1, &[3])],
            vec![vi("y", 1, &[3])],
            vec![],
        ),
        13,
    )
}

/// An If whose then branch is unsorted and captures `y` before `x` in file order.
pub fn unsorted_body() -> ModelProto {
    let then_g = graph(
        "then_g",
        vec![
            node("Add", "tb", &["a_out", "y"], &["t_out"]),
            node("Neg", "ta", &["x"], &["a_out"]),
        ],
        vec![],
        vec![vi("t_out", 1, &[1])],
        vec![],
    );
    let else_g = graph(
        "else_g",
        vec![node("Identity", "e", &["y"], &["e_out"])],
        vec![],
        vec![vi("e_out", 1, &[1])],
        vec![],
    );
    let iff = with_attr(
        with_attr(
            node("If", "iff", &["c"], &["o"]),
            attr_graph("then_branch", then_g),
        ),
        attr_graph("else_branch", else_g),
    );
    model(
        graph(
            "unsorted_body",
            vec![iff],
            vec![vi("c", 9, &[]), vi("x", 1, &[1]), vi("y", 1, &[1])],
            vec![vi("o", 1, &[1])],
            vec![],
        ),
        13,
    )
}

/// Initializers in every typed field and packing, each fed through Identity.
pub fn typed() -> ModelProto {
    let t = |name: &str, dt: i32, dims: &[i64], f: &dyn Fn(&mut TensorProto)| {
        let mut tp = TensorProto {
            name: name.into(),
            dims: dims.to_vec(),
            data_type: dt,
            ..Default::default()
        };
        f(&mut tp);
        tp
    };
    let inits = vec![
        t("f16", 10, &[2], &|t| t.int32_data = vec![0x3c00, 0xc000]),
        t("bf16", 16, &[2], &|t| t.int32_data = vec![0x3f80, 0x4000]),
        t("i8", 3, &[3], &|t| t.int32_data = vec![-1, 2, -128]),
        t("u8", 2, &[2], &|t| t.int32_data = vec![255, 7]),
        t("b", 9, &[2], &|t| t.int32_data = vec![1, 0]),
        t("i16", 5, &[1], &|t| t.int32_data = vec![-300]),
        t("u16", 4, &[1], &|t| t.int32_data = vec![65535]),
        t("i32", 6, &[2], &|t| t.int32_data = vec![i32::MIN, 5]),
        t("u32", 12, &[2], &|t| t.uint64_data = vec![4_000_000_000, 1]),
        t("u64", 13, &[1], &|t| t.uint64_data = vec![u64::MAX]),
        t("i4", 22, &[3], &|t| t.int32_data = vec![0x21, 0x0f]),
        t("u4", 21, &[2], &|t| t.int32_data = vec![0xf1]),
        t("f8", 17, &[2], &|t| t.int32_data = vec![0x38, 0x40]),
        t("f8fnuz", 18, &[1], &|t| t.int32_data = vec![0x40]),
        t("c64", 14, &[1], &|t| t.float_data = vec![1.0, -2.0]),
        t("c128", 15, &[1], &|t| t.double_data = vec![3.0, 4.0]),
        t("s", 8, &[2], &|t| {
            t.string_data = vec![Bytes::from("ab"), Bytes::from("")]
        }),
        t("raw", 11, &[2], &|t| {
            t.raw_data = [1.5f64, -2.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect();
        }),
        t("empty", 1, &[0, 3], &|_| {}),
    ];
    let mut nodes = Vec::new();
    let mut outputs = Vec::new();
    for tp in &inits {
        let o = format!("{}_out", tp.name);
        nodes.push(node(
            "Identity",
            &format!("id_{}", tp.name),
            &[&tp.name],
            &[&o],
        ));
        outputs.push(vi(&o, tp.data_type, &tp.dims));
    }
    let mut m = model(graph("typed", nodes, vec![], outputs, inits), 21);
    m.ir_version = 10;
    m
}

/// Every attribute kind on a custom-domain op, doc strings and metadata, a model function.
pub fn attrs() -> ModelProto {
    let sub = |n: &str| {
        graph(
            n,
            vec![node(
                "Identity",
                &format!("{n}_id"),
                &["x"],
                &[&format!("{n}_o")],
            )],
            vec![],
            vec![vi(&format!("{n}_o"), 1, &[2])],
            vec![],
        )
    };
    let seq = TypeProto {
        value: Some(type_proto::Value::SequenceType(Box::new(
            type_proto::Sequence {
                elem_type: Some(Box::new(tensor_type(1, &[2]))),
            },
        ))),
        ..Default::default()
    };
    let sparse = SparseTensorProto {
        values: Some(f32_tensor("", &[2], &[1.0, 2.0])),
        indices: Some(i64_tensor("", &[2], &[0, 3])),
        dims: vec![4],
    };
    let a = vec![
        attr("f", T::Float, |a| a.f = 0.5),
        attr("i", T::Int, |a| a.i = -7),
        attr("s", T::String, |a| a.s = Bytes::from("héllo")),
        attr("sb", T::String, |a| a.s = Bytes::from(vec![0xff, 0x00])),
        attr("t", T::Tensor, |a| a.t = Some(f32_tensor("", &[1], &[3.0]))),
        attr("fs", T::Floats, |a| a.floats = vec![1.0, 2.0]),
        attr("is", T::Ints, |a| a.ints = vec![]),
        attr("ss", T::Strings, |a| {
            a.strings = vec![Bytes::from("a"), Bytes::from("b")]
        }),
        attr("ts", T::Tensors, |a| {
            a.tensors = vec![i64_tensor("", &[1], &[9])]
        }),
        attr("sp", T::SparseTensor, |a| {
            a.sparse_tensor = Some(sparse.clone())
        }),
        attr("tp", T::TypeProto, |a| {
            a.tp = Some(dims_type(1, &[Some("B"), None]))
        }),
        attr("tq", T::TypeProto, |a| a.tp = Some(seq.clone())),
        attr("tps", T::TypeProtos, |a| {
            a.type_protos = vec![tensor_type(7, &[1])]
        }),
        attr("gs", T::Graphs, |a| a.graphs = vec![sub("ga"), sub("gb")]),
        attr("empty_gs", T::Graphs, |_| {}),
        attr_graph("g", sub("gc")),
    ];
    let mut n = node("Custom", "custom", &["x"], &["y"]);
    n.domain = "com.example".into();
    n.attribute = a;
    n.doc_string = "a custom op".into();
    n.metadata_props = vec![StringStringEntryProto {
        key: "k".into(),
        value: "v".into(),
    }];
    let mut g = graph(
        "attrs",
        vec![n, node("MyFn", "call", &["x"], &["z"])],
        vec![vi("x", 1, &[2])],
        vec![vi("y", 1, &[2]), vi("z", 1, &[2])],
        vec![],
    );
    g.node[1].domain = "local".into();
    g.doc_string = "graph doc".into();
    let mut m = model(g, 17);
    m.opset_import.push(OperatorSetIdProto {
        domain: "com.example".into(),
        version: 1,
    });
    m.opset_import.push(OperatorSetIdProto {
        domain: "local".into(),
        version: 1,
    });
    m.metadata_props = vec![StringStringEntryProto {
        key: "author".into(),
        value: "rge".into(),
    }];
    m.doc_string = "model doc".into();
    m.functions = vec![FunctionProto {
        name: "MyFn".into(),
        domain: "local".into(),
        input: vec!["a".into()],
        output: vec!["b".into()],
        node: vec![node("Relu", "", &["a"], &["b"])],
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        ..Default::default()
    }];
    m
}

/// Symbolic, unknown and unknown-rank dims, a sequence input, value_info, optional I/O.
pub fn dims_and_optional() -> ModelProto {
    let seq = TypeProto {
        value: Some(type_proto::Value::SequenceType(Box::new(
            type_proto::Sequence {
                elem_type: Some(Box::new(tensor_type(1, &[]))),
            },
        ))),
        ..Default::default()
    };
    let mut g = graph(
        "dims",
        vec![
            node("Clip", "clip", &["x", "", "hi"], &["c"]),
            node("Dropout", "drop", &["c"], &["d", ""]),
            node("Relu", "relu", &["r"], &["r_out"]),
            node("SequenceLength", "len", &["seq"], &["n"]),
        ],
        vec![
            ValueInfoProto {
                name: "x".into(),
                r#type: Some(dims_type(1, &[Some("batch"), None, Some("3")])),
                ..Default::default()
            },
            vi("r", 1, &[4]),
            ValueInfoProto {
                name: "seq".into(),
                r#type: Some(seq),
                ..Default::default()
            },
            vi("hi", 1, &[]),
        ],
        vec![
            ValueInfoProto {
                name: "d".into(),
                r#type: Some(dims_type(1, &[Some("batch"), None, Some("3")])),
                ..Default::default()
            },
            vi("r_out", 1, &[4]),
            vi("n", 7, &[]),
        ],
        vec![f32_tensor("hi", &[], &[6.0])],
    );
    let unknown_rank = TypeProto {
        value: Some(type_proto::Value::TensorType(type_proto::Tensor {
            elem_type: 1,
            shape: None,
        })),
        ..Default::default()
    };
    g.value_info = vec![
        ValueInfoProto {
            name: "c".into(),
            r#type: Some(dims_type(1, &[Some("batch"), None, Some("3")])),
            ..Default::default()
        },
        ValueInfoProto {
            name: "r_out".into(),
            r#type: Some(unknown_rank),
            ..Default::default()
        },
    ];
    model(g, 13)
}

/// Duplicate and empty node names, a node named like an input; IR 3 with initializers listed
/// as graph inputs.
pub fn names_ir3() -> ModelProto {
    let mut m = model(
        graph(
            "names",
            vec![
                node("Add", "x", &["x", "w"], &["a"]),
                node("Relu", "dup", &["a"], &["b"]),
                node("Relu", "dup", &["b"], &["c"]),
                node("Relu", "", &["c"], &["d"]),
            ],
            vec![vi("x", 1, &[2]), vi("w", 1, &[2])],
            vec![vi("d", 1, &[2])],
            vec![f32_tensor("w", &[2], &[1.0, 2.0])],
        ),
        8,
    );
    m.ir_version = 3;
    m
}

/// Scan at opset 8 (input 0 is sequence_lens) and at opset 9.
pub fn scan(opset: i64) -> ModelProto {
    let body = graph(
        "scan_body",
        vec![
            node("Add", "s_add", &["acc", "xi"], &["acc2"]),
            node("Identity", "s_id", &["acc2"], &["yi"]),
        ],
        vec![vi("acc", 1, &[2]), vi("xi", 1, &[2])],
        vec![vi("acc2", 1, &[2]), vi("yi", 1, &[2])],
        vec![],
    );
    let (inputs, xs, n_attr): (Vec<&str>, Vec<ValueInfoProto>, &str) = if opset < 9 {
        (
            vec!["", "init", "xs"],
            vec![vi("init", 1, &[1, 2]), vi("xs", 1, &[1, 3, 2])],
            "num_scan_inputs",
        )
    } else {
        (
            vec!["init", "xs"],
            vec![vi("init", 1, &[2]), vi("xs", 1, &[3, 2])],
            "num_scan_inputs",
        )
    };
    let n = with_attr(
        with_attr(
            node("Scan", "scan", &inputs, &["final", "ys"]),
            attr_graph("body", body),
        ),
        attr_int(n_attr, 1),
    );
    let outs = if opset < 9 {
        vec![vi("final", 1, &[1, 2]), vi("ys", 1, &[1, 3, 2])]
    } else {
        vec![vi("final", 1, &[2]), vi("ys", 1, &[3, 2])]
    };
    model(graph("scan", vec![n], xs, outs, vec![]), opset)
}

/// A sparse initializer (import-only: the checker wants sparse-aware consumers).
pub fn sparse() -> ModelProto {
    let mut g = graph(
        "sparse",
        vec![node("Identity", "id", &["sp"], &["y"])],
        vec![],
        vec![vi("y", 1, &[4])],
        vec![],
    );
    g.sparse_initializer = vec![SparseTensorProto {
        values: Some(f32_tensor("sp", &[1], &[7.0])),
        indices: Some(i64_tensor("", &[1], &[2])),
        dims: vec![4],
    }];
    model(g, 13)
}

pub fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "loop_capture",
            model: loop_capture(),
            checker_ok: true,
        },
        Case {
            name: "unsorted",
            model: unsorted(),
            checker_ok: true,
        },
        Case {
            name: "unsorted_body",
            model: unsorted_body(),
            checker_ok: true,
        },
        Case {
            name: "typed",
            model: typed(),
            checker_ok: true,
        },
        Case {
            name: "attrs",
            model: attrs(),
            checker_ok: true,
        },
        Case {
            name: "dims_and_optional",
            model: dims_and_optional(),
            checker_ok: true,
        },
        Case {
            name: "names_ir3",
            model: names_ir3(),
            checker_ok: true,
        },
        Case {
            name: "scan8",
            model: scan(8),
            checker_ok: true,
        },
        Case {
            name: "scan9",
            model: scan(9),
            checker_ok: true,
        },
        Case {
            name: "sparse",
            model: sparse(),
            checker_ok: true,
        },
    ]
}
