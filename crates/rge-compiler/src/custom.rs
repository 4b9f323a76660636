//! The custom engine (GE's DNN_VM_CUSTOM): cost 0, so user ops registered with it are placed
//! before any other engine is asked. Created by the manager builder, not loaded from a plugin.

use std::collections::BTreeMap;

use rge_engine::standard::CUSTOM;
use rge_engine::{
    BasicEngine, Engine, EngineAttributes, KernelBuilder, KernelInfoStore, NamedKernel, OpInfo,
    OpTypes, RunningParams, SchedulingFlags, Support,
};
use rge_ir::{ComputeGraph, NodeId, OpDesc};

/// A per-instance check of a custom op.
pub type CustomOpCheck = Box<dyn Fn(&OpDesc) -> Support + Send + Sync>;

/// The custom engine's kernel library name.
pub const CUSTOM_KERNEL_LIB: &str = "custom_op_store";

struct CustomStore {
    infos: BTreeMap<String, (OpInfo, Option<CustomOpCheck>)>,
}

impl KernelInfoStore for CustomStore {
    fn kernel_lib_name(&self) -> &str {
        CUSTOM_KERNEL_LIB
    }
    fn op_info(&self, op_type: &str) -> Option<&OpInfo> {
        self.infos.get(op_type).map(|(i, _)| i)
    }
    fn op_types(&self) -> OpTypes {
        OpTypes::Listed(self.infos.keys().cloned().collect())
    }
    fn check_supported(&self, op: &OpDesc) -> Support {
        match self.infos.get(op.op_type()) {
            Some((_, Some(check))) => check(op),
            Some((_, None)) => Support::Yes,
            None => Support::no(format!("no custom op `{}`", op.op_type())),
        }
    }
}

struct CustomBuilder;

impl KernelBuilder for CustomBuilder {
    fn generate_kernel(
        &self,
        graph: &ComputeGraph,
        node: NodeId,
        _params: &RunningParams,
    ) -> rge_engine::EngineResult<Box<dyn rge_engine::Kernel>> {
        Ok(Box::new(NamedKernel {
            engine: CUSTOM.into(),
            op_type: graph.op(node).map_or("", |o| o.op_type()).into(),
        }))
    }
}

/// The custom engine: the standard `custom` row with a store of user op types.
pub struct CustomEngine {
    attrs: EngineAttributes,
    flags: SchedulingFlags,
    store: CustomStore,
    builder: CustomBuilder,
}

impl CustomEngine {
    pub(crate) fn new() -> Self {
        let base = BasicEngine::standard(CUSTOM).expect("custom is a standard engine");
        CustomEngine {
            attrs: base.attributes().clone(),
            flags: base.scheduling(),
            store: CustomStore {
                infos: BTreeMap::new(),
            },
            builder: CustomBuilder,
        }
    }

    pub(crate) fn add_op(&mut self, op_type: String, check: Option<CustomOpCheck>) {
        let info = OpInfo {
            engine: CUSTOM.into(),
            kernel_lib: CUSTOM_KERNEL_LIB.into(),
            compute_cost: self.attrs.compute_cost,
            flag_partial: false,
            flag_async: false,
        };
        self.store.infos.insert(op_type, (info, check));
    }
}

impl Engine for CustomEngine {
    fn attributes(&self) -> &EngineAttributes {
        &self.attrs
    }
    fn scheduling(&self) -> SchedulingFlags {
        self.flags
    }
    fn kernel_store(&self) -> Option<&dyn KernelInfoStore> {
        Some(&self.store)
    }
    fn kernel_builder(&self) -> Option<&dyn KernelBuilder> {
        Some(&self.builder)
    }
}
