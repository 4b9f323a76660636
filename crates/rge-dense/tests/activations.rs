//! The epilogue's activations on every ISA against f64 math: a dense sweep with relative error
//! at most 1e-6 wherever the result is a normal f32, NaN propagation and the limits.

mod common;

use rge_dense::gemm::{activate, Activation, Isa};

const ALL: [Activation; 11] = [
    Activation::None,
    Activation::Relu,
    Activation::Clip {
        min: -0.5,
        max: 2.0,
    },
    Activation::LeakyRelu { alpha: 0.1 },
    Activation::Sigmoid,
    Activation::HardSigmoid {
        alpha: 0.2,
        beta: 0.5,
    },
    Activation::HardSwish,
    Activation::Swish { alpha: 1.0 },
    Activation::Gelu,
    Activation::GeluTanh,
    Activation::Tanh,
];

/// x in [-lim, lim] every `step`, plus ± powers of 1.01 from 1e-30 up to `lim`.
fn sweep(lim: f32, step: f32) -> Vec<f32> {
    let mut xs: Vec<f32> = (0..=((2.0 * lim / step) as usize))
        .map(|i| -lim + i as f32 * step)
        .collect();
    let mut m = 1e-30f32;
    while m < lim {
        xs.push(m);
        xs.push(-m);
        m *= 1.01;
    }
    xs
}

/// The largest relative error of `act` on `isa` over `xs`. Results that are not normal f32
/// (|y| < f32::MIN_POSITIVE) only need to be within MIN_POSITIVE; they count as 0 or 2.
fn max_rel_err(isa: Isa, act: &Activation, xs: &[f32]) -> (f64, f32) {
    let mut ys = xs.to_vec();
    activate(isa, act, &mut ys).unwrap();
    let mut worst = (0.0, 0.0);
    for (&x, &y) in xs.iter().zip(&ys) {
        let want = common::act(act, x as f64);
        let tiny = f32::MIN_POSITIVE as f64;
        let diff = (y as f64 - want).abs();
        let err = match want.abs() < tiny {
            true if diff <= tiny => 0.0,
            true => 2.0,
            false => diff / want.abs(),
        };
        if err.is_nan() || err > worst.0 {
            worst = (err, x);
        }
    }
    worst
}

#[test]
fn reference_erfc_is_accurate() {
    // Values from the closed forms / published tables.
    for (x, want) in [
        (0.0, 1.0),
        (0.5, 0.479_500_122_186_953_5),
        (1.0, 0.157_299_207_050_285_13),
        (2.0, 4.677_734_981_047_266e-3),
        (2.5, 4.069_520_174_449_59e-4),
        (3.0, 2.209_049_699_858_544e-5),
        (5.0, 1.537_459_794_428_034_8e-12),
        (10.0, 2.088_487_583_762_545e-45),
    ] {
        let got = common::erfc(x);
        assert!(
            (got - want).abs() <= 1e-13 * want,
            "erfc({x}) = {got}, want {want}"
        );
    }
}

#[test]
fn activations_within_1e6_relative() {
    let xs = sweep(20.0, 1.0 / 4096.0);
    for isa in Isa::available() {
        for act in &ALL {
            let (err, at) = max_rel_err(isa, act, &xs);
            println!("{isa:?} {act:?}: max relative error {err:.2e} (at x = {at})");
            assert!(
                err <= 1e-6,
                "{isa:?} {act:?}: relative error {err:.3e} at x = {at}"
            );
        }
    }
}

#[test]
fn exponential_tails_within_1e6_relative() {
    // Down to where the results leave the normal range.
    let xs = sweep(100.0, 1.0 / 64.0);
    for isa in Isa::available() {
        for act in [
            Activation::Sigmoid,
            Activation::Swish { alpha: 1.0 },
            Activation::Swish { alpha: 0.7 },
            Activation::Tanh,
        ] {
            let (err, at) = max_rel_err(isa, &act, &xs);
            assert!(
                err <= 1e-6,
                "{isa:?} {act:?}: relative error {err:.3e} at x = {at}"
            );
        }
    }
}

#[test]
fn nan_propagates_and_limits_hold() {
    for isa in Isa::available() {
        for act in &ALL {
            let mut v = [f32::NAN; 3];
            activate(isa, act, &mut v).unwrap();
            assert!(v.iter().all(|x| x.is_nan()), "{isa:?} {act:?}: {v:?}");
        }
        let v = [
            f32::INFINITY,
            f32::NEG_INFINITY,
            1e30,
            -1e30,
            200.0,
            -200.0,
            0.0,
        ];
        let check = |act: Activation, want: [f32; 7]| {
            let mut y = v;
            activate(isa, &act, &mut y).unwrap();
            assert_eq!(y, want, "{isa:?} {act:?}");
        };
        check(Activation::Sigmoid, [1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.5]);
        check(Activation::Tanh, [1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 0.0]);
        check(
            Activation::Relu,
            [f32::INFINITY, 0.0, 1e30, 0.0, 200.0, 0.0, 0.0],
        );
        let mut y = [1e30f32, -1e30, 100.0, -100.0, 0.0];
        activate(isa, &Activation::Gelu, &mut y).unwrap();
        assert_eq!(y, [1e30, 0.0, 100.0, 0.0, 0.0], "{isa:?} Gelu");
    }
}
