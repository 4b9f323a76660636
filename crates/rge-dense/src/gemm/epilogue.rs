//! The fused epilogue: what happens to each output tile while it is still in registers, after
//! `alpha·A·B + beta·C`: `y = act(v + bias + residual)`.
//!
//! The activations are written once over [`Simd`] and so vectorized on every ISA. The
//! transcendentals are the shared ones of `rge_simd::math` (the vector engine's too), each
//! within a few ulp of f64 math wherever the result is a normal float (the vector engine's
//! sweep over the f32 range, `docs/simd.md`).

use rge_simd::math;

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

    /// `(lo, hi)` with `activation(x) = min(hi, max(lo, x))`, for the activations that are a
    /// clamp (NaN stays NaN through both): none, Relu and Clip.
    pub fn clamp_bounds(&self) -> Option<(f32, f32)> {
        match *self {
            Activation::None => Some((f32::NEG_INFINITY, f32::INFINITY)),
            Activation::Relu => Some((0.0, f32::INFINITY)),
            Activation::Clip { min, max } => Some((min, max)),
            _ => None,
        }
    }
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

impl<'a> EpiCtx<'a> {
    /// The bias and the clamp bounds (`None`: no activation) when the epilogue is only those:
    /// no residual, an activation that is a clamp or none.
    #[inline(always)]
    pub(crate) fn bias_and_clamp(&self) -> Option<(Bias<'a>, Option<(f32, f32)>)> {
        if self.epi.residual.is_some() {
            return None;
        }
        let clamp = match self.epi.activation {
            Activation::None => None,
            a => Some(a.clamp_bounds()?),
        };
        Some((self.epi.bias, clamp))
    }

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
                    s.load_n(p, n, 0.0)
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
        Activation::Sigmoid => math::sigmoid(s, x),
        Activation::HardSigmoid { alpha, beta } => hard_sigmoid(s, x, alpha, beta),
        Activation::HardSwish => s.mul(x, hard_sigmoid(s, x, 1.0 / 6.0, 0.5)),
        Activation::Swish { alpha } => math::swish(s, x, alpha),
        Activation::Gelu => math::gelu(s, x),
        Activation::GeluTanh => math::gelu_tanh(s, x),
        Activation::Tanh => math::tanh(s, x),
    }
}

#[inline(always)]
fn hard_sigmoid<S: Simd>(s: S, x: S::V, alpha: f32, beta: f32) -> S::V {
    let v = s.fma(s.splat(alpha), x, s.splat(beta));
    s.max(s.splat(0.0), s.min(s.splat(1.0), v))
}
