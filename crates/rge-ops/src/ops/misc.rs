//! Data-dependent and specialised ops: TopK, NonZero, Unique, NonMaxSuppression, Resize,
//! Upsample, GridSample, AffineGrid, DFT, STFT, ImageDecoder, and the attention family
//! (Attention, RotaryEmbedding, SwiGLU, LinearAttention, CausalConvWithState, FlexAttention).

use rge_ir::{DataType, Shape};

use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::{FormatRule, OpProto};
use crate::registry::OpRegistryBuilder;

fn topk(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let a = norm_axis(ctx.attr_int("axis")?, d.len())?;
    let k = if ctx.proto().since_version >= 10 {
        if let Some(kd) = ctx.input(1)?.dims() {
            if !(kd.is_empty() || kd == [1]) {
                bail!("K must be a 1-element tensor, got shape {}", fmt_dims(kd));
            }
        }
        scalar_i64(ctx, 1)?
    } else {
        Some(ctx.attr_int("k")?)
    };
    if let (Some(k), true) = (k, d[a] >= 0) {
        if k < 0 || k > d[a] {
            bail!("K {k} is out of range for axis {a} of size {}", d[a]);
        }
    }
    let mut out = d.to_vec();
    out[a] = k.unwrap_or(-1);
    ctx.set_output_dims(0, dt, &out);
    ctx.set_output_dims(1, DataType::Int64, &out);
    Ok(())
}

fn nonzero(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let r = ctx.input(0)?.rank().map_or(-1, |r| r as i64);
    ctx.set_output_dims(0, DataType::Int64, &[r, -1]);
    Ok(())
}

fn unique(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let d = ctx.input(0)?.dims();
    match ctx.attr_int_opt("axis")? {
        None => {
            let n = d.and_then(product).unwrap_or(-1);
            ctx.set_output_dims(0, dt, &[-1]);
            ctx.set_output_dims(2, DataType::Int64, &[n]);
        }
        Some(axis) => {
            let Some(d) = d else {
                return all_unknown(ctx, dt);
            };
            let a = norm_axis(axis, d.len())?;
            let mut out = d.to_vec();
            out[a] = -1;
            ctx.set_output_dims(0, dt, &out);
            ctx.set_output_dims(2, DataType::Int64, &[d[a]]);
        }
    }
    ctx.set_output_dims(1, DataType::Int64, &[-1]);
    ctx.set_output_dims(3, DataType::Int64, &[-1]);
    Ok(())
}

fn nms(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    expect_rank(ctx, 0, 3, "boxes")?;
    expect_rank(ctx, 1, 3, "scores")?;
    ctx.set_output_dims(0, DataType::Int64, &[-1, 3]);
    Ok(())
}

/// Resize/Upsample output dims from known scales or sizes.
fn resize_dims(
    ctx: &InferCtx<'_>,
    d: &[i64],
    scales: Option<Vec<f64>>,
    sizes: Option<Vec<i64>>,
) -> OpResult<Vec<i64>> {
    let r = d.len();
    let axes: Vec<usize> = match ctx.attr_ints("axes")? {
        Some(a) => norm_axes(a, r)?,
        None => (0..r).collect(),
    };
    let mut out = d.to_vec();
    if let Some(sizes) = sizes {
        if sizes.len() != axes.len() {
            bail!("sizes has {} entries for {} axes", sizes.len(), axes.len());
        }
        let policy = ctx
            .attr_str_opt("keep_aspect_ratio_policy")?
            .unwrap_or("stretch");
        if policy == "stretch" {
            for (k, &a) in axes.iter().enumerate() {
                out[a] = sizes[k];
            }
        } else {
            let ratios = axes
                .iter()
                .enumerate()
                .map(|(k, &a)| sizes[k] as f64 / d[a] as f64);
            let scale = if policy == "not_larger" {
                ratios.fold(f64::INFINITY, f64::min)
            } else {
                ratios.fold(f64::NEG_INFINITY, f64::max)
            };
            for &a in &axes {
                out[a] = if d[a] < 0 {
                    -1
                } else {
                    (scale * d[a] as f64 + 0.5).floor() as i64
                };
            }
        }
        return Ok(out);
    }
    if let Some(scales) = scales {
        if scales.len() != axes.len() {
            bail!(
                "scales has {} entries for {} axes",
                scales.len(),
                axes.len()
            );
        }
        for (k, &a) in axes.iter().enumerate() {
            if scales[k] <= 0.0 {
                bail!("scale {} must be positive", scales[k]);
            }
            out[a] = if d[a] < 0 {
                -1
            } else {
                (d[a] as f64 * scales[k]).floor() as i64
            };
        }
        return Ok(out);
    }
    Ok(vec![-1; r])
}

fn resize(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let (si, zi) = if ctx.proto().since_version >= 11 {
        (2, Some(3))
    } else {
        (1, None)
    };
    let sizes = match zi.filter(|&z| ctx.opt_input(z).is_some()) {
        Some(z) => Some(input_ints(ctx, z, "sizes")?),
        None => None,
    };
    let scales = ctx
        .opt_input(si)
        .filter(|t| t.dims() != Some(&[0]))
        .map(|_| ctx.input_value(si).map(|v| v.as_f64()));
    let out = match (sizes, scales) {
        (Some(Some(z)), _) => resize_dims(ctx, d, None, Some(z))?,
        (Some(None), _) => vec![-1; d.len()],
        (None, Some(Some(s))) => resize_dims(ctx, d, Some(s), None)?,
        (None, Some(None)) => vec![-1; d.len()],
        (None, None) => bail!("one of scales and sizes must be given"),
    };
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn upsample(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let scales = if ctx.proto().since_version >= 9 {
        ctx.input_value(1).map(|v| v.as_f64())
    } else {
        ctx.attr_floats("scales")?
            .map(|s| s.iter().map(|&x| f64::from(x)).collect())
    };
    let out = resize_dims(ctx, d, scales, None)?;
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn grid_sample(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(x), Some(g)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    if x.len() < 3 || g.len() != x.len() {
        bail!(
            "X {} and grid {} must have the same rank ≥ 3",
            fmt_dims(x),
            fmt_dims(g)
        );
    }
    let mut out = vec![merge_dim(x[0], g[0], "X and grid differ in batch")?, x[1]];
    out.extend_from_slice(&g[1..g.len() - 1]);
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn affine_grid(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    match input_ints(ctx, 1, "size")? {
        Some(s) if s.len() == 4 => ctx.set_output_dims(0, dt, &[s[0], s[2], s[3], 2]),
        Some(s) if s.len() == 5 => ctx.set_output_dims(0, dt, &[s[0], s[2], s[3], s[4], 3]),
        Some(s) => bail!("size must have 4 or 5 entries, got {s:?}"),
        None => all_unknown(ctx, dt)?,
    }
    Ok(())
}

fn dft(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let r = d.len();
    if r < 2 || !matches!(d[r - 1], 1 | 2 | -1) {
        bail!(
            "input must end in a dim of 1 (real) or 2 (complex), got {}",
            fmt_dims(d)
        );
    }
    let axis = if ctx.proto().since_version >= 20 {
        match ctx.opt_input(2) {
            Some(_) => match scalar_i64(ctx, 2)? {
                Some(v) => v,
                None => {
                    ctx.set_output(0, dt, Shape::new(vec![-1; r]));
                    return Ok(());
                }
            },
            None => -2,
        }
    } else {
        ctx.attr_int("axis")?
    };
    // The axis counts over the signal dims (all but the last).
    let a = norm_axis(axis, r)?;
    if a == r - 1 {
        bail!("axis {axis} is the complex dim");
    }
    let mut out = d.to_vec();
    let given = match ctx.opt_input(1) {
        Some(_) => Some(scalar_i64(ctx, 1)?.unwrap_or(-1)),
        None => None,
    };
    let inverse = ctx.attr_int("inverse")? != 0;
    let onesided = ctx.attr_int("onesided")? != 0;
    if inverse && onesided {
        // Inverse real FFT: one-sided spectrum in, a real signal of dft_length (default
        // 2·(n−1)) out.
        out[a] = given.unwrap_or(if d[a] < 0 { -1 } else { 2 * (d[a] - 1) });
        out[r - 1] = 1;
    } else {
        let n = given.unwrap_or(d[a]);
        out[a] = if onesided && n >= 0 { n / 2 + 1 } else { n };
        out[r - 1] = 2;
    }
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn stft(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    if d.len() != 3 {
        bail!("signal must be [batch, length, 1|2], got {}", fmt_dims(d));
    }
    let step = scalar_i64(ctx, 1)?;
    let len = match ctx.opt_input(3) {
        Some(_) => scalar_i64(ctx, 3)?,
        None => ctx
            .opt_input(2)
            .and_then(|w| w.dims())
            .and_then(|w| w.first().copied()),
    };
    let frames = match (step, len) {
        (Some(s), Some(l)) if d[1] >= 0 && s > 0 => (d[1] - l) / s + 1,
        _ => -1,
    };
    let bins = match len {
        Some(l) if ctx.attr_int("onesided")? != 0 => l / 2 + 1,
        Some(l) => l,
        None => -1,
    };
    ctx.set_output_dims(0, dt, &[d[0], frames, bins, 2]);
    Ok(())
}

fn image_decoder(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let c = match ctx.attr_str("pixel_format")? {
        "RGB" | "BGR" => 3,
        "Grayscale" => 1,
        f => bail!("unknown pixel_format `{f}`"),
    };
    ctx.set_output_dims(0, DataType::Uint8, &[-1, -1, c]);
    Ok(())
}

/// Attention: Q/K/V as 4-D (B, heads, seq, head) or 3-D (B, seq, heads·head).
fn attention(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(q), Some(k), Some(v)) = (
        ctx.input(0)?.dims(),
        ctx.input(1)?.dims(),
        ctx.input(2)?.dims(),
    ) else {
        return all_unknown(ctx, dt);
    };
    let vdt = ctx.input(2)?.dtype;
    let (b, q_seq, q_heads, kv_heads, kv_seq, head, v_head) = match (q.len(), k.len(), v.len()) {
        (4, 4, 4) => (q[0], q[2], q[1], k[1], k[2], k[3], v[3]),
        (3, 3, 3) => {
            let qh = ctx
                .attr_int_opt("q_num_heads")?
                .ok_or_else(|| crate::error::OpError("3-D inputs need q_num_heads".into()))?;
            let kh = ctx
                .attr_int_opt("kv_num_heads")?
                .ok_or_else(|| crate::error::OpError("3-D inputs need kv_num_heads".into()))?;
            let div = |x: i64, h: i64| if x < 0 { -1 } else { x / h };
            (q[0], q[1], qh, kh, k[1], div(k[2], kh), div(v[2], kh))
        }
        _ => bail!(
            "Q {}, K {}, V {} must all be 3-D or all 4-D",
            fmt_dims(q),
            fmt_dims(k),
            fmt_dims(v)
        ),
    };
    let past = ctx
        .opt_input(4)
        .and_then(|p| p.dims())
        .map(|p| p.get(2).copied().unwrap_or(-1));
    let total = match past {
        Some(p) if p >= 0 && kv_seq >= 0 => p + kv_seq,
        Some(_) => -1,
        None => kv_seq,
    };
    if q.len() == 4 {
        ctx.set_output_dims(0, dt, &[b, q_heads, q_seq, v_head]);
    } else {
        ctx.set_output_dims(
            0,
            dt,
            &[b, q_seq, if v_head < 0 { -1 } else { q_heads * v_head }],
        );
    }
    ctx.set_output_dims(1, dt, &[b, kv_heads, total, head]);
    ctx.set_output_dims(2, vdt, &[b, kv_heads, total, v_head]);
    ctx.set_output_dims(3, dt, &[b, q_heads, q_seq, total]);
    Ok(())
}

fn flex_attention(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(q), Some(v)) = (ctx.input(0)?.dims(), ctx.input(2)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    if q.len() != 4 || v.len() != 4 {
        bail!("Q {} and V {} must be 4-D", fmt_dims(q), fmt_dims(v));
    }
    ctx.set_output_dims(0, dt, &[q[0], q[1], q[2], v[3]]);
    Ok(())
}

fn same_as_first(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    ctx.set_output(0, x.dtype, x.shape.clone());
    Ok(())
}

fn swiglu(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let (a, b) = (ctx.input(0)?, ctx.input(1)?);
    if let (Some(x), Some(y)) = (a.dims(), b.dims()) {
        if x.len() != y.len() {
            bail!(
                "A {} and B {} must have the same shape",
                fmt_dims(x),
                fmt_dims(y)
            );
        }
        let out: Vec<i64> = x
            .iter()
            .zip(y)
            .map(|(&p, &q)| merge_dim(p, q, "A and B differ"))
            .collect::<OpResult<_>>()?;
        ctx.set_output_dims(0, a.dtype, &out);
        return Ok(());
    }
    ctx.set_output(0, a.dtype, a.shape.clone());
    Ok(())
}

fn linear_attention(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(q), Some(k), Some(v)) = (
        ctx.input(0)?.dims(),
        ctx.input(1)?.dims(),
        ctx.input(2)?.dims(),
    ) else {
        return all_unknown(ctx, dt);
    };
    if q.len() != 3 || k.len() != 3 || v.len() != 3 {
        bail!("query, key and value must be 3-D (B, T, H·D)");
    }
    let qh = ctx.attr_int("q_num_heads")?;
    let kh = ctx.attr_int("kv_num_heads")?;
    if qh <= 0 || kh <= 0 || qh % kh != 0 {
        bail!("q_num_heads {qh} must be a positive multiple of kv_num_heads {kh}");
    }
    let div = |x: i64, h: i64| if x < 0 { -1 } else { x / h };
    let (dk, dv) = (div(k[2], kh), div(v[2], kh));
    let sdt = ctx.opt_input(3).map_or(dt, |s| s.dtype);
    ctx.set_output_dims(0, dt, &[q[0], q[1], if dv < 0 { -1 } else { qh * dv }]);
    ctx.set_output_dims(1, sdt, &[q[0], kh, dk, dv]);
    Ok(())
}

fn causal_conv_with_state(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(x), Some(w)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    if x.len() != 3 || w.len() != 3 {
        bail!(
            "input {} and weight {} must be 3-D",
            fmt_dims(x),
            fmt_dims(w)
        );
    }
    let x = x.to_vec();
    let k = w[2];
    ctx.set_output_dims(0, dt, &x);
    ctx.set_output_dims(1, dt, &[x[0], x[1], if k < 0 { -1 } else { k - 1 }]);
    Ok(())
}

/// Attention `v`: `nonpad_kv_seqlen` from 24 on, `left_window_size`/`right_window_size` from
/// 25 on.
fn attention_proto(v: i64) -> OpProto {
    let nonpad = if v >= 24 { ", nonpad_kv_seqlen?:I" } else { "" };
    let windows = if v >= 25 {
        ", left_window_size:int=-1, right_window_size:int=-1"
    } else {
        ""
    };
    op("Attention", v)
        .sig(&format!("Q:T1, K:T1, V:T2, attn_mask?:U, past_key?:T1, past_value?:T2{nonpad} -> Y:T1, present_key?:T1, present_value?:T2, qk_matmul_output?:T1"))
        .attrs(&format!("is_causal:int=0, kv_num_heads:int, q_num_heads:int, qk_matmul_output_mode:int=0, scale:float, softcap:float=0.0, softmax_precision:int{windows}"))
        .tc("T1", FLOATS)
        .tc("T2", FLOATS)
        .tc("U", &[DataType::Bool, DataType::Float16, DataType::Float, DataType::Double, DataType::Bf16])
        .tc("I", INT64)
        .infer(attention)
        .format(FormatRule::Nd)
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    b.register(
        op("TopK", 1)
            .sig("X:T -> Values:T, Indices:I")
            .attrs("axis:int=-1, k:int!")
            .tc("T", NUMERIC)
            .tc("I", INT64)
            .infer(topk),
    )?;
    for v in [10, 11, 24] {
        b.register(
            op("TopK", v)
                .sig("X:T, K:I -> Values:T, Indices:I")
                .attrs(if v >= 11 {
                    "axis:int=-1, largest:int=1, sorted:int=1"
                } else {
                    "axis:int=-1"
                })
                .tc("T", NUMERIC)
                .tc("I", INT64)
                .infer(topk),
        )?;
    }
    for v in [9, 13] {
        b.register(
            op("NonZero", v)
                .sig("X:T -> Y:I")
                .tc("T", ALL)
                .tc("I", INT64)
                .infer(nonzero)
                .format(FormatRule::Nd),
        )?;
    }
    {
        b.register(
            op("Unique", 11)
                .sig("X:T -> Y:T, indices?:I, inverse_indices?:I, counts?:I")
                .attrs("axis:int, sorted:int=1")
                .tc("T", ALL)
                .tc("I", INT64)
                .infer(unique)
                .format(FormatRule::Nd),
        )?;
    }
    for v in [10, 11] {
        b.register(
            op("NonMaxSuppression", v)
                .sig("boxes:F, scores:F, max_output_boxes_per_class?:I, iou_threshold?:F, score_threshold?:F -> selected_indices:I")
                .attrs("center_point_box:int=0")
                .tc("F", FLOAT32)
                .tc("I", INT64)
                .infer(nms)
                .format(FormatRule::Nd),
        )?;
    }
    b.register(
        op("Resize", 10)
            .sig("X:T, scales:F -> Y:T")
            .attrs("mode:string=nearest")
            .tc("T", ALL)
            .tc("F", FLOAT32)
            .infer(resize)
            .format(FormatRule::Spatial),
    )?;
    for v in [11, 13] {
        // Version 11 requires `roi` and `scales` (empty tensors when unused); 13 makes them
        // optional.
        let sig = if v >= 13 {
            "X:T1, roi?:T2, scales?:F, sizes?:I -> Y:T1"
        } else {
            "X:T1, roi:T2, scales:F, sizes?:I -> Y:T1"
        };
        b.register(
            op("Resize", v)
                .sig(sig)
                .attrs("coordinate_transformation_mode:string=half_pixel, cubic_coeff_a:float=-0.75, exclude_outside:int=0, extrapolation_value:float=0.0, mode:string=nearest, nearest_mode:string=round_prefer_floor")
                .tc("T1", ALL)
                .tc("T2", FLOATS)
                .tc("F", FLOAT32)
                .tc("I", INT64)
                .infer(resize)
                .format(FormatRule::Spatial),
        )?;
    }
    for v in [18, 19] {
        b.register(
            op("Resize", v)
                .sig("X:T1, roi?:T2, scales?:F, sizes?:I -> Y:T1")
                .attrs("antialias:int=0, axes:ints, coordinate_transformation_mode:string=half_pixel, cubic_coeff_a:float=-0.75, exclude_outside:int=0, extrapolation_value:float=0.0, keep_aspect_ratio_policy:string=stretch, mode:string=nearest, nearest_mode:string=round_prefer_floor")
                .tc("T1", ALL)
                .tc("T2", FLOATS)
                .tc("F", FLOAT32)
                .tc("I", INT64)
                .infer(resize)
                .format(FormatRule::Spatial),
        )?;
    }
    b.register(
        op("Upsample", 7)
            .sig("X:T -> Y:T")
            .attrs("mode:string=nearest, scales:floats!")
            .tc("T", ALL)
            .infer(upsample)
            .format(FormatRule::Spatial),
    )?;
    b.register(
        op("Upsample", 9)
            .sig("X:T, scales:F -> Y:T")
            .attrs("mode:string=nearest")
            .tc("T", ALL)
            .tc("F", FLOAT32)
            .infer(upsample)
            .format(FormatRule::Spatial),
    )?;
    for v in [16, 20, 22] {
        b.register(
            op("GridSample", v)
                .sig("X:T1, grid:T2 -> Y:T1")
                .attrs("align_corners:int=0, mode:string=linear, padding_mode:string=zeros")
                .tc("T1", ALL)
                .tc("T2", FLOATS)
                .infer(grid_sample)
                .format(FormatRule::Spatial),
        )?;
    }
    b.register(
        op("AffineGrid", 20)
            .sig("theta:T1, size:T2 -> grid:T1")
            .attrs("align_corners:int=0")
            .tc("T1", FLOATS)
            .tc("T2", INT64)
            .infer(affine_grid)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("DFT", 17)
            .sig("input:T1, dft_length?:T2 -> output:T1")
            .attrs("axis:int=1, inverse:int=0, onesided:int=0")
            .tc("T1", FLOATS)
            .tc("T2", INT32_64)
            .infer(dft)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("DFT", 20)
            .sig("input:T1, dft_length?:T2, axis?:I -> output:T1")
            .attrs("inverse:int=0, onesided:int=0")
            .tc("T1", FLOATS)
            .tc("T2", INT32_64)
            .tc("I", INT64)
            .infer(dft)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("STFT", 17)
            .sig("signal:T1, frame_step:T2, window?:T1, frame_length?:T2 -> output:T1")
            .attrs("onesided:int=1")
            .tc("T1", FLOATS)
            .tc("T2", INT32_64)
            .infer(stft)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("ImageDecoder", 20)
            .sig("encoded_stream:T1 -> image:T2")
            .attrs("pixel_format:string=RGB")
            .tc("T1", &[DataType::Uint8])
            .tc("T2", &[DataType::Uint8])
            .infer(image_decoder)
            .format(FormatRule::Nd),
    )?;
    for v in [23, 24] {
        b.register(attention_proto(v))?;
    }
    b.register(
        op("RotaryEmbedding", 23)
            .sig("X:T, cos_cache:T, sin_cache:T, position_ids?:M -> Y:T")
            .attrs("interleaved:int=0, num_heads:int, rotary_embedding_dim:int=0")
            .tc("T", FLOATS)
            .tc("M", INT64)
            .infer(same_as_first),
    )?;
    b.register(
        op("SwiGLU", 28)
            .sig("A:T, B:T -> Y:T")
            .attrs("alpha:float=1.0")
            .tc("T", FLOATS)
            .infer(swiglu),
    )?;
    b.register(
        op("LinearAttention", 27)
            .sig("query:T, key:T, value:T, past_state?:S, decay?:T, beta?:T -> output:T, present_state:S")
            .attrs("chunk_size:int=64, kv_num_heads:int!, q_num_heads:int!, scale:float=0.0, update_rule:string=gated_delta")
            .tc("T", FLOATS)
            .tc("S", FLOATS)
            .infer(linear_attention)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("CausalConvWithState", 27)
            .sig("input:T, weight:T, bias?:T, past_state?:T -> output:T, present_state:T")
            .attrs("activation:string=none")
            .tc("T", FLOATS)
            .infer(causal_conv_with_state)
            .format(FormatRule::Nd),
    )?;
    b.register(
        OpProto::new("ai.onnx.preview", "FlexAttention", 1)
            .sig("Q:T1, K:T1, V:T1 -> Y:T1")
            .attrs("prob_mod:graph, score_mod:graph, scale:float, softmax_precision:int")
            .tc("T1", FLOATS)
            .infer(flex_attention)
            .format(FormatRule::Nd),
    )?;
    Ok(())
}
