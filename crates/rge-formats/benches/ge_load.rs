//! GE ModelDef load speed: builds a 100,000-node graph (a chain of Conv2D-like ops with two
//! inputs each, fan-out to a Relu every tenth node, named descs and attributes as GE dumps have
//! them), writes it as binary and as text, and times reading each back (nodes/s, MB/s), and
//! writing. Run: `cargo bench -p rge-formats --bench ge_load [-- --nodes N]`. Prints figures only.

use std::time::Instant;

use bytes::Bytes;
use rge_formats::ge::{GeModel, WriteOptions};
use rge_ir::{ComputeGraph, DataType, Format, OpDesc, Shape, TensorDesc};

fn desc(dims: &[i64]) -> TensorDesc {
    let mut d = TensorDesc::new(Shape::from_slice(dims), DataType::Float16, Format::NCHW);
    d.set_origin_shape(Shape::from_slice(dims));
    d.set_origin_format(Format::NCHW);
    d
}

fn build(n: usize) -> ComputeGraph {
    let mut g = ComputeGraph::new("bench");
    let root = g.root();
    let data = g
        .add_node(
            root,
            OpDesc::new("data", "Data").with_output("y", desc(&[1, 64, 56, 56])),
        )
        .unwrap();
    g.add_input_node(data).unwrap();
    let mut prev = data;
    for i in 0..n {
        let mut op = OpDesc::new(format!("conv{i}"), "Conv2D")
            .with_input("x", desc(&[1, 64, 56, 56]))
            .with_input("filter", desc(&[64, 64, 3, 3]))
            .with_output("y", desc(&[1, 64, 56, 56]));
        let a = op.attrs_mut();
        a.set("strides", vec![1i64, 1, 1, 1]);
        a.set("pads", vec![1i64, 1, 1, 1]);
        a.set("data_format", "NCHW");
        a.set("_ge_attr_op_kernel_lib_name", "AIcoreEngine");
        let c = g.add_node(root, op).unwrap();
        g.add_edge(prev, 0, c, 0).unwrap();
        if i % 10 == 0 {
            let r = g
                .add_node(
                    root,
                    OpDesc::new(format!("relu{i}"), "Relu")
                        .with_input("x", desc(&[1, 64, 56, 56]))
                        .with_output("y", desc(&[1, 64, 56, 56])),
                )
                .unwrap();
            g.add_edge(c, 0, r, 0).unwrap();
        }
        prev = c;
    }
    g
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args
        .iter()
        .position(|a| a == "--nodes")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let model = GeModel::new(build(n));
    let nodes = model.graph.total_node_count() as f64;
    let opts = WriteOptions::default();

    let t = Instant::now();
    let bin = model.to_binary_bytes(&opts).unwrap();
    let write_bin = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let text = model.to_text(&opts).unwrap();
    let write_text = t.elapsed().as_secs_f64();

    let mut best_bin = f64::MAX;
    let mut best_text = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let m = GeModel::from_binary_bytes(Bytes::clone(&bin), "bench.pb").unwrap();
        best_bin = best_bin.min(t.elapsed().as_secs_f64());
        assert_eq!(m.graph.total_node_count() as f64, nodes);
        let t = Instant::now();
        let m = GeModel::from_text_str(&text, "bench.txt").unwrap();
        best_text = best_text.min(t.elapsed().as_secs_f64());
        assert_eq!(m.graph.total_node_count() as f64, nodes);
    }
    let mb = |bytes: usize, s: f64| bytes as f64 / 1e6 / s;
    println!(
        "GE ModelDef, {nodes} nodes: binary {:.1} MB, text {:.1} MB",
        bin.len() as f64 / 1e6,
        text.len() as f64 / 1e6
    );
    println!(
        "read binary  {best_bin:7.3} s  {:10.0} nodes/s  {:7.1} MB/s",
        nodes / best_bin,
        mb(bin.len(), best_bin)
    );
    println!(
        "read text    {best_text:7.3} s  {:10.0} nodes/s  {:7.1} MB/s",
        nodes / best_text,
        mb(text.len(), best_text)
    );
    println!(
        "write binary {write_bin:7.3} s  {:10.0} nodes/s",
        nodes / write_bin
    );
    println!(
        "write text   {write_text:7.3} s  {:10.0} nodes/s",
        nodes / write_text
    );
}
