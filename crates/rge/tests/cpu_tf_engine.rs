//! The cpu_tf engine end to end: GE ModelDef files in the TensorFlow dialect (Conv2D with
//! data_format, StridedSlice masks, Mean with keep_dims, the resizes, a small TF-style CNN…)
//! written by the test, read back by rge's GE reader, placed, compiled and run; every output
//! compared with numpy's (`scripts/gen_cpu_tf_test_data.py`, cases in
//! `crates/rge-cpu-tf/tests/data/cases.json`). Also: placement on `cpu_tf`, what happens
//! without it, `rge engines`, and bad attributes.

use std::path::PathBuf;

use rge::engines::{engine_set, EngineArgs};
use rge_formats::ge::{GeModel, WriteOptions};
use rge_ir::{AttrValue, ComputeGraph, DataType, OpDesc, Shape, Tensor, TensorDesc};
use rge_kernels::Value;
use rge_runtime::{Model, Session, SessionOptions};
use serde_json::Value as Json;

fn cases() -> Vec<Json> {
    let p = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../rge-cpu-tf/tests/data/cases.json"
    );
    let j: Json = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    j["cases"].as_array().unwrap().clone()
}

fn case(name: &str) -> Json {
    cases()
        .into_iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

fn dtype(s: &str) -> DataType {
    match s {
        "float32" => DataType::Float,
        "int32" => DataType::Int32,
        "int64" => DataType::Int64,
        "bool" => DataType::Bool,
        other => panic!("dtype {other}"),
    }
}

fn dims(t: &Json) -> Vec<i64> {
    t["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_i64().unwrap())
        .collect()
}

fn f64s(t: &Json) -> Vec<f64> {
    t["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

/// The IR tensor of a case tensor.
fn ir_tensor(t: &Json) -> Tensor {
    let s = Shape::from_slice(&dims(t));
    let d = f64s(t);
    match t["dtype"].as_str().unwrap() {
        "float32" => Tensor::from_f32(s, &d.iter().map(|&v| v as f32).collect::<Vec<_>>()),
        "int32" => Tensor::from_i32(s, &d.iter().map(|&v| v as i32).collect::<Vec<_>>()),
        "int64" => Tensor::from_i64(s, &d.iter().map(|&v| v as i64).collect::<Vec<_>>()),
        "bool" => {
            let bytes: Vec<u8> = d.iter().map(|&v| v as u8).collect();
            Tensor::new(TensorDesc::with_shape_dtype(s, DataType::Bool), bytes)
        }
        other => panic!("dtype {other}"),
    }
}

/// The runtime value of a case tensor (a graph feed).
fn value(t: &Json) -> Value {
    let s: Vec<usize> = dims(t).iter().map(|&d| d as usize).collect();
    let d = f64s(t);
    let k = match t["dtype"].as_str().unwrap() {
        "float32" => {
            rge_kernels::Tensor::from_vec(&s, d.iter().map(|&v| v as f32).collect::<Vec<_>>())
        }
        "int32" => {
            rge_kernels::Tensor::from_vec(&s, d.iter().map(|&v| v as i32).collect::<Vec<_>>())
        }
        "int64" => {
            rge_kernels::Tensor::from_vec(&s, d.iter().map(|&v| v as i64).collect::<Vec<_>>())
        }
        "bool" => {
            rge_kernels::Tensor::from_vec(&s, d.iter().map(|&v| v != 0.0).collect::<Vec<_>>())
        }
        other => panic!("dtype {other}"),
    };
    Value::from(k.unwrap())
}

fn attr(v: &Json) -> AttrValue {
    let (kind, x) = (v[0].as_str().unwrap(), &v[1]);
    match kind {
        "s" => AttrValue::String(x.as_str().unwrap().into()),
        "i" => AttrValue::Int(x.as_i64().unwrap()),
        "f" => AttrValue::Float(x.as_f64().unwrap() as f32),
        "b" => AttrValue::Bool(x.as_bool().unwrap()),
        "ints" => AttrValue::ListInt(
            x.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_i64().unwrap())
                .collect(),
        ),
        "dt" => AttrValue::DataType(dtype(x.as_str().unwrap())),
        // A ge::DataType int, as older GE dumps write dtype attrs.
        "dt_int" => AttrValue::Int(x.as_i64().unwrap()),
        other => panic!("attr kind {other}"),
    }
}

/// "node" or "node:i".
fn source(s: &str) -> (&str, u32) {
    match s.rsplit_once(':') {
        Some((n, i)) => (n, i.parse().unwrap()),
        None => (s, 0),
    }
}

/// The case's graph; `edit` may change a node's attributes before it is added.
fn graph(c: &Json, edit: &dyn Fn(&mut OpDesc)) -> ComputeGraph {
    let mut g = ComputeGraph::new(c["name"].as_str().unwrap());
    let mut ids = std::collections::HashMap::new();
    for (i, f) in c["feeds"].as_array().unwrap().iter().enumerate() {
        let d = TensorDesc::with_shape_dtype(
            Shape::from_slice(&dims(f)),
            dtype(f["dtype"].as_str().unwrap()),
        );
        let name = f["name"].as_str().unwrap();
        let mut op = OpDesc::new(name, "Data")
            .with_input("x", d.clone())
            .with_output("y", d);
        op.attrs_mut().set("index", i as i64);
        let n = g.add_root_node(op).unwrap();
        g.add_input_node(n).unwrap();
        ids.insert(name.to_string(), n);
    }
    for k in c["consts"].as_array().unwrap() {
        let t = ir_tensor(k);
        let name = k["name"].as_str().unwrap();
        let mut op = OpDesc::new(name, "Const").with_output("y", t.desc.clone());
        op.attrs_mut().set("value", t);
        ids.insert(name.to_string(), g.add_root_node(op).unwrap());
    }
    for nd in c["nodes"].as_array().unwrap() {
        let name = nd["name"].as_str().unwrap();
        let mut op = OpDesc::new(name, nd["op"].as_str().unwrap());
        let domain = nd["domain"].as_str().unwrap();
        if !domain.is_empty() {
            op.set_domain(domain);
        }
        let ins = nd["inputs"].as_array().unwrap();
        for i in 0..ins.len() {
            op = op.with_input(&format!("x{i}"), TensorDesc::default());
        }
        for i in 0..nd["outputs"].as_u64().unwrap() {
            op = op.with_output(&format!("y{i}"), TensorDesc::default());
        }
        for (k, v) in nd["attrs"].as_object().unwrap() {
            op.attrs_mut().set(k.as_str(), attr(v));
        }
        edit(&mut op);
        let n = g.add_root_node(op).unwrap();
        for (i, s) in ins.iter().enumerate() {
            let (src, idx) = source(s.as_str().unwrap());
            g.add_edge(ids[src], idx as usize, n, i).unwrap();
        }
        ids.insert(name.to_string(), n);
    }
    let outs = c["outputs"].as_array().unwrap();
    let mut net = OpDesc::new("out", "NetOutput");
    for i in 0..outs.len() {
        net = net.with_input(&format!("y{i}"), TensorDesc::default());
    }
    let net = g.add_root_node(net).unwrap();
    for (i, o) in outs.iter().enumerate() {
        let (src, idx) = source(o.as_str().unwrap());
        g.add_edge(ids[src], idx as usize, net, i).unwrap();
        g.add_output_node(ids[src], idx).unwrap();
    }
    g
}

/// A path of its own for each call: tests run in parallel and several write the same case's
/// graph, so a shared name lets one test read a file another is still writing.
fn tmp(name: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = std::env::temp_dir().join(format!("rge-cpu-tf-test-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// The graph as a GE ModelDef file, read back the way `rge run` reads one.
fn through_ge_file(g: ComputeGraph) -> ComputeGraph {
    let path = tmp(&format!("{}.pb", g.name()));
    GeModel::new(g)
        .write_binary(&path, &WriteOptions::default())
        .unwrap();
    let (m, _) = rge::model::load(&path).unwrap();
    m.graph().clone()
}

fn session(exclude: Option<&str>) -> Session {
    let set = engine_set(&EngineArgs {
        exclude_engines: exclude.map(str::to_string),
        ..EngineArgs::default()
    })
    .unwrap();
    Session::new(SessionOptions::with_engines(set)).unwrap()
}

fn compile(c: &Json) -> Model {
    session(None)
        .compile_graph(through_ge_file(graph(c, &|_| {})))
        .unwrap()
}

fn engine_of(m: &Model, name: &str) -> String {
    let g = m.graph();
    g.nodes_of(g.root())
        .find(|&n| g.name_of(n) == name)
        .and_then(|n| g.op(n))
        .map(|op| op.engine_name().to_string())
        .unwrap_or_default()
}

fn feeds(c: &Json) -> Vec<Value> {
    c["feeds"].as_array().unwrap().iter().map(value).collect()
}

/// Runs case `name` and compares every output with numpy's.
fn check(name: &str) {
    let c = case(name);
    let m = compile(&c);
    for nd in c["nodes"].as_array().unwrap() {
        let n = nd["name"].as_str().unwrap();
        assert_eq!(engine_of(&m, n), "cpu_tf", "{name}: node {n}");
    }
    let out = m.run(&feeds(&c)).unwrap_or_else(|e| panic!("{name}: {e}"));
    let atol = c["atol"].as_f64().unwrap();
    for (i, (o, want)) in out
        .iter()
        .zip(c["expected"].as_array().unwrap())
        .enumerate()
    {
        let got = o.as_tensor().unwrap();
        let what = format!("{name} output {i} ({})", c["outputs"][i]);
        let shape: Vec<usize> = dims(want).iter().map(|&d| d as usize).collect();
        assert_eq!(got.shape(), shape.as_slice(), "{what}: shape");
        assert_eq!(
            got.dtype().to_ir(),
            dtype(want["dtype"].as_str().unwrap()),
            "{what}: dtype"
        );
        let got = got.view().to_f64_vec().unwrap();
        let want = f64s(want);
        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
            let tol = atol * (1.0 + w.abs());
            assert!((g - w).abs() <= tol, "{what}[{k}]: rge {g}, numpy {w}");
        }
    }
}

#[test]
fn conv2d_nhwc_and_nchw_same_valid_explicit_strides_dilations_groups() {
    for c in [
        "conv_nhwc_same_stride2",
        "conv_nhwc_valid_dilated",
        "conv_nchw_same_dilated_stride",
        "conv_nchw_explicit",
        "conv_grouped_nhwc_explicit",
    ] {
        check(c);
    }
}

#[test]
fn conv2d_with_ge_pads_instead_of_padding() {
    check("conv_ge_pads_nhwc");
    check("conv_ge_pads_nchw_dilated");
}

#[test]
fn depthwise_conv2d_native() {
    check("depthwise_nhwc_same");
    check("depthwise_nchw_valid_dilated");
}

#[test]
fn pools_bias_add_batch_norm_activations() {
    for c in [
        "avgpool_nhwc_same",
        "maxpool_nchw_same",
        "bias_add_nchw",
        "fused_batch_norm_v3_inference",
        "activations",
    ] {
        check(c);
    }
}

#[test]
fn matrix_products_with_transpose_and_adjoint() {
    check("matmuls");
}

#[test]
fn fused_batch_norm_v1_and_training_statistics() {
    for c in [
        "fused_batch_norm_v1_inference_nchw",
        "fused_batch_norm_v3_training_nhwc",
        "fused_batch_norm_v1_training_default_nchw",
    ] {
        check(c);
    }
}

#[test]
fn matrix_products_with_ge_attribute_spellings_and_batch_matmul_v1() {
    check("matmuls_ge_spellings");
}

#[test]
fn cast_dst_type_and_squeeze_axis_as_ge_writes_them() {
    check("array_ops_ge_spellings");
}

#[test]
fn strided_slice_with_all_five_masks() {
    let names: Vec<String> = cases()
        .iter()
        .filter_map(|c| {
            c["name"]
                .as_str()
                .filter(|n| n.starts_with("strided_slice_"))
                .map(String::from)
        })
        .collect();
    assert!(names.len() >= 8);
    for n in names {
        check(&n);
    }
}

#[test]
fn pads_reductions_arithmetic() {
    for c in ["pads", "reductions", "arithmetic", "int_floor_ops", "unary"] {
        check(c);
    }
}

#[test]
fn array_ops_and_shape_chains() {
    for c in ["array_ops", "shape_chain", "fill_range_select"] {
        check(c);
    }
}

#[test]
fn resizes_with_align_corners_and_half_pixel_centers() {
    for c in ["resize_legacy", "resize_align", "resize_half"] {
        check(c);
    }
}

#[test]
fn a_tf_style_cnn_end_to_end() {
    check("tf_cnn");
}

#[test]
fn without_cpu_tf_the_tf_graphs_do_not_compile() {
    for name in ["tf_cnn", "strided_slice_basic", "reductions"] {
        let c = case(name);
        let err = session(Some("cpu_tf"))
            .compile_graph(through_ge_file(graph(&c, &|_| {})))
            .err()
            .unwrap_or_else(|| panic!("{name} compiled without cpu_tf"));
        assert!(!err.to_string().is_empty());
    }
}

#[test]
fn rge_engines_lists_cpu_tf_with_cost_4() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_rge"))
        .args(["engines", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let j: Json = serde_json::from_slice(&out.stdout).unwrap();
    let text = j.to_string();
    assert!(text.contains("cpu_tf"), "{text}");
    let engines = j["engines"].as_array().or_else(|| j.as_array()).unwrap();
    let e = engines.iter().find(|e| e["name"] == "cpu_tf").unwrap();
    assert_eq!(e["cost"], 4, "{e}");
    assert_eq!(e["runtime"], "DEVICE", "{e}");
    assert_eq!(e["attach"], true, "{e}");
    assert!(e["op_types"].as_u64().unwrap() >= 60, "{e}");
}

/// Compiling case `name` with `edit` applied to node `node` fails naming the node and `what`.
fn refused(name: &str, node: &str, edit: &dyn Fn(&mut OpDesc), what: &str) {
    let c = case(name);
    let g = graph(&c, &|op| {
        if op.name() == node {
            edit(op)
        }
    });
    let err = session(None)
        .compile_graph(through_ge_file(g))
        .err()
        .unwrap_or_else(|| panic!("{name}/{node}: accepted"))
        .to_string();
    assert!(err.contains(node), "{err}");
    assert!(err.contains(what), "{err}");
}

#[test]
fn bad_attributes_are_errors_naming_the_node() {
    let set = |k: &'static str, v: AttrValue| {
        move |op: &mut OpDesc| {
            op.attrs_mut().set(k, v.clone());
        }
    };
    let ints = |v: &[i64]| AttrValue::ListInt(v.to_vec());
    refused(
        "conv_nhwc_same_stride2",
        "conv",
        &set("data_format", "NDHWC".into()),
        "data_format",
    );
    refused(
        "conv_nhwc_same_stride2",
        "conv",
        &set("strides", ints(&[1, 0, 1, 1])),
        "strides",
    );
    refused(
        "conv_nhwc_same_stride2",
        "conv",
        &set("strides", ints(&[1, 1])),
        "4 elements",
    );
    refused(
        "conv_nhwc_same_stride2",
        "conv",
        &set("strides", ints(&[2, 1, 1, 1])),
        "batch",
    );
    refused(
        "conv_nhwc_same_stride2",
        "conv",
        &set("padding", "FULL".into()),
        "padding",
    );
    refused(
        "conv_nhwc_same_stride2",
        "conv",
        &set("padding", "EXPLICIT".into()),
        "explicit_paddings",
    );
    refused(
        "depthwise_nhwc_same",
        "dw",
        &set("dilations", ints(&[1, 1, 1])),
        "dilations",
    );
    refused(
        "avgpool_nhwc_same",
        "p",
        &set("ksize", ints(&[1, 0, 2, 1])),
        "ksize",
    );
    refused(
        "strided_slice_basic",
        "ss",
        &set("begin_mask", AttrValue::Int(0b1000)),
        "begin_mask",
    );
    refused(
        "strided_slice_basic",
        "ss",
        &set("ellipsis_mask", AttrValue::Int(0b011)),
        "ellipsis",
    );
    refused(
        "resize_half",
        "bl",
        &set("align_corners", AttrValue::Bool(true)),
        "align_corners",
    );
    refused("pads", "refl", &set("mode", "WRAP".into()), "mode");
    refused(
        "array_ops",
        "cast",
        &set("DstT", AttrValue::Int(9999)),
        "DstT",
    );
    refused(
        "bias_add_nchw",
        "ba",
        &set("data_format", "CHWN".into()),
        "data_format",
    );
}

#[test]
fn bad_slice_inputs_are_errors_naming_the_node() {
    // begin with 2 entries, end and strides with 3.
    let c = case("strided_slice_basic");
    let mut c2 = c.clone();
    c2["consts"][0]["shape"] = serde_json::json!([2]);
    c2["consts"][0]["data"] = serde_json::json!([1, 0]);
    let err = session(None)
        .compile_graph(through_ge_file(graph(&c2, &|_| {})))
        .map(|_| ())
        .expect_err("inconsistent lengths accepted")
        .to_string();
    assert!(err.contains("ss") && err.contains("same length"), "{err}");
    // A zero stride.
    let mut c3 = c;
    c3["consts"][2]["data"] = serde_json::json!([1, 0, 1]);
    let err = session(None)
        .compile_graph(through_ge_file(graph(&c3, &|_| {})))
        .map(|_| ())
        .expect_err("a zero stride accepted")
        .to_string();
    assert!(
        err.contains("ss") && err.contains("strides[1] is 0"),
        "{err}"
    );
}
