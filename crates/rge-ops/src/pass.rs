//! The inference pass: every node of the root graph in topological order, subgraphs when their
//! parent node is inferred. Each node's input descs are updated from its producers' output
//! descs (as GE's UpdateInputDesc), its prototype's checks run, its infer function sets the
//! outputs' data types and shapes, its format rule the outputs' formats. Small constant values
//! (Const, Shape, Size, Range, ConstantOfShape … and arithmetic on them) travel beside the
//! descs, so shape-computing subgraphs fold into known dims.

use std::collections::HashMap as StdHashMap;
use std::sync::Arc;

use hashbrown::HashMap;
use rge_ir::attr_names::PARENT_NODE_INDEX;
use rge_ir::{
    op_types, AttrMap, ComputeGraph, DataType, Format, GraphId, NodeId, Shape, TensorDesc,
};

use crate::ctx::{InferCtx, SubgraphInfer, TensorInfo, ValueKind, VALUE_KIND_ATTR};
use crate::error::{OpError, OpResult, OpsError};
use crate::proto::{FormatRule, InferImpl, OpProto};
use crate::registry::OpRegistry;
use crate::value::Value;

/// What the pass does with a node whose op has no prototype.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnknownOps {
    /// An error naming the node (default).
    #[default]
    Error,
    /// Leave its outputs unknown (rank unknown) and go on; listed in the report.
    Skip,
}

/// Options of [`infer_graph`].
#[derive(Debug, Clone, Default)]
pub struct InferOptions {
    /// The opset version per domain ("" = ai.onnx). A domain not listed is served by the
    /// newest registered version of each op.
    pub opsets: StdHashMap<String, i64>,
    /// Known values of graph inputs, by Data node name (e.g. a shape tensor fixed at compile
    /// time); they fold like constants.
    pub input_values: StdHashMap<String, Value>,
    pub unknown_ops: UnknownOps,
}

impl InferOptions {
    /// Options with the given opset imports, e.g. `[("", 17), ("ai.onnx.ml", 3)]`.
    pub fn with_opsets<'a>(opsets: impl IntoIterator<Item = (&'a str, i64)>) -> Self {
        InferOptions {
            opsets: opsets
                .into_iter()
                .map(|(d, v)| (crate::registry::normalize_domain(d).to_string(), v))
                .collect(),
            ..Default::default()
        }
    }
}

/// What a run of the pass did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InferReport {
    /// Nodes inferred (root and subgraphs, subgraph nodes once per inference of their body).
    pub nodes: usize,
    /// Outputs whose value became known (folded).
    pub values: usize,
    /// Nodes skipped for want of a prototype (with [`UnknownOps::Skip`]).
    pub skipped: Vec<String>,
}

/// Infers every tensor of `graph` (root and subgraphs).
pub fn infer_graph(
    graph: &mut ComputeGraph,
    registry: &OpRegistry,
    options: &InferOptions,
) -> Result<InferReport, OpsError> {
    // Opset imports: the options', else the graph's own (`_onnx_opset_<domain>`).
    let mut merged;
    let mut opts = options;
    if options.opsets.is_empty() {
        if let Some(attrs) = graph.graph_attrs(graph.root()) {
            merged = options.clone();
            for (k, v) in attrs.iter() {
                if let (Some(d), rge_ir::AttrValue::Int(v)) =
                    (k.strip_prefix(crate::OPSET_ATTR_PREFIX), v)
                {
                    merged
                        .opsets
                        .insert(crate::registry::normalize_domain(d).to_string(), *v);
                }
            }
            opts = &merged;
        }
    }
    // Gradient nodes become the ops that compute them.
    crate::gradient::expand_gradients(graph)?;
    // Old versions with a newer form become that form first (their nodes' own opset moves).
    crate::upgrade::upgrade_graph(graph, opts.opsets.get("").copied().unwrap_or(i64::MAX))?;
    let mut pass = Pass {
        reg: registry,
        opts,
        values: HashMap::new(),
        report: InferReport::default(),
        depth: 0,
        default_opset: opts.opsets.get("").copied().unwrap_or(i64::MAX),
        default_protos: HashMap::new(),
    };
    let root = graph.root();
    pass.run_graph(graph, root, &[], &[])?;
    Ok(pass.report)
}

/// The outputs of graph `g` (its NetOutput's inputs) as inferred: for checks and tools.
pub fn graph_outputs(graph: &ComputeGraph, g: GraphId) -> Vec<TensorInfo> {
    let Some(n) = graph.net_output(g) else {
        return Vec::new();
    };
    let op = graph.op(n).expect("live node");
    op.inputs().iter().map(|d| info_of_desc(d, None)).collect()
}

/// A desc's info (kind from its `_value_kind` attribute).
pub fn info_of_desc(d: &TensorDesc, value: Option<Arc<Value>>) -> TensorInfo {
    let kind = if d.attrs().is_empty() {
        ValueKind::Tensor
    } else {
        match d
            .attrs()
            .get_str(VALUE_KIND_ATTR)
            .ok()
            .flatten()
            .and_then(ValueKind::parse)
        {
            Some(k) => k,
            None if d.dtype() == DataType::Undefined => {
                // A frontend's non-tensor type (sequence, optional) not inferred yet.
                if let Some((kind, dt, dims)) = d
                    .attrs()
                    .get_as::<&[u8]>(crate::onnx_types::ONNX_TYPE_ATTR)
                    .ok()
                    .flatten()
                    .and_then(crate::onnx_types::decode_type_proto)
                {
                    return TensorInfo {
                        dtype: dt.unwrap_or_default(),
                        shape: dims.map_or_else(Shape::unknown_rank, Shape::new),
                        format: d.format(),
                        kind,
                        value,
                    };
                }
                ValueKind::Tensor
            }
            None => ValueKind::Tensor,
        }
    };
    TensorInfo {
        dtype: d.dtype(),
        shape: d.shape().clone(),
        format: d.format(),
        kind,
        value,
    }
}

fn write_desc(d: &mut TensorDesc, info: &TensorInfo) {
    if d.dtype() == info.dtype
        && d.shape() == &info.shape
        && d.format() == info.format
        && info.kind == ValueKind::Tensor
        && d.attrs().is_empty()
    {
        return;
    }
    d.set_dtype(info.dtype);
    if d.shape() != &info.shape {
        d.set_shape(info.shape.clone());
    }
    d.set_format(info.format);
    if info.kind != ValueKind::Tensor {
        d.attrs_mut().set(VALUE_KIND_ATTR, info.kind.name());
    } else if !d.attrs().is_empty() {
        d.attrs_mut().remove(VALUE_KIND_ATTR);
    }
}

/// Graph `g`'s nodes in a topological order (data and control links): the graph's shared
/// topology (`ComputeGraph::topology`); an error on a cycle.
pub fn topo_order(graph: &ComputeGraph, g: GraphId) -> Result<Vec<NodeId>, OpsError> {
    match graph.topology(g) {
        Ok(t) => Ok(t.ids.clone()),
        Err(e) => Err(OpsError::Graph {
            graph: graph.graph_name(g).unwrap_or("?").to_string(),
            message: match e {
                rge_ir::IrError::Cycle { nodes, .. } => {
                    let shown: Vec<&str> = nodes.iter().take(5).map(String::as_str).collect();
                    format!("has a cycle (through {})", shown.join(", "))
                }
                other => other.to_string(),
            },
        }),
    }
}

struct Pass<'r> {
    reg: &'r OpRegistry,
    opts: &'r InferOptions,
    values: HashMap<(NodeId, u32), Arc<Value>>,
    report: InferReport,
    depth: usize,
    /// The opset of the default domain (asked for on every node).
    default_opset: i64,
    /// Prototypes of the default domain by op type, looked up once per pass.
    default_protos: HashMap<String, Option<&'r OpProto>>,
}

fn node_err(graph: &ComputeGraph, n: NodeId, e: OpError) -> OpsError {
    let op = graph.op(n).expect("live");
    OpsError::Node {
        node: op.name().to_string(),
        op_type: op.op_type().to_string(),
        message: e.0,
    }
}

fn parent_index(op: &rge_ir::OpDesc) -> Option<usize> {
    if op.attrs().is_empty() {
        return None;
    }
    op.attrs()
        .get_int(PARENT_NODE_INDEX)
        .ok()
        .flatten()
        .and_then(|k| usize::try_from(k).ok())
}

impl<'r> Pass<'r> {
    fn opset(&self, domain: &str) -> i64 {
        if domain.is_empty() {
            return self.default_opset;
        }
        self.opts.opsets.get(domain).copied().unwrap_or(i64::MAX)
    }

    /// The prototype serving `op_type` (cached for the default domain).
    fn proto(&mut self, domain: &str, op_type: &str, opset: i64) -> Option<&'r OpProto> {
        let reg = self.reg;
        if !domain.is_empty() || opset != self.default_opset {
            return reg.lookup(domain, op_type, opset);
        }
        if let Some(p) = self.default_protos.get(op_type) {
            return *p;
        }
        let p = reg.lookup(domain, op_type, opset);
        self.default_protos.insert(op_type.to_string(), p);
        p
    }

    fn run_graph(
        &mut self,
        graph: &mut ComputeGraph,
        g: GraphId,
        parent_inputs: &[Option<TensorInfo>],
        bind: &[(usize, TensorInfo)],
    ) -> Result<(), OpsError> {
        self.depth += 1;
        if self.depth > 64 {
            return Err(OpsError::Graph {
                graph: graph.graph_name(g).unwrap_or("?").to_string(),
                message: "subgraphs nest more than 64 deep".into(),
            });
        }
        let order = topo_order(graph, g)?;
        let is_sub = g != graph.root();
        let mut inputs: Vec<Option<TensorInfo>> = Vec::new();
        let mut outputs: Vec<TensorInfo> = Vec::new();
        for n in order {
            self.report.nodes += 1;
            let r = self.infer_node(
                graph,
                n,
                is_sub,
                parent_inputs,
                bind,
                &mut inputs,
                &mut outputs,
            );
            if let Err(e) = r {
                self.depth -= 1;
                return Err(e);
            }
        }
        self.depth -= 1;
        Ok(())
    }

    /// Gathers node `n`'s inputs from its producers (or its own descs where unlinked).
    fn gather_inputs(&self, graph: &ComputeGraph, n: NodeId, inputs: &mut Vec<Option<TensorInfo>>) {
        inputs.clear();
        let node = graph.node(n).expect("live");
        for (i, peer) in node.input_peers().iter().enumerate() {
            let info = match peer {
                Some(p) if p.index >= 0 => {
                    let src = graph.op(p.node).expect("live peer");
                    src.output(p.index as usize).map(|d| {
                        let v = self.values.get(&(p.node, p.index as u32)).cloned();
                        info_of_desc(d, v)
                    })
                }
                _ => node
                    .op()
                    .input(i)
                    .filter(|d| d.dtype() != DataType::Undefined)
                    .map(|d| info_of_desc(d, None)),
            };
            inputs.push(info);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn infer_node(
        &mut self,
        graph: &mut ComputeGraph,
        n: NodeId,
        is_sub: bool,
        parent_inputs: &[Option<TensorInfo>],
        bind: &[(usize, TensorInfo)],
        inputs: &mut Vec<Option<TensorInfo>>,
        outputs: &mut Vec<TensorInfo>,
    ) -> Result<(), OpsError> {
        self.gather_inputs(graph, n, inputs);
        let op = graph.op(n).expect("live");
        let op_type = op.op_type();
        // IR ops the pass gives meaning to itself.
        if op_types::is_data(op_type) {
            return self.infer_data(graph, n, is_sub, parent_inputs, bind);
        }
        if op_type == op_types::CONST {
            return self.infer_const(graph, n);
        }
        if op_type == op_types::NET_OUTPUT {
            self.write_back(graph, n, inputs, &[]);
            let outs: Vec<TensorInfo> = inputs
                .iter()
                .map(|i| i.clone().unwrap_or_default())
                .collect();
            let op = graph.op_mut(n).expect("live");
            for (i, info) in outs.iter().enumerate() {
                if let Some(d) = op.output_mut(i) {
                    write_desc(d, info);
                }
            }
            return Ok(());
        }
        let domain = crate::registry::normalize_domain(op.domain());
        // The node's own record first: the ONNX import's upgrade moves an old node to a newer
        // version than the graph imports (docs/onnx.md, "Old opsets").
        let opset = op.opset().unwrap_or_else(|| self.opset(domain));
        let Some(proto) = self.proto(domain, op_type, opset) else {
            if self.opts.unknown_ops == UnknownOps::Skip {
                self.report.skipped.push(op.name().to_string());
                let count = op.output_count();
                outputs.clear();
                outputs.resize(
                    count,
                    TensorInfo::new(DataType::Undefined, Shape::unknown_rank()),
                );
                self.write_back(graph, n, inputs, outputs);
                return Ok(());
            }
            return Err(OpsError::UnknownOp {
                node: op.name().to_string(),
                domain: domain.to_string(),
                op_type: op_type.to_string(),
                opset: if opset == i64::MAX { 0 } else { opset },
            });
        };
        let out_count = op.output_count();
        outputs.clear();
        outputs.resize(out_count, TensorInfo::default());
        let has_subgraphs = !op.subgraph_instance_names().is_empty();
        let result = if has_subgraphs {
            self.run_with_subgraphs(graph, n, proto, opset, inputs, outputs)
        } else {
            let mut ctx = InferCtx {
                node: op.name(),
                op_type,
                opset,
                attrs: op.attrs(),
                proto,
                inputs,
                outputs,
                sub: None,
            };
            run_infer(proto, &mut ctx)
        };
        result.map_err(|e| node_err(graph, n, e))?;
        apply_format(proto, graph.op(n).expect("live").attrs(), inputs, outputs);
        self.write_back(graph, n, inputs, outputs);
        Ok(())
    }

    fn run_with_subgraphs(
        &mut self,
        graph: &mut ComputeGraph,
        n: NodeId,
        proto: &'r OpProto,
        opset: i64,
        inputs: &[Option<TensorInfo>],
        outputs: &mut Vec<TensorInfo>,
    ) -> OpResult<()> {
        let op = graph.op(n).expect("live");
        let attrs: AttrMap = op.attrs().clone();
        let name = op.name().to_string();
        let op_type = op.op_type().to_string();
        let instances: Vec<String> = op.subgraph_instance_names().to_vec();
        let slot_attrs: Vec<String> = attrs
            .get_as::<&[String]>(crate::SUBGRAPH_ATTRS_ATTR)
            .ok()
            .flatten()
            .map(<[String]>::to_vec)
            .unwrap_or_default();
        let slots: Vec<Option<GraphId>> = instances
            .iter()
            .map(|s| graph.subgraph_by_name(s))
            .collect();
        let mut sub = SubInfer {
            pass: self,
            graph,
            proto,
            instances,
            slot_attrs,
            slots,
            parent_inputs: inputs.to_vec(),
        };
        let mut ctx = InferCtx {
            node: &name,
            op_type: &op_type,
            opset,
            attrs: &attrs,
            proto,
            inputs,
            outputs,
            sub: Some(&mut sub),
        };
        run_infer(proto, &mut ctx)
    }

    fn infer_data(
        &mut self,
        graph: &mut ComputeGraph,
        n: NodeId,
        is_sub: bool,
        parent_inputs: &[Option<TensorInfo>],
        bind: &[(usize, TensorInfo)],
    ) -> Result<(), OpsError> {
        let op = graph.op(n).expect("live");
        let own = op
            .output(0)
            .filter(|d| d.dtype() != DataType::Undefined)
            .or_else(|| op.input(0))
            .map(|d| info_of_desc(d, None))
            .unwrap_or_default();
        let mut info = own;
        if is_sub {
            if let Some(k) = parent_index(op) {
                if let Some((_, b)) = bind.iter().find(|(i, _)| *i == k) {
                    info = b.clone();
                } else if let Some(Some(p)) = parent_inputs.get(k) {
                    info = p.clone();
                }
            }
        } else if let Some(v) = self.opts.input_values.get(op.name()) {
            if v.dtype == info.dtype && v.shape() == info.shape {
                info.value = Some(Arc::new(v.clone()));
            }
        }
        let op = graph.op_mut(n).expect("live");
        if let Some(d) = op.input_mut(0) {
            write_desc(d, &info);
        }
        if let Some(d) = op.output_mut(0) {
            write_desc(d, &info);
        }
        match info.value {
            Some(v) => {
                self.values.insert((n, 0), v);
                self.report.values += 1;
            }
            None => {
                self.values.remove(&(n, 0));
            }
        }
        Ok(())
    }

    fn infer_const(&mut self, graph: &mut ComputeGraph, n: NodeId) -> Result<(), OpsError> {
        let op = graph.op(n).expect("live");
        let t = op
            .attrs()
            .get_as::<&rge_ir::Tensor>("value")
            .map_err(|e| node_err(graph, n, e.into()))?;
        let info = match t {
            Some(t) => {
                let value = Value::from_tensor(t).map(Arc::new);
                TensorInfo {
                    dtype: t.desc.dtype(),
                    shape: t.desc.shape().clone(),
                    format: t.desc.format(),
                    kind: ValueKind::Tensor,
                    value,
                }
            }
            // A Const without a value keeps its declared output desc.
            None => op
                .output(0)
                .map(|d| info_of_desc(d, None))
                .unwrap_or_default(),
        };
        let op = graph.op_mut(n).expect("live");
        if let Some(d) = op.output_mut(0) {
            write_desc(d, &info);
        }
        if let Some(v) = info.value {
            self.values.insert((n, 0), v);
            self.report.values += 1;
        } else {
            self.values.remove(&(n, 0));
        }
        Ok(())
    }

    fn write_back(
        &mut self,
        graph: &mut ComputeGraph,
        n: NodeId,
        inputs: &[Option<TensorInfo>],
        outputs: &[TensorInfo],
    ) {
        let op = graph.op_mut(n).expect("live");
        for (i, info) in inputs.iter().enumerate() {
            if let (Some(info), Some(d)) = (info, op.input_mut(i)) {
                write_desc(d, info);
            }
        }
        for (i, info) in outputs.iter().enumerate() {
            if let Some(d) = op.output_mut(i) {
                write_desc(d, info);
            }
            match &info.value {
                Some(v) => {
                    self.values.insert((n, i as u32), v.clone());
                    self.report.values += 1;
                }
                // Only a re-inferred subgraph can hold a stale value.
                None if self.depth > 1 && !self.values.is_empty() => {
                    self.values.remove(&(n, i as u32));
                }
                None => {}
            }
        }
    }
}

fn run_infer(proto: &OpProto, ctx: &mut InferCtx<'_>) -> OpResult<()> {
    crate::verify::verify_generic(ctx)?;
    if let Some(v) = proto.verify {
        v(ctx)?;
    }
    match &proto.infer {
        InferImpl::Native(f) => f(ctx)?,
        InferImpl::Plugin(p) => p.infer(ctx)?,
    }
    // A shape computed from bad values (a negative size…) is the node's error, not the IR's.
    for (i, o) in ctx.outputs.iter().enumerate() {
        if o.shape.validate().is_err() {
            return Err(OpError(format!(
                "output {i} would have the invalid shape {}",
                o.shape
            )));
        }
    }
    Ok(())
}

/// The channel-first format of an ND tensor of `rank` (ONNX spatial ops are NCHW-style).
fn spatial_default(rank: usize) -> Format {
    match rank {
        4 => Format::NCHW,
        5 => Format::NCDHW,
        _ => Format::ND,
    }
}

fn apply_format(
    proto: &OpProto,
    attrs: &AttrMap,
    inputs: &[Option<TensorInfo>],
    outputs: &mut [TensorInfo],
) {
    match proto.format {
        FormatRule::Nd => outputs.iter_mut().for_each(|o| o.format = Format::ND),
        FormatRule::FollowInputs => {
            for o in outputs.iter_mut() {
                let rank = o.shape.rank();
                let mut f: Option<Format> = None;
                let mut agree = true;
                for i in inputs.iter().flatten() {
                    if i.format != Format::ND && i.shape.rank() == rank {
                        match f {
                            None => f = Some(i.format),
                            Some(x) if x != i.format => agree = false,
                            _ => {}
                        }
                    }
                }
                o.format = if agree {
                    f.unwrap_or(Format::ND)
                } else {
                    Format::ND
                };
            }
        }
        FormatRule::Spatial => {
            let data = inputs.first().and_then(|i| i.as_ref());
            for o in outputs.iter_mut() {
                let rank = o.shape.rank().unwrap_or(0);
                o.format = match data {
                    Some(d) if d.format != Format::ND && d.shape.rank() == Some(rank) => d.format,
                    _ => spatial_default(rank),
                };
            }
        }
        FormatRule::Transpose => {
            let data = inputs.first().and_then(|i| i.as_ref());
            let perm = attrs.get_list_int("perm").ok().flatten();
            let f = match (data.map(|d| d.format), perm) {
                (Some(f), Some(p)) if f == Format::NCHW && p == [0, 2, 3, 1] => Format::NHWC,
                (Some(f), Some(p)) if f == Format::NHWC && p == [0, 3, 1, 2] => Format::NCHW,
                (Some(f), Some(p)) if p.iter().enumerate().all(|(i, &x)| x == i as i64) => f,
                _ => Format::ND,
            };
            outputs.iter_mut().for_each(|o| o.format = f);
        }
    }
}

/// Subgraph inference for one control-flow node.
struct SubInfer<'p, 'r> {
    pass: &'p mut Pass<'r>,
    graph: &'p mut ComputeGraph,
    proto: &'r OpProto,
    instances: Vec<String>,
    slot_attrs: Vec<String>,
    slots: Vec<Option<GraphId>>,
    parent_inputs: Vec<Option<TensorInfo>>,
}

impl SubInfer<'_, '_> {
    fn slot(&self, slot: usize) -> OpResult<GraphId> {
        self.slots
            .get(slot)
            .copied()
            .flatten()
            .ok_or_else(|| OpError(format!("subgraph slot {slot} is not set")))
    }
}

impl SubgraphInfer for SubInfer<'_, '_> {
    fn slot_count(&self) -> usize {
        self.slots.len()
    }

    fn slot_named(&self, name: &str) -> Option<usize> {
        // The frontend's attribute name of the slot, else the IR name the prototype declares,
        // else an instance name.
        if !self.slot_attrs.is_empty() {
            if let Some(i) = self.slot_attrs.iter().position(|s| s == name) {
                return Some(i);
            }
        }
        self.proto
            .subgraphs
            .iter()
            .position(|(n, _)| n == name)
            .filter(|&i| i < self.slots.len())
            .or_else(|| self.instances.iter().position(|s| s == name))
    }

    fn declared_inputs(&self, slot: usize) -> OpResult<Vec<TensorInfo>> {
        let g = self.slot(slot)?;
        let mut data: Vec<(usize, TensorInfo)> = self
            .graph
            .nodes_of(g)
            .filter_map(|n| {
                let op = self.graph.op(n)?;
                if !op_types::is_data(op.op_type()) {
                    return None;
                }
                let k = parent_index(op)?;
                let d = op
                    .output(0)
                    .filter(|d| d.dtype() != DataType::Undefined)
                    .or(op.input(0))?;
                Some((k, info_of_desc(d, None)))
            })
            .collect();
        data.sort_by_key(|d| d.0);
        Ok(data.into_iter().map(|d| d.1).collect())
    }

    fn infer(&mut self, slot: usize, bind: &[(usize, TensorInfo)]) -> OpResult<Vec<TensorInfo>> {
        let g = self.slot(slot)?;
        self.pass
            .run_graph(self.graph, g, &self.parent_inputs, bind)
            .map_err(|e| OpError(format!("in subgraph `{}`: {e}", self.instances[slot])))?;
        let Some(out) = self.graph.net_output(g) else {
            return Ok(Vec::new());
        };
        let node = self.graph.node(out).expect("live");
        let op = node.op();
        let mut res: Vec<(usize, TensorInfo)> = Vec::with_capacity(op.input_count());
        for i in 0..op.input_count() {
            let d = op.input(i).expect("in range");
            let v = node
                .peer_of_input(i)
                .filter(|p| p.index >= 0)
                .and_then(|p| self.pass.values.get(&(p.node, p.index as u32)).cloned());
            let k = if d.attrs().is_empty() {
                None
            } else {
                d.attrs().get_int(PARENT_NODE_INDEX).ok().flatten()
            };
            res.push((k.map_or(i, |k| k as usize), info_of_desc(d, v)));
        }
        res.sort_by_key(|r| r.0);
        Ok(res.into_iter().map(|r| r.1).collect())
    }
}
