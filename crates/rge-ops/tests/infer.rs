//! The inference pass on hand-built graphs: bad input gives errors that name the node, shape
//! subgraphs fold through constant values, subgraphs are inferred, formats propagate, the
//! registry lists and creates ops.

use rge_ir::{
    AttrValue, ComputeGraph, DataType, Format, NodeId, OpDesc, Shape, Tensor, TensorDesc,
};
use rge_ops::{
    graph_outputs, infer_graph, list_ops, render_ops_text, InferOptions, OpProto, OpRegistry,
    OpRegistryBuilder, OpsError, UnknownOps,
};

fn data(g: &mut ComputeGraph, name: &str, dims: &[i64], dt: DataType) -> NodeId {
    let d = TensorDesc::with_shape_dtype(Shape::from_slice(dims), dt);
    let id = g
        .add_root_node(
            OpDesc::new(name, "Data")
                .with_input("", d.clone())
                .with_output("", d),
        )
        .unwrap();
    g.add_input_node(id).unwrap();
    id
}

fn konst(g: &mut ComputeGraph, name: &str, t: Tensor) -> NodeId {
    let mut op = OpDesc::new(name, "Const").with_ports(0, 1);
    op.attrs_mut().set("value", t);
    g.add_root_node(op).unwrap()
}

fn node(
    g: &mut ComputeGraph,
    name: &str,
    t: &str,
    ins: &[NodeId],
    outs: usize,
    attrs: &[(&str, AttrValue)],
) -> NodeId {
    let mut op = OpDesc::new(name, t).with_ports(ins.len(), outs);
    for (k, v) in attrs {
        op.attrs_mut().set(*k, v.clone());
    }
    let id = g.add_root_node(op).unwrap();
    for (i, &s) in ins.iter().enumerate() {
        g.add_edge(s, 0, id, i).unwrap();
    }
    id
}

fn out(g: &ComputeGraph, n: NodeId, i: usize) -> (DataType, Vec<i64>) {
    let d = g.op(n).unwrap().output(i).unwrap();
    (d.dtype(), d.shape().dims().to_vec())
}

fn run(g: &mut ComputeGraph) -> Result<rge_ops::InferReport, OpsError> {
    infer_graph(
        g,
        &OpRegistry::builtin(),
        &InferOptions::with_opsets([("", 21)]),
    )
}

#[test]
fn broadcasting_add_and_its_error() {
    let mut g = ComputeGraph::new("g");
    let a = data(&mut g, "a", &[2, 3], DataType::Float);
    let b = data(&mut g, "b", &[3], DataType::Float);
    let add = node(&mut g, "add", "Add", &[a, b], 1, &[]);
    run(&mut g).unwrap();
    assert_eq!(out(&g, add, 0), (DataType::Float, vec![2, 3]));
    // The input desc is updated from the producer too.
    assert_eq!(g.op(add).unwrap().input(1).unwrap().shape().dims(), &[3]);

    let mut g = ComputeGraph::new("g");
    let a = data(&mut g, "a", &[2, 3], DataType::Float);
    let b = data(&mut g, "b", &[4], DataType::Float);
    node(&mut g, "bad_add", "Add", &[a, b], 1, &[]);
    let e = run(&mut g).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("`bad_add`") && msg.contains("[2,3]") && msg.contains("[4]"),
        "{msg}"
    );
}

#[test]
fn bad_input_errors_name_the_node() {
    // No prototype.
    let mut g = ComputeGraph::new("g");
    let a = data(&mut g, "a", &[2], DataType::Float);
    node(&mut g, "mystery", "NoSuchOp", &[a], 1, &[]);
    let e = run(&mut g).unwrap_err();
    assert!(
        matches!(&e, OpsError::UnknownOp { node, .. } if node == "mystery"),
        "{e}"
    );
    // ... unless asked to skip.
    let opts = InferOptions {
        unknown_ops: UnknownOps::Skip,
        ..Default::default()
    };
    let report = infer_graph(&mut g, &OpRegistry::builtin(), &opts).unwrap();
    assert_eq!(report.skipped, vec!["mystery".to_string()]);

    // A missing required input.
    let mut g = ComputeGraph::new("g");
    let a = data(&mut g, "a", &[2], DataType::Float);
    let mut op = OpDesc::new("lonely_add", "Add").with_ports(2, 1);
    op.input_mut(1).unwrap().set_dtype(DataType::Undefined);
    let id = g.add_root_node(op).unwrap();
    g.add_edge(a, 0, id, 0).unwrap();
    let e = run(&mut g).unwrap_err().to_string();
    assert!(
        e.contains("`lonely_add`") && e.contains("`B`") && e.contains("missing"),
        "{e}"
    );

    // A missing required attribute.
    let mut g = ComputeGraph::new("g");
    let a = data(&mut g, "a", &[2], DataType::Float);
    node(&mut g, "cat", "Concat", &[a, a], 1, &[]);
    let e = run(&mut g).unwrap_err().to_string();
    assert!(e.contains("`cat`") && e.contains("`axis`"), "{e}");

    // An attribute of the wrong type.
    let mut g = ComputeGraph::new("g");
    let a = data(&mut g, "a", &[2, 3], DataType::Float);
    node(
        &mut g,
        "t",
        "Transpose",
        &[a],
        1,
        &[("perm", AttrValue::String("10".into()))],
    );
    let e = run(&mut g).unwrap_err().to_string();
    assert!(
        e.contains("`t`") && e.contains("`perm`") && e.contains("string"),
        "{e}"
    );

    // A data type the op does not take, and mixed types under one parameter.
    let mut g = ComputeGraph::new("g");
    let a = data(&mut g, "a", &[2], DataType::Float);
    let b = data(&mut g, "b", &[2], DataType::Int32);
    node(&mut g, "mixed", "Add", &[a, b], 1, &[]);
    let e = run(&mut g).unwrap_err().to_string();
    assert!(
        e.contains("`mixed`") && e.contains("DT_INT32") && e.contains("DT_FLOAT"),
        "{e}"
    );

    // A reshape that cannot be.
    let mut g = ComputeGraph::new("g");
    let a = data(&mut g, "a", &[2, 3], DataType::Float);
    let s = konst(&mut g, "s", Tensor::from_i64(Shape::new([1]), &[7]));
    node(&mut g, "rs", "Reshape", &[a, s], 1, &[]);
    let e = run(&mut g).unwrap_err().to_string();
    assert!(e.contains("`rs`") && e.contains("cannot reshape"), "{e}");

    // A cycle.
    let mut g = ComputeGraph::new("g");
    let a = data(&mut g, "a", &[2], DataType::Float);
    let x = node(&mut g, "x", "Add", &[a], 1, &[]);
    let mut op = OpDesc::new("y", "Relu").with_ports(1, 1);
    op.set_name("y");
    let y = g.add_root_node(op).unwrap();
    g.add_edge(x, 0, y, 0).unwrap();
    g.add_control_edge(y, x).unwrap();
    let e = run(&mut g).unwrap_err().to_string();
    assert!(e.contains("cycle"), "{e}");
}

#[test]
fn shape_subgraph_folds_to_known_dims() {
    // x:[2,3,4] → Shape → Gather(0) → Unsqueeze → Concat([-1]) → Reshape: [2,12].
    let mut g = ComputeGraph::new("g");
    let x = data(&mut g, "x", &[2, 3, 4], DataType::Float);
    let shape = node(&mut g, "shape", "Shape", &[x], 1, &[]);
    let zero = konst(&mut g, "zero", Tensor::scalar_i64(0));
    let dim0 = node(&mut g, "dim0", "Gather", &[shape, zero], 1, &[]);
    let axes = konst(&mut g, "axes", Tensor::from_i64(Shape::new([1]), &[0]));
    let dim0v = node(&mut g, "dim0v", "Unsqueeze", &[dim0, axes], 1, &[]);
    let minus1 = konst(&mut g, "m1", Tensor::from_i64(Shape::new([1]), &[-1]));
    let cat = node(
        &mut g,
        "cat",
        "Concat",
        &[dim0v, minus1],
        1,
        &[("axis", AttrValue::Int(0))],
    );
    let rs = node(&mut g, "rs", "Reshape", &[x, cat], 1, &[]);
    // ConstantOfShape over the folded shape, Range over constants.
    let cos = node(&mut g, "cos", "ConstantOfShape", &[shape], 1, &[]);
    let s = konst(&mut g, "s", Tensor::scalar_i64(1));
    let l = konst(&mut g, "l", Tensor::scalar_i64(10));
    let d = konst(&mut g, "d", Tensor::scalar_i64(3));
    let range = node(&mut g, "range", "Range", &[s, l, d], 1, &[]);
    let report = run(&mut g).unwrap();
    assert_eq!(out(&g, rs, 0), (DataType::Float, vec![2, 12]));
    assert_eq!(out(&g, cat, 0), (DataType::Int64, vec![2]));
    assert_eq!(out(&g, cos, 0), (DataType::Float, vec![2, 3, 4]));
    assert_eq!(out(&g, range, 0), (DataType::Int64, vec![3]));
    assert!(report.values >= 6, "{report:?}");

    // Without values the reshape's dims stay unknown (-1), its rank known.
    let mut g = ComputeGraph::new("g");
    let x = data(&mut g, "x", &[2, 3, 4], DataType::Float);
    let s = data(&mut g, "s", &[2], DataType::Int64);
    let rs = node(&mut g, "rs", "Reshape", &[x, s], 1, &[]);
    let nz = node(&mut g, "nz", "NonZero", &[x], 1, &[]);
    run(&mut g).unwrap();
    assert_eq!(out(&g, rs, 0), (DataType::Float, vec![-1, -1]));
    assert_eq!(out(&g, nz, 0), (DataType::Int64, vec![3, -1]));
    // A value given for the input folds it.
    let mut opts = InferOptions::default();
    opts.input_values
        .insert("s".into(), rge_ops::Value::i64_vec(vec![4, -1]));
    infer_graph(&mut g, &OpRegistry::builtin(), &opts).unwrap();
    assert_eq!(out(&g, rs, 0), (DataType::Float, vec![4, 6]));
}

#[test]
fn opset_versions_select_the_prototype() {
    // ReduceSum: axes attribute before 13, input from 13.
    let mut g = ComputeGraph::new("g");
    let x = data(&mut g, "x", &[2, 3, 4], DataType::Float);
    let r = node(
        &mut g,
        "r",
        "ReduceSum",
        &[x],
        1,
        &[
            ("axes", AttrValue::ListInt(vec![1])),
            ("keepdims", AttrValue::Int(0)),
        ],
    );
    infer_graph(
        &mut g,
        &OpRegistry::builtin(),
        &InferOptions::with_opsets([("", 11)]),
    )
    .unwrap();
    assert_eq!(out(&g, r, 0).1, vec![2, 4]);
    // At opset 13 the same node reduces over all axes (no axes input).
    infer_graph(
        &mut g,
        &OpRegistry::builtin(),
        &InferOptions::with_opsets([("", 13)]),
    )
    .unwrap();
    assert_eq!(out(&g, r, 0).1, Vec::<i64>::new());
    // Opsets from the graph's own attributes (as the ONNX frontend records them).
    g.graph_attrs_mut(g.root())
        .unwrap()
        .set("_onnx_opset_", 11i64);
    infer_graph(&mut g, &OpRegistry::builtin(), &InferOptions::default()).unwrap();
    assert_eq!(out(&g, r, 0).1, vec![2, 4]);
    // Before an op existed there is no prototype.
    let mut g = ComputeGraph::new("g");
    let x = data(&mut g, "x", &[2], DataType::Float);
    node(&mut g, "gelu", "Gelu", &[x], 1, &[]);
    assert!(infer_graph(
        &mut g,
        &OpRegistry::builtin(),
        &InferOptions::with_opsets([("", 17)])
    )
    .is_err());
}

#[test]
fn if_subgraph_outputs_merge() {
    let mut g = ComputeGraph::new("g");
    let c = data(&mut g, "c", &[], DataType::Bool);
    let x = data(&mut g, "x", &[2, 3], DataType::Float);
    // If(c) with a captured x as parent input 1.
    let iff = node(&mut g, "if", "If", &[c, x], 1, &[]);
    for (slot, (name, t)) in [("then", "Relu"), ("else", "Transpose")]
        .into_iter()
        .enumerate()
    {
        let sg = g.add_subgraph(iff, slot, name).unwrap();
        let d = TensorDesc::default();
        let mut dop = OpDesc::new(format!("{name}_x"), "Data")
            .with_input("", d.clone())
            .with_output("", d);
        dop.attrs_mut().set("_parent_node_index", 1i64);
        let dx = g.add_node(sg, dop).unwrap();
        let op = OpDesc::new(format!("{name}_op"), t).with_ports(1, 1);
        let o = g.add_node(sg, op).unwrap();
        g.add_edge(dx, 0, o, 0).unwrap();
        let no = g
            .add_node(
                sg,
                OpDesc::new(format!("{name}_out"), "NetOutput").with_ports(1, 0),
            )
            .unwrap();
        g.add_edge(o, 0, no, 0).unwrap();
    }
    run(&mut g).unwrap();
    // [2,3] vs [3,2]: the dims differ, the rank does not.
    assert_eq!(out(&g, iff, 0), (DataType::Float, vec![-1, -1]));
    let then = g.subgraph_by_name("then").unwrap();
    assert_eq!(graph_outputs(&g, then)[0].shape.dims(), &[2, 3]);
    // With a known condition the branch is chosen.
    let mut opts = InferOptions::default();
    opts.input_values.insert(
        "c".into(),
        rge_ops::Value::ints(DataType::Bool, vec![], vec![0]),
    );
    infer_graph(&mut g, &OpRegistry::builtin(), &opts).unwrap();
    assert_eq!(out(&g, iff, 0).1, vec![3, 2]);
}

#[test]
fn formats_propagate() {
    let mut g = ComputeGraph::new("g");
    let x = data(&mut g, "x", &[1, 3, 8, 8], DataType::Float);
    let w = konst(
        &mut g,
        "w",
        Tensor::from_f32(Shape::new([4, 3, 3, 3]), &[0.0; 108]),
    );
    let conv = node(
        &mut g,
        "conv",
        "Conv",
        &[x, w],
        1,
        &[("pads", AttrValue::ListInt(vec![1, 1, 1, 1]))],
    );
    let relu = node(&mut g, "relu", "Relu", &[conv], 1, &[]);
    let t = node(
        &mut g,
        "t",
        "Transpose",
        &[relu],
        1,
        &[("perm", AttrValue::ListInt(vec![0, 2, 3, 1]))],
    );
    let flat = node(&mut g, "flat", "Flatten", &[t], 1, &[]);
    run(&mut g).unwrap();
    let f = |n: NodeId| g.op(n).unwrap().output(0).unwrap().format();
    assert_eq!(out(&g, conv, 0).1, vec![1, 4, 8, 8]);
    assert_eq!(f(conv), Format::NCHW);
    assert_eq!(f(relu), Format::NCHW);
    assert_eq!(f(t), Format::NHWC);
    assert_eq!(out(&g, t, 0).1, vec![1, 8, 8, 4]);
    assert_eq!(f(flat), Format::ND);
}

#[test]
fn registry_lists_and_creates() {
    let reg = OpRegistry::builtin();
    let ops = list_ops(&reg);
    assert!(ops.len() > 300, "{}", ops.len());
    let reshape: Vec<_> = ops
        .iter()
        .filter(|o| o.op_type == "Reshape" && o.domain.is_empty())
        .collect();
    assert_eq!(reshape[0].since_version, 1);
    assert_eq!(reshape[0].until_version, Some(5));
    assert!(reshape[0].attrs.iter().any(|a| a.name == "shape"));
    assert!(reshape[1].inputs.iter().any(|i| i.name == "shape"));
    let text = render_ops_text(&reg);
    assert!(
        text.contains("Clip v11  (input:T, min?:T, max?:T) -> (output:T)"),
        "{}",
        &text[..400]
    );
    assert!(text.contains("Concat v13+  (inputs*:T) -> (concat_result:T)  | axis:int!"));

    let op = reg
        .create_op_desc("c", "", "Concat", 13, &[("inputs", 2)])
        .unwrap();
    assert_eq!(op.input_name(1).unwrap(), "inputs1");
    let op = reg.create_op_desc("lrn", "", "LRN", 13, &[]).unwrap();
    assert_eq!(op.attrs().get_float("alpha").unwrap(), Some(0.0001));

    // Duplicates need the override window; a frozen registry is extended through a builder.
    let mut b: OpRegistryBuilder = reg.to_builder();
    let relu = || {
        OpProto::new("", "Relu", 14)
            .sig("X:T -> Y:T")
            .tc("T", &[DataType::Float])
    };
    assert!(matches!(
        b.register(relu()),
        Err(OpsError::Duplicate { .. })
    ));
    b.open_override_window();
    b.register(relu()).unwrap();
    b.close_override_window();
    let reg2 = b.freeze();
    assert_eq!(
        reg2.lookup("", "Relu", 14).unwrap().type_constraints[0].allowed,
        vec![DataType::Float]
    );
    assert_eq!(reg2.len(), reg.len());
}

/// The ai.onnx.ml and com.microsoft prototypes parse and register, and infer typical nodes.
#[test]
fn ml_and_ms_prototypes_are_registered() {
    let reg = rge_ops::OpRegistry::builtin();
    for (domain, op, opset) in [
        ("ai.onnx.ml", "TreeEnsembleClassifier", 3),
        ("ai.onnx.ml", "TreeEnsembleRegressor", 1),
        ("ai.onnx.ml", "LinearClassifier", 1),
        ("ai.onnx.ml", "SVMClassifier", 1),
        ("ai.onnx.ml", "CategoryMapper", 1),
        ("ai.onnx.ml", "LabelEncoder", 1),
        ("com.microsoft", "SkipLayerNormalization", 1),
        ("com.microsoft", "Attention", 1),
        ("com.microsoft", "GroupQueryAttention", 1),
        ("com.microsoft", "QLinearConcat", 1),
        ("com.microsoft", "DynamicQuantizeLSTM", 1),
        ("com.microsoft", "MatMulNBits", 1),
        ("", "SimplifiedLayerNormalization", 17),
    ] {
        assert!(reg.lookup(domain, op, opset).is_some(), "{domain}::{op}");
    }
}

/// ai.onnx.ml 5 removed TreeEnsembleClassifier/Regressor: importing that opset is an error
/// naming the node and the replacement; ai.onnx.ml 3 infers.
#[test]
fn tree_ensembles_removed_in_ml5_are_refused() {
    let mut g = ComputeGraph::new("g");
    let x = data(&mut g, "x", &[4, 3], DataType::Float);
    let t = node(
        &mut g,
        "trees",
        "TreeEnsembleRegressor",
        &[x],
        1,
        &[("n_targets", AttrValue::Int(2))],
    );
    g.op_mut(t).unwrap().set_domain("ai.onnx.ml");
    let opts = |ml| InferOptions::with_opsets([("", 21), ("ai.onnx.ml", ml)]);
    infer_graph(&mut g, &OpRegistry::builtin(), &opts(3)).unwrap();
    assert_eq!(out(&g, t, 0), (DataType::Float, vec![4, 2]));
    let e = infer_graph(&mut g, &OpRegistry::builtin(), &opts(5))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`trees`") && e.contains("use TreeEnsemble"),
        "{e}"
    );
}
