//! `rge conformance` on hand-made test folders: a passing test, a missing output file, an
//! expected output of the wrong dtype, a folder that does not exist, the floor option.

use std::path::{Path, PathBuf};

use prost::Message;
use rge::cli::conformance::{run, ConformanceArgs};
use rge_formats::onnx_proto::{
    tensor_proto, tensor_shape_proto, type_proto, GraphProto, ModelProto, NodeProto,
    OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto, ValueInfoProto,
};

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rge-conformance-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn value_info(name: &str, dims: &[i64]) -> ValueInfoProto {
    let shape = TensorShapeProto {
        dim: dims
            .iter()
            .map(|&d| tensor_shape_proto::Dimension {
                value: Some(tensor_shape_proto::dimension::Value::DimValue(d)),
                ..Default::default()
            })
            .collect(),
    };
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: tensor_proto::DataType::Float as i32,
                shape: Some(shape),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn floats(name: &str, v: &[f32]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: vec![v.len() as i64],
        data_type: tensor_proto::DataType::Float as i32,
        float_data: v.to_vec(),
        ..Default::default()
    }
}

/// A test folder `test_add_tiny`: y = a + b over 3 floats.
fn add_test(root: &Path) -> PathBuf {
    let dir = root.join("test_add_tiny");
    std::fs::create_dir_all(dir.join("test_data_set_0")).unwrap();
    let model = ModelProto {
        ir_version: 9,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            name: "g".into(),
            node: vec![NodeProto {
                op_type: "Add".into(),
                name: "add".into(),
                input: vec!["a".into(), "b".into()],
                output: vec!["y".into()],
                ..Default::default()
            }],
            input: vec![value_info("a", &[3]), value_info("b", &[3])],
            output: vec![value_info("y", &[3])],
            ..Default::default()
        }),
        ..Default::default()
    };
    std::fs::write(dir.join("model.onnx"), model.encode_to_vec()).unwrap();
    let set = dir.join("test_data_set_0");
    std::fs::write(
        set.join("input_0.pb"),
        floats("a", &[1.0, 2.0, 3.0]).encode_to_vec(),
    )
    .unwrap();
    std::fs::write(
        set.join("input_1.pb"),
        floats("b", &[0.5, 0.5, 0.5]).encode_to_vec(),
    )
    .unwrap();
    std::fs::write(
        set.join("output_0.pb"),
        floats("y", &[1.5, 2.5, 3.5]).encode_to_vec(),
    )
    .unwrap();
    dir
}

fn args(dir: &Path) -> ConformanceArgs<'_> {
    ConformanceArgs {
        dir,
        filter: None,
        json: false,
        min_pass: None,
        jobs: 1,
    }
}

#[test]
fn a_passing_test_and_the_summary_line() {
    let root = tmp("pass");
    add_test(&root);
    let out = run(&args(&root)).unwrap();
    assert_eq!(out.lines().last(), Some("1 passed, 0 failed"), "{out}");
    let json = run(&ConformanceArgs {
        json: true,
        ..args(&root)
    })
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["passed"], 1);
    assert_eq!(v["results"][0]["status"], "passed");
}

/// A run with failures: an error (exit 1) that still prints the report.
fn failing(a: &ConformanceArgs<'_>) -> String {
    let e = run(a).unwrap_err();
    assert!(e.message.contains("node tests failed"), "{}", e.message);
    e.output
}

#[test]
fn missing_file_and_wrong_dtype_are_failures_with_reasons() {
    let root = tmp("bad");
    let dir = add_test(&root);
    std::fs::remove_file(dir.join("test_data_set_0/output_0.pb")).unwrap();
    let out = failing(&args(&root));
    assert!(out.contains("test_add_tiny: cannot load"), "{out}");
    assert!(out.contains("expected outputs"), "{out}");
    assert_eq!(out.lines().last(), Some("0 passed, 1 failed"));

    let wrong = TensorProto {
        name: "y".into(),
        dims: vec![3],
        data_type: tensor_proto::DataType::Int64 as i32,
        int64_data: vec![1, 2, 3],
        ..Default::default()
    };
    std::fs::write(
        dir.join("test_data_set_0/output_0.pb"),
        wrong.encode_to_vec(),
    )
    .unwrap();
    let out = failing(&args(&root));
    assert!(out.contains("dtype FLOAT, expected INT64"), "{out}");
    // The JSON has the reason and each test's time; a failure is still exit 1.
    let e = run(&ConformanceArgs {
        json: true,
        ..args(&root)
    })
    .unwrap_err();
    let v: serde_json::Value = serde_json::from_str(&e.output).unwrap();
    assert_eq!(v["failed"], 1);
    let r = &v["results"][0];
    assert_eq!(r["status"], "failed");
    assert!(
        r["reason"].as_str().unwrap().contains("expected INT64"),
        "{r}"
    );
    assert!(r["ms"].as_f64().unwrap() >= 0.0, "{r}");
    assert!(v["total_ms"].as_f64().is_some(), "{v}");
    // A floor the passes reach makes failures acceptable (CI's known failures).
    assert!(run(&ConformanceArgs {
        min_pass: Some(0),
        ..args(&root)
    })
    .is_ok());

    std::fs::remove_file(dir.join("model.onnx")).unwrap();
    let out = failing(&args(&root));
    assert!(out.contains("model.onnx: missing"), "{out}");
}

#[test]
fn a_filter_matching_no_test_is_an_error() {
    let root = tmp("filter");
    add_test(&root);
    let e = run(&ConformanceArgs {
        filter: Some("^test_nothing_like_it$"),
        ..args(&root)
    })
    .unwrap_err();
    assert!(
        e.message
            .contains("--filter `^test_nothing_like_it$` matches no test"),
        "{}",
        e.message
    );
}

#[test]
fn floor_and_missing_folder_are_errors() {
    let root = tmp("floor");
    add_test(&root);
    let err = run(&ConformanceArgs {
        min_pass: Some(2),
        ..args(&root)
    })
    .unwrap_err();
    assert!(
        err.message.contains("below the floor of 2"),
        "{}",
        err.message
    );
    let err = run(&args(&root.join("nope"))).unwrap_err();
    assert!(err.message.contains("not a folder"), "{}", err.message);
}
