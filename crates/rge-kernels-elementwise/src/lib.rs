//! rge CPU kernels: elementwise ops (unary math and activations, binary arithmetic, logic and
//! comparison with numpy broadcasting, variadic Max/Min/Sum/Mean, Where, Clip, Pow …).

pub mod bcast;
mod binary;
pub mod num;
mod pow;
mod unary_float;
mod unary_num;
mod variadic;

use rge_kernels::{KernelRegistryBuilder, KernelResult};

/// Registers this family's kernels.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    unary_float::register(b)?;
    unary_num::register(b)?;
    binary::register(b)?;
    pow::register(b)?;
    variadic::register(b)?;
    Ok(())
}
