//! The tensor-parallel pass (`--tensor-parallel N`): shards the weights of MatMul and Gemm
//! nodes whose weight is a 2-D constant, Megatron style, for rank `r` of `n`, so each rank
//! holds 1/n of them:
//!
//! - a pair `A → (elementwise chain) → B` (an MLP: A's output reaches only B's data input,
//!   through single-consumer unary activations and a bias Add) is split by columns in A (its
//!   weight's output columns, and A's bias) and by rows in B; B's partial products are summed by
//!   one inserted `HcomAllReduce` (no communication in between);
//! - any other candidate is split by rows: a `Slice` takes this rank's part of the input's last
//!   axis, and an `HcomAllReduce` sums the partial products.
//!
//! A Gemm's bias (C) is added by rank 0 only (`beta` 0 elsewhere). Weights whose dims do not
//! split into n equal parts, or constants shared by several nodes, stay whole (reported).

use rge_ir::{op_types, AttrValue, ComputeGraph, DataType, NodeId, OpDesc, Shape, TensorDesc};

/// What the pass did.
#[derive(Debug, Default, Clone)]
pub struct ShardReport {
    /// Nodes split by columns (the first of a pair).
    pub column: Vec<String>,
    /// Nodes split by rows.
    pub row: Vec<String>,
    /// Collectives inserted (node names).
    pub collectives: Vec<String>,
    /// Candidates kept whole, with the reason.
    pub kept: Vec<(String, String)>,
    /// Bytes of the candidates' weights before and after sharding (this rank).
    pub weight_bytes_full: u64,
    pub weight_bytes_local: u64,
}

impl ShardReport {
    /// One line for `rge run`.
    pub fn summary(&self) -> String {
        format!(
            "{} nodes split by columns, {} by rows, {} all-reduces inserted, {} kept whole; sharded weights {} of {} bytes on this rank",
            self.column.len(),
            self.row.len(),
            self.collectives.len(),
            self.kept.len(),
            self.weight_bytes_local,
            self.weight_bytes_full
        )
    }
}

/// Attribute a node gets to show its shard in `rge explain`.
pub const TP_ATTR: &str = "_tensor_parallel";

#[derive(Debug, Clone, Copy)]
struct Weight {
    konst: NodeId,
    /// Rows and columns of the product's weight (K × N), whatever its layout.
    k: usize,
    n: usize,
    /// Stored as [N, K] (Gemm transB).
    transposed: bool,
}

const ACTIVATIONS: &[&str] = &[
    "Relu",
    "Gelu",
    "Tanh",
    "Sigmoid",
    "Softplus",
    "Elu",
    "LeakyRelu",
    "Selu",
    "HardSigmoid",
    "HardSwish",
    "Mish",
    "Erf",
    "Neg",
    "Abs",
    "Identity",
];

fn sole_consumer(g: &ComputeGraph, n: NodeId) -> Option<(NodeId, usize)> {
    let node = g.node(n)?;
    if node.out_data_count() != 1 {
        return None;
    }
    match node.peers_of_output(0) {
        [only] => Some((only.node, only.index as usize)),
        _ => None,
    }
}

fn producer(g: &ComputeGraph, n: NodeId, input: usize) -> Option<NodeId> {
    g.node(n)?.peer_of_input(input).map(|a| a.node)
}

fn const_2d(g: &ComputeGraph, c: NodeId) -> Option<(usize, usize)> {
    let op = g.op(c)?;
    if op.op_type() != op_types::CONST || g.node(c)?.peers_of_output(0).len() != 1 {
        return None;
    }
    let t = op.const_value()?;
    match t.desc.shape().dims() {
        &[a, b] if a > 0 && b > 0 => Some((a as usize, b as usize)),
        _ => None,
    }
}

/// The weight of a MatMul/Gemm node, when it is a 2-D constant only this node reads.
fn weight(g: &ComputeGraph, n: NodeId) -> Result<Weight, String> {
    let op = g.op(n).ok_or("no node")?;
    let gemm = op.op_type() == "Gemm";
    if gemm && op.attrs().get_int("transA").ok().flatten().unwrap_or(0) != 0 {
        return Err("Gemm with transA".into());
    }
    let transposed = gemm && op.attrs().get_int("transB").ok().flatten().unwrap_or(0) != 0;
    let konst = producer(g, n, 1).ok_or("no weight input")?;
    let (a, b) = const_2d(g, konst).ok_or("the weight is not a 2-D constant of this node alone")?;
    let (k, n) = if transposed { (b, a) } else { (a, b) };
    Ok(Weight {
        konst,
        k,
        n,
        transposed,
    })
}

fn elem_bytes(g: &ComputeGraph, c: NodeId) -> u64 {
    g.op(c)
        .and_then(OpDesc::const_value)
        .map_or(0, |t| t.data.len() as u64)
}

/// Replaces the value of const `c` ([rows, cols] row-major) by rows `r0..r1` or columns
/// `c0..c1` (1-D constants: elements).
fn slice_const(
    g: &mut ComputeGraph,
    c: NodeId,
    by_rows: bool,
    lo: usize,
    hi: usize,
    read: &mut dyn FnMut(&[u8]),
) -> Result<(), String> {
    let op = g.op(c).ok_or("no const")?;
    let t = op.const_value().ok_or("not a constant")?.clone();
    let dims: Vec<usize> = t.desc.shape().dims().iter().map(|&d| d as usize).collect();
    let total: usize = dims.iter().product::<usize>().max(1);
    let esize = t.data.len() / total;
    let (rows, cols) = match dims.as_slice() {
        [r, c] => (*r, *c),
        [c] => (1, *c),
        _ => return Err(format!("constant of shape {dims:?}")),
    };
    let mut out = Vec::new();
    let new_dims: Vec<i64> = if by_rows {
        out.extend_from_slice(&t.data[lo * cols * esize..hi * cols * esize]);
        vec![(hi - lo) as i64, cols as i64]
    } else {
        for r in 0..rows {
            let row = &t.data[r * cols * esize..(r + 1) * cols * esize];
            out.extend_from_slice(&row[lo * esize..hi * esize]);
        }
        if dims.len() == 1 {
            vec![(hi - lo) as i64]
        } else {
            vec![rows as i64, (hi - lo) as i64]
        }
    };
    read(&t.data);
    let mut desc = t.desc.clone();
    desc.set_shape(Shape::new(new_dims));
    let opm = g.op_mut(c).ok_or("no const")?;
    opm.attrs_mut()
        .set("value", rge_ir::Tensor::new(desc.clone(), out));
    if let Some(o) = opm.output_mut(0) {
        o.set_shape(desc.shape().clone());
    }
    Ok(())
}

/// Forgets the declared shape of `n`'s outputs (inference recomputes them).
fn forget_shapes(g: &mut ComputeGraph, n: NodeId) {
    if let Some(op) = g.op_mut(n) {
        for i in 0..op.output_count() {
            if let Some(o) = op.output_mut(i) {
                o.set_shape(Shape::unknown_rank());
            }
        }
    }
}

fn mark(g: &mut ComputeGraph, n: NodeId, what: String) {
    if let Some(op) = g.op_mut(n) {
        op.attrs_mut().set(TP_ATTR, what);
    }
}

fn unique_name(g: &ComputeGraph, base: &str) -> String {
    let mut name = base.to_string();
    let mut k = 1;
    while g.find_node(g.root(), &name).is_some() {
        k += 1;
        name = format!("{base}_{k}");
    }
    name
}

/// Inserts an all-reduce (sum, world group) after output 0 of `n`, before all its consumers.
fn all_reduce_after(g: &mut ComputeGraph, n: NodeId) -> Result<String, String> {
    let err = |e: rge_ir::IrError| e.to_string();
    let op = g.op(n).ok_or("no node")?;
    let desc = op
        .output(0)
        .cloned()
        .unwrap_or_else(|| TensorDesc::with_shape_dtype(Shape::unknown_rank(), DataType::Float));
    let name = unique_name(g, &format!("{}/tp_allreduce", op.name()));
    let mut ar = OpDesc::new(&name, "HcomAllReduce");
    ar.set_opset(op.opset());
    ar.add_input("x", desc.clone()).map_err(err)?;
    ar.add_output("y", desc).map_err(err)?;
    ar.attrs_mut().set("reduction", "sum");
    ar.attrs_mut().set("group", crate::WORLD_GROUP);
    ar.attrs_mut().set("fusion", 0i64);
    ar.attrs_mut().set("fusion_id", -1i64);
    let id = g.add_node_after(n, ar).map_err(err)?;
    let consumers: Vec<_> = g.node(n).ok_or("no node")?.peers_of_output(0).to_vec();
    for c in consumers {
        g.replace_source(n.out(0), c, id.out(0)).map_err(err)?;
    }
    g.add_edge(n, 0, id, 0).map_err(err)?;
    let outs: Vec<(NodeId, u32)> = g
        .output_nodes(g.root())
        .iter()
        .map(|&(o, i)| if o == n && i == 0 { (id, 0) } else { (o, i) })
        .collect();
    let root = g.root();
    g.set_output_nodes(root, outs).map_err(err)?;
    Ok(name)
}

fn int64_const(g: &mut ComputeGraph, after: NodeId, name: &str, v: i64) -> Result<NodeId, String> {
    let err = |e: rge_ir::IrError| e.to_string();
    let t = rge_ir::Tensor::from_i64(Shape::new([1]), &[v]);
    let mut op = OpDesc::new(unique_name(g, name), op_types::CONST);
    op.add_output("y", t.desc.clone()).map_err(err)?;
    op.attrs_mut().set("value", t);
    g.add_node_before(after, op).map_err(err)
}

/// Inserts `Slice(x, [lo], [hi], [-1])` on data input 0 of `n`.
fn slice_input(g: &mut ComputeGraph, n: NodeId, lo: usize, hi: usize) -> Result<(), String> {
    let err = |e: rge_ir::IrError| e.to_string();
    let src = g
        .node(n)
        .and_then(|x| x.peer_of_input(0))
        .ok_or("no input")?;
    let op = g.op(n).ok_or("no node")?;
    let base = op.name().to_string();
    let opset = op.opset();
    let mut desc = op
        .input(0)
        .cloned()
        .unwrap_or_else(|| TensorDesc::with_shape_dtype(Shape::unknown_rank(), DataType::Float));
    desc.set_shape(Shape::unknown_rank());
    let starts = int64_const(g, n, &format!("{base}/tp_starts"), lo as i64)?;
    let ends = int64_const(g, n, &format!("{base}/tp_ends"), hi as i64)?;
    let axes = int64_const(g, n, &format!("{base}/tp_axes"), -1)?;
    let mut s = OpDesc::new(unique_name(g, &format!("{base}/tp_slice")), "Slice");
    s.set_opset(opset.map(|o| o.max(13)));
    let idx = TensorDesc::with_shape_dtype(Shape::new([1]), DataType::Int64);
    s.add_input("data", desc.clone()).map_err(err)?;
    s.add_input("starts", idx.clone()).map_err(err)?;
    s.add_input("ends", idx.clone()).map_err(err)?;
    s.add_input("axes", idx).map_err(err)?;
    s.add_output("output", desc).map_err(err)?;
    let sid = g.add_node_before(n, s).map_err(err)?;
    g.insert_node_between(src, n.input(0), sid, 0, 0)
        .map_err(err)?;
    g.add_edge(starts, 0, sid, 1).map_err(err)?;
    g.add_edge(ends, 0, sid, 2).map_err(err)?;
    g.add_edge(axes, 0, sid, 3).map_err(err)?;
    Ok(())
}

/// A bias Add right after `n` (`Add(n, const [N])` or `Add(const [N], n)`): the Add and the
/// constant.
fn bias_after(g: &ComputeGraph, n: NodeId, width: usize) -> Option<(NodeId, NodeId)> {
    let (add, _) = sole_consumer(g, n)?;
    if g.op(add)?.op_type() != "Add" {
        return None;
    }
    (0..2).find_map(|i| {
        let c = producer(g, add, i)?;
        let op = g.op(c)?;
        let one_d = op.op_type() == op_types::CONST
            && op.const_value()?.desc.shape().dims() == [width as i64]
            && g.node(c)?.peers_of_output(0).len() == 1;
        one_d.then_some((add, c))
    })
}

/// A partner found: the bias (Add, constant) after A, the activations between, and B.
type Partner = (Option<(NodeId, NodeId)>, Vec<NodeId>, NodeId);

/// Binary ops that act column by column when their other input is a scalar constant or
/// another value of the region (the pieces of erf- and tanh-GELU, SiLU, scaled activations).
const POINTWISE_BINARY: &[&str] = &["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"];

/// The most nodes a region between a pair may have (GELU written out is 8 or 9).
const MAX_REGION: usize = 32;

fn is_scalar_const(g: &ComputeGraph, c: NodeId) -> bool {
    g.op(c).is_some_and(|op| {
        op.op_type() == op_types::CONST
            && op
                .const_value()
                .is_some_and(|t| t.desc.shape().dims().iter().all(|&d| d == 1))
    })
}

/// The partner B of column candidate `a`: reached through a bias Add and a region of
/// pointwise ops (activations, and binary ops whose other input is a scalar constant or
/// another value of the region: GELU and SiLU as exporters write them) whose only way out is
/// B's data input. Slicing A's columns then slices every value of the region the same way.
fn partner(g: &ComputeGraph, a: NodeId, wa: &Weight) -> Option<Partner> {
    let bias = bias_after(g, a, wa.n);
    let start = bias.map_or(a, |(add, _)| add);
    // The forward closure of pointwise consumers; MatMul/Gemm data inputs end it.
    let mut region: Vec<NodeId> = Vec::new();
    let mut exits: Vec<(NodeId, NodeId)> = Vec::new();
    let mut stack = vec![start];
    while let Some(x) = stack.pop() {
        let node = g.node(x)?;
        if node.out_data_count() != 1 || g.is_output_node(x) {
            return None;
        }
        for peer in node.peers_of_output(0) {
            let (c, input) = (peer.node, peer.index as usize);
            if c == start || region.contains(&c) {
                continue;
            }
            let t = g.op(c)?.op_type();
            if matches!(t, "MatMul" | "Gemm") && input == 0 {
                exits.push((x, c));
                continue;
            }
            let unary = ACTIVATIONS.contains(&t) && g.node(c)?.in_data_count() == 1;
            if !(unary || POINTWISE_BINARY.contains(&t)) || region.len() >= MAX_REGION {
                return None;
            }
            region.push(c);
            stack.push(c);
        }
    }
    // One way out, from one value, into B's data input.
    let [(_, b)] = exits.as_slice() else {
        return None;
    };
    let b = *b;
    if region.contains(&b) {
        return None;
    }
    // Every input of the region is the region's (or A's) own value or a scalar constant.
    for &x in &region {
        for i in 0..g.node(x)?.in_data_count() {
            let p = producer(g, x, i)?;
            if !(p == start || region.contains(&p) || is_scalar_const(g, p)) {
                return None;
            }
        }
    }
    let wb = weight(g, b).ok()?;
    (wb.k == wa.n).then_some((bias, region, b))
}

fn part(len: usize, r: usize, n: usize) -> (usize, usize) {
    (r * len / n, (r + 1) * len / n)
}

/// Shards the root graph of `g` for rank `rank` of `n`.
pub fn shard(g: &mut ComputeGraph, rank: usize, n: usize) -> Result<ShardReport, String> {
    shard_with(g, rank, n, &mut |_| {})
}

/// [`shard`], calling `read` with the bytes of each weight it replaced by a part (a caller
/// whose weights are still in a mapped file hands their pages back: a column split reads
/// every page of the weight).
pub fn shard_with(
    g: &mut ComputeGraph,
    rank: usize,
    n: usize,
    read: &mut dyn FnMut(&[u8]),
) -> Result<ShardReport, String> {
    if n == 0 || rank >= n {
        return Err(format!("rank {rank} of {n} ranks"));
    }
    let mut rep = ShardReport::default();
    let candidates: Vec<NodeId> = g
        .nodes_of(g.root())
        .filter(|&x| {
            g.op(x)
                .is_some_and(|o| matches!(o.op_type(), "MatMul" | "Gemm"))
        })
        .collect();
    let mut done: Vec<NodeId> = Vec::new();
    for &a in &candidates {
        if done.contains(&a) {
            continue;
        }
        let name = g.name_of(a).to_string();
        let wa = match weight(g, a) {
            Ok(w) => w,
            Err(why) => {
                rep.kept.push((name, why));
                continue;
            }
        };
        if n == 1 {
            rep.kept.push((name, "one rank".into()));
            continue;
        }
        rep.weight_bytes_full += elem_bytes(g, wa.konst);
        let pair = partner(g, a, &wa)
            .filter(|(_, _, b)| !done.contains(b))
            .filter(|_| wa.n % n == 0);
        if let Some((bias, chain, b)) = pair {
            let wb = weight(g, b)?;
            let (c0, c1) = part(wa.n, rank, n);
            slice_const(g, wa.konst, wa.transposed, c0, c1, read)?;
            if let Some((add, c)) = bias {
                slice_const(g, c, false, c0, c1, read)?;
                forget_shapes(g, add);
            }
            shard_gemm_bias(g, a, c0, c1, read)?;
            forget_shapes(g, a);
            for &x in &chain {
                forget_shapes(g, x);
            }
            rep.weight_bytes_local += elem_bytes(g, wa.konst);
            rep.weight_bytes_full += elem_bytes_full(&wb, g);
            slice_const(g, wb.konst, !wb.transposed, c0, c1, read)?;
            rep.weight_bytes_local += elem_bytes(g, wb.konst);
            gemm_bias_on_rank0(g, b, rank);
            mark(
                g,
                a,
                format!("columns {c0}..{c1} of {} (rank {rank} of {n})", wa.n),
            );
            mark(
                g,
                b,
                format!("rows {c0}..{c1} of {} (rank {rank} of {n})", wb.k),
            );
            rep.column.push(name);
            rep.row.push(g.name_of(b).to_string());
            rep.collectives.push(all_reduce_after(g, b)?);
            done.extend([a, b]);
            continue;
        }
        if wa.k % n != 0 {
            rep.weight_bytes_local += elem_bytes(g, wa.konst);
            rep.kept
                .push((name, format!("K = {} does not split into {n} parts", wa.k)));
            continue;
        }
        let (r0, r1) = part(wa.k, rank, n);
        slice_input(g, a, r0, r1)?;
        slice_const(g, wa.konst, !wa.transposed, r0, r1, read)?;
        rep.weight_bytes_local += elem_bytes(g, wa.konst);
        gemm_bias_on_rank0(g, a, rank);
        mark(
            g,
            a,
            format!("rows {r0}..{r1} of {} (rank {rank} of {n})", wa.k),
        );
        rep.row.push(name);
        rep.collectives.push(all_reduce_after(g, a)?);
        done.push(a);
    }
    Ok(rep)
}

fn elem_bytes_full(w: &Weight, g: &ComputeGraph) -> u64 {
    elem_bytes(g, w.konst)
}

/// A column-split Gemm's bias C ([N]) keeps its columns.
fn shard_gemm_bias(
    g: &mut ComputeGraph,
    a: NodeId,
    c0: usize,
    c1: usize,
    read: &mut dyn FnMut(&[u8]),
) -> Result<(), String> {
    if g.op(a).map(OpDesc::op_type) != Some("Gemm") {
        return Ok(());
    }
    let Some(c) = producer(g, a, 2) else {
        return Ok(());
    };
    let one_d = g
        .op(c)
        .and_then(OpDesc::const_value)
        .is_some_and(|t| t.desc.shape().dims().len() == 1 && t.desc.shape().dims()[0] > 1);
    if one_d {
        slice_const(g, c, false, c0, c1, read)
    } else {
        Err(format!(
            "Gemm `{}`: a column split needs a 1-D constant bias",
            g.name_of(a)
        ))
    }
}

/// A row-split Gemm adds its bias once: `beta` = 0 on ranks other than 0.
fn gemm_bias_on_rank0(g: &mut ComputeGraph, b: NodeId, rank: usize) {
    if rank == 0 {
        return;
    }
    if let Some(op) = g.op_mut(b) {
        if op.op_type() == "Gemm" {
            op.attrs_mut().set("beta", AttrValue::Float(0.0));
        }
    }
}
