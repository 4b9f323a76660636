//! rge CPU kernels: nn ops.

use rge_kernels::{KernelRegistryBuilder, KernelResult};

/// Registers this family's kernels.
pub fn register(_b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    Ok(())
}
