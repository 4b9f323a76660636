//! Layer normalizations of the transformer fusions: SkipLayerNormalization,
//! SkipSimplifiedLayerNormalization (RMS), SimplifiedLayerNormalization (default domain) and
//! EmbedLayerNormalization. Statistics are taken in f64 over the normalized span.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor};

use crate::util::{add_last, check_len, f32s, last_dim, opt_f32s, put_f32};

/// Normalizes each `n`-element row of `x` in place (mean-centred unless `rms`), scales by
/// `gamma`, shifts by `beta`; returns each row's mean and 1/std.
pub(crate) fn normalize_rows(
    x: &mut [f32],
    n: usize,
    gamma: &[f32],
    beta: Option<&[f32]>,
    eps: f32,
    rms: bool,
) -> (Vec<f32>, Vec<f32>) {
    let rows = x.len().checked_div(n).unwrap_or(0);
    let (mut means, mut inv_stds) = (Vec::with_capacity(rows), Vec::with_capacity(rows));
    for row in x.chunks_exact_mut(n) {
        let mean = if rms {
            0.0
        } else {
            row.iter().map(|&v| v as f64).sum::<f64>() / n as f64
        };
        let var = row.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / n as f64;
        let inv = 1.0 / (var + eps as f64).sqrt();
        for (j, v) in row.iter_mut().enumerate() {
            let y = ((*v as f64 - mean) * inv) as f32 * gamma[j];
            *v = y + beta.map_or(0.0, |b| b[j]);
        }
        means.push(mean as f32);
        inv_stds.push(inv as f32);
    }
    (means, inv_stds)
}

struct SkipNorm {
    eps: f32,
    rms: bool,
}

pub(crate) fn skip_layer_norm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(SkipNorm {
        eps: init.float_or("epsilon", 1e-12)?,
        rms: false,
    }))
}

pub(crate) fn skip_simplified_layer_norm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(SkipNorm {
        eps: init.float_or("epsilon", 1e-12)?,
        rms: true,
    }))
}

/// The row statistics as outputs shaped as the input with its last dim 1.
fn put_stats(ctx: &mut KernelCtx<'_>, at: usize, shape: &[usize], v: Vec<f32>) -> KernelResult<()> {
    if !ctx.output_used(at) {
        return Ok(());
    }
    let mut s = shape.to_vec();
    if let Some(l) = s.last_mut() {
        *l = 1;
    }
    put_f32(ctx, at, &s, v)
}

impl Kernel for SkipNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let shape = ctx.input(0)?.shape().to_vec();
        let n = last_dim(&shape);
        let mut x = f32s(ctx, 0)?;
        let skip = ctx.input(1)?;
        let s = f32s(ctx, 1)?;
        // skip is the input's shape, or broadcasts over the batch ([S, H] or [1, S, H]).
        if s.is_empty() || x.len() % s.len() != 0 || last_dim(skip.shape()) != n {
            return Err(KernelError::invalid(format!(
                "skip is {:?}; input is {shape:?}",
                skip.shape()
            )));
        }
        for (i, v) in x.iter_mut().enumerate() {
            *v += s[i % s.len()];
        }
        let gamma = f32s(ctx, 2)?;
        check_len("gamma", &gamma, n)?;
        // SkipLayerNormalization: (input, skip, gamma, beta?, bias?); the simplified form has
        // no beta: (input, skip, gamma, bias?).
        let (beta, bias) = if self.rms {
            (None, opt_f32s(ctx, 3)?)
        } else {
            (opt_f32s(ctx, 3)?, opt_f32s(ctx, 4)?)
        };
        if let Some(b) = &bias {
            check_len("bias", b, n)?;
            add_last(&mut x, b);
        }
        if let Some(b) = &beta {
            check_len("beta", b, n)?;
        }
        let sum = ctx.output_used(3).then(|| x.clone());
        let (means, inv) = normalize_rows(&mut x, n, &gamma, beta.as_deref(), self.eps, self.rms);
        put_f32(ctx, 0, &shape, x)?;
        put_stats(ctx, 1, &shape, means)?;
        put_stats(ctx, 2, &shape, inv)?;
        if let Some(s) = sum {
            put_f32(ctx, 3, &shape, s)?;
        }
        Ok(())
    }
}

struct SimplifiedLayerNorm {
    axis: i64,
    eps: f32,
}

pub(crate) fn simplified_layer_norm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(SimplifiedLayerNorm {
        axis: init.int_or("axis", -1)?,
        eps: init.float_or("epsilon", 1e-5)?,
    }))
}

impl Kernel for SimplifiedLayerNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let shape = ctx.input(0)?.shape().to_vec();
        let rank = shape.len() as i64;
        let axis = if self.axis < 0 {
            self.axis + rank
        } else {
            self.axis
        };
        if !(0..rank.max(1)).contains(&axis) {
            return Err(KernelError::attr(
                "axis",
                format!("{} is out of range for rank {rank}", self.axis),
            ));
        }
        let n: usize = shape[axis as usize..].iter().product();
        let mut x = f32s(ctx, 0)?;
        let scale = f32s(ctx, 1)?;
        if scale.len() != n {
            return Err(KernelError::invalid(format!(
                "scale has {} values; the normalized span has {n}",
                scale.len()
            )));
        }
        let (_, inv) = normalize_rows(&mut x, n, &scale, None, self.eps, true);
        put_f32(ctx, 0, &shape, x)?;
        if ctx.output_used(1) {
            let mut s = shape.clone();
            for d in &mut s[axis as usize..] {
                *d = 1;
            }
            put_f32(ctx, 1, &s, inv)?;
        }
        Ok(())
    }
}

struct EmbedLayerNorm {
    eps: f32,
}

pub(crate) fn embed_layer_norm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(EmbedLayerNorm {
        eps: init.float_or("epsilon", 1e-12)?,
    }))
}

/// Row `id` of a [rows, h] table, or an error naming the table.
fn row<'a>(table: &'a [f32], h: usize, id: i64, what: &str) -> KernelResult<&'a [f32]> {
    let rows = table.len() / h.max(1);
    usize::try_from(id)
        .ok()
        .filter(|&i| i < rows)
        .map(|i| &table[i * h..(i + 1) * h])
        .ok_or_else(|| KernelError::invalid(format!("{what} index {id} is outside [0, {rows})")))
}

impl Kernel for EmbedLayerNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let ids_t = ctx.input(0)?;
        let [b, s] = ids_t.shape() else {
            return Err(KernelError::invalid(format!(
                "input_ids must be [batch, sequence], got {:?}",
                ids_t.shape()
            )));
        };
        let (b, s) = (*b, *s);
        let ids = ids_t.to_i64_vec()?;
        let seg = ctx.opt_input(1)?.map(|t| t.to_i64_vec()).transpose()?;
        let word_t = ctx.input(2)?;
        let h = last_dim(word_t.shape());
        let word = f32s(ctx, 2)?;
        let pos = f32s(ctx, 3)?;
        let seg_table = opt_f32s(ctx, 4)?;
        let gamma = f32s(ctx, 5)?;
        let beta = f32s(ctx, 6)?;
        check_len("gamma", &gamma, h)?;
        check_len("beta", &beta, h)?;
        let mask = ctx.opt_input(7)?.map(|t| t.to_i64_vec()).transpose()?;
        let pos_ids = ctx.opt_input(8)?.map(|t| t.to_i64_vec()).transpose()?;
        for (what, v) in [("segment_ids", &seg), ("mask", &mask)] {
            if v.as_ref().is_some_and(|v| v.len() != b * s) {
                return Err(KernelError::invalid(format!(
                    "{what} must be [batch, sequence] as input_ids"
                )));
            }
        }
        let mut out = Vec::with_capacity(b * s * h);
        for i in 0..b * s {
            let p = match &pos_ids {
                Some(p) if p.len() == b * s => p[i],
                Some(p) if p.len() == s => p[i % s],
                Some(_) => {
                    return Err(KernelError::invalid(
                        "position_ids must be [batch, sequence] or [1, sequence]",
                    ))
                }
                None => (i % s) as i64,
            };
            let w = row(&word, h, ids[i], "word_embedding")?;
            let pe = row(&pos, h, p, "position_embedding")?;
            let se = match (&seg, &seg_table) {
                (Some(ids), Some(t)) => Some(row(t, h, ids[i], "segment_embedding")?),
                _ => None,
            };
            for j in 0..h {
                out.push(w[j] + pe[j] + se.map_or(0.0, |e| e[j]));
            }
        }
        let sum = ctx.output_used(2).then(|| out.clone());
        normalize_rows(&mut out, h, &gamma, Some(&beta), self.eps, false);
        put_f32(ctx, 0, &[b, s, h], out)?;
        // mask_index: the number of ones in each row of the mask (0 without a mask).
        let counts: Vec<i32> = (0..b)
            .map(|r| {
                mask.as_ref().map_or(0, |m| {
                    m[r * s..(r + 1) * s].iter().filter(|&&v| v != 0).count() as i32
                })
            })
            .collect();
        ctx.put(1, Tensor::from_vec(&[b], counts)?)?;
        if let Some(sum) = sum {
            put_f32(ctx, 2, &[b, s, h], sum)?;
        }
        Ok(())
    }
}
