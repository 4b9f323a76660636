//! Property tests: random DAGs with random engine support. Partitions are acyclic (checked by
//! sorting the partition graph), single-engine, connected, deterministic, and merge back to the
//! original links — for rge's merge and GE's reference alike.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use common::*;
use rge_compiler::partition::{merge_partitions, partition, PartitionMode, PartitionPlan};
use rge_compiler::{place, CompileOptions, EngineManager, MergeAlgorithm};
use rge_engine::{BasicEngine, EngineAttributes, TableStore};
use rge_ir::{ComputeGraph, OpDesc, SortOptions};

const TYPES: [&str; 6] = ["T0", "T1", "T2", "T3", "T4", "T5"];

#[derive(Debug, Clone)]
struct Spec {
    /// Per node: op type index (6 = Data), data inputs and control inputs as fractions of the
    /// node's index.
    nodes: Vec<(usize, Vec<u16>, Vec<u16>)>,
    /// Per engine e1..e3: a bit mask over TYPES.
    support: [u8; 3],
    composite: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    let node = (
        0usize..7,
        prop::collection::vec(any::<u16>(), 0..3),
        prop::collection::vec(any::<u16>(), 0..2),
    );
    (
        prop::collection::vec(node, 1..80),
        prop::array::uniform3(any::<u8>()),
        any::<bool>(),
    )
        .prop_map(|(nodes, support, composite)| Spec {
            nodes,
            support,
            composite,
        })
}

fn build_manager(spec: &Spec) -> std::sync::Arc<EngineManager> {
    let mut b = EngineManager::builder();
    for (i, mask) in spec.support.iter().enumerate() {
        let name = format!("e{}", i + 1);
        let ops: Vec<&str> = (0..6)
            .filter(|t| mask & (1 << t) != 0)
            .map(|t| TYPES[t])
            .collect();
        b.register(eng(&name, i as u8 + 1, &ops));
    }
    if spec.composite {
        b.register(
            BasicEngine::new(EngineAttributes::new("comp", 1).composite(["e1", "e2"]))
                .with_store(TableStore::new("comp", "comp_store", 1)),
        );
    }
    b.register(
        BasicEngine::new(EngineAttributes::new("fallback", 5))
            .with_store(TableStore::new("fallback", "fb", 5).with_ops(TYPES)),
    )
    .register(eng("local", 9, &["Data"]));
    b.build().unwrap()
}

fn build_graph(spec: &Spec) -> ComputeGraph {
    let mut g = ComputeGraph::new("g");
    let root = g.root();
    let mut ids = Vec::new();
    for (i, (t, data, ctrl)) in spec.nodes.iter().enumerate() {
        let ty = if *t == 6 { "Data" } else { TYPES[*t] };
        let data: Vec<usize> = if i == 0 || *t == 6 {
            Vec::new()
        } else {
            data.iter().map(|f| *f as usize % i).collect()
        };
        let mut op = OpDesc::new(format!("n{i}"), ty);
        for _ in &data {
            op.add_input("", desc()).unwrap();
        }
        op.add_output("", desc()).unwrap();
        let n = g.add_node(root, op).unwrap();
        for (k, &src) in data.iter().enumerate() {
            g.add_edge(ids[src], 0, n, k).unwrap();
        }
        if i > 0 && *t != 6 {
            let mut seen = BTreeSet::new();
            for f in ctrl {
                let src = *f as usize % i;
                if seen.insert(src) {
                    g.add_control_edge(ids[src], n).unwrap();
                }
            }
        }
        ids.push(n);
    }
    g
}

/// A graph with one node per partition and a control link per partition-graph edge.
fn partition_graph(plan: &PartitionPlan) -> ComputeGraph {
    let mut pg = ComputeGraph::new("partitions");
    let root = pg.root();
    let nodes: Vec<_> = plan
        .partitions
        .iter()
        .map(|p| {
            pg.add_node(root, OpDesc::new(p.name(), "Partition"))
                .unwrap()
        })
        .collect();
    let mut seen = BTreeSet::new();
    for e in &plan.edges {
        if seen.insert((e.src_partition, e.dst_partition)) {
            pg.add_control_edge(
                nodes[e.src_partition as usize],
                nodes[e.dst_partition as usize],
            )
            .unwrap();
        }
    }
    pg
}

fn check(
    spec: &Spec,
    alg: MergeAlgorithm,
    mode: PartitionMode,
    budget: u32,
) -> Vec<(String, Vec<String>)> {
    let m = build_manager(spec);
    let o = CompileOptions {
        merge_algorithm: alg,
        merge_search_budget: budget,
        ..Default::default()
    };
    let mut g = build_graph(spec);
    place(&mut g, &m, &o).unwrap();
    let plan = partition(&g, &m, &o, mode, 0).unwrap();
    // Acyclic: the partition graph sorts.
    let pg = partition_graph(&plan);
    pg.sorted_order(pg.root(), &SortOptions::default())
        .unwrap_or_else(|e| panic!("{alg:?} {mode:?}: {e}"));
    assert!(plan.topological_order().is_some());
    // Each node once; one engine per partition; connected.
    let mut count = BTreeMap::new();
    for (pi, p) in plan.partitions.iter().enumerate() {
        let nodes = plan.nodes_of(pi as u32);
        let members: BTreeSet<_> = nodes.iter().copied().collect();
        for &n in nodes {
            *count.entry(n).or_insert(0) += 1;
            assert_eq!(plan.partition_of(n), Some(pi as u32));
            if !p.is_input_graph() {
                let e = g.op(n).unwrap().engine_name();
                let shown = match mode {
                    PartitionMode::Composite if spec.composite && (e == "e1" || e == "e2") => {
                        "comp"
                    }
                    _ => e,
                };
                assert_eq!(shown, &*p.engine, "partition {} mixes engines", p.name());
            }
        }
        if !p.is_input_graph() {
            // Weakly connected through links between members.
            let mut reached = BTreeSet::from([nodes[0]]);
            let mut todo = vec![nodes[0]];
            while let Some(n) = todo.pop() {
                let node = g.node(n).unwrap();
                for x in node.in_nodes().into_iter().chain(node.out_nodes()) {
                    if members.contains(&x) && reached.insert(x) {
                        todo.push(x);
                    }
                }
            }
            assert_eq!(
                reached.len(),
                members.len(),
                "{} is not connected",
                p.name()
            );
        }
    }
    assert_eq!(count.len(), g.node_count(g.root()));
    assert!(count.values().all(|&c| c == 1));
    // Merging back gives the original links.
    let graphs = plan.materialize(&g).unwrap();
    for pgr in &graphs {
        pgr.verify().unwrap();
    }
    let merged = merge_partitions(&plan, &graphs).unwrap().graph;
    merged.verify().unwrap();
    assert_eq!(links(&merged), links(&g));
    check_in_place(&g, &plan, &graphs, &merged);
    plan.partitions
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                p.name(),
                plan.nodes_of(i as u32)
                    .iter()
                    .map(|&n| g.name_of(n).to_string())
                    .collect(),
            )
        })
        .collect()
}

/// The pipeline's way (partitions moved out and back in place), with none, all and every
/// other partition taken: the taken graphs are the materialized ones, the result is the
/// merged graph (up to the order of an output's consumers), and every node's partition and new id are reported.
fn check_in_place(
    g: &ComputeGraph,
    plan: &PartitionPlan,
    graphs: &[ComputeGraph],
    merged: &ComputeGraph,
) {
    let count = plan.partitions.len() as u32;
    for pick in [0, 1, 2] {
        let wanted: Vec<u32> = (0..count)
            .filter(|p| match pick {
                0 => false,
                1 => true,
                _ => p % 2 == 1,
            })
            .collect();
        let mut h = g.clone();
        let taken = plan.take_partitions(&mut h, wanted.clone()).unwrap();
        assert_eq!(taken.partitions, wanted);
        for (&p, tg) in taken.partitions.iter().zip(&taken.graphs) {
            assert!(tg.structurally_equal(&graphs[p as usize]), "{}", tg.name());
        }
        let done = plan.merge_in_place(&mut h, taken).unwrap();
        h.verify().unwrap();
        // The same nodes, order, ops, links and lists; only the order of an output's consumers
        // may differ (the copy relinks them in merge order).
        assert_eq!(h.dump_text(), merged.dump_text(), "pick {pick}");
        assert_eq!(links(&h), links(merged), "pick {pick}");
        assert_eq!(h.graph_attrs(h.root()), merged.graph_attrs(merged.root()));
        for &n in &g.all_nodes(g.root()) {
            let now = done.moved.get(n).copied().unwrap_or(n);
            assert_eq!(h.name_of(now), g.name_of(n));
            if let Some(p) = plan.partition_of(n) {
                assert_eq!(done.partition_of.get(now), Some(&p));
                assert_eq!(done.moved.contains_key(n), wanted.contains(&p));
            }
        }
        assert_eq!(done.partition_of.len(), h.node_count(h.root()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn partitions_are_acyclic_and_merge_back(spec in spec()) {
        for mode in [PartitionMode::Atomic, PartitionMode::Composite] {
            // A tiny budget (many refusals) and a large one (every search completes).
            for budget in [6, 1 << 20] {
                let ours = check(&spec, MergeAlgorithm::Incremental, mode, budget);
                // Deterministic.
                prop_assert_eq!(&ours, &check(&spec, MergeAlgorithm::Incremental, mode, budget));
            }
            check(&spec, MergeAlgorithm::GeReference, mode, 0);
        }
    }
}
