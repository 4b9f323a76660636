//! Activations and other shape-preserving ops: Relu … Gelu, Softmax/LogSoftmax/Hardmax,
//! Clip, Dropout, CumSum/CumProd, Trilu, Shrink, PRelu, LpNormalization, MVN.

use rge_ir::DataType;

use super::elementwise::unary;
use super::util::{broadcast2, fmt_dims, norm_axis, op, scalar_f64, scalar_i64};
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::OpProto;
use crate::registry::OpRegistryBuilder;

/// Checks `axis` against input 0's rank (when known), then infers as unary.
fn axis_unary(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    if let (Some(d), Some(axis)) = (ctx.input(0)?.dims(), ctx.attr_int_opt("axis")?) {
        if !(d.is_empty() && axis == 0 || d.is_empty() && axis == -1) {
            norm_axis(axis, d.len())?;
        }
    }
    unary(ctx)
}

fn dropout(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    if let Some(r) = scalar_f64(ctx, 1)? {
        if !(0.0..1.0).contains(&r) {
            bail!("ratio {r} is not in [0, 1)");
        }
    }
    ctx.set_output(0, x.dtype, x.shape.clone());
    ctx.set_output(1, DataType::Bool, x.shape);
    Ok(())
}

fn cumulative(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let a = ctx.input(1)?;
    if let Some(d) = a.dims() {
        if d.len() > 1 || (d.len() == 1 && d[0] != 1 && d[0] != -1) {
            bail!(
                "axis must be a scalar or 1-element tensor, got shape {}",
                fmt_dims(d)
            );
        }
    }
    if let (Some(v), Some(xd)) = (scalar_i64(ctx, 1)?, ctx.input(0)?.dims()) {
        norm_axis(v, xd.len())?;
    }
    let x = ctx.input(0)?;
    ctx.set_output(0, x.dtype, x.shape.clone());
    Ok(())
}

fn trilu(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    if let Some(d) = x.dims() {
        if d.len() < 2 {
            bail!("input must have rank ≥ 2, got shape {}", fmt_dims(d));
        }
    }
    ctx.set_output(0, x.dtype, x.shape.clone());
    Ok(())
}

fn prelu(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    let s = ctx.input(1)?;
    if let (Some(xd), Some(sd)) = (x.dims(), s.dims()) {
        // The slope broadcasts onto X (unidirectionally).
        let b = broadcast2(xd, sd)?;
        if b.len() != xd.len() || b.iter().zip(xd).any(|(a, b)| *b != -1 && a != b) {
            bail!(
                "slope {} does not broadcast to X {}",
                fmt_dims(sd),
                fmt_dims(xd)
            );
        }
    }
    ctx.set_output(0, x.dtype, x.shape.clone());
    Ok(())
}

fn clip(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    for i in 1..3 {
        if let Some(d) = ctx.opt_input(i).and_then(|t| t.dims()) {
            if !(d.is_empty() || d == [1]) {
                bail!(
                    "input {i} (min/max) must be a scalar, got shape {}",
                    fmt_dims(d)
                );
            }
        }
    }
    let x = ctx.input(0)?.clone();
    if let (Some(v), true) = (x.value.as_deref(), ctx.input_count() <= 3) {
        let lo = scalar_f64(ctx, 1)?.unwrap_or(f64::NEG_INFINITY);
        let hi = scalar_f64(ctx, 2)?.unwrap_or(f64::INFINITY);
        let known = (ctx.opt_input(1).is_none() || ctx.input_value(1).is_some())
            && (ctx.opt_input(2).is_none() || ctx.input_value(2).is_some());
        if known {
            let out = v.as_f64().into_iter().map(|x| x.max(lo).min(hi)).collect();
            ctx.set_output_value(
                0,
                crate::value::Value::from_f64s(x.dtype, v.dims.clone(), out),
            );
            return Ok(());
        }
    }
    ctx.set_output(0, x.dtype, x.shape);
    Ok(())
}

fn act(name: &str, since: i64, attrs: &str) -> OpProto {
    op(name, since)
        .sig("X:T -> Y:T")
        .attrs(attrs)
        .tc("T", FLOATS)
        .infer(unary)
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    for v in [6, 13, 14] {
        b.register(
            op("Relu", v)
                .sig("X:T -> Y:T")
                .tc("T", SIGNED_NUMERIC)
                .infer(unary),
        )?;
    }
    for v in [6, 13] {
        b.register(act("Sigmoid", v, ""))?;
        b.register(act("Tanh", v, ""))?;
    }
    for v in [6, 22] {
        b.register(act("Elu", v, "alpha:float=1.0"))?;
        b.register(act(
            "Selu",
            v,
            "alpha:float=1.67326319217681884765625, gamma:float=1.05070102214813232421875",
        ))?;
        b.register(act("HardSigmoid", v, "alpha:float=0.2, beta:float=0.5"))?;
    }
    for v in [1, 22] {
        b.register(act("Softplus", v, ""))?;
        b.register(act("Softsign", v, ""))?;
    }
    for v in [6, 16] {
        b.register(act("LeakyRelu", v, "alpha:float=0.01"))?;
    }
    for v in [10, 22] {
        b.register(act("ThresholdedRelu", v, "alpha:float=1.0"))?;
    }
    for v in [14, 22] {
        b.register(act("HardSwish", v, ""))?;
    }
    for v in [18, 22] {
        b.register(act("Mish", v, ""))?;
    }
    b.register(act("Celu", 12, "alpha:float=1.0"))?;
    b.register(act("Gelu", 20, "approximate:string=none"))?;
    b.register(act("Swish", 24, "alpha:float=1.0"))?;
    b.register(
        op("Shrink", 9)
            .sig("input:T -> output:T")
            .attrs("bias:float=0.0, lambd:float=0.5")
            .tc("T", NUMERIC)
            .infer(unary),
    )?;
    for name in ["Softmax", "LogSoftmax", "Hardmax"] {
        // Before 13 the op coerced the input to 2-D around `axis` (default 1); the shape is
        // the same either way.
        b.register(
            op(name, 1)
                .sig("input:T -> output:T")
                .attrs("axis:int=1")
                .tc("T", FLOATS)
                .infer(axis_unary),
        )?;
        b.register(
            op(name, 13)
                .sig("input:T -> output:T")
                .attrs("axis:int=-1")
                .tc("T", FLOATS)
                .infer(axis_unary),
        )?;
    }
    for v in [1, 22] {
        b.register(
            op("LpNormalization", v)
                .sig("input:T -> output:T")
                .attrs("axis:int=-1, p:int=2")
                .tc("T", FLOATS)
                .infer(axis_unary),
        )?;
    }
    for v in [9, 13] {
        b.register(
            op("MeanVarianceNormalization", v)
                .sig("X:T -> Y:T")
                .attrs("axes:ints=[0, 2, 3]")
                .tc("T", FLOATS)
                .infer(unary),
        )?;
    }
    b.register(
        op("Clip", 6)
            .sig("input:T -> output:T")
            .attrs("min:float=-3.4028234663852886e38, max:float=3.4028234663852886e38")
            .tc("T", FLOATS)
            .infer(unary),
    )?;
    for v in [11, 12, 13] {
        b.register(
            op("Clip", v)
                .sig("input:T, min?:T, max?:T -> output:T")
                .tc("T", NUMERIC)
                .infer(clip),
        )?;
    }
    b.register(
        op("Dropout", 7)
            .sig("data:T -> output:T, mask?:T2")
            .attrs("ratio:float=0.5")
            .tc("T", FLOATS)
            .tc("T2", BOOL)
            .infer(dropout),
    )?;
    for v in [12, 13, 22] {
        b.register(
            op("Dropout", v)
                .sig("data:T, ratio?:T1, training_mode?:T2 -> output:T, mask?:T2")
                .attrs("seed:int")
                .tc("T", FLOATS)
                .tc("T1", FLOATS)
                .tc("T2", BOOL)
                .infer(dropout),
        )?;
    }
    for (name, v) in [("CumSum", 11), ("CumSum", 14), ("CumProd", 26)] {
        b.register(
            op(name, v)
                .sig("x:T, axis:T2 -> y:T")
                .attrs("exclusive:int=0, reverse:int=0")
                .tc("T", NUMERIC)
                .tc("T2", INT32_64)
                .infer(cumulative),
        )?;
    }
    b.register(
        op("Trilu", 14)
            .sig("input:T, k?:tensor_int64 -> output:T")
            .attrs("upper:int=1")
            .tc("T", ALL)
            .tc("tensor_int64", INT64)
            .infer(trilu),
    )?;
    for v in [7, 9, 16] {
        b.register(
            op("PRelu", v)
                .sig("X:T, slope:T -> Y:T")
                .tc("T", SIGNED_NUMERIC)
                .infer(prelu),
        )?;
    }
    Ok(())
}
