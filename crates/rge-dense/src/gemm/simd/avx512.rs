//! AVX-512F: 16-lane vectors, 12×32 register tiles (24 zmm accumulators, 2 B vectors, one
//! broadcast), the whole `PANEL_A` × `PANEL_B` tile in one pass.

use std::arch::x86_64::*;

use super::{dispatch_tile, micro, store_tile, Simd, Store, Tile};
use crate::gemm::epilogue::Activation;

/// Token: exists only once AVX-512F (and AVX2+FMA, for the 256-bit helpers) was detected.
#[derive(Clone, Copy)]
pub(crate) struct Avx512(());

impl Avx512 {
    pub(crate) fn new() -> Option<Self> {
        (is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma"))
        .then_some(Avx512(()))
    }

    /// # Safety
    /// AVX-512F, AVX2 and FMA must be available.
    #[inline(always)]
    unsafe fn new_unchecked() -> Self {
        Avx512(())
    }
}

#[inline(always)]
fn mask(n: usize) -> __mmask16 {
    // n <= 16, so the shift stays in range of u32.
    ((1u32 << n) - 1) as __mmask16
}

// SAFETY (every `unsafe` block of this impl): an `Avx512` value exists only after the features
// were detected (`new`) or promised (`new_unchecked`); pointer methods forward their contract.
impl Simd for Avx512 {
    const LANES: usize = 16;
    const PREFETCH_B: bool = true;
    type V = __m512;
    type M = __mmask16;

    #[inline(always)]
    fn splat(self, x: f32) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_set1_ps(x) }
    }
    #[inline(always)]
    fn add(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_add_ps(a, b) }
    }
    #[inline(always)]
    fn sub(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_sub_ps(a, b) }
    }
    #[inline(always)]
    fn mul(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_mul_ps(a, b) }
    }
    #[inline(always)]
    fn div(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_div_ps(a, b) }
    }
    #[inline(always)]
    fn mul_add(self, a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn fma(self, a: __m512, b: __m512, c: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_fmadd_ps(a, b, c) }
    }
    #[inline(always)]
    fn min(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_min_ps(a, b) }
    }
    #[inline(always)]
    fn max(self, a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_max_ps(a, b) }
    }
    #[inline(always)]
    fn abs(self, a: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_abs_ps(a) }
    }
    #[inline(always)]
    fn round(self, a: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn pow2i(self, n: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe {
            let e = _mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127));
            _mm512_castsi512_ps(_mm512_slli_epi32::<23>(e))
        }
    }
    #[inline(always)]
    fn lt(self, a: __m512, b: __m512) -> __mmask16 {
        // SAFETY: see the impl.
        unsafe { _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b) }
    }
    #[inline(always)]
    fn select(self, m: __mmask16, a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_mask_blend_ps(m, b, a) }
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn load_n(self, p: *const f32, n: usize) -> __m512 {
        // SAFETY: see the impl; masked-off lanes are not accessed.
        unsafe { _mm512_maskz_loadu_ps(mask(n), p) }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32, v: __m512) {
        // SAFETY: see the impl.
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline(always)]
    unsafe fn store_n(self, p: *mut f32, v: __m512, n: usize) {
        // SAFETY: see the impl; masked-off lanes are not accessed.
        unsafe { _mm512_mask_storeu_ps(p, mask(n), v) }
    }
    #[inline(always)]
    fn prefetch(self, p: *const f32) {
        // SAFETY: see the impl; a prefetch never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p.cast()) }
    }

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

/// One whole tile (≤ 12 × 32) in one register tile.
///
/// # Safety
/// AVX-512F must be available; the contract of [`super::run_tile`].
pub(crate) unsafe fn tile(t: &Tile, st: &Store<'_>) {
    let nv = t.cols.div_ceil(16);
    // SAFETY: forwarded contract.
    unsafe { dispatch_tile!(tile_rv, t, st, t.rows, nv; 1 2 3 4 5 6 7 8 9 10 11 12) }
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
