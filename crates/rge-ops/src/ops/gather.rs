//! Indexing: Gather (folds), GatherElements, GatherND, Scatter*, TensorScatter, OneHot.

use rge_ir::Shape;

use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::registry::OpRegistryBuilder;
use crate::value::{small_count, Value, ValueData};

fn gather(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(d), Some(ix)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    if d.is_empty() {
        bail!("data must have rank ≥ 1");
    }
    let a = norm_axis(ctx.attr_int("axis")?, d.len())?;
    let mut out: Vec<i64> = d[..a].to_vec();
    out.extend_from_slice(ix);
    out.extend_from_slice(&d[a + 1..]);
    if let (Some(v), Some(iv)) = (ctx.input_value(0), ctx.input_value(1)) {
        if let Some(n) = small_count(&out) {
            let idx = iv.indices("indices")?;
            let (outer, ax, inner) = (
                d[..a].iter().product::<i64>() as usize,
                d[a],
                d[a + 1..].iter().product::<i64>() as usize,
            );
            let mut picks = Vec::with_capacity(n);
            for o in 0..outer {
                for &i in &idx {
                    let i = if i < 0 { i + ax } else { i };
                    if i < 0 || i >= ax {
                        bail!("index {i} is out of range for axis {a} of size {ax}");
                    }
                    for k in 0..inner {
                        picks.push((o * ax as usize + i as usize) * inner + k);
                    }
                }
            }
            let r = match &v.data {
                ValueData::Int(x) => {
                    Value::ints(v.dtype, out.clone(), picks.iter().map(|&p| x[p]).collect())
                }
                ValueData::Float(x) => {
                    Value::floats(v.dtype, out.clone(), picks.iter().map(|&p| x[p]).collect())
                }
            };
            ctx.set_output_value(0, r);
            return Ok(());
        }
    }
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn gather_elements(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (d, ix) = (ctx.input(0)?.dims(), ctx.input(1)?.shape.clone());
    if let (Some(d), Some(i)) = (d, ix.rank()) {
        if d.len() != i {
            bail!("data {} and indices {} differ in rank", fmt_dims(d), ix);
        }
        norm_axis(ctx.attr_int("axis")?, d.len())?;
    }
    ctx.set_output(0, dt, ix);
    Ok(())
}

fn gather_nd(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(d), Some(ix)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    let b = ctx.attr_int_opt("batch_dims")?.unwrap_or(0);
    let Some(&last) = ix.last() else {
        bail!("indices must have rank ≥ 1");
    };
    if b < 0 || b as usize >= ix.len() || b as usize > d.len() {
        bail!(
            "batch_dims {b} is out of range for data {} and indices {}",
            fmt_dims(d),
            fmt_dims(ix)
        );
    }
    let b = b as usize;
    if last < 0 {
        return all_unknown(ctx, dt);
    }
    if (d.len() - b) < last as usize {
        bail!(
            "indices {} index {} dims past batch_dims {b} of data {}",
            fmt_dims(ix),
            last,
            fmt_dims(d)
        );
    }
    let mut out = ix[..ix.len() - 1].to_vec();
    out.extend_from_slice(&d[b + last as usize..]);
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn scatter(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    ctx.set_output(0, x.dtype, x.shape.clone());
    Ok(())
}

fn one_hot(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(2)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let depth = match scalar_f64(ctx, 1)? {
        Some(x) => {
            if x < 1.0 {
                bail!("depth {x} must be positive");
            }
            x as i64
        }
        None => -1,
    };
    let r = d.len() + 1;
    let a = norm_axis(ctx.attr_int("axis")?, r)?;
    let mut out = d.to_vec();
    out.insert(a, depth);
    ctx.set_output(0, dt, Shape::new(out));
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    for v in [1, 11, 13] {
        b.register(
            op("Gather", v)
                .sig("data:T, indices:I -> output:T")
                .attrs("axis:int=0")
                .tc("T", ALL)
                .tc("I", INT32_64)
                .infer(gather),
        )?;
    }
    for v in [11, 13] {
        b.register(
            op("GatherElements", v)
                .sig("data:T, indices:I -> output:T")
                .attrs("axis:int=0")
                .tc("T", ALL)
                .tc("I", INT32_64)
                .infer(gather_elements),
        )?;
    }
    for v in [11, 12, 13] {
        b.register(
            op("GatherND", v)
                .sig("data:T, indices:I -> output:T")
                // `batch_dims` from 12 on.
                .attrs(if v >= 12 { "batch_dims:int=0" } else { "" })
                .tc("T", ALL)
                .tc("I", INT64)
                .infer(gather_nd),
        )?;
    }
    b.register(
        op("Scatter", 9)
            .sig("data:T, indices:I, updates:T -> output:T")
            .attrs("axis:int=0")
            .tc("T", ALL)
            .tc("I", INT32_64)
            .infer(scatter),
    )?;
    for v in [11, 13, 16, 18] {
        b.register(
            op("ScatterElements", v)
                .sig("data:T, indices:I, updates:T -> output:T")
                // `reduction` from 16 on (ScatterND's too).
                .attrs(if v >= 16 {
                    "axis:int=0, reduction:string=none"
                } else {
                    "axis:int=0"
                })
                .tc("T", ALL)
                .tc("I", INT32_64)
                .infer(scatter),
        )?;
        b.register(
            op("ScatterND", v)
                .sig("data:T, indices:I, updates:T -> output:T")
                .attrs(if v >= 16 { "reduction:string=none" } else { "" })
                .tc("T", ALL)
                .tc("I", INT64)
                .infer(scatter),
        )?;
    }
    b.register(
        op("TensorScatter", 24)
            .sig("past_cache:T, update:T, write_indices?:I -> present_cache:T")
            .attrs("axis:int=-2, mode:string=linear")
            .tc("T", ALL)
            .tc("I", INT64)
            .infer(scatter),
    )?;
    for v in [9, 11] {
        b.register(
            op("OneHot", v)
                .sig("indices:T1, depth:T2, values:T3 -> output:T3")
                .attrs("axis:int=-1")
                .tc("T1", NUMERIC)
                .tc("T2", NUMERIC)
                .tc("T3", ALL)
                .infer(one_hot),
        )?;
    }
    Ok(())
}
