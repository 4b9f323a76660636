//! Image ops of the `media` engine (the seed's DVPP), GE/TF-style: DecodeImage, the resizes
//! (ResizeBilinearV2, ResizeNearestNeighborV2, ResizeArea: `images` [N,H,W,C] or [H,W,C],
//! `size` int32 [2]), CropAndResize (TF's boxes), and rge's CropImage, ConvertColor and
//! NormalizeImage (no GE counterpart with these semantics; see docs/media-engine.md).

use rge_ir::DataType;

use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::FormatRule;
use crate::registry::OpRegistryBuilder;

/// Colour formats ConvertColor knows, with their channel count (NV12/NV21: one plane).
fn color_channels(f: &str) -> OpResult<i64> {
    Ok(match f {
        "RGB" | "BGR" => 3,
        "GRAY" | "NV12" | "NV21" => 1,
        other => bail!("unknown colour format `{other}` (RGB, BGR, GRAY, NV12, NV21)"),
    })
}

fn decode_image(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let c = match ctx.attr_int("channels")? {
        0 | 3 => 3,
        1 => 1,
        c => bail!("channels must be 0, 1 or 3, got {c}"),
    };
    ctx.set_output_dims(0, DataType::Uint8, &[-1, -1, c]);
    Ok(())
}

/// [.., H, W, C] images: the rank (3 or 4) checked.
fn image_dims<'a>(ctx: &mut InferCtx<'a>, i: usize) -> OpResult<Option<&'a [i64]>> {
    match ctx.input(i)?.dims() {
        Some(d) if d.len() == 3 || d.len() == 4 => Ok(Some(d)),
        Some(d) => bail!(
            "images must be [H, W, C] or [N, H, W, C], got shape {}",
            fmt_dims(d)
        ),
        None => Ok(None),
    }
}

/// The resizes: `size` = [new_height, new_width]; bilinear and area give float32, nearest
/// keeps the type.
fn resize(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = if ctx.op_type() == "ResizeNearestNeighborV2" {
        ctx.input(0)?.dtype
    } else {
        DataType::Float
    };
    let size = input_ints(ctx, 1, "size")?;
    if let Some(s) = &size {
        if s.len() != 2 || s.iter().any(|&v| v <= 0) {
            bail!("size must be two positive values [height, width], got {s:?}");
        }
    }
    let Some(d) = image_dims(ctx, 0)? else {
        return all_unknown(ctx, dt);
    };
    let (h, w) = size.map_or((-1, -1), |s| (s[0], s[1]));
    let mut out = d.to_vec();
    let r = out.len();
    out[r - 3] = h;
    out[r - 2] = w;
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn crop_image(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let size = ctx.attr_ints("size")?.unwrap_or(&[]).to_vec();
    let offsets = ctx.attr_ints("offsets")?.unwrap_or(&[]).to_vec();
    if size.len() != 2 || size.iter().any(|&v| v <= 0) {
        bail!("size must be two positive values [height, width], got {size:?}");
    }
    if offsets.len() != 2 || offsets.iter().any(|&v| v < 0) {
        bail!("offsets must be two values [y, x] ≥ 0, got {offsets:?}");
    }
    let Some(d) = image_dims(ctx, 0)? else {
        return all_unknown(ctx, dt);
    };
    let r = d.len();
    for (k, what) in [(0, "height"), (1, "width")] {
        let dim = d[r - 3 + k];
        if dim >= 0 && offsets[k] + size[k] > dim {
            bail!(
                "the crop box {what} {}..{} is outside the image's {what} {dim}",
                offsets[k],
                offsets[k] + size[k]
            );
        }
    }
    let mut out = d.to_vec();
    out[r - 3] = size[0];
    out[r - 2] = size[1];
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn crop_and_resize(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let n = match ctx.input(1)?.dims() {
        Some([n, 4]) => *n,
        Some(d) => bail!("boxes must be [num_boxes, 4], got shape {}", fmt_dims(d)),
        None => -1,
    };
    let size = input_ints(ctx, 3, "crop_size")?;
    let (h, w) = match size.as_deref() {
        Some([h, w]) if *h > 0 && *w > 0 => (*h, *w),
        Some(s) => bail!("crop_size must be two positive values, got {s:?}"),
        None => (-1, -1),
    };
    let c = match ctx.input(0)?.dims() {
        Some([_, _, _, c]) => *c,
        Some(d) => bail!("image must be [N, H, W, C], got shape {}", fmt_dims(d)),
        None => -1,
    };
    match ctx.attr_str("method")? {
        "bilinear" | "nearest" => {}
        m => bail!("method must be bilinear or nearest, got `{m}`"),
    }
    ctx.set_output_dims(0, DataType::Float, &[n, h, w, c]);
    Ok(())
}

fn convert_color(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let src = ctx.attr_str("src_format")?;
    let dst = ctx.attr_str("dst_format")?;
    color_channels(src)?;
    let cd = color_channels(dst)?;
    let yuv = |f: &str| f == "NV12" || f == "NV21";
    let Some(d) = ctx.input(0)?.dims() else {
        return all_unknown(ctx, DataType::Uint8);
    };
    // Image height/width of the input; a YUV420SP plane is [H·3/2, W] (or [H·3/2, W, 1]).
    let (h, w) = match (yuv(src), d) {
        (true, [hh, w] | [hh, w, 1]) => (if *hh >= 0 { hh * 2 / 3 } else { -1 }, *w),
        (false, [h, w, _]) => (*h, *w),
        (_, d) => bail!("input of shape {} does not hold a {src} image", fmt_dims(d)),
    };
    let out = if yuv(dst) {
        vec![if h >= 0 { h * 3 / 2 } else { -1 }, w, 1]
    } else {
        vec![h, w, cd]
    };
    ctx.set_output_dims(0, DataType::Uint8, &out);
    Ok(())
}

fn normalize_image(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let mean = ctx.attr_floats("mean")?.unwrap_or(&[]).len();
    let std = ctx.attr_floats("std")?.unwrap_or(&[]).len();
    let layout = ctx.attr_str("layout")?;
    if layout != "NCHW" && layout != "NHWC" {
        bail!("layout must be NCHW or NHWC, got `{layout}`");
    }
    let Some(d) = image_dims(ctx, 0)? else {
        return all_unknown(ctx, DataType::Float);
    };
    let c = d[d.len() - 1];
    if c >= 0 && (mean != c as usize || std != c as usize) {
        bail!("mean and std need {c} values (one per channel), got {mean} and {std}");
    }
    let (n, h, w) = if d.len() == 4 {
        (d[0], d[1], d[2])
    } else {
        (1, d[0], d[1])
    };
    let out = if layout == "NCHW" {
        [n, c, h, w]
    } else {
        [n, h, w, c]
    };
    ctx.set_output_dims(0, DataType::Float, &out);
    Ok(())
}

pub(crate) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    let images: Vec<DataType> = [&[DataType::Uint8][..], FLOATS].concat();
    b.register(
        op("DecodeImage", 1)
            .sig("contents:T1 -> image:T2")
            .attrs("channels:int=0")
            .tc("T1", &[DataType::Uint8])
            .tc("T2", &[DataType::Uint8])
            .infer(decode_image)
            .format(FormatRule::Nd),
    )?;
    for name in ["ResizeBilinearV2", "ResizeNearestNeighborV2", "ResizeArea"] {
        b.register(
            op(name, 1)
                .sig("images:T, size:S -> y:U")
                .attrs("align_corners:int=0, half_pixel_centers:int=0")
                .tc("T", &images)
                .tc("S", &[DataType::Int32, DataType::Int64])
                .tc("U", &images)
                .infer(resize)
                .format(FormatRule::Nd),
        )?;
    }
    b.register(
        op("CropAndResize", 1)
            .sig("image:T, boxes:F, box_index:S, crop_size:S -> crops:F")
            .attrs("method:string=bilinear, extrapolation_value:float=0.0")
            .tc("T", &images)
            .tc("F", FLOAT32)
            .tc("S", &[DataType::Int32, DataType::Int64])
            .infer(crop_and_resize)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("CropImage", 1)
            .sig("images:T -> y:T")
            .attrs("offsets:ints!, size:ints!")
            .tc("T", &images)
            .infer(crop_image)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("ConvertColor", 1)
            .sig("x:T -> y:T")
            .attrs("src_format:string!, dst_format:string!")
            .tc("T", &[DataType::Uint8])
            .infer(convert_color)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("NormalizeImage", 1)
            .sig("images:T -> y:F")
            .attrs("mean:floats!, std:floats!, scale:float=1.0, layout:string=NCHW")
            .tc("T", &images)
            .tc("F", FLOAT32)
            .infer(normalize_image)
            .format(FormatRule::Nd),
    )?;
    Ok(())
}
