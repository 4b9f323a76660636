//! im2col for the dense Conv: the patch matrix of one group's image, built a tile of output
//! columns at a time into a thread-local buffer, each row's in-range columns copied as one run.

use crate::depthwise::DwGeometry;
use crate::gather::gather_strided_inline;

/// Floats of one im2col tile (1 MiB: it stays in a 2 MiB L2 while the GEMM packs it).
pub(crate) const IM2COL_TILE_FLOATS: usize = 256 * 1024;

/// Multiply-adds of one convolution group below which its tiles do not run in parallel.
pub(crate) const PAR_TILE_WORK: usize = 1 << 20;

thread_local! {
    /// Each thread's im2col matrix (and Winograd's transformed tiles), reused across tiles and
    /// runs (the GEMM driver's packing buffers are kept the same way).
    static IM2COL_BUF: std::cell::RefCell<Vec<f32>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` on this thread's im2col buffer of at least `len` floats (a fresh one when it is in
/// use, as by a nested call).
pub(crate) fn with_im2col_buf<R>(len: usize, f: impl FnOnce(&mut [f32]) -> R) -> R {
    IM2COL_BUF.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() < len {
                buf.resize(len, 0.0);
            }
            f(&mut buf[..len])
        }
        Err(_) => f(&mut vec![0.0f32; len]),
    })
}

/// Writes output columns `[c0, c0 + cols)` of the im2col matrix of one group's image `x`
/// (`[cin_g, h, w]`) into `col` (`[cin_g·kh·kw, cols]`).
///
/// The tile's columns fall into segments of one output row each; where each filter column's
/// taps are in range within a segment is worked out once per call (divisions), so the rows
/// themselves are only fills and (strided) copies. With AVX2 the copies are built for it (the
/// stride-2 gather then runs 8 wide); the baseline build is the scalar twin.
pub(crate) fn im2col_tile(
    x: &[f32],
    cin_g: usize,
    g: &DwGeometry,
    c0: usize,
    cols: usize,
    col: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if rge_simd::Isa::Avx2.is_available() {
        // SAFETY: AVX2 and FMA are available (checked just above).
        return unsafe { im2col_tile_avx2(x, cin_g, g, c0, cols, col) };
    }
    im2col_tile_scalar(x, cin_g, g, c0, cols, col)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn im2col_tile_avx2(
    x: &[f32],
    cin_g: usize,
    g: &DwGeometry,
    c0: usize,
    cols: usize,
    col: &mut [f32],
) {
    im2col_tile_scalar(x, cin_g, g, c0, cols, col)
}

/// One output row's part of a tile: output row `oy`, its columns from `ox0`, `n` of them, at
/// `at` in each row of the tile.
#[derive(Clone, Copy)]
struct Segment {
    oy: usize,
    ox0: usize,
    n: usize,
    at: usize,
}

/// Within a segment, for one filter column: the in-range columns `[lo, hi)` and the input
/// column of `lo`.
#[derive(Clone, Copy)]
struct Run {
    lo: usize,
    hi: usize,
    first: usize,
}

/// [`im2col_tile`] in plain code (the twin the tests compare the AVX2 build against).
#[inline(always)]
fn im2col_tile_scalar(
    x: &[f32],
    cin_g: usize,
    g: &DwGeometry,
    c0: usize,
    cols: usize,
    col: &mut [f32],
) {
    let end = c0 + cols;
    let mut segments = Vec::with_capacity(cols / g.ow.max(1) + 2);
    let mut q = c0;
    while q < end {
        let (oy, ox0) = (q / g.ow, q % g.ow);
        let n = (g.ow - ox0).min(end - q);
        segments.push(Segment {
            oy,
            ox0,
            n,
            at: q - c0,
        });
        q += n;
    }
    // Runs per filter column, then per segment.
    let mut runs = Vec::with_capacity(g.kw * segments.len());
    for j in 0..g.kw {
        let shift = (j * g.dil_w) as isize - g.pad_left as isize;
        for s in &segments {
            let (lo, hi) = in_range(s.ox0, s.n, g.w, g.stride_w, shift);
            let first = if hi > lo {
                ((s.ox0 + lo) as isize * g.stride_w as isize + shift) as usize
            } else {
                0
            };
            runs.push(Run { lo, hi, first });
        }
    }
    let plane = g.h * g.w;
    for c in 0..cin_g {
        let img = &x[c * plane..(c + 1) * plane];
        for i in 0..g.kh {
            for j in 0..g.kw {
                let row = ((c * g.kh + i) * g.kw + j) * cols;
                let dst = &mut col[row..row + cols];
                let runs = &runs[j * segments.len()..(j + 1) * segments.len()];
                for (s, r) in segments.iter().zip(runs) {
                    let out = &mut dst[s.at..s.at + s.n];
                    let iy = (s.oy * g.stride_h + i * g.dil_h) as isize - g.pad_top as isize;
                    if iy < 0 || iy as usize >= g.h {
                        out.fill(0.0);
                        continue;
                    }
                    let src = &img[iy as usize * g.w..(iy as usize + 1) * g.w];
                    out[..r.lo].fill(0.0);
                    out[r.hi..].fill(0.0);
                    if r.hi > r.lo {
                        gather_strided_inline(&mut out[r.lo..r.hi], &src[r.first..], g.stride_w);
                    }
                }
            }
        }
    }
}

/// For the `n` output columns from `ox0`: the range `[lo, hi)` of `k` whose input column
/// `(ox0 + k)·stride + shift` lies in `[0, w)`.
fn in_range(ox0: usize, n: usize, w: usize, stride: usize, shift: isize) -> (usize, usize) {
    let (n, w, s, ox0) = (n as isize, w as isize, stride as isize, ox0 as isize);
    let lo = (ceil_div(-shift, s) - ox0).clamp(0, n);
    let hi = (ceil_div(w - shift, s) - ox0).clamp(lo, n);
    (lo as usize, hi as usize)
}

/// `ceil(a / b)` for `b > 0` and any sign of `a`.
fn ceil_div(a: isize, b: isize) -> isize {
    -((-a).div_euclid(b))
}

/// `out[k] = src[(ox0 + k)·stride + shift]`, 0 where that index leaves `src` (the rule
/// [`im2col_tile`]'s runs follow; tested against the per-element definition).
#[cfg(test)]
fn copy_row(src: &[f32], out: &mut [f32], ox0: usize, stride: usize, shift: isize) {
    let (lo, hi) = in_range(ox0, out.len(), src.len(), stride, shift);
    out[..lo].fill(0.0);
    out[hi..].fill(0.0);
    if hi > lo {
        let first = ((ox0 + lo) as isize * stride as isize + shift) as usize;
        gather_strided_inline(&mut out[lo..hi], &src[first..], stride);
    }
}

#[cfg(test)]
mod tests {
    use super::{copy_row, im2col_tile, im2col_tile_scalar};
    use crate::depthwise::DwGeometry;

    /// The patch matrix by its definition: row `(c, i, j)`, column `q` is the input at
    /// `(oy·sh + i·dh − pt, ox·sw + j·dw − pl)`, 0 outside.
    fn im2col_by_definition(
        x: &[f32],
        cin: usize,
        g: &DwGeometry,
        c0: usize,
        cols: usize,
    ) -> Vec<f32> {
        let mut out = Vec::with_capacity(cin * g.kh * g.kw * cols);
        for c in 0..cin {
            for i in 0..g.kh {
                for j in 0..g.kw {
                    for q in c0..c0 + cols {
                        let (oy, ox) = (q / g.ow, q % g.ow);
                        let iy = (oy * g.stride_h + i * g.dil_h) as isize - g.pad_top as isize;
                        let ix = (ox * g.stride_w + j * g.dil_w) as isize - g.pad_left as isize;
                        let inside =
                            (0..g.h as isize).contains(&iy) && (0..g.w as isize).contains(&ix);
                        out.push(if inside {
                            x[(c * g.h + iy as usize) * g.w + ix as usize]
                        } else {
                            0.0
                        });
                    }
                }
            }
        }
        out
    }

    /// Both builds of `im2col_tile` against the definition, over kernels, strides, dilations,
    /// pads and tiles that start and end inside output rows.
    #[test]
    fn im2col_tiles_match_the_definition() {
        let mut seed = 7u32;
        let mut next = |m: usize| {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as usize % m
        };
        for _ in 0..300 {
            let (h, w, kh, kw) = (1 + next(9), 1 + next(11), 1 + next(4), 1 + next(4));
            let (sh, sw, dh, dw) = (1 + next(3), 1 + next(3), 1 + next(2), 1 + next(2));
            let (pt, pl, pb, pr) = (next(3), next(3), next(3), next(3));
            let (ekh, ekw) = ((kh - 1) * dh + 1, (kw - 1) * dw + 1);
            if h + pt + pb < ekh || w + pl + pr < ekw {
                continue;
            }
            let g = DwGeometry {
                h,
                w,
                kh,
                kw,
                stride_h: sh,
                stride_w: sw,
                dil_h: dh,
                dil_w: dw,
                pad_top: pt,
                pad_left: pl,
                oh: (h + pt + pb - ekh) / sh + 1,
                ow: (w + pl + pr - ekw) / sw + 1,
            };
            let cin = 1 + next(3);
            let x: Vec<f32> = (0..cin * h * w).map(|v| v as f32 + 1.0).collect();
            let total = g.oh * g.ow;
            let c0 = next(total);
            let cols = 1 + next(total - c0);
            let want = im2col_by_definition(&x, cin, &g, c0, cols);
            for fast in [false, true] {
                let mut got = vec![f32::NAN; want.len()];
                if fast {
                    im2col_tile(&x, cin, &g, c0, cols, &mut got);
                } else {
                    im2col_tile_scalar(&x, cin, &g, c0, cols, &mut got);
                }
                assert_eq!(got, want, "{g:?} cin {cin} c0 {c0} cols {cols} fast {fast}");
            }
        }
    }

    /// `copy_row` against the per-element definition, over strides, shifts (padding and
    /// dilation on either side) and row segments.
    #[test]
    fn copy_row_matches_the_per_element_rule() {
        let src: Vec<f32> = (0..9).map(|i| i as f32 + 1.0).collect();
        for stride in 1..4 {
            for shift in -5isize..6 {
                for ox0 in 0..4 {
                    for n in 0..8 {
                        let mut out = vec![f32::NAN; n];
                        copy_row(&src, &mut out, ox0, stride, shift);
                        for (k, &v) in out.iter().enumerate() {
                            let ix = ((ox0 + k) * stride) as isize + shift;
                            let want = if (0..src.len() as isize).contains(&ix) {
                                src[ix as usize]
                            } else {
                                0.0
                            };
                            assert_eq!(v, want, "stride {stride} shift {shift} ox0 {ox0} k {k}");
                        }
                    }
                }
            }
        }
    }
}
