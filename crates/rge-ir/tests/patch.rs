//! Graph patches: what a good patch does, that every bad one is refused with the node and
//! anchor named and the graph left exactly as it was, and (a property test) that random
//! patches either apply to a verified acyclic graph or change nothing.

use proptest::prelude::*;
use rge_ir::{
    AnchorSide, ComputeGraph, GraphPatch, NodeId, OpDesc, Outlet, PatchError, PatchNode,
    SortOptions,
};

fn op(name: &str, ty: &str, ins: usize, outs: usize) -> OpDesc {
    OpDesc::new(name, ty).with_ports(ins, outs)
}

fn add(g: &mut ComputeGraph, name: &str, ty: &str, ins: usize, outs: usize) -> NodeId {
    g.add_node(g.root(), op(name, ty, ins, outs)).unwrap()
}

/// x → a → b → out, with b the graph output, and x → c (a second consumer of x).
fn chain() -> (ComputeGraph, [NodeId; 5]) {
    let mut g = ComputeGraph::new("g");
    let x = add(&mut g, "x", "Data", 0, 1);
    let a = add(&mut g, "a", "Relu", 1, 1);
    let b = add(&mut g, "b", "Relu", 1, 1);
    let c = add(&mut g, "c", "Abs", 1, 1);
    let out = add(&mut g, "out", "NetOutput", 2, 0);
    g.add_edge(x, 0, a, 0).unwrap();
    g.add_edge(a, 0, b, 0).unwrap();
    g.add_edge(x, 0, c, 0).unwrap();
    g.add_edge(b, 0, out, 0).unwrap();
    g.add_edge(c, 0, out, 1).unwrap();
    g.add_input_node(x).unwrap();
    g.add_output_node(b, 0).unwrap();
    g.verify().unwrap();
    (g, [x, a, b, c, out])
}

fn producer(g: &ComputeGraph, n: NodeId, input: usize) -> String {
    let p = g.node(n).unwrap().peer_of_input(input).unwrap();
    format!("{}:{}", g.name_of(p.node), p.index)
}

#[test]
fn fusing_two_nodes() {
    let (mut g, [x, a, b, _, out]) = chain();
    let mut p = GraphPatch::new();
    p.remove(a).remove(b);
    let f = p.add_node(op("a_b", "FusedRelu", 1, 1));
    p.connect(Outlet::old(x, 0), f, 0)
        .shunt(b, 0, Outlet::new_node(f, 0));
    let r = g.apply_patch(p).unwrap();
    g.verify().unwrap();
    let f = r.node(0).unwrap();
    assert_eq!(producer(&g, f, 0), "x:0");
    assert_eq!(producer(&g, out, 0), "a_b:0");
    assert_eq!(g.output_nodes(g.root()), &[(f, 0)]);
    assert!(!g.contains_node(a) && !g.contains_node(b));
    assert_eq!(
        r.removed.iter().map(|o| o.name()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    // The fused node took the first removed node's place.
    assert_eq!(g.node_names(g.root()), ["x", "a_b", "c", "out"]);
    g.sorted_order(g.root(), &SortOptions::default()).unwrap();
}

#[test]
fn bad_patches_name_the_fault_and_change_nothing() {
    let (mut g, [x, a, b, c, out]) = chain();
    let k = add(&mut g, "k", "NoOp", 0, 0);
    g.add_control_edge(k, a).unwrap();
    let sub_parent = add(&mut g, "if", "If", 0, 0);
    let sg = g.add_subgraph(sub_parent, 0, "then").unwrap();
    let inner = g.add_node(sg, op("inner", "Relu", 1, 1)).unwrap();
    let gone = add(&mut g, "gone", "Relu", 1, 1);
    g.remove_node(gone).unwrap();
    g.verify().unwrap();
    let before = g.clone();

    type Build = Box<dyn Fn(&mut GraphPatch)>;
    let cases: Vec<(&str, Build, &str)> = vec![
        (
            "a removed output still read",
            Box::new(move |p| {
                p.remove(b);
            }),
            "output 0 of removed node `b` feeds `out:0`",
        ),
        (
            "reads what it removes",
            Box::new(move |p| {
                p.remove(c);
                let n = p.add_node(op("n", "Abs", 1, 1));
                p.connect(Outlet::old(c, 0), n, 0)
                    .shunt(c, 0, Outlet::new_node(n, 0));
            }),
            "input 0 of new node `n` reads output 0 of `c`",
        ),
        (
            "an input given twice",
            Box::new(move |p| {
                let n = p.add_node(op("n", "Abs", 1, 1));
                p.connect(Outlet::old(x, 0), n, 0)
                    .connect(Outlet::old(c, 0), n, 0);
            }),
            "input 0 of node `n` is given two sources",
        ),
        (
            "an output out of range",
            Box::new(move |p| {
                let n = p.add_node(op("n", "Abs", 1, 1));
                p.connect(Outlet::old(x, 5), n, 0);
            }),
            "node `x` has no output 5 (it has 1)",
        ),
        (
            "an input out of range",
            Box::new(move |p| {
                let n = p.add_node(op("n", "Abs", 1, 1));
                p.connect(Outlet::old(x, 0), n, 3);
            }),
            "node `n` has no input 3 (it has 1)",
        ),
        (
            "no such new node",
            Box::new(move |p| {
                p.rewire(c, 0, Outlet::new_node(2, 0));
            }),
            "the patch has no new node 2 (it adds 0)",
        ),
        (
            "a duplicate name",
            Box::new(move |p| {
                p.add_node(op("x", "Abs", 0, 0));
            }),
            "already has a node named `x`",
        ),
        (
            "a cycle",
            Box::new(move |p| {
                let n = p.add_node(op("n", "Abs", 1, 1));
                p.connect(Outlet::old(b, 0), n, 0)
                    .rewire(a, 0, Outlet::new_node(n, 0));
            }),
            "cycle through",
        ),
        (
            "another graph",
            Box::new(move |p| {
                p.remove(c).remove(inner);
            }),
            "node `inner` is in graph `then`, the patch edits graph `g`",
        ),
        (
            "a stale handle",
            Box::new(move |p| {
                p.remove(gone);
            }),
            "removed node #0 is a stale node handle",
        ),
        (
            "control edges unhandled",
            Box::new(move |p| {
                p.remove(a).shunt(a, 0, Outlet::old(x, 0));
            }),
            "removed node `a` has control edges (with `k`)",
        ),
        (
            "a shunt of a kept node",
            Box::new(move |p| {
                p.shunt(c, 0, Outlet::old(x, 0));
            }),
            "output 0 of `c` is shunted, but the patch does not remove `c`",
        ),
        (
            "a shunt twice",
            Box::new(move |p| {
                p.remove(c)
                    .shunt(c, 0, Outlet::old(x, 0))
                    .shunt(c, 0, Outlet::old(x, 0));
            }),
            "output 0 of `c` is shunted twice",
        ),
        (
            "a graph input",
            Box::new(move |p| {
                p.remove(x);
            }),
            "node `x` is an input of graph `g`",
        ),
        (
            "a graph output not replaced",
            Box::new(move |p| {
                p.remove(b).drop_control();
                let n = p.add_node(op("n", "Abs", 1, 1));
                p.connect(Outlet::old(a, 0), n, 0);
                p.rewire(out, 0, Outlet::new_node(n, 0));
            }),
            "feeds the output list of graph `g`",
        ),
        (
            "a rewire of a removed node",
            Box::new(move |p| {
                p.remove(c)
                    .shunt(c, 0, Outlet::old(x, 0))
                    .rewire(c, 0, Outlet::old(x, 0));
            }),
            "input 0 of `c` is rewired, but the patch removes `c`",
        ),
        (
            "a shunt and a rewire for one input",
            Box::new(move |p| {
                p.remove(c)
                    .shunt(c, 0, Outlet::old(x, 0))
                    .rewire(out, 1, Outlet::old(x, 0));
            }),
            "input 1 of node `out` is given two sources",
        ),
        (
            "control carried to a removed node",
            Box::new(move |p| {
                p.remove(a)
                    .shunt(a, 0, Outlet::old(x, 0))
                    .carry_control_to(PatchNode::Old(a));
            }),
            "links control to `a`, which it removes",
        ),
        (
            "a subgraph the patch does not own",
            Box::new(move |p| {
                let mut o = op("n", "If", 0, 0);
                o.set_subgraph_instance_name(0, "then");
                p.add_node(o);
            }),
            "names subgraph `then`, which does not belong to a node the patch removes",
        ),
    ];
    for (what, build, message) in cases {
        let mut p = GraphPatch::new();
        build(&mut p);
        let err = g.apply_patch(p).expect_err(what);
        assert!(err.to_string().contains(message), "{what}: {err}");
        assert!(g == before, "{what}: the graph changed");
        g.verify().unwrap();
    }
    // Protected op types are refused by type.
    let mut p = GraphPatch::new();
    p.remove(c).shunt(c, 0, Outlet::old(x, 0));
    let err = g.apply_patch_protecting(p, &["Abs"]).unwrap_err();
    assert_eq!(
        err,
        PatchError::Protected {
            node: "c".into(),
            op_type: "Abs".into()
        }
    );
    assert!(g == before);
}

#[test]
fn replace_node_keeps_links_control_and_subgraphs() {
    let (mut g, [x, a, b, _, _]) = chain();
    let k = add(&mut g, "k", "NoOp", 0, 0);
    g.add_control_edge(k, a).unwrap();
    g.add_control_edge(a, b).unwrap();
    let sg = g.add_subgraph(a, 0, "body").unwrap();
    let inner = g.add_node(sg, op("inner", "Relu", 0, 0)).unwrap();
    let mut new = op("a", "Gelu", 1, 1);
    new.set_subgraph_instance_name(0, "body");
    let p = GraphPatch::replace_node(&g, a, new).unwrap();
    let r = g.apply_patch(p).unwrap();
    g.verify().unwrap();
    let n = r.node(0).unwrap();
    assert_eq!(g.find_node(g.root(), "a"), Some(n));
    assert_eq!(g.op(n).unwrap().op_type(), "Gelu");
    assert_eq!(producer(&g, n, 0), "x:0");
    assert_eq!(producer(&g, b, 0), "a:0");
    assert_eq!(g.node(n).unwrap().in_nodes(), [x, k]);
    assert!(g.node(b).unwrap().in_ctrl_peers().contains(&n.out_ctrl()));
    assert_eq!(g.parent_node(sg), Some(n));
    assert!(g.contains_node(inner));
    // Port counts must match.
    let err = GraphPatch::replace_node(&g, n, op("a", "Gelu", 2, 1)).unwrap_err();
    assert!(matches!(
        err,
        PatchError::PortCountMismatch {
            side: AnchorSide::In,
            expected: 1,
            found: 2,
            ..
        }
    ));
}

#[test]
fn bypass_and_insert_on_edge() {
    let (mut g, [x, a, b, _, _]) = chain();
    let p = GraphPatch::bypass_node(&g, a, 0, 0).unwrap();
    g.apply_patch(p).unwrap();
    g.verify().unwrap();
    assert_eq!(producer(&g, b, 0), "x:0");
    assert!(!g.contains_node(a));

    let p = GraphPatch::insert_on_edge(&g, x.out(0), b.input(0), op("cast", "Cast", 1, 1), 0, 0)
        .unwrap();
    let cast = g.apply_patch(p).unwrap().node(0).unwrap();
    g.verify().unwrap();
    assert_eq!(producer(&g, b, 0), "cast:0");
    assert_eq!(producer(&g, cast, 0), "x:0");
    // x still feeds its other consumer directly.
    assert_eq!(g.node(x).unwrap().out_data_nodes().len(), 2);
    let err = GraphPatch::insert_on_edge(&g, x.out(0), b.input(0), op("y", "Cast", 1, 1), 0, 0)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`x:0` and `b:0` are not linked by a data edge"
    );
}

#[test]
fn control_edges_carry_or_drop() {
    let (mut g, [x, a, b, c, _]) = chain();
    let k = add(&mut g, "k", "NoOp", 0, 0);
    g.add_control_edge(k, a).unwrap();
    g.add_control_edge(k, b).unwrap();
    g.add_control_edge(b, c).unwrap();
    let base = g.clone();
    let mut p = GraphPatch::new();
    p.remove(a).remove(b);
    let f = p.add_node(op("f", "Fused", 1, 1));
    p.connect(Outlet::old(x, 0), f, 0)
        .shunt(b, 0, Outlet::new_node(f, 0))
        .carry_control_to(PatchNode::New(f));
    let f = g.apply_patch(p).unwrap().node(0).unwrap();
    g.verify().unwrap();
    // k's two control edges became one; b's to c moved to f.
    assert_eq!(g.node(f).unwrap().in_ctrl_peers(), [k.out_ctrl()]);
    assert_eq!(g.node(f).unwrap().out_ctrl_peers(), [c.in_ctrl()]);

    let mut g = base;
    let mut p = GraphPatch::new();
    p.remove(a).remove(b);
    let f = p.add_node(op("f", "Fused", 1, 1));
    p.connect(Outlet::old(x, 0), f, 0)
        .shunt(b, 0, Outlet::new_node(f, 0))
        .drop_control()
        .add_control_edge(PatchNode::Old(k), PatchNode::New(f));
    let f = g.apply_patch(p).unwrap().node(0).unwrap();
    g.verify().unwrap();
    assert_eq!(g.node(f).unwrap().in_ctrl_peers(), [k.out_ctrl()]);
    assert!(g.node(c).unwrap().in_ctrl_peers().is_empty());
}

#[test]
fn a_patch_of_a_subgraph() {
    let mut g = ComputeGraph::new("g");
    let parent = add(&mut g, "if", "If", 0, 0);
    let sg = g.add_subgraph(parent, 0, "then").unwrap();
    let d = g.add_node(sg, op("d", "Data", 0, 1)).unwrap();
    let r = g.add_node(sg, op("r", "Relu", 1, 1)).unwrap();
    g.add_edge(d, 0, r, 0).unwrap();
    g.add_output_node(r, 0).unwrap();
    let p = GraphPatch::replace_node(&g, r, op("r2", "Gelu", 1, 1)).unwrap();
    let n = g.apply_patch(p).unwrap().node(0).unwrap();
    g.verify().unwrap();
    assert_eq!(g.graph_of(n), Some(sg));
    assert_eq!(g.output_nodes(sg), &[(n, 0)]);
    // Nothing to infer the graph from: an explicit one.
    let mut p = GraphPatch::in_graph(sg);
    p.add_node(op("lonely", "NoOp", 0, 0));
    let n = g.apply_patch(p).unwrap().node(0).unwrap();
    assert_eq!(g.graph_of(n), Some(sg));
    g.verify().unwrap();
}

// ---- property test ----

/// A random DAG: node i reads from nodes before it; some control edges forward.
#[derive(Debug, Clone)]
struct Dag {
    nodes: Vec<(usize, usize)>,
    edges: Vec<(usize, usize, usize, usize)>,
    ctrl: Vec<(usize, usize)>,
}

fn dag() -> impl Strategy<Value = Dag> {
    (3usize..10)
        .prop_flat_map(|n| {
            (
                prop::collection::vec((0usize..3, 1usize..3), n),
                prop::collection::vec((0usize..n, 0usize..n, 0usize..3, 0usize..3), 0..3 * n),
                prop::collection::vec((0usize..n, 0usize..n), 0..3),
            )
        })
        .prop_map(|(nodes, raw, ctrl)| Dag {
            nodes,
            edges: raw,
            ctrl,
        })
}

fn build(d: &Dag) -> (ComputeGraph, Vec<NodeId>) {
    let mut g = ComputeGraph::new("g");
    let ids: Vec<NodeId> = d
        .nodes
        .iter()
        .enumerate()
        .map(|(i, &(ins, outs))| add(&mut g, &format!("n{i}"), "Op", ins, outs))
        .collect();
    for &(s, t, o, i) in &d.edges {
        if s < t {
            let _ = g.add_edge(ids[s], o, ids[t], i);
        }
    }
    for &(s, t) in &d.ctrl {
        if s < t {
            let _ = g.add_control_edge(ids[s], ids[t]);
        }
    }
    (g, ids)
}

#[derive(Debug, Clone)]
struct RandomPatch {
    remove: Vec<usize>,
    new_ports: Vec<(usize, usize)>,
    /// (outlet: new? node, out; new node, input)
    connects: Vec<(bool, usize, usize, usize, usize)>,
    shunt_all: bool,
    shunts: Vec<(usize, usize, bool, usize, usize)>,
    rewires: Vec<(usize, usize, bool, usize, usize)>,
    control: u8,
    wild: bool,
}

fn random_patch() -> impl Strategy<Value = RandomPatch> {
    let i = || 0usize..12;
    (
        prop::collection::vec(i(), 0..3),
        prop::collection::vec((0usize..3, 1usize..3), 0..3),
        prop::collection::vec(
            (
                prop::bool::weighted(0.3),
                i(),
                0usize..3,
                0usize..3,
                0usize..3,
            ),
            0..5,
        ),
        prop::bool::weighted(0.8),
        prop::collection::vec((i(), 0usize..3, any::<bool>(), i(), 0usize..3), 0..2),
        prop::collection::vec((i(), 0usize..3, any::<bool>(), i(), 0usize..3), 0..2),
        0u8..3,
        prop::bool::weighted(0.2),
    )
        .prop_map(
            |(remove, new_ports, connects, shunt_all, shunts, rewires, control, wild)| {
                RandomPatch {
                    remove,
                    new_ports,
                    connects,
                    shunt_all,
                    shunts,
                    rewires,
                    control,
                    wild,
                }
            },
        )
}

/// Indexes are taken modulo the real counts unless `wild`, so most patches are plausible and
/// some point anywhere.
fn to_patch(r: &RandomPatch, ids: &[NodeId], g: &ComputeGraph) -> GraphPatch {
    let wrap = |i: usize, n: usize| if r.wild || n == 0 { i } else { i % n };
    let news = r.new_ports.len();
    let old_outs = |n: NodeId| g.node(n).unwrap().out_data_count();
    let outlet = |new: bool, n: usize, o: usize| {
        if new && news > 0 {
            let k = wrap(n, news);
            Outlet::new_node(k, wrap(o, r.new_ports.get(k).map_or(0, |p| p.1)))
        } else {
            let id = ids[n % ids.len()];
            Outlet::old(id, wrap(o, old_outs(id)))
        }
    };
    let mut p = GraphPatch::new();
    for &n in &r.remove {
        p.remove(ids[n % ids.len()]);
    }
    for (k, &(ins, outs)) in r.new_ports.iter().enumerate() {
        p.add_node(op(&format!("new{k}"), "New", ins, outs));
    }
    let mut taken = Vec::new();
    for &(new, n, o, k, j) in &r.connects {
        let k = wrap(k, news);
        let ins = r.new_ports.get(k).map_or(0, |p| p.0);
        let j = wrap(j, ins);
        if !r.wild && (ins == 0 || taken.contains(&(k, j))) {
            continue;
        }
        taken.push((k, j));
        p.connect(outlet(new, n, o), k, j);
    }
    if r.shunt_all && news > 0 {
        for &n in &r.remove {
            let id = ids[n % ids.len()];
            for o in 0..old_outs(id) {
                p.shunt(id, o, Outlet::new_node(0, o % r.new_ports[0].1));
            }
        }
    }
    for &(n, o, new, m, mo) in r.shunts.iter().filter(|_| r.wild || !r.shunt_all) {
        let id = ids[n % ids.len()];
        p.shunt(id, wrap(o, old_outs(id)), outlet(new, m, mo));
    }
    for &(n, j, new, m, mo) in &r.rewires {
        let id = ids[n % ids.len()];
        p.rewire(
            id,
            wrap(j, g.node(id).unwrap().in_data_count()),
            outlet(new, m, mo),
        );
    }
    match r.control {
        0 => {}
        1 => {
            p.drop_control();
        }
        _ => {
            p.carry_control_to(PatchNode::New(0));
        }
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]
    #[test]
    fn random_patches_apply_cleanly_or_change_nothing(d in dag(), r in random_patch()) {
        let (mut g, ids) = build(&d);
        let before = g.clone();
        let p = to_patch(&r, &ids, &g);
        let news = p.new_ops().len();
        match g.apply_patch(p) {
            Ok(res) => {
                prop_assert_eq!(res.nodes.len(), news);
                g.verify().map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert!(g.sorted_order(g.root(), &SortOptions::default()).is_ok());
            }
            Err(_) => {
                prop_assert!(g == before);
                g.verify().map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
        }
    }
}

/// A patch replacing graph outputs rewrites only their entries: the list keeps its order, a
/// node listed twice is replaced in both places, and later edits (another patch, a removal)
/// see the entries where they now are.
#[test]
fn replacing_outputs_keeps_the_list_in_order() {
    let mut g = ComputeGraph::new("g");
    let x = add(&mut g, "x", "Data", 0, 1);
    let a = add(&mut g, "a", "Relu", 1, 1);
    let b = add(&mut g, "b", "Relu", 1, 1);
    let c = add(&mut g, "c", "Abs", 1, 1);
    for n in [a, b, c] {
        g.add_edge(x, 0, n, 0).unwrap();
    }
    g.add_input_node(x).unwrap();
    g.set_output_nodes(g.root(), vec![(a, 0), (b, 0), (c, 0), (b, 0)])
        .unwrap();

    let mut p = GraphPatch::new();
    p.remove(b);
    let f = p.add_node(op("f", "Neg", 1, 1));
    p.connect(Outlet::old(x, 0), f, 0)
        .shunt(b, 0, Outlet::new_node(f, 0));
    let f = g.apply_patch(p).unwrap().node(0).unwrap();
    g.verify().unwrap();
    assert_eq!(g.output_nodes(g.root()), &[(a, 0), (f, 0), (c, 0), (f, 0)]);
    assert!(g.is_output_node(f) && !g.contains_node(b));

    // An output node removed outright leaves the list; the others keep their entries.
    g.remove_node(a).unwrap();
    assert_eq!(g.output_nodes(g.root()), &[(f, 0), (c, 0), (f, 0)]);

    // A second patch finds the entries at their new places.
    let mut p = GraphPatch::new();
    p.remove(f).remove(c);
    let h = p.add_node(op("h", "Neg", 1, 2));
    p.connect(Outlet::old(x, 0), h, 0)
        .shunt(f, 0, Outlet::new_node(h, 1))
        .shunt(c, 0, Outlet::new_node(h, 0));
    let h = g.apply_patch(p).unwrap().node(0).unwrap();
    g.verify().unwrap();
    assert_eq!(g.output_nodes(g.root()), &[(h, 1), (h, 0), (h, 1)]);
    assert!(g.is_output_node(h) && !g.is_output_node(f) && !g.is_output_node(c));
}
