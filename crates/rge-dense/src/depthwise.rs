//! Depthwise 2-D convolution (groups = input channels = output channels, MobileNet's 3×3
//! layers): a direct kernel, because as a GEMM each channel is a 1-row product that no
//! microkernel can keep busy.
//!
//! Each channel's padded image is split into its `stride_h × stride_w` phase sub-images
//! (phase `(pr, pc)` holds padded pixels `(r·sh + pr, c·sw + pc)`), each `wq` columns wide,
//! `wq` being the output width plus the filter's reach in that phase. Then every tap of the
//! filter reads one phase at one fixed offset from the output pixel's flat index `oy·wq + ox`:
//! the whole plane is one contiguous vector loop (rows do not end a vector, so 7×7 planes
//! waste little), and the `wq − ow` extra columns of each row are dropped when the result is
//! copied out. The tap offsets are computed once per convolution ([`DwPlan`]); the padding
//! zeros are the same for every channel, so the scratch is zeroed once and each channel only
//! rewrites the pixels inside its image. The same loops are compiled for AVX-512, AVX2+FMA and
//! the baseline, chosen at run time ([`DwPlan::plane`]); the baseline is the scalar twin the
//! tests compare against.

/// The geometry of one depthwise convolution over a `[C, H, W]` image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DwGeometry {
    pub h: usize,
    pub w: usize,
    pub kh: usize,
    pub kw: usize,
    pub stride_h: usize,
    pub stride_w: usize,
    pub dil_h: usize,
    pub dil_w: usize,
    pub pad_top: usize,
    pub pad_left: usize,
    pub oh: usize,
    pub ow: usize,
}

impl DwGeometry {
    /// A 1×1 filter at stride 1 without padding: every output pixel is its input pixel, so an
    /// ungrouped convolution is one GEMM over the pixels.
    pub fn is_pointwise(&self) -> bool {
        self.kh == 1
            && self.kw == 1
            && self.stride_h == 1
            && self.stride_w == 1
            && self.pad_top == 0
            && self.pad_left == 0
            && self.oh == self.h
            && self.ow == self.w
    }
}

use crate::gather::{deinterleave, gather_strided};
/// The instruction sets the kernel is compiled for: the GEMM's, detected the same way.
pub use crate::gemm::Isa;
use crate::gemm::{activation, Activation};
use rge_simd::{Scalar, Simd};

/// Output values computed together by the narrowest chunk (one AVX-512 register).
const LANES: usize = 16;

/// What one depthwise convolution needs per channel, computed once: the phase images' sizes
/// and each tap's offset into the scratch.
#[derive(Debug, Clone)]
pub struct DwPlan {
    g: DwGeometry,
    /// Rows and columns of each phase image.
    hq: usize,
    wq: usize,
    /// Distance between two phase images in the scratch (`hq·wq` plus a vector of slack).
    phase_stride: usize,
    /// Per tap (row-major over the filter): where its input for output pixel 0 is.
    offsets: Vec<usize>,
}

impl DwPlan {
    pub fn new(g: &DwGeometry) -> Self {
        let (sh, sw) = (g.stride_h.max(1), g.stride_w.max(1));
        let hq = g.oh + (g.kh.max(1) - 1) * g.dil_h / sh;
        let wq = g.ow + (g.kw.max(1) - 1) * g.dil_w / sw;
        // The last chunk rounds the flat output up to a vector; its extra reads land in the
        // slack after the phase image.
        let phase_stride = hq * wq + LANES;
        let offsets = (0..g.kh)
            .flat_map(|i| (0..g.kw).map(move |j| (i * g.dil_h, j * g.dil_w)))
            .map(|(r, c)| {
                let phase = (r % sh) * sw + c % sw;
                phase * phase_stride + (r / sh) * wq + c / sw
            })
            .collect();
        DwPlan {
            g: *g,
            hq,
            wq,
            phase_stride,
            offsets,
        }
    }

    fn phases(&self) -> usize {
        self.g.stride_h.max(1) * self.g.stride_w.max(1)
    }

    /// The flat output computed per plane: `oh` rows of `wq`, rounded up to a vector.
    fn flat_len(&self) -> usize {
        (self.g.oh * self.wq).next_multiple_of(LANES)
    }

    /// A zeroed scratch for [`plane`](Self::plane); reuse it for every channel of this plan.
    pub fn scratch(&self) -> Vec<f32> {
        vec![0.0; self.scratch_len()]
    }

    /// Copies image `x` into the phase images. Only pixels inside the image are written: the
    /// padding stays as the zeroed scratch left it, the same for every channel.
    #[inline(always)]
    fn split_phases(&self, x: &[f32], phases: &mut [f32]) {
        let g = &self.g;
        let (sh, sw) = (g.stride_h.max(1), g.stride_w.max(1));
        // Per phase column: its columns `[c_lo, c_hi)` whose padded column c·sw + pc is inside
        // the image, and the image column of `c_lo` (below sw).
        let cols = |pc: usize| {
            let c_lo = g.pad_left.saturating_sub(pc).div_ceil(sw);
            let end = g.pad_left + g.w;
            let c_hi = if end > pc {
                (end - pc).div_ceil(sw).min(self.wq)
            } else {
                0
            };
            (c_lo, c_hi.max(c_lo), c_lo * sw + pc - g.pad_left)
        };
        for pr in 0..sh {
            let rows = (0..self.hq).filter_map(|r| {
                let iy = (r * sh + pr) as isize - g.pad_top as isize;
                (iy >= 0 && (iy as usize) < g.h).then_some((r, iy as usize))
            });
            if sw == 2 {
                // Both phase columns in one pass: the image columns of one start at 0, the
                // other's at 1.
                let (a, b) = (cols(0), cols(1));
                let (even_pc, even, odd) = if a.2 == 0 { (0, a, b) } else { (1, b, a) };
                let base = pr * sw * self.phase_stride;
                let (p0, p1) = phases[base..].split_at_mut(self.phase_stride);
                let (pe, po) = if even_pc == 0 { (p0, p1) } else { (p1, p0) };
                for (r, iy) in rows {
                    let src = &x[iy * g.w..(iy + 1) * g.w];
                    deinterleave(
                        src,
                        &mut pe[r * self.wq + even.0..r * self.wq + even.1],
                        &mut po[r * self.wq + odd.0..r * self.wq + odd.1],
                    );
                }
                continue;
            }
            for pc in 0..sw {
                let (c_lo, c_hi, first) = cols(pc);
                if c_hi == c_lo {
                    continue;
                }
                let img = &mut phases[(pr * sw + pc) * self.phase_stride..];
                for (r, iy) in rows.clone() {
                    let src = &x[iy * g.w + first..];
                    gather_strided(&mut img[r * self.wq + c_lo..r * self.wq + c_hi], src, sw);
                }
            }
        }
    }

    /// One channel: `out` (`[oh, ow]`) = `act(conv(x) + bias)` from image `x` (`[h, w]`)
    /// and its `kh·kw` weights, with a `scratch` from [`scratch`](Self::scratch) of this plan.
    /// Falls back to the baseline when the CPU lacks `isa`.
    ///
    /// # Panics
    /// When a slice is shorter than the plan needs (a caller's bug, not bad input).
    #[allow(clippy::too_many_arguments)]
    pub fn plane(
        &self,
        isa: Isa,
        x: &[f32],
        wts: &[f32],
        bias: f32,
        act: &Activation,
        out: &mut [f32],
        scratch: &mut [f32],
    ) {
        let g = &self.g;
        assert!(x.len() >= g.h * g.w && wts.len() >= self.offsets.len());
        assert!(out.len() >= g.oh * g.ow && scratch.len() >= self.scratch_len());
        let args = PlaneArgs {
            plan: self,
            x,
            wts,
            bias,
            act,
        };
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if Isa::Avx512.is_available() => {
                // SAFETY: AVX-512F is available (checked just above).
                unsafe { plane_avx512(&args, out, scratch) }
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 if Isa::Avx2.is_available() => {
                // SAFETY: AVX2 and FMA are available (checked just above).
                unsafe { plane_avx2(&args, out, scratch) }
            }
            _ => plane_simd(Scalar, &args, out, scratch),
        }
    }

    fn scratch_len(&self) -> usize {
        self.phases() * self.phase_stride + self.flat_len()
    }
}

/// The inputs of one channel's plane.
struct PlaneArgs<'a> {
    plan: &'a DwPlan,
    x: &'a [f32],
    wts: &'a [f32],
    bias: f32,
    act: &'a Activation,
}

/// The plane loop over `S`'s vectors (lengths checked by [`DwPlan::plane`]).
#[inline(always)]
fn plane_simd<S: Simd>(s: S, a: &PlaneArgs<'_>, out: &mut [f32], scratch: &mut [f32]) {
    let plan = a.plan;
    let (phases, acc) = scratch.split_at_mut(plan.phases() * plan.phase_stride);
    plan.split_phases(a.x, phases);
    let flat = plan.flat_len();
    let lanes = S::LANES;
    let (src, dst) = (phases.as_ptr(), acc.as_mut_ptr());
    // Wide chunks first (independent accumulators hide the FMA latency), then narrower ones;
    // `flat` is a multiple of 16, hence of every ISA's lanes.
    let mut p = 0;
    // SAFETY (every chunk call): chunks end at or before `flat`, within `acc`; each tap reads
    // `[p + off, p + off + width)` with `off` at most the last phase's start plus
    // `(hq - oh)·wq + wq - ow`, so the reads end within that phase image's vector of slack.
    unsafe {
        while p + 8 * lanes <= flat {
            chunk::<S, 8>(s, a, src.add(p), dst.add(p));
            p += 8 * lanes;
        }
        if p + 4 * lanes <= flat {
            chunk::<S, 4>(s, a, src.add(p), dst.add(p));
            p += 4 * lanes;
        }
        if p + 2 * lanes <= flat {
            chunk::<S, 2>(s, a, src.add(p), dst.add(p));
            p += 2 * lanes;
        }
        while p < flat {
            chunk::<S, 1>(s, a, src.add(p), dst.add(p));
            p += lanes;
        }
    }
    let (ow, wq) = (plan.g.ow, plan.wq);
    for (orow, arow) in out.chunks_exact_mut(ow).zip(acc.chunks(wq)) {
        orow.copy_from_slice(&arow[..ow]);
    }
}

/// `NV` vectors of flat output at `dst`: every tap accumulated in registers (from the bias),
/// activated, stored once.
///
/// # Safety
/// `src + off` for every tap offset and `dst` valid for `NV·LANES` floats.
#[inline(always)]
unsafe fn chunk<S: Simd, const NV: usize>(s: S, a: &PlaneArgs<'_>, src: *const f32, dst: *mut f32) {
    let mut acc = [s.splat(a.bias); NV];
    for (&off, &w) in a.plan.offsets.iter().zip(a.wts) {
        let wv = s.splat(w);
        for (v, acc) in acc.iter_mut().enumerate() {
            // SAFETY: the caller's contract.
            *acc = s.mul_add(wv, unsafe { s.load(src.add(off + v * S::LANES)) }, *acc);
        }
    }
    for (v, acc) in acc.iter().enumerate() {
        // SAFETY: the caller's contract.
        unsafe { s.store(dst.add(v * S::LANES), activation(s, a.act, *acc)) };
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn plane_avx512(a: &PlaneArgs<'_>, out: &mut [f32], scratch: &mut [f32]) {
    // SAFETY: reached only from `DwPlan::plane` after the ISA check.
    let s = unsafe { rge_simd::Avx512::new_unchecked() };
    plane_simd(s, a, out, scratch)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn plane_avx2(a: &PlaneArgs<'_>, out: &mut [f32], scratch: &mut [f32]) {
    // SAFETY: reached only from `DwPlan::plane` after the ISA check.
    let s = unsafe { rge_simd::Avx2::new_unchecked() };
    plane_simd(s, a, out, scratch)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f32], wts: &[f32], g: &DwGeometry) -> Vec<f32> {
        let mut out = vec![0.0; g.oh * g.ow];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                let mut s = 0.0f64;
                for i in 0..g.kh {
                    for j in 0..g.kw {
                        let iy = (oy * g.stride_h + i * g.dil_h) as isize - g.pad_top as isize;
                        let ix = (ox * g.stride_w + j * g.dil_w) as isize - g.pad_left as isize;
                        if iy >= 0 && ix >= 0 && (iy as usize) < g.h && (ix as usize) < g.w {
                            s += f64::from(wts[i * g.kw + j])
                                * f64::from(x[iy as usize * g.w + ix as usize]);
                        }
                    }
                }
                out[oy * g.ow + ox] = s as f32;
            }
        }
        out
    }

    #[test]
    fn every_isa_matches_the_naive_sum() {
        let mut rnd = crate::test_values::values(7);
        // (h, w, kh, kw, stride_h, stride_w, dilation, pad)
        for &(h, w, kh, kw, sh, sw, d, p) in &[
            (7, 9, 3, 3, 1, 1, 1, 1),
            (8, 8, 3, 3, 2, 2, 1, 1),
            (5, 13, 5, 5, 1, 1, 2, 4),
            (1, 1, 3, 3, 1, 1, 1, 1),
            (3, 4, 3, 3, 2, 2, 1, 0),
            (16, 17, 7, 7, 3, 3, 1, 3),
            (29, 31, 3, 3, 1, 1, 1, 1),
            (30, 33, 3, 3, 2, 2, 1, 1),
            (9, 40, 3, 5, 1, 2, 1, 2),
            (11, 6, 1, 3, 2, 1, 2, 1),
            (17, 19, 3, 3, 2, 2, 2, 3),
            (6, 6, 3, 3, 1, 1, 1, 0),
        ] {
            let oh = (h + 2 * p - ((kh - 1) * d + 1)) / sh + 1;
            let ow = (w + 2 * p - ((kw - 1) * d + 1)) / sw + 1;
            let g = DwGeometry {
                h,
                w,
                kh,
                kw,
                stride_h: sh,
                stride_w: sw,
                dil_h: d,
                dil_w: d,
                pad_top: p,
                pad_left: p,
                oh,
                ow,
            };
            let x: Vec<f32> = (0..h * w).map(|_| rnd()).collect();
            let wts: Vec<f32> = (0..kh * kw).map(|_| rnd()).collect();
            let other: Vec<f32> = (0..h * w).map(|_| rnd()).collect();
            let bias = rnd();
            let relu = Activation::Relu;
            let want: Vec<f32> = naive(&x, &wts, &g)
                .iter()
                .map(|v| (v + bias).max(0.0))
                .collect();
            for isa in Isa::available() {
                let mut got = vec![0.0; oh * ow];
                let plan = DwPlan::new(&g);
                let mut scratch = plan.scratch();
                // Another channel first: the one checked runs on its leftovers.
                plan.plane(
                    isa,
                    &other,
                    &wts,
                    0.0,
                    &Activation::None,
                    &mut got,
                    &mut scratch,
                );
                plan.plane(isa, &x, &wts, bias, &relu, &mut got, &mut scratch);
                for (a, b) in got.iter().zip(&want) {
                    assert!((a - b).abs() <= 1e-5, "{isa:?} {g:?}: {a} vs {b}");
                }
            }
        }
    }
}
