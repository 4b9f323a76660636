//! Old ONNX op versions run end to end with their version's semantics: each model at an old
//! opset gives the outputs of the same computation written with a newer version
//! (`rge_ops::upgrade` rewrites most; the rest keep their old form). Bad attribute
//! combinations an old version forbids are errors naming the node.

#[path = "common/net.rs"]
mod net;

use net::*;
use rge::engines::{engine_set, EngineArgs};
use rge_formats::onnx_proto::{attribute_proto::AttributeType, AttributeProto, ModelProto};
use rge_runtime::{Session, SessionOptions};

fn a_str(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::String as i32,
        s: v.as_bytes().to_vec().into(),
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

fn try_run(m: &ModelProto) -> Result<Vec<Vec<f64>>, String> {
    let set = engine_set(&EngineArgs::default()).map_err(|e| e.to_string())?;
    let s = Session::new(SessionOptions::with_engines(set)).map_err(|e| e.to_string())?;
    let model = s.compile_graph(graph_of(m)).map_err(|e| e.to_string())?;
    let outs = model.run(&inputs_of(m)).map_err(|e| e.to_string())?;
    Ok(outs
        .iter()
        .map(|v| {
            let t = v.as_tensor().unwrap();
            if let Ok(s) = t.as_slice::<f32>() {
                s.iter().map(|&x| x as f64).collect()
            } else {
                t.view()
                    .to_i64_vec()
                    .unwrap()
                    .iter()
                    .map(|&x| x as f64)
                    .collect()
            }
        })
        .collect())
}

/// Runs both models on the same inputs; their outputs must agree.
fn same_outputs(old: &ModelProto, new: &ModelProto) {
    let a = try_run(old).unwrap();
    let b = try_run(new).unwrap();
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.len(), y.len(), "output sizes differ");
        for (p, q) in x.iter().zip(y) {
            assert!((p - q).abs() <= 1e-5 * q.abs().max(1.0), "{p} vs {q}");
        }
    }
}

fn net(opset: i64) -> Net {
    let mut n = Net::new();
    n.opset = opset;
    n
}

#[test]
fn add_6_broadcast_with_axis_aligns_b_at_axis() {
    let mut old = net(6);
    let a = old.input("a", F32, &[2, 3, 4, 5]);
    let b = old.weight(&[3, 4], 7);
    old.op_to(
        "Add",
        &[&a, &b],
        "y",
        vec![a_int("broadcast", 1), a_int("axis", 1)],
    );
    old.output("y", F32, &[2, 3, 4, 5]);
    let mut new = net(13);
    let a = new.input("a", F32, &[2, 3, 4, 5]);
    let b = new.weight(&[3, 4, 1], 7);
    new.op_to("Add", &[&a, &b], "y", vec![]);
    new.output("y", F32, &[2, 3, 4, 5]);
    same_outputs(&old.model(), &new.model());
}

#[test]
fn mul_1_broadcast_without_axis_is_numpy_broadcasting() {
    let mut old = net(1);
    let a = old.input("a", F32, &[2, 3, 4]);
    let b = old.weight(&[4], 3);
    old.op_to(
        "Mul",
        &[&a, &b],
        "y",
        vec![a_int("broadcast", 1), a_ints("consumed_inputs", &[0, 0])],
    );
    old.output("y", F32, &[2, 3, 4]);
    let mut new = net(14);
    let a = new.input("a", F32, &[2, 3, 4]);
    let b = new.weight(&[4], 3);
    new.op_to("Mul", &[&a, &b], "y", vec![]);
    new.output("y", F32, &[2, 3, 4]);
    same_outputs(&old.model(), &new.model());
}

fn batch_norm(opset: i64, attrs: Vec<AttributeProto>) -> ModelProto {
    let mut m = net(opset);
    let x = m.input("x", F32, &[2, 3, 4, 4]);
    let scale = m.weight(&[3], 1);
    let bias = m.weight(&[3], 2);
    let mean = m.weight(&[3], 3);
    let w = m.weight(&[3], 4);
    let var = m.op("Abs", &[&w], vec![]);
    m.op_to(
        "BatchNormalization",
        &[&x, &scale, &bias, &mean, &var],
        "y",
        attrs,
    );
    m.output("y", F32, &[2, 3, 4, 4]);
    m.model()
}

#[test]
fn batch_norm_1_with_consumed_inputs_and_is_test() {
    let old = batch_norm(
        1,
        vec![
            a_ints("consumed_inputs", &[0, 0, 0, 1, 1]),
            a_int("is_test", 1),
            a_float("epsilon", 1e-3),
        ],
    );
    same_outputs(&old, &batch_norm(15, vec![a_float("epsilon", 1e-3)]));
}

fn upsample(opset: i64, attrs: Vec<AttributeProto>, scales_input: bool) -> ModelProto {
    let mut m = net(opset);
    let x = m.input("x", F32, &[1, 2, 3, 4]);
    let mut ins = vec![x];
    if scales_input {
        ins.push(scales_const(&mut m));
    }
    let refs: Vec<&str> = ins.iter().map(String::as_str).collect();
    m.op_to("Upsample", &refs, "y", attrs);
    m.output("y", F32, &[1, 2, 6, 12]);
    m.model()
}

fn scales_const(m: &mut Net) -> String {
    let out = "scales".to_string();
    m.op_to(
        "Constant",
        &[],
        &out,
        vec![AttributeProto {
            name: "value".into(),
            r#type: AttributeType::Tensor as i32,
            t: Some(rge_formats::onnx_proto::TensorProto {
                dims: vec![4],
                data_type: F32,
                float_data: vec![1.0, 1.0, 2.0, 3.0],
                ..Default::default()
            }),
            ..Default::default()
        }],
    );
    out
}

#[test]
fn upsample_1_and_7_match_upsample_9() {
    let new = upsample(9, vec![], true);
    let v1 = upsample(
        1,
        vec![a_float("height_scale", 2.0), a_float("width_scale", 3.0)],
        false,
    );
    same_outputs(&v1, &new);
    let v7 = upsample(7, vec![a_floats("scales", &[1.0, 1.0, 2.0, 3.0])], false);
    same_outputs(&v7, &new);
}

#[test]
fn reshape_1_with_shape_attribute() {
    let mut old = net(1);
    let x = old.input("x", F32, &[2, 3, 4]);
    old.op_to("Reshape", &[&x], "y", vec![a_ints("shape", &[4, -1])]);
    old.output("y", F32, &[4, 6]);
    let mut new = net(13);
    let x = new.input("x", F32, &[2, 3, 4]);
    let s = new.ints(&[4, -1]);
    new.op_to("Reshape", &[&x, &s], "y", vec![]);
    new.output("y", F32, &[4, 6]);
    same_outputs(&old.model(), &new.model());
}

#[test]
fn cast_1_names_the_type() {
    let mut old = net(1);
    let x = old.input("x", F32, &[5]);
    old.op_to("Cast", &[&x], "y", vec![a_str("to", "INT32")]);
    old.output("y", 6, &[5]);
    let mut new = net(13);
    let x = new.input("x", F32, &[5]);
    new.op_to("Cast", &[&x], "y", vec![a_int("to", 6)]);
    new.output("y", 6, &[5]);
    same_outputs(&old.model(), &new.model());
}

#[test]
fn split_1_with_split_input_and_tile_1() {
    // Split 1 takes `split` as an input of the data's type (Split 13's form takes int64);
    // Tile 1 takes (tiles, axis).
    let mut old = net(1);
    let x = old.input("x", F32, &[6, 2]);
    let s = old.floats(&[2.0, 4.0]);
    old.op_outs("Split", &[&x, &s], &["s0", "s1"], vec![]);
    let tiles = old.floats(&[3.0]);
    let axis = old.floats(&[1.0]);
    old.op_to("Tile", &["s1", &tiles, &axis], "t", vec![]);
    old.output("s0", F32, &[2, 2]);
    old.output("t", F32, &[4, 6]);
    let mut new = net(13);
    let x = new.input("x", F32, &[6, 2]);
    let s = new.ints(&[2, 4]);
    new.op_outs("Split", &[&x, &s], &["s0", "s1"], vec![]);
    let reps = new.ints(&[1, 3]);
    new.op_to("Tile", &["s1", &reps], "t", vec![]);
    new.output("s0", F32, &[2, 2]);
    new.output("t", F32, &[4, 6]);
    same_outputs(&old.model(), &new.model());
}

#[test]
fn old_attribute_combinations_are_errors_naming_the_node() {
    let mut m = net(1);
    let x = m.input("x", F32, &[1, 1, 2, 2]);
    m.op_to(
        "Upsample",
        &[&x],
        "y",
        vec![
            a_float("height_scale", 2.0),
            a_float("width_scale", 2.0),
            a_str("mode", "cubic"),
        ],
    );
    m.output("y", F32, &[1, 1, 4, 4]);
    let e = try_run(&m.model()).unwrap_err();
    assert!(e.contains("n1") && e.contains("bilinear"), "{e}");

    let mut m = net(6);
    let x = m.input("x", F32, &[2, 3]);
    let b = m.weight(&[3], 1);
    m.op_to("Add", &[&x, &b], "y", vec![a_int("broadcast", 2)]);
    m.output("y", F32, &[2, 3]);
    let e = try_run(&m.model()).unwrap_err();
    assert!(
        e.contains("broadcast") && e.contains("must be 0 or 1"),
        "{e}"
    );

    // broadcast = 0: the shapes must be equal (an explicit axis keeps the old form).
    let mut m = net(6);
    let x = m.input("x", F32, &[2, 3]);
    let b = m.weight(&[3], 1);
    m.op_to(
        "Sub",
        &[&x, &b],
        "y",
        vec![a_int("broadcast", 1), a_int("axis", 0)],
    );
    m.output("y", F32, &[2, 3]);
    let e = try_run(&m.model()).unwrap_err();
    assert!(e.contains("does not broadcast"), "{e}");
}
