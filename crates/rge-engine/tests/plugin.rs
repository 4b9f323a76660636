//! Loads the example plugin (`crates/rge-engine-example-plugin`) through the C ABI.

use std::path::PathBuf;

mod common;
use common::plugin_path;

use rge_engine::{
    load_engine_plugin, load_engine_plugin_with_entry, EngineError, EngineOptions, OpTypes,
    RuntimeType, Support,
};
use rge_ir::{ComputeGraph, DataType, OpDesc, Shape, TensorDesc};

fn f32_desc() -> TensorDesc {
    TensorDesc::with_shape_dtype(Shape::new([2, 4]), DataType::Float)
}

#[test]
fn example_plugin_loads_and_answers() {
    let engines = load_engine_plugin(&plugin_path(), &EngineOptions::new()).unwrap();
    assert_eq!(engines.len(), 1);
    let e = &engines[0];
    assert_eq!(e.name(), "example");
    assert_eq!(e.attributes().compute_cost, 6);
    assert_eq!(e.attributes().runtime, RuntimeType::Device);
    assert!(e.scheduling().attach && !e.scheduling().independent);
    let store = e.kernel_store().unwrap();
    assert_eq!(store.kernel_lib_name(), "example_kernel_store");
    assert_eq!(
        store.op_types(),
        OpTypes::Listed(vec!["ExampleOp".into(), "Relu".into()])
    );
    assert!(store.op_info("Add").is_none());
    assert!(store.op_info("Relu").unwrap().flag_async);

    let relu = OpDesc::new("r", "Relu")
        .with_input("x", f32_desc())
        .with_output("y", f32_desc());
    assert_eq!(store.check_supported(&relu), Support::Yes);
    let relu16 = OpDesc::new("r", "Relu").with_input(
        "x",
        TensorDesc::with_shape_dtype(Shape::new([2]), DataType::Float16),
    );
    assert_eq!(
        store.check_supported(&relu16),
        Support::No("example: Relu only for DT_FLOAT inputs".into())
    );

    // Optimizer and builder through the ABI.
    let mut g = ComputeGraph::new("g");
    let x = g
        .add_root_node(OpDesc::new("x", "ExampleOp").with_output("y", f32_desc()))
        .unwrap();
    let r = g.add_root_node(relu).unwrap();
    g.add_edge(x, 0, r, 0).unwrap();
    e.graph_optimizer()
        .unwrap()
        .optimize_fused_graph(&mut g)
        .unwrap();
    assert_eq!(
        g.op(r).unwrap().attrs().get_int("_example_fused").unwrap(),
        Some(2)
    );
    let b = e.kernel_builder().unwrap();
    let params = b.calc_running_params(&g, r).unwrap();
    assert_eq!(params.output_sizes, [32]);
    assert_eq!(params.workspace, [64]);
    let k = b.generate_kernel(&g, r, &params).unwrap();
    assert_eq!(k.engine(), "example");
    let task = k
        .as_any()
        .downcast_ref::<rge_engine::PluginKernel>()
        .unwrap();
    assert_eq!(task.task, b"example-task:r");
    e.kernel_store().unwrap().compile_ops(&mut g, &[x]).unwrap();
    assert_eq!(
        g.op(x)
            .unwrap()
            .attrs()
            .get_bool("_example_compiled")
            .unwrap(),
        Some(true)
    );
}

#[test]
fn wrong_abi_version_is_refused() {
    let err = load_engine_plugin_with_entry(
        &plugin_path(),
        "rge_engine_plugin_entry_wrong_abi",
        &EngineOptions::new(),
    )
    .expect_err("must be refused");
    assert!(
        matches!(
            err,
            EngineError::AbiVersion {
                found: 999,
                expected: 1,
                ..
            }
        ),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("ABI version 999") && msg.contains("version 1"),
        "{msg}"
    );
}

#[test]
fn missing_entry_and_missing_file_are_clear_errors() {
    let err = load_engine_plugin_with_entry(&plugin_path(), "no_such_entry", &EngineOptions::new())
        .err()
        .unwrap();
    assert!(
        err.to_string().contains("no entry point `no_such_entry`"),
        "{err}"
    );
    let err = load_engine_plugin(
        &PathBuf::from("/nonexistent/libx.so"),
        &EngineOptions::new(),
    )
    .err()
    .unwrap();
    assert!(err.to_string().contains("/nonexistent/libx.so"), "{err}");
}
