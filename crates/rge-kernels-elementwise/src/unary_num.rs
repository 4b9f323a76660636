//! Unary ops over integers as well as floats (Abs, Neg, Sign, Relu, Clip, Shrink), the
//! bool/bit ops (Not, BitwiseNot) and the float predicates (IsNaN, IsInf).

use rge_kernels::{
    dispatch_float, dispatch_int, dispatch_numeric, DType, Kernel, KernelCtx, KernelError,
    KernelInit, KernelRegistryBuilder, KernelResult, TensorRef,
};

use crate::bcast::map;
use num_traits::Float;

use crate::num::{FloatElem, Int, Num, Real};
use crate::unary_float::{FloatUnary, Shrink};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Abs,
    Neg,
    Sign,
    Relu,
}

struct NumUnary(Op);

impl NumUnary {
    fn float<T: FloatElem>(&self, ctx: &mut KernelCtx<'_>, x: TensorRef<'_>) -> KernelResult<()> {
        let xs = x.as_slice::<T>()?;
        let out = ctx.output::<T>(0, x.shape())?;
        let t = ctx.threads();
        let zero = <T::C as num_traits::Zero>::zero();
        let one = <T::C as num_traits::One>::one();
        match self.0 {
            Op::Abs => map(t, xs, out, |v| T::store(v.load().abs())),
            Op::Neg => map(t, xs, out, |v| T::store(-v.load())),
            Op::Sign => map(t, xs, out, |v| {
                let v = v.load();
                T::store(if v > zero {
                    one
                } else if v < zero {
                    -one
                } else {
                    v
                })
            }),
            Op::Relu => map(
                t,
                xs,
                out,
                |v| if v.load() < zero { T::store(zero) } else { v },
            ),
        }
        Ok(())
    }

    fn int<T: Int>(&self, ctx: &mut KernelCtx<'_>, x: TensorRef<'_>) -> KernelResult<()> {
        let xs = x.as_slice::<T>()?;
        let out = ctx.output::<T>(0, x.shape())?;
        let t = ctx.threads();
        match self.0 {
            Op::Abs => map(t, xs, out, |v| v.wabs()),
            Op::Neg => map(t, xs, out, |v| v.wneg()),
            Op::Sign => map(t, xs, out, |v| v.sign()),
            Op::Relu => map(
                t,
                xs,
                out,
                |v| if v < T::default() { T::default() } else { v },
            ),
        }
        Ok(())
    }
}

impl Kernel for NumUnary {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        if x.dtype().is_integer() {
            dispatch_int!(x.dtype(), T => self.int::<T>(ctx, x))
        } else {
            dispatch_float!(x.dtype(), T => self.float::<T>(ctx, x))
        }
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

/// Not (bool) and BitwiseNot (integers).
struct NotKernel {
    bitwise: bool,
}

impl Kernel for NotKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        if !self.bitwise {
            let xs = x.as_slice::<bool>()?;
            let out = ctx.output::<bool>(0, x.shape())?;
            map(ctx.threads(), xs, out, |v| !v);
            return Ok(());
        }
        dispatch_int!(x.dtype(), T => {
            let xs = x.as_slice::<T>()?;
            let out = ctx.output::<T>(0, x.shape())?;
            map(ctx.threads(), xs, out, |v| !v);
            Ok(())
        })
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

/// IsNaN (`inf: None`) and IsInf (`inf: Some((detect_positive, detect_negative))`).
struct FloatClass {
    inf: Option<(bool, bool)>,
}

impl FloatClass {
    fn test(&self, v: f64) -> bool {
        match self.inf {
            None => v.is_nan(),
            Some((pos, neg)) => (pos && v == f64::INFINITY) || (neg && v == f64::NEG_INFINITY),
        }
    }

    fn run<T: FloatElem>(&self, ctx: &mut KernelCtx<'_>, x: TensorRef<'_>) -> KernelResult<()> {
        let xs = x.as_slice::<T>()?;
        let out = ctx.output::<bool>(0, x.shape())?;
        map(ctx.threads(), xs, out, |v| self.test(v.load().as_f64()));
        Ok(())
    }

    /// Float8 types, by bit pattern.
    fn run_f8(&self, ctx: &mut KernelCtx<'_>, x: TensorRef<'_>) -> KernelResult<()> {
        let dt = x.dtype();
        let xs = x.as_slice::<u8>()?;
        let out = ctx.output::<bool>(0, x.shape())?;
        let class = |b: u8| -> f64 {
            match dt {
                DType::Float8E4M3Fn if b & 0x7f == 0x7f => f64::NAN,
                DType::Float8E4M3Fnuz | DType::Float8E5M2Fnuz if b == 0x80 => f64::NAN,
                DType::Float8E5M2 if b & 0x7f > 0x7c => f64::NAN,
                DType::Float8E5M2 if b == 0x7c => f64::INFINITY,
                DType::Float8E5M2 if b == 0xfc => f64::NEG_INFINITY,
                _ => 0.0,
            }
        };
        map(ctx.threads(), xs, out, |b| self.test(class(b)));
        Ok(())
    }
}

impl Kernel for FloatClass {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        match x.dtype() {
            DType::Float8E4M3Fn
            | DType::Float8E4M3Fnuz
            | DType::Float8E5M2
            | DType::Float8E5M2Fnuz => self.run_f8(ctx, x),
            dt => dispatch_float!(dt, T => self.run::<T>(ctx, x)),
        }
    }
}

/// Clip: bounds from attributes (opset < 11) or from optional inputs 1 and 2.
struct Clip {
    /// Attribute bounds (opset < 11).
    attrs: Option<(f32, f32)>,
}

/// The single value of a bound input (absent or empty: no bound).
fn bound<T: Num>(t: Option<TensorRef<'_>>, name: &str) -> KernelResult<Option<T>> {
    let Some(t) = t else { return Ok(None) };
    let v = t
        .as_slice::<T>()
        .map_err(|e| KernelError::invalid(format!("Clip {name}: {e}")))?;
    match v {
        [] => Ok(None),
        [x] => Ok(Some(*x)),
        _ => Err(KernelError::invalid(format!(
            "Clip {name} must be a scalar, got shape {:?}",
            t.shape()
        ))),
    }
}

impl Clip {
    fn run<T: Num>(&self, ctx: &mut KernelCtx<'_>, x: TensorRef<'_>) -> KernelResult<()> {
        let (lo, hi) = match self.attrs {
            Some((lo, hi)) => (
                (lo != f32::NEG_INFINITY).then(|| T::from_f64v(lo as f64)),
                (hi != f32::INFINITY).then(|| T::from_f64v(hi as f64)),
            ),
            None => (
                bound::<T>(ctx.opt_input(1)?, "min")?,
                bound::<T>(ctx.opt_input(2)?, "max")?,
            ),
        };
        let xs = x.as_slice::<T>()?;
        let out = ctx.output::<T>(0, x.shape())?;
        let t = ctx.threads();
        match (lo, hi) {
            (None, None) => {
                // The output may be planned over the input's memory (reuse_input).
                if !std::ptr::eq(out.as_ptr(), xs.as_ptr()) {
                    out.copy_from_slice(xs);
                }
            }
            (Some(lo), None) => map(t, xs, out, |v| if v < lo { lo } else { v }),
            (None, Some(hi)) => map(t, xs, out, |v| if v > hi { hi } else { v }),
            (Some(lo), Some(hi)) => map(t, xs, out, |v| {
                let v = if v < lo { lo } else { v };
                if v > hi {
                    hi
                } else {
                    v
                }
            }),
        }
        Ok(())
    }
}

impl Kernel for Clip {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        dispatch_numeric!(x.dtype(), T => self.run::<T>(ctx, x))
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

/// Shrink over integer types (floats use the float kernel): compares and adds in f64, then
/// converts back.
struct IntShrink {
    float: FloatUnary<Shrink>,
}

impl Kernel for IntShrink {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        if !x.dtype().is_integer() {
            return self.float.compute(ctx);
        }
        let (l, b) = (self.float.0.lambd, self.float.0.bias);
        dispatch_int!(x.dtype(), T => {
            let xs = x.as_slice::<T>()?;
            let out = ctx.output::<T>(0, x.shape())?;
            map(ctx.threads(), xs, out, |v| {
                let f = v.to_f64v();
                if f < -l {
                    T::from_f64v(f + b)
                } else if f > l {
                    T::from_f64v(f - b)
                } else {
                    T::default()
                }
            });
            Ok(())
        })
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

fn flag(init: &KernelInit<'_>, name: &str) -> KernelResult<bool> {
    Ok(init.int_or(name, 1)? != 0)
}

/// Registers these ops.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    b.register("", "Abs", |_| Ok(Box::new(NumUnary(Op::Abs))))?;
    b.register("", "Neg", |_| Ok(Box::new(NumUnary(Op::Neg))))?;
    b.register("", "Sign", |_| Ok(Box::new(NumUnary(Op::Sign))))?;
    b.register("", "Relu", |_| Ok(Box::new(NumUnary(Op::Relu))))?;
    b.register("", "Not", |_| Ok(Box::new(NotKernel { bitwise: false })))?;
    b.register("", "BitwiseNot", |_| {
        Ok(Box::new(NotKernel { bitwise: true }))
    })?;
    b.register("", "IsNaN", |_| Ok(Box::new(FloatClass { inf: None })))?;
    b.register("", "IsInf", |i| {
        Ok(Box::new(FloatClass {
            inf: Some((flag(i, "detect_positive")?, flag(i, "detect_negative")?)),
        }))
    })?;
    b.register("", "Clip", |i| {
        let attrs = if i.opset < 11 {
            Some((
                i.float_or("min", f32::NEG_INFINITY)?,
                i.float_or("max", f32::INFINITY)?,
            ))
        } else {
            None
        };
        Ok(Box::new(Clip { attrs }))
    })?;
    b.register("", "Shrink", |i| {
        let lambd = i.float_or("lambd", 0.5)? as f64;
        let bias = i.float_or("bias", 0.0)? as f64;
        Ok(Box::new(IntShrink {
            float: FloatUnary(Shrink { lambd, bias }),
        }))
    })?;
    Ok(())
}
