//! Common-subexpression elimination: two nodes of the same op type, domain, opset and
//! attributes reading the same values compute the same outputs, so the readers of the later
//! one read the earlier one's. Small constants (up to 256 bytes) of the same type, shape and
//! bytes merge too, so what reads them can merge next. Random ops, nodes with control edges
//! or subgraphs, and nodes whose outputs are graph outputs are never merged away.

use std::hash::{BuildHasher, Hash, Hasher};

use hashbrown::{DefaultHashBuilder, HashMap, HashSet};

use rge_ir::{op_types, AttrValue, ComputeGraph, NodeId, OpDesc};
use smallvec::SmallVec;

use super::util::{const_tensor, has_control, is_graph_output, topological_root_nodes};
use super::{OptLevel, OptPass};

/// Ops whose results differ between two calls with the same inputs.
const NONDETERMINISTIC: &[&str] = &[
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Bernoulli",
    "Multinomial",
    "Dropout",
];

/// Ops that are never merged (graph I/O, state, partition markers).
const NEVER: &[&str] = &[
    op_types::NET_OUTPUT,
    "Data",
    "RefData",
    "Variable",
    "VariableV2",
    "Assign",
    "PlaceHolder",
    "End",
    "Send",
    "Recv",
    "NoOp",
];

/// The largest constant merged, in bytes.
const MAX_CONST_BYTES: usize = 256;

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct CommonSubexpressions;

/// True when `n` may be merged with an equal node: not graph I/O, state or a random op, and
/// with no control edges or subgraphs.
fn mergeable(g: &ComputeGraph, n: NodeId, graph_inputs: &HashSet<NodeId>) -> bool {
    let Some(op) = g.op(n) else { return false };
    let t = op.op_type();
    !(NEVER.contains(&t)
        || NONDETERMINISTIC.contains(&t)
        || has_control(g, n)
        || !g.node_subgraphs(n).is_empty()
        || !op.subgraph_instance_names().is_empty()
        || graph_inputs.contains(&n))
}

/// The attributes that take part in the comparison (`_`-prefixed ones are rge's metadata).
fn compared_attrs(op: &OpDesc) -> impl Iterator<Item = (&str, &AttrValue)> {
    op.attrs().iter().filter(|(k, _)| !k.starts_with('_'))
}

/// A hash of the op and the values it reads (`None`: never merged). Equal nodes hash equal;
/// [`same_values`] settles collisions and compares the rest. Hashing the parts directly, with no key
/// string, keeps the pass linear and cheap on graphs of 100k nodes.
fn signature(
    g: &ComputeGraph,
    n: NodeId,
    graph_inputs: &HashSet<NodeId>,
    hasher: &DefaultHashBuilder,
) -> Option<u64> {
    if !mergeable(g, n, graph_inputs) {
        return None;
    }
    let node = g.node(n)?;
    let op = node.op();
    let mut h = hasher.build_hasher();
    if let Some(c) = const_tensor(g, n) {
        if c.data.len() > MAX_CONST_BYTES {
            return None;
        }
        (0u8, c.desc.dtype(), c.desc.shape().dims(), c.data.as_ref()).hash(&mut h);
        return Some(h.finish());
    }
    if node.input_peers().iter().all(Option::is_none) {
        // Generators without inputs (other than constants) stay as they are.
        return None;
    }
    (
        1u8,
        op.domain(),
        op.op_type(),
        op.opset(),
        node.input_peers(),
    )
        .hash(&mut h);
    // Attributes and output types are left to `same_values`: nodes that read the same values
    // with the same op rarely differ in them, and reading them would cost two cache misses per
    // node (both live behind pointers) on graphs too large for the cache.
    Some(h.finish())
}

/// True when `a` and `b` (both mergeable, with equal signatures) compute the same values.
fn same_values(g: &ComputeGraph, a: NodeId, b: NodeId) -> bool {
    let (Some(na), Some(nb)) = (g.node(a), g.node(b)) else {
        return false;
    };
    match (const_tensor(g, a), const_tensor(g, b)) {
        (Some(x), Some(y)) => {
            return x.desc.dtype() == y.desc.dtype()
                && x.desc.shape().dims() == y.desc.shape().dims()
                && x.data.as_ref() == y.data.as_ref();
        }
        (None, None) => {}
        _ => return false,
    }
    let (oa, ob) = (na.op(), nb.op());
    oa.domain() == ob.domain()
        && oa.op_type() == ob.op_type()
        && oa.opset() == ob.opset()
        && na.input_peers() == nb.input_peers()
        && compared_attrs(oa).eq(compared_attrs(ob))
        && oa.outputs().len() == ob.outputs().len()
        && oa
            .outputs()
            .iter()
            .zip(ob.outputs())
            .all(|(x, y)| x.dtype() == y.dtype())
}

impl OptPass for CommonSubexpressions {
    fn name(&self) -> &'static str {
        "common_subexpressions"
    }
    fn level(&self) -> OptLevel {
        OptLevel::Basic
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let order = topological_root_nodes(g);
        let graph_inputs: HashSet<NodeId> = g.input_nodes(g.root()).iter().copied().collect();
        // Signature → the kept nodes with it (more than one only on a hash collision or equal
        // signatures with different attribute values).
        let mut seen: HashMap<u64, SmallVec<[NodeId; 1]>> = HashMap::with_capacity(order.len());
        // Signatures only bucket nodes (`same_values` decides), so any hash will do: a fast one.
        let hasher = DefaultHashBuilder::default();
        let mut done = 0;
        for n in order {
            if g.node(n).is_none() {
                continue;
            }
            let Some(sig) = signature(g, n, &graph_inputs, &hasher) else {
                continue;
            };
            let kept = seen.entry(sig).or_default();
            let Some(&keep) = kept.iter().find(|&&k| same_values(g, k, n)) else {
                kept.push(n);
                continue;
            };
            if is_graph_output(g, n) {
                continue;
            }
            // Direct edits, not a patch: the readers of `n` come after it in the order and
            // `keep` before it, so no cycle can form, and a patch's rank upkeep would cost
            // more than the edit (a shunt from an earlier-ranked node re-ranks the graph).
            // `n` has no control edges (`mergeable`); the check comes before any change.
            g.move_output_edges(n, keep).map_err(|e| e.to_string())?;
            g.remove_node_unlinked(n).map_err(|e| e.to_string())?;
            done += 1;
        }
        Ok(done)
    }
}
