//! Shape manipulation: Identity, Shape, Size, Reshape, Flatten, Squeeze, Unsqueeze, Transpose,
//! Concat, Split. These carry values through (the shape-computing ops of expanded functions
//! fold here; Slice, Pad and friends are in `slicing.rs`).

use rge_ir::{DataType, Shape};

use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::FormatRule;
use crate::registry::OpRegistryBuilder;
use crate::value::{small_count, strides, Value, ValueData};

fn identity(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    ctx.set_output_info(0, x);
    Ok(())
}

fn shape(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let Some(d) = ctx.input(0)?.dims() else {
        ctx.set_output(0, DataType::Int64, Shape::new([-1]));
        return Ok(());
    };
    let r = d.len() as i64;
    let clamp = |x: i64| {
        if x < 0 {
            (x + r).clamp(0, r)
        } else {
            x.clamp(0, r)
        }
    };
    let start = clamp(ctx.attr_int_opt("start")?.unwrap_or(0)) as usize;
    let end = clamp(ctx.attr_int_opt("end")?.unwrap_or(r)) as usize;
    let part = if start < end { &d[start..end] } else { &[][..] };
    if part.iter().all(|&x| x >= 0) {
        ctx.set_output_value(0, Value::i64_vec(part.to_vec()));
    } else {
        ctx.set_output_dims(0, DataType::Int64, &[part.len() as i64]);
    }
    Ok(())
}

fn size(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    match ctx.input(0)?.dims().and_then(product) {
        Some(n) => ctx.set_output_value(0, Value::ints(DataType::Int64, vec![], vec![n])),
        None => ctx.set_output(0, DataType::Int64, Shape::scalar()),
    }
    Ok(())
}

/// The same elements under new dims (Reshape, Flatten, Squeeze, Unsqueeze).
fn set_reshaped(ctx: &mut InferCtx<'_>, dtype: DataType, dims: Vec<i64>) {
    if let Some(v) = ctx.input_value(0) {
        if dims.iter().all(|&d| d >= 0) {
            let mut v = v.clone();
            v.dims = dims;
            ctx.set_output_value(0, v);
            return;
        }
    }
    ctx.set_output(0, dtype, Shape::new(dims));
}

fn reshape_to(ctx: &mut InferCtx<'_>, target: &[i64]) -> OpResult<()> {
    let x = ctx.input(0)?;
    let dtype = x.dtype;
    let allowzero = ctx.attr_int_opt("allowzero")?.unwrap_or(0) != 0;
    let in_dims = x.dims();
    let mut out = Vec::with_capacity(target.len());
    let mut infer_at = None;
    for (i, &s) in target.iter().enumerate() {
        match s {
            0 if !allowzero => match in_dims {
                Some(d) if i < d.len() => out.push(d[i]),
                Some(d) => bail!(
                    "shape {} copies dim {i} (0) but the input {} has rank {}",
                    fmt_dims(target),
                    fmt_dims(d),
                    d.len()
                ),
                None => out.push(-1),
            },
            -1 => {
                if infer_at.is_some() {
                    bail!("shape {} has more than one -1", fmt_dims(target));
                }
                infer_at = Some(i);
                out.push(-1);
            }
            s if s < -1 => bail!("shape {} has a negative dim {s}", fmt_dims(target)),
            s => out.push(s),
        }
    }
    if allowzero && infer_at.is_some() && target.contains(&0) {
        bail!(
            "shape {} has both 0 and -1 with allowzero",
            fmt_dims(target)
        );
    }
    let total = in_dims.and_then(product);
    match (infer_at, total) {
        (Some(k), Some(total)) => {
            let rest = out
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != k)
                .map(|(_, &d)| d);
            if let Some(p) = product(&rest.collect::<Vec<_>>()) {
                if p == 0 || total % p != 0 {
                    bail!(
                        "cannot reshape {} ({total} elements) to {}",
                        fmt_dims(in_dims.unwrap_or(&[])),
                        fmt_dims(target)
                    );
                }
                out[k] = total / p;
            }
        }
        (None, Some(total)) => {
            if let Some(p) = product(&out) {
                if p != total {
                    bail!(
                        "cannot reshape {} ({total} elements) to {} ({p} elements)",
                        fmt_dims(in_dims.unwrap_or(&[])),
                        fmt_dims(&out)
                    );
                }
            }
        }
        _ => {}
    }
    set_reshaped(ctx, dtype, out);
    Ok(())
}

fn reshape(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    if let Some(s) = input_ints(ctx, 1, "shape")? {
        return reshape_to(ctx, &s);
    }
    match len_1d(ctx, 1, "shape")? {
        Some(n) => ctx.set_output(0, dtype, Shape::new(vec![-1; n])),
        None => ctx.set_output(0, dtype, Shape::unknown_rank()),
    }
    Ok(())
}

fn reshape_v1(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let s = ctx.attr_ints("shape")?.unwrap_or(&[]).to_vec();
    reshape_to(ctx, &s)
}

fn flatten(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let (axis, r) = (ctx.attr_int("axis")?, d.len() as i64);
    if axis < -r || axis > r {
        bail!("axis {axis} is out of range [-{r}, {r}]");
    }
    let axis = if axis < 0 { axis + r } else { axis } as usize;
    let a = product(&d[..axis]).unwrap_or(-1);
    let b = product(&d[axis..]).unwrap_or(-1);
    set_reshaped(ctx, dtype, vec![a, b]);
    Ok(())
}

/// Axes from input `i` (opset 13+) or attribute `axes`; `Ok(None)` when they are an input
/// whose value is unknown.
fn axes_of(ctx: &InferCtx<'_>, i: usize) -> OpResult<Option<Option<Vec<i64>>>> {
    if ctx.opset() >= 13 || ctx.proto().since_version >= 13 {
        if ctx.opt_input(i).is_none() {
            return Ok(Some(None));
        }
        return Ok(input_ints(ctx, i, "axes")?.map(Some));
    }
    Ok(Some(ctx.attr_ints("axes")?.map(<[i64]>::to_vec)))
}

fn squeeze(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let Some(axes) = axes_of(ctx, 1)? else {
        // Unknown axes: the rank is unknown too.
        ctx.set_output(0, dtype, Shape::unknown_rank());
        return Ok(());
    };
    let out: Vec<i64> = match axes {
        Some(axes) if !axes.is_empty() => {
            let axes = norm_axes(&axes, d.len())?;
            for &a in &axes {
                if d[a] != 1 && d[a] != -1 {
                    bail!(
                        "cannot squeeze axis {a} of size {} (shape {})",
                        d[a],
                        fmt_dims(d)
                    );
                }
            }
            d.iter()
                .enumerate()
                .filter(|(i, _)| !axes.contains(i))
                .map(|(_, &x)| x)
                .collect()
        }
        _ => {
            if d.contains(&-1) {
                ctx.set_output(0, dtype, Shape::unknown_rank());
                return Ok(());
            }
            d.iter().copied().filter(|&x| x != 1).collect()
        }
    };
    set_reshaped(ctx, dtype, out);
    Ok(())
}

fn unsqueeze(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let axes = match axes_of(ctx, 1)? {
        Some(Some(a)) => a,
        Some(None) => bail!("axes are required"),
        None => {
            // Unknown values: the rank is known from the axes' length.
            match len_1d(ctx, 1, "axes")? {
                Some(n) => ctx.set_output(0, dtype, Shape::new(vec![-1; d.len() + n])),
                None => ctx.set_output(0, dtype, Shape::unknown_rank()),
            }
            return Ok(());
        }
    };
    let r = d.len() + axes.len();
    let axes = norm_axes(&axes, r)?;
    let mut out = Vec::with_capacity(r);
    let mut it = d.iter();
    for i in 0..r {
        if axes.contains(&i) {
            out.push(1);
        } else {
            out.push(*it.next().expect("rank adds up"));
        }
    }
    set_reshaped(ctx, dtype, out);
    Ok(())
}

/// Gathers elements of `v` at the multi-indices `f(out_index)` for every output index.
pub(super) fn remap_value(
    v: &Value,
    out_dims: &[i64],
    src_of: impl Fn(&[usize]) -> usize,
) -> Option<Value> {
    let n = small_count(out_dims)?;
    let mut idx = vec![0usize; out_dims.len()];
    let pick = |k: usize| -> f64 { v.get_f64(k) };
    let mut ints = Vec::new();
    let mut floats = Vec::new();
    for _ in 0..n {
        let s = src_of(&idx);
        match &v.data {
            ValueData::Int(x) => ints.push(x[s]),
            ValueData::Float(_) => floats.push(pick(s)),
        }
        // Next multi-index.
        for a in (0..idx.len()).rev() {
            idx[a] += 1;
            if (idx[a] as i64) < out_dims[a] {
                break;
            }
            idx[a] = 0;
        }
    }
    Some(match v.data {
        ValueData::Int(_) => Value::ints(v.dtype, out_dims.to_vec(), ints),
        ValueData::Float(_) => Value::floats(v.dtype, out_dims.to_vec(), floats),
    })
}

fn transpose(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let perm: Vec<usize> = match ctx.attr_ints("perm")? {
        Some(p) => {
            if p.len() != d.len() {
                bail!("perm {p:?} has {} entries for rank {}", p.len(), d.len());
            }
            norm_axes(p, d.len())?
        }
        None => (0..d.len()).rev().collect(),
    };
    let out: Vec<i64> = perm.iter().map(|&p| d[p]).collect();
    if let Some(v) = ctx.input_value(0) {
        let st = strides(&v.dims);
        if let Some(t) = remap_value(v, &out, |idx| {
            idx.iter().zip(&perm).map(|(&i, &p)| i * st[p]).sum()
        }) {
            ctx.set_output_value(0, t);
            return Ok(());
        }
    }
    ctx.set_output_dims(0, dtype, &out);
    Ok(())
}

fn concat(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let present: Vec<usize> = (0..ctx.input_count())
        .filter(|&i| ctx.opt_input(i).is_some())
        .collect();
    let Some(&first) = present.first() else {
        bail!("needs at least one input");
    };
    let dtype = ctx.input(first)?.dtype;
    let axis = ctx.attr_int("axis")?;
    let mut out: Option<Vec<i64>> = None;
    let mut axis_n = 0usize;
    for &i in &present {
        let Some(d) = ctx.input(i)?.dims() else {
            continue;
        };
        let a = norm_axis(axis, d.len())?;
        axis_n = a;
        match &mut out {
            None => out = Some(d.to_vec()),
            Some(o) => {
                if o.len() != d.len() {
                    bail!(
                        "input {i} has rank {} but input {first} has rank {}",
                        d.len(),
                        o.len()
                    );
                }
                for k in 0..d.len() {
                    if k == a {
                        o[k] = if o[k] < 0 || d[k] < 0 {
                            -1
                        } else {
                            o[k] + d[k]
                        };
                    } else {
                        o[k] = merge_dim_with(o[k], d[k], || {
                            format!("input {i} disagrees on dim {k}")
                        })?;
                    }
                }
            }
        }
    }
    let Some(mut out) = out else {
        return all_unknown(ctx, dtype);
    };
    if present
        .iter()
        .any(|&i| ctx.opt_input(i).is_some_and(|t| t.dims().is_none()))
    {
        out[axis_n] = -1;
    }
    // Values: concatenate along the axis.
    let vals: Option<Vec<&Value>> = present.iter().map(|&i| ctx.input_value(i)).collect();
    if let Some(vals) = vals {
        if let Some(v) = concat_values(&vals, &out, axis_n) {
            ctx.set_output_value(0, v);
            return Ok(());
        }
    }
    ctx.set_output_dims(0, dtype, &out);
    Ok(())
}

fn concat_values(vals: &[&Value], out: &[i64], axis: usize) -> Option<Value> {
    small_count(out)?;
    let outer: usize = out[..axis].iter().product::<i64>() as usize;
    let mut ints = Vec::new();
    let mut floats = Vec::new();
    let int = vals.iter().all(|v| matches!(v.data, ValueData::Int(_)));
    for o in 0..outer {
        for v in vals {
            let inner: usize = v.dims[axis..].iter().product::<i64>() as usize;
            for k in o * inner..(o + 1) * inner {
                if int {
                    ints.push(v.get_i64(k));
                } else {
                    floats.push(v.get_f64(k));
                }
            }
        }
    }
    let dt = vals[0].dtype;
    Some(if int {
        Value::ints(dt, out.to_vec(), ints)
    } else {
        Value::floats(dt, out.to_vec(), floats)
    })
}

fn split(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let a = norm_axis(ctx.attr_int("axis")?, d.len())?;
    let n = ctx.output_count();
    let sizes: Option<Vec<i64>> = if ctx.proto().since_version >= 13 {
        if ctx.opt_input(1).is_some() {
            input_ints(ctx, 1, "split")?
        } else {
            None.or(Some(Vec::new()))
        }
    } else {
        Some(
            ctx.attr_ints("split")?
                .map(<[i64]>::to_vec)
                .unwrap_or_default(),
        )
    };
    let Some(mut sizes) = sizes else {
        for i in 0..n {
            let mut o = d.to_vec();
            o[a] = -1;
            ctx.set_output_dims(i, dtype, &o);
        }
        return Ok(());
    };
    if sizes.is_empty() {
        let parts = ctx.attr_int_opt("num_outputs")?.map_or(n as i64, |k| k);
        if parts as usize != n {
            bail!("num_outputs is {parts} but the node has {n} outputs");
        }
        sizes = if d[a] < 0 {
            vec![-1; n]
        } else if ctx.has_attr("num_outputs") {
            let chunk = ceil_div(d[a], parts);
            (0..parts)
                .map(|k| chunk.min(d[a] - chunk * k).max(0))
                .collect()
        } else {
            if d[a] % parts != 0 {
                bail!("dim {a} ({}) does not split into {parts} equal parts", d[a]);
            }
            vec![d[a] / parts; n]
        };
    } else {
        if sizes.len() != n {
            bail!("split has {} sizes for {n} outputs", sizes.len());
        }
        if d[a] >= 0 && sizes.iter().try_fold(0i64, |t, &x| t.checked_add(x)) != Some(d[a]) {
            bail!("split sizes {sizes:?} do not add up to dim {a} ({})", d[a]);
        }
    }
    for (i, &s) in sizes.iter().enumerate() {
        let mut o = d.to_vec();
        o[a] = s;
        ctx.set_output_dims(i, dtype, &o);
    }
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    for v in [1, 13, 14, 16] {
        b.register(
            op("Identity", v)
                .sig("input:V -> output:V")
                .tc("V", &[])
                .infer(identity),
        )?;
    }
    b.register(
        op("Shape", 1)
            .sig("data:T -> shape:T1")
            .tc("T", &[])
            .tc("T1", INT64)
            .infer(shape)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("Shape", 15)
            .sig("data:T -> shape:T1")
            .attrs("start:int=0, end:int")
            .tc("T", &[])
            .tc("T1", INT64)
            .infer(shape)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("Size", 1)
            .sig("data:T -> size:T1")
            .tc("T", &[])
            .tc("T1", INT64)
            .infer(size)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("Reshape", 1)
            .sig("data:T -> reshaped:T")
            .attrs("consumed_inputs:ints, shape:ints")
            .tc("T", ALL)
            .infer(reshape_v1)
            .format(FormatRule::Nd),
    )?;
    for v in [5, 14] {
        b.register(
            op("Reshape", v)
                .sig("data:T, shape:I -> reshaped:T")
                // `allowzero` from 14 on.
                .attrs(if v >= 14 { "allowzero:int=0" } else { "" })
                .tc("T", ALL)
                .tc("I", INT64)
                .infer(reshape)
                .format(FormatRule::Nd),
        )?;
    }
    for v in [1, 9, 11, 13] {
        b.register(
            op("Flatten", v)
                .sig("input:T -> output:T")
                .attrs("axis:int=1")
                .tc("T", ALL)
                .infer(flatten)
                .format(FormatRule::Nd),
        )?;
    }
    for v in [1, 11] {
        b.register(
            op("Squeeze", v)
                .sig("data:T -> squeezed:T")
                .attrs("axes:ints")
                .tc("T", ALL)
                .infer(squeeze)
                .format(FormatRule::Nd),
        )?;
        b.register(
            op("Unsqueeze", v)
                .sig("data:T -> expanded:T")
                .attrs("axes:ints!")
                .tc("T", ALL)
                .infer(unsqueeze)
                .format(FormatRule::Nd),
        )?;
    }
    b.register(
        op("Squeeze", 13)
            .sig("data:T, axes?:I -> squeezed:T")
            .tc("T", ALL)
            .tc("I", INT64)
            .infer(squeeze)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("Unsqueeze", 13)
            .sig("data:T, axes:I -> expanded:T")
            .tc("T", ALL)
            .tc("I", INT64)
            .infer(unsqueeze)
            .format(FormatRule::Nd),
    )?;
    for v in [1, 13] {
        b.register(
            op("Transpose", v)
                .sig("data:T -> transposed:T")
                .attrs("perm:ints")
                .tc("T", ALL)
                .infer(transpose)
                .format(FormatRule::Transpose),
        )?;
    }
    for v in [4, 11, 13] {
        b.register(
            op("Concat", v)
                .sig("inputs*:T -> concat_result:T")
                .attrs("axis:int!")
                .tc("T", ALL)
                .infer(concat),
        )?;
    }
    b.register(
        op("Split", 2)
            .sig("input:T -> outputs*:T")
            .attrs("axis:int=0, split:ints")
            .tc("T", ALL)
            .infer(split),
    )?;
    b.register(
        op("Split", 11)
            .sig("input:T -> outputs*:T")
            .attrs("axis:int=0, split:ints")
            .tc("T", ALL)
            .infer(split),
    )?;
    b.register(
        op("Split", 13)
            .sig("input:T, split?:I -> outputs*:T")
            .attrs("axis:int=0")
            .tc("T", ALL)
            .tc("I", INT64)
            .infer(split),
    )?;
    b.register(
        op("Split", 18)
            .sig("input:T, split?:I -> outputs*:T")
            .attrs("axis:int=0, num_outputs:int")
            .tc("T", ALL)
            .tc("I", INT64)
            .infer(split),
    )?;
    Ok(())
}
