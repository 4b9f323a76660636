//! Depthwise convolution over blocks of 16 channels: the kernel for small planes (MobileNet's
//! 28×28 and smaller layers), where the per-channel plane kernel ([`crate::depthwise`]) spends
//! more time on per-row bookkeeping than on arithmetic.
//!
//! A block's padded input is transposed into a `[hp, wp, 16]` scratch (the seed's NC1HWC0
//! with C0 = 16, private to the kernel), so each tap of each output pixel is one aligned
//! 16-channel vector times the tap's 16 weights, with no wasted lanes and no row ends. Eight
//! pixels are computed together (independent accumulators hide the FMA latency), in
//! registers from the bias to the activation, into a `[oh·ow, 16]` block transposed back into
//! the channels' planes. The padding is zeroed once per scratch: every block rewrites the same
//! in-image pixels. The same loops are compiled for AVX-512, AVX2+FMA and the baseline (the
//! scalar twin the tests compare against), chosen at run time.

use crate::depthwise::{DwGeometry, Isa};
use crate::gemm::{activation, Activation};
use rge_simd::{Scalar, Simd};

/// Channels per block (one AVX-512 vector, two AVX2 ones).
pub const BLOCK: usize = 16;

/// The largest input-plus-output block, in pixels, the kernel takes (512 KiB of scratch: it
/// stays in L2 while the block is computed); larger planes go to the plane kernel.
const MAX_BLOCK_PIXELS: usize = 8 * 1024;

/// The largest output plane, in pixels, for which the blocked kernel beats the plane kernel
/// (`examples/dw_time.rs`, medians of noisy runs). With AVX-512's in-register 16×16
/// transposes, up to 28×28 (MobileNetV2's 28×28, 192 channels: 0.09–0.15 ms against 0.10–0.12;
/// 14×14, 384: 0.05–0.06 against 0.09–0.10; at 56×56 the plane kernel wins, 0.27 against
/// 0.35–0.45). With AVX2's in-register 8×8 quarters (an EPYC), up to 16×16: 14×14 outputs
/// 0.063 against 0.073 ms (384 channels, stride 1) and 0.054 against 0.15 (576, stride 2);
/// at 28×28 the two are even at stride 1 (0.11–0.16 against 0.11–0.12). With the scalar
/// transposes of the baseline, up to 10×10 (256 channels: 0.04 against 0.05; 14×14:
/// 0.10–0.13 against 0.10–0.12).
fn max_faster_output_pixels(isa: Isa) -> usize {
    match isa {
        Isa::Avx512 => 32 * 32,
        Isa::Avx2 => 16 * 16,
        Isa::Scalar => 10 * 10,
    }
}

/// Whether a depthwise convolution of this geometry runs faster in blocks than in planes on
/// `isa`.
pub fn pays_off(g: &DwGeometry, isa: Isa) -> bool {
    g.oh * g.ow <= max_faster_output_pixels(isa)
}

/// What one blocked depthwise convolution needs, computed once: the padded block's size and
/// the scratch offsets of each output pixel and of each tap.
#[derive(Debug, Clone)]
pub struct DwBlockPlan {
    g: DwGeometry,
    /// Rows and columns of the padded input the outputs read.
    hp: usize,
    wp: usize,
    /// Per output pixel: where its top-left tap reads, in floats.
    pixels: Vec<usize>,
    /// Per tap (row-major over the filter): its offset from the pixel's, in floats.
    taps: Vec<usize>,
}

impl DwBlockPlan {
    /// The plan, or `None` when a block of this geometry is too large for the kernel.
    pub fn new(g: &DwGeometry) -> Option<Self> {
        if g.oh == 0 || g.ow == 0 || g.kh == 0 || g.kw == 0 {
            return None;
        }
        let (sh, sw) = (g.stride_h.max(1), g.stride_w.max(1));
        let hp = (g.oh - 1) * sh + (g.kh - 1) * g.dil_h + 1;
        let wp = (g.ow - 1) * sw + (g.kw - 1) * g.dil_w + 1;
        if hp * wp + g.oh * g.ow > MAX_BLOCK_PIXELS {
            return None;
        }
        let pixels = (0..g.oh)
            .flat_map(|oy| (0..g.ow).map(move |ox| (oy * sh * wp + ox * sw) * BLOCK))
            .collect();
        let taps = (0..g.kh)
            .flat_map(|i| (0..g.kw).map(move |j| (i * g.dil_h * wp + j * g.dil_w) * BLOCK))
            .collect();
        Some(DwBlockPlan {
            g: *g,
            hp,
            wp,
            pixels,
            taps,
        })
    }

    fn ohw(&self) -> usize {
        self.g.oh * self.g.ow
    }

    fn scratch_len(&self) -> usize {
        (self.hp * self.wp + self.ohw() + self.taps.len() + 1) * BLOCK
    }

    /// A zeroed scratch for [`block`](Self::block); reuse it for every block of this plan.
    pub fn scratch(&self) -> Vec<f32> {
        vec![0.0; self.scratch_len()]
    }

    /// Up to 16 channels: `out` (`[nc, oh, ow]`) = `act(conv(x) + bias)` from their images `x`
    /// (`[nc, h, w]`) and weights (`[nc, kh·kw]`), `nc` being `out.len() / (oh·ow)`, with a
    /// `scratch` from [`scratch`](Self::scratch). Falls back to the baseline when the CPU lacks
    /// `isa`.
    ///
    /// # Panics
    /// When `nc` is not in `1..=16` or a slice is shorter than the plan needs (a caller's bug,
    /// not bad input).
    #[allow(clippy::too_many_arguments)]
    pub fn block(
        &self,
        isa: Isa,
        x: &[f32],
        wts: &[f32],
        bias: Option<&[f32]>,
        act: &Activation,
        out: &mut [f32],
        scratch: &mut [f32],
    ) {
        let g = &self.g;
        let nc = out.len() / self.ohw();
        assert!((1..=BLOCK).contains(&nc) && out.len() == nc * self.ohw());
        assert!(x.len() >= nc * g.h * g.w && wts.len() >= nc * self.taps.len());
        assert!(bias.is_none_or(|b| b.len() >= nc) && scratch.len() >= self.scratch_len());
        let (inp, rest) = scratch.split_at_mut(self.hp * self.wp * BLOCK);
        let (ob, rest) = rest.split_at_mut(self.ohw() * BLOCK);
        let (wb, bb) = rest.split_at_mut(self.taps.len() * BLOCK);
        let taps = self.taps.len();
        for c in 0..nc {
            for t in 0..taps {
                wb[t * BLOCK + c] = wts[c * taps + t];
            }
            bb[c] = bias.map_or(0.0, |b| b[c]);
        }
        let io = BlockIo {
            plan: self,
            x,
            nc,
            out,
            inp,
            ob,
        };
        let (wb, bb) = (&*wb, &*bb);
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if Isa::Avx512.is_available() => {
                // SAFETY: AVX-512F is available (checked just above).
                unsafe { block_avx512(io, wb, bb, act) }
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 if Isa::Avx2.is_available() => {
                // SAFETY: AVX2 and FMA are available (checked just above).
                unsafe { block_avx2(io, wb, bb, act) }
            }
            _ => block_simd(Scalar, io, wb, bb, act),
        }
    }
}

/// One block's images, output planes and scratch (sizes checked by [`DwBlockPlan::block`]).
struct BlockIo<'a> {
    plan: &'a DwBlockPlan,
    /// `[nc, h, w]`.
    x: &'a [f32],
    nc: usize,
    /// `[nc, oh·ow]`.
    out: &'a mut [f32],
    /// The padded input block, `[hp, wp, 16]`, and the output block, `[oh·ow, 16]`.
    inp: &'a mut [f32],
    ob: &'a mut [f32],
}

/// A block: its images transposed in, its pixels computed, transposed back out, all with the
/// ISA's 16×16 transposes.
#[inline(always)]
fn block_simd<S: Simd>(s: S, io: BlockIo<'_>, wb: &[f32], bb: &[f32], act: &Activation) {
    let BlockIo {
        plan,
        x,
        nc,
        out,
        inp,
        ob,
    } = io;
    transpose_in(s, plan, x, nc, inp);
    let args = BlockArgs {
        plan,
        inp,
        wb,
        bb,
        act,
    };
    pixels(s, &args, ob);
    let ohw = plan.ohw();
    for p0 in (0..ohw).step_by(BLOCK) {
        let n = (ohw - p0).min(BLOCK);
        // SAFETY: pixels `p0..p0 + n` of the output block (`[ohw, 16]`) and of the `nc`
        // output planes (`[nc, ohw]`, `nc <= 16`) exist.
        unsafe {
            s.transpose16(
                ob.as_ptr().add(p0 * BLOCK),
                BLOCK,
                out.as_mut_ptr().add(p0),
                ohw,
                n,
                nc,
            )
        };
    }
}

/// Copies the `nc` channel images into the block's padded `[hp, wp, 16]` layout, 16 pixels of
/// a row at a time; the padding (and the lanes past `nc`) stay as they were.
#[inline(always)]
fn transpose_in<S: Simd>(s: S, plan: &DwBlockPlan, x: &[f32], nc: usize, inp: &mut [f32]) {
    let g = &plan.g;
    let rows = plan.hp.saturating_sub(g.pad_top).min(g.h);
    let cols = plan.wp.saturating_sub(g.pad_left).min(g.w);
    for iy in 0..rows {
        for ix in (0..cols).step_by(BLOCK) {
            let n = (cols - ix).min(BLOCK);
            let at = ((iy + g.pad_top) * plan.wp + g.pad_left + ix) * BLOCK;
            // SAFETY: each of the `nc` images holds row `iy`'s pixels `ix..ix + n` (`cols <=
            // w`); the block holds their `n` pixels of 16 floats (`pad_left + cols <= wp`,
            // `pad_top + rows <= hp`).
            unsafe {
                s.transpose16(
                    x.as_ptr().add(iy * g.w + ix),
                    g.h * g.w,
                    inp.as_mut_ptr().add(at),
                    BLOCK,
                    nc,
                    n,
                )
            };
        }
    }
}

/// The inputs of one block's arithmetic.
struct BlockArgs<'a> {
    plan: &'a DwBlockPlan,
    /// The padded input block, `[hp, wp, 16]`.
    inp: &'a [f32],
    /// Weights, `[taps, 16]`, and bias, `[16]`.
    wb: &'a [f32],
    bb: &'a [f32],
    act: &'a Activation,
}

/// Every output pixel of the block into `ob` (`[oh·ow, 16]`), eight pixels at a time (four
/// for AVX2's two vectors per pixel, one for the baseline's sixteen).
#[inline(always)]
fn pixels<S: Simd>(s: S, a: &BlockArgs<'_>, ob: &mut [f32]) {
    match S::LANES {
        1 => pixel_runs::<S, 16, 16>(s, a, ob),
        8 => pixel_runs::<S, 8, 2>(s, a, ob),
        _ => pixel_runs::<S, 8, 1>(s, a, ob),
    }
}

/// `WIDE` accumulators at a time, then `ONE` (a pixel's vectors) for the last pixels.
#[inline(always)]
fn pixel_runs<S: Simd, const WIDE: usize, const ONE: usize>(
    s: S,
    a: &BlockArgs<'_>,
    ob: &mut [f32],
) {
    let per_pixel = BLOCK / S::LANES;
    assert!(
        ONE == per_pixel
            && WIDE.is_multiple_of(per_pixel)
            && ob.len() >= a.plan.pixels.len() * BLOCK
    );
    let (wide, n) = (WIDE / per_pixel, a.plan.pixels.len());
    let mut p = 0;
    // SAFETY (both calls): pixels `[p, p + count)` are below `n`, so their stores lie in `ob`
    // (checked above), and every pixel's taps read inside the padded block (`DwBlockPlan::new`
    // sized it for the last pixel's last tap).
    while p + wide <= n {
        unsafe { chunk::<S, WIDE>(s, a, p, ob.as_mut_ptr()) };
        p += wide;
    }
    while p < n {
        unsafe { chunk::<S, ONE>(s, a, p, ob.as_mut_ptr()) };
        p += 1;
    }
}

/// `NA / (16 / LANES)` pixels from `p0`: every tap accumulated in registers from the bias,
/// activated, stored once.
///
/// # Safety
/// Those pixels must exist in the plan and `ob` must hold them.
#[inline(always)]
unsafe fn chunk<S: Simd, const NA: usize>(s: S, a: &BlockArgs<'_>, p0: usize, ob: *mut f32) {
    let per_pixel = BLOCK / S::LANES;
    let inp = a.inp.as_ptr();
    let bases: [usize; NA] =
        std::array::from_fn(|k| a.plan.pixels[p0 + k / per_pixel] + k % per_pixel * S::LANES);
    // SAFETY: the bias holds 16 floats; every read below is a pixel's tap inside the block.
    // A loop, not `array::from_fn`: a closure does not inherit the ISA's target features, so
    // its loads would be calls.
    let mut acc = [s.splat(0.0); NA];
    for (k, acc) in acc.iter_mut().enumerate() {
        *acc = unsafe { s.load(a.bb.as_ptr().add(k % per_pixel * S::LANES)) };
    }
    for (t, &off) in a.plan.taps.iter().enumerate() {
        let w = a.wb[t * BLOCK..(t + 1) * BLOCK].as_ptr();
        for (k, acc) in acc.iter_mut().enumerate() {
            // SAFETY: as above.
            unsafe {
                let wv = s.load(w.add(k % per_pixel * S::LANES));
                *acc = s.mul_add(wv, s.load(inp.add(bases[k] + off)), *acc);
            }
        }
    }
    for (k, acc) in acc.iter().enumerate() {
        // SAFETY: the caller's contract (pixel p0 + k / per_pixel's vector k % per_pixel).
        unsafe {
            s.store(
                ob.add(p0 * BLOCK + k * S::LANES),
                activation(s, a.act, *acc),
            )
        };
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn block_avx512(io: BlockIo<'_>, wb: &[f32], bb: &[f32], act: &Activation) {
    // SAFETY: reached only from `DwBlockPlan::block` after the ISA check.
    let s = unsafe { rge_simd::Avx512::new_unchecked() };
    block_simd(s, io, wb, bb, act)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn block_avx2(io: BlockIo<'_>, wb: &[f32], bb: &[f32], act: &Activation) {
    // SAFETY: reached only from `DwBlockPlan::block` after the ISA check.
    let s = unsafe { rge_simd::Avx2::new_unchecked() };
    block_simd(s, io, wb, bb, act)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::depthwise::DwPlan;

    /// Every ISA against the plane kernel's baseline (itself checked against the naive sum),
    /// over full and partial blocks, strides, dilations, asymmetric padding and filters, with
    /// the scratch reused from a block of other channels.
    #[test]
    fn every_isa_matches_the_plane_kernel() {
        let mut rnd = crate::test_values::values(11);
        // (h, w, kh, kw, stride_h, stride_w, dilation, pad_top, pad_left, channels)
        for &(h, w, kh, kw, sh, sw, d, pt, pl, nc) in &[
            (7, 7, 3, 3, 1, 1, 1, 1, 1, 16),
            (14, 14, 3, 3, 2, 2, 1, 1, 1, 16),
            (14, 14, 3, 3, 2, 2, 1, 0, 0, 5),
            (9, 11, 5, 5, 1, 1, 2, 4, 3, 13),
            (1, 1, 3, 3, 1, 1, 1, 1, 1, 16),
            (6, 13, 3, 5, 1, 2, 1, 2, 0, 1),
            (28, 28, 3, 3, 1, 1, 1, 1, 1, 9),
            (11, 6, 1, 3, 2, 1, 2, 0, 1, 16),
        ] {
            let oh = (h + 2 * pt - ((kh - 1) * d + 1)) / sh + 1;
            let ow = (w + 2 * pl - ((kw - 1) * d + 1)) / sw + 1;
            let g = DwGeometry {
                h,
                w,
                kh,
                kw,
                stride_h: sh,
                stride_w: sw,
                dil_h: d,
                dil_w: d,
                pad_top: pt,
                pad_left: pl,
                oh,
                ow,
            };
            let taps = kh * kw;
            let x: Vec<f32> = (0..nc * h * w).map(|_| rnd()).collect();
            let other: Vec<f32> = (0..BLOCK * h * w).map(|_| rnd()).collect();
            let wts: Vec<f32> = (0..BLOCK * taps).map(|_| rnd()).collect();
            let bias: Vec<f32> = (0..BLOCK).map(|_| rnd()).collect();
            let plane = DwPlan::new(&g);
            let mut plane_scratch = plane.scratch();
            let mut want = vec![0.0; nc * oh * ow];
            for (c, o) in want.chunks_exact_mut(oh * ow).enumerate() {
                let (img, wc) = (&x[c * h * w..], &wts[c * taps..]);
                let act = Activation::Relu;
                plane.plane(Isa::Scalar, img, wc, bias[c], &act, o, &mut plane_scratch);
            }
            let plan = DwBlockPlan::new(&g).expect("a small block");
            for isa in Isa::available() {
                let mut scratch = plan.scratch();
                let mut first = vec![0.0; BLOCK * oh * ow];
                let none = Activation::None;
                plan.block(isa, &other, &wts, None, &none, &mut first, &mut scratch);
                let mut got = vec![f32::NAN; nc * oh * ow];
                let act = Activation::Relu;
                plan.block(isa, &x, &wts, Some(&bias), &act, &mut got, &mut scratch);
                for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-5,
                        "{isa:?} {g:?} nc {nc} at {i}: {a} vs {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn large_planes_are_left_to_the_plane_kernel() {
        let g = DwGeometry {
            h: 112,
            w: 112,
            kh: 3,
            kw: 3,
            stride_h: 1,
            stride_w: 1,
            dil_h: 1,
            dil_w: 1,
            pad_top: 1,
            pad_left: 1,
            oh: 112,
            ow: 112,
        };
        assert!(DwBlockPlan::new(&g).is_none() && !pays_off(&g, Isa::Avx512));
        let middle = DwGeometry {
            h: 28,
            w: 28,
            oh: 28,
            ow: 28,
            ..g
        };
        assert!(DwBlockPlan::new(&middle).is_some() && pays_off(&middle, Isa::Avx512));
        assert!(!pays_off(&middle, Isa::Avx2) && !pays_off(&middle, Isa::Scalar));
        let small = DwGeometry {
            h: 7,
            w: 7,
            oh: 7,
            ow: 7,
            ..g
        };
        assert!(DwBlockPlan::new(&small).is_some() && pays_off(&small, Isa::Scalar));
    }
}
