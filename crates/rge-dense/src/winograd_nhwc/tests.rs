//! Channels-last Winograd against the direct sum, its scalar twin, NaN and bad operands.
use super::*;

fn geometry(h: usize, w: usize, pads: [usize; 4]) -> DwGeometry {
    let [pt, pl, pb, pr] = pads;
    DwGeometry {
        h,
        w,
        kh: 3,
        kw: 3,
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        pad_top: pt,
        pad_left: pl,
        oh: h + pt + pb - 2,
        ow: w + pl + pr - 2,
    }
}

/// The direct sum in f64, `[oh, ow, cout]` from `[h, w, cin]` and `[cout, cin, 3, 3]`.
fn direct(x: &[f32], w: &[f32], cin: usize, cout: usize, g: &DwGeometry) -> Vec<f64> {
    let mut y = vec![0f64; g.oh * g.ow * cout];
    for oy in 0..g.oh {
        for ox in 0..g.ow {
            for co in 0..cout {
                let mut acc = 0f64;
                for i in 0..3 {
                    for j in 0..3 {
                        let (Some(iy), Some(ix)) = (
                            (oy + i).checked_sub(g.pad_top),
                            (ox + j).checked_sub(g.pad_left),
                        ) else {
                            continue;
                        };
                        if iy >= g.h || ix >= g.w {
                            continue;
                        }
                        for ci in 0..cin {
                            let xv = x[(iy * g.w + ix) * cin + ci];
                            let wv = w[((co * cin + ci) * 3 + i) * 3 + j];
                            acc += f64::from(xv) * f64::from(wv);
                        }
                    }
                }
                y[(oy * g.ow + ox) * cout + co] = acc;
            }
        }
    }
    y
}

/// Odd and even sizes, asymmetric padding, partial last tiles, several blocks of tile
/// rows, channel counts off the 8-lane steps; bias, residual and clamp or other
/// activations; 1 and 2 threads: within 1e-4 of the output's scale of the direct sum.
#[test]
fn matches_the_direct_sum() {
    let mut rnd = crate::test_values::values(11);
    let acts = [
        Activation::Relu,
        Activation::None,
        Activation::Clip {
            min: -0.5,
            max: 0.7,
        },
        Activation::Sigmoid,
    ];
    // (h, w, [top, left, bottom, right], cin, cout)
    let cases: &[(usize, usize, [usize; 4], usize, usize)] = &[
        (8, 8, [1, 1, 1, 1], 16, 16),
        // 64 output channels and more: the products on the GEMM.
        (9, 10, [1, 1, 1, 1], 20, 70),
        (7, 9, [1, 1, 1, 1], 17, 20),
        (9, 6, [0, 0, 0, 0], 16, 19),
        (6, 11, [2, 1, 0, 2], 24, 16),
        (3, 3, [1, 1, 1, 1], 16, 16),
        // 21 × 19 tiles: blocks of 6 tile rows, the last partial.
        (41, 37, [1, 1, 1, 1], 16, 17),
    ];
    for (n, &(h, w, pads, cin, cout)) in cases.iter().enumerate() {
        let g = geometry(h, w, pads);
        let act = acts[n % acts.len()];
        let x: Vec<f32> = (0..h * w * cin).map(|_| rnd()).collect();
        let wt: Vec<f32> = (0..cout * cin * 9).map(|_| rnd()).collect();
        let bias: Vec<f32> = (0..cout).map(|_| rnd()).collect();
        let z: Vec<f32> = (0..g.oh * g.ow * cout).map(|_| rnd()).collect();
        let wg = WinogradNhwc::new(&wt, cout, cin).unwrap();
        let sum = direct(&x, &wt, cin, cout, &g);
        for residual in [false, true] {
            let want: Vec<f64> = sum
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    let r = if residual { f64::from(z[i]) } else { 0.0 };
                    let v = v + f64::from(bias[i % cout]) + r;
                    match act {
                        Activation::Relu => v.max(0.0),
                        Activation::Clip { min, max } => v.clamp(min.into(), max.into()),
                        Activation::Sigmoid => 1.0 / (1.0 + (-v).exp()),
                        _ => v,
                    }
                })
                .collect();
            let scale = want.iter().fold(1e-3f64, |m, v| m.max(v.abs()));
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut got = vec![f32::NAN; g.oh * g.ow * cout];
                let args = WinogradArgs {
                    x: &x,
                    bias: Some(&bias),
                    z: residual.then_some(&z[..]),
                    act: &act,
                };
                pool.install(|| wg.conv(&args, &g, &mut got, threads))
                    .unwrap();
                for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                    let err = (f64::from(*a) - b).abs();
                    assert!(
                        err <= 1e-4 * scale,
                        "{g:?} {act:?} residual {residual}, {threads} threads, at {i}: {a} vs {b}"
                    );
                }
            }
        }
    }
}

/// The AVX2 build of the transforms is the baseline's arithmetic, bit for bit.
#[test]
fn transforms_match_their_scalar_twin() {
    let g = geometry(9, 7, [1, 2, 1, 0]);
    let (cin, cout) = (19, 21);
    let tw = g.ow.div_ceil(2);
    let x: Vec<f32> = (0..g.h * g.w * cin)
        .map(|i| (i % 17) as f32 * 0.37 - 2.0)
        .collect();
    let m: Vec<f32> = (0..POINTS * tw * cout)
        .map(|i| (i % 23) as f32 * 0.11 - 1.0)
        .collect();
    let z: Vec<f32> = (0..g.oh * g.ow * cout)
        .map(|i| (i % 13) as f32 * 0.2 - 1.1)
        .collect();
    let bias: Vec<f32> = (0..cout).map(|i| i as f32 * 0.01).collect();
    let zeros = vec![0.0; cin];
    let run = |isa: Isa| {
        let mut v = vec![0.0; tw * POINTS * cin];
        input_isa(isa, &x, &g, cin, 1, &zeros, &mut v);
        let mut y = vec![0.0; 2 * g.ow * cout];
        let rows = Rows {
            m: &m,
            bt: tw,
            r: 0,
            ty: 1,
        };
        let args = WinogradArgs {
            x: &x,
            bias: Some(&bias),
            z: Some(&z),
            act: &Activation::Relu,
        };
        output_isa(isa, &rows, &args, &g, cout, &mut y);
        (v, y)
    };
    assert_eq!(run(Isa::Scalar), run(Isa::best()));
}

/// NaN and infinities propagate through the transforms and the clamp as through a sum.
#[test]
fn nan_and_infinity_propagate() {
    let g = geometry(4, 4, [1, 1, 1, 1]);
    let (cin, cout) = (16, 16);
    let mut x = vec![0.5f32; g.h * g.w * cin];
    x[0] = f32::NAN;
    x[(3 * g.w + 3) * cin + 1] = f32::INFINITY;
    let wg = WinogradNhwc::new(&vec![0.25; cout * cin * 9], cout, cin).unwrap();
    let mut y = vec![0.0; g.oh * g.ow * cout];
    let args = WinogradArgs {
        x: &x,
        bias: None,
        z: None,
        act: &Activation::Relu,
    };
    wg.conv(&args, &g, &mut y, 1).unwrap();
    // Pixel (0, 0) reads input (0, 0): NaN; pixel (3, 3) reads +inf and no NaN.
    assert!(y[..cout].iter().all(|v| v.is_nan()));
    let last = &y[(g.oh * g.ow - 1) * cout..];
    assert!(
        last.iter().all(|v| v.is_infinite() || v.is_nan()),
        "{last:?}"
    );
    assert!(y[(g.ow + 1) * cout..(g.ow + 2) * cout]
        .iter()
        .all(|v| v.is_nan()));
}

#[test]
fn suits_3x3_stride_1_layers_with_enough_tiles_and_channels() {
    let s = |k, st, d, ci, co, o| suits([k, k], [st, st], [d, d], ci, co, [o, o]);
    assert!(s(3, 1, 1, 64, 64, 56));
    assert!(s(3, 1, 1, 512, 512, 7));
    assert!(!s(3, 1, 1, 512, 512, 6));
    assert!(!s(3, 2, 1, 64, 64, 28));
    assert!(!s(3, 1, 2, 64, 64, 28));
    assert!(!s(1, 1, 1, 64, 64, 28));
    assert!(!s(3, 1, 1, 16, 64, 28));
    assert!(s(3, 1, 1, 96, 24, 160));
    assert!(!s(3, 1, 1, 96, 8, 160));
}

#[test]
fn bad_operands_are_refused() {
    let wg = WinogradNhwc::new(&vec![0.5; 16 * 16 * 9], 16, 16).unwrap();
    assert!(WinogradNhwc::new(&[0.5; 10], 16, 16).is_err());
    let g = geometry(4, 4, [1, 1, 1, 1]);
    let args = WinogradArgs {
        x: &[0.0; 3],
        bias: None,
        z: None,
        act: &Activation::None,
    };
    let mut y = vec![0.0; 16 * 16];
    let short = wg.conv(&args, &g, &mut y, 1);
    assert!(matches!(
        short,
        Err(GemmError::TooShort { operand: "X", .. })
    ));
    let strided = DwGeometry { stride_h: 2, ..g };
    let x = vec![0.0; 16 * 16];
    let args = WinogradArgs { x: &x, ..args };
    assert!(matches!(
        wg.conv(&args, &strided, &mut y, 1),
        Err(GemmError::Window(_))
    ));
}
