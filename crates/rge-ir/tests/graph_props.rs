//! Property tests: random sequences of graph edits. After every step the verifier passes (peer
//! symmetry included); a step that fails leaves the graph exactly as it was.

use proptest::prelude::*;
use rge_ir::{ComputeGraph, GraphId, NodeId, OpDesc, TensorDesc};

#[derive(Debug, Clone)]
enum Step {
    Add {
        ins: usize,
        outs: usize,
        konst: bool,
    },
    AddInSubgraph {
        ins: usize,
        outs: usize,
        pick: usize,
    },
    Remove(usize),
    Link {
        src: usize,
        out: usize,
        dst: usize,
        input: usize,
    },
    Control {
        src: usize,
        dst: usize,
    },
    DataToControl {
        src: usize,
        out: usize,
        dst: usize,
    },
    Unlink(usize),
    Insert {
        link: usize,
        node: usize,
    },
    ReplaceSource {
        link: usize,
        src: usize,
        out: usize,
    },
    ReplaceDestination {
        link: usize,
        dst: usize,
        input: usize,
    },
    Fuse {
        a: usize,
        b: usize,
    },
    InsertInput {
        node: usize,
        at: usize,
    },
    RemoveInput {
        node: usize,
        at: usize,
    },
    Isolate(usize),
    MoveOutputs {
        from: usize,
        to: usize,
    },
    Subgraph {
        node: usize,
        slot: usize,
    },
    Rename {
        node: usize,
        to: usize,
    },
    Copy,
}

fn step() -> impl Strategy<Value = Step> {
    let i = || 0usize..64;
    prop_oneof![
        4 => (0usize..3, 0usize..3, any::<bool>()).prop_map(|(ins, outs, konst)| Step::Add { ins, outs, konst }),
        1 => (0usize..3, 0usize..3, i()).prop_map(|(ins, outs, pick)| Step::AddInSubgraph { ins, outs, pick }),
        2 => i().prop_map(Step::Remove),
        6 => (i(), 0usize..3, i(), 0usize..3).prop_map(|(src, out, dst, input)| Step::Link { src, out, dst, input }),
        2 => (i(), i()).prop_map(|(src, dst)| Step::Control { src, dst }),
        1 => (i(), 0usize..3, i()).prop_map(|(src, out, dst)| Step::DataToControl { src, out, dst }),
        2 => i().prop_map(Step::Unlink),
        2 => (i(), i()).prop_map(|(link, node)| Step::Insert { link, node }),
        1 => (i(), i(), 0usize..3).prop_map(|(link, src, out)| Step::ReplaceSource { link, src, out }),
        1 => (i(), i(), 0usize..3).prop_map(|(link, dst, input)| Step::ReplaceDestination { link, dst, input }),
        1 => (i(), i()).prop_map(|(a, b)| Step::Fuse { a, b }),
        1 => (i(), 0usize..4).prop_map(|(node, at)| Step::InsertInput { node, at }),
        1 => (i(), 0usize..4).prop_map(|(node, at)| Step::RemoveInput { node, at }),
        1 => i().prop_map(Step::Isolate),
        1 => (i(), i()).prop_map(|(from, to)| Step::MoveOutputs { from, to }),
        1 => (i(), 0usize..2).prop_map(|(node, slot)| Step::Subgraph { node, slot }),
        1 => (i(), i()).prop_map(|(node, to)| Step::Rename { node, to }),
        1 => Just(Step::Copy),
    ]
}

fn nodes(g: &ComputeGraph) -> Vec<NodeId> {
    let mut all = g.all_nodes(g.root());
    all.sort();
    all
}

fn pick<T: Copy>(v: &[T], i: usize) -> Option<T> {
    (!v.is_empty()).then(|| v[i % v.len()])
}

/// Every data or control link as (src node, src index, dst node, dst index).
fn links(g: &ComputeGraph) -> Vec<(NodeId, i32, NodeId, i32)> {
    let mut out = Vec::new();
    for n in nodes(g) {
        let node = g.node(n).unwrap();
        for (i, ps) in (0..node.out_data_count()).map(|i| (i as i32, node.peers_of_output(i))) {
            out.extend(ps.iter().map(|p| (n, i, p.node, p.index)));
        }
        out.extend(
            node.out_ctrl_peers()
                .iter()
                .map(|p| (n, -1, p.node, p.index)),
        );
    }
    out
}

fn op(counter: &mut usize, ins: usize, outs: usize, ty: &str) -> OpDesc {
    *counter += 1;
    OpDesc::new(format!("n{counter}"), ty).with_ports(ins, outs)
}

fn apply(g: &mut ComputeGraph, s: &Step, counter: &mut usize) -> Result<(), rge_ir::IrError> {
    use rge_ir::{InAnchor, OutAnchor};
    let ns = nodes(g);
    let ls = links(g);
    let node = |i: usize| pick(&ns, i).ok_or(rge_ir::IrError::Other("empty".into()));
    let link = |i: usize| pick(&ls, i).ok_or(rge_ir::IrError::Other("no links".into()));
    match *s {
        Step::Add { ins, outs, konst } => {
            let ty = if konst { "Const" } else { "Op" };
            let o = op(
                counter,
                if konst { 0 } else { ins },
                outs.max(konst as usize),
                ty,
            );
            g.add_node(g.root(), o).map(|_| ())
        }
        Step::AddInSubgraph { ins, outs, pick: p } => {
            let subs: Vec<GraphId> = g.subgraphs().to_vec();
            let sg = pick(&subs, p).unwrap_or(g.root());
            g.add_node(sg, op(counter, ins, outs, "Op")).map(|_| ())
        }
        Step::Remove(i) => g.remove_node(node(i)?).map(|_| ()),
        Step::Link {
            src,
            out,
            dst,
            input,
        } => g.add_edge(node(src)?, out, node(dst)?, input),
        Step::Control { src, dst } => g.add_control_edge(node(src)?, node(dst)?),
        Step::DataToControl { src, out, dst } => g.link(node(src)?.out(out), node(dst)?.in_ctrl()),
        Step::Unlink(i) => {
            let (s, si, d, di) = link(i)?;
            g.unlink(
                OutAnchor { node: s, index: si },
                InAnchor { node: d, index: di },
            )
        }
        Step::Insert { link: l, node: n } => {
            let (s, si, d, di) = link(l)?;
            g.insert_node_between(
                OutAnchor { node: s, index: si },
                InAnchor { node: d, index: di },
                node(n)?,
                0,
                0,
            )
        }
        Step::ReplaceSource { link: l, src, out } => {
            let (s, si, d, di) = link(l)?;
            g.replace_source(
                OutAnchor { node: s, index: si },
                InAnchor { node: d, index: di },
                node(src)?.out(out),
            )
        }
        Step::ReplaceDestination {
            link: l,
            dst,
            input,
        } => {
            let (s, si, d, di) = link(l)?;
            g.replace_destination(
                OutAnchor { node: s, index: si },
                InAnchor { node: d, index: di },
                node(dst)?.input(input),
            )
        }
        Step::Fuse { a, b } => {
            let fused = op(counter, 1, 1, "Fused");
            g.fuse_nodes_keep_topo(&[node(a)?, node(b)?], vec![fused])
                .map(|_| ())
        }
        Step::InsertInput { node: n, at } => {
            g.insert_input(node(n)?, at, "", TensorDesc::default())
        }
        Step::RemoveInput { node: n, at } => g.remove_input(node(n)?, at).map(|_| ()),
        Step::Isolate(n) => {
            let n = node(n)?;
            let map = g.default_io_map(n);
            g.isolate_node(n, &map)
        }
        Step::MoveOutputs { from, to } => g.move_output_edges(node(from)?, node(to)?),
        Step::Subgraph { node: n, slot } => {
            *counter += 1;
            g.add_subgraph(node(n)?, slot, format!("sg{counter}"))
                .map(|_| ())
        }
        Step::Rename { node: n, to } => {
            let target = g.name_of(node(to)?).to_string();
            g.rename_node(node(n)?, &target)
        }
        Step::Copy => {
            let copy = g.clone();
            assert!(copy == *g, "a copy equals its original");
            *g = copy;
            Ok(())
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn random_edits_keep_every_invariant(steps in proptest::collection::vec(step(), 1..80)) {
        let mut g = ComputeGraph::new("p");
        let mut counter = 0usize;
        for s in &steps {
            let before = g.clone();
            let before_dump = g.dump_text();
            match apply(&mut g, s, &mut counter) {
                Ok(()) => {}
                Err(_) => {
                    prop_assert_eq!(&g.dump_text(), &before_dump, "failed step {:?} changed the graph", s);
                    prop_assert!(g == before);
                }
            }
            if let Err(e) = g.verify() {
                prop_assert!(false, "after {:?}: {}", s, e);
            }
        }
    }
}
