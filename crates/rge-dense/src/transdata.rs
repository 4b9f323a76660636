//! The dense engine's layout conversions (GE's TransData): Transpose of a 4-D f32 tensor
//! between NCHW and NHWC (perm `[0, 2, 3, 1]` or `[0, 3, 1, 2]`), the ops at the borders of
//! its channels-last regions (`layout.rs`). Each image is a matrix transpose (`[C × H·W]` to
//! `[H·W × C]` or back), done in 16×16 tiles with the ISA's transpose (in registers on
//! AVX-512; the scalar twin elsewhere), bands of 16 rows split over the threads; an image of at
//! most [`FEW_ROWS`] channels is interleaved pixel by pixel instead. The reference
//! Transpose gathers element by element (0.21 ms for MobileNetV2's 224×224 input; 0.03 here).

use rayon::prelude::*;
use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};
use rge_simd::{Scalar, Simd};

use crate::gemm::Isa;
use crate::kernels::f32s;
use crate::shared_out::SharedOut;

/// NCHW → NHWC.
pub const TO_NHWC: [i64; 4] = [0, 2, 3, 1];
/// NHWC → NCHW.
pub const TO_NCHW: [i64; 4] = [0, 3, 1, 2];

/// Bands of 16 rows per parallel task, at least (64 KiB).
const BANDS_PER_TASK: usize = 16;

/// Whether a Transpose of this perm is one the kernel runs.
pub fn supported_perm(perm: &[i64]) -> bool {
    perm == TO_NHWC || perm == TO_NCHW
}

/// The kernel: which way it converts.
pub struct TransDataKernel {
    to_nhwc: bool,
}

/// Builds the kernel (`perm` must be one of the two conversions).
pub fn create_transdata(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    match init.ints_opt("perm")? {
        Some(p) if supported_perm(p) => Ok(Box::new(TransDataKernel {
            to_nhwc: p == TO_NHWC,
        })),
        other => Err(KernelError::attr(
            "perm",
            format!("{other:?} is not a conversion between NCHW and NHWC"),
        )),
    }
}

impl Kernel for TransDataKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let s = x.shape().to_vec();
        if s.len() != 4 {
            return Err(KernelError::invalid(format!(
                "a layout conversion of a rank-{} tensor {s:?}",
                s.len()
            )));
        }
        let (out_shape, rows, cols) = if self.to_nhwc {
            ([s[0], s[2], s[3], s[1]], s[1], s[2] * s[3])
        } else {
            ([s[0], s[3], s[1], s[2]], s[1] * s[2], s[3])
        };
        let xv = f32s(&x, "data")?;
        let threads = ctx.threads().max(1);
        let out = ctx.output::<f32>(0, &out_shape)?;
        if out.is_empty() {
            return Ok(());
        }
        let isa = Isa::best();
        for (src, dst) in xv
            .chunks_exact(rows * cols)
            .zip(out.chunks_exact_mut(rows * cols))
        {
            transpose(isa, src, rows, cols, dst, threads);
        }
        Ok(())
    }
}

/// `dst[c·rows + r] = src[r·cols + c]`: bands of 16 rows of `src` (16 columns of `dst`), split
/// over `threads`.
pub fn transpose(isa: Isa, src: &[f32], rows: usize, cols: usize, dst: &mut [f32], threads: usize) {
    assert!(src.len() >= rows * cols && dst.len() >= rows * cols);
    if rows <= FEW_ROWS {
        interleave_rows(isa, src, rows, cols, &mut dst[..rows * cols], threads);
        return;
    }
    let bands = rows.div_ceil(16);
    let per = bands.div_ceil(threads).max(BANDS_PER_TASK);
    let run = |b0: usize, b1: usize| {
        let dst_ptr = SharedOut(dst.as_ptr() as *mut f32);
        // SAFETY: bands [b0, b1) write only rows [16·b0, 16·b1) of each of dst's columns, which
        // no other task writes; the slices hold rows × cols values (asserted above).
        unsafe { bands_isa(isa, src, rows, cols, dst_ptr, b0, b1) }
    };
    if threads > 1 && bands > per {
        (0..bands.div_ceil(per))
            .into_par_iter()
            .for_each(|t| run(t * per, ((t + 1) * per).min(bands)));
    } else {
        run(0, bands);
    }
}

/// Rows up to which a transpose interleaves them pixel by pixel: an image's 3 channels
/// (every CNN's input) filled 3 of a 16×16 tile's rows, one band that no thread could share
/// (ResNet-18's input: 0.13 ms at 1 thread, 0.11 at 2).
const FEW_ROWS: usize = 4;

/// Output rows (`dst` pixels) per parallel task of [`interleave_rows`], at least.
const PIXELS_PER_TASK: usize = 4096;

/// `dst[c·rows + r] = src[r·cols + c]` for `rows <= FEW_ROWS`: each pixel's few values
/// gathered from the planes, pixels split over `threads`.
fn interleave_rows(
    isa: Isa,
    src: &[f32],
    rows: usize,
    cols: usize,
    dst: &mut [f32],
    threads: usize,
) {
    if rows == 0 || cols == 0 {
        return;
    }
    let per = cols.div_ceil(threads).max(PIXELS_PER_TASK);
    let run = |(t, out): (usize, &mut [f32])| {
        let c0 = t * per;
        // SAFETY: the ISA path is taken only when the CPU has it.
        unsafe {
            match isa {
                #[cfg(target_arch = "x86_64")]
                Isa::Avx512 if Isa::Avx512.is_available() => {
                    interleave_avx512(src, rows, cols, c0, out)
                }
                #[cfg(target_arch = "x86_64")]
                Isa::Avx2 if Isa::Avx2.is_available() => interleave_avx2(src, rows, cols, c0, out),
                _ => interleave(src, rows, cols, c0, out),
            }
        }
    };
    if threads > 1 && cols > per {
        dst.par_chunks_mut(per * rows).enumerate().for_each(run);
    } else {
        run((0, dst));
    }
}

/// Pixels `[c0, c0 + out.len() / rows)` of [`interleave_rows`] into `out`, one instance per
/// row count so that the loop has a constant stride and vectorizes.
#[inline(always)]
fn interleave(src: &[f32], rows: usize, cols: usize, c0: usize, out: &mut [f32]) {
    fn fixed<const R: usize>(src: &[f32], cols: usize, c0: usize, out: &mut [f32]) {
        let n = out.len() / R;
        let planes: [&[f32]; R] = std::array::from_fn(|r| &src[r * cols + c0..r * cols + c0 + n]);
        for (i, px) in out.chunks_exact_mut(R).enumerate() {
            for r in 0..R {
                px[r] = planes[r][i];
            }
        }
    }
    match rows {
        1 => out.copy_from_slice(&src[c0..c0 + out.len()]),
        2 => fixed::<2>(src, cols, c0, out),
        3 => fixed::<3>(src, cols, c0, out),
        _ => fixed::<4>(src, cols, c0, out),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn interleave_avx512(src: &[f32], rows: usize, cols: usize, c0: usize, out: &mut [f32]) {
    interleave(src, rows, cols, c0, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn interleave_avx2(src: &[f32], rows: usize, cols: usize, c0: usize, out: &mut [f32]) {
    interleave(src, rows, cols, c0, out)
}

/// # Safety
/// `src` and the memory at `dst` hold `rows × cols` values; no one else writes rows
/// `[16·b0, 16·b1)` of dst's columns meanwhile.
unsafe fn bands_isa(
    isa: Isa,
    src: &[f32],
    rows: usize,
    cols: usize,
    dst: SharedOut,
    b0: usize,
    b1: usize,
) {
    // SAFETY: the caller's contract; each ISA path is taken only when the CPU has it.
    unsafe {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if Isa::Avx512.is_available() => bands_avx512(src, rows, cols, dst, b0, b1),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 if Isa::Avx2.is_available() => bands_avx2(src, rows, cols, dst, b0, b1),
            _ => bands_simd(Scalar, src, rows, cols, dst, b0, b1),
        }
    }
}

#[inline(always)]
unsafe fn bands_simd<S: Simd>(
    s: S,
    src: &[f32],
    rows: usize,
    cols: usize,
    dst: SharedOut,
    b0: usize,
    b1: usize,
) {
    for b in b0..b1 {
        let r0 = b * 16;
        let nr = (rows - r0).min(16);
        for c0 in (0..cols).step_by(16) {
            let nc = (cols - c0).min(16);
            // SAFETY: rows r0..r0 + nr of src hold columns c0..c0 + nc; dst's columns
            // c0..c0 + nc hold rows r0..r0 + nr (the caller's contract).
            unsafe {
                s.transpose16(
                    src.as_ptr().add(r0 * cols + c0),
                    cols,
                    dst.0.add(c0 * rows + r0),
                    rows,
                    nr,
                    nc,
                )
            };
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn bands_avx512(
    src: &[f32],
    rows: usize,
    cols: usize,
    dst: SharedOut,
    b0: usize,
    b1: usize,
) {
    // SAFETY: reached only after the ISA check; the contract is forwarded.
    unsafe {
        bands_simd(
            rge_simd::Avx512::new_unchecked(),
            src,
            rows,
            cols,
            dst,
            b0,
            b1,
        )
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn bands_avx2(src: &[f32], rows: usize, cols: usize, dst: SharedOut, b0: usize, b1: usize) {
    // SAFETY: reached only after the ISA check; the contract is forwarded.
    unsafe {
        bands_simd(
            rge_simd::Avx2::new_unchecked(),
            src,
            rows,
            cols,
            dst,
            b0,
            b1,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_isa_transposes_every_shape() {
        for (rows, cols) in [
            (1, 1),
            (3, 50176),
            (2, 9000),
            (4, 17),
            (1, 5000),
            (17, 33),
            (16, 16),
            (1280, 49),
            (40, 7),
        ] {
            let src: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
            for isa in Isa::available() {
                for threads in [1, 3] {
                    let mut dst = vec![f32::NAN; rows * cols];
                    transpose(isa, &src, rows, cols, &mut dst, threads);
                    for r in 0..rows {
                        for c in 0..cols {
                            assert_eq!(
                                dst[c * rows + r],
                                src[r * cols + c],
                                "{isa:?} {rows}x{cols}"
                            );
                        }
                    }
                }
            }
        }
    }
}
