//! CumSum and CumProd along the axis given by input 1 (a scalar), with `exclusive` (each
//! output leaves its own element out) and `reverse` (from the end). Accumulation is in the
//! element type, wrapping for integers, as numpy's cumsum / cumprod with dtype do.

use rge_kernels::{
    dispatch_numeric, shape_util::normalize_axis, Kernel, KernelCtx, KernelError, KernelInit,
    KernelResult,
};

use crate::num::Num;
use crate::plan::split3;

struct Cumulative {
    prod: bool,
    exclusive: bool,
    reverse: bool,
}

pub fn factory(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Cumulative {
        prod: init.op_type == "CumProd",
        exclusive: init.int_or("exclusive", 0)? != 0,
        reverse: init.int_or("reverse", 0)? != 0,
    }))
}

impl Kernel for Cumulative {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let axis_t = ctx.input(1)?;
        let axis = axis_t.to_i64_vec()?;
        if axis.len() != 1 || axis_t.rank() > 1 {
            return Err(KernelError::invalid(format!(
                "axis must be a scalar, got shape {:?}",
                axis_t.shape()
            )));
        }
        if x.rank() == 0 {
            return Err(KernelError::invalid("input must have rank 1 or more"));
        }
        let axis = normalize_axis(axis[0], x.rank())?;
        let dims = split3(x.shape(), axis);
        let (prod, exclusive, reverse) = (self.prod, self.exclusive, self.reverse);
        dispatch_numeric!(x.dtype(), T => {
            let src = x.as_slice::<T>()?;
            let dst = ctx.output::<T>(0, x.shape())?;
            scan::<T>(src, dst, dims, prod, exclusive, reverse);
            Ok(())
        })
    }
}

fn scan<T: Num>(
    src: &[T],
    dst: &mut [T],
    (outer, len, inner): (usize, usize, usize),
    prod: bool,
    exclusive: bool,
    reverse: bool,
) {
    let init = if prod { T::ONE } else { T::ZERO };
    let op = |a: T, b: T| if prod { a.mul(b) } else { a.add(b) };
    let mut acc = vec![init; inner];
    for o in 0..outer {
        acc.fill(init);
        let base = o * len * inner;
        for step in 0..len {
            let j = if reverse { len - 1 - step } else { step };
            let r = base + j * inner..base + (j + 1) * inner;
            let (row, out) = (&src[r.clone()], &mut dst[r]);
            for ((a, d), &v) in acc.iter_mut().zip(out.iter_mut()).zip(row) {
                if exclusive {
                    *d = *a;
                    *a = op(*a, v);
                } else {
                    *a = op(*a, v);
                    *d = *a;
                }
            }
        }
    }
}
