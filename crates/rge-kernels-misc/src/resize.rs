//! Resize (opsets 10–19) and Upsample (7, 9): separable interpolation, one axis at a time in
//! double precision, as the ONNX reference computes it. Each output position along an axis
//! maps to a source coordinate (the coordinate transformation mode), whose fractional part
//! picks a window of neighbours and their weights (nearest, linear, cubic, with or without an
//! antialiasing filter); neighbours outside the input repeat the edge.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::util::{normalize_axes, put_f64};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Nearest,
    Linear,
    Cubic,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Coord {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfHalfPixelForNn,
    TfCropAndResize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Nearest {
    RoundPreferFloor,
    RoundPreferCeil,
    Floor,
    Ceil,
    /// Opset < 11 (and Upsample): truncate when upsampling, ceil when downsampling.
    Simple,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Policy {
    Stretch,
    NotLarger,
    NotSmaller,
}

/// The interpolation settings shared by Resize and Upsample.
#[derive(Debug, Clone)]
struct Interp {
    mode: Mode,
    coord: Coord,
    nearest: Nearest,
    cubic_a: f64,
    exclude_outside: bool,
    extrapolation: f64,
    antialias: bool,
}

/// A Resize node's attributes, parsed once: what [`ResizeSpec::plan`] needs to map each
/// output position to its source taps (the gpu engine plans with it too).
#[derive(Debug, Clone)]
pub struct ResizeSpec {
    opset: i64,
    interp: Interp,
    axes: Option<Vec<i64>>,
    policy: Policy,
}

/// The cpu kernel: the plan's passes in f64.
struct Resize(ResizeSpec);

/// One axis of a resize: each output position reads `taps` input positions along `axis`
/// (clamped to the input) with their weights, or is the extrapolation value.
#[derive(Debug, Clone)]
pub struct AxisPass {
    pub axis: usize,
    pub out_len: usize,
    pub taps: usize,
    /// `out_len × taps` input positions.
    pub index: Vec<usize>,
    /// `out_len × taps` weights.
    pub weight: Vec<f64>,
    /// Output positions outside the crop (tf_crop_and_resize): the extrapolation value.
    pub extrapolate: Vec<bool>,
}

/// A resize as separable passes, one per axis that changes, in order.
#[derive(Debug, Clone)]
pub struct ResizePlan {
    pub out_shape: Vec<usize>,
    pub passes: Vec<AxisPass>,
    pub extrapolation: f64,
}

fn parse_mode(s: &str) -> KernelResult<Mode> {
    Ok(match s {
        "nearest" => Mode::Nearest,
        "linear" | "bilinear" | "trilinear" => Mode::Linear,
        "cubic" | "bicubic" => Mode::Cubic,
        other => return Err(KernelError::attr("mode", format!("unknown mode '{other}'"))),
    })
}

pub(crate) fn create_resize(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Resize(ResizeSpec::from_init(init)?)))
}

impl ResizeSpec {
    /// Parses a Resize node's attributes (opsets 10–19).
    pub fn from_init(init: &KernelInit<'_>) -> KernelResult<ResizeSpec> {
        let opset = init.opset;
        let mode = parse_mode(init.str_or("mode", "nearest")?)?;
        let (coord, nearest) = if opset < 11 {
            (Coord::Asymmetric, Nearest::Simple)
        } else {
            let coord = match init.str_or("coordinate_transformation_mode", "half_pixel")? {
                "half_pixel" => Coord::HalfPixel,
                "half_pixel_symmetric" => Coord::HalfPixelSymmetric,
                "pytorch_half_pixel" => Coord::PytorchHalfPixel,
                "align_corners" => Coord::AlignCorners,
                "asymmetric" => Coord::Asymmetric,
                "tf_half_pixel_for_nn" => Coord::TfHalfPixelForNn,
                "tf_crop_and_resize" => Coord::TfCropAndResize,
                other => {
                    return Err(KernelError::attr(
                        "coordinate_transformation_mode",
                        format!("unknown mode '{other}'"),
                    ))
                }
            };
            let nearest = match init.str_or("nearest_mode", "round_prefer_floor")? {
                "round_prefer_floor" => Nearest::RoundPreferFloor,
                "round_prefer_ceil" => Nearest::RoundPreferCeil,
                "floor" => Nearest::Floor,
                "ceil" => Nearest::Ceil,
                other => {
                    return Err(KernelError::attr(
                        "nearest_mode",
                        format!("unknown mode '{other}'"),
                    ))
                }
            };
            (coord, nearest)
        };
        let policy = match init.str_or("keep_aspect_ratio_policy", "stretch")? {
            "stretch" => Policy::Stretch,
            "not_larger" => Policy::NotLarger,
            "not_smaller" => Policy::NotSmaller,
            other => {
                return Err(KernelError::attr(
                    "keep_aspect_ratio_policy",
                    format!("unknown policy '{other}'"),
                ))
            }
        };
        let interp = Interp {
            mode,
            coord,
            nearest,
            cubic_a: init.float_or("cubic_coeff_a", -0.75)? as f64,
            exclude_outside: init.int_or("exclude_outside", 0)? != 0,
            extrapolation: init.float_or("extrapolation_value", 0.0)? as f64,
            antialias: init.int_or("antialias", 0)? != 0,
        };
        Ok(ResizeSpec {
            opset,
            interp,
            axes: init.ints_opt("axes")?.map(<[i64]>::to_vec),
            policy,
        })
    }
}

/// The region of interest of one axis for tf_crop_and_resize. `f32` ROIs are combined in
/// single precision as the reference does.
#[derive(Debug, Clone, Copy)]
struct Roi {
    start: f64,
    end: f64,
    single: bool,
}

impl Roi {
    fn is_identity(&self) -> bool {
        (self.start).abs() < 1e-9 && (self.end - 1.0).abs() < 1e-9
    }
}

impl ResizeSpec {
    /// The passes that resize `in_shape` with the node's roi, scales and sizes inputs.
    pub fn plan(&self, ctx: &KernelCtx<'_>, in_shape: &[usize]) -> KernelResult<ResizePlan> {
        let rank = in_shape.len();
        let in_shape = in_shape.to_vec();
        let axes = match &self.axes {
            Some(a) => normalize_axes(a, rank)?,
            None => (0..rank).collect(),
        };
        let (roi_t, scales_t, sizes_t) = if self.opset < 11 {
            (None, ctx.opt_input(1)?, None)
        } else {
            (ctx.opt_input(1)?, ctx.opt_input(2)?, ctx.opt_input(3)?)
        };
        let scales_t = scales_t.filter(|t| !t.is_empty());
        let sizes_t = sizes_t.filter(|t| !t.is_empty());
        let mut scale = vec![1.0f64; rank];
        let mut out_shape = in_shape.clone();
        match (scales_t, sizes_t) {
            (Some(s), None) => {
                let s = s.to_f64_vec()?;
                if s.len() != axes.len() {
                    return Err(KernelError::invalid(format!(
                        "scales has {} values for {} axes",
                        s.len(),
                        axes.len()
                    )));
                }
                for (&a, &v) in axes.iter().zip(&s) {
                    if v <= 0.0 || !v.is_finite() {
                        return Err(KernelError::invalid(format!("scale {v} is not positive")));
                    }
                    scale[a] = v;
                    out_shape[a] = out_len(v * in_shape[a] as f64)?;
                }
            }
            (None, Some(s)) => {
                let s = s.to_i64_vec()?;
                if s.len() != axes.len() {
                    return Err(KernelError::invalid(format!(
                        "sizes has {} values for {} axes",
                        s.len(),
                        axes.len()
                    )));
                }
                for (&a, &v) in axes.iter().zip(&s) {
                    let v = usize::try_from(v)
                        .map_err(|_| KernelError::invalid(format!("size {v} is negative")))?;
                    out_shape[a] = v;
                    scale[a] = v as f64 / in_shape[a] as f64;
                }
                if self.policy != Policy::Stretch && !axes.is_empty() {
                    let pick = axes.iter().map(|&a| scale[a]);
                    let s = if self.policy == Policy::NotLarger {
                        pick.fold(f64::INFINITY, f64::min)
                    } else {
                        pick.fold(f64::NEG_INFINITY, f64::max)
                    };
                    for &a in &axes {
                        scale[a] = s;
                        out_shape[a] = out_len(s * in_shape[a] as f64 + 0.5)?;
                    }
                }
            }
            (Some(_), Some(_)) => {
                return Err(KernelError::invalid(
                    "only one of scales and sizes may be given",
                ))
            }
            (None, None) => {
                return Err(KernelError::invalid("one of scales and sizes is required"))
            }
        }
        let mut rois: Vec<Option<Roi>> = vec![None; rank];
        if let Some(r) = roi_t.filter(|t| !t.is_empty()) {
            let v = r.to_f64_vec()?;
            if v.len() != 2 * axes.len() {
                if self.interp.coord == Coord::TfCropAndResize {
                    return Err(KernelError::invalid(format!(
                        "roi has {} values, expected {}",
                        v.len(),
                        2 * axes.len()
                    )));
                }
            } else {
                let single = r.dtype() != DType::Double;
                for (i, &a) in axes.iter().enumerate() {
                    rois[a] = Some(Roi {
                        start: v[i],
                        end: v[axes.len() + i],
                        single,
                    });
                }
            }
        } else if self.interp.coord == Coord::TfCropAndResize {
            return Err(KernelError::invalid("tf_crop_and_resize needs roi"));
        }
        let mut passes = Vec::new();
        let empty = in_shape.contains(&0) || out_shape.contains(&0);
        if !empty {
            for &a in &axes {
                let identity = (scale[a] - 1.0).abs() <= 1e-9 * scale[a].abs().max(1.0)
                    && out_shape[a] == in_shape[a]
                    && rois[a].is_none_or(|r| r.is_identity());
                if identity {
                    continue;
                }
                passes.push(axis_pass(
                    a,
                    in_shape[a],
                    scale[a],
                    out_shape[a],
                    rois[a],
                    &self.interp,
                )?);
            }
        }
        Ok(ResizePlan {
            out_shape,
            passes,
            extrapolation: self.interp.extrapolation,
        })
    }
}

impl Kernel for Resize {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let plan = self.0.plan(ctx, x.shape())?;
        let mut shape = x.shape().to_vec();
        let mut data = if shape.contains(&0) || plan.out_shape.contains(&0) {
            vec![0.0; plan.out_shape.iter().product()]
        } else {
            x.to_f64_vec()?
        };
        for pass in &plan.passes {
            data = apply_pass(&data, &shape, pass, plan.extrapolation);
            shape[pass.axis] = pass.out_len;
        }
        put_f64(ctx, 0, x.dtype(), &plan.out_shape, &data)
    }
}

fn out_len(v: f64) -> KernelResult<usize> {
    if !(0.0..1e15).contains(&v) {
        return Err(KernelError::invalid(format!(
            "output size {v} is out of range"
        )));
    }
    Ok(v.floor() as usize)
}

/// The weights of one output position: `n` consecutive input indices from `start` (before
/// clamping) with their coefficients.
fn coeffs(interp: &Interp, ratio: f64, scale: f64, out: &mut Vec<f64>) {
    out.clear();
    match interp.mode {
        Mode::Nearest => {
            let (a, b) = if ratio == 1.0 {
                (0.0, 1.0)
            } else {
                let up = match interp.nearest {
                    Nearest::RoundPreferFloor => ratio > 0.5,
                    Nearest::RoundPreferCeil => ratio >= 0.5,
                    Nearest::Floor => false,
                    Nearest::Ceil => true,
                    Nearest::Simple => scale < 1.0,
                };
                if up {
                    (0.0, 1.0)
                } else {
                    (1.0, 0.0)
                }
            };
            out.extend([a, b]);
        }
        Mode::Linear if interp.antialias => {
            let s = scale.min(1.0);
            let start = (-1.0 / s).floor() as i64 + 1;
            let n = 2 - 2 * start;
            for i in start..start + n {
                let arg = (i as f64 - ratio) * s;
                out.push((1.0 - arg.abs()).clamp(0.0, 1.0));
            }
            normalize(out);
        }
        Mode::Linear => out.extend([1.0 - ratio, ratio]),
        Mode::Cubic if interp.antialias => {
            let a = interp.cubic_a;
            let s = scale.min(1.0);
            let start = (-2.0 / s).floor() as i64 + 1;
            let end = 2 - start;
            for i in start..end {
                out.push(cubic_weight(s * (i as f64 - ratio), a));
            }
            normalize(out);
        }
        Mode::Cubic => {
            let a = interp.cubic_a;
            let r = ratio;
            let q = 1.0 - ratio;
            out.extend([
                ((a * (r + 1.0) - 5.0 * a) * (r + 1.0) + 8.0 * a) * (r + 1.0) - 4.0 * a,
                ((a + 2.0) * r - (a + 3.0)) * r * r + 1.0,
                ((a + 2.0) * q - (a + 3.0)) * q * q + 1.0,
                ((a * (q + 1.0) - 5.0 * a) * (q + 1.0) + 8.0 * a) * (q + 1.0) - 4.0 * a,
            ]);
        }
    }
}

fn cubic_weight(x: f64, a: f64) -> f64 {
    let x = x.abs();
    let x2 = x * x;
    let x3 = x * x2;
    if x <= 1.0 {
        (a + 2.0) * x3 - (a + 3.0) * x2 + 1.0
    } else if x < 2.0 {
        a * x3 - 5.0 * a * x2 + 8.0 * a * x - 4.0 * a
    } else {
        0.0
    }
}

fn normalize(v: &mut [f64]) {
    let s: f64 = v.iter().sum();
    if s != 0.0 {
        v.iter_mut().for_each(|c| *c /= s);
    }
}

/// The source coordinate of output position `y` along an axis; `None` when tf_crop_and_resize
/// extrapolates.
fn source_coord(
    coord: Coord,
    y: f64,
    scale: f64,
    in_w: usize,
    out_w_int: usize,
    roi: Option<Roi>,
) -> KernelResult<Option<f64>> {
    let in_f = in_w as f64;
    let out_w = scale * in_f;
    Ok(Some(match coord {
        Coord::AlignCorners => {
            if out_w == 1.0 {
                0.0
            } else {
                y * (in_f - 1.0) / (out_w - 1.0)
            }
        }
        Coord::Asymmetric => y / scale,
        Coord::TfHalfPixelForNn => (y + 0.5) / scale,
        Coord::PytorchHalfPixel => {
            if out_w == 1.0 {
                -0.5
            } else {
                (y + 0.5) / scale - 0.5
            }
        }
        Coord::HalfPixel => (y + 0.5) / scale - 0.5,
        Coord::HalfPixelSymmetric => {
            let adjustment = out_w_int as f64 / out_w;
            let center = in_f / 2.0;
            let offset = center * (1.0 - adjustment);
            offset + (y + 0.5) / scale - 0.5
        }
        Coord::TfCropAndResize => {
            let roi = roi.unwrap_or(Roi {
                start: 0.0,
                end: 1.0,
                single: false,
            });
            let (span, base) = if roi.single {
                let (s, e) = (roi.start as f32, roi.end as f32);
                ((e - s) as f64, (s * (in_f - 1.0) as f32) as f64)
            } else {
                (roi.end - roi.start, roi.start * (in_f - 1.0))
            };
            let x = if out_w == 1.0 {
                if roi.single {
                    ((span as f32) * (in_f - 1.0) as f32 / 2.0) as f64
                } else {
                    span * (in_f - 1.0) / 2.0
                }
            } else {
                y * span * (in_f - 1.0) / (out_w - 1.0)
            } + base;
            if x < 0.0 || x > in_f - 1.0 {
                return Ok(None);
            }
            x
        }
    }))
}

/// Resizes `data` (of `shape`) along `axis` to `out_w` positions.
/// The taps and weights of each output position along `axis`.
fn axis_pass(
    axis: usize,
    in_w: usize,
    scale: f64,
    out_w: usize,
    roi: Option<Roi>,
    interp: &Interp,
) -> KernelResult<AxisPass> {
    let mut c = Vec::new();
    coeffs(interp, 0.5, scale, &mut c);
    let n = c.len();
    let mut idx: Vec<usize> = Vec::with_capacity(out_w * n);
    let mut w: Vec<f64> = Vec::with_capacity(out_w * n);
    let mut extrap = vec![false; out_w];
    for (j, ex) in extrap.iter_mut().enumerate() {
        let Some(x) = source_coord(interp.coord, j as f64, scale, in_w, out_w, roi)? else {
            *ex = true;
            idx.extend(std::iter::repeat_n(0, n));
            w.extend(std::iter::repeat_n(0.0, n));
            continue;
        };
        if !x.is_finite() {
            return Err(KernelError::invalid("source coordinate is not finite"));
        }
        let xf = x.floor();
        let ratio = if x == xf { 1.0 } else { x - xf };
        coeffs(interp, ratio, scale, &mut c);
        if c.len() != n {
            return Err(KernelError::invalid("internal: window size changed"));
        }
        let pad = n.div_ceil(2) as f64;
        let xp = x + pad;
        let p = xp.floor();
        let frac = xp - p;
        let half = (n / 2) as i64;
        let off = if n % 2 == 0 {
            if frac == 0.0 {
                -half
            } else {
                -half + 1
            }
        } else {
            let base = -((n as i64 - 1) / 2);
            if frac <= 0.5 {
                base
            } else {
                base + 1
            }
        };
        let start = p as i64 + off - pad as i64;
        if interp.exclude_outside {
            for (t, cv) in c.iter_mut().enumerate() {
                let i = start + t as i64;
                if i < 0 || i >= in_w as i64 {
                    *cv = 0.0;
                }
            }
            let s: f64 = c.iter().sum();
            if s != 0.0 {
                c.iter_mut().for_each(|v| *v /= s);
            }
        }
        for (t, &cv) in c.iter().enumerate() {
            let i = (start + t as i64).clamp(0, in_w as i64 - 1) as usize;
            idx.push(i);
            w.push(cv);
        }
    }
    Ok(AxisPass {
        axis,
        out_len: out_w,
        taps: n,
        index: idx,
        weight: w,
        extrapolate: extrap,
    })
}

/// Applies one pass to `data` of `shape`.
fn apply_pass(data: &[f64], shape: &[usize], pass: &AxisPass, extrapolation: f64) -> Vec<f64> {
    let (axis, out_w, n) = (pass.axis, pass.out_len, pass.taps);
    let in_w = shape[axis];
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..].iter().product();
    let (idx, w) = (&pass.index, &pass.weight);
    let mut out = vec![0.0f64; outer * out_w * inner];
    for o in 0..outer {
        let src = &data[o * in_w * inner..(o + 1) * in_w * inner];
        let dst = &mut out[o * out_w * inner..(o + 1) * out_w * inner];
        for j in 0..out_w {
            let row = &mut dst[j * inner..(j + 1) * inner];
            if pass.extrapolate[j] {
                row.fill(extrapolation);
                continue;
            }
            for t in 0..n {
                let cv = w[j * n + t];
                if cv == 0.0 {
                    continue;
                }
                let s = &src[idx[j * n + t] * inner..(idx[j * n + t] + 1) * inner];
                for (d, &v) in row.iter_mut().zip(s) {
                    *d += cv * v;
                }
            }
        }
    }
    out
}

struct Upsample {
    opset: i64,
    interp: Interp,
    scales: Option<Vec<f32>>,
}

pub(crate) fn create_upsample(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let mode = parse_mode(init.str_or("mode", "nearest")?)?;
    if mode == Mode::Cubic {
        return Err(KernelError::attr(
            "mode",
            "Upsample supports nearest and linear",
        ));
    }
    Ok(Box::new(Upsample {
        opset: init.opset,
        interp: Interp {
            mode,
            coord: Coord::Asymmetric,
            nearest: Nearest::Simple,
            cubic_a: -0.75,
            exclude_outside: false,
            extrapolation: 0.0,
            antialias: false,
        },
        scales: init.floats_opt("scales")?.map(<[f32]>::to_vec),
    }))
}

impl Kernel for Upsample {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let scales: Vec<f64> = if self.opset < 9 {
            self.scales
                .as_ref()
                .ok_or_else(|| KernelError::attr("scales", "required"))?
                .iter()
                .map(|&v| v as f64)
                .collect()
        } else {
            ctx.input(1)?.to_f64_vec()?
        };
        if scales.len() != x.rank() {
            return Err(KernelError::invalid(format!(
                "{} scales for rank {}",
                scales.len(),
                x.rank()
            )));
        }
        let mut shape = x.shape().to_vec();
        let mut data = x.to_f64_vec()?;
        let mut out_shape = shape.clone();
        for (a, &s) in scales.iter().enumerate() {
            if s <= 0.0 || !s.is_finite() {
                return Err(KernelError::invalid(format!("scale {s} is not positive")));
            }
            out_shape[a] = out_len(s * shape[a] as f64)?;
        }
        if shape.contains(&0) || out_shape.contains(&0) {
            data = vec![0.0; out_shape.iter().product()];
        } else {
            for (a, &s) in scales.iter().enumerate() {
                if s == 1.0 {
                    continue;
                }
                let pass = axis_pass(a, shape[a], s, out_shape[a], None, &self.interp)?;
                data = apply_pass(&data, &shape, &pass, self.interp.extrapolation);
                shape[a] = out_shape[a];
            }
        }
        put_f64(ctx, 0, x.dtype(), &out_shape, &data)
    }
}
