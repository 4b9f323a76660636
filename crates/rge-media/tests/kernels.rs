//! The media kernels through their definitions: resizes against the `cpu` engine's ONNX
//! Resize on random shapes (bilinear and nearest, each coordinate rule), area against block
//! means, crops, colour conversion, normalization, and bad input as clear errors.

use proptest::prelude::*;
use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    run_owned, DType, KernelInit, KernelRegistryBuilder, KernelResult, Tensor, Value,
};

fn run_with(
    create: impl Fn(&KernelInit<'_>) -> KernelResult<Box<dyn rge_kernels::Kernel>>,
    op: &str,
    opset: i64,
    attrs: Vec<(&str, AttrValue)>,
    inputs: Vec<Option<Tensor>>,
) -> KernelResult<Tensor> {
    let attrs: AttrMap = attrs.into_iter().collect();
    let types: Vec<Option<DType>> = inputs
        .iter()
        .map(|t| t.as_ref().map(Tensor::dtype))
        .collect();
    let init = KernelInit {
        node_name: "n",
        op_type: op,
        domain: "",
        opset,
        attrs: &attrs,
        input_types: &types,
        output_types: &[],
        subgraph_attrs: &[],
        constants: &[],
    };
    let kernel = create(&init)?;
    let values: Vec<Option<Value>> = inputs.into_iter().map(|t| t.map(Value::Tensor)).collect();
    let refs: Vec<Option<&Value>> = values.iter().map(Option::as_ref).collect();
    let out = run_owned(kernel.as_ref(), &refs, 1, 1, None)?;
    out.into_iter()
        .next()
        .flatten()
        .expect("output")
        .into_tensor()
}

/// The media engine's kernel for `op`.
fn media(
    op: &str,
    attrs: Vec<(&str, AttrValue)>,
    inputs: Vec<Option<Tensor>>,
) -> KernelResult<Tensor> {
    let set = rge_media::kernel_set();
    let def = set.defs("", op).first().expect("definition").clone();
    run_with(|i| (def.factory)(i), op, 1, attrs, inputs)
}

/// The cpu engine's ONNX Resize (rge-kernels-misc).
fn cpu_resize(x: &Tensor, sizes: &[i64], attrs: Vec<(&str, AttrValue)>) -> Tensor {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_misc::register(&mut b).unwrap();
    let reg = b.build();
    let sizes = Tensor::from_vec(&[4], sizes.to_vec()).unwrap();
    run_with(
        |i| reg.create(i),
        "Resize",
        19,
        attrs,
        vec![Some(x.clone()), None, None, Some(sizes)],
    )
    .unwrap()
}

fn s(v: &str) -> AttrValue {
    AttrValue::String(v.into())
}

fn f32s(t: &Tensor) -> Vec<f32> {
    t.as_slice::<f32>().unwrap().to_vec()
}

fn image(n: usize, h: usize, w: usize, c: usize) -> Tensor {
    let v: Vec<f32> = (0..n * h * w * c)
        .map(|i| ((i * 7919) % 251) as f32)
        .collect();
    Tensor::from_vec(&[n, h, w, c], v).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn resizes_match_the_cpu_onnx_resize(
        n in 1usize..3, h in 1usize..9, w in 1usize..9, c in 1usize..4,
        oh in 1usize..13, ow in 1usize..13, rule in 0usize..3,
    ) {
        let x = image(n, h, w, c);
        let size = Tensor::from_vec(&[2], vec![oh as i32, ow as i32]).unwrap();
        let sizes = [n as i64, oh as i64, ow as i64, c as i64];
        let (align, half) = [(0, 0), (1, 0), (0, 1)][rule];
        let tf = vec![("align_corners", AttrValue::Int(align)), ("half_pixel_centers", AttrValue::Int(half))];
        // Bilinear: TF's rules are ONNX's asymmetric, align_corners and half_pixel.
        let ct = ["asymmetric", "align_corners", "half_pixel"][rule];
        let got = media("ResizeBilinearV2", tf.clone(), vec![Some(x.clone()), Some(size.clone())]).unwrap();
        let want = cpu_resize(&x, &sizes, vec![("mode", s("linear")), ("coordinate_transformation_mode", s(ct))]);
        for (g, w) in f32s(&got).iter().zip(f32s(&want)) {
            prop_assert!((g - w).abs() <= 1e-3 * w.abs().max(1.0), "bilinear {ct}: {g} vs {w}");
        }
        // Nearest: floor (asymmetric), round (align_corners), floor of the half-pixel centre.
        let (ct, nm) = [("asymmetric", "floor"), ("align_corners", "round_prefer_ceil"), ("tf_half_pixel_for_nn", "floor")][rule];
        let got = media("ResizeNearestNeighborV2", tf, vec![Some(x.clone()), Some(size)]).unwrap();
        let want = cpu_resize(&x, &sizes, vec![
            ("mode", s("nearest")), ("coordinate_transformation_mode", s(ct)), ("nearest_mode", s(nm)),
        ]);
        prop_assert_eq!(f32s(&got), f32s(&want), "nearest {}", ct);
    }
}

#[test]
fn area_is_the_block_mean_on_integer_factors() {
    let x = image(1, 6, 8, 2);
    let size = Tensor::from_vec(&[2], vec![3i32, 2]).unwrap();
    let got = f32s(&media("ResizeArea", vec![], vec![Some(x.clone()), Some(size)]).unwrap());
    let v = f32s(&x);
    for (k, g) in got.iter().enumerate() {
        let (oy, ox, c) = (k / 4, (k / 2) % 2, k % 2);
        let mut sum = 0.0;
        for y in 2 * oy..2 * oy + 2 {
            for xx in 4 * ox..4 * ox + 4 {
                sum += v[(y * 8 + xx) * 2 + c];
            }
        }
        assert!((g - sum / 8.0).abs() < 1e-3, "{k}: {g} vs {}", sum / 8.0);
    }
}

#[test]
fn crops() {
    let x = Tensor::from_vec(&[3, 4, 1], (0..12u8).collect::<Vec<_>>()).unwrap();
    let attrs = |o: [i64; 2]| {
        vec![
            ("offsets", AttrValue::ListInt(o.to_vec())),
            ("size", AttrValue::ListInt(vec![2, 2])),
        ]
    };
    let got = media("CropImage", attrs([1, 2]), vec![Some(x.clone())]).unwrap();
    assert_eq!(got.shape(), [2, 2, 1]);
    assert_eq!(got.as_slice::<u8>().unwrap(), &[6, 7, 10, 11]);
    let e = media("CropImage", attrs([2, 0]), vec![Some(x)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("outside"), "{e}");
    // CropAndResize: the whole image at its own size is the image; a box off the image is
    // the extrapolation value; a bad box index is an error.
    let img = image(1, 4, 5, 2);
    let boxes = Tensor::from_vec(&[2, 4], vec![0.0f32, 0.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0]).unwrap();
    let idx = Tensor::from_vec(&[2], vec![0i32, 0]).unwrap();
    let size = Tensor::from_vec(&[2], vec![4i32, 5]).unwrap();
    let got = media(
        "CropAndResize",
        vec![("extrapolation_value", AttrValue::Float(-1.0))],
        vec![
            Some(img.clone()),
            Some(boxes.clone()),
            Some(idx),
            Some(size.clone()),
        ],
    )
    .unwrap();
    assert_eq!(got.shape(), [2, 4, 5, 2]);
    let g = f32s(&got);
    assert_eq!(&g[..40], f32s(&img).as_slice());
    assert!(g[40..].iter().all(|&v| v == -1.0));
    let bad = Tensor::from_vec(&[2], vec![0i32, 3]).unwrap();
    let e = media(
        "CropAndResize",
        vec![],
        vec![Some(img), Some(boxes), Some(bad), Some(size)],
    )
    .unwrap_err();
    assert!(e.to_string().contains("box 1"), "{e}");
}

#[test]
fn colour_conversions() {
    let conv = |src: &str, dst: &str, t: &Tensor| {
        media(
            "ConvertColor",
            vec![("src_format", s(src)), ("dst_format", s(dst))],
            vec![Some(t.clone())],
        )
    };
    // NV12 black and white: Y 16 / 235, U = V = 128.
    let mut nv = vec![16u8, 16, 16, 16, 235, 235, 235, 235];
    nv.extend_from_slice(&[128, 128, 128, 128]);
    let t = Tensor::from_vec(&[3, 4], nv).unwrap();
    let rgb = conv("NV12", "RGB", &t).unwrap();
    assert_eq!(rgb.shape(), [2, 4, 3]);
    assert!(rgb.as_slice::<u8>().unwrap()[..12].iter().all(|&v| v == 0));
    assert!(rgb.as_slice::<u8>().unwrap()[12..]
        .iter()
        .all(|&v| v == 255));
    // A smooth picture survives RGB → NV21 → RGB within the chroma subsampling's error, and
    // RGB → BGR → RGB exactly.
    let (h, w) = (8, 8);
    let px: Vec<u8> = (0..h * w)
        .flat_map(|i| [(100 + i % 8 * 4) as u8, (80 + i / 8 * 3) as u8, 120])
        .collect();
    let t = Tensor::from_vec(&[h, w, 3], px.clone()).unwrap();
    let yuv = conv("RGB", "NV21", &t).unwrap();
    assert_eq!(yuv.shape(), [12, 8, 1]);
    let back = conv("NV21", "RGB", &yuv).unwrap();
    for (a, b) in back.as_slice::<u8>().unwrap().iter().zip(&px) {
        assert!((i32::from(*a) - i32::from(*b)).abs() <= 8, "{a} vs {b}");
    }
    let bgr = conv("RGB", "BGR", &t).unwrap();
    assert_eq!(bgr.as_slice::<u8>().unwrap()[..3], [px[2], px[1], px[0]]);
    assert_eq!(
        conv("BGR", "RGB", &bgr).unwrap().as_slice::<u8>().unwrap(),
        px.as_slice()
    );
    let gray = conv("RGB", "GRAY", &t).unwrap();
    assert_eq!(gray.shape(), [h, w, 1]);
    // Odd sizes cannot be YUV420SP; unknown formats are attribute errors.
    let odd = Tensor::from_vec(&[3, 3, 3], vec![0u8; 27]).unwrap();
    assert!(conv("RGB", "NV12", &odd)
        .unwrap_err()
        .to_string()
        .contains("even"));
    assert!(conv("RGB", "HSV", &t)
        .unwrap_err()
        .to_string()
        .contains("dst_format"));
}

#[test]
fn normalization() {
    let x = Tensor::from_vec(&[1, 2, 2], vec![0u8, 255, 51, 102]).unwrap();
    let got = media(
        "NormalizeImage",
        vec![
            ("mean", AttrValue::ListFloat(vec![0.5, 0.0])),
            ("std", AttrValue::ListFloat(vec![0.5, 2.0])),
            ("scale", AttrValue::Float(1.0 / 255.0)),
        ],
        vec![Some(x.clone())],
    )
    .unwrap();
    assert_eq!(got.shape(), [1, 2, 1, 2]);
    let g = f32s(&got);
    let want = [-1.0, (0.2 - 0.5) / 0.5, 0.5, 0.2];
    for (a, b) in g.iter().zip(want) {
        assert!((a - b).abs() < 1e-6, "{g:?}");
    }
    let e = media(
        "NormalizeImage",
        vec![
            ("mean", AttrValue::ListFloat(vec![0.0, 0.0])),
            ("std", AttrValue::ListFloat(vec![1.0, 0.0])),
        ],
        vec![Some(x)],
    )
    .unwrap_err();
    assert!(e.to_string().contains("std"), "{e}");
}

#[test]
fn decode_limits_and_garbage() {
    use rge_media::decode::{check_size, decode, Channels, DecodeError};
    assert_eq!(
        check_size(100_000, 100_000),
        Err(DecodeError::TooLarge {
            width: 100_000,
            height: 100_000
        })
    );
    assert!(check_size(32_768, 2_048).is_ok());
    assert!(check_size(32_769, 1).is_err());
    assert_eq!(decode(&[], Channels::Rgb), Err(DecodeError::Empty));
    assert_eq!(
        decode(b"hello", Channels::Rgb),
        Err(DecodeError::UnknownFormat)
    );
    let png = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/photo.png")).unwrap();
    let p = decode(&png, Channels::Gray).unwrap();
    assert_eq!(
        (p.height, p.width, p.channels, p.data.len()),
        (40, 48, 1, 40 * 48)
    );
    assert!(matches!(
        decode(&png[..200], Channels::Rgb),
        Err(DecodeError::Corrupt { .. })
    ));
}

include!("common/headers.rs");

/// A header declaring 100,000² pixels (65,535² for JPEG, whose fields are 16-bit) is refused
/// from its header in every format, before a decoder (or hayro's parser) sizes anything by it;
/// the same headers at a small size get past the check (and fail for the missing pixels).
#[test]
fn huge_headers_of_every_format_are_refused_before_decoding() {
    use rge_media::decode::{declared_size, decode, Channels, DecodeError};
    for (format, bytes, (w, h)) in huge_headers() {
        assert_eq!(declared_size(&bytes), Some((w, h)), "{format}");
        for want in [Channels::Rgb, Channels::Gray] {
            assert_eq!(
                decode(&bytes, want),
                Err(DecodeError::TooLarge {
                    width: w,
                    height: h
                }),
                "{format}"
            );
        }
    }
    let small = [
        ("PNG", huge_png(8, 6)),
        ("JPEG", huge_jpeg(8, 6)),
        ("BMP", huge_bmp(8, 6)),
        ("WebP", huge_webp(8, 6)),
        ("JPEG 2000", huge_j2k(8, 6)),
        ("JP2", huge_jp2(8, 6)),
    ];
    for (format, bytes) in small {
        assert_eq!(declared_size(&bytes), Some((8, 6)), "{format}");
        assert!(
            !matches!(
                decode(&bytes, Channels::Rgb),
                Err(DecodeError::TooLarge { .. })
            ),
            "{format}"
        );
    }
    let file = |n: &str| std::fs::read(format!("{}/tests/data/{n}", env!("CARGO_MANIFEST_DIR")));
    assert_eq!(declared_size(&file("photo.jpg").unwrap()), Some((48, 40)));
    assert_eq!(declared_size(&file("photo.png").unwrap()), Some((48, 40)));
}

/// ResizeArea at non-integer scales (down and up, align_corners, one row) and CropAndResize
/// on flipped, partly outside and point boxes (bilinear and nearest, 1-pixel crops), against
/// TensorFlow's loops written in numpy (`scripts/gen_media_test_data.py --kernels` →
/// `tests/data/kernel_cases.json`).
#[test]
fn area_and_crop_and_resize_match_tf_computed_independently() {
    use serde_json::Value as Json;
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/kernel_cases.json"
    ))
    .unwrap();
    let j: Json = serde_json::from_str(&text).unwrap();
    let ints = |v: &Json| -> Vec<i64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect()
    };
    let f32_tensor = |v: &Json| {
        let shape: Vec<usize> = ints(&v["shape"]).iter().map(|&d| d as usize).collect();
        let data: Vec<f32> = v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect();
        Tensor::from_vec(&shape, data).unwrap()
    };
    let cases = j["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 9);
    for c in cases {
        let name = c["name"].as_str().unwrap();
        let op = c["op"].as_str().unwrap();
        let image = f32_tensor(&c["image"]);
        let (attrs, inputs) = if op == "ResizeArea" {
            let size = Tensor::from_vec(&[2], ints(&c["size"])).unwrap();
            let align = c["attrs"]["align_corners"].as_i64().unwrap();
            (
                vec![("align_corners", AttrValue::Int(align))],
                vec![Some(image), Some(size)],
            )
        } else {
            let idx: Vec<i32> = ints(&c["box_index"]).iter().map(|&v| v as i32).collect();
            let n = idx.len();
            (
                vec![
                    ("method", s(c["attrs"]["method"].as_str().unwrap())),
                    (
                        "extrapolation_value",
                        AttrValue::Float(c["attrs"]["extrapolation_value"].as_f64().unwrap() as f32),
                    ),
                ],
                vec![
                    Some(image),
                    Some(f32_tensor(&c["boxes"])),
                    Some(Tensor::from_vec(&[n], idx).unwrap()),
                    Some(Tensor::from_vec(&[2], ints(&c["crop_size"])).unwrap()),
                ],
            )
        };
        let got = media(op, attrs, inputs).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = f32_tensor(&c["expected"]);
        assert_eq!(got.shape(), want.shape(), "{name}: shape");
        for (k, (g, w)) in f32s(&got).iter().zip(f32s(&want)).enumerate() {
            assert!(
                (g - w).abs() <= 1e-4 * w.abs().max(1.0),
                "{name}[{k}]: rge {g}, numpy {w}"
            );
        }
    }
}
