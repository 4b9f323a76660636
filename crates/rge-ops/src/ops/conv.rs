//! Convolutions and pooling: Conv, ConvTranspose, ConvInteger, QLinearConv, DeformConv,
//! MaxPool, AveragePool, LpPool, Global*Pool, MaxUnpool, Col2Im, RoiAlign, MaxRoiPool.

use rge_ir::DataType;

use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::FormatRule;
use crate::registry::OpRegistryBuilder;

/// The spatial output dims of a sliding window over `input` (N, C, spatial…).
fn window_out(
    ctx: &InferCtx<'_>,
    spatial: &[i64],
    kernel: &[i64],
    ceil_mode: bool,
    pool: bool,
) -> OpResult<Vec<i64>> {
    let n = spatial.len();
    if kernel.len() != n {
        bail!("kernel has {} dims for {n} spatial dims", kernel.len());
    }
    let strides = ctx
        .attr_ints("strides")?
        .map_or(vec![1; n], <[i64]>::to_vec);
    let dil = ctx
        .attr_ints("dilations")?
        .map_or(vec![1; n], <[i64]>::to_vec);
    let pads = ctx
        .attr_ints("pads")?
        .map_or(vec![0; 2 * n], <[i64]>::to_vec);
    if strides.len() != n || dil.len() != n || pads.len() != 2 * n {
        bail!(
            "strides {strides:?}, dilations {dil:?} or pads {pads:?} do not fit {n} spatial dims"
        );
    }
    if strides.iter().chain(&dil).any(|&s| s <= 0) {
        bail!("strides {strides:?} and dilations {dil:?} must be positive");
    }
    let auto_pad = ctx.attr_str_opt("auto_pad")?.unwrap_or("NOTSET");
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let (x, k) = (spatial[i], kernel[i]);
        if x < 0 || k < 0 {
            out.push(-1);
            continue;
        }
        let ek = dil[i].saturating_mul(k - 1).saturating_add(1);
        let o = match auto_pad {
            "SAME_UPPER" | "SAME_LOWER" => ceil_div(x, strides[i]),
            "VALID" => {
                if x < ek {
                    bail!("spatial dim {i} ({x}) is smaller than the kernel ({ek})");
                }
                (x - ek) / strides[i] + 1
            }
            "NOTSET" | "" => {
                let total = x.saturating_add(pads[i]).saturating_add(pads[i + n]);
                // Pools: onnxruntime's output size truncates toward zero, so an input short
                // of the kernel by less than the stride still has one (partial) window.
                if pool && total < ek && ek - total < strides[i] {
                    out.push(1);
                    continue;
                }
                if total < ek {
                    bail!("padded spatial dim {i} ({total}) is smaller than the kernel ({ek})");
                }
                let mut o = if ceil_mode {
                    ceil_div(total - ek, strides[i]) + 1
                } else {
                    (total - ek) / strides[i] + 1
                };
                // A last window that starts in the end padding is dropped.
                if ceil_mode && (o - 1).saturating_mul(strides[i]) >= x.saturating_add(pads[i]) {
                    o -= 1;
                }
                o
            }
            other => bail!("unknown auto_pad `{other}`"),
        };
        out.push(o);
    }
    Ok(out)
}

/// Conv-like: X [N, C, D…], W [M, C/g, k…] → [N, M, out…].
fn conv_with(ctx: &mut InferCtx<'_>, x_i: usize, w_i: usize, dtype: DataType) -> OpResult<()> {
    let (Some(x), Some(w)) = (ctx.input(x_i)?.dims(), ctx.input(w_i)?.dims()) else {
        return all_unknown(ctx, dtype);
    };
    if x.len() < 3 || w.len() != x.len() {
        bail!(
            "X {} and W {} must both have rank ≥ 3 and the same rank",
            fmt_dims(x),
            fmt_dims(w)
        );
    }
    let group = ctx.attr_int_opt("group")?.unwrap_or(1);
    if group <= 0 {
        bail!("group {group} must be positive");
    }
    if x[1] >= 0 && w[1] >= 0 && x[1] != w[1].saturating_mul(group) {
        bail!(
            "X has {} channels but W {} expects {} (group {group})",
            x[1],
            fmt_dims(w),
            w[1].saturating_mul(group)
        );
    }
    let kernel: Vec<i64> = match ctx.attr_ints("kernel_shape")? {
        Some(k) => k.to_vec(),
        None => w[2..].to_vec(),
    };
    let sp = window_out(ctx, &x[2..], &kernel, false, false)?;
    let mut out = vec![x[0], w[0]];
    out.extend(sp);
    ctx.set_output_dims(0, dtype, &out);
    Ok(())
}

pub(super) fn conv(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let bias = if ctx.op_type() == "DeformConv" { 3 } else { 2 };
    if let (Some(b), Some(w)) = (
        ctx.opt_input(bias).and_then(|b| b.dims()),
        ctx.input(1)?.dims(),
    ) {
        if b.len() != 1 || (w.first().is_some_and(|&m| m >= 0) && b[0] >= 0 && b[0] != w[0]) {
            bail!(
                "bias {} must be 1-D of size M ({})",
                fmt_dims(b),
                w.first().unwrap_or(&-1)
            );
        }
    }
    conv_with(ctx, 0, 1, dt)
}

fn conv_integer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    conv_with(ctx, 0, 1, DataType::Int32)
}

fn qlinear_conv(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(7)?.dtype;
    conv_with(ctx, 0, 3, dt)
}

fn conv_transpose(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(x), Some(w)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    if x.len() < 3 || w.len() != x.len() {
        bail!(
            "X {} and W {} must both have rank ≥ 3 and the same rank",
            fmt_dims(x),
            fmt_dims(w)
        );
    }
    let n = x.len() - 2;
    let group = ctx.attr_int_opt("group")?.unwrap_or(1);
    let kernel: Vec<i64> = ctx
        .attr_ints("kernel_shape")?
        .map_or_else(|| w[2..].to_vec(), <[i64]>::to_vec);
    let strides = ctx
        .attr_ints("strides")?
        .map_or(vec![1; n], <[i64]>::to_vec);
    let dil = ctx
        .attr_ints("dilations")?
        .map_or(vec![1; n], <[i64]>::to_vec);
    let pads = ctx
        .attr_ints("pads")?
        .map_or(vec![0; 2 * n], <[i64]>::to_vec);
    let opad = ctx
        .attr_ints("output_padding")?
        .map_or(vec![0; n], <[i64]>::to_vec);
    if kernel.len() != n
        || strides.len() != n
        || dil.len() != n
        || pads.len() != 2 * n
        || opad.len() != n
    {
        bail!(
            "kernel_shape, strides, dilations, pads or output_padding do not fit {n} spatial dims"
        );
    }
    let auto_pad = ctx.attr_str_opt("auto_pad")?.unwrap_or("NOTSET");
    let mut out = vec![
        x[0],
        if w[1] < 0 {
            -1
        } else {
            w[1].saturating_mul(group)
        },
    ];
    match ctx.attr_ints("output_shape")? {
        Some(os) => {
            let os = if os.len() == n + 2 { &os[2..] } else { os };
            if os.len() != n {
                bail!("output_shape {os:?} does not fit {n} spatial dims");
            }
            out.extend_from_slice(os);
        }
        None => {
            for i in 0..n {
                if x[2 + i] < 0 {
                    out.push(-1);
                    continue;
                }
                let full = strides[i]
                    .saturating_mul(x[2 + i] - 1)
                    .saturating_add(opad[i])
                    .saturating_add((kernel[i] - 1).saturating_mul(dil[i]))
                    .saturating_add(1);
                out.push(match auto_pad {
                    "SAME_UPPER" | "SAME_LOWER" => x[2 + i].saturating_mul(strides[i]),
                    _ => full.saturating_sub(pads[i]).saturating_sub(pads[i + n]),
                });
            }
        }
    }
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

pub(super) fn pool(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(x) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    if x.len() < 3 {
        bail!("X must have rank ≥ 3, got {}", fmt_dims(x));
    }
    let Some(kernel) = ctx.attr_ints("kernel_shape")? else {
        bail!("required attribute `kernel_shape` is missing");
    };
    let ceil_mode = ctx.attr_int_opt("ceil_mode")?.unwrap_or(0) != 0;
    let sp = window_out(ctx, &x[2..], kernel, ceil_mode, true)?;
    let mut out = x[..2].to_vec();
    out.extend(sp);
    ctx.set_output_dims(0, dt, &out);
    ctx.set_output_dims(1, DataType::Int64, &out);
    Ok(())
}

pub(super) fn global_pool(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(x) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    if x.len() < 2 {
        bail!("X must have rank ≥ 2, got {}", fmt_dims(x));
    }
    let mut out = x[..2].to_vec();
    out.extend(std::iter::repeat_n(1, x.len() - 2));
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn max_unpool(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    if ctx.opt_input(2).is_some() {
        match input_ints(ctx, 2, "output_shape")? {
            Some(s) => ctx.set_output_dims(0, dt, &s),
            None => {
                let r = ctx.input(0)?.rank();
                match r {
                    Some(r) => ctx.set_output_dims(0, dt, &vec![-1; r]),
                    None => all_unknown(ctx, dt)?,
                }
            }
        }
        return Ok(());
    }
    let Some(x) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    let n = x.len().saturating_sub(2);
    let kernel = ctx.attr_ints("kernel_shape")?.unwrap_or(&[]).to_vec();
    let strides = ctx
        .attr_ints("strides")?
        .map_or(vec![1; n], <[i64]>::to_vec);
    let pads = ctx
        .attr_ints("pads")?
        .map_or(vec![0; 2 * n], <[i64]>::to_vec);
    if kernel.len() != n || strides.len() != n || pads.len() != 2 * n {
        bail!("kernel_shape, strides or pads do not fit {n} spatial dims");
    }
    let mut out = x[..2].to_vec();
    for i in 0..n {
        out.push(if x[2 + i] < 0 {
            -1
        } else {
            (x[2 + i] - 1)
                .saturating_mul(strides[i])
                .saturating_add(kernel[i])
                .saturating_sub(pads[i])
                .saturating_sub(pads[i + n])
        });
    }
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn col2im(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let x = ctx.input(0)?.dims();
    let (Some(img), Some(block)) = (
        input_ints(ctx, 1, "image_shape")?,
        input_ints(ctx, 2, "block_shape")?,
    ) else {
        return all_unknown(ctx, dt);
    };
    let Some(x) = x else {
        return all_unknown(ctx, dt);
    };
    if x.len() != 3 {
        bail!("input must be 3-D, got {}", fmt_dims(x));
    }
    let p = product(&block).unwrap_or(-1);
    let c = if x[1] < 0 || p <= 0 { -1 } else { x[1] / p };
    let mut out = vec![x[0], c];
    out.extend(img);
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

/// The dtype and channel count of the feature map (input 0) and the number of RoIs (input 1's
/// first dim), -1 where unknown: the leading output dims of the RoI pooling ops.
fn roi_pool_leading(ctx: &InferCtx<'_>) -> OpResult<(rge_ir::DataType, i64, i64)> {
    let x = ctx.input(0)?;
    let c = x.dims().map_or(-1, |d| d.get(1).copied().unwrap_or(-1));
    let n = ctx
        .input(1)?
        .dims()
        .map_or(-1, |d| d.first().copied().unwrap_or(-1));
    Ok((x.dtype, n, c))
}

fn roi_align(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let (dt, n, c) = roi_pool_leading(ctx)?;
    let (h, w) = (
        ctx.attr_int("output_height")?,
        ctx.attr_int("output_width")?,
    );
    ctx.set_output_dims(0, dt, &[n, c, h, w]);
    Ok(())
}

fn max_roi_pool(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let (dt, n, c) = roi_pool_leading(ctx)?;
    let Some(p) = ctx.attr_ints("pooled_shape")? else {
        bail!("required attribute `pooled_shape` is missing");
    };
    let mut out = vec![n, c];
    out.extend_from_slice(p);
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

const CONV_ATTRS: &str = "auto_pad:string=NOTSET, dilations:ints, group:int=1, kernel_shape:ints, pads:ints, strides:ints";

/// The domain of rge's own fused ops (what engine optimizers make of op patterns).
pub const RGE_DOMAIN: &str = "ai.rge";

/// The attributes of a fused epilogue: the activation and its parameters (see docs/dense.md).
pub const EPILOGUE_ATTRS: &str = "activation:string=, activation_params:floats";

/// A Conv with its epilogue: `Y = act(conv(X, W) + B + Z)` (B per output channel, Z a tensor of
/// Y's shape, both optional), made by the dense engine's optimizer.
fn fused_conv(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    conv(ctx)
}

/// FusedConv on channels-last data: X `[N, H, W, C]`, W `[M, C/group, kh, kw]` (ONNX's),
/// Y `[N, OH, OW, M]`; made by the dense engine's channels-last regions.
fn fused_conv_nhwc(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(x), Some(w)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    if x.len() != 4 || w.len() != 4 {
        bail!(
            "X {} and W {} must both have rank 4 (2-D, channels last)",
            fmt_dims(x),
            fmt_dims(w)
        );
    }
    let group = ctx.attr_int_opt("group")?.unwrap_or(1);
    if group <= 0 {
        bail!("group {group} must be positive");
    }
    // The input's channels: X's and those of the further parts of the input prologue's
    // concatenation (inputs 6…, each `[N, H, W, Cᵢ]`); -1 when one is unknown.
    let mut channels = x[3];
    for i in 6..ctx.input_count() {
        match ctx.opt_input(i).and_then(|t| t.dims()) {
            Some(p) if p.len() == 4 && p[..3] == x[..3] => {
                channels = if channels < 0 || p[3] < 0 {
                    -1
                } else {
                    channels + p[3]
                };
            }
            Some(p) if p.len() == 4 && p[..3].iter().chain(&x[..3]).any(|&v| v < 0) => {
                channels = -1;
            }
            Some(p) => bail!(
                "input {i}, a part of the input's channels, is {} where X is {}",
                fmt_dims(p),
                fmt_dims(x)
            ),
            None => channels = -1,
        }
    }
    if channels >= 0 && w[1] >= 0 && channels != w[1].saturating_mul(group) {
        bail!(
            "X has {channels} channels but W {} expects {} (group {group})",
            fmt_dims(w),
            w[1].saturating_mul(group)
        );
    }
    let kernel: Vec<i64> = match ctx.attr_ints("kernel_shape")? {
        Some(k) => k.to_vec(),
        None => w[2..].to_vec(),
    };
    // The input prologue's scale and shift: both or neither, one value per input channel.
    let (s, h) = (ctx.opt_input(4), ctx.opt_input(5));
    if s.is_some() != h.is_some() {
        bail!("the input prologue needs both S and H, or neither");
    }
    for (name, t) in [("S", s), ("H", h)] {
        if let Some(d) = t.and_then(|t| t.dims()) {
            let known = channels >= 0 && d.iter().all(|&v| v >= 0);
            if known && d.iter().product::<i64>() != channels {
                bail!(
                    "{name} {} must hold one value per input channel ({channels})",
                    fmt_dims(d)
                );
            }
        }
    }
    let sp = window_out(ctx, &x[1..3], &kernel, false, false)?;
    let out = [x[0], sp[0], sp[1], w[0]];
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

/// MaxPool or AveragePool on channels-last data: X `[N, H, W, C]`, Y `[N, OH, OW, C]`; made by
/// the dense engine's channels-last regions.
fn pool_nhwc(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(x) = dims_or_unknown(ctx, 0, dt)? else {
        return Ok(());
    };
    if x.len() != 4 {
        bail!(
            "X must have rank 4 (2-D, channels last), got {}",
            fmt_dims(x)
        );
    }
    let Some(kernel) = ctx.attr_ints("kernel_shape")? else {
        bail!("required attribute `kernel_shape` is missing");
    };
    let ceil_mode = ctx.attr_int_opt("ceil_mode")?.unwrap_or(0) != 0;
    let sp = window_out(ctx, &x[1..3], kernel, ceil_mode, true)?;
    ctx.set_output_dims(0, dt, &[x[0], sp[0], sp[1], x[3]]);
    Ok(())
}

/// The attributes of the channels-last pools (ONNX's, `count_include_pad` read by the average).
pub const POOL_NHWC_ATTRS: &str = "auto_pad:string=NOTSET, ceil_mode:int=0, count_include_pad:int=0, dilations:ints, kernel_shape:ints!, pads:ints, strides:ints";

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    for name in ["MaxPoolNhwc", "AveragePoolNhwc"] {
        b.register(
            crate::proto::OpProto::new(RGE_DOMAIN, name, 1)
                .sig("X:T -> Y:T")
                .attrs(POOL_NHWC_ATTRS)
                .tc("T", FLOATS)
                .infer(pool_nhwc)
                .format(FormatRule::Spatial),
        )?;
    }
    b.register(
        crate::proto::OpProto::new(RGE_DOMAIN, "FusedConvNhwc", 1)
            .sig("X:T, W:T, B?:T, Z?:T, S?:T, H?:T, Xs*:T -> Y:T")
            .attrs(CONV_ATTRS)
            .attrs(EPILOGUE_ATTRS)
            // The input prologue: the input as the channels of X and the Xs, then
            // `act(X·S + H)` per channel (S and H `[C]`).
            .attrs("input_activation:string=, input_activation_params:floats")
            // The dense engine's choice of Winograd F(2x2, 3x3) for the node.
            .attrs("winograd:int=0")
            // The channels-last pass's mark of a pointwise convolution of a small image (the
            // dense kernel's choice of the GEMM).
            .attrs("few_pixels:int=0")
            .tc("T", FLOATS)
            .infer(fused_conv_nhwc)
            .format(FormatRule::Spatial),
    )?;
    b.register(
        crate::proto::OpProto::new(RGE_DOMAIN, "FusedConv", 1)
            .sig("X:T, W:T, B?:T, Z?:T -> Y:T")
            .attrs(CONV_ATTRS)
            .attrs(EPILOGUE_ATTRS)
            .tc("T", FLOATS)
            .infer(fused_conv)
            .format(FormatRule::Spatial),
    )?;
    for v in [1, 11, 22] {
        b.register(
            op("Conv", v)
                .sig("X:T, W:T, B?:T -> Y:T")
                .attrs(CONV_ATTRS)
                .tc("T", FLOATS)
                .infer(conv)
                .format(FormatRule::Spatial),
        )?;
        b.register(
            op("ConvTranspose", v)
                .sig("X:T, W:T, B?:T -> Y:T")
                .attrs(CONV_ATTRS)
                .attrs("output_padding:ints, output_shape:ints")
                .tc("T", FLOATS)
                .infer(conv_transpose)
                .format(FormatRule::Spatial),
        )?;
    }
    b.register(
        op("ConvInteger", 10)
            .sig("x:T1, w:T2, x_zero_point?:T1, w_zero_point?:T2 -> y:T3")
            .attrs(CONV_ATTRS)
            .tc("T1", INTS)
            .tc("T2", INTS)
            .tc("T3", &[DataType::Int32])
            .infer(conv_integer)
            .format(FormatRule::Spatial),
    )?;
    b.register(
        op("QLinearConv", 10)
            .sig("x:T1, x_scale:F, x_zero_point:T1, w:T2, w_scale:F, w_zero_point:T2, y_scale:F, y_zero_point:T3, B?:T4 -> y:T3")
            .attrs(CONV_ATTRS)
            .tc("T1", QUANT)
            .tc("T2", QUANT)
            .tc("T3", QUANT)
            .tc("T4", &[DataType::Int32])
            .tc("F", FLOATS)
            .infer(qlinear_conv)
            .format(FormatRule::Spatial),
    )?;
    for v in [19, 22] {
        b.register(
            op("DeformConv", v)
                .sig("X:T, W:T, offset:T, B?:T, mask?:T -> Y:T")
                .attrs("dilations:ints, group:int=1, kernel_shape:ints, offset_group:int=1, pads:ints, strides:ints")
                .tc("T", FLOATS)
                .infer(conv)
                .format(FormatRule::Spatial),
        )?;
    }
    for v in [8, 10, 11, 12, 22] {
        // `ceil_mode` and `dilations` from 10 on.
        let since_10 = if v >= 10 {
            "ceil_mode:int=0, dilations:ints, "
        } else {
            ""
        };
        b.register(
            op("MaxPool", v)
                .sig("X:T -> Y:T, Indices?:I")
                .attrs(&format!("auto_pad:string=NOTSET, {since_10}kernel_shape:ints!, pads:ints, storage_order:int=0, strides:ints"))
                .tc("T", NUMERIC)
                .tc("I", INT64)
                .infer(pool)
                .format(FormatRule::Spatial),
        )?;
    }
    for v in [7, 10, 11, 19, 22] {
        // `ceil_mode` from 10 on, `dilations` from 19 on.
        let ceil = if v >= 10 { "ceil_mode:int=0, " } else { "" };
        let dilations = if v >= 19 { "dilations:ints, " } else { "" };
        b.register(
            op("AveragePool", v)
                .sig("X:T -> Y:T")
                .attrs(&format!("auto_pad:string=NOTSET, {ceil}count_include_pad:int=0, {dilations}kernel_shape:ints!, pads:ints, strides:ints"))
                .tc("T", FLOATS)
                .infer(pool)
                .format(FormatRule::Spatial),
        )?;
    }
    for v in [11, 18, 22] {
        // `ceil_mode` and `dilations` from 18 on.
        let since_18 = if v >= 18 {
            "ceil_mode:int=0, dilations:ints, "
        } else {
            ""
        };
        b.register(
            op("LpPool", v)
                .sig("X:T -> Y:T")
                .attrs(&format!("auto_pad:string=NOTSET, {since_18}kernel_shape:ints!, p:int=2, pads:ints, strides:ints"))
                .tc("T", FLOATS)
                .infer(pool)
                .format(FormatRule::Spatial),
        )?;
    }
    for name in ["GlobalAveragePool", "GlobalMaxPool"] {
        for v in [1, 22] {
            b.register(
                op(name, v)
                    .sig("X:T -> Y:T")
                    .tc("T", FLOATS)
                    .infer(global_pool)
                    .format(FormatRule::Spatial),
            )?;
        }
    }
    for v in [2, 22] {
        b.register(
            op("GlobalLpPool", v)
                .sig("X:T -> Y:T")
                .attrs("p:int=2")
                .tc("T", FLOATS)
                .infer(global_pool)
                .format(FormatRule::Spatial),
        )?;
    }
    for v in [9, 11, 22] {
        b.register(
            op("MaxUnpool", v)
                .sig("X:T1, I:T2, output_shape?:T2 -> output:T1")
                .attrs("kernel_shape:ints!, pads:ints, strides:ints")
                .tc("T1", NUMERIC)
                .tc("T2", INT64)
                .infer(max_unpool)
                .format(FormatRule::Spatial),
        )?;
    }
    b.register(
        op("Col2Im", 18)
            .sig("input:T, image_shape:I, block_shape:I -> output:T")
            .attrs("dilations:ints, pads:ints, strides:ints")
            .tc("T", ALL)
            .tc("I", INT64)
            .infer(col2im)
            .format(FormatRule::Spatial),
    )?;
    for v in [10, 16, 22] {
        b.register(
            op("RoiAlign", v)
                .sig("X:T1, rois:T1, batch_indices:T2 -> Y:T1")
                // `coordinate_transformation_mode` from 16 on (10 has no half-pixel offset).
                .attrs(&format!("{}mode:string=avg, output_height:int=1, output_width:int=1, sampling_ratio:int=0, spatial_scale:float=1.0", if v >= 16 { "coordinate_transformation_mode:string=half_pixel, " } else { "" }))
                .tc("T1", FLOATS)
                .tc("T2", INT64)
                .infer(roi_align)
                .format(FormatRule::Spatial),
        )?;
    }
    for v in [1, 22] {
        b.register(
            op("MaxRoiPool", v)
                .sig("X:T, rois:T -> Y:T")
                .attrs("pooled_shape:ints!, spatial_scale:float=1.0")
                .tc("T", FLOATS)
                .infer(max_roi_pool)
                .format(FormatRule::Spatial),
        )?;
    }
    Ok(())
}
