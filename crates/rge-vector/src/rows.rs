//! Splitting row-wise work over the session's threads.

use rayon::prelude::*;

/// Element count from which row loops split across threads.
pub const PAR_MIN: usize = 1 << 15;

/// Calls `f(row index, row)` for every `cols`-long row of `out`, in parallel when `threads > 1`
/// and `out` is large.
pub fn for_rows(
    threads: usize,
    out: &mut [f32],
    cols: usize,
    f: impl Fn(usize, &mut [f32]) + Sync,
) {
    if cols == 0 || out.is_empty() {
        return;
    }
    if threads > 1 && out.len() >= PAR_MIN && out.len() / cols > 1 {
        out.par_chunks_mut(cols)
            .enumerate()
            .for_each(|(i, r)| f(i, r));
    } else {
        out.chunks_mut(cols).enumerate().for_each(|(i, r)| f(i, r));
    }
}
