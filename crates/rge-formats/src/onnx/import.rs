//! ONNX `ModelProto` → rge `ComputeGraph`. The rules are in docs/onnx.md; in short, per graph:
//! graph inputs (not initializers) → Data, initializers → Const, nodes → ops (in file order),
//! graph outputs → one NetOutput; GRAPH attributes → subgraphs whose outer-scope captures become
//! extra inputs of the parent node. Names are resolved as a sequential reading of the file gives
//! (the latest producer before the consumer wins); a name produced only later is a forward
//! reference, allowed, after which the graph is checked for cycles and put in topological order.

use hashbrown::{HashMap, HashSet};

use rge_ir::attr_names::{DATA_INDEX, PARENT_NODE_INDEX};
use rge_ir::{op_types, ComputeGraph, GraphId, NamedAttrs, NodeId, OpDesc, OutAnchor, TensorDesc};
use smallvec::SmallVec;

use super::attrs::{attr_from_proto, sparse_from_proto, Imported};
use super::error::{OnnxError, Result};
use super::external::External;
use super::names::{self, Fresh};
use super::tensor::{tensor_from_proto, At};
use super::types::desc_from_type;
use crate::onnx_proto::{GraphProto, ModelProto, NodeProto, StringStringEntryProto};

/// One graph being imported: its values by ONNX name, each with the producers in file order
/// (position -1 for graph inputs, initializers and captures; else the node's index).
pub(super) struct Frame<'p> {
    pub(super) graph: GraphId,
    pub(super) values: HashMap<&'p str, SmallVec<[(i64, OutAnchor); 1]>>,
    /// Set when some name was resolved to a later producer.
    pub(super) forward: bool,
    /// The first node that is not a Data node: capture Data nodes go before it.
    pub(super) insert_before: Option<NodeId>,
    /// Data nodes so far (the next `index`).
    pub(super) data_count: usize,
}

/// A node whose bodies are being imported.
pub(super) struct Parent {
    pub(super) node: NodeId,
    pub(super) pos: i64,
    /// Outer value name → the parent input it was appended as.
    pub(super) captures: HashMap<String, usize>,
}

/// How a body graph binds to its parent node.
struct Body {
    parent: NodeId,
    op_type: String,
    default_domain: bool,
    formal_inputs: usize,
    outputs: usize,
}

pub(super) struct Importer<'p> {
    pub(super) file: String,
    pub(super) ext: External,
    pub(super) g: ComputeGraph,
    /// Every value name in the file plus those handed out: fresh value names avoid them.
    value_names: Fresh,
    /// Value names given to outputs so far (`_onnx_name`s are unique over the model).
    assigned: HashSet<String>,
    graph_names: Fresh,
    pub(super) frames: Vec<Frame<'p>>,
    pub(super) parents: Vec<Parent>,
    default_opset: i64,
    /// The model's opset imports by domain ("" for the default domain, "ai.onnx" folded into
    /// it); the highest version where a domain is imported twice.
    opsets: HashMap<String, i64>,
    /// Below IR 4 every initializer is a graph input, so none is marked as a default.
    mark_defaults: bool,
    pub(super) warnings: Vec<String>,
}

fn entries_attr(props: &[StringStringEntryProto]) -> Option<NamedAttrs> {
    if props.is_empty() {
        return None;
    }
    let mut na = NamedAttrs::new("");
    for p in props {
        na.attrs.set(p.key.clone(), p.value.clone());
    }
    Some(na)
}

/// Collects every value name of `gp` and its bodies.
fn collect_names<'a>(gp: &'a GraphProto, out: &mut HashSet<&'a str>, depth: usize) {
    if depth > 256 {
        return;
    }
    let vis = gp.input.iter().chain(&gp.output).chain(&gp.value_info);
    out.extend(vis.map(|v| v.name.as_str()));
    out.extend(gp.initializer.iter().map(|t| t.name.as_str()));
    for n in &gp.node {
        out.extend(n.input.iter().chain(&n.output).map(String::as_str));
        for a in &n.attribute {
            for b in a.g.iter().chain(&a.graphs) {
                collect_names(b, out, depth + 1);
            }
        }
    }
}

fn is_default_domain(d: &str) -> bool {
    d.is_empty() || d == "ai.onnx"
}

impl<'p> Importer<'p> {
    pub(super) fn new(file: &str, ext: External, model: &'p ModelProto) -> Self {
        let mut all = HashSet::new();
        if let Some(gp) = &model.graph {
            collect_names(gp, &mut all, 0);
        }
        let default_opset = model
            .opset_import
            .iter()
            .filter(|o| is_default_domain(&o.domain))
            .map(|o| o.version)
            .max()
            .unwrap_or(i64::MAX);
        let mut opsets: HashMap<String, i64> = HashMap::new();
        for o in &model.opset_import {
            let d = if is_default_domain(&o.domain) {
                ""
            } else {
                o.domain.as_str()
            };
            let v = opsets.entry(d.to_string()).or_insert(o.version);
            *v = (*v).max(o.version);
        }
        Importer {
            file: file.to_string(),
            ext,
            g: ComputeGraph::new(""),
            value_names: Fresh::with_names(all.into_iter().map(str::to_string).collect()),
            assigned: HashSet::new(),
            graph_names: Fresh::default(),
            frames: Vec::new(),
            parents: Vec::new(),
            default_opset,
            opsets,
            mark_defaults: model.ir_version >= 4,
            warnings: Vec::new(),
        }
    }

    pub(super) fn invalid(&self, at: impl Into<String>, msg: impl Into<String>) -> OnnxError {
        OnnxError::Invalid {
            file: self.file.clone(),
            at: at.into(),
            msg: msg.into(),
        }
    }

    pub(super) fn ir(&self, at: impl Into<String>) -> impl FnOnce(rge_ir::IrError) -> OnnxError {
        let (file, at) = (self.file.clone(), at.into());
        move |source| OnnxError::Ir {
            file,
            at,
            source: Box::new(source),
        }
    }

    /// Imports the model's graph as the root.
    pub(super) fn import_root(&mut self, model: &'p ModelProto) -> Result<()> {
        let gp = model
            .graph
            .as_ref()
            .ok_or_else(|| self.invalid("model", "the model has no graph"))?;
        let name = if gp.name.is_empty() {
            "main_graph"
        } else {
            &gp.name
        };
        self.g = ComputeGraph::new(name);
        // One allocation for the root's nodes: growing the node table by doubling copies it
        // into fresh pages each time, a tenth of a large import's time.
        self.g
            .reserve_nodes(gp.node.len() + gp.input.len() + gp.initializer.len() + 1);
        self.graph_names.claim(name);
        let root = self.g.root();
        let attrs = self.g.graph_attrs_mut(root).expect("root exists");
        for o in &model.opset_import {
            attrs.set(format!("{}{}", names::OPSET_PREFIX, o.domain), o.version);
        }
        self.import_graph(gp, root, None)
    }

    /// The `_onnx_name` for ONNX value `name`: `name` unless an enclosing or sibling graph
    /// already gave it out.
    fn value_name(&mut self, name: &str, graph: &str) -> String {
        if self.assigned.insert(name.to_string()) {
            self.value_names.claim(name);
            return name.to_string();
        }
        let f = self.value_names.fresh(name);
        self.assigned.insert(f.clone());
        self.warnings.push(format!(
            "graph `{graph}`: value `{name}` is also defined in an enclosing or earlier graph; \
             renamed `{f}`"
        ));
        f
    }

    fn set_graph_meta(&mut self, gid: GraphId, gp: &GraphProto) {
        let attrs = self.g.graph_attrs_mut(gid).expect("graph exists");
        if !gp.doc_string.is_empty() {
            attrs.set(names::DOC_STRING, gp.doc_string.clone());
        }
        if let Some(na) = entries_attr(&gp.metadata_props) {
            attrs.set(names::METADATA_PROPS, na);
        }
    }

    /// Adds a node to frame `level`'s graph, before the frame's capture point when `data`.
    pub(super) fn add_node(
        &mut self,
        level: usize,
        op: OpDesc,
        data: bool,
        at: &str,
    ) -> Result<NodeId> {
        let f = &self.frames[level];
        let (gid, before) = (f.graph, f.insert_before);
        let id = match (data, before) {
            (true, Some(b)) => self.g.add_node_before(b, op),
            _ => self.g.add_node(gid, op),
        }
        .map_err(self.ir(at))?;
        let f = &mut self.frames[level];
        if !data && f.insert_before.is_none() {
            f.insert_before = Some(id);
        }
        Ok(id)
    }

    /// A Data node of frame `level` for a graph input or capture, with `desc` on its input and
    /// output.
    pub(super) fn add_data(
        &mut self,
        level: usize,
        name: &str,
        mut desc: TensorDesc,
        value: Option<&str>,
        parent_index: Option<usize>,
    ) -> Result<NodeId> {
        let mut op = OpDesc::new(name, op_types::DATA);
        let f = &mut self.frames[level];
        op.attrs_mut().set(DATA_INDEX, f.data_count as i64);
        f.data_count += 1;
        if let Some(k) = parent_index {
            op.attrs_mut().set(PARENT_NODE_INDEX, k as i64);
        }
        op.add_input("", desc.clone()).map_err(self.ir(name))?;
        if let Some(v) = value {
            desc.attrs_mut().set(names::ONNX_NAME, v);
        }
        op.add_output("", desc).map_err(self.ir(name))?;
        let id = self.add_node(level, op, true, name)?;
        self.g.add_input_node(id).map_err(self.ir(name))?;
        Ok(id)
    }

    fn import_graph(&mut self, gp: &'p GraphProto, gid: GraphId, body: Option<Body>) -> Result<()> {
        let gname = self.g.graph_name(gid).unwrap_or_default().to_string();
        self.frames.push(Frame {
            graph: gid,
            values: HashMap::with_capacity(gp.node.len() + gp.input.len() + gp.initializer.len()),
            forward: false,
            insert_before: None,
            data_count: 0,
        });
        let level = self.frames.len() - 1;
        self.set_graph_meta(gid, gp);
        let at_g = |what: String| format!("graph `{gname}` {what}");

        // Initializers first, to tell graph inputs with defaults from plain ones.
        let mut inits: HashSet<&str> = HashSet::with_capacity(gp.initializer.len());
        let sparse_names = gp
            .sparse_initializer
            .iter()
            .map(|s| s.values.as_ref().map_or("", |v| v.name.as_str()));
        for name in gp
            .initializer
            .iter()
            .map(|t| t.name.as_str())
            .chain(sparse_names)
        {
            if name.is_empty() {
                return Err(self.invalid(at_g("initializer".into()), "an initializer has no name"));
            }
            if !inits.insert(name) {
                return Err(self.invalid(at_g(format!("initializer `{name}`")), "defined twice"));
            }
        }

        // Graph inputs → Data.
        let mut listed: HashSet<&str> = HashSet::with_capacity(gp.input.len());
        let mut formal = 0usize;
        for vi in &gp.input {
            let name = vi.name.as_str();
            let at = at_g(format!("input `{name}`"));
            if name.is_empty() {
                return Err(self.invalid(at_g("input".into()), "a graph input has no name"));
            }
            if !listed.insert(name) {
                return Err(self.invalid(at, "listed twice"));
            }
            if inits.contains(name) {
                continue;
            }
            let desc = desc_from_type(vi.r#type.as_ref()).map_err(|m| self.invalid(&at, m))?;
            let value = self.value_name(name, &gname);
            let binding = body.as_ref().and_then(|b| self.input_binding(b, formal));
            let id = self.add_data(level, &value, desc, Some(&value), binding)?;
            self.frames[level]
                .values
                .entry(name)
                .or_default()
                .push((-1, id.out(0)));
            formal += 1;
        }

        // Initializers → Const (sparse ones → Constant with `sparse_value`).
        for t in &gp.initializer {
            let at = at_g(format!("initializer `{}`", t.name));
            let tensor = tensor_from_proto(
                t,
                &mut self.ext,
                &At {
                    file: &self.file,
                    at: &at,
                },
            )?;
            let value = self.value_name(&t.name, &gname);
            let mut op = OpDesc::new(&value, op_types::CONST);
            let mut desc = tensor.desc.clone();
            desc.attrs_mut().set(names::ONNX_NAME, value.as_str());
            op.add_output("", desc).map_err(self.ir(&at))?;
            op.attrs_mut().set("value", tensor);
            if self.mark_defaults && listed.contains(t.name.as_str()) {
                op.attrs_mut().set(names::GRAPH_INPUT, true);
            }
            let id = self.add_node(level, op, false, &at)?;
            self.frames[level]
                .values
                .entry(t.name.as_str())
                .or_default()
                .push((-1, id.out(0)));
        }
        for s in &gp.sparse_initializer {
            let name = s.values.as_ref().map_or("", |v| v.name.as_str());
            let at = at_g(format!("sparse initializer `{name}`"));
            let na = sparse_from_proto(
                s,
                &mut self.ext,
                &At {
                    file: &self.file,
                    at: &at,
                },
            )?;
            let value = self.value_name(name, &gname);
            let mut op = OpDesc::new(&value, op_types::CONSTANT);
            // Exported as a Constant node, so it carries the default domain's opset as nodes do.
            op.set_opset(self.opsets.get("").copied());
            let mut desc = TensorDesc::default();
            desc.attrs_mut().set(names::ONNX_NAME, value.as_str());
            op.add_output("", desc).map_err(self.ir(&at))?;
            op.attrs_mut().set("sparse_value", na);
            let id = self.add_node(level, op, false, &at)?;
            self.frames[level]
                .values
                .entry(name)
                .or_default()
                .push((-1, id.out(0)));
        }

        let (ids, bodies) = self.create_nodes(gp, gid, &gname)?;
        self.name_outputs(gp, &ids, &gname)?;
        self.apply_value_info(gp, &gname)?;

        // Link inputs, then import bodies (their captures see the values before the node).
        for (i, np) in gp.node.iter().enumerate() {
            let id = ids[i];
            for (k, inp) in np.input.iter().enumerate() {
                if inp.is_empty() {
                    continue;
                }
                let Some(src) = self.resolve(level, inp, i as i64)? else {
                    return Err(OnnxError::UnknownValue {
                        file: self.file.clone(),
                        at: at_g(format!("node `{}` (#{i}) input {k}", self.g.name_of(id))),
                        value: inp.clone(),
                    });
                };
                self.link(src, id, k)?;
            }
            if !bodies[i].is_empty() {
                self.import_bodies(id, i as i64, np, &bodies[i])?;
            }
        }

        self.add_net_output(gp, gid, &gname, body.as_ref())?;
        if self.frames[level].forward {
            self.sort_graph(gid)?;
        }
        self.frames.pop();
        Ok(())
    }

    /// Links `src` to `dst`'s input `k`; the input desc takes the producer's desc.
    pub(super) fn link(&mut self, src: OutAnchor, dst: NodeId, k: usize) -> Result<()> {
        let mut desc = self
            .g
            .op(src.node)
            .and_then(|o| o.output(src.index as usize))
            .cloned()
            .unwrap_or_default();
        desc.attrs_mut().remove(names::ONNX_NAME);
        let at = self.g.name_of(dst).to_string();
        self.g.link(src, dst.input(k)).map_err(self.ir(&at))?;
        if let Some(d) = self.g.op_mut(dst).and_then(|o| o.input_mut(k)) {
            *d = desc;
        }
        Ok(())
    }

    /// Phase 1: every node of `gp`, unlinked, with its attributes. Returns the node ids and, per
    /// node, its body graphs in slot order as (slot attr name, subgraph name suffix, graph).
    #[allow(clippy::type_complexity)]
    fn create_nodes(
        &mut self,
        gp: &'p GraphProto,
        gid: GraphId,
        gname: &str,
    ) -> Result<(Vec<NodeId>, Vec<Vec<(String, String, &'p GraphProto)>>)> {
        // Names: explicit unique names first, then generated ones for empty or taken names.
        let mut taken = Fresh::with_names(
            self.g
                .nodes_of(gid)
                .map(|n| self.g.name_of(n).to_string())
                .collect(),
        );
        let mut node_names: Vec<Option<String>> = gp
            .node
            .iter()
            .map(|n| (!n.name.is_empty() && taken.claim(&n.name)).then(|| n.name.clone()))
            .collect();
        for (i, n) in gp.node.iter().enumerate() {
            if node_names[i].is_none() {
                let name = if n.name.is_empty() {
                    taken.fresh(&n.op_type)
                } else {
                    let f = taken.fresh(&n.name);
                    self.warnings.push(format!(
                        "graph `{gname}`: node #{i} is named `{}` like an earlier node, graph \
                         input or initializer; renamed `{f}`",
                        n.name
                    ));
                    f
                };
                node_names[i] = Some(name);
            }
        }
        let level = self.frames.len() - 1;
        let mut ids = Vec::with_capacity(gp.node.len());
        let mut bodies = Vec::with_capacity(gp.node.len());
        for (i, (np, name)) in gp.node.iter().zip(node_names).enumerate() {
            let name = name.expect("named above");
            let at = format!("graph `{gname}` node `{name}` (#{i})");
            if np.op_type.is_empty() {
                return Err(self.invalid(at, "the node has no op_type"));
            }
            let t = np.op_type.as_str();
            let reserved =
                op_types::is_data(t) || t == op_types::CONST || t == op_types::NET_OUTPUT;
            if reserved && is_default_domain(&np.domain) {
                return Err(OnnxError::Unsupported {
                    file: self.file.clone(),
                    at,
                    what: format!(
                        "op type `{t}` in the default domain: rge reserves it for graph inputs, \
                         initializers and outputs"
                    ),
                });
            }
            let (op, b) = self.node_op(np, name, &at)?;
            ids.push(self.add_node(level, op, false, &at)?);
            bodies.push(b);
        }
        Ok((ids, bodies))
    }

    #[allow(clippy::type_complexity)]
    fn node_op(
        &mut self,
        np: &'p NodeProto,
        name: String,
        at: &str,
    ) -> Result<(OpDesc, Vec<(String, String, &'p GraphProto)>)> {
        let mut op = OpDesc::new(name, &np.op_type);
        op.set_domain(np.domain.as_str());
        op.set_opset(self.opsets.get(op.domain()).copied());
        for _ in &np.input {
            op.add_input("", TensorDesc::default())
                .map_err(self.ir(at))?;
        }
        for _ in &np.output {
            op.add_output("", TensorDesc::default())
                .map_err(self.ir(at))?;
        }
        let mut graphs: Vec<(u8, String, String, &'p GraphProto)> = Vec::new();
        let mut lists: Vec<String> = Vec::new();
        for a in &np.attribute {
            let aat = format!("{at} attribute `{}`", a.name);
            if a.name.is_empty() {
                return Err(self.invalid(at, "an attribute has no name"));
            }
            if a.name.starts_with(names::RESERVED_PREFIX) {
                return Err(
                    self.invalid(aat, "attribute names starting with `_onnx_` are reserved")
                );
            }
            if !a.ref_attr_name.is_empty() {
                return Err(OnnxError::Unsupported {
                    file: self.file.clone(),
                    at: aat,
                    what: "attribute references (ref_attr_name) outside a function".into(),
                });
            }
            let seen = graphs.iter().any(|g| g.1 == a.name) || lists.contains(&a.name);
            if op.attrs().contains(&a.name) || seen {
                return Err(self.invalid(aat, "attribute given twice"));
            }
            match attr_from_proto(
                a,
                &mut self.ext,
                &At {
                    file: &self.file,
                    at: &aat,
                },
            )? {
                Imported::Value(v) => {
                    op.attrs_mut().set(a.name.clone(), v);
                }
                Imported::Graphs(gs, list) => {
                    let rank = match a.name.as_str() {
                        "then_branch" | "body" => 0,
                        "else_branch" => 1,
                        _ => 2,
                    };
                    if list {
                        lists.push(a.name.clone());
                    }
                    for (k, g) in gs.into_iter().enumerate() {
                        let suffix = if list {
                            format!("{}_{k}", a.name)
                        } else {
                            a.name.clone()
                        };
                        graphs.push((rank, a.name.clone(), suffix, g));
                    }
                }
            }
        }
        graphs.sort_by_key(|g| g.0);
        let attrs = op.attrs_mut();
        if !np.overload.is_empty() {
            attrs.set(names::OVERLOAD, np.overload.clone());
        }
        if !np.doc_string.is_empty() {
            attrs.set(names::DOC_STRING, np.doc_string.clone());
        }
        if let Some(na) = entries_attr(&np.metadata_props) {
            attrs.set(names::METADATA_PROPS, na);
        }
        if !graphs.is_empty() {
            let slots: Vec<String> = graphs.iter().map(|g| g.1.clone()).collect();
            attrs.set(names::SUBGRAPH_ATTRS, slots);
        }
        if !lists.is_empty() {
            attrs.set(names::SUBGRAPH_LISTS, lists);
        }
        Ok((
            op,
            graphs.into_iter().map(|(_, s, x, g)| (s, x, g)).collect(),
        ))
    }

    /// Registers node outputs as values and gives each its `_onnx_name`. A name produced more
    /// than once (not SSA) keeps its name on the last producer (or on the graph input or
    /// initializer of that name); earlier producers get fresh names.
    fn name_outputs(&mut self, gp: &'p GraphProto, ids: &[NodeId], gname: &str) -> Result<()> {
        let level = self.frames.len() - 1;
        for (i, np) in gp.node.iter().enumerate() {
            for (j, out) in np.output.iter().enumerate() {
                if !out.is_empty() {
                    let e = self.frames[level].values.entry(out.as_str()).or_default();
                    e.push((i as i64, ids[i].out(j)));
                }
            }
        }
        for (i, np) in gp.node.iter().enumerate() {
            for (j, out) in np.output.iter().enumerate() {
                if out.is_empty() {
                    continue;
                }
                let list = &self.frames[level].values[out.as_str()];
                let keeper = list.last().map(|p| p.1) == Some(ids[i].out(j)) && list[0].0 >= 0;
                let count = list.len();
                let value = if keeper {
                    self.value_name(out, gname)
                } else {
                    let f = self.value_names.fresh(out);
                    self.assigned.insert(f.clone());
                    self.warnings.push(format!(
                        "graph `{gname}`: value `{out}` is produced {count} times (not SSA); \
                         the output of node `{}` is renamed `{f}` (a later producer shadows it)",
                        self.g.name_of(ids[i])
                    ));
                    f
                };
                if let Some(d) = self.g.op_mut(ids[i]).and_then(|o| o.output_mut(j)) {
                    d.attrs_mut().set(names::ONNX_NAME, value);
                }
            }
        }
        Ok(())
    }

    /// `value_info` types go to the producing node's output desc (the producer the name means
    /// at the end of the graph); then graph output types go to producers still undescribed.
    /// Names of graph inputs, initializers and outer values are skipped.
    fn apply_value_info(&mut self, gp: &'p GraphProto, gname: &str) -> Result<()> {
        let level = self.frames.len() - 1;
        let infos = gp.value_info.iter().map(|v| (v, true));
        for (vi, always) in infos.chain(gp.output.iter().map(|v| (v, false))) {
            let Some(list) = self.frames[level].values.get(vi.name.as_str()) else {
                continue;
            };
            let Some(&(pos, a)) = list.last() else {
                continue;
            };
            if pos < 0 || vi.r#type.is_none() {
                continue;
            }
            let at = format!("graph `{gname}` value_info `{}`", vi.name);
            let mut desc = desc_from_type(vi.r#type.as_ref()).map_err(|m| self.invalid(at, m))?;
            if let Some(d) = self
                .g
                .op_mut(a.node)
                .and_then(|o| o.output_mut(a.index as usize))
            {
                let described = d.dtype() != rge_ir::DataType::Undefined
                    || !d.shape().is_scalar()
                    || d.attrs().contains(names::ONNX_TYPE);
                if !always && described {
                    continue;
                }
                if let Some(v) = d.attrs().get(names::ONNX_NAME).cloned() {
                    desc.attrs_mut().set(names::ONNX_NAME, v);
                }
                *d = desc;
            }
        }
        Ok(())
    }

    /// Body input `i` ↔ parent input: Loop (iter, cond, v…) ↔ (M, cond, v_initial…) one to one;
    /// Scan at opset 8 is shifted by one (its input 0 is sequence_lens); If has none; any other
    /// op binds by position while the parent has that input.
    fn input_binding(&self, b: &Body, i: usize) -> Option<usize> {
        let k = match (b.default_domain, b.op_type.as_str()) {
            (true, "If") => return None,
            (true, "Scan") if self.default_opset < 9 => i + 1,
            _ => i,
        };
        (k < b.formal_inputs).then_some(k)
    }

    /// Body output `j` ↔ parent output: Loop's body output 0 is the condition and binds to
    /// nothing, its output j to parent output j-1; every other op binds by position.
    fn output_binding(&self, b: &Body, j: usize) -> Option<usize> {
        let k = match (b.default_domain, b.op_type.as_str()) {
            (true, "Loop") => j.checked_sub(1)?,
            _ => j,
        };
        (k < b.outputs).then_some(k)
    }

    fn import_bodies(
        &mut self,
        id: NodeId,
        pos: i64,
        np: &NodeProto,
        bodies: &[(String, String, &'p GraphProto)],
    ) -> Result<()> {
        self.parents.push(Parent {
            node: id,
            pos,
            captures: HashMap::new(),
        });
        let pname = self.g.name_of(id).to_string();
        for (slot, (attr, suffix, gp)) in bodies.iter().enumerate() {
            let name = self.graph_names.take(&format!("{pname}_{suffix}"));
            let at = format!("node `{pname}` attribute `{attr}`");
            let sub = self.g.add_subgraph(id, slot, name).map_err(self.ir(at))?;
            let attrs = self.g.graph_attrs_mut(sub).expect("just added");
            attrs.set(names::GRAPH_NAME, gp.name.clone());
            let body = Body {
                parent: id,
                op_type: np.op_type.clone(),
                default_domain: is_default_domain(&np.domain),
                formal_inputs: np.input.len(),
                outputs: np.output.len(),
            };
            self.import_graph(gp, sub, Some(body))?;
        }
        let p = self.parents.pop().expect("pushed above");
        if !p.captures.is_empty() {
            if let Some(op) = self.g.op_mut(id) {
                op.attrs_mut()
                    .set(names::FORMAL_INPUTS, np.input.len() as i64);
            }
            self.canonical_captures(id, np.input.len())?;
        }
        Ok(())
    }

    /// Graph outputs → one NetOutput (its input descs carry the outputs' types and, in a body,
    /// `_parent_node_index`) and the graph's output list.
    fn add_net_output(
        &mut self,
        gp: &'p GraphProto,
        gid: GraphId,
        gname: &str,
        body: Option<&Body>,
    ) -> Result<()> {
        let level = self.frames.len() - 1;
        let mut name = op_types::NET_OUTPUT.to_string();
        let mut k = 0;
        while self.g.find_node(gid, &name).is_some() {
            k += 1;
            name = format!("{}_{k}", op_types::NET_OUTPUT);
        }
        let mut op = OpDesc::new(&name, op_types::NET_OUTPUT);
        for (j, vo) in gp.output.iter().enumerate() {
            let at = format!("graph `{gname}` output `{}`", vo.name);
            if vo.name.is_empty() {
                return Err(self.invalid(at, "a graph output has no name"));
            }
            let mut desc = desc_from_type(vo.r#type.as_ref()).map_err(|m| self.invalid(&at, m))?;
            if let Some(k) = body.and_then(|b| self.output_binding(b, j)) {
                desc.attrs_mut().set(PARENT_NODE_INDEX, k as i64);
            }
            op.add_input("", desc).map_err(self.ir(&at))?;
        }
        if let Some(b) = body {
            if gp.output.len() > b.outputs && b.outputs == 0 {
                self.warnings.push(format!(
                    "graph `{gname}`: {} outputs but its parent `{}` has none; they bind to \
                     nothing",
                    gp.output.len(),
                    self.g.name_of(b.parent)
                ));
            }
        }
        let id = self.add_node(level, op, false, &name)?;
        let end = gp.node.len() as i64;
        let mut outs = Vec::with_capacity(gp.output.len());
        for (j, vo) in gp.output.iter().enumerate() {
            let Some(src) = self.resolve(level, &vo.name, end)? else {
                return Err(OnnxError::UnknownValue {
                    file: self.file.clone(),
                    at: format!("graph `{gname}` output {j}"),
                    value: vo.name.clone(),
                });
            };
            let at = format!("graph `{gname}` output `{}`", vo.name);
            self.g.link(src, id.input(j)).map_err(self.ir(at))?;
            outs.push((src.node, src.index as u32));
        }
        self.g.set_output_nodes(gid, outs).map_err(self.ir(gname))?;
        Ok(())
    }
}
