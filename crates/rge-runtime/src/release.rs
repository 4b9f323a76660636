//! Weights that kernels absorbed: a constant every reader of which keeps its own (packed) copy
//! (`Kernel::absorbed_inputs`) is released from a program built for running, and from its
//! compiled graph, so that a model's weights are in memory once (the packed copy), as
//! onnxruntime's prepacking does. Models built to be saved (`keep_compiled_state`) keep them.
//!
//! The release happens while lowering, not after it: the root graph's constants are moved out
//! of their Const nodes first ([`TakenConsts`]), and a constant is dropped as soon as the last
//! of its readers has built its kernel ([`EarlyRelease`]). So a weight and its packed copy are
//! both held only while that one kernel is built, and the peak is the weights once plus one.

use std::cell::RefCell;
use std::collections::HashMap;

use rge_ir::{AttrValue, ComputeGraph, NodeId};

use smallvec::SmallVec;

use crate::program::{Program, Slot, Step, Storage};

/// The root graph's constant tensors, moved out of their Const nodes while a program for
/// running is lowered (each node keeps an empty `value` of the same desc). The lowering reads
/// them from here; [`EarlyRelease`] drops the ones every reader absorbed; the rest go back into
/// the graph afterwards ([`TakenConsts::restore`]).
#[derive(Default)]
pub struct TakenConsts {
    values: RefCell<HashMap<NodeId, rge_ir::Tensor>>,
    dropped: std::cell::Cell<usize>,
}

fn is_const_type(t: &str) -> bool {
    matches!(t, "Const" | "Constant")
}

impl TakenConsts {
    /// Moves the `value` of every root Const node of `graph` that holds data.
    pub fn take_root(graph: &mut ComputeGraph) -> Self {
        let root = graph.root();
        let ids: Vec<NodeId> = graph.nodes_of(root).collect();
        let mut values = HashMap::new();
        for n in ids {
            let Some(op) = graph.op_mut(n) else { continue };
            if !is_const_type(op.op_type()) {
                continue;
            }
            let empty = match op.attrs().get("value") {
                Some(AttrValue::Tensor(t)) if !t.data.is_empty() => {
                    rge_ir::Tensor::new(t.desc.clone(), Vec::<u8>::new())
                }
                _ => continue,
            };
            if let Some(AttrValue::Tensor(t)) = op.attrs_mut().remove("value") {
                values.insert(n, *t);
            }
            op.attrs_mut()
                .set("value", AttrValue::Tensor(Box::new(empty)));
        }
        TakenConsts {
            values: RefCell::new(values),
            dropped: Default::default(),
        }
    }

    /// The tensor taken from Const node `n` (shares its bytes).
    pub(crate) fn get(&self, n: NodeId) -> Option<rge_ir::Tensor> {
        self.values.borrow().get(&n).cloned()
    }

    fn drop_value(&self, n: NodeId) {
        if self.values.borrow_mut().remove(&n).is_some() {
            self.dropped.set(self.dropped.get() + 1);
        }
    }

    fn holds(&self, n: NodeId) -> bool {
        self.values.borrow().contains_key(&n)
    }

    /// Puts the tensors not dropped back into their Const nodes; marks the graph when some
    /// were dropped (it cannot be saved).
    pub fn restore(self, graph: &mut ComputeGraph) {
        for (n, t) in self.values.into_inner() {
            if let Some(op) = graph.op_mut(n) {
                op.attrs_mut().set("value", AttrValue::Tensor(Box::new(t)));
            }
        }
        if self.dropped.get() > 0 {
            let root = graph.root();
            if let Some(a) = graph.graph_attrs_mut(root) {
                a.set(RELEASED_ATTR, true);
            }
        }
    }
}

/// Per taken constant: how many reader edges are not lowered yet, and whether a lowered one
/// did not absorb it (then it stays).
pub(crate) struct EarlyRelease {
    pending: HashMap<NodeId, (usize, bool)>,
}

impl EarlyRelease {
    /// Counts the reader edges of every constant in `taken` (root graph of `graph`).
    pub(crate) fn new(graph: &ComputeGraph, taken: &TakenConsts) -> Self {
        let mut pending = HashMap::new();
        for n in graph.nodes_of(graph.root()) {
            if !taken.holds(n) {
                continue;
            }
            let readers = graph.node(n).map_or(0, |node| {
                (0..node.out_data_count())
                    .map(|o| node.peers_of_output(o).len())
                    .sum()
            });
            // A constant without readers is not absorbed by anything: it stays.
            pending.insert(n, (readers, readers == 0));
        }
        EarlyRelease { pending }
    }

    /// After node `n` was lowered into `steps` (its new steps): counts each of its constant
    /// inputs as absorbed or not; returns the program constants (indices) whose readers are
    /// all lowered and all absorbed them, for the caller to release (dropped from `taken`).
    pub(crate) fn after_node(
        &mut self,
        graph: &ComputeGraph,
        n: NodeId,
        steps: &[Step],
        slots: &[Slot],
        taken: &TakenConsts,
    ) -> SmallVec<[usize; 2]> {
        let mut release = SmallVec::new();
        let Some(node) = graph.node(n) else {
            return release;
        };
        for i in 0..node.in_data_count() {
            let Some(p) = node.peer_of_input(i) else {
                continue;
            };
            let Some(entry) = self.pending.get_mut(&p.node) else {
                continue;
            };
            // One step that reads the constant itself (not a view of it) at input i and
            // keeps its own copy.
            let k = match steps {
                [step] if step.kernel.absorbed_inputs().contains(&i) => {
                    step.inputs.get(i).copied().flatten().and_then(|s| {
                        match (slots[s as usize].storage, slots[s as usize].view) {
                            (Storage::Const(k), false) => Some(k as usize),
                            _ => None,
                        }
                    })
                }
                _ => None,
            };
            entry.0 = entry.0.saturating_sub(1);
            entry.1 |= k.is_none();
            if entry.0 == 0 && !entry.1 {
                release.extend(k);
                taken.drop_value(p.node);
                self.pending.remove(&p.node);
            }
        }
        release
    }
}

/// Marks a graph whose absorbed weights were released (it cannot be saved).
pub const RELEASED_ATTR: &str = "_rge_weights_released";

/// Releases the constants of `program` that every reader absorbed; returns their nodes' names.
pub(crate) fn release_absorbed(program: &mut Program) -> Vec<String> {
    let n = program.consts.len();
    let mut readers = vec![0u32; n];
    let mut absorbed = vec![0u32; n];
    let const_of = |s: u32| match program.slots[s as usize].storage {
        Storage::Const(k) => Some((k as usize, program.slots[s as usize].view)),
        _ => None,
    };
    for step in &program.steps {
        let takes = step.kernel.absorbed_inputs();
        for (i, s) in step.inputs.iter().enumerate() {
            if let Some((k, view)) = s.and_then(const_of) {
                readers[k] += 1;
                // A view (another shape) of the weight is read as data, never absorbed.
                if !view && takes.contains(&i) {
                    absorbed[k] += 1;
                }
            }
        }
    }
    for (_, s) in &program.outputs {
        if let Some((k, _)) = s.and_then(const_of) {
            readers[k] += 1;
        }
    }
    let mut names = vec![None; n];
    for slot in &program.slots {
        if let (Storage::Const(k), false) = (slot.storage, slot.view) {
            names[k as usize].get_or_insert_with(|| slot.name.clone());
        }
    }
    let mut released = Vec::new();
    for k in 0..n {
        if readers[k] > 0 && readers[k] == absorbed[k] {
            program.consts[k] = program.consts[k].released();
            if let Some(name) = names[k].take() {
                released.push(name);
            }
        }
    }
    released
}

/// Empties the `value` of the root graph's Const nodes named in `names` (the program released
/// them) and marks the graph.
pub(crate) fn release_graph_consts(graph: &mut ComputeGraph, names: &[String]) {
    if names.is_empty() {
        return;
    }
    let root = graph.root();
    for name in names {
        let Some(n) = graph.find_node(root, name) else {
            continue;
        };
        if let Some(op) = graph.op_mut(n) {
            if let Some(AttrValue::Tensor(t)) = op.attrs().get("value") {
                let empty = rge_ir::Tensor::new(t.desc.clone(), Vec::<u8>::new());
                op.attrs_mut()
                    .set("value", AttrValue::Tensor(Box::new(empty)));
            }
        }
    }
    if let Some(a) = graph.graph_attrs_mut(root) {
        a.set(RELEASED_ATTR, true);
    }
}

/// True when `graph`'s absorbed weights were released.
pub fn weights_released(graph: &ComputeGraph) -> bool {
    graph
        .graph_attrs(graph.root())
        .is_some_and(|a| matches!(a.get(RELEASED_ATTR), Some(AttrValue::Bool(true))))
}
