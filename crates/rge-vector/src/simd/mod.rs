//! Every SIMD instruction of the vector engine lives under this module: the [`Simd`] trait of
//! f32 vectors, its three implementations (AVX-512F, AVX2+FMA, and the portable scalar twin),
//! the vectorized math ([`math`]), the slice loops written once over the trait ([`loops`]), and
//! run-time ISA dispatch (the `pub fn`s below). Each ISA file maps the trait onto intrinsics
//! and instantiates the loops inside `#[target_feature]` functions, so the generic code is
//! compiled with that ISA enabled.

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
pub mod loops;
pub mod math;
pub mod scalar;

pub use loops::{BinOp, Operand, Reduce, Src, UnaryOp};

/// An instruction set the vector kernels run on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Isa {
    /// Portable code, one lane (the scalar twin of the SIMD kernels).
    Scalar,
    /// x86-64 AVX2 with FMA: 8 lanes.
    Avx2,
    /// x86-64 AVX-512F: 16 lanes.
    Avx512,
}

impl Isa {
    /// Every ISA, slowest first.
    pub const ALL: [Isa; 3] = [Isa::Scalar, Isa::Avx2, Isa::Avx512];

    /// Whether this machine can run `self`.
    pub fn is_available(self) -> bool {
        match self {
            Isa::Scalar => true,
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => avx2::Avx2::new().is_some(),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => avx512::Avx512::new().is_some(),
            #[cfg(not(target_arch = "x86_64"))]
            _ => false,
        }
    }

    /// The fastest ISA this machine runs (std caches the feature detection).
    pub fn best() -> Isa {
        Isa::ALL
            .into_iter()
            .rev()
            .find(|i| i.is_available())
            .unwrap_or(Isa::Scalar)
    }

    /// The ISAs this machine runs, slowest first.
    pub fn available() -> Vec<Isa> {
        Isa::ALL.into_iter().filter(|i| i.is_available()).collect()
    }

    /// Lower-case name (`scalar`, `avx2`, `avx512`).
    pub fn name(self) -> &'static str {
        match self {
            Isa::Scalar => "scalar",
            Isa::Avx2 => "avx2",
            Isa::Avx512 => "avx512",
        }
    }
}

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
}

/// Declares, in an ISA file, the `#[target_feature]` instantiations of every loop entry point
/// for token `$t` (constructed unchecked inside, the caller having checked the ISA).
macro_rules! isa_entries {
    ($t:ident, $feat:literal) => {
        use super::loops::{self, BinOp, Operand, Reduce, UnaryOp};

        #[target_feature(enable = $feat)]
        pub(super) unsafe fn unary(op: &UnaryOp, x: *const f32, y: *mut f32, n: usize) {
            // SAFETY: the caller checked the ISA; pointer contract forwarded.
            unsafe { loops::unary($t::new_unchecked(), op, x, y, n) }
        }

        #[target_feature(enable = $feat)]
        pub(super) unsafe fn binary(op: BinOp, a: Operand, b: Operand, y: *mut f32, n: usize) {
            // SAFETY: as above.
            unsafe { loops::binary($t::new_unchecked(), op, a, b, y, n) }
        }

        #[target_feature(enable = $feat)]
        pub(super) unsafe fn reduce(op: Reduce, x: &[f32]) -> f32 {
            // SAFETY: as above.
            unsafe { loops::reduce($t::new_unchecked(), op, x) }
        }

        #[target_feature(enable = $feat)]
        pub(super) unsafe fn softmax(x: &[f32], y: &mut [f32], log: bool) {
            // SAFETY: as above.
            unsafe { loops::softmax($t::new_unchecked(), x, y, log) }
        }

        #[target_feature(enable = $feat)]
        pub(super) unsafe fn mean_var(x: &[f32], rms: bool) -> (f32, f32) {
            // SAFETY: as above.
            unsafe { loops::mean_var($t::new_unchecked(), x, rms) }
        }

        #[target_feature(enable = $feat)]
        pub(super) unsafe fn scale_shift(
            x: &[f32],
            y: &mut [f32],
            mean: f32,
            inv: f32,
            gamma: Operand,
            beta: Operand,
        ) {
            // SAFETY: as above.
            unsafe { loops::scale_shift($t::new_unchecked(), x, y, mean, inv, gamma, beta) }
        }

        #[target_feature(enable = $feat)]
        pub(super) unsafe fn accumulate(op: Reduce, acc: &mut [f32], x: &[f32]) {
            // SAFETY: as above.
            unsafe { loops::accumulate($t::new_unchecked(), op, acc, x) }
        }
    };
}
pub(crate) use isa_entries;

macro_rules! dispatch {
    ($isa:expr, $f:ident($($a:expr),*)) => {
        match $isa {
            // SAFETY: the ISA is checked available at the top of each entry point.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { avx512::$f($($a),*) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { avx2::$f($($a),*) },
            // SAFETY: the scalar token is always available.
            _ => unsafe { loops::$f(scalar::Scalar, $($a),*) },
        }
    };
}

/// `isa` if available, else the best this machine has.
fn usable(isa: Isa) -> Isa {
    if isa.is_available() {
        isa
    } else {
        Isa::best()
    }
}

/// `y = op(x)` elementwise. `x` and `y` have the same length (checked).
pub fn unary(isa: Isa, op: &UnaryOp, x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "unary: input and output lengths differ");
    dispatch!(usable(isa), unary(op, x.as_ptr(), y.as_mut_ptr(), y.len()))
}

/// `y = op(y)` in place.
pub fn unary_in_place(isa: Isa, op: &UnaryOp, y: &mut [f32]) {
    let p = y.as_mut_ptr();
    // Each lane block is read before it is written, so aliasing input and output is fine.
    dispatch!(usable(isa), unary(op, p as *const f32, p, y.len()))
}

/// `y = op(a, b)` elementwise, each operand a slice of `y.len()` values or a scalar.
pub fn binary(isa: Isa, op: BinOp, a: Src<'_>, b: Src<'_>, y: &mut [f32]) {
    let (a, b) = (a.operand(y.len()), b.operand(y.len()));
    dispatch!(usable(isa), binary(op, a, b, y.as_mut_ptr(), y.len()))
}

/// `y = op(y, b)` in place (the output is the left operand).
pub fn binary_in_place(isa: Isa, op: BinOp, b: Src<'_>, y: &mut [f32]) {
    let b = b.operand(y.len());
    let p = y.as_mut_ptr();
    let a = Operand::Ptr(p as *const f32);
    dispatch!(usable(isa), binary(op, a, b, p, y.len()))
}

/// The reduction of `x` (sum, max …); the neutral element for an empty slice.
pub fn reduce(isa: Isa, op: Reduce, x: &[f32]) -> f32 {
    dispatch!(usable(isa), reduce(op, x))
}

/// `acc[i] = op(acc[i], x[i])` (sum, max, min, sum of squares …), same lengths.
pub fn accumulate(isa: Isa, op: Reduce, acc: &mut [f32], x: &[f32]) {
    assert_eq!(acc.len(), x.len(), "accumulate: lengths differ");
    dispatch!(usable(isa), accumulate(op, acc, x))
}

/// Softmax (or log-softmax) of one contiguous row.
pub fn softmax(isa: Isa, x: &[f32], y: &mut [f32], log: bool) {
    assert_eq!(x.len(), y.len(), "softmax: lengths differ");
    dispatch!(usable(isa), softmax(x, y, log))
}

/// `(mean, variance)` of a row (two passes, f32 lanes with f64 totals); with `rms`,
/// `(0, mean of squares)`.
pub fn mean_var(isa: Isa, x: &[f32], rms: bool) -> (f32, f32) {
    dispatch!(usable(isa), mean_var(x, rms))
}

/// `y = (x - mean)·inv·gamma + beta` with gamma and beta slices of `x.len()` or scalars.
pub fn scale_shift(
    isa: Isa,
    x: &[f32],
    y: &mut [f32],
    mean: f32,
    inv: f32,
    gamma: Src<'_>,
    beta: Src<'_>,
) {
    assert_eq!(x.len(), y.len(), "scale_shift: lengths differ");
    let (gamma, beta) = (gamma.operand(y.len()), beta.operand(y.len()));
    dispatch!(usable(isa), scale_shift(x, y, mean, inv, gamma, beta))
}
