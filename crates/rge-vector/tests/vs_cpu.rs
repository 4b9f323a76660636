//! Every vector kernel against the `cpu` engine's kernel of the same node (the reference), on
//! every ISA this machine runs and at 1 and 3 threads: random shapes, broadcasts, attributes
//! and values (NaN and infinities included), and the forms each kernel hands to its fallback.

mod common;

use common::*;
use proptest::prelude::*;
use rge_kernels::Tensor;

/// Values with NaN, infinities and signed zeros mixed in now and then.
fn values(n: usize) -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec(
        prop_oneof![
            20 => -8.0f32..8.0,
            2 => -100.0f32..100.0,
            1 => prop::sample::select(vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0]),
        ],
        n,
    )
}

fn shape(max_rank: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..7, 0..=max_rank)
}

fn filled(shape: Vec<usize>) -> impl Strategy<Value = Tensor> {
    let n = shape.iter().product::<usize>();
    values(n).prop_map(move |v| Tensor::from_vec(&shape, v).unwrap())
}

/// A shape broadcastable against `s`: some dims set to 1, some leading dims dropped.
fn broadcast_of(s: Vec<usize>) -> impl Strategy<Value = Vec<usize>> {
    let r = s.len();
    (prop::collection::vec(any::<bool>(), r), 0..=r).prop_map(move |(ones, drop)| {
        s.iter()
            .zip(&ones)
            .skip(drop)
            .map(|(&d, &one)| if one { 1 } else { d })
            .collect()
    })
}

const UNARY: &[&str] = &[
    "Relu",
    "LeakyRelu",
    "Clip",
    "Sigmoid",
    "HardSigmoid",
    "HardSwish",
    "Tanh",
    "Erf",
    "Exp",
    "Log",
    "Sqrt",
    "Reciprocal",
    "Neg",
    "Abs",
    "Gelu",
    "Softplus",
    "Softsign",
    "Elu",
    "Selu",
    "Celu",
    "ThresholdedRelu",
    "Mish",
    "Swish",
    "Sin",
    "Cos",
    "Floor",
    "Ceil",
    "Round",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn unary_ops(op in prop::sample::select(UNARY), x in shape(4).prop_flat_map(filled),
                 a in 0.05f32..2.0, b in -1.0f32..1.0, tanh in any::<bool>()) {
        // The reference's HardSigmoid and Celu drop NaN (Rust's min/max give 1 and 0); ONNX's
        // numpy formulas keep it, as the vector kernels do (`nan_propagates`).
        let x = if op == "HardSigmoid" || op == "Celu" { finite(x) } else { x };
        let mut c = Case::new(op, vec![x]);
        match op {
            "LeakyRelu" | "Elu" | "Celu" | "ThresholdedRelu" | "Swish" => c = c.attr("alpha", a),
            "HardSigmoid" => c = c.attr("alpha", a).attr("beta", b),
            "Selu" => c = c.attr("alpha", a + 1.0).attr("gamma", a),
            "Gelu" if tanh => c = c.attr("approximate", "tanh"),
            "Clip" => {
                c.inputs.push(Some(Tensor::scalar(b - a)));
                c.inputs.push(if tanh { None } else { Some(Tensor::scalar(b + a)) });
            }
            _ => {}
        }
        // The reference's erf-GELU is 0.5·x·(1 + erf(x/√2)) in f32: its negative tail cancels
        // to 0 where ours keeps the value, a difference below |x|·ε.
        // HardSigmoid/HardSwish: α·x + β is one fma here, which differs from the reference's
        // rounding where the sum cancels.
        let abs = match op {
            "Gelu" => 2e-6,
            "HardSigmoid" | "HardSwish" => 1e-6,
            _ => 1e-30,
        };
        c.check(4e-6, abs).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
    }

    #[test]
    fn binary_ops(op in prop::sample::select(&["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "PRelu"][..]),
                  (a, b) in (shape(4), any::<bool>(), 0u8..4).prop_flat_map(|(s, swap, scalar)| {
                      (Just(s.clone()), broadcast_of(s), Just(swap), Just(scalar))
                  }).prop_flat_map(|(sa, sb, swap, scalar)| {
                      let (sa, sb) = if swap { (sb, sa) } else { (sa, sb) };
                      let sb = if scalar == 0 { vec![] } else { sb };
                      (filled(sa), filled(sb))
                  }),
                  square in any::<bool>()) {
        // PRelu's slope broadcasts one way only.
        let out = rge_kernels::shape_util::broadcast_shapes(&[a.shape(), b.shape()]).unwrap();
        prop_assume!(op != "PRelu" || out.as_slice() == a.shape());
        let b = if op == "Pow" && square { Tensor::scalar(2.0f32) } else { b };
        let c = Case::new(op, vec![a, b]);
        c.check(1e-6, 1e-30).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
    }

    #[test]
    fn where_op((sc, sx, sy) in shape(3).prop_flat_map(|s| (broadcast_of(s.clone()), broadcast_of(s.clone()), Just(s))),
                seed in any::<u64>()) {
        let n: usize = sc.iter().product();
        let cond: Vec<bool> = (0..n).map(|i| (seed >> (i % 64)) & 1 == 1).collect();
        let x = tensor(&sx, &[1.5, -2.0, f32::NAN, 3.25]);
        let y = tensor(&sy, &[7.0, 0.5]);
        let c = Case::new("Where", vec![Tensor::from_vec(&sc, cond).unwrap(), x, y]);
        c.check(0.0, 0.0).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
    }

    #[test]
    fn softmax(x in prop::collection::vec(1usize..9, 1..=4).prop_flat_map(filled),
               log in any::<bool>(), axis in -4i64..4, old in any::<bool>()) {
        let x = finite(x);
        let axis = axis.rem_euclid(x.shape().len() as i64);
        let op = if log { "LogSoftmax" } else { "Softmax" };
        let c = Case::new(op, vec![x]).attr("axis", axis).opset(if old { 11 } else { 13 });
        // ln Σ carries the f32 exponentials' rounding (≈1e-7 absolute) into every log-softmax
        // value; the reference works in f64.
        c.check(2e-6, if log { 5e-7 } else { 1e-7 }).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
    }

    #[test]
    fn layer_and_rms_norm(x in prop::collection::vec(1usize..9, 1..=4).prop_flat_map(filled),
                          rms in any::<bool>(), axis in 0usize..4, scalar_scale in any::<bool>(),
                          with_bias in any::<bool>()) {
        let x = finite(x);
        let axis = axis % x.shape().len();
        let cols: Vec<usize> = x.shape()[axis..].to_vec();
        let scale = if scalar_scale { tensor(&[1], &[1.5]) } else { tensor(&cols, &[0.5, -1.25, 2.0]) };
        let op = if rms { "RMSNormalization" } else { "LayerNormalization" };
        let mut c = Case::new(op, vec![x, scale]).attr("axis", axis as i64).attr("epsilon", 1e-3f32);
        if with_bias && !rms {
            c.inputs.push(Some(tensor(&cols, &[0.25, -0.75])));
        }
        c.check(1e-4, 1e-5).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
    }

    #[test]
    fn batch_instance_group_norm(n in 1usize..3, g in 1usize..4, cg in 1usize..4,
                                 sp in prop::collection::vec(1usize..7, 1..=2), which in 0u8..3,
                                 seed in 0u32..1000) {
        let c_ = g * cg;
        let mut shape = vec![n, c_];
        shape.extend(&sp);
        let vals: Vec<f32> = (0..97).map(|i| ((i * 37 + seed) % 101) as f32 / 7.0 - 7.0).collect();
        let x = tensor(&shape, &vals);
        let per = |k: usize, v: &[f32]| tensor(&[k], v);
        let c = match which {
            0 => Case::new("BatchNormalization", vec![x, per(c_, &[0.5, 2.0, -1.0]),
                    per(c_, &[0.1, -0.2]), per(c_, &[1.0, -3.0, 0.25]), per(c_, &[0.5, 2.0, 4.0])])
                .attr("epsilon", 1e-4f32).opset(15),
            1 => Case::new("InstanceNormalization", vec![x, per(c_, &[0.5, 2.0, -1.0]),
                    per(c_, &[0.1, -0.2])]),
            _ => Case::new("GroupNormalization", vec![x, per(c_, &[0.5, 2.0, -1.0]),
                    per(c_, &[0.1, -0.2])]).attr("num_groups", g as i64),
        };
        c.check(1e-4, 1e-5).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
    }

    #[test]
    fn reductions(op in prop::sample::select(&["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                               "ReduceL1", "ReduceL2", "ReduceSumSquare"][..]),
                  x in prop::collection::vec(1usize..8, 1..=4).prop_flat_map(filled),
                  mask in prop::collection::vec(any::<bool>(), 4), keepdims in any::<bool>(),
                  as_input in any::<bool>()) {
        let x = finite(x);
        let r = x.shape().len();
        let axes: Vec<i64> = (0..r).filter(|&i| mask[i]).map(|i| i as i64 - if mask[3] { r as i64 } else { 0 }).collect();
        let mut c = Case::new(op, vec![x]).attr("keepdims", keepdims as i64);
        if as_input {
            c = c.opset(18);
            c.inputs.push(Some(Tensor::from_vec(&[axes.len()], axes).unwrap()));
        } else {
            c = c.opset(11).attr("axes", ints(&axes));
        }
        // f32 lanes sum in another order than the reference's f64: bound the error by the
        // magnitude summed.
        let mag: f64 = c.inputs[0].as_ref().unwrap().as_slice::<f32>().unwrap().iter()
            .map(|&v| (v.abs() as f64).max(v as f64 * v as f64)).sum();
        c.check(2e-6, 1e-6 * mag).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
    }

    #[test]
    fn pools(n in 1usize..3, ch in 1usize..4, h in 1usize..12, w in 1usize..12,
             k in (1usize..4, 1usize..4), s in (1usize..4, 1usize..4), pads in prop::collection::vec(0usize..3, 4),
             mode in 0u8..3, ceil in any::<bool>(), avg in any::<bool>(), include_pad in any::<bool>(),
             dil in 1usize..3) {
        let x = tensor(&[n, ch, h, w], &[0.5, -1.0, 3.0, 2.25, -7.5, 1.0, 0.0]);
        let op = if avg { "AveragePool" } else { "MaxPool" };
        let mut c = Case::new(op, vec![x]).attr("kernel_shape", ints(&[k.0 as i64, k.1 as i64]))
            .attr("strides", ints(&[s.0 as i64, s.1 as i64]));
        match mode {
            0 => {
                // Pads smaller than the kernel, as ONNX requires.
                let p: Vec<i64> = [k.0, k.1, k.0, k.1].iter().zip(&pads).map(|(&k, &p)| (p % k) as i64).collect();
                c = c.attr("pads", ints(&p)).attr("ceil_mode", ceil as i64);
            }
            1 => c = c.attr("auto_pad", "SAME_UPPER"),
            _ => c = c.attr("auto_pad", "VALID"),
        }
        if avg {
            c = c.attr("count_include_pad", include_pad as i64);
        } else {
            c = c.attr("dilations", ints(&[dil as i64, 1]));
        }
        // A window past the input (no valid element) is out of the ONNX domain.
        let out = rge_kernels_nn::WindowAttrs::parse(&rge_kernels::KernelInit {
            node_name: "n", op_type: op, domain: "", opset: 21, attrs: &c.attrs,
            input_types: &[], output_types: &[], subgraph_attrs: &[], constants: &[],
        }).unwrap().resolve(&[h, w], None);
        prop_assume!(out.is_ok_and(|g| g.out.iter().all(|&o| o > 0)));
        c.check(1e-6, 1e-6).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
    }

    #[test]
    fn global_pools(x in prop::collection::vec(1usize..9, 3..=5).prop_flat_map(filled), max in any::<bool>()) {
        let x = finite(x);
        // A mean of values up to 100 that cancel (the reference and the vector kernel sum in
        // different orders) is off by a few ulp of its inputs, not of its result.
        let scale = x.as_slice::<f32>().unwrap().iter().fold(0f32, |m, v| m.max(v.abs()));
        let abs = 1e-6 + 8.0 * f64::from(f32::EPSILON) * f64::from(scale);
        let c = Case::new(if max { "GlobalMaxPool" } else { "GlobalAveragePool" }, vec![x]);
        c.check(2e-6, abs).map_err(|e| TestCaseError::fail(format!("{c:?}: {e}")))?;
    }
}

/// `x` with its non-finite values replaced (for ops whose reference and vector kernel may
/// order NaN/inf work differently only through summation order).
fn finite(x: Tensor) -> Tensor {
    let v: Vec<f32> = x
        .as_slice::<f32>()
        .unwrap()
        .iter()
        .map(|v| if v.is_finite() { *v } else { 1.0 })
        .collect();
    Tensor::from_vec(x.shape(), v).unwrap()
}

#[test]
fn large_tensors_split_over_threads() {
    // Past the parallel thresholds: every chunk boundary must line up.
    let n = 300_017;
    let x = tensor(&[n], &[0.5, -1.0, 3.0, f32::NAN, -7.5, 1e-3]);
    for op in ["Sigmoid", "Erf", "Relu", "Exp"] {
        Case::new(op, vec![x.clone()]).check(4e-6, 1e-30).unwrap();
    }
    let b = tensor(&[3, 1, 257], &[2.0, -0.5, 1.5]);
    let a = tensor(&[3, 400, 257], &[0.5, -1.0, 3.0, -7.5]);
    for op in ["Add", "Mul", "Div", "Max"] {
        Case::new(op, vec![a.clone(), b.clone()])
            .check(1e-6, 0.0)
            .unwrap();
    }
    Case::new("Softmax", vec![a.clone()])
        .check(2e-6, 1e-7)
        .unwrap();
    Case::new("ReduceMean", vec![a.clone()])
        .opset(11)
        .attr("axes", ints(&[1]))
        .check(2e-6, 1e-5)
        .unwrap();
}

#[test]
fn other_dtypes_and_forms_run_the_reference() {
    // f64 through the vector kernels (placement would not send it, but a graph with unknown
    // dtypes may): the fallback computes it.
    let x = Tensor::from_vec(&[5], vec![0.5f64, -1.0, 2.0, 3.0, -0.25]).unwrap();
    for op in ["Sigmoid", "Relu", "Softmax"] {
        Case::new(op, vec![x.clone()]).check(0.0, 0.0).unwrap();
    }
    let y = Tensor::from_vec(&[5], vec![1.0f64, 2.0, 3.0, 4.0, 5.0]).unwrap();
    Case::new("Add", vec![x.clone(), y])
        .check(0.0, 0.0)
        .unwrap();
    // A reduction over non-adjacent axes, variadic Max.
    let t = tensor(&[2, 3, 4], &[0.5, -1.0, 3.0, 2.0, -7.5]);
    Case::new("ReduceSum", vec![t.clone()])
        .opset(11)
        .attr("axes", ints(&[0, 2]))
        .check(0.0, 0.0)
        .unwrap();
    Case::new("Max", vec![t.clone(), t.clone(), t.clone()])
        .check(0.0, 0.0)
        .unwrap();
    // PRelu with a 1-D slope matching one inner dim (not numpy-broadcastable).
    Case::new("PRelu", vec![t.clone(), tensor(&[3], &[0.1, 0.2, 0.3])])
        .check(0.0, 0.0)
        .unwrap();
    // LayerNormalization with its statistics outputs.
    let mut c = Case::new("LayerNormalization", vec![t.clone(), tensor(&[4], &[1.0])]);
    c.outputs = 3;
    c.check(0.0, 0.0).unwrap();
}

#[test]
fn bad_input_is_an_error_naming_it() {
    let sets = vector_sets();
    let (_, set) = &sets[0];
    let def = &set.defs("", "Gelu")[0];
    let mut attrs = rge_ir::AttrMap::new();
    attrs.set("approximate", "fast");
    let init = rge_kernels::KernelInit {
        node_name: "g",
        op_type: "Gelu",
        domain: "",
        opset: 20,
        attrs: &attrs,
        input_types: &[],
        output_types: &[],
        subgraph_attrs: &[],
        constants: &[],
    };
    let e = (def.factory)(&init).err().expect("an error").to_string();
    assert!(e.contains("approximate"), "{e}");
    // Shapes that do not broadcast.
    let c = Case::new("Add", vec![tensor(&[2, 3], &[1.0]), tensor(&[4], &[1.0])]);
    let e = c.check(0.0, 0.0).unwrap_err();
    assert!(e.contains("broadcast"), "{e}");
    // A reduction axis out of range.
    let c = Case::new("ReduceSum", vec![tensor(&[2, 3], &[1.0])])
        .opset(11)
        .attr("axes", ints(&[5]));
    let e = c.check(0.0, 0.0).unwrap_err();
    assert!(e.contains("out of range"), "{e}");
}

#[test]
fn nan_propagates() {
    let x = tensor(&[3], &[f32::NAN, 1.0, f32::NAN]);
    let types = [Some(rge_kernels::DType::Float)];
    for (_, set) in vector_sets() {
        for op in UNARY.iter().filter(|o| **o != "ThresholdedRelu") {
            let attrs = rge_ir::AttrMap::new();
            let init = rge_kernels::KernelInit {
                node_name: "n",
                op_type: op,
                domain: "",
                opset: 21,
                attrs: &attrs,
                input_types: &types,
                output_types: &types,
                subgraph_attrs: &[],
                constants: &[],
            };
            let k = (set.defs("", op)[0].factory)(&init).unwrap();
            let v = rge_kernels::Value::from(x.clone());
            let out = rge_kernels::run_owned(k.as_ref(), &[Some(&v)], 1, 1, None).unwrap();
            let y = out[0].as_ref().unwrap().as_tensor().unwrap();
            let y = y.as_slice::<f32>().unwrap();
            assert!(y[0].is_nan() && y[2].is_nan(), "{op}: {y:?}");
        }
    }
}

#[test]
fn inner_axis_softmax_in_column_bands() {
    // YOLOv8's DFL softmax ([1,16,4,8400] over axis 1) in small: several blocks and column
    // bands, split over threads; then NaN and infinities, which make their column NaN as in
    // the reference.
    let t = tensor(&[2, 16, 3000], &[0.5, -1.0, 3.0, 2.0, -7.5, 11.0, 0.25]);
    for op in ["Softmax", "LogSoftmax"] {
        Case::new(op, vec![t.clone()])
            .attr("axis", 1i64)
            .check(2e-6, 5e-7)
            .unwrap_or_else(|e| panic!("{op}: {e}"));
    }
    let odd = tensor(
        &[3, 4, 5],
        &[
            0.5,
            f32::NAN,
            3.0,
            f32::INFINITY,
            -7.5,
            1.0,
            f32::NEG_INFINITY,
            2.0,
        ],
    );
    for op in ["Softmax", "LogSoftmax"] {
        Case::new(op, vec![odd.clone()])
            .attr("axis", -2i64)
            .check(2e-6, 5e-7)
            .unwrap_or_else(|e| panic!("{op}: {e}"));
    }
}
