//! Op prototypes (the seed's OpProto / IR metadata, §4.4): per op type and version, the inputs
//! with their kind (required, optional, dynamic) and type parameter, the outputs, the attributes
//! with type, default and whether required, the type constraints, the subgraph IR names, and
//! the functions: infer (dtype + shape, and small constant values), verify, format rule.
//!
//! Signatures are written in a small notation, parsed when the prototype is registered:
//!
//! ```text
//! sig:   "X:T, scale?:T, inputs*:T -> Y:T, mask?:T1"   (? optional, * dynamic/variadic,
//!                                                     + dynamic with mixed data types)
//! attrs: "axis:int=0, perm:ints, mode:string=constant, to:int!"   (! required)
//! ```

use std::fmt;
use std::sync::Arc;

use rge_ir::op_desc::SubgraphKind;
use rge_ir::{AttrValue, DataType, IrInputKind, IrOutputKind};

use crate::ctx::InferCtx;
use crate::error::OpResult;

/// An infer function: reads inputs and attributes from the context and sets every output's
/// data type and shape (and, where it can, its constant value).
pub type InferFn = fn(&mut InferCtx<'_>) -> OpResult<()>;
/// An op-specific verify function, run after the prototype's generic checks.
pub type VerifyFn = fn(&InferCtx<'_>) -> OpResult<()>;

/// How an op's infer function is implemented.
#[derive(Clone)]
pub enum InferImpl {
    /// A Rust function (built-in ops).
    Native(InferFn),
    /// A function of a loaded op library, called through the C ABI.
    Plugin(Arc<crate::library::PluginOp>),
}

impl fmt::Debug for InferImpl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InferImpl::Native(_) => f.write_str("Native"),
            InferImpl::Plugin(p) => write!(f, "Plugin({})", p.library),
        }
    }
}

/// How output formats follow input formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatRule {
    /// Elementwise: outputs take the format shared by the inputs of the same rank (ND when
    /// they disagree or none has one).
    FollowInputs,
    /// Outputs are ND (the op reinterprets the layout: Reshape, MatMul, Flatten …).
    Nd,
    /// Spatial ops (Conv, Pool, norms): outputs take the data input's NCHW/NHWC/NCDHW format;
    /// an ND input of rank 4 or 5 is taken as ONNX's channel-first NCHW/NCDHW.
    Spatial,
    /// Transpose: a permutation between NCHW and NHWC changes the format accordingly.
    Transpose,
}

/// The type of an attribute (ONNX `AttributeProto.AttributeType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttrType {
    Int,
    Float,
    String,
    Tensor,
    Graph,
    Ints,
    Floats,
    Strings,
    Tensors,
    Graphs,
    SparseTensor,
    TypeProto,
}

impl AttrType {
    pub fn name(self) -> &'static str {
        match self {
            AttrType::Int => "int",
            AttrType::Float => "float",
            AttrType::String => "string",
            AttrType::Tensor => "tensor",
            AttrType::Graph => "graph",
            AttrType::Ints => "ints",
            AttrType::Floats => "floats",
            AttrType::Strings => "strings",
            AttrType::Tensors => "tensors",
            AttrType::Graphs => "graphs",
            AttrType::SparseTensor => "sparse_tensor",
            AttrType::TypeProto => "type_proto",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "int" => AttrType::Int,
            "float" => AttrType::Float,
            "string" => AttrType::String,
            "tensor" => AttrType::Tensor,
            "graph" => AttrType::Graph,
            "ints" => AttrType::Ints,
            "floats" => AttrType::Floats,
            "strings" => AttrType::Strings,
            "tensors" => AttrType::Tensors,
            "graphs" => AttrType::Graphs,
            "sparse_tensor" => AttrType::SparseTensor,
            "type_proto" => AttrType::TypeProto,
            _ => return None,
        })
    }

    /// True if `v` is a value of this type. Empty lists match every list type (a frontend
    /// cannot tell an empty `ints` from an empty `floats`); a data type may be an int (ONNX
    /// `to`) or a typed data type; a graph may be any value (frontends move bodies out to
    /// subgraphs).
    pub fn accepts(self, v: &AttrValue) -> bool {
        use AttrValue as V;
        let empty_list = match v {
            V::ListInt(x) => x.is_empty(),
            V::ListFloat(x) => x.is_empty(),
            V::ListString(x) => x.is_empty(),
            V::ListTensor(x) => x.is_empty(),
            V::ListGraph(x) => x.is_empty(),
            _ => false,
        };
        match self {
            AttrType::Int => matches!(v, V::Int(_) | V::DataType(_) | V::Bool(_)),
            AttrType::Float => matches!(v, V::Float(_)),
            AttrType::String => matches!(v, V::String(_) | V::Bytes(_)),
            AttrType::Tensor | AttrType::SparseTensor => matches!(v, V::Tensor(_)),
            AttrType::Graph => true,
            AttrType::Ints => empty_list || matches!(v, V::ListInt(_) | V::ListDataType(_)),
            AttrType::Floats => empty_list || matches!(v, V::ListFloat(_)),
            AttrType::Strings => empty_list || matches!(v, V::ListString(_) | V::ListBytes(_)),
            AttrType::Tensors => empty_list || matches!(v, V::ListTensor(_)),
            AttrType::Graphs => true,
            AttrType::TypeProto => true,
        }
    }
}

/// One declared input.
#[derive(Debug, Clone, PartialEq)]
pub struct InputProto {
    pub name: String,
    pub kind: IrInputKind,
    /// The type parameter (`T`), or "" when any type is allowed.
    pub type_param: String,
    /// A dynamic input whose parts may differ in data type (ONNX heterogeneous variadics,
    /// written `name+:V`).
    pub heterogeneous: bool,
}

/// One declared output.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputProto {
    pub name: String,
    pub kind: IrOutputKind,
    /// ONNX optional outputs (Dropout's mask…): may be absent on a node.
    pub optional: bool,
    pub type_param: String,
}

/// One declared attribute.
#[derive(Debug, Clone, PartialEq)]
pub struct AttrProto {
    pub name: String,
    pub ty: AttrType,
    pub required: bool,
    pub default: Option<AttrValue>,
}

/// A type parameter and the data types it allows.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeConstraint {
    pub name: String,
    pub allowed: Vec<DataType>,
}

/// An op prototype for one (domain, op type) from `since_version` on (until the next
/// registered version of the same op).
#[derive(Debug, Clone)]
pub struct OpProto {
    pub domain: String,
    pub op_type: String,
    pub since_version: i64,
    pub inputs: Vec<InputProto>,
    pub outputs: Vec<OutputProto>,
    pub attrs: Vec<AttrProto>,
    pub type_constraints: Vec<TypeConstraint>,
    pub subgraphs: Vec<(String, SubgraphKind)>,
    pub infer: InferImpl,
    pub verify: Option<VerifyFn>,
    pub format: FormatRule,
    /// Where it came from: "builtin" or the op library's path.
    pub source: String,
    /// A problem found while parsing the notation; registration reports it.
    pub(crate) parse_error: Option<String>,
}

fn no_infer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    crate::bail!("op `{}` has no infer function", ctx.op_type())
}

/// Splits on commas that are not inside brackets.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ',' if depth == 0 => {
                out.push(s[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    let last = s[start..].trim();
    if !last.is_empty() {
        out.push(last);
    }
    out.retain(|x| !x.is_empty());
    out
}

fn parse_default(ty: AttrType, s: &str) -> Result<AttrValue, String> {
    let bad = || format!("bad default `{s}` for a {} attribute", ty.name());
    let list = |s: &str| -> Result<Vec<String>, String> {
        let inner = s
            .strip_prefix('[')
            .and_then(|x| x.strip_suffix(']'))
            .ok_or_else(bad)?;
        Ok(split_top(inner).into_iter().map(str::to_string).collect())
    };
    Ok(match ty {
        AttrType::Int => AttrValue::Int(s.parse().map_err(|_| bad())?),
        AttrType::Float => AttrValue::Float(s.parse().map_err(|_| bad())?),
        AttrType::String => AttrValue::String(s.to_string()),
        AttrType::Ints => AttrValue::ListInt(
            list(s)?
                .iter()
                .map(|x| x.parse().map_err(|_| bad()))
                .collect::<Result<_, _>>()?,
        ),
        AttrType::Floats => AttrValue::ListFloat(
            list(s)?
                .iter()
                .map(|x| x.parse().map_err(|_| bad()))
                .collect::<Result<_, _>>()?,
        ),
        AttrType::Strings => AttrValue::ListString(list(s)?),
        _ => return Err(bad()),
    })
}

impl OpProto {
    /// A prototype of `op_type` in `domain` ("" is the default ONNX domain) from version
    /// `since_version` on, with no ports yet.
    pub fn new(domain: &str, op_type: &str, since_version: i64) -> Self {
        OpProto {
            domain: crate::registry::normalize_domain(domain).to_string(),
            op_type: op_type.to_string(),
            since_version,
            inputs: Vec::new(),
            outputs: Vec::new(),
            attrs: Vec::new(),
            type_constraints: Vec::new(),
            subgraphs: Vec::new(),
            infer: InferImpl::Native(no_infer),
            verify: None,
            format: FormatRule::FollowInputs,
            source: "builtin".to_string(),
            parse_error: None,
        }
    }

    fn note_error(&mut self, msg: String) {
        if self.parse_error.is_none() {
            self.parse_error = Some(msg);
        }
    }

    /// Parses a signature `"A:T, B?:T, rest*:T -> Y:T, Z?:T"` (appends to the ports).
    pub fn sig(mut self, s: &str) -> Self {
        let (ins, outs) = s.split_once("->").unwrap_or((s, ""));
        for part in split_top(ins) {
            let (name, tp) = part.split_once(':').unwrap_or((part, ""));
            let name = name.trim();
            let (name, kind, heterogeneous) = if let Some(n) = name.strip_suffix('?') {
                (n, IrInputKind::Optional, false)
            } else if let Some(n) = name.strip_suffix('*') {
                (n, IrInputKind::Dynamic, false)
            } else if let Some(n) = name.strip_suffix('+') {
                (n, IrInputKind::Dynamic, true)
            } else {
                (name, IrInputKind::Required, false)
            };
            if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                self.note_error(format!("bad input `{part}` in signature `{s}`"));
                continue;
            }
            self.inputs.push(InputProto {
                name: name.to_string(),
                kind,
                type_param: tp.trim().to_string(),
                heterogeneous,
            });
        }
        for part in split_top(outs) {
            let (name, tp) = part.split_once(':').unwrap_or((part, ""));
            let name = name.trim();
            let (name, kind, optional) = if let Some(n) = name.strip_suffix('?') {
                (n, IrOutputKind::Required, true)
            } else if let Some(n) = name.strip_suffix('*') {
                (n, IrOutputKind::Dynamic, false)
            } else {
                (name, IrOutputKind::Required, false)
            };
            if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
                self.note_error(format!("bad output `{part}` in signature `{s}`"));
                continue;
            }
            self.outputs.push(OutputProto {
                name: name.to_string(),
                kind,
                optional,
                type_param: tp.trim().to_string(),
            });
        }
        self
    }

    /// Parses attributes `"axis:int=0, perm:ints, to:int!"` (appends).
    pub fn attrs(mut self, s: &str) -> Self {
        for part in split_top(s) {
            let (decl, default) = match part.split_once('=') {
                Some((d, v)) => (d.trim(), Some(v.trim())),
                None => (part, None),
            };
            let (name, ty) = decl.split_once(':').unwrap_or((decl, ""));
            let (ty, required) = match ty.trim().strip_suffix('!') {
                Some(t) => (t, true),
                None => (ty.trim(), false),
            };
            let Some(ty) = AttrType::parse(ty) else {
                self.note_error(format!("attribute `{part}`: unknown type `{ty}`"));
                continue;
            };
            let default = match default.map(|d| parse_default(ty, d)).transpose() {
                Ok(d) => d,
                Err(e) => {
                    self.note_error(format!("attribute `{}`: {e}", name.trim()));
                    None
                }
            };
            self.attrs.push(AttrProto {
                name: name.trim().to_string(),
                ty,
                required,
                default,
            });
        }
        self
    }

    /// Adds a type constraint.
    pub fn tc(mut self, name: &str, allowed: &[DataType]) -> Self {
        self.type_constraints.push(TypeConstraint {
            name: name.to_string(),
            allowed: allowed.to_vec(),
        });
        self
    }

    /// Adds a subgraph IR name (static).
    pub fn subgraph(mut self, name: &str) -> Self {
        self.subgraphs
            .push((name.to_string(), SubgraphKind::Static));
        self
    }

    pub fn infer(mut self, f: InferFn) -> Self {
        self.infer = InferImpl::Native(f);
        self
    }

    pub fn verify(mut self, f: VerifyFn) -> Self {
        self.verify = Some(f);
        self
    }

    pub fn format(mut self, rule: FormatRule) -> Self {
        self.format = rule;
        self
    }

    /// The constraint named `name`.
    pub fn constraint(&self, name: &str) -> Option<&TypeConstraint> {
        self.type_constraints.iter().find(|t| t.name == name)
    }

    /// The declared attribute `name`.
    pub fn attr(&self, name: &str) -> Option<&AttrProto> {
        self.attrs.iter().find(|a| a.name == name)
    }

    /// Checks the prototype itself: the notation parsed, names are unique, every type
    /// parameter has a constraint (or is empty), defaults have the declared type.
    pub fn check(&self) -> Result<(), String> {
        if let Some(e) = &self.parse_error {
            return Err(e.clone());
        }
        if self.op_type.is_empty() {
            return Err("empty op type".into());
        }
        if self.since_version < 1 {
            return Err(format!("since_version {} is below 1", self.since_version));
        }
        let mut names = std::collections::HashSet::new();
        for n in self.inputs.iter().map(|i| &i.name) {
            if !names.insert(n) {
                return Err(format!("input `{n}` declared twice"));
            }
        }
        let mut names = std::collections::HashSet::new();
        for n in self.outputs.iter().map(|i| &i.name) {
            if !names.insert(n) {
                return Err(format!("output `{n}` declared twice"));
            }
        }
        let mut names = std::collections::HashSet::new();
        for a in &self.attrs {
            if !names.insert(&a.name) {
                return Err(format!("attribute `{}` declared twice", a.name));
            }
            if let Some(d) = &a.default {
                if !a.ty.accepts(d) {
                    return Err(format!(
                        "attribute `{}`: default is {}, not {}",
                        a.name,
                        d.kind_name(),
                        a.ty.name()
                    ));
                }
            }
        }
        let params = self
            .inputs
            .iter()
            .map(|i| &i.type_param)
            .chain(self.outputs.iter().map(|o| &o.type_param));
        for p in params {
            if !p.is_empty() && self.constraint(p).is_none() {
                return Err(format!("type parameter `{p}` has no constraint"));
            }
        }
        Ok(())
    }

    /// The IR metadata an OpDesc created from this prototype carries.
    pub fn ir_meta(&self) -> rge_ir::op_desc::IrMeta {
        rge_ir::op_desc::IrMeta {
            inputs: self
                .inputs
                .iter()
                .map(|i| (i.name.clone(), i.kind))
                .collect(),
            outputs: self
                .outputs
                .iter()
                .map(|o| (o.name.clone(), o.kind))
                .collect(),
            attr_names: self.attrs.iter().map(|a| a.name.clone()).collect(),
            subgraphs: self.subgraphs.clone(),
        }
    }
}

/// Data type sets for type constraints.
pub mod types {
    use rge_ir::DataType::{self, *};

    pub const FLOATS: &[DataType] = &[Float16, Float, Double, Bf16];
    pub const FLOAT8: &[DataType] = &[
        Float8E4M3Fn,
        Float8E4M3Fnuz,
        Float8E5M2,
        Float8E5M2Fnuz,
        Float8E8M0,
        Float4E2M1,
    ];
    pub const SIGNED_INTS: &[DataType] = &[Int8, Int16, Int32, Int64];
    pub const UNSIGNED_INTS: &[DataType] = &[Uint8, Uint16, Uint32, Uint64];
    pub const INTS: &[DataType] = &[Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64];
    pub const INT32_64: &[DataType] = &[Int32, Int64];
    pub const INT64: &[DataType] = &[Int64];
    pub const BOOL: &[DataType] = &[Bool];
    pub const STRING: &[DataType] = &[String];
    pub const FLOAT32: &[DataType] = &[Float];
    pub const NUMERIC: &[DataType] = &[
        Float16, Float, Double, Bf16, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64,
    ];
    pub const SIGNED_NUMERIC: &[DataType] =
        &[Float16, Float, Double, Bf16, Int8, Int16, Int32, Int64];
    pub const COMPLEX: &[DataType] = &[Complex64, Complex128];
    /// Every tensor element type ONNX has a counterpart for.
    pub const ALL: &[DataType] = &[
        Float16,
        Float,
        Double,
        Bf16,
        Int8,
        Int16,
        Int32,
        Int64,
        Uint8,
        Uint16,
        Uint32,
        Uint64,
        Bool,
        String,
        Complex64,
        Complex128,
        Float8E4M3Fn,
        Float8E4M3Fnuz,
        Float8E5M2,
        Float8E5M2Fnuz,
        Float8E8M0,
        Float4E2M1,
        Int4,
        Uint4,
        Uint1,
        Int2,
        Uint2,
        Float6E2M3,
        Float6E3M2,
    ];
    /// Quantized 8/4/2-bit and float8 types (QuantizeLinear outputs).
    pub const QUANT: &[DataType] = &[
        Int8,
        Uint8,
        Int16,
        Uint16,
        Int32,
        Int4,
        Uint4,
        Int2,
        Uint2,
        Float8E4M3Fn,
        Float8E4M3Fnuz,
        Float8E5M2,
        Float8E5M2Fnuz,
        Float4E2M1,
        Float8E8M0,
        Float6E2M3,
        Float6E3M2,
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notation_parses() {
        let p = OpProto::new("", "Pad", 18)
            .sig("data:T, pads:tensor(int64), constant_value?:T, axes?:Tind -> output:T")
            .attrs("mode:string=constant, perm:ints=[1, 0], alpha:float=0.5, to:int!");
        // `tensor(int64)` is not a declared type parameter.
        assert!(p.check().is_err());
        let p = OpProto::new("ai.onnx", "Concat", 13)
            .sig("inputs*:T -> concat_result:T")
            .attrs("axis:int!, perm:ints=[1, 0]")
            .tc("T", types::ALL);
        p.check().unwrap();
        assert_eq!(p.domain, "");
        assert_eq!(p.inputs[0].kind, IrInputKind::Dynamic);
        assert!(p.attrs[0].required);
        assert_eq!(p.attrs[1].default, Some(AttrValue::ListInt(vec![1, 0])));
        let bad = OpProto::new("", "X", 1).attrs("a:nope");
        assert!(bad.check().unwrap_err().contains("unknown type"));
        let bad = OpProto::new("", "X", 1).attrs("a:int=zz");
        assert!(bad.check().unwrap_err().contains("bad default"));
    }
}
