//! AVX2 + FMA: 8-lane vectors, 6×16 register tiles (12 ymm accumulators, 2 B vectors, one
//! broadcast); a `PANEL_A` × `PANEL_B` tile runs as up to 2×2 of them.

use std::arch::x86_64::*;

use super::{dispatch_tile, micro, split_tile, store_tile, Simd, Store, Tile};
use crate::gemm::epilogue::Activation;

/// Token: exists only once AVX2 and FMA were detected.
#[derive(Clone, Copy)]
pub(crate) struct Avx2(());

impl Avx2 {
    pub(crate) fn new() -> Option<Self> {
        (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")).then_some(Avx2(()))
    }

    /// # Safety
    /// AVX2 and FMA must be available.
    #[inline(always)]
    unsafe fn new_unchecked() -> Self {
        Avx2(())
    }
}

/// Lanes `0..n` set (n <= 8).
#[inline(always)]
fn mask(n: usize) -> __m256i {
    // SAFETY: AVX is implied by the `Avx2` token held by every caller.
    unsafe {
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32(n as i32),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        )
    }
}

// SAFETY (every `unsafe` block of this impl): an `Avx2` value exists only after the features
// were detected (`new`) or promised (`new_unchecked`); pointer methods forward their contract.
impl Simd for Avx2 {
    const LANES: usize = 8;
    type V = __m256;
    type M = __m256;

    #[inline(always)]
    fn splat(self, x: f32) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_set1_ps(x) }
    }
    #[inline(always)]
    fn add(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_mul_ps(a, b) }
    }
    #[inline(always)]
    fn div(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_div_ps(a, b) }
    }
    #[inline(always)]
    fn mul_add(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn fma(self, a: __m256, b: __m256, c: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn min(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_min_ps(a, b) }
    }
    #[inline(always)]
    fn max(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_max_ps(a, b) }
    }
    #[inline(always)]
    fn abs(self, a: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_and_ps(a, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff))) }
    }
    #[inline(always)]
    fn round(self, a: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn pow2i(self, n: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe {
            let e = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
            _mm256_castsi256_ps(_mm256_slli_epi32::<23>(e))
        }
    }
    #[inline(always)]
    fn lt(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_cmp_ps::<_CMP_LT_OQ>(a, b) }
    }
    #[inline(always)]
    fn select(self, m: __m256, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_blendv_ps(b, a, m) }
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn load_n(self, p: *const f32, n: usize) -> __m256 {
        // SAFETY: see the impl; masked-off lanes are not accessed.
        unsafe { _mm256_maskload_ps(p, mask(n)) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32, v: __m256) {
        // SAFETY: see the impl.
        unsafe { _mm256_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn store_n(self, p: *mut f32, v: __m256, n: usize) {
        // SAFETY: see the impl; masked-off lanes are not accessed.
        unsafe { _mm256_maskstore_ps(p, mask(n), v) }
    }
    #[inline(always)]
    fn prefetch(self, p: *const f32) {
        // SAFETY: see the impl; a prefetch never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) }
    }

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

/// A tile of ≤ 12 × 32 as 6×16 register tiles.
///
/// # Safety
/// AVX2 and FMA must be available; the contract of [`super::run_tile`].
pub(crate) unsafe fn tile(t: &Tile, st: &Store<'_>) {
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
