//! The `#[target_feature]` instantiations of every loop entry point, one module per ISA. Each
//! body is one call of an `#[inline(always)]` loop of [`super::loops`], so the whole loop (and
//! the math it calls) is compiled with the ISA enabled.

/// Declares the entry points for token `$t` (made unchecked inside: every caller checked the
/// ISA first, through [`rge_simd::Isa::or_best`]).
macro_rules! isa_entries {
    ($t:ty, $feat:literal) => {
        use super::super::loops::{self, BinOp, Operand, Reduce, UnaryOp};

        #[target_feature(enable = $feat)]
        pub(in crate::simd) unsafe fn unary(op: &UnaryOp, x: *const f32, y: *mut f32, n: usize) {
            // SAFETY: the caller checked the ISA; pointer contract forwarded.
            unsafe { loops::unary(<$t>::new_unchecked(), op, x, y, n) }
        }

        #[target_feature(enable = $feat)]
        pub(in crate::simd) unsafe fn binary(
            op: BinOp,
            a: Operand,
            b: Operand,
            y: *mut f32,
            n: usize,
        ) {
            // SAFETY: as above.
            unsafe { loops::binary(<$t>::new_unchecked(), op, a, b, y, n) }
        }

        #[target_feature(enable = $feat)]
        pub(in crate::simd) unsafe fn reduce(op: Reduce, x: &[f32]) -> f32 {
            // SAFETY: as above.
            unsafe { loops::reduce(<$t>::new_unchecked(), op, x) }
        }

        #[target_feature(enable = $feat)]
        pub(in crate::simd) unsafe fn softmax(x: &[f32], y: &mut [f32], log: bool) {
            // SAFETY: as above.
            unsafe { loops::softmax(<$t>::new_unchecked(), x, y, log) }
        }

        #[target_feature(enable = $feat)]
        pub(in crate::simd) unsafe fn mean_var(x: &[f32], rms: bool) -> (f32, f32) {
            // SAFETY: as above.
            unsafe { loops::mean_var(<$t>::new_unchecked(), x, rms) }
        }

        #[target_feature(enable = $feat)]
        pub(in crate::simd) unsafe fn scale_shift(
            x: &[f32],
            y: &mut [f32],
            mean: f32,
            inv: f32,
            gamma: Operand,
            beta: Operand,
        ) {
            // SAFETY: as above.
            unsafe { loops::scale_shift(<$t>::new_unchecked(), x, y, mean, inv, gamma, beta) }
        }

        #[target_feature(enable = $feat)]
        pub(in crate::simd) unsafe fn accumulate(op: Reduce, acc: &mut [f32], x: &[f32]) {
            // SAFETY: as above.
            unsafe { loops::accumulate(<$t>::new_unchecked(), op, acc, x) }
        }
    };
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx512 {
    isa_entries!(rge_simd::Avx512, "avx512f,avx2,fma");
}

#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    isa_entries!(rge_simd::Avx2, "avx2,fma");
}
