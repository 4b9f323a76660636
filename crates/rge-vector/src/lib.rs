//! rge's `vector` engine (the counterpart of Ascend's VectorEngine, cost 2): SIMD elementwise,
//! transcendental, reduction, normalization and pooling kernels, dispatched at run time to
//! AVX-512F, AVX2+FMA or a portable scalar twin (see `docs/vector-engine.md`).

pub mod elementwise;
pub mod engine;
pub mod fused;
pub mod norm;
pub mod pool;
pub mod program;
pub mod reduce;
pub mod resize;
mod rows;
pub mod simd;

pub use engine::{kernel_set, kernel_set_for, vector_engine, VECTOR};
pub use simd::Isa;
