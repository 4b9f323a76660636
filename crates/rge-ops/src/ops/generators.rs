//! Ops that make tensors: Constant, ConstantOfShape, Range, EyeLike, the random ops, the
//! window functions and MelWeightMatrix. Constant, ConstantOfShape and Range fold.

use rge_ir::{DataType, Shape};

use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::registry::OpRegistryBuilder;
use crate::value::{small_count, Value};

fn constant(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let set: Vec<&str> = [
        "value",
        "value_float",
        "value_floats",
        "value_int",
        "value_ints",
        "value_string",
        "value_strings",
        "sparse_value",
    ]
    .into_iter()
    .filter(|a| ctx.has_attr(a))
    .collect();
    if set.len() != 1 {
        bail!(
            "exactly one of the value attributes must be set, found {}",
            if set.is_empty() {
                "none".to_string()
            } else {
                set.join(", ")
            }
        );
    }
    match set[0] {
        "value" => {
            let t = ctx.attr_tensor("value")?.expect("checked");
            match Value::from_tensor(t) {
                Some(v) => ctx.set_output_value(0, v),
                None => ctx.set_output(0, t.desc.dtype(), t.desc.shape().clone()),
            }
        }
        "value_float" => {
            let f = ctx.attr_float("value_float")?;
            ctx.set_output_value(
                0,
                Value::floats(DataType::Float, vec![], vec![f64::from(f)]),
            );
        }
        "value_floats" => {
            let f = ctx.attr_floats("value_floats")?.unwrap_or(&[]);
            let n = f.len() as i64;
            ctx.set_output_value(
                0,
                Value::floats(
                    DataType::Float,
                    vec![n],
                    f.iter().map(|&x| f64::from(x)).collect(),
                ),
            );
        }
        "value_int" => {
            let i = ctx.attr_int("value_int")?;
            ctx.set_output_value(0, Value::ints(DataType::Int64, vec![], vec![i]));
        }
        "value_ints" => {
            let i = ctx.attr_ints("value_ints")?.unwrap_or(&[]).to_vec();
            ctx.set_output_value(0, Value::i64_vec(i));
        }
        "value_string" => ctx.set_output(0, DataType::String, Shape::scalar()),
        "value_strings" => {
            let n = ctx
                .attr_strings("value_strings")?
                .map_or(0, <[String]>::len);
            ctx.set_output_dims(0, DataType::String, &[n as i64]);
        }
        _ => {
            // A sparse tensor (kept by the frontend as a bundle with `dims`).
            let dims = ctx
                .attrs()
                .get_as::<&rge_ir::NamedAttrs>("sparse_value")?
                .and_then(|na| {
                    let vals = na.attrs.get_as::<&rge_ir::Tensor>("values").ok().flatten();
                    let dims = na.attrs.get_list_int("dims").ok().flatten();
                    Some((vals?.desc.dtype(), dims?.to_vec()))
                });
            match dims {
                Some((dt, d)) => ctx.set_output_dims(0, dt, &d),
                None => bail!("sparse_value has no values/dims"),
            }
        }
    }
    Ok(())
}

fn constant_of_shape(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let (dtype, fill) = match ctx.attr_tensor("value")? {
        Some(t) => {
            let v = Value::from_tensor(t);
            if let Some(v) = &v {
                if v.len() != 1 {
                    bail!("value must hold one element, has {}", v.len());
                }
            }
            (t.desc.dtype(), v)
        }
        None => (
            DataType::Float,
            Some(Value::floats(DataType::Float, vec![1], vec![0.0])),
        ),
    };
    match input_ints(ctx, 0, "input")? {
        Some(dims) => {
            if dims.iter().any(|&d| d < 0) {
                bail!("shape {} has a negative dim", fmt_dims(&dims));
            }
            match (fill, small_count(&dims)) {
                (Some(f), Some(n)) => {
                    let v = match f.data {
                        crate::value::ValueData::Int(x) => Value::ints(dtype, dims, vec![x[0]; n]),
                        crate::value::ValueData::Float(x) => {
                            Value::floats(dtype, dims, vec![x[0]; n])
                        }
                    };
                    ctx.set_output_value(0, v);
                }
                _ => ctx.set_output_dims(0, dtype, &dims),
            }
        }
        None => match len_1d(ctx, 0, "input")? {
            Some(n) => ctx.set_output(0, dtype, Shape::new(vec![-1; n])),
            None => ctx.set_output(0, dtype, Shape::unknown_rank()),
        },
    }
    Ok(())
}

fn range(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    for i in 0..3 {
        if let Some(d) = ctx.input(i)?.dims() {
            if !(d.is_empty() || d == [1]) {
                bail!("input {i} must be a scalar, got shape {}", fmt_dims(d));
            }
        }
    }
    let (Some(s), Some(l), Some(d)) = (
        scalar_f64(ctx, 0)?,
        scalar_f64(ctx, 1)?,
        scalar_f64(ctx, 2)?,
    ) else {
        ctx.set_output_dims(0, dtype, &[-1]);
        return Ok(());
    };
    if d == 0.0 {
        bail!("delta is 0");
    }
    let n = ((l - s) / d).ceil().max(0.0) as i64;
    if (n as usize) <= crate::value::MAX_VALUE_ELEMENTS {
        let vals: Vec<f64> = (0..n).map(|k| s + k as f64 * d).collect();
        ctx.set_output_value(0, Value::from_f64s(dtype, vec![n], vals));
    } else {
        ctx.set_output_dims(0, dtype, &[n]);
    }
    Ok(())
}

/// Same shape as input 0; data type from attribute `dtype` (else input 0's).
fn like_input(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    let dt = ctx.attr_dtype_opt("dtype")?.unwrap_or(x.dtype);
    if ctx.op_type() == "EyeLike" {
        if let Some(d) = x.dims() {
            if d.len() != 2 {
                bail!("input must be 2-D, got shape {}", fmt_dims(d));
            }
        }
    }
    ctx.set_output(0, dt, x.shape.clone());
    Ok(())
}

fn random(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.attr_dtype_opt("dtype")?.unwrap_or(DataType::Float);
    let shape = ctx.attr_ints("shape")?.unwrap_or(&[]).to_vec();
    ctx.set_output_dims(0, dt, &shape);
    Ok(())
}

fn multinomial(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.attr_dtype_opt("dtype")?.unwrap_or(DataType::Int32);
    expect_rank(ctx, 0, 2, "input")?;
    let batch = ctx.input(0)?.dims().map_or(-1, |d| d[0]);
    let n = ctx.attr_int("sample_size")?;
    ctx.set_output_dims(0, dt, &[batch, n]);
    Ok(())
}

fn window(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx
        .attr_dtype_opt("output_datatype")?
        .unwrap_or(DataType::Float);
    let n = scalar_i64(ctx, 0)?.unwrap_or(-1);
    ctx.set_output_dims(0, dt, &[n]);
    Ok(())
}

fn mel_weight_matrix(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx
        .attr_dtype_opt("output_datatype")?
        .unwrap_or(DataType::Float);
    let bins = scalar_i64(ctx, 0)?.unwrap_or(-1);
    let dft = scalar_i64(ctx, 1)?.unwrap_or(-1);
    ctx.set_output_dims(0, dt, &[if dft < 0 { -1 } else { dft / 2 + 1 }, bins]);
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    for v in [1, 9, 11, 12, 13] {
        b.register(
            op("Constant", v)
                .sig("-> output:T")
                // `sparse_value` from 11 on, the `value_*` forms from 12 on.
                .attrs(match v {
                    1 | 9 => "value:tensor",
                    11 => "value:tensor, sparse_value:sparse_tensor",
                    _ => "value:tensor, value_float:float, value_floats:floats, value_int:int, value_ints:ints, value_string:string, value_strings:strings, sparse_value:sparse_tensor",
                })
                .tc("T", ALL)
                .infer(constant),
        )?;
    }
    for v in [9, 20, 21] {
        b.register(
            op("ConstantOfShape", v)
                .sig("input:T1 -> output:T2")
                .attrs("value:tensor")
                .tc("T1", INT64)
                .tc("T2", ALL)
                .infer(constant_of_shape),
        )?;
    }
    b.register(
        op("Range", 11)
            .sig("start:T, limit:T, delta:T -> output:T")
            .tc("T", NUMERIC)
            .infer(range),
    )?;
    for v in [9, 22] {
        b.register(
            op("EyeLike", v)
                .sig("input:T1 -> output:T2")
                .attrs("dtype:int, k:int=0")
                .tc("T1", ALL)
                .tc("T2", ALL)
                .infer(like_input),
        )?;
    }
    // The distribution's attributes of RandomUniform(Like) and RandomNormal(Like).
    let dist = |name: &str| {
        if name.starts_with("RandomUniform") {
            "high:float=1.0, low:float=0.0"
        } else {
            "mean:float=0.0, scale:float=1.0"
        }
    };
    for name in ["RandomUniformLike", "RandomNormalLike"] {
        for v in [1, 22] {
            let dist = dist(name);
            b.register(
                op(name, v)
                    .sig("input:T1 -> output:T2")
                    .attrs(&format!("dtype:int, {dist}, seed:float"))
                    .tc("T1", ALL)
                    .tc("T2", FLOATS)
                    .infer(like_input),
            )?;
        }
    }
    for name in ["RandomUniform", "RandomNormal"] {
        for v in [1, 22] {
            let dist = dist(name);
            b.register(
                op(name, v)
                    .sig("-> output:T")
                    .attrs(&format!("dtype:int=1, {dist}, seed:float, shape:ints!"))
                    .tc("T", FLOATS)
                    .infer(random),
            )?;
        }
    }
    for v in [15, 22] {
        b.register(
            op("Bernoulli", v)
                .sig("input:T1 -> output:T2")
                .attrs("dtype:int, seed:float")
                .tc("T1", FLOATS)
                .tc("T2", ALL)
                .infer(like_input),
        )?;
    }
    for v in [7, 22] {
        b.register(
            op("Multinomial", v)
                .sig("input:T1 -> output:T2")
                .attrs("dtype:int=6, sample_size:int=1, seed:float")
                .tc("T1", FLOATS)
                .tc("T2", INT32_64)
                .infer(multinomial),
        )?;
    }
    for name in ["HannWindow", "HammingWindow", "BlackmanWindow"] {
        b.register(
            op(name, 17)
                .sig("size:T1 -> output:T2")
                .attrs("output_datatype:int=1, periodic:int=1")
                .tc("T1", INT32_64)
                .tc("T2", NUMERIC)
                .infer(window),
        )?;
    }
    b.register(
        op("MelWeightMatrix", 17)
            .sig("num_mel_bins:T1, dft_length:T1, sample_rate:T1, lower_edge_hertz:T2, upper_edge_hertz:T2 -> output:T3")
            .attrs("output_datatype:int=1")
            .tc("T1", INT32_64)
            .tc("T2", FLOATS)
            .tc("T3", NUMERIC)
            .infer(mel_weight_matrix),
    )?;
    Ok(())
}
