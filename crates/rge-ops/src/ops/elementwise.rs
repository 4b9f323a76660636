//! Elementwise math with numpy broadcasting: unary math, binary arithmetic / logic /
//! comparison, variadic Max/Min/Sum/Mean, Where. Known values are computed (shape arithmetic
//! in expanded functions folds through Add, Mul, Div, Equal, Where …).

use rge_ir::DataType;

use super::util::{broadcast_inputs, broadcast_values, op};
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::{self, *};
use crate::registry::OpRegistryBuilder;
use crate::value::Value;

/// The value function of a unary op, for constant folding.
fn unary_fn(op: &str) -> Option<fn(f64) -> f64> {
    Some(match op {
        "Abs" => f64::abs,
        "Neg" => |x| -x,
        "Floor" => f64::floor,
        "Ceil" => f64::ceil,
        "Sqrt" => f64::sqrt,
        "Reciprocal" => |x| 1.0 / x,
        "Exp" => f64::exp,
        "Log" => f64::ln,
        "Sign" => |x: f64| {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                0.0
            }
        },
        "Relu" => |x: f64| x.max(0.0),
        "Not" => |x| f64::from(x == 0.0),
        "Round" => |x: f64| x.round_ties_even(),
        _ => return None,
    })
}

/// Same type and shape as input 0 (with its value folded when known).
pub(super) fn unary(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    if let (Some(v), Some(f)) = (x.value.as_deref(), unary_fn(ctx.op_type())) {
        let out = v.as_f64().into_iter().map(f).collect();
        ctx.set_output_value(0, Value::from_f64s(x.dtype, v.dims.clone(), out));
    } else {
        ctx.set_output(0, x.dtype, x.shape.clone());
        ctx.set_output_kind(0, x.kind);
    }
    Ok(())
}

/// Same shape as input 0, bool.
fn unary_bool(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    ctx.set_output(0, DataType::Bool, x.shape.clone());
    Ok(())
}

fn is_compare(op: &str) -> bool {
    matches!(
        op,
        "Equal" | "Less" | "Greater" | "LessOrEqual" | "GreaterOrEqual"
    )
}

fn binary_fn(op: &str, fmod: bool) -> Option<fn(&[f64]) -> f64> {
    Some(match op {
        "Add" | "Sum" => |a| a.iter().sum(),
        "Sub" => |a| a[0] - a[1],
        "Mul" => |a| a[0] * a[1],
        "Div" => |a| a[0] / a[1],
        "Pow" => |a| a[0].powf(a[1]),
        "Max" => |a| a.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        "Min" => |a| a.iter().copied().fold(f64::INFINITY, f64::min),
        "Mean" => |a| a.iter().sum::<f64>() / a.len() as f64,
        "Mod" if fmod => |a| a[0] % a[1],
        "Mod" => |a| a[0] - a[1] * (a[0] / a[1]).floor(),
        "Equal" => |a| f64::from(a[0] == a[1]),
        "Less" => |a| f64::from(a[0] < a[1]),
        "Greater" => |a| f64::from(a[0] > a[1]),
        "LessOrEqual" => |a| f64::from(a[0] <= a[1]),
        "GreaterOrEqual" => |a| f64::from(a[0] >= a[1]),
        "And" => |a| f64::from(a[0] != 0.0 && a[1] != 0.0),
        "Or" => |a| f64::from(a[0] != 0.0 || a[1] != 0.0),
        "Xor" => |a| f64::from((a[0] != 0.0) != (a[1] != 0.0)),
        _ => return None,
    })
}

/// Exact integer versions where f64 would lose precision or semantics (division truncates).
type IntFnPtr = fn(&[i64]) -> Option<i64>;

fn binary_int_fn(op: &str, fmod: bool) -> Option<IntFnPtr> {
    Some(match op {
        "Add" | "Sum" => |a| a.iter().try_fold(0i64, |s, &x| s.checked_add(x)),
        "Sub" => |a| a[0].checked_sub(a[1]),
        "Mul" => |a| a[0].checked_mul(a[1]),
        "Div" => |a| a[0].checked_div(a[1]),
        "Max" => |a| a.iter().copied().max(),
        "Min" => |a| a.iter().copied().min(),
        "Mod" if fmod => |a| a[0].checked_rem(a[1]),
        "Mod" => |a| {
            let r = a[0].checked_rem(a[1])?;
            Some(if r != 0 && ((r < 0) != (a[1] < 0)) {
                r + a[1]
            } else {
                r
            })
        },
        _ => return None,
    })
}

/// Broadcast over every present input; output 0 takes input 0's type (bool for
/// comparisons and logic).
pub(super) fn broadcast(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let op = ctx.op_type();
    let dtype = if is_compare(op) {
        DataType::Bool
    } else {
        ctx.input(0)?.dtype
    };
    let n = ctx.input_count();
    let dims = match (
        n,
        ctx.opt_input(0).and_then(|t| t.dims()),
        ctx.opt_input(1).and_then(|t| t.dims()),
    ) {
        // The common case without allocating a list of inputs.
        (2, Some(a), Some(b)) if a == b => a.to_vec(),
        _ => {
            let idx: smallvec::SmallVec<[usize; 4]> = (0..n).collect();
            match broadcast_inputs(ctx, &idx)? {
                Some(d) => d,
                None => return super::util::all_unknown(ctx, dtype),
            }
        }
    };
    if (op == "Div" || op == "Mod")
        && ctx
            .input_value(1)
            .is_some_and(|v| crate::value::is_int_like(v.dtype) && v.as_f64().contains(&0.0))
    {
        // Integer division by zero: leave the value unknown.
        ctx.set_output_dims(0, dtype, &dims);
        return Ok(());
    }
    let vals: Option<Vec<&Value>> = if ctx
        .inputs()
        .iter()
        .all(|i| i.as_ref().is_some_and(|t| t.value.is_some()))
    {
        (0..n).map(|i| ctx.input_value(i)).collect()
    } else {
        None
    };
    if let Some(vals) = vals {
        let fmod = ctx.attr_int_opt("fmod")?.unwrap_or(0) != 0;
        if let Some(f) = binary_fn(op, fmod) {
            let fi = binary_int_fn(op, fmod);
            let fi_ref: Option<&super::util::IntFn> = fi.as_ref().map(|f| f as &super::util::IntFn);
            if let Some(v) = broadcast_values(&vals, &dims, dtype, f, fi_ref) {
                ctx.set_output_value(0, v);
                return Ok(());
            }
        }
    }
    ctx.set_output_dims(0, dtype, &dims);
    Ok(())
}

fn where_infer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(1)?.dtype;
    let Some(dims) = broadcast_inputs(ctx, &[0, 1, 2])? else {
        return super::util::all_unknown(ctx, dtype);
    };
    if let (Some(c), Some(x), Some(y)) =
        (ctx.input_value(0), ctx.input_value(1), ctx.input_value(2))
    {
        let f = |a: &[f64]| if a[0] != 0.0 { a[1] } else { a[2] };
        let fi = |a: &[i64]| Some(if a[0] != 0 { a[1] } else { a[2] });
        if let Some(v) = broadcast_values(&[c, x, y], &dims, dtype, f, Some(&fi)) {
            ctx.set_output_value(0, v);
            return Ok(());
        }
    }
    ctx.set_output_dims(0, dtype, &dims);
    Ok(())
}

fn check_variadic(ctx: &InferCtx<'_>) -> OpResult<()> {
    if ctx.inputs().iter().all(Option::is_none) {
        bail!("needs at least one input");
    }
    Ok(())
}

const UNARY_FLOAT: &[(&str, &[i64])] = &[
    ("Sqrt", &[6, 13]),
    ("Exp", &[6, 13]),
    ("Log", &[6, 13]),
    ("Reciprocal", &[6, 13]),
    ("Sin", &[7, 22]),
    ("Cos", &[7, 22]),
    ("Tan", &[7, 22]),
    ("Asin", &[7, 22]),
    ("Acos", &[7, 22]),
    ("Atan", &[7, 22]),
    ("Sinh", &[9, 22]),
    ("Cosh", &[9, 22]),
    ("Asinh", &[9, 22]),
    ("Acosh", &[9, 22]),
    ("Atanh", &[9, 22]),
    ("Ceil", &[6, 13]),
    ("Floor", &[6, 13]),
    ("Round", &[11, 22]),
];

const UNARY_NUMERIC: &[(&str, &[i64])] =
    &[("Abs", &[6, 13]), ("Neg", &[6, 13]), ("Sign", &[9, 13])];

const BINARY_ARITH: &[(&str, &[i64])] = &[
    ("Add", &[7, 13, 14]),
    ("Sub", &[7, 13, 14]),
    ("Mul", &[7, 13, 14]),
    ("Div", &[7, 13, 14]),
];

const COMPARE: &[(&str, &[i64])] = &[
    ("Equal", &[7, 11, 13, 19]),
    ("Less", &[7, 9, 13]),
    ("Greater", &[7, 9, 13]),
    ("LessOrEqual", &[12, 16]),
    ("GreaterOrEqual", &[12, 16]),
];

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    let float_ext: Vec<DataType> = FLOATS.to_vec();
    for (name, versions) in UNARY_FLOAT {
        for &v in *versions {
            b.register(
                op(name, v)
                    .sig("X:T -> Y:T")
                    .tc("T", &float_ext)
                    .infer(unary),
            )?;
        }
    }
    for (name, versions) in UNARY_NUMERIC {
        for &v in *versions {
            b.register(op(name, v).sig("X:T -> Y:T").tc("T", NUMERIC).infer(unary))?;
        }
    }
    b.register(op("Not", 1).sig("X:T -> Y:T").tc("T", BOOL).infer(unary))?;
    b.register(
        op("BitwiseNot", 18)
            .sig("X:T -> Y:T")
            .tc("T", INTS)
            .infer(unary),
    )?;
    for &v in &[9i64, 13] {
        b.register(
            op("Erf", v)
                .sig("input:T -> output:T")
                .tc("T", NUMERIC)
                .infer(unary),
        )?;
    }
    b.register(
        op("IsNaN", 9)
            .sig("X:T1 -> Y:T2")
            .tc("T1", ALL)
            .tc("T2", BOOL)
            .infer(unary_bool),
    )?;
    b.register(
        op("IsInf", 10)
            .sig("X:T1 -> Y:T2")
            .attrs("detect_negative:int=1, detect_positive:int=1")
            .tc("T1", ALL)
            .tc("T2", BOOL)
            .infer(unary_bool),
    )?;
    for (name, versions) in BINARY_ARITH {
        for &v in *versions {
            b.register(
                op(name, v)
                    .sig("A:T, B:T -> C:T")
                    .tc("T", NUMERIC)
                    .infer(broadcast),
            )?;
        }
    }
    for (name, versions) in COMPARE {
        for &v in *versions {
            b.register(
                op(name, v)
                    .sig("A:T, B:T -> C:T1")
                    .tc("T", types::ALL)
                    .tc("T1", BOOL)
                    .infer(broadcast),
            )?;
        }
    }
    for name in ["And", "Or", "Xor"] {
        b.register(
            op(name, 7)
                .sig("A:T, B:T -> C:T1")
                .tc("T", BOOL)
                .tc("T1", BOOL)
                .infer(broadcast),
        )?;
    }
    for name in ["BitwiseAnd", "BitwiseOr", "BitwiseXor"] {
        b.register(
            op(name, 18)
                .sig("A:T, B:T -> C:T")
                .tc("T", INTS)
                .infer(broadcast),
        )?;
    }
    for (v, t) in [(11i64, UNSIGNED_INTS), (28, INTS)] {
        b.register(
            op("BitShift", v)
                .sig("X:T, Y:T -> Z:T")
                .attrs("direction:string!")
                .tc("T", t)
                .infer(broadcast),
        )?;
    }
    for &v in &[7i64, 12, 13, 15] {
        b.register(
            op("Pow", v)
                .sig("X:T, Y:T1 -> Z:T")
                .tc("T", NUMERIC)
                .tc("T1", NUMERIC)
                .infer(broadcast),
        )?;
    }
    for &v in &[10i64, 13] {
        b.register(
            op("Mod", v)
                .sig("A:T, B:T -> C:T")
                .attrs("fmod:int=0")
                .tc("T", NUMERIC)
                .infer(broadcast),
        )?;
    }
    for name in ["Max", "Min"] {
        for &v in &[8i64, 12, 13] {
            b.register(
                op(name, v)
                    .sig("data_0*:T -> max:T")
                    .tc("T", NUMERIC)
                    .verify(check_variadic)
                    .infer(broadcast),
            )?;
        }
    }
    for name in ["Sum", "Mean"] {
        for &v in &[8i64, 13] {
            b.register(
                op(name, v)
                    .sig("data_0*:T -> sum:T")
                    .tc("T", FLOATS)
                    .verify(check_variadic)
                    .infer(broadcast),
            )?;
        }
    }
    for &v in &[9i64, 16] {
        b.register(
            op("Where", v)
                .sig("condition:B, X:T, Y:T -> output:T")
                .tc("B", BOOL)
                .tc("T", types::ALL)
                .infer(where_infer),
        )?;
    }
    Ok(())
}
