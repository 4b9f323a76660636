//! ONNX import: the GE parser's test models, zero-copy weights, types, subgraphs and captures.

mod onnx_common;

use bytes::Bytes;
use onnx_common::models;
use onnx_common::*;
use prost::Message;
use rge_formats::onnx::{self, decode_strings, names, OnnxModel};
use rge_ir::attr_names::{DATA_INDEX, PARENT_NODE_INDEX};
use rge_ir::{AttrValue, ComputeGraph, DataType, GraphId, NodeId, Shape, Tensor};

fn find(g: &ComputeGraph, gid: GraphId, name: &str) -> NodeId {
    g.find_node(gid, name)
        .unwrap_or_else(|| panic!("no node `{name}` in {:?}", g.node_names(gid)))
}

fn value_name(g: &ComputeGraph, n: NodeId, i: usize) -> Option<&str> {
    let d = g.op(n)?.output(i)?;
    d.attrs().get_str(names::ONNX_NAME).unwrap()
}

fn int_attr(g: &ComputeGraph, n: NodeId, k: &str) -> Option<i64> {
    g.op(n).unwrap().attrs().get_int(k).unwrap()
}

fn producer(g: &ComputeGraph, n: NodeId, input: usize) -> (String, i32) {
    let p = g.node(n).unwrap().peer_of_input(input).expect("linked");
    (g.name_of(p.node).to_string(), p.index)
}

fn sub(g: &ComputeGraph, name: &str) -> GraphId {
    g.subgraph_by_name(name)
        .unwrap_or_else(|| panic!("no subgraph `{name}`"))
}

fn tensor(g: &ComputeGraph, n: NodeId) -> &Tensor {
    g.op(n).unwrap().attrs().get_as("value").unwrap().unwrap()
}

fn import(name: &str) -> OnnxModel {
    onnx::import_file(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn clip_v9() {
    let m = import("onnx_clip_v9.onnx");
    assert_eq!(
        (m.ir_version, m.producer_name.as_str()),
        (7, "onnx-mul_test")
    );
    assert_eq!(m.opset_imports, [(String::new(), 9)]);
    assert!(m.warnings.is_empty());
    let g = &m.graph;
    let root = g.root();
    assert_eq!(g.name(), "test_clip_case_V9");
    assert_eq!(g.node_names(root), ["X", "Clip_1", "NetOutput"]);
    assert_eq!(
        g.graph_attrs(root)
            .unwrap()
            .get_int("_onnx_opset_")
            .unwrap(),
        Some(9)
    );
    let x = find(g, root, "X");
    let op = g.op(x).unwrap();
    assert_eq!(op.op_type(), "Data");
    assert_eq!(int_attr(g, x, DATA_INDEX), Some(0));
    assert_eq!(op.output(0).unwrap().dtype(), DataType::Float);
    assert_eq!(op.output(0).unwrap().shape(), &Shape::new([3, 4, 5]));
    assert_eq!(op.input_count(), 1, "GE's Data has one (unlinked) input");
    let clip = find(g, root, "Clip_1");
    let op = g.op(clip).unwrap();
    assert_eq!(op.attrs().get_float("max").unwrap(), Some(1.0));
    assert_eq!(op.attrs().get_float("min").unwrap(), Some(-1.0));
    assert_eq!(value_name(g, clip, 0), Some("Y"));
    // The graph output's type reaches the producer and the NetOutput.
    assert_eq!(op.output(0).unwrap().shape(), &Shape::new([3, 4, 5]));
    assert_eq!(op.input(0).unwrap().dtype(), DataType::Float);
    let out = find(g, root, "NetOutput");
    assert_eq!(producer(g, out, 0), ("Clip_1".into(), 0));
    assert_eq!(g.output_nodes(root), [(clip, 0)]);
    assert_eq!(g.input_nodes(root), [x]);
}

#[test]
fn const_types_map_to_tensors() {
    let m = import("onnx_const_type.onnx");
    let g = &m.graph;
    let root = g.root();
    let le = |v: &[u64], w: usize| -> Vec<u8> {
        v.iter()
            .flat_map(|x| x.to_le_bytes()[..w].to_vec())
            .collect()
    };
    let f32s = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let f64s = |v: &[f64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    let expect: [(&str, DataType, Vec<u8>); 5] = [
        ("B0", DataType::Int64, le(&[1, 2], 8)),
        ("B1", DataType::Uint64, le(&[1, 2], 8)),
        ("B2", DataType::Complex64, f32s(&[1.0, 0.0, 2.0, 0.0])),
        ("B4", DataType::Double, f64s(&[1.0, 2.0])),
        ("B5", DataType::Complex128, f64s(&[1.0, 0.0, 2.0, 0.0])),
    ];
    for (name, dt, bytes) in expect {
        let n = find(g, root, name);
        assert_eq!(g.op(n).unwrap().op_type(), "Const");
        let t = tensor(g, n);
        assert_eq!(
            (t.desc.dtype(), t.desc.shape()),
            (dt, &Shape::new([1, 2])),
            "{name}"
        );
        assert_eq!(&t.data[..], &bytes[..], "{name}");
        t.validate().unwrap();
        assert_eq!(value_name(g, n, 0), Some(name));
    }
    let s = tensor(g, find(g, root, "B3"));
    assert_eq!(s.desc.dtype(), DataType::String);
    let strings = decode_strings(&s.data, 2).unwrap();
    assert_eq!(strings, [Bytes::from("1"), Bytes::from("2")]);
    let add = find(g, root, "test_add_3");
    assert_eq!(producer(g, add, 1), ("B3".into(), 0));
    assert_eq!(
        g.op(add).unwrap().input(1).unwrap().dtype(),
        DataType::String
    );
}

#[test]
fn conv2d() {
    let m = import("onnx_conv2d.onnx");
    let g = &m.graph;
    let root = g.root();
    assert_eq!(g.node_names(root), ["x", "W", "B", "Conv_1", "NetOutput"]);
    let w = tensor(g, find(g, root, "W"));
    assert_eq!(w.as_f32().unwrap(), vec![1.0; 9]);
    let conv = find(g, root, "Conv_1");
    let op = g.op(conv).unwrap();
    assert_eq!(
        op.attrs().get_list_int("pads").unwrap(),
        Some(&[1, 1, 1, 1][..])
    );
    assert_eq!(op.attrs().get_int("group").unwrap(), Some(1));
    assert_eq!(op.input(1).unwrap().shape(), &Shape::new([1, 1, 3, 3]));
    assert!(
        op.input(1).unwrap().attrs().is_empty(),
        "no `_onnx_name` on input descs"
    );
    assert_eq!(producer(g, conv, 2), ("B".into(), 0));
}

/// onnx_if.onnx is not SSA: `res` is the If's output and then the last Add's. Import reads the
/// file in order: the Add consumes the If's `res`, and the graph output `res` is the Add's; the
/// If's value is renamed `res_1` (with a warning) so that the export is valid SSA.
#[test]
fn if_not_ssa_and_captures() {
    let m = import("onnx_if.onnx");
    let g = &m.graph;
    let root = g.root();
    assert_eq!(m.warnings.len(), 1, "{:?}", m.warnings);
    assert!(m.warnings[0].contains("`res`") && m.warnings[0].contains("res_1"));
    let iff = find(g, root, "If_1");
    let last = find(g, root, "Add_2");
    assert_eq!(value_name(g, iff, 0), Some("res_1"));
    assert_eq!(value_name(g, last, 0), Some("res"));
    assert_eq!(producer(g, last, 1), ("If_1".into(), 0));
    assert_eq!(g.output_nodes(root), [(last, 0)]);
    // `add_out`, used by both branches, is one extra If input (after `cond`).
    let op = g.op(iff).unwrap();
    assert_eq!(op.input_count(), 2);
    assert_eq!(producer(g, iff, 1), ("Add_1".into(), 0));
    assert_eq!(int_attr(g, iff, names::FORMAL_INPUTS), Some(1));
    assert_eq!(
        op.subgraph_instance_names(),
        ["If_1_then_branch", "If_1_else_branch"]
    );
    for (s, onnx_name) in [
        ("If_1_then_branch", "then_body"),
        ("If_1_else_branch", "else_body"),
    ] {
        let b = sub(g, s);
        assert_eq!(g.parent_node(b), Some(iff));
        assert_eq!(
            g.graph_attrs(b)
                .unwrap()
                .get_str(names::GRAPH_NAME)
                .unwrap(),
            Some(onnx_name)
        );
        let d = g
            .subgraph_data_for_parent_input(b, 1)
            .expect("capture Data");
        assert_eq!(g.name_of(d), "add_out");
        assert_eq!(
            g.op(d).unwrap().attrs().get_bool(names::CAPTURE).unwrap(),
            Some(true)
        );
        assert_eq!(
            g.subgraph_output_for_parent_output(b, 0).map(|x| x.1),
            Some(0)
        );
        let id = find(g, b, "Identity_1");
        assert_eq!(producer(g, id, 0), ("add_out".into(), 0));
    }
}

/// onnx_if_const_intput.onnx: an If with no outputs (the checker refuses it). It imports as a
/// node with no outputs; its branches keep their outputs, bound to nothing.
#[test]
fn if_without_outputs() {
    let m = import("onnx_if_const_intput.onnx");
    let g = &m.graph;
    let root = g.root();
    let iff = find(g, root, "If_1");
    assert_eq!(g.op(iff).unwrap().output_count(), 0);
    assert_eq!(m.producer_name, "");
    for s in ["If_1_then_branch", "If_1_else_branch"] {
        let b = sub(g, s);
        let no = g.net_output(b).unwrap();
        let d = g.op(no).unwrap().input(0).unwrap();
        assert!(!d.attrs().contains(PARENT_NODE_INDEX));
        assert_eq!(d.shape(), &Shape::new([5]));
    }
    assert_eq!(m.warnings.len(), 2);
    let c = find(g, root, "Constant_1");
    assert_eq!(g.output_nodes(root), [(c, 0)]);
}

#[test]
fn raw_data_is_not_copied() {
    let weights: Vec<f32> = (0..4096).map(|i| i as f32).collect();
    let m = model(
        graph(
            "zc",
            vec![node("Relu", "r", &["w"], &["y"])],
            vec![],
            vec![vi("y", 1, &[4096])],
            vec![f32_tensor("w", &[4096], &weights)],
        ),
        13,
    );
    let buf = Bytes::from(m.encode_to_vec());
    let range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    let im = onnx::import_bytes(buf.clone(), "zc.onnx").unwrap();
    let t = tensor(&im.graph, find(&im.graph, im.graph.root(), "w"));
    assert!(
        range.contains(&(t.data.as_ptr() as usize)),
        "tensor data is a slice of the buffer"
    );
    assert_eq!(t.as_f32().unwrap(), weights);
}

#[test]
fn typed_fields_become_le_bytes() {
    let m = import_proto(&models::typed()).unwrap();
    let g = &m.graph;
    let root = g.root();
    let data = |n: &str| tensor(g, find(g, root, n)).data.to_vec();
    assert_eq!(data("f16"), [0x00, 0x3c, 0x00, 0xc0]);
    assert_eq!(data("i8"), [0xff, 2, 0x80]);
    assert_eq!(data("b"), [1, 0]);
    assert_eq!(data("i16"), (-300i16).to_le_bytes());
    assert_eq!(
        data("u32"),
        [4_000_000_000u32.to_le_bytes(), 1u32.to_le_bytes()].concat()
    );
    assert_eq!(data("i4"), [0x21, 0x0f]);
    assert_eq!(data("empty"), Vec::<u8>::new());
    let u4 = tensor(g, find(g, root, "u4"));
    assert_eq!(u4.desc.dtype(), DataType::Uint4);
    let fnuz = tensor(g, find(g, root, "f8fnuz"));
    assert_eq!(fnuz.desc.dtype(), DataType::Float8E4M3Fnuz);
    // First-class types: no desc attribute stands in for them.
    assert!(u4.desc.attrs().is_empty() && fnuz.desc.attrs().is_empty());
}

#[test]
fn six_bit_floats_pack_lsb_first() {
    let mut tp = f32_tensor("f6", &[4], &[]);
    tp.data_type = 27;
    tp.raw_data = Bytes::new();
    tp.int32_data = vec![0x3f, 0x01, 0x2a, 0x15];
    let m = model(
        graph(
            "f6",
            vec![node("Identity", "i", &["f6"], &["y"])],
            vec![],
            vec![],
            vec![tp],
        ),
        25,
    );
    let m = import_proto(&m).unwrap();
    let t = tensor(&m.graph, find(&m.graph, m.graph.root(), "f6"));
    let (x0, x1, x2, x3) = (0x3fu32, 0x01u32, 0x2au32, 0x15u32);
    let bits = x0 | x1 << 6 | x2 << 12 | x3 << 18;
    assert_eq!(&t.data[..], &bits.to_le_bytes()[..3]);
}

#[test]
fn dims_types_and_optional_io() {
    let m = import_proto(&models::dims_and_optional()).unwrap();
    let g = &m.graph;
    let root = g.root();
    let x = g.op(find(g, root, "x")).unwrap().output(0).unwrap().clone();
    assert_eq!(x.shape(), &Shape::new([-1, -1, 3]));
    let params: &[String] = x.attrs().get_as(names::DIM_PARAMS).unwrap().unwrap();
    assert_eq!(params, ["batch", "", ""]);
    // Clip(x, "", hi): input 1 is an unlinked anchor in its place.
    let clip = find(g, root, "clip");
    let n = g.node(clip).unwrap();
    assert_eq!(n.in_data_count(), 3);
    assert!(n.peer_of_input(1).is_none());
    assert_eq!(producer(g, clip, 2), ("hi".into(), 0));
    // value_info for `c` on the producer and the consumer's input desc.
    assert_eq!(
        g.op(clip).unwrap().output(0).unwrap().shape(),
        &Shape::new([-1, -1, 3])
    );
    let drop = find(g, root, "drop");
    assert_eq!(
        g.op(drop).unwrap().input(0).unwrap().shape(),
        &Shape::new([-1, -1, 3])
    );
    // Dropout's omitted mask output has no value name.
    assert_eq!(value_name(g, drop, 0), Some("d"));
    assert_eq!(value_name(g, drop, 1), None);
    // value_info without shape: unknown rank.
    let relu = find(g, root, "relu");
    assert!(g
        .op(relu)
        .unwrap()
        .output(0)
        .unwrap()
        .shape()
        .is_unknown_rank());
    // A sequence input keeps its TypeProto.
    // `hi` is an initializer also listed as an input (IR ≥ 4: a default value).
    let hi = g.op(find(g, root, "hi")).unwrap();
    assert_eq!(hi.attrs().get_bool(names::GRAPH_INPUT).unwrap(), Some(true));
    let seq = g.op(find(g, root, "seq")).unwrap().output(0).unwrap();
    assert_eq!(seq.dtype(), DataType::Undefined);
    assert!(seq.attrs().contains(names::ONNX_TYPE));
}

#[test]
fn loop_with_nested_captures() {
    let m = import_proto(&models::loop_capture()).unwrap();
    let g = &m.graph;
    let root = g.root();
    let lp = find(g, root, "loop");
    // Formal inputs M, cond, x; then the captures: `w` (used by the body and its If) and `x`
    // (the If's else branch names the outer `x`, which the body knows only as `v`).
    let ins: Vec<(String, i32)> = (0..g.node(lp).unwrap().in_data_count())
        .map(|k| producer(g, lp, k))
        .collect();
    assert_eq!(
        ins,
        [
            ("M".into(), 0),
            ("cond".into(), 0),
            ("x".into(), 0),
            ("w".into(), 0),
            ("x".into(), 0)
        ]
    );
    assert_eq!(int_attr(g, lp, names::FORMAL_INPUTS), Some(3));
    let body = sub(g, "loop_body");
    // Body inputs (iter, cond_in, v) ↔ (M, cond, x).
    for (k, name) in ["iter", "cond_in", "v"].iter().enumerate() {
        let d = g.subgraph_data_for_parent_input(body, k as i64).unwrap();
        assert_eq!(g.name_of(d), *name);
        assert_eq!(int_attr(g, d, DATA_INDEX), Some(k as i64));
    }
    let w = g.subgraph_data_for_parent_input(body, 3).unwrap();
    assert_eq!(g.name_of(w), "w");
    assert_eq!(int_attr(g, w, DATA_INDEX), Some(3));
    // Body outputs: cond_out binds to nothing, v3 → y (0), s → scan_out (1).
    let no = g.net_output(body).unwrap();
    let pni: Vec<Option<i64>> = (0..3)
        .map(|j| {
            g.op(no)
                .unwrap()
                .input(j)
                .unwrap()
                .attrs()
                .get_int(PARENT_NODE_INDEX)
                .unwrap()
        })
        .collect();
    assert_eq!(pni, [None, Some(0), Some(1)]);
    // The If in the body: cond_in, then captures v2 and w (then), x (else).
    let iff = find(g, body, "b_if");
    let ins: Vec<(String, i32)> = (0..4).map(|k| producer(g, iff, k)).collect();
    assert_eq!(
        ins,
        [
            ("cond_in".into(), 0),
            ("b_add".into(), 0),
            ("w".into(), 0),
            ("x".into(), 0)
        ]
    );
    let x_in_body = g.subgraph_data_for_parent_input(body, 4);
    assert_eq!(x_in_body.map(|d| g.name_of(d)), Some("x"));
    let then_g = sub(g, "b_if_then_branch");
    let mul = find(g, then_g, "t_mul");
    assert_eq!(producer(g, mul, 0), ("v2".into(), 0));
    assert_eq!(producer(g, mul, 1), ("w".into(), 0));
    assert_eq!(g.parent_input_of_data(find(g, then_g, "w")), Some(2));
    let else_g = sub(g, "b_if_else_branch");
    assert_eq!(g.parent_input_of_data(find(g, else_g, "x")), Some(3));
    // Symbolic output dim.
    let out = g
        .op(g.net_output(root).unwrap())
        .unwrap()
        .input(1)
        .unwrap()
        .clone();
    assert_eq!(out.shape(), &Shape::new([-1, 2]));
}

/// Captures are ordered by the outer value's name, not by the order the (unsorted) body's nodes
/// were read in, so that an exported (sorted) body imports the same.
#[test]
fn captures_are_in_name_order() {
    let m = import_proto(&models::unsorted_body()).unwrap();
    let g = &m.graph;
    let iff = find(g, g.root(), "iff");
    let ins: Vec<(String, i32)> = (0..3).map(|k| producer(g, iff, k)).collect();
    assert_eq!(ins, [("c".into(), 0), ("x".into(), 0), ("y".into(), 0)]);
    let then_g = sub(g, "iff_then_branch");
    assert_eq!(g.node_names(then_g), ["x", "y", "ta", "tb", "NetOutput"]);
    assert_eq!(g.parent_input_of_data(find(g, then_g, "y")), Some(2));
    assert_eq!(int_attr(g, find(g, then_g, "y"), DATA_INDEX), Some(1));
    let else_g = sub(g, "iff_else_branch");
    assert_eq!(g.parent_input_of_data(find(g, else_g, "y")), Some(2));
}

#[test]
fn scan_binding_by_opset() {
    for (opset, first) in [(8, 1), (9, 0)] {
        let m = import_proto(&models::scan(opset)).unwrap();
        let g = &m.graph;
        let body = sub(g, "scan_body");
        let acc = find(g, body, "acc");
        assert_eq!(g.parent_input_of_data(acc), Some(first), "opset {opset}");
        assert_eq!(g.parent_input_of_data(find(g, body, "xi")), Some(first + 1));
    }
}

#[test]
fn unsorted_graph_is_put_in_order() {
    let m = import_proto(&models::unsorted()).unwrap();
    assert_eq!(
        m.graph.node_names(m.graph.root()),
        ["x", "a", "b", "c", "NetOutput"]
    );
}

#[test]
fn node_names_are_made_unique() {
    let m = import_proto(&models::names_ir3()).unwrap();
    let g = &m.graph;
    let root = g.root();
    // Input `x` keeps its name; the node `x` (another namespace in ONNX) becomes `x_1`.
    assert_eq!(
        g.node_names(root),
        ["x", "w", "x_1", "dup", "dup_1", "Relu_1", "NetOutput"]
    );
    assert_eq!(m.warnings.len(), 2, "{:?}", m.warnings);
    // IR 3 lists initializers as inputs: `w` is a Const (every initializer is an input below
    // IR 4, so it is not marked as a default; export lists it again).
    let w = find(g, root, "w");
    assert_eq!(g.op(w).unwrap().op_type(), "Const");
    assert_eq!(
        g.op(w)
            .unwrap()
            .attrs()
            .get_bool(names::GRAPH_INPUT)
            .unwrap(),
        None
    );
    assert_eq!(g.input_nodes(root).len(), 1);
    let p = onnx::export(&m).unwrap();
    let inputs: Vec<&str> = p
        .graph
        .as_ref()
        .unwrap()
        .input
        .iter()
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(inputs, ["x", "w"]);
}

#[test]
fn attributes_of_every_kind() {
    let m = import_proto(&models::attrs()).unwrap();
    let g = &m.graph;
    let n = find(g, g.root(), "custom");
    let a = g.op(n).unwrap().attrs();
    assert_eq!(a.get_str("s").unwrap(), Some("héllo"));
    assert_eq!(a.get_as::<&[u8]>("sb").unwrap(), Some(&[0xff, 0][..]));
    assert_eq!(a.get_list_int("is").unwrap(), Some(&[][..]));
    assert!(matches!(a.get("fs"), Some(AttrValue::ListFloat(v)) if v == &[1.0, 2.0]));
    assert!(matches!(a.get("ss"), Some(AttrValue::ListString(v)) if v == &["a", "b"]));
    assert!(matches!(a.get("ts"), Some(AttrValue::ListTensor(v)) if v.len() == 1));
    assert!(
        matches!(a.get("sp"), Some(AttrValue::NamedAttrs(na)) if na.name == names::SPARSE_TENSOR)
    );
    match a.get("tp") {
        Some(AttrValue::TensorDesc(d)) => assert_eq!(d.shape(), &Shape::new([-1, -1])),
        v => panic!("tp: {v:?}"),
    }
    assert!(matches!(a.get("tq"), Some(AttrValue::NamedAttrs(na)) if na.name == names::TYPE_PROTO));
    assert!(matches!(a.get("tps"), Some(AttrValue::ListTensorDesc(v)) if v.len() == 1));
    assert_eq!(g.op(n).unwrap().domain(), "com.example");
    assert!(!a.contains("_onnx_domain"));
    assert_eq!(a.get_str(names::DOC_STRING).unwrap(), Some("a custom op"));
    let slots: &[String] = a.get_as(names::SUBGRAPH_ATTRS).unwrap().unwrap();
    assert_eq!(slots, ["gs", "gs", "g"]);
    let lists: &[String] = a.get_as(names::SUBGRAPH_LISTS).unwrap().unwrap();
    assert_eq!(lists, ["gs", "empty_gs"]);
    assert_eq!(
        g.op(n).unwrap().subgraph_instance_names(),
        ["custom_gs_0", "custom_gs_1", "custom_g"]
    );
    assert_eq!(m.functions.len(), 1);
    assert_eq!(
        m.metadata_props,
        [("author".to_string(), "rge".to_string())]
    );
    assert_eq!(
        m.opset_imports
            .iter()
            .map(|o| o.0.as_str())
            .collect::<Vec<_>>(),
        ["", "com.example", "local"]
    );
}

#[test]
fn sparse_initializer_becomes_constant() {
    let m = import_proto(&models::sparse()).unwrap();
    let g = &m.graph;
    let sp = find(g, g.root(), "sp");
    let op = g.op(sp).unwrap();
    assert_eq!(op.op_type(), "Constant");
    assert!(matches!(
        op.attrs().get("sparse_value"),
        Some(AttrValue::NamedAttrs(_))
    ));
}

#[test]
fn external_data_is_read_from_the_model_directory() {
    let dir = temp_dir("ext");
    let weights: Vec<u8> = (0..64u8).collect();
    let mut blob = vec![0xeeu8; 4096];
    blob.extend_from_slice(&weights);
    std::fs::write(dir.join("weights.bin"), &blob).unwrap();
    let mut w = f32_tensor("w", &[16], &[]);
    w.raw_data = Bytes::new();
    w.data_location = 1;
    w.external_data = [
        ("location", "weights.bin"),
        ("offset", "4096"),
        ("length", "64"),
    ]
    .iter()
    .map(|(k, v)| rge_formats::onnx_proto::StringStringEntryProto {
        key: k.to_string(),
        value: v.to_string(),
    })
    .collect();
    let m = model(
        graph(
            "ext",
            vec![node("Relu", "r", &["w"], &["y"])],
            vec![],
            vec![],
            vec![w],
        ),
        13,
    );
    let path = dir.join("model.onnx");
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    let im = onnx::import_file(&path).unwrap();
    let t = tensor(&im.graph, find(&im.graph, im.graph.root(), "w"));
    assert_eq!(&t.data[..], &weights[..]);
    // From memory, with no directory: refused.
    let e = onnx::import_bytes(Bytes::from(m.encode_to_vec()), "<memory>").unwrap_err();
    assert!(e.to_string().contains("no directory"), "{e}");
}

#[test]
fn mapped_import_leaves_weights_in_the_file_until_owned() {
    let dir = temp_dir("mapped");
    // A weight larger than the map threshold (64 KiB) and the own threshold (4 KiB).
    let values: Vec<f32> = (0..32 * 1024).map(|i| i as f32 * 0.5).collect();
    let w = f32_tensor("w", &[32, 1024], &values);
    let m = model(
        graph(
            "mapped",
            vec![node("Relu", "r", &["w"], &["y"])],
            vec![],
            vec![],
            vec![w],
        ),
        13,
    );
    let path = dir.join("model.onnx");
    std::fs::write(&path, m.encode_to_vec()).unwrap();
    let owned = onnx::import_file(&path).unwrap();
    let (mut mapped, file) = onnx::import_file_mapped(&path).unwrap();
    let weight = |g: &ComputeGraph| tensor(g, find(g, g.root(), "w")).data.clone();
    assert!(file.contains(&weight(&mapped.graph)), "a slice of the map");
    assert!(
        !file.contains(&weight(&owned.graph)),
        "import_file owns its copy"
    );
    assert_eq!(weight(&mapped.graph), weight(&owned.graph));
    onnx::own_weights(&mut mapped.graph, &file);
    let w = weight(&mapped.graph);
    assert!(!file.contains(&w), "owned after own_weights");
    assert_eq!(w.as_ptr().align_offset(16), 0);
    assert_eq!(w, weight(&owned.graph));
    let _ = std::fs::remove_dir_all(&dir);
}
