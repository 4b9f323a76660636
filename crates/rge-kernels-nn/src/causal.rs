//! CausalConvWithState (opset 27): a stateful causal depthwise 1-D convolution with an
//! optional fused SiLU/Swish. `past_state` (or zeros) is prepended to the input; the output at
//! t sees padded[t .. t+k]; `present_state` is the last k-1 positions of the padded input.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::util::Real;

struct CausalConv {
    silu: bool,
}

pub(crate) fn create_causal_conv(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let silu = match init.str_or("activation", "none")? {
        "none" | "" => false,
        "silu" | "swish" => true,
        other => {
            return Err(KernelError::attr(
                "activation",
                format!("unknown activation {other}"),
            ))
        }
    };
    Ok(Box::new(CausalConv { silu }))
}

impl CausalConv {
    fn typed<T: Real>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let w = ctx.input(1)?;
        let bias = ctx.opt_input(2)?;
        let past = ctx.opt_input(3)?;
        let (xs, ws) = (x.shape(), w.shape());
        if xs.len() != 3 || ws.len() != 3 || ws[0] != xs[1] || ws[1] != 1 || ws[2] == 0 {
            return Err(KernelError::invalid(format!(
                "CausalConvWithState: input {xs:?} and weight {ws:?} must be (B, C, L) and (C, 1, k), k ≥ 1"
            )));
        }
        let (b, c, l, k) = (xs[0], xs[1], xs[2], ws[2]);
        let sl = k - 1;
        if bias.is_some_and(|t| t.shape() != [c]) {
            return Err(KernelError::invalid(
                "CausalConvWithState: bias must have shape (C)",
            ));
        }
        if past.is_some_and(|t| t.shape() != [b, c, sl]) {
            return Err(KernelError::invalid(format!(
                "CausalConvWithState: past_state must have shape [{b}, {c}, {sl}]"
            )));
        }
        let xv = x.as_slice::<T>()?;
        let wv = w.as_slice::<T>()?;
        let bv = bias.map(|t| t.as_slice::<T>()).transpose()?;
        let pv = past.map(|t| t.as_slice::<T>()).transpose()?;
        let mut padded = vec![0f32; sl + l];
        let mut out = vec![T::default(); b * c * l];
        let mut state = vec![T::default(); b * c * sl];
        for r in 0..b * c {
            let ch = r % c;
            for (j, p) in padded[..sl].iter_mut().enumerate() {
                *p = pv.map_or(0.0, |pv| pv[r * sl + j].to_f32());
            }
            for (j, p) in padded[sl..].iter_mut().enumerate() {
                *p = xv[r * l + j].to_f32();
            }
            let wr = &wv[ch * k..][..k];
            let b0 = bv.map_or(0.0, |b| b[ch].to_f32());
            for t in 0..l {
                let mut s = b0;
                for (j, wj) in wr.iter().enumerate() {
                    s += wj.to_f32() * padded[t + j];
                }
                // The conv result is rounded to T before the activation, as the reference does.
                let v = T::from_f32(s);
                out[r * l + t] = if self.silu {
                    let f = v.to_f32();
                    T::from_f32(f / (1.0 + (-f).exp()))
                } else {
                    v
                };
            }
            for j in 0..sl {
                let src = l + j; // padded index of the last k-1 positions: (l+sl) - sl + j
                state[r * sl + j] = if src < sl {
                    pv.map_or(T::default(), |pv| pv[r * sl + src])
                } else {
                    xv[r * l + src - sl]
                };
            }
        }
        ctx.output::<T>(0, xs)?.copy_from_slice(&out);
        ctx.output::<T>(1, &[b, c, sl])?.copy_from_slice(&state);
        Ok(())
    }
}

impl Kernel for CausalConv {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        if ctx.input(1)?.dtype() != dt {
            return Err(KernelError::invalid(
                "CausalConvWithState: input and weight of different types",
            ));
        }
        rge_kernels::dispatch_float!(dt, T => self.typed::<T>(ctx))
    }
}
