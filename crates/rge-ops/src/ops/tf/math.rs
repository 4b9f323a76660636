//! TF-dialect arithmetic: the broadcasting binary ops (AddV2, RealDiv, FloorDiv, FloorMod,
//! SquaredDifference, Maximum, Minimum, Sub, Mul, Pow…), the unary ones (Rsqrt, Square, Sqrt,
//! Exp, Log, Neg, Abs, Tanh, Sigmoid) and the reductions with `keep_dims` (Mean, Sum, Max, Min,
//! Prod: axes as input 1). Small integer values fold (shape arithmetic).

use super::super::util::*;
use super::{add, flag, tf_op};
use crate::ctx::InferCtx;
use crate::error::{OpError, OpResult, OpsError};
use crate::proto::types::*;
use crate::registry::OpRegistryBuilder;
use rge_ir::Shape;

/// The TF binary op types and their integer fold (`None`: not folded).
pub const BINARY: &[&str] = &[
    "Add",
    "AddV2",
    "Sub",
    "Mul",
    "Div",
    "RealDiv",
    "FloorDiv",
    "FloorMod",
    "SquaredDifference",
    "Maximum",
    "Minimum",
    "Pow",
];

/// The TF unary op types.
pub const UNARY: &[&str] = &[
    "Rsqrt", "Square", "Sqrt", "Exp", "Log", "Neg", "Abs", "Tanh", "Sigmoid",
];

fn int_fold(op: &str) -> Option<fn(i64, i64) -> Option<i64>> {
    Some(match op {
        "Add" | "AddV2" => i64::checked_add,
        "Sub" => i64::checked_sub,
        "Mul" => i64::checked_mul,
        "FloorDiv" => floor_div,
        "Maximum" => |a: i64, b: i64| Some(a.max(b)),
        "Minimum" => |a: i64, b: i64| Some(a.min(b)),
        _ => return None,
    })
}

/// Integer division rounding toward negative infinity (TF's FloorDiv).
pub fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    Some(if a % b != 0 && (a < 0) != (b < 0) {
        q - 1
    } else {
        q
    })
}

fn binary(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(out) = broadcast_inputs(ctx, &[0, 1])? else {
        return all_unknown(ctx, dt);
    };
    if let (Some(a), Some(b), Some(f)) = (
        ctx.input_value(0),
        ctx.input_value(1),
        int_fold(ctx.op_type()),
    ) {
        let fi = move |v: &[i64]| f(v[0], v[1]);
        if let Some(v) = broadcast_values(&[a, b], &out, dt, |_| f64::NAN, Some(&fi)) {
            if crate::value::is_int_like(dt) {
                ctx.set_output_value(0, v);
                return Ok(());
            }
        }
    }
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn unary(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    ctx.set_output(0, x.dtype, x.shape);
    Ok(())
}

fn reduce(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let keep = flag(ctx.attrs(), &["keep_dims"]).map_err(OpError)?;
    let dt = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let Some(axes) = input_ints(ctx, 1, "axes")? else {
        let s = if keep {
            Shape::new(vec![-1; d.len()])
        } else {
            Shape::unknown_rank()
        };
        ctx.set_output(0, dt, s);
        return Ok(());
    };
    if axes.is_empty() {
        // TF reduces over no axis: the input as it is.
        ctx.set_output_dims(0, dt, d);
        return Ok(());
    }
    // A scalar `d` reduces over axis 0 / -1 as TF allows.
    let axes = norm_axes(&axes, d.len().max(1))?;
    ctx.set_output_dims(0, dt, &reduce_dims(d, &axes, keep));
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    for name in BINARY {
        add(
            b,
            tf_op(name)
                .sig("x:T, y:T -> z:T")
                .tc("T", NUMERIC)
                .infer(binary),
        )?;
    }
    for name in UNARY {
        add(
            b,
            tf_op(name)
                .sig("x:T -> y:T")
                .tc("T", SIGNED_NUMERIC)
                .infer(unary),
        )?;
    }
    for name in ["Mean", "Sum", "Max", "Min", "Prod"] {
        add(
            b,
            tf_op(name)
                .sig("x:T, axes:Tidx -> y:T")
                .attrs("keep_dims:int=0")
                .tc("T", NUMERIC)
                .tc("Tidx", INT32_64)
                .infer(reduce),
        )?;
    }
    Ok(())
}
