//! Vectorized f32 math, written once over [`Simd`] (so every ISA and the scalar twin compute
//! the same thing). Maximum errors, measured by `tests/math_sweep.rs` over a stride through all
//! 2^32 bit patterns plus every float of the interesting ranges, against f64 references, are
//! listed in `docs/vector-engine.md`; in short every function is within a few ulp where its
//! result is a normal float, and within a few of the smallest denormal below that.
//!
//! NaN in gives NaN out (quieted); infinities give the limits ONNX (numpy) gives.
//!
//! - `exp`: Cody–Waite reduction by ln 2, `1 + r + r²·P5(r)`, `2^n` applied as two factors
//!   so results down to the denormals round once (the dense engine's epilogue uses the same).
//! - `expm1`: its Taylor polynomial below |x| = 0.5 (no cancellation), `exp(x) - 1` above.
//! - `log`: the mantissa in [√½, √2) and Cephes' degree-9 polynomial for `log(1+f)`; denormal
//!   inputs are scaled by 2^23 first.
//! - `tanh`: an odd polynomial below |x| = 0.625, `1 - 2/(e^{2|x|}+1)` above.
//! - `sigmoid`: `1/(1+e^{-x})` for x ≥ 0, `e^x/(1+e^x)` below (no overflow, no cancellation);
//!   a vector whose lanes are all within ±80 shares one `e^{-|x|}` with a single 2^n factor
//!   (SiLU likewise).
//! - `erf`: its Taylor series below |x| = 0.75, `1 - t·e^{-x²}·Q(t)` with `t = 1/(1+|x|/2)`
//!   above, `x²` carried exactly as `h + l`.
//! - erf-GELU and tanh-GELU as in the dense epilogue (`x·Φ(x)` from erfc without the `1 + erf`
//!   cancellation; `x·sigmoid(2u)` with `2u` in double-f32).
//! - `softplus`: `max(x, 0) + log1p(e^{-|x|})`, `log1p(u) = log(1+u)·u/((1+u)-1)`.
//! - `sin`/`cos`: reduction by π/2 in three parts (the first exact, the rest in double-f32)
//!   for |x| < 4096, polynomials on [-π/4, π/4]; larger |x| goes lane by lane through f64.

use crate::Simd;

/// Horner evaluation of `c[0] + c[1]·x + …`.
#[inline(always)]
pub fn poly<S: Simd, const N: usize>(s: S, x: S::V, c: &[f32; N]) -> S::V {
    let mut p = s.splat(c[N - 1]);
    for &ci in c[..N - 1].iter().rev() {
        p = s.fma(p, x, s.splat(ci));
    }
    p
}

/// `y`, or the (quieted) NaN `x` where `x` is NaN.
#[inline(always)]
pub fn keep_nan<S: Simd>(s: S, x: S::V, y: S::V) -> S::V {
    s.select(s.is_nan(x), s.add(x, x), y)
}

/// `e^x`.
#[inline(always)]
pub fn exp<S: Simd>(s: S, x: S::V) -> S::V {
    if all_short(s, x) {
        return exp_short(s, x);
    }
    keep_nan(s, x, exp_mul(s, x, s.splat(1.0)))
}

/// `e^x` for `|x| <= SHORT_ABS_MAX` (every lane): [`exp_mul`]'s reduction and polynomial with
/// `2^n` in one factor and no clamps, bit for bit its result there (`e·2^n` is normal, so the
/// two factors scale exactly too).
#[inline(always)]
fn exp_short<S: Simd>(s: S, x: S::V) -> S::V {
    let (n, e) = exp_reduce(s, x);
    s.mul(e, s.pow2i(n))
}

/// [`exp_mul`] for `|x| <= SHORT_ABS_MAX` (every lane) and `m` such that `m·e^x` is a normal
/// float: `2^n` in one factor, no clamps, bit for bit `exp_mul` there (both scale the same
/// rounded `e·m` by powers of two, exactly while it stays normal).
#[inline(always)]
fn exp_mul_short<S: Simd>(s: S, x: S::V, m: S::V) -> S::V {
    let (n, e) = exp_reduce(s, x);
    s.mul(s.mul(e, m), s.pow2i(n))
}

/// `(n, e)` with `e^x = e·2^n`: `n = round(x·log2 e)`, `e = 1 + r + r²·P(r)` of the remainder
/// `r = x - n·ln 2` (Cody–Waite). `x` within the range its caller clamps or checks.
#[inline(always)]
fn exp_reduce<S: Simd>(s: S, x: S::V) -> (S::V, S::V) {
    let n = s.round(s.mul(x, s.splat(LOG2E)));
    let r = s.fma(n, s.splat(-LN2_HI), x);
    let r = s.fma(n, s.splat(-LN2_LO), r);
    (
        n,
        s.fma(s.mul(r, r), poly(s, r, &EXP_P), s.add(r, s.splat(1.0))),
    )
}

/// Below this, [`exp_normal`] gives 0 (`e^-87` is 1.6e-38, just above the smallest normal f32).
pub const EXP_NORMAL_MIN: f32 = -87.0;

/// `e^x` where that is at least `e^-87` (a normal float), 0 below (−∞ included); NaN stays
/// NaN. For sums of exponentials such as softmax, where a term under 1.6e-38 next to the
/// largest (1) cannot change the result: [`exp`] rounds denormal results exactly, and each
/// vector of them costs a microcode assist of about a hundred cycles on Intel cores (masked
/// scores made the attention softmax 20× slower than its arithmetic).
#[inline(always)]
pub fn exp_normal<S: Simd>(s: S, x: S::V) -> S::V {
    if all_short(s, x) {
        // Softmax's usual vector: nothing below e^-80.
        return exp_short(s, x);
    }
    let lo = s.splat(EXP_NORMAL_MIN);
    if s.all(s.le(x, s.splat(-EXP_NORMAL_MIN))) {
        // Every lane at most 87 (softmax's `x - max` is at most 0), some below -80 (masked
        // or far-off scores): clamped at -87, the short form is still exact (2^n and the
        // result stay normal from -87 to 87) and needs no second factor. A softmax row with
        // such lanes ran at half the speed of one without (PP-OCR's 80 × 6625, wide logits:
        // 0.52 against 0.33 ms).
        return s.select(s.lt(x, lo), s.splat(0.0), exp_short(s, s.max(lo, x)));
    }
    // max(lo, x) is x for a NaN x (x86 semantics), so the NaN reaches `exp` and stays.
    let e = exp(s, s.max(lo, x));
    s.select(s.lt(x, lo), s.splat(0.0), e)
}

/// `m·e^x`, rounded once at the end even where the result is denormal (`m` a normal float;
/// NaN `x` not handled).
#[inline(always)]
pub fn exp_mul<S: Simd>(s: S, x: S::V, m: S::V) -> S::V {
    // Below -110 the result rounds to 0 (for |m| < 2^40); above 89, 2^n overflows to inf.
    let xc = s.min(s.splat(89.0), s.max(s.splat(-110.0), x));
    let (n, e) = exp_reduce(s, xc);
    // 2^n in two factors so every n in [-159, 128] is representable.
    let n1 = s.round(s.mul(n, s.splat(0.5)));
    let n2 = s.sub(n, n1);
    s.mul(s.mul(s.mul(e, m), s.pow2i(n1)), s.pow2i(n2))
}

// 1 + r + r²·P(r) on |r| <= ln2/2 (least squares, relative error 6e-11 in exact arithmetic).
const EXP_P: [f32; 6] = [
    0.5,
    0.166_666_66,
    0.041_666_27,
    0.008_333_43,
    0.001_394_602_4,
    0.000_198_265_01,
];
const LOG2E: f32 = std::f32::consts::LOG2_E;
// ln 2 split so that n·LN2_HI is exact for |n| < 2^9.
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;

/// The magnitude up to which (in every lane of a vector) exp, sigmoid and SiLU take their
/// short form: `e^{±80}` is a normal float, so `2^n` needs one factor and no clamps (and
/// sigmoid no second exponential for the negative side).
const SHORT_ABS_MAX: f32 = 80.0;

/// `(e^{-|x|}, 1/(1 + e^{-|x|}))` for `|x| <= SHORT_ABS_MAX`.
#[inline(always)]
fn sigmoid_short_parts<S: Simd>(s: S, x: S::V) -> (S::V, S::V) {
    let one = s.splat(1.0);
    let t = exp_short(s, s.neg(s.abs(x)));
    (t, s.div(one, s.add(one, t)))
}

/// Whether every lane of `x` is within the short form's range (NaN lanes are not).
#[inline(always)]
fn all_short<S: Simd>(s: S, x: S::V) -> bool {
    s.all(s.le(s.abs(x), s.splat(SHORT_ABS_MAX)))
}

/// `e^x - 1`.
#[inline(always)]
pub fn expm1<S: Simd>(s: S, x: S::V) -> S::V {
    // Taylor: x + x²·(1/2 + x/6 + …), truncation below 6e-10 relative on |x| <= 0.5.
    const P: [f32; 8] = [
        0.5,
        0.166_666_67,
        0.041_666_668,
        0.008_333_334,
        0.001_388_888_9,
        0.000_198_412_7,
        2.480_158_7e-5,
        2.755_732e-6,
    ];
    let small = s.fma(s.mul(x, x), poly(s, x, &P), x);
    let big = s.sub(exp_mul(s, x, s.splat(1.0)), s.splat(1.0));
    keep_nan(s, x, s.select(s.lt(s.abs(x), s.splat(0.5)), small, big))
}

/// Natural logarithm: `-inf` at ±0, NaN below 0, `inf` at `inf`.
#[inline(always)]
pub fn log<S: Simd>(s: S, x: S::V) -> S::V {
    // Cephes logf: log(1+f) = f - f²/2 + f³·P(f) for f in [√½-1, √2-1] (as published).
    #[allow(clippy::excessive_precision)]
    const P: [f32; 9] = [
        3.333_333_1e-1,
        -2.499_999_4e-1,
        2.000_071_4e-1,
        -1.666_805_8e-1,
        1.424_932_3e-1,
        -1.242_014_1e-1,
        1.167_699_9e-1,
        -1.151_461e-1,
        7.037_683_6e-2,
    ];
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let zero = s.splat(0.0);
    let tiny = s.lt(x, s.splat(f32::MIN_POSITIVE));
    let xs = s.select(tiny, s.mul(x, s.splat(8_388_608.0)), x);
    let (e, m) = s.frexp(xs);
    let e = s.select(tiny, s.sub(e, s.splat(23.0)), e);
    let big = s.lt(s.splat(std::f32::consts::SQRT_2), m);
    let m = s.select(big, s.mul(m, s.splat(0.5)), m);
    let e = s.select(big, s.add(e, s.splat(1.0)), e);
    let f = s.sub(m, s.splat(1.0));
    let z = s.mul(f, f);
    let y = s.mul(s.mul(f, z), poly(s, f, &P));
    let y = s.fma(e, s.splat(LN2_LO), y);
    let y = s.fma(z, s.splat(-0.5), y);
    let r = s.fma(e, s.splat(LN2_HI), s.add(f, y));
    // Special values: +inf stays, 0 gives -inf, negatives give NaN.
    let r = s.select(s.eq(x, s.splat(f32::INFINITY)), x, r);
    let r = s.select(s.eq(x, zero), s.splat(f32::NEG_INFINITY), r);
    let r = s.select(s.lt(x, zero), s.splat(f32::NAN), r);
    keep_nan(s, x, r)
}

/// `ln(1 + u)` for `u >= 0` (Goldberg: `log(1+u)·u/((1+u)-1)`, exact where `1+u` rounds to 1).
#[inline(always)]
fn log1p_pos<S: Simd>(s: S, u: S::V) -> S::V {
    let w = s.add(s.splat(1.0), u);
    let d = s.sub(w, s.splat(1.0));
    let one = s.eq(d, s.splat(0.0));
    let safe_d = s.select(one, s.splat(1.0), d);
    s.select(one, u, s.div(s.mul(log(s, w), u), safe_d))
}

/// `ln(1 + e^x)`.
#[inline(always)]
pub fn softplus<S: Simd>(s: S, x: S::V) -> S::V {
    let e = exp_mul(s, s.neg(s.abs(x)), s.splat(1.0));
    let r = s.add(s.max(x, s.splat(0.0)), log1p_pos(s, e));
    keep_nan(s, x, r)
}

/// `tanh(x)`.
#[inline(always)]
pub fn tanh<S: Simd>(s: S, x: S::V) -> S::V {
    // tanh(x) = x + x³·P(x²) for |x| < 0.625 (least squares, relative error 5e-10).
    const P: [f32; 6] = [
        -0.333_333_3,
        0.133_332_25,
        -0.053_949_386,
        0.021_715_494,
        -0.008_214_815,
        0.002_177_869,
    ];
    let ax = s.abs(x);
    let z = s.mul(x, x);
    let small = s.fma(s.mul(x, z), poly(s, z, &P), x);
    // e^{2|x|}: the short form when every lane's 2|x| is within its range.
    let e = if s.all(s.le(ax, s.splat(SHORT_ABS_MAX * 0.5))) {
        exp_short(s, s.add(ax, ax))
    } else {
        exp_mul(s, s.add(ax, ax), s.splat(1.0))
    };
    let big = s.sub(s.splat(1.0), s.div(s.splat(2.0), s.add(e, s.splat(1.0))));
    let big = s.copysign(big, x);
    keep_nan(s, x, s.select(s.lt(ax, s.splat(0.625)), small, big))
}

/// `m·sigmoid(h + l)` for a small correction `l`, without overflow: `m/(1 + e^{-w})` for
/// `w >= 0`, `m·e^{w}/(1 + e^{w})` below (`m·e^{w}` rounded once).
#[inline(always)]
fn mul_sigmoid<S: Simd>(s: S, m: S::V, h: S::V, l: S::V) -> S::V {
    let zero = s.splat(0.0);
    let one = s.splat(1.0);
    let neg = s.lt(h, zero);
    // -|w| = nh + nl
    let nh = s.neg(s.abs(h));
    let nl = s.select(neg, l, s.neg(l));
    let e = exp_mul(s, nh, s.add(one, nl));
    let den = s.add(one, e);
    let num = s.select(neg, exp_mul(s, nh, s.mul(m, s.add(one, nl))), m);
    s.div(num, den)
}

/// `1 / (1 + e^{-x})`.
#[inline(always)]
pub fn sigmoid<S: Simd>(s: S, x: S::V) -> S::V {
    if all_short(s, x) {
        // sigmoid(x) = q for x >= 0, t·q below (t = e^{-|x|}, q = 1/(1+t)): a third of the
        // general form's work (activations are almost always in range).
        let (t, q) = sigmoid_short_parts(s, x);
        return s.select(s.lt(x, s.splat(0.0)), s.mul(t, q), q);
    }
    keep_nan(s, x, mul_sigmoid(s, s.splat(1.0), x, s.splat(0.0)))
}

/// `x·sigmoid(alpha·x)` (Swish; SiLU at alpha = 1), `alpha·x` carried exactly.
#[inline(always)]
pub fn swish<S: Simd>(s: S, x: S::V, alpha: f32) -> S::V {
    if alpha == 1.0 && all_short(s, x) {
        // SiLU in range: x·q, or x·t·q below 0 (see `sigmoid`).
        let (t, q) = sigmoid_short_parts(s, x);
        let xq = s.mul(x, q);
        return s.select(s.lt(x, s.splat(0.0)), s.mul(xq, t), xq);
    }
    let (h, l) = two_prod(s, s.splat(alpha), x);
    let inf = s.splat(f32::INFINITY);
    let finite = s.lt(s.abs(h), inf);
    let l = s.select(finite, l, s.splat(0.0));
    let r = mul_sigmoid(s, x, h, l);
    // Below αx = -110 the sigmoid is e^{αx} (1 + e^{αx} rounds to 1), and the exponential's
    // clamp there would scale x by e^-110: with a small alpha, a huge x still gives a normal
    // x·e^{αx} (x = -3e38, α = 4e-37: αx = -120, x·e^{αx} = -2.3e-14). Two half exponentials
    // carry it down to αx = -220, past which |x|·e^{αx} < 3.4e38·e^-220 rounds to 0.
    let deep = s.lt(h, s.splat(-110.0));
    let r = if s.all(s.le(s.splat(-110.0), h)) {
        r
    } else {
        let half = s.mul(h, s.splat(0.5));
        // x/4 first (exact): e^{r}·x near f32::MAX would overflow inside the first product.
        let xl = s.mul(s.mul(x, s.splat(0.25)), s.add(s.splat(1.0), l));
        let first = s.mul(exp_mul(s, half, xl), s.splat(4.0));
        let tail = exp_mul(s, half, first);
        let tail = s.select(s.lt(h, s.splat(-220.0)), s.mul(x, s.splat(0.0)), tail);
        s.select(deep, tail, r)
    };
    // At ±inf the formula's own value: x·sigmoid(h) with h = ±inf (inf·1, or -inf·0 = NaN) or
    // NaN (alpha = 0: x·NaN): sigmoid(±inf) is the step 1 or 0, and a NaN h compares false,
    // which gives x·0 = NaN. No third exponential for it.
    let zero = s.splat(0.0);
    let plain = s.mul(x, s.select(s.lt(zero, h), s.splat(1.0), zero));
    let r = s.select(s.lt(s.abs(x), inf), r, plain);
    keep_nan(s, x, r)
}

/// erfc(z)·e^{z²}/t as a polynomial in t = 1/(1 + z/2) on t in [0.08, 1] (z <= 23),
/// least squares on the relative error (1.5e-7 evaluated in f32); the dense epilogue's `Q`.
const ERFC_Q: [f32; 11] = [
    0.282_094_75,
    0.282_093_9,
    0.246_901_53,
    0.175_053_83,
    0.095_196_79,
    -0.065_590_54,
    0.146_375_52,
    -0.474_547_98,
    0.510_041_95,
    -0.242_311_92,
    0.044_692_144,
];

/// Where `e^{-z²}` only corrects a result that is 1 (or x) to far below an ulp: `e^-80`.
const TAIL: f32 = 80.0;

/// `erf(x)`.
#[inline(always)]
pub fn erf<S: Simd>(s: S, x: S::V) -> S::V {
    // 2/√π Σ (-1)^n x^(2n+1)/(n!(2n+1)) through n = 10: truncation below 1e-10 on |x| < 0.75.
    const T: [f32; 11] = [
        std::f32::consts::FRAC_2_SQRT_PI,
        -0.376_126_4,
        0.112_837_92,
        -0.026_866_17,
        0.005_223_977_6,
        -0.000_854_832_7,
        0.000_120_553_33,
        -1.492_565e-5,
        1.646_211_4e-6,
        -1.636_584_5e-7,
        1.480_719_3e-8,
    ];
    let one = s.splat(1.0);
    let ax = s.min(s.splat(10.0), s.abs(x));
    let small = s.mul(x, poly(s, s.mul(x, x), &T));
    let t = s.div(one, s.fma(ax, s.splat(0.5), one));
    let h = s.mul(ax, ax);
    let l = s.fma(ax, ax, s.neg(h));
    // e^{-(h + l)} = e^{-h}·(1 - l). Past h = 80 (|x| > 8.9) erfc is far below an ulp of 1;
    // clamping there keeps e normal (a denormal costs a microcode assist per vector) and
    // changes no result.
    // The argument is within [-80, 0] and e^-80·(1 - l) normal: always the short form (a NaN
    // lane's garbage is replaced by `keep_nan`).
    let e = exp_mul_short(s, s.max(s.splat(-TAIL), s.neg(h)), s.sub(one, l));
    let erfc = s.mul(s.mul(t, poly(s, t, &ERFC_Q)), e);
    let big = s.copysign(s.sub(one, erfc), x);
    keep_nan(s, x, s.select(s.lt(s.abs(x), s.splat(0.75)), small, big))
}

/// erf-GELU: `x·Φ(x)`, `Φ(x) = erfc(-x/√2)/2`.
#[inline(always)]
pub fn gelu<S: Simd>(s: S, x: S::V) -> S::V {
    // Φ is exactly 0 or 1 in f32 beyond |x| = 20; clamping keeps x² finite.
    let one = s.splat(1.0);
    let ax = s.min(s.splat(20.0), s.abs(x));
    let t = s.div(
        one,
        s.fma(ax, s.splat(0.5 * std::f32::consts::FRAC_1_SQRT_2), one),
    );
    // z² = x²/2 exactly as h + l, so e^{-z²} keeps full relative precision in the tail.
    let h = s.mul(ax, ax);
    let l = s.fma(ax, ax, s.neg(h));
    let tq = s.mul(t, poly(s, t, &ERFC_Q));
    let corr = s.fma(l, s.splat(-0.5), one);
    let z2 = s.mul(h, s.splat(-0.5));
    let negative = s.lt(x, s.splat(0.0));
    // Denormals cost a microcode assist per vector: for x >= 0, e^{-z²} is clamped at e^-80
    // (past it, 1 - erfc/2 is 1 either way), so neither branch makes one there. Both branches
    // take the same argument, so the compiler shares the reduction of their two exponentials.
    let z2 = s.select(negative, z2, s.max(s.splat(-TAIL), z2));
    let neg_m = s.mul(s.mul(ax, s.splat(-0.5)), s.mul(tq, corr));
    // Every lane's z² within e^-80 (|x| < 12.6, nearly always): the short exponentials, whose
    // results are normal there.
    let (e, neg) = if s.all(s.le(s.splat(-TAIL), z2)) {
        (exp_mul_short(s, z2, corr), exp_mul_short(s, z2, neg_m))
    } else {
        (exp_mul(s, z2, corr), exp_mul(s, z2, neg_m))
    };
    // x >= 0: x·(1 - erfc/2). x < 0: x·erfc/2 = -|x|·t·Q·e^{-z²}/2, scale applied last.
    let pos = s.mul(x, s.fma(s.mul(tq, e), s.splat(-0.5), one));
    let r = s.select(negative, neg, pos);
    // Below -20 the result is -0; at -inf the ONNX formula's `-inf·0` is NaN.
    let r = s.select(s.lt(x, s.splat(-20.0)), s.mul(x, s.splat(0.0)), r);
    keep_nan(s, x, r)
}

/// Error-free product: `a·b = h + l`.
#[inline(always)]
fn two_prod<S: Simd>(s: S, a: S::V, b: S::V) -> (S::V, S::V) {
    let h = s.mul(a, b);
    (h, s.fma(a, b, s.neg(h)))
}

/// Error-free sum: `a + b = h + l`.
#[inline(always)]
fn two_sum<S: Simd>(s: S, a: S::V, b: S::V) -> (S::V, S::V) {
    let h = s.add(a, b);
    let bb = s.sub(h, a);
    let l = s.add(s.sub(a, s.sub(h, bb)), s.sub(b, bb));
    (h, l)
}

/// A constant as an f32 pair `hi + lo`.
const fn split(c: f64) -> (f32, f32) {
    let hi = c as f32;
    (hi, (c - hi as f64) as f32)
}

/// tanh-GELU as `x·sigmoid(2u)`, `2u = K·x·(1 + C·x²)`, `2u` in double-f32.
#[inline(always)]
pub fn gelu_tanh<S: Simd>(s: S, x: S::V) -> S::V {
    const K: (f32, f32) = split(2.0 * 0.797_884_560_802_865_4); // 2·√(2/π)
    const C: (f32, f32) = split(0.044_715);
    let xc = s.min(s.splat(20.0), s.max(s.splat(-20.0), x));
    let (qh, ql) = two_prod(s, xc, xc);
    let (ch, cl) = two_prod(s, s.splat(C.0), qh);
    let cl = s.fma(s.splat(C.0), ql, s.fma(s.splat(C.1), qh, cl));
    let (ih, il) = two_sum(s, s.splat(1.0), ch);
    let il = s.add(il, cl);
    let (kh, kl) = two_prod(s, s.splat(K.0), xc);
    let kl = s.fma(s.splat(K.1), xc, kl);
    let (wh, wl) = two_prod(s, kh, ih);
    let wl = s.fma(kh, il, s.fma(kl, ih, wl));
    let r = mul_sigmoid(s, x, wh, wl);
    // Below -20 the result is -0 (`x·e^{-600}`); at -inf the formula's `-inf·0` is NaN.
    let r = s.select(s.lt(x, s.splat(-20.0)), s.mul(x, s.splat(0.0)), r);
    keep_nan(s, x, r)
}

/// Below this |x|, sin and cos reduce in vector code.
pub const TRIG_VECTOR_LIMIT: f32 = 4096.0;

/// `(sin, cos)` of `x` for |x| < [`TRIG_VECTOR_LIMIT`] (other lanes are garbage; the loop sends
/// such blocks through f64).
#[inline(always)]
pub fn sin_cos<S: Simd>(s: S, x: S::V) -> (S::V, S::V) {
    // π/2 = C1 + C2 + C3 + O(2^-69); C1 has 12 bits, so j·C1 is exact for j < 2^12.
    const C1: f32 = 1.570_800_8;
    const C2: f32 = -4.454_455e-6;
    const C3: f32 = -1.651_399_6e-13;
    // Cephes sinf/cosf polynomials on [-π/4, π/4].
    const SP: [f32; 3] = [-1.666_665_5e-1, 8.332_161e-3, -1.951_529_6e-4];
    const CP: [f32; 3] = [4.166_664_6e-2, -1.388_731_6e-3, 2.443_315_7e-5];
    let j = s.round(s.mul(x, s.splat(std::f32::consts::FRAC_2_PI)));
    // r1 = x - j·C1 exactly (exact product, Sterbenz).
    let r1 = s.fma(j, s.splat(-C1), x);
    let (ph, pl) = two_prod(s, j, s.splat(C2));
    let (rh, rl) = two_sum(s, r1, s.neg(ph));
    let rl = s.sub(rl, s.fma(j, s.splat(C3), pl));
    let r = s.add(rh, rl);
    let rlo = s.sub(rl, s.sub(r, rh));
    let z = s.mul(r, r);
    // sin(r + rlo) ≈ sin r + rlo·cos r, cos(r + rlo) ≈ cos r - rlo·sin r (rlo ≈ ulp(r)).
    let sr = s.fma(s.mul(r, z), poly(s, z, &SP), r);
    let cr = s.fma(
        s.mul(z, z),
        poly(s, z, &CP),
        s.fma(z, s.splat(-0.5), s.splat(1.0)),
    );
    let sr = s.fma(rlo, cr, sr);
    let cr = s.fma(s.neg(rlo), r, cr);
    // Quadrant q = j mod 4: sin = [s, c, -s, -c][q], cos = [c, -s, -c, s][q].
    let q = s.sub(j, s.mul(s.floor(s.mul(j, s.splat(0.25))), s.splat(4.0)));
    let odd = s.eq(
        s.sub(q, s.mul(s.floor(s.mul(q, s.splat(0.5))), s.splat(2.0))),
        s.splat(1.0),
    );
    let sin = s.select(odd, cr, sr);
    let cos = s.select(odd, sr, cr);
    let sin_neg = s.le(s.splat(2.0), q);
    let cos_neg = s.or(s.eq(q, s.splat(1.0)), s.eq(q, s.splat(2.0)));
    let sin = s.select(sin_neg, s.neg(sin), sin);
    let cos = s.select(cos_neg, s.neg(cos), cos);
    (sin, cos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scalar;

    /// The short exponential forms give the general ones' bits wherever their callers take
    /// them: `exp_short` on [-87, 87] (`exp_normal` clamps at -87), `exp_mul_short` with the
    /// multipliers tanh, erf and GELU pass (near 1, and GELU's `-|x|·t·Q/2` up to about 6 in
    /// magnitude) on [-80, 80].
    fn short_forms_match<S: Simd>(s: S) {
        let lanes = S::LANES;
        let mut x = -87.0f32;
        let mut xs = Vec::new();
        while x <= 87.0 {
            xs.push(x);
            x += 0.000_731;
        }
        xs.extend([-87.0, 87.0, -80.0, 80.0, 0.0, -0.0, 40.0, -40.0]);
        for m in [1.0f32, 1.0 - 3e-8, 1.0 + 5e-8, -0.5, -3.7, 6.1, 1e-3] {
            for chunk in xs.chunks(lanes) {
                let mut buf = vec![0.0f32; lanes];
                buf[..chunk.len()].copy_from_slice(chunk);
                let mut got = vec![0.0f32; lanes];
                let mut want = vec![0.0f32; lanes];
                let mut short = vec![0.0f32; lanes];
                let mut general = vec![0.0f32; lanes];
                // SAFETY: every buffer holds LANES floats.
                unsafe {
                    let v = s.load_n(buf.as_ptr(), lanes, 0.0);
                    let mv = s.splat(m);
                    s.store_n(got.as_mut_ptr(), exp_mul_short(s, v, mv), lanes);
                    s.store_n(want.as_mut_ptr(), exp_mul(s, v, mv), lanes);
                    s.store_n(short.as_mut_ptr(), exp_short(s, v), lanes);
                    s.store_n(general.as_mut_ptr(), exp_mul(s, v, s.splat(1.0)), lanes);
                }
                for i in 0..chunk.len() {
                    // The multiplied form's callers stay within ±80.
                    if chunk[i].abs() <= SHORT_ABS_MAX {
                        assert_eq!(
                            got[i].to_bits(),
                            want[i].to_bits(),
                            "m·e^x, m {m}, x {}",
                            chunk[i]
                        );
                    }
                    assert_eq!(
                        short[i].to_bits(),
                        general[i].to_bits(),
                        "e^x, x {}",
                        chunk[i]
                    );
                }
            }
        }
    }

    #[test]
    fn short_exponentials_are_bit_exact() {
        short_forms_match(Scalar);
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(s) = crate::Avx2::new() {
                short_forms_match(s);
            }
            if let Some(s) = crate::Avx512::new() {
                short_forms_match(s);
            }
        }
    }
}
