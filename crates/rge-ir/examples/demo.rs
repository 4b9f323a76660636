//! The bundled example: builds a small graph with an If subgraph, sorts it (DFS, the inference
//! default), verifies it, and prints its text dump. `cargo run -p rge-ir --example demo [--dot]`.

use rge_ir::attr_names::PARENT_NODE_INDEX;
use rge_ir::{ComputeGraph, DataType, Format, OpDesc, Result, Shape, SortOptions, TensorDesc};

fn t(dims: &[i64]) -> TensorDesc {
    TensorDesc::new(Shape::from_slice(dims), DataType::Float, Format::NCHW)
}

fn main() -> Result<()> {
    let mut g = ComputeGraph::new("demo");
    let root = g.root();
    // Added out of order on purpose: the sort puts producers first.
    let out = g.add_node(
        root,
        OpDesc::new("output", "NetOutput").with_input("", t(&[1, 8])),
    )?;
    let relu = g.add_node(
        root,
        OpDesc::new("relu", "Relu")
            .with_input("x", t(&[1, 8]))
            .with_output("y", t(&[1, 8])),
    )?;
    let x = g.add_node(root, OpDesc::new("x", "Data").with_output("y", t(&[1, 8])))?;
    let w = g.add_node(root, OpDesc::new("w", "Const").with_output("y", t(&[8, 8])))?;
    let mm = g.add_node(
        root,
        OpDesc::new("matmul", "MatMul")
            .with_input("x1", t(&[1, 8]))
            .with_input("x2", t(&[8, 8]))
            .with_output("y", t(&[1, 8])),
    )?;
    let cond = g.add_node(
        root,
        OpDesc::new("cond", "Data").with_output(
            "y",
            TensorDesc::new(Shape::scalar(), DataType::Bool, Format::ND),
        ),
    )?;
    let iff = g.add_node(
        root,
        OpDesc::new("if", "If")
            .with_input(
                "cond",
                TensorDesc::new(Shape::scalar(), DataType::Bool, Format::ND),
            )
            .with_input("input0", t(&[1, 8]))
            .with_output("output0", t(&[1, 8])),
    )?;
    g.add_edge(x, 0, mm, 0)?;
    g.add_edge(w, 0, mm, 1)?;
    g.add_edge(mm, 0, iff, 1)?;
    g.add_edge(cond, 0, iff, 0)?;
    g.add_edge(iff, 0, relu, 0)?;
    g.add_edge(relu, 0, out, 0)?;
    g.add_input_node(x)?;
    g.add_input_node(cond)?;
    g.add_output_node(relu, 0)?;
    for (slot, name, body) in [(0, "then_branch", "Relu"), (1, "else_branch", "Neg")] {
        let sg = g.add_subgraph(iff, slot, name)?;
        let mut data = OpDesc::new(format!("{name}_arg"), "Data").with_output("y", t(&[1, 8]));
        data.attrs_mut().set(PARENT_NODE_INDEX, 1i64);
        let d = g.add_node(sg, data)?;
        let b = g.add_node(
            sg,
            OpDesc::new(format!("{name}_op"), body)
                .with_input("x", t(&[1, 8]))
                .with_output("y", t(&[1, 8])),
        )?;
        let mut ret = OpDesc::new(format!("{name}_out"), "NetOutput").with_input("", t(&[1, 8]));
        ret.input_mut(0)
            .expect("one input")
            .attrs_mut()
            .set(PARENT_NODE_INDEX, 0i64);
        let r = g.add_node(sg, ret)?;
        g.add_edge(d, 0, b, 0)?;
        g.add_edge(b, 0, r, 0)?;
    }
    g.topological_sort(&SortOptions::default())?;
    g.verify()?;
    if std::env::args().any(|a| a == "--dot") {
        print!("{}", g.dump_dot());
    } else {
        print!("{}", g.dump_text());
    }
    Ok(())
}
