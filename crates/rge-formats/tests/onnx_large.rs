//! ONNX import of large graphs, which takes other paths than small ones: the file's nodes are
//! decoded apart and in parallel (nodes of strings only as views of the file), and a graph's
//! names are resolved while its nodes are made. Each test checks that a large graph imports
//! as the one `ModelProto::decode` and the small-graph behaviour say it should.

mod onnx_common;

use bytes::Bytes;
use onnx_common::models;
use onnx_common::*;
use prost::Message;
use rge_formats::onnx::{self, names, OnnxModel};
use rge_formats::onnx_proto::{GraphProto, ModelProto, NodeProto, ValueInfoProto};
use rge_ir::ComputeGraph;

/// Past both thresholds (2048 nodes for the split decode, 1024 to plan in parallel).
const PAD: usize = 3000;

fn pad_nodes(n: usize) -> Vec<NodeProto> {
    (0..n)
        .map(|k| node("PadOp", &format!("pad{k}"), &[], &[&format!("pad_v{k}")]))
        .collect()
}

/// `g` with `n` unrelated nodes before or after its own.
fn padded(g: &GraphProto, n: usize, front: bool) -> GraphProto {
    let mut g = g.clone();
    if front {
        let mut p = pad_nodes(n);
        p.append(&mut g.node);
        g.node = p;
    } else {
        g.node.extend(pad_nodes(n));
    }
    g
}

fn with_graph(m: &ModelProto, g: GraphProto) -> ModelProto {
    let mut m = m.clone();
    m.graph = Some(g);
    m
}

/// Through the file's bytes (the split decode) and through a decoded `ModelProto`.
fn both(m: &ModelProto) -> (Result<OnnxModel, String>, Result<OnnxModel, String>) {
    let a = onnx::import_bytes(Bytes::from(m.encode_to_vec()), "test.onnx");
    let b = onnx::import_proto(m, "test.onnx", None);
    (a.map_err(|e| e.to_string()), b.map_err(|e| e.to_string()))
}

fn assert_same(name: &str, m: &ModelProto) {
    match both(m) {
        (Ok(a), Ok(b)) => {
            assert!(a == b, "{name}: the graphs differ");
            assert_eq!(a.warnings, b.warnings, "{name}");
        }
        (a, b) => assert_eq!(a.err(), b.err(), "{name}"),
    }
}

/// A chain of `n` Add/Relu nodes named `n<k>` on values `v<k>`; `edit` changes node k.
fn chain(n: usize, edit: impl Fn(usize, &mut NodeProto)) -> ModelProto {
    let mut nodes = Vec::with_capacity(n);
    for k in 0..n {
        let prev = if k == 0 {
            "x".to_string()
        } else {
            format!("v{}", k - 1)
        };
        let mut nd = if k % 2 == 0 {
            node("Add", &format!("n{k}"), &[&prev, "x"], &[&format!("v{k}")])
        } else {
            node("Relu", &format!("n{k}"), &[&prev], &[&format!("v{k}")])
        };
        edit(k, &mut nd);
        nodes.push(nd);
    }
    let last = format!("v{}", n - 1);
    let g = graph(
        "chain",
        nodes,
        vec![vi("x", 1, &[2])],
        vec![vi(&last, 1, &[2])],
        vec![],
    );
    model(g, 17)
}

/// Root node `name` with its op and producers, for comparing graphs node by node.
fn node_text(g: &ComputeGraph, name: &str) -> String {
    let n = g.find_node(g.root(), name).expect("node");
    let node = g.node(n).unwrap();
    let ins: Vec<_> = node
        .input_peers()
        .iter()
        .map(|p| p.map(|p| (g.name_of(p.node).to_string(), p.index)))
        .collect();
    format!("{:?} {ins:?}", g.op(n).unwrap())
}

#[test]
fn test_models_padded_import_as_decoded_whole() {
    for c in models::cases() {
        let g = c.model.graph.clone().unwrap();
        for front in [true, false] {
            let m = with_graph(&c.model, padded(&g, PAD, front));
            assert_same(c.name, &m);
        }
    }
}

#[test]
fn padding_after_the_nodes_changes_nothing_of_theirs() {
    // The test models' own nodes import the same whether their graph is small or large.
    for c in models::cases() {
        let small = onnx::import_proto(&c.model, "test.onnx", None).unwrap();
        let g = c.model.graph.clone().unwrap();
        let m = with_graph(&c.model, padded(&g, PAD, false));
        let large = onnx::import_bytes(Bytes::from(m.encode_to_vec()), "test.onnx").unwrap();
        assert_eq!(small.warnings, large.warnings, "{}", c.name);
        let (sg, lg) = (&small.graph, &large.graph);
        for name in sg.node_names(sg.root()) {
            if !name.starts_with("NetOutput") {
                assert_eq!(node_text(sg, name), node_text(lg, name), "{}", c.name);
            }
        }
    }
}

#[test]
fn names_of_a_large_graph() {
    // Unnamed nodes, a node named like an earlier one (late, so that nodes before it keep
    // their names on the way), a name produced twice, a forward reference.
    let m = chain(4000, |k, n| match k {
        10 => n.name.clear(),
        3000 => n.name = "n5".into(),
        3500 => n.output[0] = "v100".into(),
        3501 => n.input[0] = "v100".into(),
        _ => {}
    });
    assert_same("chain", &m);
    let o = onnx::import_bytes(Bytes::from(m.encode_to_vec()), "test.onnx").unwrap();
    let g = &o.graph;
    assert!(g.find_node(g.root(), "Add_1").is_some(), "{:?}", o.warnings);
    assert!(g.find_node(g.root(), "n5_1").is_some());
    assert_eq!(
        o.warnings,
        [
            "graph `chain`: node #3000 is named `n5` like an earlier node, graph input or \
             initializer; renamed `n5_1`",
            "graph `chain`: value `v100` is produced 2 times (not SSA); the output of node \
             `n100` is renamed `v100_1` (a later producer shadows it)",
        ]
    );
    // n101 reads the first v100; n3501 the second.
    for (reader, producer) in [("n101", "n100"), ("n3501", "n3500")] {
        let n = g.find_node(g.root(), reader).unwrap();
        let p = g.node(n).unwrap().peer_of_input(0).unwrap();
        assert_eq!(g.name_of(p.node), producer);
    }

    // Nodes in reverse order: every input a forward reference, sorted back.
    let mut m = chain(3000, |_, _| {});
    m.graph.as_mut().unwrap().node.reverse();
    assert_same("reversed", &m);
    let o = onnx::import_bytes(Bytes::from(m.encode_to_vec()), "test.onnx").unwrap();
    let order = o.graph.node_names(o.graph.root());
    assert_eq!(&order[..3], ["x", "n0", "n1"]);
}

#[test]
fn value_info_of_a_large_graph() {
    let mut m = chain(3000, |_, _| {});
    let g = m.graph.as_mut().unwrap();
    g.value_info.push(vi("v7", 7, &[3]));
    g.value_info.push(vi("v7", 1, &[4, 5]));
    g.value_info.push(vi("x", 6, &[9]));
    g.value_info.push(ValueInfoProto {
        name: "v8".into(),
        ..Default::default()
    });
    assert_same("value_info", &m);
    let o = onnx::import_proto(&m, "test.onnx", None).unwrap();
    let gr = &o.graph;
    let n7 = gr.find_node(gr.root(), "n7").unwrap();
    let d = gr.op(n7).unwrap().output(0).unwrap();
    assert_eq!(d.shape().dims(), [4, 5]);
    assert_eq!(d.attrs().get_str(names::ONNX_NAME).unwrap(), Some("v7"));
    // The consumer's input desc is the producer's, less the name.
    let n8 = gr.find_node(gr.root(), "n8").unwrap();
    let i = gr.op(n8).unwrap().input(0).unwrap();
    assert_eq!(i.shape().dims(), [4, 5]);
    assert!(i.attrs().get(names::ONNX_NAME).is_none());

    // A bad type fails the import, whatever comes before it.
    let mut m = chain(3000, |k, n| {
        if k == 5 {
            n.name = "n4".into();
        }
    });
    m.graph
        .as_mut()
        .unwrap()
        .value_info
        .push(vi("v9", 999, &[]));
    let (a, b) = both(&m);
    assert_eq!(a.unwrap_err(), b.unwrap_err());
}

#[test]
fn bodies_in_a_large_graph() {
    // Large bodies capturing outer values, in a large graph.
    let mut m = chain(3000, |_, _| {});
    let g = m.graph.as_mut().unwrap();
    let mut then_nodes = pad_nodes(1500);
    then_nodes.push(node("Add", "t", &["v10", "pad_v3"], &["t_out"]));
    then_nodes.push(node("Mul", "t2", &["t_out", "v2999"], &["t2_out"]));
    let then_g = graph(
        "then",
        then_nodes,
        vec![],
        vec![vi("t2_out", 1, &[2])],
        vec![],
    );
    let else_g = graph(
        "else",
        vec![node("Identity", "", &["v5"], &["e_out"])],
        vec![],
        vec![vi_untyped("e_out")],
        vec![],
    );
    let mut iff = node("If", "iff", &["x"], &["y"]);
    iff = with_attr(iff, attr_graph("then_branch", then_g));
    iff = with_attr(iff, attr_graph("else_branch", else_g));
    g.node.insert(100, iff);
    g.output.push(vi_untyped("y"));
    assert_same("bodies", &m);
}

#[test]
fn errors_of_a_large_graph() {
    let cases = [
        chain(3000, |k, n| {
            if k == 2000 {
                n.input.push("nowhere".into());
            }
        }),
        chain(3000, |k, n| {
            if k == 2000 {
                n.op_type.clear();
            }
        }),
        chain(3000, |k, n| {
            if k == 2000 {
                n.op_type.clear();
                n.name = "n1".into();
            }
        }),
        chain(3000, |k, n| {
            if k == 2000 {
                n.op_type = "Const".into();
            }
        }),
    ];
    for (i, m) in cases.iter().enumerate() {
        let (a, b) = both(m);
        assert!(a.is_err(), "case {i}");
        assert_eq!(a.err(), b.err(), "case {i}");
    }
}

#[test]
fn bad_bytes_fail_as_the_one_decode_does() {
    let full = chain(3000, |k, n| {
        if k % 7 == 0 {
            n.attribute.push(attr_int("alpha", k as i64));
        }
    })
    .encode_to_vec();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for k in 0..24 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let at = (seed % full.len() as u64) as usize;
        let mut b = full.clone();
        if k % 2 == 0 {
            b.truncate(at);
        } else {
            b[at] ^= 1 << (seed >> 60 & 7);
        }
        let whole = ModelProto::decode(&b[..]);
        let got = onnx::import_bytes(Bytes::from(b), "test.onnx");
        match whole {
            Err(e) => {
                let got = got.err().map(|e| e.to_string()).unwrap_or_default();
                assert!(got.contains(&e.to_string()), "case {k}: {got}");
            }
            Ok(m) => {
                let want = onnx::import_proto(&m, "test.onnx", None);
                match (got, want) {
                    (Ok(a), Ok(b)) => assert!(a == b && a.warnings == b.warnings, "case {k}"),
                    (a, b) => assert_eq!(
                        a.err().map(|e| e.to_string()),
                        b.err().map(|e| e.to_string()),
                        "case {k}"
                    ),
                }
            }
        }
    }
}

#[test]
fn nesting_limit_is_the_one_decodes() {
    // prost refuses messages nested past its limit: a node decoded apart counts the levels
    // of the whole model.
    for depth in [30usize, 31, 32, 33, 34] {
        let leaf = node("Identity", "", &["c"], &["d"]);
        let mut inner = graph("leaf", vec![leaf], vec![], vec![vi_untyped("d")], vec![]);
        for lvl in 0..depth {
            let e = node("Identity", "", &["c"], &["d"]);
            let else_g = graph("e", vec![e], vec![], vec![vi_untyped("d")], vec![]);
            let mut n = node("If", &format!("if{lvl}"), &["c"], &["d"]);
            n = with_attr(n, attr_graph("then_branch", inner));
            n = with_attr(n, attr_graph("else_branch", else_g));
            inner = graph(
                &format!("g{lvl}"),
                vec![n],
                vec![],
                vec![vi_untyped("d")],
                vec![],
            );
        }
        inner.input.push(vi("c", 9, &[]));
        let m = model(padded(&inner, PAD, false), 17);
        let bytes = m.encode_to_vec();
        let whole = ModelProto::decode(&bytes[..]);
        let got = onnx::import_bytes(Bytes::from(bytes), "test.onnx");
        match whole {
            Ok(_) => assert!(got.is_ok(), "depth {depth}: {:?}", got.err()),
            Err(e) => assert!(
                got.unwrap_err().to_string().contains(&e.to_string()),
                "depth {depth}"
            ),
        }
    }
}
