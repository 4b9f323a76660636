//! The parts of a kernel node's lowering that read only the graph and the engines, done on the
//! session's threads around the sequential pass: before it, each node's kernel definition,
//! output slots and texts ([`Prepared`]); after it, the kernels of steps without constant
//! inputs ([`Deferred`]). A constant input keeps its kernel built in order, because the early
//! release (`crate::release`) drops a weight as soon as its readers' kernels absorbed it.
//!
//! Nodes go through in windows, so that what is prepared and not yet used stays bounded (a
//! million-node graph holds one window's worth).

use smallvec::SmallVec;

use rge_engine::Engine;
use rge_ir::{AttrValue, ComputeGraph, NodeId, TensorDesc};
use rge_kernels::{DType, Kernel, KernelDef, KernelInit, KernelResult, MemSpace, Tensor};

use crate::converters::Converter;
use crate::engines::{is_local_op, EngineSet};
use crate::error::{RuntimeError, RuntimeResult};
use crate::lower::{
    bytes_of, effective_engine, is_tensor_desc, lower_err, opset_in, static_shape, Lowering,
    KERNEL_ATTR, SUBGRAPH_ATTRS_ATTR,
};
use crate::program::Dims;

/// Nodes prepared at once.
pub(crate) const WINDOW: usize = 4096;

/// One output of a kernel step, as its slot will be.
pub(crate) struct OutSlot {
    pub name: String,
    pub dtype: Option<DType>,
    /// The static shape of a planned tensor output.
    pub shape: Option<Dims>,
    /// Byte size when planned (a tensor of static shape and fixed-size dtype).
    pub bytes: Option<usize>,
    /// The space of the kernel definition's output, when it is not the host's.
    pub space: Option<MemSpace>,
    /// True when something reads it.
    pub used: bool,
}

impl OutSlot {
    /// Output `i` of `op` (at `node`) with element type `dtype`, in `space` (`None`: the
    /// host's): planned when it is a tensor of static shape and fixed-size dtype.
    pub(crate) fn of(
        op: &rge_ir::OpDesc,
        node: &rge_ir::Node,
        i: usize,
        dtype: Option<DType>,
        space: Option<MemSpace>,
    ) -> OutSlot {
        let shape = op
            .output(i)
            .filter(|d| is_tensor_desc(d))
            .and_then(static_shape);
        let bytes = match (dtype, &shape) {
            (Some(dt), Some(s)) if !dt.is_string() => bytes_of(dt, s),
            _ => None,
        };
        OutSlot {
            name: crate::lower::slot_name(op.name(), i),
            dtype,
            shape: shape.filter(|_| bytes.is_some()),
            bytes,
            space,
            used: !node.peers_of_output(i).is_empty(),
        }
    }
}

/// The kernel definition selected for a node, with what its factory reads besides the op.
pub(crate) struct KernelSpec<'e> {
    pub def: &'e KernelDef,
    pub domain: &'e str,
    pub opset: i64,
    pub input_types: Vec<Option<DType>>,
    pub output_types: Vec<Option<DType>>,
    pub subgraph_attrs: Vec<String>,
}

impl KernelSpec<'_> {
    /// Builds node `n`'s kernel with `constants` (by input index).
    pub(crate) fn build(
        &self,
        graph: &ComputeGraph,
        n: NodeId,
        constants: &[Option<&Tensor>],
    ) -> RuntimeResult<Box<dyn Kernel>> {
        let op = graph.op(n).ok_or_else(stale)?;
        let init = KernelInit {
            node_name: op.name(),
            op_type: op.op_type(),
            domain: self.domain,
            opset: self.opset,
            attrs: op.attrs(),
            input_types: &self.input_types,
            output_types: &self.output_types,
            subgraph_attrs: &self.subgraph_attrs,
            constants,
        };
        (self.def.factory)(&init).map_err(|e| lower_err(graph, n, e.to_string()))
    }
}

fn stale() -> RuntimeError {
    RuntimeError::Other("stale node id".into())
}

/// The engine node `n` is placed on and the kernel definition it selects there.
pub(crate) fn select_kernel<'e>(
    engines: &'e EngineSet,
    opsets: &[(String, i64)],
    graph: &'e ComputeGraph,
    n: NodeId,
) -> RuntimeResult<(&'e dyn Engine, KernelSpec<'e>)> {
    let op = graph.op(n).ok_or_else(stale)?;
    let engine_name = effective_engine(op);
    let engine = engines.engine(engine_name).ok_or_else(|| {
        lower_err(
            graph,
            n,
            format!("engine `{engine_name}` is not in the engine set"),
        )
    })?;
    let set = engine
        .kernel_store()
        .and_then(|s| s.kernel_set())
        .ok_or_else(|| lower_err(graph, n, format!("engine `{engine_name}` has no kernels")))?;
    let domain = rge_engine::op_domain(op);
    let opset = op.opset().unwrap_or_else(|| opset_in(opsets, domain));
    let def = set.select(op, domain, opset).map_err(|why| {
        lower_err(
            graph,
            n,
            format!("engine `{engine_name}` cannot run it: {why}"),
        )
    })?;
    let (input_types, output_types) = rge_kernels::port_types(op);
    let subgraph_attrs = match op.attrs().get(SUBGRAPH_ATTRS_ATTR) {
        Some(AttrValue::ListString(v)) => v.clone(),
        _ => Vec::new(),
    };
    let spec = KernelSpec {
        def,
        domain,
        opset,
        input_types,
        output_types,
        subgraph_attrs,
    };
    Ok((engine, spec))
}

/// What the step of kernel node `n` needs that does not depend on the nodes lowered before it.
pub(crate) struct Prepared<'e> {
    pub engine: &'e str,
    pub kernel: KernelSpec<'e>,
    pub outputs: SmallVec<[OutSlot; 2]>,
    /// The op's shapes as the profiler prints them (`[1,16] [1,16] -> [1,16]`).
    pub shapes: String,
}

/// Selects the kernel of node `n` on its engine and describes its outputs: the checks (and
/// errors) of a kernel step, without the kernel.
pub(crate) fn prepare<'e>(
    engines: &'e EngineSet,
    opsets: &[(String, i64)],
    graph: &'e ComputeGraph,
    n: NodeId,
) -> RuntimeResult<Prepared<'e>> {
    let (engine, kernel) = select_kernel(engines, opsets, graph, n)?;
    let op = graph.op(n).ok_or_else(stale)?;
    let node = graph.node(n).ok_or_else(stale)?;
    let def = kernel.def;
    // A saved compiled model names the kernel it was compiled for: another engine set
    // (a different build, missing plugin) must not silently run something else.
    if let Ok(Some(saved)) = op.attrs().get_str(KERNEL_ATTR) {
        if saved != def.name {
            return Err(lower_err(
                graph,
                n,
                format!(
                    "compiled for kernel `{saved}`, but engine `{}` of this engine set selects `{}`: the model was written by a different engine set; compile it again",
                    effective_engine(op),
                    def.name
                ),
            ));
        }
    }
    let engine_space = engine.memory_space();
    let outputs = (0..op.output_count())
        .map(|i| {
            let space = def.output(i).space.as_ref().unwrap_or(&engine_space);
            let space = (!space.is_host()).then(|| space.clone());
            OutSlot::of(op, node, i, kernel.output_types[i], space)
        })
        .collect();
    Ok(Prepared {
        // The engine's own name: one address per engine (`Lowering::def_names` keys on it).
        engine: engine.name(),
        kernel,
        outputs,
        shapes: shapes_text(op),
    })
}

/// `[1,3,224,224] [64,3,7,7] -> [1,64,112,112]`: the op's input and output shapes (`?` for an
/// unknown dim, `[*]` for an unknown rank, `-` for an absent optional input).
pub(crate) fn shapes_text(op: &rge_ir::OpDesc) -> String {
    fn one(out: &mut String, d: Option<&TensorDesc>) {
        let Some(d) = d else {
            out.push('-');
            return;
        };
        let s = d.shape();
        if s.is_unknown_rank() {
            out.push_str("[*]");
            return;
        }
        out.push('[');
        for (k, &x) in s.dims().iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            if x < 0 {
                out.push('?');
            } else {
                // itoa, not `write!`: the text is made for every kernel node (the formatting
                // machinery was most of it).
                out.push_str(itoa::Buffer::new().format(x));
            }
        }
        out.push(']');
    }
    fn list<'d>(out: &mut String, descs: impl Iterator<Item = Option<&'d TensorDesc>>) {
        for (i, d) in descs.enumerate() {
            if i > 0 {
                out.push(' ');
            }
            one(out, d);
        }
    }
    let mut text = String::with_capacity(32);
    list(&mut text, (0..op.input_count()).map(|i| op.input(i)));
    text.push_str(" -> ");
    list(&mut text, (0..op.output_count()).map(|i| op.output(i)));
    text
}

/// A step whose kernel is built after the window's sequential pass.
pub(crate) struct Deferred<'e> {
    pub step: u32,
    pub node: NodeId,
    pub kernel: KernelSpec<'e>,
}

impl Deferred<'_> {
    /// Builds the kernel (no input is a constant).
    pub(crate) fn build(&self, graph: &ComputeGraph) -> RuntimeResult<Box<dyn Kernel>> {
        let count = graph.node(self.node).map_or(0, |nd| nd.in_data_count());
        self.kernel.build(graph, self.node, &vec![None; count])
    }
}

/// Stands in a deferred step until its kernel is built; never computed.
pub(crate) struct PendingKernel;

impl Kernel for PendingKernel {
    fn compute(&self, _: &mut rge_kernels::KernelCtx<'_>) -> KernelResult<()> {
        Err(rge_kernels::KernelError::invalid(
            "internal: a lowered step's kernel was never built",
        ))
    }
}

/// How the lowering loop handles a node.
#[derive(Clone, Copy)]
pub(crate) enum Lower {
    /// A transfer node.
    Transfer,
    /// Through its engine's converter.
    With(Converter),
    /// An engine not in the set: looked up in turn (and reported by the converter).
    Unknown,
}

impl<'e> Lowering<'e> {
    /// Builds the kernels of the deferred steps (in parallel); the first error in step order.
    pub(crate) fn build_deferred(&mut self) -> RuntimeResult<()> {
        use rayon::prelude::*;
        if self.deferred.is_empty() {
            return Ok(());
        }
        let graph = self.graph();
        let built: Vec<RuntimeResult<Box<dyn Kernel>>> = self
            .deferred
            .par_iter()
            .with_min_len(64)
            .map(|d| d.build(graph))
            .collect();
        for (d, k) in self.deferred.drain(..).zip(built) {
            let k = k?;
            let step = &mut self.steps[d.step as usize];
            step.in_place = k.reuse_input().or(d.kernel.def.in_place);
            step.kernel = k;
        }
        Ok(())
    }

    /// How each node of `window` is lowered, and the kernel nodes among them prepared
    /// ([`Prepared`]), on the session's threads. A node whose preparation fails is left to its
    /// turn, which reports the error in order.
    pub(crate) fn prepare_window(
        &self,
        window: &[NodeId],
        converters: &[(&'e str, Converter, bool)],
    ) -> Vec<(Lower, Option<Prepared<'e>>)> {
        use rayon::prelude::*;
        let (engines, opsets, graph) = (self.env.engines, self.env.opsets.as_slice(), self.graph());
        window
            .par_iter()
            .with_min_len(64)
            .map(|&n| {
                let Some(op) = graph.op(n) else {
                    return (Lower::Unknown, None);
                };
                let t = op.op_type();
                if t == crate::transfer::TRANSFER_OP {
                    return (Lower::Transfer, None);
                }
                let engine = effective_engine(op);
                let Some(&(_, conv, standard)) = converters.iter().find(|(e, _, _)| *e == engine)
                else {
                    return (Lower::Unknown, None);
                };
                let prepared = (standard && !is_local_op(t))
                    .then(|| prepare(engines, opsets, graph, n).ok())
                    .flatten();
                (Lower::With(conv), prepared)
            })
            .collect()
    }
}
