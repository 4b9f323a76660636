//! The dense kernels against the `cpu` engine's (the reference, rge-kernels-nn) on random
//! shapes: Conv (1-D and 2-D; groups, depthwise, strides, dilations, pads, auto_pad, bias),
//! ConvTranspose (1-D to 3-D; output padding and shape), Einsum's GEMM patterns, MatMul (batch
//! broadcasting, 1-D operands), Gemm (transposes, alpha, beta, every form of C), each with
//! constant weights (packed when built) and computed ones, and the fused epilogues against the
//! reference followed by the same bias, residual and activation; the channels-last Conv
//! (FusedConvNhwc), the channels-last pools and layout conversions against the reference on
//! permuted data. Max relative
//! error 1e-4.

mod common;

use common::cases::{build, close, cpu, permuted, run, tensor, Case};
use proptest::prelude::*;
use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{DType, Kernel, KernelInit, Tensor};

/// Checks the dense kernel of `c` (constant and computed weights, 1 and 2 threads).
fn check(
    c: &Case,
    create: fn(&KernelInit<'_>) -> rge_kernels::KernelResult<Box<dyn Kernel>>,
) -> Result<(), String> {
    let want = cpu(c);
    for constant in [&[][..], &[1][..]] {
        let k = build(create, c, c.op, "", constant);
        for threads in [1, 2] {
            let got = run(k.as_ref(), &c.inputs, threads)?;
            close(&got, &want)
                .map_err(|e| format!("constant inputs {constant:?}, threads {threads}: {e}"))?;
        }
    }
    Ok(())
}

fn ints(v: &[usize]) -> AttrValue {
    AttrValue::ListInt(v.iter().map(|&x| x as i64).collect())
}

prop_compose! {
    fn conv_case()(
        n in 1usize..3, cin_g in 1usize..5, cout_g in 1usize..5, groups in 1usize..4,
        depthwise in any::<bool>(), h in 1usize..14, w in 1usize..14, k in 1usize..6,
        stride in 1usize..4, dil in 1usize..3, pad in 0usize..3, auto in 0usize..4,
        bias in any::<bool>(), one_d in prop::bool::weighted(0.25), seed in any::<u64>(),
        dw_channels in 2usize..40
    ) -> Case {
        let (cin_g, cout_g) = if depthwise { (1, 1) } else { (cin_g, cout_g) };
        // Depthwise: up to 39 channels, so the 16-channel blocks (full and partial) are run.
        let groups = if depthwise { dw_channels } else { groups };
        let (cin, cout) = (cin_g * groups, cout_g * groups);
        // Keep the kernel inside the (padded) image.
        let reach = (k - 1) * dil + 1;
        let (h, w) = (h.max(reach), w.max(reach));
        let mut attrs = AttrMap::new();
        attrs.set("group", groups as i64);
        // 1-D convolutions: one spatial dim (the width).
        let spatial = if one_d { 1 } else { 2 };
        attrs.set("strides", ints(&vec![stride; spatial]));
        attrs.set("dilations", ints(&vec![dil; spatial]));
        let pads = [pad, pad + 1 - (pad % 2), pad, pad];
        let pads = if one_d { vec![pads[1], pads[2]] } else { pads.to_vec() };
        match auto {
            0 => attrs.set("pads", ints(&pads)),
            1 => attrs.set("auto_pad", "SAME_UPPER"),
            2 => attrs.set("auto_pad", "SAME_LOWER"),
            _ => attrs.set("auto_pad", "VALID"),
        };
        let (x, wt) = if one_d {
            (vec![n, cin, w], vec![cout, cin_g, k])
        } else {
            (vec![n, cin, h, w], vec![cout, cin_g, k, k])
        };
        let inputs = vec![
            Some(tensor(&x, seed)),
            Some(tensor(&wt, seed ^ 1)),
            bias.then(|| tensor(&[cout], seed ^ 2)),
        ];
        Case { op: "Conv", attrs, inputs }
    }
}

prop_compose! {
    /// ConvTranspose in 1, 2 or 3 spatial dims: groups, strides, dilations, pads or auto_pad,
    /// output padding or an output shape, bias.
    fn conv_transpose_case()(
        n in 1usize..3, cin_g in 1usize..4, cout_g in 1usize..4, groups in 1usize..3,
        nd in 1usize..4, size in 1usize..7, k in 1usize..4, stride in 1usize..4,
        dil in 1usize..3, pad in 0usize..2, mode in 0usize..4, bias in any::<bool>(),
        seed in any::<u64>()
    ) -> Case {
        let (cin, cout) = (cin_g * groups, cout_g * groups);
        let mut attrs = AttrMap::new();
        attrs.set("group", groups as i64);
        attrs.set("strides", ints(&vec![stride; nd]));
        attrs.set("dilations", ints(&vec![dil; nd]));
        let full = stride * (size - 1) + (k - 1) * dil + 1;
        // Pads that leave at least one output element.
        let pad = pad.min((full - 1) / 2);
        match mode {
            0 => attrs.set("pads", ints(&vec![pad; 2 * nd])),
            // Output padding below the stride (the spec's rule), with pads.
            1 => {
                attrs.set("pads", ints(&vec![pad; 2 * nd]));
                attrs.set("output_padding", ints(&vec![stride - 1; nd]))
            }
            2 => attrs.set("auto_pad", "SAME_UPPER"),
            _ => attrs.set("output_shape", ints(&vec![full.saturating_sub(pad).max(1); nd])),
        };
        let mut x = vec![n, cin];
        x.extend(std::iter::repeat_n(size, nd));
        let mut w = vec![cin, cout_g];
        w.extend(std::iter::repeat_n(k, nd));
        let inputs = vec![
            Some(tensor(&x, seed)),
            Some(tensor(&w, seed ^ 1)),
            bias.then(|| tensor(&[cout], seed ^ 2)),
        ];
        Case { op: "ConvTranspose", attrs, inputs }
    }
}

/// `v` shuffled by `seed` (Fisher–Yates on a small LCG).
fn shuffled(mut v: Vec<u8>, mut seed: u64) -> Vec<u8> {
    for i in (1..v.len()).rev() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        v.swap(i, (seed >> 33) as usize % (i + 1));
    }
    v
}

prop_compose! {
    /// Einsum's GEMM patterns: batch, m, n and k labels (0–2 each), each operand and the
    /// output in a random label order.
    fn einsum_case()(
        counts in prop::array::uniform4(0usize..3), dims in prop::array::uniform8(1usize..5),
        order in any::<u64>(), seed in any::<u64>()
    ) -> Case {
        let mut next = b'a';
        let mut group = |n: usize| -> Vec<u8> { (0..n).map(|_| { next += 1; next - 1 }).collect() };
        let (bt, m, n, k) = (group(counts[0]), group(counts[1]), group(counts[2]), group(counts[3]));
        let a = shuffled([&bt[..], &m, &k].concat(), order);
        let b = shuffled([&bt[..], &k, &n].concat(), order ^ 1);
        let out = shuffled([&bt[..], &m, &n].concat(), order ^ 2);
        let dim = |c: &u8| dims[(c - b'a') as usize];
        let eq = |t: &[u8]| String::from_utf8(t.to_vec()).unwrap();
        let mut attrs = AttrMap::new();
        attrs.set("equation", format!("{},{}->{}", eq(&a), eq(&b), eq(&out)).as_str());
        let sa: Vec<usize> = a.iter().map(dim).collect();
        let sb: Vec<usize> = b.iter().map(dim).collect();
        let inputs = vec![Some(tensor(&sa, seed)), Some(tensor(&sb, seed ^ 1))];
        Case { op: "Einsum", attrs, inputs }
    }
}

prop_compose! {
    fn matmul_case()(
        m in 1usize..40, k in 1usize..70, n in 1usize..40, batch in 0usize..3,
        b_batched in any::<bool>(), one_d in 0usize..3, seed in any::<u64>()
    ) -> Case {
        let bdims: Vec<usize> = (0..batch).map(|i| i + 2).collect();
        let mut sa = bdims.clone();
        sa.extend([m, k]);
        let mut sb = if b_batched { bdims.clone() } else { vec![] };
        sb.extend([k, n]);
        if one_d == 1 { sa = vec![k]; }
        if one_d == 2 { sb = vec![k]; }
        let inputs = vec![Some(tensor(&sa, seed)), Some(tensor(&sb, seed ^ 3))];
        Case { op: "MatMul", attrs: AttrMap::new(), inputs }
    }
}

prop_compose! {
    fn gemm_case()(
        m in 1usize..40, k in 1usize..50, n in 1usize..40, ta in any::<bool>(), tb in any::<bool>(),
        alpha in prop::sample::select(vec![1.0f32, 0.5, -2.0]), beta in prop::sample::select(vec![1.0f32, 0.0, 0.25]),
        c_form in 0usize..6, seed in any::<u64>()
    ) -> Case {
        let mut attrs = AttrMap::new();
        attrs.set("transA", ta as i64);
        attrs.set("transB", tb as i64);
        attrs.set("alpha", alpha);
        attrs.set("beta", beta);
        let sa = if ta { [k, m] } else { [m, k] };
        let sb = if tb { [n, k] } else { [k, n] };
        let c = match c_form {
            0 => None,
            1 => Some(tensor(&[m, n], seed ^ 5)),
            2 => Some(tensor(&[n], seed ^ 5)),
            3 => Some(tensor(&[1, n], seed ^ 5)),
            4 => Some(tensor(&[m, 1], seed ^ 5)),
            _ => Some(tensor(&[1], seed ^ 5)),
        };
        let inputs = vec![Some(tensor(&sa, seed)), Some(tensor(&sb, seed ^ 4)), c];
        Case { op: "Gemm", attrs, inputs }
    }
}

prop_compose! {
    /// 2-D Conv for the channels-last kernel: ungrouped (the direct kernel, and the GEMM for
    /// wide 1×1 ones) or depthwise.
    fn conv_nhwc_case()(
        // Channel counts on both sides of the pointwise GEMM's threshold (more than 128 out
        // and 64 in), and of the direct kernel's 32-channel blocks.
        n in 1usize..3, cin in prop_oneof![1usize..40, 65usize..80],
        cout in prop_oneof![1usize..80, 129usize..150], depthwise in any::<bool>(),
        h in 1usize..14, w in 1usize..14, k in 1usize..6, stride in 1usize..4,
        dil in 1usize..3, pad in 0usize..3, auto in 0usize..4, bias in any::<bool>(),
        seed in any::<u64>()
    ) -> Case {
        let (cin_g, cout, groups) = if depthwise { (1, cin, cin) } else { (cin, cout, 1) };
        let reach = (k - 1) * dil + 1;
        let (h, w) = (h.max(reach), w.max(reach));
        let mut attrs = AttrMap::new();
        attrs.set("group", groups as i64);
        attrs.set("strides", ints(&[stride, stride]));
        attrs.set("dilations", ints(&[dil, dil]));
        match auto {
            0 => attrs.set("pads", ints(&[pad, pad + 1 - (pad % 2), pad, pad])),
            1 => attrs.set("auto_pad", "SAME_UPPER"),
            2 => attrs.set("auto_pad", "SAME_LOWER"),
            _ => attrs.set("auto_pad", "VALID"),
        };
        let inputs = vec![
            Some(tensor(&[n, cin, h, w], seed)),
            Some(tensor(&[cout, cin_g, k, k], seed ^ 1)),
            bias.then(|| tensor(&[cout], seed ^ 2)),
        ];
        Case { op: "Conv", attrs, inputs }
    }
}

prop_compose! {
    /// A 3×3 stride-1 Conv marked for channels-last Winograd (`winograd = 1`, as the
    /// channels-last pass marks them): channel counts off the transforms' 8-lane steps, under
    /// 64 outputs (products on the direct kernel) and over (on the GEMM), images
    /// down to one tile, odd sizes, asymmetric padding and auto_pad.
    fn winograd_nhwc_case()(
        n in 1usize..3, cin in 16usize..41, cout in prop_oneof![16usize..50, 64usize..80],
        h in 1usize..20, w in 1usize..20, pad in 0usize..3, auto in 0usize..3,
        bias in any::<bool>(), seed in any::<u64>()
    ) -> Case {
        let (h, w) = (h.max(3), w.max(3));
        let mut attrs = AttrMap::new();
        attrs.set("winograd", 1i64);
        match auto {
            0 => attrs.set("pads", ints(&[pad, pad.saturating_sub(1), 2 - pad.min(2), pad])),
            1 => attrs.set("auto_pad", "SAME_UPPER"),
            _ => attrs.set("auto_pad", "SAME_LOWER"),
        };
        let inputs = vec![
            Some(tensor(&[n, cin, h, w], seed)),
            Some(tensor(&[cout, cin, 3, 3], seed ^ 1)),
            bias.then(|| tensor(&[cout], seed ^ 2)),
        ];
        Case { op: "Conv", attrs, inputs }
    }
}

prop_compose! {
    /// MaxPool or AveragePool over NCHW: kernels, strides, dilations, pads (uneven), auto_pad,
    /// ceil mode, count_include_pad.
    fn pool_case()(
        n in 1usize..3, c in 1usize..40, h in 1usize..16, w in 1usize..16, k in 1usize..5,
        stride in 1usize..4, dil in 1usize..3, pad in 0usize..3, auto in 0usize..4,
        ceil in any::<bool>(), max in any::<bool>(), include_pad in any::<bool>(),
        seed in any::<u64>()
    ) -> Case {
        let reach = (k - 1) * dil + 1;
        let (h, w) = (h.max(reach), w.max(reach));
        let mut attrs = AttrMap::new();
        attrs.set("kernel_shape", ints(&[k, k]));
        attrs.set("strides", ints(&[stride, stride]));
        attrs.set("dilations", ints(&[dil, dil]));
        attrs.set("ceil_mode", i64::from(ceil));
        attrs.set("count_include_pad", i64::from(include_pad));
        // Pads stay under the kernel's reach, as the spec asks.
        let pad = pad.min(reach - 1);
        match auto {
            0 => attrs.set("pads", ints(&[pad, pad.saturating_sub(1), pad, pad])),
            1 => attrs.set("auto_pad", "SAME_UPPER"),
            2 => attrs.set("auto_pad", "SAME_LOWER"),
            _ => attrs.set("auto_pad", "VALID"),
        };
        let op = if max { "MaxPool" } else { "AveragePool" };
        Case { op, attrs, inputs: vec![Some(tensor(&[n, c, h, w], seed))] }
    }
}

/// FusedConvNhwc (constant and computed weights, 1 and 2 threads) against the reference Conv
/// on NCHW data, both sides permuted.
fn check_nhwc(c: &Case) -> Result<(), String> {
    let want = permuted(&cpu(c), [0, 2, 3, 1]);
    let mut nhwc = c.clone();
    nhwc.inputs[0] = c.inputs[0].as_ref().map(|x| permuted(x, [0, 2, 3, 1]));
    for constant in [&[][..], &[1][..]] {
        let create = rge_dense::conv_nhwc::create_conv_nhwc;
        let k = build(create, &nhwc, "FusedConvNhwc", "ai.rge", constant);
        for threads in [1, 2] {
            let got = run(k.as_ref(), &nhwc.inputs, threads)?;
            close(&got, &want)
                .map_err(|e| format!("constant inputs {constant:?}, threads {threads}: {e}"))?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn conv_nhwc_matches_the_reference(c in conv_nhwc_case()) {
        check_nhwc(&c).map_err(TestCaseError::fail)?;
    }

    /// Constant weights run Winograd; computed ones the direct kernel.
    #[test]
    fn winograd_nhwc_matches_the_reference(c in winograd_nhwc_case()) {
        check_nhwc(&c).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn pool_nhwc_matches_the_reference(c in pool_case()) {
        let want = permuted(&cpu(&c), [0, 2, 3, 1]);
        let mut nhwc = c.clone();
        nhwc.inputs[0] = c.inputs[0].as_ref().map(|x| permuted(x, [0, 2, 3, 1]));
        let op = if c.op == "MaxPool" { "MaxPoolNhwc" } else { "AveragePoolNhwc" };
        let k = build(rge_dense::pool_nhwc::create_pool_nhwc, &nhwc, op, "ai.rge", &[]);
        for threads in [1, 2] {
            let got = run(k.as_ref(), &nhwc.inputs, threads).map_err(TestCaseError::fail)?;
            close(&got, &want).map_err(|e| TestCaseError::fail(format!("threads {threads}: {e}")))?;
        }
    }

    #[test]
    fn transdata_matches_the_reference(
        n in 1usize..3, c in 1usize..40, h in 1usize..20, w in 1usize..20, seed in any::<u64>()
    ) {
        let x = tensor(&[n, c, h, w], seed);
        let create = rge_dense::transdata::create_transdata;
        for (perm, input) in [([0, 2, 3, 1], x.clone()), ([0, 3, 1, 2], permuted(&x, [0, 2, 3, 1]))] {
            let mut attrs = AttrMap::new();
            attrs.set("perm", AttrValue::ListInt(perm.iter().map(|&p| p as i64).collect()));
            let case = Case { op: "Transpose", attrs, inputs: vec![Some(input.clone())] };
            let k = build(create, &case, "Transpose", "", &[]);
            for threads in [1, 2] {
                let got = run(k.as_ref(), &case.inputs, threads).map_err(TestCaseError::fail)?;
                let want = permuted(&input, perm);
                prop_assert_eq!(got.as_slice::<f32>().unwrap(), want.as_slice::<f32>().unwrap());
            }
        }
    }

    #[test]
    fn conv_matches_the_reference(c in conv_case()) {
        check(&c, rge_dense::kernels::create_conv).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn conv_transpose_matches_the_reference(c in conv_transpose_case()) {
        check(&c, rge_dense::conv_transpose::create_conv_transpose).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn einsum_matches_the_reference(c in einsum_case()) {
        check(&c, rge_dense::einsum::create_einsum).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn matmul_matches_the_reference(c in matmul_case()) {
        check(&c, rge_dense::kernels::create_matmul).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn gemm_matches_the_reference(c in gemm_case()) {
        check(&c, rge_dense::kernels::create_gemm).map_err(TestCaseError::fail)?;
    }

    #[test]
    fn fused_conv_is_the_reference_then_its_epilogue(
        c in conv_case(), act in 0usize..6, residual in any::<bool>(), seed in any::<u64>()
    ) {
        let plain = cpu(&c);
        let (name, params): (&str, Vec<f32>) = [
            ("Relu", vec![]), ("Clip", vec![-0.2, 0.3]), ("LeakyRelu", vec![0.1]),
            ("Sigmoid", vec![]), ("Silu", vec![]), ("HardSwish", vec![]),
        ][act].clone();
        let z = residual.then(|| tensor(plain.shape(), seed));
        let mut attrs = c.attrs.clone();
        attrs.set("activation", name);
        attrs.set("activation_params", AttrValue::ListFloat(params.clone()));
        let mut inputs = c.inputs.clone();
        inputs.resize(3, None);
        inputs.push(z.clone());
        let fused = Case { op: "FusedConv", attrs, inputs };
        let k = build(rge_dense::kernels::create_conv, &fused, "FusedConv", "ai.rge", &[1]);
        let got = run(k.as_ref(), &fused.inputs, 2).map_err(TestCaseError::fail)?;
        let mut want = plain.as_slice::<f32>().unwrap().to_vec();
        if let Some(z) = &z {
            for (w, r) in want.iter_mut().zip(z.as_slice::<f32>().unwrap()) {
                *w += r;
            }
        }
        for w in &mut want {
            let x = f64::from(*w);
            let sig = 1.0 / (1.0 + (-x).exp());
            *w = match name {
                "Relu" => x.max(0.0),
                "Clip" => x.clamp(f64::from(params[0]), f64::from(params[1])),
                "LeakyRelu" => if x >= 0.0 { x } else { f64::from(params[0]) * x },
                "Sigmoid" => sig,
                "Silu" => x * sig,
                _ => x * (x / 6.0 + 0.5).clamp(0.0, 1.0),
            } as f32;
        }
        let want = Tensor::from_vec(plain.shape(), want).unwrap();
        close(&got, &want).map_err(TestCaseError::fail)?;
    }
}

#[test]
fn bad_shapes_are_errors_not_panics() {
    let mut attrs = AttrMap::new();
    attrs.set("group", 2i64);
    let c = Case {
        op: "Conv",
        attrs,
        inputs: vec![
            Some(tensor(&[1, 3, 5, 5], 1)),
            Some(tensor(&[4, 2, 3, 3], 2)),
            None,
        ],
    };
    let k = build(rge_dense::kernels::create_conv, &c, "Conv", "", &[]);
    assert!(run(k.as_ref(), &c.inputs, 1)
        .unwrap_err()
        .contains("do not fit"));
    let m = Case {
        op: "MatMul",
        attrs: AttrMap::new(),
        inputs: vec![Some(tensor(&[2, 3], 1)), Some(tensor(&[4, 5], 2))],
    };
    let k = build(rge_dense::kernels::create_matmul, &m, "MatMul", "", &[1]);
    assert!(run(k.as_ref(), &m.inputs, 1)
        .unwrap_err()
        .contains("inner dims"));
}

#[test]
fn large_pointwise_convs_split_columns_over_threads() {
    // 1×1, stride 1: no im2col; on 2 threads the columns are split into parallel tiles.
    let c = Case {
        op: "Conv",
        attrs: AttrMap::new(),
        inputs: vec![
            Some(tensor(&[2, 96, 29, 31], 14)),
            Some(tensor(&[40, 96, 1, 1], 15)),
            Some(tensor(&[40], 16)),
        ],
    };
    check(&c, rge_dense::kernels::create_conv).unwrap();
}

/// A 1×1 convolution deeper than the direct kernel's chunks (4096 input channels): the GEMM on
/// every ISA, with constant (packed) and computed weights; and a wide one (the direct kernel's
/// pairs of blocks with AVX-512, the GEMM without).
#[test]
fn deep_and_wide_pointwise_nhwc_convs_match_the_reference() {
    for (n, cin, h, w, cout) in [
        (1usize, 4100usize, 3usize, 5usize, 40usize),
        (2, 96, 9, 7, 160),
    ] {
        let c = Case {
            op: "Conv",
            attrs: AttrMap::new(),
            inputs: vec![
                Some(tensor(&[n, cin, h, w], 21)),
                Some(tensor(&[cout, cin, 1, 1], 22)),
                Some(tensor(&[cout], 23)),
            ],
        };
        check_nhwc(&c).unwrap();
    }
}

/// Depthwise on both kernels (the plane kernel for 36×40 outputs, 16-channel blocks for 9×10),
/// a batch of 2 and 1 and 2 threads: the planes and blocks are split into parts per thread.
#[test]
fn depthwise_planes_and_blocks_split_over_threads() {
    for (h, w, stride) in [(36usize, 40usize, 1usize), (18, 20, 2)] {
        let mut attrs = AttrMap::new();
        attrs.set("group", 37i64);
        attrs.set("strides", ints(&[stride, stride]));
        attrs.set("pads", ints(&[1, 1, 1, 1]));
        let c = Case {
            op: "Conv",
            attrs,
            inputs: vec![
                Some(tensor(&[2, 37, h, w], 21)),
                Some(tensor(&[37, 1, 3, 3], 22)),
                Some(tensor(&[37], 23)),
            ],
        };
        check(&c, rge_dense::kernels::create_conv).unwrap();
    }
}

/// FusedConvs with a residual and Relu on 1 and 2 threads: a 5×5 one large enough for parallel
/// im2col tiles (each adds its columns of the residual and writes them in place) and a 3×3
/// stride-1 one, which runs as Winograd F(2×2, 3×3).
#[test]
fn large_fused_convs_add_the_residual() {
    for (k, pad) in [(5usize, 2usize), (3, 1)] {
        let mut attrs = AttrMap::new();
        attrs.set("pads", ints(&[pad, pad, pad, pad]));
        let c = Case {
            op: "Conv",
            attrs,
            inputs: vec![
                Some(tensor(&[2, 64, 37, 41], 31)),
                Some(tensor(&[24, 64, k, k], 32)),
                Some(tensor(&[24], 33)),
            ],
        };
        check_fused_residual_relu(&c, 34);
    }
}

/// `c` (a Conv with constant weights) as a FusedConv with a residual (from `seed`) and Relu
/// against the reference Conv followed by that epilogue, on 1 and 2 threads.
fn check_fused_residual_relu(c: &Case, seed: u64) {
    let plain = cpu(c);
    let z = tensor(plain.shape(), seed);
    let mut attrs = c.attrs.clone();
    attrs.set("activation", "Relu");
    let mut inputs = c.inputs.clone();
    inputs.push(Some(z.clone()));
    let fused = Case {
        op: "FusedConv",
        attrs,
        inputs,
    };
    let k = build(
        rge_dense::kernels::create_conv,
        &fused,
        "FusedConv",
        "ai.rge",
        &[1],
    );
    let want: Vec<f32> = plain
        .as_slice::<f32>()
        .unwrap()
        .iter()
        .zip(z.as_slice::<f32>().unwrap())
        .map(|(v, r)| (v + r).max(0.0))
        .collect();
    let want = Tensor::from_vec(plain.shape(), want).unwrap();
    for threads in [1, 2] {
        let got = run(k.as_ref(), &fused.inputs, threads).unwrap();
        close(&got, &want).unwrap();
    }
}

/// 3×3 stride-1 Convs (Winograd when the weights are constant, im2col otherwise): sizes with
/// partial last tiles, asymmetric pads and a batch of 2.
#[test]
fn winograd_convs_match_the_reference() {
    for (h, w, pads) in [
        (14usize, 14usize, [1usize, 1, 1, 1]),
        (15, 11, [0, 2, 1, 0]),
    ] {
        let mut attrs = AttrMap::new();
        attrs.set("pads", ints(&pads));
        let c = Case {
            op: "Conv",
            attrs,
            inputs: vec![
                Some(tensor(&[2, 32, h, w], 41)),
                Some(tensor(&[48, 32, 3, 3], 42)),
                Some(tensor(&[48], 43)),
            ],
        };
        check(&c, rge_dense::kernels::create_conv).unwrap();
    }
}

/// Fewer output pixels than output channels (`Yᵀ = colᵀ·Wᵀ` with constant weights): 3×3
/// stride 2 (small, and large enough to run on two threads), 1×1 (the image read as colᵀ), 1-D,
/// a batch of 2, channel counts off the 16-wide transpose bands; plain, and fused with a residual
/// and Relu.
#[test]
fn few_pixel_convs_match_the_reference() {
    for (x, w, stride, pad) in [
        (
            vec![2usize, 40, 7, 7],
            vec![72usize, 40, 3, 3],
            2usize,
            1usize,
        ),
        // Past the work above which two threads share one (18 M multiply-adds per image).
        (vec![1, 128, 14, 14], vec![328, 128, 3, 3], 2, 1),
        // 33 pixels: two 32-column panels in the usual form, so AVX2's cost rule takes `Yᵀ`.
        (vec![1, 48, 3, 11], vec![100, 48, 1, 1], 1, 0),
        (vec![2, 8, 9], vec![20, 8, 3], 1, 1),
    ] {
        let spatial = x.len() - 2;
        let mut attrs = AttrMap::new();
        attrs.set("strides", ints(&vec![stride; spatial]));
        attrs.set("pads", ints(&vec![pad; 2 * spatial]));
        let cout = w[0];
        let c = Case {
            op: "Conv",
            attrs,
            inputs: vec![
                Some(tensor(&x, 51)),
                Some(tensor(&w, 52)),
                Some(tensor(&[cout], 53)),
            ],
        };
        let plain = cpu(&c);
        let pixels: usize = plain.shape()[2..].iter().product();
        assert!(
            pixels < cout,
            "{:?}: the case must have few pixels",
            plain.shape()
        );
        check(&c, rge_dense::kernels::create_conv).unwrap();
        check_fused_residual_relu(&c, 54);
    }
}

/// On 2 threads these also run their tiles in parallel (one-thread GEMM per tile).
#[test]
fn large_convs_run_in_im2col_tiles() {
    // K = 64·3·3 = 576 values per column: the im2col is done in many column tiles.
    for (stride, pad) in [(1usize, 1usize), (2, 1), (1, 0)] {
        let mut attrs = AttrMap::new();
        attrs.set("strides", ints(&[stride, stride]));
        attrs.set("pads", ints(&[pad, pad, pad, pad]));
        let c = Case {
            op: "Conv",
            attrs,
            inputs: vec![
                Some(tensor(&[1, 64, 37, 41], 11)),
                Some(tensor(&[24, 64, 3, 3], 12)),
                Some(tensor(&[24], 13)),
            ],
        };
        check(&c, rge_dense::kernels::create_conv).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// RNN, GRU and LSTM on the dense GEMM: every direction, with and without bias, initial
    /// state, sequence lengths and (LSTM) peepholes, against the reference kernels.
    #[test]
    fn recurrent_nets_match_the_reference(
        op in prop_oneof![Just("RNN"), Just("GRU"), Just("LSTM")],
        dir in 0usize..3,
        (seq, batch, input, hidden) in (1usize..6, 1usize..5, 1usize..9, 1usize..12),
        with_bias: bool,
        with_h0: bool,
        with_lens: bool,
        seed in 0u64..1000,
    ) {
        let gates = match op { "RNN" => 1, "GRU" => 3, _ => 4 };
        let dirs = if dir == 2 { 2 } else { 1 };
        let mut attrs = AttrMap::new();
        attrs.set("hidden_size", AttrValue::Int(hidden as i64));
        attrs.set("direction", ["forward", "reverse", "bidirectional"][dir]);
        let lens = with_lens.then(|| {
            let v: Vec<i32> = (0..batch).map(|b| (1 + (b + seed as usize) % seq) as i32).collect();
            Tensor::from_vec(&[batch], v).unwrap()
        });
        let mut inputs = vec![
            Some(tensor(&[seq, batch, input], seed)),
            Some(tensor(&[dirs, gates * hidden, input], seed + 1)),
            Some(tensor(&[dirs, gates * hidden, hidden], seed + 2)),
            with_bias.then(|| tensor(&[dirs, 2 * gates * hidden], seed + 3)),
            lens,
            with_h0.then(|| tensor(&[dirs, batch, hidden], seed + 4)),
        ];
        if op == "LSTM" {
            inputs.push(with_h0.then(|| tensor(&[dirs, batch, hidden], seed + 5)));
            inputs.push(with_bias.then(|| tensor(&[dirs, 3 * hidden], seed + 6)));
        }
        let c = Case { op, attrs, inputs };
        let want = cpu(&c);
        // W and R given at run time (packed per run), R constant, and both constant (packed
        // when the kernel is built).
        for constants in [&[][..], &[2][..], &[1, 2][..]] {
            let k = build(rge_dense::recurrent::create_recurrent, &c, op, "", constants);
            for threads in [1, 2] {
                let got = run(k.as_ref(), &c.inputs, threads).map_err(TestCaseError::fail)?;
                close(&got, &want).map_err(|e| {
                    TestCaseError::fail(format!("{threads} threads, constants {constants:?}: {e}"))
                })?;
            }
        }
    }
}

/// An LSTM wide enough that each step's cell updates split over the threads, both directions,
/// unequal lengths, peepholes, against the reference on one thread: with R constant, each
/// thread a fixed range of hidden units (R packed in blocks of 64 units, the last short); with
/// R given at run time, the batch rows (batch rows × hidden units past the threshold).
#[test]
fn a_wide_lstm_splits_its_cell_updates_over_threads() {
    let (seq, batch, input, hidden, dirs) = (4, 6, 16, 400, 2);
    let mut attrs = AttrMap::new();
    attrs.set("hidden_size", AttrValue::Int(hidden as i64));
    attrs.set("direction", "bidirectional");
    let lens: Vec<i32> = (0..batch).map(|b| (1 + b % seq) as i32).collect();
    let inputs = vec![
        Some(tensor(&[seq, batch, input], 1)),
        Some(tensor(&[dirs, 4 * hidden, input], 2)),
        Some(tensor(&[dirs, 4 * hidden, hidden], 3)),
        Some(tensor(&[dirs, 8 * hidden], 4)),
        Some(Tensor::from_vec(&[batch], lens).unwrap()),
        Some(tensor(&[dirs, batch, hidden], 5)),
        Some(tensor(&[dirs, batch, hidden], 6)),
        Some(tensor(&[dirs, 3 * hidden], 7)),
    ];
    let c = Case {
        op: "LSTM",
        attrs,
        inputs,
    };
    let want = cpu(&c);
    for constants in [&[1, 2][..], &[1][..]] {
        let k = build(
            rge_dense::recurrent::create_recurrent,
            &c,
            "LSTM",
            "",
            constants,
        );
        for threads in [1, 2, 3] {
            let got = run(k.as_ref(), &c.inputs, threads).unwrap();
            close(&got, &want)
                .unwrap_or_else(|e| panic!("{threads} threads, constants {constants:?}: {e}"));
        }
    }
}

/// ConvTranspose over images large enough to run in bands of input rows (the columns of a band
/// fit L2), at 1 and 2 threads (bands whose output rows do not overlap run in parallel): the
/// detector's 2×2/2 upsample, an overlapping 3×3/2 one with pads and groups, one whose single
/// input row is a band, a stride above the kernel, and kernel offsets that tile the output,
/// each against the reference.
#[test]
fn conv_transpose_in_bands_matches_the_reference() {
    for (x, w, k, stride, pad, group) in [
        ([1, 6, 200, 90], [6, 5, 2, 2], 2, 2, 0, 1),
        ([2, 4, 41, 130], [4, 3, 3, 3], 3, 2, 1, 2),
        ([1, 3, 5, 3000], [3, 16, 3, 3], 3, 1, 1, 1),
        // A stride above the kernel: output rows no band writes, between the bands' own.
        ([1, 4, 150, 600], [4, 3, 2, 2], 2, 3, 0, 2),
        // Kernel offsets that tile the output (stride = kernel, no pads): placed, not added;
        // 2 wide (interleaved), 3 wide, with groups and two images.
        ([2, 4, 37, 53], [4, 3, 2, 2], 2, 2, 0, 2),
        ([1, 5, 90, 70], [5, 2, 3, 3], 3, 3, 0, 1),
    ] {
        let mut attrs = AttrMap::new();
        attrs.set("group", group as i64);
        attrs.set("strides", ints(&[stride, stride]));
        attrs.set("pads", ints(&[pad; 4]));
        attrs.set("kernel_shape", ints(&[k, k]));
        let c = Case {
            op: "ConvTranspose",
            attrs,
            inputs: vec![
                Some(tensor(&x, 7)),
                Some(tensor(&w, 8)),
                Some(tensor(&[w[1] * group], 9)),
            ],
        };
        check(&c, rge_dense::conv_transpose::create_conv_transpose)
            .unwrap_or_else(|e| panic!("{x:?} {w:?}: {e}"));
    }
}

/// `winograd = 1` where Winograd cannot run (a 1×1 filter, a stride of 2, a value other than
/// 0 or 1) is an error at kernel creation naming the attribute, not a wrong result.
#[test]
fn a_misplaced_winograd_mark_is_refused() {
    for (w, strides, mark) in [
        (tensor(&[16, 16, 1, 1], 2), [1, 1], 1i64),
        (tensor(&[16, 16, 3, 3], 2), [2, 2], 1),
        (tensor(&[16, 16, 3, 3], 2), [1, 1], 2),
    ] {
        let mut attrs = AttrMap::new();
        attrs.set("winograd", mark);
        attrs.set("strides", ints(&strides));
        let types = [Some(DType::Float), Some(DType::Float)];
        let consts = [None, Some(&w)];
        let init = KernelInit {
            node_name: "n",
            op_type: "FusedConvNhwc",
            domain: "ai.rge",
            opset: 1,
            attrs: &attrs,
            input_types: &types,
            output_types: &[Some(DType::Float)],
            subgraph_attrs: &[],
            constants: &consts,
        };
        let err = rge_dense::conv_nhwc::create_conv_nhwc(&init)
            .err()
            .unwrap_or_else(|| panic!("{:?} {strides:?} {mark}: accepted", w.shape()))
            .to_string();
        assert!(err.contains("winograd"), "{err}");
    }
}
