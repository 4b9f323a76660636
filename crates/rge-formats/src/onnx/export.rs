//! rge `ComputeGraph` → ONNX `ModelProto`: Data → graph inputs, Const → initializers,
//! NetOutput → graph outputs, other nodes → `NodeProto`s in graph order, subgraphs → GRAPH
//! attributes with captured values written as references to the outer value, output descs →
//! `value_info`. Control edges are not written (ONNX has none).

use std::collections::HashMap;

use rge_ir::attr_names::{DATA_INDEX, PARENT_NODE_INDEX};
use rge_ir::{op_types, AttrValue, ComputeGraph, GraphId, NamedAttrs, NodeId, OutAnchor, Tensor};

use super::attrs::attr_to_proto;
use super::error::{OnnxError, Result};
use super::names::{self, Fresh};
use super::tensor::tensor_to_proto;
use super::types::type_from_desc;
use super::OnnxModel;
use crate::onnx_proto::attribute_proto::AttributeType;
use crate::onnx_proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, StringStringEntryProto,
    ValueInfoProto,
};

/// The opset a graph without `_onnx_opset_*` attributes is exported at.
const DEFAULT_OPSET: i64 = 17;

/// The operator sets recorded on the root graph (`_onnx_opset_<domain>`), then those of op
/// domains the graph does not record (from the ops' `opset`, the highest where they differ),
/// else the default.
pub(crate) fn graph_opsets(g: &ComputeGraph) -> Vec<(String, i64)> {
    let mut v: Vec<(String, i64)> = g
        .graph_attrs(g.root())
        .into_iter()
        .flat_map(|a| a.iter())
        .filter_map(|(k, v)| match (k.strip_prefix(names::OPSET_PREFIX), v) {
            (Some(d), AttrValue::Int(x)) => Some((d.to_string(), *x)),
            _ => None,
        })
        .collect();
    let recorded = |d: &str, v: &[(String, i64)]| {
        v.iter()
            .any(|(x, _)| x == d || (d.is_empty() && x == "ai.onnx"))
    };
    let mut extra: Vec<(String, i64)> = Vec::new();
    let graphs = std::iter::once(g.root()).chain(g.subgraphs().iter().copied());
    for op in graphs.flat_map(|s| g.nodes_of(s)).filter_map(|n| g.op(n)) {
        let Some(ver) = op.opset() else { continue };
        if recorded(op.domain(), &v) {
            continue;
        }
        match extra.iter_mut().find(|(d, _)| d == op.domain()) {
            Some(e) => e.1 = e.1.max(ver),
            None => extra.push((op.domain().to_string(), ver)),
        }
    }
    v.extend(extra);
    if v.is_empty() {
        v.push((String::new(), DEFAULT_OPSET));
    }
    v
}

/// The IR version that goes with the default-domain opset (onnx's release table).
pub(crate) fn ir_version_for(opsets: &[(String, i64)]) -> i64 {
    let v = opsets
        .iter()
        .filter(|(d, _)| d.is_empty() || d == "ai.onnx")
        .map(|o| o.1)
        .max()
        .unwrap_or(DEFAULT_OPSET);
    match v {
        ..=8 => 3,
        9 => 4,
        10 => 5,
        11 => 6,
        12..=14 => 7,
        15..=18 => 8,
        19..=20 => 9,
        21..=22 => 10,
        23 => 11,
        24 => 12,
        25..=27 => 13,
        _ => 14,
    }
}

fn entries(attrs: Option<&rge_ir::AttrMap>) -> Vec<StringStringEntryProto> {
    let Some(Ok(Some(na))) = attrs.map(|a| a.get_as::<&NamedAttrs>(names::METADATA_PROPS)) else {
        return Vec::new();
    };
    na.attrs
        .iter()
        .filter_map(|(k, v)| match v {
            AttrValue::String(s) => Some(StringStringEntryProto {
                key: k.to_string(),
                value: s.clone(),
            }),
            _ => None,
        })
        .collect()
}

fn str_attr<'a>(attrs: Option<&'a rge_ir::AttrMap>, key: &str) -> &'a str {
    attrs
        .and_then(|a| a.get_str(key).ok().flatten())
        .unwrap_or_default()
}

/// The `ModelProto` of a bare graph, at the versions [`OnnxModel::new`] picks.
pub(crate) fn export_graph(g: &ComputeGraph) -> Result<ModelProto> {
    let opsets = graph_opsets(g);
    let ir_version = ir_version_for(&opsets);
    let graph = Exporter::new(g, ir_version).graph_proto(g.root())?;
    Ok(ModelProto {
        ir_version,
        opset_import: opsets
            .into_iter()
            .map(|(domain, version)| OperatorSetIdProto { domain, version })
            .collect(),
        producer_name: "rge".into(),
        producer_version: env!("CARGO_PKG_VERSION").into(),
        graph: Some(graph),
        ..Default::default()
    })
}

/// The `ModelProto` of an [`OnnxModel`].
pub(crate) fn export_model(m: &OnnxModel) -> Result<ModelProto> {
    let mut ex = Exporter::new(&m.graph, m.ir_version);
    let graph = ex.graph_proto(m.graph.root())?;
    Ok(ModelProto {
        ir_version: m.ir_version,
        opset_import: m
            .opset_imports
            .iter()
            .map(|(d, v)| OperatorSetIdProto {
                domain: d.clone(),
                version: *v,
            })
            .collect(),
        producer_name: m.producer_name.clone(),
        producer_version: m.producer_version.clone(),
        domain: m.domain.clone(),
        model_version: m.model_version,
        doc_string: m.doc_string.clone(),
        graph: Some(graph),
        metadata_props: m
            .metadata_props
            .iter()
            .map(|(k, v)| StringStringEntryProto {
                key: k.clone(),
                value: v.clone(),
            })
            .collect(),
        functions: m.functions.clone(),
        ..Default::default()
    })
}

/// What a node is in ONNX terms. Ops of another domain (`OpDesc::domain`) are always nodes.
#[derive(PartialEq)]
enum Role {
    Input,
    Initializer,
    Outputs,
    Node,
}

fn role(op: &rge_ir::OpDesc) -> Role {
    let t = op.op_type();
    if !op.domain().is_empty() {
        Role::Node
    } else if op_types::is_data(t) {
        Role::Input
    } else if t == op_types::CONST {
        Role::Initializer
    } else if t == op_types::NET_OUTPUT {
        Role::Outputs
    } else {
        Role::Node
    }
}

struct Exporter<'a> {
    g: &'a ComputeGraph,
    ir_version: i64,
    /// ONNX value name of each named output.
    names: HashMap<(NodeId, usize), String>,
}

fn err(at: impl Into<String>, msg: impl Into<String>) -> OnnxError {
    OnnxError::Export {
        at: at.into(),
        msg: msg.into(),
    }
}

impl<'a> Exporter<'a> {
    /// Names every output that needs one: its `_onnx_name` where that is still free (first come
    /// in graph order, root first), else a fresh name from it, the node name (Data, Const) or
    /// `<node>_out<i>`.
    fn new(g: &'a ComputeGraph, ir_version: i64) -> Self {
        let mut ex = Exporter {
            g,
            ir_version,
            names: HashMap::new(),
        };
        let graphs: Vec<GraphId> = std::iter::once(g.root())
            .chain(g.subgraphs().iter().copied())
            .collect();
        let mut used = Fresh::default();
        let outputs = |n: NodeId| g.op(n).map_or(0, |o| o.output_count());
        let plain: Vec<(GraphId, Vec<NodeId>)> = graphs
            .iter()
            .map(|&gid| {
                (
                    gid,
                    g.nodes_of(gid).filter(|&n| !ex.is_capture(n)).collect(),
                )
            })
            .collect();
        for (_, nodes) in &plain {
            for &n in nodes {
                for i in 0..outputs(n) {
                    if let Some(name) = ex.raw_name(n, i) {
                        if used.claim(name) {
                            ex.names.insert((n, i), name.to_string());
                        }
                    }
                }
            }
        }
        for (gid, nodes) in &plain {
            let listed = g.output_nodes(*gid);
            for &n in nodes {
                let node = g.node(n).expect("live");
                let io = matches!(role(node.op()), Role::Input | Role::Initializer);
                for i in 0..outputs(n) {
                    if ex.names.contains_key(&(n, i)) {
                        continue;
                    }
                    let needed = io
                        || ex.raw_name(n, i).is_some()
                        || !node.peers_of_output(i).is_empty()
                        || listed.contains(&(n, i as u32));
                    if !needed {
                        continue;
                    }
                    let base = match ex.raw_name(n, i) {
                        Some(s) => s.to_string(),
                        None if io => node.name().to_string(),
                        None => format!("{}_out{i}", node.name()),
                    };
                    ex.names.insert((n, i), used.take(&base));
                }
            }
        }
        ex
    }

    fn raw_name(&self, n: NodeId, i: usize) -> Option<&'a str> {
        let d = self.g.op(n)?.output(i)?;
        d.attrs().get_str(names::ONNX_NAME).ok().flatten()
    }

    /// A body Data node that stands for an outer value: marked `_onnx_capture`, or a Data of an
    /// If body bound to a parent input (GE binds If inputs 1… to its bodies; ONNX If bodies
    /// have no inputs).
    fn is_capture(&self, n: NodeId) -> bool {
        let Some(node) = self.g.node(n) else {
            return false;
        };
        if role(node.op()) != Role::Input || node.graph() == self.g.root() {
            return false;
        }
        let attrs = node.op().attrs();
        attrs.get_bool(names::CAPTURE) == Ok(Some(true))
            || attrs.contains(PARENT_NODE_INDEX)
                && self
                    .g
                    .parent_node(node.graph())
                    .and_then(|p| self.g.op(p))
                    .is_some_and(|p| p.op_type() == "If" && p.domain().is_empty())
    }

    /// The ONNX name of the value at `a`, following captures out to the graph that defines it.
    fn value_of(&self, mut a: OutAnchor) -> Result<String> {
        for _ in 0..=self.g.subgraphs().len() + 1 {
            if !self.is_capture(a.node) {
                return self
                    .names
                    .get(&(a.node, a.index as usize))
                    .cloned()
                    .ok_or_else(|| {
                        err(
                            self.g.name_of(a.node),
                            format!("output {} has no name", a.index),
                        )
                    });
            }
            let at = self.g.name_of(a.node).to_string();
            let op = self.g.op(a.node).expect("live");
            let k = op
                .attrs()
                .get_int(PARENT_NODE_INDEX)
                .ok()
                .flatten()
                .ok_or_else(|| err(&at, "captured value without `_parent_node_index`"))?;
            let parent = self
                .g
                .graph_of(a.node)
                .and_then(|s| self.g.parent_node(s))
                .ok_or_else(|| err(&at, "captured value in a graph without a parent node"))?;
            a = usize::try_from(k)
                .ok()
                .and_then(|k| self.g.node(parent)?.peer_of_input(k))
                .ok_or_else(|| {
                    err(
                        &at,
                        format!(
                            "parent input {k} of `{}` is not linked",
                            self.g.name_of(parent)
                        ),
                    )
                })?;
        }
        Err(err(self.g.name_of(a.node), "captures nest too deep"))
    }

    fn value_info(&self, name: String, d: Option<&rge_ir::TensorDesc>) -> ValueInfoProto {
        ValueInfoProto {
            name,
            r#type: d.and_then(type_from_desc),
            ..Default::default()
        }
    }

    fn graph_proto(&mut self, gid: GraphId) -> Result<GraphProto> {
        let g = self.g;
        let attrs = g.graph_attrs(gid);
        let gname = g.graph_name(gid).unwrap_or_default();
        let name = match attrs.and_then(|a| a.get_str(names::GRAPH_NAME).ok().flatten()) {
            Some(s) => s.to_string(),
            None => gname.to_string(),
        };
        let mut gp = GraphProto {
            name,
            doc_string: str_attr(attrs, names::DOC_STRING).to_string(),
            metadata_props: entries(attrs),
            ..Default::default()
        };
        let mut data: Vec<(i64, NodeId)> = Vec::new();
        let mut defaults = Vec::new();
        let mut net_output = None;
        for n in g.nodes_of(gid) {
            let node = g.node(n).expect("live");
            let op = node.op();
            let r = role(op);
            if r == Role::Input {
                if !self.is_capture(n) {
                    let idx = op
                        .attrs()
                        .get_int(DATA_INDEX)
                        .ok()
                        .flatten()
                        .unwrap_or(i64::MAX);
                    data.push((idx, n));
                }
            } else if r == Role::Initializer {
                let at = format!("graph `{gname}` Const `{}`", op.name());
                let tensor: &Tensor = op
                    .attrs()
                    .get_as("value")
                    .map_err(|e| err(&at, e.to_string()))?
                    .ok_or_else(|| err(&at, "no `value` tensor"))?;
                let vname = self.value_of(n.out(0))?;
                let tp = tensor_to_proto(tensor, &vname).map_err(|m| err(&at, m))?;
                if self.ir_version < 4 || op.attrs().get_bool(names::GRAPH_INPUT) == Ok(Some(true))
                {
                    defaults.push(self.value_info(vname, Some(&tensor.desc)));
                }
                gp.initializer.push(tp);
            } else if r == Role::Outputs {
                net_output.get_or_insert(n);
            } else {
                gp.node.push(self.node_proto(n)?);
                for i in 0..op.output_count() {
                    if let (Some(name), Some(tp)) = (
                        self.names.get(&(n, i)),
                        op.output(i).and_then(type_from_desc),
                    ) {
                        gp.value_info.push(ValueInfoProto {
                            name: name.clone(),
                            r#type: Some(tp),
                            ..Default::default()
                        });
                    }
                }
            }
        }
        data.sort_by_key(|d| d.0);
        for (_, n) in data {
            let d = g.op(n).and_then(|o| o.output(0));
            gp.input.push(self.value_info(self.value_of(n.out(0))?, d));
        }
        gp.input.extend(defaults);
        match net_output {
            Some(no) => {
                let node = g.node(no).expect("live");
                for (j, peer) in node.input_peers().iter().enumerate() {
                    let src = peer.filter(|p| !p.is_control()).ok_or_else(|| {
                        err(
                            format!("graph `{gname}` NetOutput"),
                            format!("input {j} is not linked"),
                        )
                    })?;
                    gp.output
                        .push(self.value_info(self.value_of(src)?, node.op().input(j)));
                }
            }
            None => {
                for &(n, i) in g.output_nodes(gid) {
                    let d = g.op(n).and_then(|o| o.output(i as usize));
                    gp.output
                        .push(self.value_info(self.value_of(n.out(i as usize))?, d));
                }
            }
        }
        Ok(gp)
    }

    fn node_proto(&mut self, n: NodeId) -> Result<NodeProto> {
        let g = self.g;
        let node = g.node(n).expect("live");
        let op = node.op();
        let at = format!("node `{}`", op.name());
        let attrs = op.attrs();
        let formal = match attrs.get_int(names::FORMAL_INPUTS) {
            Ok(Some(k)) => usize::try_from(k).unwrap_or(0),
            _ if op.op_type() == "If" && op.domain().is_empty() => 1,
            _ => op.input_count(),
        }
        .min(op.input_count());
        let mut np = NodeProto {
            name: op.name().to_string(),
            op_type: op.op_type().to_string(),
            domain: op.domain().to_string(),
            overload: str_attr(Some(attrs), names::OVERLOAD).to_string(),
            doc_string: str_attr(Some(attrs), names::DOC_STRING).to_string(),
            metadata_props: entries(Some(attrs)),
            ..Default::default()
        };
        for k in 0..formal {
            np.input.push(match node.peer_of_input(k) {
                Some(p) if !p.is_control() => self.value_of(p)?,
                _ => String::new(),
            });
        }
        for i in 0..op.output_count() {
            np.output
                .push(self.names.get(&(n, i)).cloned().unwrap_or_default());
        }
        for (k, v) in attrs.iter() {
            if k.starts_with(names::RESERVED_PREFIX) {
                continue;
            }
            if let Some(a) =
                attr_to_proto(k, v).map_err(|m| err(format!("{at} attribute `{k}`"), m))?
            {
                np.attribute.push(a);
            }
        }
        let strings = |k: &str| -> Vec<String> {
            match attrs.get_as::<&[String]>(k) {
                Ok(Some(s)) => s.to_vec(),
                _ => Vec::new(),
            }
        };
        let (slots, lists) = (
            strings(names::SUBGRAPH_ATTRS),
            strings(names::SUBGRAPH_LISTS),
        );
        let list_attr = |name: &str| AttributeProto {
            name: name.to_string(),
            r#type: AttributeType::Graphs as i32,
            ..Default::default()
        };
        for (i, inst) in op.subgraph_instance_names().iter().enumerate() {
            let Some(sub) = g.subgraph_by_name(inst) else {
                continue;
            };
            let slot = slots
                .get(i)
                .cloned()
                .unwrap_or_else(|| match (op.op_type(), i) {
                    ("If", 0) => "then_branch".into(),
                    ("If", 1) => "else_branch".into(),
                    ("Loop" | "Scan", 0) => "body".into(),
                    _ => format!("subgraph{i}"),
                });
            let body = self.graph_proto(sub)?;
            if lists.contains(&slot) {
                match np.attribute.iter_mut().find(|a| a.name == slot) {
                    Some(a) => a.graphs.push(body),
                    None => {
                        let mut a = list_attr(&slot);
                        a.graphs.push(body);
                        np.attribute.push(a);
                    }
                }
            } else {
                np.attribute.push(AttributeProto {
                    name: slot,
                    r#type: AttributeType::Graph as i32,
                    g: Some(body),
                    ..Default::default()
                });
            }
        }
        for l in &lists {
            if !np.attribute.iter().any(|a| &a.name == l) {
                np.attribute.push(list_attr(l));
            }
        }
        Ok(np)
    }
}
