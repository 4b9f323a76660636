//! An LSTM step's cell update in two passes over its units, the gates in registers: the
//! reference cell (`rge-kernels-sequence`) makes five activation passes and four sum passes
//! over scratch rows per batch row, which at the bench's 8 rows × 512 units cost 27–30 µs of
//! a ~178 µs step on each of 2 threads (20–25 µs in one pass, fewer in two: see `update`).

use rge_kernels_sequence::LstmCellBlock;
use rge_simd::{math, Simd};

/// [`LstmCellBlock`]'s update with σ, tanh, tanh, `S::LANES` units at a time.
///
/// `examples/lstm_cell_time.rs` on the 2-vCPU EPYC (AVX2), 8 rows × 256 units (one thread's
/// share of a bench step): one pass 14.9–15.9 µs, two passes 12.4–13.8.
///
/// # Safety
/// `cell.is_consistent()`: every operand holds `cell.c.len()` values.
#[inline(always)]
pub(crate) unsafe fn update<S: Simd>(s: S, cell: &mut LstmCellBlock<'_, f32>) {
    debug_assert!(cell.is_consistent());
    let n = cell.c.len();
    let (x, r, b, p) = (cell.x, cell.r, cell.bias, cell.peep);
    let (c, h) = (cell.c.as_mut_ptr(), cell.h.as_mut_ptr());
    // Two passes, the new cell state between them in `c`: a pass's iterations are short
    // enough that the core overlaps several (one pass with all five activations ran as one
    // dependency chain at a time).
    let mut j = 0;
    while j < n {
        let m = (n - j).min(S::LANES);
        // SAFETY: j + m <= n and every operand holds n values (the caller's contract).
        unsafe {
            let c0 = load(s, c, j, m);
            let i = math::sigmoid(s, peeped(s, pre(s, x[0], r[0], b[0], j, m), p[0], c0, j, m));
            let f = math::sigmoid(s, peeped(s, pre(s, x[2], r[2], b[2], j, m), p[2], c0, j, m));
            let g = math::tanh(s, pre(s, x[3], r[3], b[3], j, m));
            store(s, c, j, m, s.add(s.mul(f, c0), s.mul(i, g)));
        }
        j += m;
    }
    let mut j = 0;
    while j < n {
        let m = (n - j).min(S::LANES);
        // SAFETY: as above.
        unsafe {
            let c1 = load(s, c, j, m);
            let o = math::sigmoid(s, peeped(s, pre(s, x[1], r[1], b[1], j, m), p[1], c1, j, m));
            store(s, h, j, m, s.mul(o, math::tanh(s, c1)));
        }
        j += m;
    }
}

/// A gate's `x + r + b` at `j`, summed in the reference's order (a function, not a closure:
/// closures do not inherit the caller's target features).
///
/// # Safety
/// The three operands readable for `m` floats at `j`.
#[inline(always)]
unsafe fn pre<S: Simd>(s: S, x: &[f32], r: &[f32], b: &[f32], j: usize, m: usize) -> S::V {
    // SAFETY: the caller's contract.
    unsafe {
        let v = s.add(load(s, x.as_ptr(), j, m), load(s, r.as_ptr(), j, m));
        s.add(v, load(s, b.as_ptr(), j, m))
    }
}

/// A gate's sum plus its peephole times the cell state: `sum + p·c`.
///
/// # Safety
/// `p` readable for `m` floats at `j`.
#[inline(always)]
unsafe fn peeped<S: Simd>(s: S, sum: S::V, p: &[f32], c: S::V, j: usize, m: usize) -> S::V {
    // SAFETY: the caller's contract.
    unsafe { s.add(sum, s.mul(load(s, p.as_ptr(), j, m), c)) }
}

/// `m ≤ LANES` values from `v + j` (zeros past them).
///
/// # Safety
/// `v + j` readable for `m` floats.
#[inline(always)]
unsafe fn load<S: Simd>(s: S, v: *const f32, j: usize, m: usize) -> S::V {
    // SAFETY: the caller's contract.
    unsafe {
        if m == S::LANES {
            s.load(v.add(j))
        } else {
            s.load_n(v.add(j), m, 0.0)
        }
    }
}

/// `m ≤ LANES` values of `x` to `v + j`.
///
/// # Safety
/// `v + j` writable for `m` floats.
#[inline(always)]
unsafe fn store<S: Simd>(s: S, v: *mut f32, j: usize, m: usize, x: S::V) {
    // SAFETY: the caller's contract.
    unsafe {
        if m == S::LANES {
            s.store(v.add(j), x)
        } else {
            s.store_n(v.add(j), x, m)
        }
    }
}
