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

/// The model's inputs (`inputs_of`) as f64, to compute expected outputs by hand.
fn input_values(m: &ModelProto) -> Vec<Vec<f64>> {
    inputs_of(m).iter().map(to_f64).collect()
}

/// Runs `m`; its outputs must be `want` (1e-5 relative).
fn expect(m: &ModelProto, want: &[Vec<f64>]) {
    let got = try_run(m).unwrap();
    assert_eq!(got.len(), want.len());
    for (x, y) in got.iter().zip(want) {
        assert_eq!(x.len(), y.len(), "output sizes differ: {x:?} vs {y:?}");
        for (p, q) in x.iter().zip(y) {
            assert!((p - q).abs() <= 1e-5 * q.abs().max(1.0), "{p} vs {q}");
        }
    }
}

#[test]
fn dropout_1_and_6_with_is_test_are_the_identity() {
    for (opset, mut attrs) in [(1, vec![a_ints("consumed_inputs", &[0])]), (6, vec![])] {
        attrs.push(a_int("is_test", 1));
        attrs.push(a_float("ratio", 0.3));
        let mut m = net(opset);
        let x = m.input("x", F32, &[2, 5]);
        m.op_to("Dropout", &[&x], "y", attrs);
        m.output("y", F32, &[2, 5]);
        let m = m.model();
        let x = input_values(&m).remove(0);
        expect(&m, &[x]);
    }
}

#[test]
fn dropout_6_training_keeps_or_scales_each_element() {
    // is_test = 0 keeps the old form: each element dropped or scaled by 1 / (1 - ratio).
    let mut m = net(6);
    let x = m.input("x", F32, &[4, 25]);
    m.op_to("Dropout", &[&x], "y", vec![a_float("ratio", 0.5)]);
    m.output("y", F32, &[4, 25]);
    let m = m.model();
    let x = input_values(&m).remove(0);
    let y = try_run(&m).unwrap().remove(0);
    assert_eq!(x.len(), y.len());
    let kept = x
        .iter()
        .zip(&y)
        .filter(|(p, q)| {
            assert!(
                **q == 0.0 || (*q - 2.0 * *p).abs() <= 1e-5 * p.abs().max(1.0),
                "{q} is neither 0 nor 2·{p}"
            );
            **q != 0.0
        })
        .count();
    assert!((10..90).contains(&kept), "{kept} of 100 kept at ratio 0.5");
}

#[test]
fn pad_1_takes_paddings() {
    // [2, 3] padded by one row before and two columns after, with 1.5.
    let mut m = net(1);
    let x = m.input("x", F32, &[2, 3]);
    m.op_to(
        "Pad",
        &[&x],
        "y",
        vec![a_ints("paddings", &[1, 0, 0, 2]), a_float("value", 1.5)],
    );
    m.output("y", F32, &[3, 5]);
    let m = m.model();
    let x = input_values(&m).remove(0);
    let mut want = vec![1.5; 15];
    for r in 0..2 {
        for c in 0..3 {
            want[(r + 1) * 5 + c] = x[r * 3 + c];
        }
    }
    expect(&m, &[want]);

    // edge: one column before, one row after, from the nearest element.
    let mut m = net(1);
    let x = m.input("x", F32, &[2, 3]);
    m.op_to(
        "Pad",
        &[&x],
        "y",
        vec![a_ints("paddings", &[0, 1, 1, 0]), a_str("mode", "edge")],
    );
    m.output("y", F32, &[3, 4]);
    let m = m.model();
    let x = input_values(&m).remove(0);
    let want: Vec<f64> = (0..3)
        .flat_map(|r: usize| (0..4).map(move |c: usize| (r.min(1), c.saturating_sub(1))))
        .map(|(r, c)| x[r * 3 + c])
        .collect();
    expect(&m, &[want]);
}

fn lp(values: impl Iterator<Item = f64>, p: f64) -> f64 {
    values.map(|v| v.abs().powf(p)).sum::<f64>().powf(1.0 / p)
}

#[test]
fn lp_pool_1_and_global_lp_pool_1_take_a_float_p() {
    // LpPool 1, p = 3.0, 2×2 windows of [1, 1, 2, 4], stride 1: [1, 1, 1, 3].
    let mut m = net(1);
    let x = m.input("x", F32, &[1, 1, 2, 4]);
    m.op_to(
        "LpPool",
        &[&x],
        "y",
        vec![a_float("p", 3.0), a_ints("kernel_shape", &[2, 2])],
    );
    m.output("y", F32, &[1, 1, 1, 3]);
    let m = m.model();
    let x = input_values(&m).remove(0);
    let x = &x;
    let want: Vec<f64> = (0..3)
        .map(|j| {
            lp(
                [0, 1]
                    .iter()
                    .flat_map(|r| (j..j + 2).map(move |c| x[r * 4 + c])),
                3.0,
            )
        })
        .collect();
    expect(&m, &[want]);

    // GlobalLpPool 1 over [1, 2, 2, 3]: p = 3.0, and the default 2.0.
    for (attrs, p) in [(vec![a_float("p", 3.0)], 3.0), (vec![], 2.0)] {
        let mut m = net(1);
        let x = m.input("x", F32, &[1, 2, 2, 3]);
        m.op_to("GlobalLpPool", &[&x], "y", attrs);
        m.output("y", F32, &[1, 2, 1, 1]);
        let m = m.model();
        let x = input_values(&m).remove(0);
        let want: Vec<f64> = x.chunks(6).map(|c| lp(c.iter().copied(), p)).collect();
        expect(&m, &[want]);
    }
}

fn gemm(opset: i64, c_dims: &[i64], attrs: Vec<AttributeProto>) -> ModelProto {
    let mut m = net(opset);
    let a = m.input("a", F32, &[3, 5]);
    let b = m.weight(&[4, 5], 11);
    let c = m.weight(c_dims, 12);
    let mut attrs = attrs;
    attrs.extend([
        a_int("transB", 1),
        a_float("alpha", 0.5),
        a_float("beta", 2.0),
    ]);
    m.op_to("Gemm", &[&a, &b, &c], "y", attrs);
    m.output("y", F32, &[3, 4]);
    m.model()
}

#[test]
fn gemm_1_and_6_broadcast_flag() {
    // broadcast = 1: C of [N] broadcast over the rows, as Gemm 7+ does.
    let new = gemm(13, &[4], vec![]);
    same_outputs(&gemm(1, &[4], vec![a_int("broadcast", 1)]), &new);
    same_outputs(&gemm(6, &[4], vec![a_int("broadcast", 1)]), &new);
    // broadcast = 0: C of the output's shape.
    let new = gemm(13, &[3, 4], vec![]);
    same_outputs(&gemm(1, &[3, 4], vec![]), &new);
    same_outputs(&gemm(6, &[3, 4], vec![a_int("broadcast", 0)]), &new);
    // Against the sums themselves: y = 0.5 · A · Bᵀ + 2 · C.
    let m = gemm(6, &[4], vec![a_int("broadcast", 1)]);
    let a = input_values(&m).remove(0);
    let inits = &m.graph.as_ref().unwrap().initializer;
    let (b, c) = (&inits[0].float_data, &inits[1].float_data);
    let want: Vec<f64> = (0..3)
        .flat_map(|i| (0..4).map(move |j| (i, j)))
        .map(|(i, j)| {
            let dot: f64 = (0..5).map(|k| a[i * 5 + k] * b[j * 5 + k] as f64).sum();
            0.5 * dot + 2.0 * c[j] as f64
        })
        .collect();
    expect(&m, &[want]);
}

#[test]
fn reshape_1_with_consumed_inputs_and_a_copied_dim() {
    // Reshape 1 (`shape` an attribute, `consumed_inputs` dropped), then ReduceSum 1 over
    // axis 1, whose sums show the shape: [2, 3, 4] → [4, 6] → [4]; → [2, 12] (0 copies the
    // dim) → [2].
    for (shape, rows) in [(vec![4, -1], 4usize), (vec![0, -1], 2)] {
        let mut m = net(1);
        let x = m.input("x", F32, &[2, 3, 4]);
        let r = m.op(
            "Reshape",
            &[&x],
            vec![a_ints("shape", &shape), a_ints("consumed_inputs", &[1])],
        );
        m.op_to(
            "ReduceSum",
            &[&r],
            "y",
            vec![a_ints("axes", &[1]), a_int("keepdims", 0)],
        );
        m.output("y", F32, &[rows as i64]);
        let m = m.model();
        let x = input_values(&m).remove(0);
        let want: Vec<f64> = x.chunks(24 / rows).map(|c| c.iter().sum()).collect();
        expect(&m, &[want]);
    }
}

#[test]
fn split_1_with_split_attribute_or_equal_parts() {
    // Split 1 without a `split` input becomes Split 2 (the attribute form).
    for (attrs, sizes) in [
        (
            vec![a_ints("split", &[1, 3]), a_int("axis", 1)],
            [1usize, 3],
        ),
        (vec![a_int("axis", 1)], [2, 2]),
    ] {
        let mut m = net(1);
        let x = m.input("x", F32, &[3, 4]);
        m.op_outs("Split", &[&x], &["s0", "s1"], attrs);
        m.output("s0", F32, &[3, sizes[0] as i64]);
        m.output("s1", F32, &[3, sizes[1] as i64]);
        let m = m.model();
        let x = input_values(&m).remove(0);
        let part = |from: usize, n: usize| -> Vec<f64> {
            (0..3)
                .flat_map(|r| (from..from + n).map(move |c| r * 4 + c))
                .map(|i| x[i])
                .collect()
        };
        expect(&m, &[part(0, sizes[0]), part(sizes[0], sizes[1])]);
    }
}

#[test]
fn batch_norm_6_with_one_output_is_inference() {
    // No `is_test`, one output: the inference form (version 7's), as onnx's adapter has it.
    let old = batch_norm(6, vec![a_float("epsilon", 1e-3), a_int("spatial", 1)]);
    same_outputs(&old, &batch_norm(15, vec![a_float("epsilon", 1e-3)]));
    let old = batch_norm(6, vec![a_float("epsilon", 1e-3), a_int("is_test", 1)]);
    same_outputs(&old, &batch_norm(15, vec![a_float("epsilon", 1e-3)]));
}

#[test]
fn legacy_broadcast_of_the_other_binary_ops() {
    // Pow, Div and Sub with numpy-style `broadcast` (no axis), then Greater and And on the
    // comparisons, at opsets 1 and 6 (Div and Sub 6, the others 1; Abs 1 drops
    // `consumed_inputs`, Cast 1 names its type); the same graph at opset 13 without the flags.
    let build = |opset: i64| {
        let old = opset < 7;
        let bc = |mut v: Vec<AttributeProto>| {
            if old {
                v.push(a_int("broadcast", 1));
            }
            v
        };
        let mut m = net(opset);
        let a = m.input("a", F32, &[2, 3, 4]);
        let b = m.weight(&[4], 5);
        let abs_attrs = if opset < 6 {
            vec![a_ints("consumed_inputs", &[0])]
        } else {
            vec![]
        };
        let pos = m.op("Abs", &[&a], abs_attrs);
        let pow = m.op("Pow", &[&pos, &b], bc(vec![]));
        let div = m.op("Div", &[&pow, &b], bc(vec![]));
        let sub = m.op("Sub", &[&div, &b], bc(vec![]));
        let gt = m.op("Greater", &[&sub, &b], bc(vec![]));
        let mask = m.bools(&[4], &[true, false, true, true]);
        let and = m.op("And", &[&gt, &mask], bc(vec![]));
        let to = if opset < 6 {
            a_str("to", "FLOAT")
        } else {
            a_int("to", 1)
        };
        m.op_to("Cast", &[&and], "y", vec![to]);
        m.output("y", F32, &[2, 3, 4]);
        m.output(&sub, F32, &[2, 3, 4]);
        m.model()
    };
    same_outputs(&build(6), &build(13));
    same_outputs(&build(1), &build(13));
}

#[test]
fn old_rewrites_refuse_what_the_old_version_forbids() {
    let err = |m: &Net| try_run(&m.model()).unwrap_err();

    let mut m = net(1);
    let x = m.input("x", F32, &[2, 3]);
    m.op_to("Pad", &[&x], "y", vec![a_ints("pads", &[0, 0, 1, 1])]);
    m.output("y", F32, &[3, 4]);
    let e = err(&m);
    assert!(e.contains("n1") && e.contains("paddings"), "{e}");

    let mut m = net(1);
    let x = m.input("x", F32, &[1, 1, 2, 2]);
    m.op_to("GlobalLpPool", &[&x], "y", vec![a_float("p", 2.5)]);
    m.output("y", F32, &[1, 1, 1, 1]);
    let e = err(&m);
    assert!(e.contains("n1") && e.contains("`p` = 2.5"), "{e}");

    let mut m = net(1);
    let x = m.input("x", F32, &[4, 2]);
    let s = m.floats(&[2.0, 2.0]);
    m.op_outs(
        "Split",
        &[&x, &s],
        &["s0", "s1"],
        vec![a_ints("split", &[2, 2])],
    );
    m.output("s0", F32, &[2, 2]);
    m.output("s1", F32, &[2, 2]);
    let e = err(&m);
    assert!(e.contains("both as an input and as an attribute"), "{e}");

    let m = gemm(6, &[4], vec![a_int("broadcast", 3)]);
    let e = try_run(&m).unwrap_err();
    assert!(e.contains("must be 0 or 1"), "{e}");

    // BatchNormalization 6 in inference (`is_test` = 1) has one output.
    let mut m = net(6);
    let x = m.input("x", F32, &[1, 2, 2, 2]);
    let ws: Vec<String> = (0..4).map(|k| m.weight(&[2], k)).collect();
    let var = m.op("Abs", &[&ws[3]], vec![]);
    m.op_outs(
        "BatchNormalization",
        &[&x, &ws[0], &ws[1], &ws[2], &var],
        &["y", "mean", "var", "saved_mean", "saved_var"],
        vec![a_int("is_test", 1)],
    );
    m.output("y", F32, &[1, 2, 2, 2]);
    let e = err(&m);
    assert!(e.contains("inference has one"), "{e}");
}
