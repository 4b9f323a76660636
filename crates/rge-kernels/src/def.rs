//! Kernel definitions: what an engine declares about each kernel it owns (ARCHITECTURE.md
//! decision 9; onnxruntime's `KernelDef` with its type constraints). A definition names the
//! op (domain, type, opset range), the element types each port accepts, the memory space of
//! each port, in-place facts, an optional check of attributes and shapes, and a factory that
//! may capture compile-time state. An engine's kernel set answers placement's
//! `check_supported` from its definitions, with a reason when no definition fits.

use hashbrown::HashMap;
use std::fmt;
use std::sync::Arc;

use rge_ir::OpDesc;
use smallvec::SmallVec;

use crate::dtype::DType;
use crate::error::KernelResult;
use crate::kernel::{Kernel, KernelInit};
use crate::registry::KernelFactory;

/// A set of element types, one bit per ONNX `TensorProto.DataType` code.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TypeSet(u64);

impl TypeSet {
    /// No type.
    pub const EMPTY: TypeSet = TypeSet(0);
    /// Every type.
    pub const ANY: TypeSet = TypeSet(u64::MAX);

    /// The set of `types`.
    pub fn of(types: &[DType]) -> TypeSet {
        TypeSet(types.iter().fold(0, |m, t| m | Self::bit(*t)))
    }

    const fn bit(t: DType) -> u64 {
        1u64 << (t.onnx() as u32 & 63)
    }

    /// True when `t` is in the set.
    pub fn contains(self, t: DType) -> bool {
        self.0 & Self::bit(t) != 0
    }

    /// True for [`TypeSet::ANY`].
    pub fn is_any(self) -> bool {
        self == Self::ANY
    }

    /// True when every type of `self` is in `other`.
    pub fn is_subset(self, other: TypeSet) -> bool {
        self.0 & !other.0 == 0
    }

    /// The union.
    pub fn union(self, other: TypeSet) -> TypeSet {
        TypeSet(self.0 | other.0)
    }

    /// The types of the set, in code order (none for `ANY`'s unused bits).
    pub fn types(self) -> impl Iterator<Item = DType> {
        DType::ALL
            .iter()
            .copied()
            .filter(move |t| self.contains(*t))
    }
}

impl fmt::Display for TypeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_any() {
            return f.write_str("any type");
        }
        let names: Vec<&str> = self.types().map(DType::name).collect();
        if names.is_empty() {
            f.write_str("no type")
        } else {
            f.write_str(&names.join("|"))
        }
    }
}

impl fmt::Debug for TypeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TypeSet({self})")
    }
}

/// A memory space: where a tensor's bytes live. Each engine names one (its `mem_type`); the
/// compiler inserts a transfer wherever a tensor crosses from one space into another.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemSpace(Arc<str>);

impl MemSpace {
    /// The host's memory: what every CPU engine uses.
    pub fn host() -> MemSpace {
        MemSpace(Arc::from(HOST_SPACE))
    }

    /// The space called `name`.
    pub fn new(name: &str) -> MemSpace {
        MemSpace(Arc::from(name))
    }

    pub fn name(&self) -> &str {
        &self.0
    }

    pub fn is_host(&self) -> bool {
        &*self.0 == HOST_SPACE
    }
}

/// The name of the host memory space.
pub const HOST_SPACE: &str = "host";

impl fmt::Display for MemSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for MemSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MemSpace({})", self.0)
    }
}

/// One port of a definition: the element types it accepts and, when it is not the engine's
/// own space, the memory space it reads or writes (a shape input a device kernel reads on the
/// host, say).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortDef {
    pub types: TypeSet,
    pub space: Option<MemSpace>,
}

impl PortDef {
    /// Any type, the engine's space.
    pub const ANY: PortDef = PortDef {
        types: TypeSet::ANY,
        space: None,
    };

    pub fn types(types: TypeSet) -> PortDef {
        PortDef { types, space: None }
    }

    /// The same port in `space`.
    pub fn in_space(mut self, space: MemSpace) -> PortDef {
        self.space = Some(space);
        self
    }
}

/// Builds a kernel for one node; may capture compile-time state.
pub type DefFactory = Arc<dyn Fn(&KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> + Send + Sync>;

/// Checks one op instance beyond types (attributes, shapes); `Err` carries the reason.
pub type DefCheck = Arc<dyn Fn(&OpDesc) -> Result<(), String> + Send + Sync>;

/// Compile-time work of a kernel (the seed's CompileOp): from the node and its constant inputs,
/// the attributes to record on the op (prepacked weights, say), which the compiled model — and
/// a saved one — keeps, and which the factory then reads instead of redoing the work.
pub type DefPrepare =
    Arc<dyn Fn(&KernelInit<'_>) -> KernelResult<Vec<(String, rge_ir::AttrValue)>> + Send + Sync>;

/// A kernel definition.
#[derive(Clone)]
pub struct KernelDef {
    /// A short name for listings and profiles, e.g. `cpu.Conv`.
    pub name: String,
    /// The op's domain ("" for the default ONNX domain).
    pub domain: String,
    pub op_type: String,
    /// The opset versions served, both ends included.
    pub since: i64,
    pub until: i64,
    /// Inputs in order; the last one repeats for variadic inputs; empty: any input.
    pub inputs: Vec<PortDef>,
    /// Outputs in order; the last one repeats; empty: any output.
    pub outputs: Vec<PortDef>,
    /// `Some((input, output))`: the output may be written over the input (same bytes).
    pub in_place: Option<(usize, usize)>,
    pub check: Option<DefCheck>,
    /// Compile-time work, run by the engine's `compile_ops`.
    pub prepare: Option<DefPrepare>,
    pub factory: DefFactory,
}

impl fmt::Debug for KernelDef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelDef")
            .field("name", &self.name)
            .field("domain", &self.domain)
            .field("op_type", &self.op_type)
            .field("opsets", &(self.since..=self.until))
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .field("in_place", &self.in_place)
            .field("prepare", &self.prepare.is_some())
            .finish()
    }
}

fn norm_domain(d: &str) -> &str {
    if d == "ai.onnx" {
        ""
    } else {
        d
    }
}

impl KernelDef {
    /// A definition of `op_type` (default domain, every opset, any type) built by `factory`.
    pub fn new(
        name: impl Into<String>,
        op_type: impl Into<String>,
        factory: impl Fn(&KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> + Send + Sync + 'static,
    ) -> KernelDef {
        KernelDef {
            name: name.into(),
            domain: String::new(),
            op_type: op_type.into(),
            since: 1,
            until: i64::MAX,
            inputs: Vec::new(),
            outputs: Vec::new(),
            in_place: None,
            check: None,
            prepare: None,
            factory: Arc::new(factory),
        }
    }

    /// A definition around a plain factory function (the kernel families' registrations).
    pub fn from_fn(name: impl Into<String>, domain: &str, op_type: &str, f: KernelFactory) -> Self {
        let mut d = KernelDef::new(name, op_type, f);
        d.domain = norm_domain(domain).to_string();
        d
    }

    pub fn domain(mut self, domain: &str) -> Self {
        self.domain = norm_domain(domain).to_string();
        self
    }

    pub fn opsets(mut self, since: i64, until: i64) -> Self {
        self.since = since;
        self.until = until;
        self
    }

    /// Every input accepts `types` (one port that repeats).
    pub fn all_inputs(mut self, types: TypeSet) -> Self {
        self.inputs = vec![PortDef::types(types)];
        self
    }

    /// Every output accepts `types`.
    pub fn all_outputs(mut self, types: TypeSet) -> Self {
        self.outputs = vec![PortDef::types(types)];
        self
    }

    pub fn inputs(mut self, ports: Vec<PortDef>) -> Self {
        self.inputs = ports;
        self
    }

    pub fn outputs(mut self, ports: Vec<PortDef>) -> Self {
        self.outputs = ports;
        self
    }

    pub fn in_place(mut self, input: usize, output: usize) -> Self {
        self.in_place = Some((input, output));
        self
    }

    pub fn with_check(
        mut self,
        check: impl Fn(&OpDesc) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.check = Some(Arc::new(check));
        self
    }

    /// Compile-time work: `f` returns attributes to record on the op (see [`DefPrepare`]).
    pub fn with_prepare(
        mut self,
        f: impl Fn(&KernelInit<'_>) -> KernelResult<Vec<(String, rge_ir::AttrValue)>>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.prepare = Some(Arc::new(f));
        self
    }

    /// The port definition of input `i` (the last one repeats; `ANY` when none is declared).
    pub fn input(&self, i: usize) -> &PortDef {
        port(&self.inputs, i)
    }

    /// The port definition of output `i`.
    pub fn output(&self, i: usize) -> &PortDef {
        port(&self.outputs, i)
    }

    /// True when the definition serves `opset`.
    pub fn serves(&self, opset: i64) -> bool {
        (self.since..=self.until).contains(&opset)
    }

    /// Whether every known element type is one this definition's ports take.
    fn takes_types(&self, inputs: &[Option<DType>], outputs: &[Option<DType>]) -> bool {
        let fits = |t: &Option<DType>, p: &PortDef| t.is_none_or(|t| p.types.contains(t));
        inputs
            .iter()
            .enumerate()
            .all(|(i, t)| fits(t, self.input(i)))
            && outputs
                .iter()
                .enumerate()
                .all(|(i, t)| fits(t, self.output(i)))
    }

    /// Whether this definition runs `op` (whose known element types are given); `Err` says
    /// why not.
    pub fn accepts(
        &self,
        op: &OpDesc,
        inputs: &[Option<DType>],
        outputs: &[Option<DType>],
    ) -> Result<(), String> {
        for (i, t) in inputs.iter().enumerate() {
            if let Some(t) = t {
                let p = self.input(i);
                if !p.types.contains(*t) {
                    return Err(format!(
                        "input {i} has dtype {}; kernel `{}` accepts {}",
                        t.name(),
                        self.name,
                        p.types
                    ));
                }
            }
        }
        for (i, t) in outputs.iter().enumerate() {
            if let Some(t) = t {
                let p = self.output(i);
                if !p.types.contains(*t) {
                    return Err(format!(
                        "output {i} has dtype {}; kernel `{}` accepts {}",
                        t.name(),
                        self.name,
                        p.types
                    ));
                }
            }
        }
        match &self.check {
            Some(c) => c(op),
            None => Ok(()),
        }
    }
}

fn port(ports: &[PortDef], i: usize) -> &PortDef {
    ports.get(i).or(ports.last()).unwrap_or(&PortDef::ANY)
}

/// The kernel definitions of one engine, by (domain, op type); several per op are allowed
/// (different opsets or types), the first that accepts a node wins.
#[derive(Clone, Default)]
pub struct KernelSet {
    /// Domain → op type → definitions: looked up by `&str`, no key built per lookup (this is
    /// asked for every node by placement, transfers and lowering: hashed, since a string
    /// comparison per level of a B-tree cost more than the rest of the selection). The
    /// listings sort.
    map: HashMap<String, HashMap<String, Vec<KernelDef>>>,
}

impl fmt::Debug for KernelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KernelSet({} op types)", self.op_types().count())
    }
}

impl KernelSet {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a definition.
    pub fn add(&mut self, def: KernelDef) -> &mut Self {
        self.map
            .entry(def.domain.clone())
            .or_default()
            .entry(def.op_type.clone())
            .or_default()
            .push(def);
        self
    }

    /// The definitions of (domain, op type).
    pub fn defs(&self, domain: &str, op_type: &str) -> &[KernelDef] {
        self.map
            .get(norm_domain(domain))
            .and_then(|ops| ops.get(op_type))
            .map_or(&[], Vec::as_slice)
    }

    /// True when some definition names the op type in `domain`.
    pub fn has_op(&self, domain: &str, op_type: &str) -> bool {
        !self.defs(domain, op_type).is_empty()
    }

    /// Every (domain, op type), sorted.
    pub fn op_types(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        let mut all: Vec<(&str, &str)> = self
            .map
            .iter()
            .flat_map(|(d, ops)| ops.keys().map(move |o| (d.as_str(), o.as_str())))
            .collect();
        all.sort_unstable();
        all.into_iter()
    }

    /// Every definition, by (domain, op type) sorted, then in the order added.
    pub fn iter(&self) -> impl Iterator<Item = &KernelDef> + '_ {
        self.op_types()
            .flat_map(move |(d, o)| self.defs(d, o).iter())
    }

    pub fn len(&self) -> usize {
        self.iter().count()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The definition that runs `op` at `opset`, or why none does.
    pub fn select(&self, op: &OpDesc, domain: &str, opset: i64) -> Result<&KernelDef, String> {
        let defs = self.defs(domain, op.op_type());
        if defs.is_empty() {
            return Err(if domain.is_empty() {
                format!("no kernel for op type {}", op.op_type())
            } else {
                format!("no kernel for op type {} of domain {domain}", op.op_type())
            });
        }
        // Inline: selection runs several times per node (placement, compile, lowering).
        let inputs: SmallVec<[Option<DType>; 4]> = (0..op.input_count())
            .map(|i| op.input(i).and_then(DType::from_desc))
            .collect();
        let outputs: SmallVec<[Option<DType>; 2]> = (0..op.output_count())
            .map(|i| op.output(i).and_then(DType::from_desc))
            .collect();
        // The first definition that takes the node, without a word of why the ones before it
        // do not: those reasons are only read when none does (placement asks every engine of
        // every node, and a formatted reason per refusal was most of this).
        if let Some(d) = defs.iter().find(|d| {
            d.serves(opset)
                && d.takes_types(&inputs, &outputs)
                && d.check.as_ref().is_none_or(|c| c(op).is_ok())
        }) {
            return Ok(d);
        }
        let mut why = Vec::new();
        for d in defs {
            if !d.serves(opset) {
                why.push(format!(
                    "kernel `{}` serves opsets {}..={}, the model uses {opset}",
                    d.name,
                    d.since,
                    if d.until == i64::MAX {
                        "latest".to_string()
                    } else {
                        d.until.to_string()
                    }
                ));
                continue;
            }
            match d.accepts(op, &inputs, &outputs) {
                Ok(()) => return Ok(d),
                Err(e) => why.push(e),
            }
        }
        Err(why.join("; "))
    }

    /// Adds every kernel of `registry` as a definition named `<prefix>.<op type>` that
    /// accepts any type (the reference engine's kernels check types when they run).
    pub fn add_registry(&mut self, prefix: &str, registry: &crate::KernelRegistry) -> &mut Self {
        for (domain, op_type) in registry.op_types() {
            if let Some(f) = registry.get(domain, op_type) {
                self.add(KernelDef::from_fn(
                    format!("{prefix}.{op_type}"),
                    domain,
                    op_type,
                    f,
                ));
            }
        }
        self
    }
}

/// The known element types of `op`'s inputs and outputs.
pub fn port_types(op: &OpDesc) -> (Vec<Option<DType>>, Vec<Option<DType>>) {
    let inputs = (0..op.input_count())
        .map(|i| op.input(i).and_then(DType::from_desc))
        .collect();
    let outputs = (0..op.output_count())
        .map(|i| op.output(i).and_then(DType::from_desc))
        .collect();
    (inputs, outputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_ir::{DataType, Format, Shape, TensorDesc};

    fn relu(dt: DataType) -> OpDesc {
        let mut op = OpDesc::new("r", "Relu");
        let d = TensorDesc::new(Shape::new([2]), dt, Format::ND);
        op.add_input("x", d.clone()).unwrap();
        op.add_output("y", d).unwrap();
        op
    }

    fn never(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
        Err(crate::KernelError::unsupported("test"))
    }

    #[test]
    fn type_sets() {
        let s = TypeSet::of(&[DType::Float, DType::Float16]);
        assert!(s.contains(DType::Float) && !s.contains(DType::Double));
        assert!(s.is_subset(TypeSet::ANY) && !TypeSet::ANY.is_subset(s));
        assert_eq!(s.to_string(), "FLOAT|FLOAT16");
        assert_eq!(TypeSet::EMPTY.to_string(), "no type");
    }

    #[test]
    fn select_by_type_and_opset() {
        let mut set = KernelSet::new();
        set.add(
            KernelDef::from_fn("fast.Relu", "", "Relu", never)
                .all_inputs(TypeSet::of(&[DType::Float]))
                .opsets(6, 13),
        );
        let f32_op = relu(DataType::Float);
        assert_eq!(set.select(&f32_op, "", 13).unwrap().name, "fast.Relu");
        let e = set.select(&f32_op, "", 14).unwrap_err();
        assert!(e.contains("opsets 6..=13"), "{e}");
        let e = set.select(&relu(DataType::Float16), "", 13).unwrap_err();
        assert!(e.contains("input 0 has dtype FLOAT16"), "{e}");
        assert!(set
            .select(&f32_op, "com.x", 13)
            .unwrap_err()
            .contains("com.x"));
        set.add(KernelDef::from_fn("any.Relu", "", "Relu", never));
        assert_eq!(
            set.select(&relu(DataType::Float16), "", 13).unwrap().name,
            "any.Relu"
        );
    }
}
