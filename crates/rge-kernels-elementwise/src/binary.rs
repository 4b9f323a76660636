//! Binary elementwise ops with numpy broadcasting: arithmetic, Mod, bit shifts, bitwise and
//! logical ops, comparisons; PRelu (slope broadcast to X) and SwiGLU (equal shapes).

use rge_kernels::shape_util::normalize_axis;
use rge_kernels::{
    dispatch_float, dispatch_int, dispatch_numeric, dispatch_numeric_bool, DType, Elem, Kernel,
    KernelCtx, KernelError, KernelInit, KernelRegistryBuilder, KernelResult, TensorRef,
};

use crate::bcast::{binary, broadcast_pair, broadcast_shapes, DimVec};
use crate::num::{FloatElem, Int, Num, Real};
use crate::unary_float::sigmoid;

/// Pre-opset-7 broadcasting (`broadcast=1`, optional `axis`): B's dims line up with A's
/// starting at `axis` (default: the trailing dims).
#[derive(Clone, Copy, Debug, Default)]
pub struct Legacy(Option<Option<i64>>);

impl Legacy {
    /// Reads `broadcast`/`axis` for opsets before 7.
    pub fn from_init(init: &KernelInit<'_>) -> KernelResult<Self> {
        if init.opset < 7 && init.int_or("broadcast", 0)? != 0 {
            Ok(Legacy(Some(init.int_opt("axis")?)))
        } else {
            Ok(Legacy(None))
        }
    }

    /// B's shape as numpy broadcasting should see it: `b` itself, or (legacy broadcasting)
    /// one built in `tmp`.
    #[inline]
    pub fn b_shape<'s>(
        &self,
        a: &[usize],
        b: &'s [usize],
        tmp: &'s mut DimVec,
    ) -> KernelResult<&'s [usize]> {
        match self.0 {
            None => Ok(b),
            Some(axis) => {
                *tmp = Self::legacy_b_shape(axis, a, b)?;
                Ok(tmp)
            }
        }
    }

    #[cold]
    fn legacy_b_shape(axis: Option<i64>, a: &[usize], b: &[usize]) -> KernelResult<DimVec> {
        let (ra, rb) = (a.len(), b.len());
        let bad = || {
            KernelError::invalid(format!(
                "B of shape {b:?} cannot broadcast to A of shape {a:?}"
            ))
        };
        if rb > ra {
            return Err(bad());
        }
        let axis = match axis {
            None => ra - rb,
            Some(ax) => normalize_axis(ax, ra)?,
        };
        if axis + rb > ra {
            return Err(bad());
        }
        let mut s = DimVec::from_elem(1, ra);
        s[axis..axis + rb].copy_from_slice(b);
        Ok(s)
    }
}

/// Runs `f` over two tensors under broadcasting into output 0 (B read with `b_shape`). Equal
/// shapes (the common case) take the output shape from A without further shape work; nothing
/// here allocates up to rank [`crate::bcast::INLINE_RANK`].
#[inline]
pub fn apply<A: Elem, B: Elem, O: Elem>(
    ctx: &mut KernelCtx<'_>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    b_shape: &[usize],
    f: impl Fn(&A, &B) -> O + Sync,
) -> KernelResult<()> {
    let mut tmp = DimVec::new();
    let osh = broadcast_pair(a.shape(), b_shape, &mut tmp)?;
    let av = a.as_slice::<A>()?;
    let bv = b.as_slice::<B>()?;
    let out = ctx.output::<O>(0, osh)?;
    binary(ctx.threads(), av, a.shape(), bv, b_shape, out, osh, f);
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod { fmod: bool },
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    And,
    Or,
    Xor,
    Eq,
    Gt,
    Ge,
    Lt,
    Le,
}

struct Binary {
    op: Op,
    legacy: Legacy,
    reuse: bool,
}

impl Binary {
    fn arith<T: Num>(
        &self,
        ctx: &mut KernelCtx<'_>,
        a: TensorRef<'_>,
        b: TensorRef<'_>,
        bs: &[usize],
    ) -> KernelResult<()> {
        if !T::IS_FLOAT && matches!(self.op, Op::Div | Op::Mod { .. }) && !a.is_empty() {
            let bv = b.as_slice::<T>()?;
            if bv.iter().any(|v| v.is_zero()) {
                return Err(KernelError::invalid(format!(
                    "integer {} by zero",
                    if self.op == Op::Div {
                        "division"
                    } else {
                        "modulo"
                    }
                )));
            }
        }
        match self.op {
            Op::Add => apply(ctx, a, b, bs, |x: &T, y: &T| x.add(*y)),
            Op::Sub => apply(ctx, a, b, bs, |x: &T, y: &T| x.sub(*y)),
            Op::Mul => apply(ctx, a, b, bs, |x: &T, y: &T| x.mul(*y)),
            Op::Div => apply(ctx, a, b, bs, |x: &T, y: &T| x.div(*y)),
            Op::Mod { fmod } => apply(ctx, a, b, bs, |x: &T, y: &T| x.modulo(*y, fmod)),
            _ => Err(KernelError::unsupported(format!("{:?} in arith", self.op))),
        }
    }

    fn bits<T: Int>(
        &self,
        ctx: &mut KernelCtx<'_>,
        a: TensorRef<'_>,
        b: TensorRef<'_>,
        bs: &[usize],
    ) -> KernelResult<()> {
        match self.op {
            Op::Shl => apply(ctx, a, b, bs, |x: &T, y: &T| x.shl_op(*y)),
            Op::Shr => apply(ctx, a, b, bs, |x: &T, y: &T| x.shr_op(*y)),
            Op::BitAnd => apply(ctx, a, b, bs, |x: &T, y: &T| *x & *y),
            Op::BitOr => apply(ctx, a, b, bs, |x: &T, y: &T| *x | *y),
            Op::BitXor => apply(ctx, a, b, bs, |x: &T, y: &T| *x ^ *y),
            _ => Err(KernelError::unsupported(format!("{:?} in bits", self.op))),
        }
    }

    fn compare<T: Elem + PartialOrd>(
        &self,
        ctx: &mut KernelCtx<'_>,
        a: TensorRef<'_>,
        b: TensorRef<'_>,
        bs: &[usize],
    ) -> KernelResult<()> {
        match self.op {
            Op::Eq => apply(ctx, a, b, bs, |x: &T, y: &T| x == y),
            Op::Gt => apply(ctx, a, b, bs, |x: &T, y: &T| x > y),
            Op::Ge => apply(ctx, a, b, bs, |x: &T, y: &T| x >= y),
            Op::Lt => apply(ctx, a, b, bs, |x: &T, y: &T| x < y),
            Op::Le => apply(ctx, a, b, bs, |x: &T, y: &T| x <= y),
            _ => Err(KernelError::unsupported(format!(
                "{:?} in compare",
                self.op
            ))),
        }
    }

    fn strings(
        &self,
        ctx: &mut KernelCtx<'_>,
        a: TensorRef<'_>,
        b: TensorRef<'_>,
        bs: &[usize],
    ) -> KernelResult<()> {
        if self.op != Op::Eq {
            return Err(KernelError::unsupported(format!(
                "{:?} on strings",
                self.op
            )));
        }
        let mut tmp = DimVec::new();
        let osh = broadcast_pair(a.shape(), bs, &mut tmp)?;
        let (av, bv) = (a.as_strings()?, b.as_strings()?);
        let out = ctx.output::<bool>(0, osh)?;
        binary(ctx.threads(), av, a.shape(), bv, bs, out, osh, |x, y| {
            x == y
        });
        Ok(())
    }
}

impl Kernel for Binary {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        if a.dtype() != b.dtype() {
            return Err(KernelError::invalid(format!(
                "inputs have different types: {} and {}",
                a.dtype(),
                b.dtype()
            )));
        }
        let mut tmp = DimVec::new();
        let bs = self.legacy.b_shape(a.shape(), b.shape(), &mut tmp)?;
        let dt = a.dtype();
        match self.op {
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Mod { .. } => {
                dispatch_numeric!(dt, T => self.arith::<T>(ctx, a, b, bs))
            }
            Op::Shl | Op::Shr | Op::BitAnd | Op::BitOr | Op::BitXor => {
                dispatch_int!(dt, T => self.bits::<T>(ctx, a, b, bs))
            }
            Op::And | Op::Or | Op::Xor => {
                if dt != DType::Bool {
                    return Err(KernelError::unsupported(format!("{:?} on {dt}", self.op)));
                }
                match self.op {
                    Op::And => apply(ctx, a, b, bs, |x: &bool, y: &bool| *x & *y),
                    Op::Or => apply(ctx, a, b, bs, |x: &bool, y: &bool| *x | *y),
                    _ => apply(ctx, a, b, bs, |x: &bool, y: &bool| *x ^ *y),
                }
            }
            _ if dt == DType::String => self.strings(ctx, a, b, bs),
            _ => dispatch_numeric_bool!(dt, T => self.compare::<T>(ctx, a, b, bs)),
        }
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        self.reuse.then_some((0, 0))
    }
}

fn make(init: &KernelInit<'_>, op: Op) -> KernelResult<Box<dyn Kernel>> {
    let compare = matches!(op, Op::Eq | Op::Gt | Op::Ge | Op::Lt | Op::Le);
    let reuse = !compare || init.input_type(0) == Some(DType::Bool);
    Ok(Box::new(Binary {
        op,
        legacy: Legacy::from_init(init)?,
        reuse,
    }))
}

/// PRelu: `x < 0 ? x * slope : x`, slope broadcast to X's shape.
struct PRelu;

impl PRelu {
    /// The slope's shape as seen against X: unidirectional numpy broadcasting, else (as the
    /// reference does) a 1-D slope whose length matches exactly one dim of X.
    fn slope_shape(x: &[usize], s: &[usize]) -> KernelResult<DimVec> {
        if x == s || broadcast_shapes(&[x, s]).is_ok_and(|o| *o == *x) {
            return Ok(DimVec::from_slice(s));
        }
        if let [d] = s {
            if x.iter().filter(|&&v| v == *d).count() == 1 {
                return Ok(x.iter().map(|&v| if v == *d { v } else { 1 }).collect());
            }
        }
        Err(KernelError::invalid(format!(
            "slope of shape {s:?} cannot broadcast to X of shape {x:?}"
        )))
    }

    fn run<T: Num>(
        ctx: &mut KernelCtx<'_>,
        x: TensorRef<'_>,
        s: TensorRef<'_>,
        ss: &[usize],
    ) -> KernelResult<()> {
        apply(ctx, x, s, ss, |x: &T, s: &T| {
            if *x < T::default() {
                x.mul(*s)
            } else {
                *x
            }
        })
    }
}

impl Kernel for PRelu {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let s = ctx.input(1)?;
        if x.dtype() != s.dtype() {
            return Err(KernelError::invalid(format!(
                "X is {} but slope is {}",
                x.dtype(),
                s.dtype()
            )));
        }
        let ss = Self::slope_shape(x.shape(), s.shape())?;
        dispatch_numeric!(x.dtype(), T => Self::run::<T>(ctx, x, s, &ss))
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

/// SwiGLU: `swish_alpha(a) * b`, equal shapes.
struct SwiGlu {
    alpha: f64,
}

impl SwiGlu {
    fn run<T: FloatElem>(
        &self,
        ctx: &mut KernelCtx<'_>,
        a: TensorRef<'_>,
        b: TensorRef<'_>,
    ) -> KernelResult<()> {
        let alpha = <T::C as Real>::from_f64(self.alpha);
        apply(ctx, a, b, b.shape(), |x: &T, y: &T| {
            let x = x.load();
            T::store(x * sigmoid(alpha * x) * y.load())
        })
    }
}

impl Kernel for SwiGlu {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        if a.dtype() != b.dtype() || a.shape() != b.shape() {
            return Err(KernelError::invalid(format!(
                "SwiGLU needs A and B of one type and shape, got {} {:?} and {} {:?}",
                a.dtype(),
                a.shape(),
                b.dtype(),
                b.shape()
            )));
        }
        dispatch_float!(a.dtype(), T => self.run::<T>(ctx, a, b))
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

/// Registers the binary ops.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    b.register("", "Add", |i| make(i, Op::Add))?;
    b.register("", "Sub", |i| make(i, Op::Sub))?;
    b.register("", "Mul", |i| make(i, Op::Mul))?;
    b.register("", "Div", |i| make(i, Op::Div))?;
    b.register("", "Mod", |i| {
        let fmod = match i.int_or("fmod", 0)? {
            0 => false,
            1 => true,
            v => {
                return Err(KernelError::attr(
                    "fmod",
                    format!("must be 0 or 1, got {v}"),
                ))
            }
        };
        make(i, Op::Mod { fmod })
    })?;
    b.register("", "BitShift", |i| match i.str_opt("direction")? {
        Some("LEFT") => make(i, Op::Shl),
        Some("RIGHT") => make(i, Op::Shr),
        other => Err(KernelError::attr(
            "direction",
            format!("must be LEFT or RIGHT, got {other:?}"),
        )),
    })?;
    b.register("", "BitwiseAnd", |i| make(i, Op::BitAnd))?;
    b.register("", "BitwiseOr", |i| make(i, Op::BitOr))?;
    b.register("", "BitwiseXor", |i| make(i, Op::BitXor))?;
    b.register("", "And", |i| make(i, Op::And))?;
    b.register("", "Or", |i| make(i, Op::Or))?;
    b.register("", "Xor", |i| make(i, Op::Xor))?;
    b.register("", "Equal", |i| make(i, Op::Eq))?;
    b.register("", "Greater", |i| make(i, Op::Gt))?;
    b.register("", "GreaterOrEqual", |i| make(i, Op::Ge))?;
    b.register("", "Less", |i| make(i, Op::Lt))?;
    b.register("", "LessOrEqual", |i| make(i, Op::Le))?;
    b.register("", "PRelu", |_| Ok(Box::new(PRelu)))?;
    b.register("", "SwiGLU", |i| {
        Ok(Box::new(SwiGlu {
            alpha: i.float_or("alpha", 1.0)? as f64,
        }))
    })?;
    Ok(())
}
