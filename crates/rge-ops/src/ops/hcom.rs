//! The collective ops of the `comm` engine (the seed's HCCL), with GE's op types and attribute
//! names (`hcom_ops.h`): HcomAllReduce, HcomBroadcast, HcomAllGather, HcomReduceScatter,
//! HcomAllToAll, HcomSend and HcomReceive. `group` names the ranks taking part
//! (`hccl_world_group`: all of them); ranks in `root_rank`, `dest_rank` and `src_rank` count
//! within the group. Outputs never carry a folded value: a collective's result depends on the
//! other ranks, so no pass may fold it.

use rge_ir::DataType;

use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::FormatRule;
use crate::registry::OpRegistryBuilder;

/// The reductions GE's collectives take.
pub const REDUCTIONS: &[&str] = &["sum", "prod", "max", "min"];

fn check_reduction(ctx: &InferCtx<'_>) -> OpResult<()> {
    let r = ctx.attr_str("reduction")?;
    if !REDUCTIONS.contains(&r) {
        bail!("reduction must be sum, prod, max or min, got `{r}`");
    }
    Ok(())
}

fn check_group(ctx: &InferCtx<'_>) -> OpResult<()> {
    if ctx.attr_str("group")?.is_empty() {
        bail!("group must name a group of ranks (`hccl_world_group` for all)");
    }
    Ok(())
}

fn rank_size(ctx: &InferCtx<'_>) -> OpResult<i64> {
    let n = ctx.attr_int("rank_size")?;
    if n < 1 {
        bail!("rank_size must be at least 1, got {n}");
    }
    Ok(n)
}

/// The input's dtype and shape, without its value.
fn same_as_input(ctx: &mut InferCtx<'_>, i: usize) -> OpResult<()> {
    let x = ctx.input(i)?;
    let (dt, shape) = (x.dtype, x.shape.clone());
    ctx.set_output(i, dt, shape);
    Ok(())
}

fn all_reduce(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    check_reduction(ctx)?;
    check_group(ctx)?;
    same_as_input(ctx, 0)
}

fn broadcast(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    check_group(ctx)?;
    if ctx.attr_int("root_rank")? < 0 {
        bail!("root_rank must be at least 0");
    }
    for i in 0..ctx.output_count() {
        same_as_input(ctx, i)?;
    }
    Ok(())
}

/// [d0, …] → [d0·n, …] (gather) or [d0/n, …] (scatter).
fn first_dim_scaled(ctx: &mut InferCtx<'_>, gather: bool) -> OpResult<()> {
    check_group(ctx)?;
    let n = rank_size(ctx)?;
    let dt = ctx.input(0)?.dtype;
    let Some(d) = ctx.input(0)?.dims() else {
        return all_unknown(ctx, dt);
    };
    let Some(&d0) = d.first() else {
        bail!("x must have at least one dim (the one ranks split or gather along)");
    };
    let mut out = d.to_vec();
    out[0] = match (gather, d0) {
        (_, -1) => -1,
        (true, d0) => d0 * n,
        (false, d0) if d0 % n != 0 => {
            bail!("the first dim {d0} of x does not split into rank_size {n} equal parts")
        }
        (false, d0) => d0 / n,
    };
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn all_gather(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    first_dim_scaled(ctx, true)
}

fn reduce_scatter(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    check_reduction(ctx)?;
    first_dim_scaled(ctx, false)
}

fn all_to_all(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    check_group(ctx)?;
    same_as_input(ctx, 0)
}

fn send(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    check_group(ctx)?;
    if ctx.attr_int("dest_rank")? < 0 {
        bail!("dest_rank must be at least 0");
    }
    ctx.attr_int("sr_tag")?;
    Ok(())
}

fn receive(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    check_group(ctx)?;
    if ctx.attr_int("src_rank")? < 0 {
        bail!("src_rank must be at least 0");
    }
    ctx.attr_int("sr_tag")?;
    let Some(dt) = ctx.attr_dtype_opt("dtype")? else {
        bail!("dtype (an ONNX data type code) is required");
    };
    let shape = ctx.attr_ints("shape")?.unwrap_or(&[]).to_vec();
    if shape.iter().any(|&d| d < 0) {
        bail!("shape must be fully known, got {shape:?}");
    }
    ctx.set_output_dims(0, dt, &shape);
    Ok(())
}

pub(crate) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    let reducible: Vec<DataType> = [FLOATS, SIGNED_INTS, UNSIGNED_INTS].concat();
    let movable: Vec<DataType> = [FLOATS, INTS, BOOL].concat();
    b.register(
        op("HcomAllReduce", 1)
            .sig("x:T -> y:T")
            .attrs("reduction:string!, group:string!, fusion:int=1, fusion_id:int=-1")
            .tc("T", &reducible)
            .infer(all_reduce)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("HcomBroadcast", 1)
            .sig("x*:T -> y*:T")
            .attrs("root_rank:int!, group:string!, fusion:int=0, fusion_id:int=-1")
            .tc("T", &movable)
            .infer(broadcast)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("HcomAllGather", 1)
            .sig("x:T -> y:T")
            .attrs("rank_size:int!, group:string!, fusion:int=0, fusion_id:int=-1")
            .tc("T", &movable)
            .infer(all_gather)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("HcomReduceScatter", 1)
            .sig("x:T -> y:T")
            .attrs(
                "reduction:string!, group:string!, rank_size:int!, fusion:int=0, fusion_id:int=-1",
            )
            .tc("T", &reducible)
            .infer(reduce_scatter)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("HcomAllToAll", 1)
            .sig("x:T -> y:T")
            .attrs("group:string!")
            .tc("T", &movable)
            .infer(all_to_all)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("HcomSend", 1)
            .sig("x:T ->")
            .attrs("group:string!, sr_tag:int!, dest_rank:int!")
            .tc("T", &movable)
            .infer(send)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("HcomReceive", 1)
            .sig("-> y:T")
            .attrs("group:string!, sr_tag:int!, src_rank:int!, shape:ints!, dtype:int!")
            .tc("T", &movable)
            .infer(receive)
            .format(FormatRule::Nd),
    )?;
    Ok(())
}
