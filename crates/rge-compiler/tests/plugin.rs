//! An engine plugin loaded through the C ABI, registered in the manager, and used by the
//! placer and the pipeline (optimizer, op compilation, running parameters, tasks).

mod common;

use common::*;
use rge_compiler::report::{engines_json, list_engines};
use rge_compiler::{CompileOptions, EngineManager, Pipeline};
use rge_engine::PluginKernel;
use rge_ir::{AttrValue, DataType};

fn plugin_manager() -> std::sync::Arc<EngineManager> {
    let mut b = EngineManager::builder();
    b.register(std_eng("dense", &["MatMul"]))
        .register(std_eng("local", &["Data", "NetOutput"]));
    b.load_plugin(&plugin_path()).unwrap();
    b.build().unwrap()
}

#[test]
fn plugin_engine_is_placed_and_compiled() {
    let m = plugin_manager();
    let rows = list_engines(&m);
    let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["custom", "dense", "example", "local"]);
    let j = engines_json(&rows);
    assert_eq!(j["engines"][2]["cost"], 6);
    assert_eq!(j["engines"][2]["attach"], true);
    assert_eq!(j["engines"][2]["op_types"], 4);

    let g = graph(&[
        ("x", "Data", &[]),
        ("mm", "MatMul", &["x", "x"]),
        ("e", "ExampleOp", &["mm"]),
        ("r", "Relu", &["e"]),
        ("out", "NetOutput", &["r"]),
    ]);
    // A Relu on float16 is refused by the plugin with its reason.
    let mut g16 = g.clone();
    let r16 = node(&g16, "r");
    g16.op_mut(r16)
        .unwrap()
        .input_mut(0)
        .unwrap()
        .set_dtype(DataType::Float16);
    let e = rge_compiler::place(&mut g16, &m, &CompileOptions::default()).unwrap_err();
    assert!(
        e.to_string().contains(
            "example: unsupported: input 0 has dtype FLOAT16; kernel `example.Relu` accepts FLOAT"
        ),
        "{e}"
    );

    let model = Pipeline::new(m, CompileOptions::default())
        .compile(g)
        .unwrap();
    let id = |n: &str| model.find(n).unwrap();
    assert_eq!(model.placement.engine(id("e")), Some("example"));
    assert_eq!(model.placement.engine(id("r")), Some("example"));
    let attrs = |n: &str| model.graph.op(id(n)).unwrap().attrs().clone();
    assert_eq!(
        attrs("e").get("_example_seen_original"),
        Some(&AttrValue::Bool(true))
    );
    // Both plugin nodes are one partition: the fused optimizer saw 2 nodes.
    assert_eq!(attrs("r").get("_example_fused"), Some(&AttrValue::Int(2)));
    assert_eq!(
        attrs("r").get("_example_compiled"),
        Some(&AttrValue::Bool(true))
    );
    assert_eq!(model.nodes[id("r")].params.workspace, [64]);
    let k = model.kernel(id("r")).unwrap();
    let task = k.as_any().downcast_ref::<PluginKernel>().unwrap();
    assert_eq!(task.task, b"example-task:r");
    // The plugin partition has a stream (attach engine after dense).
    assert!(model.node_streams[id("r")].is_some());
}

#[test]
fn bad_plugin_paths_are_clear_errors() {
    let mut b = EngineManager::builder();
    let e = b
        .load_plugin(std::path::Path::new("/nonexistent/librge_nothing.so"))
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .starts_with("engine plugin `/nonexistent/librge_nothing.so`"),
        "{e}"
    );
    let e = rge_engine::load_engine_plugin_with_entry(
        &plugin_path(),
        "rge_engine_plugin_entry_wrong_abi",
        &Default::default(),
    )
    .err()
    .unwrap();
    let e = rge_compiler::CompileError::from(e);
    assert!(
        e.to_string()
            .contains("ABI version 999, this rge speaks version 2"),
        "{e}"
    );
}

#[test]
fn duplicate_engine_names_are_refused() {
    let mut b = EngineManager::builder();
    b.register(std_eng("dense", &["MatMul"]))
        .register(eng("dense", 3, &["X"]));
    let e = b.build().unwrap_err();
    assert_eq!(
        e.to_string(),
        "engine registry: engine `dense` is registered twice"
    );
    let mut b = EngineManager::builder();
    b.register(std_eng("fused", &[]));
    let e = b.build().unwrap_err();
    assert!(
        e.to_string()
            .contains("names member `dense`, which is not registered"),
        "{e}"
    );
}
