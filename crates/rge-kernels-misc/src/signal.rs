//! Signal processing: DFT (opsets 17, 20), STFT (17), the Hann, Hamming and Blackman windows
//! (17) and MelWeightMatrix (17). Transforms run in double precision; lengths that are powers
//! of two use a radix-2 FFT, others a direct DFT with a precomputed twiddle table.

use std::f64::consts::PI;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::util::{dtype_attr, put_f64, scalar_f64, scalar_i64};

/// A complex line transform of length `n` (forward: e^{-2πikt/n}; inverse: e^{+…}, no 1/n).
struct Transform {
    n: usize,
    inverse: bool,
    /// cos/sin of 2πk/n for k in 0..n.
    cos: Vec<f64>,
    sin: Vec<f64>,
}

impl Transform {
    fn new(n: usize, inverse: bool) -> Self {
        let (cos, sin) = (0..n)
            .map(|k| {
                let a = 2.0 * PI * k as f64 / n as f64;
                (a.cos(), a.sin())
            })
            .unzip();
        Transform {
            n,
            inverse,
            cos,
            sin,
        }
    }

    /// Transforms `re`/`im` (length n) into `ore`/`oim`.
    fn run(&self, re: &[f64], im: &[f64], ore: &mut [f64], oim: &mut [f64]) {
        let n = self.n;
        let sign = if self.inverse { 1.0 } else { -1.0 };
        if n.is_power_of_two() && n >= 4 {
            // Iterative radix-2: bit-reversed copy, then butterflies.
            let bits = n.trailing_zeros();
            for i in 0..n {
                let j = i.reverse_bits() >> (usize::BITS - bits);
                ore[j] = re[i];
                oim[j] = im[i];
            }
            let mut len = 2;
            while len <= n {
                let step = n / len;
                for start in (0..n).step_by(len) {
                    for k in 0..len / 2 {
                        let (c, s) = (self.cos[k * step], sign * self.sin[k * step]);
                        let (a, b) = (start + k, start + k + len / 2);
                        let tr = ore[b] * c - oim[b] * s;
                        let ti = ore[b] * s + oim[b] * c;
                        ore[b] = ore[a] - tr;
                        oim[b] = oim[a] - ti;
                        ore[a] += tr;
                        oim[a] += ti;
                    }
                }
                len *= 2;
            }
            return;
        }
        for k in 0..n {
            let (mut sr, mut si) = (0.0, 0.0);
            let mut idx = 0usize;
            for t in 0..n {
                let (c, s) = (self.cos[idx], sign * self.sin[idx]);
                sr += re[t] * c - im[t] * s;
                si += re[t] * s + im[t] * c;
                idx += k;
                if idx >= n {
                    idx -= n;
                }
            }
            ore[k] = sr;
            oim[k] = si;
        }
    }
}

struct Dft {
    opset: i64,
    axis_attr: i64,
    inverse: bool,
    onesided: bool,
}

pub(crate) fn create_dft(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Dft {
        opset: init.opset,
        axis_attr: init.int_or("axis", 1)?,
        inverse: init.int_or("inverse", 0)? != 0,
        onesided: init.int_or("onesided", 0)? != 0,
    }))
}

/// Applies a 1-D DFT along `axis` of a signal `[.., n_in, .., c]` (c = 1 real, 2 complex),
/// returning the output dims and data.
fn dft_along(
    x: &[f64],
    shape: &[usize],
    axis: usize,
    n: usize,
    inverse: bool,
    onesided: bool,
) -> KernelResult<(Vec<usize>, Vec<f64>)> {
    let rank = shape.len();
    let comps = shape[rank - 1];
    if comps != 1 && comps != 2 {
        return Err(KernelError::invalid(format!(
            "the last dim of the signal must be 1 or 2, got {comps}"
        )));
    }
    if axis + 1 >= rank {
        return Err(KernelError::invalid("the DFT axis cannot be the last dim"));
    }
    if n == 0 {
        return Err(KernelError::invalid("dft_length must be positive"));
    }
    let len = shape[axis];
    let outer: usize = shape[..axis].iter().product();
    let inner: usize = shape[axis + 1..rank - 1].iter().product();
    let irfft = inverse && onesided;
    let (out_len, out_comps) = if irfft {
        (n, 1)
    } else if onesided {
        (n / 2 + 1, 2)
    } else {
        (n, 2)
    };
    let mut out_shape = shape.to_vec();
    out_shape[axis] = out_len;
    out_shape[rank - 1] = out_comps;
    let mut out = vec![0.0f64; outer * out_len * inner * out_comps];
    let tr = Transform::new(n, inverse);
    let (mut re, mut im) = (vec![0.0; n], vec![0.0; n]);
    let (mut ore, mut oim) = (vec![0.0; n], vec![0.0; n]);
    let scale = if inverse { 1.0 / n as f64 } else { 1.0 };
    for o in 0..outer {
        for i in 0..inner {
            re.fill(0.0);
            im.fill(0.0);
            let at = |t: usize, c: usize| x[((o * len + t) * inner + i) * comps + c];
            if irfft {
                // Rebuild the full Hermitian spectrum from bins 0..=n/2.
                let half = n / 2 + 1;
                for k in 0..half.min(len) {
                    re[k] = at(k, 0);
                    im[k] = if comps == 2 { at(k, 1) } else { 0.0 };
                }
                im[0] = 0.0;
                if n % 2 == 0 {
                    im[n / 2] = 0.0;
                }
                for k in 1..n.div_ceil(2) {
                    re[n - k] = re[k];
                    im[n - k] = -im[k];
                }
            } else {
                for t in 0..n.min(len) {
                    re[t] = at(t, 0);
                    im[t] = if comps == 2 { at(t, 1) } else { 0.0 };
                }
            }
            tr.run(&re, &im, &mut ore, &mut oim);
            for k in 0..out_len {
                let base = ((o * out_len + k) * inner + i) * out_comps;
                out[base] = ore[k] * scale;
                if out_comps == 2 {
                    out[base + 1] = oim[k] * scale;
                }
            }
        }
    }
    Ok((out_shape, out))
}

impl Kernel for Dft {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let rank = x.rank();
        if rank < 2 {
            return Err(KernelError::invalid("DFT input needs rank 2 or more"));
        }
        let axis = if self.opset >= 20 {
            match ctx.opt_input(2)? {
                Some(t) if !t.is_empty() => scalar_i64(&t, "axis")?,
                _ => -2,
            }
        } else {
            self.axis_attr
        };
        let axis = rge_kernels::shape_util::normalize_axis(axis, rank)?;
        let len = x.shape()[axis];
        let n = match ctx.opt_input(1)? {
            Some(t) if !t.is_empty() => {
                let v = scalar_i64(&t, "dft_length")?;
                usize::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| {
                    KernelError::invalid(format!("dft_length {v} is not positive"))
                })?
            }
            _ if self.inverse && self.onesided => 2 * len.saturating_sub(1),
            _ => len,
        };
        let data = x.to_f64_vec()?;
        let (shape, out) = dft_along(&data, x.shape(), axis, n, self.inverse, self.onesided)?;
        put_f64(ctx, 0, x.dtype(), &shape, &out)
    }
}

struct Stft {
    onesided: bool,
}

pub(crate) fn create_stft(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Stft {
        onesided: init.int_or("onesided", 1)? != 0,
    }))
}

impl Kernel for Stft {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let shape = x.shape();
        if shape.len() != 3 || !(shape[2] == 1 || shape[2] == 2) {
            return Err(KernelError::invalid(format!(
                "STFT signal must be [batch, length, 1 or 2], got {shape:?}"
            )));
        }
        let step = scalar_i64(&ctx.input(1)?, "frame_step")?;
        if step <= 0 {
            return Err(KernelError::invalid(format!(
                "frame_step {step} is not positive"
            )));
        }
        let step = step as usize;
        let window = ctx.opt_input(2)?.filter(|t| !t.is_empty());
        let frame_len = match ctx.opt_input(3)?.filter(|t| !t.is_empty()) {
            Some(t) => {
                let v = scalar_i64(&t, "frame_length")?;
                usize::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| {
                    KernelError::invalid(format!("frame_length {v} is not positive"))
                })?
            }
            None => match &window {
                Some(w) => w.len(),
                None => shape[1],
            },
        };
        let win = match &window {
            Some(w) => {
                if w.rank() != 1 || w.len() != frame_len {
                    return Err(KernelError::invalid(format!(
                        "window of shape {:?} does not match frame length {frame_len}",
                        w.shape()
                    )));
                }
                w.to_f64_vec()?
            }
            None => vec![1.0; frame_len],
        };
        let (batch, len, comps) = (shape[0], shape[1], shape[2]);
        if frame_len > len {
            return Err(KernelError::invalid(format!(
                "frame length {frame_len} exceeds the signal length {len}"
            )));
        }
        let frames = 1 + (len - frame_len) / step;
        let data = x.to_f64_vec()?;
        // Frames as [batch, frames, frame_len, comps], windowed, then one DFT along axis 2.
        let mut framed = Vec::with_capacity(batch * frames * frame_len * comps);
        for b in 0..batch {
            for f in 0..frames {
                for (t, &wt) in win.iter().enumerate() {
                    let s = f * step + t;
                    for c in 0..comps {
                        framed.push(data[(b * len + s) * comps + c] * wt);
                    }
                }
            }
        }
        let fshape = [batch, frames, frame_len, comps];
        let (oshape, out) = dft_along(&framed, &fshape, 2, frame_len, false, self.onesided)?;
        put_f64(ctx, 0, x.dtype(), &oshape, &out)
    }
}

#[derive(Clone, Copy)]
enum WindowKind {
    Hann,
    Hamming,
    Blackman,
}

struct Window {
    kind: WindowKind,
    dtype: DType,
    periodic: bool,
}

fn create_window(init: &KernelInit<'_>, kind: WindowKind) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Window {
        kind,
        dtype: dtype_attr("output_datatype", init.int_or("output_datatype", 1)?)?,
        periodic: init.int_or("periodic", 1)? != 0,
    }))
}

pub(crate) fn create_hann(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_window(init, WindowKind::Hann)
}

pub(crate) fn create_hamming(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_window(init, WindowKind::Hamming)
}

pub(crate) fn create_blackman(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create_window(init, WindowKind::Blackman)
}

impl Kernel for Window {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let size = scalar_i64(&ctx.input(0)?, "size")?;
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| s <= 1 << 31)
            .ok_or_else(|| KernelError::invalid(format!("window size {size} is out of range")))?;
        let denom = if self.periodic {
            size
        } else {
            size.saturating_sub(1)
        } as f64;
        let out: Vec<f64> = (0..size)
            .map(|i| {
                if denom == 0.0 {
                    return 1.0;
                }
                let a = 2.0 * PI * i as f64 / denom;
                match self.kind {
                    WindowKind::Hann => {
                        let s = (PI * i as f64 / denom).sin();
                        s * s
                    }
                    WindowKind::Hamming => 25.0 / 46.0 - (21.0 / 46.0) * a.cos(),
                    WindowKind::Blackman => 0.42 - 0.5 * a.cos() + 0.08 * (2.0 * a).cos(),
                }
            })
            .collect();
        put_f64(ctx, 0, self.dtype, &[size], &out)
    }
}

struct MelWeightMatrix {
    dtype: DType,
}

pub(crate) fn create_mel(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(MelWeightMatrix {
        dtype: dtype_attr("output_datatype", init.int_or("output_datatype", 1)?)?,
    }))
}

impl Kernel for MelWeightMatrix {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let bins = scalar_i64(&ctx.input(0)?, "num_mel_bins")?;
        let dft_length = scalar_i64(&ctx.input(1)?, "dft_length")?;
        let rate = scalar_i64(&ctx.input(2)?, "sample_rate")?;
        let lo_t = ctx.input(3)?;
        let hi_t = ctx.input(4)?;
        if bins <= 0 || dft_length <= 0 || rate <= 0 || bins > 1 << 20 || dft_length > 1 << 30 {
            return Err(KernelError::invalid(format!(
                "num_mel_bins {bins}, dft_length {dft_length} and sample_rate {rate} must be positive"
            )));
        }
        let to_mel = |t: &rge_kernels::TensorRef<'_>| -> KernelResult<f64> {
            let v = scalar_f64(t, "edge hertz")?;
            // log1p in the input's precision, the rest in double (as the reference).
            let l = if t.dtype() == DType::Float {
                ((v as f32) / 700.0).ln_1p() as f64 * 2595.0
            } else {
                (v / 700.0).ln_1p() * 2595.0
            };
            Ok(l / 10f64.ln())
        };
        let (lo_mel, hi_mel) = (to_mel(&lo_t)?, to_mel(&hi_t)?);
        let bins = bins as usize;
        let spec_bins = (dft_length / 2 + 1) as usize;
        let step = (hi_mel - lo_mel) / (bins + 2) as f64;
        let freq: Vec<i64> = (0..bins + 2)
            .map(|i| {
                let mel = i as f64 * step + lo_mel;
                let hz = 700.0 * (mel / 2595.0 * 10f64.ln()).exp_m1();
                (((dft_length + 1) as f64 * hz) / rate as f64).floor() as i64
            })
            .collect();
        let mut out = vec![0.0f64; spec_bins * bins];
        let mut set = |j: i64, i: usize, v: f64| {
            if (0..spec_bins as i64).contains(&j) {
                out[j as usize * bins + i] = v;
            }
        };
        for i in 0..bins {
            let (l, c, h) = (freq[i], freq[i + 1], freq[i + 2]);
            if c == l {
                set(c, i, 1.0);
            } else {
                for j in l.max(0)..=c.min(spec_bins as i64 - 1) {
                    set(j, i, (j - l) as f64 / (c - l) as f64);
                }
            }
            if h > c {
                for j in c.max(0)..h.min(spec_bins as i64) {
                    set(j, i, (h - j) as f64 / (h - c) as f64);
                }
            }
        }
        put_f64(ctx, 0, self.dtype, &[spec_bins, bins], &out)
    }
}
