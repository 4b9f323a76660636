//! Random generators: RandomNormal, RandomUniform, their *Like forms, Bernoulli and
//! Multinomial. A counter-based generator (SplitMix64 over key + element index) makes each
//! element independent of evaluation order, so a seeded op gives the same tensor on every run
//! and thread count; unseeded ops draw a fresh key per call. The streams are not numpy's, so
//! results cannot match reference values drawn from numpy.

use std::sync::atomic::{AtomicU64, Ordering};

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::util::{dtype_attr, put_f64};

/// One SplitMix64 step: a well-mixed 64-bit value of `x`.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A counter-based stream: value `i` depends only on the key and `i`.
#[derive(Debug, Clone, Copy)]
struct Stream {
    key: u64,
}

impl Stream {
    /// The stream of an optional `seed` attribute (a fresh key per call when absent).
    fn new(seed: Option<f32>) -> Self {
        static CALLS: AtomicU64 = AtomicU64::new(0);
        let key = match seed {
            Some(s) => mix(u64::from((s as f64 as f32).to_bits()) ^ 0x5EED),
            None => {
                let n = CALLS.fetch_add(1, Ordering::Relaxed);
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                mix(t ^ mix(n))
            }
        };
        Stream { key }
    }

    /// Uniform in [0, 1) (53 bits).
    fn uniform(&self, i: u64) -> f64 {
        (mix(self.key ^ mix(i)) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Standard normal (Box–Muller over values 2i and 2i+1).
    fn normal(&self, i: u64) -> f64 {
        let u1 = 1.0 - self.uniform(2 * i); // (0, 1]
        let u2 = self.uniform(2 * i + 1);
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Dist {
    Normal { mean: f64, scale: f64 },
    Uniform { low: f64, high: f64 },
}

struct Random {
    dist: Dist,
    seed: Option<f32>,
    /// Explicit output type (the *Like ops default to the input's).
    dtype: Option<DType>,
    /// The fixed shape (RandomNormal/RandomUniform); `None` for the *Like ops.
    shape: Option<Vec<usize>>,
}

fn create_random(init: &KernelInit<'_>, normal: bool, like: bool) -> KernelResult<Box<dyn Kernel>> {
    let dist = if normal {
        Dist::Normal {
            mean: init.float_or("mean", 0.0)? as f64,
            scale: init.float_or("scale", 1.0)? as f64,
        }
    } else {
        Dist::Uniform {
            low: init.float_or("low", 0.0)? as f64,
            high: init.float_or("high", 1.0)? as f64,
        }
    };
    let dtype = match init.int_opt("dtype")? {
        Some(code) => Some(dtype_attr("dtype", code)?),
        None if like => None,
        None => Some(DType::Float),
    };
    let shape = if like {
        None
    } else {
        let s = init
            .ints_opt("shape")?
            .ok_or_else(|| KernelError::attr("shape", "required but missing"))?;
        Some(
            s.iter()
                .map(|&d| usize::try_from(d))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| KernelError::attr("shape", format!("negative dim in {s:?}")))?,
        )
    };
    Ok(Box::new(Random {
        dist,
        seed: init.float_opt("seed")?,
        dtype,
        shape,
    }))
}

pub(crate) fn create_random_normal(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_random(init, true, false)
}

pub(crate) fn create_random_uniform(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_random(init, false, false)
}

pub(crate) fn create_random_normal_like(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_random(init, true, true)
}

pub(crate) fn create_random_uniform_like(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_random(init, false, true)
}

impl Kernel for Random {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (shape, dtype) = match &self.shape {
            Some(s) => (s.clone(), self.dtype.unwrap_or(DType::Float)),
            None => {
                let x = ctx.input(0)?;
                (x.shape().to_vec(), self.dtype.unwrap_or(x.dtype()))
            }
        };
        if !dtype.is_float() {
            return Err(KernelError::unsupported(format!("random {dtype} output")));
        }
        let n = rge_kernels::element_count(&shape)
            .ok_or_else(|| KernelError::invalid("shape overflows"))?;
        let s = Stream::new(self.seed);
        let out: Vec<f64> = (0..n as u64)
            .map(|i| match self.dist {
                Dist::Normal { mean, scale } => mean + scale * s.normal(i),
                Dist::Uniform { low, high } => low + (high - low) * s.uniform(i),
            })
            .collect();
        put_f64(ctx, 0, dtype, &shape, &out)
    }
}

struct Bernoulli {
    seed: Option<f32>,
    dtype: Option<DType>,
}

pub(crate) fn create_bernoulli(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Bernoulli {
        seed: init.float_opt("seed")?,
        dtype: init
            .int_opt("dtype")?
            .map(|c| dtype_attr("dtype", c))
            .transpose()?,
    }))
}

impl Kernel for Bernoulli {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let p = x.to_f64_vec()?;
        let dtype = self.dtype.unwrap_or(x.dtype());
        let s = Stream::new(self.seed);
        let out: Vec<f64> = p
            .iter()
            .enumerate()
            .map(|(i, &p)| if s.uniform(i as u64) < p { 1.0 } else { 0.0 })
            .collect();
        if dtype == DType::Bool {
            let o = ctx.output::<bool>(0, x.shape())?;
            for (o, &v) in o.iter_mut().zip(&out) {
                *o = v != 0.0;
            }
            return Ok(());
        }
        put_f64(ctx, 0, dtype, x.shape(), &out)
    }
}

struct Multinomial {
    seed: Option<f32>,
    dtype: DType,
    samples: usize,
}

pub(crate) fn create_multinomial(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let dtype = dtype_attr("dtype", init.int_or("dtype", 6)?)?;
    if dtype != DType::Int32 && dtype != DType::Int64 {
        return Err(KernelError::attr("dtype", "must be int32 or int64"));
    }
    let samples = init.int_or("sample_size", 1)?;
    let samples = usize::try_from(samples)
        .map_err(|_| KernelError::attr("sample_size", "must not be negative"))?;
    Ok(Box::new(Multinomial {
        seed: init.float_opt("seed")?,
        dtype,
        samples,
    }))
}

impl Kernel for Multinomial {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (batch, classes) = match x.shape() {
            [b, c] => (*b, *c),
            s => {
                return Err(KernelError::invalid(format!(
                    "input must be [batch, classes], got {s:?}"
                )))
            }
        };
        if classes == 0 && self.samples > 0 && batch > 0 {
            return Err(KernelError::invalid("no classes to sample from"));
        }
        let logits = x.to_f64_vec()?;
        let s = Stream::new(self.seed);
        let mut out = Vec::with_capacity(batch * self.samples);
        let mut cdf = vec![0.0; classes];
        for b in 0..batch {
            let row = &logits[b * classes..(b + 1) * classes];
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut acc = 0.0;
            for (c, &v) in cdf.iter_mut().zip(row) {
                acc += (v - m).exp();
                *c = acc;
            }
            for k in 0..self.samples {
                let u = s.uniform((b * self.samples + k) as u64) * acc;
                let idx = cdf
                    .partition_point(|&c| c <= u)
                    .min(classes.saturating_sub(1));
                out.push(idx as f64);
            }
        }
        put_f64(ctx, 0, self.dtype, &[batch, self.samples], &out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_streams_repeat_and_look_uniform() {
        let a = Stream::new(Some(3.0));
        let b = Stream::new(Some(3.0));
        assert_eq!(a.uniform(7), b.uniform(7));
        let n = 20000;
        let mean: f64 = (0..n).map(|i| a.uniform(i)).sum::<f64>() / n as f64;
        assert!((mean - 0.5).abs() < 0.02, "{mean}");
        let nm: f64 = (0..n).map(|i| a.normal(i)).sum::<f64>() / n as f64;
        assert!(nm.abs() < 0.05, "{nm}");
        assert!((0..n).all(|i| (0.0..1.0).contains(&a.uniform(i))));
    }
}
