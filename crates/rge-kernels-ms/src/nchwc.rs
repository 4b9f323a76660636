//! The `com.microsoft.nchwc` ops that onnxruntime writes when it saves a model optimized at its
//! default level (`ORT_ENABLE_ALL`, `optimized_model_filepath`): Conv, MaxPool, AveragePool,
//! GlobalMaxPool, GlobalAveragePool, Upsample, ReorderInput and ReorderOutput over MLAS's
//! blocked activation layout.
//!
//! A blocked tensor is 4-D `[N, Cp, H, W]` whose data is `[N][Cp/b][H][W][b]`: channels in
//! blocks of `b`, zero-padded to `Cp`. Filters were reordered when the model was saved:
//! `OIHWBiBo` (`[Op/b][ceil(I/b)][kh·kw][bi][bo]`) for convolutions over blocked input, `OIHWBo`
//! (`[Op/b][I][kh·kw][bo]`) for depthwise ones and for the first convolution of a network,
//! which reads plain NCHW input with fewer than `b` channels. The block size is not in the file:
//! onnxruntime takes MLAS's for the machine that saves (16 with AVX-512F, else 8), so these
//! kernels take the same for this machine (`block_size`), and a model saved on a machine of
//! the other kind gives an error where the sizes disagree, or wrong values where they cannot
//! tell. Each kernel unblocks to NCHW, runs the default domain's kernel (`inner`), and blocks
//! the result: a reference path, not a fast one.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::inner::{attrs, Inner};
use crate::util::{floats, put_f32, value_f32, Activation};

/// MLAS's NCHWc block size on this machine: 16 where AVX-512F runs, else 8.
pub(crate) fn block_size() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return 16;
        }
    }
    8
}

/// `[N, C, S]` plain data → `[N, Cp/b, S, b]` blocked (Cp = C rounded up to b).
fn block(x: &[f32], n: usize, c: usize, s: usize, b: usize) -> Vec<f32> {
    let cp = c.div_ceil(b) * b;
    let mut y = vec![0f32; n * cp * s];
    for ni in 0..n {
        for ch in 0..c {
            let (cb, j) = (ch / b, ch % b);
            let src = &x[(ni * c + ch) * s..][..s];
            let dst = &mut y[(ni * cp + cb * b) * s..];
            for (p, v) in src.iter().enumerate() {
                dst[p * b + j] = *v;
            }
        }
    }
    y
}

/// `[N, Cp/b, S, b]` blocked → `[N, C, S]` plain, the first `c` of the `cp` channels.
fn unblock(x: &[f32], n: usize, cp: usize, c: usize, s: usize, b: usize) -> Vec<f32> {
    let mut y = vec![0f32; n * c * s];
    for ni in 0..n {
        for ch in 0..c {
            let (cb, j) = (ch / b, ch % b);
            let src = &x[(ni * cp + cb * b) * s..];
            let dst = &mut y[(ni * c + ch) * s..][..s];
            for (p, v) in dst.iter_mut().enumerate() {
                *v = src[p * b + j];
            }
        }
    }
    y
}

/// A blocked 4-D input: (N, Cp, H, W) and its data, checked against the block size.
fn blocked_input(ctx: &KernelCtx<'_>, b: usize) -> KernelResult<([usize; 4], Vec<f32>)> {
    let x = ctx.input(0)?;
    let [n, cp, h, w] = *x.shape() else {
        return Err(KernelError::invalid(format!(
            "X must be 4-D [N, C, H, W] in NCHWc blocks, got {:?}",
            x.shape()
        )));
    };
    if cp % b != 0 {
        return Err(KernelError::invalid(format!(
            "X has {cp} channels, not a multiple of this machine's NCHWc block of {b} \
             (was the model saved by onnxruntime on a machine with another block size?)"
        )));
    }
    Ok(([n, cp, h, w], floats(&x, 0)?))
}

/// Blocks an inner kernel's NCHW output `[N, Cp, H', W']` and writes it.
fn put_blocked(ctx: &mut KernelCtx<'_>, y: &rge_kernels::Tensor, b: usize) -> KernelResult<()> {
    let [n, c, h, w] = *y.shape() else {
        return Err(KernelError::invalid(
            "an inner kernel gave a non-4-D output",
        ));
    };
    let v = block(&floats(&y.view(), 0)?, n, c, h * w, b);
    put_f32(ctx, 0, &[n, c.div_ceil(b) * b, h, w], v)
}

const CONV_ATTRS: &[&str] = &[
    "auto_pad",
    "dilations",
    "group",
    "kernel_shape",
    "pads",
    "strides",
];
const POOL_ATTRS: &[&str] = &[
    "auto_pad",
    "ceil_mode",
    "count_include_pad",
    "dilations",
    "kernel_shape",
    "pads",
    "storage_order",
    "strides",
];

fn copied(init: &KernelInit<'_>, names: &[&str]) -> rge_ir::AttrMap {
    attrs(
        names
            .iter()
            .filter_map(|&n| init.attrs.get(n).map(|v| (n, v.clone())))
            .collect(),
    )
}

struct Conv {
    conv: Inner,
    activation: Activation,
    group: usize,
    b: usize,
}

pub(crate) fn conv(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let group = init.int_or("group", 1)?;
    let group = usize::try_from(group)
        .ok()
        .filter(|&g| g > 0)
        .ok_or_else(|| KernelError::attr("group", format!("must be positive, got {group}")))?;
    Ok(Box::new(Conv {
        conv: Inner::new(
            init,
            "Conv",
            11,
            &copied(init, CONV_ATTRS),
            &[Some(DType::Float); 3],
            1,
        )?,
        activation: Activation::from_init(init)?,
        group,
        b: block_size(),
    }))
}

impl Kernel for Conv {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let b = self.b;
        let x = ctx.input(0)?;
        let w = ctx.input(1)?;
        let ([n, cx, h, wd], [op, wi, kh, kw]) = (
            <[usize; 4]>::try_from(x.shape())
                .map_err(|_| KernelError::invalid(format!("X must be 4-D, got {:?}", x.shape())))?,
            <[usize; 4]>::try_from(w.shape())
                .map_err(|_| KernelError::invalid(format!("W must be 4-D, got {:?}", w.shape())))?,
        );
        if op % b != 0 {
            return Err(KernelError::invalid(format!(
                "W has {op} output channels, not a multiple of this machine's NCHWc block of {b}"
            )));
        }
        // The layouts MLAS chose when the model was saved (its NchwcConv's algorithm choice).
        let plain_input = cx < b;
        let depthwise = self.group > 1 && wi == 1 && self.group == cx;
        if !plain_input && cx % b != 0 {
            return Err(KernelError::invalid(format!(
                "X has {cx} channels: neither plain NCHW input (< {b}) nor NCHWc blocks of {b}"
            )));
        }
        let k = kh * kw;
        let wv = floats(&w, 1)?;
        let oihw = if plain_input || depthwise {
            filter_from_oihwbo(&wv, op, wi, k, b)?
        } else {
            filter_from_oihwbibo(&wv, op, wi, k, b)?
        };
        let xv = floats(&x, 0)?;
        let x_plain = if plain_input {
            xv
        } else {
            unblock(&xv, n, cx, cx, h * wd, b)
        };
        // The bias may hold only the logical output channels; the padded ones get 0.
        let bias = match ctx.opt_input(2)? {
            Some(t) => {
                let mut v = floats(&t, 2)?;
                if v.len() > op {
                    return Err(KernelError::invalid(format!(
                        "B has {} values for {op} output channels",
                        v.len()
                    )));
                }
                v.resize(op, 0.0);
                v
            }
            None => vec![0.0; op],
        };
        let ins = [
            value_f32(&[n, cx, h, wd], x_plain)?,
            value_f32(&[op, wi, kh, kw], oihw)?,
            value_f32(&[op], bias)?,
        ];
        let y = self.conv.run1(
            &[Some(&ins[0]), Some(&ins[1]), Some(&ins[2])],
            ctx.threads(),
        )?;
        let [yn, yc, yh, yw] = *y.shape() else {
            return Err(KernelError::invalid(
                "the convolution gave a non-4-D output",
            ));
        };
        let mut out = block(&floats(&y.view(), 0)?, yn, yc, yh * yw, b);
        // The fused Add: Y = act(conv + B + Sum), Sum blocked like Y.
        if let Some(sum) = ctx.opt_input(3)? {
            if sum.shape() != [yn, yc, yh, yw] {
                return Err(KernelError::invalid(format!(
                    "Sum is {:?}; the convolution gives {:?}",
                    sum.shape(),
                    [yn, yc, yh, yw]
                )));
            }
            for (o, s) in out.iter_mut().zip(floats(&sum, 3)?) {
                *o += s;
            }
        }
        self.activation.apply(&mut out);
        put_f32(ctx, 0, &[yn, yc, yh, yw], out)
    }
}

fn filter_size_error(what: &str, got: usize, want: usize, b: usize) -> KernelError {
    KernelError::invalid(format!(
        "W holds {got} values; an {what} filter with this machine's NCHWc block of {b} holds \
         {want} (was the model saved on a machine with another block size?)"
    ))
}

/// `[Op/b][I][K][bo]` → OIHW `[Op][I][K]`.
fn filter_from_oihwbo(
    w: &[f32],
    op: usize,
    i: usize,
    k: usize,
    b: usize,
) -> KernelResult<Vec<f32>> {
    if w.len() != op * i * k {
        return Err(filter_size_error("OIHWBo", w.len(), op * i * k, b));
    }
    let mut out = vec![0f32; op * i * k];
    let mut at = 0;
    for ob in 0..op / b {
        for ii in 0..i {
            for kk in 0..k {
                for bo in 0..b {
                    out[((ob * b + bo) * i + ii) * k + kk] = w[at];
                    at += 1;
                }
            }
        }
    }
    Ok(out)
}

/// `[Op/b][ceil(I/b)][K][bi][bo]` → OIHW `[Op][I][K]` (input channels past `I` are padding).
fn filter_from_oihwbibo(
    w: &[f32],
    op: usize,
    i: usize,
    k: usize,
    b: usize,
) -> KernelResult<Vec<f32>> {
    let ib_count = i.div_ceil(b);
    let want = op * ib_count * b * k;
    if w.len() != want {
        return Err(filter_size_error("OIHWBiBo", w.len(), want, b));
    }
    let mut out = vec![0f32; op * i * k];
    let mut at = 0;
    for ob in 0..op / b {
        for ib in 0..ib_count {
            for kk in 0..k {
                for bi in 0..b {
                    for bo in 0..b {
                        let ii = ib * b + bi;
                        if ii < i {
                            out[((ob * b + bo) * i + ii) * k + kk] = w[at];
                        }
                        at += 1;
                    }
                }
            }
        }
    }
    Ok(out)
}

/// A pool (or Upsample) run on the unblocked data.
struct Pool {
    inner: Inner,
    b: usize,
}

fn pool_of(init: &KernelInit<'_>, op: &str, names: &[&str]) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Pool {
        inner: Inner::new(init, op, 11, &copied(init, names), &[Some(DType::Float)], 1)?,
        b: block_size(),
    }))
}

pub(crate) fn max_pool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    pool_of(init, "MaxPool", POOL_ATTRS)
}

pub(crate) fn average_pool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    pool_of(init, "AveragePool", POOL_ATTRS)
}

pub(crate) fn global_max_pool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    pool_of(init, "GlobalMaxPool", &[])
}

pub(crate) fn global_average_pool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    pool_of(init, "GlobalAveragePool", &[])
}

/// How Upsample maps an output row or column to the input.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Sampling {
    Nearest,
    /// Linear, with onnxruntime's coordinate rule for the mode.
    Linear(Coordinates),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Coordinates {
    Asymmetric,
    HalfPixel,
    AlignCorners,
}

/// Upsample by integer `scales` `[1, 1, sh, sw]`: nearest (replication) or linear.
pub(crate) fn upsample(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let scales = init.ints_opt("scales")?.unwrap_or(&[]);
    let ok = |s: i64| (1..=1 << 16).contains(&s);
    if scales.len() != 4 || scales[..2] != [1, 1] || !ok(scales[2]) || !ok(scales[3]) {
        return Err(KernelError::attr(
            "scales",
            format!("must be [1, 1, sh, sw] with 1 ≤ sh, sw ≤ 65536, got {scales:?}"),
        ));
    }
    let sampling = match init.str_or("mode", "nearest")? {
        "nearest" => Sampling::Nearest,
        "linear" => Sampling::Linear(
            match init.str_or("coordinate_transformation_mode", "asymmetric")? {
                "asymmetric" => Coordinates::Asymmetric,
                "half_pixel" => Coordinates::HalfPixel,
                "align_corners" => Coordinates::AlignCorners,
                other => {
                    return Err(KernelError::attr(
                        "coordinate_transformation_mode",
                        format!("`{other}` is not asymmetric, half_pixel or align_corners"),
                    ))
                }
            },
        ),
        other => {
            return Err(KernelError::attr(
                "mode",
                format!("`{other}` is not nearest or linear"),
            ))
        }
    };
    Ok(Box::new(Upsample {
        scales: [scales[2] as usize, scales[3] as usize],
        sampling,
        b: block_size(),
    }))
}

struct Upsample {
    scales: [usize; 2],
    sampling: Sampling,
    b: usize,
}

/// Per output index: (lower input index, upper input index, weight of the upper).
fn taps(input: usize, scale: usize, sampling: Sampling) -> Vec<(usize, usize, f32)> {
    let output = input * scale;
    (0..output)
        .map(|o| {
            let at = match sampling {
                Sampling::Nearest => return (o / scale, o / scale, 0.0),
                _ if scale == 1 => o as f32,
                Sampling::Linear(Coordinates::AlignCorners) if output > 1 => {
                    o as f32 * (input - 1) as f32 / (output - 1) as f32
                }
                Sampling::Linear(Coordinates::AlignCorners) => 0.0,
                Sampling::Linear(Coordinates::HalfPixel) => {
                    ((o as f32 + 0.5) / scale as f32 - 0.5).max(0.0)
                }
                Sampling::Linear(Coordinates::Asymmetric) => o as f32 / scale as f32,
            };
            let lo = (at.floor() as usize).min(input - 1);
            let hi = (lo + 1).min(input - 1);
            (lo, hi, at - lo as f32)
        })
        .collect()
}

impl Kernel for Upsample {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let b = self.b;
        let ([n, cp, h, w], x) = blocked_input(ctx, b)?;
        let [sh, sw] = self.scales;
        let (oh, ow) = (h * sh, w * sw);
        if h == 0 || w == 0 {
            return put_f32(ctx, 0, &[n, cp, oh, ow], Vec::new());
        }
        let rows = taps(h, sh, self.sampling);
        let cols = taps(w, sw, self.sampling);
        let mut y = vec![0f32; n * cp * oh * ow];
        // Each block of b channels is an [H][W][b] image: interpolate b lanes at once.
        for (img, out) in x
            .chunks_exact(h * w * b)
            .zip(y.chunks_exact_mut(oh * ow * b))
        {
            for (r, &(r0, r1, fr)) in rows.iter().enumerate() {
                for (c, &(c0, c1, fc)) in cols.iter().enumerate() {
                    let at = |i: usize, j: usize| &img[(i * w + j) * b..][..b];
                    let dst = &mut out[(r * ow + c) * b..][..b];
                    let (a, bb, cc, d) = (at(r0, c0), at(r0, c1), at(r1, c0), at(r1, c1));
                    for k in 0..b {
                        let top = a[k] + (bb[k] - a[k]) * fc;
                        let bottom = cc[k] + (d[k] - cc[k]) * fc;
                        dst[k] = top + (bottom - top) * fr;
                    }
                }
            }
        }
        put_f32(ctx, 0, &[n, cp, oh, ow], y)
    }
}

impl Kernel for Pool {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let ([n, cp, h, w], x) = blocked_input(ctx, self.b)?;
        let plain = value_f32(&[n, cp, h, w], unblock(&x, n, cp, cp, h * w, self.b))?;
        let y = self.inner.run1(&[Some(&plain)], ctx.threads())?;
        put_blocked(ctx, &y, self.b)
    }
}

struct Reorder {
    /// ReorderOutput's logical channel count; `None` for ReorderInput.
    channels: Option<usize>,
    channels_last: bool,
    b: usize,
}

pub(crate) fn reorder_input(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Reorder {
        channels: None,
        channels_last: init.int_or("channels_last", 0)? != 0,
        b: block_size(),
    }))
}

pub(crate) fn reorder_output(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let c = init.int("channels")?;
    let c = usize::try_from(c)
        .ok()
        .filter(|&c| c > 0)
        .ok_or_else(|| KernelError::attr("channels", format!("must be positive, got {c}")))?;
    Ok(Box::new(Reorder {
        channels: Some(c),
        channels_last: init.int_or("channels_last", 0)? != 0,
        b: block_size(),
    }))
}

impl Kernel for Reorder {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let b = self.b;
        let x = ctx.input(0)?;
        let [d0, d1, d2, d3] = *x.shape() else {
            return Err(KernelError::invalid(format!(
                "X must be 4-D, got {:?}",
                x.shape()
            )));
        };
        let v = floats(&x, 0)?;
        match self.channels {
            None => {
                // NCHW (or NHWC) → blocked.
                let (n, c, h, w, v) = if self.channels_last {
                    let t = nhwc_to_nchw(&v, d0, d1, d2, d3);
                    (d0, d3, d1, d2, t)
                } else {
                    (d0, d1, d2, d3, v)
                };
                put_f32(
                    ctx,
                    0,
                    &[n, c.div_ceil(b) * b, h, w],
                    block(&v, n, c, h * w, b),
                )
            }
            Some(c) => {
                let (n, cp, h, w) = (d0, d1, d2, d3);
                if cp % b != 0 || c > cp {
                    return Err(KernelError::invalid(format!(
                        "X has {cp} channels: not NCHWc blocks of {b} holding {c} channels"
                    )));
                }
                let plain = unblock(&v, n, cp, c, h * w, b);
                if self.channels_last {
                    let t = nchw_to_nhwc(&plain, n, c, h, w);
                    put_f32(ctx, 0, &[n, h, w, c], t)
                } else {
                    put_f32(ctx, 0, &[n, c, h, w], plain)
                }
            }
        }
    }
}

fn nhwc_to_nchw(x: &[f32], n: usize, h: usize, w: usize, c: usize) -> Vec<f32> {
    let mut y = vec![0f32; x.len()];
    for ni in 0..n {
        for p in 0..h * w {
            for ch in 0..c {
                y[(ni * c + ch) * h * w + p] = x[(ni * h * w + p) * c + ch];
            }
        }
    }
    y
}

fn nchw_to_nhwc(x: &[f32], n: usize, c: usize, h: usize, w: usize) -> Vec<f32> {
    let mut y = vec![0f32; x.len()];
    for ni in 0..n {
        for ch in 0..c {
            for p in 0..h * w {
                y[(ni * h * w + p) * c + ch] = x[(ni * c + ch) * h * w + p];
            }
        }
    }
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_and_unblock_round_trip_with_padding() {
        // 2 images, 5 channels, 3 positions, blocks of 4: 8 channels with 3 of padding.
        let x: Vec<f32> = (0..30).map(|v| v as f32).collect();
        let y = block(&x, 2, 5, 3, 4);
        assert_eq!(y.len(), 2 * 8 * 3);
        // Image 0, block 0, position 1: channels 0..4 at position 1.
        assert_eq!(&y[4..8], &[1.0, 4.0, 7.0, 10.0]);
        // Image 0, block 1, position 0: channel 4 then padding.
        assert_eq!(&y[12..16], &[12.0, 0.0, 0.0, 0.0]);
        assert_eq!(unblock(&y, 2, 8, 5, 3, 4), x);
    }

    #[test]
    fn filters_decode_from_mlas_orders() {
        // OIHWBo with O = 4, I = 2, K = 1, b = 4: [ob][i][k][bo].
        let w: Vec<f32> = (0..8).map(|v| v as f32).collect();
        let oihw = filter_from_oihwbo(&w, 4, 2, 1, 4).unwrap();
        // o = 1, i = 0 is element bo = 1 of input channel 0.
        assert_eq!(oihw[2], 1.0);
        // o = 0, i = 1 is element bo = 0 of input channel 1.
        assert_eq!(oihw[1], 4.0);
        // OIHWBiBo with O = 4, I = 4, K = 1, b = 4: [ob][ib][k][bi][bo].
        let w: Vec<f32> = (0..16).map(|v| v as f32).collect();
        let oihw = filter_from_oihwbibo(&w, 4, 4, 1, 4).unwrap();
        // o = 2, i = 1: bi = 1, bo = 2 → 1·4 + 2.
        assert_eq!(oihw[2 * 4 + 1], 6.0);
        assert!(filter_from_oihwbibo(&w[..12], 4, 4, 1, 4)
            .unwrap_err()
            .to_string()
            .contains("another block size"));
    }
}
