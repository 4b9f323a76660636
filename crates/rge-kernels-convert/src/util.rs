//! Small helpers shared by the kernels of this crate.

use rayon::prelude::*;

/// Elements above which a kernel may split work across threads.
pub const PAR_MIN: usize = 1 << 16;

/// `dst[i] = f(src[i])`, on several threads when allowed and worth it.
pub fn map_into<S: Copy + Sync, D: Send>(
    src: &[S],
    dst: &mut [D],
    threads: usize,
    f: impl Fn(S) -> D + Sync,
) {
    if threads > 1 && dst.len() >= PAR_MIN {
        let chunk = dst.len().div_ceil(threads * 4).max(4096);
        dst.par_chunks_mut(chunk)
            .zip(src.par_chunks(chunk))
            .for_each(|(d, s)| {
                for (d, &s) in d.iter_mut().zip(s) {
                    *d = f(s);
                }
            });
    } else {
        for (d, &s) in dst.iter_mut().zip(src) {
            *d = f(s);
        }
    }
}
