//! `ai.rge` MaxPoolNhwc and AveragePoolNhwc: 2-D pooling on channels-last data (X
//! `[N, H, W, C]`, Y `[N, OH, OW, C]`), the pools of the dense engine's channels-last regions
//! (`layout.rs`), so that a pool between two convolutions (ResNet's stem, YOLO's SPPF) does not
//! end a region.
//!
//! Channels-last makes a window's taps whole channel vectors: an output pixel is the max (or
//! sum) of its valid taps' vectors, with no strided gathers and no padding tests inside the
//! loop (each output row and column knows its valid taps). Attributes are the ONNX pools'
//! (kernel_shape, strides, pads, auto_pad, dilations, ceil_mode, count_include_pad), with the
//! output-size rule of the `cpu` kernels. A window with no input element gives 0, as the
//! reference does. NaN propagates: a NaN tap makes the max NaN.

use rayon::prelude::*;
use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};
use rge_kernels_nn::{WindowAttrs, WindowTaps};
use rge_simd::{Isa, Scalar, Simd};

use crate::kernels::f32s;

/// The ops.
pub const MAX_POOL_NHWC: &str = "MaxPoolNhwc";
pub const AVG_POOL_NHWC: &str = "AveragePoolNhwc";

/// Input values read by a pool worth splitting over threads.
const POOL_PAR_WORK: usize = 64 * 1024;

/// Max or average (counting the padded taps or not).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Max,
    Average { include_pad: bool },
}

/// The kernel: its window and kind.
pub struct PoolNhwcKernel {
    window: WindowAttrs,
    kind: Kind,
}

/// Builds the kernel.
pub fn create_pool_nhwc(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let kind = match init.op_type {
        MAX_POOL_NHWC => Kind::Max,
        AVG_POOL_NHWC => Kind::Average {
            include_pad: init.int_or("count_include_pad", 0)? != 0,
        },
        other => {
            return Err(KernelError::unsupported(format!(
                "`{other}` is not a channels-last pool"
            )))
        }
    };
    let window = WindowAttrs {
        // The cpu kernels' output-size rule (a short padded input still gives one window).
        short_input_window: true,
        ..WindowAttrs::parse(init)?
    };
    if window.kernel.as_ref().is_none_or(|k| k.len() != 2) {
        return Err(KernelError::attr(
            "kernel_shape",
            "a channels-last pool needs a 2-D kernel_shape",
        ));
    }
    Ok(Box::new(PoolNhwcKernel { window, kind }))
}

/// One image's geometry, resolved once per run.
struct Plan {
    w: usize,
    c: usize,
    dil: (usize, usize),
    rows: Vec<WindowTaps>,
    cols: Vec<WindowTaps>,
    kind: Kind,
}

impl Plan {
    /// The divisor of output pixel (`r`, `q`), or 0 for a max.
    fn divisor(&self, r: usize, q: usize) -> f32 {
        let (rt, ct) = (self.rows[r], self.cols[q]);
        match self.kind {
            Kind::Max => 0.0,
            Kind::Average { include_pad: true } => (rt.padded * ct.padded) as f32,
            Kind::Average { include_pad: false } => {
                ((rt.end - rt.first) * (ct.end - ct.first)) as f32
            }
        }
    }
}

impl Kernel for PoolNhwcKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let shape = x.shape().to_vec();
        if shape.len() != 4 {
            return Err(KernelError::invalid(format!(
                "a channels-last pool takes [N, H, W, C]; got shape {shape:?}"
            )));
        }
        let (n, h, w, c) = (shape[0], shape[1], shape[2], shape[3]);
        let g = self.window.resolve(&[h, w], None)?;
        let (oh, ow) = (g.out[0], g.out[1]);
        let plan = Plan {
            w,
            c,
            dil: (g.dilations[0], g.dilations[1]),
            rows: (0..oh).map(|o| g.taps(o, 0)).collect(),
            cols: (0..ow).map(|o| g.taps(o, 1)).collect(),
            kind: self.kind,
        };
        let xs = f32s(&x, "X")?;
        let threads = ctx.threads().max(1);
        let out = ctx.output::<f32>(0, &[n, oh, ow, c])?;
        if out.is_empty() {
            return Ok(());
        }
        let isa = Isa::best();
        let row_len = ow * c;
        let image = h * w * c;
        let run = |i: usize, y: &mut [f32]| {
            let (img, r) = (i / oh, i % oh);
            pool_row(isa, &plan, &xs[img * image..][..image], r, y);
        };
        let work = out.len() * g.kernel[0] * g.kernel[1];
        if threads > 1 && work >= POOL_PAR_WORK && n * oh > 1 {
            out.par_chunks_mut(row_len)
                .enumerate()
                .for_each(|(i, y)| run(i, y));
        } else {
            out.chunks_mut(row_len)
                .enumerate()
                .for_each(|(i, y)| run(i, y));
        }
        Ok(())
    }
}

/// Output row `r` of one image (`x`, `[H, W, C]`) into `y` (`[OW, C]`), on `isa` (the
/// baseline where the CPU lacks it).
fn pool_row(isa: Isa, plan: &Plan, x: &[f32], r: usize, y: &mut [f32]) {
    let rt = plan.rows[r];
    assert!(y.len() == plan.cols.len() * plan.c);
    // The taps read below lie inside the image: checked once per row, not per load.
    if rt.end > rt.first {
        let last_row = (rt.start + ((rt.end - 1) * plan.dil.0) as isize) as usize;
        assert!((last_row + 1) * plan.w * plan.c <= x.len());
    }
    // SAFETY (each arm): the ISA is available (checked in the guard); the row's taps lie in
    // `x` (checked above; the columns' by `taps`), its outputs in `y`.
    unsafe {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if isa.is_available() => row_avx512(plan, x, r, y),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 if isa.is_available() => row_avx2(plan, x, r, y),
            _ => row_simd(Scalar, plan, x, r, y),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn row_avx512(plan: &Plan, x: &[f32], r: usize, y: &mut [f32]) {
    // SAFETY: reached only after the ISA check, with `pool_row`'s bounds.
    unsafe { row_simd(rge_simd::Avx512::new_unchecked(), plan, x, r, y) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn row_avx2(plan: &Plan, x: &[f32], r: usize, y: &mut [f32]) {
    // SAFETY: reached only after the ISA check, with `pool_row`'s bounds.
    unsafe { row_simd(rge_simd::Avx2::new_unchecked(), plan, x, r, y) }
}

/// Vectors of channels per step: enough independent chains to hide the max's latency.
const U: usize = 4;

/// # Safety
/// Every tap of row `r` lies inside `x` (see [`pool_row`]); `y` holds the row's outputs.
#[inline(always)]
unsafe fn row_simd<S: Simd>(s: S, plan: &Plan, x: &[f32], r: usize, y: &mut [f32]) {
    let rt = plan.rows[r];
    let (c, w) = (plan.c, plan.w);
    let max = plan.kind == Kind::Max;
    let init = if max { f32::NEG_INFINITY } else { 0.0 };
    let xp = x.as_ptr();
    for (q, ct) in plan.cols.iter().enumerate() {
        let yq = y[q * c..][..c].as_mut_ptr();
        if rt.first == rt.end || ct.first == ct.end {
            // No input element in the window: 0, as the reference gives.
            y[q * c..][..c].fill(0.0);
            continue;
        }
        let div = plan.divisor(r, q);
        let scale = s.splat(if max { 1.0 } else { 1.0 / div });
        let mut c0 = 0;
        while c0 < c {
            let full = c - c0 >= U * S::LANES;
            let width = if full {
                U * S::LANES
            } else {
                (c - c0).min(S::LANES)
            };
            let mut acc = [s.splat(init); U];
            for ky in rt.first..rt.end {
                let iy = (rt.start + (ky * plan.dil.0) as isize) as usize;
                for kx in ct.first..ct.end {
                    let ix = (ct.start + (kx * plan.dil.1) as isize) as usize;
                    // SAFETY: (iy, ix) lies in the image (the taps' ranges); channels
                    // `[c0, c0 + width)` exist.
                    let p = unsafe { xp.add((iy * w + ix) * c + c0) };
                    if full {
                        for (u, a) in acc.iter_mut().enumerate() {
                            // SAFETY: as above, `u·LANES + LANES <= width`.
                            let v = unsafe { s.load(p.add(u * S::LANES)) };
                            *a = combine(s, max, *a, v);
                        }
                    } else {
                        // SAFETY: as above, `width` lanes.
                        let v = unsafe { s.load_n(p, width, init) };
                        acc[0] = combine(s, max, acc[0], v);
                    }
                }
            }
            if full {
                for (u, a) in acc.iter().enumerate() {
                    // SAFETY: channels `[c0 + u·LANES, +LANES)` of output pixel `q`.
                    unsafe { s.store(yq.add(c0 + u * S::LANES), s.mul(*a, scale)) };
                }
            } else {
                // SAFETY: channels `[c0, c0 + width)` of output pixel `q`.
                unsafe { s.store_n(yq.add(c0), s.mul(acc[0], scale), width) };
            }
            c0 += width;
        }
    }
}

/// The running max (a NaN in either wins) or sum.
#[inline(always)]
fn combine<S: Simd>(s: S, max: bool, acc: S::V, v: S::V) -> S::V {
    if max {
        // `max(v, acc)` keeps a NaN `acc`; the select keeps a NaN `v`.
        s.select(s.is_nan(v), v, s.max(v, acc))
    } else {
        s.add(acc, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_kernels_nn::{AutoPad, Geometry};

    /// The pool in f64, straight from the definition, over NHWC data.
    fn naive(g: &Geometry, kind: Kind, x: &[f32], c: usize) -> Vec<f32> {
        let (h, w, oh, ow) = (g.input[0], g.input[1], g.out[0], g.out[1]);
        let mut out = vec![0.0; oh * ow * c];
        for r in 0..oh {
            for q in 0..ow {
                for ch in 0..c {
                    let (mut m, mut sum, mut n, mut padded) = (f32::NEG_INFINITY, 0.0f64, 0, 0);
                    let mut nan = false;
                    for ky in 0..g.kernel[0] {
                        for kx in 0..g.kernel[1] {
                            let iy = (r * g.strides[0] + ky * g.dilations[0]) as isize
                                - g.pads_begin[0] as isize;
                            let ix = (q * g.strides[1] + kx * g.dilations[1]) as isize
                                - g.pads_begin[1] as isize;
                            let in_pad = iy >= -(g.pads_begin[0] as isize)
                                && iy < (h + g.pads_end[0]) as isize
                                && ix >= -(g.pads_begin[1] as isize)
                                && ix < (w + g.pads_end[1]) as isize;
                            padded += usize::from(in_pad);
                            if iy < 0 || ix < 0 || iy >= h as isize || ix >= w as isize {
                                continue;
                            }
                            let v = x[(iy as usize * w + ix as usize) * c + ch];
                            nan |= v.is_nan();
                            m = m.max(v);
                            sum += f64::from(v);
                            n += 1;
                        }
                    }
                    out[(r * ow + q) * c + ch] = if n == 0 {
                        0.0
                    } else {
                        match kind {
                            Kind::Max if nan => f32::NAN,
                            Kind::Max => m,
                            Kind::Average { include_pad } => {
                                (sum / if include_pad { padded } else { n } as f64) as f32
                            }
                        }
                    };
                }
            }
        }
        out
    }

    /// Every ISA against the definition: kernels, strides, pads, dilations, ceil mode, channel
    /// counts that fill no vector, NaN inputs.
    #[test]
    fn every_isa_matches_the_definition() {
        let mut rnd = crate::test_values::values(7);
        // (h, w, k, stride, dilation, pads, ceil, c)
        for &(h, w, k, st, d, p, ceil, c) in &[
            (112, 112, 3, 2, 1, 1, false, 64),
            (9, 7, 3, 2, 1, 1, true, 5),
            (13, 13, 5, 1, 1, 2, false, 70),
            (8, 11, 2, 2, 1, 0, false, 17),
            (6, 6, 3, 1, 2, 2, false, 33),
            (3, 3, 3, 3, 1, 2, true, 16),
        ] {
            let win = WindowAttrs {
                auto_pad: AutoPad::NotSet,
                kernel: Some(vec![k, k]),
                strides: Some(vec![st, st]),
                dilations: Some(vec![d, d]),
                pads: Some(vec![p as i64; 4]),
                ceil_mode: ceil,
                short_input_window: true,
            };
            let g = win.resolve(&[h, w], None).unwrap();
            let mut x: Vec<f32> = (0..h * w * c).map(|_| rnd()).collect();
            x[c + 1] = f32::NAN;
            for kind in [
                Kind::Max,
                Kind::Average { include_pad: false },
                Kind::Average { include_pad: true },
            ] {
                let want = naive(&g, kind, &x, c);
                let plan = Plan {
                    w,
                    c,
                    dil: (d, d),
                    rows: (0..g.out[0]).map(|o| g.taps(o, 0)).collect(),
                    cols: (0..g.out[1]).map(|o| g.taps(o, 1)).collect(),
                    kind,
                };
                for isa in Isa::available() {
                    let mut got = vec![f32::NAN; want.len()];
                    for (r, y) in got.chunks_mut(g.out[1] * c).enumerate() {
                        pool_row(isa, &plan, &x, r, y);
                    }
                    for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                        assert!(
                            (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                            "{isa:?} {kind:?} {g:?} c {c} at {i}: {a} vs {b}"
                        );
                    }
                }
            }
        }
    }
}
