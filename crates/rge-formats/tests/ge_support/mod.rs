//! Builders for the GE test models and the files under `tests/data/ge/` made from them.
//!
//! Files come in two kinds: canonical ones, written by rge from an IR model (the reader and
//! writer must reproduce them byte for byte), and legacy ones, built here at the ModelDef
//! level with the quirks of older or other GE writers (SOURCES.md facts); those are read,
//! and after one normalization re-written as a fixed point.

#![allow(dead_code)]

use std::path::PathBuf;

use bytes::Bytes;
use rge_formats::ge::{GeModel, WeightMode, WriteOptions};
use rge_formats::ge_proto::attr_def::list_list_int::ListInt;
use rge_formats::ge_proto::attr_def::list_value::ListValueType as Vt;
use rge_formats::ge_proto::attr_def::{ListListInt, ListValue, Value as V};
use rge_formats::ge_proto::{
    AttrDef, GraphDef, ModelDef, OpDef, ShapeDef, TensorDef, TensorDescriptor,
};
use rge_formats::text_format::print_model_def;
use rge_ir::op_desc::IrMeta;
use rge_ir::{
    AttrValue, ComputeGraph, DataType, DeviceType, Format, IrInputKind, IrOutputKind, NamedAttrs,
    OpDesc, Shape, ShapeRange, Tensor, TensorDesc,
};

pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/ge")
}

/// A fresh scratch directory.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rge-ge-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A desc with the origin values set as GE's infershape leaves them.
pub fn desc(dims: &[i64], dt: DataType, f: Format) -> TensorDesc {
    let mut d = TensorDesc::new(Shape::from_slice(dims), dt, f);
    d.set_origin_format(f);
    d.set_origin_shape(Shape::from_slice(dims));
    d.set_origin_dtype(dt);
    d
}

fn with_attrs(mut op: OpDesc, attrs: Vec<(&str, AttrValue)>) -> OpDesc {
    for (k, v) in attrs {
        op.attrs_mut().set(k, v);
    }
    op
}

fn number(g: &mut ComputeGraph) {
    let all = g.all_nodes(g.root());
    for (i, n) in all.into_iter().enumerate() {
        g.op_mut(n).unwrap().set_id(i as i64);
    }
}

/// A partition as the engine partitioner leaves it (reference §4.4): a PlaceHolder fed by
/// another partition, a control PlaceHolder, two Ends (data and control), fan-out whose peer
/// order differs from the file order, and the dump's model and graph attrs.
pub fn partition_model() -> GeModel {
    let mut g = ComputeGraph::new("partition0_rank2_new_sub_graph2");
    let root = g.root();
    let ga = g.graph_attrs_mut(root).unwrap();
    ga.set("_session_graph_id", "-1_0");
    ga.set("_parent_graph_name", "main");
    ga.set("_is_root_graph", true);
    let t = desc(&[1, 16, 8, 8], DataType::Float16, Format::NCHW);
    let pld0 = with_attrs(
        OpDesc::new("new_sub_graph2_PlaceHolder0", "PlaceHolder").with_output("", t.clone()),
        vec![
            ("peerIndex", 0i64.into()),
            ("parentOpType", "Conv2D".into()),
            ("_parentNodeName", "conv1".into()),
            ("pld_front_node_engine_name", "AIcoreEngine".into()),
            ("parentId", "new_sub_graph1:3".into()),
            ("anchorIndex", 0i64.into()),
            ("_peerNodeName", "new_sub_graph1_End0".into()),
        ],
    );
    let pld1 = with_attrs(
        OpDesc::new("new_sub_graph2_PlaceHolder1", "PlaceHolder")
            .with_output("", TensorDesc::default()),
        vec![
            ("peerIndex", 1i64.into()),
            ("parentOpType", "Data".into()),
            ("_parentNodeName", "x".into()),
            ("pld_front_node_engine_name", "DNN_VM_GE_LOCAL".into()),
            ("parentId", "new_sub_graph1:0".into()),
            ("anchorIndex", (-1i64).into()),
            ("_peerNodeName", "new_sub_graph1_End1".into()),
        ],
    );
    let mut relu = with_attrs(
        OpDesc::new("relu", "Relu")
            .with_input("x", t.clone())
            .with_output("y", t.clone()),
        vec![
            ("_lxfusion_engine_name", "AIcoreEngine".into()),
            ("_stream_label", "s0".into()),
        ],
    );
    relu.set_stream_id(1);
    let bin = |name: &str, ty: &str| {
        OpDesc::new(name, ty)
            .with_input("x1", t.clone())
            .with_input("x2", t.clone())
            .with_output("y", t.clone())
    };
    let end0 = with_attrs(
        OpDesc::new("new_sub_graph2_End2", "End").with_input("", t.clone()),
        vec![
            ("peerIndex", 2i64.into()),
            ("parentOpType", "NetOutput".into()),
            ("end_rear_node_engine_name", "DNN_VM_GE_LOCAL".into()),
        ],
    );
    let end1 = with_attrs(
        OpDesc::new("new_sub_graph2_End3", "End").with_input("", TensorDesc::default()),
        vec![
            ("peerIndex", 3i64.into()),
            ("parentOpType", "NetOutput".into()),
            ("end_rear_node_engine_name", "DNN_VM_GE_LOCAL".into()),
        ],
    );
    let pld0 = g.add_root_node(pld0).unwrap();
    let pld1 = g.add_root_node(pld1).unwrap();
    let relu = g.add_root_node(relu).unwrap();
    let add = g.add_root_node(bin("add", "Add")).unwrap();
    let mul = g.add_root_node(bin("mul", "Mul")).unwrap();
    let end0 = g.add_root_node(end0).unwrap();
    let end1 = g.add_root_node(end1).unwrap();
    g.add_edge(pld0, 0, relu, 0).unwrap();
    g.add_control_edge(pld1, relu).unwrap();
    // Peer order of relu:0 is mul:0, add:1, add:0, mul:1; the file lists add before mul.
    g.add_edge(relu, 0, mul, 0).unwrap();
    g.add_edge(relu, 0, add, 1).unwrap();
    g.add_edge(relu, 0, add, 0).unwrap();
    g.add_edge(relu, 0, mul, 1).unwrap();
    g.add_edge(add, 0, end0, 0).unwrap();
    g.add_control_edge(mul, end1).unwrap();
    g.add_control_edge(add, end1).unwrap();
    g.add_input_node(pld0).unwrap();
    g.add_output_node(end0, 0).unwrap();
    number(&mut g);
    GeModel::dump_model(g)
}

/// A root graph with an If (then/else subgraphs bound through `_parent_node_index`), IR
/// metadata, inline Const weights, a control edge and graph outputs.
pub fn if_model() -> GeModel {
    let mut g = ComputeGraph::new("main");
    let f = desc(&[2, 3], DataType::Float, Format::ND);
    let b = desc(&[], DataType::Bool, Format::ND);
    let root = g.root();
    g.graph_attrs_mut(root)
        .unwrap()
        .set("_session_graph_id", "0_1");
    let data = |name: &str, idx: i64, d: &TensorDesc| {
        with_attrs(
            OpDesc::new(name, "Data")
                .with_input("x", d.clone())
                .with_output("y", d.clone()),
            vec![("index", idx.into())],
        )
    };
    let cond = g.add_root_node(data("cond", 0, &b)).unwrap();
    let x = g.add_root_node(data("x", 1, &f)).unwrap();
    let weights = Tensor::from_f32(Shape::new([2, 3]), &[1.0, -2.5, 0.0, 3.25, 1e-3, 7.0]);
    let mut wdesc = weights.desc.clone();
    wdesc.set_origin_shape(Shape::new([2, 3]));
    let konst = with_attrs(
        OpDesc::new("bias", "Const").with_output("y", f.clone()),
        vec![("value", Tensor::new(wdesc, weights.data.clone()).into())],
    );
    let konst = g.add_root_node(konst).unwrap();
    let mut iff = OpDesc::new("if", "If")
        .with_input("cond", b.clone())
        .with_input("input0", f.clone())
        .with_output("output0", f.clone());
    *iff.ir_meta_mut() = IrMeta {
        inputs: vec![
            ("cond".into(), IrInputKind::Required),
            ("input".into(), IrInputKind::Dynamic),
        ],
        outputs: vec![("output".into(), IrOutputKind::Dynamic)],
        attr_names: vec!["then_branch".into(), "else_branch".into()],
        subgraphs: Vec::new(),
    };
    iff.attrs_mut()
        .set("then_branch", NamedAttrs::new("if_then"));
    iff.attrs_mut()
        .set("else_branch", NamedAttrs::new("if_else"));
    let iff = g.add_root_node(iff).unwrap();
    let add = OpDesc::new("add", "Add")
        .with_input("x1", f.clone())
        .with_input("x2", f.clone())
        .with_output("y", f.clone());
    let add = g.add_root_node(add).unwrap();
    let out = OpDesc::new("output", "NetOutput").with_input("", f.clone());
    let out = g.add_root_node(out).unwrap();
    g.add_edge(cond, 0, iff, 0).unwrap();
    g.add_edge(x, 0, iff, 1).unwrap();
    g.add_edge(iff, 0, add, 0).unwrap();
    g.add_edge(konst, 0, add, 1).unwrap();
    g.add_edge(add, 0, out, 0).unwrap();
    g.add_control_edge(konst, iff).unwrap();
    g.set_input_nodes(root, vec![cond, x]).unwrap();
    g.add_output_node(add, 0).unwrap();
    for (slot, name, body) in [(0, "if_then", "Relu"), (1, "if_else", "Neg")] {
        let sg = g.add_subgraph(iff, slot, name).unwrap();
        let mut d = data(&format!("{name}_x"), 0, &f);
        d.attrs_mut().set("_parent_node_index", 1i64);
        let d = g.add_node(sg, d).unwrap();
        let op = OpDesc::new(format!("{name}_op"), body)
            .with_input("x", f.clone())
            .with_output("y", f.clone());
        let op = g.add_node(sg, op).unwrap();
        let mut od = f.clone();
        od.attrs_mut().set("_parent_node_index", 0i64);
        let o = g
            .add_node(
                sg,
                OpDesc::new(format!("{name}_output"), "NetOutput").with_input("", od),
            )
            .unwrap();
        g.add_edge(d, 0, op, 0).unwrap();
        g.add_edge(op, 0, o, 0).unwrap();
        g.add_input_node(d).unwrap();
        g.add_output_node(op, 0).unwrap();
    }
    number(&mut g);
    let mut m = GeModel::dump_model(g);
    m.name = "if_model".into();
    m.version = 2;
    m.custom_version = "1.0".into();
    m
}

/// One of everything else: dtype attrs as `i` and `dt`, floats 0/-128/28.7625046, escapes,
/// JSON, a desc with no `shape` field, an empty-but-set `shape_range`, c0 and sub-formats,
/// ext fields, a Conv2D whose unset trailing `offset_w` gets no `input` entry, stale legacy
/// fields, workspaces, and the cross links (a control source on a data input, a data source on
/// the control input).
pub fn quirks_model() -> GeModel {
    let mut g = ComputeGraph::new("quirks");
    let x = desc(&[1, 3, 16, 16], DataType::Float16, Format::NCHW);
    let mut data = with_attrs(
        OpDesc::new("data", "Data")
            .with_input("x", x.clone())
            .with_output("y", x.clone()),
        vec![("index", 0i64.into())],
    );
    data.attrs_mut().set(
        "aipp_config",
        r#"{"aipp_mode":"static","related_input_rank":0,"mean_chn_0":104}"#,
    );
    let data = g.add_root_node(data).unwrap();

    let mut fz = desc(
        &[4, 1, 16, 16],
        DataType::Float16,
        Format::FRACTAL_Z.with_sub_format(16),
    );
    fz.set_origin_format(Format::NCHW);
    fz.set_origin_shape(Shape::new([16, 3, 2, 2]));
    let filter = g
        .add_root_node(OpDesc::new("filter", "Const").with_output("y", fz.clone()))
        .unwrap();
    let mut c0 = desc(
        &[1, 1, 16, 16, 16],
        DataType::Float16,
        Format::NC1HWC0.with_c0_format(5).unwrap(),
    );
    c0.set_origin_format(Format::NCHW);
    c0.set_size(8192);
    c0.set_real_dim_cnt(4);
    c0.set_shape_range(ShapeRange::new(vec![
        (1, 1),
        (1, 1),
        (16, 32),
        (1, -1),
        (16, 16),
    ]));
    c0.attrs_mut()
        .set("origin_shape_range", Vec::<Vec<i64>>::new());
    let mut unset = TensorDesc::new(Shape::scalar(), DataType::Undefined, Format::RESERVED);
    unset.set_origin_format(Format::RESERVED);
    let mut conv = OpDesc::new("conv1", "Conv2D")
        .with_input("x", x.clone())
        .with_input("filter", fz)
        .with_input("bias", desc(&[16], DataType::Float16, Format::ND))
        .with_input("offset_w", unset)
        .with_output("y", c0.clone());
    *conv.ir_meta_mut() = IrMeta {
        inputs: vec![
            ("x".into(), IrInputKind::Required),
            ("filter".into(), IrInputKind::Required),
            ("bias".into(), IrInputKind::Optional),
            ("offset_w".into(), IrInputKind::Optional),
        ],
        outputs: vec![("y".into(), IrOutputKind::Required)],
        attr_names: vec!["strides".into(), "pads".into(), "dilations".into()],
        subgraphs: Vec::new(),
    };
    let a = conv.attrs_mut();
    a.set("strides", vec![1i64, 1, 1, 1]);
    a.set("pads", vec![0i64, 0, 0, 0]);
    a.set("dilations", vec![1i64, 1, 1, 1]);
    a.set("data_format", "NCHW");
    a.set("offset_x", 0i64);
    a.set("T", DataType::Float16);
    a.set("DstT", 1i64);
    a.set(
        "dtypes",
        vec![DataType::Float16, DataType::Int32, DataType::Undefined],
    );
    a.set("alpha", 0.0f32);
    a.set("min", -128.0f32);
    a.set("scale", 28.762_505_f32);
    a.set("floats", vec![0.5f32, -1.0e-7, 3.0e38]);
    a.set("op_def", b"\n\x06Conv2D\x12\t\"quoted\"\x22\x01\n".to_vec());
    a.set("names", vec!["a\tb", "c\nd", "e\"f"]);
    a.set("ll", vec![vec![1i64, 2], vec![], vec![-3]]);
    a.set("llf", vec![vec![1.5f32], vec![]]);
    a.set("flags", vec![true, false]);
    a.set("blobs", vec![vec![0u8, 255], vec![]]);
    a.set("empty_ints", Vec::<i64>::new());
    a.set("out_desc", c0.clone());
    a.set("fn", {
        let mut na = NamedAttrs::new("helper");
        na.attrs.set("k", 7i64);
        na
    });
    conv.set_stream_id(2);
    let cs = conv.compile_state_mut();
    cs.legacy_input_names = vec!["PlaceHolder1".into(), "filter".into()];
    cs.src_names = vec!["PlaceHolder1".into(), "filter".into()];
    cs.src_indexes = vec![0, 0];
    cs.input_offsets = vec![0, 4096, -1];
    cs.output_offsets = vec![8192];
    cs.workspace = vec![16384];
    cs.workspace_bytes = vec![512];
    cs.is_input_const = vec![false, true, false];
    let conv = g.add_root_node(conv).unwrap();

    let mut cpu = x.clone();
    cpu.set_device_type(DeviceType::Cpu);
    cpu.set_input_tensor(true);
    cpu.set_reuse_input(true);
    cpu.set_reuse_input_index(1);
    cpu.set_data_offset(64);
    cpu.set_weight_size(12);
    cpu.set_cmps_size(3);
    cpu.set_cmps_tab("tab");
    cpu.set_cmps_tab_offset(9);
    cpu.set_output_tensor(true);
    let mut noshape = TensorDesc::new(Shape::scalar(), DataType::Float16, Format::ND);
    noshape.attrs_mut().set("__rge_shape_unset", true);
    let gate = OpDesc::new("gate", "Gate")
        .with_input("x", cpu)
        .with_input("y", x.clone())
        .with_input("", TensorDesc::default())
        .with_output("z", noshape);
    let gate = g.add_root_node(gate).unwrap();
    g.add_edge(data, 0, conv, 0).unwrap();
    g.add_edge(filter, 0, conv, 1).unwrap();
    g.add_edge(conv, 0, gate, 0).unwrap();
    // Cross links: filter's control output feeds gate's data input 1; data's output 0 feeds
    // gate's control input.
    g.link(filter.out_ctrl(), gate.input(1)).unwrap();
    g.link(data.out(0), gate.in_ctrl()).unwrap();
    g.add_control_edge(filter, gate).unwrap();
    g.add_input_node(data).unwrap();
    g.add_output_node(gate, 0).unwrap();
    number(&mut g);
    GeModel::dump_model(g)
}

/// `if_model` with its Const weights in a separate file (reference §7.6).
pub fn external_weights_model() -> GeModel {
    let mut m = if_model();
    m.name = "ext_model".into();
    m
}

// ---- ModelDef-level builders for legacy files ----

pub fn s(v: &str) -> AttrDef {
    AttrDef {
        value: Some(V::S(Bytes::copy_from_slice(v.as_bytes()))),
    }
}
pub fn i(v: i64) -> AttrDef {
    AttrDef {
        value: Some(V::I(v)),
    }
}
pub fn b(v: bool) -> AttrDef {
    AttrDef {
        value: Some(V::B(v)),
    }
}
pub fn list(vt: Option<Vt>, f: impl FnOnce(&mut ListValue)) -> AttrDef {
    let mut l = ListValue {
        val_type: vt.map_or(0, |v| v as i32),
        ..Default::default()
    };
    f(&mut l);
    AttrDef {
        value: Some(V::List(l)),
    }
}
pub fn list_s(vt: Option<Vt>, items: &[&str]) -> AttrDef {
    list(vt, |l| {
        l.s = items
            .iter()
            .map(|x| Bytes::copy_from_slice(x.as_bytes()))
            .collect()
    })
}
pub fn list_i(vt: Option<Vt>, items: &[i64]) -> AttrDef {
    list(vt, |l| l.i = items.to_vec())
}

/// A TensorDescriptor as the 2020 writer left it: `has_out_attr`, `origin_format` only.
pub fn old_desc(dt: i32, dims: Option<&[i64]>, layout: &str) -> TensorDescriptor {
    let mut td = TensorDescriptor {
        dtype: dt,
        shape: dims.map(|d| ShapeDef { dim: d.to_vec() }),
        layout: layout.into(),
        has_out_attr: true,
        device_type: "NPU".into(),
        ..Default::default()
    };
    td.attr.insert("origin_format".into(), s(layout));
    td
}

fn op(name: &str, ty: &str, inputs: &[&str]) -> OpDef {
    OpDef {
        name: name.into(),
        r#type: ty.into(),
        input: inputs.iter().map(|x| x.to_string()).collect(),
        has_out_attr: true,
        ..Default::default()
    }
}

fn legacy_names(o: &mut OpDef, keys: &[&str], values: &[i64]) {
    o.attr.insert(
        "_input_name_idx_key".into(),
        list_s(Some(Vt::VtListString), keys),
    );
    o.attr.insert(
        "_input_name_idx_value".into(),
        list_i(Some(Vt::VtListInt), values),
    );
}

/// A dump as the 2020 writer made it (SOURCES.md facts 1–5, 8, 11).
pub fn legacy_2020_def() -> ModelDef {
    const F16: i32 = 2;
    const F32: i32 = 1;
    let nchw = [1i64, 3, 16, 16];
    let mut data = op("data", "Data", &[""]);
    data.input_desc.push(old_desc(F16, Some(&nchw), "NCHW"));
    data.output_desc.push(old_desc(F16, Some(&nchw), "NCHW"));
    data.attr.insert("index".into(), i(0));
    legacy_names(&mut data, &["x"], &[0]);

    let mut cast = op("trans_Cast_163", "Cast", &["data:0"]);
    cast.input_desc.push(old_desc(F16, Some(&nchw), "NCHW"));
    cast.output_desc.push(old_desc(F32, Some(&nchw), "NCHW"));
    cast.attr.insert("DstT".into(), i(0));
    cast.attr.insert("SrcT".into(), i(1));
    legacy_names(&mut cast, &["x"], &[0]);

    let mut reshape = op("trans_Reshape_164", "Reshape", &["trans_Cast_163:0", ""]);
    reshape.input_desc.push(old_desc(F32, Some(&nchw), "NCHW"));
    reshape.input_desc.push(old_desc(8, Some(&[4]), "ND"));
    reshape.output_desc.push(old_desc(F32, Some(&nchw), "NCHW"));
    legacy_names(&mut reshape, &["shape", "x"], &[1, 0]);

    let mut trans = op("trans_TransData_1", "TransData", &["trans_Reshape_164:0"]);
    trans.input_desc.push(old_desc(F32, Some(&nchw), "NCHW"));
    trans
        .output_desc
        .push(old_desc(F32, Some(&[1, 1, 16, 16, 16]), "NC1HWC0"));
    trans.attr.insert("src_format".into(), s("NCHW"));
    trans.attr.insert("dst_format".into(), s("NC1HWC0"));
    legacy_names(&mut trans, &["src"], &[0]);

    let mut filter = op("filter", "Const", &[]);
    filter
        .output_desc
        .push(old_desc(F32, Some(&[4, 1, 16, 16]), "FRACTAL_Z"));
    let mut bias = op("bias", "Const", &[]);
    bias.output_desc.push(old_desc(F32, Some(&[16]), "ND"));

    let mut conv = op(
        "conv1",
        "Conv2D",
        &["trans_TransData_1:0", "filter:0", "bias:0", "data:-1"],
    );
    conv.input_desc
        .push(old_desc(F32, Some(&[1, 1, 16, 16, 16]), "NC1HWC0"));
    conv.input_desc
        .push(old_desc(F32, Some(&[4, 1, 16, 16]), "FRACTAL_Z"));
    conv.input_desc.push(old_desc(F32, Some(&[16]), "ND"));
    conv.input_desc
        .push(old_desc(0, Some(&[]), "FORMAT_RESERVED"));
    let mut out = old_desc(F32, None, "NC1HWC0");
    out.attr.insert(
        "shape_range".into(),
        AttrDef {
            value: Some(V::ListListInt(ListListInt {
                list_list_i: vec![],
            })),
        },
    );
    out.attr.insert(
        "origin_shape_range".into(),
        AttrDef {
            value: Some(V::ListListInt(ListListInt {
                list_list_i: vec![
                    ListInt { list_i: vec![1, 1] },
                    ListInt {
                        list_i: vec![16, 32],
                    },
                ],
            })),
        },
    );
    conv.output_desc.push(out);
    conv.input_name = vec!["PlaceHolder1".into(), "filter".into(), "bias".into()];
    conv.src_name = vec!["PlaceHolder1".into(), "filter".into(), "bias".into()];
    conv.src_index = vec![0, 0, 0];
    conv.attr
        .insert("strides".into(), list_i(Some(Vt::VtListInt), &[1, 1, 1, 1]));
    conv.attr.insert("untyped".into(), list_i(None, &[9]));
    conv.attr.insert("unset".into(), AttrDef { value: None });
    conv.attr.insert("T".into(), i(1));
    legacy_names(
        &mut conv,
        &["bias", "filter", "offset_w", "x"],
        &[2, 1, 3, 0],
    );

    let mut graph = GraphDef {
        name: "ge_default_20200101".into(),
        input: vec!["data:0".into()],
        output: vec!["conv1:0".into()],
        op: vec![data, cast, reshape, trans, filter, bias, conv],
        ..Default::default()
    };
    graph.attr.insert("_session_graph_id".into(), s("-1_0"));
    let mut m = ModelDef {
        graph: vec![graph],
        ..Default::default()
    };
    for k in [
        "event_num",
        "label_num",
        "memory_size",
        "stream_num",
        "weight_size",
    ] {
        m.attr.insert(k.into(), i(0));
    }
    m.attr.insert("target_type".into(), s("MINI"));
    m
}

/// An OM ModelDef with compressed attribute keys (SOURCES.md fact 9).
pub fn om_compressed_def() -> ModelDef {
    let names = [
        "index",
        "value",
        "_ge_attr_op_kernel_lib_name",
        "_input_name_key",
        "_input_name_value",
        "origin_format",
        "_output_name_key",
        "_output_name_value",
        "format_for_int",
    ];
    let key = |name: &str| {
        let i = names.iter().position(|n| *n == name).unwrap() as u16 + 1;
        String::from_utf8(i.to_be_bytes().to_vec()).unwrap()
    };
    let mut nd = TensorDescriptor {
        dtype: 1,
        shape: Some(ShapeDef { dim: vec![2] }),
        layout: "ND".into(),
        device_type: "NPU".into(),
        ..Default::default()
    };
    nd.attr.insert(key("origin_format"), s("ND"));
    nd.attr.insert(key("format_for_int"), i(2));
    let mut x = op("x", "Data", &[""]);
    x.input_desc.push(nd.clone());
    x.output_desc.push(nd.clone());
    x.attr.insert(key("index"), i(0));
    x.attr.insert(key("_ge_attr_op_kernel_lib_name"), i(0));
    x.attr.insert(key("_input_name_key"), list_s(None, &["x"]));
    x.attr.insert(key("_input_name_value"), list_i(None, &[0]));
    let mut w = op("w", "Const", &[]);
    w.output_desc.push(nd.clone());
    w.attr.insert(
        key("value"),
        AttrDef {
            value: Some(V::T(TensorDef {
                desc: Some(nd.clone()),
                data: Bytes::from_static(&[0, 0, 128, 63, 0, 0, 0, 64]),
            })),
        },
    );
    w.attr.insert(key("_ge_attr_op_kernel_lib_name"), i(0));
    let mut add = op("add", "Add", &["x:0", "w:0"]);
    add.input_desc.push(nd.clone());
    add.input_desc.push(nd.clone());
    add.output_desc.push(nd);
    add.attr.insert(key("_ge_attr_op_kernel_lib_name"), i(1));
    add.attr
        .insert(key("_input_name_key"), list_s(None, &["x1", "x2"]));
    add.attr
        .insert(key("_input_name_value"), list_i(None, &[0, 1]));
    add.attr
        .insert(key("_output_name_key"), list_s(None, &["y"]));
    add.attr
        .insert(key("_output_name_value"), list_i(None, &[0]));
    let graph = GraphDef {
        name: "om_graph".into(),
        input: vec!["x:0".into()],
        output: vec!["add:0".into()],
        op: vec![x, w, add],
        ..Default::default()
    };
    let mut m = ModelDef {
        name: "om".into(),
        graph: vec![graph],
        ..Default::default()
    };
    m.attr.insert("om_compress_version".into(), i(1));
    m.attr.insert(
        "attr_name_enum".into(),
        list_s(Some(Vt::VtListString), &names),
    );
    m.attr.insert(
        "attr_value_enum".into(),
        list_s(
            Some(Vt::VtListString),
            &["DNN_VM_GE_LOCAL_OP_STORE", "aicpu_ascend_kernel"],
        ),
    );
    m.attr.insert(
        "attrs_use_string_value".into(),
        list(Some(Vt::VtListBool), |l| {
            l.b = names
                .iter()
                .map(|n| *n == "_ge_attr_op_kernel_lib_name")
                .collect()
        }),
    );
    m
}

/// A partial model: one op names a subgraph that is there, another one that is not (fact 10).
pub fn partial_model() -> GeModel {
    let mut g = ComputeGraph::new("llm_model_buff");
    let t = desc(&[4], DataType::Float, Format::ND);
    let call = g
        .add_root_node(OpDesc::new("llm_call", "PartitionedCall").with_output("", t.clone()))
        .unwrap();
    let mut stage = OpDesc::new("llm_stage", "PartitionedCall").with_input("", t.clone());
    stage.set_subgraph_instance_name(0, "llm_missing_0");
    let stage = g.add_root_node(stage).unwrap();
    g.add_edge(call, 0, stage, 0).unwrap();
    let sub = g.add_subgraph(call, 0, "llm_present").unwrap();
    let inner = with_attrs(
        OpDesc::new("inner", "Data").with_output("", t),
        vec![("_parent_node_index", 0i64.into())],
    );
    g.add_node(sub, inner).unwrap();
    GeModel::dump_model(g)
}

/// Every file under `tests/data/ge/` and how to make it. Canonical files are written by rge
/// from an IR model; legacy files are printed from a ModelDef built above.
pub enum Source {
    Text(GeModel, WriteOptions),
    Binary(GeModel, WriteOptions),
    LegacyText(ModelDef),
}

pub fn files() -> Vec<(&'static str, Source)> {
    use Source::*;
    vec![
        (
            "partition_dump.txt",
            Text(partition_model(), WriteOptions::dump()),
        ),
        (
            "partition_dump.pb",
            Binary(partition_model(), WriteOptions::dump()),
        ),
        (
            "if_subgraphs_dump.txt",
            Text(if_model(), WriteOptions::dump()),
        ),
        (
            "if_subgraphs.pb",
            Binary(if_model(), WriteOptions::default()),
        ),
        (
            "if_no_weights_dump.txt",
            Text(
                if_model(),
                WriteOptions::dump().with_weights(WeightMode::Omit),
            ),
        ),
        (
            "quirks_dump.txt",
            Text(quirks_model(), WriteOptions::dump()),
        ),
        ("quirks.pb", Binary(quirks_model(), WriteOptions::default())),
        (
            "external_weights.pb",
            Binary(
                external_weights_model(),
                WriteOptions::default().with_weights(WeightMode::External),
            ),
        ),
        ("legacy_2020_dump.txt", LegacyText(legacy_2020_def())),
        ("om_compressed.txt", LegacyText(om_compressed_def())),
        (
            "partial_model.txt",
            Text(partial_model(), WriteOptions::dump()),
        ),
    ]
}

/// Writes `file` from its source into `dir` (external weights land beside it).
pub fn generate(dir: &std::path::Path, file: &str, src: &Source) {
    let path = dir.join(file);
    match src {
        Source::Text(m, o) => m.write_text(&path, o).unwrap(),
        Source::Binary(m, o) => m.write_binary(&path, o).unwrap(),
        Source::LegacyText(def) => std::fs::write(&path, print_model_def(def)).unwrap(),
    }
}
