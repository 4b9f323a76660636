//! Depthwise 2-D convolution on channels-last data (`[H, W, C]` images): the kernel of the
//! dense engine's channels-last regions (`layout.rs`).
//!
//! Channels are contiguous, so each tap of an output pixel is a few full vectors of input
//! times the same vectors of weights (repacked once as `[kh·kw, C]`), whatever the stride or
//! dilation: no padded copy, no phase split, no transposes (the NCHW kernels need one of
//! them). Pixels whose taps all fall inside the image run several at a time (independent
//! accumulators hide the FMA latency when there are few channels); pixels at the borders run
//! one at a time over the taps that fall inside. Bias, residual and activation are applied in
//! registers. The same loops are compiled for AVX-512, AVX2+FMA and the baseline (the scalar
//! twin the tests compare against), chosen at run time.

use crate::depthwise::{DwGeometry, Isa};
use crate::gemm::{activation, Activation};
use rge_simd::{Scalar, Simd};

/// One channels-last depthwise convolution: its geometry and channel count.
#[derive(Debug, Clone, Copy)]
pub struct DwNhwc {
    pub g: DwGeometry,
    pub channels: usize,
}

/// The operands of a run over some output rows of one image.
pub struct DwNhwcArgs<'a> {
    /// The image, `[h, w, C]`.
    pub x: &'a [f32],
    /// The weights, `[kh·kw, C]` (see [`DwNhwc::repack_weights`]).
    pub wts: &'a [f32],
    /// `[C]`, or none.
    pub bias: Option<&'a [f32]>,
    /// The residual of the rows computed, `[rows, ow, C]`, or none.
    pub z: Option<&'a [f32]>,
    pub act: &'a Activation,
}

impl DwNhwc {
    /// ONNX weights `[C, 1, kh, kw]` as `[kh·kw, C]`.
    pub fn repack_weights(&self, w: &[f32]) -> Vec<f32> {
        let (c, taps) = (self.channels, self.g.kh * self.g.kw);
        let mut out = vec![0.0; taps * c];
        for (ch, wc) in w.chunks_exact(taps).take(c).enumerate() {
            for (t, &v) in wc.iter().enumerate() {
                out[t * c + ch] = v;
            }
        }
        out
    }

    /// Output rows `[oy0, oy0 + rows)` of one image into `out` (`[rows, ow, C]`). Falls back
    /// to the baseline when the CPU lacks `isa`.
    ///
    /// # Panics
    /// When a slice is shorter than the geometry needs (a caller's bug, not bad input).
    pub fn rows(&self, isa: Isa, a: &DwNhwcArgs<'_>, oy0: usize, out: &mut [f32]) {
        let (g, c) = (&self.g, self.channels);
        let row = g.ow * c;
        let rows = out.len() / row.max(1);
        assert!(out.len() == rows * row && oy0 + rows <= g.oh);
        assert!(a.x.len() >= g.h * g.w * c && a.wts.len() >= g.kh * g.kw * c);
        assert!(a.bias.is_none_or(|b| b.len() >= c) && a.z.is_none_or(|z| z.len() >= out.len()));
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if Isa::Avx512.is_available() => {
                // SAFETY: AVX-512F is available (checked just above).
                unsafe { rows_avx512(self, a, oy0, out) }
            }
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 if Isa::Avx2.is_available() => {
                // SAFETY: AVX2 and FMA are available (checked just above).
                unsafe { rows_avx2(self, a, oy0, out) }
            }
            _ => rows_simd(Scalar, self, a, oy0, out),
        }
    }

    /// The output columns whose taps all fall inside the image: `[lo, hi)`.
    fn interior_columns(&self) -> (usize, usize) {
        let g = &self.g;
        let reach = (g.kw - 1) * g.dil_w;
        let sw = g.stride_w.max(1);
        let lo = g.pad_left.div_ceil(sw).min(g.ow);
        // ox·sw − pad_left + reach < w  ⇔  ox·sw < w + pad_left − reach.
        let hi = (g.w + g.pad_left)
            .checked_sub(reach)
            .map_or(0, |lim| lim.div_ceil(sw))
            .clamp(lo, g.ow);
        (lo, hi)
    }

    /// The filter taps of one axis inside the image for output position `o`: `[first, end)`.
    fn taps_inside(
        o: usize,
        stride: usize,
        pad: usize,
        dil: usize,
        k: usize,
        size: usize,
    ) -> (usize, usize) {
        let start = (o * stride) as isize - pad as isize;
        let inside = |t: usize| {
            let p = start + (t * dil) as isize;
            p >= 0 && (p as usize) < size
        };
        let first = (0..k).find(|&t| inside(t)).unwrap_or(k);
        let end = (first..k)
            .rev()
            .find(|&t| inside(t))
            .map_or(first, |t| t + 1);
        (first, end)
    }
}

/// What the pixel loops share for one output row.
struct RowCtx<'a, 'b> {
    k: &'a DwNhwc,
    a: &'a DwNhwcArgs<'b>,
    /// Output row, and its filter rows inside the image.
    oy: usize,
    ki: (usize, usize),
    /// The row's outputs, `[ow, C]`, and its residual.
    out: *mut f32,
    z: Option<*const f32>,
}

#[inline(always)]
fn rows_simd<S: Simd>(s: S, k: &DwNhwc, a: &DwNhwcArgs<'_>, oy0: usize, out: &mut [f32]) {
    let g = &k.g;
    let row = g.ow * k.channels;
    let (lo, hi) = k.interior_columns();
    let (sh, sw) = (g.stride_h.max(1), g.stride_w.max(1));
    // No closures here: they would not inherit the ISA's target features.
    for (r, o) in out.chunks_exact_mut(row).enumerate() {
        let oy = oy0 + r;
        let ctx = RowCtx {
            k,
            a,
            oy,
            ki: DwNhwc::taps_inside(oy, sh, g.pad_top, g.dil_h, g.kh, g.h),
            out: o.as_mut_ptr(),
            z: a.z.map(|z| z[r * row..].as_ptr()),
        };
        for ox in (0..lo).chain(hi.max(lo)..g.ow) {
            let kj = DwNhwc::taps_inside(ox, sw, g.pad_left, g.dil_w, g.kw, g.w);
            // SAFETY: `ox < ow` and its taps `kj` (and rows `ki`) lie inside the image.
            unsafe { channels::<S, 1>(s, &ctx, ox, kj) };
        }
        let mut ox = lo;
        // SAFETY (both loops): pixels `[ox, ox + PX)` are interior (below `hi <= ow`), so every
        // tap of them lies inside the image.
        while ox + 4 <= hi {
            unsafe { channels::<S, 4>(s, &ctx, ox, (0, g.kw)) };
            ox += 4;
        }
        while ox < hi {
            unsafe { channels::<S, 1>(s, &ctx, ox, (0, g.kw)) };
            ox += 1;
        }
    }
}

/// `PX` pixels from `ox0`, every channel: groups of four vectors, then single vectors, the
/// last one partial when the channels do not fill it.
///
/// # Safety
/// Pixels `[ox0, ox0 + PX)` must be in the row, and filter columns `kj` (rows `ctx.ki`)
/// inside the image for each of them.
#[inline(always)]
unsafe fn channels<S: Simd, const PX: usize>(
    s: S,
    ctx: &RowCtx<'_, '_>,
    ox0: usize,
    kj: (usize, usize),
) {
    let c = ctx.k.channels;
    let mut c0 = 0;
    // SAFETY: the caller's contract; each call covers channels inside `[0, C)`.
    unsafe {
        if S::LANES >= 16 {
            while c0 + 4 * S::LANES <= c {
                pixels::<S, PX, 4>(s, ctx, ox0, kj, c0, S::LANES);
                c0 += 4 * S::LANES;
            }
        } else {
            while c0 + 2 * S::LANES <= c {
                pixels::<S, PX, 2>(s, ctx, ox0, kj, c0, S::LANES);
                c0 += 2 * S::LANES;
            }
        }
        while c0 < c {
            pixels::<S, PX, 1>(s, ctx, ox0, kj, c0, (c - c0).min(S::LANES));
            c0 += S::LANES;
        }
    }
}

/// `w` lanes from `p` (a full vector when `w` is the vector's width), zeros after.
///
/// # Safety
/// `p` valid for reading `w` floats.
#[inline(always)]
unsafe fn load_w<S: Simd>(s: S, p: *const f32, w: usize) -> S::V {
    // SAFETY: the caller's contract.
    unsafe {
        if w == S::LANES {
            s.load(p)
        } else {
            s.load_n(p, w, 0.0)
        }
    }
}

/// `PX` pixels × `U` vectors of channels from `c0` (the last vector `last` lanes wide):
/// bias, taps, residual, activation, store.
///
/// # Safety
/// As [`channels`]; channels `[c0, c0 + (U−1)·LANES + last)` must exist.
// Index loops over the register tile's pixels and vectors read as the tile's shape.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn pixels<S: Simd, const PX: usize, const U: usize>(
    s: S,
    ctx: &RowCtx<'_, '_>,
    ox0: usize,
    kj: (usize, usize),
    c0: usize,
    last: usize,
) {
    let (k, a) = (ctx.k, ctx.a);
    let (g, c) = (&k.g, k.channels);
    let mut width = [S::LANES; U];
    width[U - 1] = last;
    let (sh, sw) = (g.stride_h.max(1), g.stride_w.max(1));
    // SAFETY (every load and store below): channel vectors of existing channels (the caller's
    // contract) of pixels inside the image (taps) or the row (outputs); `rows` checked the
    // slices' lengths.
    unsafe {
        let mut acc = [[s.splat(0.0); U]; PX];
        if let Some(b) = a.bias {
            for u in 0..U {
                let v = load_w(s, b.as_ptr().add(c0 + u * S::LANES), width[u]);
                for p in 0..PX {
                    acc[p][u] = v;
                }
            }
        }
        let (x, wts) = (a.x.as_ptr(), a.wts.as_ptr());
        for i in ctx.ki.0..ctx.ki.1 {
            let iy = ctx.oy * sh + i * g.dil_h - g.pad_top;
            let x_row = x.add(iy * g.w * c + c0);
            for j in kj.0..kj.1 {
                let wp = wts.add((i * g.kw + j) * c + c0);
                let mut wv = [s.splat(0.0); U];
                for u in 0..U {
                    wv[u] = load_w(s, wp.add(u * S::LANES), width[u]);
                }
                for p in 0..PX {
                    let ix = (ox0 + p) * sw + j * g.dil_w - g.pad_left;
                    let xp = x_row.add(ix * c);
                    for u in 0..U {
                        let xv = load_w(s, xp.add(u * S::LANES), width[u]);
                        acc[p][u] = s.mul_add(wv[u], xv, acc[p][u]);
                    }
                }
            }
        }
        for p in 0..PX {
            let at = (ox0 + p) * c + c0;
            for u in 0..U {
                let off = at + u * S::LANES;
                let mut v = acc[p][u];
                if let Some(z) = ctx.z {
                    v = s.add(v, load_w(s, z.add(off), width[u]));
                }
                let v = activation(s, a.act, v);
                if width[u] == S::LANES {
                    s.store(ctx.out.add(off), v)
                } else {
                    s.store_n(ctx.out.add(off), v, width[u])
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn rows_avx512(k: &DwNhwc, a: &DwNhwcArgs<'_>, oy0: usize, out: &mut [f32]) {
    // SAFETY: reached only from `DwNhwc::rows` after the ISA check.
    let s = unsafe { rge_simd::Avx512::new_unchecked() };
    rows_simd(s, k, a, oy0, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2(k: &DwNhwc, a: &DwNhwcArgs<'_>, oy0: usize, out: &mut [f32]) {
    // SAFETY: reached only from `DwNhwc::rows` after the ISA check.
    let s = unsafe { rge_simd::Avx2::new_unchecked() };
    rows_simd(s, k, a, oy0, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct sum, in f64, of `act(conv + bias + z)` on channels-last data.
    fn naive(k: &DwNhwc, x: &[f32], w: &[f32], b: &[f32], z: &[f32]) -> Vec<f32> {
        let (g, c) = (&k.g, k.channels);
        let mut out = vec![0.0; g.oh * g.ow * c];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                for ch in 0..c {
                    let mut acc = f64::from(b[ch]);
                    for i in 0..g.kh {
                        for j in 0..g.kw {
                            let iy = (oy * g.stride_h + i * g.dil_h) as isize - g.pad_top as isize;
                            let ix = (ox * g.stride_w + j * g.dil_w) as isize - g.pad_left as isize;
                            if iy < 0 || ix < 0 || iy as usize >= g.h || ix as usize >= g.w {
                                continue;
                            }
                            let xv = x[(iy as usize * g.w + ix as usize) * c + ch];
                            acc += f64::from(xv) * f64::from(w[(ch * g.kh + i) * g.kw + j]);
                        }
                    }
                    let o = (oy * g.ow + ox) * c + ch;
                    out[o] = (acc + f64::from(z[o])).max(0.0) as f32;
                }
            }
        }
        out
    }

    /// Every ISA against the direct sum over strides, dilations, asymmetric padding, filters
    /// wider than the image, channel counts that fill no vector, and split row ranges.
    #[test]
    fn every_isa_matches_the_direct_sum() {
        let mut rnd = crate::test_values::values(23);
        // (h, w, kh, kw, stride_h, stride_w, dilation, pad_top, pad_left, pad_bottom, pad_right, channels)
        for &(h, w, kh, kw, sh, sw, d, pt, pl, pb, pr, c) in &[
            (7, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 32),
            (14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, 24),
            (14, 13, 3, 3, 2, 2, 1, 0, 0, 1, 1, 5),
            (9, 11, 5, 5, 1, 1, 2, 4, 3, 4, 3, 67),
            (1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 16),
            (6, 13, 3, 5, 1, 2, 1, 2, 0, 0, 2, 1),
            (2, 3, 5, 7, 1, 1, 1, 2, 3, 2, 3, 9),
            (11, 20, 1, 3, 2, 1, 2, 0, 1, 0, 1, 144),
        ] {
            let oh = (h + pt + pb - ((kh - 1) * d + 1)) / sh + 1;
            let ow = (w + pl + pr - ((kw - 1) * d + 1)) / sw + 1;
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
            let k = DwNhwc { g, channels: c };
            let x: Vec<f32> = (0..h * w * c).map(|_| rnd()).collect();
            let wt: Vec<f32> = (0..c * kh * kw).map(|_| rnd()).collect();
            let b: Vec<f32> = (0..c).map(|_| rnd()).collect();
            let z: Vec<f32> = (0..oh * ow * c).map(|_| rnd()).collect();
            let want = naive(&k, &x, &wt, &b, &z);
            let packed = k.repack_weights(&wt);
            for isa in Isa::available() {
                let mut got = vec![f32::NAN; oh * ow * c];
                // Two row ranges, as two threads would run them.
                let split = oh / 2;
                let row = ow * c;
                for (oy0, rows) in [(0, split), (split, oh - split)] {
                    let args = DwNhwcArgs {
                        x: &x,
                        wts: &packed,
                        bias: Some(&b),
                        z: Some(&z[oy0 * row..]),
                        act: &Activation::Relu,
                    };
                    k.rows(isa, &args, oy0, &mut got[oy0 * row..(oy0 + rows) * row]);
                }
                for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (a - b).abs() <= 1e-5,
                        "{isa:?} {g:?} c {c} at {i}: {a} vs {b}"
                    );
                }
            }
        }
    }

    #[test]
    fn interior_columns_are_exactly_those_with_every_tap_inside() {
        for (w, kw, sw, d, pl, ow) in [
            (7, 3, 1, 1, 1, 7),
            (14, 3, 2, 1, 1, 7),
            (3, 7, 1, 1, 3, 3),
            (10, 3, 1, 2, 0, 6),
        ] {
            let g = DwGeometry {
                h: 1,
                w,
                kh: 1,
                kw,
                stride_h: 1,
                stride_w: sw,
                dil_h: 1,
                dil_w: d,
                pad_top: 0,
                pad_left: pl,
                oh: 1,
                ow,
            };
            let k = DwNhwc { g, channels: 1 };
            let (lo, hi) = k.interior_columns();
            for ox in 0..ow {
                let all = DwNhwc::taps_inside(ox, sw, pl, d, kw, w) == (0, kw);
                assert_eq!(all, (lo..hi).contains(&ox), "{g:?} ox {ox}");
            }
        }
    }
}
