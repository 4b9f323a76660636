//! Pow: base of a float or integer type, exponent of any numeric type; the result has the
//! base's type. Same-type float pairs compute in the compute type; mixed pairs compute in f64
//! and convert (integers truncate toward zero); integer pairs use wrapping integer powers.

use std::sync::atomic::{AtomicBool, Ordering};

use rge_kernels::{
    dispatch_float, dispatch_int, Kernel, KernelCtx, KernelError, KernelInit,
    KernelRegistryBuilder, KernelResult, TensorRef,
};

use crate::bcast::{binary, broadcast_pair, map, DimVec};
use crate::binary::{apply, Legacy};
use num_traits::Float;

use crate::num::{FloatElem, Int, Num, Real};

struct Pow {
    legacy: Legacy,
}

/// Float base, exponent of the same type.
fn same_float<T: FloatElem>(
    ctx: &mut KernelCtx<'_>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    bs: &[usize],
) -> KernelResult<()> {
    let e = b.as_slice::<T>()?;
    if let [e] = e {
        let e = e.load();
        if e == <T::C as Real>::from_f64(2.0) && bs.len() <= a.rank() {
            let xs = a.as_slice::<T>()?;
            let out = ctx.output::<T>(0, a.shape())?;
            map(ctx.threads(), xs, out, |x| {
                let x = x.load();
                T::store(x * x)
            });
            return Ok(());
        }
    }
    apply(ctx, a, b, bs, |x: &T, y: &T| {
        T::store(x.load().powf(y.load()))
    })
}

/// Runs `f(base, exponent)` with the exponent given as a converted vector.
fn with_exps<T: Num, E: Sync>(
    ctx: &mut KernelCtx<'_>,
    a: TensorRef<'_>,
    exps: &[E],
    bs: &[usize],
    f: impl Fn(&T, &E) -> T + Sync,
) -> KernelResult<()> {
    let mut tmp = DimVec::new();
    let osh = broadcast_pair(a.shape(), bs, &mut tmp)?;
    let av = a.as_slice::<T>()?;
    let out = ctx.output::<T>(0, osh)?;
    binary(ctx.threads(), av, a.shape(), exps, bs, out, osh, f);
    Ok(())
}

fn int_base<T: Int>(
    ctx: &mut KernelCtx<'_>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    bs: &[usize],
) -> KernelResult<()> {
    if b.dtype().is_integer() {
        let exps = b.to_i64_vec()?;
        let bad = AtomicBool::new(false);
        with_exps(ctx, a, &exps, bs, |x: &T, e: &i64| {
            x.ipow(*e).unwrap_or_else(|| {
                bad.store(true, Ordering::Relaxed);
                T::default()
            })
        })?;
        if bad.load(Ordering::Relaxed) {
            return Err(KernelError::invalid("integer 0 raised to a negative power"));
        }
        Ok(())
    } else {
        let exps = b.to_f64_vec()?;
        with_exps(ctx, a, &exps, bs, |x: &T, e: &f64| {
            T::from_f64v(x.to_f64v().powf(*e))
        })
    }
}

fn float_base<T: FloatElem>(
    ctx: &mut KernelCtx<'_>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    bs: &[usize],
) -> KernelResult<()> {
    if b.dtype() == a.dtype() {
        return same_float::<T>(ctx, a, b, bs);
    }
    let exps = b.to_f64_vec()?;
    with_exps(ctx, a, &exps, bs, |x: &T, e: &f64| {
        T::store(<T::C as Real>::from_f64(x.load().as_f64().powf(*e)))
    })
}

impl Kernel for Pow {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        if !(b.dtype().is_float() || b.dtype().is_integer()) {
            return Err(KernelError::unsupported(format!(
                "Pow exponent of type {}",
                b.dtype()
            )));
        }
        let mut tmp = DimVec::new();
        let bs = self.legacy.b_shape(a.shape(), b.shape(), &mut tmp)?;
        if a.dtype().is_integer() {
            dispatch_int!(a.dtype(), T => int_base::<T>(ctx, a, b, bs))
        } else {
            dispatch_float!(a.dtype(), T => float_base::<T>(ctx, a, b, bs))
        }
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

fn make(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Pow {
        legacy: Legacy::from_init(init)?,
    }))
}

/// Registers Pow.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    b.register("", "Pow", make)?;
    Ok(())
}
