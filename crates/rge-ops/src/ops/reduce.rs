//! Reductions: ReduceSum/Mean/Max/Min/Prod/L1/L2/LogSum/LogSumExp/SumSquare (axes as an
//! attribute before ReduceSum-13 / the others' 18, an input after), ArgMax, ArgMin.

use rge_ir::{DataType, Shape};

use super::util::*;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::registry::OpRegistryBuilder;
use crate::value::{small_count, strides, Value};

/// Folds a reduction of a known value (Sum, Prod, Max, Min, Mean).
fn reduce_value(op: &str, v: &Value, axes: &[usize], keep: bool) -> Option<Value> {
    let (init, f): (f64, fn(f64, f64) -> f64) = match op {
        "ReduceSum" | "ReduceMean" => (0.0, |a, b| a + b),
        "ReduceProd" => (1.0, |a, b| a * b),
        "ReduceMax" => (f64::NEG_INFINITY, f64::max),
        "ReduceMin" => (f64::INFINITY, f64::min),
        _ => return None,
    };
    let out_keep = reduce_dims(&v.dims, axes, true);
    let n = small_count(&out_keep)?;
    let mut acc = vec![init; n];
    let mut cnt = vec![0usize; n];
    let os = strides(&out_keep);
    let r = v.dims.len();
    for k in 0..v.len() {
        let (mut rem, mut o) = (k, 0usize);
        for a in (0..r).rev() {
            let d = v.dims[a] as usize;
            let c = rem % d;
            rem /= d;
            if !(axes.is_empty() || axes.contains(&a)) {
                o += c * os[a];
            }
        }
        acc[o] = f(acc[o], v.get_f64(k));
        cnt[o] += 1;
    }
    if op == "ReduceMean" {
        acc.iter_mut()
            .zip(&cnt)
            .for_each(|(a, &c)| *a /= c.max(1) as f64);
    }
    let dims = reduce_dims(&v.dims, axes, keep);
    Some(Value::from_f64s(v.dtype, dims, acc))
}

fn reduce(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    let dtype = x.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let keep = ctx.attr_int("keepdims")? != 0;
    let axes_input = ctx.proto().inputs.len() > 1;
    let axes: Vec<i64> = if axes_input {
        if ctx.opt_input(1).is_none() {
            Vec::new()
        } else {
            match input_ints(ctx, 1, "axes")? {
                Some(a) => a,
                None => {
                    // Unknown axes: rank kept (keepdims) or unknown.
                    if keep {
                        ctx.set_output(0, dtype, Shape::new(vec![-1; d.len()]));
                    } else {
                        ctx.set_output(0, dtype, Shape::unknown_rank());
                    }
                    return Ok(());
                }
            }
        }
    } else {
        ctx.attr_ints("axes")?.unwrap_or(&[]).to_vec()
    };
    if axes.is_empty() && ctx.attr_int_opt("noop_with_empty_axes")?.unwrap_or(0) != 0 {
        let x = x.clone();
        ctx.set_output_info(0, x);
        return Ok(());
    }
    let axes = norm_axes(&axes, d.len())?;
    if let Some(v) = ctx.input_value(0) {
        if let Some(r) = reduce_value(ctx.op_type(), v, &axes, keep) {
            ctx.set_output_value(0, r);
            return Ok(());
        }
    }
    ctx.set_output_dims(0, dtype, &reduce_dims(d, &axes, keep));
    Ok(())
}

fn arg_reduce(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let Some(d) = dims_or_unknown(ctx, 0, DataType::Int64)? else {
        return Ok(());
    };
    let a = norm_axis(ctx.attr_int("axis")?, d.len())?;
    let keep = ctx.attr_int("keepdims")? != 0;
    ctx.set_output_dims(0, DataType::Int64, &reduce_dims(d, &[a], keep));
    Ok(())
}

const REDUCE: &[(&str, i64)] = &[
    ("ReduceSum", 13),
    ("ReduceMean", 18),
    ("ReduceMax", 18),
    ("ReduceMin", 18),
    ("ReduceProd", 18),
    ("ReduceL1", 18),
    ("ReduceL2", 18),
    ("ReduceLogSum", 18),
    ("ReduceLogSumExp", 18),
    ("ReduceSumSquare", 18),
];

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    let with_bool: Vec<DataType> = NUMERIC.iter().copied().chain([DataType::Bool]).collect();
    for &(name, switch) in REDUCE {
        let t: &[DataType] = if matches!(name, "ReduceMax" | "ReduceMin") {
            &with_bool
        } else {
            NUMERIC
        };
        for v in [1, 11, 13] {
            if v < switch {
                b.register(
                    op(name, v)
                        .sig("data:T -> reduced:T")
                        .attrs("axes:ints, keepdims:int=1")
                        .tc("T", t)
                        .infer(reduce),
                )?;
            }
        }
        b.register(
            op(name, switch)
                .sig("data:T, axes?:I -> reduced:T")
                .attrs("keepdims:int=1, noop_with_empty_axes:int=0")
                .tc("T", t)
                .tc("I", INT64)
                .infer(reduce),
        )?;
    }
    for name in ["ArgMax", "ArgMin"] {
        for v in [1, 11, 12, 13] {
            b.register(
                op(name, v)
                    .sig("data:T -> reduced:I")
                    .attrs(if v >= 12 {
                        "axis:int=0, keepdims:int=1, select_last_index:int=0"
                    } else {
                        "axis:int=0, keepdims:int=1"
                    })
                    .tc("T", NUMERIC)
                    .tc("I", INT64)
                    .infer(arg_reduce),
            )?;
        }
    }
    Ok(())
}
