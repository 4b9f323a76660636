//! ONNX `ModelProto` → rge `ComputeGraph`. The rules are in docs/onnx.md; in short, per graph:
//! graph inputs (not initializers) → Data, initializers → Const, nodes → ops (in file order),
//! graph outputs → one NetOutput; GRAPH attributes → subgraphs whose outer-scope captures become
//! extra inputs of the parent node. Names are resolved as a sequential reading of the file gives
//! (the latest producer before the consumer wins); a name produced only later is a forward
//! reference, allowed, after which the graph is checked for cycles and put in topological order.

use std::borrow::Cow;
use std::fmt;

use hashbrown::{HashMap, HashSet};

use rge_ir::attr_names::{DATA_INDEX, PARENT_NODE_INDEX};
use rge_ir::{
    op_types, AttrMap, ComputeGraph, GraphId, NamedAttrs, NodeId, OpDesc, OutAnchor, TensorDesc,
};

use super::attrs::{attr_from_proto, sparse_from_proto, Imported};
use super::error::{OnnxError, Result};
use super::external::External;
use super::names::{self, Fresh};
use super::nodes::{NodeRef, NodeTable, Nodes};
use super::plan::{self, Found, Values};
use super::tensor::{tensor_from_proto, At};
use super::types::desc_from_type;
use crate::onnx_proto::{GraphProto, ModelProto, StringStringEntryProto, ValueInfoProto};

/// One graph being imported: its values by ONNX name, each with the producers in file order
/// (position -1 for graph inputs, initializers and captures; else the node's index).
pub(super) struct Frame<'p> {
    pub(super) graph: GraphId,
    pub(super) values: Values<'p>,
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

/// A node's body graphs in slot order: (slot attr name, subgraph name suffix, graph).
type Bodies<'p> = Vec<(String, String, &'p GraphProto)>;

/// The node ids of a graph and its nodes with bodies (by index).
type Made<'p> = (Vec<NodeId>, Vec<(usize, Bodies<'p>)>);

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
    /// Every value name in the file plus those handed out: fresh value names avoid them. Made
    /// on the first fresh name (a clean model needs none) as the file's names plus `assigned`,
    /// which is what it would hold had it been made up front.
    value_names: Option<Fresh<'p>>,
    /// Value names given to outputs so far (`_onnx_name`s are unique over the model).
    assigned: HashSet<Cow<'p, str>>,
    graph_names: Fresh<'p>,
    /// The model's graph, whose names `value_names` starts from, and its nodes.
    model_graph: Option<&'p GraphProto>,
    root_nodes: Nodes<'p>,
    /// `opsets[""]`, which nearly every node asks for.
    default_domain_opset: Option<i64>,
    /// Whether some node of the model's graph has a graph attribute (so that graphs other than
    /// the root may be imported).
    has_bodies: bool,
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

/// Where a node is, for messages; formatted only when one is made (not once per node).
struct NodeAt<'a> {
    graph: &'a str,
    name: &'a str,
    index: usize,
}

impl fmt::Display for NodeAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let NodeAt { graph, name, index } = self;
        write!(f, "graph `{graph}` node `{name}` (#{index})")
    }
}

/// One attribute of a node, for messages.
struct AttrAt<'a> {
    node: &'a NodeAt<'a>,
    attr: &'a str,
}

impl fmt::Display for AttrAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} attribute `{}`", self.node, self.attr)
    }
}

/// Collects every value name of `gp` (whose nodes are `nodes`) and its bodies.
fn collect_names<'a>(
    gp: &'a GraphProto,
    nodes: Nodes<'a>,
    out: &mut HashSet<&'a str>,
    depth: usize,
) {
    if depth > 256 {
        return;
    }
    let vis = gp.input.iter().chain(&gp.output).chain(&gp.value_info);
    out.extend(vis.map(|v| v.name.as_str()));
    out.extend(gp.initializer.iter().map(|t| t.name.as_str()));
    for n in nodes.iter() {
        out.extend(n.input().iter().chain(n.output().iter()));
        for a in n.attribute() {
            for b in a.g.iter().chain(&a.graphs) {
                collect_names(b, Nodes::Protos(&b.node), out, depth + 1);
            }
        }
    }
}

/// Graphs with fewer nodes resolve their names before making their nodes, not meanwhile.
const PARALLEL_NODES: usize = 1024;

fn is_default_domain(d: &str) -> bool {
    d.is_empty() || d == "ai.onnx"
}

impl<'p> Importer<'p> {
    /// `nodes`: the model's graph's nodes when decoding took them apart (the graph has none).
    pub(super) fn new(
        file: &str,
        ext: External,
        model: &'p ModelProto,
        nodes: Option<&'p NodeTable<'p>>,
    ) -> Self {
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
        let default_domain_opset = opsets.get("").copied();
        let root_nodes = match (nodes, &model.graph) {
            (Some(t), _) => Nodes::Table(t),
            (None, Some(g)) => Nodes::Protos(&g.node),
            (None, None) => Nodes::Protos(&[]),
        };
        Importer {
            file: file.to_string(),
            ext,
            g: ComputeGraph::new(""),
            value_names: None,
            assigned: HashSet::new(),
            graph_names: Fresh::default(),
            model_graph: model.graph.as_ref(),
            root_nodes,
            default_domain_opset,
            has_bodies: root_nodes.iter().any(|n| {
                n.attribute()
                    .iter()
                    .any(|a| a.g.is_some() || !a.graphs.is_empty())
            }),
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
        let nodes = self.root_nodes;
        self.g
            .reserve_nodes(nodes.len() + gp.input.len() + gp.initializer.len() + 1);
        self.graph_names.claim(name);
        let root = self.g.root();
        let attrs = self.g.graph_attrs_mut(root).expect("root exists");
        for o in &model.opset_import {
            attrs.set(format!("{}{}", names::OPSET_PREFIX, o.domain), o.version);
        }
        self.import_graph(gp, nodes, root, None)
    }

    /// The `_onnx_name` for ONNX value `name`: `name` unless an enclosing or sibling graph
    /// already gave it out.
    fn value_name(&mut self, name: &'p str, graph: &str) -> String {
        if self.assigned.insert(Cow::Borrowed(name)) {
            if let Some(v) = &mut self.value_names {
                v.claim(name);
            }
            return name.to_string();
        }
        let f = self.fresh_value(name);
        self.warnings.push(format!(
            "graph `{graph}`: value `{name}` is also defined in an enclosing or earlier graph; \
             renamed `{f}`"
        ));
        f
    }

    /// A fresh value name from `base`, marked used and assigned.
    fn fresh_value(&mut self, base: &str) -> String {
        let (graph, nodes, assigned) = (self.model_graph, self.root_nodes, &self.assigned);
        let names = self.value_names.get_or_insert_with(|| {
            let mut all = HashSet::new();
            if let Some(gp) = graph {
                collect_names(gp, nodes, &mut all, 0);
            }
            let mut used: HashSet<Cow<'p, str>> = all.into_iter().map(Cow::Borrowed).collect();
            used.extend(assigned.iter().cloned());
            Fresh::with_names(used)
        });
        let f = names.fresh(base);
        self.assigned.insert(Cow::Owned(f.clone()));
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
        at: &dyn fmt::Display,
    ) -> Result<NodeId> {
        let f = &self.frames[level];
        let (gid, before) = (f.graph, f.insert_before);
        let id = match (data, before) {
            (true, Some(b)) => self.g.add_node_before(b, op),
            _ => self.g.add_node(gid, op),
        }
        .map_err(|e| self.ir(at.to_string())(e))?;
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
        let id = self.add_node(level, op, true, &name)?;
        self.g.add_input_node(id).map_err(self.ir(name))?;
        Ok(id)
    }

    /// Imports graph `gp`, whose nodes are `nodes`, into graph `gid`.
    fn import_graph(
        &mut self,
        gp: &'p GraphProto,
        nodes: Nodes<'p>,
        gid: GraphId,
        body: Option<Body>,
    ) -> Result<()> {
        let gname = self.g.graph_name(gid).unwrap_or_default().to_string();
        self.frames.push(Frame {
            graph: gid,
            values: HashMap::with_capacity(nodes.len() + gp.input.len() + gp.initializer.len()),
            forward: false,
            insert_before: None,
            data_count: 0,
        });
        let level = self.frames.len() - 1;
        if self.has_bodies {
            self.assigned
                .reserve(nodes.len() + gp.input.len() + gp.initializer.len());
        }
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

        // The names are resolved (from the file alone) while the nodes are made.
        let values = std::mem::take(&mut self.frames[level].values);
        let has_bodies = self.has_bodies;
        let mut planned = None;
        let made = if nodes.len() >= PARALLEL_NODES {
            let to = &mut planned;
            rayon::in_place_scope(|s| {
                s.spawn(move |_| *to = Some(plan::plan(gp, nodes, values, has_bodies)));
                self.create_nodes(nodes, gid, &gname)
            })
        } else {
            planned = Some(plan::plan(gp, nodes, values, has_bodies));
            self.create_nodes(nodes, gid, &gname)
        };
        let (ids, bodies) = made?;
        let mut plan = planned.expect("planned above");
        // The frame's values are read again only to tell keepers of a name produced twice, to
        // resolve in a body (for itself or an outer value) and for this graph's bodies; else
        // the plan has resolved everything and they are dropped as they are.
        if plan.shared || level > 0 || !bodies.is_empty() {
            plan::fix(&mut plan.values, &ids);
            self.frames[level].values = std::mem::take(&mut plan.values);
        }
        let typed = std::mem::replace(&mut plan.typed, Ok(Vec::new()));
        let touched = self.name_outputs(gp, nodes, &ids, &gname, &mut plan, typed)?;

        // Link inputs, then import bodies (their captures see the values before the node).
        let mut found = plan.inputs.iter();
        let mut bodies = bodies.iter().peekable();
        for (i, np) in nodes.iter().enumerate() {
            let id = ids[i];
            for (k, inp) in np.input().iter().enumerate() {
                let f = *found.next().expect("one per input");
                if inp.is_empty() {
                    continue;
                }
                // A node output no `value_info` typed is a default desc but for its name: so is
                // the input it feeds, as made.
                let plain = match f {
                    Found::Before(plan::Src::Node(p, _)) => !touched[p as usize],
                    Found::After(plan::Src::Node(p, _)) => level == 0 && !touched[p as usize],
                    _ => false,
                };
                let Some(src) = self.resolve_planned(level, inp, i as i64, f, &ids)? else {
                    return Err(OnnxError::UnknownValue {
                        file: self.file.clone(),
                        at: at_g(format!("node `{}` (#{i}) input {k}", self.g.name_of(id))),
                        value: inp.to_string(),
                    });
                };
                if plain {
                    self.g
                        .link(src, id.input(k))
                        .map_err(|e| self.ir(self.g.name_of(id))(e))?;
                } else {
                    self.link(src, id, k)?;
                }
            }
            if let Some((_, b)) = bodies.next_if(|b| b.0 == i) {
                self.import_bodies(id, i as i64, np, b)?;
            }
        }

        self.add_net_output(gp, gid, &gname, body.as_ref(), &mut plan, &ids)?;
        if self.frames[level].forward {
            self.sort_graph(gid)?;
        }
        self.frames.pop();
        Ok(())
    }

    /// What `resolve` gives, from the plan's `found` where that is the same: a producer before
    /// the consumer always is (captures only add producers before the first node, for names
    /// with none); else in the root, which captures nothing, the planned forward reference; a
    /// body resolves afresh, where an outer value comes first.
    fn resolve_planned(
        &mut self,
        level: usize,
        name: &'p str,
        pos: i64,
        found: Found,
        ids: &[NodeId],
    ) -> Result<Option<OutAnchor>> {
        match found {
            Found::Before(s) => Ok(Some(plan::real(s, ids))),
            _ if level > 0 => self.resolve(level, name, pos),
            Found::After(s) => {
                self.frames[level].forward = true;
                Ok(Some(plan::real(s, ids)))
            }
            Found::None => Ok(None),
        }
    }

    /// Links `src` to `dst`'s input `k`; the input desc takes the producer's desc.
    pub(super) fn link(&mut self, src: OutAnchor, dst: NodeId, k: usize) -> Result<()> {
        // The producer's desc less its `_onnx_name`: its attributes are set aside while the rest
        // is cloned, so that the name (usually its only attribute) is not copied to be dropped.
        let desc = match self
            .g
            .op_mut(src.node)
            .and_then(|o| o.output_mut(src.index as usize))
        {
            Some(d) => {
                let attrs = std::mem::take(d.attrs_mut());
                let mut desc = d.clone();
                if attrs.len() > usize::from(attrs.contains(names::ONNX_NAME)) {
                    let mut rest = attrs.clone();
                    rest.remove(names::ONNX_NAME);
                    *desc.attrs_mut() = rest;
                }
                *d.attrs_mut() = attrs;
                desc
            }
            None => TensorDesc::default(),
        };
        self.g
            .link(src, dst.input(k))
            .map_err(|e| self.ir(self.g.name_of(dst))(e))?;
        if let Some(d) = self.g.op_mut(dst).and_then(|o| o.input_mut(k)) {
            *d = desc;
        }
        Ok(())
    }

    /// Phase 1: every node of `gp`, unlinked, with its attributes. Returns the node ids and the
    /// nodes with body graphs, by index, each with its bodies in slot order.
    fn create_nodes(&mut self, nodes: Nodes<'p>, gid: GraphId, gname: &str) -> Result<Made<'p>> {
        let level = self.frames.len() - 1;
        let mut ids = Vec::with_capacity(nodes.len());
        let mut bodies = Vec::new();
        // Names: explicit unique names first, then generated ones for empty or taken names.
        // While every node keeps its own name, the graph's name index (which adding a node
        // checks anyway) holds the names taken so far: the names below are then what they
        // would be from the start. A node named like an earlier one ends this.
        let mut from = 0;
        if nodes.iter().all(|n| !n.name().is_empty()) {
            while let Some(np) = nodes.get(from) {
                match self.make_node(level, gname, from, np, np.name()) {
                    Ok((id, b)) => {
                        ids.push(id);
                        if !b.is_empty() {
                            bodies.push((from, b));
                        }
                        from += 1;
                    }
                    // Renamed below, it may fail otherwise or not at all.
                    Err(_) if self.g.find_node(gid, np.name()).is_some() => break,
                    Err(e) => return Err(e),
                }
            }
        }
        if from == nodes.len() {
            return Ok((ids, bodies));
        }
        let mut taken = Fresh::with_capacity(self.g.node_count(gid) + nodes.len() - from);
        for n in self.g.nodes_of(gid) {
            taken.claim_owned(self.g.name_of(n).to_string());
        }
        let rest = || nodes.iter().enumerate().skip(from);
        let explicit: Vec<bool> = rest()
            .map(|(_, n)| !n.name().is_empty() && taken.claim(n.name()))
            .collect();
        // The nodes that do not keep their own name, in order, with the name they get.
        let mut renamed: Vec<(usize, String)> = Vec::new();
        for (i, n) in rest() {
            if !explicit[i - from] {
                let name = if n.name().is_empty() {
                    taken.fresh(n.op_type())
                } else {
                    let f = taken.fresh(n.name());
                    self.warnings.push(format!(
                        "graph `{gname}`: node #{i} is named `{}` like an earlier node, graph \
                         input or initializer; renamed `{f}`",
                        n.name()
                    ));
                    f
                };
                renamed.push((i, name));
            }
        }
        let mut renamed = renamed.iter().peekable();
        for (i, np) in rest() {
            let name = match renamed.next_if(|r| r.0 == i) {
                Some((_, n)) => n.as_str(),
                None => np.name(),
            };
            let (id, b) = self.make_node(level, gname, i, np, name)?;
            ids.push(id);
            if !b.is_empty() {
                bodies.push((i, b));
            }
        }
        Ok((ids, bodies))
    }

    /// Node `i` of the graph, named `name`, added to frame `level`'s graph.
    fn make_node(
        &mut self,
        level: usize,
        gname: &str,
        i: usize,
        np: NodeRef<'p>,
        name: &str,
    ) -> Result<(NodeId, Bodies<'p>)> {
        let at = NodeAt {
            graph: gname,
            name,
            index: i,
        };
        let t = np.op_type();
        if t.is_empty() {
            return Err(self.invalid(at.to_string(), "the node has no op_type"));
        }
        let reserved = op_types::is_data(t) || t == op_types::CONST || t == op_types::NET_OUTPUT;
        if reserved && is_default_domain(np.domain()) {
            return Err(OnnxError::Unsupported {
                file: self.file.clone(),
                at: at.to_string(),
                what: format!(
                    "op type `{t}` in the default domain: rge reserves it for graph inputs, \
                     initializers and outputs"
                ),
            });
        }
        let (op, b) = self.node_op(np, name.to_string(), &at)?;
        Ok((self.add_node(level, op, false, &at)?, b))
    }

    fn node_op(
        &mut self,
        np: NodeRef<'p>,
        name: String,
        at: &NodeAt,
    ) -> Result<(OpDesc, Bodies<'p>)> {
        // Unnamed ports cannot clash, so `with_ports` is `add_input`/`add_output` without the
        // name checks.
        let (ins, outs) = (np.input().len(), np.output().len());
        let mut op = OpDesc::new(name, np.op_type());
        op.reserve_ports(ins, outs);
        let mut op = op.with_ports(ins, outs);
        op.set_domain(np.domain());
        let opset = if op.domain().is_empty() {
            self.default_domain_opset
        } else {
            self.opsets.get(op.domain()).copied()
        };
        op.set_opset(opset);
        let mut graphs: Vec<(u8, String, String, &'p GraphProto)> = Vec::new();
        let mut lists: Vec<String> = Vec::new();
        for a in np.attribute() {
            let aat = AttrAt {
                node: at,
                attr: &a.name,
            };
            if a.name.is_empty() {
                return Err(self.invalid(at.to_string(), "an attribute has no name"));
            }
            if a.name.starts_with(names::RESERVED_PREFIX) {
                return Err(self.invalid(
                    aat.to_string(),
                    "attribute names starting with `_onnx_` are reserved",
                ));
            }
            if !a.ref_attr_name.is_empty() {
                return Err(OnnxError::Unsupported {
                    file: self.file.clone(),
                    at: aat.to_string(),
                    what: "attribute references (ref_attr_name) outside a function".into(),
                });
            }
            let seen = graphs.iter().any(|g| g.1 == a.name) || lists.contains(&a.name);
            if op.attrs().contains(&a.name) || seen {
                return Err(self.invalid(aat.to_string(), "attribute given twice"));
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
        if !np.overload().is_empty() {
            attrs.set(names::OVERLOAD, np.overload());
        }
        if !np.doc_string().is_empty() {
            attrs.set(names::DOC_STRING, np.doc_string());
        }
        if let Some(na) = entries_attr(np.metadata_props()) {
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

    /// Gives each node output its `_onnx_name` (the outputs are in `plan.values` already). A
    /// name produced more than once (not SSA) keeps its name on the last producer (or on the
    /// graph input or initializer of that name); earlier producers get fresh names. Then the
    /// descs `value_info` and the graph's outputs type (`Plan::typed`) replace theirs, keeping
    /// the name. Returns per node whether one of its output descs was replaced.
    fn name_outputs(
        &mut self,
        gp: &'p GraphProto,
        nodes: Nodes<'p>,
        ids: &[NodeId],
        gname: &str,
        plan: &mut plan::Plan<'p>,
        typed: plan::Typed,
    ) -> Result<Vec<bool>> {
        let level = self.frames.len() - 1;
        // A bad type fails the import: raised first, as nothing before it can fail.
        let typed = typed.map_err(|(k, m)| {
            let vi = gp
                .value_info
                .iter()
                .chain(&gp.output)
                .nth(k)
                .expect("an entry");
            self.invalid(format!("graph `{gname}` value_info `{}`", vi.name), m)
        })?;
        let mut typed = typed.into_iter().peekable();
        let mut touched = vec![false; nodes.len()];
        // Where every output keeps its name, its attributes are made already.
        let mut prepared = std::mem::take(&mut plan.names).into_iter();
        for (i, np) in nodes.iter().enumerate() {
            for (j, out) in np.output().iter().enumerate() {
                if out.is_empty() {
                    continue;
                }
                let attrs = if let Some(a) = prepared.next() {
                    a
                } else {
                    let (keeper, count) = if plan.shared {
                        let list = &self.frames[level].values[out];
                        let last = list.last().map(|p| p.1) == Some(ids[i].out(j));
                        (last && list[0].0 >= 0, list.len())
                    } else {
                        (true, 1)
                    };
                    let value = if keeper && !self.has_bodies {
                        // With no body graphs this is the only graph, where a keeper's name is
                        // unique and (being in the file) already avoided by fresh names:
                        // nothing to record.
                        out.to_string()
                    } else if keeper {
                        self.value_name(out, gname)
                    } else {
                        let f = self.fresh_value(out);
                        self.warnings.push(format!(
                            "graph `{gname}`: value `{out}` is produced {count} times (not SSA); \
                             the output of node `{}` is renamed `{f}` (a later producer shadows \
                             it)",
                            self.g.name_of(ids[i])
                        ));
                        f
                    };
                    let mut a = AttrMap::new();
                    a.set_static(names::ONNX_NAME, value);
                    a
                };
                let key = (i as u32, j as u32);
                let Some(d) = self.g.op_mut(ids[i]).and_then(|o| o.output_mut(j)) else {
                    continue;
                };
                match typed.next_if(|t| t.0 == key) {
                    // The typed desc replaces the one made, with the name.
                    Some((_, mut desc)) => {
                        if desc.attrs().is_empty() {
                            *desc.attrs_mut() = attrs;
                        } else {
                            let mut attrs = attrs;
                            let v = attrs.remove(names::ONNX_NAME).expect("named");
                            desc.attrs_mut().set_static(names::ONNX_NAME, v);
                        }
                        *d = desc;
                        touched[i] = true;
                    }
                    None => *d.attrs_mut() = attrs,
                }
            }
        }
        Ok(touched)
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
        np: NodeRef<'p>,
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
                op_type: np.op_type().to_string(),
                default_domain: is_default_domain(np.domain()),
                formal_inputs: np.input().len(),
                outputs: np.output().len(),
            };
            self.import_graph(gp, Nodes::Protos(&gp.node), sub, Some(body))?;
        }
        let p = self.parents.pop().expect("pushed above");
        if !p.captures.is_empty() {
            if let Some(op) = self.g.op_mut(id) {
                op.attrs_mut()
                    .set(names::FORMAL_INPUTS, np.input().len() as i64);
            }
            self.canonical_captures(id, np.input().len())?;
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
        plan: &mut plan::Plan<'p>,
        ids: &[NodeId],
    ) -> Result<()> {
        let level = self.frames.len() - 1;
        let mut name = op_types::NET_OUTPUT.to_string();
        let mut k = 0;
        while self.g.find_node(gid, &name).is_some() {
            k += 1;
            name = format!("{}_{k}", op_types::NET_OUTPUT);
        }
        let mut op = OpDesc::new(&name, op_types::NET_OUTPUT);
        op.reserve_ports(gp.output.len(), 0);
        let at = |vo: &ValueInfoProto| format!("graph `{gname}` output `{}`", vo.name);
        let descs = std::mem::take(&mut plan.out_descs);
        for ((j, vo), desc) in gp.output.iter().enumerate().zip(descs) {
            if vo.name.is_empty() {
                return Err(self.invalid(at(vo), "a graph output has no name"));
            }
            let mut desc = desc.map_err(|m| self.invalid(at(vo), m))?;
            if let Some(k) = body.and_then(|b| self.output_binding(b, j)) {
                desc.attrs_mut().set(PARENT_NODE_INDEX, k as i64);
            }
            op.add_input("", desc).map_err(|e| self.ir(at(vo))(e))?;
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
        let end = ids.len() as i64;
        let mut outs = Vec::with_capacity(gp.output.len());
        for (j, vo) in gp.output.iter().enumerate() {
            let Some(src) = self.resolve_planned(level, &vo.name, end, plan.outputs[j], ids)?
            else {
                return Err(OnnxError::UnknownValue {
                    file: self.file.clone(),
                    at: format!("graph `{gname}` output {j}"),
                    value: vo.name.clone(),
                });
            };
            self.g
                .link(src, id.input(j))
                .map_err(|e| self.ir(at(vo))(e))?;
            outs.push((src.node, src.index as u32));
        }
        self.g.set_output_nodes(gid, outs).map_err(self.ir(gname))?;
        Ok(())
    }
}
