//! Infer functions of old op versions whose semantics no hand-written version has and that
//! `crate::upgrade` leaves in their old form.

use rge_ir::DataType;

use super::util::{dims_or_unknown, fmt_dims, norm_axis};
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::OpResult;
use crate::proto::InferFn;

/// The legacy infer of `op` version `since`, if it has one.
pub(super) fn infer_for(op: &str, since: i64) -> Option<InferFn> {
    Some(match (op, since) {
        ("Add" | "Sub" | "Mul" | "Div", 1 | 6) => legacy_broadcast,
        ("And" | "Or" | "Xor" | "Equal" | "Less" | "Greater" | "Pow", 1) => legacy_broadcast,
        ("Tile", 1) => tile_v1,
        ("Split", 1) => split_v1,
        ("PRelu", 1 | 6) => prelu_legacy,
        _ => return None,
    })
}

/// PRelu before version 7 (no broadcasting rule yet): a slope of one value or, as exporters of
/// the time wrote it, one per channel (`[C]` for `[N, C, …]`). Taken: a slope that broadcasts
/// to X, or a 1-D one whose length is exactly one of X's dims (what the kernels read).
fn prelu_legacy(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(xd) = ctx.input(0)?.dims().map(<[i64]>::to_vec) else {
        return super::util::all_unknown(ctx, dt);
    };
    if let Some(sd) = ctx.input(1)?.dims().map(<[i64]>::to_vec) {
        let broadcasts = super::util::broadcast2(&xd, &sd).is_ok_and(|o| o == xd);
        let per_dim =
            matches!(sd.as_slice(), [c] if *c >= 0 && xd.iter().filter(|&&d| d == *c).count() == 1);
        if !broadcasts && !per_dim && xd.iter().all(|&d| d >= 0) {
            bail!(
                "slope {} does not broadcast to X {} and is not one value per dim of X",
                fmt_dims(&sd),
                fmt_dims(&xd)
            );
        }
    }
    ctx.set_output_dims(0, dt, &xd);
    Ok(())
}

/// Binary ops before version 7: with `broadcast = 1`, B's dims line up with A's from `axis`
/// on (default: A's trailing dims), each equal or 1; the result has A's shape. Without it the
/// shapes are equal. (`crate::upgrade` moves every case but an explicit `axis` to version 7.)
fn legacy_broadcast(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let a = ctx.input(0)?;
    let b = ctx.input(1)?;
    let out_type = match ctx.op_type() {
        "Equal" | "Less" | "Greater" => DataType::Bool,
        _ => a.dtype,
    };
    let (Some(ad), Some(bd)) = (a.dims(), b.dims()) else {
        return super::util::all_unknown(ctx, out_type);
    };
    let (ad, bd) = (ad.to_vec(), bd.to_vec());
    if ctx.attr_int_opt("broadcast")?.unwrap_or(0) == 0 {
        if ad != bd && !bd.is_empty() {
            bail!(
                "A {} and B {} differ and `broadcast` is 0",
                fmt_dims(&ad),
                fmt_dims(&bd)
            );
        }
        ctx.set_output_dims(0, out_type, &ad);
        return Ok(());
    }
    if bd.len() > ad.len() {
        bail!(
            "B {} has a higher rank than A {}",
            fmt_dims(&bd),
            fmt_dims(&ad)
        );
    }
    let axis = match ctx.attr_int_opt("axis")? {
        Some(x) => norm_axis(x, ad.len().max(1))?,
        None => ad.len() - bd.len(),
    };
    if axis + bd.len() > ad.len() {
        bail!(
            "B {} does not fit A {} from axis {axis}",
            fmt_dims(&bd),
            fmt_dims(&ad)
        );
    }
    for (k, &d) in bd.iter().enumerate() {
        let x = ad[axis + k];
        if d != x && d != 1 && d >= 0 && x >= 0 {
            bail!(
                "B {} does not broadcast to A {} at axis {axis} (dim {}: {d} vs {x})",
                fmt_dims(&bd),
                fmt_dims(&ad),
                axis + k
            );
        }
    }
    ctx.set_output_dims(0, out_type, &ad);
    Ok(())
}

/// The known values of input `i` as integers: Tile 1 gives `tiles` and `axis` in the data's
/// (float) type, so each must be a whole number.
fn whole_values(ctx: &InferCtx<'_>, i: usize, what: &str) -> OpResult<Option<Vec<i64>>> {
    let Some(v) = ctx.input_value(i) else {
        return Ok(None);
    };
    v.as_f64()
        .iter()
        .map(|&x| {
            if x.is_finite() && x.fract() == 0.0 && x.abs() < 9.0e15 {
                Ok(x as i64)
            } else {
                bail!("{what} holds {x}, not a whole number")
            }
        })
        .collect::<OpResult<Vec<i64>>>()
        .map(Some)
}

/// Tile 1: `tiles` copies along `axis` (both 1-element inputs).
fn tile_v1(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let mut out = d.to_vec();
    let tiles = whole_values(ctx, 1, "tiles")?;
    let axis = whole_values(ctx, 2, "axis")?;
    match (tiles.as_deref(), axis.as_deref()) {
        (Some(&[t]), Some(&[a])) => {
            if t < 0 {
                bail!("tiles is {t}");
            }
            let a = norm_axis(a, out.len())?;
            out[a] = if out[a] < 0 {
                -1
            } else {
                out[a].saturating_mul(t)
            };
        }
        (Some(t), _) if t.len() != 1 => bail!("tiles has {} elements; it must have 1", t.len()),
        (_, Some(a)) if a.len() != 1 => bail!("axis has {} elements; it must have 1", a.len()),
        (_, Some(&[a])) => {
            let a = norm_axis(a, out.len())?;
            out[a] = -1;
        }
        _ => out.iter_mut().for_each(|x| *x = -1),
    }
    ctx.set_output_dims(0, dtype, &out);
    Ok(())
}

/// Split 1: sizes from the `split` input (of the data's type) or attribute, else equal parts.
fn split_v1(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dtype)? else {
        return Ok(());
    };
    let d = d.to_vec();
    let a = norm_axis(ctx.attr_int_opt("axis")?.unwrap_or(0), d.len())?;
    let n = ctx.output_count();
    let sizes: Option<Vec<i64>> = match (ctx.input_value(1), ctx.attr_ints("split")?) {
        (Some(_), Some(_)) => bail!("gives `split` both as an input and as an attribute"),
        (Some(v), None) => Some(v.as_f64().iter().map(|&x| x as i64).collect()),
        (None, Some(s)) => Some(s.to_vec()),
        (None, None) if ctx.opt_input(1).is_some() => None,
        (None, None) => {
            if d[a] >= 0 && (n == 0 || d[a] % n as i64 != 0) {
                bail!("dim {} ({}) does not split into {n} equal parts", a, d[a]);
            }
            (d[a] >= 0).then(|| vec![d[a] / n as i64; n])
        }
    };
    if let Some(s) = &sizes {
        if s.len() != n {
            bail!("split {s:?} has {} entries for {n} outputs", s.len());
        }
        if d[a] >= 0 && s.iter().sum::<i64>() != d[a] {
            bail!("split {s:?} does not sum to dim {a} ({})", d[a]);
        }
    }
    for i in 0..n {
        let mut out = d.clone();
        out[a] = sizes.as_ref().map_or(-1, |s| s[i]);
        ctx.set_output_dims(i, dtype, &out);
    }
    Ok(())
}
