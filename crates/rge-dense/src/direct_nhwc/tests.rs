//! The direct kernel on every ISA against the direct sum.
use super::*;

/// The direct sum, in f64, of `conv + bias + z` on channels-last data (no activation).
fn naive(k: &DirectNhwc, x: &[f32], w: &[f32], b: &[f32], z: Option<&[f32]>) -> Vec<f32> {
    let (g, cin, cout) = (&k.g, k.cin, k.cout);
    let mut out = vec![0.0; g.oh * g.ow * cout];
    for oy in 0..g.oh {
        for ox in 0..g.ow {
            for co in 0..cout {
                let mut acc = f64::from(b[co]);
                for i in 0..g.kh {
                    for j in 0..g.kw {
                        let iy = (oy * g.stride_h + i * g.dil_h) as isize - g.pad_top as isize;
                        let ix = (ox * g.stride_w + j * g.dil_w) as isize - g.pad_left as isize;
                        if iy < 0 || ix < 0 || iy as usize >= g.h || ix as usize >= g.w {
                            continue;
                        }
                        for ci in 0..cin {
                            let xv = x[(iy as usize * g.w + ix as usize) * cin + ci];
                            let wv = w[((co * cin + ci) * g.kh + i) * g.kw + j];
                            acc += f64::from(xv) * f64::from(wv);
                        }
                    }
                }
                let o = (oy * g.ow + ox) * cout + co;
                out[o] = (acc + z.map_or(0.0, |z| f64::from(z[o]))) as f32;
            }
        }
    }
    out
}

/// Every ISA against the direct sum over 1×1 and 3×3 filters, strides, dilations,
/// padding, channel counts that fill no vector, and split row ranges.
#[test]
fn every_isa_matches_the_direct_sum() {
    let mut rnd = crate::test_values::values(31);
    // (h, w, kh, kw, stride, dilation, pad_top, pad_left, pad_bottom, pad_right, cin, cout)
    for &(h, w, kh, kw, st, d, pt, pl, pb, pr, cin, cout) in &[
        (13, 14, 3, 3, 2, 1, 1, 1, 1, 1, 3, 16),
        (9, 20, 1, 1, 1, 1, 0, 0, 0, 0, 33, 24),
        (8, 8, 1, 1, 1, 1, 0, 0, 0, 0, 144, 16),
        (7, 9, 3, 3, 1, 2, 2, 2, 2, 2, 5, 7),
        (6, 11, 5, 3, 1, 1, 2, 1, 2, 1, 4, 32),
        (2, 3, 5, 7, 1, 1, 2, 3, 2, 3, 2, 9),
        (1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1),
        (7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 40, 70),
        (9, 8, 3, 3, 2, 1, 0, 0, 1, 1, 17, 64),
        (10, 10, 3, 3, 1, 1, 0, 0, 0, 0, 8, 33),
        // A last block of 17–24 channels (AVX2's 4 × 3 tiles).
        (8, 9, 3, 3, 1, 1, 1, 1, 1, 1, 12, 56),
        (11, 7, 3, 3, 1, 1, 1, 1, 1, 1, 9, 20),
        // Deeper than CHUNKED_DEPTH: chunks, the next one fetched ahead (and across
        // blocks), a half-width last block.
        (5, 5, 3, 3, 1, 1, 1, 1, 1, 1, 460, 40),
        (6, 7, 3, 3, 2, 1, 1, 1, 1, 1, 600, 64),
        // Pairs of blocks (AVX-512's 6 × 4 tiles) beside a single one, split by threads
        // inside a pair.
        (12, 9, 3, 3, 1, 1, 1, 1, 1, 1, 24, 160),
        (9, 9, 1, 1, 1, 1, 0, 0, 0, 0, 64, 96),
    ] {
        let oh = (h + pt + pb - ((kh - 1) * d + 1)) / st + 1;
        let ow = (w + pl + pr - ((kw - 1) * d + 1)) / st + 1;
        let g = DwGeometry {
            h,
            w,
            kh,
            kw,
            stride_h: st,
            stride_w: st,
            dil_h: d,
            dil_w: d,
            pad_top: pt,
            pad_left: pl,
            oh,
            ow,
        };
        let k = DirectNhwc { g, cin, cout };
        let x: Vec<f32> = (0..h * w * cin).map(|_| rnd()).collect();
        let wt: Vec<f32> = (0..cout * cin * kh * kw).map(|_| rnd()).collect();
        let b: Vec<f32> = (0..cout).map(|_| rnd()).collect();
        let z: Vec<f32> = (0..oh * ow * cout).map(|_| rnd()).collect();
        let packed = k.repack_weights(&wt);
        let mut padded = vec![f32::NAN; k.padded_len()];
        let xs = if k.needs_padding() {
            k.pad_image(&x, &mut padded);
            &padded[..]
        } else {
            &x[..]
        };
        // With and without a residual; the clamps (none, Relu, Clip) finish in registers,
        // other activations after the stored sums.
        let clip = Activation::Clip {
            min: -0.3,
            max: 0.4,
        };
        for (act, with_z) in [
            (Activation::Relu, true),
            (Activation::Relu, false),
            (Activation::None, true),
            (clip, true),
            (clip, false),
            (Activation::Sigmoid, true),
        ] {
            let zs = with_z.then_some(&z[..]);
            let want: Vec<f32> = naive(&k, &x, &wt, &b, zs)
                .into_iter()
                .map(|v| match act {
                    Activation::Relu => v.max(0.0),
                    Activation::Clip { min, max } => v.clamp(min, max),
                    Activation::Sigmoid => 1.0 / (1.0 + (-v).exp()),
                    _ => v,
                })
                .collect();
            let args = DirectArgs {
                x: xs,
                wts: &packed,
                bias: Some(&b),
                z: zs,
                act: &act,
            };
            check_all_isas(&k, &args, &want);
        }
    }
}

/// `k` on every ISA, its pixels and blocks split as threads would, against `want`.
fn check_all_isas(k: &DirectNhwc, args: &DirectArgs<'_>, want: &[f32]) {
    let (g, cin, cout) = (k.g, k.cin, k.cout);
    let (pixels, blocks) = (g.oh * g.ow, k.blocks());
    for isa in Isa::available() {
        let mut got = vec![f32::NAN; pixels * cout];
        // Split pixels (a tile that does not fill) and blocks, as the threads would.
        let ps = pixels / 2 + 1;
        for (px, bl) in [
            ((0, ps.min(pixels)), (0, blocks)),
            ((ps.min(pixels), pixels), (0, blocks / 2)),
            ((ps.min(pixels), pixels), (blocks / 2, blocks)),
        ] {
            // SAFETY: `got` holds the image's output; the calls run one after another.
            unsafe { k.run(isa, args, px, bl, got.as_mut_ptr()) };
        }
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            let tol = 1e-5 * (1.0 + (cin * g.kh * g.kw) as f32).sqrt();
            assert!(
                (a - b).abs() <= tol,
                "{isa:?} {g:?} {cin}->{cout} {:?} at {i}: {a} vs {b}",
                args.act
            );
        }
    }
}
