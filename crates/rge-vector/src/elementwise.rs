//! The elementwise kernels: unary math and activations, binary arithmetic with numpy
//! broadcasting (fast paths for equal shapes, a scalar operand, and row or per-channel
//! broadcast through the elementwise family's row plan), and Where. f32 runs on the SIMD
//! loops; any other dtype (when placement could not see it) runs the `cpu` engine's kernel,
//! which every vector kernel keeps as its fallback. Large tensors are split over the
//! session's threads.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelFactory, KernelInit, KernelResult};
use rge_kernels_elementwise::bcast::{broadcast_shapes, for_chunks, Plan};

use crate::simd::{self, BinOp, Isa, Src, UnaryOp};

/// The reference kernel of the same node, for inputs the vector kernel does not take.
pub(crate) fn fallback(f: KernelFactory, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    f(init)
}

/// A unary kernel: `y = op(x)`.
pub struct UnaryKernel {
    op: UnaryOp,
    /// Clip with min/max inputs (opset 11+): the bounds are read at run time.
    clip_inputs: bool,
    isa: Isa,
    fallback: Box<dyn Kernel>,
}

/// The scalar value of optional input `i` (Clip's bounds), if given.
fn scalar_input(ctx: &KernelCtx<'_>, i: usize) -> KernelResult<Option<f32>> {
    match ctx.opt_input(i)? {
        None => Ok(None),
        Some(t) => match t.as_slice::<f32>()? {
            [v] => Ok(Some(*v)),
            [] => Ok(None),
            v => Err(KernelError::invalid(format!(
                "input {i} must be a scalar, got {} values",
                v.len()
            ))),
        },
    }
}

impl UnaryKernel {
    /// Runs `op` over `x` into output 0, in place when the runtime gave the input's memory.
    fn run(&self, ctx: &mut KernelCtx<'_>, op: &UnaryOp) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let xs = x.as_slice::<f32>()?;
        let out = ctx.output::<f32>(0, x.shape())?;
        let isa = self.isa;
        if std::ptr::eq(xs.as_ptr(), out.as_ptr()) {
            for_chunks(ctx.threads(), out, |o, _| simd::unary_in_place(isa, op, o));
        } else {
            for_chunks(ctx.threads(), out, |o, s| {
                simd::unary(isa, op, &xs[s..s + o.len()], o)
            });
        }
        Ok(())
    }
}

impl Kernel for UnaryKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if ctx.input(0)?.dtype() != DType::Float {
            return self.fallback.compute(ctx);
        }
        if self.clip_inputs {
            let lo = scalar_input(ctx, 1)?.unwrap_or(f32::NEG_INFINITY);
            let hi = scalar_input(ctx, 2)?.unwrap_or(f32::INFINITY);
            return self.run(ctx, &UnaryOp::Clip(lo, hi));
        }
        self.run(ctx, &self.op)
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

fn attr(init: &KernelInit<'_>, name: &str, default: f32) -> KernelResult<f32> {
    init.float_or(name, default)
}

/// The unary op of a node, from its type and attributes.
pub fn unary_op(init: &KernelInit<'_>) -> KernelResult<UnaryOp> {
    Ok(match init.op_type {
        "Relu" => UnaryOp::Relu,
        "LeakyRelu" => UnaryOp::LeakyRelu(attr(init, "alpha", 0.01)?),
        "Clip" => UnaryOp::Clip(attr(init, "min", f32::MIN)?, attr(init, "max", f32::MAX)?),
        "Sigmoid" => UnaryOp::Sigmoid,
        "HardSigmoid" => UnaryOp::HardSigmoid(attr(init, "alpha", 0.2)?, attr(init, "beta", 0.5)?),
        "HardSwish" => UnaryOp::HardSwish,
        "Tanh" => UnaryOp::Tanh,
        "Erf" => UnaryOp::Erf,
        "Exp" => UnaryOp::Exp,
        "Log" => UnaryOp::Log,
        "Sqrt" => UnaryOp::Sqrt,
        "Reciprocal" => UnaryOp::Reciprocal,
        "Neg" => UnaryOp::Neg,
        "Abs" => UnaryOp::Abs,
        "Gelu" => match init.str_or("approximate", "none")? {
            "none" => UnaryOp::Gelu,
            "tanh" => UnaryOp::GeluTanh,
            other => {
                return Err(KernelError::attr(
                    "approximate",
                    format!("must be 'none' or 'tanh', got '{other}'"),
                ))
            }
        },
        "Softplus" => UnaryOp::Softplus,
        "Softsign" => UnaryOp::Softsign,
        "Elu" => UnaryOp::Elu(attr(init, "alpha", 1.0)?),
        "Selu" => UnaryOp::Selu(
            attr(init, "alpha", 1.673_263_2)?,
            attr(init, "gamma", 1.050_701)?,
        ),
        "Celu" => {
            let a = attr(init, "alpha", 1.0)?;
            if a == 0.0 {
                return Err(KernelError::attr("alpha", "must not be 0"));
            }
            UnaryOp::Celu(a)
        }
        "ThresholdedRelu" => UnaryOp::ThresholdedRelu(attr(init, "alpha", 1.0)?),
        "Mish" => UnaryOp::Mish,
        "Swish" => UnaryOp::Swish(attr(init, "alpha", 1.0)?),
        "Sin" => UnaryOp::Sin,
        "Cos" => UnaryOp::Cos,
        "Floor" => UnaryOp::Floor,
        "Ceil" => UnaryOp::Ceil,
        "Round" => UnaryOp::Round,
        other => {
            return Err(KernelError::unsupported(format!(
                "`{other}` is not a vector unary op"
            )))
        }
    })
}

/// The ONNX op types the unary kernel runs.
pub const UNARY_OPS: &[&str] = &[
    "Relu",
    "LeakyRelu",
    "Clip",
    "Sigmoid",
    "HardSigmoid",
    "HardSwish",
    "Tanh",
    "Erf",
    "Exp",
    "Log",
    "Sqrt",
    "Reciprocal",
    "Neg",
    "Abs",
    "Gelu",
    "Softplus",
    "Softsign",
    "Elu",
    "Selu",
    "Celu",
    "ThresholdedRelu",
    "Mish",
    "Swish",
    "Sin",
    "Cos",
    "Floor",
    "Ceil",
    "Round",
];

/// Builds a unary kernel (`reference` builds the fallback).
pub fn create_unary(
    init: &KernelInit<'_>,
    reference: KernelFactory,
    isa: Isa,
) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(UnaryKernel {
        op: unary_op(init)?,
        clip_inputs: init.op_type == "Clip" && init.opset >= 11,
        isa,
        fallback: fallback(reference, init)?,
    }))
}

/// A binary kernel: `y = op(a, b)` under numpy broadcasting (PRelu: the slope broadcast to X).
pub struct BinaryKernel {
    op: BinOp,
    isa: Isa,
    fallback: Box<dyn Kernel>,
}

/// The binary op of an op type.
pub fn bin_op(op_type: &str) -> Option<BinOp> {
    Some(match op_type {
        "Add" => BinOp::Add,
        "Sub" => BinOp::Sub,
        "Mul" => BinOp::Mul,
        "Div" => BinOp::Div,
        "Max" => BinOp::Max,
        "Min" => BinOp::Min,
        "Pow" => BinOp::Pow,
        "PRelu" => BinOp::PRelu,
        _ => return None,
    })
}

/// The ONNX op types the binary kernel runs.
pub const BINARY_OPS: &[&str] = &["Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "PRelu"];

/// Builds a binary kernel.
pub fn create_binary(
    init: &KernelInit<'_>,
    reference: KernelFactory,
    isa: Isa,
) -> KernelResult<Box<dyn Kernel>> {
    let op = bin_op(init.op_type).ok_or_else(|| {
        KernelError::unsupported(format!("`{}` is not a vector binary op", init.op_type))
    })?;
    Ok(Box::new(BinaryKernel {
        op,
        isa,
        fallback: fallback(reference, init)?,
    }))
}

impl BinaryKernel {
    fn run(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<bool> {
        if ctx.input_count() != 2 {
            return Ok(false);
        }
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        if a.dtype() != DType::Float || b.dtype() != DType::Float {
            return Ok(false);
        }
        let (ash, bsh) = (a.shape(), b.shape());
        let osh = match broadcast_shapes(&[ash, bsh]) {
            Ok(s) => s,
            Err(_) => return Ok(false),
        };
        if self.op == BinOp::PRelu && osh.as_slice() != ash {
            // PRelu's other slope forms are the reference's.
            return Ok(false);
        }
        let (av, bv) = (a.as_slice::<f32>()?, b.as_slice::<f32>()?);
        let out = ctx.output::<f32>(0, &osh)?;
        let (isa, op, n, th) = (self.isa, self.op, out.len(), ctx.threads());
        // Pow by a scalar 2 is a square (the reference does the same).
        if op == BinOp::Pow && bv.len() == 1 && bv[0] == 2.0 && av.len() == n {
            for_chunks(th, out, |o, s| {
                simd::unary(isa, &UnaryOp::Square, &av[s..s + o.len()], o)
            });
            return Ok(true);
        }
        let in_place_a = std::ptr::eq(av.as_ptr(), out.as_ptr());
        if av.len() == n && (bv.len() == n || bv.len() == 1) {
            let bsrc = |s: usize, l: usize| {
                if bv.len() == 1 {
                    Src::Scalar(bv[0])
                } else {
                    Src::Slice(&bv[s..s + l])
                }
            };
            if in_place_a {
                for_chunks(th, out, |o, s| {
                    simd::binary_in_place(isa, op, bsrc(s, o.len()), o)
                });
            } else {
                for_chunks(th, out, |o, s| {
                    let l = o.len();
                    simd::binary(isa, op, Src::Slice(&av[s..s + l]), bsrc(s, l), o)
                });
            }
            return Ok(true);
        }
        if av.len() == 1 && bv.len() == n {
            let x = av[0];
            for_chunks(th, out, |o, s| {
                let l = o.len();
                simd::binary(isa, op, Src::Scalar(x), Src::Slice(&bv[s..s + l]), o)
            });
            return Ok(true);
        }
        // Row plan: each run of the innermost (coalesced) dim reads each operand contiguously
        // or as one broadcast value (per-channel and row broadcasts).
        let plan = Plan::new(&osh, [ash, bsh]);
        let [sa, sb] = plan.inner_strides;
        plan.run(th, out, |o, [oa, ob]| {
            let l = o.len();
            let pa = if sa == 1 {
                Src::Slice(&av[oa..oa + l])
            } else {
                Src::Scalar(av[oa])
            };
            let pb = if sb == 1 {
                Src::Slice(&bv[ob..ob + l])
            } else {
                Src::Scalar(bv[ob])
            };
            simd::binary(isa, op, pa, pb, o)
        });
        Ok(true)
    }
}

impl Kernel for BinaryKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if self.run(ctx)? {
            Ok(())
        } else {
            self.fallback.compute(ctx)
        }
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

/// Where(cond, x, y) on f32 values with three-way broadcasting.
pub struct WhereKernel {
    fallback: Box<dyn Kernel>,
}

/// Builds Where.
pub fn create_where(
    init: &KernelInit<'_>,
    reference: KernelFactory,
) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(WhereKernel {
        fallback: fallback(reference, init)?,
    }))
}

impl Kernel for WhereKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (c, x, y) = (ctx.input(0)?, ctx.input(1)?, ctx.input(2)?);
        if c.dtype() != DType::Bool || x.dtype() != DType::Float || y.dtype() != DType::Float {
            return self.fallback.compute(ctx);
        }
        let osh = broadcast_shapes(&[c.shape(), x.shape(), y.shape()])?;
        let (cv, xv, yv) = (
            c.as_slice::<bool>()?,
            x.as_slice::<f32>()?,
            y.as_slice::<f32>()?,
        );
        let out = ctx.output::<f32>(0, &osh)?;
        let plan = Plan::new(&osh, [c.shape(), x.shape(), y.shape()]);
        let [sc, sx, sy] = plan.inner_strides;
        plan.run(ctx.threads(), out, |o, [oc, ox, oy]| {
            for (i, o) in o.iter_mut().enumerate() {
                *o = if cv[oc + i * sc] {
                    xv[ox + i * sx]
                } else {
                    yv[oy + i * sy]
                };
            }
        });
        Ok(())
    }
}
