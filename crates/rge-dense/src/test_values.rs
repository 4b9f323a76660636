//! Reproducible test values for the kernels' unit tests.

/// Values in [-0.5, 0.5) from a 64-bit LCG seeded with `seed`.
pub(crate) fn values(mut seed: u64) -> impl FnMut() -> f32 {
    move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) as f32 / (1u64 << 31) as f32) - 0.5
    }
}
