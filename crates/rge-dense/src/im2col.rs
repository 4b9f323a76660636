//! im2col for the dense Conv: the patch matrix of one group's image, built a tile of output
//! columns at a time into a thread-local buffer, each row's in-range columns copied as one run.

use crate::depthwise::DwGeometry;
use crate::gather::gather_strided;

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
pub(crate) fn im2col_tile(
    x: &[f32],
    cin_g: usize,
    g: &DwGeometry,
    c0: usize,
    cols: usize,
    col: &mut [f32],
) {
    let end = c0 + cols;
    for c in 0..cin_g {
        let img = &x[c * g.h * g.w..(c + 1) * g.h * g.w];
        for i in 0..g.kh {
            for j in 0..g.kw {
                let row = ((c * g.kh + i) * g.kw + j) * cols;
                let dst = &mut col[row..row + cols];
                let mut q = c0;
                while q < end {
                    let (oy, ox0) = (q / g.ow, q % g.ow);
                    let n = (g.ow - ox0).min(end - q);
                    let out = &mut dst[q - c0..q - c0 + n];
                    q += n;
                    let iy = (oy * g.stride_h + i * g.dil_h) as isize - g.pad_top as isize;
                    if iy < 0 || iy as usize >= g.h {
                        out.fill(0.0);
                        continue;
                    }
                    let src = &img[iy as usize * g.w..(iy as usize + 1) * g.w];
                    let shift = (j * g.dil_w) as isize - g.pad_left as isize;
                    copy_row(src, out, ox0, g.stride_w, shift);
                }
            }
        }
    }
}

/// `ceil(a / b)` for `b > 0` and any sign of `a`.
fn ceil_div(a: isize, b: isize) -> isize {
    -((-a).div_euclid(b))
}

/// `out[k] = src[(ox0 + k)·stride + shift]`, 0 where that index leaves `src`: the in-range
/// columns form one run, found by division, so the copy has no per-element test (it was 30%
/// of ResNet-18's run time with one).
fn copy_row(src: &[f32], out: &mut [f32], ox0: usize, stride: usize, shift: isize) {
    let (n, w, s, ox0) = (
        out.len() as isize,
        src.len() as isize,
        stride as isize,
        ox0 as isize,
    );
    // ix = (ox0 + k)·s + shift lies in [0, w) for k in [lo, hi).
    let lo = (ceil_div(-shift, s) - ox0).clamp(0, n);
    let hi = (ceil_div(w - shift, s) - ox0).clamp(lo, n);
    let (lo, hi) = (lo as usize, hi as usize);
    out[..lo].fill(0.0);
    out[hi..].fill(0.0);
    if hi > lo {
        let first = ((ox0 + lo as isize) * s + shift) as usize;
        gather_strided(&mut out[lo..hi], &src[first..], stride);
    }
}

#[cfg(test)]
mod tests {
    use super::copy_row;

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
