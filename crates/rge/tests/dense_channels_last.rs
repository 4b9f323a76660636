//! The dense engine's channels-last regions end to end (docs/dense-engine.md): MobileNet-style
//! blocks become FusedConvNhwc with Transposes only at the region's borders, the outputs match
//! the `cpu` engine's (dense excluded) at 1 and 2 threads, ResNet-style stages go channels-last
//! too, and the near misses stay in NCHW.

#[path = "common/net.rs"]
mod net;

use net::*;
use rge::engines::{engine_set, EngineArgs};
use rge_formats::onnx_proto::ModelProto;
use rge_runtime::{Session, SessionOptions};

/// A convolution's channels in and out, filter size, stride and group.
#[derive(Clone, Copy)]
struct Spec {
    cin: i64,
    cout: i64,
    k: i64,
    stride: i64,
    group: i64,
}

const fn spec(cin: i64, cout: i64, k: i64, stride: i64, group: i64) -> Spec {
    Spec {
        cin,
        cout,
        k,
        stride,
        group,
    }
}

/// A convolution (padded to keep the size at stride 1) with bias, then Relu.
fn conv(n: &mut Net, x: &str, c: Spec, seed: u32) -> String {
    let w = n.weight(&[c.cout, c.cin / c.group, c.k, c.k], seed);
    let b = n.weight(&[c.cout], seed + 1);
    let p = c.k / 2;
    let y = n.op(
        "Conv",
        &[x, &w, &b],
        vec![
            a_ints("pads", &[p, p, p, p]),
            a_ints("strides", &[c.stride, c.stride]),
            a_int("group", c.group),
        ],
    );
    n.op("Relu", &[&y], vec![])
}

/// An inverted residual block (1×1 expand, 3×3 depthwise, 1×1 project, residual) after a
/// strided 3×3 stem of 3 channels, then global pooling: what MobileNetV2 is made of.
fn mobile_block(extra_reader: bool) -> ModelProto {
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 3, 17, 15]);
    let stem = conv(&mut n, &x, spec(3, 24, 3, 2, 1), 1);
    let e = conv(&mut n, &stem, spec(24, 144, 1, 1, 1), 3);
    let d = conv(&mut n, &e, spec(144, 144, 3, 1, 144), 5);
    let wp = n.weight(&[24, 144, 1, 1], 7);
    let proj = n.op("Conv", &[&d, &wp], vec![]);
    let sum = n.op("Add", &[&proj, &stem], vec![]);
    let dw2 = conv(&mut n, &sum, spec(24, 24, 3, 2, 24), 9);
    n.op_to("GlobalAveragePool", &[&dw2], "y", vec![]);
    n.output("y", F32, &[2, 24, 1, 1]);
    if extra_reader {
        // The block's sum is also a graph output: it leaves the region through a Transpose.
        n.op_to("Identity", &[&sum], "s", vec![]);
        n.output("s", F32, &[2, 24, 9, 8]);
    }
    n.model()
}

/// The default engines, less the gpu where it is registered (it runs convolutions before
/// dense, so that dense then keeps them in NCHW; `gpu_engine.rs` checks that case).
fn cpu_engines() -> EngineArgs {
    let without_gpu = EngineArgs {
        exclude_engines: Some("gpu".into()),
        ..EngineArgs::default()
    };
    // Excluding an engine that is not registered is an error: then there is no gpu to leave out.
    if engine_set(&without_gpu).is_ok() {
        without_gpu
    } else {
        EngineArgs::default()
    }
}

/// The cpu engines on `threads` kernel threads: the root's op types and the outputs.
fn compile_on(m: &ModelProto, threads: usize) -> Compiled {
    let set = engine_set(&cpu_engines()).unwrap();
    let s = Session::new(SessionOptions {
        threads,
        ..SessionOptions::with_engines(set)
    })
    .unwrap();
    let model = s.compile_graph(graph_of(m)).unwrap();
    let outputs = model
        .run(&inputs_of(m))
        .unwrap()
        .iter()
        .map(to_f64)
        .collect();
    Compiled::of_root(model.graph(), outputs, Vec::new())
}

/// How many of the compiled root's FusedConvNhwc nodes are marked for Winograd.
fn winograd_marked(m: &ModelProto) -> usize {
    marked(m, "winograd")
}

/// How many of the compiled root's FusedConvNhwc nodes have `attr = 1`.
fn marked(m: &ModelProto, attr: &str) -> usize {
    let set = engine_set(&cpu_engines()).unwrap();
    let s = Session::new(SessionOptions::with_engines(set)).unwrap();
    let model = s.compile_graph(graph_of(m)).unwrap();
    let g = model.graph();
    g.nodes_of(g.root())
        .filter(|&n| {
            let op = g.op(n).unwrap();
            op.op_type() == "FusedConvNhwc" && op.attrs().get_int(attr).ok().flatten() == Some(1)
        })
        .count()
}

fn no_dense() -> EngineArgs {
    EngineArgs {
        exclude_engines: Some("dense".into()),
        ..EngineArgs::default()
    }
}

fn assert_close(a: &Compiled, b: &Compiled) {
    assert_eq!(a.outputs.len(), b.outputs.len());
    for (x, y) in a.outputs.iter().zip(&b.outputs) {
        assert_eq!(x.len(), y.len());
        let scale = y.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for (p, q) in x.iter().zip(y) {
            assert!((p - q).abs() <= 1e-4 * scale, "{p} vs {q}");
        }
    }
}

#[test]
fn a_mobile_block_runs_channels_last_with_transposes_only_at_its_borders() {
    for extra in [false, true] {
        let m = mobile_block(extra);
        let want = compile(&m, no_dense());
        assert!(!want.has("FusedConvNhwc"), "{:?}", want.types);
        for t in [1, 2] {
            let got = compile_on(&m, t);
            assert_eq!(got.count("FusedConvNhwc"), 5, "{:?}", got.types);
            assert!(!got.has("FusedConv") && !got.has("Conv"), "{:?}", got.types);
            // In at the stem, out before the pool (and out for the extra graph output).
            let transposes = if extra { 3 } else { 2 };
            assert_eq!(got.count("Transpose"), transposes, "{:?}", got.types);
            assert_close(&got, &want);
        }
    }
}

#[test]
fn a_resnet_stage_runs_channels_last_with_its_residuals_in_the_epilogues() {
    // Basic blocks: 3×3 stride-1 convolutions (Winograd at 8×8: 16 tiles; direct at 4×4), a
    // strided 3×3 and a strided 1×1 downsample, residual Adds, 40 and 72 channels (blocks of
    // 32 output channels not filled), down to a 4×4 image.
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 40, 8, 8]);
    let a = conv(&mut n, &x, spec(40, 40, 3, 1, 1), 1);
    let w = n.weight(&[40, 40, 3, 3], 3);
    let b = n.op("Conv", &[&a, &w], vec![a_ints("pads", &[1, 1, 1, 1])]);
    let s = n.op("Add", &[&b, &x], vec![]);
    let s = n.op("Relu", &[&s], vec![]);
    let c = conv(&mut n, &s, spec(40, 72, 3, 2, 1), 5);
    let wd = n.weight(&[72, 40, 1, 1], 7);
    let down = n.op("Conv", &[&s, &wd], vec![a_ints("strides", &[2, 2])]);
    let w2 = n.weight(&[72, 72, 3, 3], 9);
    let d = n.op("Conv", &[&c, &w2], vec![a_ints("pads", &[1, 1, 1, 1])]);
    let t = n.op("Add", &[&d, &down], vec![]);
    let t = n.op("Relu", &[&t], vec![]);
    n.op_to("GlobalAveragePool", &[&t], "y", vec![]);
    n.output("y", F32, &[2, 72, 1, 1]);
    let m = n.model();
    let want = compile(&m, no_dense());
    for threads in [1, 2] {
        let got = compile_on(&m, threads);
        assert_eq!(got.count("FusedConvNhwc"), 5, "{:?}", got.types);
        assert!(!got.has("Add") && !got.has("Relu"), "{:?}", got.types);
        // In before the first convolution, out before the pool.
        assert_eq!(got.count("Transpose"), 2, "{:?}", got.types);
        assert_close(&got, &want);
    }
    // The two 3×3 stride-1 convolutions at 8×8, not the one at 4×4 (4 tiles).
    assert_eq!(winograd_marked(&m), 2);
}

#[test]
fn pointwise_convolutions_of_small_images_are_marked_and_match() {
    // A pointwise convolution at 14×14 (196 pixels: not marked), a strided 3×3 down to 7×7,
    // then two pointwise ones there (49 pixels: marked), one with a residual: on AVX2 those
    // two run on the GEMM, the first on the direct kernel.
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 40, 14, 14]);
    let a = conv(&mut n, &x, spec(40, 40, 1, 1, 1), 1);
    let b = conv(&mut n, &a, spec(40, 64, 3, 2, 1), 3);
    let wp = n.weight(&[64, 64, 1, 1], 5);
    let p = n.op("Conv", &[&b, &wp], vec![]);
    let s = n.op("Add", &[&p, &b], vec![]);
    let s = n.op("Relu", &[&s], vec![]);
    let e = conv(&mut n, &s, spec(64, 96, 1, 1, 1), 7);
    n.op_to("GlobalAveragePool", &[&e], "y", vec![]);
    n.output("y", F32, &[2, 96, 1, 1]);
    let m = n.model();
    let want = compile(&m, no_dense());
    for threads in [1, 2] {
        let got = compile_on(&m, threads);
        assert_eq!(got.count("FusedConvNhwc"), 4, "{:?}", got.types);
        assert_close(&got, &want);
    }
    assert_eq!(marked(&m, "few_pixels"), 2);
}

#[test]
fn groups_of_fewer_than_three_convolutions_stay_in_nchw() {
    // depthwise → 3×3 → (Relu, not a convolution input) → 1×1: a group of two, then one.
    let mut n = Net::new();
    let x = n.input("x", F32, &[1, 32, 16, 16]);
    let a = conv(&mut n, &x, spec(32, 32, 3, 1, 32), 1);
    let b = conv(&mut n, &a, spec(32, 32, 3, 1, 1), 3);
    let e = n.op("Exp", &[&b], vec![]);
    let d = conv(&mut n, &e, spec(32, 32, 1, 1, 1), 7);
    n.op_to("Identity", &[&d], "y", vec![]);
    n.output("y", F32, &[1, 32, 16, 16]);
    let m = n.model();
    let got = compile(&m, cpu_engines());
    assert!(
        !got.has("FusedConvNhwc") && !got.has("Transpose"),
        "{:?}",
        got.types
    );
    assert_eq!(got.count("FusedConv"), 3, "{:?}", got.types);
    assert_close(&got, &compile(&m, no_dense()));
}

#[test]
fn a_computed_weight_keeps_its_convolution_out_of_the_region() {
    // The depthwise filter is computed (W + 0), so that convolution cannot join; the others
    // are then two separate groups of one, and nothing changes.
    let mut n = Net::new();
    let x = n.input("x", F32, &[1, 16, 10, 10]);
    let a = conv(&mut n, &x, spec(16, 32, 1, 1, 1), 1);
    let w = n.weight(&[32, 1, 3, 3], 3);
    let zero = n.scalar(0.0);
    let wc = n.op("Add", &[&w, &zero], vec![]);
    let d = n.op(
        "Conv",
        &[&a, &wc],
        vec![a_ints("pads", &[1, 1, 1, 1]), a_int("group", 32)],
    );
    let c = conv(&mut n, &d, spec(32, 16, 1, 1, 1), 5);
    n.op_to("Identity", &[&c], "y", vec![]);
    n.output("y", F32, &[1, 16, 10, 10]);
    let m = n.model();
    let got = compile(&m, cpu_engines());
    assert_close(&got, &compile(&m, no_dense()));
    // Constant folding may make the weight a constant again; either way the result is right,
    // and no region forms around a convolution whose weight is still computed.
    if got.has("Add") {
        assert!(!got.has("FusedConvNhwc"), "{:?}", got.types);
    }
}

/// A ResNet-style stem (7×7 stride 2 on 3 channels, 3×3 stride-2 MaxPool), a residual pair of
/// 3×3 convolutions, an AveragePool and a 1×1: `indices_read` also makes the MaxPool's Indices
/// a graph output.
fn stem_and_pools(indices_read: bool) -> ModelProto {
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 3, 30, 29]);
    let stem = conv(&mut n, &x, spec(3, 16, 7, 2, 1), 1);
    let pool_attrs = vec![
        a_ints("kernel_shape", &[3, 3]),
        a_ints("strides", &[2, 2]),
        a_ints("pads", &[1, 1, 1, 1]),
    ];
    let p = if indices_read {
        n.op_outs("MaxPool", &[&stem], &["p", "i"], pool_attrs);
        n.output("i", I64, &[2, 16, 8, 8]);
        "p".to_string()
    } else {
        n.op("MaxPool", &[&stem], pool_attrs)
    };
    let a = conv(&mut n, &p, spec(16, 16, 3, 1, 1), 3);
    let w = n.weight(&[16, 16, 3, 3], 5);
    let b = n.op("Conv", &[&a, &w], vec![a_ints("pads", &[1, 1, 1, 1])]);
    let s = n.op("Add", &[&b, &p], vec![]);
    let s = n.op("Relu", &[&s], vec![]);
    let avg = n.op(
        "AveragePool",
        &[&s],
        vec![
            a_ints("kernel_shape", &[3, 3]),
            a_ints("strides", &[2, 2]),
            a_ints("pads", &[0, 0, 1, 1]),
            a_int("count_include_pad", 0),
        ],
    );
    let c = conv(&mut n, &avg, spec(16, 8, 1, 1, 1), 7);
    n.op_to("Identity", &[&c], "y", vec![]);
    n.output("y", F32, &[2, 8, 4, 4]);
    n.model()
}

#[test]
fn pools_between_convolutions_join_the_region() {
    let m = stem_and_pools(false);
    let want = compile(&m, no_dense());
    for threads in [1, 2] {
        let got = compile_on(&m, threads);
        assert_eq!(got.count("FusedConvNhwc"), 4, "{:?}", got.types);
        assert_eq!(got.count("MaxPoolNhwc"), 1, "{:?}", got.types);
        assert_eq!(got.count("AveragePoolNhwc"), 1, "{:?}", got.types);
        assert!(
            !got.has("MaxPool") && !got.has("AveragePool"),
            "{:?}",
            got.types
        );
        // In at the 3-channel image, out after the last convolution.
        assert_eq!(got.count("Transpose"), 2, "{:?}", got.types);
        assert_close(&got, &want);
    }
}

#[test]
fn a_maxpool_whose_indices_are_read_splits_the_region() {
    let m = stem_and_pools(true);
    let got = compile(&m, cpu_engines());
    assert_eq!(got.count("MaxPool"), 1, "{:?}", got.types);
    assert!(!got.has("MaxPoolNhwc"), "{:?}", got.types);
    // The stem alone is a group of one; the rest (three convolutions and the average) converts.
    assert_eq!(got.count("FusedConvNhwc"), 3, "{:?}", got.types);
    assert_eq!(got.count("AveragePoolNhwc"), 1, "{:?}", got.types);
    assert_close(&got, &compile(&m, no_dense()));
}

#[test]
fn a_pool_fed_from_outside_a_region_stays_in_nchw() {
    // The pool reads the graph input: converting it would transpose its larger input.
    let mut n = Net::new();
    let x = n.input("x", F32, &[1, 8, 16, 16]);
    let p = n.op(
        "MaxPool",
        &[&x],
        vec![a_ints("kernel_shape", &[2, 2]), a_ints("strides", &[2, 2])],
    );
    let a = conv(&mut n, &p, spec(8, 8, 3, 1, 1), 1);
    let b = conv(&mut n, &a, spec(8, 8, 3, 1, 1), 3);
    let c = conv(&mut n, &b, spec(8, 8, 3, 1, 1), 5);
    n.op_to("Identity", &[&c], "y", vec![]);
    n.output("y", F32, &[1, 8, 8, 8]);
    let m = n.model();
    let got = compile(&m, cpu_engines());
    assert_eq!(got.count("MaxPool"), 1, "{:?}", got.types);
    assert_eq!(got.count("FusedConvNhwc"), 3, "{:?}", got.types);
    assert_close(&got, &compile(&m, no_dense()));
}

/// Three convolutions, then a global pool and a Flatten (a classifier head).
fn convs_then_global(pool: &str) -> ModelProto {
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 8, 9, 7]);
    let a = conv(&mut n, &x, spec(8, 16, 3, 1, 1), 1);
    let b = conv(&mut n, &a, spec(16, 16, 3, 2, 1), 3);
    let c = conv(&mut n, &b, spec(16, 24, 1, 1, 1), 5);
    let g = n.op(pool, &[&c], vec![]);
    n.op_to("Flatten", &[&g], "y", vec![]);
    n.output("y", F32, &[2, 24]);
    n.model()
}

#[test]
fn global_pools_join_the_region() {
    for (pool, nhwc) in [
        ("GlobalAveragePool", "AveragePoolNhwc"),
        ("GlobalMaxPool", "MaxPoolNhwc"),
    ] {
        let m = convs_then_global(pool);
        let want = compile(&m, no_dense());
        for threads in [1, 2] {
            let got = compile_on(&m, threads);
            assert_eq!(got.count(nhwc), 1, "{pool}: {:?}", got.types);
            assert!(!got.has(pool), "{pool}: {:?}", got.types);
            // In at the image, out after the pool: the exit reorders one pixel per image.
            assert_eq!(got.count("Transpose"), 2, "{pool}: {:?}", got.types);
            assert_close(&got, &want);
        }
    }
}

/// YOLOv8's pieces: a C2f (a conv, Split of its channels, two convs on one half, Concat of
/// the halves and their result, a 1×1 conv), an SE-style gate (GlobalAveragePool, Sigmoid, a
/// broadcast Mul), a nearest ×2 Resize of constant scales and a scalar Mul. `near_miss` turns
/// the Concat to the height axis and gives the Resize computed scales: those stay in NCHW.
fn c2f_neck(near_miss: bool) -> ModelProto {
    let mut n = Net::new();
    n.opset = 13;
    let x = n.input("x", F32, &[1, 8, 12, 10]);
    let c0 = conv(&mut n, &x, spec(8, 32, 3, 1, 1), 1);
    let split = n.ints(&[16, 16]);
    n.op_outs("Split", &[&c0, &split], &["a", "b"], vec![a_int("axis", 1)]);
    let b1 = conv(&mut n, "b", spec(16, 16, 3, 1, 1), 3);
    let b2 = conv(&mut n, &b1, spec(16, 16, 3, 1, 1), 5);
    let axis = if near_miss { 2 } else { 1 };
    let cat = n.op("Concat", &["a", "b", &b2], vec![a_int("axis", axis)]);
    let cin = if near_miss { 16 } else { 48 };
    let c1 = conv(&mut n, &cat, spec(cin, 32, 1, 1, 1), 7);
    let gap = n.op("GlobalAveragePool", &[&c1], vec![]);
    let gate = n.op("Sigmoid", &[&gap], vec![]);
    n.op_to("Mul", &[&c1, &gate], "se", vec![]);
    let roi = n.floats(&[]);
    let scales = if near_miss {
        let s = n.floats(&[1.0, 1.0, 2.0, 2.0]);
        n.op("Identity", &[&s], vec![])
    } else {
        n.floats(&[1.0, 1.0, 2.0, 2.0])
    };
    let up = n.op(
        "Resize",
        &[&c1, &roi, &scales],
        vec![a_str("mode", "nearest")],
    );
    let half = n.scalar(0.5);
    n.op_to("Mul", &[&up, &half], "up", vec![]);
    let h = if near_miss { 36 } else { 12 };
    n.output("se", F32, &[1, 32, h, 10]);
    n.output("up", F32, &[1, 32, 2 * h, 20]);
    n.model()
}

#[test]
fn splits_concats_resizes_and_elementwise_ops_join_the_region() {
    let m = c2f_neck(false);
    let want = compile(&m, no_dense());
    for threads in [1, 2] {
        let got = compile_on(&m, threads);
        assert_eq!(got.count("FusedConvNhwc"), 4, "{:?}", got.types);
        // In at the first convolution; out at the two graph outputs: nothing between.
        assert_eq!(got.count("Transpose"), 3, "{:?}", got.types);
        assert_close(&got, &want);
    }
}

#[test]
fn a_concat_off_the_channels_and_computed_scales_stay_in_nchw() {
    let m = c2f_neck(true);
    let want = compile(&m, no_dense());
    let got = compile_on(&m, 1);
    assert_close(&got, &want);
    // The Concat along the height leaves the region there; the Resize reads NCHW.
    assert!(got.count("Transpose") > 3, "{:?}", got.types);
    assert!(got.has("Concat") && got.has("Resize"), "{:?}", got.types);
}

/// DenseNet's dense layers: the features so far (a Concat) through BatchNormalization and
/// Relu into a 1×1 then a 3×3 convolution, whose output joins the next Concat. `computed`
/// gives the second BatchNormalization its mean from a graph input: that one stays in NCHW.
fn dense_layers(computed: bool) -> ModelProto {
    let mut n = Net::new();
    let x = n.input("x", F32, &[1, 8, 9, 11]);
    let stem = conv(&mut n, &x, spec(8, 16, 3, 1, 1), 1);
    let mut feats = vec![stem.clone()];
    for (k, cin) in [(0u32, 16i64), (1, 24)] {
        let cat = if feats.len() == 1 {
            feats[0].clone()
        } else {
            let refs: Vec<&str> = feats.iter().map(String::as_str).collect();
            n.op("Concat", &refs, vec![a_int("axis", 1)])
        };
        let scale = n.weight(&[cin], 10 + k);
        let bias = n.weight(&[cin], 20 + k);
        let mean = if computed && k == 1 {
            n.input("mean", F32, &[cin])
        } else {
            n.weight(&[cin], 30 + k)
        };
        let var = n.weight(&[cin], 40 + k);
        let var = n.op("Abs", &[&var], vec![]);
        let bn = n.op(
            "BatchNormalization",
            &[&cat, &scale, &bias, &mean, &var],
            vec![],
        );
        let r = n.op("Relu", &[&bn], vec![]);
        let a = conv(&mut n, &r, spec(cin, 16, 1, 1, 1), 50 + 2 * k);
        let b = conv(&mut n, &a, spec(16, 8, 3, 1, 1), 60 + 2 * k);
        feats.push(b);
    }
    let refs: Vec<&str> = feats.iter().map(String::as_str).collect();
    n.op_to("Concat", &refs, "y", vec![a_int("axis", 1)]);
    n.output("y", F32, &[1, 32, 9, 11]);
    n.model()
}

#[test]
fn batch_normalizations_between_convolutions_join_the_region() {
    let m = dense_layers(false);
    let want = compile(&m, no_dense());
    for threads in [1, 2] {
        let got = compile_on(&m, threads);
        assert_eq!(got.count("FusedConvNhwc"), 5, "{:?}", got.types);
        assert!(!got.has("BatchNormalization"), "{:?}", got.types);
        assert_eq!(got.count("Transpose"), 2, "{:?}", got.types);
        // Each 1×1 convolution reads its Concat, BatchNormalization and Relu through its input
        // prologue: only the output's Concat is left.
        assert_eq!(got.count("Concat"), 1, "{:?}", got.types);
        assert!(
            !got.has("FusedElementwise") && !got.has("Relu"),
            "{:?}",
            got.types
        );
        assert_close(&got, &want);
    }
    // A computed statistic: that BatchNormalization stays, in NCHW between Transposes.
    let m = dense_layers(true);
    let want = compile(&m, no_dense());
    let got = compile_on(&m, 1);
    assert_eq!(got.count("BatchNormalization"), 1, "{:?}", got.types);
    assert!(got.count("Transpose") > 2, "{:?}", got.types);
    assert_close(&got, &want);
}

/// A CSP block's join: two branches concatenated into a 1×1 convolution, which reads the
/// Concat through its input prologue; a Concat with a second reader, or before a 3×3
/// convolution, stays.
fn csp_join(second_reader: bool, k: i64) -> ModelProto {
    let mut n = Net::new();
    let x = n.input("x", F32, &[2, 8, 10, 12]);
    let a = conv(&mut n, &x, spec(8, 16, 3, 1, 1), 1);
    let b = conv(&mut n, &a, spec(16, 16, 3, 1, 1), 3);
    let c = conv(&mut n, &b, spec(16, 24, 1, 1, 1), 5);
    let cat = n.op("Concat", &[&a, &b, &c], vec![a_int("axis", 1)]);
    let y = conv(&mut n, &cat, spec(56, 40, k, 1, 1), 7);
    n.op_to("GlobalAveragePool", &[&y], "y", vec![]);
    n.output("y", F32, &[2, 40, 1, 1]);
    if second_reader {
        n.op_to("Identity", &[&cat], "cat", vec![]);
        n.output("cat", F32, &[2, 56, 10, 12]);
    }
    n.model()
}

#[test]
fn a_concat_before_a_pointwise_convolution_is_read_in_place() {
    for (second_reader, k, folded) in [(false, 1, true), (true, 1, false), (false, 3, false)] {
        let m = csp_join(second_reader, k);
        let want = compile(&m, no_dense());
        for threads in [1, 2] {
            let got = compile_on(&m, threads);
            assert_eq!(got.count("FusedConvNhwc"), 4, "{:?}", got.types);
            assert_eq!(
                got.has("Concat"),
                !folded,
                "{second_reader} {k}: {:?}",
                got.types
            );
            assert_close(&got, &want);
        }
    }
}
