//! Small pieces the com.microsoft kernels share: float inputs, last-dim broadcasting, the
//! fused activations.

use rge_kernels::{
    DType, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, TensorRef, Value,
};

/// Input `i` as f32 values; these kernels compute in float32 (what onnxruntime's CPU kernels
/// of these ops support).
pub(crate) fn f32s(ctx: &KernelCtx<'_>, i: usize) -> KernelResult<Vec<f32>> {
    floats(&ctx.input(i)?, i)
}

/// A tensor's f32 values, or an error naming input `i`'s type.
pub(crate) fn floats(t: &TensorRef<'_>, i: usize) -> KernelResult<Vec<f32>> {
    match t.dtype() {
        DType::Float => Ok(t.as_slice::<f32>()?.to_vec()),
        dt => Err(KernelError::unsupported(format!(
            "input {i} is {dt}; this kernel supports float32"
        ))),
    }
}

/// Optional input `i` as f32 values.
pub(crate) fn opt_f32s(ctx: &KernelCtx<'_>, i: usize) -> KernelResult<Option<Vec<f32>>> {
    match ctx.opt_input(i)? {
        Some(t) => floats(&t, i).map(Some),
        None => Ok(None),
    }
}

/// Checks that a per-channel vector (bias, gamma …) has `n` values (the input's last dim).
pub(crate) fn check_len(what: &str, v: &[f32], n: usize) -> KernelResult<()> {
    if v.len() != n {
        return Err(KernelError::invalid(format!(
            "{what} has {} values; the last dim of the input is {n}",
            v.len()
        )));
    }
    Ok(())
}

/// The last dim of a shape (1 for a scalar).
pub(crate) fn last_dim(shape: &[usize]) -> usize {
    shape.last().copied().unwrap_or(1)
}

/// Adds `bias` (one value per element of the last dim) to `x` in place.
pub(crate) fn add_last(x: &mut [f32], bias: &[f32]) {
    if bias.is_empty() {
        return;
    }
    for row in x.chunks_exact_mut(bias.len()) {
        for (v, b) in row.iter_mut().zip(bias) {
            *v += b;
        }
    }
}

/// Writes an f32 output.
pub(crate) fn put_f32(
    ctx: &mut KernelCtx<'_>,
    i: usize,
    shape: &[usize],
    v: Vec<f32>,
) -> KernelResult<()> {
    ctx.put(i, Tensor::from_vec(shape, v)?)
}

/// An owned f32 value.
pub(crate) fn value_f32(shape: &[usize], v: Vec<f32>) -> KernelResult<Value> {
    Ok(Value::Tensor(Tensor::from_vec(shape, v)?))
}

/// The activation of FusedConv / FusedGemm (onnxruntime's MLAS activations).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Activation {
    Identity,
    Relu,
    Tanh,
    Sigmoid,
    LeakyRelu(f32),
    Clip(f32, f32),
    HardSigmoid(f32, f32),
}

impl Activation {
    /// From the `activation` attribute and its parameters.
    pub(crate) fn parse(name: &str, params: &[f32]) -> KernelResult<Self> {
        let p = |i: usize, d: f32| params.get(i).copied().unwrap_or(d);
        Ok(match name {
            "" | "Identity" => Activation::Identity,
            "Relu" => Activation::Relu,
            "Tanh" => Activation::Tanh,
            "Sigmoid" => Activation::Sigmoid,
            "LeakyRelu" => Activation::LeakyRelu(p(0, 0.01)),
            "Clip" => Activation::Clip(p(0, f32::MIN), p(1, f32::MAX)),
            "HardSigmoid" => Activation::HardSigmoid(p(0, 0.2), p(1, 0.5)),
            other => {
                return Err(KernelError::attr(
                    "activation",
                    format!("unknown activation `{other}` (Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid)"),
                ))
            }
        })
    }

    /// From the node's `activation` attribute and the parameters in `params_attr`
    /// (`activation_params`) or in the FusedGemm style `activation_alpha`/`_beta`.
    pub(crate) fn from_init(init: &KernelInit<'_>) -> KernelResult<Self> {
        let name = init.str_or("activation", "")?;
        let params: Vec<f32> = match init.floats_opt("activation_params")? {
            Some(p) => p.to_vec(),
            None => {
                let alpha = init.float_opt("activation_alpha")?;
                let beta = init.float_opt("activation_beta")?;
                match (name, alpha, beta) {
                    (_, None, None) => vec![],
                    (_, a, b) => vec![a.unwrap_or(0.01), b.unwrap_or(0.5)],
                }
            }
        };
        Activation::parse(name, &params)
    }

    pub(crate) fn apply(self, x: &mut [f32]) {
        let f: fn(f32, f32, f32) -> f32 = match self {
            Activation::Identity => return,
            Activation::Relu => |v, _, _| v.max(0.0),
            Activation::Tanh => |v, _, _| v.tanh(),
            Activation::Sigmoid => |v, _, _| 1.0 / (1.0 + (-v).exp()),
            Activation::LeakyRelu(_) => |v, a, _| if v >= 0.0 { v } else { v * a },
            Activation::Clip(..) => |v, lo, hi| {
                // Not `clamp`: a model may give lo > hi, which must not panic.
                if v < lo {
                    lo
                } else if v > hi {
                    hi
                } else {
                    v
                }
            },
            Activation::HardSigmoid(..) => |v, a, b| (a * v + b).clamp(0.0, 1.0),
        };
        let (a, b) = match self {
            Activation::LeakyRelu(a) => (a, 0.0),
            Activation::Clip(lo, hi) => (lo, hi),
            Activation::HardSigmoid(a, b) => (a, b),
            _ => (0.0, 0.0),
        };
        for v in x {
            *v = f(*v, a, b);
        }
    }
}

/// Moves dims of a row-major tensor: `perm[i]` is the source dim of output dim `i`.
pub(crate) fn permute<T: Copy>(x: &[T], shape: &[usize], perm: &[usize]) -> (Vec<T>, Vec<usize>) {
    let rank = shape.len();
    let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let mut src_strides = vec![1usize; rank];
    for d in (0..rank.saturating_sub(1)).rev() {
        src_strides[d] = src_strides[d + 1] * shape[d + 1];
    }
    let strides: Vec<usize> = perm.iter().map(|&p| src_strides[p]).collect();
    let mut out = Vec::with_capacity(x.len());
    let mut idx = vec![0usize; rank];
    for _ in 0..x.len() {
        let off: usize = idx.iter().zip(&strides).map(|(i, s)| i * s).sum();
        out.push(x[off]);
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < out_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    (out, out_shape)
}
