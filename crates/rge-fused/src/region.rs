//! Finding the elementwise trees of a partition graph and rewriting each as one `ai.rge`
//! FusedElementwise node.
//!
//! A region grows backwards from a root (nodes visited in reverse topological order): a
//! producer joins when it is a fusable node (below), every reader of its output is already in
//! the region, and its output is not a graph output. So an inner value with an extra consumer
//! outside stays materialized (its producer is left out), and the graph computes the same
//! thing. A region of two or more nodes whose inputs the kernel reads directly (same shape as
//! the output, one value, or the output's trailing dims) becomes one node; any other broadcast
//! leaves it as it is.
//!
//! Fusable: an f32 elementwise op the vector engine runs (its unary ops with their attributes,
//! Add Sub Mul Div Pow PRelu, Max/Min of two inputs, Clip with bound inputs as Max/Min), placed
//! on `vector`, fully known output shape, no control edge, one output.

use std::sync::Arc;

use rayon::prelude::*;
use slotmap::SecondaryMap;

use rge_ir::{
    AttrMap, AttrValue, ComputeGraph, DataType, GraphPatch, NodeId, OpDesc, Outlet, Topology,
};
use rge_kernels::KernelInit;
use rge_vector::elementwise::{bin_op, unary_op, BINARY_OPS, UNARY_OPS};
use rge_vector::program::{Arg, Instr, Program};
use rge_vector::simd::BinOp;

use crate::engine::REGION_ATTR;

/// What a fusable node computes.
#[derive(Clone, Copy, Debug)]
enum Elem {
    Unary(rge_vector::simd::UnaryOp),
    Binary(BinOp),
    /// Clip with min/max inputs (opset 11+): `Min(Max(x, lo), hi)`, absent bounds skipped.
    ClipInputs,
}

/// A value: output `index` of `node`.
type Value = (NodeId, usize);

/// Whether `op`'s first output is f32 with a fully known shape (checked for every node of
/// the graph: no allocation).
fn has_known_f32_output(op: &OpDesc) -> bool {
    op.output(0)
        .is_some_and(|d| d.dtype() == DataType::Float && d.shape().is_fully_known())
}

/// The dims of `op`'s first output when it is f32 with a fully known shape.
fn known_dims(op: &OpDesc) -> Option<&[i64]> {
    let d = op.output(0)?;
    has_known_f32_output(op).then(|| d.shape().dims())
}

/// What `n` computes, if the fused kernel runs it.
fn elem_of(g: &ComputeGraph, n: NodeId) -> Option<Elem> {
    let op = g.op(n)?;
    let node = g.node(n)?;
    if !op.domain().is_empty()
        || op.engine_name() != rge_vector::VECTOR
        || !node.in_ctrl_peers().is_empty()
        || !node.out_ctrl_peers().is_empty()
        || node.out_data_count() != 1
        || !has_known_f32_output(op)
    {
        return None;
    }
    let all_f32 =
        (0..op.input_count()).all(|i| op.input(i).is_none_or(|d| d.dtype() == DataType::Float));
    if !all_f32 {
        return None;
    }
    let t = op.op_type();
    if UNARY_OPS.contains(&t) {
        if t == "Clip" && node.in_data_count() > 1 {
            return Some(Elem::ClipInputs);
        }
        if node.in_data_count() != 1 {
            return None;
        }
        let attrs: &AttrMap = op.attrs();
        let init = KernelInit {
            node_name: op.name(),
            op_type: t,
            domain: "",
            opset: op.opset().unwrap_or(21),
            attrs,
            input_types: &[],
            output_types: &[],
            subgraph_attrs: &[],
            constants: &[],
        };
        return unary_op(&init).ok().map(Elem::Unary);
    }
    if BINARY_OPS.contains(&t) && node.in_data_count() == 2 {
        let op_kind = bin_op(t)?;
        if op_kind == BinOp::PRelu {
            // PRelu's slope broadcasts to X: the output must have X's shape.
            let x = op.input(0)?.shape().dims().to_vec();
            if op.output(0)?.shape().dims() != x.as_slice() {
                return None;
            }
        }
        return Some(Elem::Binary(op_kind));
    }
    None
}

/// Whether input `shape` (fully known) is read directly by the kernel for an output of `out`.
fn direct_operand(shape: &[i64], out: &[i64]) -> bool {
    let n: i64 = shape.iter().product();
    let total: i64 = out.iter().product();
    if n == 1 || n == total {
        return true;
    }
    let s: &[i64] = match shape.iter().position(|&d| d != 1) {
        Some(k) => &shape[k..],
        None => &[],
    };
    s.len() <= out.len() && out[out.len() - s.len()..] == *s
}

/// Per node: what it computes when fusable, and the root of the region it joined (the root's
/// rank in the topology; `NONE` before). One map, a 32-bit rank: a million-node partition
/// keeps it beside the graph for the whole stage.
type State = SecondaryMap<NodeId, (Option<Elem>, u32)>;
const NONE: u32 = u32::MAX;

/// Finds every region of a graph in one pass over it, a batch of patches at a time: roots in
/// reverse topological order, each region grown from its root over producers whose readers
/// have all joined. Regions are disjoint, and each patch leaves the ones after it valid: a
/// later region's nodes are read only inside it, and its root is read by earlier patches'
/// nodes through the links the patches make. So the caller applies each batch, in order,
/// before asking for the next, and the patches waiting at any time are one batch (a graph of
/// a million elementwise ops makes hundreds of thousands of patches, each with its new op).
pub struct RegionFinder {
    /// The graph's topology when the search began: its order, and each node's rank
    /// (`index`). The nodes the patches add are not in it, and never join a region.
    topo: Arc<Topology>,
    state: State,
    /// Roots `topo.ids[..left]` are still to look at.
    left: usize,
}

impl RegionFinder {
    /// A search over `g`'s root graph; `None` when it has a cycle (no regions then).
    pub fn new(g: &ComputeGraph) -> Option<Self> {
        let topo = g.topology(g.root()).ok()?;
        // Read-only per node: on the session's threads (a cache miss or two per node).
        let elems: Vec<Option<Elem>> = topo
            .ids
            .par_iter()
            .with_min_len(PARALLEL_MIN)
            .map(|&n| elem_of(g, n))
            .collect();
        let mut state: State = SecondaryMap::with_capacity(topo.len());
        for (&n, elem) in topo.ids.iter().zip(elems) {
            state.insert(n, (elem, NONE));
        }
        for &(n, _) in g.output_nodes(g.root()) {
            // A graph output stays materialized: it is never a region's inner node.
            if let Some(s) = state.get_mut(n) {
                s.1 = NONE - 1;
            }
        }
        let left = topo.len();
        Some(RegionFinder { topo, state, left })
    }

    /// The next patches, at most `max` (empty when every region is found). `g` is the graph
    /// with every patch given before applied.
    ///
    /// Regions are found one after another (each changes which nodes later ones may take),
    /// then their patches are built on the session's threads: building (the program, the
    /// new op and its descs) is most of the work, and reads only the graph.
    pub fn next_batch(&mut self, g: &ComputeGraph, max: usize) -> Result<Vec<GraphPatch>, String> {
        let mut found: Vec<Found> = Vec::new();
        let mut work = Vec::new();
        while self.left > 0 && found.len() < max {
            self.left -= 1;
            // Ranks fit 32 bits: a graph's node ids do.
            let (r, root) = (self.left as u32, self.topo.ids[self.left]);
            let state = &mut self.state;
            let (elem, joined) = state[root];
            if elem.is_none() || (joined != NONE && joined != NONE - 1) {
                continue;
            }
            // A worklist: a producer is looked at again each time one of its readers joins,
            // so the last reader to join lets it in.
            let in_region = |state: &State, n: NodeId| state.get(n).is_some_and(|s| s.1 == r);
            let was = state[root].1;
            state[root].1 = r;
            let mut members = vec![root];
            work.push(root);
            while let Some(m) = work.pop() {
                let Some(node) = g.node(m) else { continue };
                for i in 0..node.in_data_count() {
                    let Some(p) = node.peer_of_input(i) else {
                        continue;
                    };
                    match state.get(p.node) {
                        Some((Some(_), NONE)) => {}
                        _ => continue,
                    }
                    let readers = g.node(p.node).map_or(&[][..], |pn| pn.peers_of_output(0));
                    if readers.iter().all(|x| in_region(state, x.node)) {
                        state[p.node].1 = r;
                        members.push(p.node);
                        work.push(p.node);
                    }
                }
            }
            if members.len() >= 2 && operands_direct(g, root, &members, state, r) {
                members.sort_by_key(|&n| self.topo.index[n]);
                found.push(Found { root, was, members });
            } else {
                // Not fused: its nodes may still join later regions (the root as an inner
                // node).
                release(state, root, was, &members);
            }
        }
        let state = &self.state;
        let built: Vec<Result<Option<GraphPatch>, String>> = found
            .par_iter()
            .with_min_len(PARALLEL_MIN / 16)
            .map(|f| build(g, f.root, &f.members, state))
            .collect();
        let mut patches = Vec::with_capacity(built.len());
        for (k, b) in built.into_iter().enumerate() {
            match b? {
                Some(p) => patches.push(p),
                None => {
                    // `operands_direct` should have kept this region out; its nodes and those
                    // of every later region are released, and the search resumes after its
                    // root (the later regions may then take its nodes).
                    for f in found[k..].iter().rev() {
                        release(&mut self.state, f.root, f.was, &f.members);
                    }
                    self.left = self.topo.index[found[k].root] as usize;
                    break;
                }
            }
        }
        Ok(patches)
    }
}

/// A region found, its patch not yet built: its root, the root's state before, and its
/// members in topological order.
struct Found {
    root: NodeId,
    was: u32,
    members: Vec<NodeId>,
}

/// Undoes a region: its members become free again, its root as it was.
fn release(state: &mut State, root: NodeId, was: u32, members: &[NodeId]) {
    for &m in members {
        state[m].1 = NONE;
    }
    state[root].1 = was;
}

/// Below this many items a parallel map runs on one thread.
const PARALLEL_MIN: usize = 2048;

/// Whether every value region `r` reads from outside is one the kernel reads directly for
/// the root's output (what [`build`] checks, without building anything).
fn operands_direct(
    g: &ComputeGraph,
    root: NodeId,
    members: &[NodeId],
    state: &State,
    r: u32,
) -> bool {
    let Some(out) = g.op(root).and_then(known_dims) else {
        return false;
    };
    members.iter().all(|&m| {
        let (Some(node), Some(op)) = (g.node(m), g.op(m)) else {
            return false;
        };
        (0..node.in_data_count()).all(|i| match node.peer_of_input(i) {
            None => true,
            Some(p) if state.get(p.node).is_some_and(|s| s.1 == r) => true,
            Some(_) => op
                .input(i)
                .map(|d| d.shape())
                .is_some_and(|s| s.is_fully_known() && direct_operand(s.dims(), out)),
        })
    })
}

/// Appends the instructions of one node (`arg(i)`: its input `i` as an operand, `None` when
/// absent); `None` when an input its op needs is absent.
fn emit(
    elem: Elem,
    arg: &mut impl FnMut(usize) -> Option<Arg>,
    instrs: &mut Vec<Instr>,
) -> Option<()> {
    match elem {
        Elem::Unary(u) => {
            let x = arg(0)?;
            instrs.push(Instr::Unary(u, x));
        }
        Elem::Binary(b) => {
            let (x, y) = (arg(0)?, arg(1)?);
            instrs.push(Instr::Binary(b, x, y));
        }
        Elem::ClipInputs => {
            let mut x = arg(0)?;
            let before = instrs.len();
            for (i, op) in [(1, BinOp::Max), (2, BinOp::Min)] {
                if let Some(b) = arg(i) {
                    instrs.push(Instr::Binary(op, x, b));
                    x = Arg::Temp(instrs.len() - 1);
                }
            }
            // No bound given: Clip is the identity, still one value of its own.
            if instrs.len() == before {
                instrs.push(Instr::Unary(rge_vector::simd::UnaryOp::Identity, x));
            }
        }
    }
    Some(())
}

/// The patch replacing `region` (rooted at `root`) by one FusedElementwise node, or `None` when
/// a member lacks an input its op needs. Its outside operands were checked by
/// [`operands_direct`].
fn build(
    g: &ComputeGraph,
    root: NodeId,
    members: &[NodeId],
    state: &State,
) -> Result<Option<GraphPatch>, String> {
    let root_op = g.op(root).ok_or("stale root")?;
    let mut inputs: Vec<Value> = Vec::new();
    let mut input_descs = Vec::new();
    // Member → its value's instruction (regions are small: a scan beats a map).
    let mut value_of: Vec<(NodeId, usize)> = Vec::with_capacity(members.len());
    let mut instrs: Vec<Instr> = Vec::new();
    for &m in members {
        let node = g.node(m).ok_or("stale node")?;
        let op = g.op(m).ok_or("stale node")?;
        let mut arg = |i: usize| -> Option<Arg> {
            let p = node.peer_of_input(i)?;
            if let Some(&(_, t)) = value_of.iter().find(|x| x.0 == p.node) {
                return Some(Arg::Temp(t));
            }
            let v = (p.node, p.index.max(0) as usize);
            let k = match inputs.iter().position(|x| *x == v) {
                Some(k) => k,
                None => {
                    let pdesc = g
                        .op(p.node)
                        .and_then(|o| o.output(v.1))
                        .or(op.input(i))
                        .cloned()
                        .unwrap_or_default();
                    inputs.push(v);
                    input_descs.push(pdesc);
                    inputs.len() - 1
                }
            };
            Some(Arg::Input(k))
        };
        let elem = state
            .get(m)
            .and_then(|s| s.0)
            .ok_or("region member is not fusable")?;
        if emit(elem, &mut arg, &mut instrs).is_none() {
            // A missing input: left unfused.
            return Ok(None);
        }
        value_of.push((m, instrs.len() - 1));
    }
    let program = Program::new(instrs, inputs.len())?;
    let names: Vec<String> = members.iter().map(|&m| g.name_of(m).to_string()).collect();
    // The root's name: graph outputs and profiles keep naming the value the user knows.
    let mut fused = OpDesc::new(root_op.name(), "FusedElementwise");
    fused.set_domain(rge_vector::engine::FUSED_DOMAIN);
    fused.set_opset(Some(1));
    fused.set_engine_name("");
    fused.attrs_mut().set("program", program.text());
    let why = format!(
        "{} elementwise ops over {} inputs in one pass, no intermediate tensors",
        members.len(),
        inputs.len()
    );
    fused.attrs_mut().set(
        REGION_ATTR,
        AttrValue::ListString(std::iter::once(why).chain(names).collect()),
    );
    for (k, d) in input_descs.into_iter().enumerate() {
        fused
            .add_input(&format!("X{k}"), d)
            .map_err(|e| e.to_string())?;
    }
    let out_desc = root_op.output(0).cloned().unwrap_or_default();
    fused.add_output("Y", out_desc).map_err(|e| e.to_string())?;
    let mut patch = GraphPatch::in_graph(g.root());
    for &m in members {
        patch.remove(m);
    }
    let k = patch.add_node(fused);
    for (i, (n, o)) in inputs.iter().enumerate() {
        patch.connect(Outlet::old(*n, *o), k, i);
    }
    patch.shunt(root, 0, Outlet::new_node(k, 0));
    patch.drop_control();
    Ok(Some(patch))
}
