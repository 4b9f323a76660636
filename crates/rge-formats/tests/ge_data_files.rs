//! The files under `tests/data/ge/`: they are what the builders in `ge_support` make, text
//! files re-print byte for byte, canonical files re-write byte for byte, legacy files read with
//! each SOURCES.md fact honoured and normalize to a fixed point.
//!
//! Regenerate the files with `RGE_REGEN_GE_DATA=1 cargo test -p rge-formats --test ge_data_files`.

mod ge_support;

use std::path::Path;

use bytes::Bytes;
use ge_support::*;
use rge_formats::ge::{GeError, GeModel, ReadOptions, WriteOptions};
use rge_formats::text_format::{parse_model_def, print_model_def};
use rge_ir::{
    AttrValue, ComputeGraph, DataType, DeviceType, Format, NodeId, PrimaryFormat, Tensor,
};

/// Reads a data file; the partial model needs `allow_missing_subgraphs`, which changes nothing
/// for the others.
fn read(path: &Path) -> GeModel {
    let o = ReadOptions {
        allow_missing_subgraphs: true,
        ..Default::default()
    };
    read_with(path, &o).unwrap_or_else(|e| panic!("{e}"))
}

fn read_with(path: &Path, o: &ReadOptions) -> Result<GeModel, GeError> {
    if path.extension().is_some_and(|e| e == "pb") {
        GeModel::read_binary_with(path, o)
    } else {
        GeModel::read_text_with(path, o)
    }
}

fn node(g: &ComputeGraph, name: &str) -> NodeId {
    g.find_node(g.root(), name)
        .unwrap_or_else(|| panic!("no node {name}"))
}

fn peer_names(g: &ComputeGraph, n: NodeId, out: i32) -> Vec<String> {
    g.node(n)
        .unwrap()
        .peers_of_out(out)
        .iter()
        .map(|p| format!("{}:{}", g.name_of(p.node), p.index))
        .collect()
}

#[test]
fn data_files_are_up_to_date() {
    let regen = std::env::var_os("RGE_REGEN_GE_DATA").is_some();
    let dir = data_dir();
    let tmp = scratch("generate");
    for (file, src) in files() {
        if regen {
            generate(&dir, file, &src);
            continue;
        }
        generate(&tmp, file, &src);
        let want = std::fs::read(tmp.join(file)).unwrap();
        let have = std::fs::read(dir.join(file)).unwrap_or_default();
        assert!(
            have == want,
            "tests/data/ge/{file} is stale: rerun with RGE_REGEN_GE_DATA=1"
        );
    }
    if !regen {
        let w = "air_weight/ext_model/Const_main_bias_file";
        assert_eq!(
            std::fs::read(tmp.join(w)).unwrap(),
            std::fs::read(dir.join(w)).unwrap()
        );
    }
}

#[test]
fn text_files_reprint_byte_identically() {
    for (file, _) in files().iter().filter(|(f, _)| f.ends_with(".txt")) {
        let text = std::fs::read_to_string(data_dir().join(file)).unwrap();
        let def = parse_model_def(&text).unwrap();
        assert!(print_model_def(&def) == text, "{file} does not re-print");
    }
}

#[test]
fn canonical_files_rewrite_byte_identically() {
    for (file, src) in files() {
        let (opts, binary) = match src {
            Source::Text(_, o) => (o, false),
            Source::Binary(_, o) => (o, true),
            Source::LegacyText(_) => continue,
        };
        let path = data_dir().join(file);
        let model = read(&path);
        let tmp = scratch(&format!("rewrite-{file}"));
        let out = tmp.join(file);
        if binary {
            model.write_binary(&out, &opts).unwrap();
        } else {
            model.write_text(&out, &opts).unwrap();
        }
        assert!(
            std::fs::read(&out).unwrap() == std::fs::read(&path).unwrap(),
            "{file}: write(read(file)) differs"
        );
        // And read → write → read gives an equal model.
        assert_eq!(read(&out), model, "{file}");
    }
}

#[test]
fn canonical_files_hold_their_models() {
    for (file, src) in files() {
        let (built, opts) = match src {
            Source::Text(m, o) | Source::Binary(m, o) => (m, o),
            Source::LegacyText(_) => continue,
        };
        if opts.weights == rge_formats::ge::WeightMode::Omit {
            continue;
        }
        assert_eq!(read(&data_dir().join(file)), built, "{file}");
    }
}

#[test]
fn legacy_files_normalize_to_a_fixed_point() {
    for (file, src) in files() {
        if !matches!(src, Source::LegacyText(_)) {
            continue;
        }
        let o = ReadOptions {
            allow_missing_subgraphs: true,
            ..Default::default()
        };
        let first = read_with(&data_dir().join(file), &o).unwrap();
        let t1 = first.to_text(&WriteOptions::dump()).unwrap();
        let second = GeModel::from_text_str_with(
            &t1,
            &rge_formats::ge::ReadContext::new("t1").with_options(o.clone()),
        )
        .unwrap();
        assert_eq!(second, first, "{file}");
        assert_eq!(second.to_text(&WriteOptions::dump()).unwrap(), t1, "{file}");
        let b1 = first.to_binary_bytes(&WriteOptions::default()).unwrap();
        let ctx = rge_formats::ge::ReadContext::new("b1").with_options(o);
        let third = GeModel::from_binary_bytes_with(b1.clone(), &ctx).unwrap();
        assert_eq!(third.to_binary_bytes(&WriteOptions::default()).unwrap(), b1);
    }
}

/// Facts 1–5, 8 and 11 of SOURCES.md on the 2020-style dump.
#[test]
fn legacy_2020_dump_reads_as_ge_does() {
    let m = read(&data_dir().join("legacy_2020_dump.txt"));
    let g = &m.graph;
    // Fact 8: model and graph attrs are plain attrs.
    assert_eq!(m.attrs.get_str("target_type").unwrap(), Some("MINI"));
    assert_eq!(m.attrs.get_int("event_num").unwrap(), Some(0));
    assert_eq!(m.name, "");
    let root_attrs = g.graph_attrs(g.root()).unwrap();
    assert_eq!(
        root_attrs.get_str("_session_graph_id").unwrap(),
        Some("-1_0")
    );
    // Fact 1: the old name attrs map to names and leave the attr map.
    let conv = node(g, "conv1");
    let op = g.op(conv).unwrap();
    assert_eq!(op.input_index("offset_w"), Some(3));
    assert_eq!(op.input_index("x"), Some(0));
    assert!(!op.attrs().contains("_input_name_idx_key"));
    let reshape = g.op(node(g, "trans_Reshape_164")).unwrap();
    assert_eq!(reshape.input_index("shape"), Some(1));
    // No `_output_name_*`: outputs are unnamed.
    assert_eq!(op.raw_output_name(0), Some(""));
    // Fact 2: 3 entries for 4 input descs; anchors follow the descs.
    let n = g.node(conv).unwrap();
    assert_eq!(n.in_data_count(), 4);
    assert!(n.peer_of_input(3).is_none());
    let offset_w = op.input(3).unwrap();
    assert_eq!(offset_w.format().primary(), PrimaryFormat::Reserved);
    assert_eq!(offset_w.dtype(), DataType::Undefined);
    assert_eq!(g.name_of(n.in_ctrl_peers()[0].node), "data");
    let rs = g.node(node(g, "trans_Reshape_164")).unwrap();
    assert!(rs.peer_of_input(1).is_none());
    let data = g.node(node(g, "data")).unwrap();
    assert!(data.peer_of_input(0).is_none());
    // Fact 3: the stale legacy fields are kept, but edges come from `input` only.
    let cs = op.compile_state().unwrap();
    assert_eq!(cs.src_names[0], "PlaceHolder1");
    assert_eq!(
        g.name_of(n.peer_of_input(0).unwrap().node),
        "trans_TransData_1"
    );
    // Fact 4: `i:` dtypes stay ints; the desc dtype uses the proto enum.
    let cast = g.op(node(g, "trans_Cast_163")).unwrap();
    assert_eq!(cast.attrs().get("DstT"), Some(&AttrValue::Int(0)));
    assert_eq!(cast.input(0).unwrap().dtype(), DataType::Float16);
    assert_eq!(cast.output(0).unwrap().dtype(), DataType::Float);
    // Fact 5: an empty list_list_int is set; a desc without `shape` is marked.
    let out = op.output(0).unwrap();
    assert_eq!(
        out.attrs().get("shape_range"),
        Some(&AttrValue::ListListInt(vec![]))
    );
    assert_eq!(out.origin_shape_range().0, vec![(1, 1), (16, 32)]);
    assert_eq!(
        out.attrs().get_bool("__rge_shape_unset").unwrap(),
        Some(true)
    );
    assert!(out.shape().is_scalar());
    assert_eq!(offset_w.attrs().get("__rge_shape_unset"), None);
    // Untyped lists and unset values are skipped (§7.1).
    assert!(!op.attrs().contains("untyped") && !op.attrs().contains("unset"));
    assert_eq!(
        op.attrs().get_list_int("strides").unwrap(),
        Some(&[1i64, 1, 1, 1][..])
    );
    // Fact 11: Consts without weights.
    assert!(!g.op(node(g, "filter")).unwrap().attrs().contains("value"));
    // Formats come from the layout string when `format_for_int` is absent.
    assert_eq!(op.input(0).unwrap().format(), Format::NC1HWC0);
    assert_eq!(op.input(0).unwrap().origin_format(), Format::NC1HWC0);
    // Re-written, the trailing unset desc still gets no entry, and the shape-less desc no shape.
    let text = m.to_text(&WriteOptions::dump()).unwrap();
    let def = parse_model_def(&text).unwrap();
    let conv_def = def.graph[0].op.iter().find(|o| o.name == "conv1").unwrap();
    assert_eq!(conv_def.input.len(), 4);
    assert!(conv_def.output_desc[0].shape.is_none());
    assert!(conv_def.attr.contains_key("_input_name_key"));
}

/// Fact 9: OM compressed keys (with NUL bytes) and string values by index.
#[test]
fn om_compressed_keys_are_decoded() {
    let path = data_dir().join("om_compressed.txt");
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains(r#"key: "\000\001""#));
    let m = read(&path);
    assert!(!m.attrs.contains("om_compress_version") && !m.attrs.contains("attr_name_enum"));
    let g = &m.graph;
    let x = g.op(node(g, "x")).unwrap();
    assert_eq!(x.attrs().get_int("index").unwrap(), Some(0));
    assert_eq!(
        x.attrs().get_str("_ge_attr_op_kernel_lib_name").unwrap(),
        Some("DNN_VM_GE_LOCAL_OP_STORE")
    );
    assert_eq!(x.input_index("x"), Some(0));
    assert_eq!(x.input(0).unwrap().format(), Format::ND);
    let add = g.op(node(g, "add")).unwrap();
    assert_eq!(
        add.attrs().get_str("_ge_attr_op_kernel_lib_name").unwrap(),
        Some("aicpu_ascend_kernel")
    );
    assert_eq!(add.input_index("x2"), Some(1));
    assert_eq!(add.output_index("y"), Some(0));
    let w: &Tensor = g
        .op(node(g, "w"))
        .unwrap()
        .attrs()
        .require("value")
        .unwrap();
    assert_eq!(w.as_f32().unwrap(), vec![1.0, 2.0]);
    // Written back uncompressed.
    let text = m.to_text(&WriteOptions::default()).unwrap();
    assert!(!text.contains(r#"key: "\000"#) && text.contains("_ge_attr_op_kernel_lib_name"));
}

/// Fact 10: a missing subgraph is an error naming the op and the graph, unless allowed.
#[test]
fn partial_model_needs_the_option() {
    let path = data_dir().join("partial_model.txt");
    let err = GeModel::read_text(&path).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, GeError::MissingSubgraph { .. }), "{msg}");
    assert!(
        msg.contains("partial_model.txt")
            && msg.contains("llm_stage")
            && msg.contains("llm_missing_0"),
        "{msg}"
    );
    let o = ReadOptions {
        allow_missing_subgraphs: true,
        ..Default::default()
    };
    let m = read_with(&path, &o).unwrap();
    let g = &m.graph;
    let present = g.subgraph_by_name("llm_present").unwrap();
    assert_eq!(g.parent_node(present), Some(node(g, "llm_call")));
    assert_eq!(
        g.op(node(g, "llm_stage"))
            .unwrap()
            .subgraph_instance_names(),
        ["llm_missing_0"]
    );
    let def = m.to_model_def(&WriteOptions::default());
    assert_eq!(def.graph[0].op[1].subgraph_name, ["llm_missing_0"]);
}

#[test]
fn partition_dump_keeps_fan_out_order_and_pairs() {
    let m = read(&data_dir().join("partition_dump.txt"));
    let g = &m.graph;
    let relu = node(g, "relu");
    assert_eq!(peer_names(g, relu, 0), ["mul:0", "add:1", "add:0", "mul:1"]);
    let text = std::fs::read_to_string(data_dir().join("partition_dump.txt")).unwrap();
    assert!(text.find("name: \"add\"").unwrap() < text.find("name: \"mul\"").unwrap());
    let pld = g.op(node(g, "new_sub_graph2_PlaceHolder1")).unwrap();
    assert_eq!(pld.attrs().get_int("anchorIndex").unwrap(), Some(-1));
    assert_eq!(
        pld.attrs().get_str("_peerNodeName").unwrap(),
        Some("new_sub_graph1_End1")
    );
    let end = node(g, "new_sub_graph2_End3");
    let ctrl: Vec<&str> = g
        .node(end)
        .unwrap()
        .in_ctrl_peers()
        .iter()
        .map(|p| g.name_of(p.node))
        .collect();
    assert_eq!(ctrl, ["mul", "add"]);
    assert_eq!(m.attrs.get_str("target_type").unwrap(), Some("MINI"));
    assert_eq!(m.attrs.get_int("p2p_memory_size").unwrap(), Some(0));
    // Without the peer indexes the fan-out follows the file order.
    let plain =
        GeModel::from_binary_bytes(m.to_binary_bytes(&WriteOptions::default()).unwrap(), "x")
            .unwrap();
    let g2 = &plain.graph;
    assert_eq!(
        peer_names(g2, node(g2, "relu"), 0),
        ["add:0", "add:1", "mul:0", "mul:1"]
    );
}

#[test]
fn if_model_rebuilds_ownership() {
    for file in [
        "if_subgraphs_dump.txt",
        "if_subgraphs.pb",
        "external_weights.pb",
    ] {
        let m = read(&data_dir().join(file));
        let g = &m.graph;
        let iff = node(g, "if");
        let subs: Vec<&str> = g
            .node_subgraphs(iff)
            .iter()
            .map(|&s| g.graph_name(s).unwrap())
            .collect();
        assert_eq!(subs, ["if_then", "if_else"], "{file}");
        let then = g.subgraph_by_name("if_then").unwrap();
        assert_eq!(g.parent_node(then), Some(iff));
        let d = g.subgraph_data_for_parent_input(then, 1).unwrap();
        assert_eq!(g.name_of(d), "if_then_x");
        assert!(g.subgraph_output_for_parent_output(then, 0).is_some());
        let bias: &Tensor = g
            .op(node(g, "bias"))
            .unwrap()
            .attrs()
            .require("value")
            .unwrap();
        assert_eq!(
            bias.as_f32().unwrap(),
            vec![1.0, -2.5, 0.0, 3.25, 1e-3, 7.0],
            "{file}"
        );
        assert!(!g.op(node(g, "bias")).unwrap().attrs().contains("location"));
        g.verify().unwrap();
    }
    let m = read(&data_dir().join("if_no_weights_dump.txt"));
    assert!(!m
        .graph
        .op(node(&m.graph, "bias"))
        .unwrap()
        .attrs()
        .contains("value"));
}

#[test]
fn quirks_survive() {
    for file in ["quirks_dump.txt", "quirks.pb"] {
        let m = read(&data_dir().join(file));
        let g = &m.graph;
        let conv = g.op(node(g, "conv1")).unwrap();
        let a = conv.attrs();
        assert_eq!(a.get("T"), Some(&AttrValue::DataType(DataType::Float16)));
        assert_eq!(a.get("DstT"), Some(&AttrValue::Int(1)));
        assert_eq!(a.get_float("scale").unwrap(), Some(28.762_505));
        assert_eq!(conv.output(0).unwrap().format().c0(), Some(16));
        assert_eq!(conv.input(1).unwrap().format().sub_format(), 16);
        assert_eq!(conv.ir_meta().unwrap().inputs.len(), 4);
        assert!(!a.contains("_opt_input"));
        let gate = g.node(node(g, "gate")).unwrap();
        assert!(gate.peer_of_input(1).unwrap().is_control());
        assert!(!gate.in_ctrl_peers()[0].is_control());
        let cpu = gate.op().input(0).unwrap();
        assert_eq!(cpu.device_type(), DeviceType::Cpu);
        assert_eq!(cpu.cmps_tab(), "tab");
    }
    let text = std::fs::read_to_string(data_dir().join("quirks_dump.txt")).unwrap();
    for needle in [
        r#"f: 0"#,
        r#"f: -128"#,
        r#"f: 28.7625046"#,
        r#"\022\t\"quoted\"\"\001\n"#,
        r#"s: "{\"aipp_mode\":\"static\""#,
        "shape_range",
        "_rge_data_input_count",
        "format_for_int",
        r#"input: """#,
    ] {
        assert!(text.contains(needle), "quirks_dump.txt lacks {needle}");
    }
}

#[test]
fn external_weights_file_is_used() {
    let path = data_dir().join("external_weights.pb");
    let raw = std::fs::read(&path).unwrap();
    let def =
        <rge_formats::ge_proto::ModelDef as prost::Message>::decode(Bytes::from(raw)).unwrap();
    let bias = def.graph[0].op.iter().find(|o| o.name == "bias").unwrap();
    assert!(bias.attr.contains_key("location") && bias.attr.contains_key("length"));
    let kept = GeModel::read_binary_with(
        &path,
        &ReadOptions {
            keep_external_weights: true,
            ..Default::default()
        },
    )
    .unwrap();
    let op = kept.graph.op(node(&kept.graph, "bias")).unwrap();
    assert_eq!(
        op.attrs().get_str("location").unwrap(),
        Some("air_weight/ext_model/Const_main_bias_file")
    );
}
