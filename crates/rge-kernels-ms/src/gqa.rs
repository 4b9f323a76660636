//! GroupQueryAttention: causal attention of N query heads over Nk shared key/value heads, with a
//! KV cache (past_key/past_value → present_key/present_value), optional rotary embedding, local
//! window and soft cap; `seqlens_k[b] + 1` is batch b's total length.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::attention::{attend, to_heads, Heads};
use crate::rotary::Cache;
use crate::util::{f32s, opt_f32s, put_f32};

struct Gqa {
    heads: usize,
    kv_heads: usize,
    scale: f32,
    softcap: f32,
    window: i64,
    rotary: bool,
    interleaved: bool,
}

pub(crate) fn group_query_attention(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let heads = init.int("num_heads")?;
    let kv = init.int("kv_num_heads")?;
    if heads <= 0 || kv <= 0 || heads % kv != 0 {
        return Err(KernelError::attr(
            "kv_num_heads",
            format!("num_heads {heads} must be a positive multiple of kv_num_heads {kv}"),
        ));
    }
    Ok(Box::new(Gqa {
        heads: heads as usize,
        kv_heads: kv as usize,
        scale: init.float_or("scale", 0.0)?,
        softcap: init.float_or("softcap", 0.0)?,
        window: init.int_or("local_window_size", -1)?,
        rotary: init.int_or("do_rotary", 0)? != 0,
        interleaved: init.int_or("rotary_interleaved", 0)? != 0,
    }))
}

impl Kernel for Gqa {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (n, nk) = (self.heads, self.kv_heads);
        let q_t = ctx.input(0)?;
        let [b, s, dq] = *q_t.shape() else {
            return Err(KernelError::unsupported(format!(
                "query of shape {:?}: supported is [batch, sequence, hidden]",
                q_t.shape()
            )));
        };
        if ctx.opt_input(1)?.is_none() || ctx.opt_input(2)?.is_none() {
            return Err(KernelError::unsupported("packed QKV (no key/value inputs)"));
        }
        if dq % n != 0 {
            return Err(KernelError::invalid(format!(
                "query hidden {dq} does not divide into {n} heads"
            )));
        }
        let h = dq / n;
        let k_shape = ctx.input(1)?.shape().to_vec();
        if k_shape != [b, s, nk * h] || ctx.input(2)?.shape() != k_shape.as_slice() {
            return Err(KernelError::invalid(format!(
                "key and value must be [{b}, {s}, {}]",
                nk * h
            )));
        }
        let seqlens = ctx.input(5)?.to_i64_vec()?;
        let total = ctx.input(6)?.to_i64_vec()?;
        let (&[total], true) = (&total[..], seqlens.len() == b) else {
            return Err(KernelError::invalid(
                "seqlens_k must be [batch] and total_sequence_length a scalar",
            ));
        };
        let past_shape = ctx.opt_input(3)?.map(|t| t.shape().to_vec());
        let p = match &past_shape {
            Some(sh) if sh.len() == 4 && sh[0] == b && sh[1] == nk && sh[3] == h => sh[2],
            Some(sh) => {
                return Err(KernelError::invalid(format!(
                    "past_key is {sh:?}; need [{b}, {nk}, past, {h}]"
                )))
            }
            None => 0,
        };
        let total = usize::try_from(total)
            .map_err(|_| KernelError::invalid("total_sequence_length < 0"))?;
        let present_len = p.max(total);
        let first_prompt = s == total;
        let mut q = to_heads(&f32s(ctx, 0)?, b, s, n, h);
        let mut k_new = to_heads(&f32s(ctx, 1)?, b, s, nk, h);
        let v_new = to_heads(&f32s(ctx, 2)?, b, s, nk, h);
        let past_k = opt_f32s(ctx, 3)?;
        let past_v = opt_f32s(ctx, 4)?;
        let mut past_lens = Vec::with_capacity(b);
        for &sl in &seqlens {
            let len = usize::try_from(sl + 1)
                .map_err(|_| KernelError::invalid(format!("seqlens_k {sl} < -1")))?;
            let past = if first_prompt {
                0
            } else {
                len.checked_sub(s).ok_or_else(|| {
                    KernelError::invalid(format!(
                        "seqlens_k {sl} + 1 is shorter than the new tokens {s}"
                    ))
                })?
            };
            if past + s > present_len || past > p {
                return Err(KernelError::invalid(format!(
                    "seqlens_k {sl} does not fit the cache of {present_len}"
                )));
            }
            past_lens.push(past);
        }
        if self.rotary {
            let cos = f32s(ctx, 7)?;
            let sin = f32s(ctx, 8)?;
            let half = ctx.input(7)?.shape().get(1).copied().unwrap_or(0);
            if 2 * half > h || sin.len() != cos.len() {
                return Err(KernelError::invalid(format!(
                    "cos/sin caches of width {half} do not fit head size {h}"
                )));
            }
            let cache = Cache {
                cos: &cos,
                sin: &sin,
                half,
            };
            for (bi, &past) in past_lens.iter().enumerate() {
                for (x, heads) in [(&mut q, n), (&mut k_new, nk)] {
                    for ni in 0..heads {
                        for si in 0..s {
                            let at = ((bi * heads + ni) * s + si) * h;
                            cache.rotate(
                                &mut x[at..at + h],
                                (past + si) as i64,
                                self.interleaved,
                            )?;
                        }
                    }
                }
            }
        }
        // present = past[..past_len] ++ new, zeros after.
        let mut present_k = vec![0f32; b * nk * present_len * h];
        let mut present_v = present_k.clone();
        for bi in 0..b {
            for ni in 0..nk {
                let dst = (bi * nk + ni) * present_len * h;
                let src_past = (bi * nk + ni) * p * h;
                let past = past_lens[bi];
                for (present, past_buf, new) in [
                    (&mut present_k, &past_k, &k_new),
                    (&mut present_v, &past_v, &v_new),
                ] {
                    if let Some(pb) = past_buf {
                        present[dst..dst + past * h]
                            .copy_from_slice(&pb[src_past..src_past + past * h]);
                    }
                    let src = (bi * nk + ni) * s * h;
                    present[dst + past * h..dst + (past + s) * h]
                        .copy_from_slice(&new[src..src + s * h]);
                }
            }
        }
        let (window, softcap) = (self.window, self.softcap);
        let scale = if self.scale == 0.0 {
            1.0 / (h as f32).sqrt()
        } else {
            self.scale
        };
        let score = |bi: usize, _ni: usize, i: usize, j: usize| -> Option<f32> {
            let at = past_lens[bi] + i;
            if j > at || (window >= 0 && (j as i64) <= at as i64 - window) {
                return None;
            }
            Some(0.0)
        };
        let heads = Heads {
            q: &q,
            k: &present_k,
            v: &present_v,
            b,
            n,
            nk,
            s,
            l: present_len,
            h,
            hv: h,
        };
        let out = if softcap > 0.0 {
            softcapped(&heads, scale, softcap, &score)
        } else {
            attend(&heads, scale, &score)
        };
        put_f32(ctx, 0, &[b, s, dq], out)?;
        put_f32(ctx, 1, &[b, nk, present_len, h], present_k)?;
        put_f32(ctx, 2, &[b, nk, present_len, h], present_v)?;
        Ok(())
    }
}

/// Attention with scores capped as softcap · tanh(score / softcap) (before the mask).
fn softcapped(
    x: &Heads<'_>,
    scale: f32,
    cap: f32,
    score: &crate::attention::ScoreBias<'_>,
) -> Vec<f32> {
    // Scaling q by 1 folds the cap into a per-score bias: cap·tanh(d·scale/cap) - d·scale.
    let h = x.h;
    let group = x.n / x.nk.max(1);
    let bias = |bi: usize, ni: usize, i: usize, j: usize| -> Option<f32> {
        score(bi, ni, i, j)?;
        let q = &x.q[((bi * x.n + ni) * x.s + i) * h..][..h];
        let k = &x.k[((bi * x.nk + ni / group.max(1)) * x.l + j) * h..][..h];
        let d: f32 = q.iter().zip(k).map(|(a, b)| a * b).sum::<f32>() * scale;
        Some(cap * (d / cap).tanh() - d)
    };
    attend(x, scale, &bias)
}
