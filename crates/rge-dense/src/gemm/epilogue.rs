//! The fused epilogue: what happens to each output tile while it is still in registers, after
//! `alpha·A·B + beta·C`: `y = act(v + bias + residual)`.
//!
//! The activations are written once over [`Simd`] and so vectorized on every ISA. The
//! transcendentals keep a relative error within 1e-6 of f64 math wherever the result is a normal
//! float (tested by a dense sweep): `exp` by Cody–Waite range reduction, a degree-7 polynomial
//! and a two-step `2^n` scale (so denormal results round once); `tanh` by an odd polynomial near
//! 0 and `1 - 2/(e^{2|x|}+1)` beyond; erf-GELU from `erfc(z) = t·e^{-z²}·Q(t)`, `t = 1/(1+z/2)`
//! (the Numerical Recipes form, with our own least-squares `Q`), which has no cancellation
//! for negative inputs; tanh-GELU as `x·sigmoid(2u)` with `2u` carried in double-f32 so the
//! large negative tail keeps its relative accuracy.

use super::simd::Simd;

/// The activation applied last in the epilogue (ONNX semantics; NaN inputs give NaN).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Activation {
    /// Identity.
    #[default]
    None,
    /// `max(x, 0)`.
    Relu,
    /// `min(max(x, min), max)`.
    Clip { min: f32, max: f32 },
    /// `x` if `x >= 0` else `alpha·x`.
    LeakyRelu { alpha: f32 },
    /// `1 / (1 + e^{-x})`.
    Sigmoid,
    /// `max(0, min(1, alpha·x + beta))`.
    HardSigmoid { alpha: f32, beta: f32 },
    /// `x · max(0, min(1, x/6 + 1/2))`.
    HardSwish,
    /// `x · sigmoid(alpha·x)`; SiLU is `alpha = 1` ([`Activation::SILU`]).
    Swish { alpha: f32 },
    /// `x/2 · (1 + erf(x/√2))`.
    Gelu,
    /// `x/2 · (1 + tanh(√(2/π)·(x + 0.044715·x³)))`.
    GeluTanh,
    /// `tanh(x)`.
    Tanh,
}

impl Activation {
    /// SiLU: `x · sigmoid(x)`.
    pub const SILU: Activation = Activation::Swish { alpha: 1.0 };
}

/// A bias added to every output element before the activation.
#[derive(Clone, Copy, Debug, Default)]
pub enum Bias<'a> {
    /// No bias.
    #[default]
    None,
    /// One value per output column (`n` values): MatMul/Gemm style.
    PerColumn(&'a [f32]),
    /// One value per output row (`m` values): conv-as-GEMM style, rows being output channels.
    PerRow(&'a [f32]),
}

/// A same-shape `m × n` matrix added before the activation (a skip connection).
#[derive(Clone, Copy, Debug)]
pub struct Residual<'a> {
    /// Row-major data; element (i, j) at `data[i·ld + j]`.
    pub data: &'a [f32],
    /// Leading dimension (>= n).
    pub ld: usize,
}

/// The fused epilogue: `y = activation(v + bias + residual)` for each output element `v`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Epilogue<'a> {
    pub bias: Bias<'a>,
    pub residual: Option<Residual<'a>>,
    pub activation: Activation,
}

impl<'a> Epilogue<'a> {
    /// No epilogue: C is just `alpha·A·B + beta·C`.
    pub const NONE: Epilogue<'static> = Epilogue {
        bias: Bias::None,
        residual: None,
        activation: Activation::None,
    };

    /// Only an activation.
    pub fn activation(activation: Activation) -> Self {
        Epilogue {
            activation,
            ..Epilogue::default()
        }
    }

    /// With this bias.
    pub fn with_bias(self, bias: Bias<'a>) -> Self {
        Epilogue { bias, ..self }
    }

    /// With this residual.
    pub fn with_residual(self, data: &'a [f32], ld: usize) -> Self {
        Epilogue {
            residual: Some(Residual { data, ld }),
            ..self
        }
    }

    /// Whether it changes nothing.
    pub fn is_identity(&self) -> bool {
        matches!(self.bias, Bias::None)
            && self.residual.is_none()
            && self.activation == Activation::None
    }
}

/// A validated epilogue as the microkernel reads it (operands known to cover C).
pub(crate) struct EpiCtx<'a> {
    pub epi: Epilogue<'a>,
}

impl EpiCtx<'_> {
    /// The epilogue of the `n` output elements from (`row`, `col`), held in `x`.
    ///
    /// # Safety
    /// (`row`, `col..col+n`) must lie inside the m × n output the context was validated for.
    #[inline(always)]
    pub(crate) unsafe fn apply<S: Simd>(
        &self,
        s: S,
        mut x: S::V,
        row: usize,
        col: usize,
        n: usize,
    ) -> S::V {
        let load = |p: *const f32| {
            // SAFETY: the row has at least col + n elements (contract, validated operands).
            unsafe {
                if n == S::LANES {
                    s.load(p)
                } else {
                    s.load_n(p, n)
                }
            }
        };
        match self.epi.bias {
            Bias::None => {}
            // SAFETY: the bias holds n (>= col + n) values (validated).
            Bias::PerColumn(b) => x = s.add(x, load(unsafe { b.as_ptr().add(col) })),
            // SAFETY: the bias holds m (> row) values (validated).
            Bias::PerRow(b) => x = s.add(x, s.splat(unsafe { *b.as_ptr().add(row) })),
        }
        if let Some(r) = self.epi.residual {
            // SAFETY: the residual covers m rows of n at stride ld (validated).
            x = s.add(x, load(unsafe { r.data.as_ptr().add(row * r.ld + col) }));
        }
        activation(s, &self.epi.activation, x)
    }
}

/// `act(x)` per lane.
#[inline(always)]
pub(crate) fn activation<S: Simd>(s: S, act: &Activation, x: S::V) -> S::V {
    match *act {
        Activation::None => x,
        Activation::Relu => s.max(s.splat(0.0), x),
        Activation::Clip { min, max } => s.min(s.splat(max), s.max(s.splat(min), x)),
        Activation::LeakyRelu { alpha } => {
            s.select(s.lt(x, s.splat(0.0)), s.mul(x, s.splat(alpha)), x)
        }
        Activation::Sigmoid => sigmoid(s, x),
        Activation::HardSigmoid { alpha, beta } => hard_sigmoid(s, x, alpha, beta),
        Activation::HardSwish => s.mul(x, hard_sigmoid(s, x, 1.0 / 6.0, 0.5)),
        Activation::Swish { alpha } => {
            // αx = h + l exactly, so its rounding does not reach the exponential.
            let (h, l) = two_prod(s, s.splat(alpha), x);
            mul_sigmoid(s, x, h, l)
        }
        Activation::Gelu => gelu(s, x),
        Activation::GeluTanh => gelu_tanh(s, x),
        Activation::Tanh => tanh(s, x),
    }
}

#[inline(always)]
fn hard_sigmoid<S: Simd>(s: S, x: S::V, alpha: f32, beta: f32) -> S::V {
    let v = s.fma(s.splat(alpha), x, s.splat(beta));
    s.max(s.splat(0.0), s.min(s.splat(1.0), v))
}

/// Horner evaluation of `c[0] + c[1]·x + …`.
#[inline(always)]
fn poly<S: Simd, const N: usize>(s: S, x: S::V, c: &[f32; N]) -> S::V {
    let mut p = s.splat(c[N - 1]);
    for &ci in c[..N - 1].iter().rev() {
        p = s.mul_add(p, x, s.splat(ci));
    }
    p
}

/// `e^x`.
#[inline(always)]
pub(crate) fn exp<S: Simd>(s: S, x: S::V) -> S::V {
    exp_mul(s, x, s.splat(1.0))
}

/// `m·e^x`, rounded once at the end even where the result is denormal (`m` a normal float).
#[inline(always)]
fn exp_mul<S: Simd>(s: S, x: S::V, m: S::V) -> S::V {
    // 1 + r + r²·P(r) on |r| <= ln2/2 (least squares, relative error 6e-11 in exact arithmetic).
    const P: [f32; 6] = [
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
    // Below -110 the result rounds to 0 (for |m| < 2^40); above 89, 2^n overflows to inf.
    let xc = s.min(s.splat(89.0), s.max(s.splat(-110.0), x));
    let n = s.round(s.mul(xc, s.splat(LOG2E)));
    let r = s.fma(n, s.splat(-LN2_HI), xc);
    let r = s.fma(n, s.splat(-LN2_LO), r);
    let e = s.mul_add(s.mul(r, r), poly(s, r, &P), s.add(r, s.splat(1.0)));
    // 2^n in two factors so every n in [-159, 128] is representable.
    let n1 = s.round(s.mul(n, s.splat(0.5)));
    let n2 = s.sub(n, n1);
    s.mul(s.mul(s.mul(e, m), s.pow2i(n1)), s.pow2i(n2))
}

/// `e^(h + l)` for a small correction `l` (|l| <= ulp(h)): `e^h·(1 + l)`.
#[inline(always)]
fn exp_hl<S: Simd>(s: S, h: S::V, l: S::V) -> S::V {
    exp_mul(s, h, s.add(s.splat(1.0), l))
}

/// `m·sigmoid(h + l)` for a small correction `l`, without overflow: `m/(1 + e^{-w})` for
/// `w >= 0`, `m·e^{w}/(1 + e^{w})` below (`m·e^{w}` rounded once, so results near the
/// denormal range keep their precision).
#[inline(always)]
fn mul_sigmoid<S: Simd>(s: S, m: S::V, h: S::V, l: S::V) -> S::V {
    let zero = s.splat(0.0);
    let neg = s.lt(h, zero);
    // -|w| = nh + nl
    let nh = s.sub(zero, s.abs(h));
    let nl = s.select(neg, l, s.sub(zero, l));
    let e = exp_hl(s, nh, nl);
    let den = s.add(s.splat(1.0), e);
    let num = s.select(neg, exp_mul(s, nh, s.mul(m, s.add(s.splat(1.0), nl))), m);
    s.div(num, den)
}

#[inline(always)]
fn sigmoid<S: Simd>(s: S, x: S::V) -> S::V {
    mul_sigmoid(s, s.splat(1.0), x, s.splat(0.0))
}

#[inline(always)]
fn tanh<S: Simd>(s: S, x: S::V) -> S::V {
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
    let small = s.mul_add(s.mul(x, z), poly(s, z, &P), x);
    let e = exp(s, s.add(ax, ax));
    let big = s.sub(s.splat(1.0), s.div(s.splat(2.0), s.add(e, s.splat(1.0))));
    let big = s.select(s.lt(x, s.splat(0.0)), s.sub(s.splat(0.0), big), big);
    s.select(s.lt(ax, s.splat(0.625)), small, big)
}

/// erf-GELU: `x·Φ(x)`, `Φ(x) = erfc(-x/√2)/2`.
#[inline(always)]
fn gelu<S: Simd>(s: S, x: S::V) -> S::V {
    // erfc(z)·e^{z²}/t as a polynomial in t = 1/(1 + z/2) on t in [0.08, 1] (z <= 23),
    // least squares on the relative error (1.5e-7 evaluated in f32).
    const Q: [f32; 11] = [
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
    // Φ is exactly 0 or 1 in f32 beyond |x| = 20; clamping keeps x² finite.
    let ax = s.min(s.splat(20.0), s.abs(x));
    let t = s.div(
        s.splat(1.0),
        s.mul_add(
            ax,
            s.splat(0.5 * std::f32::consts::FRAC_1_SQRT_2),
            s.splat(1.0),
        ),
    );
    // z² = x²/2 exactly as h + l, so e^{-z²} keeps full relative precision in the tail.
    let h = s.mul(ax, ax);
    let l = s.fma(ax, ax, s.sub(s.splat(0.0), h));
    let tq = s.mul(t, poly(s, t, &Q));
    let corr = s.mul_add(l, s.splat(-0.5), s.splat(1.0));
    let e = exp_mul(s, s.mul(h, s.splat(-0.5)), corr);
    // x >= 0: x·(1 - erfc/2). x < 0: x·erfc/2 = -|x|·t·Q·e^{-z²}/2 with the exponential's
    // scale applied last, so a result near the denormal range is rounded only once.
    let pos = s.mul(x, s.mul_add(s.mul(tq, e), s.splat(-0.5), s.splat(1.0)));
    let neg = exp_mul(
        s,
        s.mul(h, s.splat(-0.5)),
        s.mul(s.mul(ax, s.splat(-0.5)), s.mul(tq, corr)),
    );
    s.select(s.lt(x, s.splat(0.0)), neg, pos)
}

/// Error-free product: `a·b = h + l`.
#[inline(always)]
fn two_prod<S: Simd>(s: S, a: S::V, b: S::V) -> (S::V, S::V) {
    let h = s.mul(a, b);
    (h, s.fma(a, b, s.sub(s.splat(0.0), h)))
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

/// tanh-GELU as `x·sigmoid(2u)`, `2u = K·x·(1 + C·x²)` (the same function without the
/// cancellation of `1 + tanh` for negative x). `2u` is formed in double-f32 because for x ≈ -5
/// the exponent is ≈ -17 and f32 rounding alone would cost several 1e-6 of relative error.
#[inline(always)]
fn gelu_tanh<S: Simd>(s: S, x: S::V) -> S::V {
    const K: (f32, f32) = split(2.0 * 0.797_884_560_802_865_4); // 2·√(2/π)
    const C: (f32, f32) = split(0.044_715);
    // Beyond |x| = 20 the sigmoid is exactly 0 or 1 in f32; clamping keeps x³ finite.
    let xc = s.min(s.splat(20.0), s.max(s.splat(-20.0), x));
    let (qh, ql) = two_prod(s, xc, xc);
    let (ch, cl) = two_prod(s, s.splat(C.0), qh);
    let cl = s.mul_add(s.splat(C.0), ql, s.mul_add(s.splat(C.1), qh, cl));
    let (ih, il) = two_sum(s, s.splat(1.0), ch);
    let il = s.add(il, cl);
    let (kh, kl) = two_prod(s, s.splat(K.0), xc);
    let kl = s.mul_add(s.splat(K.1), xc, kl);
    let (wh, wl) = two_prod(s, kh, ih);
    let wl = s.mul_add(kh, il, s.mul_add(kl, ih, wl));
    mul_sigmoid(s, x, wh, wl)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm::simd::scalar::Scalar;

    /// The largest relative error of `exp` over [-87, 88] (normal results) against f64.
    fn exp_err<S: Simd>(s: S) -> f64 {
        let mut worst = 0.0f64;
        let mut buf = vec![0.0f32; S::LANES];
        let mut i = 0usize;
        loop {
            let x0 = -87.0 + i as f32 * 1e-3;
            if x0 > 88.0 {
                break worst;
            }
            for (l, v) in buf.iter_mut().enumerate() {
                *v = x0 + l as f32 * 1e-4;
            }
            // SAFETY: `buf` holds LANES floats.
            let y = unsafe {
                let y = exp(s, s.load(buf.as_ptr()));
                let mut out = vec![0.0f32; S::LANES];
                s.store(out.as_mut_ptr(), y);
                out
            };
            for (x, y) in buf.iter().zip(&y) {
                let want = (*x as f64).exp();
                worst = worst.max((*y as f64 - want).abs() / want);
            }
            i += 1;
        }
    }

    #[test]
    fn exp_within_1e6_relative() {
        assert!(exp_err(Scalar) <= 1e-6, "scalar {}", exp_err(Scalar));
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(s) = crate::gemm::simd::avx2::Avx2::new() {
                assert!(exp_err(s) <= 1e-6, "avx2 {}", exp_err(s));
            }
            if let Some(s) = crate::gemm::simd::avx512::Avx512::new() {
                assert!(exp_err(s) <= 1e-6, "avx512 {}", exp_err(s));
            }
        }
    }
}
