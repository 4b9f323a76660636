//! An engine's kernels as its kernel info store: placement asks `check_supported`, which
//! answers from the engine's kernel definitions (op, domain, opset, dtypes per port, the
//! definition's own check), with the reason when none fits. The runtime lowers a node with
//! the definition the same selection picks (ARCHITECTURE.md decision 9).

use std::collections::BTreeMap;

use rge_ir::{ComputeGraph, NodeId, OpDesc};
use rge_kernels::{KernelDef, KernelInit, KernelSet, MemSpace, Tensor};

use crate::error::{EngineError, EngineResult};
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

    /// GE's `CompileOp`: the compile-time work of each node's kernel definition (prepacked
    /// weights …), recorded as attributes on its op.
    fn compile_ops(&self, graph: &mut ComputeGraph, nodes: &[NodeId]) -> EngineResult<()> {
        let skip = graph
            .graph_attrs(graph.root())
            .is_some_and(|a| a.contains(SKIP_PREPARE_ATTR));
        if skip {
            // Built to run here and now: the kernels do this work when they are built.
            return Ok(());
        }
        for &n in nodes {
            let Some(op) = graph.op(n) else { continue };
            let Ok(def) = self.select(op) else {
                // Not this engine's to run: the kernel selection stage says why.
                continue;
            };
            let Some(prepare) = &def.prepare else {
                continue;
            };
            let constants = constant_inputs(graph, n);
            let consts: Vec<Option<&Tensor>> = constants.iter().map(Option::as_ref).collect();
            let (input_types, output_types) = rge_kernels::port_types(op);
            let init = KernelInit {
                node_name: op.name(),
                op_type: op.op_type(),
                domain: op_domain(op),
                opset: op_opset(op),
                attrs: op.attrs(),
                input_types: &input_types,
                output_types: &output_types,
                subgraph_attrs: &[],
                constants: &consts,
            };
            let attrs = prepare(&init).map_err(|e| {
                EngineError::engine(
                    def.name.split('.').next().unwrap_or(""),
                    format!("node `{}`: compiling kernel `{}`: {e}", op.name(), def.name),
                )
            })?;
            if let Some(op) = graph.op_mut(n) {
                let keys: Vec<String> = attrs.iter().map(|(k, _)| k.clone()).collect();
                for (k, v) in attrs {
                    op.attrs_mut().set(k, v);
                }
                if !keys.is_empty() {
                    op.attrs_mut()
                        .set(PREPARED_ATTR, rge_ir::AttrValue::ListString(keys));
                }
            }
        }
        Ok(())
    }
}

/// The root-graph attribute asking kernel stores to skip compile-time work whose results only
/// a saved compiled model needs (the kernels do it when built).
pub const SKIP_PREPARE_ATTR: &str = "_rge_skip_prepare";

/// The op attribute listing the attributes compile-time kernel work recorded (so a runtime that
/// keeps no compiled state can drop them once the kernels are built).
pub const PREPARED_ATTR: &str = "_rge_prepared";

/// Removes from every op of `graph` the attributes compile-time kernel work recorded.
pub fn strip_prepared(graph: &mut ComputeGraph) {
    let graphs: Vec<rge_ir::GraphId> = std::iter::once(graph.root())
        .chain(graph.subgraphs().iter().copied())
        .collect();
    for g in graphs {
        for n in graph.nodes_of(g).collect::<Vec<_>>() {
            let Some(op) = graph.op_mut(n) else { continue };
            let keys = match op.attrs().get(PREPARED_ATTR) {
                Some(rge_ir::AttrValue::ListString(v)) => v.clone(),
                _ => continue,
            };
            for k in keys {
                op.attrs_mut().remove(&k);
            }
            op.attrs_mut().remove(PREPARED_ATTR);
        }
    }
}

/// The inputs of `n` that come straight from Const nodes, as runtime tensors.
fn constant_inputs(graph: &ComputeGraph, n: NodeId) -> Vec<Option<Tensor>> {
    let Some(node) = graph.node(n) else {
        return Vec::new();
    };
    (0..node.in_data_count())
        .map(|i| {
            let src = node.peer_of_input(i)?;
            rge_kernels::tensor_from_ir(graph.op(src.node)?.const_value()?).ok()
        })
        .collect()
}
