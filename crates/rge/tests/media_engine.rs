//! The media engine end to end: a model whose front is image bytes → DecodeImage →
//! ResizeBilinearV2 → CropImage → NormalizeImage, then a small CNN, run on real JPEG and PNG
//! files and compared with the same steps done by Pillow and numpy
//! (`scripts/gen_media_test_data.py`, results committed in `crates/rge-media/tests/data`).
//! The tolerance is 1e-4 absolute on the normalized front and the logits: both sides decode
//! the same pixels (rge's JPEG decoder is libjpeg-exact), and the rest is f32 against f64
//! arithmetic. Also: placement on `media`, what happens without it, and bad input.

use prost::Message;
use rge::engines::{engine_set, EngineArgs};
use rge_formats::onnx_proto::{
    attribute_proto::AttributeType, tensor_shape_proto, type_proto, AttributeProto, GraphProto,
    ModelProto, NodeProto, OperatorSetIdProto, TensorProto, TensorShapeProto, TypeProto,
    ValueInfoProto,
};
use rge_kernels::{Tensor, Value};
use rge_runtime::{Model, Session, SessionOptions};

fn data(name: &str) -> Vec<u8> {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/../rge-media/tests/data/");
    std::fs::read(format!("{p}{name}")).unwrap()
}

fn f32s_of(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn vi(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: elem,
                shape: Some(TensorShapeProto {
                    dim: dims
                        .iter()
                        .map(|&d| tensor_shape_proto::Dimension {
                            value: Some(if d < 0 {
                                tensor_shape_proto::dimension::Value::DimParam("n".into())
                            } else {
                                tensor_shape_proto::dimension::Value::DimValue(d)
                            }),
                            ..Default::default()
                        })
                        .collect(),
                }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn a_ints(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Ints as i32,
        ints: v.to_vec(),
        ..Default::default()
    }
}

fn a_floats(name: &str, v: &[f32]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Floats as i32,
        floats: v.to_vec(),
        ..Default::default()
    }
}

fn a_int(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Int as i32,
        i: v,
        ..Default::default()
    }
}

fn a_float(name: &str, v: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Float as i32,
        f: v,
        ..Default::default()
    }
}

fn node(
    op: &str,
    name: &str,
    ins: &[&str],
    outs: &[&str],
    attrs: Vec<AttributeProto>,
) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: name.into(),
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: outs.iter().map(|s| s.to_string()).collect(),
        attribute: attrs,
        ..Default::default()
    }
}

/// w[i] = (((i·37 + salt·11) mod 101) / 50 − 1) / 4, as the test-data script computes it.
fn weight(name: &str, dims: &[i64], salt: i64) -> TensorProto {
    let n: i64 = dims.iter().product();
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: 1,
        float_data: (0..n)
            .map(|i| (((i * 37 + salt * 11) % 101) as f32 / 50.0 - 1.0) / 4.0)
            .collect(),
        ..Default::default()
    }
}

/// bytes [n] uint8 → front [1, 3, 24, 24] and logits [1, 3]; `crop` is CropImage's offsets.
fn model(crop: [i64; 2]) -> rge_ir::ComputeGraph {
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(GraphProto {
            name: "media".into(),
            node: vec![
                node(
                    "DecodeImage",
                    "decode",
                    &["bytes"],
                    &["rgb"],
                    vec![a_int("channels", 3)],
                ),
                node(
                    "ResizeBilinearV2",
                    "resize",
                    &["rgb", "size"],
                    &["big"],
                    vec![a_int("half_pixel_centers", 1)],
                ),
                node(
                    "CropImage",
                    "crop",
                    &["big"],
                    &["cut"],
                    vec![a_ints("offsets", &crop), a_ints("size", &[24, 24])],
                ),
                node(
                    "NormalizeImage",
                    "norm",
                    &["cut"],
                    &["front"],
                    vec![
                        a_floats("mean", &[0.485, 0.456, 0.406]),
                        a_floats("std", &[0.229, 0.224, 0.225]),
                        a_float("scale", 1.0 / 255.0),
                    ],
                ),
                node(
                    "Conv",
                    "conv",
                    &["front", "wc", "bc"],
                    &["c"],
                    vec![a_ints("pads", &[1, 1, 1, 1])],
                ),
                node("Relu", "relu", &["c"], &["r"], vec![]),
                node("GlobalAveragePool", "gap", &["r"], &["p"], vec![]),
                node("Flatten", "flat", &["p"], &["f"], vec![]),
                node(
                    "Gemm",
                    "gemm",
                    &["f", "wg", "bg"],
                    &["logits"],
                    vec![a_int("transB", 1)],
                ),
            ],
            initializer: vec![
                TensorProto {
                    name: "size".into(),
                    dims: vec![2],
                    data_type: 6,
                    int32_data: vec![32, 32],
                    ..Default::default()
                },
                weight("wc", &[4, 3, 3, 3], 1),
                weight("bc", &[4], 2),
                weight("wg", &[3, 4], 3),
                weight("bg", &[3], 4),
            ],
            input: vec![vi("bytes", 2, &[-1])],
            output: vec![vi("front", 1, &[1, 3, 24, 24]), vi("logits", 1, &[1, 3])],
            ..Default::default()
        }),
        ..Default::default()
    };
    rge_formats::onnx::import_bytes(bytes::Bytes::from(m.encode_to_vec()), "media.onnx")
        .unwrap()
        .graph
}

fn session(exclude: Option<&str>) -> Session {
    let set = engine_set(&EngineArgs {
        exclude_engines: exclude.map(str::to_string),
        ..EngineArgs::default()
    })
    .unwrap();
    Session::new(SessionOptions::with_engines(set)).unwrap()
}

fn bytes_value(b: &[u8]) -> Value {
    Value::from(Tensor::from_vec(&[b.len()], b.to_vec()).unwrap())
}

fn engine_of(m: &Model, name: &str) -> String {
    let g = m.graph();
    g.nodes_of(g.root())
        .find(|&n| g.name_of(n) == name)
        .and_then(|n| g.op(n))
        .map(|op| op.engine_name().to_string())
        .unwrap_or_default()
}

fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= 1e-4, "{what}[{i}]: {g}, Pillow/numpy {w}");
    }
}

#[test]
fn preprocessing_front_matches_pillow_and_numpy_on_jpeg_and_png() {
    let m = session(None).compile_graph(model([4, 4])).unwrap();
    for n in ["decode", "resize", "crop", "norm"] {
        assert_eq!(engine_of(&m, n), "media", "{n}");
    }
    // The Conv (fused with its Relu by dense's optimizer) runs on dense.
    let g = m.graph();
    assert!(g
        .nodes_of(g.root())
        .filter_map(|n| g.op(n))
        .any(|op| op.engine_name() == "dense"));
    for file in ["photo.jpg", "photo.png"] {
        let out = m.run(&[bytes_value(&data(file))]).unwrap();
        let front = out[0].as_tensor().unwrap();
        assert_eq!(front.shape(), [1, 3, 24, 24]);
        assert_close(
            front.as_slice::<f32>().unwrap(),
            &f32s_of(&data(&format!("{file}.front"))),
            &format!("{file} front"),
        );
        assert_close(
            out[1].as_tensor().unwrap().as_slice::<f32>().unwrap(),
            &f32s_of(&data(&format!("{file}.logits"))),
            &format!("{file} logits"),
        );
    }
}

#[test]
fn without_media_the_image_ops_have_no_engine() {
    let e = session(Some("media"))
        .compile_graph(model([4, 4]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("DecodeImage") || e.contains("decode"), "{e}");
}

// huge_png, huge_jpeg, huge_bmp, huge_webp, huge_j2k, huge_jp2: hand-made headers that
// declare a huge size and carry no pixels.
include!("../../rge-media/tests/common/headers.rs");

#[test]
fn bad_images_are_errors_naming_the_node() {
    let m = session(None).compile_graph(model([4, 4])).unwrap();
    // Every format's header declaring 100,000² pixels (JPEG: 65,535², its most) is refused
    // from the header: an error naming the node and the size, no allocation sized by it (a
    // decoder that trusted it would ask for 30 GB and abort the test).
    for (format, bytes, (w, h)) in huge_headers() {
        let huge = m.run(&[bytes_value(&bytes)]).unwrap_err().to_string();
        assert!(
            huge.contains("node `decode`")
                && huge.contains(&format!("{w}x{h}"))
                && huge.contains("over the limit"),
            "{format}: {huge}"
        );
    }
    let jpg = data("photo.jpg");
    let cut = m
        .run(&[bytes_value(&jpg[..jpg.len() / 2])])
        .unwrap_err()
        .to_string();
    assert!(cut.contains("decode"), "{cut}");
    let junk = m
        .run(&[bytes_value(b"not an image at all")])
        .unwrap_err()
        .to_string();
    assert!(junk.contains("decode") && junk.contains("format"), "{junk}");
    // A crop box outside the 32x32 resized image.
    let e = session(None)
        .compile_graph(model([20, 4]))
        .and_then(|m| m.run(&[bytes_value(&jpg)]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("crop") && e.contains("outside"), "{e}");
}
