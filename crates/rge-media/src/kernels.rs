//! The media engine's kernels. Every error is a `KernelError`, which the runtime reports with
//! the node's name and op type.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef};

use crate::color::{self, ColorFormat};
use crate::decode::{check_size, decode, Channels};
use crate::resize::{self, Geometry, Method};

fn err(e: impl std::fmt::Display) -> KernelError {
    KernelError::invalid(e.to_string())
}

// ---- decode ----

/// ONNX ImageDecoder (RGB, BGR, Grayscale) and GE's DecodeImage (channels 0/3 RGB, 1 gray).
pub struct Decoder {
    channels: Channels,
    bgr: bool,
}

pub fn create_image_decoder(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let (channels, bgr) = match init.str_or("pixel_format", "RGB")? {
        "RGB" => (Channels::Rgb, false),
        "BGR" => (Channels::Rgb, true),
        "Grayscale" => (Channels::Gray, false),
        other => {
            return Err(KernelError::attr(
                "pixel_format",
                format!("unknown pixel format `{other}` (RGB, BGR, Grayscale)"),
            ))
        }
    };
    Ok(Box::new(Decoder { channels, bgr }))
}

pub fn create_decode_image(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let channels = match init.int_or("channels", 0)? {
        0 | 3 => Channels::Rgb,
        1 => Channels::Gray,
        c => {
            return Err(KernelError::attr(
                "channels",
                format!("{c}: must be 0, 1 or 3"),
            ))
        }
    };
    Ok(Box::new(Decoder {
        channels,
        bgr: false,
    }))
}

impl Kernel for Decoder {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let mut pic = decode(x.as_slice::<u8>()?, self.channels).map_err(err)?;
        if self.bgr {
            pic.data.chunks_exact_mut(3).for_each(|p| p.swap(0, 2));
        }
        let out = ctx.output::<u8>(0, &[pic.height, pic.width, pic.channels])?;
        out.copy_from_slice(&pic.data);
        Ok(())
    }
}

// ---- images as f32 ----

/// [H, W, C] or [N, H, W, C] as (geometry, f32 samples).
fn image_f32(t: &TensorRef<'_>) -> KernelResult<(Geometry, Vec<f32>)> {
    let g = match *t.shape() {
        [h, w, c] => Geometry { n: 1, h, w, c },
        [n, h, w, c] => Geometry { n, h, w, c },
        ref s => {
            return Err(err(format!(
                "images must be [H, W, C] or [N, H, W, C], got {s:?}"
            )))
        }
    };
    if g.h == 0 || g.w == 0 {
        return Err(err(format!("an empty image ({}x{})", g.h, g.w)));
    }
    let v = match t.dtype() {
        DType::Uint8 => t.as_slice::<u8>()?.iter().map(|&b| f32::from(b)).collect(),
        DType::Float => t.as_slice::<f32>()?.to_vec(),
        _ => t.to_f64_vec()?.into_iter().map(|v| v as f32).collect(),
    };
    Ok((g, v))
}

/// Writes f32 samples as `dtype` (u8 rounded and saturated).
fn put(ctx: &mut KernelCtx<'_>, dtype: DType, shape: &[usize], v: &[f32]) -> KernelResult<()> {
    match dtype {
        DType::Uint8 => {
            let o = ctx.output::<u8>(0, shape)?;
            for (o, &x) in o.iter_mut().zip(v) {
                *o = x.round().clamp(0.0, 255.0) as u8;
            }
        }
        DType::Float => ctx.output::<f32>(0, shape)?.copy_from_slice(v),
        other => return Err(KernelError::unsupported(format!("{other} images"))),
    }
    Ok(())
}

fn shape_of(rank: usize, g: Geometry, h: usize, w: usize) -> Vec<usize> {
    if rank == 3 {
        vec![h, w, g.c]
    } else {
        vec![g.n, h, w, g.c]
    }
}

// ---- resize ----

pub struct Resize {
    method: Method,
    align: bool,
    half: bool,
}

fn create_resize(init: &KernelInit<'_>, method: Method) -> KernelResult<Box<dyn Kernel>> {
    let align = init.int_or("align_corners", 0)? != 0;
    let half = init.int_or("half_pixel_centers", 0)? != 0;
    if align && half {
        return Err(KernelError::attr(
            "half_pixel_centers",
            "cannot be set together with align_corners",
        ));
    }
    if half && method == Method::Area {
        // TF's (and GE's) ResizeArea has no such attribute: refused, never ignored.
        return Err(KernelError::attr(
            "half_pixel_centers",
            "ResizeArea has no half-pixel rule (align_corners only)",
        ));
    }
    Ok(Box::new(Resize {
        method,
        align,
        half,
    }))
}

pub fn create_resize_bilinear(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_resize(init, Method::Bilinear)
}
pub fn create_resize_nearest(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_resize(init, Method::Nearest)
}
pub fn create_resize_area(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_resize(init, Method::Area)
}

/// The most output elements a resize or crop-and-resize may make.
const MAX_OUTPUT: usize = 1 << 28;

fn size_pair(t: &TensorRef<'_>, what: &str) -> KernelResult<(usize, usize)> {
    match t.to_i64_vec()?.as_slice() {
        [h, w] if *h > 0 && *w > 0 => Ok((*h as usize, *w as usize)),
        s => Err(err(format!(
            "{what} must be two positive values, got {s:?}"
        ))),
    }
}

impl Kernel for Resize {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (g, v) = image_f32(&x)?;
        let (oh, ow) = size_pair(&ctx.input(1)?, "size")?;
        check_size(oh as u64, ow as u64).map_err(err)?;
        let n_out = g.n * oh * ow * g.c;
        if n_out > MAX_OUTPUT {
            return Err(err(format!("{n_out} output values is over the limit")));
        }
        let mut d = vec![0.0f32; n_out];
        resize::resize(&v, g, oh, ow, self.method, self.align, self.half, &mut d);
        let dtype = if self.method == Method::Nearest {
            x.dtype()
        } else {
            DType::Float
        };
        put(ctx, dtype, &shape_of(x.shape().len(), g, oh, ow), &d)
    }
}

// ---- crops ----

pub struct Crop {
    y: usize,
    x: usize,
    h: usize,
    w: usize,
}

pub fn create_crop_image(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let pair = |name: &str, min: i64| -> KernelResult<(usize, usize)> {
        match init.ints_opt(name)? {
            Some([a, b]) if *a >= min && *b >= min => Ok((*a as usize, *b as usize)),
            Some(v) => Err(KernelError::attr(
                name,
                format!("{v:?}: two values ≥ {min}"),
            )),
            None => Err(KernelError::attr(name, "required but missing")),
        }
    };
    let (y, x) = pair("offsets", 0)?;
    let (h, w) = pair("size", 1)?;
    Ok(Box::new(Crop { y, x, h, w }))
}

impl Kernel for Crop {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let t = ctx.input(0)?;
        let (g, v) = image_f32(&t)?;
        if self.y + self.h > g.h || self.x + self.w > g.w {
            return Err(err(format!(
                "the crop box rows {}..{}, columns {}..{} is outside the {}x{} image",
                self.y,
                self.y + self.h,
                self.x,
                self.x + self.w,
                g.h,
                g.w
            )));
        }
        let mut d = Vec::with_capacity(g.n * self.h * self.w * g.c);
        for b in 0..g.n {
            for r in self.y..self.y + self.h {
                let row = ((b * g.h + r) * g.w + self.x) * g.c;
                d.extend_from_slice(&v[row..row + self.w * g.c]);
            }
        }
        put(
            ctx,
            t.dtype(),
            &shape_of(t.shape().len(), g, self.h, self.w),
            &d,
        )
    }
}

/// TF's CropAndResize: boxes [n, 4] of normalized (y1, x1, y2, x2), box_index [n], crop_size
/// [h, w] → [n, h, w, C] f32; samples outside the image are `extrapolation_value`.
pub struct CropAndResize {
    nearest: bool,
    extrapolation: f32,
}

pub fn create_crop_and_resize(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let nearest = match init.str_or("method", "bilinear")? {
        "bilinear" => false,
        "nearest" => true,
        m => {
            return Err(KernelError::attr(
                "method",
                format!("`{m}`: bilinear or nearest"),
            ))
        }
    };
    Ok(Box::new(CropAndResize {
        nearest,
        extrapolation: init.float_or("extrapolation_value", 0.0)?,
    }))
}

impl Kernel for CropAndResize {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let t = ctx.input(0)?;
        if t.shape().len() != 4 {
            return Err(err(format!(
                "image must be [N, H, W, C], got {:?}",
                t.shape()
            )));
        }
        let (g, v) = image_f32(&t)?;
        let boxes = ctx.input(1)?.to_f64_vec()?;
        let idx = ctx.input(2)?.to_i64_vec()?;
        let (ch, cw) = size_pair(&ctx.input(3)?, "crop_size")?;
        let nb = idx.len();
        if boxes.len() != nb * 4 {
            return Err(err(format!(
                "{} box values for {nb} box indices",
                boxes.len()
            )));
        }
        let n_out = nb * ch * cw * g.c;
        if n_out > MAX_OUTPUT {
            return Err(err(format!("{n_out} output values is over the limit")));
        }
        let mut d = Vec::with_capacity(n_out);
        let at = |b: usize, y: usize, x: usize, c: usize| v[((b * g.h + y) * g.w + x) * g.c + c];
        for (k, bx) in boxes.chunks_exact(4).enumerate() {
            let b = usize::try_from(idx[k])
                .ok()
                .filter(|&b| b < g.n)
                .ok_or_else(|| {
                    err(format!(
                        "box {k}: index {} outside the batch of {}",
                        idx[k], g.n
                    ))
                })?;
            let (y1, x1, y2, x2) = (bx[0], bx[1], bx[2], bx[3]);
            let (hm, wm) = ((g.h - 1) as f64, (g.w - 1) as f64);
            let coord = |i: usize, n: usize, a: f64, z: f64, m: f64| {
                if n > 1 {
                    a * m + i as f64 * (z - a) * m / (n - 1) as f64
                } else {
                    0.5 * (a + z) * m
                }
            };
            for i in 0..ch {
                let yy = coord(i, ch, y1, y2, hm);
                for j in 0..cw {
                    let xx = coord(j, cw, x1, x2, wm);
                    if yy < 0.0 || yy > hm || xx < 0.0 || xx > wm {
                        d.extend(std::iter::repeat_n(self.extrapolation, g.c));
                        continue;
                    }
                    for c in 0..g.c {
                        d.push(if self.nearest {
                            at(b, yy.round() as usize, xx.round() as usize, c)
                        } else {
                            let (y0, x0) = (yy.floor() as usize, xx.floor() as usize);
                            let (y1, x1) = (yy.ceil() as usize, xx.ceil() as usize);
                            let (fy, fx) = ((yy - yy.floor()) as f32, (xx - xx.floor()) as f32);
                            let top = at(b, y0, x0, c) + (at(b, y0, x1, c) - at(b, y0, x0, c)) * fx;
                            let bot = at(b, y1, x0, c) + (at(b, y1, x1, c) - at(b, y1, x0, c)) * fx;
                            top + (bot - top) * fy
                        });
                    }
                }
            }
        }
        put(ctx, DType::Float, &[nb, ch, cw, g.c], &d)
    }
}

// ---- colour ----

pub struct Convert {
    src: ColorFormat,
    dst: ColorFormat,
}

pub fn create_convert_color(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let f = |name: &str| -> KernelResult<ColorFormat> {
        let s = init.str_or(name, "")?;
        ColorFormat::parse(s).ok_or_else(|| {
            KernelError::attr(name, format!("`{s}`: one of RGB, BGR, GRAY, NV12, NV21"))
        })
    };
    Ok(Box::new(Convert {
        src: f("src_format")?,
        dst: f("dst_format")?,
    }))
}

impl Kernel for Convert {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let t = ctx.input(0)?;
        let s = t.shape().to_vec();
        let (h, w) = match (self.src.is_yuv(), s.as_slice()) {
            (true, [hh, w] | [hh, w, 1]) if hh % 3 == 0 => (hh / 3 * 2, *w),
            (false, [h, w, c]) if *c == if self.src == ColorFormat::Gray { 1 } else { 3 } => {
                (*h, *w)
            }
            _ => {
                return Err(err(format!(
                    "shape {s:?} does not hold a {:?} image",
                    self.src
                )))
            }
        };
        if (self.src.is_yuv() || self.dst.is_yuv()) && (h % 2 != 0 || w % 2 != 0) {
            return Err(err(format!(
                "YUV420SP needs an even width and height, got {h}x{w}"
            )));
        }
        let rgb = color::to_rgb(t.as_slice::<u8>()?, self.src, h, w);
        let out = color::from_rgb(&rgb, self.dst, h, w);
        let shape = match self.dst {
            ColorFormat::Nv12 | ColorFormat::Nv21 => vec![h * 3 / 2, w, 1],
            ColorFormat::Gray => vec![h, w, 1],
            _ => vec![h, w, 3],
        };
        ctx.output::<u8>(0, &shape)?.copy_from_slice(&out);
        Ok(())
    }
}

// ---- normalize ----

/// `y = (x · scale − mean[c]) / std[c]` as f32, NCHW (a batch dim added for [H, W, C]) or
/// NHWC.
pub struct Normalize {
    mean: Vec<f32>,
    std: Vec<f32>,
    scale: f32,
    nchw: bool,
}

pub fn create_normalize_image(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let mean = init
        .floats_opt("mean")?
        .ok_or_else(|| KernelError::attr("mean", "required"))?;
    let std = init
        .floats_opt("std")?
        .ok_or_else(|| KernelError::attr("std", "required"))?;
    if mean.len() != std.len() {
        return Err(KernelError::attr(
            "std",
            format!("{} values for {} means", std.len(), mean.len()),
        ));
    }
    if std.iter().any(|&s| s == 0.0 || !s.is_finite()) {
        return Err(KernelError::attr(
            "std",
            format!("{std:?}: must be finite and non-zero"),
        ));
    }
    let nchw = match init.str_or("layout", "NCHW")? {
        "NCHW" => true,
        "NHWC" => false,
        l => return Err(KernelError::attr("layout", format!("`{l}`: NCHW or NHWC"))),
    };
    Ok(Box::new(Normalize {
        mean: mean.to_vec(),
        std: std.to_vec(),
        scale: init.float_or("scale", 1.0)?,
        nchw,
    }))
}

impl Kernel for Normalize {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (g, v) = image_f32(&ctx.input(0)?)?;
        if g.c != self.mean.len() {
            return Err(err(format!(
                "{} channels, {} mean/std values",
                g.c,
                self.mean.len()
            )));
        }
        let shape = if self.nchw {
            [g.n, g.c, g.h, g.w]
        } else {
            [g.n, g.h, g.w, g.c]
        };
        let o = ctx.output::<f32>(0, &shape)?;
        let hw = g.h * g.w;
        for b in 0..g.n {
            for p in 0..hw {
                for c in 0..g.c {
                    let x = v[(b * hw + p) * g.c + c];
                    let y = (x * self.scale - self.mean[c]) / self.std[c];
                    let k = if self.nchw {
                        (b * g.c + c) * hw + p
                    } else {
                        (b * hw + p) * g.c + c
                    };
                    o[k] = y;
                }
            }
        }
        Ok(())
    }
}
