//! ai.onnx.preview.training's Gradient, expanded into its backward graph: on chains of every
//! differentiable op, with broadcasting and batched MatMul, the gradients equal central finite
//! differences of sum(y); an op without a backward rule is an error naming it.

#[path = "common/net.rs"]
mod net;

use net::*;
use rge::engines::{engine_set, EngineArgs};
use rge_formats::onnx_proto::{attribute_proto::AttributeType, AttributeProto, ModelProto};
use rge_kernels::{Tensor, Value};
use rge_runtime::{Session, SessionOptions};

const TRAINING: &str = "ai.onnx.preview.training";

fn a_strings(name: &str, v: &[&str]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::Strings as i32,
        strings: v.iter().map(|s| s.as_bytes().to_vec().into()).collect(),
        ..Default::default()
    }
}

fn a_str(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: AttributeType::String as i32,
        s: v.as_bytes().to_vec().into(),
        ..Default::default()
    }
}

fn run(m: &ModelProto, inputs: &[Value]) -> Result<Vec<Vec<f64>>, String> {
    let set = engine_set(&EngineArgs::default()).map_err(|e| e.to_string())?;
    let s = Session::new(SessionOptions::with_engines(set)).map_err(|e| e.to_string())?;
    let model = s.compile_graph(graph_of(m)).map_err(|e| e.to_string())?;
    let outs = model.run(inputs).map_err(|e| e.to_string())?;
    Ok(outs
        .iter()
        .map(|v| v.as_tensor().unwrap().as_slice::<f64>().unwrap().to_vec())
        .collect())
}

/// A model of inputs `xs` (f64, of the given dims) and `forward` (which writes "y"); with
/// `grad`, a Gradient node adds the outputs dy/dx.
fn model(xs: &[(&str, &[i64])], forward: &dyn Fn(&mut Net), grad: bool) -> ModelProto {
    let mut n = Net::new();
    for (x, dims) in xs {
        n.input(x, F64, dims);
    }
    forward(&mut n);
    n.output("y", F64, &[]);
    if grad {
        let names: Vec<&str> = xs.iter().map(|x| x.0).collect();
        let outs: Vec<String> = names.iter().map(|x| format!("dy_d{x}")).collect();
        let outs: Vec<&str> = outs.iter().map(String::as_str).collect();
        n.op_in_domain(
            TRAINING,
            "Gradient",
            &names,
            &outs,
            vec![a_strings("xs", &names), a_str("y", "y")],
        );
        for (o, (_, dims)) in outs.iter().zip(xs) {
            n.output(o, F64, dims);
        }
    }
    n.model()
}

/// The gradients of sum(y) from the Gradient node against central differences.
fn check(xs: &[(&str, &[i64])], forward: &dyn Fn(&mut Net)) {
    let with = model(xs, forward, true);
    let inputs = inputs_of(&with);
    let outs = run(&with, &inputs).unwrap();
    let plain = model(xs, forward, false);
    let set = engine_set(&EngineArgs::default()).unwrap();
    let s = Session::new(SessionOptions::with_engines(set)).unwrap();
    let fwd = s.compile_graph(graph_of(&plain)).unwrap();
    let total = |ins: &[Value]| -> f64 {
        let o = fwd.run(ins).unwrap();
        o[0].as_tensor()
            .unwrap()
            .as_slice::<f64>()
            .unwrap()
            .iter()
            .sum()
    };
    let h = 1e-6;
    for (k, (x, _)) in xs.iter().enumerate() {
        let got = &outs[1 + k];
        let t = inputs[k].as_tensor().unwrap();
        let base = t.as_slice::<f64>().unwrap().to_vec();
        assert_eq!(got.len(), base.len(), "dy/d{x} has the shape of {x}");
        for (i, g) in got.iter().enumerate() {
            let at = |d: f64| {
                let mut v = base.clone();
                v[i] += d;
                let mut ins = inputs.clone();
                ins[k] = Value::from(Tensor::from_vec(t.shape(), v).unwrap());
                total(&ins)
            };
            let want = (at(h) - at(-h)) / (2.0 * h);
            assert!(
                (g - want).abs() <= 1e-5 * want.abs().max(1.0),
                "dy/d{x}[{i}]: {g}, finite difference {want}"
            );
        }
    }
}

#[test]
fn broadcast_arithmetic_chain() {
    check(&[("a", &[2, 3, 4]), ("b", &[3, 1])], &|n| {
        let s = n.op("Add", &["a", "b"], vec![]);
        let m = n.op("Mul", &[&s, "a"], vec![]);
        let d = n.op("Sub", &[&m, "b"], vec![]);
        n.op_to("Tanh", &[&d], "y", vec![]);
    });
}

#[test]
fn division_and_transcendentals() {
    check(&[("a", &[4]), ("b", &[2, 4])], &|n| {
        let one = n.scalar_f64(1.0);
        let sq = n.op("Mul", &["a", "a"], vec![]);
        let pos = n.op("Add", &[&sq, &one], vec![]);
        let r = n.op("Sqrt", &[&pos], vec![]);
        let l = n.op("Log", &[&pos], vec![]);
        let e = n.op("Exp", &["b"], vec![]);
        let s = n.op("Sigmoid", &["b"], vec![]);
        let q = n.op("Div", &[&s, &r], vec![]);
        let p = n.op("Div", &[&l, &e], vec![]);
        let m = n.op("Neg", &[&p], vec![]);
        n.op_to("Add", &[&q, &m], "y", vec![]);
    });
}

#[test]
fn batched_matmul_relu_and_reshape() {
    check(&[("a", &[2, 3, 4]), ("b", &[4, 5])], &|n| {
        let m = n.op("MatMul", &["a", "b"], vec![]);
        let r = n.op("Relu", &[&m], vec![]);
        let shape = n.ints(&[6, 5]);
        let flat = n.op("Reshape", &[&r, &shape], vec![]);
        let i = n.op("Identity", &[&flat], vec![]);
        n.op_to("Mul", &[&i, &i], "y", vec![]);
    });
}

#[test]
fn an_input_y_does_not_depend_on_gets_zeros() {
    let m = model(
        &[("a", &[3]), ("b", &[2])],
        &|n| {
            n.op_to("Exp", &["a"], "y", vec![]);
        },
        true,
    );
    let outs = run(&m, &inputs_of(&m)).unwrap();
    assert_eq!(outs[2], vec![0.0, 0.0]);
    assert_eq!(outs[1], outs[0], "d exp(a) / da = exp(a)");
}

#[test]
fn an_op_without_a_backward_rule_is_an_error_naming_it() {
    let m = model(
        &[("a", &[2, 3])],
        &|n| {
            n.op_to("Softmax", &["a"], "y", vec![]);
        },
        true,
    );
    let e = run(&m, &inputs_of(&m)).unwrap_err();
    assert!(
        e.contains("cannot differentiate") && e.contains("Softmax"),
        "{e}"
    );
    // A name that is not a tensor of the graph.
    let mut n = Net::new();
    n.input("a", F64, &[2]);
    n.op_to("Exp", &["a"], "y", vec![]);
    n.output("y", F64, &[2]);
    n.op_in_domain(
        TRAINING,
        "Gradient",
        &["a"],
        &["g"],
        vec![a_strings("xs", &["a"]), a_str("y", "nope")],
    );
    n.output("g", F64, &[2]);
    let m = n.model();
    let e = run(&m, &inputs_of(&m)).unwrap_err();
    assert!(e.contains("`nope` is not a tensor of the graph"), "{e}");
}
