//! Node converters (the seed's NodeConverterRegistry): keyed by (engine, placement), each lowers
//! one node into execution-graph steps. The standard lowering of a compute node is: infer the
//! output shapes (dynamic outputs: done by the kernel at run time), allocate the outputs (arena
//! offsets from the memory plan, or run-time buffers), allocate workspace, launch, free
//! workspace (workspace sizes are recorded on the step; kernels allocate scratch inside the
//! call). As in GE, the `cpu` (device) and `host` (host) engines share one converter: the
//! placement only says where the step runs.

use std::collections::HashMap;

use rge_compiler::EngineManager;
use rge_engine::RuntimeType;
use rge_ir::NodeId;

use crate::error::RuntimeResult;
use crate::lower::Lowering;

/// Where a node's step runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Placement {
    Host,
    Device,
}

impl Placement {
    /// The placement of engine `engine` in `manager` (device when unknown).
    pub fn of(manager: Option<&EngineManager>, engine: &str) -> Placement {
        match manager.and_then(|m| m.get(engine)) {
            Some(e) if e.attributes().runtime == RuntimeType::Host => Placement::Host,
            _ => Placement::Device,
        }
    }
}

/// Lowers one node.
pub type Converter = fn(&mut Lowering<'_>, NodeId) -> RuntimeResult<()>;

/// Converters by (engine, placement).
#[derive(Clone)]
pub struct ConverterRegistry {
    map: HashMap<(String, Placement), Converter>,
}

impl std::fmt::Debug for ConverterRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut keys: Vec<_> = self.map.keys().collect();
        keys.sort_by(|a, b| a.0.cmp(&b.0));
        f.debug_struct("ConverterRegistry")
            .field("keys", &keys)
            .finish()
    }
}

impl Default for ConverterRegistry {
    /// `local` → the local converter; `cpu` (device) and `host` (host) → the shared kernel
    /// converter (GE's `LoweringAiCpuNode`).
    fn default() -> Self {
        let mut r = ConverterRegistry {
            map: HashMap::new(),
        };
        r.register("local", Placement::Device, crate::lower::lower_local);
        r.register("local", Placement::Host, crate::lower::lower_local);
        r.register("cpu", Placement::Device, crate::lower::lower_kernel_node);
        r.register("host", Placement::Host, crate::lower::lower_kernel_node);
        r
    }
}

impl ConverterRegistry {
    /// Registers (or replaces) the converter of (engine, placement).
    pub fn register(&mut self, engine: &str, placement: Placement, c: Converter) -> &mut Self {
        self.map.insert((engine.to_string(), placement), c);
        self
    }

    /// The converter of (engine, placement).
    pub fn get(&self, engine: &str, placement: Placement) -> Option<Converter> {
        self.map.get(&(engine.to_string(), placement)).copied()
    }
}
