//! rge's `rng` engine (the seed's DSAEngine, cost 2): random-number kernels over a
//! counter-based Philox4x32-10 stream — RandomUniform, RandomNormal, their Like forms,
//! Bernoulli, Multinomial and training-mode Dropout (see `docs/rng-engine.md`).
//!
//! Every element is a function of (stream key, element index) only, so a seeded op gives the
//! same values on every executor, thread count and run. An unseeded op keys its stream with
//! the run's key (`KernelCtx::run_key`, drawn per run by the runtime) and its node name, so it
//! differs per run and per node.

pub mod engine;
pub mod kernels;
pub mod philox;
pub mod seed;
pub mod stream;

pub use engine::{kernel_set, rng_engine, RNG};
pub use stream::Stream;
