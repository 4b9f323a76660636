//! The shared math on every token this machine runs, against f64 references on dense grids:
//! relative error within 1e-6 where the result is a normal float, and every ISA equal to the
//! one-lane scalar twin within an ulp or two. (The full sweep over the f32 range, through the
//! vector engine's loops, is `crates/rge-vector/tests/math_sweep.rs`.)

use rge_simd::{math, Lanes, Scalar, Simd};

/// `f` over `xs` with token `s`, block by block.
fn eval<S: Simd>(s: S, xs: &[f32], f: fn(S, S::V) -> S::V) -> Vec<f32> {
    let mut out = vec![0.0f32; xs.len()];
    for (x, y) in xs.chunks(S::LANES).zip(out.chunks_mut(S::LANES)) {
        // SAFETY: each chunk holds x.len() <= LANES floats.
        unsafe {
            s.store_n(
                y.as_mut_ptr(),
                f(s, s.load_n(x.as_ptr(), x.len(), 0.0)),
                x.len(),
            )
        };
    }
    out
}

fn grid(lo: f32, hi: f32, step: f32) -> Vec<f32> {
    let n = ((hi - lo) / step) as usize;
    (0..=n).map(|i| lo + i as f32 * step).collect()
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

type Case<S> = (
    &'static str,
    fn(S, <S as Simd>::V) -> <S as Simd>::V,
    fn(f64) -> f64,
    f32,
    f32,
);

fn cases<S: Simd>() -> Vec<Case<S>> {
    vec![
        ("exp", math::exp::<S>, f64::exp, -87.0, 88.0),
        ("tanh", math::tanh::<S>, f64::tanh, -10.0, 10.0),
        ("sigmoid", math::sigmoid::<S>, sigmoid, -80.0, 80.0),
        ("log", math::log::<S>, f64::ln, 1e-3, 1e3),
    ]
}

fn check<S: Simd>(s: S, name: &str) {
    for (op, f, reference, lo, hi) in cases::<S>() {
        let xs = grid(lo, hi, (hi - lo) / 200_003.0);
        let got = eval(s, &xs, f);
        for (x, y) in xs.iter().zip(&got) {
            let want = reference(*x as f64);
            if want.abs() < f32::MIN_POSITIVE as f64 {
                continue;
            }
            let rel = (*y as f64 - want).abs() / want.abs();
            assert!(
                rel <= 1e-6,
                "{name} {op}({x}) = {y}, want {want} (rel {rel:e})"
            );
        }
    }
}

#[test]
fn math_within_1e6_relative_on_every_token() {
    check(Scalar, "scalar");
    check(Lanes::<8>, "lanes8");
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(s) = rge_simd::Avx2::new() {
            check(s, "avx2");
        }
        if let Some(s) = rge_simd::Avx512::new() {
            check(s, "avx512");
        }
    }
}

#[test]
fn nan_and_infinities_propagate() {
    let xs = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY];
    let exp = eval(Scalar, &xs, math::exp);
    assert!(exp[0].is_nan() && exp[1] == f32::INFINITY && exp[2] == 0.0);
    let tanh = eval(Scalar, &xs, math::tanh);
    assert!(tanh[0].is_nan() && tanh[1] == 1.0 && tanh[2] == -1.0);
    let sig = eval(Scalar, &xs, math::sigmoid);
    assert!(sig[0].is_nan() && sig[1] == 1.0 && sig[2] == 0.0);
    let erf = eval(Scalar, &xs, math::erf);
    assert!(erf[0].is_nan() && erf[1] == 1.0 && erf[2] == -1.0);
}

/// `exp_normal` is `exp` from −87 up, 0 below (−∞ included), and keeps NaN and +∞.
fn check_exp_normal<S: Simd>(s: S, name: &str) {
    let mut xs = grid(-120.0, 89.0, 0.0137);
    xs.extend([
        math::EXP_NORMAL_MIN,
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
    ]);
    let got = eval(s, &xs, math::exp_normal);
    let exp = eval(s, &xs, math::exp);
    for ((x, g), e) in xs.iter().zip(&got).zip(&exp) {
        let want = if *x < math::EXP_NORMAL_MIN { 0.0 } else { *e };
        assert!(
            g.to_bits() == want.to_bits() || (g.is_nan() && want.is_nan()),
            "{name} exp_normal({x}) = {g}, want {want}"
        );
        assert!(*g == 0.0 || g.is_nan() || *g >= f32::MIN_POSITIVE);
    }
}

#[test]
fn exp_normal_is_exp_without_denormals() {
    check_exp_normal(Scalar, "scalar");
    check_exp_normal(Lanes::<8>, "lanes8");
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(s) = rge_simd::Avx2::new() {
            check_exp_normal(s, "avx2");
        }
        if let Some(s) = rge_simd::Avx512::new() {
            check_exp_normal(s, "avx512");
        }
    }
}

/// Swish `x·sigmoid(αx)` where αx is far below -110 but x·e^{αx} is still a normal float (a
/// tiny alpha and a huge x), and SiLU's own deep tail (-0), on every token.
fn check_swish_deep_tail<S: Simd>(s: S, name: &str) {
    let want = |x: f32, alpha: f32| {
        let h = alpha as f64 * x as f64;
        x as f64 * sigmoid(h)
    };
    for (x, alpha) in [
        (-3.0e38f32, 4.0e-37f32),
        (-3.0e38, 6.0e-37),
        (-1.0e30, 1.5e-28),
        (-2.0e20, 1.0e-18),
        (3.0e38, -4.0e-37),
        (-3.0e38, 1.0e-36),
        (-200.0, 1.0),
        (-1.0e30, 1.0),
    ] {
        let xs = vec![x; S::LANES.max(1)];
        let mut out = vec![0.0f32; xs.len()];
        // SAFETY: both hold LANES floats.
        unsafe {
            s.store_n(
                out.as_mut_ptr(),
                math::swish(s, s.load_n(xs.as_ptr(), xs.len(), 0.0), alpha),
                xs.len(),
            )
        };
        let (got, want) = (out[0] as f64, want(x, alpha));
        if want.abs() < f32::MIN_POSITIVE as f64 {
            assert!(
                got.abs() < f32::MIN_POSITIVE as f64,
                "{name} swish({x}, {alpha}) = {got}, want {want}"
            );
            continue;
        }
        let rel = (got - want).abs() / want.abs();
        assert!(
            rel <= 1e-6,
            "{name} swish({x}, {alpha}) = {got}, want {want} (rel {rel:e})"
        );
    }
}

#[test]
fn swish_keeps_its_deep_tail() {
    check_swish_deep_tail(Scalar, "scalar");
    check_swish_deep_tail(Lanes::<8>, "lanes8");
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(s) = rge_simd::Avx2::new() {
            check_swish_deep_tail(s, "avx2");
        }
        if let Some(s) = rge_simd::Avx512::new() {
            check_swish_deep_tail(s, "avx512");
        }
    }
}
