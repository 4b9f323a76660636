//! TF-dialect array ops: ConcatV2, Pack, Unpack, StridedSlice, Pad/PadV2/MirrorPad, Cast
//! (DstT), Transpose, Tile, GatherV2, ExpandDims, Squeeze, Reshape, Shape, Fill, Range,
//! Select/SelectV2 and the resizes. Shape-computing chains (Shape → StridedSlice → Pack →
//! Reshape) fold when their values are small and known.

use rge_ir::{DataType, Shape};

use super::super::util::*;
use super::strided_slice::{plan, Masks};
use super::{add, dtype_attr, flag, tf_op};
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpError, OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::FormatRule;
use crate::registry::OpRegistryBuilder;
use crate::value::{small_count, strides, Value, ValueData};

fn e(s: String) -> OpError {
    OpError(s)
}

/// A value's elements picked by flat source index.
fn pick(v: &Value, dims: Vec<i64>, idx: impl Iterator<Item = usize>) -> Value {
    match &v.data {
        ValueData::Int(d) => Value::ints(v.dtype, dims, idx.map(|i| d[i]).collect()),
        ValueData::Float(d) => Value::floats(v.dtype, dims, idx.map(|i| d[i]).collect()),
    }
}

/// Sets output 0 to `x`'s value under new dims when known, else to the dims.
fn reshaped(ctx: &mut InferCtx<'_>, dt: DataType, dims: &[i64]) {
    match ctx.input_value(0) {
        Some(v) if dims.iter().all(|&d| d >= 0) => {
            let mut v = v.clone();
            v.dims = dims.to_vec();
            ctx.set_output_value(0, v);
        }
        _ => ctx.set_output_dims(0, dt, dims),
    }
}

fn concat_v2(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let n = ctx.input_count();
    if n < 2 {
        bail!("ConcatV2 needs at least one value and the axis");
    }
    let dt = ctx.input(0)?.dtype;
    let Some(axis) = scalar_i64(ctx, n - 1)? else {
        return all_unknown(ctx, dt);
    };
    let mut out: Option<Vec<i64>> = None;
    for i in 0..n - 1 {
        let Some(d) = ctx.input(i)?.dims() else {
            return all_unknown(ctx, dt);
        };
        match &mut out {
            None => out = Some(d.to_vec()),
            Some(o) => {
                if o.len() != d.len() {
                    bail!("value {i} has rank {}, value 0 rank {}", d.len(), o.len());
                }
                let a = norm_axis(axis, o.len())?;
                for (k, (x, y)) in o.iter_mut().zip(d).enumerate() {
                    if k == a {
                        *x = if *x >= 0 && *y >= 0 { *x + y } else { -1 };
                    } else {
                        *x = merge_dim(*x, *y, &format!("value {i} dim {k}"))?;
                    }
                }
            }
        }
    }
    let out = out.unwrap_or_default();
    let a = norm_axis(axis, out.len())?;
    // Fold 1-D known values (shape vectors).
    if out.len() == 1 && a == 0 {
        let vals: Option<Vec<&Value>> = (0..n - 1).map(|i| ctx.input_value(i)).collect();
        if let Some(vals) = vals {
            let mut all = Vec::new();
            for v in &vals {
                all.extend(v.as_f64());
            }
            ctx.set_output_value(0, Value::from_f64s(dt, out.clone(), all));
            return Ok(());
        }
    }
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn pack(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let n = ctx.input_count();
    let dt = ctx.input(0)?.dtype;
    let axis = ctx.attr_int_opt("axis")?.unwrap_or(0);
    let mut d: Option<Vec<i64>> = None;
    for i in 0..n {
        let Some(di) = ctx.input(i)?.dims() else {
            return all_unknown(ctx, dt);
        };
        d = Some(match d {
            None => di.to_vec(),
            Some(o) if o.len() == di.len() => o
                .iter()
                .zip(di)
                .map(|(&a, &b)| merge_dim(a, b, &format!("value {i} of Pack")))
                .collect::<OpResult<_>>()?,
            Some(o) => bail!("value {i} has rank {}, value 0 rank {}", di.len(), o.len()),
        });
    }
    let d = d.unwrap_or_default();
    let a = norm_axis(axis, d.len() + 1)?;
    let mut out = d.clone();
    out.insert(a, n as i64);
    if d.is_empty() {
        let vals: Option<Vec<f64>> = (0..n)
            .map(|i| ctx.input_value(i).map(|v| v.get_f64(0)))
            .collect();
        if let Some(vals) = vals {
            ctx.set_output_value(0, Value::from_f64s(dt, out, vals));
            return Ok(());
        }
    }
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn unpack(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = ctx.input(0)?.dims() else {
        return all_unknown(ctx, dt);
    };
    let a = norm_axis(ctx.attr_int_opt("axis")?.unwrap_or(0), d.len())?;
    let outs = ctx.output_count() as i64;
    if let Some(num) = ctx.attr_int_opt("num")? {
        if num != outs {
            bail!("num is {num} but the node has {outs} outputs");
        }
    }
    if d[a] >= 0 && d[a] != outs {
        bail!("dim {a} is {} but the node has {outs} outputs", d[a]);
    }
    let mut out = d.to_vec();
    out.remove(a);
    for i in 0..ctx.output_count() {
        ctx.set_output_dims(i, dt, &out);
    }
    Ok(())
}

fn strided_slice(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let masks = Masks::from_attrs(ctx.attrs()).map_err(e)?;
    for (i, what) in [(1, "begin"), (2, "end"), (3, "strides")] {
        if let Some(d) = ctx.input(i)?.dims() {
            if d.len() != 1 {
                bail!("{what} must be 1-D, got shape {}", fmt_dims(d));
            }
        }
    }
    let (Some(b), Some(en), Some(s)) = (
        input_ints(ctx, 1, "begin")?,
        input_ints(ctx, 2, "end")?,
        input_ints(ctx, 3, "strides")?,
    ) else {
        return all_unknown(ctx, dt);
    };
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let p = plan(d, &b, &en, &s, masks).map_err(e)?;
    if let Some(v) = ctx.input_value(0) {
        if small_count(&p.size).is_some() {
            let st = strides(d);
            let out_n = small_count(&p.size).unwrap_or(0);
            let sizes: Vec<usize> = p.size.iter().map(|&x| x as usize).collect();
            let idx = (0..out_n).map(|mut k| {
                let mut src = 0i64;
                for a in (0..sizes.len()).rev() {
                    let c = (k % sizes[a]) as i64;
                    k /= sizes[a];
                    src += (p.begin[a] + c * p.stride[a]) * st[a] as i64;
                }
                src as usize
            });
            let v = pick(v, p.final_shape.clone(), idx);
            ctx.set_output_value(0, v);
            return Ok(());
        }
    }
    ctx.set_output_dims(0, dt, &p.final_shape);
    Ok(())
}

fn pad(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    if ctx.op_type() == "MirrorPad" {
        match ctx.attr_str_opt("mode")? {
            Some("REFLECT") | Some("SYMMETRIC") => {}
            Some(m) => bail!("attribute `mode`: unknown mode `{m}` (REFLECT or SYMMETRIC)"),
            None => bail!("required attribute `mode` is missing"),
        }
    }
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    if let Some(p) = ctx.input(1)?.dims() {
        if p.len() != 2 || p[1] != 2 || (p[0] >= 0 && p[0] != d.len() as i64) {
            bail!(
                "paddings must be [{}, 2] for an input of rank {}, got shape {}",
                d.len(),
                d.len(),
                fmt_dims(p)
            );
        }
    }
    let Some(p) = input_ints(ctx, 1, "paddings")? else {
        ctx.set_output(0, dt, Shape::new(vec![-1; d.len()]));
        return Ok(());
    };
    let mut out = d.to_vec();
    for (k, o) in out.iter_mut().enumerate() {
        let (b, a) = (p[2 * k], p[2 * k + 1]);
        if b < 0 || a < 0 {
            bail!("paddings of dim {k} ({b}, {a}) must be ≥ 0");
        }
        if ctx.op_type() == "MirrorPad" && *o >= 0 {
            let lim = if ctx.attr_str("mode")? == "REFLECT" {
                *o - 1
            } else {
                *o
            };
            if b > lim || a > lim {
                bail!("paddings of dim {k} ({b}, {a}) exceed {lim} for a dim of {o}");
            }
        }
        if *o >= 0 {
            *o += b + a;
        }
    }
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn cast(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let to = dtype_attr(ctx.attrs(), "DstT")
        .and_then(|d| match d {
            Some(d) => Ok(Some(d)),
            None => dtype_attr(ctx.attrs(), "dst_type"),
        })
        .map_err(e)?
        .ok_or_else(|| OpError("required attribute `DstT` is missing".into()))?;
    let x = ctx.input(0)?.clone();
    match x.value.as_deref() {
        Some(v) => ctx.set_output_value(0, v.cast(to)),
        None => ctx.set_output(0, to, x.shape),
    }
    Ok(())
}

fn transpose(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let Some(perm) = input_ints(ctx, 1, "perm")? else {
        ctx.set_output(0, dt, Shape::new(vec![-1; d.len()]));
        return Ok(());
    };
    if perm.len() != d.len() {
        bail!(
            "perm {perm:?} has {} entries for rank {}",
            perm.len(),
            d.len()
        );
    }
    let p = norm_axes(&perm, d.len())?;
    let out: Vec<i64> = p.iter().map(|&a| d[a]).collect();
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn tile(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let Some(m) = input_ints(ctx, 1, "multiples")? else {
        ctx.set_output(0, dt, Shape::new(vec![-1; d.len()]));
        return Ok(());
    };
    if m.len() != d.len() || m.iter().any(|&x| x < 0) {
        bail!("multiples {m:?} must be {} values ≥ 0", d.len());
    }
    let out: Vec<i64> = d
        .iter()
        .zip(&m)
        .map(|(&a, &b)| if a >= 0 { a * b } else { -1 })
        .collect();
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn gather_v2(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    if ctx.attr_int_opt("batch_dims")?.unwrap_or(0) != 0 {
        bail!("attribute `batch_dims` other than 0 is not supported");
    }
    let (Some(p), Some(i)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    let Some(axis) = scalar_i64(ctx, 2)? else {
        return all_unknown(ctx, dt);
    };
    let a = norm_axis(axis, p.len())?;
    let out: Vec<i64> = [&p[..a], i, &p[a + 1..]].concat();
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn expand_dims(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let Some(axis) = scalar_i64(ctx, 1)? else {
        ctx.set_output(0, dt, Shape::new(vec![-1; d.len() + 1]));
        return Ok(());
    };
    let a = norm_axis(axis, d.len() + 1)?;
    let mut out = d.to_vec();
    out.insert(a, 1);
    reshaped(ctx, dt, &out);
    Ok(())
}

fn squeeze(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let axes = match ctx.attr_ints("squeeze_dims")? {
        Some(a) if !a.is_empty() => a.to_vec(),
        _ => ctx.attr_ints("axis")?.unwrap_or(&[]).to_vec(),
    };
    let axes = norm_axes(&axes, d.len())?;
    let mut out = Vec::new();
    for (k, &x) in d.iter().enumerate() {
        if axes.is_empty() {
            if x == -1 {
                ctx.set_output(0, dt, Shape::unknown_rank());
                return Ok(());
            }
            if x != 1 {
                out.push(x);
            }
        } else if axes.contains(&k) {
            if x >= 0 && x != 1 {
                bail!("cannot squeeze dim {k} of size {x}");
            }
        } else {
            out.push(x);
        }
    }
    reshaped(ctx, dt, &out);
    Ok(())
}

fn reshape(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(mut s) = input_ints(ctx, 1, "shape")? else {
        let n = len_1d(ctx, 1, "shape")?;
        match n {
            Some(n) => ctx.set_output(0, dt, Shape::new(vec![-1; n])),
            None => ctx.set_output(0, dt, Shape::unknown_rank()),
        }
        return Ok(());
    };
    if s.iter().filter(|&&x| x == -1).count() > 1 || s.iter().any(|&x| x < -1) {
        bail!("shape {s:?}: at most one -1 and no other negative dim");
    }
    let total = ctx.input(0)?.dims().and_then(product);
    let Some(rest) = s
        .iter()
        .filter(|&&x| x != -1)
        .try_fold(1i64, |a, &x| a.checked_mul(x))
    else {
        bail!("shape {s:?}: its element count overflows");
    };
    if let Some(k) = s.iter().position(|&x| x == -1) {
        if let Some(t) = total {
            if rest == 0 || t % rest != 0 {
                bail!("cannot reshape {t} elements into {s:?}");
            }
            s[k] = t / rest;
        }
    } else if let Some(t) = total {
        if rest != t {
            bail!("cannot reshape {t} elements into {s:?}");
        }
    }
    reshaped(ctx, dt, &s);
    Ok(())
}

fn shape(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = dtype_attr(ctx.attrs(), "out_type")
        .map_err(e)?
        .unwrap_or(DataType::Int32);
    if dt != DataType::Int32 && dt != DataType::Int64 {
        bail!("attribute `out_type` must be int32 or int64, got {dt}");
    }
    match ctx.input(0)?.dims() {
        Some(d) if d.iter().all(|&x| x >= 0) => {
            let d = d.to_vec();
            ctx.set_output_value(0, Value::ints(dt, vec![d.len() as i64], d));
        }
        Some(d) => ctx.set_output_dims(0, dt, &[d.len() as i64]),
        None => ctx.set_output_dims(0, dt, &[-1]),
    }
    Ok(())
}

fn fill(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(1)?.dtype;
    let Some(d) = input_ints(ctx, 0, "dims")? else {
        let n = len_1d(ctx, 0, "dims")?;
        match n {
            Some(n) => ctx.set_output(0, dt, Shape::new(vec![-1; n])),
            None => ctx.set_output(0, dt, Shape::unknown_rank()),
        }
        return Ok(());
    };
    if d.iter().any(|&x| x < 0) {
        bail!("dims {d:?} must be ≥ 0");
    }
    match (ctx.input_value(1), small_count(&d)) {
        (Some(v), Some(n)) => {
            let v = pick(v, d, std::iter::repeat_n(0, n));
            ctx.set_output_value(0, v);
        }
        _ => ctx.set_output_dims(0, dt, &d),
    }
    Ok(())
}

fn range(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let vals = (
        scalar_f64(ctx, 0)?,
        scalar_f64(ctx, 1)?,
        scalar_f64(ctx, 2)?,
    );
    let (Some(s), Some(l), Some(d)) = vals else {
        ctx.set_output_dims(0, dt, &[-1]);
        return Ok(());
    };
    if d == 0.0 {
        bail!("delta is 0");
    }
    if (d > 0.0 && s > l) || (d < 0.0 && s < l) {
        bail!("start {s}, limit {l} and delta {d} give no range");
    }
    let n = ((l - s) / d).abs().ceil();
    if n > (1u64 << 40) as f64 {
        bail!("the range has {n} elements, too many");
    }
    let n = n as i64;
    if n as usize <= crate::value::MAX_VALUE_ELEMENTS {
        let v: Vec<f64> = (0..n).map(|i| s + i as f64 * d).collect();
        ctx.set_output_value(0, Value::from_f64s(dt, vec![n], v));
    } else {
        ctx.set_output_dims(0, dt, &[n]);
    }
    Ok(())
}

fn select(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(1)?.dtype;
    if ctx.op_type() == "SelectV2" {
        let Some(out) = broadcast_inputs(ctx, &[0, 1, 2])? else {
            return all_unknown(ctx, dt);
        };
        ctx.set_output_dims(0, dt, &out);
        return Ok(());
    }
    let Some(out) = broadcast_inputs(ctx, &[1, 2])? else {
        return all_unknown(ctx, dt);
    };
    if let Some(c) = ctx.input(0)?.dims() {
        let ok = c.len() == out.len() || (c.len() == 1 && !out.is_empty());
        if !ok {
            bail!(
                "condition {} must have the shape of the values {} or be a vector of their first dim",
                fmt_dims(c),
                fmt_dims(&out)
            );
        }
    }
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn resize(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let align = flag(ctx.attrs(), &["align_corners"]).map_err(e)?;
    let half = flag(ctx.attrs(), &["half_pixel_centers"]).map_err(e)?;
    if align && half {
        bail!("align_corners and half_pixel_centers cannot both be set");
    }
    let dt = if ctx.op_type() == "ResizeBilinear" {
        DataType::Float
    } else {
        ctx.input(0)?.dtype
    };
    let size = input_ints(ctx, 1, "size")?;
    if let Some(s) = &size {
        if s.len() != 2 || s.iter().any(|&v| v <= 0) {
            bail!("size must be two positive values [height, width], got {s:?}");
        }
    }
    let d = match ctx.input(0)?.dims() {
        Some(d) if d.len() == 4 => d.to_vec(),
        Some(d) => bail!("images must be [N, H, W, C], got shape {}", fmt_dims(d)),
        None => return all_unknown(ctx, dt),
    };
    let (h, w) = size.map_or((-1, -1), |s| (s[0], s[1]));
    ctx.set_output_dims(0, dt, &[d[0], h, w, d[3]]);
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    let nd = |p: crate::proto::OpProto| p.format(FormatRule::Nd);
    add(
        b,
        nd(tf_op("ConcatV2")
            .sig("x*:T, concat_dim:Tidx -> y:T")
            .attrs("N:int=0")
            .tc("T", ALL)
            .tc("Tidx", INT32_64)
            .infer(concat_v2)),
    )?;
    add(
        b,
        nd(tf_op("Pack")
            .sig("x*:T -> y:T")
            .attrs("N:int=0, axis:int=0")
            .tc("T", ALL)
            .infer(pack)),
    )?;
    add(
        b,
        nd(tf_op("Unpack")
            .sig("x:T -> y*:T")
            .attrs("num:int=0, axis:int=0")
            .tc("T", ALL)
            .infer(unpack)),
    )?;
    add(
        b,
        nd(tf_op("StridedSlice")
            .sig("x:T, begin:Index, end:Index, strides:Index -> y:T")
            .attrs(
                "begin_mask:int=0, end_mask:int=0, ellipsis_mask:int=0, new_axis_mask:int=0, \
                 shrink_axis_mask:int=0",
            )
            .tc("T", ALL)
            .tc("Index", INT32_64)
            .infer(strided_slice)),
    )?;
    add(
        b,
        nd(tf_op("Pad")
            .sig("x:T, paddings:Tp -> y:T")
            .tc("T", ALL)
            .tc("Tp", INT32_64)
            .infer(pad)),
    )?;
    add(
        b,
        nd(tf_op("PadV2")
            .sig("x:T, paddings:Tp, constant_values:T -> y:T")
            .tc("T", ALL)
            .tc("Tp", INT32_64)
            .infer(pad)),
    )?;
    add(
        b,
        nd(tf_op("MirrorPad")
            .sig("x:T, paddings:Tp -> y:T")
            .attrs("mode:string")
            .tc("T", ALL)
            .tc("Tp", INT32_64)
            .infer(pad)),
    )?;
    add(
        b,
        tf_op("Cast")
            .sig("x:T -> y:U")
            .attrs("DstT:int, SrcT:int, dst_type:int, Truncate:int=0")
            .tc("T", ALL)
            .tc("U", ALL)
            .infer(cast),
    )?;
    add(
        b,
        tf_op("Transpose")
            .sig("x:T, perm:Tperm -> y:T")
            .tc("T", ALL)
            .tc("Tperm", INT32_64)
            .infer(transpose)
            .format(FormatRule::Transpose),
    )?;
    add(
        b,
        nd(tf_op("Tile")
            .sig("x:T, multiples:Tm -> y:T")
            .tc("T", ALL)
            .tc("Tm", INT32_64)
            .infer(tile)),
    )?;
    add(
        b,
        nd(tf_op("GatherV2")
            .sig("x:T, indices:Ti, axis:Ta -> y:T")
            .attrs("batch_dims:int=0")
            .tc("T", ALL)
            .tc("Ti", INT32_64)
            .tc("Ta", INT32_64)
            .infer(gather_v2)),
    )?;
    add(
        b,
        nd(tf_op("ExpandDims")
            .sig("x:T, axis:Ta -> y:T")
            .tc("T", ALL)
            .tc("Ta", INT32_64)
            .infer(expand_dims)),
    )?;
    add(
        b,
        nd(tf_op("Squeeze")
            .sig("x:T -> y:T")
            .attrs("squeeze_dims:ints, axis:ints")
            .tc("T", ALL)
            .infer(squeeze)),
    )?;
    add(
        b,
        nd(tf_op("Reshape")
            .sig("x:T, shape:Ts -> y:T")
            .tc("T", ALL)
            .tc("Ts", INT32_64)
            .infer(reshape)),
    )?;
    add(
        b,
        nd(tf_op("Shape")
            .sig("x:T -> y:U")
            .attrs("out_type:int")
            .tc("T", ALL)
            .tc("U", INT32_64)
            .infer(shape)),
    )?;
    add(
        b,
        nd(tf_op("Fill")
            .sig("dims:Ti, value:T -> y:T")
            .tc("T", ALL)
            .tc("Ti", INT32_64)
            .infer(fill)),
    )?;
    add(
        b,
        nd(tf_op("Range")
            .sig("start:T, limit:T, delta:T -> y:T")
            .attrs("Tidx:int")
            .tc("T", NUMERIC)
            .infer(range)),
    )?;
    for name in ["Select", "SelectV2"] {
        add(
            b,
            tf_op(name)
                .sig("condition:B, x1:T, x2:T -> y:T")
                .tc("B", BOOL)
                .tc("T", ALL)
                .infer(select),
        )?;
    }
    for name in ["ResizeBilinear", "ResizeNearestNeighbor"] {
        add(
            b,
            tf_op(name)
                .sig("images:T, size:S -> y:U")
                .attrs("align_corners:int=0, half_pixel_centers:int=0")
                .tc("T", NUMERIC)
                .tc("S", INT32_64)
                .tc("U", NUMERIC)
                .infer(resize)
                .format(FormatRule::Nd),
        )?;
    }
    Ok(())
}
