//! RotaryEmbedding (opset 23): rotates the first `rotary_embedding_dim` features of each
//! head by the (cos, sin) of its position, halves or interleaved pairs. Input is
//! (batch, heads, seq, head) or (batch, seq, heads·head) with `num_heads`. Products and sums
//! are rounded to the input type like the ONNX reference.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::common::{read, read_ints, rounder, want_float, write, Acc};

/// The RotaryEmbedding kernel.
pub struct Rotary {
    interleaved: bool,
    rotary_dim: usize,
    num_heads: Option<usize>,
}

/// Builds a RotaryEmbedding kernel.
pub fn rotary_embedding(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let rd = init.int_or("rotary_embedding_dim", 0)?;
    if rd < 0 {
        return Err(KernelError::attr(
            "rotary_embedding_dim",
            "must be nonnegative",
        ));
    }
    let num_heads = match init.int_opt("num_heads")? {
        Some(n) if n < 0 => return Err(KernelError::attr("num_heads", "must be positive")),
        Some(0) | None => None,
        Some(n) => Some(n as usize),
    };
    Ok(Box::new(Rotary {
        interleaved: init.int_or("interleaved", 0)? != 0,
        rotary_dim: rd as usize,
        num_heads,
    }))
}

impl Rotary {
    fn run<F: Acc>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let cos_t = ctx.input(1)?;
        let sin_t = ctx.input(2)?;
        let pos_t = ctx.opt_input(3)?;
        let xs = x.shape();
        let (batch, heads, seq, hd, four_d) = match xs.len() {
            4 => (xs[0], xs[1], xs[2], xs[3], true),
            3 => {
                let n = self
                    .num_heads
                    .ok_or_else(|| KernelError::attr("num_heads", "required for 3-D input"))?;
                if xs[2] % n != 0 {
                    return Err(KernelError::invalid(format!(
                        "hidden size {} is not a multiple of num_heads {n}",
                        xs[2]
                    )));
                }
                (xs[0], n, xs[1], xs[2] / n, false)
            }
            _ => {
                return Err(KernelError::invalid(format!(
                    "input must be 3-D or 4-D, got {xs:?}"
                )))
            }
        };
        let rd = if self.rotary_dim == 0 {
            hd
        } else {
            self.rotary_dim
        };
        if rd % 2 != 0 || rd > hd {
            return Err(KernelError::invalid(format!(
                "rotary_embedding_dim {rd} must be even and at most the head size {hd}"
            )));
        }
        let half = rd / 2;
        if cos_t.shape() != sin_t.shape() {
            return Err(KernelError::invalid(
                "cos_cache and sin_cache shapes differ",
            ));
        }
        let cs = cos_t.shape();
        if cs.last() != Some(&half) {
            return Err(KernelError::invalid(format!(
                "cache last dim must be rotary_embedding_dim/2 = {half}, got {cs:?}"
            )));
        }
        // Row of the caches for each (batch, seq) position.
        let rows: Vec<usize> = match &pos_t {
            Some(p) => {
                if p.shape() != [batch, seq] {
                    return Err(KernelError::invalid(format!(
                        "position_ids shape {:?}, expected [{batch}, {seq}]",
                        p.shape()
                    )));
                }
                if cs.len() != 2 {
                    return Err(KernelError::invalid(format!(
                        "with position_ids the caches must be 2-D, got {cs:?}"
                    )));
                }
                read_ints(p, "position_ids")?
                    .into_iter()
                    .map(|v| {
                        usize::try_from(v)
                            .ok()
                            .filter(|&v| v < cs[0])
                            .ok_or_else(|| {
                                KernelError::invalid(format!(
                                    "position id {v} is outside [0, {})",
                                    cs[0]
                                ))
                            })
                    })
                    .collect::<KernelResult<_>>()?
            }
            None => {
                if cs != [batch, seq, half] {
                    return Err(KernelError::invalid(format!(
                        "without position_ids the caches must be [{batch}, {seq}, {half}], \
                         got {cs:?}"
                    )));
                }
                (0..batch * seq).collect()
            }
        };
        let rt = rounder::<F>(x.dtype());
        let xv = read::<F>(&x)?;
        let cv: Vec<F> = read::<F>(&cos_t)?.into_iter().map(rt).collect();
        let sv: Vec<F> = read::<F>(&sin_t)?.into_iter().map(rt).collect();
        let mut out = xv.clone();
        for b in 0..batch {
            for s in 0..seq {
                let row = rows[b * seq + s] * half;
                let (c, sn) = (&cv[row..row + half], &sv[row..row + half]);
                for h in 0..heads {
                    let off = if four_d {
                        ((b * heads + h) * seq + s) * hd
                    } else {
                        ((b * seq + s) * heads + h) * hd
                    };
                    let src = &xv[off..off + hd];
                    let dst = &mut out[off..off + hd];
                    for i in 0..half {
                        let (i1, i2) = if self.interleaved {
                            (2 * i, 2 * i + 1)
                        } else {
                            (i, i + half)
                        };
                        let (x1, x2) = (src[i1], src[i2]);
                        dst[i1] = rt(rt(c[i] * x1) - rt(sn[i] * x2));
                        dst[i2] = rt(rt(sn[i] * x1) + rt(c[i] * x2));
                    }
                }
            }
        }
        write(ctx, 0, x.dtype(), xs, &out)
    }
}

impl Kernel for Rotary {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        want_float(&x, "input")?;
        if x.dtype() == DType::Double {
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
        Value::Tensor(Tensor::from_vec(shape, (0..n).map(|i| i as f32 * 0.01).collect()).unwrap())
    }

    fn run(k: &Rotary, ins: &[Value]) -> KernelResult<Vec<Option<Value>>> {
        let refs: Vec<Option<&Value>> = ins.iter().map(Some).collect();
        run_owned(k, &refs, 1, 1, None)
    }

    #[test]
    fn bad_inputs_are_errors() {
        let k = Rotary {
            interleaved: false,
            rotary_dim: 0,
            num_heads: None,
        };
        let pos = |v: Vec<i64>| Value::Tensor(Tensor::from_vec(&[1, 2], v).unwrap());
        let x = f(&[1, 2, 2, 4]);
        assert!(run(&k, &[x.clone(), f(&[8, 2]), f(&[8, 2]), pos(vec![0, 7])]).is_ok());
        // Position id past the cache.
        assert!(run(&k, &[x.clone(), f(&[8, 2]), f(&[8, 2]), pos(vec![0, 8])]).is_err());
        assert!(run(&k, &[x.clone(), f(&[8, 2]), f(&[8, 2]), pos(vec![-1, 0])]).is_err());
        // Cache width not head/2.
        assert!(run(&k, &[x.clone(), f(&[8, 3]), f(&[8, 3]), pos(vec![0, 1])]).is_err());
        // Without position ids the caches are (batch, seq, half).
        assert!(run(&k, &[x.clone(), f(&[1, 2, 2]), f(&[1, 2, 2])]).is_ok());
        assert!(run(&k, &[x.clone(), f(&[8, 2]), f(&[8, 2])]).is_err());
        // 3-D input needs num_heads; odd rotary dim.
        assert!(run(&k, &[f(&[1, 2, 8]), f(&[1, 2, 2]), f(&[1, 2, 2])]).is_err());
        let odd = Rotary { rotary_dim: 3, ..k };
        assert!(run(&odd, &[x, f(&[1, 2, 1]), f(&[1, 2, 1])]).is_err());
    }
}
