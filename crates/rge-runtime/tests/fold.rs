//! Constant folding: graphs built with the rge-ir API and small ONNX models, kernels defined
//! here (the kernel families are other crates).

use bytes::Bytes;
use rge_formats::onnx_proto::attribute_proto::AttributeType;
use rge_formats::onnx_proto::{
    type_proto, AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
};
use rge_formats::Message;
use rge_ir::{
    op_types, AttrValue, ComputeGraph, DataType, Format, NodeId, OpDesc, Shape, Tensor as IrTensor,
    TensorDesc,
};
use rge_kernels::{
    tensor_from_ir, Kernel, KernelCtx, KernelError, KernelInit, KernelRegistry,
    KernelRegistryBuilder, KernelResult, Tensor, Value,
};
use rge_runtime::{fold_constants, FoldOptions, FoldReport, Session, SessionOptions};

// ---- kernels ----

struct Bin(fn(f32, f32) -> f32);

impl Kernel for Bin {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (a, b) = (ctx.input(0)?, ctx.input(1)?);
        let shape = if a.len() >= b.len() {
            a.shape()
        } else {
            b.shape()
        };
        let (av, bv) = (a.as_slice::<f32>()?, b.as_slice::<f32>()?);
        if av.len() != bv.len() && av.len() != 1 && bv.len() != 1 {
            return Err(KernelError::invalid("shapes do not broadcast here"));
        }
        let out = ctx.output::<f32>(0, shape)?;
        for (i, o) in out.iter_mut().enumerate() {
            *o = (self.0)(av[i % av.len()], bv[i % bv.len()]);
        }
        Ok(())
    }
}

/// Shape → i64 dims; OpsetProbe → the opset as a scalar i64; Fill (ConstantOfShape) → f32 ones
/// of the i64 shape input; Reshape (f32, i64 shape, no 0/-1); Copy (Dropout, RandomUniformLike
/// and MyRand, so they have kernels) → input 0; Fail → an error; Boom → a panic.
enum Op {
    Shape,
    Opset(i64),
    Fill,
    Reshape,
    Copy,
    Fail,
    Boom,
}

impl Kernel for Op {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        match self {
            Op::Shape => {
                let dims: Vec<i64> = ctx.input(0)?.shape().iter().map(|&d| d as i64).collect();
                ctx.output::<i64>(0, &[dims.len()])?.copy_from_slice(&dims);
            }
            Op::Opset(v) => ctx.output::<i64>(0, &[])?[0] = *v,
            Op::Fill => {
                let dims: Vec<usize> = ctx
                    .input(0)?
                    .to_i64_vec()?
                    .iter()
                    .map(|&d| d as usize)
                    .collect();
                ctx.output::<f32>(0, &dims)?.fill(1.0);
            }
            Op::Reshape => {
                let a = ctx.input(0)?.as_slice::<f32>()?;
                let dims: Vec<usize> = ctx
                    .input(1)?
                    .to_i64_vec()?
                    .iter()
                    .map(|&d| d as usize)
                    .collect();
                let out = ctx.output::<f32>(0, &dims)?;
                if out.len() != a.len() {
                    return Err(KernelError::invalid("element counts differ"));
                }
                out.copy_from_slice(a);
            }
            Op::Copy => {
                let a = ctx.input(0)?;
                let v = a.as_slice::<f32>()?;
                ctx.output::<f32>(0, a.shape())?.copy_from_slice(v);
            }
            Op::Fail => return Err(KernelError::invalid("boom")),
            Op::Boom => panic!("kernel panic in a test"),
        }
        Ok(())
    }
}

fn make(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(match init.op_type {
        "Add" => return Ok(Box::new(Bin(|a, b| a + b))),
        "Mul" => return Ok(Box::new(Bin(|a, b| a * b))),
        "Shape" => Op::Shape,
        "OpsetProbe" => Op::Opset(init.opset),
        "ConstantOfShape" => Op::Fill,
        "Reshape" => Op::Reshape,
        "Fail" => Op::Fail,
        "Boom" => Op::Boom,
        _ => Op::Copy,
    }))
}

fn kernels() -> KernelRegistry {
    let mut b = KernelRegistryBuilder::new();
    for t in [
        "Add",
        "Mul",
        "Shape",
        "ConstantOfShape",
        "Reshape",
        "Dropout",
        "RandomUniformLike",
        "MyRand",
        "Fail",
        "Boom",
    ] {
        b.register("", t, make).unwrap();
    }
    b.register("com.test", "OpsetProbe", make).unwrap();
    b.build()
}

// ---- graphs with the rge-ir API ----

fn desc(dt: DataType, dims: &[i64]) -> TensorDesc {
    TensorDesc::new(Shape::from_slice(dims), dt, Format::ND)
}

fn f32s(dims: &[i64], v: &[f32]) -> IrTensor {
    IrTensor::from_f32(Shape::from_slice(dims), v)
}

struct G(ComputeGraph);

impl G {
    fn new() -> Self {
        G(ComputeGraph::new("g"))
    }

    fn data(&mut self, name: &str, d: TensorDesc) -> NodeId {
        let op = OpDesc::new(name, op_types::DATA)
            .with_input("x", d.clone())
            .with_output("y", d);
        let n = self.0.add_root_node(op).unwrap();
        self.0.add_input_node(n).unwrap();
        n
    }

    fn konst(&mut self, name: &str, t: IrTensor) -> NodeId {
        let mut op = OpDesc::new(name, op_types::CONST).with_output("y", t.desc.clone());
        op.attrs_mut().set("value", t);
        self.0.add_root_node(op).unwrap()
    }

    /// A node of `ty` reading `ins` (node, output) with one output `out`.
    fn op(&mut self, name: &str, ty: &str, ins: &[(NodeId, usize)], out: &TensorDesc) -> NodeId {
        let mut op = OpDesc::new(name, ty);
        for (i, &(src, o)) in ins.iter().enumerate() {
            let d = self.0.op(src).unwrap().output(o).unwrap().clone();
            op.add_input(&format!("x{i}"), d).unwrap();
        }
        op.add_output("y", out.clone()).unwrap();
        let n = self.0.add_root_node(op).unwrap();
        for (i, &(src, o)) in ins.iter().enumerate() {
            self.0.add_edge(src, o, n, i).unwrap();
        }
        n
    }

    fn output(&mut self, srcs: &[(NodeId, usize)]) -> NodeId {
        let mut op = OpDesc::new("out", op_types::NET_OUTPUT);
        for (i, &(src, o)) in srcs.iter().enumerate() {
            let d = self.0.op(src).unwrap().output(o).unwrap().clone();
            op.add_input(&format!("x{i}"), d).unwrap();
        }
        let n = self.0.add_root_node(op).unwrap();
        for (i, &(src, o)) in srcs.iter().enumerate() {
            self.0.add_edge(src, o, n, i).unwrap();
        }
        let list = srcs.iter().map(|&(s, o)| (s, o as u32)).collect();
        self.0.set_output_nodes(self.0.root(), list).unwrap();
        n
    }
}

fn fold(g: &mut ComputeGraph, options: &FoldOptions) -> FoldReport {
    let r = fold_constants(g, &kernels(), options).unwrap();
    g.verify().unwrap();
    r
}

/// Folds twice: the second fold changes nothing and folds nothing.
fn fold_stable(g: &mut ComputeGraph, options: &FoldOptions) -> FoldReport {
    let r = fold(g, options);
    let before = g.dump_text();
    let again = fold(g, options);
    assert_eq!(g.dump_text(), before, "the second fold changed the graph");
    assert_eq!((again.folded_nodes, again.consts_added), (0, 0));
    r
}

/// The tensor of Const `n`.
fn value_of(g: &ComputeGraph, n: NodeId) -> Tensor {
    match g.op(n).unwrap().attrs().get("value") {
        Some(AttrValue::Tensor(t)) => tensor_from_ir(t).unwrap(),
        other => panic!("not a Const value: {other:?}"),
    }
}

fn producer(g: &ComputeGraph, n: NodeId, input: usize) -> (NodeId, i32) {
    let p = g.node(n).unwrap().peer_of_input(input).unwrap();
    (p.node, p.index)
}

fn has(g: &ComputeGraph, name: &str) -> bool {
    g.find_node(g.root(), name).is_some()
}

#[test]
fn const_chain_folds_to_one_const_and_relinks_consumers() {
    let mut b = G::new();
    let f2 = desc(DataType::Float, &[2]);
    let x = b.data("x", f2.clone());
    let a = b.konst("a", f32s(&[2], &[1.0, 2.0]));
    let c = b.konst("c", f32s(&[2], &[3.0, 4.0]));
    let k = b.konst("k", f32s(&[], &[2.0]));
    let add = b.op("add", "Add", &[(a, 0), (c, 0)], &f2);
    let mul = b.op("mul", "Mul", &[(add, 0), (k, 0)], &f2);
    let live = b.op("live", "Add", &[(x, 0), (mul, 0)], &f2);
    let out = b.output(&[(mul, 0), (live, 0)]);
    let mut g = b.0;

    let r = fold_stable(&mut g, &FoldOptions::default());
    assert_eq!(
        r,
        FoldReport {
            folded_nodes: 2,
            consts_added: 1,
            consts_removed: 3,
            ..Default::default()
        }
    );
    for gone in ["a", "c", "k", "add", "mul"] {
        assert!(!has(&g, gone), "{gone} is still there");
    }
    let folded = g.find_node(g.root(), "mul_folded_0").unwrap();
    let op = g.op(folded).unwrap();
    assert_eq!(op.op_type(), "Const");
    assert_eq!(op.output(0).unwrap().dtype(), DataType::Float);
    assert_eq!(op.output(0).unwrap().shape(), &Shape::from_slice(&[2]));
    assert_eq!(
        value_of(&g, folded).as_slice::<f32>().unwrap(),
        &[8.0, 12.0]
    );
    assert_eq!(producer(&g, out, 0), (folded, 0));
    assert_eq!(producer(&g, live, 1), (folded, 0));
    assert_eq!(g.output_nodes(g.root()), &[(folded, 0), (live, 0)]);
    assert_eq!(g.node_count(g.root()), 4);
}

#[test]
fn data_inputs_absent_kernels_and_control_inputs_keep_nodes() {
    let mut b = G::new();
    let f2 = desc(DataType::Float, &[2]);
    let x = b.data("x", f2.clone());
    let c = b.konst("c", f32s(&[2], &[1.0, 1.0]));
    let on_data = b.op("on_data", "Add", &[(x, 0), (c, 0)], &f2);
    let no_kernel = b.op("no_kernel", "Sin", &[(c, 0)], &f2);
    let ctrl = b.op("ctrl", "Add", &[(c, 0), (c, 0)], &f2);
    b.0.add_control_edge(on_data, ctrl).unwrap();
    b.output(&[(on_data, 0), (no_kernel, 0), (ctrl, 0)]);
    let mut g = b.0;
    let before = g.dump_text();
    let r = fold_stable(&mut g, &FoldOptions::default());
    assert_eq!(r, FoldReport::default());
    assert_eq!(g.dump_text(), before);

    let off = FoldOptions {
        enabled: false,
        ..Default::default()
    };
    assert_eq!(fold(&mut g, &off), FoldReport::default());
}

#[test]
fn size_limit_keeps_big_results_out() {
    // 512×512 f32 = 1 MiB: at the limit. 513×512 is over, known from the desc (checked before
    // computing) or only from the result (unknown rank).
    let build = |rows: i64, known: bool| {
        let mut b = G::new();
        let shape = b.konst(
            "shape",
            IrTensor::from_i64(Shape::from_slice(&[2]), &[rows, 512]),
        );
        let k = b.konst("k", f32s(&[], &[3.0]));
        let d = if known {
            desc(DataType::Float, &[rows, 512])
        } else {
            TensorDesc::new(Shape::unknown_rank(), DataType::Float, Format::ND)
        };
        let fill = b.op("fill", "ConstantOfShape", &[(shape, 0)], &d);
        let mul = b.op("mul", "Mul", &[(fill, 0), (k, 0)], &d);
        let dims = b.op("dims", "Shape", &[(mul, 0)], &desc(DataType::Int64, &[2]));
        b.output(&[(dims, 0)]);
        b.0
    };
    for known in [true, false] {
        let mut g = build(513, known);
        let before = g.dump_text();
        let r = fold_stable(&mut g, &FoldOptions::default());
        assert_eq!(r.skipped_too_large, 1, "known shape: {known}");
        assert_eq!(r.folded_nodes, 0);
        assert_eq!(g.dump_text(), before);

        let mut g = build(512, known);
        let r = fold_stable(&mut g, &FoldOptions::default());
        assert_eq!(
            (r.folded_nodes, r.consts_added, r.skipped_too_large),
            (3, 1, 0)
        );
        let dims = g.find_node(g.root(), "dims_folded_0").unwrap();
        assert_eq!(value_of(&g, dims).as_slice::<i64>().unwrap(), &[512, 512]);

        let mut g = build(513, known);
        let big = FoldOptions {
            max_bytes: 2 << 20,
            ..Default::default()
        };
        assert_eq!(fold_stable(&mut g, &big).folded_nodes, 3);
    }
}

#[test]
fn random_ops_and_training_dropout_are_not_folded() {
    let mut b = G::new();
    let f2 = desc(DataType::Float, &[2]);
    let c = b.konst("c", f32s(&[2], &[1.0, 2.0]));
    let rand = b.op("rand", "RandomUniformLike", &[(c, 0)], &f2);
    let seeded = b.op("seeded", "MyRand", &[(c, 0)], &f2);
    b.0.op_mut(seeded).unwrap().attrs_mut().set("seed", 1i64);
    let on = b.konst("on", IrTensor::new(desc(DataType::Bool, &[]), vec![1u8]));
    let off = b.konst("off", IrTensor::new(desc(DataType::Bool, &[]), vec![0u8]));
    let half = b.konst("half", f32s(&[], &[0.5]));
    let train = b.op("train", "Dropout", &[(c, 0), (half, 0), (on, 0)], &f2);
    let infer = b.op("infer", "Dropout", &[(c, 0), (half, 0), (off, 0)], &f2);
    let plain = b.op("plain", "Dropout", &[(c, 0)], &f2);
    b.output(&[(rand, 0), (seeded, 0), (train, 0), (infer, 0), (plain, 0)]);
    let mut g = b.0;
    let r = fold_stable(&mut g, &FoldOptions::default());
    assert_eq!((r.folded_nodes, r.consts_added), (2, 2));
    for kept in ["rand", "seeded", "train", "c", "half", "on"] {
        assert!(has(&g, kept), "{kept} was removed");
    }
    for gone in ["infer", "plain", "off"] {
        assert!(!has(&g, gone), "{gone} was kept");
    }
    assert!(has(&g, "infer_folded_0") && has(&g, "plain_folded_0"));
}

#[test]
fn kernel_errors_and_panics_are_reported_and_the_node_stays() {
    let mut b = G::new();
    let f2 = desc(DataType::Float, &[2]);
    let c = b.konst("c", f32s(&[2], &[1.0, 2.0]));
    let fail = b.op("fail", "Fail", &[(c, 0)], &f2);
    let boom = b.op("boom", "Boom", &[(c, 0)], &f2);
    let bad = b.op("bad", "Add", &[(c, 0), (c, 0)], &f2);
    b.0.op_mut(bad).unwrap().set_domain("com.unknown");
    let ok = b.op("ok", "Add", &[(c, 0), (c, 0)], &f2);
    b.output(&[(fail, 0), (boom, 0), (bad, 0), (ok, 0)]);
    let mut g = b.0;
    let r = fold_stable(&mut g, &FoldOptions::default());
    assert_eq!(r.errors.len(), 2, "{:?}", r.errors);
    assert!(r.errors[0].contains("`fail`") && r.errors[0].contains("boom"));
    assert!(r.errors[1].contains("`boom`") && r.errors[1].contains("panicked"));
    assert_eq!(
        (r.folded_nodes, r.consts_added, r.consts_removed),
        (1, 1, 0)
    );
    for kept in ["fail", "boom", "bad", "c"] {
        assert!(has(&g, kept), "{kept} was removed");
    }
}

#[test]
fn opset_and_domain_reach_the_kernel() {
    let mut b = G::new();
    let c = b.konst("c", f32s(&[1], &[1.0]));
    let probe = b.op(
        "probe",
        "OpsetProbe",
        &[(c, 0)],
        &desc(DataType::Int64, &[]),
    );
    b.0.op_mut(probe).unwrap().set_domain("com.test");
    // An op's own opset wins over the graph's import.
    let own = b.op("own", "OpsetProbe", &[(c, 0)], &desc(DataType::Int64, &[]));
    let op = b.0.op_mut(own).unwrap();
    op.set_domain("com.test");
    op.set_opset(Some(5));
    b.output(&[(probe, 0), (own, 0)]);
    let mut g = b.0;
    let root = g.root();
    g.graph_attrs_mut(root)
        .unwrap()
        .set("_onnx_opset_com.test", 3i64);
    let r = fold_stable(&mut g, &FoldOptions::default());
    assert_eq!(r.folded_nodes, 2);
    let n = g.find_node(root, "probe_folded_0").unwrap();
    assert_eq!(value_of(&g, n).as_slice::<i64>().unwrap(), &[3]);
    let n = g.find_node(root, "own_folded_0").unwrap();
    assert_eq!(value_of(&g, n).as_slice::<i64>().unwrap(), &[5]);
}

// ---- ONNX models ----

fn vi(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    use rge_formats::onnx_proto::tensor_shape_proto::{dimension, Dimension};
    let dim = dims
        .iter()
        .map(|&d| Dimension {
            value: Some(dimension::Value::DimValue(d)),
            ..Default::default()
        })
        .collect();
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: elem,
                shape: Some(TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn init(name: &str, dims: &[i64], f: &[f32], i: &[i64]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: if i.is_empty() { 1 } else { 7 },
        float_data: f.to_vec(),
        int64_data: i.to_vec(),
        ..Default::default()
    }
}

fn node(op: &str, ins: &[&str], outs: &[&str]) -> NodeProto {
    NodeProto {
        op_type: op.into(),
        name: outs[0].to_string() + "_node",
        input: ins.iter().map(|s| s.to_string()).collect(),
        output: outs.iter().map(|s| s.to_string()).collect(),
        ..Default::default()
    }
}

fn graph(
    name: &str,
    nodes: Vec<NodeProto>,
    ins: Vec<ValueInfoProto>,
    outs: Vec<ValueInfoProto>,
    inits: Vec<TensorProto>,
) -> GraphProto {
    GraphProto {
        name: name.into(),
        node: nodes,
        input: ins,
        output: outs,
        initializer: inits,
        ..Default::default()
    }
}

fn import(g: GraphProto) -> ComputeGraph {
    let m = ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 17,
        }],
        graph: Some(g),
        ..Default::default()
    };
    rge_formats::onnx::import_bytes(Bytes::from(m.encode_to_vec()), "fold.onnx")
        .unwrap()
        .graph
}

/// y = Reshape(x + (c1 + c2) * c3, shape); s = Shape(c1).
fn chain_model() -> GraphProto {
    graph(
        "chain",
        vec![
            node("Add", &["c1", "c2"], &["t"]),
            node("Mul", &["t", "c3"], &["u"]),
            node("Add", &["x", "u"], &["v"]),
            node("Reshape", &["v", "shape"], &["y"]),
            node("Shape", &["c1"], &["s"]),
        ],
        vec![vi("x", 1, &[2, 3])],
        vec![vi("y", 1, &[3, 2]), vi("s", 7, &[2])],
        vec![
            init("c1", &[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[]),
            init("c2", &[2, 3], &[0.5; 6], &[]),
            init("c3", &[], &[2.0], &[]),
            init("shape", &[2], &[], &[3, 2]),
        ],
    )
}

#[test]
fn onnx_model_runs_the_same_folded() {
    let run = |g: ComputeGraph| {
        let s = Session::new(SessionOptions {
            threads: 1,
            ..SessionOptions::with_kernels(kernels())
        })
        .unwrap();
        let x = Tensor::from_vec(&[2, 3], vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        let m = s.compile_graph(g).unwrap();
        let names: Vec<String> = m.output_names().iter().map(|n| n.to_string()).collect();
        (names, m.run(&[Value::Tensor(x)]).unwrap())
    };
    let plain = import(chain_model());
    let mut g = plain.clone();
    let r = fold_stable(&mut g, &FoldOptions::default());
    // Add, Mul and Shape fold; the Reshape reads x.
    assert_eq!(
        (r.folded_nodes, r.consts_added, r.consts_removed),
        (3, 2, 3)
    );
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let ((want_names, want), (got_names, got)) = (run(plain), run(g));
    assert_eq!(got, want);
    assert_eq!(got_names, want_names);
    assert_eq!(want_names, ["y", "s"]);
    let y = want[0].as_tensor().unwrap();
    assert_eq!(y.shape(), &[3, 2]);
    assert_eq!(
        y.as_slice::<f32>().unwrap(),
        &[3.0, 6.0, 9.0, 12.0, 15.0, 18.0]
    );
    assert_eq!(
        want[1].as_tensor().unwrap().as_slice::<i64>().unwrap(),
        &[2, 3]
    );
}

#[test]
fn subgraph_bodies_fold_but_their_parent_stays() {
    let branch = |name: &str, v: f32| {
        graph(
            name,
            vec![node("Add", &["k1", "k2"], &[&format!("{name}_out")])],
            vec![],
            vec![vi(&format!("{name}_out"), 1, &[1])],
            vec![init("k1", &[1], &[v], &[]), init("k2", &[1], &[1.0], &[])],
        )
    };
    let attr = |name: &str, g: GraphProto| AttributeProto {
        name: name.into(),
        r#type: AttributeType::Graph as i32,
        g: Some(g),
        ..Default::default()
    };
    let mut if_node = node("If", &["cond"], &["y"]);
    if_node.attribute = vec![
        attr("then_branch", branch("then", 1.0)),
        attr("else_branch", branch("else", 2.0)),
    ];
    let mut g = import(graph(
        "main",
        vec![if_node],
        vec![vi("cond", 9, &[])],
        vec![vi("y", 1, &[1])],
        vec![],
    ));
    let r = fold_stable(&mut g, &FoldOptions::default());
    assert_eq!(
        (r.folded_nodes, r.consts_added, r.consts_removed),
        (2, 2, 4)
    );
    assert_eq!(g.subgraphs().len(), 2);
    for &s in g.subgraphs() {
        let types: Vec<&str> = g.nodes_of(s).map(|n| g.op(n).unwrap().op_type()).collect();
        assert_eq!(types, ["Const", "NetOutput"], "{:?}", g.node_names(s));
        assert!(g.node_names(s)[0].ends_with("_folded_0"));
    }
    assert!(g
        .nodes_of(g.root())
        .any(|n| g.op(n).unwrap().op_type() == "If"));
}

#[test]
fn fixtures_fold_to_valid_graphs() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../rge-formats/tests/data/onnx");
    let mut seen = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let bytes = Bytes::from(std::fs::read(&path).unwrap());
        let Ok(m) = rge_formats::onnx::import_bytes(bytes, &path.to_string_lossy()) else {
            continue;
        };
        let mut g = m.graph;
        fold_stable(&mut g, &FoldOptions::default());
        seen += 1;
    }
    assert!(seen > 0);
}

/// The engine set's pipeline: inference, then folding with the host kernels, then inference
/// again when something folded; the compiled graph has no foldable node left and runs the same.
#[test]
fn folding_in_the_infer_stage_compiles_and_runs() {
    let ks = kernels();
    let set = rge_runtime::EngineSet::standard(&ks).unwrap();
    let pipeline = set.pipeline();
    let compiled = pipeline.compile(import(chain_model())).unwrap();
    let g = &compiled.graph;
    let types: Vec<&str> = g
        .nodes_of(g.root())
        .map(|n| g.op(n).unwrap().op_type())
        .collect();
    assert!(
        !types.contains(&"Mul") && !types.contains(&"Shape"),
        "{types:?}"
    );
    let s = Session::new(SessionOptions {
        threads: 1,
        ..SessionOptions::with_kernels(ks)
    })
    .unwrap();
    let m = s
        .model_from_compiled(compiled.graph, compiled.stream_count, compiled.events.len())
        .unwrap();
    let x = Tensor::from_vec(&[2, 3], vec![0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let out = m.run(&[Value::Tensor(x)]).unwrap();
    let y = out[0].as_tensor().unwrap();
    assert_eq!(
        y.as_slice::<f32>().unwrap(),
        &[3.0, 6.0, 9.0, 12.0, 15.0, 18.0]
    );
    assert_eq!(
        out[1].as_tensor().unwrap().as_slice::<i64>().unwrap(),
        &[2, 3]
    );
}
