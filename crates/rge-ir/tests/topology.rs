//! The shared topology: built once per structure revision, rebuilt after every kind of edit
//! that changes a graph's nodes, links or order, and equal to a fresh build.

use std::sync::Arc;

use rge_ir::{ComputeGraph, GraphPatch, NodeId, OpDesc, Outlet};

/// a → b → c, and d reading a.
fn chain() -> (ComputeGraph, [NodeId; 4]) {
    let mut g = ComputeGraph::new("g");
    let r = g.root();
    let a = g
        .add_node(r, OpDesc::new("a", "T").with_ports(0, 1))
        .unwrap();
    let b = g
        .add_node(r, OpDesc::new("b", "T").with_ports(1, 1))
        .unwrap();
    let c = g
        .add_node(r, OpDesc::new("c", "T").with_ports(1, 1))
        .unwrap();
    let d = g
        .add_node(r, OpDesc::new("d", "T").with_ports(1, 1))
        .unwrap();
    g.add_edge(a, 0, b, 0).unwrap();
    g.add_edge(b, 0, c, 0).unwrap();
    g.add_edge(a, 0, d, 0).unwrap();
    (g, [a, b, c, d])
}

/// The cached topology of the root, checked against one built for a fresh clone (a clone
/// starts with no cache) and against the links it claims.
fn checked(g: &ComputeGraph) -> Arc<rge_ir::Topology> {
    let t = g.topology(g.root()).unwrap();
    let fresh = g.clone().topology(g.root()).unwrap();
    assert_eq!(t.ids, fresh.ids, "a stale topology was handed out");
    assert_eq!(t.preds.list, fresh.preds.list);
    assert_eq!(t.preds.start, fresh.preds.start);
    assert_eq!(t.ids.len(), g.node_count(g.root()));
    for (v, &n) in t.ids.iter().enumerate() {
        assert_eq!(t.index[n], v as u32);
        for &u in t.preds(v as u32) {
            assert!(u < v as u32, "a producer after its consumer");
        }
    }
    t
}

#[test]
fn the_topology_is_shared_until_the_structure_changes() {
    let (mut g, [a, b, c, d]) = chain();
    let t1 = checked(&g);
    assert_eq!(t1.ids, [a, b, c, d]);
    assert!(Arc::ptr_eq(&t1, &g.topology(g.root()).unwrap()));
    // Attribute and desc edits leave the structure, and the snapshot, as they are.
    let rev = g.revision();
    g.op_mut(b).unwrap().attrs_mut().set("k", 1i64);
    assert_eq!(g.revision(), rev);
    assert!(Arc::ptr_eq(&t1, &g.topology(g.root()).unwrap()));
    assert_eq!(t1.succs(0), [1, 3]);
    assert_eq!(t1.pred_links(2).collect::<Vec<_>>(), [(1, 0, 0)]);
    let _ = (c, d);
}

#[test]
fn every_structural_edit_gives_a_new_topology() {
    let (mut g, [a, b, c, d]) = chain();
    let r = g.root();
    let mut last = checked(&g);
    fn changed(g: &ComputeGraph, last: &mut Arc<rge_ir::Topology>, what: &str) {
        let t = checked(g);
        assert!(!Arc::ptr_eq(&t, last), "{what} kept the old topology");
        *last = t;
    }

    // A control link that reorders: c must now come before b... via d.
    g.add_control_edge(c, d).unwrap();
    changed(&g, &mut last, "add_control_edge");
    assert_eq!(last.ids, [a, b, c, d]);

    g.remove_control_edge(c, d).unwrap();
    changed(&g, &mut last, "remove_control_edge");

    g.move_node_before(d, a).unwrap();
    changed(&g, &mut last, "move_node_before");
    // d reads a: the topology keeps a first even though the list now starts with d.
    assert_eq!(last.ids.first(), Some(&a));

    let e = g
        .add_node(r, OpDesc::new("e", "T").with_ports(1, 0))
        .unwrap();
    changed(&g, &mut last, "add_node");
    g.add_edge(c, 0, e, 0).unwrap();
    changed(&g, &mut last, "add_edge");
    g.move_output_edges(c, b).unwrap();
    changed(&g, &mut last, "move_output_edges");
    assert_eq!(last.preds(last.index[e]), [last.index[b]]);

    g.remove_node(e).unwrap();
    changed(&g, &mut last, "remove_node");

    let mut p = GraphPatch::in_graph(r);
    p.remove(c);
    let k = p.add_node(OpDesc::new("c2", "T").with_ports(1, 1));
    p.connect(Outlet::old(b, 0), k, 0);
    g.apply_patch(p).unwrap();
    changed(&g, &mut last, "apply_patch");
    assert!(g.find_node(r, "c").is_none());

    let order: Vec<NodeId> = g
        .nodes_of(r)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    g.set_node_order(r, &order).unwrap();
    changed(&g, &mut last, "set_node_order");

    g.topological_sort(&Default::default()).unwrap();
    changed(&g, &mut last, "topological_sort");
    assert_eq!(last.ids, g.nodes_of(r).collect::<Vec<_>>());
}

#[test]
fn a_cycle_is_an_error_naming_its_nodes_and_never_cached() {
    let (mut g, [a, b, c, _]) = chain();
    let _ = checked(&g);
    g.add_control_edge(c, a).unwrap();
    let e = g.topology(g.root()).unwrap_err().to_string();
    assert!(e.contains("cycle"), "{e}");
    for n in ["a", "b", "c"] {
        assert!(e.contains(n), "{e}");
    }
    g.remove_control_edge(c, a).unwrap();
    assert_eq!(checked(&g).ids[..3], [a, b, c]);
}

#[test]
fn subgraphs_have_their_own_topologies() {
    let (mut g, [a, ..]) = chain();
    let sg = g.add_subgraph(a, 0, "body").unwrap();
    let x = g
        .add_node(sg, OpDesc::new("x", "T").with_ports(0, 1))
        .unwrap();
    let y = g
        .add_node(sg, OpDesc::new("y", "T").with_ports(1, 0))
        .unwrap();
    g.add_edge(x, 0, y, 0).unwrap();
    let root = checked(&g);
    let sub = g.topology(sg).unwrap();
    assert_eq!(sub.ids, [x, y]);
    assert_eq!(root.ids.len(), 4);
    // Both are held at once.
    assert!(Arc::ptr_eq(&sub, &g.topology(sg).unwrap()));
    assert!(Arc::ptr_eq(&root, &g.topology(g.root()).unwrap()));
}
