//! Slicing and padding: Slice, Expand, Tile, Pad, DepthToSpace, SpaceToDepth, CenterCropPad,
//! Compress, ReverseSequence. Slice and Expand carry values through.

use rge_ir::Shape;

use super::shape_ops::remap_value;
use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::FormatRule;
use crate::registry::OpRegistryBuilder;
use crate::value::strides;

/// ONNX Slice's clamped (start, output length) on one axis of size `dim`.
pub(super) fn slice_range(dim: i64, start: i64, end: i64, step: i64) -> (i64, i64) {
    let s = if start < 0 {
        start.saturating_add(dim)
    } else {
        start
    };
    let e = if end < 0 {
        end.saturating_add(dim)
    } else {
        end
    };
    if step > 0 {
        let (s, e) = (s.clamp(0, dim), e.clamp(0, dim));
        (s, ((e - s + step - 1) / step).max(0))
    } else {
        let (s, e) = (s.clamp(0, (dim - 1).max(0)), e.clamp(-1, dim - 1));
        (s, ((s - e + (-step) - 1) / (-step)).max(0))
    }
}

fn slice_common(
    ctx: &mut InferCtx<'_>,
    starts: Option<Vec<i64>>,
    ends: Option<Vec<i64>>,
    axes: Option<Option<Vec<i64>>>,
    steps: Option<Option<Vec<i64>>>,
) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let (Some(starts), Some(ends), Some(axes), Some(steps)) = (starts, ends, axes, steps) else {
        // Some parameter unknown: the dims it touches are unknown (all, when axes are).
        ctx.set_output(0, dtype, Shape::new(vec![-1; d.len()]));
        return Ok(());
    };
    if starts.len() != ends.len() {
        bail!("starts has {} entries, ends {}", starts.len(), ends.len());
    }
    let axes: Vec<i64> = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if axes.len() != starts.len() || steps.len() != starts.len() {
        bail!("starts, ends, axes and steps differ in length");
    }
    let axes = norm_axes(&axes, d.len())?;
    let mut out = d.to_vec();
    let mut first = vec![0i64; d.len()];
    let mut step_of = vec![1i64; d.len()];
    for (k, &a) in axes.iter().enumerate() {
        if steps[k] == 0 {
            bail!("step {k} is 0");
        }
        if d[a] < 0 {
            out[a] = -1;
            continue;
        }
        let (s, len) = slice_range(d[a], starts[k], ends[k], steps[k]);
        out[a] = len;
        first[a] = s;
        step_of[a] = steps[k];
    }
    if let Some(v) = ctx.input_value(0) {
        let st = strides(&v.dims);
        if let Some(t) = remap_value(v, &out, |idx| {
            idx.iter()
                .enumerate()
                .map(|(a, &i)| (first[a] + i as i64 * step_of[a]) as usize * st[a])
                .sum()
        }) {
            ctx.set_output_value(0, t);
            return Ok(());
        }
    }
    ctx.set_output_dims(0, dtype, &out);
    Ok(())
}

fn slice(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let starts = input_ints(ctx, 1, "starts")?;
    let ends = input_ints(ctx, 2, "ends")?;
    let opt = |ctx: &InferCtx<'_>, i: usize, what: &str| -> OpResult<Option<Option<Vec<i64>>>> {
        if ctx.opt_input(i).is_none() {
            Ok(Some(None))
        } else {
            Ok(input_ints(ctx, i, what)?.map(Some))
        }
    };
    let axes = opt(ctx, 3, "axes")?;
    let steps = opt(ctx, 4, "steps")?;
    slice_common(ctx, starts, ends, axes, steps)
}

fn slice_v1(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let starts = ctx.attr_ints("starts")?.map(<[i64]>::to_vec);
    let ends = ctx.attr_ints("ends")?.map(<[i64]>::to_vec);
    let axes = ctx.attr_ints("axes")?.map(<[i64]>::to_vec);
    slice_common(ctx, starts, ends, Some(axes), Some(None))
}

fn expand(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    match input_ints(ctx, 1, "shape")? {
        Some(s) => {
            let out = broadcast2(d, &s)?;
            if let Some(v) = ctx.input_value(0) {
                if let Some(t) =
                    broadcast_values(&[v], &out, dtype, |a| a[0], Some(&|a: &[i64]| Some(a[0])))
                {
                    ctx.set_output_value(0, t);
                    return Ok(());
                }
            }
            ctx.set_output_dims(0, dtype, &out);
        }
        None => match len_1d(ctx, 1, "shape")? {
            Some(n) => {
                let r = n.max(d.len());
                let mut out = vec![-1; r];
                for (k, &x) in d.iter().enumerate() {
                    if x != 1 {
                        out[r - d.len() + k] = x;
                    }
                }
                ctx.set_output_dims(0, dtype, &out);
            }
            None => ctx.set_output(0, dtype, Shape::unknown_rank()),
        },
    }
    Ok(())
}

fn tile(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let out: Vec<i64> = match input_ints(ctx, 1, "repeats")? {
        Some(r) => {
            if r.len() != d.len() {
                bail!("repeats has {} entries for rank {}", r.len(), d.len());
            }
            d.iter()
                .zip(&r)
                .map(|(&x, &k)| if x < 0 { -1 } else { x.saturating_mul(k) })
                .collect()
        }
        None => vec![-1; d.len()],
    };
    ctx.set_output_dims(0, dtype, &out);
    Ok(())
}

fn pad_with(
    ctx: &mut InferCtx<'_>,
    pads: Option<Vec<i64>>,
    axes: Option<Vec<i64>>,
) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let Some(pads) = pads else {
        ctx.set_output(0, dtype, Shape::new(vec![-1; d.len()]));
        return Ok(());
    };
    let axes = match axes {
        Some(a) => norm_axes(&a, d.len())?,
        None => (0..d.len()).collect(),
    };
    if pads.len() != 2 * axes.len() {
        bail!(
            "pads has {} entries; {} axes need {}",
            pads.len(),
            axes.len(),
            2 * axes.len()
        );
    }
    let mut out = d.to_vec();
    let n = axes.len();
    for (k, &a) in axes.iter().enumerate() {
        if out[a] >= 0 {
            out[a] = out[a].saturating_add(pads[k]).saturating_add(pads[k + n]);
            if out[a] < 0 {
                bail!("pads {pads:?} make dim {a} negative");
            }
        }
    }
    ctx.set_output_dims(0, dtype, &out);
    Ok(())
}

fn pad(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let pads = input_ints(ctx, 1, "pads")?;
    let axes = if ctx.opt_input(3).is_some() {
        match input_ints(ctx, 3, "axes")? {
            Some(a) => Some(a),
            None => {
                let dtype = ctx.input(0)?.dtype;
                let r = ctx.input(0)?.rank();
                return match r {
                    Some(r) => {
                        ctx.set_output(0, dtype, Shape::new(vec![-1; r]));
                        Ok(())
                    }
                    None => all_unknown(ctx, dtype),
                };
            }
        }
    } else {
        None
    };
    pad_with(ctx, pads, axes)
}

fn pad_v2(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let pads = ctx.attr_ints("pads")?.map(<[i64]>::to_vec);
    pad_with(ctx, pads, None)
}

fn depth_to_space(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    expect_rank(ctx, 0, 4, "input")?;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let b = ctx.attr_int("blocksize")?;
    if b <= 0 {
        bail!("blocksize {b} must be positive");
    }
    let to_space = ctx.op_type() == "DepthToSpace";
    let m = |x: i64, f: i64| if x < 0 { -1 } else { x.saturating_mul(f) };
    let bb = b.saturating_mul(b);
    let out = if to_space {
        if d[1] >= 0 && d[1] % bb != 0 {
            bail!("channels {} are not divisible by blocksize² {}", d[1], bb);
        }
        [
            d[0],
            if d[1] < 0 { -1 } else { d[1] / bb },
            m(d[2], b),
            m(d[3], b),
        ]
    } else {
        for k in [2, 3] {
            if d[k] >= 0 && d[k] % b != 0 {
                bail!("dim {k} ({}) is not divisible by blocksize {b}", d[k]);
            }
        }
        let q = |x: i64| if x < 0 { -1 } else { x / b };
        [d[0], m(d[1], bb), q(d[2]), q(d[3])]
    };
    ctx.set_output_dims(0, dtype, &out);
    Ok(())
}

fn center_crop_pad(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let axes = match ctx.attr_ints("axes")? {
        Some(a) => norm_axes(a, d.len())?,
        None => (0..d.len()).collect(),
    };
    let mut out = d.to_vec();
    match input_ints(ctx, 1, "shape")? {
        Some(s) => {
            if s.len() != axes.len() {
                bail!("shape has {} entries for {} axes", s.len(), axes.len());
            }
            for (k, &a) in axes.iter().enumerate() {
                out[a] = s[k];
            }
        }
        None => axes.iter().for_each(|&a| out[a] = -1),
    }
    ctx.set_output_dims(0, dtype, &out);
    Ok(())
}

fn compress(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let kept = ctx
        .input_value(1)
        .map(|v| v.as_i64().iter().filter(|&&x| x != 0).count() as i64);
    match ctx.attr_int_opt("axis")? {
        Some(axis) => {
            let a = norm_axis(axis, d.len())?;
            let mut out = d.to_vec();
            out[a] = kept.unwrap_or(-1);
            ctx.set_output_dims(0, dtype, &out);
        }
        None => ctx.set_output_dims(0, dtype, &[kept.unwrap_or(-1)]),
    }
    Ok(())
}

fn same_as_input(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    ctx.set_output(0, x.dtype, x.shape.clone());
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    b.register(
        op("Slice", 1)
            .sig("data:T -> output:T")
            .attrs("axes:ints, starts:ints!, ends:ints!")
            .tc("T", ALL)
            .infer(slice_v1),
    )?;
    for v in [10, 11, 13] {
        b.register(
            op("Slice", v)
                .sig("data:T, starts:I, ends:I, axes?:I, steps?:I -> output:T")
                .tc("T", ALL)
                .tc("I", INT32_64)
                .infer(slice),
        )?;
    }
    for v in [8, 13] {
        b.register(
            op("Expand", v)
                .sig("input:T, shape:I -> output:T")
                .tc("T", ALL)
                .tc("I", INT64)
                .infer(expand),
        )?;
    }
    for v in [6, 13] {
        b.register(
            op("Tile", v)
                .sig("input:T, repeats:I -> output:T")
                .tc("T", ALL)
                .tc("I", INT64)
                .infer(tile),
        )?;
    }
    b.register(
        op("Pad", 2)
            .sig("data:T -> output:T")
            .attrs("mode:string=constant, pads:ints!, value:float=0.0")
            .tc("T", ALL)
            .infer(pad_v2),
    )?;
    for v in [11, 13] {
        b.register(
            op("Pad", v)
                .sig("data:T, pads:I, constant_value?:T -> output:T")
                .attrs("mode:string=constant")
                .tc("T", ALL)
                .tc("I", INT64)
                .infer(pad),
        )?;
    }
    for v in [18, 19] {
        b.register(
            op("Pad", v)
                .sig("data:T, pads:I, constant_value?:T, axes?:A -> output:T")
                .attrs("mode:string=constant")
                .tc("T", ALL)
                .tc("I", INT64)
                .tc("A", INT32_64)
                .infer(pad),
        )?;
    }
    for v in [1, 11, 13] {
        b.register(
            op("DepthToSpace", v)
                .sig("input:T -> output:T")
                // `mode` from 11 on (1 is DCR).
                .attrs(if v >= 11 {
                    "blocksize:int!, mode:string=DCR"
                } else {
                    "blocksize:int!"
                })
                .tc("T", ALL)
                .infer(depth_to_space)
                .format(FormatRule::Spatial),
        )?;
    }
    for v in [1, 13] {
        b.register(
            op("SpaceToDepth", v)
                .sig("input:T -> output:T")
                .attrs("blocksize:int!")
                .tc("T", ALL)
                .infer(depth_to_space)
                .format(FormatRule::Spatial),
        )?;
    }
    b.register(
        op("CenterCropPad", 18)
            .sig("input_data:T, shape:I -> output_data:T")
            .attrs("axes:ints")
            .tc("T", ALL)
            .tc("I", INT32_64)
            .infer(center_crop_pad),
    )?;
    for v in [9, 11] {
        b.register(
            op("Compress", v)
                .sig("input:T, condition:B -> output:T")
                .attrs("axis:int")
                .tc("T", ALL)
                .tc("B", BOOL)
                .infer(compress)
                .format(FormatRule::Nd),
        )?;
    }
    b.register(
        op("ReverseSequence", 10)
            .sig("input:T, sequence_lens:I -> Y:T")
            .attrs("batch_axis:int=1, time_axis:int=0")
            .tc("T", ALL)
            .tc("I", INT64)
            .infer(same_as_input),
    )?;
    Ok(())
}
