//! Ungrouped convolution on channels-last data computed directly, for few output channels:
//! the kernel of FusedConvNhwc when `Cout` is at most two vectors' worth (MobileNetV2's 1×1
//! projections to 16–32 channels and its first 3×3 convolution of 3 channels).
//!
//! As a GEMM (pixels × output channels) such a convolution wastes most of a 32-column register
//! tile and packs every input pixel first; here each output pixel's channels are one or two
//! vectors, every input value of its taps is broadcast straight from the image and multiplied
//! by a vector of weights (repacked once as `[kh, kw, Cin, Cout]`), for several pixels at once
//! (independent accumulators), with no patch matrix and no packing. Pixels at the borders run
//! over the taps inside the image. Bias, residual and activation are applied in registers.
//! Compiled for AVX-512, AVX2+FMA and the baseline (the scalar twin the tests compare
//! against), chosen at run time.

use crate::depthwise::{DwGeometry, Isa};
use crate::gemm::{activation, Activation};
use rge_simd::{Scalar, Simd};

/// One direct convolution: its geometry and channel counts.
#[derive(Debug, Clone, Copy)]
pub struct DirectNhwc {
    pub g: DwGeometry,
    pub cin: usize,
    pub cout: usize,
}

/// The operands of a run over some output rows of one image.
pub struct DirectArgs<'a> {
    /// The image, `[h, w, Cin]`.
    pub x: &'a [f32],
    /// The weights, `[kh, kw, Cin, Cout]` (see [`DirectNhwc::repack_weights`]).
    pub wts: &'a [f32],
    /// `[Cout]`, or none.
    pub bias: Option<&'a [f32]>,
    /// The residual of the rows computed, `[rows, ow, Cout]`, or none.
    pub z: Option<&'a [f32]>,
    pub act: &'a Activation,
}

impl DirectNhwc {
    /// ONNX weights `[Cout, Cin, kh, kw]` as `[kh, kw, Cin, Cout]`.
    pub fn repack_weights(&self, w: &[f32]) -> Vec<f32> {
        let (taps, cin, cout) = (self.g.kh * self.g.kw, self.cin, self.cout);
        let mut out = vec![0.0; taps * cin * cout];
        for co in 0..cout {
            for ci in 0..cin {
                for t in 0..taps {
                    out[(t * cin + ci) * cout + co] = w[(co * cin + ci) * taps + t];
                }
            }
        }
        out
    }

    /// Output rows `[oy0, oy0 + rows)` of one image into `out` (`[rows, ow, Cout]`). Falls back
    /// to the baseline when the CPU lacks `isa`.
    ///
    /// # Panics
    /// When a slice is shorter than the geometry needs (a caller's bug, not bad input).
    pub fn rows(&self, isa: Isa, a: &DirectArgs<'_>, oy0: usize, out: &mut [f32]) {
        let g = &self.g;
        let row = g.ow * self.cout;
        let rows = out.len() / row.max(1);
        assert!(out.len() == rows * row && oy0 + rows <= g.oh);
        assert!(a.x.len() >= g.h * g.w * self.cin);
        assert!(a.wts.len() >= g.kh * g.kw * self.cin * self.cout);
        assert!(a.bias.is_none_or(|b| b.len() >= self.cout));
        assert!(a.z.is_none_or(|z| z.len() >= out.len()));
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

/// What the pixel loops share for one output row.
struct RowCtx<'a, 'b> {
    k: &'a DirectNhwc,
    a: &'a DirectArgs<'b>,
    oy: usize,
    /// The row's filter rows inside the image.
    ki: (usize, usize),
    /// The row's outputs, `[ow, Cout]`, and its residual.
    out: *mut f32,
    z: Option<*const f32>,
}

#[inline(always)]
fn rows_simd<S: Simd>(s: S, k: &DirectNhwc, a: &DirectArgs<'_>, oy0: usize, out: &mut [f32]) {
    let g = &k.g;
    let row = g.ow * k.cout;
    let (sh, sw) = (g.stride_h.max(1), g.stride_w.max(1));
    // The columns whose taps all fall inside the image.
    let full: Vec<bool> = (0..g.ow)
        .map(|ox| taps_inside(ox, sw, g.pad_left, g.dil_w, g.kw, g.w) == (0, g.kw))
        .collect();
    // No closures below: they would not inherit the ISA's target features.
    for (r, o) in out.chunks_exact_mut(row).enumerate() {
        let oy = oy0 + r;
        let ctx = RowCtx {
            k,
            a,
            oy,
            ki: taps_inside(oy, sh, g.pad_top, g.dil_h, g.kh, g.h),
            out: o.as_mut_ptr(),
            z: a.z.map(|z| z[r * row..].as_ptr()),
        };
        let mut ox = 0;
        while ox < g.ow {
            const PX: usize = 6;
            if ox + PX <= g.ow && full[ox..ox + PX].iter().all(|&f| f) {
                // SAFETY: pixels `[ox, ox + PX)` are in the row, with every tap inside.
                unsafe { outputs::<S, PX>(s, &ctx, ox, (0, g.kw)) };
                ox += PX;
            } else {
                let kj = taps_inside(ox, sw, g.pad_left, g.dil_w, g.kw, g.w);
                // SAFETY: `ox < ow` and its taps `kj` (and rows `ki`) lie inside the image.
                unsafe { outputs::<S, 1>(s, &ctx, ox, kj) };
                ox += 1;
            }
        }
    }
}

/// `PX` pixels from `ox0`, every output channel (in steps of two vectors).
///
/// # Safety
/// Pixels `[ox0, ox0 + PX)` must be in the row, and filter columns `kj` (rows `ctx.ki`)
/// inside the image for each of them.
#[inline(always)]
unsafe fn outputs<S: Simd, const PX: usize>(
    s: S,
    ctx: &RowCtx<'_, '_>,
    ox0: usize,
    kj: (usize, usize),
) {
    let c = ctx.k.cout;
    let mut c0 = 0;
    // SAFETY: the caller's contract; each call covers channels inside `[0, Cout)`.
    unsafe {
        while c0 < c {
            let left = c - c0;
            if left > S::LANES {
                pixels::<S, PX, 2>(s, ctx, ox0, kj, c0, (left - S::LANES).min(S::LANES));
                c0 += 2 * S::LANES;
            } else {
                pixels::<S, PX, 1>(s, ctx, ox0, kj, c0, left);
                c0 += S::LANES;
            }
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

/// `PX` pixels × `U` vectors of output channels from `c0` (the last vector `last` lanes
/// wide): bias, every tap's input channels, residual, activation, store.
///
/// # Safety
/// As [`outputs`]; channels `[c0, c0 + (U−1)·LANES + last)` must exist.
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
    let (g, cin, cout) = (&k.g, k.cin, k.cout);
    let mut width = [S::LANES; U];
    width[U - 1] = last;
    let (sh, sw) = (g.stride_h.max(1), g.stride_w.max(1));
    // SAFETY (every load and store below): existing channels (the caller's contract) of
    // pixels inside the image (taps) or the row (outputs); `rows` checked the slices' lengths.
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
            for j in kj.0..kj.1 {
                let mut xp = [x; PX];
                for (p, xp) in xp.iter_mut().enumerate() {
                    let ix = (ox0 + p) * sw + j * g.dil_w - g.pad_left;
                    *xp = x.add((iy * g.w + ix) * cin);
                }
                let wt = wts.add((i * g.kw + j) * cin * cout + c0);
                for ci in 0..cin {
                    let wp = wt.add(ci * cout);
                    let mut wv = [s.splat(0.0); U];
                    for u in 0..U {
                        wv[u] = load_w(s, wp.add(u * S::LANES), width[u]);
                    }
                    for p in 0..PX {
                        let xv = s.splat(*xp[p].add(ci));
                        for u in 0..U {
                            acc[p][u] = s.mul_add(wv[u], xv, acc[p][u]);
                        }
                    }
                }
            }
        }
        for p in 0..PX {
            let at = (ox0 + p) * cout + c0;
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
unsafe fn rows_avx512(k: &DirectNhwc, a: &DirectArgs<'_>, oy0: usize, out: &mut [f32]) {
    // SAFETY: reached only from `DirectNhwc::rows` after the ISA check.
    let s = unsafe { rge_simd::Avx512::new_unchecked() };
    rows_simd(s, k, a, oy0, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn rows_avx2(k: &DirectNhwc, a: &DirectArgs<'_>, oy0: usize, out: &mut [f32]) {
    // SAFETY: reached only from `DirectNhwc::rows` after the ISA check.
    let s = unsafe { rge_simd::Avx2::new_unchecked() };
    rows_simd(s, k, a, oy0, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The direct sum, in f64, of `relu(conv + bias + z)` on channels-last data.
    fn naive(k: &DirectNhwc, x: &[f32], w: &[f32], b: &[f32], z: &[f32]) -> Vec<f32> {
        let (g, cin, cout) = (&k.g, k.cin, k.cout);
        let mut out = vec![0.0; g.oh * g.ow * cout];
        for oy in 0..g.oh {
            for ox in 0..g.ow {
                for co in 0..cout {
                    let mut acc = f64::from(b[co]);
                    for i in 0..g.kh {
                        for j in 0..g.kw {
                            let iy = (oy * g.stride_h + i * g.dil_h) as isize - g.pad_top as isize;
                            let ix = (ox * g.stride_w + j * g.dil_w) as isize - g.pad_left as isize;
                            if iy < 0 || ix < 0 || iy as usize >= g.h || ix as usize >= g.w {
                                continue;
                            }
                            for ci in 0..cin {
                                let xv = x[(iy as usize * g.w + ix as usize) * cin + ci];
                                let wv = w[((co * cin + ci) * g.kh + i) * g.kw + j];
                                acc += f64::from(xv) * f64::from(wv);
                            }
                        }
                    }
                    let o = (oy * g.ow + ox) * cout + co;
                    out[o] = (acc + f64::from(z[o])).max(0.0) as f32;
                }
            }
        }
        out
    }

    /// Every ISA against the direct sum over 1×1 and 3×3 filters, strides, dilations,
    /// padding, channel counts that fill no vector, and split row ranges.
    #[test]
    fn every_isa_matches_the_direct_sum() {
        let mut rnd = crate::test_values::values(31);
        // (h, w, kh, kw, stride, dilation, pad_top, pad_left, pad_bottom, pad_right, cin, cout)
        for &(h, w, kh, kw, st, d, pt, pl, pb, pr, cin, cout) in &[
            (13, 14, 3, 3, 2, 1, 1, 1, 1, 1, 3, 16),
            (9, 20, 1, 1, 1, 1, 0, 0, 0, 0, 33, 24),
            (8, 8, 1, 1, 1, 1, 0, 0, 0, 0, 144, 16),
            (7, 9, 3, 3, 1, 2, 2, 2, 2, 2, 5, 7),
            (6, 11, 5, 3, 1, 1, 2, 1, 2, 1, 4, 32),
            (2, 3, 5, 7, 1, 1, 2, 3, 2, 3, 2, 9),
            (1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1),
        ] {
            let oh = (h + pt + pb - ((kh - 1) * d + 1)) / st + 1;
            let ow = (w + pl + pr - ((kw - 1) * d + 1)) / st + 1;
            let g = DwGeometry {
                h,
                w,
                kh,
                kw,
                stride_h: st,
                stride_w: st,
                dil_h: d,
                dil_w: d,
                pad_top: pt,
                pad_left: pl,
                oh,
                ow,
            };
            let k = DirectNhwc { g, cin, cout };
            let x: Vec<f32> = (0..h * w * cin).map(|_| rnd()).collect();
            let wt: Vec<f32> = (0..cout * cin * kh * kw).map(|_| rnd()).collect();
            let b: Vec<f32> = (0..cout).map(|_| rnd()).collect();
            let z: Vec<f32> = (0..oh * ow * cout).map(|_| rnd()).collect();
            let want = naive(&k, &x, &wt, &b, &z);
            let packed = k.repack_weights(&wt);
            for isa in Isa::available() {
                let mut got = vec![f32::NAN; oh * ow * cout];
                let (split, row) = (oh / 2, ow * cout);
                for (oy0, rows) in [(0, split), (split, oh - split)] {
                    let args = DirectArgs {
                        x: &x,
                        wts: &packed,
                        bias: Some(&b),
                        z: Some(&z[oy0 * row..]),
                        act: &Activation::Relu,
                    };
                    k.rows(isa, &args, oy0, &mut got[oy0 * row..(oy0 + rows) * row]);
                }
                for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                    let tol = 1e-5 * (1.0 + (cin * kh * kw) as f32).sqrt();
                    assert!(
                        (a - b).abs() <= tol,
                        "{isa:?} {g:?} {cin}->{cout} at {i}: {a} vs {b}"
                    );
                }
            }
        }
    }
}
