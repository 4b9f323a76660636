//! Weights that kernels absorbed: a constant every reader of which keeps its own (packed) copy
//! (`Kernel::absorbed_inputs`) is released from a program built for running, and from its
//! compiled graph, so that a model's weights are in memory once (the packed copy), as
//! onnxruntime's prepacking does. Models built to be saved (`keep_compiled_state`) keep them.

use rge_ir::{AttrValue, ComputeGraph};

use crate::program::{Program, Storage};

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
