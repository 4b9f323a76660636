//! Arithmetic of the TF dialect: binary ops over the ONNX kernels (AddV2 → Add, RealDiv →
//! Div, Maximum → Max …), SquaredDifference and Rsqrt/Square as two steps, FloorDiv and
//! FloorMod computed here (ONNX's Div truncates and its float Mod is C's fmod), and the
//! reductions as ONNX Reduce* with `noop_with_empty_axes` (TF reduces nothing over no axes).

use rge_ir::AttrValue;
use rge_kernels::{
    DType, Elem, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, TensorRef,
};
use rge_kernels_elementwise::bcast::{binary, broadcast_shapes};
use rge_ops::ops::tf::flag;

use crate::nn::direct;
use crate::steps::{attr_err, i64s, put, Steps};

/// The ONNX op of each TF binary op that is one.
fn onnx_binary(op: &str) -> Option<&'static str> {
    Some(match op {
        "Add" | "AddV2" => "Add",
        "Sub" => "Sub",
        "Mul" => "Mul",
        "Div" | "RealDiv" => "Div",
        "Maximum" => "Max",
        "Minimum" => "Min",
        "Pow" => "Pow",
        _ => return None,
    })
}

fn onnx_unary(op: &str) -> Option<&'static str> {
    Some(match op {
        "Sqrt" => "Sqrt",
        "Exp" => "Exp",
        "Log" => "Log",
        "Neg" => "Neg",
        "Abs" => "Abs",
        "Tanh" => "Tanh",
        "Sigmoid" => "Sigmoid",
        _ => return None,
    })
}

pub fn create_arith(steps: &Steps, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let op = init.op_type;
    if let Some(o) = onnx_binary(op).or_else(|| onnx_unary(op)) {
        return direct(steps, o, Vec::new());
    }
    Ok(match op {
        "SquaredDifference" => Box::new(TwoSteps {
            first: steps.kernel("Sub", Vec::new())?,
            second: steps.kernel("Mul", Vec::new())?,
            square_second: true,
        }),
        "Square" => Box::new(TwoSteps {
            first: steps.kernel("Identity", Vec::new())?,
            second: steps.kernel("Mul", Vec::new())?,
            square_second: true,
        }),
        "Rsqrt" => Box::new(TwoSteps {
            first: steps.kernel("Sqrt", Vec::new())?,
            second: steps.kernel("Reciprocal", Vec::new())?,
            square_second: false,
        }),
        "FloorDiv" => Box::new(Floor { modulo: false }),
        "FloorMod" => Box::new(Floor { modulo: true }),
        other => {
            return Err(KernelError::unsupported(format!(
                "no arithmetic op {other}"
            )))
        }
    })
}

/// `second(first(inputs))`; with `square_second`, the second step gets the first's result
/// twice (x · x).
struct TwoSteps {
    first: crate::steps::Step,
    second: crate::steps::Step,
    square_second: bool,
}

impl Kernel for TwoSteps {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let inputs: Vec<Option<TensorRef<'_>>> = (0..ctx.input_count())
            .map(|i| ctx.opt_input(i))
            .collect::<KernelResult<_>>()?;
        let th = ctx.threads();
        let t = self.first.run(&inputs, th)?;
        let y = if self.square_second {
            self.second.run(&[Some(t.view()), Some(t.view())], th)?
        } else {
            self.second.run(&[Some(t.view())], th)?
        };
        put(ctx, 0, y)
    }
}

/// FloorDiv (division rounded toward −∞) and FloorMod (the remainder with the divisor's sign).
struct Floor {
    modulo: bool,
}

fn floor_op<T: Elem + Copy + Default + Send + Sync>(
    ctx: &mut KernelCtx<'_>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    f: impl Fn(T, T) -> T + Sync,
) -> KernelResult<()> {
    let shape = broadcast_shapes(&[a.shape(), b.shape()])?;
    let n: usize = shape.iter().product();
    let mut out = vec![T::default(); n];
    binary(
        ctx.threads(),
        a.as_slice::<T>()?,
        a.shape(),
        b.as_slice::<T>()?,
        b.shape(),
        &mut out,
        &shape,
        |x, y| f(*x, *y),
    );
    put(ctx, 0, Tensor::from_vec(&shape, out)?)
}

fn int_floor(modulo: bool) -> impl Fn(i64, i64) -> i64 + Sync {
    move |a, b| {
        if b == 0 {
            return 0;
        }
        let (q, r) = (a.wrapping_div(b), a.wrapping_rem(b));
        let adjust = r != 0 && (r < 0) != (b < 0);
        match (modulo, adjust) {
            (false, true) => q - 1,
            (false, false) => q,
            (true, true) => r + b,
            (true, false) => r,
        }
    }
}

impl Kernel for Floor {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        if a.dtype() != b.dtype() {
            return Err(KernelError::invalid(format!(
                "x is {} and y {}",
                a.dtype().name(),
                b.dtype().name()
            )));
        }
        if a.dtype().is_integer() && b.to_i64_vec()?.contains(&0) {
            return Err(KernelError::invalid("integer division by zero"));
        }
        let m = self.modulo;
        match a.dtype() {
            DType::Float => floor_op::<f32>(ctx, a, b, move |x, y| {
                if m {
                    let r = x % y;
                    if r != 0.0 && (r < 0.0) != (y < 0.0) {
                        r + y
                    } else {
                        r
                    }
                } else {
                    (x / y).floor()
                }
            }),
            DType::Double => floor_op::<f64>(ctx, a, b, move |x, y| {
                if m {
                    let r = x % y;
                    if r != 0.0 && (r < 0.0) != (y < 0.0) {
                        r + y
                    } else {
                        r
                    }
                } else {
                    (x / y).floor()
                }
            }),
            DType::Int32 => {
                let f = int_floor(m);
                floor_op::<i32>(ctx, a, b, move |x, y| f(x.into(), y.into()) as i32)
            }
            DType::Int64 => floor_op::<i64>(ctx, a, b, int_floor(m)),
            other => Err(KernelError::unsupported(format!(
                "{} of {} values",
                if m { "FloorMod" } else { "FloorDiv" },
                other.name()
            ))),
        }
    }
}

// ---- reductions ----

pub struct Reduce {
    steps: Steps,
    op: &'static str,
    keep: bool,
}

pub fn create_reduce(steps: &Steps, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let op = match init.op_type {
        "Mean" => "ReduceMean",
        "Sum" => "ReduceSum",
        "Max" => "ReduceMax",
        "Min" => "ReduceMin",
        "Prod" => "ReduceProd",
        other => return Err(KernelError::unsupported(format!("no reduction {other}"))),
    };
    Ok(Box::new(Reduce {
        steps: steps.clone(),
        op,
        keep: flag(init.attrs, &["keep_dims"]).map_err(attr_err)?,
    }))
}

impl Kernel for Reduce {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let axes = ctx.input(1)?.to_i64_vec()?;
        let r = x.rank() as i64;
        for &a in &axes {
            if a < -r.max(1) || a >= r.max(1) {
                return Err(KernelError::invalid(format!(
                    "axis {a} is out of range for rank {r}"
                )));
            }
        }
        let attrs = vec![
            ("keepdims", AttrValue::Int(self.keep.into())),
            ("noop_with_empty_axes", AttrValue::Int(1)),
        ];
        let axes = i64s(&axes)?;
        let y = self
            .steps
            .run(self.op, attrs, &[Some(x), Some(axes.view())], ctx.threads())?;
        put(ctx, 0, y)
    }
}
