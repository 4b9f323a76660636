//! com.microsoft RotaryEmbedding, and the rotary step GroupQueryAttention applies with
//! `do_rotary`.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::util::{f32s, put_f32};

/// The cos/sin tables: [max_position, rot/2] each.
pub(crate) struct Cache<'a> {
    pub cos: &'a [f32],
    pub sin: &'a [f32],
    pub half: usize,
}

impl Cache<'_> {
    /// Rotates the first 2·half values of one head vector `x` at `pos`.
    pub(crate) fn rotate(&self, x: &mut [f32], pos: i64, interleaved: bool) -> KernelResult<()> {
        let rows = self.cos.len() / self.half.max(1);
        let p = usize::try_from(pos)
            .ok()
            .filter(|&p| p < rows)
            .ok_or_else(|| {
                KernelError::invalid(format!(
                    "position {pos} is outside the cos/sin cache's {rows} rows"
                ))
            })?;
        let (c, s) = (
            &self.cos[p * self.half..][..self.half],
            &self.sin[p * self.half..][..self.half],
        );
        for i in 0..self.half {
            let (a, b) = if interleaved {
                (2 * i, 2 * i + 1)
            } else {
                (i, i + self.half)
            };
            let (x1, x2) = (x[a], x[b]);
            x[a] = x1 * c[i] - x2 * s[i];
            x[b] = x2 * c[i] + x1 * s[i];
        }
        Ok(())
    }
}

struct Rotary {
    interleaved: bool,
    heads: usize,
    rot_dim: usize,
}

pub(crate) fn rotary_embedding(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let heads = init.int_or("num_heads", 0)?;
    let rot = init.int_or("rotary_embedding_dim", 0)?;
    if heads < 0 || rot < 0 {
        return Err(KernelError::attr(
            "num_heads",
            "num_heads and rotary_embedding_dim must be ≥ 0",
        ));
    }
    Ok(Box::new(Rotary {
        interleaved: init.int_or("interleaved", 0)? != 0,
        heads: heads as usize,
        rot_dim: rot as usize,
    }))
}

impl Kernel for Rotary {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let shape = ctx.input(0)?.shape().to_vec();
        let cos_t = ctx.input(2)?;
        let half = cos_t.shape().get(1).copied().unwrap_or(0);
        // [B, S, N·h] with num_heads (or h from the cache), or [B, N, S, h].
        let (b, s, n, h, bnsh) = match shape[..] {
            [b, s, hid] => {
                let n = if self.heads > 0 {
                    self.heads
                } else {
                    hid / (2 * half).max(1)
                };
                if n == 0 || hid % n != 0 {
                    return Err(KernelError::invalid(format!(
                        "hidden size {hid} does not divide into {n} heads"
                    )));
                }
                (b, s, n, hid / n, false)
            }
            [b, n, s, h] => (b, s, n, h, true),
            _ => {
                return Err(KernelError::invalid(format!(
                    "input must be 3-D or 4-D, got {shape:?}"
                )))
            }
        };
        let rot = if self.rot_dim > 0 { self.rot_dim } else { h };
        if rot > h || rot != 2 * half {
            return Err(KernelError::invalid(format!(
                "rotary dim {rot} vs head size {h} and cos_cache width {half}: need rot ≤ head and rot = 2·width"
            )));
        }
        let pos_t = ctx.input(1)?;
        let pos = pos_t.to_i64_vec()?;
        let position = |bi: usize, si: usize| -> KernelResult<i64> {
            match pos.len() {
                1 => Ok(pos[0].saturating_add(si as i64)),
                len if len == b * s => Ok(pos[bi * s + si]),
                _ => Err(KernelError::invalid(format!(
                    "position_ids is {:?}; need [batch, sequence] or [1]",
                    pos_t.shape()
                ))),
            }
        };
        let cos = f32s(ctx, 2)?;
        let sin = f32s(ctx, 3)?;
        if sin.len() != cos.len() {
            return Err(KernelError::invalid(
                "cos_cache and sin_cache differ in shape",
            ));
        }
        let cache = Cache {
            cos: &cos,
            sin: &sin,
            half,
        };
        let mut x = f32s(ctx, 0)?;
        for bi in 0..b {
            for si in 0..s {
                let p = position(bi, si)?;
                for ni in 0..n {
                    let at = if bnsh {
                        ((bi * n + ni) * s + si) * h
                    } else {
                        ((bi * s + si) * n + ni) * h
                    };
                    cache.rotate(&mut x[at..at + h], p, self.interleaved)?;
                }
            }
        }
        put_f32(ctx, 0, &shape, x)
    }
}
