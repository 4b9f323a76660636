//! rge's one SIMD layer, shared by the `dense` and `vector` engines (and the `fused` engine's
//! generated loops): run-time ISA detection ([`Isa`]), the [`Simd`] trait of f32 vectors with
//! its implementations (AVX-512F, AVX2+FMA, the one-lane [`Scalar`] twin and the `L`-lane
//! portable [`Lanes`]), and the vectorized transcendental functions ([`math`]) written once over
//! the trait, so every ISA and the scalar twin compute the same thing.
//!
//! Tokens ([`Avx512`], [`Avx2`]) can only be made once their ISA was detected, which is what
//! makes the arithmetic methods safe to call. Callers instantiate their generic loops inside a
//! `#[target_feature]` function so the intrinsics inline (see `docs/simd.md`).

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;
mod isa;
mod lanes;
pub mod math;
mod scalar;
mod simd;
mod transpose;

#[cfg(target_arch = "x86_64")]
pub use avx2::Avx2;
#[cfg(target_arch = "x86_64")]
pub use avx512::Avx512;
pub use isa::Isa;
pub use lanes::Lanes;
pub use scalar::Scalar;
pub use simd::{fold_nan, Simd};
