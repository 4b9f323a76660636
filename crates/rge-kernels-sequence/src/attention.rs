//! Attention (opsets 23–25): scaled dot-product attention over 3-D or 4-D Q/K/V with grouped
//! query heads, an internal KV cache (past/present), an external cache (`nonpad_kv_seqlen`),
//! bool or additive masks, causal and sliding-window masking, softcap, softmax precision and
//! the optional QK output. Values are rounded to the input type at the same points as the
//! ONNX reference so float16 / bfloat16 results match it.

use std::sync::Arc;

use rayon::prelude::*;
use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef};

use crate::attention_bias::{BiasSpec, Mask};
use crate::attention_fast::HeadMath;
use crate::common::{
    float_dtype_attr, gemm, read, read_ints, ref_sum, rounder, sums_round_each_step, want_float,
    write, Acc, Gemm, Round,
};

/// The Attention kernel.
pub struct Attention {
    opset: i64,
    scale: Option<f32>,
    is_causal: bool,
    q_num_heads: Option<i64>,
    kv_num_heads: Option<i64>,
    softmax_precision: Option<DType>,
    softcap: f32,
    mode: i64,
    left: i64,
    right: i64,
    /// The f32 fast path's per-head arithmetic, taken where the path applies
    /// ([`crate::attention_fast`]); None keeps every call on the general kernel.
    fast: Option<Arc<dyn HeadMath>>,
}

/// Builds an Attention kernel with the f32 fast path off (what the fast path is tested
/// against).
#[cfg(test)]
pub(crate) fn general(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(build(init, None)?))
}

/// Builds an Attention kernel (the `cpu` engine's: its fast path on [`PortableHeads`]).
///
/// [`PortableHeads`]: crate::attention_fast::PortableHeads
pub fn attention(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(build(
        init,
        Some(crate::attention_fast::portable()),
    )?))
}

/// Builds an Attention kernel whose f32 fast path runs each head with `heads` (another
/// engine's GEMM and vector code); every other call runs the general kernel, as in
/// [`attention`].
pub fn attention_with(
    init: &KernelInit<'_>,
    heads: Arc<dyn HeadMath>,
) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(build(init, Some(heads))?))
}

fn build(init: &KernelInit<'_>, fast: Option<Arc<dyn HeadMath>>) -> KernelResult<Attention> {
    let mode = init.int_or("qk_matmul_output_mode", 0)?;
    if !(0..=3).contains(&mode) {
        return Err(KernelError::attr(
            "qk_matmul_output_mode",
            format!("{mode} is not 0, 1, 2 or 3"),
        ));
    }
    let left = init.int_or("left_window_size", -1)?;
    let right = init.int_or("right_window_size", -1)?;
    for (name, v) in [("left_window_size", left), ("right_window_size", right)] {
        if v < -1 {
            return Err(KernelError::attr(name, "must be -1 or nonnegative"));
        }
    }
    let heads = |name: &str| -> KernelResult<Option<i64>> {
        match init.int_opt(name)? {
            Some(v) if v <= 0 => Err(KernelError::attr(name, "must be positive")),
            v => Ok(v),
        }
    };
    let softmax_precision = init
        .int_opt("softmax_precision")?
        .map(|v| float_dtype_attr("softmax_precision", v))
        .transpose()?;
    Ok(Attention {
        opset: init.opset,
        scale: init.float_opt("scale")?,
        is_causal: init.int_or("is_causal", 0)? != 0,
        q_num_heads: heads("q_num_heads")?,
        kv_num_heads: heads("kv_num_heads")?,
        softmax_precision,
        softcap: init.float_or("softcap", 0.0)?,
        mode,
        left,
        right,
        fast,
    })
}

/// Resolved sizes of one call.
#[derive(Clone, Copy, Debug)]
struct Dims {
    batch: usize,
    hq: usize,
    hkv: usize,
    lq: usize,
    lk: usize,
    past: usize,
    total: usize,
    dq: usize,
    dv: usize,
    three_d: bool,
}

impl Attention {
    fn dims(
        &self,
        q: &TensorRef<'_>,
        k: &TensorRef<'_>,
        v: &TensorRef<'_>,
        past: Option<(&TensorRef<'_>, &TensorRef<'_>)>,
    ) -> KernelResult<Dims> {
        let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
        if qs.len() != ks.len() || qs.len() != vs.len() || !(3..=4).contains(&qs.len()) {
            return Err(KernelError::invalid(format!(
                "Q, K, V must all be 3-D or all 4-D, got {qs:?}, {ks:?}, {vs:?}"
            )));
        }
        let three_d = qs.len() == 3;
        let (batch, hq, hkv, lq, lk, dq, dk, dv);
        if three_d {
            let (Some(nq), Some(nkv)) = (self.q_num_heads, self.kv_num_heads) else {
                return Err(KernelError::attr(
                    "q_num_heads",
                    "q_num_heads and kv_num_heads are required for 3-D inputs",
                ));
            };
            (hq, hkv) = (nq as usize, nkv as usize);
            for (name, hidden, h) in [("Q", qs[2], hq), ("K", ks[2], hkv), ("V", vs[2], hkv)] {
                if hidden % h != 0 {
                    return Err(KernelError::invalid(format!(
                        "{name} hidden size {hidden} is not a multiple of its head count {h}"
                    )));
                }
            }
            (batch, lq, lk) = (qs[0], qs[1], ks[1]);
            (dq, dk, dv) = (qs[2] / hq, ks[2] / hkv, vs[2] / hkv);
            if vs[1] != lk {
                return Err(KernelError::invalid("K and V sequence lengths differ"));
            }
        } else {
            if self.opset >= 25 && (self.q_num_heads.is_some() || self.kv_num_heads.is_some()) {
                return Err(KernelError::attr(
                    "q_num_heads",
                    "q_num_heads and kv_num_heads must not be set for 4-D inputs",
                ));
            }
            (batch, hq, lq, dq) = (qs[0], qs[1], qs[2], qs[3]);
            (hkv, lk, dk) = (ks[1], ks[2], ks[3]);
            dv = vs[3];
            if vs[1] != hkv || vs[2] != lk {
                return Err(KernelError::invalid(format!(
                    "K {ks:?} and V {vs:?} disagree on heads or sequence length"
                )));
            }
        }
        if ks[0] != batch || vs[0] != batch {
            return Err(KernelError::invalid("Q, K, V batch sizes differ"));
        }
        if dk != dq {
            return Err(KernelError::invalid(format!(
                "Q head size {dq} differs from K head size {dk}"
            )));
        }
        if hkv == 0 || hq % hkv != 0 {
            return Err(KernelError::invalid(format!(
                "q heads {hq} must be a multiple of kv heads {hkv}"
            )));
        }
        let mut past_len = 0;
        if let Some((pk, pv)) = past {
            let (a, b) = (pk.shape(), pv.shape());
            if a.len() != 4 || b.len() != 4 {
                return Err(KernelError::invalid("past_key and past_value must be 4-D"));
            }
            if a[0] != batch
                || a[1] != hkv
                || a[3] != dk
                || b[0] != batch
                || b[1] != hkv
                || b[2] != a[2]
                || b[3] != dv
            {
                return Err(KernelError::invalid(format!(
                    "past_key {a:?} / past_value {b:?} do not fit batch {batch}, kv heads \
                     {hkv}, head sizes {dk} / {dv}"
                )));
            }
            past_len = a[2];
        }
        Ok(Dims {
            batch,
            hq,
            hkv,
            lq,
            lk,
            past: past_len,
            total: past_len + lk,
            dq,
            dv,
            three_d,
        })
    }

    fn run<F: Acc>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let q = ctx.input(0)?;
        let k = ctx.input(1)?;
        let v = ctx.input(2)?;
        let mask_t = ctx.opt_input(3)?;
        let past = match (ctx.opt_input(4)?, ctx.opt_input(5)?) {
            (Some(a), Some(b)) => Some((a, b)),
            (None, None) => None,
            _ => {
                return Err(KernelError::invalid(
                    "past_key and past_value must be given together",
                ))
            }
        };
        let nonpad_t = ctx.opt_input(6)?;
        let d = self.dims(&q, &k, &v, past.as_ref().map(|(a, b)| (a, b)))?;
        let t_dt = q.dtype();
        let rt: Round<F> = rounder::<F>(t_dt);
        let p_dt = self.softmax_precision.unwrap_or(t_dt);
        let rp: Round<F> = rounder::<F>(p_dt);
        let p_step = sums_round_each_step(p_dt);

        // Q, K, V in (batch, heads, seq, head) layout.
        let qf = to_heads(read::<F>(&q)?, d.batch, d.lq, d.hq, d.dq, d.three_d);
        let kf = to_heads(read::<F>(&k)?, d.batch, d.lk, d.hkv, d.dq, d.three_d);
        let vf = to_heads(read::<F>(&v)?, d.batch, d.lk, d.hkv, d.dv, d.three_d);
        let (kt, vt) = match &past {
            Some((pk, pv)) => (
                concat_seq(&read::<F>(pk)?, &kf, d.batch * d.hkv, d.past, d.lk, d.dq),
                concat_seq(&read::<F>(pv)?, &vf, d.batch * d.hkv, d.past, d.lk, d.dv),
            ),
            None => (kf, vf),
        };

        // sqrt(scale) in the input type, applied to Q and K.
        let scale = self.scale.map_or(1.0 / (d.dq as f64).sqrt(), |s| s as f64);
        let s = rt(F::of(scale.sqrt()));
        let qs: Vec<F> = qf.iter().map(|&x| rt(x * s)).collect();
        let ks: Vec<F> = kt.iter().map(|&x| rt(x * s)).collect();

        let mask = mask_t
            .as_ref()
            .map(|m| Mask::new(m, [d.batch, d.hq, d.lq], d.total, rt))
            .transpose()?;
        let nonpad = match &nonpad_t {
            Some(t) => {
                if past.is_some() {
                    return Err(KernelError::invalid(
                        "nonpad_kv_seqlen cannot be combined with past_key / past_value",
                    ));
                }
                let n = read_ints(t, "nonpad_kv_seqlen")?;
                if n.len() != d.batch {
                    return Err(KernelError::invalid(format!(
                        "nonpad_kv_seqlen has {} values, expected batch size {}",
                        n.len(),
                        d.batch
                    )));
                }
                Some(n)
            }
            None => None,
        };
        let offsets: Vec<i64> = match &nonpad {
            Some(n) => n.iter().map(|&x| x - d.lq as i64).collect(),
            None => vec![d.past as i64; d.batch],
        };
        let bias = BiasSpec {
            mask: mask.as_ref(),
            is_causal: self.is_causal,
            left: self.left,
            right: self.right,
            offsets,
            nonpad,
            round: rt,
        };

        let want_qk = ctx.output_count() > 3 && ctx.output_used(3);
        let heads = d.batch * d.hq;
        let mut y = vec![F::zero(); heads * d.lq * d.dv];
        let mut qk_out = if want_qk {
            vec![F::zero(); heads * d.lq * d.total]
        } else {
            Vec::new()
        };
        let head = HeadCtx {
            d,
            qs: &qs,
            ks: &ks,
            vs: &vt,
            bias: &bias,
            rt,
            rp,
            p_step,
            softcap: self.softcap,
            mode: self.mode,
        };
        let work = heads * d.lq * d.total * (d.dq + d.dv);
        let (ych, qch) = (d.lq * d.dv, d.lq * d.total);
        if ctx.threads() > 1 && work > (1 << 16) && heads > 1 && ych > 0 {
            if want_qk && qch > 0 {
                y.par_chunks_mut(ych)
                    .zip(qk_out.par_chunks_mut(qch))
                    .enumerate()
                    .try_for_each(|(bh, (yc, qc))| head.run(bh, yc, Some(qc)))?;
            } else {
                y.par_chunks_mut(ych)
                    .enumerate()
                    .try_for_each(|(bh, yc)| head.run(bh, yc, None))?;
            }
        } else {
            for bh in 0..heads {
                let yc = &mut y[bh * ych..(bh + 1) * ych];
                let qc = if want_qk {
                    Some(&mut qk_out[bh * qch..(bh + 1) * qch])
                } else {
                    None
                };
                head.run(bh, yc, qc)?;
            }
        }

        // Outputs.
        if d.three_d {
            let y3 = from_heads(&y, d.batch, d.lq, d.hq, d.dv);
            write(ctx, 0, t_dt, &[d.batch, d.lq, d.hq * d.dv], &y3)?;
        } else {
            write(ctx, 0, t_dt, &[d.batch, d.hq, d.lq, d.dv], &y)?;
        }
        if ctx.output_count() > 1 && ctx.output_used(1) {
            write(ctx, 1, k.dtype(), &[d.batch, d.hkv, d.total, d.dq], &kt)?;
        }
        if ctx.output_count() > 2 && ctx.output_used(2) {
            write(ctx, 2, v.dtype(), &[d.batch, d.hkv, d.total, d.dv], &vt)?;
        }
        if want_qk {
            write(ctx, 3, t_dt, &[d.batch, d.hq, d.lq, d.total], &qk_out)?;
        }
        Ok(())
    }
}

/// Read-only state shared by the per-head computations.
struct HeadCtx<'a, F> {
    d: Dims,
    qs: &'a [F],
    ks: &'a [F],
    vs: &'a [F],
    bias: &'a BiasSpec<'a, F>,
    rt: Round<F>,
    rp: Round<F>,
    p_step: bool,
    softcap: f32,
    mode: i64,
}

impl<F: Acc> HeadCtx<'_, F> {
    /// Computes head `bh` (batch·q_heads + head): `y` gets its (lq × dv) output, `qk_out`
    /// (lq × total) the requested QK output.
    fn run(&self, bh: usize, y: &mut [F], mut qk_out: Option<&mut [F]>) -> KernelResult<()> {
        let d = &self.d;
        let (b, h) = (bh / d.hq, bh % d.hq);
        let kvh = b * d.hkv + h / (d.hq / d.hkv);
        let (lq, lt, dq, dv) = (d.lq, d.total, d.dq, d.dv);
        let q = &self.qs[bh * lq * dq..(bh + 1) * lq * dq];
        let k = &self.ks[kvh * lt * dq..(kvh + 1) * lt * dq];
        let v = &self.vs[kvh * lt * dv..(kvh + 1) * lt * dv];
        let (rt, rp) = (self.rt, self.rp);

        // scores = (Q·s)(K·s)^T
        let mut scores = vec![F::zero(); lq * lt];
        gemm(
            Gemm {
                m: lq,
                k: dq,
                n: lt,
                a: (dq, 1),
                b: (1, dq),
                c: (lt, 1),
                accumulate: false,
            },
            q,
            k,
            &mut scores,
        )?;
        let cap = rt(F::of(self.softcap as f64));
        let capped = self.softcap > 0.0;
        for x in scores.iter_mut() {
            *x = rt(*x);
            if capped {
                *x = rt(rt(rt(*x / cap).tanh()) * cap);
            }
        }
        if let (Some(out), 0 | 1) = (qk_out.as_deref_mut(), self.mode) {
            out.copy_from_slice(&scores);
        }

        let trivial = self.bias.is_trivial();
        let mut bias = vec![F::zero(); lt];
        let mut e = vec![F::zero(); lt];
        for i in 0..lq {
            if !trivial {
                self.bias.row(b, h, i, &mut bias);
            }
            let row = &mut scores[i * lt..(i + 1) * lt];
            for (x, &bv) in row.iter_mut().zip(&bias) {
                *x = rt(*x + bv);
            }
            if let (Some(out), 2) = (qk_out.as_deref_mut(), self.mode) {
                out[i * lt..(i + 1) * lt].copy_from_slice(row);
            }
            // Softmax in the softmax precision.
            let mut mx = F::neg_infinity();
            for x in row.iter_mut() {
                *x = rp(*x);
                if x.is_nan() || mx.is_nan() {
                    mx = F::nan();
                } else if *x > mx {
                    mx = *x;
                }
            }
            let safe = if mx == F::neg_infinity() {
                F::zero()
            } else {
                mx
            };
            for (ej, &x) in e.iter_mut().zip(row.iter()) {
                *ej = rp(rp(x - safe).exp());
            }
            let mut sum = ref_sum(e.iter().copied(), rp, self.p_step);
            if sum == F::zero() {
                sum = F::one();
            }
            let masked = lt > 0 && !trivial && bias.iter().all(|&bv| bv == F::neg_infinity());
            for (x, &ej) in row.iter_mut().zip(&e) {
                *x = if masked { F::zero() } else { rp(ej / sum) };
                *x = rt(*x);
            }
            if let (Some(out), 3) = (qk_out.as_deref_mut(), self.mode) {
                out[i * lt..(i + 1) * lt].copy_from_slice(row);
            }
        }

        // Y = P·V
        gemm(
            Gemm {
                m: lq,
                k: lt,
                n: dv,
                a: (lt, 1),
                b: (dv, 1),
                c: (dv, 1),
                accumulate: false,
            },
            &scores,
            v,
            y,
        )?;
        for x in y.iter_mut() {
            *x = rt(*x);
        }
        Ok(())
    }
}

/// (batch, seq, heads·d) → (batch, heads, seq, d); 4-D data passes through.
pub(crate) fn to_heads<F: Copy>(
    x: Vec<F>,
    b: usize,
    s: usize,
    h: usize,
    d: usize,
    three_d: bool,
) -> Vec<F> {
    if !three_d || h == 1 || s == 1 {
        return x;
    }
    let mut out = Vec::with_capacity(x.len());
    for bi in 0..b {
        for hi in 0..h {
            for si in 0..s {
                let off = ((bi * s + si) * h + hi) * d;
                out.extend_from_slice(&x[off..off + d]);
            }
        }
    }
    out
}

/// (batch, heads, seq, d) → (batch, seq, heads·d).
pub(crate) fn from_heads<F: Copy>(x: &[F], b: usize, s: usize, h: usize, d: usize) -> Vec<F> {
    if h == 1 || s == 1 {
        return x.to_vec();
    }
    let mut out = Vec::with_capacity(x.len());
    for bi in 0..b {
        for si in 0..s {
            for hi in 0..h {
                let off = ((bi * h + hi) * s + si) * d;
                out.extend_from_slice(&x[off..off + d]);
            }
        }
    }
    out
}

/// Concatenates (n, a, d) and (n, c, d) along the middle axis.
fn concat_seq<F: Copy>(past: &[F], cur: &[F], n: usize, a: usize, c: usize, d: usize) -> Vec<F> {
    let mut out = Vec::with_capacity(n * (a + c) * d);
    for i in 0..n {
        out.extend_from_slice(&past[i * a * d..(i + 1) * a * d]);
        out.extend_from_slice(&cur[i * c * d..(i + 1) * c * d]);
    }
    out
}

impl Kernel for Attention {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let softmax_f32 = matches!(self.softmax_precision, None | Some(DType::Float));
        let fast = self.fast.as_deref();
        if let Some(math) =
            fast.filter(|_| crate::attention_fast::applies(ctx, self.softcap, softmax_f32))
        {
            let spec = crate::attention_fast::FastSpec {
                scale: self.scale,
                is_causal: self.is_causal,
                left: self.left,
                right: self.right,
            };
            return crate::attention_fast::run(spec, ctx, math);
        }
        let mut wide = self.softmax_precision == Some(DType::Double);
        for i in 0..3 {
            let t = ctx.input(i)?;
            want_float(&t, ["Q", "K", "V"][i])?;
            wide |= t.dtype() == DType::Double;
        }
        if wide {
            self.run::<f64>(ctx)
        } else {
            self.run::<f32>(ctx)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_kernels::{run_owned, Tensor, Value};

    fn kernel() -> Attention {
        Attention {
            opset: 24,
            scale: None,
            is_causal: false,
            q_num_heads: None,
            kv_num_heads: None,
            softmax_precision: None,
            softcap: 0.0,
            mode: 0,
            left: -1,
            right: -1,
            fast: None,
        }
    }

    fn t(shape: &[usize]) -> Value {
        let n: usize = shape.iter().product();
        Value::Tensor(
            Tensor::from_vec(shape, (0..n).map(|i| (i % 7) as f32 * 0.1).collect()).unwrap(),
        )
    }

    fn run(k: &Attention, ins: &[Option<Value>], n: usize) -> KernelResult<Vec<Option<Value>>> {
        let refs: Vec<Option<&Value>> = ins.iter().map(Option::as_ref).collect();
        run_owned(k, &refs, n, 1, None)
    }

    #[test]
    fn bad_inputs_are_errors() {
        let k = kernel();
        let (q, kv) = (t(&[1, 4, 2, 8]), t(&[1, 2, 3, 8]));
        // Fine: GQA 4 over 2.
        assert!(run(
            &k,
            &[Some(q.clone()), Some(kv.clone()), Some(kv.clone())],
            1
        )
        .is_ok());
        // Heads that do not divide.
        let kv3 = t(&[1, 3, 3, 8]);
        assert!(run(&k, &[Some(q.clone()), Some(kv3.clone()), Some(kv3)], 1).is_err());
        // Head size mismatch.
        let k6 = t(&[1, 2, 3, 6]);
        assert!(run(&k, &[Some(q.clone()), Some(k6), Some(kv.clone())], 1).is_err());
        // Mixed ranks.
        assert!(run(
            &k,
            &[Some(t(&[1, 2, 32])), Some(kv.clone()), Some(kv.clone())],
            1
        )
        .is_err());
        // 3-D without head counts.
        let q3 = t(&[1, 2, 32]);
        let k3 = t(&[1, 3, 16]);
        assert!(run(
            &k,
            &[Some(q3.clone()), Some(k3.clone()), Some(k3.clone())],
            1
        )
        .is_err());
        let mut k3d = kernel();
        k3d.q_num_heads = Some(4);
        k3d.kv_num_heads = Some(2);
        assert!(run(&k3d, &[Some(q3), Some(k3.clone()), Some(k3)], 1).is_ok());
        // Mask that does not broadcast, or is longer than the keys.
        let base = [Some(q.clone()), Some(kv.clone()), Some(kv.clone())];
        let mut ins = base.to_vec();
        ins.push(Some(t(&[3, 3])));
        assert!(run(&k, &ins, 1).is_err());
        ins[3] = Some(t(&[2, 4]));
        assert!(run(&k, &ins, 1).is_err());
        // past_key without past_value.
        let mut ins = base.to_vec();
        ins.extend([None, Some(t(&[1, 2, 5, 8])), None]);
        assert!(run(&k, &ins, 3).is_err());
        // past with the wrong head count.
        ins[5] = Some(t(&[1, 2, 5, 8]));
        ins[4] = Some(t(&[1, 1, 5, 8]));
        assert!(run(&k, &ins, 3).is_err());
        // nonpad_kv_seqlen of the wrong length.
        let mut ins = base.to_vec();
        ins.extend([None, None, None]);
        ins.push(Some(Value::Tensor(
            Tensor::from_vec(&[2], vec![1i64, 2]).unwrap(),
        )));
        assert!(run(&k, &ins, 1).is_err());
        // Integer inputs.
        let qi = Value::Tensor(Tensor::from_vec(&[1, 1, 1, 1], vec![1i32]).unwrap());
        assert!(run(&k, &[Some(qi.clone()), Some(qi.clone()), Some(qi)], 1).is_err());
    }

    #[test]
    fn fully_masked_rows_and_present_outputs() {
        let mut k = kernel();
        k.mode = 3;
        let (q, kv) = (t(&[1, 1, 2, 4]), t(&[1, 1, 3, 4]));
        let mask = Value::Tensor(
            Tensor::from_vec(&[2, 3], vec![false, false, false, true, true, false]).unwrap(),
        );
        let past = t(&[1, 1, 1, 4]);
        let ins = [
            Some(q),
            Some(kv.clone()),
            Some(kv),
            Some(mask),
            Some(past.clone()),
            Some(past),
        ];
        let out = run(&k, &ins, 4).unwrap();
        let get = |i: usize| match &out[i] {
            Some(Value::Tensor(t)) => (t.shape().to_vec(), t.as_slice::<f32>().unwrap().to_vec()),
            _ => panic!("output {i} missing"),
        };
        let (ys, y) = get(0);
        assert_eq!(ys, vec![1, 1, 2, 4]);
        assert!(
            y[..4].iter().all(|&v| v == 0.0),
            "fully masked row gives zeros"
        );
        assert_eq!(get(1).0, vec![1, 1, 4, 4]);
        let (ps, p) = get(3);
        assert_eq!(ps, vec![1, 1, 2, 4]);
        assert!(p[..4].iter().all(|&v| v == 0.0));
        // Row 1: keys 0 and 1 allowed, 2 masked, 3 padded (-inf).
        assert!(p[6] == 0.0 && p[7] == 0.0 && (p[4] + p[5] - 1.0).abs() < 1e-6);
    }
}

#[cfg(test)]
mod threaded_tests {
    use super::*;
    use rge_kernels::{run_owned, Tensor, Value};

    #[test]
    fn threads_give_the_same_result() {
        let k = Attention {
            opset: 23,
            scale: None,
            is_causal: true,
            q_num_heads: Some(8),
            kv_num_heads: Some(2),
            softmax_precision: None,
            softcap: 0.0,
            mode: 2,
            left: -1,
            right: -1,
            fast: Some(crate::attention_fast::portable()),
        };
        let mk = |s: &[usize], seed: usize| {
            let n: usize = s.iter().product();
            let v = (0..n)
                .map(|i| ((i * 31 + seed) % 97) as f32 / 97.0 - 0.5)
                .collect();
            Value::Tensor(Tensor::from_vec(s, v).unwrap())
        };
        let (q, kk, v) = (
            mk(&[2, 40, 256], 1),
            mk(&[2, 40, 64], 2),
            mk(&[2, 40, 64], 3),
        );
        let ins = [Some(&q), Some(&kk), Some(&v)];
        let one = run_owned(&k, &ins, 4, 1, None).unwrap();
        let many = run_owned(&k, &ins, 4, 4, None).unwrap();
        assert_eq!(one, many);
    }
}
