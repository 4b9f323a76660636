//! The placement rules: cost order, exclusions, the mutually exclusive core engines, specified
//! engines, re-assign passes, the custom engine, and reasons.

mod common;

use common::*;
use rge_compiler::attr_names::*;
use rge_compiler::report::{place_json, place_rows};
use rge_compiler::{
    place, CompileError, CompileOptions, CoreEngineType, Decision, EngineManager, PlaceMode, Placer,
};
use rge_ir::AttrValue;

fn engine_of(g: &rge_ir::ComputeGraph, p: &rge_compiler::Placement, name: &str) -> String {
    p.engine(node(g, name)).unwrap().to_string()
}

#[test]
fn lowest_cost_supporting_engine_wins() {
    let m = manager();
    let mut g = graph(&[
        ("x", "Data", &[]),
        ("mm", "MatMul", &["x", "x"]),
        ("add", "Add", &["mm", "x"]),
        ("relu", "Relu", &["add"]),
        ("sort", "Sort", &["relu"]),
        ("out", "NetOutput", &["sort"]),
    ]);
    let p = place(&mut g, &m, &CompileOptions::default()).unwrap();
    assert_eq!(engine_of(&g, &p, "x"), "local");
    assert_eq!(engine_of(&g, &p, "mm"), "dense");
    // Add: dense (1) before vector (2).
    assert_eq!(engine_of(&g, &p, "add"), "dense");
    // Relu: only vector (2) has it before cpu (3); the default keeps both core engines.
    assert_eq!(engine_of(&g, &p, "relu"), "vector");
    assert_eq!(engine_of(&g, &p, "sort"), "cpu");
    assert_eq!(engine_of(&g, &p, "out"), "local");
    let relu = node(&g, "relu");
    assert_eq!(
        p.explain(&g, relu),
        [
            (
                "custom".to_string(),
                "no kernel for this op type".to_string()
            ),
            ("dense".into(), "no kernel for this op type".into()),
            ("vector".into(), "supported".into()),
        ]
    );
    // With the dense core type, vector is excluded → cpu.
    let dense = CompileOptions {
        core_engine_type: Some(CoreEngineType::Dense),
        ..Default::default()
    };
    let p = place(&mut g, &m, &dense).unwrap();
    assert_eq!(engine_of(&g, &p, "relu"), "cpu");
    let steps = p.explain(&g, relu);
    assert_eq!(
        steps,
        [
            (
                "custom".to_string(),
                "no kernel for this op type".to_string()
            ),
            ("dense".into(), "no kernel for this op type".into()),
            (
                "vector".into(),
                "excluded (core engine type is dense)".into()
            ),
            ("rts".into(), "no kernel for this op type".into()),
            ("comm".into(), "no kernel for this op type".into()),
            ("cpu".into(), "supported".into()),
        ]
    );
    assert_eq!(p.get(relu).unwrap().decision, Decision::Cost);
}

#[test]
fn equal_costs_keep_registration_order() {
    let mut b = EngineManager::builder();
    b.register(eng("second_registered_first", 2, &["Op"]))
        .register(eng("b", 2, &["Op"]))
        .register(eng("a", 1, &["Other"]));
    let m = b.build().unwrap();
    let mut g = graph(&[("n", "Op", &[])]);
    let p = place(&mut g, &m, &CompileOptions::default()).unwrap();
    assert_eq!(engine_of(&g, &p, "n"), "second_registered_first");
    let order: Vec<&str> = m.by_cost().iter().map(|&id| m.name(id)).collect();
    assert_eq!(order, ["custom", "a", "second_registered_first", "b"]);
}

#[test]
fn unsupported_instances_fall_through_with_reasons() {
    let m = manager();
    let mut g = graph(&[("x", "Data", &[]), ("mm", "MatMul", &["x", "x"])]);
    set_attr(&mut g, "mm", "reject_dense", true);
    let p = place(&mut g, &m, &CompileOptions::default()).unwrap();
    assert_eq!(engine_of(&g, &p, "mm"), "cpu");
    let reason = p.reason(&g, node(&g, "mm"));
    assert!(
        reason.contains("dense: unsupported: attribute `reject_dense` is set")
            && reason.contains("cpu: supported"),
        "{reason}"
    );
}

#[test]
fn excluded_engines_are_skipped_and_checked() {
    let m = manager();
    let mut g = graph(&[("x", "Data", &[]), ("mm", "MatMul", &["x", "x"])]);
    let o = CompileOptions {
        exclude_engines: vec!["dense".into()],
        ..Default::default()
    };
    let p = place(&mut g, &m, &o).unwrap();
    assert_eq!(engine_of(&g, &p, "mm"), "cpu");
    assert!(p
        .reason(&g, node(&g, "mm"))
        .contains("dense: excluded by ge.exec.exclude_engines"));
    // GE's accelerator names work too: AiCpu is cpu_tf, AiCpuAscend is cpu.
    let o = CompileOptions {
        exclude_engines: vec!["AiCore".into(), "AiCpuAscend".into()],
        ..Default::default()
    };
    let p = place(&mut g, &m, &o).unwrap();
    assert_eq!(engine_of(&g, &p, "mm"), "host");
    let o = CompileOptions {
        exclude_engines: vec!["tpu".into()],
        ..Default::default()
    };
    let e = place(&mut g, &m, &o).unwrap_err();
    assert!(e.to_string().contains("unknown engine `tpu`"), "{e}");
}

#[test]
fn core_engines_are_mutually_exclusive() {
    let m = manager();
    let spec: &[(&str, &str, &[&str])] = &[
        ("x", "Data", &[]),
        ("mm", "MatMul", &["x", "x"]),
        ("add", "Add", &["mm", "x"]),
        ("relu", "Relu", &["add"]),
    ];
    let mut g = graph(spec);
    // The default keeps both core engines: each op goes to the cheaper one that runs it.
    let p = place(&mut g, &m, &CompileOptions::default()).unwrap();
    assert_eq!(
        ["mm", "add", "relu"].map(|n| engine_of(&g, &p, n)),
        ["dense", "dense", "vector"]
    );
    let dense_opts = CompileOptions {
        core_engine_type: Some(CoreEngineType::Dense),
        ..Default::default()
    };
    let mut g = graph(spec);
    let p = place(&mut g, &m, &dense_opts).unwrap();
    assert_eq!(
        ["mm", "add", "relu"].map(|n| engine_of(&g, &p, n)),
        ["dense", "dense", "cpu"]
    );
    assert!(p
        .reason(&g, node(&g, "relu"))
        .contains("vector: excluded (core engine type is dense)"));
    let vec_opts = CompileOptions {
        core_engine_type: Some(CoreEngineType::Vector),
        ..Default::default()
    };
    let mut g = graph(spec);
    let p = place(&mut g, &m, &vec_opts).unwrap();
    assert_eq!(
        ["mm", "add", "relu"].map(|n| engine_of(&g, &p, n)),
        ["cpu", "vector", "vector"]
    );
    assert!(p
        .reason(&g, node(&g, "mm"))
        .contains("dense: excluded (core engine type is vector)"));
}

#[test]
fn specified_engine_wins() {
    let m = manager();
    let mut g = graph(&[("x", "Data", &[]), ("mm", "MatMul", &["x", "x"])]);
    set_attr(&mut g, "mm", SPECIFIED_ENGINE_NAME, "host");
    set_attr(&mut g, "mm", SPECIFIED_KERNEL_LIB_NAME, "my_lib");
    let p = place(&mut g, &m, &CompileOptions::default()).unwrap();
    let mm = node(&g, "mm");
    assert_eq!(p.engine(mm), Some("host"));
    assert_eq!(p.get(mm).unwrap().decision, Decision::Specified);
    assert_eq!(g.op(mm).unwrap().kernel_lib_name(), "my_lib");
    assert!(p.reason(&g, mm).starts_with("specified"));
    set_attr(&mut g, "mm", SPECIFIED_ENGINE_NAME, "nope");
    let e = place(&mut g, &m, &CompileOptions::default()).unwrap_err();
    assert!(
        matches!(&e, CompileError::Placement { node, .. } if node == "mm")
            && e.to_string()
                .contains("specified engine `nope` is not registered"),
        "{e}"
    );
}

#[test]
fn host_exec_flag_reassigns_to_host() {
    let m = manager();
    let mut g = graph(&[("x", "Data", &[]), ("mm", "MatMul", &["x", "x"])]);
    set_attr(&mut g, "mm", HOST_EXEC_FLAG, true);
    let p = place(&mut g, &m, &CompileOptions::default()).unwrap();
    let mm = node(&g, "mm");
    assert_eq!(p.engine(mm), Some("host"));
    let np = p.get(mm).unwrap();
    assert_eq!(np.decision, Decision::Reassigned);
    let r = np.reassignment().unwrap();
    assert_eq!(r.pass, "HostExecPass");
    assert_eq!(m.name(r.from), "dense");
    assert!(p
        .reason(&g, mm)
        .contains("host: re-assigned by HostExecPass"));
    assert_eq!(g.op(mm).unwrap().engine_name(), "host");
    // Without a host engine the flag is an error naming the node.
    let mut b = EngineManager::builder();
    b.register(std_eng("dense", &["MatMul"]))
        .register(std_eng("local", &["Data"]));
    let m2 = b.build().unwrap();
    let e = place(&mut g, &m2, &CompileOptions::default()).unwrap_err();
    assert!(
        e.to_string().contains("`mm`") && e.to_string().contains("no `host` engine"),
        "{e}"
    );
}

#[test]
fn data_flow_group_follows_its_first_node() {
    let m = manager();
    let mut g = graph(&[
        ("x", "Data", &[]),
        ("push", "MatMul", &["x", "x"]),
        ("pop", "Sort", &["push"]),
    ]);
    set_attr(&mut g, "push", DATA_FLOW_HANDLE, "stack0");
    set_attr(&mut g, "pop", DATA_FLOW_HANDLE, "stack0");
    set_attr(&mut g, "push", "reject_dense", true);
    let p = place(&mut g, &m, &CompileOptions::default()).unwrap();
    // push went to cpu; pop (cpu anyway) stays. Now make pop land elsewhere first.
    assert_eq!(engine_of(&g, &p, "push"), "cpu");
    let mut g = graph(&[
        ("x", "Data", &[]),
        ("a", "Sort", &["x"]),
        ("b", "Add", &["a", "x"]),
    ]);
    set_attr(&mut g, "a", DATA_FLOW_HANDLE, 7i64);
    set_attr(&mut g, "b", DATA_FLOW_HANDLE, 7i64);
    let p = place(&mut g, &m, &CompileOptions::default()).unwrap();
    assert_eq!(engine_of(&g, &p, "a"), "cpu");
    assert_eq!(engine_of(&g, &p, "b"), "cpu");
    assert!(p.reason(&g, node(&g, "b")).contains("DynamicDataFlowPass"));
}

#[test]
fn no_engine_is_a_clear_error() {
    let mut b = EngineManager::builder();
    b.register(picky("dense", &["MatMul"]))
        .register(eng("vectorish", 2, &["Relu"]));
    let m = b.build().unwrap();
    let mut g = graph(&[("mm", "MatMul", &[])]);
    set_attr(&mut g, "mm", "reject_dense", true);
    let e = place(&mut g, &m, &CompileOptions::default()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("no engine supports node `mm` (type MatMul)"),
        "{msg}"
    );
    assert!(
        msg.contains("dense: unsupported: attribute `reject_dense` is set"),
        "{msg}"
    );
    assert!(
        msg.contains("vectorish: no kernel for this op type"),
        "{msg}"
    );
    assert!(msg.contains("custom: no kernel for this op type"), "{msg}");
    // The graph is unchanged on error.
    assert_eq!(g.op(node(&g, "mm")).unwrap().engine_name(), "");
}

#[test]
fn placement_is_recorded_on_the_op() {
    let m = manager();
    let mut g = graph(&[("x", "Data", &[]), ("mm", "MatMul", &["x", "x"])]);
    place(&mut g, &m, &CompileOptions::default()).unwrap();
    let op = g.op(node(&g, "mm")).unwrap();
    assert_eq!(op.engine_name(), "dense");
    assert_eq!(op.kernel_lib_name(), "dense_store");
    let s = |k| op.attrs().get(k).cloned();
    assert_eq!(
        s(OP_KERNEL_LIB_NAME),
        Some(AttrValue::String("dense_store".into()))
    );
    assert_eq!(
        s(LXFUSION_ENGINE_NAME),
        Some(AttrValue::String("dense".into()))
    );
    assert_eq!(
        s(LXFUSION_OP_KERNEL_LIB_NAME),
        Some(AttrValue::String("dense_store".into()))
    );
}

#[test]
fn kept_placements_survive_a_reload() {
    let m = manager();
    let mut g = graph(&[("x", "Data", &[]), ("mm", "MatMul", &["x", "x"])]);
    set_attr(&mut g, "mm", LXFUSION_ENGINE_NAME, "cpu");
    let o = CompileOptions::default();
    let p = Placer::new(&m, &o)
        .with_mode(PlaceMode::KeepPlaced)
        .run(&mut g)
        .unwrap();
    assert_eq!(engine_of(&g, &p, "mm"), "cpu");
    assert_eq!(p.get(node(&g, "mm")).unwrap().decision, Decision::Kept);
}

#[test]
fn custom_engine_takes_user_ops_first() {
    let mut b = builder();
    b.custom_op("MatMul").custom_op_checked("MyOp", |op| {
        if op.input_count() == 1 {
            rge_engine::Support::Yes
        } else {
            rge_engine::Support::no("MyOp takes one input")
        }
    });
    let m = b.build().unwrap();
    let mut g = graph(&[
        ("x", "Data", &[]),
        ("mm", "MatMul", &["x", "x"]),
        ("my", "MyOp", &["mm"]),
        ("my2", "MyOp", &["mm", "x"]),
    ]);
    let p = place(&mut g, &m, &CompileOptions::default()).unwrap();
    assert_eq!(engine_of(&g, &p, "mm"), "custom");
    assert_eq!(engine_of(&g, &p, "my"), "custom");
    assert_eq!(engine_of(&g, &p, "my2"), "cpu");
    assert!(p
        .reason(&g, node(&g, "my2"))
        .contains("custom: unsupported: MyOp takes one input"));
    assert_eq!(
        m.engine(m.id("custom").unwrap()).attributes().compute_cost,
        0
    );
}

#[test]
fn subgraph_nodes_are_placed_too() {
    let m = manager();
    let mut g = graph(&[("x", "Data", &[]), ("if", "If", &["x"])]);
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
    let p = place(&mut g, &m, &CompileOptions::default()).unwrap();
    assert_eq!(p.engine(r), Some("vector"));
    assert_eq!(p.engine(d), Some("local"));
    assert_eq!(p.len(), 4);
}

#[test]
fn repeated_placement_is_identical_and_renders() {
    let m = manager();
    let spec: &[(&str, &str, &[&str])] = &[
        ("x", "Data", &[]),
        ("mm", "MatMul", &["x", "x"]),
        ("relu", "Relu", &["mm"]),
    ];
    let mut g1 = graph(spec);
    let mut g2 = graph(spec);
    let o = CompileOptions::default();
    let p1 = place(&mut g1, &m, &o).unwrap();
    let p2 = place(&mut g2, &m, &o).unwrap();
    let (r1, r2) = (place_rows(&g1, &p1), place_rows(&g2, &p2));
    assert_eq!(r1, r2);
    let j = place_json(&r1);
    assert_eq!(j["nodes"][1]["name"], "mm");
    assert_eq!(j["nodes"][1]["type"], "MatMul");
    assert_eq!(j["nodes"][1]["engine"], "dense");
    assert!(j["nodes"][1]["reason"]
        .as_str()
        .unwrap()
        .contains("dense: supported"));
}
