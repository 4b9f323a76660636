//! com.microsoft.nchwc: the blocked-layout ops onnxruntime writes into models it saves at its
//! default optimization level (docs/com-microsoft.md, "NCHWc"). Their tensors are 4-D
//! `[N, C padded to the block, H, W]`, so the default domain's Conv and pool inference gives
//! their shapes; ReorderInput's padded channel count depends on the block size of the machine
//! (8 or 16), known here only when C is a multiple of 16.

use rge_ir::DataType;

use super::conv::{conv, global_pool, pool};
use super::util::fmt_dims;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpError, OpResult, OpsError};
use crate::proto::OpProto;
use crate::registry::OpRegistryBuilder;

pub const NCHWC_DOMAIN: &str = "com.microsoft.nchwc";

fn nchwc(op_type: &str) -> OpProto {
    OpProto::new(NCHWC_DOMAIN, op_type, 1)
}

fn four_d<'a>(ctx: &InferCtx<'a>) -> OpResult<Option<&'a [i64]>> {
    match ctx.input(0)?.dims() {
        Some(d) if d.len() != 4 => bail!("X must be 4-D, got {}", fmt_dims(d)),
        d => Ok(d),
    }
}

fn reorder_input(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let Some(d) = four_d(ctx)? else {
        ctx.set_output(0, DataType::Float, rge_ir::Shape::new(vec![-1; 4]));
        return Ok(());
    };
    let last = ctx.attr_int_opt("channels_last")?.unwrap_or(0) != 0;
    let (n, c, h, w) = if last {
        (d[0], d[3], d[1], d[2])
    } else {
        (d[0], d[1], d[2], d[3])
    };
    // Padded to the block (8 or 16 by machine): C itself when a multiple of 16.
    let cp = if c >= 0 && c % 16 == 0 { c } else { -1 };
    ctx.set_output_dims(0, DataType::Float, &[n, cp, h, w]);
    Ok(())
}

fn reorder_output(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let c = ctx.attr_int_opt("channels")?.unwrap_or(0);
    if c <= 0 {
        bail!("channels must be positive, got {c}");
    }
    let last = ctx.attr_int_opt("channels_last")?.unwrap_or(0) != 0;
    let d = four_d(ctx)?.map_or([-1; 4], |d| [d[0], d[1], d[2], d[3]]);
    if d[1] >= 0 && c > d[1] {
        bail!("channels {c} exceed X's {} blocked channels", d[1]);
    }
    let out = if last {
        [d[0], d[2], d[3], c]
    } else {
        [d[0], c, d[2], d[3]]
    };
    ctx.set_output_dims(0, DataType::Float, &out);
    Ok(())
}

fn upsample(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let s = ctx.attr_ints("scales")?.unwrap_or(&[]).to_vec();
    if s.len() != 4 {
        bail!("scales must have 4 values, got {}", s.len());
    }
    if s.iter().any(|&k| k < 1) {
        bail!("scales must be whole numbers ≥ 1, got {s:?}");
    }
    let d = four_d(ctx)?.map_or([-1; 4], |d| [d[0], d[1], d[2], d[3]]);
    let mut out = vec![-1; 4];
    for i in 0..4 {
        if d[i] >= 0 {
            out[i] = d[i]
                .checked_mul(s[i])
                .ok_or_else(|| OpError(format!("dim {} × scale {} overflows", d[i], s[i])))?;
        }
    }
    ctx.set_output_dims(0, DataType::Float, &out);
    Ok(())
}

const CONV_ATTRS: &str = "auto_pad:string=NOTSET, dilations:ints, group:int=1, kernel_shape:ints, pads:ints, strides:ints, activation:string, activation_params:floats";
const POOL_ATTRS: &str = "auto_pad:string=NOTSET, ceil_mode:int=0, count_include_pad:int=0, dilations:ints, kernel_shape:ints!, pads:ints, storage_order:int=0, strides:ints";

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    let f32_only: &[DataType] = &[DataType::Float];
    b.register(
        nchwc("Conv")
            .sig("X:T, W:T, B?:T, Sum?:T -> Y:T")
            .attrs(CONV_ATTRS)
            .tc("T", f32_only)
            .infer(conv),
    )?;
    for op in ["MaxPool", "AveragePool"] {
        b.register(
            nchwc(op)
                .sig("X:T -> Y:T")
                .attrs(POOL_ATTRS)
                .tc("T", f32_only)
                .infer(pool),
        )?;
    }
    for op in ["GlobalMaxPool", "GlobalAveragePool"] {
        b.register(
            nchwc(op)
                .sig("X:T -> Y:T")
                .tc("T", f32_only)
                .infer(global_pool),
        )?;
    }
    b.register(
        nchwc("Upsample")
            .sig("X:T -> Y:T")
            .attrs("scales:ints!, mode:string=nearest, coordinate_transformation_mode:string=asymmetric")
            .tc("T", f32_only)
            .infer(upsample),
    )?;
    b.register(
        nchwc("ReorderInput")
            .sig("X:T -> Y:T")
            .attrs("channels_last:int=0")
            .tc("T", f32_only)
            .infer(reorder_input),
    )?;
    b.register(
        nchwc("ReorderOutput")
            .sig("X:T -> Y:T")
            .attrs("channels:int!, channels_last:int=0")
            .tc("T", f32_only)
            .infer(reorder_output),
    )?;
    Ok(())
}
