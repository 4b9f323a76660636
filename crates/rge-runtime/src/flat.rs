//! Flat control flow (GE's static-graph lowering of If, Case, While and Loop): instead of one
//! step that runs nested subgraph programs, the node's subgraphs are lowered into the parent's
//! own program between label steps, and the region runner jumps between them:
//!
//! ```text
//! If:    StreamActive · LabelSwitch(cond) → [then, else]
//!        then: LabelSet · …then nodes… · MemcpyAsync(out_k) · LabelGoto(end)
//!        else: LabelSet · …else nodes… · MemcpyAsync(out_k)
//!        end:  LabelSet
//! Loop:  StreamActive · LoopInit(M, cond → iter, cond) · MemcpyAsync(v_k)
//!        head: LabelSet · StreamSwitch(iter, M, cond) → [body, exit]
//!        body: LabelSet · …body nodes… · ScanWrite · MemcpyAsync(cond, v_k) · LoopIncrement · LabelGoto(head)
//!        exit: LabelSet · ScanCheck
//! ```
//!
//! The region (StreamActive to its end) is one unit for the executors; inside it the steps run
//! in order on one stream, following the labels. Every value the region touches is planned in
//! the arena (static shapes only): [`flat_blocker`] says why a node cannot be lowered so, and
//! such a node stays one step with nested programs. The kernels of the control steps come from
//! the engine that lowers control flow ([`FlowKernels`], the `rts` engine).

use smallvec::SmallVec;

use rge_ir::{attr_names, op_types, ComputeGraph, GraphId, NodeId, TensorDesc};
use rge_kernels::{DType, Kernel};

use crate::converters::Placement;
use crate::error::{RuntimeError, RuntimeResult};
use crate::lower::{
    bytes_of, effective_engine, is_tensor_desc, lower_err, lower_kernel_node, static_shape,
    Lowering, CAPTURE_ATTR, SUBGRAPH_ATTRS_ATTR,
};
use crate::program::{Dims, Flow, Slot, Step, Storage};

/// Op types with GE's If semantics (a condition, then and else branches).
pub const IF_OPS: &[&str] = &["If", "_If", "StatelessIf"];
/// Op types with GE's While semantics (cond and body subgraphs over the loop variables).
pub const WHILE_OPS: &[&str] = &["While", "_While", "StatelessWhile"];
/// Every op type the flat lowering handles.
pub const FLAT_OPS: &[&str] = &[
    "If",
    "_If",
    "StatelessIf",
    "Case",
    "Loop",
    "While",
    "_While",
    "StatelessWhile",
];

/// How a branch switch reads its input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwitchMode {
    /// ONNX If: a bool tensor of one element; true → 0 (then), false → 1 (else).
    OnnxIf,
    /// GE's If and While rule: a scalar is true when non-zero, a tensor when non-empty.
    GeTruthy,
    /// Case: an int32/int64 index. Out of range: the last of `branches` when `clamp` (the
    /// frontend named the branch slots, GE's and TensorFlow's rule), else an error, as the
    /// nested Case kernel decides (a GE graph's Case carries no branch count of its own).
    Case { branches: usize, clamp: bool },
}

/// The kernels of the flat control-flow steps, brought by the engine that lowers control flow.
/// `node` is the control-flow node's name (kernels name it in their errors).
pub trait FlowKernels: Sync {
    /// The engine the steps are recorded on.
    fn engine(&self) -> &str;
    /// LabelSwitch: input 0 (a condition or index) → output 0, an int32 target index.
    fn switch(&self, node: &str, mode: SwitchMode) -> Box<dyn Kernel>;
    /// StreamSwitch of a Loop: inputs (iter, M or absent, cond) → output 0: 0 to run the body,
    /// 1 to leave.
    fn loop_switch(&self, node: &str) -> Box<dyn Kernel>;
    /// LoopInit: inputs (M or absent, cond or absent) → outputs (iter = 0, cond).
    fn loop_init(&self, node: &str) -> Box<dyn Kernel>;
    /// LoopIncrement: input iter → output iter + 1.
    fn increment(&self, node: &str) -> Box<dyn Kernel>;
    /// MemcpyAsync: input 0 → output 0, same dtype and shape.
    fn memcpy(&self, node: &str) -> Box<dyn Kernel>;
    /// ScanWrite: inputs (value, iter) → row `iter` of output 0 (`[rows, value…]`).
    fn scan_write(&self, node: &str, rows: usize) -> Box<dyn Kernel>;
    /// ScanCheck: input iter must equal `rows` (the scan outputs' static length).
    fn scan_check(&self, node: &str, rows: usize) -> Box<dyn Kernel>;
    /// LabelSet, LabelGoto, StreamActive: no computation.
    fn label(&self) -> Box<dyn Kernel>;
}

/// Lowering state of the flat regions of one program.
#[derive(Debug, Default)]
pub(crate) struct FlatState {
    /// Outermost regions: (first step, end).
    pub(crate) regions: Vec<(u32, u32)>,
    /// Loop bodies (LabelSet of the head, LabelSet of the exit): values crossing them live
    /// through the whole loop.
    pub(crate) loops: Vec<(u32, u32)>,
    /// Writes into a slot by a step other than its producer (branch and loop-carried copies).
    pub(crate) extra_writes: Vec<(u32, u32)>,
    /// How deep the current lowering is inside regions.
    depth: u32,
}

/// Where a subgraph Data node takes its value from.
#[derive(Debug, Clone, Copy)]
enum Binding {
    /// The subgraph's k-th formal input.
    Formal(usize),
    /// The parent node's input `p` (an ONNX capture).
    Parent(usize),
}

fn binding(graph: &ComputeGraph, data: NodeId, seen: usize) -> Binding {
    let Some(op) = graph.op(data) else {
        return Binding::Formal(seen);
    };
    let attrs = op.attrs();
    let capture = attrs.get_bool(CAPTURE_ATTR).ok().flatten().unwrap_or(false);
    if capture {
        if let Ok(Some(p)) = attrs.get_int(attr_names::PARENT_NODE_INDEX) {
            return Binding::Parent(p.max(0) as usize);
        }
    }
    let k = attrs
        .get_int(attr_names::DATA_INDEX)
        .ok()
        .flatten()
        .unwrap_or(seen as i64);
    Binding::Formal(k.max(0) as usize)
}

/// The subgraph of `n` in the slot its ONNX attribute `name` names, else slot `fallback`.
fn subgraph_named(graph: &ComputeGraph, n: NodeId, name: &str, fallback: usize) -> Option<GraphId> {
    let subs = graph.node_subgraphs(n);
    let slot = graph
        .op(n)
        .and_then(|op| match op.attrs().get(SUBGRAPH_ATTRS_ATTR) {
            Some(rge_ir::AttrValue::ListString(v)) => v.iter().position(|s| s == name),
            _ => None,
        })
        .unwrap_or(fallback);
    subs.get(slot).copied()
}

fn desc_text(d: &TensorDesc) -> String {
    let s = d.shape();
    if s.is_unknown_rank() {
        return "[*]".into();
    }
    let dims: Vec<String> = s
        .dims()
        .iter()
        .map(|&x| if x < 0 { "?".into() } else { x.to_string() })
        .collect();
    format!("{:?}[{}]", d.dtype(), dims.join(","))
}

/// Why `d` cannot live in the arena of a flat region (`None`: it can).
fn desc_blocker(d: &TensorDesc) -> Option<String> {
    if !is_tensor_desc(d) {
        return Some("is not a tensor (a sequence, map or optional)".into());
    }
    match DType::from_desc(d) {
        None => return Some("has no known dtype".into()),
        Some(dt) if dt.is_string() => return Some("is a string tensor".into()),
        _ => {}
    }
    static_shape(d)
        .is_none()
        .then(|| format!("has a dynamic shape {}", desc_text(d)))
}

/// Why control-flow node `n` cannot be lowered into the flat program (`None`: it can). The
/// node's own inputs and outputs, and every node of its subgraphs, must be static-shape
/// tensors; each subgraph input must have the shape of the value bound to it.
pub fn flat_blocker(graph: &ComputeGraph, n: NodeId) -> Option<String> {
    let op = graph.op(n)?;
    let t = op.op_type();
    if !FLAT_OPS.contains(&t) {
        return Some(format!(
            "{t} is not a control-flow op the rts engine lowers"
        ));
    }
    let node = graph.node(n)?;
    for i in 0..node.in_data_count() {
        if node.peer_of_input(i).is_none() {
            continue;
        }
        if let Some(why) = op.input(i).and_then(desc_blocker) {
            return Some(format!(
                "input {i} {why}: rts lowers static-shape control flow only"
            ));
        }
    }
    for (i, d) in op.outputs().iter().enumerate() {
        if let Some(why) = desc_blocker(d) {
            return Some(format!(
                "output {i} {why}: rts lowers static-shape control flow only"
            ));
        }
    }
    let subs = graph.node_subgraphs(n);
    if subs.is_empty() {
        return Some("the node has no subgraphs".into());
    }
    // The flat program copies each branch's (or body's) results into the node's buffers: they
    // must have the node's dtypes and shapes (ONNX lets If branches differ, e.g. [0] and [1]).
    let same = |a: &TensorDesc, b: &TensorDesc| {
        a.dtype() == b.dtype() && static_shape(a).is_some() && static_shape(a) == static_shape(b)
    };
    let results = |g: GraphId| -> Vec<Option<TensorDesc>> {
        graph
            .output_nodes(g)
            .iter()
            .map(|&(m, i)| graph.op(m).and_then(|o| o.output(i as usize)).cloned())
            .collect()
    };
    let is_branch = matches!(t, "If" | "_If" | "StatelessIf" | "Case");
    for &g in &subs {
        let res = results(g);
        let gname = graph.graph_name(g).unwrap_or("?").to_string();
        let pairs: Vec<(usize, Option<&TensorDesc>, Option<&TensorDesc>)> = if is_branch {
            (0..op.outputs().len())
                .map(|j| (j, res.get(j).and_then(Option::as_ref), op.output(j)))
                .collect()
        } else if t == "Loop" {
            // Body results: cond, then the carried values (the node's first outputs). The
            // carried values are the formal inputs after M and cond: captured outer values the
            // ONNX importer appended are not (counting them would pair scan outputs with body
            // results of another shape).
            let carried = formal_count(op, node.in_data_count()).saturating_sub(2);
            (0..carried.min(op.outputs().len()))
                .map(|j| (j, res.get(j + 1).and_then(Option::as_ref), op.output(j)))
                .collect()
        } else {
            Vec::new()
        };
        for (j, r, o) in pairs {
            if let (Some(r), Some(o)) = (r, o) {
                if !same(r, o) {
                    return Some(format!(
                        "result {j} of subgraph `{gname}` is {}, the node's output {}: rts needs them equal",
                        desc_text(r),
                        desc_text(o)
                    ));
                }
            }
        }
    }
    for g in subs {
        let gname = graph.graph_name(g).unwrap_or("?").to_string();
        for m in graph.nodes_of(g) {
            let Some(mop) = graph.op(m) else { continue };
            for (i, d) in mop.outputs().iter().enumerate() {
                if let Some(why) = desc_blocker(d) {
                    return Some(format!(
                        "output {i} of `{}` in subgraph `{gname}` {why}: rts lowers static-shape control flow only",
                        mop.name()
                    ));
                }
            }
        }
    }
    None
}

/// How many of a loop node's `inputs` inputs are its formal ones (the rest are captured outer
/// values the ONNX importer appended): its `_onnx_formal_inputs`, else all of them.
fn formal_count(op: &rge_ir::OpDesc, inputs: usize) -> usize {
    op.attrs()
        .get_int(rge_formats::onnx::names::FORMAL_INPUTS)
        .ok()
        .flatten()
        .map_or(inputs, |v| (v.max(0) as usize).min(inputs))
}

impl Lowering<'_> {
    /// A planned slot of no node (a loop counter, a switch index, a staging copy).
    fn temp_slot(&mut self, name: String, dtype: DType, shape: Dims) -> RuntimeResult<u32> {
        let bytes = bytes_of(dtype, &shape)
            .ok_or_else(|| RuntimeError::Other(format!("`{name}`: shape overflows")))?;
        let id = self.slots.len() as u32;
        self.slots.push(Slot {
            name,
            dtype: Some(dtype),
            shape: Some(shape),
            storage: Storage::Dynamic(u32::MAX),
            bytes,
            producer: None,
            view: false,
            space: 0,
        });
        self.root_of.push(id);
        self.planned.push(true);
        self.rel.push(0);
        Ok(id)
    }

    /// A planned slot for output `i` of `n` (its static desc), with no producer yet.
    fn node_output_slot(&mut self, n: NodeId, i: usize) -> RuntimeResult<u32> {
        let graph = self.graph();
        let op = self.op(n)?;
        let d = op
            .output(i)
            .ok_or_else(|| lower_err(graph, n, format!("output {i} has no desc")))?;
        let (Some(dtype), Some(shape)) = (DType::from_desc(d), static_shape(d)) else {
            return Err(lower_err(graph, n, format!("output {i} is not static")));
        };
        let id = self.temp_slot(self.slot_name(n, i), dtype, shape)?;
        self.slot_of.insert((n, i), id);
        Ok(id)
    }

    /// Pushes a control step of node `n` with existing slots; an output slot that already has
    /// a producer records this step as an extra writer.
    #[allow(clippy::too_many_arguments)]
    fn flow_step(
        &mut self,
        n: NodeId,
        op_type: &str,
        engine: &str,
        kernel: Box<dyn Kernel>,
        inputs: &[Option<u32>],
        outputs: &[u32],
        flow: Option<Flow>,
    ) -> RuntimeResult<u32> {
        let op = self.op(n)?;
        let step = self.steps.len() as u32;
        for &o in outputs {
            let slot = &mut self.slots[o as usize];
            if slot.producer.is_none() {
                slot.producer = Some(step);
            } else {
                self.flat.extra_writes.push((o, step));
            }
        }
        let node = op.name().to_string();
        let stream = u32::try_from(op.stream_id()).ok();
        let (op_type, engine, kernel_name) = (
            self.interned(op_type),
            self.interned(engine),
            self.interned(&format!("{engine}.{op_type}")),
        );
        self.steps.push(Step {
            node,
            op_type,
            engine,
            kernel_name,
            stream,
            kernel,
            inputs: inputs.iter().copied().collect(),
            outputs: outputs.iter().copied().collect(),
            used: vec![true; outputs.len()].into(),
            subgraphs: Vec::new().into(),
            workspace: Vec::new().into(),
            dynamic: false,
            in_place: None,
            shapes: "".into(),
            flow,
        });
        Ok(step)
    }

    fn label_step(
        &mut self,
        n: NodeId,
        k: &dyn FlowKernels,
        op_type: &str,
        flow: Flow,
    ) -> RuntimeResult<u32> {
        self.flow_step(n, op_type, k.engine(), k.label(), &[], &[], Some(flow))
    }

    /// True when `slot` can be read from inside a region: planned, a constant, or a static
    /// graph input (never a run-time value: its reader count would not survive a loop).
    fn flat_readable(&self, slot: u32) -> bool {
        let r = self.root_of[slot as usize] as usize;
        let s = &self.slots[r];
        match s.storage {
            Storage::Const(_) | Storage::Input(_) => s.shape.is_some(),
            _ => self.planned[r],
        }
    }

    /// Lowers subgraph `g` into this program; its Data nodes take the slots `bind` gives;
    /// returns the slots of its outputs.
    fn inline_subgraph(
        &mut self,
        owner: NodeId,
        g: GraphId,
        bind: &dyn Fn(&Self, Binding) -> Option<u32>,
    ) -> RuntimeResult<Vec<Option<u32>>> {
        let graph = self.graph();
        let order =
            rge_ops::topo_order(graph, g).map_err(|e| lower_err(graph, owner, e.to_string()))?;
        let mut seen = 0usize;
        let mut results = Vec::new();
        for m in order {
            let op = self.op(m)?;
            let t = op.op_type();
            if op_types::is_data(t) {
                let b = binding(graph, m, seen);
                seen += 1;
                let slot = bind(self, b).ok_or_else(|| {
                    lower_err(
                        graph,
                        owner,
                        format!("subgraph input `{}` ({b:?}) has no value", op.name()),
                    )
                })?;
                self.slot_of.insert((m, 0), slot);
                self.eff.insert(m, SmallVec::new());
            } else if t == op_types::NET_OUTPUT {
                let count = graph.node(m).map_or(0, |nd| nd.in_data_count());
                for i in 0..count {
                    results.push(self.input_slot(m, i)?);
                }
                self.eff_from_inputs(m);
            } else if t == crate::transfer::TRANSFER_OP {
                self.transfer_step(m)?;
            } else {
                let engine = effective_engine(op);
                let placement = Placement::of(Some(self.env.engines.manager()), engine);
                let conv = self
                    .env
                    .engines
                    .converters()
                    .get(engine, placement)
                    .unwrap_or(lower_kernel_node);
                conv(self, m)?;
            }
        }
        Ok(results)
    }

    /// Copies `srcs` into `dsts` (one MemcpyAsync each; none where they share bytes). When a
    /// source is the storage of another destination, it is staged through a copy first, so
    /// that no copy reads what an earlier one overwrote.
    fn copy_all(
        &mut self,
        n: NodeId,
        k: &dyn FlowKernels,
        srcs: &[Option<u32>],
        dsts: &[u32],
        what: &str,
    ) -> RuntimeResult<()> {
        let graph = self.graph();
        let dst_roots: Vec<u32> = dsts.iter().map(|&d| self.root_of[d as usize]).collect();
        let mut staged: Vec<(u32, u32)> = Vec::new();
        let mut direct: Vec<(u32, u32)> = Vec::new();
        for (j, (&src, &dst)) in srcs.iter().zip(dsts).enumerate() {
            let src = src.ok_or_else(|| lower_err(graph, n, format!("{what} {j} has no value")))?;
            let (s, d) = (&self.slots[src as usize], &self.slots[dst as usize]);
            if s.dtype != d.dtype || s.shape != d.shape {
                return Err(lower_err(
                    graph,
                    n,
                    format!(
                        "{what} {j} is {}{:?}, the node's value is {}{:?}: in rts mode the shapes must agree (run it with --control-flow nested)",
                        s.dtype.map_or("?".into(), |t| t.to_string()),
                        s.shape.as_deref().unwrap_or(&[]),
                        d.dtype.map_or("?".into(), |t| t.to_string()),
                        d.shape.as_deref().unwrap_or(&[]),
                    ),
                ));
            }
            if !self.flat_readable(src) {
                return Err(lower_err(graph, n, format!("{what} {j} is not planned")));
            }
            let sr = self.root_of[src as usize];
            if sr == dst_roots[j] && self.rel[src as usize] == self.rel[dst as usize] {
                continue;
            }
            if dst_roots.contains(&sr) {
                let (dt, sh) = (
                    s.dtype.unwrap_or(DType::Float),
                    s.shape.clone().unwrap_or_default(),
                );
                let tmp_name = format!("{}:stage{j}", d.name);
                let tmp = self.temp_slot(tmp_name, dt, sh)?;
                self.flow_step(
                    n,
                    "MemcpyAsync",
                    k.engine(),
                    k.memcpy(graph.name_of(n)),
                    &[Some(src)],
                    &[tmp],
                    None,
                )?;
                staged.push((tmp, dst));
            } else {
                direct.push((src, dst));
            }
        }
        for (src, dst) in direct.into_iter().chain(staged) {
            self.flow_step(
                n,
                "MemcpyAsync",
                k.engine(),
                k.memcpy(graph.name_of(n)),
                &[Some(src)],
                &[dst],
                None,
            )?;
        }
        Ok(())
    }

    /// Lowers control-flow node `n` into the flat program with `kernels`' control steps.
    /// `Ok(false)`: it cannot be (a dynamic value, see [`flat_blocker`]), and nothing was
    /// emitted; the caller lowers it as one step with nested programs.
    pub fn lower_flat_control(
        &mut self,
        n: NodeId,
        kernels: &dyn FlowKernels,
    ) -> RuntimeResult<bool> {
        let graph = self.graph();
        if flat_blocker(graph, n).is_some() {
            return Ok(false);
        }
        let node = graph
            .node(n)
            .ok_or_else(|| RuntimeError::Other("stale node id".into()))?;
        let mut parent = Vec::with_capacity(node.in_data_count());
        for i in 0..node.in_data_count() {
            let s = self.input_slot(n, i)?;
            if s.is_some_and(|s| !self.flat_readable(s)) {
                return Ok(false);
            }
            parent.push(s);
        }
        let t = self.op(n)?.op_type();
        let start = self.steps.len() as u32;
        self.flat.depth += 1;
        let head = self.label_step(n, kernels, "StreamActive", Flow::Active { end: 0 })?;
        let r = if t == "Loop" {
            self.lower_loop(n, kernels, &parent)
        } else if WHILE_OPS.contains(&t) {
            self.lower_while(n, kernels, &parent)
        } else {
            self.lower_branches(n, kernels, &parent)
        };
        self.flat.depth -= 1;
        r?;
        let end = self.steps.len() as u32;
        self.steps[head as usize].flow = Some(Flow::Active { end });
        // One stream for the whole region: its steps run in order, following the labels.
        let stream = self.steps[head as usize].stream;
        for s in &mut self.steps[start as usize..end as usize] {
            s.stream = stream;
        }
        if self.flat.depth == 0 {
            self.flat.regions.push((start, end));
        }
        self.eff.insert(n, SmallVec::from_elem(head, 1));
        Ok(true)
    }

    /// If and Case: a LabelSwitch over the branches, each copying its outputs into the node's.
    fn lower_branches(
        &mut self,
        n: NodeId,
        k: &dyn FlowKernels,
        parent: &[Option<u32>],
    ) -> RuntimeResult<()> {
        let graph = self.graph();
        let op = self.op(n)?;
        let t = op.op_type();
        let (branches, mode) = if IF_OPS.contains(&t) {
            let then_g = subgraph_named(graph, n, "then_branch", 0);
            let else_g = subgraph_named(graph, n, "else_branch", 1);
            let (Some(a), Some(b)) = (then_g, else_g) else {
                return Err(lower_err(graph, n, "If needs then and else branches"));
            };
            // ONNX's single-element rule for If with an ONNX opset, else GE's (as the nested
            // kernel decides).
            let domain = rge_engine::op_domain(op);
            let opset = op.opset().unwrap_or_else(|| self.env.opset(domain));
            let onnx = t == "If" && opset != i64::MAX;
            (
                vec![a, b],
                if onnx {
                    SwitchMode::OnnxIf
                } else {
                    SwitchMode::GeTruthy
                },
            )
        } else {
            let subs = graph.node_subgraphs(n);
            if subs.is_empty() {
                return Err(lower_err(graph, n, "Case has no branches"));
            }
            let count = subs.len();
            // The nested kernel knows the branch count (and clamps) only from the slot names
            // a frontend records; the flat switch follows it, so both agree.
            let clamp = matches!(
                op.attrs().get(SUBGRAPH_ATTRS_ATTR),
                Some(rge_ir::AttrValue::ListString(v)) if !v.is_empty()
            );
            (
                subs,
                SwitchMode::Case {
                    branches: count,
                    clamp,
                },
            )
        };
        let cond = parent
            .first()
            .copied()
            .flatten()
            .ok_or_else(|| lower_err(graph, n, "the condition (input 0) is not connected"))?;
        check_predicate(self, n, cond, mode)?;
        let outs: Vec<u32> = (0..op.output_count())
            .map(|i| self.node_output_slot(n, i))
            .collect::<RuntimeResult<_>>()?;
        let index = self.temp_slot(format!("{}:branch", op.name()), DType::Int32, Dims::new())?;
        let switch = self.flow_step(
            n,
            "LabelSwitch",
            k.engine(),
            k.switch(op.name(), mode),
            &[Some(cond)],
            &[index],
            None,
        )?;
        let mut targets = Vec::with_capacity(branches.len());
        let mut gotos = Vec::new();
        for (b, &g) in branches.iter().enumerate() {
            targets.push(self.label_step(n, k, "LabelSet", Flow::Label)?);
            let bind = |cx: &Self, bd: Binding| -> Option<u32> {
                let _ = cx;
                match bd {
                    Binding::Formal(j) => parent.get(j + 1).copied().flatten(),
                    Binding::Parent(p) => parent.get(p).copied().flatten(),
                }
            };
            let res = self.inline_subgraph(n, g, &bind)?;
            if res.len() < outs.len() {
                return Err(lower_err(
                    graph,
                    n,
                    format!(
                        "branch {b} makes {} outputs, the node has {}",
                        res.len(),
                        outs.len()
                    ),
                ));
            }
            let what = format!("output of branch {b}");
            self.copy_all(n, k, &res[..outs.len()], &outs, &what)?;
            if b + 1 < branches.len() {
                gotos.push(self.label_step(n, k, "LabelGoto", Flow::Goto { target: 0 })?);
            }
        }
        let end = self.label_step(n, k, "LabelSet", Flow::Label)?;
        for g in gotos {
            self.steps[g as usize].flow = Some(Flow::Goto { target: end });
        }
        self.steps[switch as usize].flow = Some(Flow::Switch {
            targets: targets.into(),
        });
        Ok(())
    }

    /// ONNX Loop: counter and condition slots, the carried values in the node's outputs, scan
    /// outputs written a row per iteration.
    fn lower_loop(
        &mut self,
        n: NodeId,
        k: &dyn FlowKernels,
        parent: &[Option<u32>],
    ) -> RuntimeResult<()> {
        let graph = self.graph();
        let op = self.op(n)?;
        let name = op.name().to_string();
        let body = subgraph_named(graph, n, "body", 0)
            .ok_or_else(|| lower_err(graph, n, "Loop has no body"))?;
        let formal = formal_count(op, parent.len());
        if formal < 2 {
            return Err(lower_err(graph, n, "Loop needs inputs M and cond"));
        }
        let carried = formal - 2;
        let scans = op.output_count().checked_sub(carried).ok_or_else(|| {
            lower_err(graph, n, "Loop has fewer outputs than loop-carried values")
        })?;
        let (m, c0) = (parent[0], parent[1]);
        if let Some(m) = m {
            let s = &self.slots[m as usize];
            if s.shape
                .as_ref()
                .is_some_and(|sh| sh.iter().product::<usize>() != 1)
            {
                return Err(lower_err(
                    graph,
                    n,
                    format!(
                        "the trip count M must be a scalar, it has shape {:?}",
                        s.shape.as_deref().unwrap_or(&[])
                    ),
                ));
            }
        }
        if let Some(c) = c0 {
            check_predicate(self, n, c, SwitchMode::OnnxIf)?;
        }
        let iter = self.temp_slot(format!("{name}:iter"), DType::Int64, Dims::new())?;
        let cond = self.temp_slot(format!("{name}:cond"), DType::Bool, Dims::new())?;
        let next = self.temp_slot(format!("{name}:next"), DType::Int64, Dims::new())?;
        let index = self.temp_slot(format!("{name}:switch"), DType::Int32, Dims::new())?;
        let outs: Vec<u32> = (0..op.output_count())
            .map(|i| self.node_output_slot(n, i))
            .collect::<RuntimeResult<_>>()?;
        let (vars, scan_outs) = outs.split_at(carried);
        let rows = match scan_outs.first() {
            Some(&s) => self.slots[s as usize]
                .shape
                .as_ref()
                .and_then(|sh| sh.first().copied())
                .unwrap_or(0),
            None => 0,
        };
        self.flow_step(
            n,
            "LoopInit",
            k.engine(),
            k.loop_init(&name),
            &[m, c0],
            &[iter, cond],
            None,
        )?;
        self.copy_all(n, k, &parent[2..formal], vars, "initial loop value")?;
        let loop_head = self.label_step(n, k, "LabelSet", Flow::Label)?;
        let switch = self.flow_step(
            n,
            "StreamSwitch",
            k.engine(),
            k.loop_switch(&name),
            &[Some(iter), m, Some(cond)],
            &[index],
            None,
        )?;
        let body_start = self.label_step(n, k, "LabelSet", Flow::Label)?;
        let vars_v = vars.to_vec();
        let bind = |_: &Self, bd: Binding| -> Option<u32> {
            match bd {
                Binding::Formal(0) => Some(iter),
                Binding::Formal(1) => Some(cond),
                Binding::Formal(j) => vars_v.get(j - 2).copied(),
                Binding::Parent(p) => parent.get(p).copied().flatten(),
            }
        };
        let res = self.inline_subgraph(n, body, &bind)?;
        if res.len() != 1 + carried + scans {
            return Err(lower_err(
                graph,
                n,
                format!(
                    "the body makes {} outputs, expected {}",
                    res.len(),
                    1 + carried + scans
                ),
            ));
        }
        for (j, &s) in scan_outs.iter().enumerate() {
            let v = res[1 + carried + j]
                .ok_or_else(|| lower_err(graph, n, format!("scan output {j} has no value")))?;
            self.flow_step(
                n,
                "ScanWrite",
                k.engine(),
                k.scan_write(&name, rows),
                &[Some(v), Some(iter)],
                &[s],
                None,
            )?;
        }
        let mut srcs = vec![res[0]];
        srcs.extend_from_slice(&res[1..1 + carried]);
        let mut dsts = vec![cond];
        dsts.extend_from_slice(vars);
        self.copy_all(n, k, &srcs, &dsts, "body output")?;
        self.flow_step(
            n,
            "LoopIncrement",
            k.engine(),
            k.increment(&name),
            &[Some(iter)],
            &[next],
            None,
        )?;
        self.flow_step(
            n,
            "MemcpyAsync",
            k.engine(),
            k.memcpy(&name),
            &[Some(next)],
            &[iter],
            None,
        )?;
        self.label_step(n, k, "LabelGoto", Flow::Goto { target: loop_head })?;
        let exit = self.label_step(n, k, "LabelSet", Flow::Label)?;
        if !scan_outs.is_empty() {
            self.flow_step(
                n,
                "ScanCheck",
                k.engine(),
                k.scan_check(&name, rows),
                &[Some(iter)],
                &[],
                None,
            )?;
        }
        self.steps[switch as usize].flow = Some(Flow::Switch {
            targets: vec![body_start, exit].into(),
        });
        self.flat.loops.push((loop_head, exit));
        Ok(())
    }

    /// GE's While: the cond subgraph, a StreamSwitch on its output, the body, the copies back.
    fn lower_while(
        &mut self,
        n: NodeId,
        k: &dyn FlowKernels,
        parent: &[Option<u32>],
    ) -> RuntimeResult<()> {
        let graph = self.graph();
        let op = self.op(n)?;
        let name = op.name().to_string();
        let cond_g = subgraph_named(graph, n, "cond", 0)
            .ok_or_else(|| lower_err(graph, n, "While has no cond subgraph"))?;
        let body_g = subgraph_named(graph, n, "body", 1)
            .ok_or_else(|| lower_err(graph, n, "While has no body subgraph"))?;
        let formal = formal_count(op, parent.len());
        if op.output_count() > formal {
            return Err(lower_err(
                graph,
                n,
                format!(
                    "While has {} outputs for {formal} loop variables",
                    op.output_count()
                ),
            ));
        }
        // The loop variables: the node's outputs, then planned copies for the ones it drops.
        let mut vars = Vec::with_capacity(formal);
        for i in 0..formal {
            if i < op.output_count() {
                vars.push(self.node_output_slot(n, i)?);
            } else {
                let src =
                    parent.get(i).copied().flatten().ok_or_else(|| {
                        lower_err(graph, n, format!("input {i} is not connected"))
                    })?;
                let s = &self.slots[src as usize];
                let (dt, sh) = (
                    s.dtype.unwrap_or(DType::Float),
                    s.shape.clone().unwrap_or_default(),
                );
                vars.push(self.temp_slot(format!("{name}:var{i}"), dt, sh)?);
            }
        }
        let index = self.temp_slot(format!("{name}:switch"), DType::Int32, Dims::new())?;
        self.copy_all(n, k, &parent[..formal], &vars, "initial loop value")?;
        let loop_head = self.label_step(n, k, "LabelSet", Flow::Label)?;
        let vars_v = vars.clone();
        let bind = |_: &Self, bd: Binding| -> Option<u32> {
            match bd {
                Binding::Formal(j) => vars_v.get(j).copied(),
                Binding::Parent(p) => parent.get(p).copied().flatten(),
            }
        };
        let c = self.inline_subgraph(n, cond_g, &bind)?;
        let c = c
            .first()
            .copied()
            .flatten()
            .ok_or_else(|| lower_err(graph, n, "the cond subgraph makes no output"))?;
        let switch = self.flow_step(
            n,
            "StreamSwitch",
            k.engine(),
            k.switch(&name, SwitchMode::GeTruthy),
            &[Some(c)],
            &[index],
            None,
        )?;
        let body_start = self.label_step(n, k, "LabelSet", Flow::Label)?;
        let res = self.inline_subgraph(n, body_g, &bind)?;
        if res.len() < formal {
            return Err(lower_err(
                graph,
                n,
                format!(
                    "the body makes {} outputs for {formal} loop variables",
                    res.len()
                ),
            ));
        }
        self.copy_all(n, k, &res[..formal], &vars, "body output")?;
        self.label_step(n, k, "LabelGoto", Flow::Goto { target: loop_head })?;
        let exit = self.label_step(n, k, "LabelSet", Flow::Label)?;
        self.steps[switch as usize].flow = Some(Flow::Switch {
            targets: vec![body_start, exit].into(),
        });
        self.flat.loops.push((loop_head, exit));
        Ok(())
    }
}

/// A condition (If, Loop's `cond`) or index (Case) of the wrong dtype or shape is an error of
/// the node, found when it is static.
fn check_predicate(cx: &Lowering<'_>, n: NodeId, slot: u32, mode: SwitchMode) -> RuntimeResult<()> {
    let s = &cx.slots[slot as usize];
    let (Some(dt), Some(shape)) = (s.dtype, s.shape.as_deref()) else {
        return Ok(());
    };
    let count: usize = shape.iter().product();
    let bad = match mode {
        SwitchMode::OnnxIf => {
            (dt != DType::Bool || count != 1).then_some("a bool tensor of one element")
        }
        SwitchMode::Case { .. } => (!matches!(dt, DType::Int32 | DType::Int64) || count != 1)
            .then_some("an int32 or int64 scalar"),
        SwitchMode::GeTruthy => None,
    };
    let what = match mode {
        SwitchMode::Case { .. } => "the branch_index",
        _ => "the condition",
    };
    match bad {
        Some(want) => Err(lower_err(
            cx.graph(),
            n,
            format!("{what} must be {want}, it is {dt}{shape:?}"),
        )),
        None => Ok(()),
    }
}

/// The unit of every step: the entry of the outermost region holding it, else itself.
pub(crate) fn units(flat: &FlatState, steps: usize) -> Vec<u32> {
    let mut unit: Vec<u32> = (0..steps as u32).collect();
    for &(start, end) in &flat.regions {
        for u in &mut unit[start as usize..end as usize] {
            *u = start;
        }
    }
    unit
}

/// Lifetimes across loops: the sequential order runs a loop body many times, so a planned
/// value read or written inside a loop and alive before or after it must live through the
/// whole loop (else a body step could reuse its bytes before the next iteration reads it).
/// Extends `last` and returns, per root slot, the earlier start (the loop's head) it needs.
pub(crate) fn loop_lifetimes(
    flat: &FlatState,
    steps: &[Step],
    slots: &[Slot],
    root_of: &[u32],
    planned: &[bool],
    last: &mut [u32],
) -> hashbrown::HashMap<u32, u32> {
    let mut first: Vec<u32> = slots
        .iter()
        .map(|s| s.producer.unwrap_or(u32::MAX))
        .collect();
    for &(s, w) in &flat.extra_writes {
        let r = root_of[s as usize] as usize;
        first[r] = first[r].min(w);
        last[r] = last[r].max(w);
    }
    let mut loops = flat.loops.clone();
    // Inner loops first: an outer loop then sees the extended lifetimes.
    loops.sort_by_key(|&(a, b)| b - a);
    let mut defs: hashbrown::HashMap<u32, u32> = hashbrown::HashMap::new();
    for (head, exit) in loops {
        let mut touched: Vec<u32> = Vec::new();
        for st in &steps[head as usize..=exit as usize] {
            for &s in st.inputs.iter().flatten().chain(st.outputs.iter()) {
                let r = root_of[s as usize];
                if planned[r as usize] {
                    touched.push(r);
                }
            }
        }
        touched.sort_unstable();
        touched.dedup();
        for r in touched {
            let ri = r as usize;
            let def = defs.get(&r).copied().unwrap_or(first[ri]);
            if def < head || last[ri] > exit {
                last[ri] = last[ri].max(exit);
                let d = def.min(head);
                first[ri] = d;
                defs.insert(r, d);
            }
        }
    }
    defs
}
