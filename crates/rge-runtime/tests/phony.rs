//! PhonyConcat / PhonySplit by memory offsets: no step runs for them; producers write into the
//! concat's buffer and the split's outputs are views of it.

mod common;

use common::*;
use rge_ir::{ComputeGraph, DataType, NodeId, OpDesc, Shape, TensorDesc};
use rge_kernels::ValueRef;
use rge_runtime::lower::{lower_graph, LowerEnv};
use rge_runtime::{run_program, ExecutorKind, RunOptions};

fn f(dims: &[i64]) -> TensorDesc {
    TensorDesc::with_shape_dtype(Shape::from_slice(dims), DataType::Float)
}

fn graph(split_rows: &[i64]) -> ComputeGraph {
    let mut g = ComputeGraph::new("phony");
    let add = |g: &mut ComputeGraph, op: OpDesc| -> NodeId { g.add_root_node(op).unwrap() };
    let data = |g: &mut ComputeGraph, name: &str, k: i64| {
        let mut d = OpDesc::new(name, "Data")
            .with_input("x", f(&[2, 4]))
            .with_output("y", f(&[2, 4]));
        d.attrs_mut().set("index", k);
        let n = g.add_root_node(d).unwrap();
        g.add_input_node(n).unwrap();
        n
    };
    let x = data(&mut g, "x", 0);
    let y = data(&mut g, "y", 1);
    let ra = add(
        &mut g,
        OpDesc::new("ra", "Relu")
            .with_input("x", f(&[2, 4]))
            .with_output("y", f(&[2, 4])),
    );
    let rb = add(
        &mut g,
        OpDesc::new("rb", "Relu")
            .with_input("x", f(&[2, 4]))
            .with_output("y", f(&[2, 4])),
    );
    let mut c = OpDesc::new("concat", "PhonyConcat")
        .with_input("x0", f(&[2, 4]))
        .with_input("x1", f(&[2, 4]))
        .with_output("y", f(&[4, 4]));
    c.attrs_mut().set("concat_dim", 0i64);
    let c = add(&mut g, c);
    let mut s = OpDesc::new("split", "PhonySplit").with_input("x", f(&[4, 4]));
    for (i, &r) in split_rows.iter().enumerate() {
        s = s.with_output(&format!("y{i}"), f(&[r, 4]));
    }
    let s = add(&mut g, s);
    let last = *split_rows.last().unwrap();
    let m = add(
        &mut g,
        OpDesc::new("mul", "Mul")
            .with_input("a", f(&[last, 4]))
            .with_input("b", f(&[last, 4]))
            .with_output("y", f(&[last, 4])),
    );
    let out = add(
        &mut g,
        OpDesc::new("out", "NetOutput")
            .with_input("c", f(&[4, 4]))
            .with_input("s0", f(&[split_rows[0], 4]))
            .with_input("m", f(&[last, 4])),
    );
    g.add_edge(x, 0, ra, 0).unwrap();
    g.add_edge(y, 0, rb, 0).unwrap();
    g.add_edge(ra, 0, c, 0).unwrap();
    g.add_edge(rb, 0, c, 1).unwrap();
    g.add_edge(c, 0, s, 0).unwrap();
    let k = split_rows.len() - 1;
    g.add_edge(s, k, m, 0).unwrap();
    g.add_edge(s, k, m, 1).unwrap();
    g.add_edge(c, 0, out, 0).unwrap();
    g.add_edge(s, 0, out, 1).unwrap();
    g.add_edge(m, 0, out, 2).unwrap();
    g
}

fn lower(g: &ComputeGraph) -> rge_runtime::RuntimeResult<rge_runtime::Program> {
    let engines = rge_runtime::EngineSet::standard(&kernels())?;
    let env = LowerEnv {
        engines: &engines,
        opsets: vec![],
        saved_offsets: None,
        taken: None,
    };
    lower_graph(&env, g, g.root())
}

#[test]
fn concat_and_split_run_without_steps() {
    let g = graph(&[1, 3]);
    let prog = lower(&g).unwrap();
    // Relu, Relu, Mul: the concat and split are memory offsets only.
    assert_eq!(prog.steps.len(), 3);
    let xv: Vec<f32> = (0..8).map(|i| i as f32 - 4.0).collect();
    let yv: Vec<f32> = (0..8).map(|i| 10.0 - i as f32).collect();
    let (x, y) = (tensor(&[2, 4], xv.clone()), tensor(&[2, 4], yv.clone()));
    let concat: Vec<f32> = xv.iter().chain(&yv).map(|v| v.max(0.0)).collect();
    for kind in ExecutorKind::ALL {
        let opts = RunOptions {
            executor: kind,
            ..RunOptions::default()
        };
        let ins: Vec<Option<ValueRef<'_>>> = vec![Some(x.as_ref()), Some(y.as_ref())];
        let outs = run_program(&prog, &ins, &[], &opts).unwrap();
        assert_eq!(floats(&outs[0]), concat, "{kind}");
        assert_eq!(floats(&outs[1]), concat[..4].to_vec(), "{kind}");
        let sq: Vec<f32> = concat[4..].iter().map(|v| v * v).collect();
        assert_eq!(floats(&outs[2]), sq, "{kind}");
    }
}

#[test]
fn misaligned_pieces_are_an_error_naming_the_node() {
    // Rows of 4 floats are 16 bytes: always aligned. A [2, 4] concat of [1, 2]-shaped pieces
    // would not be; build a split whose second piece starts at byte 8 instead.
    let mut g = graph(&[1, 3]);
    let s = g.find_node(g.root(), "split").unwrap();
    let op = g.op_mut(s).unwrap();
    *op.output_mut(0).unwrap() = f(&[1, 2]);
    *op.output_mut(1).unwrap() = f(&[1, 14]);
    let e = lower(&g).unwrap_err().to_string();
    assert!(e.contains("split") && e.contains("aligned"), "{e}");
}
