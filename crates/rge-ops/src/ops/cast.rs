//! Casts and quantization: Cast, CastLike, QuantizeLinear, DequantizeLinear,
//! DynamicQuantizeLinear, BitCast.

use rge_ir::{DataType, Shape};

use super::util::op;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::registry::OpRegistryBuilder;

fn cast_to(ctx: &mut InferCtx<'_>, to: DataType) -> OpResult<()> {
    let x = ctx.input(0)?;
    match x.value.as_deref() {
        Some(v) if to.is_float() || crate::value::is_int_like(to) => {
            let v = v.cast(to);
            ctx.set_output_value(0, v);
        }
        _ => ctx.set_output(0, to, x.shape.clone()),
    }
    Ok(())
}

fn cast(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let Some(to) = ctx.attr_dtype_opt("to")? else {
        bail!("required attribute `to` is missing");
    };
    cast_to(ctx, to)
}

fn cast_like(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let to = ctx.input(1)?.dtype;
    cast_to(ctx, to)
}

fn quantize(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    let dt = match ctx.opt_input(2) {
        Some(zp) => zp.dtype,
        None => ctx
            .attr_dtype_opt("output_dtype")?
            .filter(|&d| d != DataType::Undefined)
            .unwrap_or(DataType::Uint8),
    };
    if let Some(out) = ctx.attr_dtype_opt("output_dtype")? {
        if ctx.opt_input(2).is_some() && out != DataType::Undefined && out != dt {
            bail!("output_dtype {out} disagrees with y_zero_point's type {dt}");
        }
    }
    ctx.set_output(0, dt, x.shape.clone());
    Ok(())
}

fn dequantize(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    let scale = ctx.input(1)?;
    let dt = match ctx.attr_dtype_opt("output_dtype")? {
        Some(d) if d != DataType::Undefined => d,
        _ => scale.dtype,
    };
    ctx.set_output(0, dt, x.shape.clone());
    Ok(())
}

fn dynamic_quantize(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    ctx.set_output(0, DataType::Uint8, x.shape.clone());
    ctx.set_output(1, DataType::Float, Shape::scalar());
    ctx.set_output(2, DataType::Uint8, Shape::scalar());
    Ok(())
}

fn bitcast(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    let Some(to) = ctx.attr_dtype_opt("to")? else {
        bail!("required attribute `to` is missing");
    };
    if x.dtype.bits() != to.bits() || to == DataType::String {
        bail!("cannot bit-cast {} to {to}: the bit widths differ", x.dtype);
    }
    ctx.set_output(0, to, x.shape.clone());
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    for v in [6, 9, 13] {
        b.register(
            op("Cast", v)
                .sig("input:T1 -> output:T2")
                .attrs("to:int!")
                .tc("T1", ALL)
                .tc("T2", ALL)
                .infer(cast),
        )?;
    }
    for v in [19, 21, 23, 24, 25] {
        b.register(
            op("Cast", v)
                .sig("input:T1 -> output:T2")
                .attrs(if v >= 24 {
                    "to:int!, saturate:int=1, round_mode:string=up"
                } else {
                    "to:int!, saturate:int=1"
                })
                .tc("T1", ALL)
                .tc("T2", ALL)
                .infer(cast),
        )?;
    }
    for v in [15, 19, 21] {
        b.register(
            op("CastLike", v)
                .sig("input:T1, target_type:T2 -> output:T2")
                .attrs(match v {
                    15 => "",
                    19 | 21 | 23 => "saturate:int=1",
                    _ => "saturate:int=1, round_mode:string=up",
                })
                .tc("T1", ALL)
                .tc("T2", ALL)
                .infer(cast_like),
        )?;
    }
    for v in [10, 13, 19, 21, 23, 28] {
        // Per-axis from 13, `saturate` (float 8) from 19, blocked with `output_dtype` from
        // 21, `precision` from 23; DequantizeLinear's `output_dtype` from 23.
        let q_attrs = match v {
            10 => "",
            13 => "axis:int=1",
            19 => "axis:int=1, saturate:int=1",
            21 => "axis:int=1, saturate:int=1, block_size:int=0, output_dtype:int=0",
            _ => {
                "axis:int=1, saturate:int=1, block_size:int=0, output_dtype:int=0, precision:int=0"
            }
        };
        let dq_attrs = match v {
            10 => "",
            13 | 19 => "axis:int=1",
            21 => "axis:int=1, block_size:int=0",
            _ => "axis:int=1, block_size:int=0, output_dtype:int=0",
        };
        b.register(
            op("QuantizeLinear", v)
                .sig("x:T1, y_scale:T2, y_zero_point?:T3 -> y:T3")
                .attrs(q_attrs)
                .tc("T1", ALL)
                .tc("T2", ALL)
                .tc("T3", QUANT)
                .infer(quantize),
        )?;
        b.register(
            op("DequantizeLinear", v)
                .sig("x:T1, x_scale:T2, x_zero_point?:T1 -> y:T3")
                .attrs(dq_attrs)
                .tc("T1", QUANT)
                .tc("T2", FLOATS)
                .tc("T3", FLOATS)
                .infer(dequantize),
        )?;
    }
    b.register(
        op("DynamicQuantizeLinear", 11)
            .sig("x:T1 -> y:T2, y_scale:T1, y_zero_point:T2")
            .tc("T1", FLOAT32)
            .tc("T2", &[DataType::Uint8])
            .infer(dynamic_quantize),
    )?;
    b.register(
        op("BitCast", 26)
            .sig("input:T1 -> output:T2")
            .attrs("to:int!")
            .tc("T1", ALL)
            .tc("T2", ALL)
            .infer(bitcast),
    )?;
    Ok(())
}
