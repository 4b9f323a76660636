//! Round trips: read → write → read gives an equal model, write → read → write identical bytes
//! (binary and text), for built and random graphs; plus the reader's rule-by-rule choices.

mod ge_support;

use bytes::Bytes;
use ge_support::*;
use proptest::prelude::*;
use rge_formats::ge::{GeModel, ReadContext, WeightMode, WriteOptions};
use rge_formats::ge_proto::attr_def::Value as V;
use rge_formats::ge_proto::{
    AttrDef, AttrGroups, GraphDef, ModelDef, OpDef, ShapeDef, TensorDef, TensorDescriptor,
};
use rge_ir::{
    AttrValue, ComputeGraph, DataType, Format, InAnchor, IrInputKind, NamedAttrs, OpDesc,
    OutAnchor, Shape, Tensor, TensorDesc,
};

fn text_round_trip(m: &GeModel, o: &WriteOptions) -> GeModel {
    let t1 = m.to_text(o).unwrap();
    let back = GeModel::from_text_str(&t1, "t1.txt").unwrap_or_else(|e| panic!("{e}\n{t1}"));
    assert_eq!(back.to_text(o).unwrap(), t1, "text write → read → write");
    back
}

fn binary_round_trip(m: &GeModel, o: &WriteOptions) -> GeModel {
    let b1 = m.to_binary_bytes(o).unwrap();
    // The bytes streamed op by op are those of the whole ModelDef.
    assert_eq!(
        b1.to_vec(),
        prost::Message::encode_to_vec(&m.to_model_def(o)),
        "streamed bytes"
    );
    let back = GeModel::from_binary_bytes(b1.clone(), "b1.pb").unwrap();
    assert_eq!(
        back.to_binary_bytes(o).unwrap(),
        b1,
        "binary write → read → write"
    );
    back
}

fn read_def(def: &ModelDef) -> GeModel {
    GeModel::from_model_def(def, &ReadContext::new("def")).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn built_models_round_trip() {
    for m in [partition_model(), if_model(), quirks_model()] {
        assert_eq!(text_round_trip(&m, &WriteOptions::dump()), m);
        assert_eq!(binary_round_trip(&m, &WriteOptions::dump()), m);
        let plain = binary_round_trip(&m, &WriteOptions::default());
        assert_eq!(binary_round_trip(&plain, &WriteOptions::default()), plain);
        m.graph.verify().unwrap();
    }
}

#[test]
fn weights_inline_external_and_omitted() {
    let m = external_weights_model();
    let dir = scratch("weights");
    let ext = WriteOptions::default().with_weights(WeightMode::External);
    m.write_binary(dir.join("m.pb"), &ext).unwrap();
    m.write_text(dir.join("m.txt"), &ext).unwrap();
    let w = dir.join("air_weight/ext_model/Const_main_bias_file");
    assert_eq!(std::fs::read(&w).unwrap().len(), 24);
    let b = GeModel::read_binary(dir.join("m.pb")).unwrap();
    let t = GeModel::read_text(dir.join("m.txt")).unwrap();
    assert_eq!(b, m);
    assert_eq!(t, m);
    // In memory, external weights have nowhere to go.
    assert!(m.to_binary_bytes(&ext).is_err());
    let (def, files) = m.to_model_def_and_weights(&ext);
    assert_eq!(files.len(), 1);
    assert_eq!(
        files[0].location,
        "air_weight/ext_model/Const_main_bias_file"
    );
    // Read from memory, `location`/`length` stay as attributes.
    let mem = read_def(&def);
    let bias = mem.graph.find_node(mem.graph.root(), "bias").unwrap();
    assert!(mem.graph.op(bias).unwrap().attrs().contains("location"));
    // Omitted weights.
    let omit = m.to_model_def(&WriteOptions::dump().with_weights(WeightMode::Omit));
    let bias_def = omit.graph[0].op.iter().find(|o| o.name == "bias").unwrap();
    assert!(!bias_def.attr.contains_key("value"));
}

#[test]
fn weights_are_slices_of_the_input() {
    let m = if_model();
    let bytes = m.to_binary_bytes(&WriteOptions::default()).unwrap();
    let back = GeModel::from_binary_bytes(bytes.clone(), "m.pb").unwrap();
    let bias = back.graph.find_node(back.graph.root(), "bias").unwrap();
    let t: &Tensor = back
        .graph
        .op(bias)
        .unwrap()
        .attrs()
        .require("value")
        .unwrap();
    let range = bytes.as_ptr() as usize..bytes.as_ptr() as usize + bytes.len();
    assert!(
        range.contains(&(t.data.as_ptr() as usize)),
        "weights were copied"
    );
}

fn one_op_model(o: OpDef) -> ModelDef {
    ModelDef {
        graph: vec![GraphDef {
            name: "g".into(),
            op: vec![o],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn nd(dims: &[i64]) -> TensorDescriptor {
    TensorDescriptor {
        dtype: 1,
        shape: Some(ShapeDef { dim: dims.to_vec() }),
        layout: "ND".into(),
        ..Default::default()
    }
}

#[test]
fn desc_priorities_and_legacy_overrides() {
    let mut td = nd(&[2]);
    td.layout = "NCHW".into();
    td.size = 3;
    td.attr.insert(
        "format_for_int".into(),
        i(Format::NC1HWC0.with_c0_format(5).unwrap().raw() as i64),
    );
    td.attr.insert("origin_format".into(), s("NHWC"));
    td.attr.insert("origin_format_for_int".into(), i(1));
    td.attr.insert("size".into(), i(64));
    td.attr.insert("reuse_input".into(), b(true));
    td.attr.insert("device_type".into(), s("CPU"));
    td.attr.insert("__tensor_desc_data_type__".into(), i(18));
    td.attr.insert("origin_data_type".into(), s("DT_FLOAT16"));
    td.attr.insert("keep".into(), s("me"));
    let o = OpDef {
        name: "a".into(),
        r#type: "T".into(),
        input_desc: vec![td],
        ..Default::default()
    };
    let m = read_def(&one_op_model(o));
    let g = &m.graph;
    let d = g
        .op(g.find_node(g.root(), "a").unwrap())
        .unwrap()
        .input(0)
        .unwrap()
        .clone();
    assert_eq!(d.format(), Format::NC1HWC0.with_c0_format(5).unwrap());
    assert_eq!(d.origin_format(), Format::NHWC);
    assert_eq!(d.dtype(), DataType::Qint8);
    assert_eq!(d.origin_dtype(), DataType::Float16);
    assert_eq!((d.size(), d.reuse_input()), (64, true));
    assert_eq!(d.device_type(), rge_ir::DeviceType::Cpu);
    let keys: Vec<&str> = d.attrs().keys().collect();
    assert_eq!(keys, ["keep"]);
    assert!(d.origin_shape().is_none());
}

/// rge's own dtypes (proto and ge values 200..=202) and the op domain/opset fields, which GE's
/// OpDef carries as the attrs `_rge_domain` / `_rge_opset`.
#[test]
fn new_dtypes_and_domain_opset_round_trip() {
    let mut g = ComputeGraph::new("m");
    let new_types = [
        DataType::Float8E4M3Fnuz,
        DataType::Float8E5M2Fnuz,
        DataType::Uint4,
    ];
    let mut op = OpDesc::new("gelu", "Gelu");
    for dt in new_types {
        let d = TensorDesc::with_shape_dtype(Shape::new([4]), dt);
        op.add_input("", d.clone()).unwrap();
        op.add_output("", d).unwrap();
    }
    op.attrs_mut()
        .set("to", AttrValue::DataType(DataType::Uint4));
    op.attrs_mut()
        .set("tos", AttrValue::ListDataType(new_types.to_vec()));
    op.set_domain("com.microsoft");
    op.set_opset(Some(1));
    g.add_root_node(op).unwrap();
    let mut relu = OpDesc::new("relu", "Relu");
    relu.set_opset(Some(17));
    g.add_root_node(relu).unwrap();
    let m = GeModel::dump_model(g);

    let def = m.to_model_def(&WriteOptions::default());
    let od = &def.graph[0].op[0];
    let dtypes: Vec<i32> = od.input_desc.iter().map(|d| d.dtype).collect();
    assert_eq!(dtypes, [200, 201, 202]);
    assert!(matches!(&od.attr["_rge_domain"].value, Some(V::S(s)) if &s[..] == b"com.microsoft"));
    assert!(matches!(od.attr["_rge_opset"].value, Some(V::I(1))));
    assert!(matches!(od.attr["to"].value, Some(V::Dt(202))));
    let relu = &def.graph[0].op[1];
    assert!(
        !relu.attr.contains_key("_rge_domain"),
        "default domain: no attr"
    );
    assert!(matches!(relu.attr["_rge_opset"].value, Some(V::I(17))));

    for o in [WriteOptions::default(), WriteOptions::dump()] {
        for back in [binary_round_trip(&m, &o), text_round_trip(&m, &o)] {
            assert_eq!(back, m);
            let g = &back.graph;
            let op = g.op(g.find_node(g.root(), "gelu").unwrap()).unwrap();
            assert_eq!((op.domain(), op.opset()), ("com.microsoft", Some(1)));
            assert!(!op.attrs().contains("_rge_domain") && !op.attrs().contains("_rge_opset"));
            let got: Vec<DataType> = op.outputs().iter().map(|d| d.dtype()).collect();
            assert_eq!(got, new_types);
            assert_eq!(
                op.attrs().get("to"),
                Some(&AttrValue::DataType(DataType::Uint4))
            );
        }
    }
    // GE has no name for the new proto values, so its text prints them as numbers.
    let text = m.to_text(&WriteOptions::default()).unwrap();
    assert!(text.contains("dtype: 202"), "{text}");
    assert!(text.contains("key: \"_rge_domain\""), "{text}");

    // A wrongly typed `_rge_domain` / `_rge_opset` is an error, not a lost domain.
    for (key, value) in [("_rge_domain", V::I(3)), ("_rge_opset", V::S("x".into()))] {
        let mut bad = def.clone();
        bad.graph[0].op[0]
            .attr
            .insert(key.into(), AttrDef { value: Some(value) });
        let e = GeModel::from_model_def(&bad, &ReadContext::new("bad")).unwrap_err();
        assert!(e.to_string().contains(key), "{e}");
    }
}

#[test]
fn special_op_attrs() {
    let mut o = OpDef {
        name: "a".into(),
        r#type: "T".into(),
        input_desc: vec![nd(&[1]), nd(&[1])],
        output_desc: vec![nd(&[1])],
        ..Default::default()
    };
    o.attr
        .insert("_input_name_key".into(), list_s(None, &["b", "x"]));
    o.attr
        .insert("_input_name_value".into(), list_i(None, &[1, 0]));
    // The old pair is ignored when the new one is there.
    o.attr
        .insert("_input_name_idx_key".into(), list_s(None, &["q"]));
    o.attr
        .insert("_input_name_idx_value".into(), list_i(None, &[0]));
    o.attr
        .insert("_ir_inputs_key".into(), list_s(None, &["x", "b"]));
    o.attr
        .insert("_ir_inputs_value".into(), list_i(None, &[0, 1]));
    // Not what the IR says: kept as a plain attribute.
    o.attr.insert("_opt_input".into(), list_s(None, &["z"]));
    o.attr
        .insert("_ir_outputs_key".into(), list_s(None, &["y"]));
    o.attr
        .insert("_ir_outputs_value".into(), list_i(None, &[7]));
    let m = read_def(&one_op_model(o));
    let g = &m.graph;
    let op = g.op(g.find_node(g.root(), "a").unwrap()).unwrap();
    assert_eq!(op.input_index("b"), Some(1));
    assert_eq!(op.input_index("q"), None);
    let ir = op.ir_meta().unwrap();
    assert_eq!(ir.inputs[1], ("b".to_string(), IrInputKind::Optional));
    assert!(
        ir.outputs.is_empty(),
        "an invalid kind drops the IR outputs"
    );
    assert_eq!(
        op.attrs().get("_opt_input"),
        Some(&AttrValue::ListString(vec!["z".into()]))
    );
    let def = m.to_model_def(&WriteOptions::default());
    let od = &def.graph[0].op[0];
    assert!(od.has_out_attr);
    let Some(V::List(l)) = &od.attr["_opt_input"].value else {
        panic!()
    };
    assert_eq!(l.val_type, 0, "special lists carry no val_type");
    let Some(V::List(l)) = &od.attr["_output_name_key"].value else {
        panic!()
    };
    assert_eq!((l.val_type, l.s.len()), (0, 1));
    assert_eq!(read_def(&def), m);
}

#[test]
fn unnamed_ports_are_double_underscore_names() {
    let mut g = ComputeGraph::new("g");
    let mut op = OpDesc::new("a", "T").with_ports(2, 1);
    op.insert_input(0, "front", TensorDesc::default()).unwrap();
    g.add_root_node(op).unwrap();
    let m = GeModel::new(g);
    let def = m.to_model_def(&WriteOptions::default());
    let Some(V::List(l)) = &def.graph[0].op[0].attr["_input_name_key"].value else {
        panic!()
    };
    let names: Vec<&[u8]> = l.s.iter().map(|s| &s[..]).collect();
    assert_eq!(names, [&b"__input0"[..], b"__input1", b"front"]);
    let back = read_def(&def);
    let op = back
        .graph
        .op(back.graph.find_node(back.graph.root(), "a").unwrap())
        .unwrap();
    assert_eq!(op.input_index("front"), Some(0));
    assert_eq!(op.input_index("__input0"), Some(1));
    // The name insert_input gave the moved desc stays with it.
    assert_eq!(op.input_name(2).unwrap(), "__input1");
    assert_eq!(binary_round_trip(&back, &WriteOptions::default()), back);
}

#[test]
fn nested_graphs_expressions_and_groups() {
    let mut inner = ComputeGraph::new("body");
    let a = inner
        .add_root_node(OpDesc::new("a", "Data").with_output("y", TensorDesc::default()))
        .unwrap();
    let b = inner
        .add_root_node(OpDesc::new("b", "Relu").with_input("x", TensorDesc::default()))
        .unwrap();
    inner.add_edge(a, 0, b, 0).unwrap();
    let mut g = ComputeGraph::new("g");
    let mut op = OpDesc::new("f", "Func");
    op.attrs_mut().set("g", inner.clone());
    op.attrs_mut()
        .set("gs", vec![inner.clone(), ComputeGraph::new("empty")]);
    let mut expr = NamedAttrs::new("__rge_expression__");
    expr.attrs.set("expression", b"s0 * 2".to_vec());
    op.attrs_mut().set("e", expr);
    op.attrs_mut().set("tds", vec![TensorDesc::default()]);
    op.attrs_mut().set("ts", vec![Tensor::scalar_i64(3)]);
    op.attrs_mut().set("nas", vec![NamedAttrs::new("x")]);
    g.add_root_node(op).unwrap();
    let m = GeModel::new(g);
    let def = m.to_model_def(&WriteOptions::dump());
    assert!(matches!(
        def.graph[0].op[0].attr["e"].value,
        Some(V::Expression(_))
    ));
    assert_eq!(text_round_trip(&m, &WriteOptions::dump()), m);
    // attr_groups are skipped.
    let mut def = def;
    def.attr_groups = Some(AttrGroups::default());
    def.graph[0].attr_groups = Some(AttrGroups::default());
    assert_eq!(read_def(&def), m);
}

#[test]
fn control_inputs_orphans_and_holes() {
    let o = |name: &str, inputs: &[&str]| OpDef {
        name: name.into(),
        r#type: "T".into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        input_desc: vec![nd(&[1])],
        output_desc: vec![nd(&[1])],
        ..Default::default()
    };
    let mut def = one_op_model(o("a", &[""]));
    def.graph[0].op.push(o("b:c", &["a:0", "a:-1", "a:-1"]));
    def.graph[0].op.push(o("d", &["b:c:0"]));
    def.graph.push(GraphDef {
        name: "orphan".into(),
        op: vec![o("x", &[""])],
        ..Default::default()
    });
    let m = read_def(&def);
    let g = &m.graph;
    let bc = g.node(g.find_node(g.root(), "b:c").unwrap()).unwrap();
    assert_eq!(
        bc.in_ctrl_peers().len(),
        1,
        "a repeated control input links once"
    );
    let d = g.node(g.find_node(g.root(), "d").unwrap()).unwrap();
    assert_eq!(g.name_of(d.peer_of_input(0).unwrap().node), "b:c");
    let orphan = g.subgraph_by_name("orphan").unwrap();
    assert_eq!(g.parent_node(orphan), None);
    assert_eq!(binary_round_trip(&m, &WriteOptions::dump()), m);
}

#[test]
fn cross_links_round_trip_in_any_place() {
    let mut g = ComputeGraph::new("g");
    let t = TensorDesc::with_shape_dtype(Shape::new([1]), DataType::Float);
    let mk = |n: &str| {
        OpDesc::new(n, "T")
            .with_input("a", t.clone())
            .with_input("b", t.clone())
            .with_output("y", t.clone())
    };
    let p = g.add_root_node(mk("p")).unwrap();
    let q = g.add_root_node(mk("q")).unwrap();
    let r = g.add_root_node(mk("r")).unwrap();
    // Control source on the last data input (the case GE's counter cannot place).
    g.link(p.out_ctrl(), r.input(1)).unwrap();
    g.link(q.out(0), r.in_ctrl()).unwrap();
    g.link(p.out(0), r.in_ctrl()).unwrap();
    g.add_control_edge(q, r).unwrap();
    g.link(
        OutAnchor { node: p, index: 0 },
        InAnchor { node: q, index: 0 },
    )
    .unwrap();
    let m = GeModel::new(g);
    assert_eq!(text_round_trip(&m, &WriteOptions::dump()), m);
    assert_eq!(binary_round_trip(&m, &WriteOptions::dump()), m);
    // Without the peer indexes, p:0's consumers come back in file order.
    let plain = binary_round_trip(&m, &WriteOptions::default());
    let g = &plain.graph;
    let p = g.node(g.find_node(g.root(), "p").unwrap()).unwrap();
    let peers: Vec<&str> = p
        .peers_of_output(0)
        .iter()
        .map(|a| g.name_of(a.node))
        .collect();
    assert_eq!(peers, ["q", "r"]);
}

#[test]
fn weights_desc_from_output_when_value_is_absent() {
    let dir = scratch("weights2");
    std::fs::write(dir.join("w.bin"), 7.5f32.to_le_bytes()).unwrap();
    let mut o = OpDef {
        name: "w".into(),
        r#type: "Constant".into(),
        output_desc: vec![nd(&[1])],
        ..Default::default()
    };
    o.attr.insert("location".into(), s("./w.bin"));
    o.attr.insert("length".into(), i(4));
    let def = one_op_model(o);
    let ctx = ReadContext::new("m.pb").with_base_dir(&dir);
    let m = GeModel::from_model_def(&def, &ctx).unwrap();
    let n = m.graph.find_node(m.graph.root(), "w").unwrap();
    let t: &Tensor = m.graph.op(n).unwrap().attrs().require("value").unwrap();
    assert_eq!(t.as_f32().unwrap(), vec![7.5]);
    assert!(!m.graph.op(n).unwrap().attrs().contains("location"));
    // The value written inline reads back the same.
    assert_eq!(binary_round_trip(&m, &WriteOptions::default()), m);
    let def2 = TensorDef {
        desc: None,
        data: Bytes::from_static(&[1, 2]),
    };
    let mut o = OpDef {
        name: "c".into(),
        r#type: "Const".into(),
        ..Default::default()
    };
    o.attr.insert(
        "value".into(),
        AttrDef {
            value: Some(V::T(def2)),
        },
    );
    read_def(&one_op_model(o));
}

// ---- random graphs ----

#[derive(Debug, Clone)]
struct NodeSpec {
    ins: Vec<String>,
    outs: Vec<String>,
    ty: u8,
    attr: (i64, f32, String),
    dims: Vec<i64>,
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    let port = prop_oneof![Just(String::new()), "[a-z]{1,3}"];
    (
        prop::collection::vec(port.clone(), 0..4),
        prop::collection::vec(port, 0..3),
        0u8..4,
        (any::<i64>(), -1e6f32..1e6, "[ -~]{0,8}"),
        prop::collection::vec(-1i64..5, 0..4),
    )
        .prop_map(|(ins, outs, ty, attr, dims)| NodeSpec {
            ins,
            outs,
            ty,
            attr,
            dims,
        })
}

fn build(nodes: &[NodeSpec], links: &[(usize, i32, usize, i32)], sub: bool) -> GeModel {
    let mut g = ComputeGraph::new("rand");
    let mut ids = Vec::new();
    for (k, s) in nodes.iter().enumerate() {
        let ty = ["Data", "Add", "NetOutput", "Const"][s.ty as usize];
        let mut op = OpDesc::new(format!("n{k}"), ty);
        let d = TensorDesc::with_shape_dtype(Shape::from_slice(&s.dims), DataType::Float16);
        for name in &s.ins {
            if op.add_input(name, d.clone()).is_err() {
                op.add_input("", d.clone()).unwrap();
            }
        }
        for name in &s.outs {
            if op.add_output(name, d.clone()).is_err() {
                op.add_output("", d.clone()).unwrap();
            }
        }
        op.attrs_mut().set("i", s.attr.0);
        op.attrs_mut().set("f", s.attr.1);
        op.attrs_mut().set("s", s.attr.2.clone());
        // Some ops get a domain and an opset, which travel as rge's own OpDef attrs.
        if s.attr.0 % 3 == 0 {
            op.set_domain("com.example");
            op.set_opset(Some(s.attr.0));
        }
        ids.push(g.add_root_node(op).unwrap());
    }
    for &(src, out, dst, inp) in links {
        let (src, dst) = (ids[src % ids.len()], ids[dst % ids.len()]);
        let so = g.node(src).unwrap().out_data_count() as i32;
        let di = g.node(dst).unwrap().in_data_count() as i32;
        let out = if so == 0 || out < 0 { -1 } else { out % so };
        let inp = if di == 0 || inp < 0 { -1 } else { inp % di };
        let _ = g.link(
            OutAnchor {
                node: src,
                index: out,
            },
            InAnchor {
                node: dst,
                index: inp,
            },
        );
    }
    if sub {
        let s = g.add_subgraph(ids[0], 0, "sub0").unwrap();
        let d = g
            .add_node(
                s,
                OpDesc::new("d", "Data").with_output("", TensorDesc::default()),
            )
            .unwrap();
        let o = g
            .add_node(
                s,
                OpDesc::new("o", "NetOutput").with_input("", TensorDesc::default()),
            )
            .unwrap();
        g.add_edge(d, 0, o, 0).unwrap();
        g.add_control_edge(d, o).unwrap();
    }
    g.set_input_nodes(g.root(), ids.iter().copied().take(1).collect())
        .unwrap();
    GeModel::dump_model(g)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn random_graphs_round_trip(
        nodes in prop::collection::vec(node_spec(), 1..8),
        links in prop::collection::vec((0usize..8, -1i32..3, 0usize..8, -1i32..4), 0..24),
        sub in any::<bool>(),
    ) {
        let m = build(&nodes, &links, sub);
        m.graph.verify().unwrap();
        prop_assert_eq!(&text_round_trip(&m, &WriteOptions::dump()), &m);
        prop_assert_eq!(&binary_round_trip(&m, &WriteOptions::dump()), &m);
        let plain = binary_round_trip(&m, &WriteOptions::default());
        plain.graph.verify().unwrap();
    }
}

/// A chain of `n` Relus behind a Data: enough ops for many chunks of the streamed writer.
fn relu_chain(n: usize) -> GeModel {
    let mut g = ComputeGraph::new("chain");
    let t = desc(&[1, 16], DataType::Float, Format::ND);
    let data = g
        .add_root_node(OpDesc::new("x", "Data").with_output("y", t.clone()))
        .unwrap();
    g.add_input_node(data).unwrap();
    let mut prev = data;
    for k in 0..n {
        let op = OpDesc::new(format!("relu{k}"), "Relu")
            .with_input("x", t.clone())
            .with_output("y", t.clone());
        let node = g.add_root_node(op).unwrap();
        g.add_edge(prev, 0, node, 0).unwrap();
        prev = node;
    }
    g.add_output_node(prev, 0).unwrap();
    GeModel::dump_model(g)
}

#[test]
fn files_written_in_two_passes_are_the_whole_model_def_for_any_budget() {
    let dir = scratch("two-passes");
    // 20k ops: 20 chunks, more than one window on any pool; and a model with subgraphs.
    for (name, m) in [("chain", relu_chain(20_000)), ("if", if_model())] {
        let whole = prost::Message::encode_to_vec(&m.to_model_def(&WriteOptions::default()));
        // Nothing kept (every chunk encoded again), a few chunks kept, everything kept.
        for keep in [Some(0), Some(whole.len() / 3), None] {
            let opts = WriteOptions {
                keep_bytes: keep,
                ..WriteOptions::default()
            };
            let path = dir.join(format!("{name}.pb"));
            m.write_binary(&path, &opts).unwrap();
            let written = std::fs::read(&path).unwrap();
            assert_eq!(written.len(), whole.len(), "{name}, keep {keep:?}");
            assert!(written == whole, "{name}, keep {keep:?}: bytes differ");
            assert_eq!(
                GeModel::read_binary(&path).unwrap(),
                m,
                "{name}, keep {keep:?}"
            );
        }
    }
}
