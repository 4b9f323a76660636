//! Edge cases and bad input of the convert kernels, run directly through the registry: every
//! bad input must give an error (never a panic), and the edge cases give the values of the
//! ONNX reference implementation.

// Inputs are built as `&[x.clone()]` lists for readability.
#![allow(clippy::cloned_ref_to_slice_refs)]

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    bf16, f16, run_owned, DType, Elem, KernelError, KernelInit, KernelRegistryBuilder,
    KernelResult, Tensor, Value,
};

fn run_n(
    op: &str,
    opset: i64,
    attrs: &[(&str, AttrValue)],
    inputs: &[Option<Tensor>],
    outputs: usize,
    threads: usize,
) -> KernelResult<Vec<Tensor>> {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_convert::register(&mut b)?;
    let reg = b.build();
    let mut map = AttrMap::default();
    for (k, v) in attrs {
        map.set(*k, v.clone());
    }
    let types: Vec<Option<DType>> = inputs
        .iter()
        .map(|t| t.as_ref().map(Tensor::dtype))
        .collect();
    let init = KernelInit {
        node_name: "n",
        op_type: op,
        domain: "",
        opset,
        attrs: &map,
        input_types: &types,
        output_types: &[],
        subgraph_attrs: &[],
        constants: &[],
    };
    let kernel = reg.create(&init)?;
    let values: Vec<Option<Value>> = inputs
        .iter()
        .map(|t| t.clone().map(Value::Tensor))
        .collect();
    let refs: Vec<Option<&Value>> = values.iter().map(Option::as_ref).collect();
    run_owned(kernel.as_ref(), &refs, outputs, threads, None)?
        .into_iter()
        .map(|v| match v {
            Some(Value::Tensor(t)) => Ok(t),
            other => Err(KernelError::invalid(format!("not a tensor: {other:?}"))),
        })
        .collect()
}

fn run_op(
    op: &str,
    opset: i64,
    attrs: &[(&str, AttrValue)],
    inputs: &[Tensor],
) -> KernelResult<Tensor> {
    let ins: Vec<Option<Tensor>> = inputs.iter().cloned().map(Some).collect();
    Ok(run_n(op, opset, attrs, &ins, 1, 1)?.remove(0))
}

fn run(op: &str, attrs: &[(&str, AttrValue)], inputs: &[Tensor]) -> KernelResult<Tensor> {
    run_op(op, 28, attrs, inputs)
}

fn t<T: Elem>(shape: &[usize], v: Vec<T>) -> Tensor {
    Tensor::from_vec(shape, v).unwrap()
}

fn vals<T: Elem>(t: &Tensor) -> Vec<T> {
    t.as_slice::<T>().unwrap().to_vec()
}

fn int(v: i64) -> AttrValue {
    AttrValue::Int(v)
}

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::ListInt(v.to_vec())
}

fn invalid<T: std::fmt::Debug>(r: KernelResult<T>) -> bool {
    matches!(r, Err(KernelError::Invalid(_)))
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            (x.is_nan() && y.is_nan()) || x == y || (x - y).abs() <= 1e-5 + 1e-4 * y.abs()
        })
}

// ---- Cast, CastLike, BitCast ----

#[test]
fn cast_numbers_strings_and_packed() {
    let x = t(&[4], vec![1.5f32, -0.0, f32::NAN, 1e20]);
    let s = run("Cast", &[("to", int(8))], &[x]).unwrap();
    assert_eq!(
        s.view().as_strings().unwrap(),
        &["1.5", "-0.0", "nan", "1e+20"].map(String::from)
    );
    let back = run("Cast", &[("to", int(11))], &[s]).unwrap();
    let b = vals::<f64>(&back);
    assert_eq!((b[0], b[3]), (1.5, 1e20));
    assert!(b[2].is_nan());
    let bad = Tensor::from_strings(&[1], vec!["one".into()]).unwrap();
    assert!(invalid(run("Cast", &[("to", int(1))], &[bad])));

    // INT4: odd count, wrap, truncation toward zero.
    let x = t(&[3], vec![-2.7f32, 9.0, 7.0]);
    let y = run("Cast", &[("to", int(22))], &[x]).unwrap();
    assert_eq!((y.dtype(), y.shape()), (DType::Int4, &[3usize][..]));
    let back = run("Cast", &[("to", int(3))], &[y]).unwrap();
    assert_eq!(vals::<i8>(&back), vec![-2, -7, 7]);

    let x = t(&[3], vec![0.1f64, 65520.0, -1e-9]);
    let y = run("Cast", &[("to", int(10))], &[x]).unwrap();
    let h = vals::<f16>(&y);
    assert_eq!(h[1], f16::INFINITY);
    assert_eq!(h[0], f16::from_f64(0.1));
    assert!(h[2].is_sign_negative());
    let y = run("Cast", &[("to", int(9))], &[t(&[2], vec![0.0f32, -3.0])]).unwrap();
    assert_eq!(vals::<bool>(&y), vec![false, true]);
    let y = run("Cast", &[("to", int(16))], &[t(&[1], vec![3u64])]).unwrap();
    assert_eq!(vals::<bf16>(&y), vec![bf16::from_f32(3.0)]);
}

#[test]
fn cast_between_small_floats_and_e8m0() {
    let x = t(&[3], vec![448.0f32, 1e6, -0.3]);
    let y = run(
        "Cast",
        &[("to", int(17)), ("saturate", int(0))],
        &[x.clone()],
    )
    .unwrap();
    assert_eq!(y.view().bytes().unwrap(), &[0x7E, 0x7F, 0xAA]);
    let z = run("Cast", &[("to", int(19))], &[y]).unwrap();
    let back = run("Cast", &[("to", int(1))], &[z]).unwrap();
    let b = vals::<f32>(&back);
    assert_eq!(b[0], 448.0);
    assert!(b[1].is_nan());
    let e = run(
        "Cast",
        &[
            ("to", int(24)),
            ("round_mode", AttrValue::String("down".into())),
        ],
        &[x],
    )
    .unwrap();
    assert_eq!(e.view().bytes().unwrap(), &[135, 146, 125]);
    assert!(matches!(
        run(
            "Cast",
            &[
                ("to", int(24)),
                ("round_mode", AttrValue::String("odd".into()))
            ],
            &[t(&[1], vec![1f32])]
        ),
        Err(KernelError::Attr { .. })
    ));
}

#[test]
fn cast_bad_attributes_and_cast_like() {
    let x = t(&[2], vec![1i32, 2]);
    assert!(matches!(
        run("Cast", &[("to", int(99))], &[x.clone()]),
        Err(KernelError::Attr { .. })
    ));
    assert!(matches!(
        run("Cast", &[], &[x.clone()]),
        Err(KernelError::Attr { .. })
    ));
    let like = t(&[0], Vec::<f16>::new());
    let y = run("CastLike", &[], &[x.clone(), like]).unwrap();
    assert_eq!(
        vals::<f16>(&y),
        vec![f16::from_f32(1.0), f16::from_f32(2.0)]
    );
    let y = run("Cast", &[("to", int(6))], &[x.clone()]).unwrap();
    assert_eq!(y, x);
}

#[test]
fn bitcast_rules() {
    let y = run("BitCast", &[("to", int(6))], &[t(&[1], vec![1.0f32])]).unwrap();
    assert_eq!(vals::<i32>(&y), vec![0x3F80_0000]);
    assert!(invalid(run(
        "BitCast",
        &[("to", int(7))],
        &[t(&[1], vec![1.0f32])]
    )));
    assert!(invalid(run(
        "BitCast",
        &[("to", int(9))],
        &[t(&[2], vec![1u8, 2])]
    )));
    assert!(run("BitCast", &[("to", int(8))], &[t(&[1], vec![1u8])]).is_err());
    let y = run(
        "BitCast",
        &[("to", int(21))],
        &[Tensor::from_bytes(DType::Int4, &[3], &[0xF1, 0x0E]).unwrap()],
    )
    .unwrap();
    assert_eq!(
        (y.dtype(), y.view().bytes().unwrap()),
        (DType::Uint4, &[0xF1u8, 0x0E][..])
    );
}

#[test]
fn cast_on_threads_matches() {
    let n = 200_000;
    let x = t(&[n], (0..n).map(|i| i as f32 * 0.37 - 5000.0).collect());
    let one = run_n("Cast", 28, &[("to", int(10))], &[Some(x.clone())], 1, 1).unwrap();
    let many = run_n("Cast", 28, &[("to", int(10))], &[Some(x)], 1, 4).unwrap();
    assert_eq!(one, many);
}

// ---- reductions ----

#[test]
fn reduce_axes_rules() {
    let x = t(&[2, 3], vec![1f32, 2., 3., 4., 5., 6.]);
    let ax = |v: Vec<i64>| t(&[v.len()], v);
    assert!(invalid(run("ReduceSum", &[], &[x.clone(), ax(vec![2])])));
    assert!(invalid(run(
        "ReduceSum",
        &[],
        &[x.clone(), ax(vec![1, -1])]
    )));
    let y = run_op(
        "ReduceSum",
        11,
        &[("axes", ints(&[-1])), ("keepdims", int(0))],
        &[x.clone()],
    )
    .unwrap();
    assert_eq!((y.shape(), vals::<f32>(&y)), (&[2usize][..], vec![6., 15.]));
    let y = run_op("ReduceMean", 17, &[("axes", ints(&[0]))], &[x.clone()]).unwrap();
    assert_eq!(
        (y.shape(), vals::<f32>(&y)),
        (&[1usize, 3][..], vec![2.5, 3.5, 4.5])
    );
    // No axes: everything; noop: each element alone through the op.
    let y = run("ReduceProd", &[("keepdims", int(0))], &[x.clone()]).unwrap();
    assert_eq!((y.shape(), vals::<f32>(&y)), (&[][..], vec![720.]));
    let neg = t(&[2], vec![-1f32, 2.]);
    let y = run(
        "ReduceL1",
        &[("noop_with_empty_axes", int(1))],
        &[neg.clone(), ax(vec![])],
    )
    .unwrap();
    assert_eq!(vals::<f32>(&y), vec![1., 2.]);
    let y = run(
        "ReduceSumSquare",
        &[("noop_with_empty_axes", int(1))],
        &[neg],
    )
    .unwrap();
    assert_eq!(vals::<f32>(&y), vec![1., 4.]);
    // Middle axis.
    let x3 = t(&[2, 3, 2], (0..12).collect());
    let y = run("ReduceMax", &[], &[x3.clone(), ax(vec![1])]).unwrap();
    assert_eq!(
        (y.shape(), vals::<i32>(&y)),
        (&[2usize, 1, 2][..], vec![4, 5, 10, 11])
    );
    let y = run("ReduceMean", &[], &[x3, ax(vec![0, 2])]).unwrap();
    assert_eq!(vals::<i32>(&y), vec![3, 5, 7]);
    assert!(run("ReduceSum", &[], &[t(&[1], vec![true])]).is_err());
}

#[test]
fn reduce_empty_sets_and_nan() {
    let e = t(&[0, 3], Vec::<f32>::new());
    let ax0 = t(&[1], vec![0i64]);
    let f = |op: &str| vals::<f32>(&run(op, &[], &[e.clone(), ax0.clone()]).unwrap());
    assert_eq!(f("ReduceMin"), vec![f32::INFINITY; 3]);
    assert_eq!(f("ReduceMax"), vec![f32::NEG_INFINITY; 3]);
    assert_eq!(f("ReduceProd"), vec![1.0; 3]);
    assert_eq!(f("ReduceSum"), vec![0.0; 3]);
    assert_eq!(f("ReduceL2"), vec![0.0; 3]);
    assert_eq!(f("ReduceLogSum"), vec![f32::NEG_INFINITY; 3]);
    assert_eq!(f("ReduceLogSumExp"), vec![f32::NEG_INFINITY; 3]);
    assert!(f("ReduceMean").iter().all(|v| v.is_nan()));
    let ei = t(&[0], Vec::<i32>::new());
    assert_eq!(
        vals::<i32>(&run("ReduceMax", &[], &[ei.clone()]).unwrap()),
        vec![i32::MIN]
    );
    assert_eq!(
        vals::<i32>(&run("ReduceMean", &[], &[ei]).unwrap()),
        vec![0]
    );
    let eb = t(&[0], Vec::<bool>::new());
    assert_eq!(
        vals::<bool>(&run("ReduceMin", &[], &[eb]).unwrap()),
        vec![true]
    );
    let x = t(&[3], vec![1f32, f32::NAN, 3.0]);
    assert!(vals::<f32>(&run("ReduceMax", &[], &[x.clone()]).unwrap())[0].is_nan());
    assert!(vals::<f32>(&run("ReduceMin", &[], &[x]).unwrap())[0].is_nan());
    let big = t(&[3], vec![1000f32, 1000.0, f32::INFINITY]);
    assert_eq!(
        vals::<f32>(&run("ReduceLogSumExp", &[], &[big]).unwrap()),
        vec![f32::INFINITY]
    );
    let big = t(&[2], vec![1000f32, 1000.0]);
    let y = vals::<f32>(&run("ReduceLogSumExp", &[], &[big]).unwrap());
    assert!(close(&y, &[1000.6931]));
}

// ---- ArgMax, ArgMin, CumSum, CumProd ----

#[test]
fn arg_ties_nan_and_errors() {
    let x = t(&[2, 3], vec![1f32, 3., 3., f32::NAN, 0., f32::NAN]);
    let y = run("ArgMax", &[("axis", int(1))], &[x.clone()]).unwrap();
    assert_eq!((y.shape(), vals::<i64>(&y)), (&[2usize, 1][..], vec![1, 0]));
    let y = run(
        "ArgMax",
        &[
            ("axis", int(1)),
            ("select_last_index", int(1)),
            ("keepdims", int(0)),
        ],
        &[x.clone()],
    )
    .unwrap();
    assert_eq!((y.shape(), vals::<i64>(&y)), (&[2usize][..], vec![2, 2]));
    let y = run("ArgMin", &[("axis", int(0))], &[x.clone()]).unwrap();
    assert_eq!(vals::<i64>(&y), vec![1, 1, 1]);
    assert!(invalid(run("ArgMax", &[("axis", int(2))], &[x])));
    assert!(invalid(run(
        "ArgMax",
        &[("axis", int(1))],
        &[t(&[2, 0], Vec::<i32>::new())]
    )));
    let y = run(
        "ArgMin",
        &[("axis", int(1))],
        &[t(&[0, 3], Vec::<i32>::new())],
    )
    .unwrap();
    assert_eq!(y.shape(), &[0, 1]);
}

#[test]
fn cumulative_modes() {
    let x = t(&[2, 3], vec![1i32, 2, 3, 4, 5, 6]);
    let ax = |a: i64| Tensor::scalar(a);
    let y = run("CumSum", &[], &[x.clone(), ax(1)]).unwrap();
    assert_eq!(vals::<i32>(&y), vec![1, 3, 6, 4, 9, 15]);
    let y = run(
        "CumSum",
        &[("exclusive", int(1)), ("reverse", int(1))],
        &[x.clone(), ax(0)],
    )
    .unwrap();
    assert_eq!(vals::<i32>(&y), vec![4, 5, 6, 0, 0, 0]);
    let y = run("CumProd", &[("exclusive", int(1))], &[x.clone(), ax(-1)]).unwrap();
    assert_eq!(vals::<i32>(&y), vec![1, 1, 2, 1, 4, 20]);
    let y = run("CumSum", &[], &[t(&[2], vec![127i8, 1]), ax(0)]).unwrap();
    assert_eq!(vals::<i8>(&y), vec![127, -128]);
    assert!(invalid(run(
        "CumSum",
        &[],
        &[x.clone(), t(&[2], vec![0i64, 1])]
    )));
    assert!(invalid(run("CumSum", &[], &[x.clone(), ax(2)])));
    assert!(invalid(run("CumSum", &[], &[x, t(&[1], vec![1.0f32])])));
}

// ---- Softmax, LogSoftmax, Hardmax, LpNormalization, MeanVarianceNormalization ----

#[test]
fn softmax_family() {
    let x = t(&[2, 2], vec![0f32, 0.0, 1000.0, 1000.0]);
    let y = run("Softmax", &[], &[x.clone()]).unwrap();
    assert_eq!(vals::<f32>(&y), vec![0.5; 4]);
    let y = run("LogSoftmax", &[("axis", int(0))], &[x.clone()]).unwrap();
    assert!(close(&vals::<f32>(&y), &[-1000.0, -1000.0, 0.0, 0.0]));
    // Opset 11 coerces to 2-D at axis 0: one softmax over all four.
    let y = run_op("Softmax", 11, &[("axis", int(0))], &[x.clone()]).unwrap();
    let v = vals::<f32>(&y);
    assert!(close(&v, &[0.0, 0.0, 0.5, 0.5]));
    let y = run("Hardmax", &[("axis", int(0))], &[x.clone()]).unwrap();
    assert_eq!(vals::<f32>(&y), vec![0., 0., 1., 1.]);
    let y = run("Hardmax", &[], &[x.clone()]).unwrap();
    assert_eq!(vals::<f32>(&y), vec![1., 0., 1., 0.]);
    let h = t(
        &[3],
        vec![f16::from_f32(1.0), f16::from_f32(2.0), f16::from_f32(3.0)],
    );
    let y = run("Softmax", &[], &[h]).unwrap();
    let v: Vec<f32> = vals::<f16>(&y).iter().map(|v| v.to_f32()).collect();
    assert!((v[2] - 0.6652).abs() < 1e-3);
    assert!(invalid(run("Softmax", &[("axis", int(2))], &[x.clone()])));
    assert!(run("Softmax", &[], &[t(&[1], vec![1i32])]).is_err());
    // Axis in the middle.
    let x3 = t(&[1, 2, 2], vec![0f32, 1.0, 0.0, 1.0]);
    let y = run("Softmax", &[("axis", int(1))], &[x3]).unwrap();
    assert_eq!(vals::<f32>(&y), vec![0.5; 4]);
}

#[test]
fn normalizations() {
    let x = t(&[2, 2], vec![3f32, -4.0, 0.0, 0.0]);
    let y = run("LpNormalization", &[], &[x.clone()]).unwrap();
    assert_eq!(vals::<f32>(&y), vec![0.6, -0.8, 0.0, 0.0]);
    let y = run(
        "LpNormalization",
        &[("p", int(1)), ("axis", int(0))],
        &[x.clone()],
    )
    .unwrap();
    assert_eq!(vals::<f32>(&y), vec![1.0, -1.0, 0.0, 0.0]);
    assert!(matches!(
        run("LpNormalization", &[("p", int(0))], &[x.clone()]),
        Err(KernelError::Attr { .. })
    ));
    assert!(invalid(run("MeanVarianceNormalization", &[], &[x.clone()])));
    let y = run("MeanVarianceNormalization", &[("axes", ints(&[1]))], &[x]).unwrap();
    assert!(close(&vals::<f32>(&y), &[1.0, -1.0, 0.0, 0.0]));
}

// ---- quantization ----

#[test]
fn quantize_rounding_layouts_and_errors() {
    let x = t(
        &[2, 4],
        vec![0.5f32, 1.5, 2.5, -2.5, 100.0, -100.0, 3.0, 4.0],
    );
    let s = t(&[], vec![1f32]);
    let y = run(
        "QuantizeLinear",
        &[],
        &[x.clone(), s.clone(), Tensor::scalar(0i8)],
    )
    .unwrap();
    assert_eq!(vals::<i8>(&y), vec![0, 2, 2, -2, 100, -100, 3, 4]);
    let y = run(
        "QuantizeLinear",
        &[("output_dtype", int(22))],
        &[x.clone(), s.clone()],
    )
    .unwrap();
    let back = run("Cast", &[("to", int(3))], &[y]).unwrap();
    assert_eq!(vals::<i8>(&back), vec![0, 2, 2, -2, 7, -8, 3, 4]);
    // Default uint8.
    let y = run("QuantizeLinear", &[], &[x.clone(), s.clone()]).unwrap();
    assert_eq!(vals::<u8>(&y), vec![0, 2, 2, 0, 100, 0, 3, 4]);
    // Per axis 1 and blocked.
    let ps = t(&[4], vec![1f32, 2.0, 4.0, 8.0]);
    let y = run(
        "QuantizeLinear",
        &[],
        &[x.clone(), ps.clone(), t(&[4], vec![0i16, 1, 2, 3])],
    )
    .unwrap();
    assert_eq!(vals::<i16>(&y), vec![0, 2, 3, 3, 100, -49, 3, 3]);
    let bs = t(&[2, 2], vec![1f32, 2.0, 4.0, 8.0]);
    let y = run(
        "QuantizeLinear",
        &[("block_size", int(2))],
        &[x.clone(), bs, Tensor::scalar(0u16)],
    );
    assert!(invalid(y), "zero point shape differs from the scale");
    let bs = t(&[2, 2], vec![1f32, 2.0, 4.0, 8.0]);
    let y = run(
        "QuantizeLinear",
        &[("block_size", int(2))],
        &[x.clone(), bs, t(&[2, 2], vec![0i8, 0, 0, 0])],
    )
    .unwrap();
    assert_eq!(vals::<i8>(&y), vec![0, 2, 1, -1, 25, -25, 0, 0]);
    assert!(invalid(run(
        "QuantizeLinear",
        &[],
        &[x.clone(), t(&[3], vec![1f32; 3])]
    )));
    assert!(invalid(run(
        "QuantizeLinear",
        &[("block_size", int(3))],
        &[x.clone(), t(&[2, 1], vec![1f32; 2])]
    )));
    assert!(invalid(run(
        "QuantizeLinear",
        &[("output_dtype", int(3))],
        &[x.clone(), s.clone(), Tensor::scalar(0u8)]
    )));
    assert!(run("QuantizeLinear", &[("output_dtype", int(1))], &[x, s]).is_err());
}

#[test]
fn dequantize_and_dynamic() {
    let x = Tensor::from_bytes(DType::Uint4, &[2, 2], &[0x21, 0xF3]).unwrap();
    let zp = Tensor::from_bytes(DType::Uint4, &[2], &[0x21]).unwrap();
    let y = run(
        "DequantizeLinear",
        &[("axis", int(1))],
        &[x, t(&[2], vec![1f32, 0.5]), zp],
    )
    .unwrap();
    assert_eq!(vals::<f32>(&y), vec![0.0, 0.0, 2.0, 6.5]);
    let y = run(
        "DequantizeLinear",
        &[("output_dtype", int(10))],
        &[t(&[2], vec![-3i32, 100]), t(&[], vec![0.5f32])],
    )
    .unwrap();
    assert_eq!(
        vals::<f16>(&y),
        vec![f16::from_f32(-1.5), f16::from_f32(50.0)]
    );
    assert!(invalid(run(
        "DequantizeLinear",
        &[],
        &[
            t(&[2], vec![1i8, 2]),
            t(&[], vec![1f32]),
            Tensor::scalar(0u8)
        ]
    )));
    assert!(run(
        "DequantizeLinear",
        &[],
        &[t(&[1], vec![1f32]), t(&[], vec![1f32])]
    )
    .is_err());

    let outs = run_n(
        "DynamicQuantizeLinear",
        11,
        &[],
        &[Some(t(&[3], vec![0f32, 0.0, 0.0]))],
        3,
        1,
    )
    .unwrap();
    assert_eq!(vals::<u8>(&outs[0]), vec![0, 0, 0]);
    assert_eq!(vals::<f32>(&outs[1]), vec![1.0 / 255.0]);
    assert_eq!(vals::<u8>(&outs[2]), vec![0]);
    let outs = run_n(
        "DynamicQuantizeLinear",
        11,
        &[],
        &[Some(t(&[3], vec![-1f32, 0.0, 1.0]))],
        3,
        1,
    )
    .unwrap();
    // The reference's f32 arithmetic makes the zero point 127.49… → 127.
    assert_eq!(vals::<u8>(&outs[0]), vec![0, 127, 254]);
    assert_eq!(vals::<u8>(&outs[2]), vec![127]);
    assert!(run_n(
        "DynamicQuantizeLinear",
        11,
        &[],
        &[Some(t(&[1], vec![1f64]))],
        3,
        1
    )
    .is_err());
}

// The expected values are exact binary fractions, printed in full.
#[allow(clippy::excessive_precision)]
#[test]
fn softmax_16_bit_rounds_like_the_reference() {
    let x = [0.1f32, 0.7, -1.3, 2.2, 0.05, 0.9, 1.1, -0.4, 0.33];
    // Values of the ONNX reference (numpy with ml_dtypes) for bfloat16 and float16.
    let want_bf = [
        0.052001953125f32,
        0.095703125,
        0.012939453125,
        0.4296875,
        0.0498046875,
        0.11669921875,
        0.142578125,
        0.03173828125,
        0.06591796875,
    ];
    let want_bf_log = [
        -2.953125f32,
        -2.34375,
        -4.34375,
        -0.84375,
        -3.0,
        -2.140625,
        -1.9453125,
        -3.453125,
        -2.71875,
    ];
    let want_h = [
        0.0526123046875f32,
        0.095947265625,
        0.012969970703125,
        0.429443359375,
        0.05010986328125,
        0.11724853515625,
        0.14306640625,
        0.031890869140625,
        0.0662841796875,
    ];
    let xb = t(&[9], x.iter().map(|&v| bf16::from_f32(v)).collect());
    let got = |y: Tensor| -> Vec<f32> { vals::<bf16>(&y).iter().map(|v| v.to_f32()).collect() };
    assert_eq!(got(run("Softmax", &[], &[xb.clone()]).unwrap()), want_bf);
    assert_eq!(got(run("LogSoftmax", &[], &[xb]).unwrap()), want_bf_log);
    let xh = t(&[9], x.iter().map(|&v| f16::from_f32(v)).collect());
    let y = run("Softmax", &[], &[xh]).unwrap();
    let v: Vec<f32> = vals::<f16>(&y).iter().map(|v| v.to_f32()).collect();
    assert_eq!(v, want_h);
}
