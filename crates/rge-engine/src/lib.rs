//! rge-engine: the engine interface of rge (engines.md §3.5, §4.3) and the C ABI of engine
//! plugins.
//!
//! - [`attrs`]: GE's `DNNEngineAttribute` ([`EngineAttributes`]: name, memory types, compute
//!   cost 0–10, HOST/DEVICE runtime, input/output format, atomic or composite with members)
//!   and `engine_conf.json`'s [`SchedulingFlags`] (independent, attach, skip stream assignment).
//! - [`store`]: the kernel info store ([`KernelInfoStore`]: op infos per type,
//!   `check_supported` answering yes or no with a reason, op compilation) and [`TableStore`].
//! - [`optimizer`]: the graph optimizer ([`GraphOptimizer`]: original, fused, whole graph),
//!   which changes graphs only through a [`rewriter`] ([`GraphRewriter`]: checked patches).
//! - [`builder`]: the kernel builder ([`KernelBuilder`]: running parameters, kernel/task
//!   generation) and the [`Kernel`] trait object the compiled model keeps.
//! - [`engine`]: the [`Engine`] trait tying these together, and [`BasicEngine`].
//! - [`standard`]: rge's engine names, costs and flags (the destination table).
//! - [`abi`], [`json`], [`plugin`]: the versioned C ABI, its JSON documents, and the loader.
//!
//! Every trait is `Send + Sync`: engines are registered into a builder and frozen into a shared
//! registry (`rge-compiler`'s `EngineManager`), then used from several threads at once.

pub mod abi;
pub mod attrs;
pub mod builder;
pub mod engine;
pub mod error;
pub mod json;
pub mod kernels;
pub mod optimizer;
pub mod plugin;
pub mod plugin_edits;
pub mod rewriter;
pub mod standard;
pub mod store;

pub use attrs::{EngineAttributes, EngineKind, RuntimeType, SchedulingFlags, MAX_COMPUTE_COST};
pub use builder::{default_running_params, Kernel, KernelBuilder, NamedKernel, RunningParams};
pub use engine::{BasicEngine, Engine, EngineOptions};
pub use error::{EngineError, EngineResult};
pub use kernels::{
    op_domain, op_opset, space_of_mem_types, strip_prepared, KernelStore, PREPARED_ATTR,
    SKIP_PREPARE_ATTR,
};
pub use optimizer::{GraphOptimizer, OptimizeStage};
pub use plugin::{
    load_engine_plugin, load_engine_plugin_with_entry, PluginComputeKernel, PluginEngine,
    PluginKernel,
};
pub use rewriter::{GraphRewriter, BOUNDARY_OP_TYPES};
pub use standard::{standard_engine, StandardEngine, STANDARD_ENGINES};
pub use store::{KernelInfoStore, OpInfo, OpTypes, Support, TableStore};
