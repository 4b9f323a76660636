//! The portable path and the "scalar twin" of the SIMD kernels: 8-lane arrays of plain f32
//! arithmetic (the compiler may vectorize them with the target's baseline SIMD), 6×16 tiles.

use super::{dispatch_tile, micro, split_tile, store_tile, Simd, Store, Tile};
use crate::gemm::epilogue::Activation;

const L: usize = 8;

/// Token for plain code; always available.
#[derive(Clone, Copy)]
pub(crate) struct Scalar;

#[inline(always)]
fn map(a: [f32; L], f: impl Fn(f32) -> f32) -> [f32; L] {
    a.map(f)
}

#[inline(always)]
fn zip(a: [f32; L], b: [f32; L], f: impl Fn(f32, f32) -> f32) -> [f32; L] {
    std::array::from_fn(|i| f(a[i], b[i]))
}

impl Simd for Scalar {
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
    fn mul_add(self, a: [f32; L], b: [f32; L], c: [f32; L]) -> [f32; L] {
        // Unfused: f32::mul_add is a slow library call on x86-64 without FMA.
        std::array::from_fn(|i| a[i] * b[i] + c[i])
    }
    #[inline(always)]
    fn fma(self, a: [f32; L], b: [f32; L], c: [f32; L]) -> [f32; L] {
        std::array::from_fn(|i| a[i].mul_add(b[i], c[i]))
    }
    #[inline(always)]
    fn min(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        zip(a, b, |x, y| if x < y { x } else { y })
    }
    #[inline(always)]
    fn max(self, a: [f32; L], b: [f32; L]) -> [f32; L] {
        zip(a, b, |x, y| if x > y { x } else { y })
    }
    #[inline(always)]
    fn abs(self, a: [f32; L]) -> [f32; L] {
        map(a, f32::abs)
    }
    #[inline(always)]
    fn round(self, a: [f32; L]) -> [f32; L] {
        map(a, f32::round_ties_even)
    }
    #[inline(always)]
    fn pow2i(self, n: [f32; L]) -> [f32; L] {
        map(n, |n| f32::from_bits(((n as i32 + 127) as u32) << 23))
    }
    #[inline(always)]
    fn lt(self, a: [f32; L], b: [f32; L]) -> [bool; L] {
        std::array::from_fn(|i| a[i] < b[i])
    }
    #[inline(always)]
    fn select(self, m: [bool; L], a: [f32; L], b: [f32; L]) -> [f32; L] {
        std::array::from_fn(|i| if m[i] { a[i] } else { b[i] })
    }
    #[inline(always)]
    unsafe fn load(self, p: *const f32) -> [f32; L] {
        // SAFETY: `p` is valid for L floats (contract); unaligned read of a plain array.
        unsafe { p.cast::<[f32; L]>().read_unaligned() }
    }
    #[inline(always)]
    unsafe fn load_n(self, p: *const f32, n: usize) -> [f32; L] {
        let mut v = [0.0; L];
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
    unsafe { store_tile::<Scalar, R, NV>(Scalar, acc, t, st) }
}

unsafe fn tile_rv<const R: usize, const NV: usize>(t: &Tile, st: &Store<'_>) {
    // SAFETY: contract forwarded from `tile`.
    unsafe { micro::<Scalar, R, NV>(Scalar, t, st) }
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
    super::activate_slice(Scalar, act, xs)
}
