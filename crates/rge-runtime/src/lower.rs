//! Lowering: a graph (the root or a subgraph) becomes a [`Program`]. Each node goes through the
//! converter of its (engine, placement); then the memory plan places the static tensors in one
//! arena, and the step dependencies (data, control, memory reuse) are gathered for the
//! topological executors.

use std::sync::Arc;

use hashbrown::{HashMap, HashSet};
use smallvec::SmallVec;

use rge_ir::{attr_names, op_types, AttrValue, ComputeGraph, GraphId, NodeId, TensorDesc};
use rge_kernels::{tensor_from_ir, DType, Kernel, KernelDef, MemSpace, Tensor};

use crate::converters::{Converter, Placement};
use crate::engines::{is_local_op, EngineSet};
use crate::error::{RuntimeError, RuntimeResult};
use crate::lower_prep::{
    prepare, select_kernel, shapes_text, Deferred, Lower, OutSlot, PendingKernel, Prepared,
};
use crate::program::{Dims, InputSource, InputSpec, Program, Slot, Step, Storage};

/// The node attribute a saved compiled model records the kernel of each node in.
pub const KERNEL_ATTR: &str = "_rge_kernel";
/// The node attribute naming each subgraph slot's ONNX attribute.
pub const SUBGRAPH_ATTRS_ATTR: &str = "_onnx_subgraph_attrs";
pub(crate) const CAPTURE_ATTR: &str = "_onnx_capture";
const ONNX_NAME_ATTR: &str = "_onnx_name";
const ONNX_TYPE_ATTR: &str = "_onnx_type";
const OPSET_PREFIX: &str = "_onnx_opset_";

/// What lowering needs besides the graph.
pub struct LowerEnv<'e> {
    /// The engines: each node is lowered by its engine's converter with its engine's kernel.
    pub engines: &'e EngineSet,
    /// Opset imports: (domain, version), for ops that do not record their own.
    pub opsets: Vec<(String, i64)>,
    /// Buffer offsets of the root graph's memory plan, as a saved model stores them: used
    /// (after checking) instead of planning again.
    pub saved_offsets: Option<&'e [usize]>,
    /// The root graph's constants moved out of the graph for a program built for running:
    /// each is released as soon as every reader absorbed it (`crate::release`).
    pub taken: Option<&'e crate::release::TakenConsts>,
}

impl LowerEnv<'_> {
    pub(crate) fn opset(&self, domain: &str) -> i64 {
        opset_in(&self.opsets, domain)
    }
}

/// The version of `domain` among the opset imports `opsets` (`i64::MAX` when not imported).
pub(crate) fn opset_in(opsets: &[(String, i64)], domain: &str) -> i64 {
    let norm = |d: &str| if d == "ai.onnx" { "" } else { d }.to_string();
    let want = norm(domain);
    opsets
        .iter()
        .find(|(d, _)| norm(d) == want)
        .map_or(i64::MAX, |o| o.1)
}

/// The opset imports recorded on a graph's root (`_onnx_opset_<domain>`).
pub fn graph_opsets(graph: &ComputeGraph) -> Vec<(String, i64)> {
    graph
        .graph_attrs(graph.root())
        .map(|a| {
            a.iter()
                .filter_map(|(k, v)| {
                    let d = k.strip_prefix(OPSET_PREFIX)?;
                    match v {
                        AttrValue::Int(i) => Some((d.to_string(), *i)),
                        _ => None,
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The name of output `i` of node `node` in messages (`node:i`).
pub(crate) fn slot_name(node: &str, i: usize) -> String {
    // Pushed, not `format!`ed: one per output of every node (a tenth of preparing a 100k-node
    // graph's steps went to the formatting machinery).
    let mut buf = itoa::Buffer::new();
    let index = buf.format(i);
    let mut name = String::with_capacity(node.len() + 1 + index.len());
    name.push_str(node);
    name.push(':');
    name.push_str(index);
    name
}

/// A step's engine, op type and kernel name.
pub(crate) type StepNames = [Arc<str>; 3];

/// Lowering state of one graph; converters call its methods.
pub struct Lowering<'e> {
    pub(crate) env: &'e LowerEnv<'e>,
    graph: &'e ComputeGraph,
    subgraph: bool,
    pub(crate) slots: Vec<Slot>,
    pub(crate) root_of: Vec<u32>,
    pub(crate) planned: Vec<bool>,
    /// Byte offset of each slot from its root's start (PhonySplit outputs).
    pub(crate) rel: Vec<usize>,
    /// PhonyConcat outputs: (output root, [(input root, byte offset in the output)]).
    pub(crate) concats: Vec<(u32, Vec<(u32, usize)>)>,
    pub(crate) slot_of: HashMap<(NodeId, usize), u32>,
    pub(crate) steps: Vec<Step>,
    pub(crate) consts: Vec<Tensor>,
    pub(crate) inputs: Vec<InputSpec>,
    pub(crate) outputs: Vec<(String, Option<u32>)>,
    /// Per node: the steps that stand for it (itself, or its predecessors' for no-step nodes).
    pub(crate) eff: HashMap<NodeId, SmallVec<[u32; 2]>>,
    pub(crate) views: usize,
    /// The memory spaces other than the host's that slots live in.
    pub(crate) spaces: Vec<MemSpace>,
    /// Flat control-flow regions, loops and extra writers (`flat.rs`).
    pub(crate) flat: crate::flat::FlatState,
    /// Each distinct shapes text, op type, engine and kernel name once.
    interned: HashMap<Box<str>, Arc<str>>,
    /// [`Lowering::def_names`] by (definition, engine name) address.
    pub(crate) def_names: HashMap<(usize, usize), StepNames>,
    /// The node being lowered, prepared ahead when it is a kernel node (`lower_prep`).
    pub(crate) ready: Option<(NodeId, Prepared<'e>)>,
    /// Steps of the current window whose kernels are built after it.
    pub(crate) deferred: Vec<Deferred<'e>>,
}

pub(crate) fn lower_err(graph: &ComputeGraph, n: NodeId, msg: impl Into<String>) -> RuntimeError {
    let (node, op_type) = graph.op(n).map_or((String::new(), String::new()), |o| {
        (o.name().to_string(), o.op_type().to_string())
    });
    RuntimeError::Lower {
        node,
        op_type,
        msg: msg.into(),
    }
}

/// True when a desc describes a tensor (not a sequence, map or optional).
pub(crate) fn is_tensor_desc(d: &TensorDesc) -> bool {
    !d.attrs().contains(rge_ops::VALUE_KIND_ATTR) && !d.attrs().contains(ONNX_TYPE_ATTR)
}

pub(crate) fn static_shape(d: &TensorDesc) -> Option<Dims> {
    let s = d.shape();
    if s.is_unknown_rank() || !s.is_fully_known() {
        return None;
    }
    Some(s.dims().iter().map(|&x| x as usize).collect())
}

pub(crate) fn bytes_of(dtype: DType, shape: &[usize]) -> Option<usize> {
    rge_kernels::element_count(shape).map(|n| dtype.bytes_for(n))
}

impl<'e> Lowering<'e> {
    /// The graph being lowered.
    pub fn graph(&self) -> &'e ComputeGraph {
        self.graph
    }

    /// The op of node `n`.
    pub fn op(&self, n: NodeId) -> RuntimeResult<&'e rge_ir::OpDesc> {
        self.graph
            .op(n)
            .ok_or_else(|| RuntimeError::Other("stale node id".into()))
    }

    /// The slot feeding input `i` of `n` (`None`: not connected).
    pub fn input_slot(&self, n: NodeId, i: usize) -> RuntimeResult<Option<u32>> {
        let node = self
            .graph
            .node(n)
            .ok_or_else(|| RuntimeError::Other("stale node id".into()))?;
        match node.peer_of_input(i) {
            None => Ok(None),
            Some(a) => self
                .slot_of
                .get(&(a.node, a.index.max(0) as usize))
                .copied()
                .map(Some)
                .ok_or_else(|| lower_err(self.graph, n, format!("input {i} has no value"))),
        }
    }

    pub(crate) fn push_slot(
        &mut self,
        n: NodeId,
        i: usize,
        slot: Slot,
        root: Option<u32>,
        planned: bool,
    ) -> u32 {
        let id = self.slots.len() as u32;
        self.slots.push(slot);
        self.root_of.push(root.unwrap_or(id));
        self.planned.push(planned);
        self.rel.push(0);
        self.slot_of.insert((n, i), id);
        id
    }

    pub(crate) fn slot_name(&self, n: NodeId, i: usize) -> String {
        slot_name(self.graph.name_of(n), i)
    }

    /// Makes output `i` of `n` a view of `src` with the output's static shape, when the bytes
    /// allow it (same dtype and size, `src` planned, a constant or a fully static input).
    pub fn try_view(&mut self, n: NodeId, i: usize, src: u32) -> RuntimeResult<bool> {
        let op = self.op(n)?;
        let Some(d) = op.output(i) else {
            return Ok(false);
        };
        let (Some(shape), Some(dtype)) = (static_shape(d), DType::from_desc(d)) else {
            return Ok(false);
        };
        if !is_tensor_desc(d) || dtype.is_string() {
            return Ok(false);
        }
        let root = self.root_of[src as usize];
        let r = &self.slots[root as usize];
        let ok_root = match r.storage {
            Storage::Const(_) | Storage::Input(_) => r.shape.is_some(),
            _ => self.planned[root as usize],
        };
        let srcs = &self.slots[src as usize];
        if !ok_root || srcs.dtype != Some(dtype) || bytes_of(dtype, &shape) != Some(srcs.bytes) {
            return Ok(false);
        }
        let slot = Slot {
            name: self.slot_name(n, i),
            dtype: Some(dtype),
            shape: Some(shape),
            storage: r.storage,
            bytes: srcs.bytes,
            producer: r.producer,
            view: true,
            space: r.space,
        };
        let rel = self.rel[src as usize];
        let id = self.push_slot(n, i, slot, Some(root), false);
        self.rel[id as usize] = rel;
        self.views += 1;
        self.eff_from_inputs(n);
        Ok(true)
    }

    pub(crate) fn eff_from_inputs(&mut self, n: NodeId) {
        let Some(node) = self.graph.node(n) else {
            return;
        };
        let mut e: SmallVec<[u32; 2]> = SmallVec::new();
        // Past a few entries, a set answers "seen?": a NetOutput reading a hundred thousand
        // values made this quadratic (1.4 s of a million-node compile).
        let mut seen: Option<HashSet<u32>> = None;
        for p in node
            .input_peers()
            .iter()
            .flatten()
            .chain(node.in_ctrl_peers())
        {
            if let Some(v) = self.eff.get(&p.node) {
                for &s in v {
                    let new = match &mut seen {
                        Some(set) => set.insert(s),
                        None if e.len() < 32 => !e.contains(&s),
                        None => seen.insert(e.iter().copied().collect()).insert(s),
                    };
                    if new {
                        e.push(s);
                    }
                }
            }
        }
        self.eff.insert(n, e);
    }

    /// A node with no step (NoOp and the like).
    pub fn no_step(&mut self, n: NodeId) {
        self.eff_from_inputs(n);
    }

    /// Graph input: a Data node.
    pub fn graph_input(&mut self, n: NodeId) -> RuntimeResult<()> {
        let op = self.op(n)?;
        let attrs = op.attrs();
        let index = attrs
            .get_int(attr_names::DATA_INDEX)
            .ok()
            .flatten()
            .unwrap_or(self.inputs.len() as i64);
        let capture = attrs.get_bool(CAPTURE_ATTR).ok().flatten().unwrap_or(false);
        let source = if self.subgraph && capture {
            let p = attrs
                .get_int(attr_names::PARENT_NODE_INDEX)
                .ok()
                .flatten()
                .ok_or_else(|| lower_err(self.graph, n, "capture without _parent_node_index"))?;
            InputSource::Parent(p as usize)
        } else {
            InputSource::Formal(index.max(0) as usize)
        };
        let d = op.output(0).or_else(|| op.input(0));
        let (dtype, dims, tensor, shape) = match d {
            Some(d) => {
                let tensor = is_tensor_desc(d);
                let dims =
                    (tensor && !d.shape().is_unknown_rank()).then(|| d.shape().dims().to_vec());
                (
                    DType::from_desc(d),
                    dims,
                    tensor,
                    if tensor { static_shape(d) } else { None },
                )
            }
            None => (None, None, false, None),
        };
        let k = self.inputs.len() as u32;
        self.inputs.push(InputSpec {
            name: op.name().to_string(),
            source,
            dtype: if tensor { dtype } else { None },
            dims,
            tensor,
        });
        let bytes = match (dtype, &shape) {
            (Some(dt), Some(s)) if !dt.is_string() => bytes_of(dt, s).unwrap_or(0),
            _ => 0,
        };
        let shape = shape.filter(|_| dtype.is_some_and(|d| !d.is_string()));
        let slot = Slot {
            name: op.name().to_string(),
            dtype,
            shape,
            storage: Storage::Input(k),
            bytes,
            producer: None,
            view: false,
            space: 0,
        };
        self.push_slot(n, 0, slot, None, false);
        self.eff.insert(n, SmallVec::new());
        Ok(())
    }

    /// A constant: a Const node's `value` tensor.
    pub fn constant(&mut self, n: NodeId) -> RuntimeResult<bool> {
        let op = self.op(n)?;
        let Some(AttrValue::Tensor(t)) = op.attrs().get("value") else {
            return Ok(false);
        };
        let taken = (!self.subgraph)
            .then(|| self.env.taken.and_then(|c| c.get(n)))
            .flatten();
        let t = taken.as_ref().unwrap_or(t);
        let mut t = tensor_from_ir(t).map_err(|e| lower_err(self.graph, n, e.to_string()))?;
        if let Some(dt) = op.output(0).and_then(DType::from_desc) {
            if dt != t.dtype() && dt.bits() == t.dtype().bits() && !dt.is_string() {
                t = t
                    .with_dtype(dt)
                    .map_err(|e| lower_err(self.graph, n, e.to_string()))?;
            }
        }
        let k = self.consts.len() as u32;
        let slot = Slot {
            name: op.name().to_string(),
            dtype: Some(t.dtype()),
            shape: (!t.dtype().is_string()).then(|| Dims::from_slice(t.shape())),
            storage: Storage::Const(k),
            bytes: t.dtype().bytes_for(t.len()),
            producer: None,
            view: false,
            space: 0,
        };
        self.consts.push(t);
        self.push_slot(n, 0, slot, None, false);
        self.eff.insert(n, SmallVec::new());
        Ok(true)
    }

    /// Graph outputs: a NetOutput node's inputs.
    pub fn graph_outputs(&mut self, n: NodeId) -> RuntimeResult<()> {
        let node = self
            .graph
            .node(n)
            .ok_or_else(|| RuntimeError::Other("stale node id".into()))?;
        for i in 0..node.in_data_count() {
            let slot = self.input_slot(n, i)?;
            let name = node
                .peer_of_input(i)
                .and_then(|a| {
                    let op = self.graph.op(a.node)?;
                    let d = op.output(a.index.max(0) as usize)?;
                    match d.attrs().get_str(ONNX_NAME_ATTR) {
                        Ok(Some(s)) => Some(s.to_string()),
                        _ => Some(self.slot_name(a.node, a.index.max(0) as usize)),
                    }
                })
                .unwrap_or_else(|| format!("output{i}"));
            self.outputs.push((name, slot));
        }
        self.eff_from_inputs(n);
        Ok(())
    }

    /// A launch step for `n` with the kernel its engine's definitions select for it (the
    /// same selection placement asked the engine's store about).
    pub fn kernel_step(&mut self, n: NodeId) -> RuntimeResult<()> {
        let p = match self.ready.take() {
            Some((m, p)) if m == n => p,
            _ => prepare(self.env.engines, &self.env.opsets, self.graph, n)?,
        };
        let constants = self.constant_inputs(n)?;
        let def = p.kernel.def;
        // Without a constant input, nothing orders the kernel's build: it is built with the
        // window's others on the session's threads (`lower_prep`).
        let kernel: Box<dyn Kernel> = if constants.iter().all(Option::is_none) {
            self.deferred.push(Deferred {
                step: self.steps.len() as u32,
                node: n,
                kernel: p.kernel,
            });
            Box::new(PendingKernel)
        } else {
            p.kernel.build(self.graph, n, &constants)?
        };
        let in_place = kernel.reuse_input().or(def.in_place);
        let names = self.def_names(def, p.engine);
        self.push_step(n, names, kernel, p.outputs, &p.shapes, in_place)
    }

    /// The engine, op type and kernel name of steps running `def` on `engine`, shared.
    fn def_names(&mut self, def: &KernelDef, engine: &str) -> StepNames {
        let key = (def as *const KernelDef as usize, engine.as_ptr() as usize);
        if let Some(names) = self.def_names.get(&key) {
            return names.clone();
        }
        let names = [
            self.interned(engine),
            self.interned(&def.op_type),
            self.interned(&def.name),
        ];
        self.def_names.insert(key, names.clone());
        names
    }

    /// The inputs of `n` that are constants of the program, as the kernel will see them (a
    /// view of a constant with another shape is left out).
    fn constant_inputs(&self, n: NodeId) -> RuntimeResult<Vec<Option<&Tensor>>> {
        let count = self.graph.node(n).map_or(0, |nd| nd.in_data_count());
        let mut out = Vec::with_capacity(count);
        for i in 0..count {
            let c = self.input_slot(n, i)?.and_then(|s| {
                let slot = &self.slots[s as usize];
                match slot.storage {
                    Storage::Const(k) => {
                        let t = &self.consts[k as usize];
                        (!slot.view || slot.shape.as_deref() == Some(t.shape())).then_some(t)
                    }
                    _ => None,
                }
            });
            out.push(c);
        }
        Ok(out)
    }

    /// The index of memory space `s` in this program (0: the host's).
    pub(crate) fn space_index(&mut self, s: &MemSpace) -> u8 {
        if s.is_host() {
            return 0;
        }
        match self.spaces.iter().position(|x| x == s) {
            Some(k) => k as u8 + 1,
            None => {
                self.spaces.push(s.clone());
                self.spaces.len() as u8
            }
        }
    }

    /// A transfer node: one copy from its input's memory space into the space it names.
    pub fn transfer_step(&mut self, n: NodeId) -> RuntimeResult<()> {
        let op = self.op(n)?;
        let to = op
            .attrs()
            .get_str(crate::transfer::TO_SPACE_ATTR)
            .ok()
            .flatten()
            .unwrap_or(rge_kernels::HOST_SPACE);
        let from = op
            .attrs()
            .get_str(crate::transfer::FROM_SPACE_ATTR)
            .ok()
            .flatten()
            .unwrap_or(rge_kernels::HOST_SPACE);
        let space = MemSpace::new(to);
        let engine = effective_engine(op);
        let (name, kernel) = match self.engine_transfer_kernel(n)? {
            Some(own) => own,
            None => (
                format!("transfer.{from}->{to}"),
                Box::new(crate::transfer::CopyKernel) as Box<dyn Kernel>,
            ),
        };
        let node = self
            .graph
            .node(n)
            .ok_or_else(|| RuntimeError::Other("stale node id".into()))?;
        let outputs = (0..op.output_count())
            .map(|i| {
                let d = op.output(i);
                let space = (i == 0 && !space.is_host()).then(|| space.clone());
                OutSlot::of(op, node, i, d.and_then(DType::from_desc), space)
            })
            .collect();
        let shapes = shapes_text(op);
        let names = [
            self.interned(engine),
            self.interned(op.op_type()),
            self.interned(&name),
        ];
        self.push_step(n, names, kernel, outputs, &shapes, None)
    }

    /// The transfer kernel of the engine that owns transfer node `n`, when that engine
    /// defines one (a space the host cannot address copies through its own API); `None`: the
    /// runtime's memcpy.
    fn engine_transfer_kernel(
        &self,
        n: NodeId,
    ) -> RuntimeResult<Option<(String, Box<dyn Kernel>)>> {
        let Ok((_, spec)) = select_kernel(self.env.engines, &self.env.opsets, self.graph, n) else {
            return Ok(None);
        };
        let kernel = spec.build(self.graph, n, &self.constant_inputs(n)?)?;
        Ok(Some((spec.def.name.clone(), kernel)))
    }

    /// Pushes the launch step of `n`: its input and output slots.
    fn push_step(
        &mut self,
        n: NodeId,
        [engine, op_type, kernel_name]: StepNames,
        kernel: Box<dyn Kernel>,
        outs: SmallVec<[OutSlot; 2]>,
        shapes: &str,
        in_place: Option<(usize, usize)>,
    ) -> RuntimeResult<()> {
        let op = self.op(n)?;
        let graph = self.graph;

        let mut inputs = SmallVec::with_capacity(op.input_count());
        let node = graph
            .node(n)
            .ok_or_else(|| RuntimeError::Other("stale node id".into()))?;
        for i in 0..node.in_data_count() {
            inputs.push(self.input_slot(n, i)?);
        }
        let mut subgraphs = Vec::new();
        for g in graph.node_subgraphs(n) {
            subgraphs.push(Arc::new(lower_graph(self.env, graph, g)?));
        }
        let step = self.steps.len() as u32;
        let mut outputs = SmallVec::with_capacity(outs.len());
        let mut used = Vec::with_capacity(outs.len());
        let mut dynamic = false;
        for (i, out) in outs.into_iter().enumerate() {
            let planned = out.bytes.is_some();
            dynamic |= !planned;
            let space = out.space.as_ref().map_or(0, |s| self.space_index(s));
            if !planned && space != 0 {
                return Err(lower_err(
                    graph,
                    n,
                    format!(
                        "output {i} lives in memory space `{}`, which needs a static shape",
                        self.spaces[space as usize - 1]
                    ),
                ));
            }
            let slot = Slot {
                name: out.name,
                dtype: out.dtype,
                shape: out.shape,
                storage: Storage::Dynamic(u32::MAX),
                bytes: out.bytes.unwrap_or(0),
                producer: Some(step),
                view: false,
                space,
            };
            outputs.push(self.push_slot(n, i, slot, None, planned));
            used.push(out.used);
        }
        let stream = u32::try_from(op.stream_id()).ok();
        let workspace = op
            .compile_state()
            .map(|c| c.workspace_bytes.clone())
            .unwrap_or_default();
        let shapes = self.interned(shapes);
        self.steps.push(Step {
            shapes,
            node: op.name().to_string(),
            op_type,
            engine,
            kernel_name,
            stream,
            kernel,
            inputs,
            outputs,
            used: used.into(),
            subgraphs: subgraphs.into(),
            workspace: workspace.into(),
            dynamic,
            in_place,
            flow: None,
        });
        // Control predecessors: a dependency on the steps standing for them.
        self.eff.insert(n, SmallVec::from_elem(step, 1));
        Ok(())
    }
}

impl Lowering<'_> {
    /// One shared copy of `text` per lowering: per-step texts that repeat (shapes, op types,
    /// engine and kernel names) cost one allocation each, not one per step.
    pub(crate) fn interned(&mut self, text: &str) -> Arc<str> {
        if let Some(t) = self.interned.get(text) {
            return t.clone();
        }
        let t: Arc<str> = text.into();
        self.interned.insert(text.into(), t.clone());
        t
    }
}

/// The local engine's converter: graph I/O, constants, no-ops, and views without a copy when
/// shapes are static (a copying kernel otherwise).
pub fn lower_local(cx: &mut Lowering<'_>, n: NodeId) -> RuntimeResult<()> {
    let op = cx.op(n)?;
    let t = op.op_type();
    match t {
        _ if op_types::is_data(t) => cx.graph_input(n),
        "Const" | "Constant" => {
            if cx.constant(n)? {
                Ok(())
            } else {
                cx.kernel_step(n)
            }
        }
        op_types::NET_OUTPUT => cx.graph_outputs(n),
        "NoOp" | "PlaceHolder" | "End" => {
            cx.no_step(n);
            Ok(())
        }
        "Identity" | "Reshape" | "Squeeze" | "Unsqueeze" | "Flatten" => {
            if let Some(src) = cx.input_slot(n, 0)? {
                if cx.try_view(n, 0, src)? {
                    return Ok(());
                }
            }
            cx.kernel_step(n)
        }
        "PhonyConcat" => crate::phony::lower_phony_concat(cx, n),
        "PhonySplit" => crate::phony::lower_phony_split(cx, n),
        _ => cx.kernel_step(n),
    }
}

/// The compute converter, shared by `cpu` (device), `host` (host) and every engine without a
/// converter of its own: one launch step with the engine's kernel. Local ops placed on a
/// compute engine (the host fallback) keep the local lowering (views, graph I/O).
pub fn lower_kernel_node(cx: &mut Lowering<'_>, n: NodeId) -> RuntimeResult<()> {
    let t = cx.op(n)?.op_type();
    if is_local_op(t) {
        return lower_local(cx, n);
    }
    cx.kernel_step(n)
}

/// The engine a node runs on: its placement, or (for nodes no pipeline placed, such as
/// hand-built test graphs) `local` for the no-compute ops and `cpu` for the rest.
pub fn effective_engine(op: &rge_ir::OpDesc) -> &str {
    match op.engine_name() {
        "" if is_local_op(op.op_type()) => "local",
        "" => "cpu",
        e => e,
    }
}

/// The converter registered for `engine` at its placement.
fn converter_of(env: &LowerEnv<'_>, engine: &str) -> Option<Converter> {
    let placement = Placement::of(Some(env.engines.manager()), engine);
    env.engines.converters().get(engine, placement)
}

/// Lowers graph `g` of `graph` into a program.
pub fn lower_graph(env: &LowerEnv<'_>, graph: &ComputeGraph, g: GraphId) -> RuntimeResult<Program> {
    let order = rge_ops::topo_order(graph, g).map_err(|e| RuntimeError::Other(e.to_string()))?;
    // Most nodes make one step and one slot: sized once, the tables of a million-node graph
    // are never copied to grow (a copy holds both the old and the new table).
    let n = order.len();
    let mut cx = Lowering {
        env,
        graph,
        subgraph: g != graph.root(),
        slots: Vec::with_capacity(n),
        root_of: Vec::with_capacity(n),
        planned: Vec::with_capacity(n),
        rel: Vec::with_capacity(n),
        concats: Vec::new(),
        slot_of: HashMap::with_capacity(n),
        steps: Vec::with_capacity(n),
        consts: Vec::new(),
        inputs: Vec::new(),
        outputs: Vec::new(),
        eff: HashMap::with_capacity(n),
        views: 0,
        spaces: Vec::new(),
        flat: Default::default(),
        interned: HashMap::new(),
        ready: None,
        def_names: HashMap::new(),
        deferred: Vec::new(),
    };
    let mut ctrl: Vec<(u32, u32)> = Vec::new();
    let taken = env.taken.filter(|_| g == graph.root());
    let mut early = taken.map(|t| crate::release::EarlyRelease::new(graph, t));
    // Each engine's converter, and whether it is the standard one (one launch step).
    let converters: Vec<(&str, Converter, bool)> = {
        let manager = env.engines.manager();
        manager
            .ids()
            .map(|id| {
                let engine = manager.name(id);
                match converter_of(env, engine) {
                    Some(c) => (
                        engine,
                        c,
                        std::ptr::fn_addr_eq(c, lower_kernel_node as Converter),
                    ),
                    None => (engine, lower_kernel_node as Converter, true),
                }
            })
            .collect()
    };
    for window in order.chunks(crate::lower_prep::WINDOW) {
        let entries = cx.prepare_window(window, &converters);
        for (&n, (how, prepared)) in window.iter().zip(entries) {
            cx.ready = prepared.map(|p| (n, p));
            let before = cx.steps.len();
            let lowered = match how {
                Lower::Transfer => cx.transfer_step(n),
                Lower::With(conv) => conv(&mut cx, n),
                Lower::Unknown => {
                    let op = graph
                        .op(n)
                        .ok_or_else(|| RuntimeError::Other("stale node id".into()))?;
                    // Engines that bring kernels and no converter of their own get the
                    // standard lowering (one launch step); kernel_step says so when the
                    // engine has no kernels.
                    let conv = converter_of(env, effective_engine(op)).unwrap_or(lower_kernel_node);
                    conv(&mut cx, n)
                }
            };
            if let Err(e) = lowered {
                // A kernel of an earlier node that fails to build is the first error.
                cx.build_deferred()?;
                return Err(e);
            }
            if let (Some(early), Some(taken)) = (early.as_mut(), taken) {
                for k in early.after_node(graph, n, &cx.steps[before..], &cx.slots, taken) {
                    cx.consts[k] = cx.consts[k].released();
                }
            }
            if cx.steps.len() > before {
                let node = graph
                    .node(n)
                    .ok_or_else(|| RuntimeError::Other("stale node id".into()))?;
                for p in node.in_ctrl_peers() {
                    if let Some(v) = cx.eff.get(&p.node) {
                        ctrl.extend(v.iter().map(|&s| (s, before as u32)));
                    }
                }
            }
        }
        cx.build_deferred()?;
    }
    crate::assemble::finish(cx, g, graph, ctrl)
}
