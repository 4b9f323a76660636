//! Attention (packed QKV weights), MultiHeadAttention and GroupQueryAttention: scaled dot-product
//! attention per head with onnxruntime's masks (padding masks add `mask_filter_value`, causal
//! positions are left out), in float32 with f64 softmax sums.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef};

use crate::util::{add_last, f32s, floats, opt_f32s, put_f32};

/// Q [B, N, S, h], K [B, Nk, L, h], V [B, Nk, L, hv] (Nk divides N: grouped heads share K/V).
pub(crate) struct Heads<'a> {
    pub q: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub b: usize,
    pub n: usize,
    pub nk: usize,
    pub s: usize,
    pub l: usize,
    pub h: usize,
    pub hv: usize,
}

/// What a score gets: `bias(b, n, i, j)` added, or `None` to leave position j out for query i.
pub(crate) type ScoreBias<'a> = dyn Fn(usize, usize, usize, usize) -> Option<f32> + 'a;

/// The attention output as [B, S, N·hv].
pub(crate) fn attend(x: &Heads<'_>, scale: f32, bias: &ScoreBias<'_>) -> Vec<f32> {
    let Heads {
        b,
        n,
        nk,
        s,
        l,
        h,
        hv,
        ..
    } = *x;
    let group = n / nk.max(1);
    let mut out = vec![0f32; b * s * n * hv];
    let mut scores = vec![0f64; l];
    for bi in 0..b {
        for ni in 0..n {
            let kn = ni / group.max(1);
            let q = &x.q[(bi * n + ni) * s * h..][..s * h];
            let k = &x.k[(bi * nk + kn) * l * h..][..l * h];
            let v = &x.v[(bi * nk + kn) * l * hv..][..l * hv];
            for i in 0..s {
                let qi = &q[i * h..(i + 1) * h];
                let mut max = f64::NEG_INFINITY;
                for j in 0..l {
                    scores[j] = match bias(bi, ni, i, j) {
                        Some(add) => {
                            let dot: f32 = qi
                                .iter()
                                .zip(&k[j * h..(j + 1) * h])
                                .map(|(a, b)| a * b)
                                .sum();
                            (dot * scale + add) as f64
                        }
                        None => f64::NEG_INFINITY,
                    };
                    max = max.max(scores[j]);
                }
                let mut total = 0.0;
                for sc in scores.iter_mut() {
                    *sc = if max == f64::NEG_INFINITY {
                        0.0
                    } else {
                        (*sc - max).exp()
                    };
                    total += *sc;
                }
                let o = &mut out[((bi * s + i) * n + ni) * hv..][..hv];
                for (j, &p) in scores.iter().enumerate() {
                    if p == 0.0 {
                        continue;
                    }
                    let p = (p / total) as f32;
                    for (o, vv) in o.iter_mut().zip(&v[j * hv..(j + 1) * hv]) {
                        *o += p * vv;
                    }
                }
            }
        }
    }
    out
}

/// [B, S, N·h] → [B, N, S, h].
pub(crate) fn to_heads(x: &[f32], b: usize, s: usize, n: usize, h: usize) -> Vec<f32> {
    let mut out = vec![0f32; x.len()];
    for bi in 0..b {
        for si in 0..s {
            for ni in 0..n {
                let src = &x[((bi * s + si) * n + ni) * h..][..h];
                out[((bi * n + ni) * s + si) * h..][..h].copy_from_slice(src);
            }
        }
    }
    out
}

/// A padding mask: 2-D [B, L] of 1 (keep) / 0 (mask), or 1-D [B] valid lengths.
pub(crate) enum Mask {
    None,
    Keys { l: usize, keep: Vec<bool> },
    Lengths(Vec<i64>),
}

impl Mask {
    pub(crate) fn parse(t: Option<TensorRef<'_>>, b: usize, l: usize) -> KernelResult<Self> {
        let Some(t) = t else { return Ok(Mask::None) };
        let v = t.to_i64_vec()?;
        match t.shape() {
            [bb] if *bb == b => Ok(Mask::Lengths(v)),
            [bb, ll] if *bb == b && *ll == l => Ok(Mask::Keys {
                l,
                keep: v.iter().map(|&x| x != 0).collect(),
            }),
            shape => Err(KernelError::unsupported(format!(
                "mask of shape {shape:?}: supported are [batch] lengths and [batch, {l}] 0/1 masks"
            ))),
        }
    }

    pub(crate) fn masked(&self, b: usize, j: usize) -> bool {
        match self {
            Mask::None => false,
            Mask::Keys { l, keep } => !keep[b * l + j],
            Mask::Lengths(len) => j as i64 >= len[b],
        }
    }
}

struct Attention {
    heads: usize,
    causal: bool,
    scale: f32,
    filter: f32,
    sizes: Option<[usize; 3]>,
}

pub(crate) fn attention(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let heads = positive(init.int("num_heads")?, "num_heads")?;
    let sizes = match init.ints_opt("qkv_hidden_sizes")? {
        Some([q, k, v]) => Some([
            positive(*q, "qkv_hidden_sizes")?,
            positive(*k, "qkv_hidden_sizes")?,
            positive(*v, "qkv_hidden_sizes")?,
        ]),
        Some([]) | None => None,
        Some(s) => {
            return Err(KernelError::attr(
                "qkv_hidden_sizes",
                format!("must have 3 values, has {}", s.len()),
            ))
        }
    };
    if init.int_or("do_rotary", 0)? != 0 {
        return Err(KernelError::attr(
            "do_rotary",
            "rotary Attention is not supported",
        ));
    }
    Ok(Box::new(Attention {
        heads,
        causal: init.int_or("unidirectional", 0)? != 0,
        scale: init.float_or("scale", 0.0)?,
        filter: init.float_or("mask_filter_value", -10000.0)?,
        sizes,
    }))
}

fn positive(v: i64, what: &str) -> KernelResult<usize> {
    usize::try_from(v)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| KernelError::attr(what, format!("must be positive, got {v}")))
}

fn scale_or_default(scale: f32, h: usize) -> f32 {
    if scale == 0.0 {
        1.0 / (h as f32).sqrt()
    } else {
        scale
    }
}

impl Kernel for Attention {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x_t = ctx.input(0)?;
        let [b, s, hin] = *x_t.shape() else {
            return Err(KernelError::invalid(format!(
                "input must be [batch, sequence, hidden], got {:?}",
                x_t.shape()
            )));
        };
        if ctx.opt_input(6)?.is_some() {
            return Err(KernelError::unsupported(
                "Attention with past_sequence_length (a shared past/present buffer)",
            ));
        }
        let x = f32s(ctx, 0)?;
        let w_t = ctx.input(1)?;
        let [wk, wn] = *w_t.shape() else {
            return Err(KernelError::invalid("weights must be [hidden, 3·hidden]"));
        };
        if wk != hin {
            return Err(KernelError::invalid(format!(
                "weights have {wk} rows; the input's hidden size is {hin}"
            )));
        }
        let [dq, dk, dv] = self.sizes.unwrap_or([wn / 3; 3]);
        if dq + dk + dv != wn || dq != dk || dq % self.heads != 0 || dv % self.heads != 0 {
            return Err(KernelError::invalid(format!(
                "weights have {wn} columns; q/k/v sizes {dq}/{dk}/{dv} must add up and divide by num_heads {}",
                self.heads
            )));
        }
        let w = f32s(ctx, 1)?;
        let mut qkv = vec![0f32; b * s * wn];
        for r in 0..b * s {
            let xr = &x[r * hin..(r + 1) * hin];
            let o = &mut qkv[r * wn..(r + 1) * wn];
            for (kk, &xv) in xr.iter().enumerate() {
                for (o, wv) in o.iter_mut().zip(&w[kk * wn..(kk + 1) * wn]) {
                    *o += xv * wv;
                }
            }
        }
        if let Some(bias) = opt_f32s(ctx, 2)? {
            crate::util::check_len("bias", &bias, wn)?;
            add_last(&mut qkv, &bias);
        }
        let split = |from: usize, d: usize| -> Vec<f32> {
            let mut out = Vec::with_capacity(b * s * d);
            for r in 0..b * s {
                out.extend_from_slice(&qkv[r * wn + from..r * wn + from + d]);
            }
            out
        };
        let n = self.heads;
        let (h, hv) = (dq / n, dv / n);
        let q = to_heads(&split(0, dq), b, s, n, h);
        let mut k = to_heads(&split(dq, dk), b, s, n, h);
        let mut v = to_heads(&split(dq + dk, dv), b, s, n, hv);
        // The past keys and values [2, B, N, P, h] go before this step's: P + S keys in all.
        let mut p = 0;
        if let Some(past_t) = ctx.opt_input(4)? {
            let shape = past_t.shape().to_vec();
            match shape[..] {
                [2, pb, pn, pp, ph] if pb == b && pn == n && ph == h && hv == h => p = pp,
                _ => {
                    return Err(KernelError::invalid(format!(
                        "past is {shape:?}; it must be [2, {b}, {n}, past_sequence, {h}] (and the \
                         value head size {hv} equal to the key's)"
                    )))
                }
            }
            let past = floats(&past_t, 4)?;
            let (pk, pv) = past.split_at(past.len() / 2);
            k = prepend_past(pk, &k, b * n, p * h, s * h);
            v = prepend_past(pv, &v, b * n, p * h, s * h);
        }
        let l = p + s;
        let mask = Mask::parse(ctx.opt_input(3)?, b, l)?;
        let attn_bias = opt_f32s(ctx, 5)?;
        let bias_at = attention_bias(
            attn_bias.as_deref(),
            ctx.opt_input(5)?.map(|t| t.shape().to_vec()),
            b,
            n,
            s,
            l,
        )?;
        let (causal, filter) = (self.causal, self.filter);
        let score = |bi: usize, ni: usize, i: usize, j: usize| -> Option<f32> {
            // Query i is position p + i: it sees every past key and this step's up to itself.
            if causal && j > p + i {
                return None;
            }
            let m = if mask.masked(bi, j) { filter } else { 0.0 };
            Some(m + bias_at(bi, ni, i, j))
        };
        let heads = Heads {
            q: &q,
            k: &k,
            v: &v,
            b,
            n,
            nk: n,
            s,
            l,
            h,
            hv,
        };
        let out = attend(&heads, scale_or_default(self.scale, h), &score);
        put_f32(ctx, 0, &[b, s, dv], out)?;
        if ctx.output_used(1) {
            let mut present = k;
            present.extend_from_slice(&v);
            put_f32(ctx, 1, &[2, b, n, l, h], present)?;
        }
        Ok(())
    }
}

/// Per (batch, head) block: `past` rows (`past_len` floats each block) then `new` rows.
fn prepend_past(
    past: &[f32],
    new: &[f32],
    blocks: usize,
    past_len: usize,
    new_len: usize,
) -> Vec<f32> {
    let mut out = Vec::with_capacity(blocks * (past_len + new_len));
    for i in 0..blocks {
        out.extend_from_slice(&past[i * past_len..(i + 1) * past_len]);
        out.extend_from_slice(&new[i * new_len..(i + 1) * new_len]);
    }
    out
}

/// A bias lookup by (batch, head, query, key).
type BiasLookup<'a> = Box<dyn Fn(usize, usize, usize, usize) -> f32 + 'a>;

/// An additive attention bias [B or 1, N or 1, S, L] as a lookup.
fn attention_bias<'a>(
    v: Option<&'a [f32]>,
    shape: Option<Vec<usize>>,
    b: usize,
    n: usize,
    s: usize,
    l: usize,
) -> KernelResult<BiasLookup<'a>> {
    let (Some(v), Some(shape)) = (v, shape) else {
        return Ok(Box::new(|_, _, _, _| 0.0));
    };
    let ok = shape.len() == 4
        && (shape[0] == 1 || shape[0] == b)
        && (shape[1] == 1 || shape[1] == n)
        && shape[2] == s
        && shape[3] == l;
    if !ok {
        return Err(KernelError::invalid(format!(
            "attention_bias is {shape:?}; it must be [{b} or 1, {n} or 1, {s}, {l}]"
        )));
    }
    let (bs, ns) = (shape[0] > 1, shape[1] > 1);
    Ok(Box::new(move |bi, ni, i, j| {
        let bi = if bs { bi } else { 0 };
        let ni = if ns { ni } else { 0 };
        v[((bi * shape[1] + ni) * s + i) * l + j]
    }))
}

struct MultiHeadAttention {
    heads: usize,
    causal: bool,
    scale: f32,
    filter: f32,
}

pub(crate) fn multi_head_attention(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(MultiHeadAttention {
        heads: positive(init.int("num_heads")?, "num_heads")?,
        causal: init.int_or("unidirectional", 0)? != 0,
        scale: init.float_or("scale", 0.0)?,
        filter: init.float_or("mask_filter_value", -10000.0)?,
    }))
}

impl Kernel for MultiHeadAttention {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let n = self.heads;
        let q_t = ctx.input(0)?;
        let [b, s, dq] = *q_t.shape() else {
            return Err(KernelError::unsupported(format!(
                "query of shape {:?}: supported is [batch, sequence, hidden]",
                q_t.shape()
            )));
        };
        let (Some(k_t), Some(v_t)) = (ctx.opt_input(1)?, ctx.opt_input(2)?) else {
            return Err(KernelError::unsupported("packed QKV (no key/value inputs)"));
        };
        for (i, what) in [(8, "past_sequence_length"), (9, "cache_indirection")] {
            if ctx.opt_input(i)?.is_some() {
                return Err(KernelError::unsupported(format!(
                    "MultiHeadAttention with {what} (a shared past/present buffer or beam search)"
                )));
            }
        }
        let (&[bk, l, dk], &[bv, lv, dv]) = (k_t.shape(), v_t.shape()) else {
            return Err(KernelError::unsupported(
                "key/value other than [batch, kv_sequence, hidden]",
            ));
        };
        if bk != b || bv != b || lv != l || dk != dq || dq % n != 0 || dv % n != 0 {
            return Err(KernelError::invalid(format!(
                "query {:?}, key {:?}, value {:?} do not match (num_heads {n})",
                q_t.shape(),
                k_t.shape(),
                v_t.shape()
            )));
        }
        let mut q = f32s(ctx, 0)?;
        let mut k = floats(&k_t, 1)?;
        let mut v = floats(&v_t, 2)?;
        if let Some(bias) = opt_f32s(ctx, 3)? {
            crate::util::check_len("bias", &bias, dq + dk + dv)?;
            add_last(&mut q, &bias[..dq]);
            add_last(&mut k, &bias[dq..dq + dk]);
            add_last(&mut v, &bias[dq + dk..]);
        }
        let (h, hv) = (dq / n, dv / n);
        let qh = to_heads(&q, b, s, n, h);
        let mut kh = to_heads(&k, b, l, n, h);
        let mut vh = to_heads(&v, b, l, n, hv);
        // past_key [B, N, P, h] and past_value [B, N, P, hv] go before this step's keys.
        let (past_k, past_v) = (ctx.opt_input(6)?, ctx.opt_input(7)?);
        let mut p = 0;
        match (past_k, past_v) {
            (None, None) => {}
            (Some(pk_t), Some(pv_t)) => {
                let (pk_s, pv_s) = (pk_t.shape().to_vec(), pv_t.shape().to_vec());
                match (&pk_s[..], &pv_s[..]) {
                    (&[kb, kn, kp, kh_], &[vb, vn, vp, vh_])
                        if kb == b && vb == b && kn == n && vn == n && kp == vp && kh_ == h && vh_ == hv =>
                    {
                        p = kp
                    }
                    _ => {
                        return Err(KernelError::invalid(format!(
                            "past_key {pk_s:?} and past_value {pv_s:?} must be [{b}, {n}, past_sequence, {h}] and [{b}, {n}, past_sequence, {hv}]"
                        )))
                    }
                }
                let (pk, pv) = (floats(&pk_t, 6)?, floats(&pv_t, 7)?);
                kh = prepend_past(&pk, &kh, b * n, p * h, l * h);
                vh = prepend_past(&pv, &vh, b * n, p * hv, l * hv);
            }
            _ => {
                return Err(KernelError::invalid(
                    "past_key and past_value must be given together",
                ))
            }
        }
        let l = p + l;
        let mask = Mask::parse(ctx.opt_input(4)?, b, l)?;
        let attn_bias = opt_f32s(ctx, 5)?;
        let bias_at = attention_bias(
            attn_bias.as_deref(),
            ctx.opt_input(5)?.map(|t| t.shape().to_vec()),
            b,
            n,
            s,
            l,
        )?;
        let (causal, filter) = (self.causal, self.filter);
        let score = |bi: usize, ni: usize, i: usize, j: usize| -> Option<f32> {
            if causal && j > i + (l - s.min(l)) {
                return None;
            }
            let m = if mask.masked(bi, j) { filter } else { 0.0 };
            Some(m + bias_at(bi, ni, i, j))
        };
        let heads = Heads {
            q: &qh,
            k: &kh,
            v: &vh,
            b,
            n,
            nk: n,
            s,
            l,
            h,
            hv,
        };
        let out = attend(&heads, scale_or_default(self.scale, h), &score);
        put_f32(ctx, 0, &[b, s, dv], out)?;
        if ctx.output_used(1) {
            put_f32(ctx, 1, &[b, n, l, h], kh)?;
        }
        if ctx.output_used(2) {
            put_f32(ctx, 2, &[b, n, l, hv], vh)?;
        }
        Ok(())
    }
}
