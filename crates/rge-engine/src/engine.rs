//! The engine: GE's two layers in one trait. The attributes and scheduling flags are the
//! engine's identity (GE's `DNNEngine` + `engine_conf.json`); the kernel info store, graph
//! optimizer and kernel builder are its capabilities (GE's plugin objects), each optional.

use std::collections::BTreeMap;
use std::fmt;

use crate::attrs::{EngineAttributes, SchedulingFlags};
use crate::builder::KernelBuilder;
use crate::error::EngineResult;
use crate::optimizer::GraphOptimizer;
use crate::store::KernelInfoStore;

/// Options handed to engines at initialization (GE's string option map).
pub type EngineOptions = BTreeMap<String, String>;

/// An engine. Registered into a builder, then frozen into a shared registry (ARCHITECTURE.md
/// decision 4); used from several threads at once.
pub trait Engine: Send + Sync {
    fn attributes(&self) -> &EngineAttributes;

    fn name(&self) -> &str {
        &self.attributes().name
    }

    /// `engine_conf.json`'s flags for this engine.
    fn scheduling(&self) -> SchedulingFlags {
        SchedulingFlags::NONE
    }

    /// Called once when the registry is built (GE's `Initialize(options)`).
    fn initialize(&mut self, options: &EngineOptions) -> EngineResult<()> {
        let _ = options;
        Ok(())
    }

    /// Called once when the registry is dropped (GE's `Finalize`).
    fn finalize(&self) {}

    /// The kernel info store; an engine without one supports no op.
    fn kernel_store(&self) -> Option<&dyn KernelInfoStore> {
        None
    }

    fn graph_optimizer(&self) -> Option<&dyn GraphOptimizer> {
        None
    }

    fn kernel_builder(&self) -> Option<&dyn KernelBuilder> {
        None
    }

    /// The memory space the engine's kernels read and write (from its `mem_types`).
    fn memory_space(&self) -> rge_kernels::MemSpace {
        crate::kernels::space_of_mem_types(&self.attributes().mem_types)
    }
}

impl fmt::Debug for dyn Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Engine")
            .field("name", &self.name())
            .field("cost", &self.attributes().compute_cost)
            .finish()
    }
}

/// An engine assembled from parts: attributes, flags and optional capabilities.
pub struct BasicEngine {
    attrs: EngineAttributes,
    flags: SchedulingFlags,
    store: Option<Box<dyn KernelInfoStore>>,
    optimizer: Option<Box<dyn GraphOptimizer>>,
    builder: Option<Box<dyn KernelBuilder>>,
    on_finalize: Option<Box<dyn Fn() + Send + Sync>>,
}

impl fmt::Debug for BasicEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BasicEngine")
            .field("attrs", &self.attrs)
            .field("flags", &self.flags)
            .field("store", &self.store.is_some())
            .field("optimizer", &self.optimizer.is_some())
            .field("builder", &self.builder.is_some())
            .finish()
    }
}

impl BasicEngine {
    pub fn new(attrs: EngineAttributes) -> Self {
        BasicEngine {
            attrs,
            flags: SchedulingFlags::NONE,
            store: None,
            optimizer: None,
            builder: None,
            on_finalize: None,
        }
    }

    /// The engine of the standard table row `name` (costs, runtime, flags as rge registers
    /// them), without capabilities yet; `None` for a name not in the table.
    pub fn standard(name: &str) -> Option<Self> {
        let row = crate::standard::standard_engine(name)?;
        Some(BasicEngine::new(row.attributes()).with_flags(row.flags))
    }

    pub fn with_flags(mut self, flags: SchedulingFlags) -> Self {
        self.flags = flags;
        self
    }
    pub fn with_store(mut self, store: impl KernelInfoStore + 'static) -> Self {
        self.store = Some(Box::new(store));
        self
    }
    pub fn with_optimizer(mut self, optimizer: impl GraphOptimizer + 'static) -> Self {
        self.optimizer = Some(Box::new(optimizer));
        self
    }
    pub fn with_builder(mut self, builder: impl KernelBuilder + 'static) -> Self {
        self.builder = Some(Box::new(builder));
        self
    }
    /// Runs `f` at finalize.
    pub fn on_finalize(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.on_finalize = Some(Box::new(f));
        self
    }
}

impl Engine for BasicEngine {
    fn attributes(&self) -> &EngineAttributes {
        &self.attrs
    }
    fn scheduling(&self) -> SchedulingFlags {
        self.flags
    }
    fn finalize(&self) {
        if let Some(f) = &self.on_finalize {
            f();
        }
    }
    fn kernel_store(&self) -> Option<&dyn KernelInfoStore> {
        self.store.as_deref()
    }
    fn graph_optimizer(&self) -> Option<&dyn GraphOptimizer> {
        self.optimizer.as_deref()
    }
    fn kernel_builder(&self) -> Option<&dyn KernelBuilder> {
        self.builder.as_deref()
    }
}
