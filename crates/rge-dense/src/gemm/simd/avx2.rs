//! AVX2 + FMA: 8-lane vectors, 6×16 register tiles (12 ymm accumulators, 2 B vectors, one
//! broadcast); a `PANEL_A` × `PANEL_B` tile runs as up to 2×2 of them.

use std::arch::x86_64::*;

use super::{dispatch_tile, micro, micro_row, split_tile, store_tile, GemmSimd, Store, Tile};
use crate::gemm::epilogue::Activation;
use rge_kernels_sequence::LstmCellBlock;

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

/// A tile of ≤ 12 × 32 as 6×16 register tiles, but for its last 1 or 2 rows past a multiple
/// of 6 (an LSTM step's 8 rows: 6 + 2), which run the panel's whole width: one row with 8
/// accumulator chains (`micro_row`), two as a 2×32 register tile (8 accumulators). As 1×16 or
/// 2×16 strips they had 2 or 4 chains, each FMA waiting on the one before.
///
/// # Safety
/// AVX2 and FMA must be available; the contract of [`super::run_tile`].
pub(crate) unsafe fn tile(t: &Tile, st: &Store<'_>) {
    let tail = match t.rows % 6 {
        1 => 1,
        // The 2×32 tile's contract: more than three vectors' worth of columns.
        2 if t.cols > 24 => 2,
        _ => 0,
    };
    let head = t.rows - tail;
    if head > 0 {
        let top = Tile { rows: head, ..*t };
        split_tile::<6, 16>(&top, 8, |sub, rows, nv| {
            // SAFETY: the sub-tile lies inside `t`, so the contract carries over.
            unsafe { dispatch_tile!(tile_rv, sub, st, rows, nv; 1 2 3 4 5 6) }
        });
    }
    if tail > 0 {
        let bottom = Tile {
            a: t.a.wrapping_add(head),
            c: t.c.wrapping_add(head * t.ldc),
            rows: tail,
            row0: t.row0 + head,
            // The tile's share of the prefetch went with its first rows.
            pf_lines: if head == 0 { t.pf_lines } else { 0 },
            ..*t
        };
        // SAFETY: the last `tail` rows of `t`, its whole width: the contract carries over
        // (B's steps hold a whole panel, `PANEL_B` floats, whatever `t.cols` is).
        unsafe {
            if tail == 1 {
                tile_row(&bottom, st)
            } else {
                tile_rv::<2, 4>(&bottom, st)
            }
        }
    }
}

/// A row-major block of A into a packed panel (see [`crate::gemm::pack::PanelTranspose`]):
/// rows 0–7 by the 8×8 in-register transpose, rows 8–11 by a 4×8 one, 8 steps at a time;
/// what is left (a panel of other heights, the last `kc % 8` steps) value by value. Packing
/// value by value was 28% of BERT's attention·V product (128×128 · 128×64 per head).
///
/// # Safety
/// AVX2 must be available; `rows <= PANEL_A`, `a` holds `rows` rows of `kc` values at
/// stride `ld`, and `panel` holds `kc · PANEL_A` values.
#[target_feature(enable = "avx2,fma")]
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
    let s = unsafe { Avx2::new_unchecked() };
    let steps = kc / 8 * 8;
    let (src, dst) = (a.as_ptr(), panel.as_mut_ptr());
    let mut done = 0;
    if rows >= 8 {
        for k0 in (0..steps).step_by(8) {
            // SAFETY: rows 0..8 hold values k0..k0 + 8; steps k0..k0 + 8 of the panel hold
            // PANEL_A >= 8 values each.
            unsafe { s.transpose16(src.add(k0), ld, dst.add(k0 * PANEL_A), PANEL_A, 8, 8) };
        }
        done = 8;
    }
    if rows >= done + 4 {
        for k0 in (0..steps).step_by(8) {
            // SAFETY: as above, for rows done..done + 4 (PANEL_A >= done + 4).
            unsafe { transpose4x8(src.add(done * ld + k0), ld, dst.add(k0 * PANEL_A + done)) };
        }
        done += 4;
    }
    for r in 0..rows {
        let from = if r < done { steps } else { 0 };
        for k in from..kc {
            panel[k * PANEL_A + r] = a[r * ld + k];
        }
    }
}

/// `dst[c·PANEL_A + r] = src[r·ld + c]` for 4 rows and 8 columns, in registers.
///
/// # Safety
/// AVX2; `src` readable for 8 floats at each of 4 rows `ld` apart; `dst` writable for 4
/// floats at each of 8 steps `PANEL_A` apart.
#[target_feature(enable = "avx2,fma")]
unsafe fn transpose4x8(src: *const f32, ld: usize, dst: *mut f32) {
    use crate::gemm::pack::PANEL_A;
    // SAFETY: the caller's contract.
    unsafe {
        let r: [__m256; 4] = std::array::from_fn(|i| _mm256_loadu_ps(src.add(i * ld)));
        // Lanes of rows 0, 1 and of rows 2, 3 interleaved, then pairs of pairs: each result
        // holds column c in its low half and column c + 4 in its high half.
        let (t0, t1) = (
            _mm256_unpacklo_ps(r[0], r[1]),
            _mm256_unpackhi_ps(r[0], r[1]),
        );
        let (t2, t3) = (
            _mm256_unpacklo_ps(r[2], r[3]),
            _mm256_unpackhi_ps(r[2], r[3]),
        );
        let cols = [
            _mm256_shuffle_ps::<0x44>(t0, t2),
            _mm256_shuffle_ps::<0xee>(t0, t2),
            _mm256_shuffle_ps::<0x44>(t1, t3),
            _mm256_shuffle_ps::<0xee>(t1, t3),
        ];
        for (c, v) in cols.into_iter().enumerate() {
            _mm_storeu_ps(dst.add(c * PANEL_A), _mm256_castps256_ps128(v));
            _mm_storeu_ps(dst.add((c + 4) * PANEL_A), _mm256_extractf128_ps::<1>(v));
        }
    }
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

/// # Safety
/// `cell.is_consistent()`.
#[target_feature(enable = "avx2,fma")]
unsafe fn lstm_cell_tf(s: Avx2, cell: &mut LstmCellBlock<'_, f32>) {
    // SAFETY: forwarded contract.
    unsafe { super::lstm_cell::update(s, cell) }
}

/// # Safety
/// `cell.is_consistent()`.
pub(crate) unsafe fn lstm_cell(cell: &mut LstmCellBlock<'_, f32>) {
    match Avx2::new() {
        // SAFETY: the token proves the features; the caller's contract.
        Some(s) => unsafe { lstm_cell_tf(s, cell) },
        // SAFETY: the caller's contract.
        None => unsafe { super::scalar::lstm_cell(cell) },
    }
}
