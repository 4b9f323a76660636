//! The GEMM core: `C = alpha·A·B + beta·C` over strided row-major views, with matrixmultiply's
//! sgemm/dgemm for f32/f64 and a plain loop for integers (wrapping arithmetic). Callers
//! convert f16/bf16 to f32 first.

use rayon::prelude::*;
use rge_kernels::{Elem, KernelError, KernelResult};

/// A matrix view: element (i, j) is at `data[off + i*rs + j*cs]`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mat {
    pub rs: usize,
    pub cs: usize,
}

impl Mat {
    pub(crate) fn row_major(cols: usize) -> Mat {
        Mat { rs: cols, cs: 1 }
    }
    pub(crate) fn col_major(rows: usize) -> Mat {
        Mat { rs: 1, cs: rows }
    }
    /// One past the largest index a rows×cols view reaches (0 when empty).
    fn extent(&self, rows: usize, cols: usize) -> Option<usize> {
        if rows == 0 || cols == 0 {
            return Some(0);
        }
        (rows - 1)
            .checked_mul(self.rs)?
            .checked_add((cols - 1).checked_mul(self.cs)?)?
            .checked_add(1)
    }
}

/// Element types with a GEMM.
pub(crate) trait Gemm: Elem {
    /// `c = alpha·a·b + beta·c` for an m×k `a`, k×n `b`, m×n `c` (beta = 0: c is not read).
    #[allow(clippy::too_many_arguments)]
    fn gemm_unchecked(
        m: usize,
        k: usize,
        n: usize,
        alpha: Self,
        a: &[Self],
        av: Mat,
        b: &[Self],
        bv: Mat,
        beta: Self,
        c: &mut [Self],
        cv: Mat,
    );
    fn zero() -> Self;
    fn one() -> Self;
    /// `self + o` (wrapping for integers).
    fn add(self, o: Self) -> Self;
}

macro_rules! float_gemm {
    ($t:ty, $f:path) => {
        impl Gemm for $t {
            fn gemm_unchecked(
                m: usize,
                k: usize,
                n: usize,
                alpha: Self,
                a: &[Self],
                av: Mat,
                b: &[Self],
                bv: Mat,
                beta: Self,
                c: &mut [Self],
                cv: Mat,
            ) {
                if m == 0 || n == 0 {
                    return;
                }
                if k == 0 {
                    scale_c(m, n, beta, c, cv);
                    return;
                }
                // SAFETY: `gemm` checked that every index the three views reach lies inside
                // the slices (`Mat::extent`), `c` is borrowed mutably and does not alias `a`
                // or `b`, and the strides fit in isize (slice lengths do).
                unsafe {
                    $f(
                        m,
                        k,
                        n,
                        alpha,
                        a.as_ptr(),
                        av.rs as isize,
                        av.cs as isize,
                        b.as_ptr(),
                        bv.rs as isize,
                        bv.cs as isize,
                        beta,
                        c.as_mut_ptr(),
                        cv.rs as isize,
                        cv.cs as isize,
                    )
                }
            }
            fn zero() -> Self {
                0.0
            }
            fn one() -> Self {
                1.0
            }
            fn add(self, o: Self) -> Self {
                self + o
            }
        }
    };
}

float_gemm!(f32, matrixmultiply::sgemm);
float_gemm!(f64, matrixmultiply::dgemm);

fn scale_c<T: Gemm + std::ops::Mul<Output = T>>(m: usize, n: usize, beta: T, c: &mut [T], cv: Mat) {
    for i in 0..m {
        for j in 0..n {
            let x = &mut c[i * cv.rs + j * cv.cs];
            *x = if beta == T::zero() {
                T::zero()
            } else {
                *x * beta
            };
        }
    }
}

macro_rules! int_gemm {
    ($($t:ty),*) => {$(
        impl Gemm for $t {
            fn gemm_unchecked(
                m: usize,
                k: usize,
                n: usize,
                alpha: Self,
                a: &[Self],
                av: Mat,
                b: &[Self],
                bv: Mat,
                beta: Self,
                c: &mut [Self],
                cv: Mat,
            ) {
                let mut row = vec![0 as $t; n];
                for i in 0..m {
                    row.iter_mut().for_each(|x| *x = 0);
                    for p in 0..k {
                        let aip = a[i * av.rs + p * av.cs];
                        if aip == 0 {
                            continue;
                        }
                        for (j, r) in row.iter_mut().enumerate() {
                            *r = r.wrapping_add(aip.wrapping_mul(b[p * bv.rs + j * bv.cs]));
                        }
                    }
                    for (j, r) in row.iter().enumerate() {
                        let x = &mut c[i * cv.rs + j * cv.cs];
                        let prev = if beta == 0 { 0 } else { x.wrapping_mul(beta) };
                        *x = r.wrapping_mul(alpha).wrapping_add(prev);
                    }
                }
            }
            fn zero() -> Self {
                0
            }
            fn one() -> Self {
                1
            }
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
        }
    )*};
}

int_gemm!(i8, i16, i32, i64, u8, u16, u32, u64);

/// Checked GEMM: validates that the views fit the slices, then runs.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm<T: Gemm>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    a: &[T],
    av: Mat,
    b: &[T],
    bv: Mat,
    beta: T,
    c: &mut [T],
    cv: Mat,
) -> KernelResult<()> {
    let fits = |v: Mat, r: usize, cl: usize, len: usize| v.extent(r, cl).is_some_and(|e| e <= len);
    if !(fits(av, m, k, a.len()) && fits(bv, k, n, b.len()) && fits(cv, m, n, c.len())) {
        return Err(KernelError::invalid(format!(
            "GEMM {m}x{k}x{n}: operand views exceed their buffers"
        )));
    }
    T::gemm_unchecked(m, k, n, alpha, a, av, b, bv, beta, c, cv);
    Ok(())
}

/// GEMM with `c` row-major contiguous (m×n), split over row blocks on `threads` threads when
/// the work is large.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemm_par<T: Gemm>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    a: &[T],
    av: Mat,
    b: &[T],
    bv: Mat,
    beta: T,
    c: &mut [T],
    threads: usize,
) -> KernelResult<()> {
    let work = m.saturating_mul(n).saturating_mul(k.max(1));
    if threads <= 1 || work < (1 << 18) || m < 2 * threads || n == 0 {
        return gemm(m, k, n, alpha, a, av, b, bv, beta, c, Mat::row_major(n));
    }
    if c.len() < m * n {
        return Err(KernelError::invalid("GEMM output buffer too small"));
    }
    let rows = m.div_ceil(threads * 2).max(1);
    c[..m * n]
        .par_chunks_mut(rows * n)
        .enumerate()
        .try_for_each(|(ci, chunk)| {
            let r0 = ci * rows;
            let mr = chunk.len() / n;
            let a_off = r0 * av.rs;
            if a_off > a.len() {
                return Err(KernelError::invalid("GEMM operand too small"));
            }
            gemm(
                mr,
                k,
                n,
                alpha,
                &a[a_off..],
                av,
                b,
                bv,
                beta,
                chunk,
                Mat::row_major(n),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_products() {
        let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]; // 2x3
        let b = [1.0f32, 0.0, 0.0, 1.0, 1.0, 1.0]; // 3x2
        let mut c = [0.0f32; 4];
        gemm(
            2,
            3,
            2,
            1.0,
            &a,
            Mat::row_major(3),
            &b,
            Mat::row_major(2),
            0.0,
            &mut c,
            Mat::row_major(2),
        )
        .unwrap();
        assert_eq!(c, [4.0, 5.0, 10.0, 11.0]);
        let ai = [1i32, 2, 3, 4, 5, 6];
        let bi = [1i32, 0, 0, 1, 1, 1];
        let mut ci = [1i32; 4];
        gemm(
            2,
            3,
            2,
            1,
            &ai,
            Mat::row_major(3),
            &bi,
            Mat::row_major(2),
            1,
            &mut ci,
            Mat::row_major(2),
        )
        .unwrap();
        assert_eq!(ci, [5, 6, 11, 12]);
        // Views past the buffer are refused.
        assert!(gemm(
            3,
            3,
            2,
            1.0,
            &a,
            Mat::row_major(3),
            &b,
            Mat::row_major(2),
            0.0,
            &mut c,
            Mat::row_major(2)
        )
        .is_err());
    }
}
