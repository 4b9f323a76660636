//! Variadic ops with multidirectional broadcasting (Max, Min, Sum, Mean) and Where.

use rge_kernels::shape_util::{broadcast_strides, for_each_broadcast};
use rge_kernels::{
    dispatch_float, dispatch_numeric, dispatch_numeric_bool, DType, Elem, Kernel, KernelCtx,
    KernelError, KernelRegistryBuilder, KernelResult, Tensor, TensorRef,
};

use crate::bcast::{accumulate, binary, broadcast_shapes, expand_into, for_chunks, DimVec, Plan};
use crate::num::{max_nan, min_nan, Num};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Max,
    Min,
    Sum,
    Mean,
}

struct Variadic(Op);

impl Variadic {
    /// `n` inputs (all present, of one type), the first being `first`.
    fn run<T: Num>(
        &self,
        ctx: &mut KernelCtx<'_>,
        n: usize,
        first: TensorRef<'_>,
        osh: &[usize],
    ) -> KernelResult<()> {
        let x0 = first.as_slice::<T>()?;
        for i in 1..n {
            ctx.input(i)?.as_slice::<T>()?;
        }
        let out = ctx.output::<T>(0, osh)?;
        let th = ctx.threads();
        if n == 2 {
            // One pass: out = f(x0, x1).
            let x1 = ctx.input(1)?;
            let (v1, s1) = (x1.as_slice::<T>()?, x1.shape());
            let s0 = first.shape();
            match self.0 {
                Op::Max => binary(th, x0, s0, v1, s1, out, osh, |a: &T, b: &T| max_nan(*a, *b)),
                Op::Min => binary(th, x0, s0, v1, s1, out, osh, |a: &T, b: &T| min_nan(*a, *b)),
                Op::Sum => binary(th, x0, s0, v1, s1, out, osh, |a: &T, b: &T| a.add(*b)),
                Op::Mean => {
                    let two = T::from_f64v(2.0);
                    binary(th, x0, s0, v1, s1, out, osh, |a: &T, b: &T| {
                        a.add(*b).div(two)
                    })
                }
            }
            return Ok(());
        }
        expand_into(th, out, osh, x0, first.shape());
        for i in 1..n {
            let t = ctx.input(i)?;
            let x = t.as_slice::<T>()?;
            match self.0 {
                Op::Max => accumulate(th, out, osh, x, t.shape(), max_nan),
                Op::Min => accumulate(th, out, osh, x, t.shape(), min_nan),
                Op::Sum | Op::Mean => accumulate(th, out, osh, x, t.shape(), |a: T, b| a.add(b)),
            }
        }
        if self.0 == Op::Mean && n > 1 {
            let d = T::from_f64v(n as f64);
            for_chunks(th, out, |o, _| {
                for v in o.iter_mut() {
                    *v = v.div(d);
                }
            });
        }
        Ok(())
    }
}

impl Kernel for Variadic {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let n = ctx.input_count();
        for i in 0..n {
            ctx.input(i)?;
        }
        if n == 0 {
            return Err(KernelError::invalid(format!(
                "{:?} needs at least one input",
                self.0
            )));
        }
        let first = ctx.input(0)?;
        let dt = first.dtype();
        for i in 1..n {
            let t = ctx.input(i)?;
            if t.dtype() != dt {
                return Err(KernelError::invalid(format!(
                    "inputs have different types: {dt} and {}",
                    t.dtype()
                )));
            }
        }
        // Broadcast pairwise (the same result as all at once); the error names every shape.
        let mut osh = DimVec::from_slice(first.shape());
        for i in 1..n {
            let s = ctx.input(i)?.shape();
            if *osh != *s {
                match broadcast_shapes(&[&osh, s]) {
                    Ok(o) => osh = o,
                    Err(e) => {
                        let shapes = (0..n)
                            .map(|i| ctx.input(i).map(|t| t.shape()))
                            .collect::<KernelResult<Vec<_>>>()?;
                        return Err(broadcast_shapes(&shapes).err().unwrap_or(e));
                    }
                }
            }
        }
        if self.0 == Op::Mean {
            dispatch_float!(dt, T => self.run::<T>(ctx, n, first, &osh))
        } else {
            dispatch_numeric!(dt, T => self.run::<T>(ctx, n, first, &osh))
        }
    }
}

/// Where: `cond ? x : y` with three-way broadcasting, any element type.
struct Where;

#[allow(clippy::too_many_arguments)]
fn select<T: Clone + Send + Sync>(
    threads: usize,
    c: &[bool],
    cs: &[usize],
    x: &[T],
    xs: &[usize],
    y: &[T],
    ys: &[usize],
    out: &mut [T],
    osh: &[usize],
) {
    let plan = Plan::new(osh, [cs, xs, ys]);
    let [sc, sx, sy] = plan.inner_strides;
    plan.run(threads, out, |o, [oc, ox, oy]| {
        for (i, o) in o.iter_mut().enumerate() {
            *o = if c[oc + i * sc] {
                x[ox + i * sx].clone()
            } else {
                y[oy + i * sy].clone()
            };
        }
    });
}

impl Where {
    fn typed<T: Elem>(
        ctx: &mut KernelCtx<'_>,
        c: TensorRef<'_>,
        x: TensorRef<'_>,
        y: TensorRef<'_>,
        osh: &[usize],
    ) -> KernelResult<()> {
        let (cv, xv, yv) = (
            c.as_slice::<bool>()?,
            x.as_slice::<T>()?,
            y.as_slice::<T>()?,
        );
        let out = ctx.output::<T>(0, osh)?;
        select(
            ctx.threads(),
            cv,
            c.shape(),
            xv,
            x.shape(),
            yv,
            y.shape(),
            out,
            osh,
        );
        Ok(())
    }

    fn strings(
        ctx: &mut KernelCtx<'_>,
        c: TensorRef<'_>,
        x: TensorRef<'_>,
        y: TensorRef<'_>,
        osh: &[usize],
    ) -> KernelResult<()> {
        let (cv, xv, yv) = (c.as_slice::<bool>()?, x.as_strings()?, y.as_strings()?);
        let n: usize = osh.iter().product();
        let mut out = vec![String::new(); n];
        select(
            ctx.threads(),
            cv,
            c.shape(),
            xv,
            x.shape(),
            yv,
            y.shape(),
            &mut out,
            osh,
        );
        ctx.put(0, Tensor::from_strings(osh, out)?)
    }

    /// One-byte types read as u8 (float8 kinds), keeping their dtype.
    fn bytes1(
        ctx: &mut KernelCtx<'_>,
        c: TensorRef<'_>,
        x: TensorRef<'_>,
        y: TensorRef<'_>,
        osh: &[usize],
    ) -> KernelResult<()> {
        let (cv, xv, yv) = (
            c.as_slice::<bool>()?,
            x.as_slice::<u8>()?,
            y.as_slice::<u8>()?,
        );
        let out = ctx.output_bytes(0, x.dtype(), osh)?;
        select(
            ctx.threads(),
            cv,
            c.shape(),
            xv,
            x.shape(),
            yv,
            y.shape(),
            out,
            osh,
        );
        Ok(())
    }

    /// Any other fixed-size type (complex), byte by byte.
    fn raw(
        ctx: &mut KernelCtx<'_>,
        c: TensorRef<'_>,
        x: TensorRef<'_>,
        y: TensorRef<'_>,
        osh: &[usize],
    ) -> KernelResult<()> {
        let dt = x.dtype();
        let es = (dt.bits() / 8) as usize;
        if es == 0 || dt.bits() % 8 != 0 {
            return Err(KernelError::unsupported(format!("Where on {dt}")));
        }
        let (cv, xb, yb) = (c.as_slice::<bool>()?, x.bytes()?, y.bytes()?);
        let out = ctx.output_bytes(0, dt, osh)?;
        let strides = [
            broadcast_strides(c.shape(), osh),
            broadcast_strides(x.shape(), osh),
            broadcast_strides(y.shape(), osh),
        ];
        for_each_broadcast(osh, &strides, |i, o| {
            let src = if cv[o[0]] {
                &xb[o[1] * es..]
            } else {
                &yb[o[2] * es..]
            };
            out[i * es..(i + 1) * es].copy_from_slice(&src[..es]);
        });
        Ok(())
    }
}

impl Kernel for Where {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let c = ctx.input(0)?;
        let x = ctx.input(1)?;
        let y = ctx.input(2)?;
        if c.dtype() != DType::Bool {
            return Err(KernelError::invalid(format!(
                "condition must be BOOL, got {}",
                c.dtype()
            )));
        }
        if x.dtype() != y.dtype() {
            return Err(KernelError::invalid(format!(
                "X is {} but Y is {}",
                x.dtype(),
                y.dtype()
            )));
        }
        let osh = broadcast_shapes(&[c.shape(), x.shape(), y.shape()])?;
        let dt = x.dtype();
        match dt {
            DType::String => Self::strings(ctx, c, x, y, &osh),
            DType::Float8E4M3Fn
            | DType::Float8E4M3Fnuz
            | DType::Float8E5M2
            | DType::Float8E5M2Fnuz
            | DType::Float8E8M0 => Self::bytes1(ctx, c, x, y, &osh),
            DType::Complex64 | DType::Complex128 => Self::raw(ctx, c, x, y, &osh),
            _ => dispatch_numeric_bool!(dt, T => Self::typed::<T>(ctx, c, x, y, &osh)),
        }
    }
}

/// Registers these ops.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    b.register("", "Max", |_| Ok(Box::new(Variadic(Op::Max))))?;
    b.register("", "Min", |_| Ok(Box::new(Variadic(Op::Min))))?;
    b.register("", "Sum", |_| Ok(Box::new(Variadic(Op::Sum))))?;
    b.register("", "Mean", |_| Ok(Box::new(Variadic(Op::Mean))))?;
    b.register("", "Where", |_| Ok(Box::new(Where)))?;
    Ok(())
}
