//! Constant folding: a compile pass that computes, on the host with the session's kernels,
//! every node whose data inputs are all constant, and replaces what the rest of the graph reads
//! of them by `Const` nodes. Results over a size limit stay uncomputed; a kernel error leaves
//! its node in place and is reported. Everything is computed before the graph is edited, and
//! the edits go to a copy that replaces the graph only when all of them succeeded, so a failed
//! fold leaves the graph as it was. Page: `docs/runtime.md` ("Constant folding").

use hashbrown::{HashMap, HashSet};
use std::panic::{catch_unwind, AssertUnwindSafe};

use rge_engine::{EngineError, EngineResult, GraphOptimizer, GraphRewriter};
use rge_ir::{
    op_types, ComputeGraph, GraphId, GraphPatch, NodeId, OpDesc, Outlet, Tensor as IrTensor,
    TensorDesc,
};
use rge_kernels::{
    run_owned, tensor_from_ir, tensor_to_ir, DType, KernelInit, KernelRegistry, Tensor, TensorData,
    Value,
};

use crate::error::{RuntimeError, RuntimeResult};
use crate::kernels::builtin_kernels;
use crate::lower::graph_opsets;

/// The default limit on one folded output tensor: 1 MiB.
pub const DEFAULT_FOLD_MAX_BYTES: usize = 1 << 20;

/// Ops whose results are random: never folded.
const RANDOM_OPS: &[&str] = &[
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Bernoulli",
    "Multinomial",
];

/// Ops that are never folded: control flow, state, communication, partition markers.
const NEVER_FOLD: &[&str] = &[
    "If",
    "Loop",
    "Scan",
    "SequenceMap",
    "NoOp",
    "Send",
    "Recv",
    "PlaceHolder",
    "End",
    "PhonyConcat",
    "PhonySplit",
];

/// The desc attribute of a frontend's non-tensor type (sequence, map, optional).
const ONNX_TYPE_ATTR: &str = "_onnx_type";

/// Constant-folding options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoldOptions {
    /// The largest folded output tensor, in bytes: a node with a larger output is not folded
    /// (it stays, and so do the nodes that read it).
    pub max_bytes: usize,
    /// False: [`fold_constants`] does nothing.
    pub enabled: bool,
}

impl Default for FoldOptions {
    fn default() -> Self {
        FoldOptions {
            max_bytes: DEFAULT_FOLD_MAX_BYTES,
            enabled: true,
        }
    }
}

/// What a fold did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FoldReport {
    /// Nodes computed and removed.
    pub folded_nodes: usize,
    /// `Const` nodes added for folded outputs the rest of the graph reads.
    pub consts_added: usize,
    /// `Const` nodes removed because only folded nodes read them.
    pub consts_removed: usize,
    /// Nodes not folded because an output would pass `max_bytes`.
    pub skipped_too_large: usize,
    /// Kernel errors (creation or compute) and graphs that could not be sorted; each names its
    /// node or graph. Not fatal: the node stays.
    pub errors: Vec<String>,
}

/// One node computed at compile time.
struct Folded {
    node: NodeId,
    outputs: Vec<Option<Tensor>>,
}

/// What folding one graph decided, before any edit.
struct GraphPlan {
    graph: GraphId,
    folded: Vec<Folded>,
    /// Const nodes folded nodes read (removed when nothing else reads them).
    const_inputs: Vec<NodeId>,
}

/// Folds constants in the root graph and every subgraph of `graph` (see the module docs).
/// Errors only when an edit fails (the graph is then unchanged); kernel errors are in the
/// report.
pub fn fold_constants(
    graph: &mut ComputeGraph,
    kernels: &KernelRegistry,
    options: &FoldOptions,
) -> RuntimeResult<FoldReport> {
    let (plans, mut report) = plan_all(graph, kernels, options);
    if plans.is_empty() {
        return Ok(report);
    }
    let mut work = graph.clone();
    for p in &plans {
        let (patch, edits) = plan_patch(&work, p)
            .map_err(|e| RuntimeError::Compile(format!("constant folding: {e}")))?;
        work.apply_patch(patch)
            .map_err(|e| RuntimeError::Compile(format!("constant folding: {e}")))?;
        report.add(&edits);
    }
    *graph = work;
    Ok(report)
}

/// What folding would do in the root graph and every subgraph, computed without an edit.
fn plan_all(
    graph: &ComputeGraph,
    kernels: &KernelRegistry,
    options: &FoldOptions,
) -> (Vec<GraphPlan>, FoldReport) {
    let mut report = FoldReport::default();
    if !options.enabled || !has_sources(graph) {
        return (Vec::new(), report);
    }
    let builtin = builtin_kernels();
    let planner = Planner {
        graph,
        kernels,
        builtin: &builtin,
        opsets: graph_opsets(graph),
        options,
    };
    let mut graphs = vec![graph.root()];
    graphs.extend_from_slice(graph.subgraphs());
    let mut plans = Vec::new();
    for g in graphs {
        if let Some(p) = planner.plan(g, &mut report) {
            if !p.folded.is_empty() {
                plans.push(p);
            }
        }
    }
    (plans, report)
}

/// Whether any node could start a fold: the first node folded (in graph order) reads only
/// const sources, and both it and they have no linked data input. So when every such node is
/// a graph input, nothing folds, and one sweep of the node table says so without the
/// planner's sort and walk.
fn has_sources(graph: &ComputeGraph) -> bool {
    graph.nodes_unordered().any(|(_, node)| {
        !op_types::is_data(node.op().op_type()) && node.input_peers().iter().all(Option::is_none)
    })
}

struct Planner<'a> {
    graph: &'a ComputeGraph,
    kernels: &'a KernelRegistry,
    builtin: &'a KernelRegistry,
    opsets: Vec<(String, i64)>,
    options: &'a FoldOptions,
}

/// The tensor of a const source node (`Const`/`Constant` with a `value` tensor, one output,
/// no inputs, no control inputs), or `None`.
fn const_source(graph: &ComputeGraph, n: NodeId) -> Option<&IrTensor> {
    let node = graph.node(n)?;
    let op = node.op();
    if op.output_count() != 1
        || !node.in_ctrl_peers().is_empty()
        || node.input_peers().iter().any(Option::is_some)
    {
        return None;
    }
    op.const_value()
}

fn is_tensor_desc(d: &TensorDesc) -> bool {
    !d.attrs().contains(rge_ops::VALUE_KIND_ATTR) && !d.attrs().contains(ONNX_TYPE_ATTR)
}

/// Bytes a tensor holds (strings: their bytes plus a 16-byte head each, as rge-ir stores them).
fn tensor_bytes(t: &Tensor) -> usize {
    match t.data() {
        TensorData::Bytes(b) => b.len(),
        TensorData::Strings(s) => s.iter().map(|x| x.len() + 17).sum(),
    }
}

/// The bytes an output desc promises when its type and shape are fully known (`usize::MAX`
/// when they do not fit a `usize`).
fn desc_bytes(d: &TensorDesc) -> Option<usize> {
    let dtype = DType::from_desc(d)?;
    let s = d.shape();
    if dtype.is_string() || s.is_unknown_rank() || !s.is_fully_known() {
        return None;
    }
    let dims: Option<Vec<usize>> = s.dims().iter().map(|&x| usize::try_from(x).ok()).collect();
    Some(
        rge_kernels::element_count(&dims?)
            .and_then(|n| n.checked_mul(dtype.bits() as usize))
            .map_or(usize::MAX, |bits| bits.div_ceil(8)),
    )
}

impl Planner<'_> {
    /// The op's opset: its own record, else the graph's import for its domain.
    fn opset(&self, op: &OpDesc, domain: &str) -> i64 {
        let norm = |d: &str| if d == "ai.onnx" { "" } else { d }.to_string();
        let want = norm(domain);
        op.opset().unwrap_or_else(|| {
            self.opsets
                .iter()
                .find(|(d, _)| norm(d) == want)
                .map_or(i64::MAX, |o| o.1)
        })
    }

    /// The registry with a kernel for the op: the session's, else the runtime's view ops.
    fn registry_for(&self, domain: &str, op_type: &str) -> Option<&KernelRegistry> {
        if self.kernels.contains(domain, op_type) {
            Some(self.kernels)
        } else if self.builtin.contains(domain, op_type) {
            Some(self.builtin)
        } else {
            None
        }
    }

    /// True when `n` may be folded, whatever its inputs are.
    fn candidate(&self, g: GraphId, n: NodeId) -> bool {
        let Some(node) = self.graph.node(n) else {
            return false;
        };
        let op = node.op();
        let t = op.op_type();
        if op_types::is_data(t)
            || op_types::is_const(t)
            || t == op_types::NET_OUTPUT
            || op_types::is_variable(t)
            || op_types::is_next_iteration(t)
            || op_types::CONST_PLACEHOLDER == t
            || RANDOM_OPS.contains(&t)
            || NEVER_FOLD.contains(&t)
        {
            return false;
        }
        // A `seed` marks a random op (Dropout's only matters when training; checked later).
        if op.attrs().contains("seed") && t != "Dropout" {
            return false;
        }
        if !node.in_ctrl_peers().is_empty() || !node.out_ctrl_peers().is_empty() {
            return false;
        }
        if !op.subgraph_instance_names().is_empty() || !self.graph.node_subgraphs(n).is_empty() {
            return false;
        }
        if self.graph.input_nodes(g).contains(&n) {
            return false;
        }
        op.inputs().iter().all(is_tensor_desc) && op.outputs().iter().all(is_tensor_desc)
    }

    /// True when a Dropout with these (constant) inputs runs in training mode.
    fn dropout_training(&self, op: &OpDesc, domain: &str, training_mode: Option<&Value>) -> bool {
        if self.opset(op, domain) < 7 {
            return op.attrs().get_int("is_test").ok().flatten().unwrap_or(0) == 0;
        }
        match training_mode {
            None => false,
            Some(v) => v
                .as_tensor()
                .and_then(|t| t.view().to_i64_vec().ok())
                .is_none_or(|v| v.iter().any(|&x| x != 0)),
        }
    }

    fn plan(&self, g: GraphId, report: &mut FoldReport) -> Option<GraphPlan> {
        let gname = self.graph.graph_name(g).unwrap_or("?");
        let order = match rge_ops::topo_order(self.graph, g) {
            Ok(o) => o,
            Err(e) => {
                report.errors.push(format!("graph `{gname}`: {e}"));
                return None;
            }
        };
        let outputs_listed: HashSet<(NodeId, u32)> =
            self.graph.output_nodes(g).iter().copied().collect();
        let mut values: HashMap<(NodeId, usize), Value> = HashMap::new();
        let mut loaded: HashSet<NodeId> = HashSet::new();
        let mut bad_consts: HashSet<NodeId> = HashSet::new();
        let mut folded_set: HashSet<NodeId> = HashSet::new();
        let mut plan = GraphPlan {
            graph: g,
            folded: Vec::new(),
            const_inputs: Vec::new(),
        };
        for n in order {
            let Some(node) = self.graph.node(n) else {
                continue;
            };
            // Every data input: absent, a folded output, or a const source.
            let mut keys: Vec<Option<(NodeId, usize)>> = Vec::new();
            let mut to_load: Vec<NodeId> = Vec::new();
            let mut ok = true;
            for p in node.input_peers() {
                let Some(a) = p else {
                    keys.push(None);
                    continue;
                };
                let Ok(idx) = usize::try_from(a.index) else {
                    ok = false;
                    break;
                };
                if folded_set.contains(&a.node) {
                    if !values.contains_key(&(a.node, idx)) {
                        ok = false;
                        break;
                    }
                } else if idx != 0 {
                    ok = false;
                    break;
                } else if !loaded.contains(&a.node) {
                    if bad_consts.contains(&a.node) || const_source(self.graph, a.node).is_none() {
                        bad_consts.insert(a.node);
                        ok = false;
                        break;
                    }
                    if !to_load.contains(&a.node) {
                        to_load.push(a.node);
                    }
                }
                keys.push(Some((a.node, idx)));
            }
            // The inputs first: on most graphs they rule a node out at its first input, before
            // the longer checks of `candidate`.
            if !ok || !self.candidate(g, n) {
                continue;
            }
            let op = node.op();
            let used = |i: usize| {
                !node.peers_of_output(i).is_empty() || outputs_listed.contains(&(n, i as u32))
            };
            // Skip before computing when the descs already say an output is too large.
            if op
                .outputs()
                .iter()
                .any(|d| desc_bytes(d).is_some_and(|b| b > self.options.max_bytes))
            {
                report.skipped_too_large += 1;
                continue;
            }
            let domain = op.domain();
            if self.registry_for(domain, op.op_type()).is_none() {
                continue;
            }
            // Convert the const inputs only now (weights can be large).
            for c in to_load {
                match const_source(self.graph, c).map(tensor_from_ir) {
                    Some(Ok(t)) => {
                        values.insert((c, 0), Value::Tensor(t));
                        loaded.insert(c);
                    }
                    _ => {
                        bad_consts.insert(c);
                        ok = false;
                    }
                }
            }
            if !ok {
                continue;
            }
            let ins: Vec<Option<&Value>> = keys
                .iter()
                .map(|k| k.and_then(|k| values.get(&k)))
                .collect();
            if op.op_type() == "Dropout"
                && self.dropout_training(op, domain, ins.get(2).copied().flatten())
            {
                continue;
            }
            let outs = match self.compute(op, domain, &ins) {
                Ok(Some(o)) => o,
                Ok(None) => continue,
                Err(e) => {
                    report
                        .errors
                        .push(format!("node `{}` ({}): {e}", op.name(), op.op_type()));
                    continue;
                }
            };
            let mut tensors: Vec<Option<Tensor>> = Vec::with_capacity(outs.len());
            let mut fold = true;
            let mut too_large = false;
            let mut missing = None;
            for (i, v) in outs.into_iter().enumerate() {
                match v {
                    None if used(i) => {
                        missing = Some(i);
                        fold = false;
                    }
                    None => tensors.push(None),
                    Some(Value::Tensor(t)) => {
                        if tensor_bytes(&t) > self.options.max_bytes {
                            too_large = true;
                            fold = false;
                        }
                        tensors.push(Some(t));
                    }
                    // Sequences, optionals: not Consts.
                    Some(_) => fold = false,
                }
            }
            if let Some(i) = missing {
                report.errors.push(format!(
                    "node `{}` ({}): output {i} was not produced",
                    op.name(),
                    op.op_type()
                ));
            }
            if too_large {
                report.skipped_too_large += 1;
            }
            if !fold {
                continue;
            }
            for (i, t) in tensors.iter().enumerate() {
                if let Some(t) = t {
                    values.insert((n, i), Value::Tensor(t.clone()));
                }
            }
            for (src, _) in keys.iter().flatten() {
                if loaded.contains(src) && !plan.const_inputs.contains(src) {
                    plan.const_inputs.push(*src);
                }
            }
            folded_set.insert(n);
            plan.folded.push(Folded {
                node: n,
                outputs: tensors,
            });
        }
        Some(plan)
    }

    /// Builds and runs the kernel of `op`; `Ok(None)`: no kernel for it.
    fn compute(
        &self,
        op: &OpDesc,
        domain: &str,
        ins: &[Option<&Value>],
    ) -> Result<Option<Vec<Option<Value>>>, String> {
        let t = op.op_type();
        let Some(registry) = self.registry_for(domain, t) else {
            return Ok(None);
        };
        let input_types: Vec<Option<DType>> = (0..op.input_count())
            .map(|i| op.input(i).and_then(DType::from_desc))
            .collect();
        let output_types: Vec<Option<DType>> = (0..op.output_count())
            .map(|i| op.output(i).and_then(DType::from_desc))
            .collect();
        let init = KernelInit {
            node_name: op.name(),
            op_type: t,
            domain,
            opset: self.opset(op, domain),
            attrs: op.attrs(),
            input_types: &input_types,
            output_types: &output_types,
            subgraph_attrs: &[],
            constants: &[],
        };
        let run = || -> Result<Vec<Option<Value>>, String> {
            let kernel = registry.create(&init).map_err(|e| e.to_string())?;
            run_owned(kernel.as_ref(), ins, op.output_count(), 1, None).map_err(|e| e.to_string())
        };
        match catch_unwind(AssertUnwindSafe(run)) {
            Ok(r) => r.map(Some),
            Err(_) => Err("the kernel panicked".into()),
        }
    }
}

/// The Const op standing for output `i` of `folded` (named `name`).
fn const_op(graph: &ComputeGraph, folded: NodeId, i: usize, name: &str, t: &Tensor) -> OpDesc {
    let value = tensor_to_ir(t);
    let mut desc = graph
        .op(folded)
        .and_then(|o| o.output(i))
        .cloned()
        .unwrap_or_default();
    desc.set_dtype(value.desc.dtype());
    desc.set_shape(value.desc.shape().clone());
    desc.set_format(value.desc.format());
    if desc.origin_shape_initialized() {
        desc.set_origin_shape(value.desc.shape().clone());
        desc.set_origin_dtype(value.desc.dtype());
        desc.set_origin_format(value.desc.format());
    }
    desc.attrs_mut().remove(rge_ops::VALUE_KIND_ATTR);
    let mut op = OpDesc::new(name, op_types::CONST);
    // A new op cannot already have an output, so adding one cannot fail.
    let _ = op.add_output("", desc);
    op.attrs_mut().set("value", value);
    op
}

/// A name not used in graph `g` nor in `taken`, from `base`.
fn unique_name(graph: &ComputeGraph, g: GraphId, base: String, taken: &HashSet<String>) -> String {
    let free = |s: &str| graph.find_node(g, s).is_none() && !taken.contains(s);
    if free(&base) {
        return base;
    }
    (1..)
        .map(|k| format!("{base}_{k}"))
        .find(|s| free(s))
        .unwrap_or(base)
}

/// The patch that carries out one graph's plan: the folded nodes and the constants only they
/// read go; a `Const` takes the place of every folded output something else still reads.
fn plan_patch(graph: &ComputeGraph, plan: &GraphPlan) -> Result<(GraphPatch, FoldReport), String> {
    let g = plan.graph;
    let folded: HashSet<NodeId> = plan.folded.iter().map(|f| f.node).collect();
    let outputs = graph.output_nodes(g);
    let mut taken: HashSet<String> = HashSet::new();
    let mut patch = GraphPatch::in_graph(g);
    let mut edits = FoldReport::default();
    for f in &plan.folded {
        patch.remove(f.node);
        edits.folded_nodes += 1;
        for (i, t) in f.outputs.iter().enumerate() {
            let read_outside = graph.node(f.node).is_some_and(|n| {
                n.peers_of_output(i)
                    .iter()
                    .any(|p| !folded.contains(&p.node))
            });
            let listed = outputs.contains(&(f.node, i as u32));
            if !read_outside && !listed {
                continue;
            }
            let Some(t) = t else {
                return Err(format!(
                    "output {i} of `{}` is used but was not computed",
                    graph.name_of(f.node)
                ));
            };
            let base = format!("{}_folded_{i}", graph.name_of(f.node));
            let name = unique_name(graph, g, base, &taken);
            taken.insert(name.clone());
            let mut op = const_op(graph, f.node, i, &name, t);
            op.attrs_mut().set(FOLDED_ATTR, true);
            let k = patch.add_node(op);
            patch.shunt(f.node, i, Outlet::new_node(k, 0));
            edits.consts_added += 1;
        }
    }
    for &c in &plan.const_inputs {
        let Some(node) = graph.node(c) else { continue };
        let only_folded = (0..node.out_data_count()).all(|o| {
            node.peers_of_output(o)
                .iter()
                .all(|p| folded.contains(&p.node))
        });
        let listed = graph.input_nodes(g).contains(&c) || outputs.iter().any(|o| o.0 == c);
        if only_folded && !listed && node.out_ctrl_peers().is_empty() {
            patch.remove(c);
            edits.consts_removed += 1;
        }
    }
    // Folded nodes and the constants removed have no control edges (the planner skips them).
    patch.drop_control();
    Ok((patch, edits))
}

/// The attribute marking the constants folding made (so inference knows to run again).
pub const FOLDED_ATTR: &str = "_rge_folded";

/// Folds constants through `rewriter` (the host engine's original-graph optimization): the
/// same computation as [`fold_constants`], carried out by checked patches.
pub fn fold_with(
    rewriter: &mut GraphRewriter<'_>,
    kernels: &KernelRegistry,
    options: &FoldOptions,
) -> RuntimeResult<FoldReport> {
    let (plans, mut report) = plan_all(rewriter.graph(), kernels, options);
    for p in &plans {
        let (patch, edits) = plan_patch(rewriter.graph(), p)
            .map_err(|e| RuntimeError::Compile(format!("constant folding: {e}")))?;
        rewriter
            .apply(patch)
            .map_err(|e| RuntimeError::Compile(format!("constant folding: {e}")))?;
        report.add(&edits);
    }
    Ok(report)
}

impl FoldReport {
    fn add(&mut self, edits: &FoldReport) {
        self.folded_nodes += edits.folded_nodes;
        self.consts_added += edits.consts_added;
        self.consts_removed += edits.consts_removed;
    }
}

/// The host engine's graph optimizer: constant folding before placement (engines.md §4.5.9:
/// the host CPU engine folds constants at compile time).
pub struct HostFold {
    pub kernels: KernelRegistry,
    pub options: FoldOptions,
}

impl GraphOptimizer for HostFold {
    fn optimize_original_graph(&self, graph: &mut GraphRewriter<'_>) -> EngineResult<()> {
        fold_with(graph, &self.kernels, &self.options)
            .map(|_| ())
            .map_err(|e| EngineError::engine(graph.engine(), e.to_string()))
    }
}
