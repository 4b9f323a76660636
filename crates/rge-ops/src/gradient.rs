//! ai.onnx.preview.training's `Gradient`, expanded before inference into the ops that compute
//! it (reverse-mode differentiation, as the op's spec describes): the node names the tensors
//! `xs` (and `zs`) its inputs stand for and the tensor `y`; its outputs are dy/dx for each x,
//! with dy seeded by ones. The forward nodes between them are copied with the Gradient's
//! inputs in place of `xs`/`zs` (common-subexpression elimination merges the copy with the
//! original when the inputs are the same tensors), then each copy's backward rule adds its
//! inputs' gradients, summed where a value has several consumers.
//!
//! A gradient flowing to a broadcast operand is summed over the broadcast axes (`unbroadcast`,
//! built from shape ops so that it holds for dynamic shapes and folds away for static ones).
//! Differentiable ops: Add, Sub, Mul, Div, Neg, Identity, Relu, Sigmoid, Tanh, Exp, Log, Sqrt,
//! MatMul (operands of rank ≥ 2), Reshape, Flatten, Squeeze, Unsqueeze. Any other op between
//! `xs` and `y` is an error naming it, and the graph is left as it was.

use std::collections::{HashMap, HashSet};

use rge_ir::{AttrValue, ComputeGraph, GraphId, NodeId, OpDesc, OutAnchor, Shape, Tensor};

use crate::error::OpsError;
use crate::pass::topo_order;
use crate::registry::normalize_domain;

/// The Gradient op's domain.
pub const TRAINING_DOMAIN: &str = "ai.onnx.preview.training";
/// The ONNX frontend's output-desc attribute holding a value's name.
const ONNX_NAME: &str = "_onnx_name";
/// The default-domain version the generated nodes are written in (ReduceSum's axes input,
/// CastLike).
const OPSET: i64 = 18;

/// Ops whose backward rule this module knows.
const DIFFERENTIABLE: &[&str] = &[
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Neg",
    "Identity",
    "Relu",
    "Sigmoid",
    "Tanh",
    "Exp",
    "Log",
    "Sqrt",
    "MatMul",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
];

/// Expands every Gradient node of the root graph; returns how many. An unsupported op, a name
/// that is not a tensor of the graph or a Gradient inside a subgraph is an error naming the
/// node, raised before the graph changes.
pub fn expand_gradients(graph: &mut ComputeGraph) -> Result<usize, OpsError> {
    let root = graph.root();
    let is_gradient = |op: &OpDesc| {
        op.op_type() == "Gradient" && normalize_domain(op.domain()) == TRAINING_DOMAIN
    };
    for n in graph.all_nodes(root) {
        if graph.graph_of(n) != Some(root) && graph.op(n).is_some_and(is_gradient) {
            return Err(node_error(
                graph,
                n,
                "Gradient inside a subgraph is not supported",
            ));
        }
    }
    let todo: Vec<NodeId> = graph
        .nodes_of(root)
        .filter(|&n| graph.op(n).is_some_and(is_gradient))
        .collect();
    // Plan every node first: a refusal leaves the graph untouched.
    let plans = todo
        .iter()
        .map(|&n| plan(graph, root, n).map_err(|m| node_error(graph, n, &m)))
        .collect::<Result<Vec<_>, _>>()?;
    for p in plans {
        let name = graph.name_of(p.node).to_string();
        expand(graph, root, p).map_err(|e| OpsError::Node {
            node: name.clone(),
            op_type: "Gradient".into(),
            message: e.to_string(),
        })?;
    }
    Ok(todo.len())
}

fn node_error(graph: &ComputeGraph, n: NodeId, message: &str) -> OpsError {
    OpsError::Node {
        node: graph.name_of(n).to_string(),
        op_type: graph.op(n).map_or("?", |o| o.op_type()).to_string(),
        message: message.to_string(),
    }
}

/// What one Gradient node differentiates.
struct Plan {
    node: NodeId,
    /// The anchor `y` names.
    y: OutAnchor,
    /// Per x: the anchor its name denotes.
    xs: Vec<OutAnchor>,
    /// Named anchor (xs, zs) → the Gradient's input source standing for it.
    leaves: HashMap<OutAnchor, OutAnchor>,
    /// The forward nodes between the leaves and `y`, in topological order.
    region: Vec<NodeId>,
}

fn plan(graph: &ComputeGraph, g: GraphId, n: NodeId) -> Result<Plan, String> {
    let op = graph.op(n).ok_or("not a node")?;
    let strings = |name: &str| -> Result<Vec<String>, String> {
        Ok(op
            .attrs()
            .get_as::<&[String]>(name)
            .map_err(|e| e.to_string())?
            .unwrap_or(&[])
            .to_vec())
    };
    let xs = strings("xs")?;
    let zs = strings("zs")?;
    let y = op
        .attrs()
        .get_str("y")
        .map_err(|e| e.to_string())?
        .ok_or("attribute `y` is missing")?
        .to_string();
    if xs.is_empty() {
        return Err("attribute `xs` is empty".into());
    }
    let node = graph.node(n).ok_or("not a node")?;
    if node.in_data_count() != xs.len() + zs.len() {
        return Err(format!(
            "has {} inputs for {} xs and {} zs",
            node.in_data_count(),
            xs.len(),
            zs.len()
        ));
    }
    if node.out_data_count() != xs.len() {
        return Err(format!(
            "has {} outputs for {} xs",
            node.out_data_count(),
            xs.len()
        ));
    }
    // The graph's value names.
    let mut named: HashMap<&str, OutAnchor> = HashMap::new();
    for m in graph.nodes_of(g) {
        let Some(o) = graph.op(m) else { continue };
        for i in 0..o.output_count() {
            if let Some(Ok(Some(name))) = o.output(i).map(|d| d.attrs().get_str(ONNX_NAME)) {
                named.insert(name, m.out(i));
            }
        }
    }
    let find = |name: &str| -> Result<OutAnchor, String> {
        named
            .get(name)
            .copied()
            .ok_or_else(|| format!("`{name}` is not a tensor of the graph"))
    };
    let y = find(&y)?;
    let x_anchors = xs.iter().map(|x| find(x)).collect::<Result<Vec<_>, _>>()?;
    let mut leaves = HashMap::new();
    for (k, name) in xs.iter().chain(&zs).enumerate() {
        let src = node
            .peer_of_input(k)
            .ok_or_else(|| format!("input {k} (for `{name}`) is not linked"))?;
        leaves.insert(find(name)?, src);
    }
    // Ancestors of y (stopping at the leaves), then those that depend on a leaf.
    let mut ancestors: HashSet<NodeId> = HashSet::new();
    let mut stack = vec![y];
    while let Some(a) = stack.pop() {
        if leaves.contains_key(&a) || !ancestors.insert(a.node) {
            continue;
        }
        let m = graph.node(a.node).ok_or("dangling link")?;
        stack.extend(m.input_peers().iter().flatten().copied());
    }
    let mut region = Vec::new();
    let mut dependent: HashSet<OutAnchor> = leaves.keys().copied().collect();
    for m in topo_order(graph, g).map_err(|e| e.to_string())? {
        if !ancestors.contains(&m) {
            continue;
        }
        let node = graph.node(m).ok_or("dangling link")?;
        if !node
            .input_peers()
            .iter()
            .flatten()
            .any(|a| dependent.contains(a))
        {
            continue;
        }
        let op = node.op();
        if !normalize_domain(op.domain()).is_empty() || !DIFFERENTIABLE.contains(&op.op_type()) {
            return Err(format!(
                "cannot differentiate node `{}` ({}): the differentiable ops are {}",
                op.name(),
                op.op_type(),
                DIFFERENTIABLE.join(", ")
            ));
        }
        for i in 0..node.out_data_count() {
            dependent.insert(m.out(i));
        }
        region.push(m);
    }
    Ok(Plan {
        node: n,
        y,
        xs: x_anchors,
        leaves,
        region,
    })
}

/// Adds the nodes of one expansion to graph `g`.
struct Builder<'a> {
    graph: &'a mut ComputeGraph,
    g: GraphId,
    prefix: String,
    count: usize,
}

impl Builder<'_> {
    fn fresh(&mut self, what: &str) -> String {
        loop {
            self.count += 1;
            let name = format!("{}/{what}_{}", self.prefix, self.count);
            if self.graph.find_node(self.g, &name).is_none() {
                return name;
            }
        }
    }

    /// A default-domain node of `op_type` over `inputs`, its one output.
    fn op(
        &mut self,
        op_type: &str,
        inputs: &[OutAnchor],
        attrs: Vec<(&str, AttrValue)>,
    ) -> rge_ir::Result<OutAnchor> {
        let mut op = OpDesc::new(self.fresh(op_type), op_type).with_ports(inputs.len(), 1);
        op.set_opset(Some(OPSET));
        for (k, v) in attrs {
            op.attrs_mut().set(k, v);
        }
        let id = self.graph.add_node(self.g, op)?;
        for (i, src) in inputs.iter().enumerate() {
            self.graph.add_edge(src.node, src.index as usize, id, i)?;
        }
        Ok(id.out(0))
    }

    fn konst(&mut self, t: Tensor) -> rge_ir::Result<OutAnchor> {
        let mut op = OpDesc::new(self.fresh("const"), "Const").with_ports(0, 1);
        op.attrs_mut().set("value", t);
        Ok(self.graph.add_node(self.g, op)?.out(0))
    }

    /// A tensor of `like`'s shape and type filled with `v`.
    fn fill_like(&mut self, like: OutAnchor, v: f32) -> rge_ir::Result<OutAnchor> {
        let c = self.konst(Tensor::scalar_f32(v))?;
        let c = self.op("CastLike", &[c, like], vec![])?;
        let s = self.op("Shape", &[like], vec![])?;
        self.op("Expand", &[c, s], vec![])
    }

    /// `g` summed over the axes `x` was broadcast along, reshaped to `x`'s shape.
    fn unbroadcast(&mut self, g: OutAnchor, x: OutAnchor) -> rge_ir::Result<OutAnchor> {
        let sx = self.op("Shape", &[x], vec![])?;
        let sg = self.op("Shape", &[g], vec![])?;
        let rx = self.op("Size", &[sx], vec![])?;
        let rg = self.op("Size", &[sg], vec![])?;
        let pad = self.op("Sub", &[rg, rx], vec![])?;
        let one_d = self.konst(Tensor::from_i64(Shape::new([1]), &[1]))?;
        let pad = self.op("Reshape", &[pad, one_d], vec![])?;
        let ones = self.op(
            "ConstantOfShape",
            &[pad],
            vec![("value", Tensor::from_i64(Shape::new([1]), &[1]).into())],
        )?;
        let sxp = self.op("Concat", &[ones, sx], vec![("axis", AttrValue::Int(0))])?;
        let one = self.konst(Tensor::scalar_i64(1))?;
        let x_one = self.op("Equal", &[sxp, one], vec![])?;
        let g_one = self.op("Equal", &[sg, one], vec![])?;
        let g_wide = self.op("Not", &[g_one], vec![])?;
        let mask = self.op("And", &[x_one, g_wide], vec![])?;
        let nz = self.op("NonZero", &[mask], vec![])?;
        let flat = self.konst(Tensor::from_i64(Shape::new([1]), &[-1]))?;
        let axes = self.op("Reshape", &[nz, flat], vec![])?;
        let summed = self.op(
            "ReduceSum",
            &[g, axes],
            vec![
                ("keepdims", AttrValue::Int(1)),
                ("noop_with_empty_axes", AttrValue::Int(1)),
            ],
        )?;
        self.op("Reshape", &[summed, sx], vec![])
    }
}

fn expand(graph: &mut ComputeGraph, g: GraphId, p: Plan) -> rge_ir::Result<()> {
    let prefix = graph.name_of(p.node).to_string();
    let mut b = Builder {
        graph,
        g,
        prefix,
        count: 0,
    };
    // The forward copy: named leaves become the Gradient's inputs.
    let mut map: HashMap<OutAnchor, OutAnchor> = p.leaves.clone();
    let mut copies: Vec<(NodeId, Vec<OutAnchor>)> = Vec::new();
    for &m in &p.region {
        let mut op = b.graph.op(m).expect("planned node").clone();
        let inputs: Vec<OutAnchor> = b
            .graph
            .node(m)
            .expect("planned node")
            .input_peers()
            .iter()
            .map(|a| a.map(|a| map.get(&a).copied().unwrap_or(a)))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| rge_ir::IrError::Invalid {
                what: "forward node",
                value: format!("`{}` has an unlinked input", op.name()),
            })?;
        let name = b.fresh(&format!("fwd_{}", op.name()));
        op.set_name(name);
        for i in 0..op.output_count() {
            if let Some(d) = op.output_mut(i) {
                d.attrs_mut().remove(ONNX_NAME);
            }
        }
        let id = b.graph.add_node(g, op)?;
        for (i, src) in inputs.iter().enumerate() {
            b.graph.add_edge(src.node, src.index as usize, id, i)?;
        }
        map.insert(m.out(0), id.out(0));
        copies.push((id, inputs));
    }
    let y = map.get(&p.y).copied().unwrap_or(p.y);
    // Backward: contributions per value, summed when first read.
    let mut grads: HashMap<OutAnchor, Vec<OutAnchor>> = HashMap::new();
    let seed = b.fill_like(y, 1.0)?;
    grads.entry(y).or_default().push(seed);
    let dependent: HashSet<OutAnchor> = p
        .leaves
        .values()
        .copied()
        .chain(copies.iter().map(|(id, _)| id.out(0)))
        .collect();
    for (id, inputs) in copies.iter().rev() {
        let Some(parts) = grads.remove(&id.out(0)) else {
            continue;
        };
        let gy = sum(&mut b, parts)?;
        let op_type = b.graph.op(*id).expect("copy").op_type().to_string();
        let out = id.out(0);
        for (i, &x) in inputs.iter().enumerate() {
            if !dependent.contains(&x) {
                continue;
            }
            if let Some(gx) = backward(&mut b, &op_type, inputs, out, gy, i)? {
                grads.entry(x).or_default().push(gx);
            }
        }
    }
    // The outputs: dy/dx per x (zeros where y does not depend on x), named as the Gradient's.
    for (k, x) in p.xs.iter().enumerate() {
        let src = p.leaves.get(x).copied().unwrap_or(*x);
        let gx = match grads.get(&src) {
            Some(parts) => sum(&mut b, parts.clone())?,
            None => b.fill_like(src, 0.0)?,
        };
        let name = b.fresh("grad");
        let mut op = OpDesc::new(name, "Identity").with_ports(1, 1);
        op.set_opset(Some(OPSET));
        if let Some(d) = b.graph.op(p.node).and_then(|o| o.output(k)).cloned() {
            if let Some(o) = op.output_mut(0) {
                *o = d;
            }
        }
        let id = b.graph.add_node(g, op)?;
        b.graph.add_edge(gx.node, gx.index as usize, id, 0)?;
        let peers = b
            .graph
            .node(p.node)
            .map(|n| n.peers_of_output(k).to_vec())
            .unwrap_or_default();
        for dst in peers {
            b.graph.replace_source(p.node.out(k), dst, id.out(0))?;
        }
    }
    b.graph.remove_node(p.node)?;
    Ok(())
}

fn sum(b: &mut Builder<'_>, parts: Vec<OutAnchor>) -> rge_ir::Result<OutAnchor> {
    if parts.len() == 1 {
        return Ok(parts[0]);
    }
    b.op("Sum", &parts, vec![])
}

/// The gradient flowing to input `i` of a node of `op_type` with inputs `x`, output `y` and
/// output gradient `g`; `None` where the input is not differentiable (a shape).
fn backward(
    b: &mut Builder<'_>,
    op_type: &str,
    x: &[OutAnchor],
    y: OutAnchor,
    g: OutAnchor,
    i: usize,
) -> rge_ir::Result<Option<OutAnchor>> {
    let r = match (op_type, i) {
        ("Add", _) => b.unbroadcast(g, x[i])?,
        ("Sub", 0) => b.unbroadcast(g, x[0])?,
        ("Sub", _) => {
            let n = b.op("Neg", &[g], vec![])?;
            b.unbroadcast(n, x[1])?
        }
        ("Mul", _) => {
            let m = b.op("Mul", &[g, x[1 - i]], vec![])?;
            b.unbroadcast(m, x[i])?
        }
        ("Div", 0) => {
            let d = b.op("Div", &[g, x[1]], vec![])?;
            b.unbroadcast(d, x[0])?
        }
        ("Div", _) => {
            // d(a/b)/db = -(a/b)/b = -y/b.
            let m = b.op("Mul", &[g, y], vec![])?;
            let d = b.op("Div", &[m, x[1]], vec![])?;
            let n = b.op("Neg", &[d], vec![])?;
            b.unbroadcast(n, x[1])?
        }
        ("Neg", _) => b.op("Neg", &[g], vec![])?,
        ("Identity", _) => g,
        ("Relu", _) => {
            let zero = b.fill_like(x[0], 0.0)?;
            let pos = b.op("Greater", &[x[0], zero], vec![])?;
            let pos = b.op("CastLike", &[pos, g], vec![])?;
            b.op("Mul", &[g, pos], vec![])?
        }
        ("Sigmoid", _) => {
            let one = b.fill_like(y, 1.0)?;
            let d = b.op("Sub", &[one, y], vec![])?;
            let d = b.op("Mul", &[y, d], vec![])?;
            b.op("Mul", &[g, d], vec![])?
        }
        ("Tanh", _) => {
            let one = b.fill_like(y, 1.0)?;
            let sq = b.op("Mul", &[y, y], vec![])?;
            let d = b.op("Sub", &[one, sq], vec![])?;
            b.op("Mul", &[g, d], vec![])?
        }
        ("Exp", _) => b.op("Mul", &[g, y], vec![])?,
        ("Log", _) => b.op("Div", &[g, x[0]], vec![])?,
        ("Sqrt", _) => {
            let two = b.fill_like(y, 2.0)?;
            let d = b.op("Mul", &[two, y], vec![])?;
            b.op("Div", &[g, d], vec![])?
        }
        ("MatMul", 0) => {
            let e = einsum(b, "...ik,...jk->...ij", g, x[1])?;
            b.unbroadcast(e, x[0])?
        }
        ("MatMul", _) => {
            let e = einsum(b, "...ki,...kj->...ij", x[0], g)?;
            b.unbroadcast(e, x[1])?
        }
        ("Reshape" | "Flatten" | "Squeeze" | "Unsqueeze", 0) => {
            let s = b.op("Shape", &[x[0]], vec![])?;
            b.op("Reshape", &[g, s], vec![])?
        }
        // Shape and axes inputs carry no gradient.
        _ => return Ok(None),
    };
    Ok(Some(r))
}

fn einsum(
    b: &mut Builder<'_>,
    equation: &str,
    l: OutAnchor,
    r: OutAnchor,
) -> rge_ir::Result<OutAnchor> {
    b.op(
        "Einsum",
        &[l, r],
        vec![("equation", AttrValue::String(equation.into()))],
    )
}
