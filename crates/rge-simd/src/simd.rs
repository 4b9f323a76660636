//! The [`Simd`] trait: what every vector loop of rge is written over.

/// A vector of `LANES` f32 lanes. Implementors are zero-sized tokens that can only be made once
/// the ISA was detected, which is what makes the arithmetic methods safe to call.
///
/// `min`/`max` follow x86 semantics (`min(a, b) = a < b ? a : b`): when either input is NaN
/// the second is returned, so `max(c, x)` propagates a NaN `x`.
pub trait Simd: Copy {
    const LANES: usize;
    type V: Copy;
    type M: Copy;

    fn splat(self, x: f32) -> Self::V;
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    fn div(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a·b + c` with a single rounding.
    fn fma(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `a·b + c`, fused or not, whichever is faster (a GEMM's accumulate).
    #[inline(always)]
    fn mul_add(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V {
        self.fma(a, b, c)
    }
    fn min(self, a: Self::V, b: Self::V) -> Self::V;
    fn max(self, a: Self::V, b: Self::V) -> Self::V;
    fn sqrt(self, a: Self::V) -> Self::V;
    /// Round to nearest, ties to even.
    fn round(self, a: Self::V) -> Self::V;
    fn floor(self, a: Self::V) -> Self::V;
    fn ceil(self, a: Self::V) -> Self::V;
    /// `|a|` (clears the sign bit).
    fn abs(self, a: Self::V) -> Self::V;
    /// `-a` (flips the sign bit).
    fn neg(self, a: Self::V) -> Self::V;
    /// `|mag|` with the sign bit of `sign`.
    fn copysign(self, mag: Self::V, sign: Self::V) -> Self::V;
    /// `2^n` for integral `n` in [-126, 127].
    fn pow2i(self, n: Self::V) -> Self::V;
    /// For a positive normal `x`: `(e, m)` with `x = m·2^e`, `m` in [1, 2), `e` integral.
    fn frexp(self, x: Self::V) -> (Self::V, Self::V);
    fn lt(self, a: Self::V, b: Self::V) -> Self::M;
    fn le(self, a: Self::V, b: Self::V) -> Self::M;
    fn eq(self, a: Self::V, b: Self::V) -> Self::M;
    /// Lanes where `a` is NaN.
    fn is_nan(self, a: Self::V) -> Self::M;
    fn or(self, a: Self::M, b: Self::M) -> Self::M;
    /// Whether every lane of `m` is set.
    fn all(self, m: Self::M) -> bool;
    /// `m ? a : b` per lane.
    fn select(self, m: Self::M, a: Self::V, b: Self::V) -> Self::V;
    /// The sum of the lanes.
    fn hsum(self, a: Self::V) -> f32;
    /// The largest lane (NaN when a lane is NaN).
    fn hmax(self, a: Self::V) -> f32;
    /// The smallest lane (NaN when a lane is NaN).
    fn hmin(self, a: Self::V) -> f32;

    /// # Safety
    /// `p` must be valid for reading `LANES` floats.
    unsafe fn load(self, p: *const f32) -> Self::V;
    /// The first `n` lanes from `p`, `fill` after.
    ///
    /// # Safety
    /// `n <= LANES` and `p` valid for reading `n` floats.
    unsafe fn load_n(self, p: *const f32, n: usize, fill: f32) -> Self::V;
    /// # Safety
    /// `p` must be valid for writing `LANES` floats.
    unsafe fn store(self, p: *mut f32, v: Self::V);
    /// # Safety
    /// `n <= LANES` and `p` valid for writing `n` floats.
    unsafe fn store_n(self, p: *mut f32, v: Self::V, n: usize);
    /// A hint to fetch the line holding `p` into L1; never faults.
    #[inline(always)]
    fn prefetch(self, _p: *const f32) {}
    /// A hint to fetch the line holding `p` into L2 (not L1); never faults.
    #[inline(always)]
    fn prefetch_l2(self, _p: *const f32) {}

    /// Transposes a tile of up to 16×16: `dst[c·dst_stride + r] = src[r·src_stride + c]` for
    /// `r < rows`, `c < cols`; nothing else of `dst` is written. This default is the scalar twin
    /// the vector versions are tested against.
    ///
    /// # Safety
    /// `rows, cols <= 16`; `src` valid for reading `cols` floats at each row's start and `dst`
    /// for writing `rows` floats at each column's.
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
        crate::transpose::transpose16_scalar(src, src_stride, dst, dst_stride, rows, cols)
    }
}

/// The fold of `xs` with `f`, NaN if any element is NaN (the horizontal max/min).
#[inline]
pub fn fold_nan(xs: &[f32], f: impl Fn(f32, f32) -> f32) -> f32 {
    let mut acc = xs[0];
    for &x in &xs[1..] {
        if acc.is_nan() || x.is_nan() {
            return f32::NAN;
        }
        acc = f(acc, x);
    }
    acc
}
