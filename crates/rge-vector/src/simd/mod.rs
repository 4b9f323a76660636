//! The vector engine's slice loops and their run-time ISA dispatch. The SIMD layer itself (the
//! [`Simd`] trait, its AVX-512F / AVX2+FMA / scalar tokens, ISA detection and the vectorized
//! math) is the shared `rge-simd` crate, which the `dense` engine's GEMM uses too. The loops
//! ([`loops`]) are written once over the trait without closures, and [`entries`] instantiates
//! each inside a `#[target_feature]` function per ISA, so the whole loop of every op compiles
//! with that ISA enabled and the intrinsics inline.

mod entries;
pub mod loops;

pub use loops::{BinOp, Operand, Reduce, Src, UnaryOp};
pub use rge_simd::{math, Isa, Scalar, Simd};

macro_rules! dispatch {
    ($isa:expr, $f:ident($($a:expr),*)) => {
        match $isa {
            // SAFETY: the ISA is checked available at the top of each entry point.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => unsafe { entries::avx512::$f($($a),*) },
            // SAFETY: as above.
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => unsafe { entries::avx2::$f($($a),*) },
            // SAFETY: the scalar token is always available.
            _ => unsafe { loops::$f(Scalar, $($a),*) },
        }
    };
}

/// `isa` if available, else the best this machine has.
fn usable(isa: Isa) -> Isa {
    isa.or_best()
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
