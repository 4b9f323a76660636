//! Normalizations and losses: BatchNormalization, InstanceNormalization, LayerNormalization,
//! GroupNormalization, RMSNormalization, LRN, NegativeLogLikelihoodLoss,
//! SoftmaxCrossEntropyLoss.

use rge_ir::{DataType, Shape};

use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::FormatRule;
use crate::registry::OpRegistryBuilder;

/// Checks that input `i` is 1-D of the channel count `c` (when both are known).
fn check_channel_param(ctx: &InferCtx<'_>, i: usize, c: i64, what: &str) -> OpResult<()> {
    if let Some(d) = ctx.opt_input(i).and_then(|t| t.dims()) {
        if d.len() != 1 || (c >= 0 && d[0] >= 0 && d[0] != c) {
            bail!("{what} must be 1-D of size C ({c}), got {}", fmt_dims(d));
        }
    }
    Ok(())
}

fn batch_norm(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    let c = x.dims().and_then(|d| d.get(1).copied()).unwrap_or(-1);
    for (i, what) in [(1, "scale"), (2, "B"), (3, "input_mean"), (4, "input_var")] {
        check_channel_param(ctx, i, c, what)?;
    }
    ctx.set_output(0, x.dtype, x.shape.clone());
    let stat_dt = ctx.opt_input(3).map_or(x.dtype, |t| t.dtype);
    for k in 1..ctx.output_count() {
        ctx.set_output_dims(k, stat_dt, &[c]);
    }
    Ok(())
}

fn instance_norm(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    let c = x.dims().and_then(|d| d.get(1).copied()).unwrap_or(-1);
    check_channel_param(ctx, 1, c, "scale")?;
    check_channel_param(ctx, 2, c, "B")?;
    ctx.set_output(0, x.dtype, x.shape);
    Ok(())
}

fn layer_norm(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    let Some(d) = x.dims() else {
        return all_unknown(ctx, x.dtype);
    };
    let a = norm_axis(ctx.attr_int("axis")?, d.len())?;
    ctx.set_output(0, x.dtype, x.shape.clone());
    let stat: Vec<i64> = d
        .iter()
        .enumerate()
        .map(|(i, &x)| if i < a { x } else { 1 })
        .collect();
    let stash = ctx.attr_dtype_opt("stash_type")?.unwrap_or(DataType::Float);
    ctx.set_output_dims(1, stash, &stat);
    ctx.set_output_dims(2, stash, &stat);
    Ok(())
}

fn same_shape_scale_type(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    if let Some(d) = x.dims() {
        norm_axis(ctx.attr_int("axis")?, d.len())?;
    }
    let dt = ctx.input(1)?.dtype;
    ctx.set_output(0, dt, x.shape.clone());
    Ok(())
}

fn same_shape(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    ctx.set_output(0, x.dtype, x.shape.clone());
    Ok(())
}

fn nll_loss(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(x), Some(t)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    if x.len() < 2 || t.len() + 1 != x.len() {
        bail!(
            "input {} and target {} do not fit (N, C, d…) and (N, d…)",
            fmt_dims(x),
            fmt_dims(t)
        );
    }
    let t = t.to_vec();
    match ctx.attr_str("reduction")? {
        "none" => ctx.set_output_dims(0, dt, &t),
        "mean" | "sum" => ctx.set_output(0, dt, Shape::scalar()),
        r => bail!("unknown reduction `{r}`"),
    }
    Ok(())
}

fn softmax_ce_loss(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(x), Some(t)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    if x.len() < 2 || t.len() + 1 != x.len() {
        bail!(
            "scores {} and labels {} do not fit (N, C, d…) and (N, d…)",
            fmt_dims(x),
            fmt_dims(t)
        );
    }
    let (x, t) = (x.to_vec(), t.to_vec());
    match ctx.attr_str("reduction")? {
        "none" => ctx.set_output_dims(0, dt, &t),
        "mean" | "sum" => ctx.set_output(0, dt, Shape::scalar()),
        r => bail!("unknown reduction `{r}`"),
    }
    ctx.set_output_dims(1, dt, &x);
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    b.register(
        op("BatchNormalization", 9)
            .sig("X:T, scale:T, B:T, mean:T, var:T -> Y:T, out_mean?:T, out_var?:T, saved_mean?:T, saved_var?:T")
            .attrs("epsilon:float=1e-5, momentum:float=0.9")
            .tc("T", FLOATS)
            .infer(batch_norm)
            .format(FormatRule::Spatial),
    )?;
    for v in [14, 15] {
        b.register(
            op("BatchNormalization", v)
                .sig("X:T, scale:T1, B:T1, input_mean:T2, input_var:T2 -> Y:T, running_mean?:T2, running_var?:T2")
                .attrs("epsilon:float=1e-5, momentum:float=0.9, training_mode:int=0")
                .tc("T", FLOATS)
                .tc("T1", FLOATS)
                .tc("T2", FLOATS)
                .infer(batch_norm)
                .format(FormatRule::Spatial),
        )?;
    }
    for v in [6, 22] {
        b.register(
            op("InstanceNormalization", v)
                .sig("input:T, scale:T, B:T -> output:T")
                .attrs("epsilon:float=1e-5")
                .tc("T", FLOATS)
                .infer(instance_norm)
                .format(FormatRule::Spatial),
        )?;
    }
    b.register(
        op("LayerNormalization", 17)
            .sig("X:T, Scale:T, B?:T -> Y:T, Mean?:U, InvStdDev?:U")
            .attrs("axis:int=-1, epsilon:float=1e-5, stash_type:int=1")
            .tc("T", FLOATS)
            .tc("U", FLOATS)
            .infer(layer_norm),
    )?;
    for v in [18, 21] {
        b.register(
            op("GroupNormalization", v)
                .sig("X:T, scale:T, bias:T -> Y:T")
                // `stash_type` from 21 on.
                .attrs(if v >= 21 {
                    "epsilon:float=1e-5, num_groups:int!, stash_type:int=1"
                } else {
                    "epsilon:float=1e-5, num_groups:int!"
                })
                .tc("T", FLOATS)
                .infer(same_shape)
                .format(FormatRule::Spatial),
        )?;
    }
    b.register(
        op("RMSNormalization", 23)
            .sig("X:T, scale:V -> Y:V")
            .attrs("axis:int=-1, epsilon:float=1e-5, stash_type:int=1")
            .tc("T", FLOATS)
            .tc("V", FLOATS)
            .infer(same_shape_scale_type),
    )?;
    for v in [1, 13] {
        b.register(
            op("LRN", v)
                .sig("X:T -> Y:T")
                .attrs("alpha:float=0.0001, beta:float=0.75, bias:float=1.0, size:int!")
                .tc("T", FLOATS)
                .infer(same_shape)
                .format(FormatRule::Spatial),
        )?;
    }
    for v in [12, 13, 22] {
        b.register(
            op("NegativeLogLikelihoodLoss", v)
                .sig("input:T, target:Tind, weight?:T -> loss:T")
                .attrs("ignore_index:int, reduction:string=mean")
                .tc("T", FLOATS)
                .tc("Tind", INT32_64)
                .infer(nll_loss)
                .format(FormatRule::Nd),
        )?;
    }
    for v in [12, 13] {
        b.register(
            op("SoftmaxCrossEntropyLoss", v)
                .sig("scores:T, labels:Tind, weights?:T -> output:T, log_prob?:T")
                .attrs("ignore_index:int, reduction:string=mean")
                .tc("T", FLOATS)
                .tc("Tind", INT32_64)
                .infer(softmax_ce_loss)
                .format(FormatRule::Nd),
        )?;
    }
    Ok(())
}
