//! Focused checks of this family's kernels: hand-computed values for edge cases, and bad
//! inputs that must give a clear error (never a panic).

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    run_owned, DType, KernelInit, KernelRegistry, KernelRegistryBuilder, KernelResult, Tensor,
    Value,
};

fn registry() -> KernelRegistry {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_nn::register(&mut b).expect("register");
    b.build()
}

/// Builds `op` with `attrs` at `opset` and runs it on `inputs` (None: absent optional).
fn run(
    op: &str,
    opset: i64,
    attrs: &[(&str, AttrValue)],
    inputs: &[Option<Tensor>],
    outputs: usize,
) -> KernelResult<Vec<Option<Value>>> {
    run_threads(op, opset, attrs, inputs, outputs, 1)
}

/// [`run`] with `threads` threads.
fn run_threads(
    op: &str,
    opset: i64,
    attrs: &[(&str, AttrValue)],
    inputs: &[Option<Tensor>],
    outputs: usize,
    threads: usize,
) -> KernelResult<Vec<Option<Value>>> {
    let mut map = AttrMap::new();
    for (k, v) in attrs {
        map.set(*k, v.clone());
    }
    let in_types: Vec<Option<DType>> = inputs
        .iter()
        .map(|t| t.as_ref().map(Tensor::dtype))
        .collect();
    let out_types = vec![None; outputs];
    let init = KernelInit {
        node_name: "n",
        op_type: op,
        domain: "",
        opset,
        attrs: &map,
        input_types: &in_types,
        output_types: &out_types,
        subgraph_attrs: &[],
        constants: &[],
    };
    let k = registry().create(&init)?;
    let vals: Vec<Option<Value>> = inputs
        .iter()
        .map(|t| t.clone().map(Value::Tensor))
        .collect();
    let refs: Vec<Option<&Value>> = vals.iter().map(Option::as_ref).collect();
    run_owned(k.as_ref(), &refs, outputs, threads, None)
}

fn t<T: rge_kernels::Elem>(shape: &[usize], v: Vec<T>) -> Option<Tensor> {
    Some(Tensor::from_vec(shape, v).expect("tensor"))
}

fn out_f32(v: &[Option<Value>], i: usize) -> (Vec<usize>, Vec<f32>) {
    let t = v[i].as_ref().and_then(Value::as_tensor).expect("output");
    (
        t.shape().to_vec(),
        t.as_slice::<f32>().expect("f32").to_vec(),
    )
}

fn ints(v: &[i64]) -> AttrValue {
    AttrValue::ListInt(v.to_vec())
}

#[test]
fn matmul_vectors_and_bad_shapes() {
    let r = run(
        "MatMul",
        13,
        &[],
        &[t(&[3], vec![1f32, 2., 3.]), t(&[3], vec![4f32, 5., 6.])],
        1,
    )
    .unwrap();
    assert_eq!(out_f32(&r, 0), (vec![], vec![32.0]));
    let e = run(
        "MatMul",
        13,
        &[],
        &[t(&[2, 3], vec![0f32; 6]), t(&[2, 3], vec![0f32; 6])],
        1,
    );
    assert!(e.is_err());
    let e = run(
        "MatMul",
        13,
        &[],
        &[t(&[2, 2, 3], vec![0f32; 12]), t(&[3, 3, 1], vec![0f32; 9])],
        1,
    );
    assert!(e.is_err(), "batch dims 2 and 3 do not broadcast");
    // Integer MatMul wraps like the element type.
    let r = run(
        "MatMul",
        13,
        &[],
        &[t(&[1, 1], vec![i32::MAX]), t(&[1, 1], vec![2i32])],
        1,
    )
    .unwrap();
    let got = r[0]
        .as_ref()
        .and_then(Value::as_tensor)
        .unwrap()
        .as_slice::<i32>()
        .unwrap()
        .to_vec();
    assert_eq!(got, vec![-2]);
}

#[test]
fn gemm_broadcasts_c_and_rejects_bad_c() {
    let a = t(&[2, 2], vec![1f32, 2., 3., 4.]);
    let b = t(&[2, 2], vec![1f32, 0., 0., 1.]);
    let r = run(
        "Gemm",
        13,
        &[("beta", AttrValue::Float(2.0))],
        &[a.clone(), b.clone(), t(&[2, 1], vec![1f32, 10.])],
        1,
    )
    .unwrap();
    assert_eq!(out_f32(&r, 0).1, vec![3., 4., 23., 24.]);
    assert!(run("Gemm", 13, &[], &[a, b, t(&[3], vec![0f32; 3])], 1).is_err());
}

#[test]
fn conv_checks_channels_and_groups() {
    let x = t(&[1, 2, 3, 3], vec![1f32; 18]);
    // W's input channels (3) do not match X's (2).
    assert!(run(
        "Conv",
        22,
        &[],
        &[x.clone(), t(&[1, 3, 2, 2], vec![1f32; 12])],
        1
    )
    .is_err());
    // group 2 needs W [M, 1, ...].
    let r = run(
        "Conv",
        22,
        &[("group", AttrValue::Int(2))],
        &[x.clone(), t(&[2, 1, 2, 2], vec![1f32; 8])],
        1,
    )
    .unwrap();
    assert_eq!(out_f32(&r, 0), (vec![1, 2, 2, 2], vec![4.0; 8]));
    assert!(run(
        "Conv",
        22,
        &[("group", AttrValue::Int(0))],
        &[x.clone(), t(&[2, 1, 2, 2], vec![1f32; 8])],
        1
    )
    .is_err());
    assert!(run(
        "Conv",
        22,
        &[("strides", ints(&[0, 1]))],
        &[x, t(&[1, 2, 2, 2], vec![1f32; 8])],
        1
    )
    .is_err());
    // Rank-2 input is refused.
    assert!(run(
        "Conv",
        22,
        &[],
        &[t(&[2, 2], vec![0f32; 4]), t(&[2, 2], vec![0f32; 4])],
        1
    )
    .is_err());
}

#[test]
fn pools_on_edge_geometry() {
    // A window that lies entirely in the padding of a 1x1 input: average of nothing is NaN,
    // max of nothing gives 0 and index -1; with count_include_pad it averages zeros.
    let x = t(&[1, 1, 1, 1], vec![5f32]);
    let attrs = [
        ("kernel_shape", ints(&[1, 1])),
        ("pads", ints(&[1, 1, 1, 1])),
    ];
    let r = run("AveragePool", 22, &attrs, std::slice::from_ref(&x), 1).unwrap();
    let (shape, v) = out_f32(&r, 0);
    assert_eq!(shape, vec![1, 1, 3, 3]);
    assert!(v[0].is_nan() && v[4] == 5.0);
    let r = run("MaxPool", 22, &attrs, std::slice::from_ref(&x), 2).unwrap();
    let idx = r[1]
        .as_ref()
        .and_then(Value::as_tensor)
        .unwrap()
        .as_slice::<i64>()
        .unwrap()
        .to_vec();
    assert_eq!(idx[0], -1);
    assert_eq!(idx[4], 0);
    assert!(run(
        "MaxPool",
        22,
        &[("kernel_shape", ints(&[0, 1]))],
        std::slice::from_ref(&x),
        1
    )
    .is_err());
    assert!(
        run("MaxPool", 22, &[], std::slice::from_ref(&x), 1).is_err(),
        "kernel_shape is required"
    );
    assert!(
        run("AveragePool", 22, &[("kernel_shape", ints(&[1]))], &[x], 1).is_err(),
        "rank mismatch"
    );
}

#[test]
fn pools_of_an_input_shorter_than_the_kernel_follow_onnxruntime() {
    // Height 1, kernel 2, stride 2: one window (onnxruntime's truncating output size), over
    // the row only. Kernel 3: no window, and the global pool of the empty map is an error,
    // never NaN.
    let x = t(&[1, 1, 1, 4], vec![0f32, 1.0, 2.0, 3.0]);
    let attrs = [("kernel_shape", ints(&[2, 2])), ("strides", ints(&[2, 2]))];
    let r = run("MaxPool", 22, &attrs, std::slice::from_ref(&x), 1).unwrap();
    assert_eq!(out_f32(&r, 0), (vec![1, 1, 1, 2], vec![1.0, 3.0]));
    let r = run("AveragePool", 22, &attrs, std::slice::from_ref(&x), 1).unwrap();
    assert_eq!(out_f32(&r, 0), (vec![1, 1, 1, 2], vec![0.5, 2.5]));
    let attrs = [("kernel_shape", ints(&[3, 3])), ("strides", ints(&[2, 2]))];
    let r = run("MaxPool", 22, &attrs, std::slice::from_ref(&x), 1).unwrap();
    let (shape, _) = out_f32(&r, 0);
    assert_eq!(shape, vec![1, 1, 0, 1]);
    let empty = t(&[1, 1, 0, 1], Vec::<f32>::new());
    let e = run("GlobalAveragePool", 22, &[], &[empty], 1).unwrap_err();
    assert!(e.to_string().contains("empty spatial map"), "{e}");
}

#[test]
fn max_unpool_rejects_bad_indices() {
    let x = t(&[1, 1, 1, 1], vec![1f32]);
    let attrs = [("kernel_shape", ints(&[2, 2])), ("strides", ints(&[2, 2]))];
    assert!(run(
        "MaxUnpool",
        22,
        &attrs,
        &[x.clone(), t(&[1, 1, 1, 1], vec![4i64])],
        1
    )
    .is_err());
    assert!(run(
        "MaxUnpool",
        22,
        &attrs,
        &[x.clone(), t(&[1, 1, 1, 1], vec![-1i64])],
        1
    )
    .is_err());
    let r = run(
        "MaxUnpool",
        22,
        &attrs,
        &[x, t(&[1, 1, 1, 1], vec![3i64])],
        1,
    )
    .unwrap();
    assert_eq!(out_f32(&r, 0).1, vec![0., 0., 0., 1.]);
}

#[test]
fn einsum_parsing_and_errors() {
    let eq = |s: &str| [("equation", AttrValue::String(s.into()))];
    let x = t(&[2, 2], vec![1f32, 2., 3., 4.]);
    let r = run("Einsum", 12, &eq("ii->"), std::slice::from_ref(&x), 1).unwrap();
    assert_eq!(out_f32(&r, 0), (vec![], vec![5.0]));
    let r = run("Einsum", 12, &eq("ij->ji"), std::slice::from_ref(&x), 1).unwrap();
    assert_eq!(out_f32(&r, 0).1, vec![1., 3., 2., 4.]);
    assert!(
        run("Einsum", 12, &eq("ijk->i"), std::slice::from_ref(&x), 1).is_err(),
        "rank mismatch"
    );
    assert!(
        run("Einsum", 12, &eq("ij->k"), std::slice::from_ref(&x), 1).is_err(),
        "unknown output label"
    );
    assert!(
        run("Einsum", 12, &eq("i.j"), std::slice::from_ref(&x), 1).is_err(),
        "bad ellipsis"
    );
    assert!(
        run("Einsum", 12, &eq("ij,jk"), &[x], 1).is_err(),
        "operand count"
    );
}

#[test]
fn normalizations_validate_parameters() {
    let x = t(&[1, 4, 2], vec![1f32, 2., 3., 4., 5., 6., 7., 8.]);
    assert!(run(
        "GroupNormalization",
        21,
        &[("num_groups", AttrValue::Int(3))],
        &[x.clone(), t(&[4], vec![1f32; 4]), t(&[4], vec![0f32; 4])],
        1
    )
    .is_err());
    // Opset 18: one scale/bias per group.
    let r = run(
        "GroupNormalization",
        18,
        &[("num_groups", AttrValue::Int(2))],
        &[x.clone(), t(&[2], vec![1f32, 2.]), t(&[2], vec![0f32, 1.])],
        1,
    )
    .unwrap();
    let (_, v) = out_f32(&r, 0);
    assert!((v[0] + 1.3416).abs() < 1e-3 && (v[4] - (1.0 - 2.0 * 1.3416)).abs() < 1e-3);
    assert!(run(
        "LayerNormalization",
        17,
        &[("axis", AttrValue::Int(3))],
        &[x.clone(), t(&[2], vec![1f32; 2])],
        3
    )
    .is_err());
    assert!(run(
        "LayerNormalization",
        17,
        &[],
        &[x.clone(), t(&[3], vec![1f32; 3])],
        3
    )
    .is_err());
    assert!(run(
        "BatchNormalization",
        15,
        &[],
        &[
            x.clone(),
            t(&[3], vec![1f32; 3]),
            t(&[4], vec![0f32; 4]),
            t(&[4], vec![0f32; 4]),
            t(&[4], vec![1f32; 4])
        ],
        1
    )
    .is_err());
    let r = run(
        "RMSNormalization",
        23,
        &[],
        &[t(&[1, 2], vec![3f32, 4.]), t(&[2], vec![1f32, 1.])],
        1,
    )
    .unwrap();
    let (_, v) = out_f32(&r, 0);
    let rms = (12.5f32 + 1e-5).sqrt();
    assert!((v[0] - 3.0 / rms).abs() < 1e-6 && (v[1] - 4.0 / rms).abs() < 1e-6);
}

#[test]
fn dropout_modes() {
    let x = t(&[4], vec![1f32, 2., 3., 4.]);
    // Inference: identity, all-true mask.
    let r = run("Dropout", 22, &[], std::slice::from_ref(&x), 2).unwrap();
    assert_eq!(out_f32(&r, 0).1, vec![1., 2., 3., 4.]);
    let m = r[1]
        .as_ref()
        .and_then(Value::as_tensor)
        .unwrap()
        .as_slice::<bool>()
        .unwrap()
        .to_vec();
    assert_eq!(m, vec![true; 4]);
    // Training with seed 0 and ratio 0.5: numpy's first draws are 0.549, 0.715, 0.603, 0.545.
    let r = run(
        "Dropout",
        22,
        &[("seed", AttrValue::Int(0))],
        &[x.clone(), t(&[], vec![0.5f32]), t(&[], vec![true])],
        1,
    )
    .unwrap();
    assert_eq!(out_f32(&r, 0).1, vec![2., 4., 6., 8.]);
    assert!(run(
        "Dropout",
        22,
        &[],
        &[x, t(&[], vec![1.5f32]), t(&[], vec![true])],
        1
    )
    .is_err());
}

#[test]
fn roi_and_causal_validate_inputs() {
    let x = t(&[1, 1, 2, 2], vec![1f32; 4]);
    let rois = t(&[1, 4], vec![0f32, 0., 1., 1.]);
    assert!(
        run(
            "RoiAlign",
            22,
            &[],
            &[x.clone(), rois.clone(), t(&[1], vec![1i64])],
            1
        )
        .is_err(),
        "batch index 1 of 1"
    );
    assert!(
        run(
            "RoiAlign",
            22,
            &[],
            &[x.clone(), rois, t(&[2], vec![0i64, 0])],
            1
        )
        .is_err(),
        "roi count"
    );
    assert!(run(
        "MaxRoiPool",
        22,
        &[("pooled_shape", ints(&[1, 1]))],
        &[x, t(&[1, 5], vec![-1f32, 0., 0., 1., 1.])],
        1
    )
    .is_err());
    let input = t(&[1, 2, 3], vec![1f32; 6]);
    let w = t(&[2, 1, 2], vec![1f32; 4]);
    assert!(run(
        "CausalConvWithState",
        27,
        &[],
        &[input.clone(), w.clone(), None, t(&[1, 2, 2], vec![0f32; 4])],
        2
    )
    .is_err());
    let r = run(
        "CausalConvWithState",
        27,
        &[],
        &[input, w, None, t(&[1, 2, 1], vec![5f32, 6.])],
        2,
    )
    .unwrap();
    assert_eq!(out_f32(&r, 0).1, vec![6., 2., 2., 7., 2., 2.]);
    assert_eq!(out_f32(&r, 1), (vec![1, 2, 1], vec![1., 1.]));
}

#[test]
fn quantized_ops_check_zero_points() {
    let a = t(&[1, 2], vec![10u8, 20]);
    let b = t(&[2, 1], vec![1u8, 2]);
    let r = run(
        "MatMulInteger",
        10,
        &[],
        &[a.clone(), b.clone(), t(&[], vec![10u8]), None],
        1,
    )
    .unwrap();
    let got = r[0]
        .as_ref()
        .and_then(Value::as_tensor)
        .unwrap()
        .as_slice::<i32>()
        .unwrap()
        .to_vec();
    assert_eq!(got, vec![20]);
    let w = t(&[1, 1, 1, 1], vec![2u8]);
    let x = t(&[1, 1, 1, 2], vec![3u8, 4]);
    assert!(
        run("ConvInteger", 10, &[], &[x, w, t(&[2], vec![1u8, 2])], 1).is_err(),
        "x zero point must be a scalar"
    );
}

/// (op type, opset, attributes, inputs) of one threaded-vs-sequential case.
type ThreadCase<'a> = (&'a str, i64, Vec<(&'a str, AttrValue)>, Vec<Option<Tensor>>);

#[test]
fn threaded_paths_match_sequential() {
    let data = |n: usize, seed: u32| -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1664525).wrapping_add(1013904223);
                (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect()
    };
    let cases: Vec<ThreadCase> = vec![
        (
            "MatMul",
            13,
            vec![],
            vec![
                t(&[4, 64, 96], data(4 * 64 * 96, 1)),
                t(&[4, 96, 80], data(4 * 96 * 80, 2)),
            ],
        ),
        (
            "MatMul",
            13,
            vec![],
            vec![
                t(&[300, 200], data(300 * 200, 3)),
                t(&[200, 100], data(200 * 100, 4)),
            ],
        ),
        (
            "Gemm",
            13,
            vec![("transA", AttrValue::Int(1))],
            vec![
                t(&[200, 300], data(300 * 200, 5)),
                t(&[200, 100], data(200 * 100, 6)),
            ],
        ),
        (
            "Conv",
            22,
            vec![("pads", ints(&[1, 1, 1, 1]))],
            vec![
                t(&[2, 8, 32, 32], data(2 * 8 * 1024, 7)),
                t(&[16, 8, 3, 3], data(16 * 72, 8)),
                t(&[16], data(16, 9)),
            ],
        ),
        (
            "ConvTranspose",
            22,
            vec![("strides", ints(&[2, 2]))],
            vec![
                t(&[2, 8, 16, 16], data(2 * 8 * 256, 10)),
                t(&[8, 4, 3, 3], data(8 * 36, 11)),
            ],
        ),
        (
            "MaxPool",
            22,
            vec![("kernel_shape", ints(&[3, 3]))],
            vec![t(&[2, 8, 64, 64], data(2 * 8 * 4096, 12))],
        ),
        (
            "LayerNormalization",
            17,
            vec![],
            vec![t(&[256, 256], data(65536, 13)), t(&[256], data(256, 14))],
        ),
    ];
    for (op, opset, attrs, inputs) in cases {
        let one = run_threads(op, opset, &attrs, &inputs, 1, 1).unwrap();
        let many = run_threads(op, opset, &attrs, &inputs, 1, 4).unwrap();
        let (s1, v1) = out_f32(&one, 0);
        let (s4, v4) = out_f32(&many, 0);
        assert_eq!(s1, s4, "{op}");
        for (a, b) in v1.iter().zip(&v4) {
            assert!((a - b).abs() <= 1e-4 * (1.0 + a.abs()), "{op}: {a} vs {b}");
        }
    }
}
