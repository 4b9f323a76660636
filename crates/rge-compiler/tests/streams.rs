//! Stream assignment: independent engines, attach, skip, labels, engine parallelism, events.

mod common;

use common::*;
use rge_compiler::attr_names::STREAM_LABEL;
use rge_compiler::partition::{partition, PartitionMode};
use rge_compiler::{assign_partition_streams, events, place, CompileOptions};
use slotmap::SecondaryMap;

/// (partition engine, stream) per partition, and events as `src->dst`.
fn run(
    g: &mut rge_ir::ComputeGraph,
    o: &CompileOptions,
) -> (Vec<(String, Option<u32>)>, Vec<String>) {
    let m = manager();
    place(g, &m, o).unwrap();
    let plan = partition(g, &m, o, PartitionMode::Atomic, 0).unwrap();
    let st = assign_partition_streams(&plan, &m, o);
    let mut node_streams = SecondaryMap::new();
    for i in 0..plan.partitions.len() {
        for &n in plan.nodes_of(i as u32) {
            node_streams.insert(n, st.streams[i]);
        }
    }
    let ev = events(g, &node_streams)
        .iter()
        .map(|e| format!("{}->{}", g.name_of(e.src), g.name_of(e.dst)))
        .collect();
    let parts = plan
        .partitions
        .iter()
        .zip(&st.streams)
        .map(|(p, s)| (p.engine.to_string(), *s))
        .collect();
    (parts, ev)
}

fn chain() -> rge_ir::ComputeGraph {
    graph(&[
        ("x", "Data", &[]),
        ("a", "MatMul", &["x", "x"]),
        ("r", "AllReduce", &["a"]),
        ("b", "MatMul", &["r", "x"]),
        ("s", "Sort", &["b"]),
        ("out", "NetOutput", &["s"]),
    ])
}

#[test]
fn independent_attach_and_skip() {
    let (parts, ev) = run(&mut chain(), &CompileOptions::default());
    assert_eq!(
        parts,
        [
            ("inputNodesSubGraph".to_string(), None),
            ("dense".into(), Some(0)),
            ("comm".into(), Some(1)),
            ("dense".into(), Some(2)),
            ("cpu".into(), Some(2)),
            ("local".into(), None),
        ]
    );
    assert_eq!(ev, ["a->r", "r->b"]);
}

#[test]
fn without_engine_parallelism_one_shared_stream() {
    let o = CompileOptions {
        engine_parallel: false,
        ..Default::default()
    };
    let (parts, ev) = run(&mut chain(), &o);
    let streams: Vec<Option<u32>> = parts.iter().map(|p| p.1).collect();
    assert_eq!(streams, [None, Some(0), Some(1), Some(0), Some(0), None]);
    assert_eq!(ev, ["a->r", "r->b"]);
}

#[test]
fn a_label_gets_its_own_stream() {
    let mut g = graph(&[
        ("a", "MatMul", &[]),
        ("b", "MatMul", &["a"]),
        ("c", "MatMul", &["b"]),
        ("d", "MatMul", &["c"]),
    ]);
    set_attr(&mut g, "b", STREAM_LABEL, "side");
    set_attr(&mut g, "d", STREAM_LABEL, "side");
    let (parts, ev) = run(&mut g, &CompileOptions::default());
    assert_eq!(
        parts.iter().map(|p| p.1).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(2), Some(1)]
    );
    assert_eq!(ev, ["a->b", "b->c", "c->d"]);
}

#[test]
fn events_look_through_stream_less_nodes() {
    let mut g = graph(&[
        ("a", "MatMul", &[]),
        ("i", "Identity", &["a"]),
        ("s", "Sort", &["i"]),
    ]);
    let (parts, ev) = run(&mut g, &CompileOptions::default());
    assert_eq!(
        parts,
        [
            ("dense".to_string(), Some(0)),
            ("local".into(), None),
            ("cpu".into(), Some(1))
        ]
    );
    assert_eq!(ev, ["a->s"]);
}

#[test]
fn a_stream_is_reused_by_one_successor_only() {
    // s (cpu, attach) reuses a's stream. b and c (dense, not attach) may not reuse s's stream
    // (another engine), so each gets its own. Then two cpu consumers of b: the first reuses b's
    // stream, the second gets a new one, so they can run in parallel.
    let mut g = graph(&[
        ("a", "MatMul", &[]),
        ("s", "Sort", &["a"]),
        ("b", "MatMul", &["s"]),
        ("c", "MatMul", &["s"]),
        ("t", "Sort", &["b"]),
        ("u", "Sort", &["b"]),
    ]);
    let (parts, _) = run(&mut g, &CompileOptions::default());
    let streams: Vec<(String, Option<u32>)> = parts;
    assert_eq!(
        streams,
        [
            ("dense".to_string(), Some(0)),
            ("cpu".into(), Some(0)),
            ("dense".into(), Some(1)),
            ("dense".into(), Some(2)),
            ("cpu".into(), Some(1)),
            ("cpu".into(), Some(3)),
        ]
    );
}
