//! Bad input: each case is a `GeError` naming the file and the graph/op/field at fault, never a
//! panic, and no allocation follows an untrusted length.

mod ge_support;

use bytes::Bytes;
use ge_support::*;
use prost::Message;
use rge_formats::ge::{GeError, GeModel, ReadContext, WriteOptions};
use rge_formats::ge_proto::attr_def::Value as V;
use rge_formats::ge_proto::{
    AttrDef, GraphDef, ModelDef, NamedAttrs, OpDef, ShapeDef, TensorDef, TensorDescriptor,
};

fn nd(dims: &[i64]) -> TensorDescriptor {
    TensorDescriptor {
        dtype: 1,
        shape: Some(ShapeDef { dim: dims.to_vec() }),
        layout: "ND".into(),
        ..Default::default()
    }
}

fn op(name: &str, inputs: &[&str], n_in: usize, n_out: usize) -> OpDef {
    OpDef {
        name: name.into(),
        r#type: "T".into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        input_desc: vec![nd(&[2]); n_in],
        output_desc: vec![nd(&[2]); n_out],
        ..Default::default()
    }
}

fn model(ops: Vec<OpDef>) -> ModelDef {
    ModelDef {
        graph: vec![GraphDef {
            name: "g".into(),
            op: ops,
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn err(def: &ModelDef) -> String {
    let e = GeModel::from_model_def(def, &ReadContext::new("bad.pb")).unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("bad.pb"), "{msg}");
    assert_eq!(e.file(), "bad.pb");
    msg
}

fn has(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "`{msg}` lacks `{p}`");
    }
}

#[test]
fn truncated_and_corrupt_binaries_never_panic() {
    let good = std::fs::read(data_dir().join("quirks.pb")).unwrap();
    let mut decode_errors = 0;
    for cut in (1..good.len()).step_by(7) {
        match GeModel::from_binary_bytes(Bytes::copy_from_slice(&good[..cut]), "cut.pb") {
            Ok(_) => {}
            Err(e) => {
                assert!(e.to_string().starts_with("cut.pb"), "{e}");
                decode_errors += matches!(e, GeError::Decode { .. }) as usize;
            }
        }
    }
    assert!(decode_errors > 0);
    // Byte flips from a fixed-seed generator.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2000 {
        let mut b = good.clone();
        for _ in 0..3 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let i = (state as usize) % b.len();
            b[i] ^= (state >> 32) as u8 | 1;
        }
        if let Ok(m) = GeModel::from_binary_bytes(Bytes::from(b), "flip.pb") {
            // Whatever reads, writes and reads back.
            let w = m.to_binary_bytes(&WriteOptions::dump()).unwrap();
            GeModel::from_binary_bytes(w, "again.pb").unwrap();
        }
    }
}

/// Models are read op by op; an op whose own bytes do not decode inside a well-formed model
/// still gives the decoder's error, as a model decoded whole does.
#[test]
fn an_op_that_does_not_decode_is_a_decode_error() {
    // graph (7) { name (1) "g", op (6) { name (1) of length 5 with no bytes } }.
    let graph = [0x0a, 0x01, b'g', 0x32, 0x02, 0x0a, 0x05];
    let mut b = vec![0x3a, graph.len() as u8];
    b.extend_from_slice(&graph);
    let e = GeModel::from_binary_bytes(Bytes::from(b), "op.pb").unwrap_err();
    assert!(matches!(e, GeError::Decode { .. }), "{e}");
    has(&e.to_string(), &["op.pb"]);
}

#[test]
fn wrong_wire_type_is_a_decode_error() {
    // ModelDef.graph (field 7) as a varint instead of a message.
    let e = GeModel::from_binary_bytes(Bytes::from_static(&[0x38, 0x01]), "wire.pb").unwrap_err();
    assert!(matches!(e, GeError::Decode { .. }), "{e}");
    has(&e.to_string(), &["wire.pb", "wire type"]);
    // A length running past the end.
    let e =
        GeModel::from_binary_bytes(Bytes::from_static(&[0x3a, 0x7f, 0x0a]), "len.pb").unwrap_err();
    assert!(matches!(e, GeError::Decode { .. }), "{e}");
}

#[test]
fn dangling_and_malformed_inputs() {
    let m = model(vec![op("a", &[], 0, 1), op("b", &["nope:0"], 1, 1)]);
    has(
        &err(&m),
        &["graph `g`", "op `b`", "nope:0", "no node named `nope`"],
    );
    let m = model(vec![op("a", &[], 0, 1), op("b", &["a:3"], 1, 1)]);
    has(&err(&m), &["op `b`", "`a:3`", "no output 3"]);
    let m = model(vec![op("a", &[], 0, 1), op("b", &["a"], 1, 1)]);
    has(&err(&m), &["op `b`", "input[0] `a`", "no `:`"]);
    let m = model(vec![op("a", &[], 0, 1), op("b", &["a:x"], 1, 1)]);
    has(&err(&m), &["input[0] `a:x`", "not a 32-bit integer"]);
    let m = model(vec![op("a", &[], 0, 1), op("b", &["a:-7"], 1, 1)]);
    has(&err(&m), &["output index -7"]);
    let m = model(vec![op("a", &[], 0, 1), op("b", &["a:0", "a:0"], 1, 1)]);
    has(
        &err(&m),
        &["op `b`", "input[1] `a:0`", "feeds input 1", "1 input descs"],
    );
    let mut m = model(vec![op("a", &[], 0, 1)]);
    m.graph[0].output.push("a:-1".into());
    has(&err(&m), &["graph output[0] `a:-1`", "data output"]);
    let mut m = model(vec![op("a", &[], 0, 1)]);
    m.graph[0].input.push("zz:0".into());
    has(&err(&m), &["graph input[0] `zz:0`", "no node named `zz`"]);
    let mut b = op("b", &["a:0"], 1, 1);
    b.attr.insert(
        "_rge_data_input_count".into(),
        AttrDef {
            value: Some(V::I(5)),
        },
    );
    has(
        &err(&model(vec![op("a", &[], 0, 1), b])),
        &["op `b`", "_rge_data_input_count"],
    );
}

#[test]
fn duplicate_names() {
    let m = model(vec![op("a", &[], 0, 1), op("a", &[], 0, 1)]);
    has(
        &err(&m),
        &["graph `g`", "op `a`", "already has a node named `a`"],
    );
    let mut m = model(vec![]);
    m.graph.push(GraphDef {
        name: "g".into(),
        ..Default::default()
    });
    has(&err(&m), &["graph[1]", "`g`", "unique"]);
    has(&err(&ModelDef::default()), &["no graph"]);
}

#[test]
fn subgraph_ownership() {
    let with_sub = |name: &str, sub: &str| {
        let mut o = op(name, &[], 0, 0);
        o.subgraph_name.push(sub.into());
        o
    };
    let m = model(vec![with_sub("call", "absent")]);
    let e = GeModel::from_model_def(&m, &ReadContext::new("bad.pb")).unwrap_err();
    assert!(matches!(e, GeError::MissingSubgraph { .. }));
    has(&e.to_string(), &["bad.pb", "op `call`", "`absent`"]);
    // s1 → s2 → s1: a cycle below the root.
    let mut m = model(vec![with_sub("call", "s1")]);
    for (g, next) in [("s1", "s2"), ("s2", "s1")] {
        m.graph.push(GraphDef {
            name: g.into(),
            op: vec![with_sub(&format!("{g}_call"), next)],
            ..Default::default()
        });
    }
    has(
        &err(&m),
        &[
            "graph `s2`",
            "op `s2_call`",
            "subgraph `s1` already belongs to op `call`",
        ],
    );
    // A subgraph naming the root.
    let mut m = model(vec![with_sub("call", "s1")]);
    m.graph.push(GraphDef {
        name: "s1".into(),
        op: vec![with_sub("back", "g")],
        ..Default::default()
    });
    has(&err(&m), &["op `back`", "root graph `g`", "cyclic"]);
}

#[test]
fn bad_dims_and_tensor_sizes() {
    let mut a = op("a", &[], 1, 1);
    a.input_desc[0].shape = Some(ShapeDef { dim: vec![2, -5] });
    has(
        &err(&model(vec![a])),
        &["op `a`", "input_desc[0]", "shape", "dim 1 is -5"],
    );
    let mut a = op("a", &[], 0, 1);
    a.output_desc[0]
        .attr
        .insert("origin_shape".into(), ge_support::list_i(None, &[-9]));
    has(
        &err(&model(vec![a])),
        &["output_desc[0]", "origin_shape", "-9"],
    );
    // A Const declaring 10^15 bytes with 4 bytes of data, and one with none.
    for data in [&[1u8, 2, 3, 4][..], &[][..]] {
        let mut c = op("c", &[], 0, 1);
        c.r#type = "Const".into();
        let mut d = nd(&[1_000_000_000_000_000]);
        d.dtype = 4; // DT_UINT8
        c.attr.insert(
            "value".into(),
            AttrDef {
                value: Some(V::T(TensorDef {
                    desc: Some(d),
                    data: Bytes::copy_from_slice(data),
                })),
            },
        );
        has(
            &err(&model(vec![c])),
            &["op `c` (Const)", "attr `value`", "1000000000000000"],
        );
    }
    // Overflowing sizes.
    let mut c = op("c", &[], 0, 1);
    c.attr.insert(
        "t".into(),
        AttrDef {
            value: Some(V::T(TensorDef {
                desc: Some(nd(&[i64::MAX, 8])),
                data: Bytes::new(),
            })),
        },
    );
    has(&err(&model(vec![c])), &["attr `t`", "overflows"]);
    // An op's desc declaring 2^62 floats (2^64 bytes, overflowing), and one of 2^40 bytes.
    let mut a = op("big", &[], 0, 1);
    a.output_desc[0].shape = Some(ShapeDef { dim: vec![1 << 62] });
    has(
        &err(&model(vec![a])),
        &["op `big`", "output_desc[0]", "overflows"],
    );
    let mut a = op("big", &[], 1, 1);
    a.input_desc[0].shape = Some(ShapeDef {
        dim: vec![1 << 20, 1 << 18],
    });
    has(
        &err(&model(vec![a])),
        &["op `big`", "input_desc[0]", "1099511627776 bytes"],
    );
}

#[test]
fn bad_strings_and_nesting() {
    let mut a = op("a", &[], 0, 0);
    a.attr.insert(
        "s".into(),
        AttrDef {
            value: Some(V::S(Bytes::from_static(b"\xff\xfe"))),
        },
    );
    has(&err(&model(vec![a])), &["op `a`", "attr `s`", "UTF-8"]);
    let mut v = AttrDef {
        value: Some(V::I(1)),
    };
    for _ in 0..80 {
        let mut na = NamedAttrs::default();
        na.attr.insert("k".into(), v);
        v = AttrDef {
            value: Some(V::Func(na)),
        };
    }
    let mut a = op("a", &[], 0, 0);
    a.attr.insert("deep".into(), v);
    has(&err(&model(vec![a])), &["attr `deep`", "nest more than"]);
}

#[test]
fn bad_text() {
    let e = GeModel::from_text_str("graph { name: \"g\" op { name: 3 } }", "bad.txt").unwrap_err();
    assert!(matches!(e, GeError::Text { .. }));
    has(&e.to_string(), &["bad.txt:1:"]);
}

fn weights_model(dir: &std::path::Path, location: &str, length: i64) -> std::path::PathBuf {
    let mut c = op("w", &[], 0, 1);
    c.r#type = "Const".into();
    c.attr.insert("location".into(), ge_support::s(location));
    c.attr.insert("length".into(), ge_support::i(length));
    let path = dir.join("model.pb");
    std::fs::write(&path, model(vec![c]).encode_to_vec()).unwrap();
    path
}

#[test]
fn bad_external_weights() {
    let dir = scratch("badweights");
    std::fs::write(dir.join("w.bin"), [0u8; 8]).unwrap();
    let path = weights_model(&dir, "w.bin", 8);
    let m = GeModel::read_binary(&path).unwrap();
    let w: &rge_ir::Tensor = m
        .graph
        .op(m.graph.find_node(m.graph.root(), "w").unwrap())
        .unwrap()
        .attrs()
        .require("value")
        .unwrap();
    assert_eq!(w.data.len(), 8);
    let path = weights_model(&dir, "w.bin", 9);
    has(
        &GeModel::read_binary(&path).unwrap_err().to_string(),
        &["model.pb", "op `w` (Const)", "`length` is 9", "holds 8"],
    );
    let path = weights_model(&dir, "w.bin", -1);
    has(
        &GeModel::read_binary(&path).unwrap_err().to_string(),
        &["`length` is -1"],
    );
    let path = weights_model(&dir, "../escape.bin", 1);
    has(
        &GeModel::read_binary(&path).unwrap_err().to_string(),
        &["op `w`", "escapes"],
    );
    let path = weights_model(&dir, "/etc/hostname", 1);
    has(
        &GeModel::read_binary(&path).unwrap_err().to_string(),
        &["absolute"],
    );
    let path = weights_model(&dir, "absent.bin", 1);
    has(
        &GeModel::read_binary(&path).unwrap_err().to_string(),
        &["cannot open weight file"],
    );
    #[cfg(unix)]
    {
        let outside = scratch("outside");
        std::fs::write(outside.join("secret"), [1u8; 4]).unwrap();
        let _ = std::os::unix::fs::symlink(outside.join("secret"), dir.join("link.bin"));
        let path = weights_model(&dir, "link.bin", 4);
        has(
            &GeModel::read_binary(&path).unwrap_err().to_string(),
            &["leads out of the model's directory"],
        );
    }
    // Declared size beyond the loaded data.
    let mut c = op("w", &[], 0, 1);
    c.r#type = "Const".into();
    c.output_desc[0].shape = Some(ShapeDef { dim: vec![100] });
    c.attr.insert("location".into(), ge_support::s("w.bin"));
    c.attr.insert("length".into(), ge_support::i(8));
    std::fs::write(dir.join("m2.pb"), model(vec![c]).encode_to_vec()).unwrap();
    has(
        &GeModel::read_binary(dir.join("m2.pb"))
            .unwrap_err()
            .to_string(),
        &["weights from `w.bin`", "needs 400"],
    );
}

#[test]
fn files_over_two_gib_are_refused_unread() {
    let dir = scratch("huge");
    let path = dir.join("huge.pb");
    let f = std::fs::File::create(&path).unwrap();
    f.set_len(i32::MAX as u64 + 1).unwrap(); // sparse: nothing is written
    let e = GeModel::read_binary(&path).unwrap_err();
    assert!(matches!(e, GeError::TooLarge { .. }), "{e}");
    has(
        &e.to_string(),
        &["huge.pb", "2147483648 bytes", "2147483647"],
    );
    let e = GeModel::read_text(&path).unwrap_err();
    assert!(matches!(e, GeError::TooLarge { .. }));
    let _ = std::fs::remove_file(&path);
    let e = GeModel::read_binary(dir.join("absent.pb")).unwrap_err();
    assert!(matches!(e, GeError::Io { .. }));
    has(&e.to_string(), &["absent.pb"]);
}
