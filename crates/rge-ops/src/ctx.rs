//! The context an infer or verify function works in: the node's inputs (data type, shape,
//! format, known value), its attributes (with the prototype's defaults), its outputs to fill,
//! and — for control-flow ops — a way to infer its subgraphs.

use std::sync::Arc;

use rge_ir::{AttrMap, AttrValue, DataType, Format, Shape, Tensor};

use crate::error::{OpError, OpResult};
use crate::proto::OpProto;
use crate::value::Value;

/// What kind of value flows on an edge. Tensors are the rule; ONNX also has sequences of
/// tensors, optionals (of a tensor or a sequence) and, in ai.onnx.ml, maps and sequences of
/// maps. For a sequence, `dtype`/`shape` describe its elements; for a map, `dtype` is its
/// values' type and `shape` is `[entries]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum ValueKind {
    #[default]
    Tensor,
    Sequence,
    OptionalTensor,
    OptionalSequence,
    Map(MapKey),
    SequenceOfMaps(MapKey),
}

/// The key type of a map: ai.onnx.ml's ops key by int64 or string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapKey {
    Int64,
    String,
}

impl MapKey {
    /// The key's data type.
    pub fn dtype(self) -> DataType {
        match self {
            MapKey::Int64 => DataType::Int64,
            MapKey::String => DataType::String,
        }
    }

    /// The key type of data type `dt`, `None` where maps of it are not supported.
    pub fn of(dt: DataType) -> Option<Self> {
        match dt {
            DataType::Int64 => Some(MapKey::Int64),
            DataType::String => Some(MapKey::String),
            _ => None,
        }
    }
}

impl ValueKind {
    /// The name written to a tensor desc's [`VALUE_KIND_ATTR`] (none for a tensor).
    pub fn name(self) -> &'static str {
        match self {
            ValueKind::Tensor => "tensor",
            ValueKind::Sequence => "sequence",
            ValueKind::OptionalTensor => "optional_tensor",
            ValueKind::OptionalSequence => "optional_sequence",
            ValueKind::Map(MapKey::Int64) => "map_int64",
            ValueKind::Map(MapKey::String) => "map_string",
            ValueKind::SequenceOfMaps(MapKey::Int64) => "sequence_map_int64",
            ValueKind::SequenceOfMaps(MapKey::String) => "sequence_map_string",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "tensor" => ValueKind::Tensor,
            "sequence" => ValueKind::Sequence,
            "optional_tensor" | "optional" => ValueKind::OptionalTensor,
            "optional_sequence" => ValueKind::OptionalSequence,
            "map_int64" => ValueKind::Map(MapKey::Int64),
            "map_string" => ValueKind::Map(MapKey::String),
            "sequence_map_int64" => ValueKind::SequenceOfMaps(MapKey::Int64),
            "sequence_map_string" => ValueKind::SequenceOfMaps(MapKey::String),
            _ => return None,
        })
    }
}

/// The tensor-desc attribute that marks a non-tensor value (sequence, optional).
pub const VALUE_KIND_ATTR: &str = "_value_kind";

/// What inference knows about one tensor.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TensorInfo {
    pub dtype: DataType,
    pub shape: Shape,
    pub format: Format,
    pub kind: ValueKind,
    /// The tensor's elements, when known and small.
    pub value: Option<Arc<Value>>,
}

impl TensorInfo {
    pub fn new(dtype: DataType, shape: Shape) -> Self {
        TensorInfo {
            dtype,
            shape,
            ..Default::default()
        }
    }

    /// A tensor of known value.
    pub fn from_value(v: Value) -> Self {
        TensorInfo {
            dtype: v.dtype,
            shape: v.shape(),
            value: Some(Arc::new(v)),
            ..Default::default()
        }
    }

    /// The dims, `None` for an unknown rank.
    pub fn dims(&self) -> Option<&[i64]> {
        if self.shape.is_unknown_rank() {
            None
        } else {
            Some(self.shape.dims())
        }
    }

    pub fn rank(&self) -> Option<usize> {
        self.shape.rank()
    }
}

/// Infers a control-flow node's subgraphs (implemented by the inference pass).
pub trait SubgraphInfer {
    /// The number of subgraph slots the node has.
    fn slot_count(&self) -> usize;
    /// The slot whose IR name (or instance name) is `name`.
    fn slot_named(&self, name: &str) -> Option<usize>;
    /// The subgraph's declared formal inputs (its Data nodes in `_parent_node_index` order, as
    /// the frontend typed them).
    fn declared_inputs(&self, slot: usize) -> OpResult<Vec<TensorInfo>>;
    /// Infers subgraph `slot`. Its Data node bound to parent input `k` gets the parent's input
    /// `k`, unless `bind` gives another info for `k`. Returns the subgraph's outputs in order.
    fn infer(&mut self, slot: usize, bind: &[(usize, TensorInfo)]) -> OpResult<Vec<TensorInfo>>;
}

/// The context of one node's inference.
pub struct InferCtx<'a> {
    pub(crate) node: &'a str,
    pub(crate) op_type: &'a str,
    pub(crate) opset: i64,
    pub(crate) attrs: &'a AttrMap,
    pub(crate) proto: &'a OpProto,
    pub(crate) inputs: &'a [Option<TensorInfo>],
    pub(crate) outputs: &'a mut Vec<TensorInfo>,
    pub(crate) sub: Option<&'a mut dyn SubgraphInfer>,
}

impl<'a> InferCtx<'a> {
    /// A context over explicit parts (used by the pass, by op libraries and by tests).
    pub fn new(
        node: &'a str,
        proto: &'a OpProto,
        opset: i64,
        attrs: &'a AttrMap,
        inputs: &'a [Option<TensorInfo>],
        outputs: &'a mut Vec<TensorInfo>,
    ) -> Self {
        InferCtx {
            node,
            op_type: &proto.op_type,
            opset,
            attrs,
            proto,
            inputs,
            outputs,
            sub: None,
        }
    }

    pub fn node_name(&self) -> &str {
        self.node
    }
    pub fn op_type(&self) -> &'a str {
        self.op_type
    }
    /// The opset version of the op's domain the graph imports.
    pub fn opset(&self) -> i64 {
        self.opset
    }
    pub fn proto(&self) -> &'a OpProto {
        self.proto
    }
    pub fn attrs(&self) -> &'a AttrMap {
        self.attrs
    }

    // ---- inputs ----

    /// The number of input slots of the node (present or not).
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// The input slots.
    pub fn inputs(&self) -> &'a [Option<TensorInfo>] {
        self.inputs
    }

    /// Input `i`, `None` if the node has no such input or it is absent (an omitted optional).
    pub fn opt_input(&self, i: usize) -> Option<&'a TensorInfo> {
        self.inputs.get(i).and_then(Option::as_ref)
    }

    /// Input `i`, which must be present.
    pub fn input(&self, i: usize) -> OpResult<&'a TensorInfo> {
        self.opt_input(i).ok_or_else(|| {
            let name = self
                .proto
                .inputs
                .get(i)
                .map_or(String::new(), |p| format!(" (`{}`)", p.name));
            OpError(format!("input {i}{name} is missing"))
        })
    }

    /// The known value of input `i`.
    pub fn input_value(&self, i: usize) -> Option<&'a Value> {
        self.opt_input(i).and_then(|t| t.value.as_deref())
    }

    /// The dims of input `i`, `None` when its rank is unknown.
    pub fn input_dims(&self, i: usize) -> OpResult<Option<&'a [i64]>> {
        Ok(self.input(i)?.dims())
    }

    // ---- attributes ----

    fn lookup(&self, name: &str) -> Option<&'a AttrValue> {
        self.attrs
            .get(name)
            .or_else(|| self.proto.attr(name).and_then(|a| a.default.as_ref()))
    }

    fn mismatch(name: &str, want: &str, v: &AttrValue) -> OpError {
        OpError(format!(
            "attribute `{name}` is {}, not {want}",
            v.kind_name()
        ))
    }

    /// True if the node sets attribute `name` (defaults do not count).
    pub fn has_attr(&self, name: &str) -> bool {
        self.attrs.contains(name)
    }

    /// Int attribute `name` (or its default), `None` if neither.
    pub fn attr_int_opt(&self, name: &str) -> OpResult<Option<i64>> {
        match self.lookup(name) {
            None => Ok(None),
            Some(AttrValue::Int(x)) => Ok(Some(*x)),
            Some(AttrValue::Bool(b)) => Ok(Some(i64::from(*b))),
            Some(AttrValue::DataType(d)) => Ok(Some(d.ge_value() as i64)),
            Some(v) => Err(Self::mismatch(name, "int", v)),
        }
    }

    /// Int attribute `name` (or its default); missing is an error.
    pub fn attr_int(&self, name: &str) -> OpResult<i64> {
        self.attr_int_opt(name)?
            .ok_or_else(|| OpError(format!("required attribute `{name}` is missing")))
    }

    pub fn attr_float_opt(&self, name: &str) -> OpResult<Option<f32>> {
        match self.lookup(name) {
            None => Ok(None),
            Some(AttrValue::Float(x)) => Ok(Some(*x)),
            Some(AttrValue::Int(x)) => Ok(Some(*x as f32)),
            Some(v) => Err(Self::mismatch(name, "float", v)),
        }
    }

    pub fn attr_float(&self, name: &str) -> OpResult<f32> {
        self.attr_float_opt(name)?
            .ok_or_else(|| OpError(format!("required attribute `{name}` is missing")))
    }

    pub fn attr_str_opt(&self, name: &str) -> OpResult<Option<&'a str>> {
        match self.lookup(name) {
            None => Ok(None),
            Some(AttrValue::String(s)) => Ok(Some(s.as_str())),
            Some(AttrValue::Bytes(b)) => std::str::from_utf8(b)
                .map(Some)
                .map_err(|_| OpError(format!("attribute `{name}` is not UTF-8"))),
            Some(v) => Err(Self::mismatch(name, "string", v)),
        }
    }

    pub fn attr_str(&self, name: &str) -> OpResult<&'a str> {
        self.attr_str_opt(name)?
            .ok_or_else(|| OpError(format!("required attribute `{name}` is missing")))
    }

    /// Ints attribute `name` (or its default).
    pub fn attr_ints(&self, name: &str) -> OpResult<Option<&'a [i64]>> {
        match self.lookup(name) {
            None => Ok(None),
            Some(AttrValue::ListInt(x)) => Ok(Some(x.as_slice())),
            Some(AttrValue::ListFloat(x)) if x.is_empty() => Ok(Some(&[])),
            Some(AttrValue::ListString(x)) if x.is_empty() => Ok(Some(&[])),
            Some(v) => Err(Self::mismatch(name, "ints", v)),
        }
    }

    pub fn attr_floats(&self, name: &str) -> OpResult<Option<&'a [f32]>> {
        match self.lookup(name) {
            None => Ok(None),
            Some(AttrValue::ListFloat(x)) => Ok(Some(x.as_slice())),
            Some(AttrValue::ListInt(x)) if x.is_empty() => Ok(Some(&[])),
            Some(v) => Err(Self::mismatch(name, "floats", v)),
        }
    }

    pub fn attr_strings(&self, name: &str) -> OpResult<Option<&'a [String]>> {
        match self.lookup(name) {
            None => Ok(None),
            Some(AttrValue::ListString(x)) => Ok(Some(x.as_slice())),
            Some(AttrValue::ListInt(x)) if x.is_empty() => Ok(Some(&[])),
            Some(v) => Err(Self::mismatch(name, "strings", v)),
        }
    }

    pub fn attr_tensor(&self, name: &str) -> OpResult<Option<&'a Tensor>> {
        match self.lookup(name) {
            None => Ok(None),
            Some(AttrValue::Tensor(t)) => Ok(Some(t)),
            Some(v) => Err(Self::mismatch(name, "tensor", v)),
        }
    }

    /// A data type attribute: an ONNX `TensorProto.DataType` int or a typed data type.
    pub fn attr_dtype_opt(&self, name: &str) -> OpResult<Option<DataType>> {
        match self.lookup(name) {
            None => Ok(None),
            Some(AttrValue::DataType(d)) => Ok(Some(*d)),
            // 0 is ONNX's UNDEFINED: "not set" (e.g. QuantizeLinear's output_dtype).
            Some(AttrValue::Int(0)) => Ok(None),
            Some(AttrValue::Int(code)) => i32::try_from(*code)
                .ok()
                .and_then(crate::onnx_types::from_onnx)
                .map(Some)
                .ok_or_else(|| {
                    OpError(format!(
                        "attribute `{name}`: {code} is not a supported ONNX data type"
                    ))
                }),
            Some(v) => Err(Self::mismatch(name, "data type", v)),
        }
    }

    // ---- outputs ----

    /// The number of outputs of the node.
    pub fn output_count(&self) -> usize {
        self.outputs.len()
    }

    /// Sets output `i`'s data type and shape (and forgets any value). Outputs the node does
    /// not have are ignored (ONNX optional outputs).
    pub fn set_output(&mut self, i: usize, dtype: DataType, shape: Shape) {
        if let Some(o) = self.outputs.get_mut(i) {
            o.dtype = dtype;
            o.shape = shape;
            o.value = None;
        }
    }

    /// Sets output `i` from dims.
    pub fn set_output_dims(&mut self, i: usize, dtype: DataType, dims: &[i64]) {
        self.set_output(i, dtype, Shape::from_slice(dims));
    }

    /// Sets output `i` to a known value (data type and shape follow it). Values too large to
    /// keep only set the type and shape.
    pub fn set_output_value(&mut self, i: usize, v: Value) {
        if let Some(o) = self.outputs.get_mut(i) {
            o.dtype = v.dtype;
            o.shape = v.shape();
            o.value = (v.len() <= crate::value::MAX_VALUE_ELEMENTS).then(|| Arc::new(v));
        }
    }

    /// Sets output `i` to a whole info (kind, value…).
    pub fn set_output_info(&mut self, i: usize, info: TensorInfo) {
        if let Some(o) = self.outputs.get_mut(i) {
            let format = o.format;
            *o = info;
            o.format = format;
        }
    }

    /// Marks output `i` as a sequence/optional kind.
    pub fn set_output_kind(&mut self, i: usize, kind: ValueKind) {
        if let Some(o) = self.outputs.get_mut(i) {
            o.kind = kind;
        }
    }

    /// Output `i` as set so far.
    pub fn output(&self, i: usize) -> Option<&TensorInfo> {
        self.outputs.get(i)
    }

    // ---- subgraphs ----

    /// The subgraph inferer, for control-flow ops.
    pub fn subgraphs(&mut self) -> OpResult<&mut dyn SubgraphInfer> {
        match self.sub.as_deref_mut() {
            Some(s) => Ok(s),
            None => Err(OpError("the node has no subgraphs".into())),
        }
    }
}
