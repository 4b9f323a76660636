//! The kernel info store (GE's `OpsKernelInfoStore`): which op types an engine has kernels
//! for, whether it supports one op instance (with a reason when not), and op compilation.

use std::collections::BTreeMap;
use std::fmt;

use rge_ir::{ComputeGraph, NodeId, OpDesc};

use crate::error::EngineResult;

/// What an engine's store says about one op type (GE's `OpInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpInfo {
    /// The engine the kernel belongs to.
    pub engine: String,
    /// The kernel library (GE's `opKernelLib`), recorded on placed ops.
    pub kernel_lib: String,
    /// The engine's compute cost, copied for listings.
    pub compute_cost: u8,
    /// GE's `flagPartial`: the op may run partly on this engine.
    pub flag_partial: bool,
    /// GE's `flagAsync`.
    pub flag_async: bool,
}

/// A store's answer for one op: yes, or no with a reason a user can act on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    Yes,
    No(String),
}

impl Support {
    pub fn is_yes(&self) -> bool {
        matches!(self, Support::Yes)
    }
    /// `No` with a reason.
    pub fn no(reason: impl Into<String>) -> Self {
        Support::No(reason.into())
    }
}

impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Support::Yes => f.write_str("supported"),
            Support::No(r) => write!(f, "unsupported: {r}"),
        }
    }
}

/// The op types a store has infos for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpTypes {
    /// Exactly these types, sorted.
    Listed(Vec<String>),
    /// Every op type (a general engine such as `cpu`).
    Any,
}

impl OpTypes {
    /// The count for listings; `None` for [`OpTypes::Any`].
    pub fn count(&self) -> Option<usize> {
        match self {
            OpTypes::Listed(v) => Some(v.len()),
            OpTypes::Any => None,
        }
    }
}

/// GE's `OpsKernelInfoStore`. Placement runs in parallel: every method may be called from
/// several threads at once.
pub trait KernelInfoStore: Send + Sync {
    /// The kernel library name (GE's `opKernelLib`, e.g. `DNN_VM_GE_LOCAL_OP_STORE`).
    fn kernel_lib_name(&self) -> &str;

    /// The info for `op_type`, or `None` when the store has no kernel for that type; engines
    /// without an info for a type are not asked about its ops (GE's `GetAllOpsKernelInfo`).
    fn op_info(&self, op_type: &str) -> Option<&OpInfo>;

    /// The op types with infos.
    fn op_types(&self) -> OpTypes;

    /// Whether this op instance (its dtypes, shapes, formats, attributes) is supported; when
    /// not, why. Asked only for op types with an info.
    fn check_supported(&self, op: &OpDesc) -> Support;

    /// Compiles the ops placed on this engine (GE's `CompileOp`): may set attributes on their
    /// op descs. The default does nothing.
    fn compile_ops(&self, graph: &mut ComputeGraph, nodes: &[NodeId]) -> EngineResult<()> {
        let _ = (graph, nodes);
        Ok(())
    }

    /// The kernel definitions behind the answers, when the store has runnable kernels (the
    /// runtime lowers a node with the definition [`crate::KernelStore::select`] picks).
    fn kernel_set(&self) -> Option<&rge_kernels::KernelSet> {
        None
    }
}

type CheckFn = dyn Fn(&OpDesc) -> Support + Send + Sync;

/// A store from a table of op types, with an optional per-op check: what tests and simple
/// engines need.
pub struct TableStore {
    engine: String,
    lib: String,
    cost: u8,
    infos: BTreeMap<String, OpInfo>,
    any: Option<OpInfo>,
    check: Option<Box<CheckFn>>,
}

impl fmt::Debug for TableStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TableStore")
            .field("engine", &self.engine)
            .field("lib", &self.lib)
            .field("ops", &self.infos.keys().collect::<Vec<_>>())
            .field("any", &self.any.is_some())
            .finish()
    }
}

impl TableStore {
    /// An empty store of engine `engine` (cost `cost`) named `kernel_lib`.
    pub fn new(engine: impl Into<String>, kernel_lib: impl Into<String>, cost: u8) -> Self {
        TableStore {
            engine: engine.into(),
            lib: kernel_lib.into(),
            cost,
            infos: BTreeMap::new(),
            any: None,
            check: None,
        }
    }

    fn info(&self) -> OpInfo {
        OpInfo {
            engine: self.engine.clone(),
            kernel_lib: self.lib.clone(),
            compute_cost: self.cost,
            flag_partial: false,
            flag_async: false,
        }
    }

    /// Adds op types.
    pub fn with_ops<S: Into<String>>(mut self, types: impl IntoIterator<Item = S>) -> Self {
        for t in types {
            self.add_op(t);
        }
        self
    }

    /// Adds one op type.
    pub fn add_op(&mut self, op_type: impl Into<String>) {
        let info = self.info();
        self.infos.insert(op_type.into(), info);
    }

    /// Claims every op type.
    pub fn with_any_op(mut self) -> Self {
        self.any = Some(self.info());
        self
    }

    /// Checks each op instance with `check` (otherwise every op of a listed type is supported).
    pub fn with_check(
        mut self,
        check: impl Fn(&OpDesc) -> Support + Send + Sync + 'static,
    ) -> Self {
        self.check = Some(Box::new(check));
        self
    }
}

impl KernelInfoStore for TableStore {
    fn kernel_lib_name(&self) -> &str {
        &self.lib
    }

    fn op_info(&self, op_type: &str) -> Option<&OpInfo> {
        self.infos.get(op_type).or(self.any.as_ref())
    }

    fn op_types(&self) -> OpTypes {
        if self.any.is_some() {
            OpTypes::Any
        } else {
            OpTypes::Listed(self.infos.keys().cloned().collect())
        }
    }

    fn check_supported(&self, op: &OpDesc) -> Support {
        match &self.check {
            Some(check) => check(op),
            None => Support::Yes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_store_answers() {
        let s = TableStore::new("dense", "dense_store", 1)
            .with_ops(["MatMul", "Conv2D"])
            .with_check(|op| {
                if op.attrs().contains("bad") {
                    Support::no("attribute `bad` is set")
                } else {
                    Support::Yes
                }
            });
        assert_eq!(s.op_info("MatMul").unwrap().kernel_lib, "dense_store");
        assert!(s.op_info("Relu").is_none());
        assert_eq!(s.op_types().count(), Some(2));
        let mut op = OpDesc::new("m", "MatMul");
        assert!(s.check_supported(&op).is_yes());
        op.attrs_mut().set("bad", true);
        assert_eq!(
            s.check_supported(&op).to_string(),
            "unsupported: attribute `bad` is set"
        );
        let any = TableStore::new("cpu", "cpu_store", 3).with_any_op();
        assert!(any.op_info("Whatever").is_some());
        assert_eq!(any.op_types(), OpTypes::Any);
    }
}
