//! Strided row copies: the column gathers of im2col and of the depthwise phase images.

/// `dst[k] = src[k·stride]`. Not inlined: inlined into the depthwise kernel's wide SIMD
/// loops, the copy ran out of registers and spilled on every element (stride 2 cost 8× the
/// filter itself).
#[inline(never)]
pub(crate) fn gather_strided(dst: &mut [f32], src: &[f32], stride: usize) {
    gather_strided_inline(dst, src, stride)
}

/// [`gather_strided`] inlined into the build it is called from (im2col's loops have registers
/// to spare). Stride 2 is written so that it vectorizes (a pair per output).
#[inline(always)]
pub(crate) fn gather_strided_inline(dst: &mut [f32], src: &[f32], stride: usize) {
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

/// `even[k] = src[2k]`, `odd[k] = src[2k + 1]`: a row split into its two stride-2 phases in
/// one pass. Inlined: built into an AVX2 kernel, the loop runs 8 wide (two loads and four
/// shuffles per 8 of each); a call per row, with its ISA check, cost as much as the copy (a
/// 56×56 image's rows are 28 pairs). Split by two stride-2 gathers, MobileNetV2's 56×56
/// stride-2 depthwise layer spent half its time copying.
///
/// # Panics
/// When `src` is shorter than the longer output needs.
#[inline(always)]
pub(crate) fn deinterleave(src: &[f32], even: &mut [f32], odd: &mut [f32]) {
    let both = even.len().min(odd.len()).min(src.len() / 2);
    let pairs = src[..2 * both].chunks_exact(2);
    for ((e, o), p) in even[..both].iter_mut().zip(&mut odd[..both]).zip(pairs) {
        *e = p[0];
        *o = p[1];
    }
    for (k, e) in even.iter_mut().enumerate().skip(both) {
        *e = src[2 * k];
    }
    for (k, o) in odd.iter_mut().enumerate().skip(both) {
        *o = src[2 * k + 1];
    }
}

#[cfg(test)]
mod tests {
    use super::{deinterleave, gather_strided};

    #[test]
    fn deinterleave_matches_the_definition() {
        let src: Vec<f32> = (0..70).map(|i| i as f32).collect();
        for len in 0..=src.len() {
            for ne in [0, len / 2, len.div_ceil(2)] {
                for no in [0, len / 2] {
                    let (mut e, mut o) = (vec![f32::NAN; ne], vec![f32::NAN; no]);
                    deinterleave(&src[..len], &mut e, &mut o);
                    let want_e: Vec<f32> = (0..ne).map(|k| src[2 * k]).collect();
                    let want_o: Vec<f32> = (0..no).map(|k| src[2 * k + 1]).collect();
                    assert_eq!((e, o), (want_e, want_o), "len {len}");
                }
            }
        }
    }

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
