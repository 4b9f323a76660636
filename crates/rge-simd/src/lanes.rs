//! `L` lanes of plain f32 arithmetic: the portable token for loops shaped for several lanes
//! (the GEMM's register tiles). Every operation is the one-lane [`Scalar`]'s, lane by lane, so
//! the results are the same; the compiler may vectorize them with the target's baseline SIMD.

use crate::{Scalar, Simd};

/// Token for `L`-lane plain code; always available.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lanes<const L: usize>;

#[inline(always)]
fn map<const L: usize, T: Copy>(a: [f32; L], f: impl Fn(f32) -> T) -> [T; L] {
    a.map(f)
}

#[inline(always)]
fn zip<const L: usize, T>(a: [f32; L], b: [f32; L], f: impl Fn(f32, f32) -> T) -> [T; L] {
    std::array::from_fn(|i| f(a[i], b[i]))
}

impl<const L: usize> Simd for Lanes<L> {
    const LANES: usize = L;
    type V = [f32; L];
    type M = [bool; L];

    #[inline(always)]
    fn splat(self, x: f32) -> [f32; L] {
        [x; L]
    }
    #[inline(always)]
    fn add(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        zip(a, b, |x, y| x + y)
    }
    #[inline(always)]
    fn sub(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        zip(a, b, |x, y| x - y)
    }
    #[inline(always)]
    fn mul(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        zip(a, b, |x, y| x * y)
    }
    #[inline(always)]
    fn div(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        zip(a, b, |x, y| x / y)
    }
    #[inline(always)]
    fn fma(self, a: [f32; L], b: [f32; L], c: [f32; L]) -> [f32; L] {
        std::array::from_fn(|i| a[i].mul_add(b[i], c[i]))
    }
    #[inline(always)]
    fn mul_add(self, a: [f32; L], b: [f32; L], c: [f32; L]) -> [f32; L] {
        // Unfused: f32::mul_add is a slow library call on x86-64 without FMA.
        std::array::from_fn(|i| a[i] * b[i] + c[i])
    }
    #[inline(always)]
    fn min(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        zip(a, b, |x, y| Scalar.min(x, y))
    }
    #[inline(always)]
    fn max(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        zip(a, b, |x, y| Scalar.max(x, y))
    }
    #[inline(always)]
    fn sqrt(self, a: [f32; L]) -> [f32; L] {
        map(a, f32::sqrt)
    }
    #[inline(always)]
    fn round(self, a: [f32; L]) -> [f32; L] {
        map(a, f32::round_ties_even)
    }
    #[inline(always)]
    fn floor(self, a: [f32; L]) -> [f32; L] {
        map(a, f32::floor)
    }
    #[inline(always)]
    fn ceil(self, a: [f32; L]) -> [f32; L] {
        map(a, f32::ceil)
    }
    #[inline(always)]
    fn abs(self, a: [f32; L]) -> [f32; L] {
        map(a, f32::abs)
    }
    #[inline(always)]
    fn neg(self, a: [f32; L]) -> [f32; L] {
        map(a, |x| -x)
    }
    #[inline(always)]
    fn copysign(self, mag: [f32; L], sign: [f32; L]) -> [f32; L] {
        zip(mag, sign, f32::copysign)
    }
    #[inline(always)]
    fn pow2i(self, n: [f32; L]) -> [f32; L] {
        map(n, |x| Scalar.pow2i(x))
    }
    #[inline(always)]
    fn frexp(self, x: [f32; L]) -> ([f32; L], [f32; L]) {
        let r = map(x, |v| Scalar.frexp(v));
        (r.map(|p| p.0), r.map(|p| p.1))
    }
    #[inline(always)]
    fn lt(self, a: [f32; L], b: [f32; L]) -> [bool; L] {
        zip(a, b, |x, y| x < y)
    }
    #[inline(always)]
    fn le(self, a: [f32; L], b: [f32; L]) -> [bool; L] {
        zip(a, b, |x, y| x <= y)
    }
    #[inline(always)]
    fn eq(self, a: [f32; L], b: [f32; L]) -> [bool; L] {
        zip(a, b, |x, y| x == y)
    }
    #[inline(always)]
    fn all(self, m: [bool; L]) -> bool {
        m.iter().all(|&b| b)
    }
    #[inline(always)]
    fn is_nan(self, a: [f32; L]) -> [bool; L] {
        map(a, f32::is_nan)
    }
    #[inline(always)]
    fn or(self, a: [bool; L], b: [bool; L]) -> [bool; L] {
        std::array::from_fn(|i| a[i] | b[i])
    }
    #[inline(always)]
    fn select(self, m: [bool; L], a: [f32; L], b: [f32; L]) -> [f32; L] {
        std::array::from_fn(|i| if m[i] { a[i] } else { b[i] })
    }
    #[inline(always)]
    fn hsum(self, a: [f32; L]) -> f32 {
        a.iter().sum()
    }
    #[inline(always)]
    fn hmax(self, a: [f32; L]) -> f32 {
        crate::fold_nan(&a, f32::max)
    }
    #[inline(always)]
    fn hmin(self, a: [f32; L]) -> f32 {
        crate::fold_nan(&a, f32::min)
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> [f32; L] {
        // SAFETY: `p` is valid for L floats (contract).
        unsafe { p.cast::<[f32; L]>().read_unaligned() }
    }
    #[inline(always)]
    unsafe fn load_n(self, p: *const f32, n: usize, fill: f32) -> [f32; L] {
        let mut v = [fill; L];
        for (i, v) in v.iter_mut().enumerate().take(n) {
            // SAFETY: i < n and `p` is valid for n floats (contract).
            *v = unsafe { *p.add(i) };
        }
        v
    }
    #[inline(always)]
    unsafe fn store(self, p: *mut f32, v: [f32; L]) {
        // SAFETY: `p` is valid for L floats (contract).
        unsafe { p.cast::<[f32; L]>().write_unaligned(v) }
    }
    #[inline(always)]
    unsafe fn store_n(self, p: *mut f32, v: [f32; L], n: usize) {
        for (i, v) in v.iter().enumerate().take(n) {
            // SAFETY: i < n and `p` is valid for n floats (contract).
            unsafe { *p.add(i) = *v };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math;

    /// The portable lanes compute exactly what the one-lane scalar twin computes.
    #[test]
    fn lanes_match_the_scalar_twin() {
        let xs: [f32; 8] = [-100.0, -3.5, -0.3, -0.0, 0.2, 1.7, 40.0, f32::NAN];
        let s = Lanes::<8>;
        type LaneFn = fn(Lanes<8>, [f32; 8]) -> [f32; 8];
        type ScalarFn = fn(Scalar, f32) -> f32;
        let funs: [(LaneFn, ScalarFn); 5] = [
            (math::exp, math::exp),
            (math::tanh, math::tanh),
            (math::erf, math::erf),
            (math::gelu, math::gelu),
            (math::sigmoid, math::sigmoid),
        ];
        for (vf, sf) in funs {
            let v = vf(s, xs);
            for (x, y) in xs.iter().zip(v) {
                let want = sf(Scalar, *x);
                assert!(
                    want.to_bits() == y.to_bits() || (want.is_nan() && y.is_nan()),
                    "{x}: {y} vs {want}"
                );
            }
        }
    }
}
