//! Inference at scale: a random DAG of 100,000 ops (elementwise with broadcasting, MatMul
//! against Const weights, Reshape/Transpose round trips with Const shapes, Softmax, Concat +
//! Slice) over [32, 64] activations, inferred end to end. Prints the time and ns per node;
//! the target is under 0.2 s for 100,000 nodes.
//!
//!     cargo bench -p rge-ops --bench infer_scale

use std::time::Instant;

use rge_ir::{ComputeGraph, DataType, NodeId, OpDesc, Shape, Tensor, TensorDesc};
use rge_ops::{infer_graph, InferOptions, OpRegistry};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn node(
    g: &mut ComputeGraph,
    name: String,
    t: &str,
    ins: &[(NodeId, usize)],
    outs: usize,
) -> NodeId {
    let op = OpDesc::new(name, t).with_ports(ins.len(), outs);
    let id = g.add_root_node(op).unwrap();
    for (i, &(src, o)) in ins.iter().enumerate() {
        g.add_edge(src, o, id, i).unwrap();
    }
    id
}

fn constant(g: &mut ComputeGraph, name: String, t: Tensor) -> NodeId {
    let mut op = OpDesc::new(name, "Const").with_ports(0, 1);
    op.attrs_mut().set("value", t);
    g.add_root_node(op).unwrap()
}

fn build(n: usize) -> ComputeGraph {
    let mut g = ComputeGraph::new("bench");
    g.reserve_nodes(n + 16);
    let x = g
        .add_root_node(OpDesc::new("x", "Data").with_output(
            "",
            TensorDesc::with_shape_dtype(Shape::new([32, 64]), DataType::Float),
        ))
        .unwrap();
    g.add_input_node(x).unwrap();
    let w = constant(
        &mut g,
        "w".into(),
        Tensor::from_f32(Shape::new([64, 64]), &vec![0.5; 64 * 64]),
    );
    let bias = constant(
        &mut g,
        "b".into(),
        Tensor::from_f32(Shape::new([64]), &[0.0; 64]),
    );
    let shape_t = constant(
        &mut g,
        "s_t".into(),
        Tensor::from_i64(Shape::new([3]), &[32, 8, 8]),
    );
    let shape_back = constant(
        &mut g,
        "s_b".into(),
        Tensor::from_i64(Shape::new([2]), &[32, 64]),
    );
    let starts = constant(&mut g, "st".into(), Tensor::from_i64(Shape::new([1]), &[0]));
    let ends = constant(
        &mut g,
        "en".into(),
        Tensor::from_i64(Shape::new([1]), &[64]),
    );
    let axes = constant(&mut g, "ax".into(), Tensor::from_i64(Shape::new([1]), &[1]));
    let mut acts = vec![x];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut k = 0;
    while g.total_node_count() < n {
        let a = acts[acts.len() - 1 - rng.below(acts.len().min(64))];
        let b = acts[acts.len() - 1 - rng.below(acts.len().min(64))];
        k += 1;
        let id = match rng.below(10) {
            0 | 1 => node(&mut g, format!("add{k}"), "Add", &[(a, 0), (b, 0)], 1),
            2 => node(&mut g, format!("addb{k}"), "Add", &[(a, 0), (bias, 0)], 1),
            3 => node(&mut g, format!("relu{k}"), "Relu", &[(a, 0)], 1),
            4 => node(&mut g, format!("mul{k}"), "Mul", &[(a, 0), (b, 0)], 1),
            5 => node(&mut g, format!("mm{k}"), "MatMul", &[(a, 0), (w, 0)], 1),
            6 => {
                let r = node(
                    &mut g,
                    format!("r{k}"),
                    "Reshape",
                    &[(a, 0), (shape_t, 0)],
                    1,
                );
                let mut t = OpDesc::new(format!("t{k}"), "Transpose").with_ports(1, 1);
                t.attrs_mut().set("perm", vec![0i64, 2, 1]);
                let t = g.add_root_node(t).unwrap();
                g.add_edge(r, 0, t, 0).unwrap();
                node(
                    &mut g,
                    format!("rb{k}"),
                    "Reshape",
                    &[(t, 0), (shape_back, 0)],
                    1,
                )
            }
            7 => {
                let mut s = OpDesc::new(format!("sm{k}"), "Softmax").with_ports(1, 1);
                s.attrs_mut().set("axis", -1i64);
                let s = g.add_root_node(s).unwrap();
                g.add_edge(a, 0, s, 0).unwrap();
                s
            }
            8 => {
                let mut c = OpDesc::new(format!("cat{k}"), "Concat").with_ports(2, 1);
                c.attrs_mut().set("axis", 1i64);
                let c = g.add_root_node(c).unwrap();
                g.add_edge(a, 0, c, 0).unwrap();
                g.add_edge(b, 0, c, 1).unwrap();
                node(
                    &mut g,
                    format!("sl{k}"),
                    "Slice",
                    &[(c, 0), (starts, 0), (ends, 0), (axes, 0)],
                    1,
                )
            }
            _ => node(&mut g, format!("sig{k}"), "Sigmoid", &[(a, 0)], 1),
        };
        acts.push(id);
    }
    let last = *acts.last().unwrap();
    let out = node(&mut g, "out".into(), "NetOutput", &[(last, 0)], 0);
    let _ = out;
    g
}

fn main() {
    let n = 100_000;
    let reg = OpRegistry::builtin();
    let opts = InferOptions::with_opsets([("", 21)]);
    let t0 = Instant::now();
    let g0 = build(n);
    let build_s = t0.elapsed().as_secs_f64();
    let nodes = g0.total_node_count();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let mut g = g0.clone();
        let t = Instant::now();
        let report = infer_graph(&mut g, &reg, &opts).expect("inference");
        let s = t.elapsed().as_secs_f64();
        best = best.min(s);
        assert_eq!(report.nodes, nodes);
    }
    let t = Instant::now();
    let order = rge_ops::topo_order(&g0, g0.root()).unwrap();
    let topo_s = t.elapsed().as_secs_f64();
    assert_eq!(order.len(), nodes);
    println!("infer_scale: of which the topological order takes {topo_s:.4} s");
    println!(
        "infer_scale: {nodes} nodes (built in {build_s:.3} s): inference {best:.4} s best of 5, {:.0} ns/node (target < 0.2 s)",
        best * 1e9 / nodes as f64
    );
}
