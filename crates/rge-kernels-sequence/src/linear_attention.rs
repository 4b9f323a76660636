//! LinearAttention (opset 27): the recurrent form of linear attention with a (d_k × d_v)
//! state per key/value head, optionally gated (`decay`, state ·= exp(g)) and/or with the delta
//! rule (`beta`, v ← β(v − Sᵀk)); query heads read their group's state (GQA). Computes in f32
//! (f64 for double) like the reference, output in the query type, state in the past state's
//! type.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::common::{read, want_float, write, Acc};

/// The LinearAttention kernel.
pub struct LinearAttention {
    q_heads: usize,
    kv_heads: usize,
    scale: f32,
    gating: bool,
    delta: bool,
}

/// Builds a LinearAttention kernel.
pub fn linear_attention(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let rule = init.str_or("update_rule", "gated_delta")?;
    let (gating, delta) = match rule {
        "linear" => (false, false),
        "gated" => (true, false),
        "delta" => (false, true),
        "gated_delta" => (true, true),
        other => {
            return Err(KernelError::attr(
                "update_rule",
                format!("{other:?} is not linear, gated, delta or gated_delta"),
            ))
        }
    };
    let q_heads = init.int("q_num_heads")?;
    let kv_heads = init.int("kv_num_heads")?;
    if q_heads <= 0 || kv_heads <= 0 || q_heads % kv_heads != 0 {
        return Err(KernelError::attr(
            "q_num_heads",
            format!("q_num_heads {q_heads} must be a positive multiple of kv_num_heads {kv_heads}"),
        ));
    }
    Ok(Box::new(LinearAttention {
        q_heads: q_heads as usize,
        kv_heads: kv_heads as usize,
        scale: init.float_or("scale", 0.0)?,
        gating,
        delta,
    }))
}

impl LinearAttention {
    fn run<F: Acc>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let q = ctx.input(0)?;
        let k = ctx.input(1)?;
        let v = ctx.input(2)?;
        let past = ctx.opt_input(3)?;
        let decay = ctx.opt_input(4)?;
        let beta = ctx.opt_input(5)?;
        for (t, n) in [(&q, "query"), (&k, "key"), (&v, "value")] {
            want_float(t, n)?;
            if t.rank() != 3 {
                return Err(KernelError::invalid(format!(
                    "{n} must be 3-D (batch, seq, heads·dim), got {:?}",
                    t.shape()
                )));
            }
        }
        match (self.gating, decay.is_some()) {
            (true, false) => return Err(KernelError::invalid("this update_rule needs decay")),
            (false, true) => return Err(KernelError::invalid("this update_rule forbids decay")),
            _ => {}
        }
        match (self.delta, beta.is_some()) {
            (true, false) => return Err(KernelError::invalid("this update_rule needs beta")),
            (false, true) => return Err(KernelError::invalid("this update_rule forbids beta")),
            _ => {}
        }
        let (hq, hkv) = (self.q_heads, self.kv_heads);
        let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
        let (batch, seq) = (qs[0], qs[1]);
        if qs[2] % hq != 0 || vs[2] % hkv != 0 {
            return Err(KernelError::invalid(format!(
                "query {qs:?} / value {vs:?} last dims do not divide by their head counts"
            )));
        }
        let (dk, dv) = (qs[2] / hq, vs[2] / hkv);
        if ks != [batch, seq, hkv * dk] || vs[..2] != [batch, seq] {
            return Err(KernelError::invalid(format!(
                "key {ks:?} / value {vs:?} do not fit query {qs:?} with {hkv} kv heads"
            )));
        }
        let group = hq / hkv;
        let mut state = match &past {
            Some(p) => {
                want_float(p, "past_state")?;
                if p.shape() != [batch, hkv, dk, dv] {
                    return Err(KernelError::invalid(format!(
                        "past_state shape {:?}, expected [{batch}, {hkv}, {dk}, {dv}]",
                        p.shape()
                    )));
                }
                read::<F>(p)?
            }
            None => vec![F::zero(); batch * hkv * dk * dv],
        };
        // Decay per (b, t, kv head): one value per head or per key dim.
        let decay_v = match &decay {
            Some(t) => {
                want_float(t, "decay")?;
                let s = t.shape();
                let per_dim = if s.len() == 3 && s[..2] == [batch, seq] && s[2] == hkv {
                    false
                } else if s.len() == 3 && s[..2] == [batch, seq] && s[2] == hkv * dk {
                    true
                } else {
                    return Err(KernelError::invalid(format!(
                        "decay shape {s:?}, expected [{batch}, {seq}, {hkv}] or \
                         [{batch}, {seq}, {}]",
                        hkv * dk
                    )));
                };
                Some((read::<F>(t)?, per_dim))
            }
            None => None,
        };
        let beta_v = match &beta {
            Some(t) => {
                want_float(t, "beta")?;
                let s = t.shape();
                if s.len() != 3 || s[..2] != [batch, seq] || !(s[2] == hkv || s[2] == 1) {
                    return Err(KernelError::invalid(format!(
                        "beta shape {s:?}, expected [{batch}, {seq}, {hkv}] or [{batch}, {seq}, 1]"
                    )));
                }
                Some((read::<F>(t)?, s[2]))
            }
            None => None,
        };
        let scale = if self.scale == 0.0 {
            F::of(1.0 / (dk as f64).sqrt())
        } else {
            F::of(self.scale as f64)
        };
        let (qv, kv, vv) = (read::<F>(&q)?, read::<F>(&k)?, read::<F>(&v)?);
        let mut out = vec![F::zero(); batch * seq * hq * dv];
        let mut vt = vec![F::zero(); dv];
        for b in 0..batch {
            for kh in 0..hkv {
                let st = &mut state[(b * hkv + kh) * dk * dv..(b * hkv + kh + 1) * dk * dv];
                for t in 0..seq {
                    let bt = b * seq + t;
                    let kt = &kv[(bt * hkv + kh) * dk..(bt * hkv + kh + 1) * dk];
                    vt.copy_from_slice(&vv[(bt * hkv + kh) * dv..(bt * hkv + kh + 1) * dv]);
                    if let Some((dec, per_dim)) = &decay_v {
                        for di in 0..dk {
                            let g = if *per_dim {
                                dec[(bt * hkv + kh) * dk + di]
                            } else {
                                dec[bt * hkv + kh]
                            };
                            let e = g.exp();
                            for x in &mut st[di * dv..(di + 1) * dv] {
                                *x = *x * e;
                            }
                        }
                    }
                    if let Some((bv, bl)) = &beta_v {
                        let bval = if *bl == 1 { bv[bt] } else { bv[bt * hkv + kh] };
                        for (m, vm) in vt.iter_mut().enumerate() {
                            let mut r = F::zero();
                            for di in 0..dk {
                                r = r + st[di * dv + m] * kt[di];
                            }
                            *vm = bval * (*vm - r);
                        }
                    }
                    for di in 0..dk {
                        let kd = kt[di];
                        for (x, &vm) in st[di * dv..(di + 1) * dv].iter_mut().zip(&vt) {
                            *x = *x + kd * vm;
                        }
                    }
                    for gi in 0..group {
                        let h = kh * group + gi;
                        let qt = &qv[(bt * hq + h) * dk..(bt * hq + h + 1) * dk];
                        let o = &mut out[(bt * hq + h) * dv..(bt * hq + h + 1) * dv];
                        for (m, om) in o.iter_mut().enumerate() {
                            let mut acc = F::zero();
                            for di in 0..dk {
                                acc = acc + qt[di] * st[di * dv + m];
                            }
                            *om = scale * acc;
                        }
                    }
                }
            }
        }
        write(ctx, 0, q.dtype(), &[batch, seq, hq * dv], &out)?;
        if ctx.output_count() > 1 && ctx.output_used(1) {
            let sdt = past.as_ref().map_or(q.dtype(), |p| p.dtype());
            write(ctx, 1, sdt, &[batch, hkv, dk, dv], &state)?;
        }
        Ok(())
    }
}

impl Kernel for LinearAttention {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if ctx.input(0)?.dtype() == DType::Double {
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

    fn f(shape: &[usize]) -> Value {
        let n: usize = shape.iter().product();
        Value::Tensor(
            Tensor::from_vec(shape, (0..n).map(|i| (i % 5) as f32 * 0.1).collect()).unwrap(),
        )
    }

    fn run(k: &LinearAttention, ins: &[Option<Value>]) -> KernelResult<Vec<Option<Value>>> {
        let refs: Vec<Option<&Value>> = ins.iter().map(Option::as_ref).collect();
        run_owned(k, &refs, 2, 1, None)
    }

    #[test]
    fn rules_and_shapes_are_checked() {
        let k = LinearAttention {
            q_heads: 2,
            kv_heads: 1,
            scale: 0.0,
            gating: true,
            delta: true,
        };
        let (q, kv) = (Some(f(&[1, 3, 8])), Some(f(&[1, 3, 4])));
        let ok = [
            q.clone(),
            kv.clone(),
            kv.clone(),
            None,
            Some(f(&[1, 3, 1])),
            Some(f(&[1, 3, 1])),
        ];
        assert!(run(&k, &ok).is_ok());
        // Missing decay / beta for gated_delta.
        assert!(run(
            &k,
            &[
                q.clone(),
                kv.clone(),
                kv.clone(),
                None,
                None,
                Some(f(&[1, 3, 1]))
            ]
        )
        .is_err());
        assert!(run(
            &k,
            &[q.clone(), kv.clone(), kv.clone(), None, Some(f(&[1, 3, 1]))]
        )
        .is_err());
        // Decay of a bad width, past state of a bad shape.
        let mut bad = ok.clone();
        bad[4] = Some(f(&[1, 3, 3]));
        assert!(run(&k, &bad).is_err());
        let mut bad = ok.clone();
        bad[3] = Some(f(&[1, 1, 4, 3]));
        assert!(run(&k, &bad).is_err());
        // Key width that does not fit the query head size.
        let mut bad = ok.clone();
        bad[1] = Some(f(&[1, 3, 6]));
        assert!(run(&k, &bad).is_err());
        // The linear rule forbids decay.
        let lin = LinearAttention {
            gating: false,
            delta: false,
            ..k
        };
        assert!(run(&lin, &ok[..5]).is_err());
        assert!(run(&lin, &ok[..3]).is_ok());
    }
}
