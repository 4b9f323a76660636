//! FlexAttention (ai.onnx.preview, version 1): 4-D scaled dot-product attention whose scores
//! and probabilities may be rewritten by the `score_mod` / `prob_mod` subgraphs (each takes
//! and returns the whole (batch, q_heads, q_len, kv_len) tensor). The softmax runs in
//! `softmax_precision` (default: float for float16/bfloat16 inputs, else the input type),
//! rounding like the ONNX reference.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, Value};

use crate::common::{
    float_dtype_attr, gemm, read, ref_sum, rounder, sums_round_each_step, want_float, write, Acc,
    Gemm,
};

/// The FlexAttention kernel.
pub struct FlexAttention {
    scale: Option<f32>,
    softmax_precision: Option<DType>,
    score_mod: Option<usize>,
    prob_mod: Option<usize>,
}

/// Builds a FlexAttention kernel.
pub fn flex_attention(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let slot = |name: &str| -> KernelResult<Option<usize>> {
        if init.subgraph_attrs.iter().any(|s| s == name) {
            init.subgraph_slot(name).map(Some)
        } else {
            Ok(None)
        }
    };
    Ok(Box::new(FlexAttention {
        scale: init.float_opt("scale")?,
        softmax_precision: init
            .int_opt("softmax_precision")?
            .map(|v| float_dtype_attr("softmax_precision", v))
            .transpose()?,
        score_mod: slot("score_mod")?,
        prob_mod: slot("prob_mod")?,
    }))
}

/// Runs a mod subgraph on `vals` (shape `shape`, type `dt`) and reads its single output back.
fn call_mod<F: Acc>(
    ctx: &KernelCtx<'_>,
    slot: usize,
    dt: DType,
    shape: &[usize],
    vals: &[F],
) -> KernelResult<Vec<F>> {
    let t = to_tensor(dt, shape, vals)?;
    let outs = ctx.run_subgraph(slot, vec![Value::Tensor(t)])?;
    if outs.len() != 1 {
        return Err(KernelError::invalid(format!(
            "a mod subgraph must return 1 output, got {}",
            outs.len()
        )));
    }
    let out = match &outs[0] {
        Value::Tensor(t) => t,
        _ => return Err(KernelError::invalid("a mod subgraph returned a non-tensor")),
    };
    if out.shape() != shape {
        return Err(KernelError::invalid(format!(
            "a mod subgraph returned shape {:?}, expected {shape:?}",
            out.shape()
        )));
    }
    let r = rounder::<F>(dt);
    let v = out.view();
    Ok(match v.dtype() {
        DType::Float | DType::Double | DType::Float16 | DType::Bfloat16 => {
            read::<F>(&v)?.into_iter().map(r).collect()
        }
        _ => v.to_f64_vec()?.into_iter().map(|x| r(F::of(x))).collect(),
    })
}

fn to_tensor<F: Acc>(dt: DType, shape: &[usize], vals: &[F]) -> KernelResult<Tensor> {
    match dt {
        DType::Float => Tensor::from_vec(shape, vals.iter().map(|v| v.f64() as f32).collect()),
        DType::Double => Tensor::from_vec(shape, vals.iter().map(|v| v.f64()).collect()),
        DType::Float16 => Tensor::from_vec(
            shape,
            vals.iter().map(|v| half::f16::from_f64(v.f64())).collect(),
        ),
        DType::Bfloat16 => Tensor::from_vec(
            shape,
            vals.iter().map(|v| half::bf16::from_f64(v.f64())).collect(),
        ),
        dt => Err(KernelError::unsupported(format!("data type {dt}"))),
    }
}

impl FlexAttention {
    fn run<F: Acc>(&self, ctx: &mut KernelCtx<'_>, p_dt: DType) -> KernelResult<()> {
        let q = ctx.input(0)?;
        let k = ctx.input(1)?;
        let v = ctx.input(2)?;
        let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
        if qs.len() != 4 || ks.len() != 4 || vs.len() != 4 {
            return Err(KernelError::invalid(format!(
                "FlexAttention needs 4-D inputs, got {qs:?}, {ks:?}, {vs:?}"
            )));
        }
        let (batch, hq, lq, e) = (qs[0], qs[1], qs[2], qs[3]);
        let (hkv, lk, dv) = (ks[1], ks[2], vs[3]);
        if ks[0] != batch || vs[0] != batch || vs[1] != hkv || vs[2] != lk || ks[3] != e {
            return Err(KernelError::invalid(format!(
                "Q {qs:?}, K {ks:?}, V {vs:?} do not fit together"
            )));
        }
        if hkv == 0 || hq % hkv != 0 {
            return Err(KernelError::invalid(format!(
                "q heads {hq} must be a multiple of kv heads {hkv}"
            )));
        }
        let t_dt = q.dtype();
        let rt = rounder::<F>(t_dt);
        let rp = rounder::<F>(p_dt);
        let step = sums_round_each_step(p_dt);
        let scale = self.scale.unwrap_or((1.0 / (e as f64).sqrt()) as f32);
        let s = rt(F::of(scale.sqrt() as f64));
        let qv: Vec<F> = read::<F>(&q)?.into_iter().map(|x| rt(x * s)).collect();
        let kv: Vec<F> = read::<F>(&k)?.into_iter().map(|x| rt(x * s)).collect();
        let vv: Vec<F> = read::<F>(&v)?.into_iter().map(rp).collect();
        let group = hq / hkv;
        let sshape = [batch, hq, lq, lk];
        let mut scores = vec![F::zero(); batch * hq * lq * lk];
        for bh in 0..batch * hq {
            let kvh = (bh / hq) * hkv + (bh % hq) / group;
            gemm(
                Gemm {
                    m: lq,
                    k: e,
                    n: lk,
                    a: (e, 1),
                    b: (1, e),
                    c: (lk, 1),
                    accumulate: false,
                },
                &qv[bh * lq * e..(bh + 1) * lq * e],
                &kv[kvh * lk * e..(kvh + 1) * lk * e],
                &mut scores[bh * lq * lk..(bh + 1) * lq * lk],
            )?;
        }
        for x in scores.iter_mut() {
            *x = rp(rt(*x));
        }
        if let Some(slot) = self.score_mod {
            scores = call_mod(ctx, slot, p_dt, &sshape, &scores)?;
        }
        for row in scores.chunks_exact_mut(lk.max(1)) {
            let mut mx = F::neg_infinity();
            for &x in row.iter() {
                if x.is_nan() || mx.is_nan() {
                    mx = F::nan();
                } else if x > mx {
                    mx = x;
                }
            }
            for x in row.iter_mut() {
                *x = rp(rp(*x - mx).exp());
            }
            let sum = ref_sum(row.iter().copied(), rp, step);
            for x in row.iter_mut() {
                *x = rp(*x / sum);
            }
        }
        if let Some(slot) = self.prob_mod {
            scores = call_mod(ctx, slot, p_dt, &sshape, &scores)?;
        }
        let mut y = vec![F::zero(); batch * hq * lq * dv];
        for bh in 0..batch * hq {
            let kvh = (bh / hq) * hkv + (bh % hq) / group;
            gemm(
                Gemm {
                    m: lq,
                    k: lk,
                    n: dv,
                    a: (lk, 1),
                    b: (dv, 1),
                    c: (dv, 1),
                    accumulate: false,
                },
                &scores[bh * lq * lk..(bh + 1) * lq * lk],
                &vv[kvh * lk * dv..(kvh + 1) * lk * dv],
                &mut y[bh * lq * dv..(bh + 1) * lq * dv],
            )?;
        }
        for x in y.iter_mut() {
            *x = rp(*x);
        }
        write(ctx, 0, v.dtype(), &[batch, hq, lq, dv], &y)
    }
}

impl Kernel for FlexAttention {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let mut wide = self.softmax_precision == Some(DType::Double);
        for i in 0..3 {
            let t = ctx.input(i)?;
            want_float(&t, ["Q", "K", "V"][i])?;
            wide |= t.dtype() == DType::Double;
        }
        let q_dt = ctx.input(0)?.dtype();
        let p_dt = self.softmax_precision.unwrap_or(match q_dt {
            DType::Float16 | DType::Bfloat16 => DType::Float,
            dt => dt,
        });
        if wide {
            self.run::<f64>(ctx, p_dt)
        } else {
            self.run::<f32>(ctx, p_dt)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_kernels::{run_owned, SubgraphRunner};

    /// Stands in for the runtime: applies `f` to every element of the single input.
    struct Elementwise(fn(f32) -> f32);

    impl SubgraphRunner for Elementwise {
        fn run(&self, _slot: usize, inputs: Vec<Value>) -> KernelResult<Vec<Value>> {
            let Some(Value::Tensor(t)) = inputs.first() else {
                return Err(KernelError::invalid("no tensor"));
            };
            let v: Vec<f32> = t.as_slice::<f32>()?.iter().map(|&x| (self.0)(x)).collect();
            Ok(vec![Value::Tensor(Tensor::from_vec(t.shape(), v)?)])
        }
    }

    fn check(test: &str, kernel: FlexAttention, f: fn(f32) -> f32) {
        let dir = rge_conformance::node_tests_dir().join(test);
        if !dir.is_dir() {
            eprintln!("note: {} missing; skipped", dir.display());
            return;
        }
        let t = rge_conformance::load_test(&dir).unwrap();
        let set = &t.data_sets[0];
        let ins: Vec<Option<&Value>> = set.inputs.iter().map(Some).collect();
        let out = run_owned(&kernel, &ins, 1, 1, Some(&Elementwise(f))).unwrap();
        let got = out[0].as_ref().unwrap();
        rge_conformance::compare_values(&set.outputs[0], got, Default::default()).unwrap();
    }

    fn kernel(score: bool) -> FlexAttention {
        FlexAttention {
            scale: None,
            softmax_precision: None,
            score_mod: score.then_some(0),
            prob_mod: (!score).then_some(0),
        }
    }

    #[test]
    fn score_and_prob_mods_run_through_the_subgraph_runner() {
        check("test_flexattention_score_mod", kernel(true), |x| x + 0.5);
        check("test_flexattention_prob_mod", kernel(false), |x| x * 0.5);
        check("test_flexattention_soft_cap", kernel(true), |x| {
            (x / 20.0).tanh() * 20.0
        });
    }

    #[test]
    fn rejects_bad_shapes_and_missing_runner() {
        let q = Value::Tensor(Tensor::from_vec(&[1, 2, 3, 4], vec![0.5f32; 24]).unwrap());
        let k = Value::Tensor(Tensor::from_vec(&[1, 3, 3, 4], vec![0.5f32; 36]).unwrap());
        let ins = [Some(&q), Some(&k), Some(&k)];
        assert!(run_owned(&kernel(true), &ins, 1, 1, None).is_err());
        let ins = [Some(&q), Some(&q), Some(&q)];
        assert!(run_owned(&kernel(true), &ins, 1, 1, None).is_err());
        let plain = FlexAttention {
            score_mod: None,
            ..kernel(true)
        };
        let out = run_owned(&plain, &ins, 1, 1, None).unwrap();
        assert!(out[0].is_some());
    }
}
