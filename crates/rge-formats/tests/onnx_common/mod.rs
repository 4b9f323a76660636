//! Helpers for the ONNX tests: fixture paths, small `ModelProto` builders, temp dirs and the
//! optional Python `onnx` checker.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

pub mod models;

use bytes::Bytes;
use prost::Message;
use rge_formats::onnx::{self, OnnxModel};
use rge_formats::onnx_proto::attribute_proto::AttributeType;
use rge_formats::onnx_proto::tensor_shape_proto::{dimension, Dimension};
use rge_formats::onnx_proto::{
    type_proto, AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};

pub const FIXTURES: [&str; 5] = [
    "onnx_clip_v9.onnx",
    "onnx_const_type.onnx",
    "onnx_conv2d.onnx",
    "onnx_if.onnx",
    "onnx_if_const_intput.onnx",
];

pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/onnx")
}

pub fn fixture(name: &str) -> PathBuf {
    data_dir().join(name)
}

/// A fresh empty directory under the system temp dir.
pub fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "rge-onnx-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The workspace's `.venv` python, if it has `onnx`.
pub fn python_with_onnx() -> Option<PathBuf> {
    let py = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    let ok = py.is_file()
        && Command::new(&py)
            .args(["-c", "import onnx"])
            .output()
            .is_ok_and(|o| o.status.success());
    ok.then_some(py)
}

/// Runs `onnx.checker.check_model(path, full_check=full)`; `Err(message)` when it rejects.
pub fn onnx_check(py: &Path, path: &Path, full: bool) -> Result<(), String> {
    let full = if full { "True" } else { "False" };
    let out = Command::new(py)
        .args([
            "-c",
            "import onnx, sys; onnx.checker.check_model(sys.argv[1], full_check=sys.argv[2] == 'True')",
        ])
        .arg(path)
        .arg(full)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        let e = String::from_utf8_lossy(&out.stderr);
        let msg: Vec<&str> = e
            .lines()
            .filter(|l| !l.starts_with("Traceback") && !l.starts_with("  "))
            .collect();
        Err(msg.join("\n"))
    }
}

pub fn import_proto(m: &ModelProto) -> Result<OnnxModel, onnx::OnnxError> {
    onnx::import_bytes(Bytes::from(m.encode_to_vec()), "test.onnx")
}

// ---- builders ----

pub fn tensor_type(elem: i32, dims: &[i64]) -> TypeProto {
    TypeProto {
        value: Some(type_proto::Value::TensorType(type_proto::Tensor {
            elem_type: elem,
            shape: Some(TensorShapeProto {
                dim: dims
                    .iter()
                    .map(|&d| Dimension {
                        value: Some(dimension::Value::DimValue(d)),
                        ..Default::default()
                    })
                    .collect(),
            }),
        })),
        ..Default::default()
    }
}

pub fn vi(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(tensor_type(elem, dims)),
        ..Default::default()
    }
}

pub fn vi_untyped(name: &str) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        ..Default::default()
    }
}

pub fn node(op: &str, name: &str, inputs: &[&str], outputs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: name.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        output: outputs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

pub fn with_attr(mut n: NodeProto, a: AttributeProto) -> NodeProto {
    n.attribute.push(a);
    n
}

pub fn attr_graph(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Graph as i32,
        g: Some(g),
        ..Default::default()
    }
}

pub fn attr_int(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Int as i32,
        i,
        ..Default::default()
    }
}

pub fn f32_tensor(name: &str, dims: &[i64], values: &[f32]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: 1,
        raw_data: values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>()
            .into(),
        ..Default::default()
    }
}

pub fn graph(
    name: &str,
    nodes: Vec<NodeProto>,
    inputs: Vec<ValueInfoProto>,
    outputs: Vec<ValueInfoProto>,
    inits: Vec<TensorProto>,
) -> GraphProto {
    GraphProto {
        name: name.into(),
        node: nodes,
        input: inputs,
        output: outputs,
        initializer: inits,
        ..Default::default()
    }
}

pub fn model(g: GraphProto, opset: i64) -> ModelProto {
    ModelProto {
        ir_version: 8,
        producer_name: "rge-test".into(),
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: opset,
        }],
        graph: Some(g),
        ..Default::default()
    }
}
