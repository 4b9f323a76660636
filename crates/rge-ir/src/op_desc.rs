//! `OpDesc`: an op's static description (name, type, input/output tensor descs addressed by
//! index and by name, attributes, IR metadata) and the compile state filled in along the
//! pipeline (id, stream, offsets, workspaces, engine). The seed's OpDesc/OpMetadata/IRMetaData.

use std::borrow::Cow;
use std::sync::Arc;

use crate::attr::{AttrMap, HasAttrs};
use crate::error::{AnchorSide, IrError, Result};
use crate::ports::Ports;
use crate::tensor_desc::TensorDesc;

/// How an IR input is declared by the op prototype (GE's IrInputType; the value is the wire value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IrInputKind {
    Required = 0,
    Optional = 1,
    Dynamic = 2,
}

/// How an IR output is declared (GE's IrOutputType).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IrOutputKind {
    Required = 0,
    Dynamic = 1,
}

/// How a subgraph slot is declared: one instance, or a dynamic number (`branches0`, `branches1`…).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SubgraphKind {
    Static = 0,
    Dynamic = 1,
}

impl IrInputKind {
    pub fn from_value(v: i64) -> Option<Self> {
        match v {
            0 => Some(Self::Required),
            1 => Some(Self::Optional),
            2 => Some(Self::Dynamic),
            _ => None,
        }
    }
}

impl IrOutputKind {
    pub fn from_value(v: i64) -> Option<Self> {
        match v {
            0 => Some(Self::Required),
            1 => Some(Self::Dynamic),
            _ => None,
        }
    }
}

/// The op prototype's view of an op, copied into each instance (the seed's IRMetaData).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct IrMeta {
    pub inputs: Vec<(String, IrInputKind)>,
    pub outputs: Vec<(String, IrOutputKind)>,
    pub attr_names: Vec<String>,
    pub subgraphs: Vec<(String, SubgraphKind)>,
}

/// What the compile pipeline fills in (the seed's OpMetadata beyond name/type), including the
/// legacy OpDef fields GE still round-trips.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CompileState {
    pub input_offsets: Vec<i64>,
    pub output_offsets: Vec<i64>,
    pub workspace: Vec<i64>,
    pub workspace_bytes: Vec<i64>,
    pub is_input_const: Vec<bool>,
    /// Legacy OpDef fields (`input_name`, `src_name`, `src_index`, `dst_name`, `dst_index`):
    /// kept for round trips; edges are never built from them.
    pub legacy_input_names: Vec<String>,
    pub src_names: Vec<String>,
    pub src_indexes: Vec<i64>,
    pub dst_names: Vec<String>,
    pub dst_indexes: Vec<i64>,
}

/// The lazily allocated part of an op. Placement sets only the engine names, so those sit
/// here directly; the bulky IR metadata and compile state have boxes of their own.
#[derive(Debug, Clone, Default)]
struct OpDescExt {
    /// Shared texts (`None` for ""): placement gives every op of an engine the same one.
    engine_name: Option<Arc<str>>,
    kernel_lib_name: Option<Arc<str>>,
    stream_id: i64,
    /// Subgraph instance names by IR subgraph index; "" for an unset slot.
    subgraph_instances: Vec<String>,
    ir: Option<Box<IrMeta>>,
    compile: Option<Box<CompileState>>,
}

/// `text` as an engine or library name: `None` for "".
fn shared_text(text: &str) -> Option<Arc<str>> {
    (!text.is_empty()).then(|| Arc::from(text))
}

/// A shared engine or library name: `None` for "".
fn shared_clone(text: &Arc<str>) -> Option<Arc<str>> {
    (!text.is_empty()).then(|| text.clone())
}

fn boxed_eq<T: PartialEq + Default>(a: &Option<Box<T>>, b: &Option<Box<T>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        (Some(x), None) | (None, Some(x)) => **x == T::default(),
        (None, None) => true,
    }
}

impl PartialEq for OpDescExt {
    fn eq(&self, o: &Self) -> bool {
        self.engine_name == o.engine_name
            && self.kernel_lib_name == o.kernel_lib_name
            && self.stream_id == o.stream_id
            && self.subgraph_instances == o.subgraph_instances
            && boxed_eq(&self.ir, &o.ir)
            && boxed_eq(&self.compile, &o.compile)
    }
}

/// One op. Rarely used parts live in a lazily allocated box so that a plain node stays small.
#[derive(Debug, Clone, Default)]
pub struct OpDesc {
    name: Box<str>,
    op_type: Box<str>,
    /// Unnamed ports are reported as `__input<i>` / `__output<i>`, as GE names them.
    inputs: Ports,
    outputs: Ports,
    attrs: AttrMap,
    id: i64,
    /// The op set domain; "" is the default ONNX domain ("ai.onnx" is stored as "").
    domain: Box<str>,
    /// The version of `domain`'s op set the model imports; `None` when not known.
    opset: Option<i64>,
    ext: Option<Box<OpDescExt>>,
}

impl PartialEq for OpDesc {
    fn eq(&self, other: &Self) -> bool {
        // A box holding only defaults equals no box.
        let ext_eq = boxed_eq(&self.ext, &other.ext);
        self.name == other.name
            && self.op_type == other.op_type
            && self.id == other.id
            && self.domain == other.domain
            && self.opset == other.opset
            && self.inputs == other.inputs
            && self.outputs == other.outputs
            && self.attrs == other.attrs
            && ext_eq
    }
}

/// ONNX's explicit name of its default domain, which rge stores as "".
const DEFAULT_DOMAIN_ALIAS: &str = "ai.onnx";

const UNNAMED_INPUT: &str = "__input";
const UNNAMED_OUTPUT: &str = "__output";

impl OpDesc {
    pub fn new(name: impl Into<String>, op_type: impl Into<String>) -> Self {
        OpDesc {
            name: name.into().into_boxed_str(),
            op_type: op_type.into().into_boxed_str(),
            ..Default::default()
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn set_name(&mut self, name: impl Into<String>) {
        self.name = name.into().into_boxed_str();
    }
    pub fn op_type(&self) -> &str {
        &self.op_type
    }
    /// The tensor of a Const/Constant op (its `value` attribute); `None` for any other op.
    pub fn const_value(&self) -> Option<&crate::Tensor> {
        if !crate::op_types::is_const(&self.op_type) {
            return None;
        }
        match self.attrs.get("value") {
            Some(crate::AttrValue::Tensor(t)) => Some(t),
            _ => None,
        }
    }
    pub fn set_op_type(&mut self, op_type: impl Into<String>) {
        self.op_type = op_type.into().into_boxed_str();
    }
    /// The op set domain; "" is the default ONNX domain.
    pub fn domain(&self) -> &str {
        &self.domain
    }
    /// Sets the op set domain; "ai.onnx" is the default domain and is stored as "".
    pub fn set_domain(&mut self, domain: impl Into<String>) {
        let d = domain.into();
        self.domain = if d == DEFAULT_DOMAIN_ALIAS {
            Box::default()
        } else {
            d.into_boxed_str()
        };
    }
    /// The version of this op's domain's op set that the model imports, when known.
    pub fn opset(&self) -> Option<i64> {
        self.opset
    }
    pub fn set_opset(&mut self, opset: Option<i64>) {
        self.opset = opset;
    }
    /// The topological position, renumbered by sorting.
    pub fn id(&self) -> i64 {
        self.id
    }
    pub fn set_id(&mut self, id: i64) {
        self.id = id;
    }
    pub fn stream_id(&self) -> i64 {
        self.ext.as_ref().map_or(0, |e| e.stream_id)
    }
    pub fn set_stream_id(&mut self, id: i64) {
        if id != 0 || self.ext.is_some() {
            self.ext_mut().stream_id = id;
        }
    }

    // ---- inputs ----

    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }
    pub fn inputs(&self) -> &[TensorDesc] {
        &self.inputs.descs
    }
    pub fn input(&self, i: usize) -> Option<&TensorDesc> {
        self.inputs.descs.get(i)
    }
    pub fn input_mut(&mut self, i: usize) -> Option<&mut TensorDesc> {
        self.inputs.descs.get_mut(i)
    }
    pub fn input_by_name(&self, name: &str) -> Option<&TensorDesc> {
        self.input_index(name).map(|i| &self.inputs.descs[i])
    }
    pub fn input_by_name_mut(&mut self, name: &str) -> Option<&mut TensorDesc> {
        self.input_index(name)
            .map(move |i| &mut self.inputs.descs[i])
    }
    /// Name → index; unnamed descs answer to `__input<i>`.
    pub fn input_index(&self, name: &str) -> Option<usize> {
        self.inputs.find(UNNAMED_INPUT, name)
    }
    /// Index → name; unnamed descs are `__input<i>`.
    pub fn input_name(&self, i: usize) -> Option<Cow<'_, str>> {
        self.inputs.name(UNNAMED_INPUT, i)
    }
    /// The name as set, "" when unnamed.
    pub fn raw_input_name(&self, i: usize) -> Option<&str> {
        self.inputs.raw_name(i)
    }

    fn ports(&self, side: AnchorSide) -> (&Ports, &'static str) {
        match side {
            AnchorSide::In => (&self.inputs, UNNAMED_INPUT),
            AnchorSide::Out => (&self.outputs, UNNAMED_OUTPUT),
        }
    }

    fn ports_mut(&mut self, side: AnchorSide) -> (&mut Ports, &'static str) {
        match side {
            AnchorSide::In => (&mut self.inputs, UNNAMED_INPUT),
            AnchorSide::Out => (&mut self.outputs, UNNAMED_OUTPUT),
        }
    }

    fn check_new_name(&self, side: AnchorSide, name: &str) -> Result<()> {
        let (ports, prefix) = self.ports(side);
        if !name.is_empty() && ports.find(prefix, name).is_some() {
            return Err(IrError::DuplicatePortName {
                op: self.name.to_string(),
                side,
                name: name.to_string(),
            });
        }
        Ok(())
    }

    fn out_of_range(&self, side: AnchorSide, index: usize) -> IrError {
        IrError::AnchorOutOfRange {
            node: self.name.to_string(),
            side,
            index: index as i32,
            count: self.ports(side).0.len(),
        }
    }

    fn add_port(&mut self, side: AnchorSide, name: &str, desc: TensorDesc) -> Result<usize> {
        self.check_new_name(side, name)?;
        let (ports, _) = self.ports_mut(side);
        ports.push(name, desc);
        Ok(ports.len() - 1)
    }

    fn add_dynamic(&mut self, side: AnchorSide, name: &str, count: usize) -> Result<()> {
        let names: Vec<String> = (0..count).map(|k| format!("{name}{k}")).collect();
        for (k, n) in names.iter().enumerate() {
            self.check_new_name(side, n)?;
            if names[..k].contains(n) {
                return Err(IrError::DuplicatePortName {
                    op: self.name.to_string(),
                    side,
                    name: n.clone(),
                });
            }
        }
        let (ports, _) = self.ports_mut(side);
        for n in names {
            ports.push(&n, TensorDesc::default());
        }
        Ok(())
    }

    fn rename_port(&mut self, side: AnchorSide, index: usize, name: &str) -> Result<()> {
        let (ports, prefix) = self.ports(side);
        if index >= ports.len() {
            return Err(self.out_of_range(side, index));
        }
        if ports.find(prefix, name).is_some_and(|i| i != index) {
            return Err(IrError::DuplicatePortName {
                op: self.name.to_string(),
                side,
                name: name.to_string(),
            });
        }
        self.ports_mut(side).0.set_name(index, name);
        Ok(())
    }

    /// Appends an input desc; `name` may be "" (unnamed). Returns its index.
    pub fn add_input(&mut self, name: &str, desc: TensorDesc) -> Result<usize> {
        self.add_port(AnchorSide::In, name, desc)
    }

    /// Inserts an input desc at `index`, shifting later inputs (GE's AddInputDescMiddle);
    /// index 0 is AddInputDescForward. Unnamed later inputs keep their own `__input<i>` name
    /// by being given it explicitly, so a name never silently moves to another desc.
    pub fn insert_input(&mut self, index: usize, name: &str, desc: TensorDesc) -> Result<()> {
        if index > self.inputs.len() {
            return Err(self.out_of_range(AnchorSide::In, index));
        }
        self.check_new_name(AnchorSide::In, name)?;
        self.inputs.insert(UNNAMED_INPUT, index, name, desc);
        Ok(())
    }

    /// Adds `count` inputs named `<name>0`, `<name>1`, … (GE's AddDynamicInputDesc).
    pub fn add_dynamic_inputs(&mut self, name: &str, count: usize) -> Result<()> {
        self.add_dynamic(AnchorSide::In, name, count)
    }

    /// Removes input `index` and returns its name and desc.
    pub fn remove_input(&mut self, index: usize) -> Option<(String, TensorDesc)> {
        self.inputs.remove(UNNAMED_INPUT, index)
    }

    /// Renames inputs without moving them (GE's UpdateInputName): `names[i]` becomes the name of
    /// input `i`. The count must match, and names must be unique.
    pub fn rename_inputs(&mut self, names: &[&str]) -> Result<()> {
        if names.len() != self.inputs.len() {
            return Err(IrError::Invalid {
                what: "input names",
                value: format!(
                    "op `{}` has {} inputs, {} names given",
                    self.name,
                    self.inputs.len(),
                    names.len()
                ),
            });
        }
        for (i, n) in names.iter().enumerate() {
            if names[..i].contains(n) {
                return Err(IrError::DuplicatePortName {
                    op: self.name.to_string(),
                    side: AnchorSide::In,
                    name: n.to_string(),
                });
            }
        }
        self.inputs.set_all_names(names);
        Ok(())
    }

    /// Renames one input.
    pub fn rename_input(&mut self, index: usize, name: &str) -> Result<()> {
        self.rename_port(AnchorSide::In, index, name)
    }

    // ---- outputs ----

    pub fn output_count(&self) -> usize {
        self.outputs.len()
    }
    pub fn outputs(&self) -> &[TensorDesc] {
        &self.outputs.descs
    }
    pub fn output(&self, i: usize) -> Option<&TensorDesc> {
        self.outputs.descs.get(i)
    }
    pub fn output_mut(&mut self, i: usize) -> Option<&mut TensorDesc> {
        self.outputs.descs.get_mut(i)
    }
    pub fn output_by_name(&self, name: &str) -> Option<&TensorDesc> {
        self.output_index(name).map(|i| &self.outputs.descs[i])
    }
    pub fn output_index(&self, name: &str) -> Option<usize> {
        self.outputs.find(UNNAMED_OUTPUT, name)
    }
    pub fn output_name(&self, i: usize) -> Option<Cow<'_, str>> {
        self.outputs.name(UNNAMED_OUTPUT, i)
    }
    pub fn raw_output_name(&self, i: usize) -> Option<&str> {
        self.outputs.raw_name(i)
    }
    pub fn add_output(&mut self, name: &str, desc: TensorDesc) -> Result<usize> {
        self.add_port(AnchorSide::Out, name, desc)
    }
    /// Adds `count` outputs named `<name>0`, `<name>1`, … (GE's AddDynamicOutputDesc).
    pub fn add_dynamic_outputs(&mut self, name: &str, count: usize) -> Result<()> {
        self.add_dynamic(AnchorSide::Out, name, count)
    }
    pub fn rename_output(&mut self, index: usize, name: &str) -> Result<()> {
        self.rename_port(AnchorSide::Out, index, name)
    }
    pub fn remove_output(&mut self, index: usize) -> Option<(String, TensorDesc)> {
        self.outputs.remove(UNNAMED_OUTPUT, index)
    }

    /// Builder-style helpers for tests and frontends.
    pub fn with_input(mut self, name: &str, desc: TensorDesc) -> Self {
        let _ = self.add_input(name, desc);
        self
    }
    pub fn with_output(mut self, name: &str, desc: TensorDesc) -> Self {
        let _ = self.add_output(name, desc);
        self
    }
    /// Room for `inputs` more input descs and `outputs` more output descs, so that a frontend
    /// that knows an op's port counts allocates each list once (ports otherwise grow by half).
    pub fn reserve_ports(&mut self, inputs: usize, outputs: usize) {
        self.inputs.descs.reserve_exact(inputs);
        self.outputs.descs.reserve_exact(outputs);
    }

    /// `n` unnamed inputs and `m` unnamed outputs with default descs.
    pub fn with_ports(mut self, n: usize, m: usize) -> Self {
        for _ in 0..n {
            self.inputs.push("", TensorDesc::default());
        }
        for _ in 0..m {
            self.outputs.push("", TensorDesc::default());
        }
        self
    }

    // ---- attributes ----

    pub fn attrs(&self) -> &AttrMap {
        &self.attrs
    }
    pub fn attrs_mut(&mut self) -> &mut AttrMap {
        &mut self.attrs
    }

    // ---- IR metadata, compile state, subgraphs ----

    fn ext_mut(&mut self) -> &mut OpDescExt {
        self.ext.get_or_insert_with(Default::default)
    }

    pub fn ir_meta(&self) -> Option<&IrMeta> {
        self.ext.as_ref()?.ir.as_deref()
    }
    pub fn ir_meta_mut(&mut self) -> &mut IrMeta {
        self.ext_mut().ir.get_or_insert_with(Default::default)
    }
    pub fn compile_state(&self) -> Option<&CompileState> {
        self.ext.as_ref()?.compile.as_deref()
    }
    pub fn compile_state_mut(&mut self) -> &mut CompileState {
        self.ext_mut().compile.get_or_insert_with(Default::default)
    }
    /// The engine placement chose (in memory only, as GE's SetOpEngineName).
    pub fn engine_name(&self) -> &str {
        self.name_text(|e| &e.engine_name)
    }
    pub fn set_engine_name(&mut self, name: impl AsRef<str>) {
        self.set_name_text(|e| &mut e.engine_name, shared_text(name.as_ref()));
    }
    /// Sets the engine name to a text shared with other ops (no allocation).
    pub fn set_engine_name_shared(&mut self, name: &Arc<str>) {
        self.set_name_text(|e| &mut e.engine_name, shared_clone(name));
    }
    pub fn kernel_lib_name(&self) -> &str {
        self.name_text(|e| &e.kernel_lib_name)
    }
    pub fn set_kernel_lib_name(&mut self, name: impl AsRef<str>) {
        self.set_name_text(|e| &mut e.kernel_lib_name, shared_text(name.as_ref()));
    }
    /// Sets the kernel library name to a text shared with other ops (no allocation).
    pub fn set_kernel_lib_name_shared(&mut self, name: &Arc<str>) {
        self.set_name_text(|e| &mut e.kernel_lib_name, shared_clone(name));
    }
    /// An engine or library name ("" when unset).
    fn name_text(&self, field: fn(&OpDescExt) -> &Option<Arc<str>>) -> &str {
        self.ext
            .as_deref()
            .and_then(|e| field(e).as_deref())
            .unwrap_or("")
    }
    /// Sets an engine or library name; "" on an op without the extension box allocates
    /// nothing.
    fn set_name_text(
        &mut self,
        field: fn(&mut OpDescExt) -> &mut Option<Arc<str>>,
        text: Option<Arc<str>>,
    ) {
        if text.is_some() || self.ext.is_some() {
            *field(self.ext_mut()) = text;
        }
    }

    /// Subgraph instance names by subgraph index ("" = unset slot).
    pub fn subgraph_instance_names(&self) -> &[String] {
        self.ext.as_ref().map_or(&[], |e| &e.subgraph_instances)
    }
    /// Sets the instance name of subgraph slot `index`, growing the list as needed.
    pub fn set_subgraph_instance_name(&mut self, index: usize, name: impl Into<String>) {
        let list = &mut self.ext_mut().subgraph_instances;
        if list.len() <= index {
            list.resize(index + 1, String::new());
        }
        list[index] = name.into();
    }
    /// Appends an instance name; returns its index.
    pub fn add_subgraph_instance_name(&mut self, name: impl Into<String>) -> usize {
        let list = &mut self.ext_mut().subgraph_instances;
        list.push(name.into());
        list.len() - 1
    }
    pub fn remove_subgraph_instance_name(&mut self, name: &str) -> bool {
        let Some(ext) = self.ext.as_mut() else {
            return false;
        };
        match ext.subgraph_instances.iter().position(|n| n == name) {
            Some(i) => {
                ext.subgraph_instances[i].clear();
                while ext.subgraph_instances.last().is_some_and(|n| n.is_empty()) {
                    ext.subgraph_instances.pop();
                }
                true
            }
            None => false,
        }
    }
    pub fn clear_subgraph_instance_names(&mut self) {
        if let Some(ext) = self.ext.as_mut() {
            ext.subgraph_instances.clear();
        }
    }
}

impl HasAttrs for OpDesc {
    fn attrs(&self) -> &AttrMap {
        &self.attrs
    }
    fn attrs_mut(&mut self) -> &mut AttrMap {
        &mut self.attrs
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DataType;
    use crate::shape::Shape;

    fn desc(d: i64) -> TensorDesc {
        TensorDesc::new(Shape::new([d]), DataType::Float, Default::default())
    }

    #[test]
    fn domain_and_opset_are_fields_in_equality() {
        let mut op = OpDesc::new("g", "Gelu");
        assert_eq!((op.domain(), op.opset()), ("", None));
        op.set_domain("ai.onnx");
        assert_eq!(op.domain(), "", "ai.onnx is the default domain");
        let plain = op.clone();
        op.set_domain("com.microsoft");
        op.set_opset(Some(1));
        assert_eq!((op.domain(), op.opset()), ("com.microsoft", Some(1)));
        assert_ne!(op, plain);
        assert_eq!(op.clone(), op);
        let mut other = op.clone();
        other.set_opset(Some(2));
        assert_ne!(other, op);
    }

    #[test]
    fn names_and_indexes_both_ways() {
        let mut op = OpDesc::new("conv", "Conv2D");
        op.add_input("x", desc(1)).unwrap();
        op.add_input("filter", desc(2)).unwrap();
        op.add_input("", desc(3)).unwrap();
        assert_eq!(op.input_index("filter"), Some(1));
        assert_eq!(op.input_name(2).unwrap(), "__input2");
        assert_eq!(op.input_index("__input2"), Some(2));
        assert_eq!(op.input_index("__input1"), None);
        assert!(matches!(
            op.add_input("x", desc(4)),
            Err(IrError::DuplicatePortName { .. })
        ));
        assert_eq!(op.input_by_name("x").unwrap().shape().dims(), &[1]);
    }

    #[test]
    fn insert_in_middle_and_front_keep_names_right() {
        let mut op = OpDesc::new("n", "T")
            .with_input("a", desc(1))
            .with_ports(1, 0);
        op.insert_input(1, "mid", desc(9)).unwrap();
        op.insert_input(0, "front", desc(0)).unwrap();
        let names: Vec<String> = (0..op.input_count())
            .map(|i| op.input_name(i).unwrap().into_owned())
            .collect();
        // The unnamed desc that was `__input1` keeps that name after moving to index 3.
        assert_eq!(names, ["front", "a", "mid", "__input1"]);
        assert_eq!(op.input_index("mid"), Some(2));
        assert_eq!(op.input(2).unwrap().shape().dims(), &[9]);
        assert!(op.insert_input(9, "z", desc(1)).is_err());
    }

    #[test]
    fn dynamic_inputs_and_rename_without_moving() {
        let mut op = OpDesc::new("c", "ConcatD");
        op.add_dynamic_inputs("x", 3).unwrap();
        assert_eq!(op.input_index("x2"), Some(2));
        op.input_mut(1).unwrap().set_shape(Shape::new([7]));
        op.rename_inputs(&["a", "b", "c"]).unwrap();
        assert_eq!(op.input_by_name("b").unwrap().shape().dims(), &[7]);
        assert!(op.rename_inputs(&["a", "a", "c"]).is_err());
        assert!(op.rename_inputs(&["a"]).is_err());
        assert!(op.add_dynamic_inputs("a", 1).is_ok()); // a0 is new
        assert!(op.add_dynamic_inputs("a", 1).is_err()); // a0 again
    }

    #[test]
    fn metadata_is_lazy_and_kept() {
        let mut op = OpDesc::new("n", "If");
        assert!(op.ir_meta().is_none());
        assert_eq!(op.engine_name(), "");
        op.set_engine_name("cpu");
        op.ir_meta_mut()
            .inputs
            .push(("cond".into(), IrInputKind::Required));
        op.set_subgraph_instance_name(1, "else_branch");
        op.set_subgraph_instance_name(0, "then_branch");
        assert_eq!(op.subgraph_instance_names(), ["then_branch", "else_branch"]);
        assert!(op.remove_subgraph_instance_name("else_branch"));
        assert_eq!(op.subgraph_instance_names(), ["then_branch"]);
        assert_eq!(op.engine_name(), "cpu");
        assert_eq!(IrInputKind::from_value(2), Some(IrInputKind::Dynamic));
    }
}
