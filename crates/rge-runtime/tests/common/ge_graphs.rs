//! GE graphs built with the rge-ir API (Data, Const, nodes, NetOutput, subgraphs), and the
//! While and Case graphs that rge-runtime's control-flow tests and rge's rts tests both run
//! (rge's tests include this file by path).
#![allow(dead_code)]

use rge_ir::attr_names::{DATA_INDEX, PARENT_NODE_INDEX};
use rge_ir::{
    op_types, ComputeGraph, DataType, Format, GraphId, NodeId, OpDesc, Shape, TensorDesc,
};

pub fn desc(dt: DataType, dims: &[i64]) -> TensorDesc {
    TensorDesc::new(Shape::from_slice(dims), dt, Format::ND)
}

pub fn f32d(dims: &[i64]) -> TensorDesc {
    desc(DataType::Float, dims)
}

/// A GE graph under construction: nodes go to the root or to a subgraph.
pub struct Ge(pub ComputeGraph);

impl Ge {
    pub fn new(name: &str) -> Self {
        Ge(ComputeGraph::new(name))
    }

    pub fn root(&self) -> GraphId {
        self.0.root()
    }

    /// A Data node: graph input `index`; in a subgraph, bound to parent input `parent`.
    pub fn data(
        &mut self,
        g: GraphId,
        name: &str,
        index: i64,
        parent: Option<i64>,
        d: TensorDesc,
    ) -> NodeId {
        let mut op = OpDesc::new(name, op_types::DATA)
            .with_input("x", d.clone())
            .with_output("y", d);
        op.attrs_mut().set(DATA_INDEX, index);
        if let Some(p) = parent {
            op.attrs_mut().set(PARENT_NODE_INDEX, p);
        }
        let n = self.0.add_node(g, op).unwrap();
        if g == self.root() {
            self.0.add_input_node(n).unwrap();
        }
        n
    }

    pub fn konst(&mut self, g: GraphId, name: &str, t: rge_ir::Tensor) -> NodeId {
        let mut op = OpDesc::new(name, op_types::CONST).with_output("y", t.desc.clone());
        op.attrs_mut().set("value", t);
        self.0.add_node(g, op).unwrap()
    }

    /// A node of `ty` reading `ins` (node, output), with outputs `outs`.
    pub fn op(
        &mut self,
        g: GraphId,
        name: &str,
        ty: &str,
        ins: &[(NodeId, usize)],
        outs: &[TensorDesc],
    ) -> NodeId {
        let mut op = OpDesc::new(name, ty);
        for (i, &(src, o)) in ins.iter().enumerate() {
            let d = self.0.op(src).unwrap().output(o).unwrap().clone();
            op.add_input(&format!("x{i}"), d).unwrap();
        }
        for (i, d) in outs.iter().enumerate() {
            op.add_output(&format!("y{i}"), d.clone()).unwrap();
        }
        let n = self.0.add_node(g, op).unwrap();
        for (i, &(src, o)) in ins.iter().enumerate() {
            self.0.add_edge(src, o, n, i).unwrap();
        }
        n
    }

    /// The NetOutput of `g`; in a subgraph its input `i` feeds parent output `i`.
    pub fn output(&mut self, g: GraphId, srcs: &[(NodeId, usize)]) -> NodeId {
        let sub = g != self.root();
        let mut op = OpDesc::new(
            format!("{}_out", self.0.graph_name(g).unwrap_or("g")),
            op_types::NET_OUTPUT,
        );
        for (i, &(src, o)) in srcs.iter().enumerate() {
            let mut d = self.0.op(src).unwrap().output(o).unwrap().clone();
            if sub {
                d.attrs_mut().set(PARENT_NODE_INDEX, i as i64);
            }
            op.add_input(&format!("x{i}"), d).unwrap();
        }
        let n = self.0.add_node(g, op).unwrap();
        for (i, &(src, o)) in srcs.iter().enumerate() {
            self.0.add_edge(src, o, n, i).unwrap();
        }
        if !sub {
            let list = srcs.iter().map(|&(s, o)| (s, o as u32)).collect();
            self.0.set_output_nodes(g, list).unwrap();
        }
        n
    }

    /// The cond subgraph of a counting While: (i, x) → i < `limit`.
    pub fn counter_cond(
        &mut self,
        w: NodeId,
        name: &str,
        limit: f32,
        s: &TensorDesc,
        v: &TensorDesc,
    ) {
        let cond = self.sub(w, 0, name);
        let ci = self.data(cond, "c_i", 0, Some(0), s.clone());
        self.data(cond, "c_x", 1, Some(1), v.clone());
        let lim = self.konst(cond, "c_limit", rge_ir::Tensor::scalar_f32(limit));
        let less = self.op(
            cond,
            "c_less",
            "Less",
            &[(ci, 0), (lim, 0)],
            &[desc(DataType::Bool, &[])],
        );
        self.output(cond, &[(less, 0)]);
    }

    pub fn sub(&mut self, parent: NodeId, slot: usize, name: &str) -> GraphId {
        self.0.add_subgraph(parent, slot, name).unwrap()
    }
}

/// `while i < 3 { i += 1; x += x }` as GE's `op_type` (While, _While, StatelessWhile).
pub fn ge_while(op_type: &str) -> ComputeGraph {
    let mut b = Ge::new("while_graph");
    let root = b.root();
    let (s, v) = (f32d(&[]), f32d(&[2]));
    let i = b.data(root, "i", 0, None, s.clone());
    let x = b.data(root, "x", 1, None, v.clone());
    let w = b.op(
        root,
        "loop",
        op_type,
        &[(i, 0), (x, 0)],
        &[s.clone(), v.clone()],
    );
    b.output(root, &[(w, 0), (w, 1)]);

    b.counter_cond(w, "loop_cond", 3.0, &s, &v);

    let body = b.sub(w, 1, "loop_body");
    let bi = b.data(body, "b_i", 0, Some(0), s.clone());
    let bx = b.data(body, "b_x", 1, Some(1), v.clone());
    let one = b.konst(body, "b_one", rge_ir::Tensor::scalar_f32(1.0));
    let inc = b.op(body, "b_inc", "Add", &[(bi, 0), (one, 0)], &[s]);
    let dbl = b.op(body, "b_dbl", "Add", &[(bx, 0), (bx, 0)], &[v]);
    b.output(body, &[(inc, 0), (dbl, 0)]);
    b.0
}

/// Case over `x` with branches Relu(x), x + x, x * x; the index of `index` (int32 scalar
/// normally).
pub fn ge_case(index: TensorDesc) -> ComputeGraph {
    let mut b = Ge::new("case_graph");
    let root = b.root();
    let v = f32d(&[2]);
    let idx = b.data(root, "idx", 0, None, index);
    let x = b.data(root, "x", 1, None, v.clone());
    let c = b.op(
        root,
        "case",
        "Case",
        &[(idx, 0), (x, 0)],
        std::slice::from_ref(&v),
    );
    b.output(root, &[(c, 0)]);
    for (k, (ty, two)) in [("Relu", false), ("Add", true), ("Mul", true)]
        .into_iter()
        .enumerate()
    {
        let g = b.sub(c, k, &format!("case_branch{k}"));
        let d = b.data(g, &format!("br{k}_x"), 0, Some(1), v.clone());
        let ins: &[(NodeId, usize)] = if two { &[(d, 0), (d, 0)] } else { &[(d, 0)] };
        let o = b.op(g, &format!("br{k}_op"), ty, ins, std::slice::from_ref(&v));
        b.output(g, &[(o, 0)]);
    }
    b.0
}
