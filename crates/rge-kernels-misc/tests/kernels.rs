//! Focused checks of this family's kernels: edge cases and bad input (clear errors, no
//! panics), run through the registry as the runtime would.

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    run_owned, DType, KernelInit, KernelRegistry, KernelRegistryBuilder, KernelResult, Tensor,
    Value,
};

fn registry() -> KernelRegistry {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_misc::register(&mut b).expect("register");
    // ImageDecoder runs on the media engine; its cpu-family decoder is still checked here.
    b.register(
        "",
        "ImageDecoder",
        rge_kernels_misc::image::create_image_decoder,
    )
    .expect("register");
    b.build()
}

fn run(
    op: &str,
    domain: &str,
    opset: i64,
    attrs: Vec<(&str, AttrValue)>,
    inputs: &[Option<Tensor>],
    outputs: usize,
) -> KernelResult<Vec<Option<Value>>> {
    let attrs: AttrMap = attrs.into_iter().collect();
    let values: Vec<Option<Value>> = inputs
        .iter()
        .map(|t| t.clone().map(Value::Tensor))
        .collect();
    let types: Vec<Option<DType>> = inputs
        .iter()
        .map(|t| t.as_ref().map(Tensor::dtype))
        .collect();
    let init = KernelInit {
        node_name: "n",
        op_type: op,
        domain,
        opset,
        attrs: &attrs,
        input_types: &types,
        output_types: &[],
        subgraph_attrs: &[],
        constants: &[],
    };
    let kernel = registry().create(&init)?;
    let refs: Vec<Option<&Value>> = values.iter().map(Option::as_ref).collect();
    run_owned(kernel.as_ref(), &refs, outputs, 1, None)
}

fn out(v: &[Option<Value>], i: usize) -> Tensor {
    v[i].clone().expect("output").into_tensor().expect("tensor")
}

fn f32s(shape: &[usize], v: &[f32]) -> Option<Tensor> {
    Some(Tensor::from_slice(shape, v).unwrap())
}

fn i64s(shape: &[usize], v: &[i64]) -> Option<Tensor> {
    Some(Tensor::from_slice(shape, v).unwrap())
}

#[test]
fn resize_rejects_bad_scales_and_sizes() {
    let x = f32s(&[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]);
    let nearest = || vec![("mode", AttrValue::from("nearest"))];
    // Wrong count, negative, both given, neither given.
    assert!(run(
        "Resize",
        "",
        19,
        nearest(),
        &[x.clone(), None, f32s(&[2], &[2.0, 2.0])],
        1
    )
    .is_err());
    assert!(run(
        "Resize",
        "",
        19,
        nearest(),
        &[x.clone(), None, f32s(&[4], &[1.0, 1.0, -2.0, 2.0])],
        1
    )
    .is_err());
    assert!(run(
        "Resize",
        "",
        19,
        nearest(),
        &[x.clone(), None, None, i64s(&[4], &[1, 1, -1, 2])],
        1
    )
    .is_err());
    assert!(run(
        "Resize",
        "",
        19,
        nearest(),
        &[
            x.clone(),
            None,
            f32s(&[4], &[1.0; 4]),
            i64s(&[4], &[1, 1, 2, 2])
        ],
        1
    )
    .is_err());
    assert!(run("Resize", "", 19, nearest(), std::slice::from_ref(&x), 1).is_err());
    let crop = vec![(
        "coordinate_transformation_mode",
        AttrValue::from("tf_crop_and_resize"),
    )];
    assert!(run(
        "Resize",
        "",
        19,
        crop,
        &[x.clone(), None, f32s(&[4], &[1.0; 4])],
        1
    )
    .is_err());
    assert!(run(
        "Resize",
        "",
        19,
        vec![("mode", AttrValue::from("bogus"))],
        &[x],
        1
    )
    .is_err());
}

#[test]
fn resize_nearest_on_integers_and_upsample() {
    let x = Some(Tensor::from_slice(&[1, 1, 2, 2], &[1u8, 2, 3, 4]).unwrap());
    let r = run(
        "Resize",
        "",
        19,
        vec![("mode", AttrValue::from("nearest"))],
        &[x.clone(), None, f32s(&[4], &[1.0, 1.0, 2.0, 2.0])],
        1,
    )
    .unwrap();
    let y = out(&r, 0);
    assert_eq!(y.shape(), [1, 1, 4, 4]);
    assert_eq!(&y.as_slice::<u8>().unwrap()[..4], &[1, 1, 2, 2]);
    let u = run(
        "Upsample",
        "",
        9,
        vec![],
        &[x, f32s(&[4], &[1.0, 1.0, 2.0, 3.0])],
        1,
    )
    .unwrap();
    let u = out(&u, 0);
    assert_eq!(u.shape(), [1, 1, 4, 6]);
    assert_eq!(&u.as_slice::<u8>().unwrap()[..6], &[1, 1, 1, 2, 2, 2]);
}

#[test]
fn grid_sample_and_affine_grid_check_shapes() {
    let x = f32s(&[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]);
    assert!(run(
        "GridSample",
        "",
        20,
        vec![],
        &[x.clone(), f32s(&[1, 1, 1, 3], &[0.0; 3])],
        1
    )
    .is_err());
    // The centre of the image under bilinear sampling is the mean.
    let r = run(
        "GridSample",
        "",
        20,
        vec![],
        &[x, f32s(&[1, 1, 1, 2], &[0.0, 0.0])],
        1,
    )
    .unwrap();
    assert_eq!(out(&r, 0).as_slice::<f32>().unwrap(), &[2.5]);
    let theta = f32s(&[1, 2, 3], &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0]);
    assert!(run(
        "AffineGrid",
        "",
        20,
        vec![],
        &[theta.clone(), i64s(&[3], &[1, 1, 2])],
        1
    )
    .is_err());
    assert!(run(
        "AffineGrid",
        "",
        20,
        vec![],
        &[theta.clone(), i64s(&[4], &[2, 1, 2, 2])],
        1
    )
    .is_err());
    let g = run(
        "AffineGrid",
        "",
        20,
        vec![],
        &[theta, i64s(&[4], &[1, 1, 1, 2])],
        1,
    )
    .unwrap();
    assert_eq!(
        out(&g, 0).as_slice::<f32>().unwrap(),
        &[-0.5, 0.0, 0.5, 0.0]
    );
}

#[test]
fn nms_checks_shapes_and_selects() {
    let boxes = f32s(&[1, 2, 4], &[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0]);
    let scores = f32s(&[1, 1, 2], &[0.9, 0.8]);
    let max = i64s(&[1], &[5]);
    let r = run(
        "NonMaxSuppression",
        "",
        11,
        vec![],
        &[boxes.clone(), scores, max.clone()],
        1,
    )
    .unwrap();
    assert_eq!(out(&r, 0).as_slice::<i64>().unwrap(), &[0, 0, 0]);
    let bad_scores = f32s(&[1, 1, 3], &[0.9, 0.8, 0.1]);
    assert!(run(
        "NonMaxSuppression",
        "",
        11,
        vec![],
        &[boxes, bad_scores, max],
        1
    )
    .is_err());
}

fn naive_dft(re: &[f64], im: &[f64], inverse: bool) -> (Vec<f64>, Vec<f64>) {
    let n = re.len();
    let s = if inverse { 1.0 } else { -1.0 };
    (0..n)
        .map(|k| {
            let (mut a, mut b) = (0.0, 0.0);
            for t in 0..n {
                let ang = s * 2.0 * std::f64::consts::PI * (k * t) as f64 / n as f64;
                a += re[t] * ang.cos() - im[t] * ang.sin();
                b += re[t] * ang.sin() + im[t] * ang.cos();
            }
            (a, b)
        })
        .unzip()
}

#[test]
fn dft_matches_the_definition_and_checks_input() {
    for n in [5usize, 8, 12, 16] {
        let re: Vec<f64> = (0..n)
            .map(|i| (i as f64 * 0.7).sin() + i as f64 * 0.1)
            .collect();
        let im: Vec<f64> = (0..n).map(|i| (i as f64 * 1.3).cos()).collect();
        let x: Vec<f64> = re.iter().zip(&im).flat_map(|(&a, &b)| [a, b]).collect();
        let xt = Some(Tensor::from_slice(&[1, n, 2], &x).unwrap());
        let r = run("DFT", "", 20, vec![], std::slice::from_ref(&xt), 1).unwrap();
        let got = out(&r, 0);
        let (wr, wi) = naive_dft(&re, &im, false);
        for (k, p) in got.as_slice::<f64>().unwrap().chunks(2).enumerate() {
            assert!(
                (p[0] - wr[k]).abs() < 1e-9 && (p[1] - wi[k]).abs() < 1e-9,
                "n={n} k={k}"
            );
        }
        // Inverse of forward is the identity.
        let back = run(
            "DFT",
            "",
            20,
            vec![("inverse", AttrValue::from(1i64))],
            &[Some(got)],
            1,
        )
        .unwrap();
        for (a, b) in out(&back, 0).as_slice::<f64>().unwrap().iter().zip(&x) {
            assert!((a - b).abs() < 1e-9);
        }
    }
    let x = f32s(&[2, 4, 1], &[0.0; 8]);
    // Axis on the complex dim, and zero length.
    assert!(run(
        "DFT",
        "",
        20,
        vec![],
        &[x.clone(), None, i64s(&[], &[2])],
        1
    )
    .is_err());
    assert!(run("DFT", "", 20, vec![], &[x.clone(), i64s(&[], &[0])], 1).is_err());
    assert!(run("DFT", "", 20, vec![], &[f32s(&[2, 4, 3], &[0.0; 24])], 1).is_err());
}

#[test]
fn windows_and_stft_reject_bad_sizes() {
    assert!(run("HannWindow", "", 17, vec![], &[i64s(&[], &[-3])], 1).is_err());
    let w = run("HannWindow", "", 17, vec![], &[i64s(&[], &[4])], 1).unwrap();
    let w = out(&w, 0);
    assert_eq!(w.dtype(), DType::Float);
    assert!((w.as_slice::<f32>().unwrap()[2] - 1.0).abs() < 1e-6);
    let sig = f32s(&[1, 4, 1], &[1.0; 4]);
    assert!(run("STFT", "", 17, vec![], &[sig.clone(), i64s(&[], &[0])], 1).is_err());
    assert!(run(
        "STFT",
        "",
        17,
        vec![],
        &[sig, i64s(&[], &[1]), None, i64s(&[], &[8])],
        1
    )
    .is_err());
}

#[test]
fn det_and_training_check_shapes() {
    assert!(run("Det", "", 22, vec![], &[f32s(&[2, 3], &[0.0; 6])], 1).is_err());
    let d = run(
        "Det",
        "",
        22,
        vec![],
        &[f32s(&[2, 2], &[3.0, 1.0, 2.0, 4.0])],
        1,
    )
    .unwrap();
    assert_eq!(out(&d, 0).as_slice::<f32>().unwrap(), &[10.0]);
    let tr = "ai.onnx.preview.training";
    let r = f32s(&[], &[0.1]);
    let t = i64s(&[], &[1]);
    let bad = [
        r.clone(),
        t.clone(),
        f32s(&[2], &[1.0, 2.0]),
        f32s(&[3], &[1.0; 3]),
        f32s(&[2], &[0.0; 2]),
    ];
    assert!(run("Adagrad", tr, 1, vec![], &bad, 2).is_err());
    assert!(run("Adagrad", tr, 1, vec![], &bad[..4], 2).is_err());
    let momentum = vec![
        ("alpha", AttrValue::from(0.9f32)),
        ("beta", AttrValue::from(1.0f32)),
        ("norm_coefficient", AttrValue::from(0.0f32)),
        ("mode", AttrValue::from("standard")),
    ];
    let ok = [
        r,
        t,
        f32s(&[1], &[1.0]),
        f32s(&[1], &[1.0]),
        f32s(&[1], &[0.0]),
    ];
    let m = run("Momentum", tr, 1, momentum, &ok, 2).unwrap();
    assert!((out(&m, 0).as_slice::<f32>().unwrap()[0] - 0.9).abs() < 1e-6);
}

#[test]
fn ml_ops_validate_indices_and_keys() {
    let ml = "ai.onnx.ml";
    let x = f32s(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    assert!(run(
        "ArrayFeatureExtractor",
        ml,
        1,
        vec![],
        &[x.clone(), i64s(&[1], &[3])],
        1
    )
    .is_err());
    assert!(run(
        "ArrayFeatureExtractor",
        ml,
        1,
        vec![],
        &[x.clone(), i64s(&[1], &[-1])],
        1
    )
    .is_err());
    let a = run(
        "ArrayFeatureExtractor",
        ml,
        1,
        vec![],
        &[x.clone(), i64s(&[2], &[2, 0])],
        1,
    )
    .unwrap();
    assert_eq!(out(&a, 0).as_slice::<f32>().unwrap(), &[3.0, 1.0, 6.0, 4.0]);
    let b = run(
        "Binarizer",
        ml,
        1,
        vec![("threshold", AttrValue::from(3.5f32))],
        &[x],
        1,
    )
    .unwrap();
    assert_eq!(
        out(&b, 0).as_slice::<f32>().unwrap(),
        &[0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    );
    let enc = vec![
        ("keys_floats", AttrValue::from(vec![f32::NAN, 0.0])),
        ("values_int64s", AttrValue::from(vec![7i64, 8])),
    ];
    let e = run(
        "LabelEncoder",
        ml,
        4,
        enc,
        &[f32s(&[3], &[f32::NAN, -0.0, 1.0])],
        1,
    )
    .unwrap();
    assert_eq!(out(&e, 0).as_slice::<i64>().unwrap(), &[7, 8, -1]);
    let mismatched = vec![
        ("keys_int64s", AttrValue::from(vec![1i64, 2])),
        ("values_int64s", AttrValue::from(vec![7i64])),
    ];
    assert!(run("LabelEncoder", ml, 4, mismatched, &[i64s(&[1], &[1])], 1).is_err());
}

#[test]
fn strings_split_concat_and_regex() {
    let s = |shape: &[usize], v: &[&str]| {
        Some(Tensor::from_strings(shape, v.iter().map(|s| s.to_string()).collect()).unwrap())
    };
    let r = run(
        "StringSplit",
        "",
        20,
        vec![],
        &[s(&[2], &[" a  b ", ""])],
        2,
    )
    .unwrap();
    let parts = out(&r, 0);
    assert_eq!(parts.shape(), [2, 2]);
    assert_eq!(out(&r, 1).as_slice::<i64>().unwrap(), &[2, 0]);
    let c = run(
        "StringConcat",
        "",
        20,
        vec![],
        &[s(&[2], &["a", "b"]), s(&[], &["!"])],
        1,
    )
    .unwrap();
    assert_eq!(
        out(&c, 0),
        Tensor::from_strings(&[2], vec!["a!".into(), "b!".into()]).unwrap()
    );
    assert!(run(
        "StringConcat",
        "",
        20,
        vec![],
        &[s(&[2], &["a", "b"]), s(&[3], &["", "", ""])],
        1
    )
    .is_err());
    assert!(run(
        "RegexFullMatch",
        "",
        20,
        vec![("pattern", AttrValue::from("(a"))],
        &[s(&[1], &["a"])],
        1
    )
    .is_err());
    let m = run(
        "RegexFullMatch",
        "",
        20,
        vec![("pattern", AttrValue::from("a+"))],
        &[s(&[2], &["aaa", "aab"])],
        1,
    )
    .unwrap();
    assert_eq!(out(&m, 0).as_slice::<bool>().unwrap(), &[true, false]);
    assert!(run(
        "StringNormalizer",
        "",
        10,
        vec![],
        &[s(&[2, 2], &["a", "b", "c", "d"])],
        1
    )
    .is_err());
}

#[test]
fn random_ops_have_shape_dtype_and_range() {
    let u = run(
        "RandomUniform",
        "",
        22,
        vec![
            ("shape", AttrValue::from(vec![3i64, 4])),
            ("low", AttrValue::from(2.0f32)),
            ("high", AttrValue::from(3.0f32)),
            ("seed", AttrValue::from(1.0f32)),
            ("dtype", AttrValue::from(11i64)),
        ],
        &[],
        1,
    )
    .unwrap();
    let u = out(&u, 0);
    assert_eq!((u.dtype(), u.shape()), (DType::Double, &[3usize, 4][..]));
    assert!(u
        .as_slice::<f64>()
        .unwrap()
        .iter()
        .all(|v| (2.0..3.0).contains(v)));
    let m = run(
        "Multinomial",
        "",
        22,
        vec![("sample_size", AttrValue::from(5i64))],
        &[f32s(&[2, 3], &[0.0, -1e9, -1e9, -1e9, -1e9, 0.0])],
        1,
    )
    .unwrap();
    assert_eq!(
        out(&m, 0).as_slice::<i32>().unwrap(),
        &[0, 0, 0, 0, 0, 2, 2, 2, 2, 2]
    );
    let b = run(
        "Bernoulli",
        "",
        22,
        vec![],
        &[f32s(&[4], &[0.0, 1.0, 0.0, 1.0])],
        1,
    )
    .unwrap();
    assert_eq!(out(&b, 0).as_slice::<f32>().unwrap(), &[0.0, 1.0, 0.0, 1.0]);
    assert!(run("RandomNormal", "", 22, vec![], &[], 1).is_err());
}

#[test]
fn tree_ensemble_and_tfidf_reject_bad_attributes() {
    let ml = "ai.onnx.ml";
    let tree = |feature: i64| {
        vec![
            ("n_targets", AttrValue::from(1i64)),
            ("tree_roots", AttrValue::from(vec![0i64])),
            (
                "nodes_modes",
                AttrValue::from(rge_kernels::tensor_to_ir(
                    &Tensor::from_slice(&[1], &[0u8]).unwrap(),
                )),
            ),
            ("nodes_featureids", AttrValue::from(vec![feature])),
            (
                "nodes_splits",
                AttrValue::from(rge_kernels::tensor_to_ir(
                    &Tensor::from_slice(&[1], &[0.5f32]).unwrap(),
                )),
            ),
            ("nodes_truenodeids", AttrValue::from(vec![0i64])),
            ("nodes_trueleafs", AttrValue::from(vec![1i64])),
            ("nodes_falsenodeids", AttrValue::from(vec![1i64])),
            ("nodes_falseleafs", AttrValue::from(vec![1i64])),
            ("leaf_targetids", AttrValue::from(vec![0i64, 0])),
            (
                "leaf_weights",
                AttrValue::from(rge_kernels::tensor_to_ir(
                    &Tensor::from_slice(&[2], &[1.0f32, 2.0]).unwrap(),
                )),
            ),
        ]
    };
    let x = f32s(&[2, 1], &[0.0, 1.0]);
    let r = run("TreeEnsemble", ml, 5, tree(0), std::slice::from_ref(&x), 1).unwrap();
    assert_eq!(out(&r, 0).as_slice::<f32>().unwrap(), &[1.0, 2.0]);
    assert!(run("TreeEnsemble", ml, 5, tree(3), &[x], 1).is_err());
    let tfidf = vec![
        ("min_gram_length", AttrValue::from(2i64)),
        ("max_gram_length", AttrValue::from(1i64)),
        ("max_skip_count", AttrValue::from(0i64)),
        ("mode", AttrValue::from("TF")),
        ("ngram_counts", AttrValue::from(vec![0i64])),
        ("ngram_indexes", AttrValue::from(vec![0i64])),
        ("pool_int64s", AttrValue::from(vec![1i64])),
    ];
    assert!(run("TfIdfVectorizer", "", 9, tfidf, &[i64s(&[1], &[1])], 1).is_err());
}

#[test]
fn image_decoder_rejects_garbage() {
    let bytes = Some(Tensor::from_slice(&[5], &[1u8, 2, 3, 4, 5]).unwrap());
    assert!(run("ImageDecoder", "", 20, vec![], &[bytes], 1).is_err());
    let pnm = b"P6\n1 1\n255\n\x0a\x14\x1e";
    let t = Some(Tensor::from_slice(&[pnm.len()], pnm).unwrap());
    let r = run(
        "ImageDecoder",
        "",
        20,
        vec![("pixel_format", AttrValue::from("BGR"))],
        &[t],
        1,
    )
    .unwrap();
    assert_eq!(out(&r, 0).as_slice::<u8>().unwrap(), &[30, 20, 10]);
}
