//! AVX-512F: 16-lane vectors, 12×32 register tiles (24 zmm accumulators, 2 B vectors, one
//! broadcast), the whole `PANEL_A` × `PANEL_B` tile in one pass.

use std::arch::x86_64::*;

use super::{dispatch_tile, micro, micro_row, store_tile, GemmSimd, Store, Tile};
use crate::gemm::epilogue::Activation;
use rge_kernels_sequence::LstmCellBlock;

pub(crate) use rge_simd::Avx512;

impl GemmSimd for Avx512 {
    const PREFETCH_B: bool = true;

    #[inline(always)]
    unsafe fn store_general<const R: usize, const NV: usize>(
        self,
        acc: &[[__m512; NV]; R],
        t: &Tile,
        st: &Store<'_>,
    ) {
        // SAFETY: forwarded contract; the token proves the features.
        unsafe { store_general_tf::<R, NV>(acc, t, st) }
    }
}

#[target_feature(enable = "avx512f,avx2,fma")]
#[inline(never)]
unsafe fn store_general_tf<const R: usize, const NV: usize>(
    acc: &[[__m512; NV]; R],
    t: &Tile,
    st: &Store<'_>,
) {
    // SAFETY: only reached through the token's `store_general`; contract forwarded.
    unsafe { store_tile::<Avx512, R, NV>(Avx512::new_unchecked(), acc, t, st) }
}

#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn tile_rv<const R: usize, const NV: usize>(t: &Tile, st: &Store<'_>) {
    // SAFETY: this function is only reached through `tile`, whose caller checked the ISA; the
    // tile contract is forwarded.
    unsafe { micro::<Avx512, R, NV>(Avx512::new_unchecked(), t, st) }
}

#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn tile_row(t: &Tile, st: &Store<'_>) {
    // SAFETY: only reached through `tile` for a one-row tile; contract forwarded.
    unsafe { micro_row::<Avx512, 2, 4>(Avx512::new_unchecked(), t, st) }
}

/// One whole tile (≤ 12 × 32) in one register tile; a one-row tile with 8 accumulator chains.
///
/// # Safety
/// AVX-512F must be available; the contract of [`super::run_tile`].
pub(crate) unsafe fn tile(t: &Tile, st: &Store<'_>) {
    if t.rows == 1 {
        // SAFETY: forwarded contract.
        return unsafe { tile_row(t, st) };
    }
    let nv = t.cols.div_ceil(16);
    // SAFETY: forwarded contract.
    unsafe { dispatch_tile!(tile_rv, t, st, t.rows, nv; 1 2 3 4 5 6 7 8 9 10 11 12) }
}

/// A row-major block of A into a packed panel, 16 steps at a time with the in-register
/// 16×16 transpose (see [`crate::gemm::pack::PanelTranspose`]).
///
/// # Safety
/// AVX-512F must be available; `rows <= PANEL_A`, `a` holds `rows` rows of `kc` values at
/// stride `ld`, and `panel` holds `kc · PANEL_A` values.
#[target_feature(enable = "avx512f,avx2,fma")]
pub(crate) unsafe fn transpose_into_panel(
    a: &[f32],
    ld: usize,
    panel: &mut [f32],
    rows: usize,
    kc: usize,
) {
    use crate::gemm::pack::PANEL_A;
    use rge_simd::Simd;
    debug_assert!(rows <= PANEL_A && panel.len() >= kc * PANEL_A);
    debug_assert!(rows == 0 || a.len() >= (rows - 1) * ld + kc);
    // SAFETY: the features are present (the caller's contract).
    let s = unsafe { Avx512::new_unchecked() };
    for k0 in (0..kc).step_by(16) {
        let cols = (kc - k0).min(16);
        // SAFETY: rows `r < rows` hold values `k0..k0 + cols`; steps `k0..k0 + cols` of the
        // panel hold PANEL_A >= rows values each.
        unsafe {
            s.transpose16(
                a.as_ptr().add(k0),
                ld,
                panel.as_mut_ptr().add(k0 * PANEL_A),
                PANEL_A,
                rows,
                cols,
            )
        };
    }
}

#[target_feature(enable = "avx512f,avx2,fma")]
fn activate_tf(s: Avx512, act: &Activation, xs: &mut [f32]) {
    super::activate_slice(s, act, xs)
}

pub(crate) fn activate(act: &Activation, xs: &mut [f32]) {
    match Avx512::new() {
        // SAFETY: the token proves the features are present.
        Some(s) => unsafe { activate_tf(s, act, xs) },
        None => super::scalar::activate(act, xs),
    }
}

/// # Safety
/// `cell.is_consistent()`.
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn lstm_cell_tf(s: Avx512, cell: &mut LstmCellBlock<'_, f32>) {
    // SAFETY: forwarded contract.
    unsafe { super::lstm_cell::update(s, cell) }
}

/// # Safety
/// `cell.is_consistent()`.
pub(crate) unsafe fn lstm_cell(cell: &mut LstmCellBlock<'_, f32>) {
    match Avx512::new() {
        // SAFETY: the token proves the features; the caller's contract.
        Some(s) => unsafe { lstm_cell_tf(s, cell) },
        // SAFETY: the caller's contract.
        None => unsafe { super::scalar::lstm_cell(cell) },
    }
}
