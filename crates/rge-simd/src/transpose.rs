//! The scalar twin of [`Simd::transpose16`](crate::Simd::transpose16).

/// `dst[c·dst_stride + r] = src[r·src_stride + c]` for `r < rows`, `c < cols`.
///
/// # Safety
/// As [`Simd::transpose16`](crate::Simd::transpose16).
#[inline(always)]
pub(crate) unsafe fn transpose16_scalar(
    src: *const f32,
    src_stride: usize,
    dst: *mut f32,
    dst_stride: usize,
    rows: usize,
    cols: usize,
) {
    for r in 0..rows {
        for c in 0..cols {
            // SAFETY: the caller's contract covers row r's first `cols` floats and column c's
            // first `rows`.
            unsafe { *dst.add(c * dst_stride + r) = *src.add(r * src_stride + c) };
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{Lanes, Scalar, Simd};

    fn check<S: Simd>(s: S, name: &str) {
        let src: Vec<f32> = (0..20 * 24).map(|i| i as f32).collect();
        for (rows, cols) in [(16, 16), (1, 16), (16, 1), (5, 11), (16, 9), (3, 3), (0, 4)] {
            let (src_stride, dst_stride) = (24, 20);
            let mut dst = vec![-1.0f32; 17 * dst_stride];
            // SAFETY: 16 rows of 24 and 17 columns of 20 floats cover every access.
            unsafe {
                s.transpose16(
                    src.as_ptr(),
                    src_stride,
                    dst.as_mut_ptr(),
                    dst_stride,
                    rows,
                    cols,
                )
            };
            for c in 0..17 {
                for r in 0..dst_stride {
                    let want = if r < rows && c < cols {
                        src[r * src_stride + c]
                    } else {
                        -1.0
                    };
                    assert_eq!(
                        dst[c * dst_stride + r],
                        want,
                        "{name} {rows}x{cols} at {c},{r}"
                    );
                }
            }
        }
    }

    #[test]
    fn every_isa_transposes_exactly_the_tile() {
        check(Scalar, "scalar");
        check(Lanes::<8>, "lanes");
        #[cfg(target_arch = "x86_64")]
        {
            if let Some(s) = crate::Avx512::new() {
                check(s, "avx512");
            }
            if let Some(s) = crate::Avx2::new() {
                check(s, "avx2");
            }
        }
    }
}
