//! AVX-512F: 16-lane vectors.

use std::arch::x86_64::*;

use crate::Simd;

/// Token: exists only once AVX-512F (and AVX2+FMA) was detected.
#[derive(Clone, Copy)]
pub struct Avx512(());

impl Avx512 {
    /// The token, if this CPU has the ISA.
    pub fn new() -> Option<Self> {
        (is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma"))
        .then_some(Avx512(()))
    }

    /// # Safety
    /// AVX-512F, AVX2 and FMA must be available.
    #[inline(always)]
    pub unsafe fn new_unchecked() -> Self {
        Avx512(())
    }
}

#[inline(always)]
fn mask(n: usize) -> __mmask16 {
    // n <= 16, so the shift stays in range of u32.
    ((1u32 << n) - 1) as __mmask16
}

const SIGN: i32 = i32::MIN;

// SAFETY (every `unsafe` block of this impl): an `Avx512` value exists only after the features
// were detected (`new`) or promised (`new_unchecked`); pointer methods forward their contract.
impl Simd for Avx512 {
    const LANES: usize = 16;
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
    fn sqrt(self, a: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_sqrt_ps(a) }
    }
    #[inline(always)]
    fn round(self, a: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn floor(self, a: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_roundscale_ps::<{ _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn ceil(self, a: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_roundscale_ps::<{ _MM_FROUND_TO_POS_INF | _MM_FROUND_NO_EXC }>(a) }
    }
    #[inline(always)]
    fn abs(self, a: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe {
            _mm512_castsi512_ps(_mm512_andnot_si512(
                _mm512_set1_epi32(SIGN),
                _mm512_castps_si512(a),
            ))
        }
    }
    #[inline(always)]
    fn neg(self, a: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe {
            _mm512_castsi512_ps(_mm512_xor_si512(
                _mm512_set1_epi32(SIGN),
                _mm512_castps_si512(a),
            ))
        }
    }
    #[inline(always)]
    fn copysign(self, mag: __m512, sign: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe {
            let s = _mm512_and_si512(_mm512_set1_epi32(SIGN), _mm512_castps_si512(sign));
            _mm512_castsi512_ps(_mm512_or_si512(s, _mm512_castps_si512(self.abs(mag))))
        }
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
    fn frexp(self, x: __m512) -> (__m512, __m512) {
        // SAFETY: see the impl.
        unsafe {
            let b = _mm512_castps_si512(x);
            let e = _mm512_sub_epi32(
                _mm512_and_si512(_mm512_srli_epi32::<23>(b), _mm512_set1_epi32(0xff)),
                _mm512_set1_epi32(127),
            );
            let m = _mm512_or_si512(
                _mm512_and_si512(b, _mm512_set1_epi32(0x007f_ffff)),
                _mm512_set1_epi32(0x3f80_0000),
            );
            (_mm512_cvtepi32_ps(e), _mm512_castsi512_ps(m))
        }
    }
    #[inline(always)]
    fn lt(self, a: __m512, b: __m512) -> __mmask16 {
        // SAFETY: see the impl.
        unsafe { _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, b) }
    }
    #[inline(always)]
    fn le(self, a: __m512, b: __m512) -> __mmask16 {
        // SAFETY: see the impl.
        unsafe { _mm512_cmp_ps_mask::<_CMP_LE_OQ>(a, b) }
    }
    #[inline(always)]
    fn eq(self, a: __m512, b: __m512) -> __mmask16 {
        // SAFETY: see the impl.
        unsafe { _mm512_cmp_ps_mask::<_CMP_EQ_OQ>(a, b) }
    }
    #[inline(always)]
    fn all(self, m: __mmask16) -> bool {
        m == 0xffff
    }
    #[inline(always)]
    fn is_nan(self, a: __m512) -> __mmask16 {
        // SAFETY: see the impl.
        unsafe { _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(a, a) }
    }
    #[inline(always)]
    fn or(self, a: __mmask16, b: __mmask16) -> __mmask16 {
        a | b
    }
    #[inline(always)]
    fn select(self, m: __mmask16, a: __m512, b: __m512) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_mask_blend_ps(m, b, a) }
    }
    #[inline(always)]
    fn hsum(self, a: __m512) -> f32 {
        // SAFETY: see the impl.
        unsafe { _mm512_reduce_add_ps(a) }
    }
    #[inline(always)]
    fn hmax(self, a: __m512) -> f32 {
        let mut l = [0.0f32; 16];
        // SAFETY: `l` holds 16 floats.
        unsafe { _mm512_storeu_ps(l.as_mut_ptr(), a) };
        crate::fold_nan(&l, f32::max)
    }
    #[inline(always)]
    fn hmin(self, a: __m512) -> f32 {
        let mut l = [0.0f32; 16];
        // SAFETY: `l` holds 16 floats.
        unsafe { _mm512_storeu_ps(l.as_mut_ptr(), a) };
        crate::fold_nan(&l, f32::min)
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> __m512 {
        // SAFETY: see the impl.
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline(always)]
    unsafe fn load_n(self, p: *const f32, n: usize, fill: f32) -> __m512 {
        // SAFETY: see the impl; masked-off lanes are not accessed.
        unsafe { _mm512_mask_loadu_ps(_mm512_set1_ps(fill), mask(n), p) }
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
        let (load, store) = (mask(cols), mask(rows));
        // SAFETY: see the impl; masked loads and stores touch only the first `cols` floats of
        // each of the first `rows` rows, and the first `rows` of the first `cols` columns.
        // Plain loops, not `array::from_fn`: a closure does not inherit the caller's target
        // features, so the intrinsics inside it were calls, not instructions (the transpose
        // ran several times slower).
        unsafe {
            let mut r = [_mm512_setzero_ps(); 16];
            for (i, v) in r.iter_mut().enumerate().take(rows) {
                *v = _mm512_maskz_loadu_ps(load, src.add(i * src_stride));
            }
            let t = transpose16x16(r);
            for (c, v) in t.iter().enumerate().take(cols) {
                _mm512_mask_storeu_ps(dst.add(c * dst_stride), store, *v);
            }
        }
    }
}

/// A 16×16 transpose in registers: interleave lanes, then pairs, then 128-bit quarters twice
/// (64 shuffles for 256 floats; a scalar copy moves one float per instruction). Loops with
/// constant bounds that unroll whole, and no closures (see `transpose16`).
///
/// # Safety
/// The CPU has AVX-512F.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn transpose16x16(r: [__m512; 16]) -> [__m512; 16] {
    use std::arch::x86_64::{_mm512_castpd_ps as ps, _mm512_castps_pd as pd};
    // Rows 2k, 2k+1 → lanes interleaved.
    let mut a = r;
    for i in (0..16).step_by(2) {
        a[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        a[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    // Pairs of a[4k + {0,2}] and a[4k + {1,3}].
    let mut b = a;
    for base in (0..16).step_by(4) {
        for (o, (x, y)) in [(0, (0, 2)), (2, (1, 3))] {
            let (x, y) = (pd(a[base + x]), pd(a[base + y]));
            b[base + o] = ps(_mm512_unpacklo_pd(x, y));
            b[base + o + 1] = ps(_mm512_unpackhi_pd(x, y));
        }
    }
    // Quarters: b[8k + j] with b[8k + j + 4], even quarters then odd ones.
    let mut c = b;
    for base in (0..16).step_by(8) {
        for j in 0..4 {
            let (x, y) = (b[base + j], b[base + j + 4]);
            c[base + j] = _mm512_shuffle_f32x4::<0x88>(x, y);
            c[base + j + 4] = _mm512_shuffle_f32x4::<0xdd>(x, y);
        }
    }
    // Halves: c[j] with c[j + 8].
    let mut d = c;
    for j in 0..8 {
        d[j] = _mm512_shuffle_f32x4::<0x88>(c[j], c[j + 8]);
        d[j + 8] = _mm512_shuffle_f32x4::<0xdd>(c[j], c[j + 8]);
    }
    d
}
