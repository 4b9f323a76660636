//! The rng engine's kernels. Each keeps its [`StreamKey`] (seed, or the node's name for an
//! unseeded op) and draws element `i` from stream element `i`, in parallel chunks when the
//! call may use several threads — the values never depend on the split.

use rayon::prelude::*;
use rge_kernels::{
    bf16, f16, DType, Elem, Kernel, KernelCtx, KernelError, KernelInit, KernelResult,
};

use crate::seed::seed_attr;
use crate::stream::{Stream, StreamKey};

/// An output element written from an f64.
pub trait Out: Elem {
    fn from_f64(v: f64) -> Self;
    fn to_f64(self) -> f64;
    /// The next representable value toward −∞ (floats; integers stay).
    fn step_down(self) -> Self {
        self
    }
}

macro_rules! out_int {
    ($($t:ty),*) => {$(impl Out for $t {
        fn from_f64(v: f64) -> Self { v as $t }
        fn to_f64(self) -> f64 { self as f64 }
    })*};
}
out_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl Out for bool {
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn to_f64(self) -> f64 {
        f64::from(u8::from(self))
    }
}

/// `x` (finite) one step toward −∞ by its bits: ±0 steps to the smallest negative subnormal.
macro_rules! step_bits {
    ($T:ty, $x:expr, $neg:expr) => {{
        let b = $x.to_bits();
        if b & !$neg == 0 {
            <$T>::from_bits($neg | 1)
        } else if b & $neg == 0 {
            <$T>::from_bits(b - 1)
        } else {
            <$T>::from_bits(b + 1)
        }
    }};
}

impl Out for f32 {
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn step_down(self) -> Self {
        step_bits!(f32, self, 0x8000_0000u32)
    }
}

impl Out for f64 {
    fn from_f64(v: f64) -> Self {
        v
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn step_down(self) -> Self {
        step_bits!(f64, self, 1u64 << 63)
    }
}

impl Out for f16 {
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn step_down(self) -> Self {
        step_bits!(f16, self, 0x8000u16)
    }
}

impl Out for bf16 {
    fn from_f64(v: f64) -> Self {
        bf16::from_f64(v)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn step_down(self) -> Self {
        step_bits!(bf16, self, 0x8000u16)
    }
}

/// Elements per parallel chunk.
const CHUNK: usize = 1 << 14;

/// `out[i] = f(i)` for every i, split over the pool's threads when `threads > 1`.
pub fn fill<T: Out>(out: &mut [T], threads: usize, f: impl Fn(u64) -> T + Sync) {
    if threads > 1 && out.len() >= 2 * CHUNK {
        out.par_chunks_mut(CHUNK).enumerate().for_each(|(c, ch)| {
            let base = (c * CHUNK) as u64;
            for (j, o) in ch.iter_mut().enumerate() {
                *o = f(base + j as u64);
            }
        });
    } else {
        for (i, o) in out.iter_mut().enumerate() {
            *o = f(i as u64);
        }
    }
}

fn dtype_attr(init: &KernelInit<'_>, name: &str) -> KernelResult<Option<DType>> {
    init.int_opt(name)?
        .map(|code| {
            i32::try_from(code)
                .ok()
                .and_then(DType::from_onnx)
                .ok_or_else(|| KernelError::attr(name, format!("{code} is not a data type")))
        })
        .transpose()
}

fn shape_attr(init: &KernelInit<'_>) -> KernelResult<Vec<usize>> {
    let s = init
        .ints_opt("shape")?
        .ok_or_else(|| KernelError::attr("shape", "required but missing"))?;
    s.iter()
        .map(|&d| usize::try_from(d))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| KernelError::attr("shape", format!("negative dim in {s:?}")))
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Dist {
    Normal { mean: f64, scale: f64 },
    Uniform { low: f64, high: f64 },
}

/// RandomNormal, RandomUniform, RandomNormalLike, RandomUniformLike.
pub struct Random {
    dist: Dist,
    key: StreamKey,
    /// The output type (`None`: the Like input's).
    dtype: Option<DType>,
    /// The fixed shape; `None` for the Like ops.
    shape: Option<Vec<usize>>,
}

fn create_random(init: &KernelInit<'_>, normal: bool, like: bool) -> KernelResult<Box<dyn Kernel>> {
    let dist = if normal {
        let scale = f64::from(init.float_or("scale", 1.0)?);
        let mean = f64::from(init.float_or("mean", 0.0)?);
        if !scale.is_finite() || !mean.is_finite() {
            return Err(KernelError::attr("scale", "mean and scale must be finite"));
        }
        Dist::Normal { mean, scale }
    } else {
        let low = f64::from(init.float_or("low", 0.0)?);
        let high = f64::from(init.float_or("high", 1.0)?);
        if !(low.is_finite() && high.is_finite() && low <= high) {
            return Err(KernelError::attr(
                "high",
                format!("the range [{low}, {high}) is not a finite interval"),
            ));
        }
        Dist::Uniform { low, high }
    };
    let dtype = match dtype_attr(init, "dtype")? {
        Some(t) => Some(t),
        None if like => None,
        None => Some(DType::Float),
    };
    if let Some(t) = dtype {
        if !t.is_float() {
            return Err(KernelError::attr(
                "dtype",
                format!("{t} is not a float type"),
            ));
        }
    }
    Ok(Box::new(Random {
        dist,
        key: StreamKey::new(seed_attr(init.attrs)?, init.node_name),
        dtype,
        shape: if like { None } else { Some(shape_attr(init)?) },
    }))
}

pub fn create_random_normal(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_random(init, true, false)
}
pub fn create_random_uniform(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_random(init, false, false)
}
pub fn create_random_normal_like(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_random(init, true, true)
}
pub fn create_random_uniform_like(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_random(init, false, true)
}

impl Random {
    fn typed<T: Out>(&self, ctx: &mut KernelCtx<'_>, shape: &[usize]) -> KernelResult<()> {
        let s = self.key.stream(ctx.run_key());
        let threads = ctx.threads();
        let out = ctx.output::<T>(0, shape)?;
        match self.dist {
            Dist::Normal { mean, scale } => {
                fill(out, threads, |i| T::from_f64(mean + scale * s.normal(i)))
            }
            Dist::Uniform { low, high } => fill(out, threads, |i| {
                let v = T::from_f64(low + (high - low) * s.uniform(i));
                // Rounding to a narrow type may land on `high`: the range is [low, high).
                if v.to_f64() >= high && high > low {
                    v.step_down()
                } else {
                    v
                }
            }),
        }
        Ok(())
    }
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
        rge_kernels::element_count(&shape)
            .ok_or_else(|| KernelError::invalid(format!("shape {shape:?} overflows")))?;
        rge_kernels::dispatch_float!(dtype, T => self.typed::<T>(ctx, &shape))
    }
}

/// Bernoulli: `y[i] = u[i] < p[i]`.
pub struct Bernoulli {
    key: StreamKey,
    dtype: Option<DType>,
}

pub fn create_bernoulli(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Bernoulli {
        key: StreamKey::new(seed_attr(init.attrs)?, init.node_name),
        dtype: dtype_attr(init, "dtype")?,
    }))
}

impl Bernoulli {
    fn typed<T: Out>(
        &self,
        ctx: &mut KernelCtx<'_>,
        p: &[f64],
        shape: &[usize],
    ) -> KernelResult<()> {
        if let Some(i) = p.iter().position(|v| !(0.0..=1.0).contains(v)) {
            return Err(KernelError::invalid(format!(
                "probability {} at element {i} is outside [0, 1]",
                p[i]
            )));
        }
        let s = self.key.stream(ctx.run_key());
        let threads = ctx.threads();
        let out = ctx.output::<T>(0, shape)?;
        fill(out, threads, |i| {
            T::from_f64(if s.uniform(i) < p[i as usize] {
                1.0
            } else {
                0.0
            })
        });
        Ok(())
    }
}

impl Kernel for Bernoulli {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let p = x.to_f64_vec()?;
        let dtype = self.dtype.unwrap_or(x.dtype());
        let shape = x.shape().to_vec();
        rge_kernels::dispatch_numeric_bool!(dtype, T => self.typed::<T>(ctx, &p, &shape))
    }
}

/// Multinomial: `sample_size` class indices per row of unnormalized log-probabilities.
pub struct Multinomial {
    key: StreamKey,
    dtype: DType,
    samples: usize,
}

pub fn create_multinomial(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let dtype = dtype_attr(init, "dtype")?.unwrap_or(DType::Int32);
    if dtype != DType::Int32 && dtype != DType::Int64 {
        return Err(KernelError::attr(
            "dtype",
            format!("{dtype}: must be int32 or int64"),
        ));
    }
    let samples = init.int_or("sample_size", 1)?;
    let samples = usize::try_from(samples)
        .map_err(|_| KernelError::attr("sample_size", format!("{samples} is negative")))?;
    Ok(Box::new(Multinomial {
        key: StreamKey::new(seed_attr(init.attrs)?, init.node_name),
        dtype,
        samples,
    }))
}

impl Multinomial {
    fn typed<T: Out>(
        &self,
        ctx: &mut KernelCtx<'_>,
        logits: &[f64],
        batch: usize,
        classes: usize,
    ) -> KernelResult<()> {
        // Per row: the running sum of exp(logit − max), the CDF the samples search.
        let mut cdf = vec![0.0f64; batch * classes];
        for b in 0..batch {
            let row = &logits[b * classes..(b + 1) * classes];
            if let Some(c) = row.iter().position(|v| v.is_nan() || *v == f64::INFINITY) {
                return Err(KernelError::invalid(format!(
                    "row {b}, class {c}: log-probability {} is not usable",
                    row[c]
                )));
            }
            let m = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if m == f64::NEG_INFINITY && self.samples > 0 {
                return Err(KernelError::invalid(format!(
                    "row {b} has no class with non-zero probability"
                )));
            }
            let mut acc = 0.0;
            for (c, &v) in cdf[b * classes..(b + 1) * classes].iter_mut().zip(row) {
                acc += (v - m).exp();
                *c = acc;
            }
        }
        let s = self.key.stream(ctx.run_key());
        let threads = ctx.threads();
        let samples = self.samples;
        let out = ctx.output::<T>(0, &[batch, samples])?;
        fill(out, threads, |j| {
            let b = j as usize / samples;
            let row = &cdf[b * classes..(b + 1) * classes];
            let u = s.uniform(j) * row[classes - 1];
            let idx = row.partition_point(|&c| c <= u).min(classes - 1);
            T::from_f64(idx as f64)
        });
        Ok(())
    }
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
        if batch * self.samples == 0 {
            return rge_kernels::dispatch_int!(self.dtype, T => ctx.output::<T>(0, &[batch, self.samples]).map(|_| ()));
        }
        rge_kernels::dispatch_int!(self.dtype, T => self.typed::<T>(ctx, &logits, batch, classes))
    }
}

/// Dropout: in training mode keeps element `i` when `u[i] >= ratio` and scales it by
/// `1 / (1 − ratio)`; otherwise the identity with an all-true mask.
pub struct Dropout {
    key: StreamKey,
    /// Opset < 12: the ratio attribute, and whether the op trains (`is_test` = 0 before 7).
    attr_ratio: Option<f64>,
    legacy_training: bool,
    mask_type: DType,
}

pub fn create_dropout(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let legacy = init.opset < 12;
    Ok(Box::new(Dropout {
        key: StreamKey::new(seed_attr(init.attrs)?, init.node_name),
        attr_ratio: if legacy {
            Some(f64::from(init.float_or("ratio", 0.5)?))
        } else {
            None
        },
        legacy_training: legacy && init.opset < 7 && init.int_or("is_test", 0)? == 0,
        mask_type: init.output_type(1).unwrap_or(DType::Bool),
    }))
}

impl Dropout {
    fn mode(&self, ctx: &KernelCtx<'_>) -> KernelResult<(f64, bool)> {
        Ok(match self.attr_ratio {
            Some(r) => (r, self.legacy_training),
            None => {
                let r = match ctx.opt_input(1)? {
                    Some(t) => *t
                        .to_f64_vec()?
                        .first()
                        .ok_or_else(|| KernelError::invalid("ratio is empty"))?,
                    None => 0.5,
                };
                let t = match ctx.opt_input(2)? {
                    Some(t) => t.to_i64_vec()?.first().copied().unwrap_or(0) != 0,
                    None => false,
                };
                (r, t)
            }
        })
    }

    fn typed<T: Out>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (ratio, training) = self.mode(ctx)?;
        if training && !(0.0..1.0).contains(&ratio) {
            return Err(KernelError::invalid(format!(
                "ratio {ratio} is outside [0, 1)"
            )));
        }
        let x = ctx.input(0)?;
        let xs = x.as_slice::<T>()?;
        let shape = x.shape().to_vec();
        let threads = ctx.threads();
        let drop = training && ratio != 0.0;
        let s: Stream = self.key.stream(ctx.run_key());
        let keep = |i: u64| !drop || s.uniform(i) >= ratio;
        let scale = 1.0 / (1.0 - ratio);
        let y = ctx.output::<T>(0, &shape)?;
        if drop {
            fill(y, threads, |i| {
                if keep(i) {
                    T::from_f64(xs[i as usize].to_f64() * scale)
                } else {
                    T::from_f64(0.0)
                }
            });
        } else {
            y.copy_from_slice(xs);
        }
        if ctx.output_count() > 1 && ctx.output_used(1) {
            rge_kernels::dispatch_numeric_bool!(self.mask_type, M => {
                let m = ctx.output::<M>(1, &shape)?;
                fill(m, threads, |i| M::from_f64(if keep(i) { 1.0 } else { 0.0 }));
                Ok(())
            })?;
        }
        Ok(())
    }
}

impl Kernel for Dropout {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        rge_kernels::dispatch_float!(dt, T => self.typed::<T>(ctx))
    }
}
