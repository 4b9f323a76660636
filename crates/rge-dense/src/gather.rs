//! Strided row copies: the column gathers of im2col and of the depthwise phase images.

/// `dst[k] = src[k·stride]`. Not inlined: inlined into the depthwise kernel's wide SIMD
/// loops, the copy ran out of registers and spilled on every element (stride 2 cost 8× the
/// filter itself). Stride 2 is written so that it vectorizes (a pair per output).
#[inline(never)]
pub(crate) fn gather_strided(dst: &mut [f32], src: &[f32], stride: usize) {
    match stride {
        1 => dst.copy_from_slice(&src[..dst.len()]),
        2 => {
            let n = dst.len();
            // The last pixel may have no pair after it in the row.
            let pairs = n.saturating_sub(1).min(src.len() / 2);
            for (d, pair) in dst[..pairs].iter_mut().zip(src.chunks_exact(2)) {
                *d = pair[0];
            }
            for (k, d) in dst.iter_mut().enumerate().skip(pairs) {
                *d = src[k * 2];
            }
        }
        _ => {
            for (d, s) in dst.iter_mut().zip(src.iter().step_by(stride)) {
                *d = *s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::gather_strided;

    #[test]
    fn gather_matches_the_definition() {
        let src: Vec<f32> = (0..40).map(|i| i as f32).collect();
        for stride in 1..5 {
            for n in 0..=40usize.div_ceil(stride) {
                // Source rows that end right after the last pixel read, or later.
                for extra in 0..stride {
                    let len = (n.saturating_sub(1) * stride + 1 + extra).min(src.len());
                    let mut dst = vec![f32::NAN; n];
                    gather_strided(&mut dst, &src[..len], stride);
                    let want: Vec<f32> = (0..n).map(|k| src[k * stride]).collect();
                    assert_eq!(dst, want, "stride {stride} n {n} len {len}");
                }
            }
        }
    }
}
