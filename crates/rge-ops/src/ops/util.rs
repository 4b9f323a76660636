//! Shared pieces of the op infer functions: broadcasting, axes, unknown outputs, values.

use rge_ir::{DataType, Shape};

use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpError, OpResult};
use crate::proto::OpProto;
use crate::value::{small_count, strides, Value, ValueData};

/// A prototype in the default ONNX domain.
pub fn op(op_type: &str, since: i64) -> OpProto {
    OpProto::new("", op_type, since)
}

pub fn fmt_dims(d: &[i64]) -> String {
    Shape::from_slice(d).to_string()
}

/// Numpy-style (multidirectional) broadcast of two dim lists. -1 dims stay unknown unless the
/// other side fixes them.
pub fn broadcast2(a: &[i64], b: &[i64]) -> OpResult<Vec<i64>> {
    let n = a.len().max(b.len());
    let mut out = vec![0; n];
    for i in 0..n {
        let x = if i + a.len() >= n {
            a[i + a.len() - n]
        } else {
            1
        };
        let y = if i + b.len() >= n {
            b[i + b.len() - n]
        } else {
            1
        };
        out[i] = match (x, y) {
            (x, y) if x == y => x,
            (1, y) => y,
            (x, 1) => x,
            (-1, y) => y,
            (x, -1) => x,
            _ => bail!(
                "shapes {} and {} cannot broadcast (dim {i}: {x} vs {y})",
                fmt_dims(a),
                fmt_dims(b)
            ),
        };
    }
    Ok(out)
}

/// Broadcast of several inputs; `None` when one has an unknown rank.
pub fn broadcast_inputs(ctx: &InferCtx<'_>, idx: &[usize]) -> OpResult<Option<Vec<i64>>> {
    let mut out: Vec<i64> = Vec::new();
    for &i in idx {
        let Some(t) = ctx.opt_input(i) else {
            continue;
        };
        let Some(d) = t.dims() else {
            return Ok(None);
        };
        out = broadcast2(&out, d)?;
    }
    Ok(Some(out))
}

/// Normalizes `axis` into `0..rank`.
pub fn norm_axis(axis: i64, rank: usize) -> OpResult<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        bail!("axis {axis} is out of range for rank {rank}");
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// Normalizes and checks a list of axes (no duplicates).
pub fn norm_axes(axes: &[i64], rank: usize) -> OpResult<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let a = norm_axis(a, rank)?;
        if out.contains(&a) {
            bail!("axis {a} is repeated in {axes:?}");
        }
        out.push(a);
    }
    Ok(out)
}

/// Sets every output to `dtype` with an unknown rank.
pub fn all_unknown(ctx: &mut InferCtx<'_>, dtype: DataType) -> OpResult<()> {
    for i in 0..ctx.output_count() {
        ctx.set_output(i, dtype, Shape::unknown_rank());
    }
    Ok(())
}

/// The dims of input `i`, or — for an unknown rank — sets output 0 to `dtype` with an
/// unknown rank and returns `None` (the caller returns).
pub fn dims_or_unknown<'a>(
    ctx: &mut InferCtx<'a>,
    i: usize,
    dtype: DataType,
) -> OpResult<Option<&'a [i64]>> {
    match ctx.input(i)?.dims() {
        Some(d) => Ok(Some(d)),
        None => {
            all_unknown(ctx, dtype)?;
            Ok(None)
        }
    }
}

/// The int elements of input `i`'s known value, `None` if not known. An error if present
/// with a non-integer type.
pub fn input_ints(ctx: &InferCtx<'_>, i: usize, what: &str) -> OpResult<Option<Vec<i64>>> {
    match ctx.input_value(i) {
        Some(v) => v.indices(what).map(Some),
        None => Ok(None),
    }
}

/// The number of elements of a 1-D input (its dim 0), if known.
pub fn len_1d(ctx: &InferCtx<'_>, i: usize, what: &str) -> OpResult<Option<usize>> {
    let t = ctx.input(i)?;
    match t.dims() {
        None => Ok(None),
        Some([n]) => Ok((*n >= 0).then_some(*n as usize)),
        Some([]) => Ok(Some(1)),
        Some(d) => bail!("{what} must be 1-D, got shape {}", fmt_dims(d)),
    }
}

/// Output dims for a reduction over `axes` (all when empty).
pub fn reduce_dims(dims: &[i64], axes: &[usize], keepdims: bool) -> Vec<i64> {
    let mut out = Vec::with_capacity(dims.len());
    for (i, &d) in dims.iter().enumerate() {
        if axes.is_empty() || axes.contains(&i) {
            if keepdims {
                out.push(1);
            }
        } else {
            out.push(d);
        }
    }
    out
}

/// The unravelled index of flat index `flat` in `dims`, broadcast into `src` dims.
fn broadcast_index(flat: usize, out_dims: &[i64], src_dims: &[i64]) -> usize {
    let mut rem = flat;
    let mut idx = 0usize;
    let off = out_dims.len() - src_dims.len();
    let ss = strides(src_dims);
    for i in (0..out_dims.len()).rev() {
        let d = out_dims[i] as usize;
        let c = rem.checked_rem(d).unwrap_or(0);
        rem = rem.checked_div(d).unwrap_or(0);
        if i >= off {
            let sd = src_dims[i - off];
            if sd != 1 {
                idx += c * ss[i - off];
            }
        }
    }
    idx
}

/// An exact integer element function (`None` on overflow).
pub type IntFn = dyn Fn(&[i64]) -> Option<i64>;

/// Elementwise values of a broadcast op over known inputs, or `None` when an input value is
/// unknown or the result too big. `f` works on f64 (ints round-trip exactly up to 2^53),
/// `fi` on i64 when all inputs are int-like.
pub fn broadcast_values(
    vals: &[&Value],
    out_dims: &[i64],
    out_dtype: DataType,
    f: impl Fn(&[f64]) -> f64,
    fi: Option<&IntFn>,
) -> Option<Value> {
    let n = small_count(out_dims)?;
    let all_int = vals.iter().all(|v| matches!(v.data, ValueData::Int(_)));
    let mut args_f = vec![0f64; vals.len()];
    let mut args_i = vec![0i64; vals.len()];
    if all_int && crate::value::is_int_like(out_dtype) {
        if let Some(fi) = fi {
            let mut out = Vec::with_capacity(n);
            for k in 0..n {
                for (j, v) in vals.iter().enumerate() {
                    args_i[j] = v.get_i64(broadcast_index(k, out_dims, &v.dims));
                }
                out.push(fi(&args_i)?);
            }
            return Some(Value::ints(out_dtype, out_dims.to_vec(), out));
        }
    }
    let mut out = Vec::with_capacity(n);
    for k in 0..n {
        for (j, v) in vals.iter().enumerate() {
            args_f[j] = v.get_f64(broadcast_index(k, out_dims, &v.dims));
        }
        out.push(f(&args_f));
    }
    Some(Value::from_f64s(out_dtype, out_dims.to_vec(), out))
}

/// Requires input `i` to have rank `r` (when known).
pub fn expect_rank(ctx: &InferCtx<'_>, i: usize, r: usize, what: &str) -> OpResult<()> {
    if let Some(d) = ctx.input(i)?.dims() {
        if d.len() != r {
            bail!("{what} must have rank {r}, got shape {}", fmt_dims(d));
        }
    }
    Ok(())
}

/// Merges two dims that must agree: -1 yields to a known dim; two known dims must match.
pub fn merge_dim(a: i64, b: i64, what: &str) -> OpResult<i64> {
    merge_dim_with(a, b, || what.to_string())
}

/// [`merge_dim`] with the message made only on a mismatch.
pub fn merge_dim_with(a: i64, b: i64, what: impl FnOnce() -> String) -> OpResult<i64> {
    match (a, b) {
        (-1, x) | (x, -1) => Ok(x),
        (x, y) if x == y => Ok(x),
        (x, y) => Err(OpError(format!("{}: {x} vs {y}", what()))),
    }
}

/// Product of known dims, `None` if any is unknown.
pub fn product(d: &[i64]) -> Option<i64> {
    d.iter()
        .try_fold(1i64, |acc, &x| (x >= 0).then(|| acc.saturating_mul(x)))
}

/// `ceil(a / b)` for positive `b`.
pub fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1).div_euclid(b)
}

/// The first element of input `i`'s known value (a scalar or 1-element input), as `i64`;
/// an empty value is an error.
pub fn scalar_i64(ctx: &InferCtx<'_>, i: usize) -> OpResult<Option<i64>> {
    match ctx.input_value(i) {
        None => Ok(None),
        Some(v) if v.is_empty() => bail!("input {i} is empty; it must hold one element"),
        Some(v) => Ok(Some(v.get_i64(0))),
    }
}

/// [`scalar_i64`] as `f64`.
pub fn scalar_f64(ctx: &InferCtx<'_>, i: usize) -> OpResult<Option<f64>> {
    match ctx.input_value(i) {
        None => Ok(None),
        Some(v) if v.is_empty() => bail!("input {i} is empty; it must hold one element"),
        Some(v) => Ok(Some(v.get_f64(0))),
    }
}
