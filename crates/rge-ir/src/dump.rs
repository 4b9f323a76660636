//! Dumps: a readable, stable text form (one line per node, diffable) and Graphviz DOT with
//! subgraphs as clusters.
//!
//! Text line: `name = Type(src:0, _, ^ctrl_src) -> (float[2,3], int64[]) {attr=value}`; the
//! type reads `domain::Type@opset` when the op has a domain or an opset.
//! `_` is an unlinked input, `^x` a control input from `x`; an output's format shows when not ND.
//! A node with subgraphs is followed by them, indented.

use std::fmt::Write;

use crate::attr::{AttrMap, AttrValue};
use crate::format::Format;
use crate::graph::{ComputeGraph, GraphId};
use crate::node::{NodeId, CONTROL_INDEX};
use crate::op_desc::OpDesc;
use crate::tensor_desc::TensorDesc;

fn desc_text(d: &TensorDesc) -> String {
    let mut s = format!("{}{}", dtype_short(d), d.shape());
    if d.format() != Format::ND {
        let _ = write!(s, ":{}", d.format());
    }
    s
}

fn dtype_short(d: &TensorDesc) -> String {
    d.dtype()
        .name()
        .trim_start_matches("DT_")
        .to_ascii_lowercase()
}

/// The op type with its domain and opset when set: `Relu`, `com.microsoft::Gelu@1`.
fn op_type_text(op: &OpDesc) -> String {
    let mut s = String::new();
    if !op.domain().is_empty() {
        let _ = write!(s, "{}::", op.domain());
    }
    s.push_str(op.op_type());
    if let Some(v) = op.opset() {
        let _ = write!(s, "@{v}");
    }
    s
}

fn list<T>(v: &[T], f: impl Fn(&T) -> String) -> String {
    let items: Vec<String> = v.iter().map(f).collect();
    format!("[{}]", items.join(","))
}

/// One attribute value as dump text.
pub fn attr_text(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(i) => i.to_string(),
        AttrValue::Float(f) => format!("{f:?}"),
        AttrValue::String(s) => format!("{s:?}"),
        AttrValue::Bool(b) => b.to_string(),
        AttrValue::Bytes(b) => format!("bytes({})", b.len()),
        AttrValue::DataType(d) => d.name().to_string(),
        AttrValue::TensorDesc(d) => desc_text(d),
        AttrValue::Tensor(t) => format!("tensor({}, {} bytes)", desc_text(&t.desc), t.data.len()),
        AttrValue::Graph(g) => format!("graph({})", g.name()),
        AttrValue::NamedAttrs(na) => format!("{}{}", na.name, attrs_text(&na.attrs)),
        AttrValue::ListInt(v) => list(v, |x| x.to_string()),
        AttrValue::ListFloat(v) => list(v, |x| format!("{x:?}")),
        AttrValue::ListString(v) => list(v, |x| format!("{x:?}")),
        AttrValue::ListBool(v) => list(v, |x| x.to_string()),
        AttrValue::ListBytes(v) => list(v, |x| format!("bytes({})", x.len())),
        AttrValue::ListDataType(v) => list(v, |x| x.name().to_string()),
        AttrValue::ListTensorDesc(v) => list(v, desc_text),
        AttrValue::ListTensor(v) => list(v, |t| format!("tensor({})", desc_text(&t.desc))),
        AttrValue::ListGraph(v) => list(v, |g| format!("graph({})", g.name())),
        AttrValue::ListNamedAttrs(v) => list(v, |na| na.name.clone()),
        AttrValue::ListListInt(v) => list(v, |x| list(x, |y| y.to_string())),
        AttrValue::ListListFloat(v) => list(v, |x| list(x, |y| format!("{y:?}"))),
    }
}

fn attrs_text(a: &AttrMap) -> String {
    if a.is_empty() {
        return String::new();
    }
    let items: Vec<String> = a
        .iter()
        .map(|(k, v)| format!("{k}={}", attr_text(v)))
        .collect();
    format!(" {{{}}}", items.join(", "))
}

impl ComputeGraph {
    /// The text dump of the whole graph, subgraphs nested under their parent nodes.
    pub fn dump_text(&self) -> String {
        let mut out = String::new();
        self.dump_graph_text(self.root, 0, &mut out);
        // Detached subgraphs (no parent) would otherwise be invisible.
        for &g in &self.subgraphs {
            if self.graphs[g].parent_node.is_none() {
                self.dump_graph_text(g, 0, &mut out);
            }
        }
        out
    }

    fn dump_graph_text(&self, g: GraphId, depth: usize, out: &mut String) {
        let pad = "  ".repeat(depth);
        let d = &self.graphs[g];
        let _ = writeln!(out, "{pad}graph {}{} {{", d.name, attrs_text(&d.attrs));
        if !d.inputs.is_empty() {
            let names: Vec<&str> = d.inputs.iter().map(|&n| self.name_of(n)).collect();
            let _ = writeln!(out, "{pad}  inputs: {}", names.join(", "));
        }
        if !d.outputs.is_empty() {
            let names: Vec<String> = d
                .outputs
                .iter()
                .map(|&(n, i)| format!("{}:{i}", self.name_of(n)))
                .collect();
            let _ = writeln!(out, "{pad}  outputs: {}", names.join(", "));
        }
        for n in self.nodes_of(g) {
            let _ = writeln!(out, "{pad}  {}", self.node_line(n));
            for s in self.node_subgraphs(n) {
                if self.graphs[s].parent_node == Some(n) {
                    self.dump_graph_text(s, depth + 2, out);
                }
            }
        }
        let _ = writeln!(out, "{pad}}}");
    }

    /// One node as a dump line.
    pub fn node_line(&self, n: NodeId) -> String {
        let node = &self.nodes[n];
        let mut ins: Vec<String> = node
            .in_data
            .iter()
            .map(|p| match p {
                Some(p) if p.index == CONTROL_INDEX => format!("^{}", self.name_of(p.node)),
                Some(p) => format!("{}:{}", self.name_of(p.node), p.index),
                None => "_".into(),
            })
            .collect();
        ins.extend(node.ctrl_in().iter().map(|p| {
            if p.index == CONTROL_INDEX {
                format!("^{}", self.name_of(p.node))
            } else {
                format!("^{}:{}", self.name_of(p.node), p.index)
            }
        }));
        let outs: Vec<String> = node.op.outputs().iter().map(desc_text).collect();
        let mut line = format!(
            "{} = {}({}) -> ({}){}",
            node.name(),
            op_type_text(&node.op),
            ins.join(", "),
            outs.join(", "),
            attrs_text(node.op.attrs())
        );
        let subs = node.op.subgraph_instance_names();
        if !subs.is_empty() {
            let _ = write!(line, " subgraphs[{}]", subs.join(", "));
        }
        line
    }

    /// Graphviz DOT: nodes as boxes, data edges labelled `out:in`, control edges dashed,
    /// subgraphs as clusters.
    pub fn dump_dot(&self) -> String {
        let mut ids = slotmap::SecondaryMap::<NodeId, usize>::new();
        for (k, n) in self.nodes.keys().enumerate() {
            ids.insert(n, k);
        }
        let mut out = String::new();
        let _ = writeln!(out, "digraph {:?} {{", self.name());
        out.push_str("  node [shape=box, fontname=\"monospace\"];\n");
        self.dot_graph(self.root, 1, &ids, &mut out);
        for &g in &self.subgraphs {
            self.dot_cluster(g, 1, &ids, &mut out);
        }
        for (n, node) in &self.nodes {
            for (i, peers) in node.out_data.iter().enumerate() {
                for p in peers {
                    let style = if p.index == CONTROL_INDEX {
                        ", style=dashed"
                    } else {
                        ""
                    };
                    let _ = writeln!(
                        out,
                        "  n{} -> n{} [label=\"{i}:{}\"{style}];",
                        ids[n], ids[p.node], p.index
                    );
                }
            }
            for p in node.ctrl_out() {
                let _ = writeln!(out, "  n{} -> n{} [style=dashed];", ids[n], ids[p.node]);
            }
        }
        out.push_str("}\n");
        out
    }

    fn dot_cluster(
        &self,
        g: GraphId,
        depth: usize,
        ids: &slotmap::SecondaryMap<NodeId, usize>,
        out: &mut String,
    ) {
        let pad = "  ".repeat(depth);
        let _ = writeln!(
            out,
            "{pad}subgraph \"cluster_{}\" {{",
            self.graphs[g].name.replace('"', "'")
        );
        let _ = writeln!(out, "{pad}  label={:?};", self.graphs[g].name);
        self.dot_graph(g, depth + 1, ids, out);
        let _ = writeln!(out, "{pad}}}");
    }

    fn dot_graph(
        &self,
        g: GraphId,
        depth: usize,
        ids: &slotmap::SecondaryMap<NodeId, usize>,
        out: &mut String,
    ) {
        let pad = "  ".repeat(depth);
        for n in self.nodes_of(g) {
            let node = &self.nodes[n];
            let label =
                format!("{}\\n{}", node.name(), op_type_text(&node.op)).replace('"', "\\\"");
            let _ = writeln!(out, "{pad}n{} [label=\"{label}\"];", ids[n]);
        }
    }
}
