//! Bad ONNX input: every case is an `OnnxError` that names the file and the node, value or
//! field at fault, never a panic.

mod onnx_common;

use std::time::Instant;

use bytes::Bytes;
use onnx_common::*;
use prost::Message;
use rge_formats::onnx::{self, OnnxError};
use rge_formats::onnx_proto::{ModelProto, StringStringEntryProto, TensorProto};
use rge_ir::{ComputeGraph, DataType, OpDesc, Shape, Tensor, TensorDesc};

fn err(m: &ModelProto) -> OnnxError {
    match import_proto(m) {
        Ok(_) => panic!("imported a bad model"),
        Err(e) => {
            let s = e.to_string();
            assert!(
                s.starts_with("test.onnx"),
                "error does not name the file: {s}"
            );
            e
        }
    }
}

fn expect(m: &ModelProto, parts: &[&str]) -> OnnxError {
    let e = err(m);
    let s = e.to_string();
    for p in parts {
        assert!(s.contains(p), "`{s}` lacks `{p}`");
    }
    e
}

/// A one-node model `y = Relu(w)` around initializer `w`.
fn with_init(w: TensorProto) -> ModelProto {
    model(
        graph(
            "g",
            vec![node("Relu", "r", &["w"], &["y"])],
            vec![],
            vec![vi_untyped("y")],
            vec![w],
        ),
        13,
    )
}

#[test]
fn truncated_and_corrupt_files_do_not_panic() {
    for f in FIXTURES {
        let data = std::fs::read(fixture(f)).unwrap();
        // A cut at a field boundary can leave a valid (smaller) model; every other cut is an
        // error naming the file.
        let mut errors = 0;
        for n in 0..data.len() {
            if let Err(e) = onnx::import_bytes(Bytes::copy_from_slice(&data[..n]), f) {
                assert!(e.to_string().starts_with(f), "{e}");
                errors += 1;
            }
        }
        assert!(
            errors > data.len() * 9 / 10,
            "{f}: {errors} of {}",
            data.len()
        );
        for i in 0..data.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut d = data.clone();
                d[i] ^= x;
                if let Err(e) = onnx::import_bytes(Bytes::from(d), f) {
                    assert!(e.to_string().starts_with(f), "{e}");
                }
            }
        }
    }
}

#[test]
fn wrong_wire_type() {
    // Field 7 (graph) as a varint instead of a length-delimited message.
    let e = onnx::import_bytes(Bytes::from_static(&[0x38, 0x01]), "wire.onnx").unwrap_err();
    assert!(matches!(e, OnnxError::Decode { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with("wire.onnx: not a valid ONNX ModelProto"),
        "{e}"
    );
}

#[test]
fn model_without_graph() {
    expect(&ModelProto::default(), &["no graph"]);
}

#[test]
fn dangling_input() {
    let m = model(
        graph(
            "g",
            vec![node("Relu", "r", &["nope"], &["y"])],
            vec![],
            vec![vi_untyped("y")],
            vec![],
        ),
        13,
    );
    let e = expect(&m, &["node `r`", "input 0", "`nope`"]);
    assert!(matches!(e, OnnxError::UnknownValue { .. }));
}

#[test]
fn unknown_graph_output() {
    let m = model(
        graph(
            "g",
            vec![],
            vec![vi("x", 1, &[1])],
            vec![vi_untyped("zz")],
            vec![],
        ),
        13,
    );
    expect(&m, &["graph `g` output 0", "`zz`"]);
}

#[test]
fn body_referencing_an_unknown_value() {
    let body = graph(
        "b",
        vec![node("Identity", "bi", &["ghost"], &["o"])],
        vec![],
        vec![vi_untyped("o")],
        vec![],
    );
    let iff = with_attr(
        with_attr(
            node("If", "iff", &["c"], &["y"]),
            attr_graph("then_branch", body.clone()),
        ),
        attr_graph("else_branch", body),
    );
    let m = model(
        graph(
            "g",
            vec![iff],
            vec![vi("c", 9, &[])],
            vec![vi_untyped("y")],
            vec![],
        ),
        13,
    );
    expect(&m, &["graph `iff_then_branch` node `bi`", "`ghost`"]);
}

#[test]
fn cycles_are_reported_with_their_nodes() {
    let m = model(
        graph(
            "g",
            vec![
                node("Relu", "A", &["b_out"], &["a_out"]),
                node("Relu", "B", &["a_out"], &["b_out"]),
                node("Relu", "C", &["x"], &["y"]),
            ],
            vec![vi("x", 1, &[1])],
            vec![vi_untyped("y")],
            vec![],
        ),
        13,
    );
    let e = expect(&m, &["graph `g` has a cycle"]);
    match e {
        OnnxError::Cycle { nodes, .. } => {
            assert_eq!(nodes.len(), 3);
            assert_eq!(nodes[0], nodes[2]);
            assert!(nodes.contains(&"A".to_string()) && nodes.contains(&"B".to_string()));
        }
        e => panic!("{e}"),
    }
    // A node consuming its own output.
    let m = model(
        graph(
            "g",
            vec![node("Add", "self", &["x", "s"], &["s"])],
            vec![vi("x", 1, &[1])],
            vec![vi_untyped("s")],
            vec![],
        ),
        13,
    );
    expect(&m, &["cycle: self -> self"]);
}

#[test]
fn negative_and_absurd_dims() {
    let mut w = f32_tensor("w", &[1], &[1.0]);
    w.dims = vec![-1];
    expect(&with_init(w), &["initializer `w`", "dim 0 is -1"]);

    let m = model(
        graph(
            "g",
            vec![],
            vec![vi("x", 1, &[2, -5])],
            vec![vi_untyped("x")],
            vec![],
        ),
        13,
    );
    expect(&m, &["input `x`", "dim 1 is -5"]);

    // 4·10^15 bytes declared, 4 present: an error, found without allocating.
    let mut w = f32_tensor("w", &[1], &[1.0]);
    w.dims = vec![1_000_000, 1_000_000, 1_000];
    let t = Instant::now();
    expect(
        &with_init(w.clone()),
        &["raw_data has 4 bytes", "need 4000000000000000"],
    );
    w.raw_data = Bytes::new();
    w.float_data = vec![1.0];
    expect(&with_init(w), &["float_data has 1 values"]);
    assert!(t.elapsed().as_secs() < 2);

    let mut w = f32_tensor("w", &[1], &[1.0]);
    w.dims = vec![i64::MAX, 4];
    expect(&with_init(w), &["initializer `w`", "overflow"]);
}

#[test]
fn raw_data_length_must_fit() {
    let mut w = f32_tensor("w", &[3], &[1.0, 2.0]);
    w.dims = vec![3];
    expect(&with_init(w), &["raw_data has 8 bytes", "need 12"]);
    let mut w = f32_tensor("w", &[1], &[1.0]);
    w.float_data = vec![1.0];
    expect(&with_init(w), &["both raw_data and float_data"]);
    let mut w = f32_tensor("w", &[1], &[1.0]);
    w.data_type = 8;
    expect(&with_init(w), &["STRING tensor must use string_data"]);
    let mut w = f32_tensor("w", &[1], &[1.0]);
    w.data_type = 99;
    expect(&with_init(w), &["unknown ONNX data type 99"]);
    let mut w = f32_tensor("w", &[1], &[1.0]);
    w.data_type = 0;
    expect(&with_init(w), &["UNDEFINED"]);
    let mut w = f32_tensor("w", &[2], &[]);
    w.raw_data = Bytes::new();
    w.int64_data = vec![1, 2];
    expect(&with_init(w), &["int64_data cannot hold a DT_FLOAT"]);
    let mut w = f32_tensor("w", &[1], &[1.0]);
    w.segment = Some(Default::default());
    expect(&with_init(w), &["unsupported: segmented"]);
}

fn external(loc: &str, offset: &str, length: &str) -> TensorProto {
    let mut w = f32_tensor("w", &[4], &[]);
    w.raw_data = Bytes::new();
    w.data_location = 1;
    w.external_data = [("location", loc), ("offset", offset), ("length", length)]
        .iter()
        .map(|(k, v)| StringStringEntryProto {
            key: k.to_string(),
            value: v.to_string(),
        })
        .collect();
    w
}

fn import_in(dir: &std::path::Path, m: &ModelProto) -> Result<onnx::OnnxModel, OnnxError> {
    let path = dir.join("m.onnx");
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    onnx::import_file(&path)
}

#[test]
fn external_data_errors() {
    let root = temp_dir("extbad");
    let dir = root.join("model");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("w.bin"), [0u8; 10]).unwrap();
    std::fs::write(root.join("outside.bin"), [0u8; 16]).unwrap();
    let cases: Vec<(TensorProto, &str)> = vec![
        (
            external("w.bin", "0", "16"),
            "beyond the end of `w.bin` (10 bytes)",
        ),
        (external("w.bin", "8", "16"), "bytes 8..24"),
        (external("w.bin", "x", "16"), "`offset` is `x`"),
        (external("w.bin", "0", "8"), "`length` is 8 bytes"),
        (
            external("../outside.bin", "0", "16"),
            "must be a relative path",
        ),
        (
            external("/etc/passwd", "0", "16"),
            "must be a relative path",
        ),
        (external("missing.bin", "0", "16"), "`missing.bin`"),
        (external("", "0", "16"), "no `location`"),
    ];
    for (w, msg) in cases {
        let e = import_in(&dir, &with_init(w)).unwrap_err();
        assert!(matches!(e, OnnxError::ExternalData { .. }), "{e}");
        assert!(e.to_string().contains("tensor `w`: external data"), "{e}");
        assert!(e.to_string().contains(msg), "`{e}` lacks `{msg}`");
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(root.join("outside.bin"), dir.join("link.bin")).unwrap();
        let e = import_in(&dir, &with_init(external("link.bin", "0", "16"))).unwrap_err();
        assert!(e.to_string().contains("leads outside"), "{e}");
    }
}

#[test]
fn bad_names_and_attributes() {
    let mut n = node("Relu", "r", &["x"], &["y"]);
    n.attribute.push(attr_int("_onnx_name", 1));
    let m = model(
        graph(
            "g",
            vec![n],
            vec![vi("x", 1, &[1])],
            vec![vi_untyped("y")],
            vec![],
        ),
        13,
    );
    expect(&m, &["attribute `_onnx_name`", "reserved"]);

    let mut n = node("Relu", "r", &["x"], &["y"]);
    n.attribute.push(attr_int("a", 1));
    n.attribute.push(attr_int("a", 2));
    let m = model(
        graph(
            "g",
            vec![n],
            vec![vi("x", 1, &[1])],
            vec![vi_untyped("y")],
            vec![],
        ),
        13,
    );
    expect(&m, &["attribute `a`", "given twice"]);

    let mut n = node("Relu", "r", &["x"], &["y"]);
    let mut a = attr_int("a", 1);
    a.ref_attr_name = "outer".into();
    n.attribute.push(a);
    let m = model(
        graph(
            "g",
            vec![n],
            vec![vi("x", 1, &[1])],
            vec![vi_untyped("y")],
            vec![],
        ),
        13,
    );
    expect(&m, &["unsupported: attribute references"]);

    let m = model(
        graph(
            "g",
            vec![],
            vec![vi("x", 1, &[1]), vi("x", 1, &[1])],
            vec![vi_untyped("x")],
            vec![],
        ),
        13,
    );
    expect(&m, &["input `x`", "listed twice"]);

    let mut m = with_init(f32_tensor("w", &[1], &[1.0]));
    m.graph
        .as_mut()
        .unwrap()
        .initializer
        .push(f32_tensor("w", &[1], &[2.0]));
    expect(&m, &["initializer `w`", "defined twice"]);

    let m = model(
        graph(
            "g",
            vec![node("", "r", &[], &["y"])],
            vec![],
            vec![vi_untyped("y")],
            vec![],
        ),
        13,
    );
    expect(&m, &["node `", "no op_type"]);

    // rge's own op types are refused in the default domain, kept as nodes in another one.
    for t in ["Data", "Const", "NetOutput"] {
        let m = model(
            graph(
                "g",
                vec![node(t, "r", &[], &["y"])],
                vec![],
                vec![vi_untyped("y")],
                vec![],
            ),
            13,
        );
        expect(&m, &["node `r`", &format!("op type `{t}`")]);
        let mut n = node(t, "r", &[], &["y"]);
        n.domain = "custom".into();
        let m = model(
            graph("g", vec![n], vec![], vec![vi_untyped("y")], vec![]),
            13,
        );
        let im = import_proto(&m).unwrap();
        let p = onnx::export(&im).unwrap();
        assert_eq!(p.graph.unwrap().node[0].op_type, t);
    }
}

#[test]
fn export_errors_name_the_node() {
    let mut g = ComputeGraph::new("g");
    let root = g.root();
    let op = OpDesc::new("c", "Const").with_output("", TensorDesc::default());
    g.add_node(root, op).unwrap();
    let e = onnx::export(&g).unwrap_err();
    assert!(
        e.to_string().contains("Const `c`") && e.to_string().contains("no `value`"),
        "{e}"
    );

    let mut g = ComputeGraph::new("g");
    let root = g.root();
    let t = Tensor::new(
        TensorDesc::with_shape_dtype(Shape::new([1]), DataType::Qint8),
        vec![1u8],
    );
    let mut op = OpDesc::new("q", "Const").with_output("", t.desc.clone());
    op.attrs_mut().set("value", t);
    g.add_node(root, op).unwrap();
    let e = onnx::export(&g).unwrap_err();
    assert!(e.to_string().contains("DT_QINT8 has no ONNX type"), "{e}");
}
