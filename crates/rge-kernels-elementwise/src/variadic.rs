//! Variadic ops with multidirectional broadcasting (Max, Min, Sum, Mean) and Where.

use rge_kernels::shape_util::{broadcast_shapes, broadcast_strides, for_each_broadcast};
use rge_kernels::{
    dispatch_float, dispatch_numeric, dispatch_numeric_bool, DType, Elem, Kernel, KernelCtx,
    KernelError, KernelRegistryBuilder, KernelResult, Tensor, TensorRef,
};

use crate::bcast::{accumulate, expand_into, for_chunks, Plan};
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
    fn run<T: Num>(
        &self,
        ctx: &mut KernelCtx<'_>,
        ins: &[TensorRef<'_>],
        osh: &[usize],
    ) -> KernelResult<()> {
        let slices = ins
            .iter()
            .map(|t| t.as_slice::<T>())
            .collect::<KernelResult<Vec<_>>>()?;
        let out = ctx.output::<T>(0, osh)?;
        let th = ctx.threads();
        expand_into(th, out, osh, slices[0], ins[0].shape());
        for (x, t) in slices.iter().zip(ins).skip(1) {
            match self.0 {
                Op::Max => accumulate(th, out, osh, x, t.shape(), max_nan),
                Op::Min => accumulate(th, out, osh, x, t.shape(), min_nan),
                Op::Sum | Op::Mean => accumulate(th, out, osh, x, t.shape(), |a: T, b| a.add(b)),
            }
        }
        if self.0 == Op::Mean && ins.len() > 1 {
            let n = T::from_f64v(ins.len() as f64);
            for_chunks(th, out, |o, _| {
                for v in o.iter_mut() {
                    *v = v.div(n);
                }
            });
        }
        Ok(())
    }
}

impl Kernel for Variadic {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let ins = (0..ctx.input_count())
            .map(|i| ctx.input(i))
            .collect::<KernelResult<Vec<_>>>()?;
        let Some(first) = ins.first() else {
            return Err(KernelError::invalid(format!(
                "{:?} needs at least one input",
                self.0
            )));
        };
        let dt = first.dtype();
        if let Some(t) = ins.iter().find(|t| t.dtype() != dt) {
            return Err(KernelError::invalid(format!(
                "inputs have different types: {dt} and {}",
                t.dtype()
            )));
        }
        let shapes: Vec<&[usize]> = ins.iter().map(|t| t.shape()).collect();
        let osh = broadcast_shapes(&shapes)?;
        if self.0 == Op::Mean {
            dispatch_float!(dt, T => self.run::<T>(ctx, &ins, &osh))
        } else {
            dispatch_numeric!(dt, T => self.run::<T>(ctx, &ins, &osh))
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
