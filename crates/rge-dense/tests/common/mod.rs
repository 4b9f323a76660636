//! Shared by the dense tests: f64 references for the GEMM tests (a naive GEMM with the epilogue,
//! and the activations), and the kernel cases compared with the `cpu` engine (`cases`).
#![allow(dead_code)]

pub mod cases;

use rge_dense::gemm::{Activation, Bias, Epilogue};

/// erfc in f64 to ~1e-12 relative: the Taylor series of erf below 2, a continued fraction
/// (Lentz) above.
pub fn erfc(x: f64) -> f64 {
    if x < 0.0 {
        return 2.0 - erfc(-x);
    }
    if x < 2.0 {
        // erf(x) = 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1))
        let (mut term, mut sum, x2) = (x, x, x * x);
        for n in 1..200 {
            term *= -x2 / n as f64;
            let t = term / (2 * n + 1) as f64;
            sum += t;
            if t.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        return 1.0 - sum * 2.0 / std::f64::consts::PI.sqrt();
    }
    // erfc(x) = e^{-x²}/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …)))))
    let tiny = 1e-300;
    let mut f = x;
    let (mut c, mut d) = (x, 0.0);
    for n in 1..500 {
        let a = n as f64 / 2.0;
        d = x + a * d;
        d = if d == 0.0 { tiny } else { 1.0 / d };
        c = x + a / c;
        if c == 0.0 {
            c = tiny;
        }
        let delta = c * d;
        f *= delta;
        if (delta - 1.0).abs() < 1e-16 {
            break;
        }
    }
    (-x * x).exp() / (f * std::f64::consts::PI.sqrt())
}

/// The activation in f64, with the parameters as the f32 the kernel gets.
pub fn act(a: &Activation, x: f64) -> f64 {
    let sig = |x: f64| 1.0 / (1.0 + (-x).exp());
    match *a {
        Activation::None => x,
        Activation::Relu => x.max(0.0),
        Activation::Clip { min, max } => x.max(min as f64).min(max as f64),
        Activation::LeakyRelu { alpha } => {
            if x < 0.0 {
                alpha as f64 * x
            } else {
                x
            }
        }
        Activation::Sigmoid => sig(x),
        Activation::HardSigmoid { alpha, beta } => (alpha as f64 * x + beta as f64).clamp(0.0, 1.0),
        Activation::HardSwish => x * ((1.0f32 / 6.0) as f64 * x + 0.5).clamp(0.0, 1.0),
        Activation::Swish { alpha } => x * sig(alpha as f64 * x),
        Activation::Gelu => x * 0.5 * erfc(-x / std::f64::consts::SQRT_2),
        Activation::GeluTanh => {
            // 0.5·x·(1 + tanh(u)) = x·sigmoid(2u), without f64's own cancellation at x << 0.
            let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
            x * sig(2.0 * u)
        }
        Activation::Tanh => x.tanh(),
    }
}

/// A bound on |act'|, to carry the GEMM's error through the activation.
pub fn slope(a: &Activation) -> f64 {
    match *a {
        Activation::LeakyRelu { alpha } => (alpha.abs() as f64).max(1.0),
        Activation::HardSigmoid { alpha, .. } => alpha.abs() as f64,
        Activation::Swish { alpha } => 1.1 * (alpha.abs() as f64).max(1.0),
        Activation::Gelu | Activation::GeluTanh => 1.2,
        Activation::HardSwish => 1.5,
        _ => 1.0,
    }
}

/// One GEMM's operands as stored, for the reference.
pub struct Case<'a> {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub alpha: f32,
    pub beta: f32,
    pub a: &'a [f32],
    pub lda: usize,
    pub ta: bool,
    pub b: &'a [f32],
    pub ldb: usize,
    pub tb: bool,
    /// C before the call.
    pub c0: &'a [f32],
    pub ldc: usize,
    pub epi: Epilogue<'a>,
}

impl Case<'_> {
    pub fn a_at(&self, i: usize, p: usize) -> f64 {
        (if self.ta {
            self.a[p * self.lda + i]
        } else {
            self.a[i * self.lda + p]
        }) as f64
    }
    pub fn b_at(&self, p: usize, j: usize) -> f64 {
        (if self.tb {
            self.b[j * self.ldb + p]
        } else {
            self.b[p * self.ldb + j]
        }) as f64
    }

    /// Checks `c` (after the call) element by element: the f64 result, within `tol` of the
    /// magnitude of everything summed (|alpha|·Σ|a·b| + |beta·c| + |bias| + |residual|) carried
    /// through the activation's slope, plus 1e-6 of the result for the activation itself.
    /// Elements outside the m × n window must be untouched.
    pub fn check(&self, c: &[f32], tol: f64) -> Result<(), String> {
        for i in 0..self.m {
            for j in 0..self.n {
                let (mut dot, mut mag) = (0.0f64, 0.0f64);
                for p in 0..self.k {
                    let t = self.a_at(i, p) * self.b_at(p, j);
                    dot += t;
                    mag += t.abs();
                }
                let old = self.c0[i * self.ldc + j] as f64;
                let mut v = if self.alpha == 0.0 {
                    0.0
                } else {
                    self.alpha as f64 * dot
                };
                let mut scale = self.alpha.abs() as f64 * mag;
                if self.beta != 0.0 {
                    v += self.beta as f64 * old;
                    scale += (self.beta as f64 * old).abs();
                }
                let bias = match self.epi.bias {
                    Bias::None => 0.0,
                    Bias::PerColumn(b) => b[j] as f64,
                    Bias::PerRow(b) => b[i] as f64,
                };
                let res = self
                    .epi
                    .residual
                    .map_or(0.0, |r| r.data[i * r.ld + j] as f64);
                v += bias + res;
                scale += bias.abs() + res.abs();
                let want = act(&self.epi.activation, v);
                let got = c[i * self.ldc + j] as f64;
                let allowed = tol * scale * slope(&self.epi.activation) + 2e-6 * want.abs() + 1e-30;
                // NaN where a number is wanted fails too.
                if (got - want).abs().is_nan() || (got - want).abs() > allowed {
                    return Err(format!(
                        "C[{i},{j}] = {got}, want {want} (scale {scale:.3e}, allowed {allowed:.3e})"
                    ));
                }
            }
            for j in self.n..self.ldc {
                if i * self.ldc + j < c.len()
                    && c[i * self.ldc + j].to_bits() != self.c0[i * self.ldc + j].to_bits()
                {
                    return Err(format!("C[{i},{j}] outside the output changed"));
                }
            }
        }
        Ok(())
    }
}

/// Deterministic pseudo-random values in [-1, 1).
pub fn rand_vec(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}
