//! rge's `gpu` engine over wgpu (Vulkan, Metal, DX12): WGSL compute kernels, a device memory
//! space whose arena the runtime plans like the host's, transfers at the space's borders
//! (weights uploaded once when the model is compiled), and the wgpu queue as a stream:
//! kernels are submitted without waiting; the host waits only where it reads a device tensor
//! (see `docs/gpu-engine.md`).

pub mod context;
pub mod dispatch;
pub mod engine;
pub mod error;
pub mod kernels;
pub mod memory;

pub use context::{discover, GpuContext, GPU_ENV};
pub use engine::{gpu_engine, kernel_set, GpuEngine, GPU};
pub use error::GpuError;
pub use memory::{DeviceMemory, GpuAllocator, GPU_SPACE};
