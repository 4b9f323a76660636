//! The portable path and the scalar twin of the SIMD kernels: one f32 lane of plain Rust
//! arithmetic, with the same operations (and so the same rounding) as the vector ISAs.

use crate::Simd;

/// Token for plain code; always available.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scalar;

impl Simd for Scalar {
    const LANES: usize = 1;
    type V = f32;
    type M = bool;

    #[inline(always)]
    fn splat(self, x: f32) -> f32 {
        x
    }
    #[inline(always)]
    fn add(self, a: f32, b: f32) -> f32 {
        a + b
    }
    #[inline(always)]
    fn sub(self, a: f32, b: f32) -> f32 {
        a - b
    }
    #[inline(always)]
    fn mul(self, a: f32, b: f32) -> f32 {
        a * b
    }
    #[inline(always)]
    fn div(self, a: f32, b: f32) -> f32 {
        a / b
    }
    #[inline(always)]
    fn fma(self, a: f32, b: f32, c: f32) -> f32 {
        a.mul_add(b, c)
    }
    #[inline(always)]
    fn min(self, a: f32, b: f32) -> f32 {
        if a < b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn max(self, a: f32, b: f32) -> f32 {
        if a > b {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn sqrt(self, a: f32) -> f32 {
        a.sqrt()
    }
    #[inline(always)]
    fn round(self, a: f32) -> f32 {
        a.round_ties_even()
    }
    #[inline(always)]
    fn floor(self, a: f32) -> f32 {
        a.floor()
    }
    #[inline(always)]
    fn ceil(self, a: f32) -> f32 {
        a.ceil()
    }
    #[inline(always)]
    fn abs(self, a: f32) -> f32 {
        a.abs()
    }
    #[inline(always)]
    fn neg(self, a: f32) -> f32 {
        -a
    }
    #[inline(always)]
    fn copysign(self, mag: f32, sign: f32) -> f32 {
        mag.copysign(sign)
    }
    #[inline(always)]
    fn pow2i(self, n: f32) -> f32 {
        f32::from_bits(((n as i32 + 127) as u32) << 23)
    }
    #[inline(always)]
    fn frexp(self, x: f32) -> (f32, f32) {
        let b = x.to_bits();
        let e = ((b >> 23) & 0xff) as i32 - 127;
        (e as f32, f32::from_bits((b & 0x007f_ffff) | 0x3f80_0000))
    }
    #[inline(always)]
    fn lt(self, a: f32, b: f32) -> bool {
        a < b
    }
    #[inline(always)]
    fn le(self, a: f32, b: f32) -> bool {
        a <= b
    }
    #[inline(always)]
    fn eq(self, a: f32, b: f32) -> bool {
        a == b
    }
    #[inline(always)]
    fn all(self, m: bool) -> bool {
        m
    }
    #[inline(always)]
    fn is_nan(self, a: f32) -> bool {
        a.is_nan()
    }
    #[inline(always)]
    fn or(self, a: bool, b: bool) -> bool {
        a | b
    }
    #[inline(always)]
    fn select(self, m: bool, a: f32, b: f32) -> f32 {
        if m {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    fn hsum(self, a: f32) -> f32 {
        a
    }
    #[inline(always)]
    fn hmax(self, a: f32) -> f32 {
        a
    }
    #[inline(always)]
    fn hmin(self, a: f32) -> f32 {
        a
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> f32 {
        // SAFETY: the caller guarantees one readable float.
        unsafe { *p }
    }
    #[inline(always)]
    unsafe fn load_n(self, p: *const f32, n: usize, fill: f32) -> f32 {
        if n == 0 {
            fill
        } else {
            // SAFETY: n >= 1 readable floats (contract).
            unsafe { *p }
        }
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32, v: f32) {
        // SAFETY: the caller guarantees one writable float.
        unsafe { *p = v }
    }
    #[inline(always)]
    unsafe fn store_n(self, p: *mut f32, v: f32, n: usize) {
        if n > 0 {
            // SAFETY: n >= 1 writable floats (contract).
            unsafe { *p = v }
        }
    }
}
