//! An engine's kernels as its kernel info store: placement asks `check_supported`, which
//! answers from the engine's kernel definitions (op, domain, opset, dtypes per port, the
//! definition's own check), with the reason when none fits. The runtime lowers a node with
//! the definition the same selection picks (ARCHITECTURE.md decision 9).

use std::collections::BTreeMap;

use rge_ir::OpDesc;
use rge_kernels::{KernelDef, KernelSet, MemSpace};

use crate::store::{KernelInfoStore, OpInfo, OpTypes, Support};

/// The op's domain, normalized ("" for the default ONNX domain).
pub fn op_domain(op: &OpDesc) -> &str {
    match op.domain() {
        "ai.onnx" => "",
        d => d,
    }
}

/// The opset version the model imports for the op's domain (the latest when unknown).
pub fn op_opset(op: &OpDesc) -> i64 {
    op.opset().unwrap_or(i64::MAX)
}

/// The memory space an engine's `mem_types` names: GE's `HBM` (every built-in engine's) is
/// the host here, since rge's counterparts of device engines run on the host's memory.
pub fn space_of_mem_types(mem_types: &[String]) -> MemSpace {
    match mem_types.first().map(String::as_str) {
        None | Some("HBM") | Some("DDR") | Some(rge_kernels::HOST_SPACE) => MemSpace::host(),
        Some(s) => MemSpace::new(s),
    }
}

/// A kernel info store over a [`KernelSet`].
#[derive(Debug, Clone)]
pub struct KernelStore {
    lib: String,
    kernels: KernelSet,
    infos: BTreeMap<String, OpInfo>,
    template: Option<OpInfo>,
    /// Op types claimed without a kernel (lowered by the engine's converter).
    without_kernel: std::collections::BTreeSet<String>,
}

impl KernelStore {
    /// The store of engine `engine` (cost `cost`) with `kernels`, named `kernel_lib`.
    pub fn new(engine: &str, kernel_lib: &str, cost: u8, kernels: KernelSet) -> Self {
        let info = OpInfo {
            engine: engine.to_string(),
            kernel_lib: kernel_lib.to_string(),
            compute_cost: cost,
            flag_partial: false,
            flag_async: false,
        };
        let infos: BTreeMap<String, OpInfo> = kernels
            .op_types()
            .map(|(_, t)| (t.to_string(), info.clone()))
            .collect();
        KernelStore {
            lib: kernel_lib.to_string(),
            kernels,
            infos,
            template: Some(info),
            without_kernel: Default::default(),
        }
    }

    /// Also claims `op_types` that the engine lowers without a kernel (graph inputs and
    /// outputs, constants, partition boundaries: the local engine's converter handles them).
    pub fn with_ops_without_kernel(mut self, op_types: &[&str]) -> Self {
        if let Some(info) = self.template.clone() {
            for t in op_types {
                self.infos
                    .entry(t.to_string())
                    .or_insert_with(|| info.clone());
                if !self.kernels.has_op("", t) {
                    self.without_kernel.insert(t.to_string());
                }
            }
        }
        self
    }

    /// The definitions.
    pub fn kernels(&self) -> &KernelSet {
        &self.kernels
    }

    /// The definition that runs `op`, or why none does.
    pub fn select(&self, op: &OpDesc) -> Result<&KernelDef, String> {
        self.kernels.select(op, op_domain(op), op_opset(op))
    }
}

impl KernelInfoStore for KernelStore {
    fn kernel_lib_name(&self) -> &str {
        &self.lib
    }

    fn op_info(&self, op_type: &str) -> Option<&OpInfo> {
        self.infos.get(op_type)
    }

    fn op_types(&self) -> OpTypes {
        OpTypes::Listed(self.infos.keys().cloned().collect())
    }

    fn check_supported(&self, op: &OpDesc) -> Support {
        if self.without_kernel.contains(op.op_type()) {
            return Support::Yes;
        }
        match self.select(op) {
            Ok(_) => Support::Yes,
            Err(reason) => Support::No(reason),
        }
    }

    fn kernel_set(&self) -> Option<&KernelSet> {
        Some(&self.kernels)
    }
}
