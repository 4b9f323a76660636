//! The gpu engine's errors.

use thiserror::Error;

/// Why the gpu engine could not start, or a device operation failed.
#[derive(Debug, Error)]
pub enum GpuError {
    /// No adapter (or the engine was turned off): the engine is absent from the set.
    #[error("{0}")]
    Absent(String),
    /// The device was lost (driver reset, device removed).
    #[error("gpu device lost: {0}")]
    DeviceLost(String),
    /// A device allocation failed.
    #[error("gpu out of memory: {0}")]
    OutOfMemory(String),
    /// A shader failed to compile or a pipeline failed to build on this adapter.
    #[error("gpu shader `{name}` failed to compile on this adapter: {msg}")]
    Shader { name: String, msg: String },
    /// Any other device error (validation, a timed-out wait).
    #[error("gpu: {0}")]
    Device(String),
}

impl From<GpuError> for rge_kernels::KernelError {
    fn from(e: GpuError) -> Self {
        rge_kernels::KernelError::invalid(e.to_string())
    }
}

impl From<rge_kernels::KernelError> for GpuError {
    fn from(e: rge_kernels::KernelError) -> Self {
        GpuError::Device(e.to_string())
    }
}
