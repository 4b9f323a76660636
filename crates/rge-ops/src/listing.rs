//! The op list, for `rge ops [--json]`: plain data (the CLI serializes it) and a text rendering.

use std::fmt::Write;

use rge_ir::{AttrValue, IrInputKind, IrOutputKind};

use crate::proto::OpProto;
use crate::registry::OpRegistry;

/// One input or output of an op version.
#[derive(Debug, Clone, PartialEq)]
pub struct PortInfo {
    pub name: String,
    /// "required", "optional", "dynamic" (or "dynamic-mixed" for heterogeneous variadics).
    pub kind: String,
    /// The type parameter ("" = any).
    pub type_param: String,
    /// Data types the parameter allows (e.g. "float16", "int64"); empty = any.
    pub allowed: Vec<String>,
}

/// One attribute of an op version.
#[derive(Debug, Clone, PartialEq)]
pub struct AttrInfo {
    pub name: String,
    pub ty: String,
    pub required: bool,
    /// The default, rendered as text.
    pub default: Option<String>,
}

/// One op version.
#[derive(Debug, Clone, PartialEq)]
pub struct OpInfo {
    /// "" for the default ONNX domain.
    pub domain: String,
    pub op_type: String,
    pub since_version: i64,
    /// The first version this one does not serve (the next registered version), if any.
    pub until_version: Option<i64>,
    pub inputs: Vec<PortInfo>,
    pub outputs: Vec<PortInfo>,
    pub attrs: Vec<AttrInfo>,
    pub subgraphs: Vec<String>,
    /// "builtin" or the op library's path.
    pub source: String,
}

fn type_name(d: rge_ir::DataType) -> String {
    d.name().trim_start_matches("DT_").to_lowercase()
}

fn allowed(p: &OpProto, param: &str) -> Vec<String> {
    p.constraint(param)
        .map(|c| c.allowed.iter().map(|&d| type_name(d)).collect())
        .unwrap_or_default()
}

fn render_value(v: &AttrValue) -> String {
    match v {
        AttrValue::Int(x) => x.to_string(),
        AttrValue::Float(x) => format!("{x:?}"),
        AttrValue::String(s) => format!("{s:?}"),
        AttrValue::ListInt(x) => format!("{x:?}"),
        AttrValue::ListFloat(x) => format!("{x:?}"),
        AttrValue::ListString(x) => format!("{x:?}"),
        other => other.kind_name().to_string(),
    }
}

fn info(p: &OpProto, until: Option<i64>) -> OpInfo {
    OpInfo {
        domain: p.domain.clone(),
        op_type: p.op_type.clone(),
        since_version: p.since_version,
        until_version: until,
        inputs: p
            .inputs
            .iter()
            .map(|i| PortInfo {
                name: i.name.clone(),
                kind: match (i.kind, i.heterogeneous) {
                    (IrInputKind::Required, _) => "required",
                    (IrInputKind::Optional, _) => "optional",
                    (IrInputKind::Dynamic, false) => "dynamic",
                    (IrInputKind::Dynamic, true) => "dynamic-mixed",
                }
                .to_string(),
                type_param: i.type_param.clone(),
                allowed: allowed(p, &i.type_param),
            })
            .collect(),
        outputs: p
            .outputs
            .iter()
            .map(|o| PortInfo {
                name: o.name.clone(),
                kind: match (o.kind, o.optional) {
                    (IrOutputKind::Dynamic, _) => "dynamic",
                    (_, true) => "optional",
                    _ => "required",
                }
                .to_string(),
                type_param: o.type_param.clone(),
                allowed: allowed(p, &o.type_param),
            })
            .collect(),
        attrs: p
            .attrs
            .iter()
            .map(|a| AttrInfo {
                name: a.name.clone(),
                ty: a.ty.name().to_string(),
                required: a.required,
                default: a.default.as_ref().map(render_value),
            })
            .collect(),
        subgraphs: p.subgraphs.iter().map(|s| s.0.clone()).collect(),
        source: p.source.clone(),
    }
}

/// Every op version of the registry, sorted by domain, op type and version.
pub fn list_ops(reg: &OpRegistry) -> Vec<OpInfo> {
    let mut out = Vec::with_capacity(reg.len());
    for (_, _, versions) in reg.ops() {
        for (i, p) in versions.iter().enumerate() {
            out.push(info(p, versions.get(i + 1).map(|n| n.since_version)));
        }
    }
    out
}

/// The op list as text: one line per op version, e.g.
/// `Clip v11-12  (input:T, min?:T, max?:T) -> (output:T)`, attributes after a `|`.
pub fn render_ops_text(reg: &OpRegistry) -> String {
    let ops = list_ops(reg);
    let mut s = String::new();
    let _ = writeln!(s, "{} op versions", ops.len());
    for o in &ops {
        let name = if o.domain.is_empty() {
            o.op_type.clone()
        } else {
            format!("{}.{}", o.domain, o.op_type)
        };
        let range = match o.until_version {
            Some(u) if u - 1 == o.since_version => format!("v{}", o.since_version),
            Some(u) => format!("v{}-{}", o.since_version, u - 1),
            None => format!("v{}+", o.since_version),
        };
        let port = |p: &PortInfo| {
            let mark = match p.kind.as_str() {
                "optional" => "?",
                "dynamic" => "*",
                "dynamic-mixed" => "+",
                _ => "",
            };
            if p.type_param.is_empty() {
                format!("{}{mark}", p.name)
            } else {
                format!("{}{mark}:{}", p.name, p.type_param)
            }
        };
        let ins: Vec<String> = o.inputs.iter().map(port).collect();
        let outs: Vec<String> = o.outputs.iter().map(port).collect();
        let _ = write!(
            s,
            "{name} {range}  ({}) -> ({})",
            ins.join(", "),
            outs.join(", ")
        );
        if !o.attrs.is_empty() {
            let attrs: Vec<String> = o
                .attrs
                .iter()
                .map(|a| match (&a.default, a.required) {
                    (_, true) => format!("{}:{}!", a.name, a.ty),
                    (Some(d), _) => format!("{}:{}={d}", a.name, a.ty),
                    (None, _) => format!("{}:{}", a.name, a.ty),
                })
                .collect();
            let _ = write!(s, "  | {}", attrs.join(", "));
        }
        if !o.subgraphs.is_empty() {
            let _ = write!(s, "  | subgraphs: {}", o.subgraphs.join(", "));
        }
        if o.source != "builtin" {
            let _ = write!(s, "  [{}]", o.source);
        }
        s.push('\n');
    }
    s
}
