//! Transfers between memory spaces (onnxruntime's memcpy transformer): a compile stage puts a
//! transfer node on every data edge whose producer writes one memory space and whose consumer
//! reads another, and nowhere else; the runtime lowers each into a copy between the two
//! spaces' allocations.

/// The name of the compile stage that inserts transfers.
pub const STAGE: &str = "insert_transfers";
/// The op type of a transfer node.
pub const TRANSFER_OP: &str = "MemcpyAsync";
/// The memory space a transfer reads.
pub const FROM_SPACE_ATTR: &str = "_rge_from_space";
/// The memory space a transfer writes.
pub const TO_SPACE_ATTR: &str = "_rge_to_space";

use std::collections::HashMap;

use rge_compiler::EngineManager;
use rge_ir::{ComputeGraph, NodeId, OpDesc};
use rge_kernels::{KernelDef, MemSpace};

use crate::engines::is_local_op;
use crate::lower::effective_engine;

/// Local view ops: their output aliases their input, so they live in the input's space.
fn is_view(op_type: &str) -> bool {
    matches!(
        op_type,
        "Identity" | "Reshape" | "Squeeze" | "Unsqueeze" | "Flatten"
    )
}

/// The space an engine's kernel for `op` uses on port `i` (input or output): the kernel
/// definition's own space for the port when it names one, else the engine's.
fn port_space(manager: &EngineManager, op: &OpDesc, i: usize, input: bool) -> MemSpace {
    let (engine_space, def) = kernel_of(manager, op);
    space_of_port(&engine_space, def, i, input)
}

/// The engine's memory space and the kernel definition it selects for `op`.
fn kernel_of<'m>(manager: &'m EngineManager, op: &OpDesc) -> (MemSpace, Option<&'m KernelDef>) {
    let Some(engine) = manager.get(effective_engine(op)) else {
        return (MemSpace::host(), None);
    };
    let def = engine
        .kernel_store()
        .and_then(|s| s.kernel_set())
        .and_then(|set| {
            set.select(op, rge_engine::op_domain(op), rge_engine::op_opset(op))
                .ok()
        });
    (engine.memory_space(), def)
}

fn space_of_port(engine: &MemSpace, def: Option<&KernelDef>, i: usize, input: bool) -> MemSpace {
    let port = def.and_then(|d| {
        if input {
            d.input(i).space.clone()
        } else {
            d.output(i).space.clone()
        }
    });
    port.unwrap_or_else(|| engine.clone())
}

/// Where output `o` of `n` lives.
fn output_space(
    graph: &ComputeGraph,
    manager: &EngineManager,
    memo: &mut HashMap<(NodeId, usize), MemSpace>,
    n: NodeId,
    o: usize,
) -> MemSpace {
    if let Some(s) = memo.get(&(n, o)) {
        return s.clone();
    }
    let Some(op) = graph.op(n) else {
        return MemSpace::host();
    };
    let t = op.op_type();
    let space = if t == TRANSFER_OP {
        let to = op
            .attrs()
            .get_str(TO_SPACE_ATTR)
            .ok()
            .flatten()
            .unwrap_or("host");
        MemSpace::new(to)
    } else if is_view(t) && is_local_op_on_local(op) {
        match graph.node(n).and_then(|nd| nd.peer_of_input(0)) {
            Some(a) => output_space(graph, manager, memo, a.node, a.index.max(0) as usize),
            None => MemSpace::host(),
        }
    } else if is_local_op(t) && is_local_op_on_local(op) {
        // Graph inputs and constants: the caller's and the model's host memory.
        MemSpace::host()
    } else {
        port_space(manager, op, o, false)
    };
    memo.insert((n, o), space.clone());
    space
}

fn is_local_op_on_local(op: &OpDesc) -> bool {
    matches!(effective_engine(op), "local" | "host" | "cpu")
}

/// Where the inputs of a node must be (decided once per node: selecting its kernel reads
/// every port, so once per input would be quadratic in the inputs).
enum InputSpaces<'m> {
    /// Any space: transfers themselves, and views that follow their input.
    Any,
    /// The caller's host memory (graph outputs go back there).
    Host,
    /// The space the engine's kernel names for each port, else the engine's own.
    Kernel(MemSpace, Option<&'m KernelDef>),
}

impl<'m> InputSpaces<'m> {
    fn of(manager: &'m EngineManager, op: &OpDesc) -> Self {
        let t = op.op_type();
        if t == TRANSFER_OP || (is_view(t) && is_local_op_on_local(op)) {
            return InputSpaces::Any;
        }
        if is_local_op(t) && is_local_op_on_local(op) {
            return InputSpaces::Host;
        }
        let (engine, def) = kernel_of(manager, op);
        InputSpaces::Kernel(engine, def)
    }

    /// Where input `i` must be, `None` when it takes any space.
    fn input(&self, i: usize) -> Option<MemSpace> {
        match self {
            InputSpaces::Any => None,
            InputSpaces::Host => Some(MemSpace::host()),
            InputSpaces::Kernel(engine, def) => Some(space_of_port(engine, *def, i, true)),
        }
    }
}

/// The first engine (by cost) whose memory space is `space`; `None` for the host space.
fn space_owner(manager: &EngineManager, space: &MemSpace) -> Option<String> {
    if space.is_host() {
        return None;
    }
    manager
        .by_cost()
        .iter()
        .find(|&&id| manager.engine(id).memory_space() == *space)
        .map(|&id| manager.name(id).to_string())
}

/// True when every engine's kernels read and write the host's memory (every built-in CPU
/// engine): no edge can cross spaces. Checking each edge anyway cost 110 ms on a 100k-node
/// graph, a kernel selection per node.
fn host_only(manager: &EngineManager) -> bool {
    let host_port = |p: &rge_kernels::PortDef| p.space.as_ref().is_none_or(MemSpace::is_host);
    manager.ids().all(|id| {
        let engine = manager.engine(id);
        engine.memory_space().is_host()
            && engine
                .kernel_store()
                .and_then(|s| s.kernel_set())
                .is_none_or(|set| {
                    set.iter()
                        .all(|d| d.inputs.iter().chain(&d.outputs).all(host_port))
                })
    })
}

/// Inserts a transfer on every data edge of the root graph whose producer writes another
/// memory space than its consumer reads (one transfer per tensor and destination space,
/// shared by its consumers). Returns the number inserted.
pub fn insert_transfers(
    graph: &mut ComputeGraph,
    manager: &EngineManager,
) -> Result<usize, String> {
    if host_only(manager) {
        return Ok(0);
    }
    let root = graph.root();
    let order = rge_ops::topo_order(graph, root).map_err(|e| e.to_string())?;
    let mut memo = HashMap::new();
    // (producer, output, destination space) → the transfer node made for it.
    let mut made: HashMap<(NodeId, usize, MemSpace), NodeId> = HashMap::new();
    let mut inserted = 0;
    for n in order {
        let Some(op) = graph.op(n) else { continue };
        if op.op_type() == TRANSFER_OP {
            continue;
        }
        let spaces = InputSpaces::of(manager, op);
        let inputs: Vec<(usize, rge_ir::OutAnchor)> = graph
            .node(n)
            .map(|nd| {
                (0..nd.in_data_count())
                    .filter_map(|i| nd.peer_of_input(i).map(|a| (i, a)))
                    .collect()
            })
            .unwrap_or_default();
        for (i, src) in inputs {
            let Some(want) = spaces.input(i) else {
                continue;
            };
            let out = src.index.max(0) as usize;
            let have = output_space(graph, manager, &mut memo, src.node, out);
            if have == want {
                continue;
            }
            let key = (src.node, out, want.clone());
            if let Some(&t) = made.get(&key) {
                graph.unlink(src, n.input(i)).map_err(|e| e.to_string())?;
                graph
                    .link(t.out(0), n.input(i))
                    .map_err(|e| e.to_string())?;
                continue;
            }
            let desc = graph
                .op(src.node)
                .and_then(|p| p.output(out))
                .cloned()
                .ok_or_else(|| format!("node `{}` has no output {out}", graph.name_of(src.node)))?;
            let name = format!("{}_{}_to_{}", graph.name_of(src.node), out, want.name());
            let mut t = OpDesc::new(name, TRANSFER_OP);
            t.add_input("x", desc.clone()).map_err(|e| e.to_string())?;
            t.add_output("y", desc).map_err(|e| e.to_string())?;
            t.attrs_mut().set(FROM_SPACE_ATTR, have.name());
            t.attrs_mut().set(TO_SPACE_ATTR, want.name());
            // The copy belongs to the engine on the device side of the crossing (as
            // onnxruntime gives memcpy nodes to the non-CPU provider): to host, the engine
            // whose space the tensor is in (the producer may be a view that only follows it).
            let op = graph.op(n).expect("live node");
            let engine = if want.is_host() {
                space_owner(manager, &have)
                    .or_else(|| graph.op(src.node).map(|p| effective_engine(p).to_string()))
            } else {
                Some(op.engine_name().to_string())
            };
            t.set_engine_name(engine.unwrap_or_default());
            t.set_stream_id(op.stream_id());
            let tn = graph.add_node_before(n, t).map_err(|e| e.to_string())?;
            graph
                .insert_node_between(src, n.input(i), tn, 0, 0)
                .map_err(|e| e.to_string())?;
            memo.insert((tn, 0), want.clone());
            made.insert(key, tn);
            inserted += 1;
        }
    }
    Ok(inserted)
}

/// The copy a transfer lowers into. rge's memory spaces are all addressable from the host
/// (each with its own allocation), so the copy is a memcpy between the two allocations.
pub struct CopyKernel;

impl rge_kernels::Kernel for CopyKernel {
    fn compute(&self, ctx: &mut rge_kernels::KernelCtx<'_>) -> rge_kernels::KernelResult<()> {
        let x = ctx.input(0)?;
        let src = x.bytes()?;
        let out = ctx.output_bytes(0, x.dtype(), x.shape())?;
        out.copy_from_slice(src);
        Ok(())
    }
}
