//! Engine plugins run end to end from the command line: `rge run --engine-plugin` places the
//! example plugin's Relu on its engine and runs the plugin's kernel; a failing and a panicking
//! plugin kernel give errors naming the plugin and the node; the placement `rge place` prints
//! is the engine that ran each node.

#[path = "../../rge-engine/tests/common/mod.rs"]
mod plugin;

use std::path::{Path, PathBuf};

use prost::Message;
use rge::cli::{self, run::RunArgs};
use rge::engines::EngineArgs;
use rge_formats::onnx_proto::{
    tensor_shape_proto, type_proto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("rge-plugin-run-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn with_plugin(exclude: Option<&str>) -> EngineArgs {
    EngineArgs {
        exclude_engines: exclude.map(str::to_string),
        plugins: vec![plugin::plugin_path()],
        ..EngineArgs::default()
    }
}

/// (node, engine) of every event of a Chrome trace `rge run --profile` wrote.
fn ran_on(trace: &Path) -> Vec<(String, String, String)> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(trace).unwrap()).unwrap();
    v["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_string(),
                e["args"]["engine"].as_str().unwrap().to_string(),
                e["args"]["kernel"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_plugin_relu_runs_in_rge_run_where_rge_place_put_it() {
    let model = examples().join("tiny_cnn.onnx");
    // Without cpu (cost 3) and dense (which would fuse the Relu into its Conv), the plugin.s
    // engine (cost 6) is the cheapest with a Relu (vector, cost 2, excluded too).
    let engines = with_plugin(Some("cpu,dense,vector"));
    let trace = tmp("trace.json");
    let out_dir = tmp("out");
    let out = cli::run::run(&RunArgs {
        model: model.clone(),
        inputs: vec![format!(
            "image={}",
            examples().join("tiny_cnn_image.npy").display()
        )],
        output_dir: Some(out_dir.clone()),
        profile: Some(trace.clone()),
        engines: engines.clone(),
        ..RunArgs::default()
    })
    .unwrap_or_else(|e| panic!("{}", e.message));
    assert!(out.contains("output probs"), "{out}");
    let events = ran_on(&trace);
    let relus: Vec<_> = events.iter().filter(|e| e.2.ends_with(".Relu")).collect();
    assert!(!relus.is_empty(), "{events:?}");
    assert!(
        relus
            .iter()
            .all(|e| e.1 == "example" && e.2 == "example.Relu"),
        "{relus:?}"
    );
    // The outputs match the reference the example ships.
    let got = rge::runtime::io::read_tensor(&out_dir.join("probs.npy")).unwrap();
    let want = rge::runtime::io::read_tensor(&examples().join("tiny_cnn_expected.npy")).unwrap();
    let (g, w) = (
        got.as_slice::<f32>().unwrap(),
        want.as_slice::<f32>().unwrap(),
    );
    assert_eq!(g.len(), w.len());
    for (a, b) in g.iter().zip(w) {
        assert!((a - b).abs() <= 1e-4 * b.abs().max(1e-3), "{a} vs {b}");
    }
    // `rge place` printed the engine every node ran on.
    let placed: serde_json::Value =
        serde_json::from_str(&cli::engines::place(&model, &engines, true).unwrap()).unwrap();
    for (node, engine, _) in &events {
        let p = placed["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["name"] == node.as_str())
            .unwrap_or_else(|| panic!("`{node}` ran but was not placed"));
        assert_eq!(p["engine"], engine.as_str(), "{node}");
    }
}

fn vi(name: &str) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: 1,
                shape: Some(TensorShapeProto {
                    dim: vec![tensor_shape_proto::Dimension {
                        value: Some(tensor_shape_proto::dimension::Value::DimValue(4)),
                        ..Default::default()
                    }],
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// x → `op` (domain com.rge.example) → y.
fn custom_op_model(op: &str) -> PathBuf {
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![
            OperatorSetIdProto {
                domain: String::new(),
                version: 14,
            },
            OperatorSetIdProto {
                domain: "com.rge.example".into(),
                version: 1,
            },
        ],
        graph: Some(GraphProto {
            name: "custom".into(),
            node: vec![NodeProto {
                op_type: op.into(),
                domain: "com.rge.example".into(),
                name: format!("my_{op}"),
                input: vec!["x".into()],
                output: vec!["y".into()],
                ..Default::default()
            }],
            input: vec![vi("x")],
            output: vec![vi("y")],
            ..Default::default()
        }),
        ..Default::default()
    };
    let p = tmp(&format!("{op}.onnx"));
    std::fs::write(&p, m.encode_to_vec()).unwrap();
    p
}

#[test]
fn failing_and_panicking_plugin_kernels_are_errors_naming_plugin_and_node() {
    for (op, says) in [("Fail", "asked to fail"), ("Panic", "panicked")] {
        let e = cli::run::run(&RunArgs {
            model: custom_op_model(op),
            engines: with_plugin(None),
            ..RunArgs::default()
        })
        .unwrap_err();
        let node = format!("my_{op}");
        assert!(e.message.contains(&node), "{}", e.message);
        assert!(
            e.message.contains("rge_engine_example_plugin"),
            "{}",
            e.message
        );
        assert!(e.message.contains(says), "{}", e.message);
    }
}

#[test]
fn a_missing_plugin_file_is_a_clear_error() {
    let e = cli::run::run(&RunArgs {
        model: examples().join("tiny_cnn.onnx"),
        engines: EngineArgs {
            plugins: vec![PathBuf::from("/nonexistent/libnothing.so")],
            ..EngineArgs::default()
        },
        ..RunArgs::default()
    })
    .unwrap_err();
    assert!(
        e.message.contains("/nonexistent/libnothing.so"),
        "{}",
        e.message
    );
}
