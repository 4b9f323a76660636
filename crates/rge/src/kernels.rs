//! The kernel registry every command that runs models uses: all kernel families
//! (`rge-kernels-*`) registered into one registry, built once per process.

use std::sync::OnceLock;

use rge_kernels::{KernelRegistry, KernelRegistryBuilder, KernelResult};

/// Registers every family into `b` (a second kernel for one op type is an error).
pub fn register_all(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    rge_kernels_elementwise::register(b)?;
    rge_kernels_convert::register(b)?;
    rge_kernels_nn::register(b)?;
    rge_kernels_sequence::register(b)?;
    rge_kernels_tensor::register(b)?;
    rge_kernels_misc::register(b)?;
    rge_kernels_ml::register(b)?;
    rge_kernels_ms::register(b)?;
    Ok(())
}

/// The kernels of every family (shared; cheap to clone).
pub fn default_kernels() -> KernelRegistry {
    static REGISTRY: OnceLock<KernelRegistry> = OnceLock::new();
    REGISTRY
        .get_or_init(|| {
            let mut b = KernelRegistryBuilder::new();
            // The families register disjoint op types; tests/kernels.rs checks it.
            register_all(&mut b).expect("kernel families register disjoint op types");
            b.build()
        })
        .clone()
}
