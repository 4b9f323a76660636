//! Depthwise 2-D convolution (groups = input channels = output channels, MobileNet's 3×3
//! layers): a direct kernel, because as a GEMM each channel is a 1-row product that no
//! microkernel can keep busy. Each channel's image is first copied into a zero-padded plane
//! whose rows are split into their stride phases, so every tap of every output row reads
//! contiguous memory with no bounds to test; 16 output columns are then accumulated over all
//! taps in registers and stored once. The same loops are compiled for AVX-512, AVX2+FMA and
//! the baseline, chosen at run time (`plane`); the baseline is the scalar twin the tests
//! compare against.

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

/// The instruction sets the kernel is compiled for: the GEMM's, detected the same way.
pub use crate::gemm::Isa;

/// The padded width of one phase of a row: phase `p` of a padded row holds its columns
/// `p, p + s, p + 2s, …`.
fn phase_len(g: &DwGeometry) -> usize {
    let reach = (g.kw - 1) * g.dil_w;
    // Enough for the last output column's last tap: (ow-1)·s + reach, split into s phases.
    ((g.ow.max(1) - 1) * g.stride_w + reach) / g.stride_w + 1
}

/// The rows of the padded, phase-split image: `kh` tap rows span `(oh-1)·stride_h + reach`.
fn padded_rows(g: &DwGeometry) -> usize {
    (g.oh.max(1) - 1) * g.stride_h + (g.kh - 1) * g.dil_h + 1
}

/// The length of one padded row in the scratch: its phases, then zeros, so a full vector of
/// columns can be read from any column of the row (the tail of a narrow row is computed as a
/// whole vector and only its first columns kept).
fn row_stride(g: &DwGeometry) -> usize {
    g.stride_w * phase_len(g) + LANES
}

/// The scratch [`plane`] needs for geometry `g`.
pub fn scratch_len(g: &DwGeometry) -> usize {
    padded_rows(g) * row_stride(g)
}

/// Copies image `x` into `pad`: zero padding around it, each row split into its `stride_w`
/// phases, so that every tap of every output row reads contiguous memory.
#[inline(always)]
fn pad_and_split(x: &[f32], g: &DwGeometry, pad: &mut [f32]) {
    let pl = phase_len(g);
    let s = g.stride_w;
    let row_len = row_stride(g);
    for r in 0..padded_rows(g) {
        let dst = &mut pad[r * row_len..(r + 1) * row_len];
        dst.fill(0.0);
        let iy = r as isize - g.pad_top as isize;
        if iy < 0 || iy as usize >= g.h {
            continue;
        }
        let src = &x[iy as usize * g.w..(iy as usize + 1) * g.w];
        if s == 1 {
            let n = g.w.min(pl.saturating_sub(g.pad_left));
            dst[g.pad_left..g.pad_left + n].copy_from_slice(&src[..n]);
        } else {
            // Phase-major, no division or test per element: phase `ph` holds padded columns
            // `at·s + ph`, of which `[lo, hi)` are inside the image (the rest stay 0).
            for ph in 0..s {
                let part = &mut dst[ph * pl..(ph + 1) * pl];
                let lo = g.pad_left.saturating_sub(ph).div_ceil(s);
                let end = g.pad_left + g.w; // first padded column past the image
                let hi = if end > ph {
                    (end - ph).div_ceil(s).min(pl)
                } else {
                    0
                };
                if hi <= lo {
                    continue;
                }
                let first = lo * s + ph - g.pad_left;
                for (k, d) in part[lo..hi].iter_mut().enumerate() {
                    *d = src[first + k * s];
                }
            }
        }
    }
}

/// Output columns computed together: one vector register of accumulators per tap sweep.
const LANES: usize = 16;

/// One channel: `out` (`[oh, ow]`) from image `x` (`[h, w]`) and its `kh·kw` weights, with
/// `scratch` of [`scratch_len`] values.
#[inline(always)]
fn plane_body(x: &[f32], wts: &[f32], g: &DwGeometry, out: &mut [f32], scratch: &mut [f32]) {
    pad_and_split(x, g, scratch);
    let (s, pl) = (g.stride_w, phase_len(g));
    let row_len = row_stride(g);
    // Each tap: its weight and the offset of its first input relative to the output row's.
    let taps: Vec<(f32, usize)> = (0..g.kh)
        .flat_map(|i| (0..g.kw).map(move |j| (i, j)))
        .map(|(i, j)| {
            let c = j * g.dil_w;
            (
                wts[i * g.kw + j],
                i * g.dil_h * row_len + (c % s) * pl + c / s,
            )
        })
        .collect();
    for oy in 0..g.oh {
        let base = oy * g.stride_h * row_len;
        let orow = &mut out[oy * g.ow..(oy + 1) * g.ow];
        // Wide chunks first (several independent accumulator registers hide the FMA
        // latency), then single vectors, then the tail.
        let mut ox = 0;
        while ox + 4 * LANES <= g.ow {
            chunk::<{ 4 * LANES }>(&taps, scratch, base + ox, &mut orow[ox..]);
            ox += 4 * LANES;
        }
        while ox + LANES <= g.ow {
            chunk::<LANES>(&taps, scratch, base + ox, &mut orow[ox..]);
            ox += LANES;
        }
        if ox < g.ow {
            // The tail as one whole vector (the row's zero slack makes the reads valid).
            let mut tail = [0.0f32; LANES];
            chunk::<LANES>(&taps, scratch, base + ox, &mut tail);
            let n = g.ow - ox;
            orow[ox..].copy_from_slice(&tail[..n]);
        }
    }
}

/// `N` output columns: every tap accumulated in registers, stored once.
#[inline(always)]
fn chunk<const N: usize>(taps: &[(f32, usize)], scratch: &[f32], at: usize, out: &mut [f32]) {
    let mut acc = [0.0f32; N];
    for &(w, off) in taps {
        // In bounds by construction: every padded row has a vector of zero slack.
        let src = &scratch[at + off..at + off + N];
        for (a, &v) in acc.iter_mut().zip(src) {
            *a += w * v;
        }
    }
    out[..N].copy_from_slice(&acc);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn plane_avx512(x: &[f32], wts: &[f32], g: &DwGeometry, out: &mut [f32], sc: &mut [f32]) {
    plane_body(x, wts, g, out, sc)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn plane_avx2(x: &[f32], wts: &[f32], g: &DwGeometry, out: &mut [f32], sc: &mut [f32]) {
    plane_body(x, wts, g, out, sc)
}

/// One channel with `isa` (falls back to the baseline when the CPU lacks it); `scratch` of at
/// least [`scratch_len`] values, `out` of `oh·ow`.
pub fn plane(
    isa: Isa,
    x: &[f32],
    wts: &[f32],
    g: &DwGeometry,
    out: &mut [f32],
    scratch: &mut [f32],
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::Avx512` runs only when the CPU has AVX-512F (checked here).
        Isa::Avx512 if Isa::Avx512.is_available() => unsafe {
            plane_avx512(x, wts, g, out, scratch)
        },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2 and FMA.
        Isa::Avx2 if Isa::Avx2.is_available() => unsafe { plane_avx2(x, wts, g, out, scratch) },
        _ => plane_body(x, wts, g, out, scratch),
    }
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
        let mut seed = 7u64;
        let mut rnd = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        for &(h, w, k, s, d, p) in &[
            (7, 9, 3, 1, 1, 1),
            (8, 8, 3, 2, 1, 1),
            (5, 13, 5, 1, 2, 4),
            (1, 1, 3, 1, 1, 1),
            (3, 4, 3, 2, 1, 0),
            (16, 17, 7, 3, 1, 3),
        ] {
            let oh = (h + 2 * p - ((k - 1) * d + 1)) / s + 1;
            let ow = (w + 2 * p - ((k - 1) * d + 1)) / s + 1;
            let g = DwGeometry {
                h,
                w,
                kh: k,
                kw: k,
                stride_h: s,
                stride_w: s,
                dil_h: d,
                dil_w: d,
                pad_top: p,
                pad_left: p,
                oh,
                ow,
            };
            let x: Vec<f32> = (0..h * w).map(|_| rnd()).collect();
            let wts: Vec<f32> = (0..k * k).map(|_| rnd()).collect();
            let want = naive(&x, &wts, &g);
            for isa in Isa::available() {
                let mut got = vec![0.0; oh * ow];
                let mut scratch = vec![0.0; scratch_len(&g)];
                plane(isa, &x, &wts, &g, &mut got, &mut scratch);
                for (a, b) in got.iter().zip(&want) {
                    assert!((a - b).abs() <= 1e-5, "{isa:?} {g:?}: {a} vs {b}");
                }
            }
        }
    }
}
