//! Normalizations: BatchNormalization (inference and training), InstanceNormalization,
//! LayerNormalization, GroupNormalization (opset 18 per-group and opset 21 per-channel affine),
//! RMSNormalization and LRN. Statistics are computed in f64.

use rayon::prelude::*;
use rge_kernels::shape_util::normalize_axis;
use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef};

use crate::util::{nc_spatial, Real};

/// Writes f64 values to output `i` as float type `dt`.
fn put_f64(
    ctx: &mut KernelCtx<'_>,
    i: usize,
    dt: DType,
    shape: &[usize],
    vals: &[f64],
) -> KernelResult<()> {
    rge_kernels::dispatch_float!(dt, T => {
        let o = ctx.output::<T>(i, shape)?;
        o.iter_mut().zip(vals).for_each(|(o, &v)| *o = T::from_f64(v));
        Ok(())
    })
}

/// `v` broadcast (numpy, right-aligned) to `shape`, flattened.
fn broadcast_to(v: &TensorRef<'_>, shape: &[usize], what: &str) -> KernelResult<Vec<f64>> {
    let vals = v.to_f64_vec()?;
    let vs = v.shape();
    let total: usize = shape.iter().product();
    if vals.len() == total && (vs.len() <= shape.len()) {
        let off = shape.len() - vs.len();
        if vs.iter().zip(&shape[off..]).all(|(a, b)| a == b) {
            return Ok(vals);
        }
    }
    if vs.len() > shape.len() && vs[..vs.len() - shape.len()].iter().any(|&d| d != 1) {
        return Err(KernelError::invalid(format!(
            "{what} {vs:?} does not broadcast to {shape:?}"
        )));
    }
    let vs: Vec<usize> = vs[vs.len().saturating_sub(shape.len())..].to_vec();
    let off = shape.len() - vs.len();
    if vs
        .iter()
        .zip(&shape[off..])
        .any(|(&a, &b)| a != 1 && a != b)
    {
        return Err(KernelError::invalid(format!(
            "{what} {vs:?} does not broadcast to {shape:?}"
        )));
    }
    let st = rge_kernels::shape_util::broadcast_strides(&vs, shape);
    let mut out = Vec::with_capacity(total);
    rge_kernels::shape_util::for_each_broadcast(shape, &[st], |_, o| out.push(vals[o[0]]));
    Ok(out)
}

fn par_rows<T: Send>(y: &mut [T], cols: usize, threads: usize, f: impl Fn(usize, &mut [T]) + Sync) {
    if cols == 0 {
        return;
    }
    if threads > 1 && y.len() >= (1 << 15) {
        y.par_chunks_mut(cols)
            .enumerate()
            .for_each(|(r, c)| f(r, c));
    } else {
        y.chunks_mut(cols).enumerate().for_each(|(r, c)| f(r, c));
    }
}

/// (mean, variance) of a row, population variance.
fn moments<T: Real>(x: &[T]) -> (f64, f64) {
    let n = x.len().max(1) as f64;
    let mean = x.iter().map(|v| v.to_f64()).sum::<f64>() / n;
    let var = x.iter().map(|v| (v.to_f64() - mean).powi(2)).sum::<f64>() / n;
    (mean, var)
}

struct LayerNorm {
    axis: i64,
    epsilon: f64,
    stat_type: Option<DType>,
    rms: bool,
}

fn stash_dtype(init: &KernelInit<'_>, out: usize) -> KernelResult<Option<DType>> {
    if let Some(t) = init.output_type(out) {
        return Ok(Some(t));
    }
    let st = init.int_or("stash_type", 1)?;
    Ok(DType::from_onnx(st as i32).filter(|d| {
        matches!(
            d,
            DType::Float | DType::Double | DType::Float16 | DType::Bfloat16
        )
    }))
}

pub(crate) fn create_layer_norm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(LayerNorm {
        axis: init.int_or("axis", -1)?,
        epsilon: init.float_or("epsilon", 1e-5)? as f64,
        stat_type: stash_dtype(init, 1)?,
        rms: false,
    }))
}

pub(crate) fn create_rms_norm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(LayerNorm {
        axis: init.int_or("axis", -1)?,
        epsilon: init.float_or("epsilon", 1e-5)? as f64,
        stat_type: None,
        rms: true,
    }))
}

impl LayerNorm {
    fn typed<T: Real>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let shape = x.shape();
        let axis = normalize_axis(self.axis, shape.len())?;
        let cols: usize = shape[axis..].iter().product();
        let rows: usize = shape[..axis].iter().product();
        let scale = broadcast_to(&ctx.input(1)?, &shape[axis..], "Scale")?;
        let bias = if self.rms {
            None
        } else {
            ctx.opt_input(2)?
                .map(|b| broadcast_to(&b, &shape[axis..], "B"))
                .transpose()?
        };
        let xs = x.as_slice::<T>()?;
        let mut stats = vec![(0f64, 0f64); rows];
        for (r, s) in stats.iter_mut().enumerate() {
            let row = &xs[r * cols..][..cols];
            *s = if self.rms {
                let ms = row.iter().map(|v| v.to_f64().powi(2)).sum::<f64>() / cols.max(1) as f64;
                (0.0, 1.0 / (ms + self.epsilon).sqrt())
            } else {
                let (m, v) = moments(row);
                (m, 1.0 / (v + self.epsilon).sqrt())
            };
        }
        let threads = ctx.threads();
        let y = ctx.output::<T>(0, shape)?;
        par_rows(y, cols, threads, |r, yr| {
            let (m, inv) = stats[r];
            let row = &xs[r * cols..][..cols];
            for (j, o) in yr.iter_mut().enumerate() {
                let mut v = (row[j].to_f64() - m) * inv * scale[j];
                if let Some(b) = &bias {
                    v += b[j];
                }
                *o = T::from_f64(v);
            }
        });
        if !self.rms {
            let mut sshape = shape[..axis].to_vec();
            sshape.extend(std::iter::repeat_n(1, shape.len() - axis));
            let dt = self.stat_type.unwrap_or(DType::Float);
            if ctx.output_count() > 1 && ctx.output_used(1) {
                put_f64(
                    ctx,
                    1,
                    dt,
                    &sshape,
                    &stats.iter().map(|s| s.0).collect::<Vec<_>>(),
                )?;
            }
            if ctx.output_count() > 2 && ctx.output_used(2) {
                let dt = self.stat_type.unwrap_or(DType::Float);
                put_f64(
                    ctx,
                    2,
                    dt,
                    &sshape,
                    &stats.iter().map(|s| s.1).collect::<Vec<_>>(),
                )?;
            }
        }
        Ok(())
    }
}

impl Kernel for LayerNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        rge_kernels::dispatch_float!(dt, T => self.typed::<T>(ctx))
    }
}

struct GroupNorm {
    groups: usize,
    epsilon: f64,
    per_channel: bool,
}

pub(crate) fn create_group_norm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let g = init.int("num_groups")?;
    if g < 1 {
        return Err(KernelError::attr("num_groups", "must be ≥ 1"));
    }
    Ok(Box::new(GroupNorm {
        groups: g as usize,
        epsilon: init.float_or("epsilon", 1e-5)? as f64,
        per_channel: init.opset >= 21,
    }))
}

impl GroupNorm {
    fn typed<T: Real>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (n, c, spatial) = nc_spatial(x.shape(), 2)?;
        let g = self.groups;
        if c % g != 0 {
            return Err(KernelError::invalid(format!(
                "GroupNormalization: {c} channels in {g} groups"
            )));
        }
        let scale = ctx.input(1)?.to_f64_vec()?;
        let bias = ctx.input(2)?.to_f64_vec()?;
        // Opset 18 has one scale/bias per group; 21 one per channel.
        let per_channel = if scale.len() == c && bias.len() == c && (self.per_channel || c != g) {
            true
        } else if scale.len() == g && bias.len() == g {
            false
        } else {
            return Err(KernelError::invalid(format!(
                "GroupNormalization: scale/bias of {}/{} values for {c} channels in {g} groups",
                scale.len(),
                bias.len()
            )));
        };
        let sp: usize = spatial.iter().product();
        let cg = c / g;
        let len = cg * sp;
        let xs = x.as_slice::<T>()?;
        let threads = ctx.threads();
        let y = ctx.output::<T>(0, x.shape())?;
        let _ = n;
        par_rows(y, len, threads, |r, yr| {
            let gi = r % g;
            let row = &xs[r * len..][..len];
            let (m, v) = moments(row);
            let inv = 1.0 / (v + self.epsilon).sqrt();
            for (j, o) in yr.iter_mut().enumerate() {
                let p = if per_channel {
                    gi * cg + j / sp.max(1)
                } else {
                    gi
                };
                *o = T::from_f64((row[j].to_f64() - m) * inv * scale[p] + bias[p]);
            }
        });
        Ok(())
    }
}

impl Kernel for GroupNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        rge_kernels::dispatch_float!(dt, T => self.typed::<T>(ctx))
    }
}

struct InstanceNorm {
    epsilon: f64,
}

pub(crate) fn create_instance_norm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(InstanceNorm {
        epsilon: init.float_or("epsilon", 1e-5)? as f64,
    }))
}

impl InstanceNorm {
    fn typed<T: Real>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (_, c, spatial) = nc_spatial(x.shape(), 3)?;
        let scale = ctx.input(1)?.to_f64_vec()?;
        let bias = ctx.input(2)?.to_f64_vec()?;
        if scale.len() != c || bias.len() != c {
            return Err(KernelError::invalid(
                "InstanceNormalization: scale/B must have C values",
            ));
        }
        let sp: usize = spatial.iter().product();
        let xs = x.as_slice::<T>()?;
        let threads = ctx.threads();
        let y = ctx.output::<T>(0, x.shape())?;
        par_rows(y, sp, threads, |r, yr| {
            let ci = r % c;
            let row = &xs[r * sp..][..sp];
            let (m, v) = moments(row);
            let inv = 1.0 / (v + self.epsilon).sqrt();
            for (o, xv) in yr.iter_mut().zip(row) {
                *o = T::from_f64((xv.to_f64() - m) * inv * scale[ci] + bias[ci]);
            }
        });
        Ok(())
    }
}

impl Kernel for InstanceNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        rge_kernels::dispatch_float!(dt, T => self.typed::<T>(ctx))
    }
}

struct BatchNorm {
    epsilon: f64,
    momentum: f64,
    training: bool,
    opset: i64,
}

pub(crate) fn create_batch_norm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let training = if init.opset >= 14 {
        init.int_or("training_mode", 0)? != 0
    } else if init.opset <= 6 {
        init.int_or("is_test", 0)? == 0 && init.output_types.len() > 1
    } else {
        init.output_types.len() > 1
    };
    Ok(Box::new(BatchNorm {
        epsilon: init.float_or("epsilon", 1e-5)? as f64,
        momentum: init.float_or("momentum", 0.9)? as f64,
        training,
        opset: init.opset,
    }))
}

impl BatchNorm {
    fn typed<T: Real>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (n, c, spatial) = nc_spatial(x.shape(), 2)?;
        let sp: usize = spatial.iter().product();
        let get = |i: usize| -> KernelResult<Vec<f64>> {
            let v = ctx.input(i)?.to_f64_vec()?;
            if v.len() != c {
                return Err(KernelError::invalid(format!(
                    "BatchNormalization: input {i} must have C = {c} values"
                )));
            }
            Ok(v)
        };
        let (scale, bias, mean, var) = (get(1)?, get(2)?, get(3)?, get(4)?);
        let xs = x.as_slice::<T>()?;
        let (use_mean, use_var, batch) = if self.training {
            let cnt = (n * sp).max(1) as f64;
            let mut bm = vec![0f64; c];
            let mut bv = vec![0f64; c];
            for ci in 0..c {
                let vals = (0..n).flat_map(|ni| xs[(ni * c + ci) * sp..][..sp].iter());
                bm[ci] = vals.map(|v| v.to_f64()).sum::<f64>() / cnt;
                let vals = (0..n).flat_map(|ni| xs[(ni * c + ci) * sp..][..sp].iter());
                bv[ci] = vals.map(|v| (v.to_f64() - bm[ci]).powi(2)).sum::<f64>() / cnt;
            }
            (bm.clone(), bv.clone(), Some((bm, bv)))
        } else {
            (mean.clone(), var.clone(), None)
        };
        let threads = ctx.threads();
        let y = ctx.output::<T>(0, x.shape())?;
        par_rows(y, sp, threads, |r, yr| {
            let ci = r % c;
            let a = scale[ci] / (use_var[ci] + self.epsilon).sqrt();
            let b = bias[ci] - use_mean[ci] * a;
            for (o, xv) in yr.iter_mut().zip(&xs[r * sp..][..sp]) {
                *o = T::from_f64(xv.to_f64() * a + b);
            }
        });
        if let Some((bm, bv)) = batch {
            let mo = self.momentum;
            let run_m: Vec<f64> = mean
                .iter()
                .zip(&bm)
                .map(|(r, b)| r * mo + b * (1.0 - mo))
                .collect();
            let run_v: Vec<f64> = var
                .iter()
                .zip(&bv)
                .map(|(r, b)| r * mo + b * (1.0 - mo))
                .collect();
            let mdt = ctx.input(3)?.dtype();
            let outs: [&[f64]; 4] = if self.opset >= 14 {
                [&run_m, &run_v, &[], &[]]
            } else {
                [&run_m, &run_v, &bm, &bv]
            };
            for (i, vals) in outs.iter().enumerate() {
                let oi = i + 1;
                if !vals.is_empty() && ctx.output_count() > oi && ctx.output_used(oi) {
                    put_f64(ctx, oi, mdt, &[c], vals)?;
                }
            }
        }
        Ok(())
    }
}

impl Kernel for BatchNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        rge_kernels::dispatch_float!(dt, T => self.typed::<T>(ctx))
    }
}

struct Lrn {
    alpha: f64,
    beta: f64,
    bias: f64,
    size: usize,
}

pub(crate) fn create_lrn(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let size = init.int("size")?;
    if size < 1 {
        return Err(KernelError::attr("size", "must be ≥ 1"));
    }
    Ok(Box::new(Lrn {
        alpha: init.float_or("alpha", 1e-4)? as f64,
        beta: init.float_or("beta", 0.75)? as f64,
        bias: init.float_or("bias", 1.0)? as f64,
        size: size as usize,
    }))
}

impl Lrn {
    fn typed<T: Real>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (_, c, spatial) = nc_spatial(x.shape(), 3)?;
        let sp: usize = spatial.iter().product();
        let xs = x.as_slice::<T>()?;
        let lo = (self.size - 1) / 2;
        let hi = (self.size - 1).div_ceil(2);
        let y = ctx.output::<T>(0, x.shape())?;
        for (i, o) in y.iter_mut().enumerate() {
            let s = i % sp;
            let ci = (i / sp) % c;
            let base = i - ci * sp - s;
            let (a, b) = (ci.saturating_sub(lo), (ci + hi).min(c - 1));
            let sq: f64 = (a..=b)
                .map(|k| xs[base + k * sp + s].to_f64().powi(2))
                .sum();
            *o = T::from_f64(
                xs[i].to_f64() / (self.bias + self.alpha / self.size as f64 * sq).powf(self.beta),
            );
        }
        Ok(())
    }
}

impl Kernel for Lrn {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        rge_kernels::dispatch_float!(dt, T => self.typed::<T>(ctx))
    }
}
