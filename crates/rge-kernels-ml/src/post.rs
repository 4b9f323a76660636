//! Score post-transforms (NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO, PROBIT) and the binary
//! two-column scores, as onnxruntime writes them.

use rge_kernels::{KernelError, KernelResult};

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Post {
    None,
    Logistic,
    Softmax,
    SoftmaxZero,
    Probit,
}

impl Post {
    pub(crate) fn parse(s: &str) -> KernelResult<Self> {
        Ok(match s {
            "NONE" => Post::None,
            "LOGISTIC" => Post::Logistic,
            "SOFTMAX" => Post::Softmax,
            "SOFTMAX_ZERO" => Post::SoftmaxZero,
            "PROBIT" => Post::Probit,
            other => {
                return Err(KernelError::attr(
                    "post_transform",
                    format!("`{other}` is not NONE, LOGISTIC, SOFTMAX, SOFTMAX_ZERO or PROBIT"),
                ))
            }
        })
    }

    /// Transforms one row of two or more scores.
    pub(crate) fn apply_row(self, row: &mut [f32]) {
        match self {
            Post::None => {}
            Post::Logistic => row.iter_mut().for_each(|v| *v = logistic(*v)),
            Post::Probit => row.iter_mut().for_each(|v| *v = probit(*v)),
            Post::Softmax | Post::SoftmaxZero => {
                let zero = self == Post::SoftmaxZero;
                let max = row.iter().copied().fold(f32::MIN, f32::max);
                let mut sum = 0.0;
                for v in row.iter_mut() {
                    if zero && v.abs() <= 1e-7 {
                        *v *= (-max).exp();
                    } else {
                        *v = (*v - max).exp();
                        sum += *v;
                    }
                }
                row.iter_mut().for_each(|v| *v /= sum);
            }
        }
    }
}

pub(crate) fn logistic(v: f32) -> f32 {
    let s = 1.0 / (1.0 + (-v.abs()).exp());
    if v < 0.0 {
        1.0 - s
    } else {
        s
    }
}

/// onnxruntime's inverse-erf approximation, for PROBIT.
fn erf_inv(x: f32) -> f32 {
    let sgn = if x < 0.0 { -1.0 } else { 1.0 };
    let x = (1.0 - x) * (1.0 + x);
    let log = x.ln();
    let v = 2.0 / (std::f32::consts::PI * 0.147) + 0.5 * log;
    let v2 = 1.0 / 0.147 * log;
    sgn * (-v + (v * v - v2).sqrt()).sqrt()
}

pub(crate) fn probit(v: f32) -> f32 {
    std::f32::consts::SQRT_2 * erf_inv(2.0 * v - 1.0)
}

/// How a single binary score becomes two columns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SecondClass {
    /// (1 - s, s): the score is a probability.
    Complement,
    /// (-s, s), or (logistic(-s), logistic(s)) under LOGISTIC: the score is a margin.
    Mirror,
}

/// The two columns of a binary score `s` (PROBIT transforms `s` alone into one column).
pub(crate) fn binary_scores(s: f32, post: Post, second: SecondClass) -> [f32; 2] {
    match (second, post) {
        (SecondClass::Complement, _) => [1.0 - s, s],
        (SecondClass::Mirror, Post::Logistic) => [logistic(-s), logistic(s)],
        (SecondClass::Mirror, _) => [-s, s],
    }
}
