//! The command line's commands, called as functions and through the binary.

use std::path::{Path, PathBuf};
use std::process::Command;

use rge::cli;
use rge::engines::EngineArgs;
use rge::ir::SortMode;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../rge-formats/tests/data/onnx")
        .join(name)
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rge-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn inspect_json_has_the_documented_fields() {
    let out = cli::inspect::run(&fixture("onnx_conv2d.onnx"), true).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["format"], "onnx");
    assert_eq!(v["op_types"]["Conv"], 1);
    assert_eq!(v["inputs"][0]["name"], "x");
    assert_eq!(v["inputs"][0]["dtype"], "DT_FLOAT");
    assert_eq!(v["inputs"][0]["shape"], serde_json::json!([1, 1, 5, 5]));
    assert_eq!(v["outputs"][0]["name"], "y");
    // W f32[1,1,3,3] and B f32[1].
    assert_eq!(v["weight_bytes"], 40);
    assert!(v["graphs"].as_array().unwrap().len() == 1);
}

#[test]
fn inspect_lists_subgraphs() {
    let out = cli::inspect::run(&fixture("onnx_if.onnx"), false).unwrap();
    assert!(out.contains("graphs: test_if, "), "{out}");
    assert!(out.contains("If: 1"), "{out}");
}

#[test]
fn convert_round_trips_through_every_format() {
    let src = fixture("onnx_if.onnx");
    let (orig, _) = rge::model::load(&src).unwrap();
    for ext in ["pb", "txt", "pbtxt"] {
        let mid = tmp(&format!("if.{ext}"));
        cli::convert::run(&src, &mid).unwrap();
        let back = tmp(&format!("if_from_{ext}.onnx"));
        cli::convert::run(&mid, &back).unwrap();
        let (m, _) = rge::model::load(&back).unwrap();
        assert_eq!(
            m.graph().total_node_count(),
            orig.graph().total_node_count(),
            "{ext}"
        );
        assert_eq!(
            m.graph().dump_text(),
            rge::model::load(&mid).unwrap().0.graph().dump_text()
        );
    }
    for ext in ["dump", "dot"] {
        let out = tmp(&format!("if.{ext}"));
        cli::convert::run(&src, &out).unwrap();
        assert!(std::fs::metadata(&out).unwrap().len() > 0);
        // Write-only formats are refused as input with a clear error.
        let err = cli::convert::run(&out, &tmp("x.onnx")).unwrap_err();
        assert!(err.message.contains("written, not read"), "{}", err.message);
    }
    let err = cli::convert::run(&src, &tmp("x.unknown")).unwrap_err();
    assert!(
        err.message.contains("unknown file extension"),
        "{}",
        err.message
    );
}

#[test]
fn sort_prints_names_in_order_for_every_mode() {
    let file = fixture("onnx_conv2d.onnx");
    let (m, _) = rge::model::load(&file).unwrap();
    let g = m.graph();
    let conv = g
        .nodes_of(g.root())
        .find(|&n| g.op(n).unwrap().op_type() == "Conv")
        .unwrap();
    let conv = g.name_of(conv).to_string();
    for mode in [
        SortMode::Bfs,
        SortMode::Dfs,
        SortMode::Rdfs,
        SortMode::StableRdfs,
    ] {
        let out = cli::sort::run(&file, mode, false).unwrap();
        let names: Vec<&str> = out.lines().collect();
        assert_eq!(names.len(), 5, "{out}");
        let pos = |n: &str| names.iter().position(|x| *x == n).unwrap();
        for producer in ["x", "W", "B"] {
            assert!(pos(producer) < pos(&conv), "{mode:?}: {out}");
        }
    }
    assert!(cli::sort::parse_mode("sideways").is_err());
}

#[test]
fn binary_reports_errors_and_exits_non_zero() {
    let bin = env!("CARGO_BIN_EXE_rge");
    let ok = Command::new(bin)
        .args(["inspect", "--json"])
        .arg(fixture("onnx_clip_v9.onnx"))
        .output()
        .unwrap();
    assert!(ok.status.success());
    let bad = tmp("garbage.onnx");
    std::fs::write(&bad, b"\xff\xff\xff not a model").unwrap();
    let out = Command::new(bin).arg("inspect").arg(&bad).output().unwrap();
    assert!(!out.status.success());
    let msg = String::from_utf8_lossy(&out.stderr);
    assert!(msg.contains("garbage.onnx"), "{msg}");
    let out = Command::new(bin)
        .args(["sort", "--mode", "bogus"])
        .arg(fixture("onnx_clip_v9.onnx"))
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn ops_lists_every_registered_op_version() {
    let text = cli::ops::run(false).unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("Clip v11")),
        "{}",
        &text[..200]
    );
    let v: serde_json::Value = serde_json::from_str(&cli::ops::run(true).unwrap()).unwrap();
    let ops = v["ops"].as_array().unwrap();
    assert!(ops.len() > 200);
    let conv = ops.iter().find(|o| o["op_type"] == "Conv").unwrap();
    assert_eq!(conv["inputs"][0]["name"], "X");
    assert!(conv["attributes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|a| a["name"] == "strides"));
}

#[test]
fn inspect_shapes_names_tensors_by_onnx_value_name() {
    let out = cli::shapes::run(&fixture("onnx_conv2d.onnx"), true).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let y = v["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "y")
        .unwrap();
    assert_eq!(y["dtype"], "DT_FLOAT");
    // 5x5 input, 3x3 kernel: the fixture's pads keep 5x5.
    assert_eq!(y["shape"], serde_json::json!([1, 1, 5, 5]));
    // The If fixture's `cond` is a float: a clear error naming the node, not a panic.
    let err = cli::shapes::run(&fixture("onnx_if.onnx"), false).unwrap_err();
    assert!(err.message.contains("If_1"), "{}", err.message);
}

fn excluding(e: &str) -> EngineArgs {
    EngineArgs {
        exclude_engines: Some(e.into()),
        ..EngineArgs::default()
    }
}

#[test]
fn engines_place_and_partition() {
    let none = EngineArgs::default();
    let v: serde_json::Value =
        serde_json::from_str(&cli::engines::list(&none, true).unwrap()).unwrap();
    let text = v.to_string();
    assert!(text.contains("\"cpu\"") && text.contains("\"local\"") && text.contains("\"host\""));

    let file = fixture("onnx_conv2d.onnx");
    let v: serde_json::Value =
        serde_json::from_str(&cli::engines::place(&file, &none, true).unwrap()).unwrap();
    let nodes = v["nodes"].as_array().unwrap();
    let engine_of = |t: &str| {
        nodes.iter().find(|n| n["type"] == t).unwrap()["engine"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // The dense engine (cost 1) runs f32 Conv.
    assert_eq!(engine_of("Conv"), "dense");
    assert_eq!(engine_of("Data"), "local");
    assert!(nodes
        .iter()
        .all(|n| n["reason"].as_str().is_some_and(|r| !r.is_empty())));
    // Excluding dense, vector (which runs Conv too, for `--engine-type vector`) and cpu sends
    // Conv to the host engine, and the reason says so.
    let v: serde_json::Value = serde_json::from_str(
        &cli::engines::place(&file, &excluding("dense,vector,cpu"), true).unwrap(),
    )
    .unwrap();
    let conv = v["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["type"] == "Conv")
        .unwrap()
        .clone();
    assert_eq!(conv["engine"], "host");
    assert!(conv["reason"].as_str().unwrap().contains("cpu"), "{conv}");
    let quantum = EngineArgs {
        engine_type: Some("quantum".into()),
        ..EngineArgs::default()
    };
    assert!(cli::engines::place(&file, &quantum, true).is_err());
    let e = cli::engines::place(&file, &excluding("nosuch"), true).unwrap_err();
    assert!(
        e.message.contains("unknown engine `nosuch`"),
        "{}",
        e.message
    );

    let dot = tmp("conv_partitions.dot");
    let v: serde_json::Value =
        serde_json::from_str(&cli::engines::partition(&file, &none, Some(&dot), true).unwrap())
            .unwrap();
    let parts = v["partitions"].as_array().unwrap();
    let conv_part = parts.iter().find(|p| p["engine"] == "dense").unwrap();
    assert!(conv_part["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n.as_str().unwrap().starts_with("Conv")));
    assert!(parts
        .iter()
        .any(|p| p["name"] == "partition0_rank0_inputNodeGraph"));
    assert!(std::fs::read_to_string(&dot)
        .unwrap()
        .starts_with("digraph"));
}

#[test]
fn the_default_pipeline_infers_places_and_partitions() {
    let (m, _) = rge::model::load(&fixture("onnx_conv2d.onnx")).unwrap();
    let pipeline = rge::engines::default_engine_set().unwrap().pipeline();
    let compiled = pipeline.compile(m.graph().clone()).unwrap();
    let g = &compiled.graph;
    let conv = g
        .nodes_of(g.root())
        .find(|&n| g.op(n).unwrap().op_type() == "Conv")
        .unwrap();
    let op = g.op(conv).unwrap();
    assert_eq!(op.engine_name(), "dense");
    // Inference ran: the output shape is known.
    assert_eq!(op.output(0).unwrap().shape().dims(), &[1, 1, 5, 5]);
    assert!(compiled.partitions.iter().any(|p| p.engine == "dense"));
    // A graph inference rejects fails the pipeline with the node named.
    let (bad, _) = rge::model::load(&fixture("onnx_if.onnx")).unwrap();
    let pipeline = rge::engines::default_engine_set().unwrap().pipeline();
    let err = pipeline
        .compile(bad.graph().clone())
        .unwrap_err()
        .to_string();
    assert!(err.contains("If_1"), "{err}");
}
