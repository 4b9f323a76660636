//! What the command line prints: engines, placement and partitions as data, JSON, text, DOT;
//! and the manager's lifecycle.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::*;
use rge_compiler::report::*;
use rge_compiler::{CompileOptions, CoreEngineType, EngineManager};
use rge_engine::BasicEngine;

#[test]
fn engines_listing() {
    let m = manager();
    let rows = list_engines(&m);
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        ["custom", "dense", "vector", "rts", "comm", "cpu", "local", "host"]
    );
    let comm = rows.iter().find(|r| r.name == "comm").unwrap();
    assert!(comm.independent && !comm.attach && !comm.skip_assign_stream);
    let host = rows.iter().find(|r| r.name == "host").unwrap();
    assert_eq!((host.cost, host.runtime, host.op_types), (10, "HOST", None));
    let j = engines_json(&rows);
    assert_eq!(j["engines"][7]["op_types"], "any");
    assert_eq!(j["engines"][6]["skip_assign_stream"], true);
    assert_eq!(j["engines"][1]["kind"], "atomic");
    let t = engines_text(&rows);
    assert!(
        t.lines()
            .any(|l| l.starts_with("local") && l.contains("skip+attach")),
        "{t}"
    );
    assert!(
        t.lines()
            .any(|l| l.starts_with("comm") && l.contains("independent")),
        "{t}"
    );
}

#[test]
fn cli_options_are_checked() {
    let o = cli_options(Some("dense, cpu"), Some("vector")).unwrap();
    assert_eq!(o.exclude_engines, ["dense", "cpu"]);
    assert_eq!(o.core_engine_type, Some(CoreEngineType::Vector));
    assert!(cli_options(None, Some("gpu")).is_err());
}

#[test]
fn place_and_partition_reports() {
    let m = manager();
    let spec: &[(&str, &str, &[&str])] = &[
        ("x", "Data", &[]),
        ("a", "MatMul", &["x", "x"]),
        ("b", "Sort", &["a"]),
        ("c", "MatMul", &["b", "x"]),
        ("out", "NetOutput", &["c"]),
    ];
    let mut g = graph(spec);
    let o = cli_options(Some("host"), None).unwrap();
    let rows = place_graph(&mut g, &m, &o).unwrap();
    let t = place_text(&rows);
    assert!(
        t.lines()
            .nth(2)
            .unwrap()
            .starts_with("a     MatMul     dense"),
        "{t}"
    );

    let mut g = graph(spec);
    let r = partition_graph(&mut g, &m, &CompileOptions::default()).unwrap();
    let j = partitions_json(&r);
    let parts = j["partitions"].as_array().unwrap();
    assert_eq!(parts.len(), 5);
    assert_eq!(parts[1]["name"], "partition0_rank1_new_sub_graph1");
    assert_eq!(parts[1]["engine"], "dense");
    assert_eq!(parts[1]["stream"], 0);
    assert_eq!(parts[1]["nodes"], serde_json::json!(["a"]));
    assert!(parts[0]["stream"].is_null());
    assert_eq!(j["events"], r.event_count);
    let t = partitions_text(&r);
    assert!(
        t.contains("partition0_rank2_new_sub_graph2") && t.contains("engine=cpu"),
        "{t}"
    );
    assert!(r.dot.starts_with("digraph \"g\""));
    assert!(r.dot.contains("subgraph \"cluster_1\"") && r.dot.contains("fillcolor"));
    assert_eq!(r.dot.matches(" -> ").count(), 6);
}

#[test]
fn engines_are_finalized_when_the_manager_is_dropped() {
    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    let mut b = EngineManager::builder();
    b.register(
        BasicEngine::standard("dense")
            .unwrap()
            .on_finalize(move || {
                d.fetch_add(1, Ordering::SeqCst);
            }),
    );
    let m = b.build().unwrap();
    let m2 = m.clone();
    drop(m);
    assert_eq!(done.load(Ordering::SeqCst), 0);
    drop(m2);
    assert_eq!(done.load(Ordering::SeqCst), 1);
}
