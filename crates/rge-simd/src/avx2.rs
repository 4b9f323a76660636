//! AVX2 with FMA: 8-lane vectors.

use std::arch::x86_64::*;

use crate::Simd;

/// Token: exists only once AVX2 and FMA were detected.
#[derive(Clone, Copy)]
pub struct Avx2(());

impl Avx2 {
    /// The token, if this CPU has the ISA.
    pub fn new() -> Option<Self> {
        (is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma")).then_some(Avx2(()))
    }

    /// # Safety
    /// AVX2 and FMA must be available.
    #[inline(always)]
    pub unsafe fn new_unchecked() -> Self {
        Avx2(())
    }
}

/// The lane mask of the first `n` lanes (n <= 8).
#[inline(always)]
fn mask(n: usize) -> __m256i {
    // SAFETY: plain integer vector construction; only reached with AVX2 present (the token).
    unsafe {
        let idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        _mm256_cmpgt_epi32(_mm256_set1_epi32(n as i32), idx)
    }
}

const SIGN: i32 = i32::MIN;

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
    fn sqrt(self, a: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_sqrt_ps(a) }
    }
    #[inline(always)]
    fn round(self, a: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn floor(self, a: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn ceil(self, a: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_round_ps::<{ _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn abs(self, a: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_andnot_ps(_mm256_castsi256_ps(_mm256_set1_epi32(SIGN)), a) }
    }
    #[inline(always)]
    fn neg(self, a: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_xor_ps(_mm256_castsi256_ps(_mm256_set1_epi32(SIGN)), a) }
    }
    #[inline(always)]
    fn copysign(self, mag: __m256, sign: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe {
            let s = _mm256_and_ps(_mm256_castsi256_ps(_mm256_set1_epi32(SIGN)), sign);
            _mm256_or_ps(s, self.abs(mag))
        }
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
    fn frexp(self, x: __m256) -> (__m256, __m256) {
        // SAFETY: see the impl.
        unsafe {
            let b = _mm256_castps_si256(x);
            let e = _mm256_sub_epi32(
                _mm256_and_si256(_mm256_srli_epi32::<23>(b), _mm256_set1_epi32(0xff)),
                _mm256_set1_epi32(127),
            );
            let m = _mm256_or_si256(
                _mm256_and_si256(b, _mm256_set1_epi32(0x007f_ffff)),
                _mm256_set1_epi32(0x3f80_0000),
            );
            (_mm256_cvtepi32_ps(e), _mm256_castsi256_ps(m))
        }
    }
    #[inline(always)]
    fn lt(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_cmp_ps::<_CMP_LT_OQ>(a, b) }
    }
    #[inline(always)]
    fn le(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_cmp_ps::<_CMP_LE_OQ>(a, b) }
    }
    #[inline(always)]
    fn eq(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_cmp_ps::<_CMP_EQ_OQ>(a, b) }
    }
    #[inline(always)]
    fn all(self, m: __m256) -> bool {
        // SAFETY: see the impl.
        unsafe { _mm256_movemask_ps(m) == 0xff }
    }
    #[inline(always)]
    fn is_nan(self, a: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_cmp_ps::<_CMP_UNORD_Q>(a, a) }
    }
    #[inline(always)]
    fn or(self, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_or_ps(a, b) }
    }
    #[inline(always)]
    fn select(self, m: __m256, a: __m256, b: __m256) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_blendv_ps(b, a, m) }
    }
    #[inline(always)]
    fn hsum(self, a: __m256) -> f32 {
        // SAFETY: see the impl.
        unsafe {
            let s = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
            let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
            let s = _mm_add_ss(s, _mm_shuffle_ps::<1>(s, s));
            _mm_cvtss_f32(s)
        }
    }
    #[inline(always)]
    fn hmax(self, a: __m256) -> f32 {
        let mut l = [0.0f32; 8];
        // SAFETY: `l` holds 8 floats.
        unsafe { _mm256_storeu_ps(l.as_mut_ptr(), a) };
        crate::fold_nan(&l, f32::max)
    }
    #[inline(always)]
    fn hmin(self, a: __m256) -> f32 {
        let mut l = [0.0f32; 8];
        // SAFETY: `l` holds 8 floats.
        unsafe { _mm256_storeu_ps(l.as_mut_ptr(), a) };
        crate::fold_nan(&l, f32::min)
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> __m256 {
        // SAFETY: see the impl.
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn load_n(self, p: *const f32, n: usize, fill: f32) -> __m256 {
        // SAFETY: see the impl; masked-off lanes are not accessed.
        unsafe {
            let m = mask(n);
            let v = _mm256_maskload_ps(p, m);
            _mm256_blendv_ps(_mm256_set1_ps(fill), v, _mm256_castsi256_ps(m))
        }
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
    fn prefetch_l2(self, p: *const f32) {
        // SAFETY: see the impl; a prefetch never faults, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T1>(p.cast()) }
    }
    #[inline(always)]
    unsafe fn transpose16(
        self,
        src: *const f32,
        src_stride: usize,
        dst: *mut f32,
        dst_stride: usize,
        rows: usize,
        cols: usize,
    ) {
        // Four 8×8 quarters: whole ones in registers, partial ones (a tile's edge) by the
        // scalar copy. Plain loops, not closures (see the AVX-512 twin).
        for (r0, c0) in [(0, 0), (0, 8), (8, 0), (8, 8)] {
            if r0 >= rows || c0 >= cols {
                continue;
            }
            // SAFETY: see the impl; the quarter's rows and columns are inside the tile the
            // caller vouches for.
            unsafe {
                let (s, d) = (src.add(r0 * src_stride + c0), dst.add(c0 * dst_stride + r0));
                if rows >= r0 + 8 && cols >= c0 + 8 {
                    let mut r = [_mm256_setzero_ps(); 8];
                    for (i, v) in r.iter_mut().enumerate() {
                        *v = _mm256_loadu_ps(s.add(i * src_stride));
                    }
                    for (c, v) in transpose8x8(r).iter().enumerate() {
                        _mm256_storeu_ps(d.add(c * dst_stride), *v);
                    }
                } else {
                    crate::transpose::transpose16_scalar(
                        s,
                        src_stride,
                        d,
                        dst_stride,
                        (rows - r0).min(8),
                        (cols - c0).min(8),
                    );
                }
            }
        }
    }
}

/// An 8×8 transpose in registers: interleave lanes, then pairs, then 128-bit halves (24
/// shuffles for 64 floats).
///
/// # Safety
/// The CPU has AVX.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn transpose8x8(r: [__m256; 8]) -> [__m256; 8] {
    // Rows 2k, 2k+1 → lanes interleaved.
    let mut a = r;
    for i in (0..8).step_by(2) {
        a[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
        a[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
    }
    // Pairs: a[4k] with a[4k + 2] (columns 0, 1 | 4, 5) and a[4k + 1] with a[4k + 3] (2, 3 | 6, 7).
    let mut b = a;
    for base in [0, 4] {
        b[base] = _mm256_shuffle_ps::<0x44>(a[base], a[base + 2]);
        b[base + 1] = _mm256_shuffle_ps::<0xee>(a[base], a[base + 2]);
        b[base + 2] = _mm256_shuffle_ps::<0x44>(a[base + 1], a[base + 3]);
        b[base + 3] = _mm256_shuffle_ps::<0xee>(a[base + 1], a[base + 3]);
    }
    // Halves: rows 0–3 of a column beside rows 4–7.
    let mut c = b;
    for j in 0..4 {
        c[j] = _mm256_permute2f128_ps::<0x20>(b[j], b[j + 4]);
        c[j + 4] = _mm256_permute2f128_ps::<0x31>(b[j], b[j + 4]);
    }
    c
}
