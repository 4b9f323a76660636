//! Pad, PadV2 and MirrorPad (REFLECT, SYMMETRIC) over any fixed-size element: every output
//! element is a source element picked per dim, or the constant. ONNX has no SYMMETRIC mode,
//! so the three share this one kernel.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor};

use crate::steps::{elem_bytes, put, Steps};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Constant,
    Reflect,
    Symmetric,
}

pub struct Pad {
    mode: Mode,
}

pub fn create_pad(_steps: &Steps, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let mode = if init.op_type == "MirrorPad" {
        match init.str_opt("mode")? {
            Some("REFLECT") => Mode::Reflect,
            Some("SYMMETRIC") => Mode::Symmetric,
            Some(m) => {
                return Err(KernelError::attr(
                    "mode",
                    format!("unknown mode `{m}` (REFLECT or SYMMETRIC)"),
                ))
            }
            None => return Err(KernelError::attr("mode", "required but missing")),
        }
    } else {
        Mode::Constant
    };
    Ok(Box::new(Pad { mode }))
}

/// The source index along one dim for output position `o`, `None` for the constant.
fn source(mode: Mode, o: i64, before: i64, d: i64) -> Option<usize> {
    let j = o - before;
    if (0..d).contains(&j) {
        return Some(j as usize);
    }
    let k = match (mode, j < 0) {
        (Mode::Constant, _) => return None,
        (Mode::Reflect, true) => -j,
        (Mode::Reflect, false) => 2 * (d - 1) - j,
        (Mode::Symmetric, true) => -j - 1,
        (Mode::Symmetric, false) => 2 * d - 1 - j,
    };
    Some(k as usize)
}

impl Kernel for Pad {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let p = ctx.input(1)?;
        let r = x.rank();
        if p.shape() != [r, 2] {
            return Err(KernelError::invalid(format!(
                "paddings must be [{r}, 2], got {:?}",
                p.shape()
            )));
        }
        let p = p.to_i64_vec()?;
        let es = elem_bytes(x.dtype())?;
        let fill: Vec<u8> = match ctx.opt_input(2)? {
            Some(c) if c.len() == 1 && c.dtype() == x.dtype() => c.bytes()?.to_vec(),
            Some(c) => {
                return Err(KernelError::invalid(format!(
                    "constant_values must be one {} value, got {} {}",
                    x.dtype().name(),
                    c.len(),
                    c.dtype().name()
                )))
            }
            None => vec![0; es],
        };
        let mut maps: Vec<Vec<Option<usize>>> = Vec::with_capacity(r);
        let mut out_dims = Vec::with_capacity(r);
        for (k, &d) in x.shape().iter().enumerate() {
            let (b, a, d) = (p[2 * k], p[2 * k + 1], d as i64);
            let lim = match self.mode {
                Mode::Constant => i64::MAX,
                Mode::Reflect => d - 1,
                Mode::Symmetric => d,
            };
            if b < 0 || a < 0 || b > lim || a > lim {
                return Err(KernelError::invalid(format!(
                    "paddings of dim {k} ({b}, {a}) must be ≥ 0{}",
                    if lim < i64::MAX {
                        format!(" and ≤ {lim} for a dim of {d} in this mode")
                    } else {
                        String::new()
                    }
                )));
            }
            let n = d + b + a;
            if n > 1 << 32 {
                return Err(KernelError::invalid(format!(
                    "dim {k} padded to {n} is too big"
                )));
            }
            out_dims.push(n as usize);
            maps.push((0..n).map(|o| source(self.mode, o, b, d)).collect());
        }
        let total: usize = out_dims.iter().product();
        let src = x.bytes()?;
        let strides: Vec<usize> = (0..r)
            .map(|k| x.shape()[k + 1..].iter().product())
            .collect();
        let mut out = Vec::with_capacity(total * es);
        let mut idx = vec![0usize; r];
        for _ in 0..total {
            let mut off = Some(0usize);
            for k in 0..r {
                off = match (off, maps[k][idx[k]]) {
                    (Some(o), Some(s)) => Some(o + s * strides[k]),
                    _ => None,
                };
            }
            match off {
                Some(o) => out.extend_from_slice(&src[o * es..(o + 1) * es]),
                None => out.extend_from_slice(&fill),
            }
            for k in (0..r).rev() {
                idx[k] += 1;
                if idx[k] < out_dims[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
        put(ctx, 0, Tensor::from_bytes(x.dtype(), &out_dims, &out)?)
    }
}
