//! The portable path and the "scalar twin" of the SIMD kernels: 8-lane arrays of plain f32
//! arithmetic (the compiler may vectorize them with the target's baseline SIMD), 6×16 tiles.

use super::{dispatch_tile, micro, split_tile, store_tile, GemmSimd, Store, Tile};
use crate::gemm::epilogue::Activation;

const L: usize = 8;

/// Token for plain code; always available (8 lanes so the tiles are those of AVX2).
pub(crate) type Scalar = rge_simd::Lanes<L>;

impl GemmSimd for Scalar {
    #[inline(always)]
    unsafe fn store_general<const R: usize, const NV: usize>(
        self,
        acc: &[[[f32; L]; NV]; R],
        t: &Tile,
        st: &Store<'_>,
    ) {
        // SAFETY: forwarded contract.
        unsafe { store_general_tf::<R, NV>(acc, t, st) }
    }
}

#[inline(never)]
unsafe fn store_general_tf<const R: usize, const NV: usize>(
    acc: &[[[f32; L]; NV]; R],
    t: &Tile,
    st: &Store<'_>,
) {
    // SAFETY: only reached through the token's `store_general`; contract forwarded.
    unsafe { store_tile::<Scalar, R, NV>(rge_simd::Lanes, acc, t, st) }
}

unsafe fn tile_rv<const R: usize, const NV: usize>(t: &Tile, st: &Store<'_>) {
    // SAFETY: contract forwarded from `tile`.
    unsafe { micro::<Scalar, R, NV>(rge_simd::Lanes, t, st) }
}

/// A tile of ≤ 12 × 32 as 6×16 tiles of plain arithmetic.
///
/// # Safety
/// The contract of [`super::run_tile`].
pub(crate) unsafe fn tile(t: &Tile, st: &Store<'_>) {
    split_tile::<6, 16>(t, L, |sub, rows, nv| {
        // SAFETY: the sub-tile lies inside `t`, so the contract carries over.
        unsafe { dispatch_tile!(tile_rv, sub, st, rows, nv; 1 2 3 4 5 6) }
    })
}

pub(crate) fn activate(act: &Activation, xs: &mut [f32]) {
    super::activate_slice(rge_simd::Lanes::<L>, act, xs)
}

/// The portable twin of the vector cells (the tests compare them).
///
/// # Safety
/// `cell.is_consistent()`.
pub(crate) unsafe fn lstm_cell(cell: &mut rge_kernels_sequence::LstmCellBlock<'_, f32>) {
    // SAFETY: the caller's contract.
    unsafe { super::lstm_cell::update(rge_simd::Lanes::<L>, cell) }
}
