//! rge: the facade crate. Re-exports the layers and holds the command line's commands, so that
//! they can be tested as functions (`rge::cli::*`).

pub use rge_compiler as compiler;
pub use rge_engine as engine;
pub use rge_formats as formats;
pub use rge_ir as ir;
pub use rge_kernels as kernel_core;
pub use rge_ops as ops;
pub use rge_runtime as runtime;

pub mod cli;
pub mod engines;
pub mod explain;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod kernels;
pub mod model;
pub mod ports;
