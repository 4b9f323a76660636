//! Depthwise 2-D convolution (groups = input channels = output channels, MobileNet's 3×3
//! layers): a direct kernel, because as a GEMM each channel is a 1-row product that no
//! microkernel can keep busy. Each output row is a sum of shifted input rows times one weight
//! per tap; over the interior of a row (every tap in bounds) that is one AXPY per tap over
//! contiguous memory, which the compiler vectorizes. The same loops are compiled for AVX-512,
//! AVX2+FMA and the baseline, chosen at run time (`row_taps`); the baseline is the scalar twin
//! the tests compare against.

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

/// The instruction set a row kernel runs with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isa {
    Avx512,
    Avx2,
    Baseline,
}

impl Isa {
    /// The best the CPU has.
    pub fn detect() -> Isa {
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx512f") {
                return Isa::Avx512;
            }
            if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                return Isa::Avx2;
            }
        }
        Isa::Baseline
    }

    /// Whether this CPU can run `self`.
    pub fn available(self) -> bool {
        match self {
            Isa::Baseline => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => std::is_x86_feature_detected!("avx512f"),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => {
                std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")
            }
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }
}

/// The range of output columns whose every tap is inside the row: `[lo, hi)`.
fn interior(g: &DwGeometry) -> (usize, usize) {
    // ow*s - pad + j*d in [0, w) for j = 0 and j = kw-1.
    let lo = g.pad_left.div_ceil(g.stride_w).min(g.ow);
    let reach = (g.kw - 1) * g.dil_w;
    let hi = if g.w + g.pad_left < reach + 1 {
        0
    } else {
        // Largest ow with ow*s - pad + reach <= w - 1.
        ((g.w - 1 + g.pad_left - reach) / g.stride_w + 1).min(g.ow)
    };
    (lo, hi.max(lo))
}

/// One output row of one channel: `out[ow] = Σ taps`, for input image `x` (`[H, W]`) and the
/// channel's `kh·kw` weights. `out` is overwritten.
#[inline(always)]
fn row_body(x: &[f32], wts: &[f32], g: &DwGeometry, oy: usize, out: &mut [f32]) {
    out.fill(0.0);
    let (lo, hi) = interior(g);
    for i in 0..g.kh {
        let iy = (oy * g.stride_h + i * g.dil_h) as isize - g.pad_top as isize;
        if iy < 0 || iy as usize >= g.h {
            continue;
        }
        let row = &x[iy as usize * g.w..(iy as usize + 1) * g.w];
        for j in 0..g.kw {
            let wv = wts[i * g.kw + j];
            let shift = j * g.dil_w;
            // Borders: taps that may fall outside the row.
            for (ox, o) in out.iter_mut().enumerate().take(lo) {
                let ix = (ox * g.stride_w + shift) as isize - g.pad_left as isize;
                if ix >= 0 && (ix as usize) < g.w {
                    *o += wv * row[ix as usize];
                }
            }
            for (ox, o) in out.iter_mut().enumerate().skip(hi) {
                let ix = (ox * g.stride_w + shift) as isize - g.pad_left as isize;
                if ix >= 0 && (ix as usize) < g.w {
                    *o += wv * row[ix as usize];
                }
            }
            if hi > lo {
                let start = lo * g.stride_w + shift - g.pad_left;
                if g.stride_w == 1 {
                    let src = &row[start..start + (hi - lo)];
                    for (o, &v) in out[lo..hi].iter_mut().zip(src) {
                        *o += wv * v;
                    }
                } else {
                    for (k, o) in out[lo..hi].iter_mut().enumerate() {
                        *o += wv * row[start + k * g.stride_w];
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
fn row_avx512(x: &[f32], wts: &[f32], g: &DwGeometry, oy: usize, out: &mut [f32]) {
    row_body(x, wts, g, oy, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn row_avx2(x: &[f32], wts: &[f32], g: &DwGeometry, oy: usize, out: &mut [f32]) {
    row_body(x, wts, g, oy, out)
}

/// One output row with `isa` (which must be available: see [`Isa::available`]).
pub fn row_taps(isa: Isa, x: &[f32], wts: &[f32], g: &DwGeometry, oy: usize, out: &mut [f32]) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: `Isa::Avx512` is only chosen when the CPU has AVX-512F (detect/available).
        Isa::Avx512 if Isa::Avx512.available() => unsafe { row_avx512(x, wts, g, oy, out) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above, for AVX2 and FMA.
        Isa::Avx2 if Isa::Avx2.available() => unsafe { row_avx2(x, wts, g, oy, out) },
        _ => row_body(x, wts, g, oy, out),
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
            for isa in [Isa::Baseline, Isa::Avx2, Isa::Avx512] {
                if !isa.available() {
                    continue;
                }
                let mut got = vec![0.0; oh * ow];
                for oy in 0..oh {
                    row_taps(isa, &x, &wts, &g, oy, &mut got[oy * ow..(oy + 1) * ow]);
                }
                for (a, b) in got.iter().zip(&want) {
                    assert!((a - b).abs() <= 1e-5, "{isa:?} {g:?}: {a} vs {b}");
                }
            }
        }
    }
}
