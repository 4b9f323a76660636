//! rge's `fused` engine (the seed's ffts_plus, cost 1): a composite engine over `dense` and
//! `vector`. It owns no kernel; the composite partition stage hands it whole dense+vector
//! regions, and its fused-graph optimizer rewrites each tree of f32 elementwise nodes placed on
//! `vector` into one `ai.rge` FusedElementwise node (`vector.FusedElementwise` runs it in one
//! pass over memory). See `docs/fused-engine.md`.

pub mod engine;
pub mod region;

pub use engine::{fused_engine, FUSED, REGION_ATTR};
