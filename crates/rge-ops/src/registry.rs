//! The op registry (the seed's OperatorFactory, §5), as ARCHITECTURE.md decision 4 has it:
//! prototypes are registered into an [`OpRegistryBuilder`], which is then frozen into an
//! immutable, shareable [`OpRegistry`] (`Arc`). Registering a (domain, op type, version) twice
//! is an error unless the override window is open (the seed's `is_register_overridable`);
//! loading an op library opens it and closes it again when done.

use std::collections::BTreeMap;
use std::sync::Arc;

use hashbrown::HashMap;
use rge_ir::{IrInputKind, IrOutputKind, OpDesc, TensorDesc};

use crate::error::OpsError;
use crate::proto::OpProto;

/// "" and "ai.onnx" are the same (default) domain.
pub fn normalize_domain(d: &str) -> &str {
    if d == "ai.onnx" {
        ""
    } else {
        d
    }
}

type OpTable = HashMap<String, HashMap<String, Vec<Arc<OpProto>>>>;

/// Registers prototypes; [`freeze`](Self::freeze) turns it into an [`OpRegistry`].
#[derive(Default)]
pub struct OpRegistryBuilder {
    ops: OpTable,
    libraries: Vec<Arc<crate::library::LoadedLibrary>>,
    overridable: bool,
}

/// The frozen registry: lookups only. Share it as `Arc<OpRegistry>`.
pub struct OpRegistry {
    ops: OpTable,
    libraries: Vec<Arc<crate::library::LoadedLibrary>>,
    count: usize,
}

impl std::fmt::Debug for OpRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpRegistry")
            .field("prototypes", &self.count)
            .field("libraries", &self.libraries.len())
            .finish()
    }
}

impl OpRegistryBuilder {
    /// An empty builder.
    pub fn new() -> Self {
        Self::default()
    }

    /// A builder holding every built-in op (ONNX default domain, ai.onnx.ml, the preview
    /// training ops and the IR ops Data/Const/NetOutput).
    pub fn with_builtins() -> Self {
        let mut b = Self::new();
        crate::ops::register_builtins(&mut b).expect("built-in prototypes are valid");
        b
    }

    /// Opens the override window: until it is closed, registering an existing version
    /// replaces it.
    pub fn open_override_window(&mut self) {
        self.overridable = true;
    }

    /// Closes the override window: registering an existing version is an error again.
    pub fn close_override_window(&mut self) {
        self.overridable = false;
    }

    /// True while the override window is open.
    pub fn is_overridable(&self) -> bool {
        self.overridable
    }

    /// Registers a prototype. Errors on a malformed prototype, or on a version already
    /// registered while the override window is closed.
    pub fn register(&mut self, proto: OpProto) -> Result<(), OpsError> {
        proto.check().map_err(|message| OpsError::BadPrototype {
            op_type: proto.op_type.clone(),
            message,
        })?;
        let versions = self
            .ops
            .entry(proto.domain.clone())
            .or_default()
            .entry(proto.op_type.clone())
            .or_default();
        match versions.binary_search_by_key(&proto.since_version, |p| p.since_version) {
            Ok(i) if self.overridable => versions[i] = Arc::new(proto),
            Ok(i) => {
                return Err(OpsError::Duplicate {
                    domain: proto.domain,
                    op_type: proto.op_type,
                    since_version: proto.since_version,
                    existing: versions[i].source.clone(),
                })
            }
            Err(i) => versions.insert(i, Arc::new(proto)),
        }
        Ok(())
    }

    /// Registers several prototypes.
    pub fn register_all(
        &mut self,
        protos: impl IntoIterator<Item = OpProto>,
    ) -> Result<(), OpsError> {
        protos.into_iter().try_for_each(|p| self.register(p))
    }

    pub(crate) fn keep_library(&mut self, lib: Arc<crate::library::LoadedLibrary>) {
        self.libraries.push(lib);
    }

    /// Looks a prototype up while building (see [`OpRegistry::lookup`]).
    pub fn lookup(&self, domain: &str, op_type: &str, opset: i64) -> Option<&OpProto> {
        lookup_in(&self.ops, domain, op_type, opset)
    }

    /// Every registered version of an op while building, oldest first.
    pub fn versions(&self, domain: &str, op_type: &str) -> &[Arc<OpProto>] {
        self.ops
            .get(normalize_domain(domain))
            .and_then(|m| m.get(op_type))
            .map_or(&[], |v| v.as_slice())
    }

    /// Freezes the registry; the override window is closed for good.
    pub fn freeze(self) -> Arc<OpRegistry> {
        let count = self
            .ops
            .values()
            .flat_map(|m| m.values())
            .map(Vec::len)
            .sum();
        Arc::new(OpRegistry {
            ops: self.ops,
            libraries: self.libraries,
            count,
        })
    }
}

fn lookup_in<'a>(ops: &'a OpTable, domain: &str, op_type: &str, opset: i64) -> Option<&'a OpProto> {
    let versions = ops.get(normalize_domain(domain))?.get(op_type)?;
    // The newest version not newer than the imported opset.
    let i = versions.partition_point(|p| p.since_version <= opset);
    versions[..i].last().map(|p| &**p)
}

impl OpRegistry {
    /// A frozen registry of the built-in ops.
    pub fn builtin() -> Arc<OpRegistry> {
        OpRegistryBuilder::with_builtins().freeze()
    }

    /// A builder holding this registry's prototypes and libraries, to extend and freeze anew.
    pub fn to_builder(&self) -> OpRegistryBuilder {
        OpRegistryBuilder {
            ops: self.ops.clone(),
            libraries: self.libraries.clone(),
            overridable: false,
        }
    }

    /// The prototype of `op_type` in `domain` that serves opset version `opset`: the newest
    /// registered version not newer than it.
    pub fn lookup(&self, domain: &str, op_type: &str, opset: i64) -> Option<&OpProto> {
        lookup_in(&self.ops, domain, op_type, opset)
    }

    /// Every registered version of an op, oldest first.
    pub fn versions(&self, domain: &str, op_type: &str) -> &[Arc<OpProto>] {
        self.ops
            .get(normalize_domain(domain))
            .and_then(|m| m.get(op_type))
            .map_or(&[], |v| v.as_slice())
    }

    /// True if some version of the op is registered.
    pub fn contains(&self, domain: &str, op_type: &str) -> bool {
        !self.versions(domain, op_type).is_empty()
    }

    /// The number of prototypes (versions counted apart).
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Every (domain, op type) with its versions, sorted by domain then op type.
    pub fn ops(&self) -> Vec<(&str, &str, &[Arc<OpProto>])> {
        let sorted: BTreeMap<(&str, &str), &[Arc<OpProto>]> = self
            .ops
            .iter()
            .flat_map(|(d, m)| {
                m.iter()
                    .map(move |(t, v)| ((d.as_str(), t.as_str()), v.as_slice()))
            })
            .collect();
        sorted.into_iter().map(|((d, t), v)| (d, t, v)).collect()
    }

    /// The op libraries loaded into this registry, by path.
    pub fn libraries(&self) -> Vec<&str> {
        self.libraries.iter().map(|l| l.path.as_str()).collect()
    }

    fn proto_for(
        &self,
        node: &str,
        domain: &str,
        op_type: &str,
        opset: i64,
    ) -> Result<&OpProto, OpsError> {
        self.lookup(domain, op_type, opset)
            .ok_or_else(|| OpsError::UnknownOp {
                node: node.to_string(),
                domain: normalize_domain(domain).to_string(),
                op_type: op_type.to_string(),
                opset,
            })
    }

    /// Creates an OpDesc from the prototype (the seed's CreateOperator): one input desc per
    /// declared input (a dynamic input `x` expands to `x0…x{n-1}` with `n` from `dynamic`,
    /// default 0), likewise the outputs, the IR metadata copied in, and the attribute
    /// defaults set, the domain and opset recorded on the op.
    pub fn create_op_desc(
        &self,
        name: &str,
        domain: &str,
        op_type: &str,
        opset: i64,
        dynamic: &[(&str, usize)],
    ) -> Result<OpDesc, OpsError> {
        let proto = self.proto_for(name, domain, op_type, opset)?;
        let count_of = |n: &str| dynamic.iter().find(|(d, _)| *d == n).map_or(0, |d| d.1);
        let mut op = OpDesc::new(name, op_type);
        for i in &proto.inputs {
            match i.kind {
                IrInputKind::Dynamic => op.add_dynamic_inputs(&i.name, count_of(&i.name))?,
                _ => {
                    op.add_input(&i.name, TensorDesc::default())?;
                }
            }
        }
        for o in &proto.outputs {
            match o.kind {
                IrOutputKind::Dynamic => op.add_dynamic_outputs(&o.name, count_of(&o.name))?,
                IrOutputKind::Required => {
                    op.add_output(&o.name, TensorDesc::default())?;
                }
            }
        }
        *op.ir_meta_mut() = proto.ir_meta();
        for a in &proto.attrs {
            if let Some(d) = &a.default {
                op.attrs_mut().set(a.name.clone(), d.clone());
            }
        }
        op.set_domain(proto.domain.as_str());
        // i64::MAX asks for the newest version: no opset the op could record.
        op.set_opset((opset != i64::MAX).then_some(opset));
        Ok(op)
    }

    /// Gives a frontend-made OpDesc its prototype: the IR metadata is copied in and the
    /// inputs take the prototype's standard names (a dynamic input's as `x0, x1…`) without
    /// moving (the seed's UpdateInputName). Errors when the op has more inputs than the
    /// prototype allows.
    pub fn apply_prototype(
        &self,
        op: &mut OpDesc,
        domain: &str,
        opset: i64,
    ) -> Result<(), OpsError> {
        let proto = self.proto_for(op.name(), domain, op.op_type(), opset)?;
        let names =
            standard_input_names(proto, op.input_count()).ok_or_else(|| OpsError::Node {
                node: op.name().to_string(),
                op_type: op.op_type().to_string(),
                message: format!(
                    "has {} inputs, the prototype declares at most {}",
                    op.input_count(),
                    proto.inputs.len()
                ),
            })?;
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        op.rename_inputs(&refs)?;
        *op.ir_meta_mut() = proto.ir_meta();
        Ok(())
    }
}

/// The standard names of `n` node inputs under `proto` (positional; a dynamic input takes
/// what the fixed ones leave). `None` if `n` is more than the prototype allows.
pub fn standard_input_names(proto: &OpProto, n: usize) -> Option<Vec<String>> {
    let fixed = proto
        .inputs
        .iter()
        .filter(|i| i.kind != IrInputKind::Dynamic)
        .count();
    let has_dynamic = fixed < proto.inputs.len();
    if !has_dynamic && n > fixed {
        return None;
    }
    let dyn_count = n.saturating_sub(fixed);
    let mut names = Vec::with_capacity(n);
    for i in &proto.inputs {
        if i.kind == IrInputKind::Dynamic {
            names.extend((0..dyn_count).map(|k| format!("{}{k}", i.name)));
        } else {
            names.push(i.name.clone());
        }
        if names.len() >= n {
            break;
        }
    }
    names.truncate(n);
    Some(names)
}

/// The declared input that node input `i` of `n` maps to.
pub fn proto_input_for(proto: &OpProto, n: usize, i: usize) -> Option<usize> {
    let d = proto
        .inputs
        .iter()
        .position(|p| p.kind == IrInputKind::Dynamic);
    match d {
        None => (i < proto.inputs.len()).then_some(i),
        Some(d) => {
            let after = proto.inputs.len() - d - 1;
            let dyn_count = n.saturating_sub(d + after);
            if i < d {
                Some(i)
            } else if i < d + dyn_count {
                Some(d)
            } else {
                let k = d + 1 + (i - d - dyn_count);
                (k < proto.inputs.len()).then_some(k)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::types;

    fn concat(since: i64) -> OpProto {
        OpProto::new("", "Concat", since)
            .sig("inputs*:T -> concat_result:T")
            .attrs("axis:int!")
            .tc("T", types::ALL)
    }

    #[test]
    fn versions_and_lookup() {
        let mut b = OpRegistryBuilder::new();
        b.register(concat(4)).unwrap();
        b.register(concat(13)).unwrap();
        let r = b.freeze();
        assert_eq!(r.lookup("", "Concat", 11).unwrap().since_version, 4);
        assert_eq!(r.lookup("ai.onnx", "Concat", 18).unwrap().since_version, 13);
        assert!(r.lookup("", "Concat", 3).is_none());
        assert!(r.lookup("other", "Concat", 13).is_none());
        assert_eq!(r.versions("", "Concat").len(), 2);
        assert_eq!(r.len(), 2);
    }

    #[test]
    fn duplicates_need_the_override_window() {
        let mut b = OpRegistryBuilder::new();
        b.register(concat(13)).unwrap();
        let e = b.register(concat(13)).unwrap_err();
        assert!(e.to_string().contains("already registered"), "{e}");
        b.open_override_window();
        assert!(b.is_overridable());
        b.register(concat(13).attrs("extra:int=1")).unwrap();
        b.close_override_window();
        assert!(b.register(concat(13)).is_err());
        let r = b.freeze();
        assert!(r.lookup("", "Concat", 13).unwrap().attr("extra").is_some());
        // A frozen registry extends through a new builder.
        let mut b2 = r.to_builder();
        assert!(b2.register(concat(13)).is_err());
        b2.register(concat(1)).unwrap();
        assert_eq!(b2.freeze().len(), 2);
    }

    #[test]
    fn create_and_rename() {
        let mut b = OpRegistryBuilder::new();
        b.register(concat(13)).unwrap();
        b.register(
            OpProto::new("", "Clip", 11)
                .sig("input:T, min?:T, max?:T -> output:T")
                .tc("T", types::NUMERIC),
        )
        .unwrap();
        let r = b.freeze();
        let op = r
            .create_op_desc("c", "", "Concat", 13, &[("inputs", 3)])
            .unwrap();
        assert_eq!(op.input_count(), 3);
        assert_eq!(op.input_index("inputs2"), Some(2));
        assert_eq!(op.output_name(0).unwrap(), "concat_result");
        let meta = op.ir_meta().unwrap();
        assert_eq!(
            meta.inputs,
            vec![("inputs".to_string(), IrInputKind::Dynamic)]
        );
        assert_eq!(meta.attr_names, vec!["axis".to_string()]);
        assert_eq!((op.domain(), op.opset()), ("", Some(13)));

        let mut op = OpDesc::new("clip", "Clip").with_ports(2, 1);
        op.input_mut(1).unwrap().set_shape(rge_ir::Shape::new([7]));
        r.apply_prototype(&mut op, "", 13).unwrap();
        assert_eq!(op.input_by_name("min").unwrap().shape().dims(), &[7]);
        let mut op = OpDesc::new("clip", "Clip").with_ports(4, 1);
        assert!(r.apply_prototype(&mut op, "", 13).is_err());
        let e = r.create_op_desc("x", "", "Nope", 13, &[]).unwrap_err();
        assert!(e.to_string().contains("`x`") && e.to_string().contains("Nope"));
    }

    #[test]
    fn input_mapping_with_dynamic_in_the_middle() {
        let p = OpProto::new("", "Loop", 1)
            .sig("M?:I, cond?:B, v*:V, tail:V")
            .tc("I", types::INT64)
            .tc("B", types::BOOL)
            .tc("V", types::ALL);
        assert_eq!(proto_input_for(&p, 6, 0), Some(0));
        assert_eq!(proto_input_for(&p, 6, 2), Some(2));
        assert_eq!(proto_input_for(&p, 6, 4), Some(2));
        assert_eq!(proto_input_for(&p, 6, 5), Some(3));
        assert_eq!(
            standard_input_names(&p, 5).unwrap(),
            ["M", "cond", "v0", "v1", "tail"]
        );
    }
}
