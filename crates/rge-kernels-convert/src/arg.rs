//! ArgMax and ArgMin: the index of the largest / smallest element along `axis` (int64),
//! the first one on ties unless `select_last_index`; NaN counts as the extreme, as numpy's
//! argmax / argmin have it.

use rge_kernels::{
    dispatch_numeric_bool, shape_util::normalize_axis, Kernel, KernelCtx, KernelError, KernelInit,
    KernelResult,
};

use crate::num::{is_nan, Num};
use crate::plan::split3;

struct Arg {
    max: bool,
    axis: i64,
    keepdims: bool,
    last: bool,
}

pub fn factory(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Arg {
        max: init.op_type == "ArgMax",
        axis: init.int_or("axis", 0)?,
        keepdims: init.int_or("keepdims", 1)? != 0,
        last: init.int_or("select_last_index", 0)? != 0,
    }))
}

impl Kernel for Arg {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let shape = x.shape();
        let axis = normalize_axis(self.axis, shape.len())?;
        let (outer, len, inner) = split3(shape, axis);
        let mut out_shape = shape.to_vec();
        if !out_shape.is_empty() {
            if self.keepdims {
                out_shape[axis] = 1;
            } else {
                out_shape.remove(axis);
            }
        }
        if len == 0 && outer * inner > 0 {
            return Err(KernelError::invalid(format!(
                "{} over an empty axis {axis}",
                if self.max { "ArgMax" } else { "ArgMin" }
            )));
        }
        let (max, last) = (self.max, self.last);
        dispatch_numeric_bool!(x.dtype(), T => {
            let src = x.as_slice::<T>()?;
            let dst = ctx.output::<i64>(0, &out_shape)?;
            arg::<T>(src, dst, (outer, len, inner), max, last);
            Ok(())
        })
    }
}

/// True when `v` should replace `best`.
#[inline]
fn better<T: Num>(v: T, best: T, max: bool, last: bool) -> bool {
    let (vn, bn) = (is_nan(v), is_nan(best));
    if last {
        if vn {
            return true;
        }
        if bn {
            return false;
        }
        if max {
            v >= best
        } else {
            v <= best
        }
    } else {
        if bn {
            return false;
        }
        vn || if max { v > best } else { v < best }
    }
}

fn arg<T: Num>(
    src: &[T],
    dst: &mut [i64],
    (outer, len, inner): (usize, usize, usize),
    max: bool,
    last: bool,
) {
    let mut best = vec![T::ZERO; inner];
    for o in 0..outer {
        let block = &src[o * len * inner..(o + 1) * len * inner];
        let out = &mut dst[o * inner..(o + 1) * inner];
        out.fill(0);
        best.copy_from_slice(&block[..inner]);
        for j in 1..len {
            let row = &block[j * inner..(j + 1) * inner];
            for ((b, idx), &v) in best.iter_mut().zip(out.iter_mut()).zip(row) {
                if better(v, *b, max, last) {
                    *b = v;
                    *idx = j as i64;
                }
            }
        }
    }
}
