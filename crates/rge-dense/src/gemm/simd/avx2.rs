//! AVX2 + FMA: 8-lane vectors, 6×16 register tiles (12 ymm accumulators, 2 B vectors, one
//! broadcast); a `PANEL_A` × `PANEL_B` tile runs as up to 2×2 of them.

use std::arch::x86_64::*;

use super::{dispatch_tile, micro, micro_row, split_tile, store_tile, GemmSimd, Store, Tile};
use crate::gemm::epilogue::Activation;

pub(crate) use rge_simd::Avx2;

impl GemmSimd for Avx2 {
    #[inline(always)]
    unsafe fn store_general<const R: usize, const NV: usize>(
        self,
        acc: &[[__m256; NV]; R],
        t: &Tile,
        st: &Store<'_>,
    ) {
        // SAFETY: forwarded contract; the token proves the features.
        unsafe { store_general_tf::<R, NV>(acc, t, st) }
    }
}

#[target_feature(enable = "avx2,fma")]
#[inline(never)]
unsafe fn store_general_tf<const R: usize, const NV: usize>(
    acc: &[[__m256; NV]; R],
    t: &Tile,
    st: &Store<'_>,
) {
    // SAFETY: only reached through the token's `store_general`; contract forwarded.
    unsafe { store_tile::<Avx2, R, NV>(Avx2::new_unchecked(), acc, t, st) }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn tile_rv<const R: usize, const NV: usize>(t: &Tile, st: &Store<'_>) {
    // SAFETY: only reached through `tile`, whose caller checked the ISA; contract forwarded.
    unsafe { micro::<Avx2, R, NV>(Avx2::new_unchecked(), t, st) }
}

#[target_feature(enable = "avx2,fma")]
unsafe fn tile_row(t: &Tile, st: &Store<'_>) {
    // SAFETY: only reached through `tile` for a one-row tile; contract forwarded.
    unsafe { micro_row::<Avx2, 4, 2>(Avx2::new_unchecked(), t, st) }
}

/// A tile of ≤ 12 × 32 as 6×16 register tiles; a one-row tile whole, 8 accumulator chains.
///
/// # Safety
/// AVX2 and FMA must be available; the contract of [`super::run_tile`].
pub(crate) unsafe fn tile(t: &Tile, st: &Store<'_>) {
    if t.rows == 1 {
        // SAFETY: forwarded contract.
        return unsafe { tile_row(t, st) };
    }
    split_tile::<6, 16>(t, 8, |sub, rows, nv| {
        // SAFETY: the sub-tile lies inside `t`, so the contract carries over.
        unsafe { dispatch_tile!(tile_rv, sub, st, rows, nv; 1 2 3 4 5 6) }
    })
}

#[target_feature(enable = "avx2,fma")]
fn activate_tf(s: Avx2, act: &Activation, xs: &mut [f32]) {
    super::activate_slice(s, act, xs)
}

pub(crate) fn activate(act: &Activation, xs: &mut [f32]) {
    match Avx2::new() {
        // SAFETY: the token proves the features are present.
        Some(s) => unsafe { activate_tf(s, act, xs) },
        None => super::scalar::activate(act, xs),
    }
}
