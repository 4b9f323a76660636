//! ONNX ModelProto decoding: the GE parser's test models from shared/fixtures,
//! and zero-copy `raw_data`.

use std::path::PathBuf;

use bytes::Bytes;
use prost::Message;
use rge_formats::onnx_proto::{tensor_proto, GraphProto, ModelProto, TensorProto};

/// The GE parser's ONNX test models: the crate's copy in `tests/data/onnx`, else
/// `shared/fixtures/ge/onnx` beside the repository (or under `$RGE_SHARED_DIR`).
fn fixture_dir() -> Option<PathBuf> {
    let local = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/onnx");
    if local.join("onnx_clip_v9.onnx").is_file() {
        return Some(local);
    }
    let shared = match std::env::var_os("RGE_SHARED_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    };
    let dir = shared.join("fixtures/ge/onnx");
    dir.is_dir().then_some(dir)
}

fn load(name: &str) -> Option<(Bytes, ModelProto)> {
    let Some(dir) = fixture_dir() else {
        eprintln!("shared/fixtures/ge/onnx not found; skipping {name}");
        return None;
    };
    let buf = Bytes::from(std::fs::read(dir.join(name)).unwrap());
    let model = ModelProto::decode(buf.clone()).unwrap();
    // Re-encoding decodes to the same message.
    assert_eq!(
        ModelProto::decode(model.encode_to_vec().as_slice()).unwrap(),
        model
    );
    Some((buf, model))
}

fn op_types(g: &GraphProto) -> Vec<&str> {
    g.node.iter().map(|n| n.op_type.as_str()).collect()
}

fn opset(m: &ModelProto) -> Vec<(&str, i64)> {
    m.opset_import
        .iter()
        .map(|o| (o.domain.as_str(), o.version))
        .collect()
}

#[test]
fn clip_v9() {
    let Some((_, m)) = load("onnx_clip_v9.onnx") else {
        return;
    };
    assert_eq!(m.ir_version, 7);
    assert_eq!(opset(&m), [("", 9)]);
    let g = m.graph.as_ref().unwrap();
    assert_eq!(op_types(g), ["Clip"]);
    let x = &g.input[0];
    assert_eq!(x.name, "X");
    let Some(rge_formats::onnx_proto::type_proto::Value::TensorType(t)) =
        x.r#type.as_ref().and_then(|t| t.value.as_ref())
    else {
        panic!("X is not a tensor");
    };
    assert_eq!(t.elem_type, tensor_proto::DataType::Float as i32);
    let dims: Vec<_> = t
        .shape
        .as_ref()
        .unwrap()
        .dim
        .iter()
        .map(|d| d.value.clone())
        .collect();
    use rge_formats::onnx_proto::tensor_shape_proto::dimension::Value::DimValue;
    assert_eq!(
        dims,
        [Some(DimValue(3)), Some(DimValue(4)), Some(DimValue(5))]
    );
}

#[test]
fn const_type() {
    let Some((_, m)) = load("onnx_const_type.onnx") else {
        return;
    };
    assert_eq!((m.ir_version, opset(&m)), (8, vec![("", 11)]));
    let g = m.graph.as_ref().unwrap();
    assert_eq!(op_types(g), ["Add"; 6]);
    use tensor_proto::DataType as D;
    let types: Vec<i32> = g.initializer.iter().map(|t| t.data_type).collect();
    let want = [
        D::Int64,
        D::Uint64,
        D::Complex64,
        D::String,
        D::Double,
        D::Complex128,
    ];
    assert_eq!(types, want.map(|d| d as i32));
    assert!(g.initializer.iter().all(|t| t.dims == [1, 2]));
    assert_eq!(g.initializer[0].int64_data.len(), 2);
    assert_eq!(g.initializer[2].float_data.len(), 4);
    assert_eq!(g.initializer[3].string_data.len(), 2);
}

#[test]
fn conv2d() {
    let Some((_, m)) = load("onnx_conv2d.onnx") else {
        return;
    };
    assert_eq!((m.ir_version, opset(&m)), (7, vec![("", 11)]));
    let g = m.graph.as_ref().unwrap();
    assert_eq!(op_types(g), ["Conv"]);
    let w = &g.initializer[0];
    assert_eq!(
        (w.name.as_str(), w.dims.as_slice(), w.float_data.len()),
        ("W", &[1, 1, 3, 3][..], 9)
    );
    assert_eq!(g.initializer[1].dims, [1]);
}

#[test]
fn if_subgraphs() {
    let Some((_, m)) = load("onnx_if.onnx") else {
        return;
    };
    let g = m.graph.as_ref().unwrap();
    assert_eq!(op_types(g), ["Add", "If", "Add"]);
    let branches: Vec<_> = g.node[1]
        .attribute
        .iter()
        .map(|a| (a.name.as_str(), op_types(a.g.as_ref().unwrap())))
        .collect();
    assert_eq!(
        branches,
        [
            ("else_branch", vec!["Identity"]),
            ("then_branch", vec!["Identity"])
        ]
    );

    let Some((_, m)) = load("onnx_if_const_intput.onnx") else {
        return;
    };
    assert_eq!(m.producer_name, "");
    assert_eq!(op_types(m.graph.as_ref().unwrap()), ["If", "Constant"]);
}

#[test]
fn raw_data_is_not_copied() {
    let weights: Vec<u8> = (0..4096u32)
        .flat_map(|i| (i as f32).to_le_bytes())
        .collect();
    let model = ModelProto {
        ir_version: 8,
        graph: Some(GraphProto {
            initializer: vec![TensorProto {
                name: "w".into(),
                dims: vec![4096],
                data_type: tensor_proto::DataType::Float as i32,
                raw_data: Bytes::from(weights.clone()),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let buf = Bytes::from(model.encode_to_vec());
    let decoded = ModelProto::decode(buf.clone()).unwrap();
    let raw = &decoded.graph.as_ref().unwrap().initializer[0].raw_data;
    assert_eq!(raw.as_ref(), weights.as_slice());
    let range = buf.as_ptr() as usize..buf.as_ptr() as usize + buf.len();
    assert!(
        range.contains(&(raw.as_ptr() as usize)),
        "raw_data was copied"
    );
}
