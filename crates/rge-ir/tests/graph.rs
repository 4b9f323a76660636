//! Hand-written tests of nodes, anchors, graph edits, subgraphs, the verifier and dumps.
//! Every test calls `verify()` after each mutation.

use rge_ir::attr_names::PARENT_NODE_INDEX;
use rge_ir::{AttrValue, ComputeGraph, IrError, NodeId, OpDesc, TensorDesc};

fn op(name: &str, ty: &str, ins: usize, outs: usize) -> OpDesc {
    OpDesc::new(name, ty).with_ports(ins, outs)
}

fn add(g: &mut ComputeGraph, name: &str, ty: &str, ins: usize, outs: usize) -> NodeId {
    let id = g.add_node(g.root(), op(name, ty, ins, outs)).unwrap();
    g.verify().unwrap();
    id
}

#[test]
fn link_rules_and_peer_access() {
    let mut g = ComputeGraph::new("g");
    let a = add(&mut g, "a", "Data", 0, 1);
    let b = add(&mut g, "b", "Data", 0, 1);
    let c = add(&mut g, "c", "Add", 2, 1);
    g.add_edge(a, 0, c, 0).unwrap();
    g.verify().unwrap();
    // One peer per in-data anchor.
    let err = g.add_edge(b, 0, c, 0).unwrap_err();
    assert!(matches!(err, IrError::InputAlreadyLinked { ref node, index: 0, .. } if node == "c"));
    assert!(err.to_string().contains("`c`") && err.to_string().contains("a:0"));
    // Out of range names the node and anchor.
    let err = g.add_edge(b, 3, c, 1).unwrap_err();
    assert!(
        err.to_string().contains("`b`") && err.to_string().contains('3'),
        "{err}"
    );
    let err = g.add_edge(b, 0, c, 2).unwrap_err();
    assert!(matches!(err, IrError::AnchorOutOfRange { index: 2, .. }));
    g.add_edge(b, 0, c, 1).unwrap();
    // Fan-out and O(1) peer access.
    let d = add(&mut g, "d", "Relu", 1, 1);
    g.add_edge(a, 0, d, 0).unwrap();
    let node_a = g.node(a).unwrap();
    assert_eq!(node_a.peers_of_output(0), &[c.input(0), d.input(0)]);
    assert_eq!(g.node(d).unwrap().peer_of_input(0), Some(a.out(0)));
    // Control, data→control and control→data links.
    g.add_control_edge(b, d).unwrap();
    assert!(g.add_control_edge(b, d).is_err(), "duplicate control edge");
    let e = add(&mut g, "e", "NoOp", 1, 0);
    g.link(c.out(0), e.in_ctrl()).unwrap();
    g.link(d.out_ctrl(), e.input(0)).unwrap();
    g.verify().unwrap();
    assert_eq!(g.node(e).unwrap().peer_of_input(0), Some(d.out_ctrl()));
    assert_eq!(g.node(e).unwrap().in_ctrl_peers(), &[c.out(0)]);
    g.unlink(c.out(0), e.in_ctrl()).unwrap();
    g.unlink(d.out_ctrl(), e.input(0)).unwrap();
    assert!(matches!(
        g.unlink(d.out_ctrl(), e.input(0)),
        Err(IrError::NotLinked { .. })
    ));
    g.verify().unwrap();
    assert_eq!(g.node(e).unwrap().in_link_count(), 0);
}

#[test]
fn stale_handles_and_cross_graph_links_are_errors() {
    let mut g = ComputeGraph::new("g");
    let a = add(&mut g, "a", "Data", 0, 1);
    let iff = add(&mut g, "if", "If", 1, 1);
    let sub = g.add_subgraph(iff, 0, "then").unwrap();
    let inner = g.add_node(sub, op("inner", "Relu", 1, 1)).unwrap();
    let err = g.add_edge(a, 0, inner, 0).unwrap_err();
    assert!(matches!(err, IrError::CrossGraphLink { .. }), "{err}");
    let b = add(&mut g, "b", "Relu", 1, 1);
    g.remove_node(b).unwrap();
    assert!(matches!(g.add_edge(a, 0, b, 0), Err(IrError::StaleNode)));
    assert!(g.node(b).is_none());
    g.verify().unwrap();
}

#[test]
fn duplicate_names_per_graph() {
    let mut g = ComputeGraph::new("g");
    add(&mut g, "x", "Data", 0, 1);
    let err = g.add_node(g.root(), op("x", "Data", 0, 1)).unwrap_err();
    assert!(err.to_string().contains("`x`"));
    let p = add(&mut g, "p", "If", 1, 1);
    let s = g.add_subgraph(p, 0, "s").unwrap();
    // The same name in another graph is fine.
    g.add_node(s, op("x", "Data", 0, 1)).unwrap();
    assert!(
        g.add_subgraph(p, 1, "s").is_err(),
        "subgraph names are unique"
    );
    let y = add(&mut g, "y", "Data", 0, 1);
    assert!(g.rename_node(y, "x").is_err());
    g.rename_node(y, "z").unwrap();
    assert_eq!(g.find_node(g.root(), "z"), Some(y));
    assert_eq!(g.find_node(g.root(), "y"), None);
    g.verify().unwrap();
}

#[test]
fn insert_node_into_link_keeps_fanout_position() {
    let mut g = ComputeGraph::new("g");
    let a = add(&mut g, "a", "Data", 0, 1);
    let b = add(&mut g, "b", "Relu", 1, 1);
    let c = add(&mut g, "c", "Relu", 1, 1);
    g.add_edge(a, 0, b, 0).unwrap();
    g.add_edge(a, 0, c, 0).unwrap();
    let cast = add(&mut g, "cast", "Cast", 1, 1);
    g.insert_node_between(a.out(0), b.input(0), cast, 0, 0)
        .unwrap();
    g.verify().unwrap();
    assert_eq!(
        g.node(a).unwrap().peers_of_output(0),
        &[cast.input(0), c.input(0)]
    );
    assert_eq!(g.node(b).unwrap().peer_of_input(0), Some(cast.out(0)));
    // A failed insert changes nothing.
    let before = g.dump_text();
    let busy = add(&mut g, "busy", "Relu", 1, 1);
    g.add_edge(a, 0, busy, 0).unwrap();
    let snapshot = g.dump_text();
    assert!(g
        .insert_node_between(a.out(0), c.input(0), busy, 0, 0)
        .is_err());
    assert_eq!(g.dump_text(), snapshot);
    assert_ne!(before, snapshot);
    g.verify().unwrap();
}

#[test]
fn replace_source_and_destination() {
    let mut g = ComputeGraph::new("g");
    let a = add(&mut g, "a", "Data", 0, 1);
    let b = add(&mut g, "b", "Data", 0, 1);
    let c = add(&mut g, "c", "Relu", 1, 1);
    let d = add(&mut g, "d", "Relu", 1, 1);
    g.add_edge(a, 0, c, 0).unwrap();
    g.replace_source(a.out(0), c.input(0), b.out(0)).unwrap();
    g.verify().unwrap();
    assert_eq!(g.node(c).unwrap().peer_of_input(0), Some(b.out(0)));
    assert!(g.node(a).unwrap().peers_of_output(0).is_empty());
    g.replace_destination(b.out(0), c.input(0), d.input(0))
        .unwrap();
    g.verify().unwrap();
    assert_eq!(g.node(d).unwrap().peer_of_input(0), Some(b.out(0)));
    assert_eq!(g.node(c).unwrap().peer_of_input(0), None);
    g.add_edge(a, 0, c, 0).unwrap();
    // new_dst busy → error, nothing changes.
    let snap = g.dump_text();
    assert!(g
        .replace_destination(b.out(0), d.input(0), c.input(0))
        .is_err());
    assert_eq!(g.dump_text(), snap);
    g.move_output_edges(a, b).unwrap();
    g.verify().unwrap();
    assert_eq!(g.node(c).unwrap().peer_of_input(0), Some(b.out(0)));
}

#[test]
fn remove_node_bypasses_and_drops_private_consts() {
    let mut g = ComputeGraph::new("g");
    let x = add(&mut g, "x", "Data", 0, 1);
    let w = add(&mut g, "w", "Const", 0, 1);
    let shared = add(&mut g, "shared", "Const", 0, 1);
    let mul = add(&mut g, "mul", "Mul", 2, 1);
    let add_n = add(&mut g, "add", "Add", 2, 1);
    let relu = add(&mut g, "relu", "Relu", 1, 1);
    let ctrl = add(&mut g, "ctrl", "NoOp", 0, 0);
    let after = add(&mut g, "after", "NoOp", 0, 0);
    g.add_edge(x, 0, mul, 0).unwrap();
    g.add_edge(w, 0, mul, 1).unwrap();
    g.add_edge(mul, 0, add_n, 0).unwrap();
    g.add_edge(shared, 0, add_n, 1).unwrap();
    g.add_edge(shared, 0, relu, 0).unwrap();
    g.add_control_edge(ctrl, mul).unwrap();
    g.add_control_edge(mul, after).unwrap();
    g.add_input_node(x).unwrap();
    g.add_output_node(mul, 0).unwrap();
    g.remove_node(mul).unwrap();
    g.verify().unwrap();
    // w was used only by mul: gone; x now feeds add directly; control order kept.
    assert!(g.find_node(g.root(), "w").is_none());
    assert_eq!(g.node(add_n).unwrap().peer_of_input(0), Some(x.out(0)));
    assert!(g
        .node(ctrl)
        .unwrap()
        .out_ctrl_peers()
        .contains(&add_n.in_ctrl()));
    assert!(g
        .node(x)
        .unwrap()
        .out_ctrl_peers()
        .contains(&after.in_ctrl()));
    assert!(g.output_nodes(g.root()).is_empty());
    // shared has another consumer: removing add keeps it.
    g.remove_node(add_n).unwrap();
    g.verify().unwrap();
    assert!(g.find_node(g.root(), "shared").is_some());
    assert_eq!(g.input_nodes(g.root()), &[x]);
}

#[test]
fn isolate_with_io_map_and_bad_map() {
    let mut g = ComputeGraph::new("g");
    let a = add(&mut g, "a", "Data", 0, 1);
    let b = add(&mut g, "b", "Data", 0, 1);
    let sw = add(&mut g, "sw", "Swap", 2, 2);
    let c = add(&mut g, "c", "Relu", 1, 1);
    let d = add(&mut g, "d", "Relu", 1, 1);
    g.add_edge(a, 0, sw, 0).unwrap();
    g.add_edge(b, 0, sw, 1).unwrap();
    g.add_edge(sw, 0, c, 0).unwrap();
    g.add_edge(sw, 1, d, 0).unwrap();
    let snap = g.dump_text();
    assert!(g.isolate_node(sw, &[(0, 1), (1, 1)]).is_err());
    assert!(g.isolate_node(sw, &[(5, 0)]).is_err());
    assert_eq!(g.dump_text(), snap);
    g.isolate_node(sw, &[(0, 1), (1, 0)]).unwrap();
    g.verify().unwrap();
    assert_eq!(g.node(c).unwrap().peer_of_input(0), Some(b.out(0)));
    assert_eq!(g.node(d).unwrap().peer_of_input(0), Some(a.out(0)));
    assert_eq!(
        g.node(sw).unwrap().in_link_count() + g.node(sw).unwrap().out_link_count(),
        0
    );
}

#[test]
fn insert_and_remove_inputs_move_links() {
    let mut g = ComputeGraph::new("g");
    let a = add(&mut g, "a", "Data", 0, 1);
    let b = add(&mut g, "b", "Data", 0, 1);
    let cat = add(&mut g, "cat", "Concat", 2, 1);
    g.add_edge(a, 0, cat, 0).unwrap();
    g.add_edge(b, 0, cat, 1).unwrap();
    g.insert_input(cat, 0, "axis", TensorDesc::default())
        .unwrap();
    g.verify().unwrap();
    assert_eq!(
        g.node(cat).unwrap().input_peers(),
        &[None, Some(a.out(0)), Some(b.out(0))]
    );
    assert_eq!(g.op(cat).unwrap().input_index("axis"), Some(0));
    g.remove_input(cat, 1).unwrap();
    g.verify().unwrap();
    assert_eq!(g.node(cat).unwrap().input_peers(), &[None, Some(b.out(0))]);
    assert!(g.node(a).unwrap().peers_of_output(0).is_empty());
    let i = g.append_input(cat, "", TensorDesc::default()).unwrap();
    g.add_edge(a, 0, cat, i).unwrap();
    g.verify().unwrap();
    assert_eq!(
        g.node(cat).unwrap().input_peers(),
        &[None, Some(b.out(0)), Some(a.out(0))]
    );
}

#[test]
fn same_producer_on_two_inputs_survives_insert() {
    let mut g = ComputeGraph::new("g");
    let a = add(&mut g, "a", "Data", 0, 1);
    let m = add(&mut g, "m", "Mul", 2, 1);
    g.add_edge(a, 0, m, 0).unwrap();
    g.add_edge(a, 0, m, 1).unwrap();
    g.insert_input(m, 1, "mid", TensorDesc::default()).unwrap();
    g.verify().unwrap();
    assert_eq!(
        g.node(m).unwrap().input_peers(),
        &[Some(a.out(0)), None, Some(a.out(0))]
    );
    g.remove_input(m, 0).unwrap();
    g.verify().unwrap();
    assert_eq!(g.node(m).unwrap().input_peers(), &[None, Some(a.out(0))]);
}

#[test]
fn fuse_keeps_topological_position_and_inherits() {
    let mut g = ComputeGraph::new("g");
    let x = add(&mut g, "x", "Data", 0, 1);
    let conv = add(&mut g, "conv", "Conv2D", 1, 1);
    let relu = add(&mut g, "relu", "Relu", 1, 1);
    let out = add(&mut g, "out", "NetOutput", 1, 0);
    for n in [conv, relu] {
        g.op_mut(n).unwrap().attrs_mut().set("_stream_label", "s1");
    }
    g.op_mut(relu)
        .unwrap()
        .attrs_mut()
        .set("_op_aicore_num", 4i64);
    g.add_edge(x, 0, conv, 0).unwrap();
    g.add_edge(conv, 0, relu, 0).unwrap();
    g.add_edge(relu, 0, out, 0).unwrap();
    let fused = g
        .fuse_nodes_keep_topo(&[relu, conv], vec![op("conv_relu", "Conv2DRelu", 1, 1)])
        .unwrap();
    let f = fused[0];
    assert_eq!(
        g.node_names(g.root()),
        ["x", "conv_relu", "conv", "relu", "out"]
    );
    let attrs = g.op(f).unwrap().attrs();
    assert_eq!(
        attrs.get("_stream_label"),
        Some(&AttrValue::String("s1".into()))
    );
    assert_eq!(attrs.get_int("_op_aicore_num").unwrap(), Some(4));
    // The caller moves edges and removes the originals.
    g.unlink(x.out(0), conv.input(0)).unwrap();
    g.add_edge(x, 0, f, 0).unwrap();
    g.move_output_edges(relu, f).unwrap();
    g.remove_node(relu).unwrap();
    g.remove_node(conv).unwrap();
    g.verify().unwrap();
    assert_eq!(g.node_names(g.root()), ["x", "conv_relu", "out"]);
    assert!(g
        .fuse_nodes_keep_topo(&[f], vec![op("x", "Dup", 0, 0)])
        .is_err());
}

#[test]
fn subgraphs_parent_links_and_io_mapping() {
    let mut g = ComputeGraph::new("main");
    let c = add(&mut g, "cond", "Data", 0, 1);
    let x = add(&mut g, "x", "Data", 0, 1);
    let iff = add(&mut g, "if", "If", 2, 1);
    g.add_edge(c, 0, iff, 0).unwrap();
    g.add_edge(x, 0, iff, 1).unwrap();
    let then_g = g.add_subgraph(iff, 0, "then").unwrap();
    let else_g = g.add_subgraph(iff, 1, "else").unwrap();
    for sg in [then_g, else_g] {
        let mut data = op("arg", "Data", 0, 1);
        data.attrs_mut().set(PARENT_NODE_INDEX, 1i64);
        let d = g.add_node(sg, data).unwrap();
        let r = g.add_node(sg, op("r", "Relu", 1, 1)).unwrap();
        let mut no = op("out", "NetOutput", 1, 0);
        no.input_mut(0)
            .unwrap()
            .attrs_mut()
            .set(PARENT_NODE_INDEX, 0i64);
        let o = g.add_node(sg, no).unwrap();
        g.add_edge(d, 0, r, 0).unwrap();
        g.add_edge(r, 0, o, 0).unwrap();
        g.verify().unwrap();
        assert_eq!(g.subgraph_data_for_parent_input(sg, 1), Some(d));
        assert_eq!(g.subgraph_output_for_parent_output(sg, 0), Some((o, 0)));
    }
    assert_eq!(g.parent_node(then_g), Some(iff));
    assert_eq!(g.parent_graph(else_g), Some(g.root()));
    assert_eq!(
        g.op(iff).unwrap().subgraph_instance_names(),
        ["then", "else"]
    );
    assert_eq!(g.node_subgraphs(iff), vec![then_g, else_g]);
    // Nested subgraph.
    let inner_parent = g.find_node(then_g, "r").unwrap();
    let nested = g.add_subgraph(inner_parent, 0, "nested").unwrap();
    g.add_node(nested, op("deep", "NoOp", 0, 0)).unwrap();
    g.verify().unwrap();
    let all: Vec<&str> = g
        .all_nodes(g.root())
        .iter()
        .map(|&n| g.name_of(n))
        .collect();
    assert_eq!(
        all,
        ["cond", "x", "if", "arg", "r", "deep", "out", "arg", "r", "out"]
    );
    // Deep copy is independent and equal.
    let copy = g.clone();
    assert_eq!(copy, g);
    // Removing the parent removes its subgraphs, nested ones too.
    g.remove_node(iff).unwrap();
    g.verify().unwrap();
    assert!(g.subgraphs().is_empty());
    assert_eq!(g.total_node_count(), 2);
    assert_ne!(copy, g);
    copy.verify().unwrap();
}

#[test]
fn verifier_catches_a_missing_subgraph() {
    let mut g = ComputeGraph::new("main");
    let p = add(&mut g, "p", "PartitionedCall", 0, 0);
    g.op_mut(p).unwrap().add_subgraph_instance_name("ghost");
    let err = g.verify().unwrap_err().to_string();
    assert!(err.contains("ghost") && err.contains("`p`"), "{err}");
}

/// On a graph large enough for the node checks to run in parts, every part's problems are
/// reported, in node order.
#[test]
fn verifier_reports_problems_of_a_large_graph_in_node_order() {
    let mut g = ComputeGraph::new("big");
    let ids: Vec<NodeId> = (0..10_000)
        .map(|i| g.add_root_node(op(&format!("n{i}"), "Relu", 0, 1)).unwrap())
        .collect();
    g.verify().unwrap();
    for &k in &[7usize, 9_990] {
        g.op_mut(ids[k])
            .unwrap()
            .add_input("extra", TensorDesc::default())
            .unwrap();
    }
    let err = g.verify().unwrap_err().to_string();
    let (first, last) = (
        err.find("node `n7` has 0 in-data anchors for 1 input descs"),
        err.find("node `n9990` has 0 in-data anchors for 1 input descs"),
    );
    assert!(first.is_some() && last.is_some() && first < last, "{err}");
}

#[test]
fn structural_equality_sees_edges_and_attrs() {
    let build = |label: &str| {
        let mut g = ComputeGraph::new("g");
        let a = g.add_root_node(op("a", "Data", 0, 1)).unwrap();
        let b = g.add_root_node(op("b", "Relu", 1, 1)).unwrap();
        g.add_edge(a, 0, b, 0).unwrap();
        g.op_mut(b).unwrap().attrs_mut().set("l", label);
        g
    };
    assert_eq!(build("x"), build("x"));
    assert_ne!(build("x"), build("y"));
    let mut g = build("x");
    let a = g.find_node(g.root(), "a").unwrap();
    g.add_control_edge(a, g.find_node(g.root(), "b").unwrap())
        .unwrap();
    assert_ne!(g, build("x"));
}

#[test]
fn dumps_are_stable_and_readable() {
    let mut g = ComputeGraph::new("main");
    let a = add(&mut g, "a", "Data", 0, 1);
    let b = add(&mut g, "b", "Relu", 1, 1);
    let n = add(&mut g, "n", "NoOp", 0, 0);
    g.add_edge(a, 0, b, 0).unwrap();
    g.add_control_edge(n, b).unwrap();
    g.op_mut(b).unwrap().attrs_mut().set("alpha", 0.5f32);
    let iff = add(&mut g, "if", "If", 1, 0);
    let s = g.add_subgraph(iff, 0, "then").unwrap();
    g.add_node(s, op("inner", "NoOp", 0, 0)).unwrap();
    let text = g.dump_text();
    let expected = "\
graph main {
  a = Data() -> (undefined[])
  b = Relu(a:0, ^n) -> (undefined[]) {alpha=0.5}
  n = NoOp() -> ()
  if = If(_) -> () subgraphs[then]
    graph then {
      inner = NoOp() -> ()
    }
}
";
    assert_eq!(text, expected);
    assert_eq!(g.clone().dump_text(), text);
    let dot = g.dump_dot();
    assert!(dot.starts_with("digraph \"main\""));
    assert!(dot.contains("subgraph \"cluster_then\""));
    assert!(dot.contains("[style=dashed]"));
    assert!(dot.contains("[label=\"0:0\"]"));
}

#[test]
fn dumps_show_domain_and_opset() {
    let mut g = ComputeGraph::new("main");
    let x = add(&mut g, "x", "Gelu", 0, 0);
    let r = add(&mut g, "r", "Relu", 0, 0);
    let op = g.op_mut(x).unwrap();
    op.set_domain("com.microsoft");
    op.set_opset(Some(1));
    g.op_mut(r).unwrap().set_opset(Some(17));
    let text = g.dump_text();
    assert!(text.contains("x = com.microsoft::Gelu@1() -> ()"), "{text}");
    assert!(text.contains("r = Relu@17() -> ()"), "{text}");
    assert!(g.dump_dot().contains("x\\ncom.microsoft::Gelu@1"));
    // The fields take part in structural equality.
    let mut h = g.clone();
    assert_eq!(g, h);
    h.op_mut(x).unwrap().set_domain("");
    assert_ne!(g, h);
}
