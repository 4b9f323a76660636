//! Edge cases and bad input of the elementwise kernels, run directly through the registry.

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    bf16, f16, run_owned, DType, Elem, KernelError, KernelInit, KernelRegistryBuilder,
    KernelResult, Tensor, Value,
};

fn run_t(
    op: &str,
    opset: i64,
    attrs: &[(&str, AttrValue)],
    inputs: &[Option<Tensor>],
    threads: usize,
) -> KernelResult<Tensor> {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_elementwise::register(&mut b)?;
    let reg = b.build();
    let mut map = AttrMap::default();
    for (k, v) in attrs {
        map.set(*k, v.clone());
    }
    let input_types: Vec<Option<DType>> = inputs
        .iter()
        .map(|t| t.as_ref().map(|t| t.dtype()))
        .collect();
    let init = KernelInit {
        node_name: "n",
        op_type: op,
        domain: "",
        opset,
        attrs: &map,
        input_types: &input_types,
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
    let mut outs = run_owned(kernel.as_ref(), &refs, 1, threads, None)?;
    match outs.pop().flatten() {
        Some(Value::Tensor(t)) => Ok(t),
        other => Err(KernelError::invalid(format!("no tensor output: {other:?}"))),
    }
}

fn run(op: &str, attrs: &[(&str, AttrValue)], inputs: &[Tensor]) -> KernelResult<Tensor> {
    let ins: Vec<Option<Tensor>> = inputs.iter().cloned().map(Some).collect();
    run_t(op, 28, attrs, &ins, 1)
}

fn t<T: Elem>(shape: &[usize], v: Vec<T>) -> Tensor {
    Tensor::from_vec(shape, v).unwrap()
}

fn vals<T: Elem>(t: &Tensor) -> Vec<T> {
    t.as_slice::<T>().unwrap().to_vec()
}

fn is_invalid(r: KernelResult<Tensor>) -> bool {
    matches!(r, Err(KernelError::Invalid(_)))
}

#[test]
fn integer_division_and_modulo_by_zero_are_errors() {
    let a = t(&[3], vec![1i32, 2, 3]);
    let z = t(&[3], vec![1i32, 0, 1]);
    assert!(is_invalid(run("Div", &[], &[a.clone(), z.clone()])));
    assert!(is_invalid(run("Mod", &[], &[a.clone(), z.clone()])));
    // Floats divide by zero to inf/NaN.
    let r = run(
        "Div",
        &[],
        &[t(&[2], vec![1.0f32, 0.0]), t(&[2], vec![0.0f32, 0.0])],
    )
    .unwrap();
    let r = vals::<f32>(&r);
    assert_eq!(r[0], f32::INFINITY);
    assert!(r[1].is_nan());
}

#[test]
fn integer_arithmetic_wraps_and_truncates() {
    let r = run(
        "Add",
        &[],
        &[t(&[2], vec![127i8, -128]), t(&[1], vec![1i8])],
    )
    .unwrap();
    assert_eq!(vals::<i8>(&r), vec![-128, -127]);
    let r = run(
        "Div",
        &[],
        &[
            t(&[3], vec![-7i32, 7, i32::MIN]),
            t(&[3], vec![2i32, -2, -1]),
        ],
    )
    .unwrap();
    assert_eq!(vals::<i32>(&r), vec![-3, -3, i32::MIN]);
    let r = run("Mul", &[], &[t(&[1], vec![200u8]), t(&[1], vec![2u8])]).unwrap();
    assert_eq!(vals::<u8>(&r), vec![144]);
    let r = run(
        "Mod",
        &[],
        &[t(&[2], vec![-7i64, 7]), t(&[2], vec![3i64, -3])],
    )
    .unwrap();
    assert_eq!(vals::<i64>(&r), vec![2, -2]);
    let r = run(
        "Mod",
        &[("fmod", AttrValue::Int(1))],
        &[t(&[2], vec![-7i64, 7]), t(&[2], vec![3i64, -3])],
    )
    .unwrap();
    assert_eq!(vals::<i64>(&r), vec![-1, 1]);
}

#[test]
fn bad_inputs_and_attributes_are_clear_errors() {
    let f = t(&[2], vec![1.0f32, 2.0]);
    let d = t(&[2], vec![1.0f64, 2.0]);
    assert!(is_invalid(run("Add", &[], &[f.clone(), d])));
    assert!(is_invalid(run(
        "Add",
        &[],
        &[f.clone(), t(&[3], vec![1.0f32, 2.0, 3.0])]
    )));
    assert!(run("Add", &[], std::slice::from_ref(&f)).is_err());
    assert!(matches!(
        run(
            "Mod",
            &[("fmod", AttrValue::Int(2))],
            &[f.clone(), f.clone()]
        ),
        Err(KernelError::Attr { .. })
    ));
    assert!(matches!(
        run(
            "BitShift",
            &[("direction", AttrValue::String("UP".into()))],
            &[f.clone(), f.clone()]
        ),
        Err(KernelError::Attr { .. })
    ));
    assert!(matches!(
        run(
            "Gelu",
            &[("approximate", AttrValue::String("fast".into()))],
            std::slice::from_ref(&f)
        ),
        Err(KernelError::Attr { .. })
    ));
    assert!(is_invalid(run("Clip", &[], &[f.clone(), f.clone()])));
    assert!(is_invalid(run(
        "Where",
        &[],
        &[f.clone(), f.clone(), f.clone()]
    )));
    assert!(is_invalid(run(
        "SwiGLU",
        &[],
        &[f.clone(), t(&[1, 2], vec![1.0f32, 2.0])]
    )));
    assert!(is_invalid(run(
        "PRelu",
        &[],
        &[f.clone(), t(&[3], vec![1.0f32, 2.0, 3.0])]
    )));
    assert!(is_invalid(run(
        "Pow",
        &[],
        &[t(&[1], vec![0i32]), t(&[1], vec![-1i64])]
    )));
    assert!(matches!(
        run("Exp", &[], &[t(&[1], vec![1i32])]),
        Err(KernelError::Unsupported(_))
    ));
    assert!(matches!(run("Max", &[], &[]), Err(KernelError::Invalid(_))));
}

#[test]
fn bit_shifts_follow_opset_28() {
    let left = [("direction", AttrValue::String("LEFT".into()))];
    let right = [("direction", AttrValue::String("RIGHT".into()))];
    let x = t(&[4], vec![-8i8, 8, 1, 64]);
    let s = t(&[4], vec![-1i8, 8, 7, 1]);
    assert_eq!(
        vals::<i8>(&run("BitShift", &left, &[x.clone(), s.clone()]).unwrap()),
        vec![0, 0, -128, -128]
    );
    assert_eq!(
        vals::<i8>(&run("BitShift", &right, &[x, s]).unwrap()),
        vec![-1, 0, 0, 32]
    );
    let r = run(
        "BitShift",
        &right,
        &[t(&[2], vec![255u8, 16]), t(&[1], vec![4u8])],
    )
    .unwrap();
    assert_eq!(vals::<u8>(&r), vec![15, 1]);
}

#[test]
fn strings_compare_and_select() {
    let a = Tensor::from_strings(
        &[2, 2],
        vec!["a".into(), "b".into(), "c".into(), "d".into()],
    )
    .unwrap();
    let b = Tensor::from_strings(&[2], vec!["a".into(), "d".into()]).unwrap();
    assert_eq!(
        vals::<bool>(&run("Equal", &[], &[a.clone(), b.clone()]).unwrap()),
        vec![true, false, false, true]
    );
    let c = t(&[2, 1], vec![true, false]);
    let r = run("Where", &[], &[c, a, b]).unwrap();
    assert_eq!(
        r.view().as_strings().unwrap(),
        &["a".to_string(), "b".into(), "a".into(), "d".into()]
    );
}

#[test]
fn where_broadcasts_three_ways_and_keeps_float8() {
    let c = t(&[2, 1, 1], vec![true, false]);
    let x = t(&[1, 3, 1], vec![1i64, 2, 3]);
    let y = t(&[1, 1, 2], vec![10i64, 20]);
    let r = run("Where", &[], &[c.clone(), x, y]).unwrap();
    assert_eq!(r.shape(), &[2, 3, 2]);
    assert_eq!(
        vals::<i64>(&r),
        vec![1, 1, 2, 2, 3, 3, 10, 20, 10, 20, 10, 20]
    );
    let f8 = t(&[1], vec![0x38u8])
        .with_dtype(DType::Float8E4M3Fn)
        .unwrap();
    let g8 = t(&[1], vec![0x40u8])
        .with_dtype(DType::Float8E4M3Fn)
        .unwrap();
    let r = run("Where", &[], &[c, f8, g8]).unwrap();
    assert_eq!(r.dtype(), DType::Float8E4M3Fn);
    assert_eq!(vals::<u8>(&r), vec![0x38, 0x40]);
}

#[test]
fn variadic_ops_broadcast_and_propagate_nan() {
    let a = t(&[2, 1], vec![1.0f32, f32::NAN]);
    let b = t(&[3], vec![0.0f32, 5.0, 2.0]);
    let c = t(&[], vec![1.5f32]);
    let r = run("Max", &[], &[a.clone(), b.clone(), c.clone()]).unwrap();
    assert_eq!(r.shape(), &[2, 3]);
    let v = vals::<f32>(&r);
    assert_eq!(&v[..3], &[1.5, 5.0, 2.0]);
    assert!(v[3..].iter().all(|x| x.is_nan()));
    let r = run("Min", &[], &[b.clone(), c.clone()]).unwrap();
    assert_eq!(vals::<f32>(&r), vec![0.0, 1.5, 1.5]);
    let r = run("Mean", &[], &[b.clone(), c.clone()]).unwrap();
    assert_eq!(vals::<f32>(&r), vec![0.75, 3.25, 1.75]);
    let r = run("Sum", &[], &[t(&[2], vec![1i32, 2]), t(&[1], vec![3i32])]).unwrap();
    assert_eq!(vals::<i32>(&r), vec![4, 5]);
    let r = run("Sum", &[], std::slice::from_ref(&b)).unwrap();
    assert_eq!(vals::<f32>(&r), vals::<f32>(&b));
}

#[test]
fn pow_mixed_types() {
    let r = run(
        "Pow",
        &[],
        &[t(&[3], vec![2i32, -3, 5]), t(&[3], vec![3i64, 3, 0])],
    )
    .unwrap();
    assert_eq!(vals::<i32>(&r), vec![8, -27, 1]);
    let r = run(
        "Pow",
        &[],
        &[t(&[2], vec![2i64, 9]), t(&[2], vec![0.5f32, 0.5])],
    )
    .unwrap();
    assert_eq!(vals::<i64>(&r), vec![1, 3]);
    let r = run(
        "Pow",
        &[],
        &[t(&[2], vec![2.0f32, -3.0]), t(&[1], vec![2u8])],
    )
    .unwrap();
    assert_eq!(vals::<f32>(&r), vec![4.0, 9.0]);
    let r = run(
        "Pow",
        &[],
        &[t(&[2], vec![2.0f32, -3.0]), t(&[1, 1], vec![2.0f32])],
    )
    .unwrap();
    assert_eq!(r.shape(), &[1, 2]);
    assert_eq!(vals::<f32>(&r), vec![4.0, 9.0]);
    let r = run(
        "Pow",
        &[],
        &[
            t(&[1], vec![f16::from_f32(3.0)]),
            t(&[1], vec![f16::from_f32(2.0)]),
        ],
    )
    .unwrap();
    assert_eq!(vals::<f16>(&r), vec![f16::from_f32(9.0)]);
}

#[test]
fn clip_inputs_attributes_and_integers() {
    let x = t(&[4], vec![-5i8, 0, 5, 127]);
    let r = run(
        "Clip",
        &[],
        &[x.clone(), t(&[], vec![-1i8]), t(&[], vec![3i8])],
    )
    .unwrap();
    assert_eq!(vals::<i8>(&r), vec![-1, 0, 3, 3]);
    // Absent min (empty optional input) and a max.
    let r = run_t(
        "Clip",
        13,
        &[],
        &[Some(x.clone()), None, Some(t(&[], vec![1i8]))],
        1,
    )
    .unwrap();
    assert_eq!(vals::<i8>(&r), vec![-5, 0, 1, 1]);
    let f = t(&[3], vec![-2.0f32, 0.5, 2.0]);
    let r = run_t(
        "Clip",
        6,
        &[
            ("min", AttrValue::Float(-1.0)),
            ("max", AttrValue::Float(1.0)),
        ],
        &[Some(f.clone())],
        1,
    )
    .unwrap();
    assert_eq!(vals::<f32>(&r), vec![-1.0, 0.5, 1.0]);
    // min > max: everything becomes max.
    let r = run(
        "Clip",
        &[],
        &[f, t(&[], vec![2.0f32]), t(&[], vec![1.0f32])],
    )
    .unwrap();
    assert_eq!(vals::<f32>(&r), vec![1.0, 1.0, 1.0]);
}

#[test]
fn legacy_broadcast_with_axis() {
    let a = t(&[2, 3, 2], (0..12).map(|v| v as f32).collect());
    let b = t(&[3], vec![100.0f32, 200.0, 300.0]);
    let attrs = [
        ("broadcast", AttrValue::Int(1)),
        ("axis", AttrValue::Int(1)),
    ];
    let r = run_t("Add", 6, &attrs, &[Some(a), Some(b)], 1).unwrap();
    let v = vals::<f32>(&r);
    assert_eq!(&v[..6], &[100.0, 101.0, 202.0, 203.0, 304.0, 305.0]);
}

#[test]
fn prelu_slope_fallback_and_ints() {
    let x = t(&[2, 3], vec![-1.0f32, -2.0, 3.0, -4.0, 5.0, -6.0]);
    let r = run("PRelu", &[], &[x, t(&[2], vec![0.5f32, 0.25])]).unwrap();
    assert_eq!(vals::<f32>(&r), vec![-0.5, -1.0, 3.0, -1.0, 5.0, -1.5]);
    let r = run(
        "PRelu",
        &[],
        &[t(&[2], vec![-4i32, 4]), t(&[1], vec![3i32])],
    )
    .unwrap();
    assert_eq!(vals::<i32>(&r), vec![-12, 4]);
}

#[test]
fn unary_numeric_and_predicates() {
    let r = run("Abs", &[], &[t(&[2], vec![i8::MIN, -3])]).unwrap();
    assert_eq!(vals::<i8>(&r), vec![i8::MIN, 3]);
    let r = run("Sign", &[], &[t(&[3], vec![-2.0f64, 0.0, f64::NAN])]).unwrap();
    let v = vals::<f64>(&r);
    assert_eq!(&v[..2], &[-1.0, 0.0]);
    assert!(v[2].is_nan());
    let r = run("Relu", &[], &[t(&[2], vec![-3i64, 3])]).unwrap();
    assert_eq!(vals::<i64>(&r), vec![0, 3]);
    let r = run("Round", &[], &[t(&[4], vec![0.5f32, 1.5, 2.5, -0.5])]).unwrap();
    assert_eq!(vals::<f32>(&r), vec![0.0, 2.0, 2.0, -0.0]);
    let r = run("BitwiseNot", &[], &[t(&[1], vec![0u16])]).unwrap();
    assert_eq!(vals::<u16>(&r), vec![u16::MAX]);
    let r = run(
        "Shrink",
        &[
            ("lambd", AttrValue::Float(1.5)),
            ("bias", AttrValue::Float(1.5)),
        ],
        &[t(&[3], vec![-3i32, 1, 3])],
    )
    .unwrap();
    assert_eq!(vals::<i32>(&r), vec![-1, 0, 1]);
    let inf_in = t(&[3], vec![f32::INFINITY, f32::NEG_INFINITY, f32::NAN]);
    let r = run(
        "IsInf",
        &[("detect_negative", AttrValue::Int(0))],
        std::slice::from_ref(&inf_in),
    )
    .unwrap();
    assert_eq!(vals::<bool>(&r), vec![true, false, false]);
    let r = run("IsNaN", &[], &[inf_in]).unwrap();
    assert_eq!(vals::<bool>(&r), vec![false, false, true]);
    let e5 = t(&[4], vec![0x7cu8, 0xfc, 0x7e, 0x3c])
        .with_dtype(DType::Float8E5M2)
        .unwrap();
    assert_eq!(
        vals::<bool>(&run("IsInf", &[], std::slice::from_ref(&e5)).unwrap()),
        vec![true, true, false, false]
    );
    assert_eq!(
        vals::<bool>(&run("IsNaN", &[], &[e5]).unwrap()),
        vec![false, false, true, false]
    );
}

#[test]
fn half_types_compute_in_f32() {
    let x = t(&[2], vec![bf16::from_f32(1.0), bf16::from_f32(-1.0)]);
    let r = run("Sigmoid", &[], &[x]).unwrap();
    let v: Vec<f32> = vals::<bf16>(&r).iter().map(|v| v.to_f32()).collect();
    assert!((v[0] - 0.731_058_6).abs() < 4e-3 && (v[1] - 0.268_941_4).abs() < 4e-3);
    let r = run(
        "Add",
        &[],
        &[
            t(&[1], vec![f16::from_f32(1.0)]),
            t(&[1], vec![f16::from_f32(2.0)]),
        ],
    )
    .unwrap();
    assert_eq!(vals::<f16>(&r), vec![f16::from_f32(3.0)]);
    // Large values stay finite where a naive softplus would overflow.
    let r = run("Softplus", &[], &[t(&[1], vec![100.0f32])]).unwrap();
    assert_eq!(vals::<f32>(&r), vec![100.0]);
}

#[test]
fn threaded_kernels_match_single_threaded() {
    let n = 300_000usize;
    let a = t(
        &[3, n / 3],
        (0..n).map(|i| (i % 97) as f32 - 48.0).collect(),
    );
    let b = t(
        &[n / 3],
        (0..n / 3).map(|i| (i % 13) as f32 + 1.0).collect(),
    );
    let one = run_t("Div", 14, &[], &[Some(a.clone()), Some(b.clone())], 1).unwrap();
    let four = run_t("Div", 14, &[], &[Some(a.clone()), Some(b)], 4).unwrap();
    assert_eq!(one, four);
    let one = run_t("Tanh", 13, &[], &[Some(a.clone())], 1).unwrap();
    let four = run_t("Tanh", 13, &[], &[Some(a)], 4).unwrap();
    assert_eq!(one, four);
}
