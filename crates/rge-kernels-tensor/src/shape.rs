//! Shape-derived outputs: Shape, Size, ConstantOfShape, EyeLike, Range.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor};

use crate::elems::run_movement;
use crate::maps::{AxisMaps, Fill};
use crate::util::{dims, Num};

struct Shape {
    start: i64,
    end: Option<i64>,
}

impl Kernel for Shape {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let shape: Vec<i64> = match ctx.value(0) {
            Some(v) => v.tensor()?.shape().iter().map(|&d| d as i64).collect(),
            None => return Err(KernelError::invalid("input 0 is missing")),
        };
        let r = shape.len() as i64;
        let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
        let s = clamp(self.start);
        let e = clamp(self.end.unwrap_or(r));
        let part = if s < e { &shape[s..e] } else { &[][..] };
        let out = ctx.output::<i64>(0, &[part.len()])?;
        out.copy_from_slice(part);
        Ok(())
    }
}

pub(crate) fn shape(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Shape {
        start: init.int_or("start", 0)?,
        end: init.int_opt("end")?,
    }))
}

struct Size;

impl Kernel for Size {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let n = ctx.input(0)?.len();
        ctx.output::<i64>(0, &[])?[0] = n as i64;
        Ok(())
    }
}

pub(crate) fn size(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Size))
}

struct ConstantOfShape {
    value: Tensor,
}

impl Kernel for ConstantOfShape {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let shape = dims(&ctx.input(0)?.to_i64_vec()?)?;
        let maps = AxisMaps::new(shape.iter().map(|&d| vec![0; d]).collect(), Fill::None)
            .with_threads(ctx.threads());
        run_movement(ctx, &[self.value.view()], &[(0, shape)], &maps)
    }
}

pub(crate) fn constant_of_shape(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let value = match init.tensor_opt("value")? {
        Some(t) if t.len() == 1 => t,
        Some(t) => {
            return Err(KernelError::attr(
                "value",
                format!("must have one element, got shape {:?}", t.shape()),
            ))
        }
        None => Tensor::from_vec(&[1], vec![0f32])?,
    };
    Ok(Box::new(ConstantOfShape { value }))
}

struct EyeLike {
    dtype: Option<DType>,
    k: i64,
}

fn eye<T: Num>(ctx: &mut KernelCtx<'_>, rows: usize, cols: usize, k: i64) -> KernelResult<()> {
    let out = ctx.output::<T>(0, &[rows, cols])?;
    out.fill(T::zero());
    for i in 0..rows {
        let j = i as i64 + k;
        if (0..cols as i64).contains(&j) {
            out[i * cols + j as usize] = T::one();
        }
    }
    Ok(())
}

impl Kernel for EyeLike {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (rows, cols) = match *x.shape() {
            [r, c] => (r, c),
            [n] => (n, n),
            _ => {
                return Err(KernelError::invalid(format!(
                    "input must be 2-D, got {:?}",
                    x.shape()
                )))
            }
        };
        let dt = self.dtype.unwrap_or(x.dtype());
        rge_kernels::dispatch_numeric_bool!(dt, T => eye::<T>(ctx, rows, cols, self.k))
    }
}

pub(crate) fn eye_like(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let dtype = match init.int_opt("dtype")? {
        Some(c) => Some(
            i32::try_from(c)
                .ok()
                .and_then(DType::from_onnx)
                .ok_or_else(|| KernelError::attr("dtype", format!("unknown type {c}")))?,
        ),
        None => None,
    };
    Ok(Box::new(EyeLike {
        dtype,
        k: init.int_or("k", 0)?,
    }))
}

struct Range;

/// max(ceil((limit - start) / delta), 0) in exact integer arithmetic.
fn int_count(start: i128, limit: i128, delta: i128) -> KernelResult<usize> {
    if delta == 0 {
        return Err(KernelError::invalid("Range delta is 0"));
    }
    let diff = limit - start;
    let mut q = diff / delta;
    let r = diff % delta;
    if r != 0 && ((r > 0) == (delta > 0)) {
        q += 1;
    }
    usize::try_from(q.max(0)).map_err(|_| KernelError::invalid("Range is too long"))
}

fn range_int<T: Num>(ctx: &mut KernelCtx<'_>, v: [i64; 3]) -> KernelResult<()> {
    let [s, l, d] = v.map(i128::from);
    let n = int_count(s, l, d)?;
    let out = ctx.output::<T>(0, &[n])?;
    for (i, o) in out.iter_mut().enumerate() {
        *o = T::from_i64((s + i as i128 * d) as i64);
    }
    Ok(())
}

fn range_float<T: Num>(ctx: &mut KernelCtx<'_>, v: [f64; 3]) -> KernelResult<()> {
    let [s, l, d] = v;
    if d == 0.0 || d.is_nan() {
        return Err(KernelError::invalid("Range delta is 0"));
    }
    let c = ((l - s) / d).ceil();
    if !c.is_finite() || c > (usize::MAX >> 8) as f64 {
        return Err(KernelError::invalid(format!(
            "Range({s}, {l}, {d}) has no finite length"
        )));
    }
    let n = c.max(0.0) as usize;
    let out = ctx.output::<T>(0, &[n])?;
    for (i, o) in out.iter_mut().enumerate() {
        *o = T::from_f64(s + i as f64 * d);
    }
    Ok(())
}

impl Kernel for Range {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let ins = [ctx.input(0)?, ctx.input(1)?, ctx.input(2)?];
        let dt = ins[0].dtype();
        for t in &ins {
            if t.len() != 1 || t.dtype() != dt {
                return Err(KernelError::invalid(format!(
                    "Range takes three scalars of one type, got {} {:?}",
                    t.dtype(),
                    t.shape()
                )));
            }
        }
        if dt.is_float() {
            let mut v = [0f64; 3];
            for (o, t) in v.iter_mut().zip(&ins) {
                *o = t.to_f64_vec()?[0];
            }
            rge_kernels::dispatch_float!(dt, T => range_float::<T>(ctx, v))
        } else {
            let mut v = [0i64; 3];
            for (o, t) in v.iter_mut().zip(&ins) {
                *o = t.to_i64_vec()?[0];
            }
            rge_kernels::dispatch_int!(dt, T => range_int::<T>(ctx, v))
        }
    }
}

pub(crate) fn range(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Range))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts() {
        assert_eq!(int_count(3, 9, 3).unwrap(), 2);
        assert_eq!(int_count(10, 4, -2).unwrap(), 3);
        assert_eq!(int_count(10, 4, 2).unwrap(), 0);
        assert_eq!(int_count(0, 10, 3).unwrap(), 4);
        assert!(int_count(0, 1, 0).is_err());
    }
}
