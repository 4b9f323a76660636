//! Partitioning: names, End/PlaceHolder pairs and attributes, merging without cycles, levels,
//! composite engines, merging back.

mod common;

use common::*;
use rge_compiler::attr_names::*;
use rge_compiler::partition::{merge_partitions, partition, PartitionMode, PartitionPlan};
use rge_compiler::{place, CompileOptions, EngineManager, MergeAlgorithm};
use rge_engine::{BasicEngine, EngineAttributes, TableStore};
use rge_ir::{AttrValue, ComputeGraph};

fn plan_of(
    g: &mut ComputeGraph,
    m: &EngineManager,
    o: &CompileOptions,
    mode: PartitionMode,
) -> PartitionPlan {
    place(g, m, o).unwrap();
    partition(g, m, o, mode, 0).unwrap()
}

fn summary(g: &ComputeGraph, plan: &PartitionPlan) -> Vec<(String, String, Vec<String>)> {
    plan.partitions
        .iter()
        .enumerate()
        .map(|(i, p)| {
            (
                p.name(),
                p.engine.to_string(),
                plan.nodes_of(i as u32)
                    .iter()
                    .map(|&n| g.name_of(n).to_string())
                    .collect(),
            )
        })
        .collect()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

fn attr<'a>(g: &'a ComputeGraph, node: &str, key: &str) -> &'a AttrValue {
    g.op(g
        .find_node(g.root(), node)
        .unwrap_or_else(|| panic!("no node {node}")))
        .unwrap()
        .attrs()
        .get(key)
        .unwrap_or_else(|| panic!("{node} has no {key}"))
}

#[test]
fn alternating_chain_gets_ge_names_and_pairs() {
    let m = manager();
    let o = CompileOptions::default();
    let mut g = graph(&[
        ("x", "Data", &[]),
        ("a", "MatMul", &["x", "x"]),
        ("b", "Sort", &["a"]),
        ("c", "MatMul", &["b", "x"]),
        ("out", "NetOutput", &["c"]),
    ]);
    let plan = plan_of(&mut g, &m, &o, PartitionMode::Atomic);
    assert_eq!(
        summary(&g, &plan),
        [
            (
                "partition0_rank0_inputNodeGraph".into(),
                INPUT_NODES_SUBGRAPH.into(),
                s(&["x"])
            ),
            (
                "partition0_rank1_new_sub_graph1".into(),
                "dense".into(),
                s(&["a"])
            ),
            (
                "partition0_rank2_new_sub_graph2".into(),
                "cpu".into(),
                s(&["b"])
            ),
            (
                "partition0_rank3_new_sub_graph3".into(),
                "dense".into(),
                s(&["c"])
            ),
            (
                "partition0_rank4_new_sub_graph4".into(),
                "local".into(),
                s(&["out"])
            ),
        ]
    );
    // x→a twice, a→b, b→c, x→c, c→out: one pair per crossing link.
    assert_eq!(plan.edges.len(), 6);
    assert_eq!(plan.partitions[0].end_count, 3);
    assert_eq!(plan.partitions[1].placeholder_count, 2);
    let graphs = plan.materialize(&g).unwrap();
    let input = &graphs[0];
    assert_eq!(input.name(), "partition0_rank0_inputNodeGraph");
    assert_eq!(
        input.node_names(input.root()),
        [
            "x",
            "new_sub_graph0_End0",
            "new_sub_graph0_End1",
            "new_sub_graph0_End4"
        ]
    );
    let p1 = &graphs[1];
    assert_eq!(
        p1.node_names(p1.root()),
        [
            "a",
            "new_sub_graph1_PlaceHolder0",
            "new_sub_graph1_PlaceHolder1",
            "new_sub_graph1_End2"
        ]
    );
    // PlaceHolder attributes (ge-reference §4.4).
    let pld = "new_sub_graph1_PlaceHolder0";
    assert_eq!(attr(p1, pld, PEER_INDEX), &AttrValue::Int(0));
    assert_eq!(
        attr(p1, pld, PARENT_OP_TYPE),
        &AttrValue::String("Data".into())
    );
    assert_eq!(
        attr(p1, pld, PARENT_NODE_NAME),
        &AttrValue::String("x".into())
    );
    assert_eq!(
        attr(p1, pld, PLD_FRONT_NODE_ENGINE_NAME),
        &AttrValue::String("local".into())
    );
    let x_id = g.op(node(&g, "x")).unwrap().id();
    assert_eq!(
        attr(p1, pld, PARENT_ID),
        &AttrValue::String(format!("new_sub_graph0:{x_id}"))
    );
    assert_eq!(attr(p1, pld, ANCHOR_INDEX), &AttrValue::Int(0));
    assert_eq!(
        attr(p1, pld, PEER_NODE_NAME),
        &AttrValue::String("new_sub_graph0_End0".into())
    );
    // End attributes.
    let end = "new_sub_graph1_End2";
    assert_eq!(attr(p1, end, PEER_INDEX), &AttrValue::Int(2));
    assert_eq!(
        attr(p1, end, PARENT_OP_TYPE),
        &AttrValue::String("Sort".into())
    );
    assert_eq!(
        attr(p1, end, END_REAR_NODE_ENGINE_NAME),
        &AttrValue::String("cpu".into())
    );
    // Partition graph attributes.
    let ga = p1.graph_attrs(p1.root()).unwrap();
    assert_eq!(
        ga.get(PARENT_GRAPH_NAME),
        Some(&AttrValue::String("g".into()))
    );
    for pg in &graphs {
        pg.verify().unwrap();
    }
    // Descs: the End takes the producer's output desc, the PlaceHolder the consumer's input.
    let e = p1.op(p1.find_node(p1.root(), end).unwrap()).unwrap();
    assert_eq!(
        e.input(0).unwrap(),
        g.op(node(&g, "a"))
            .unwrap()
            .output(0)
            .map(|d| {
                let mut d = d.clone();
                d.set_real_dim_cnt(2);
                d
            })
            .as_ref()
            .unwrap()
    );
}

#[test]
fn same_engine_chain_is_one_partition() {
    let m = manager();
    let mut g = graph(&[
        ("x", "Data", &[]),
        ("a", "MatMul", &["x", "x"]),
        ("b", "Add", &["a", "x"]),
        ("c", "Conv2D", &["b", "a"]),
    ]);
    let plan = plan_of(
        &mut g,
        &m,
        &CompileOptions::default(),
        PartitionMode::Atomic,
    );
    assert_eq!(plan.partitions.len(), 2);
    assert_eq!(plan.nodes_of(1).len(), 3);
}

#[test]
fn merging_never_makes_a_cycle() {
    // a → b(cpu) → c, a → c, a → d → c: c may join neither a's nor d's cluster.
    let m = manager();
    for alg in [MergeAlgorithm::Incremental, MergeAlgorithm::GeReference] {
        let o = CompileOptions {
            merge_algorithm: alg,
            ..Default::default()
        };
        let mut g = graph(&[
            ("a", "MatMul", &[]),
            ("b", "Sort", &["a"]),
            ("d", "MatMul", &["a"]),
            ("c", "Add", &["b", "d"]),
        ]);
        let plan = plan_of(&mut g, &m, &o, PartitionMode::Atomic);
        assert_eq!(
            summary(&g, &plan)
                .into_iter()
                .map(|p| p.2)
                .collect::<Vec<_>>(),
            [s(&["a", "d"]), s(&["b"]), s(&["c"])],
            "{alg:?}"
        );
        assert!(plan.topological_order().is_some());
    }
}

#[test]
fn unrelated_parent_after_the_child_cluster_still_merges() {
    // The case GE's "no other path" allows and a plain level scheme misses: c joins a although
    // b (another engine) was seen between them.
    let m = manager();
    let mut g = graph(&[
        ("a", "MatMul", &[]),
        ("a2", "Sort", &["a"]),
        ("b", "Sort", &[]),
        ("c", "MatMul", &["a", "b"]),
    ]);
    let plan = plan_of(
        &mut g,
        &m,
        &CompileOptions::default(),
        PartitionMode::Atomic,
    );
    let parts = summary(&g, &plan);
    assert!(parts.iter().any(|p| p.2 == s(&["a", "c"])), "{parts:?}");
    assert!(plan.topological_order().is_some());
}

#[test]
fn control_links_get_pairs_too() {
    let m = manager();
    let mut g = graph(&[("a", "MatMul", &[]), ("b", "Sort", &["^a"])]);
    let plan = plan_of(
        &mut g,
        &m,
        &CompileOptions::default(),
        PartitionMode::Atomic,
    );
    assert_eq!(plan.edges.len(), 1);
    assert!(plan.edges[0].src.is_control() && plan.edges[0].dst.is_control());
    let graphs = plan.materialize(&g).unwrap();
    let p2 = &graphs[1];
    assert_eq!(
        attr(p2, "new_sub_graph1_PlaceHolder0", ANCHOR_INDEX),
        &AttrValue::Int(-1)
    );
    let pld = p2
        .find_node(p2.root(), "new_sub_graph1_PlaceHolder0")
        .unwrap();
    assert_eq!(p2.node(pld).unwrap().out_ctrl_peers().len(), 1);
    let merged = merge_partitions(&plan, &graphs).unwrap();
    assert_eq!(links(&merged.graph), links(&g));
}

#[test]
fn stages_shapes_and_labels_split_partitions() {
    let m = manager();
    let mut g = graph(&[
        ("a", "MatMul", &[]),
        ("b", "MatMul", &["a"]),
        ("c", "MatMul", &["b"]),
        ("d", "MatMul", &["c"]),
    ]);
    set_attr(&mut g, "c", STAGE_LEVEL, 1i64);
    set_attr(&mut g, "d", STAGE_LEVEL, 1i64);
    let plan = plan_of(
        &mut g,
        &m,
        &CompileOptions::default(),
        PartitionMode::Atomic,
    );
    assert_eq!(plan.partitions.len(), 2);
    assert_eq!(plan.partitions[1].stage, Some(1));
    assert_eq!(
        plan.levels.iter().map(|l| l.level).collect::<Vec<_>>(),
        ["stage", "atomic engine"]
    );

    let mut g = graph(&[
        ("a", "MatMul", &[]),
        ("b", "MatMul", &["a"]),
        ("c", "MatMul", &["b"]),
    ]);
    let b = node(&g, "b");
    g.op_mut(b)
        .unwrap()
        .output_mut(0)
        .unwrap()
        .set_shape(rge_ir::Shape::new([-1, 4]));
    let plan = plan_of(
        &mut g,
        &m,
        &CompileOptions::default(),
        PartitionMode::Atomic,
    );
    // b (unknown output) and c (unknown input? no: c's input desc is known) split off.
    assert!((0..plan.partitions.len())
        .any(|i| plan.partitions[i].unknown_shape && plan.nodes_of(i as u32) == [b]));

    let mut g = graph(&[
        ("a", "MatMul", &[]),
        ("b", "MatMul", &["a"]),
        ("c", "MatMul", &["b"]),
    ]);
    set_attr(&mut g, "b", STREAM_LABEL, "s1");
    let plan = plan_of(
        &mut g,
        &m,
        &CompileOptions::default(),
        PartitionMode::Atomic,
    );
    assert_eq!(plan.partitions.len(), 3);
    assert_eq!(plan.partitions[1].stream_label.as_deref(), Some("s1"));
}

/// aic, aiv (atomic) and ffts (composite over both), and cpu.
pub fn composite_manager() -> std::sync::Arc<EngineManager> {
    let mut b = EngineManager::builder();
    b.register(eng("aic", 1, &["MatMul"]))
        .register(
            BasicEngine::new(EngineAttributes::new("ffts", 1).composite(["aic", "aiv"]))
                .with_store(TableStore::new("ffts", "ffts_store", 1)),
        )
        .register(eng("aiv", 2, &["Relu"]))
        .register(eng("cpu", 3, &["Sort"]));
    b.build().unwrap()
}

#[test]
fn composite_engine_claims_a_region_of_its_members() {
    let m = composite_manager();
    let spec: &[(&str, &str, &[&str])] = &[
        ("m1", "MatMul", &[]),
        ("v1", "Relu", &["m1"]),
        ("m2", "MatMul", &["v1"]),
        ("s", "Sort", &["m2"]),
        ("v2", "Relu", &["s"]),
    ];
    let o = CompileOptions::default();
    let mut g = graph(spec);
    let plan = plan_of(&mut g, &m, &o, PartitionMode::Composite);
    assert_eq!(
        summary(&g, &plan)
            .into_iter()
            .map(|p| (p.1, p.2))
            .collect::<Vec<_>>(),
        [
            ("ffts".to_string(), s(&["m1", "v1", "m2"])),
            ("cpu".into(), s(&["s"])),
            ("ffts".into(), s(&["v2"]))
        ]
    );
    let plan = partition(&g, &m, &o, PartitionMode::Atomic, 1).unwrap();
    assert_eq!(plan.partitions.len(), 5);
    assert_eq!(plan.partitions[0].name(), "partition1_rank1_new_sub_graph0");
    // Excluding the composite engine leaves the atomic engines.
    let o = CompileOptions {
        exclude_engines: vec!["ffts".into()],
        ..Default::default()
    };
    let plan = partition(&g, &m, &o, PartitionMode::Composite, 0).unwrap();
    assert_eq!(plan.partitions.len(), 5);
}

#[test]
fn partitions_merge_back_to_the_original() {
    let m = manager();
    let mut g = graph(&[
        ("x", "Data", &[]),
        ("w", "Const", &[]),
        ("a", "MatMul", &["x", "w"]),
        ("b", "Sort", &["a"]),
        ("c", "Add", &["a", "b"]),
        ("d", "Relu", &["c", "^a"]),
        ("out", "NetOutput", &["d"]),
    ]);
    let x = node(&g, "x");
    let out = node(&g, "out");
    g.set_input_nodes(g.root(), vec![x]).unwrap();
    g.set_output_nodes(g.root(), vec![(out, 0)]).unwrap();
    let plan = plan_of(
        &mut g,
        &m,
        &CompileOptions::default(),
        PartitionMode::Atomic,
    );
    let graphs = plan.materialize(&g).unwrap();
    let merged = merge_partitions(&plan, &graphs).unwrap().graph;
    merged.verify().unwrap();
    assert_eq!(links(&merged), links(&g));
    let mut a = g.node_names(g.root());
    let mut b = merged.node_names(merged.root());
    a.sort();
    b.sort();
    assert_eq!(a, b);
    assert_eq!(merged.name_of(merged.input_nodes(merged.root())[0]), "x");
    assert_eq!(merged.output_nodes(merged.root()).len(), 1);
    // Same op descs (placement attributes included).
    for n in g.nodes_of(g.root()) {
        let name = g.name_of(n);
        let mn = merged.find_node(merged.root(), name).unwrap();
        assert_eq!(g.op(n), merged.op(mn), "{name}");
    }
}

#[test]
fn repeated_runs_give_identical_plans() {
    let m = manager();
    let spec: &[(&str, &str, &[&str])] = &[
        ("x", "Data", &[]),
        ("a", "MatMul", &["x", "x"]),
        ("b", "Sort", &["a"]),
        ("c", "Add", &["a", "b"]),
        ("d", "Add", &["c", "x"]),
    ];
    let mut runs = Vec::new();
    for _ in 0..3 {
        let mut g = graph(spec);
        let plan = plan_of(
            &mut g,
            &m,
            &CompileOptions::default(),
            PartitionMode::Atomic,
        );
        let names: Vec<Vec<String>> = plan
            .materialize(&g)
            .unwrap()
            .iter()
            .map(|pg| {
                pg.node_names(pg.root())
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            })
            .collect();
        runs.push((summary(&g, &plan), names));
    }
    assert_eq!(runs[0], runs[1]);
    assert_eq!(runs[1], runs[2]);
}

#[test]
fn subgraphs_travel_with_their_parent() {
    let m = manager();
    let mut g = graph(&[
        ("x", "Data", &[]),
        ("if", "If", &["x"]),
        ("y", "MatMul", &["if"]),
    ]);
    let parent = node(&g, "if");
    let sg = g.add_subgraph(parent, 0, "then").unwrap();
    let d = g
        .add_node(
            sg,
            rge_ir::OpDesc::new("sd", "Data").with_output("", desc()),
        )
        .unwrap();
    let r = g
        .add_node(
            sg,
            rge_ir::OpDesc::new("sr", "Relu")
                .with_input("", desc())
                .with_output("", desc()),
        )
        .unwrap();
    g.add_edge(d, 0, r, 0).unwrap();
    let plan = plan_of(
        &mut g,
        &m,
        &CompileOptions::default(),
        PartitionMode::Atomic,
    );
    let graphs = plan.materialize(&g).unwrap();
    let holder = graphs
        .iter()
        .find(|pg| pg.find_node(pg.root(), "if").is_some())
        .unwrap();
    assert!(holder.subgraph_by_name("then").is_some());
    holder.verify().unwrap();
    let merged = merge_partitions(&plan, &graphs).unwrap().graph;
    merged.verify().unwrap();
    let then = merged.subgraph_by_name("then").unwrap();
    assert_eq!(merged.node_names(then), ["sd", "sr"]);
}
