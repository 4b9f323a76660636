//! Loads the example plugin (`crates/rge-engine-example-plugin`) through the C ABI.

use std::path::PathBuf;

mod common;
use common::plugin_path;

use rge_engine::{
    load_engine_plugin, load_engine_plugin_with_entry, op_domain, op_opset, Engine, EngineError,
    EngineOptions, OpTypes, RuntimeType, Support,
};
use rge_ir::{ComputeGraph, DataType, OpDesc, Shape, TensorDesc};
use rge_kernels::{port_types, run_owned, Kernel, KernelInit, KernelResult, Tensor, Value};

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
        OpTypes::Listed(vec![
            "ExampleOp".into(),
            "Fail".into(),
            "Panic".into(),
            "Relu".into()
        ])
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
        Support::No("input 0 has dtype FLOAT16; kernel `example.Relu` accepts FLOAT".into())
    );
    // The plugin's own check_supported still answers for attributes, and for listed types.
    let mut rejected = OpDesc::new("r", "Relu").with_input("x", f32_desc());
    rejected.attrs_mut().set("reject", true);
    assert_eq!(
        store.check_supported(&rejected),
        Support::No("example: attribute `reject` is set".into())
    );
    rejected.set_op_type("ExampleOp");
    assert_eq!(
        store.check_supported(&rejected),
        Support::No("example: attribute `reject` is set".into())
    );
    let mut old = OpDesc::new("r", "Relu").with_input("x", f32_desc());
    old.set_opset(Some(5));
    match store.check_supported(&old) {
        Support::No(r) => assert!(r.contains("serves opsets 6..=latest"), "{r}"),
        Support::Yes => panic!("Relu-5 has no kernel"),
    }

    // Optimizer and builder through the ABI.
    let mut g = ComputeGraph::new("g");
    let x = g
        .add_root_node(OpDesc::new("x", "ExampleOp").with_output("y", f32_desc()))
        .unwrap();
    let r = g.add_root_node(relu).unwrap();
    g.add_edge(x, 0, r, 0).unwrap();
    e.graph_optimizer()
        .unwrap()
        .optimize_fused_graph(&mut rge_engine::GraphRewriter::new(
            &mut g,
            "example",
            rge_engine::OptimizeStage::Fused,
        ))
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
                expected: 2,
                ..
            }
        ),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("ABI version 999") && msg.contains("version 2"),
        "{msg}"
    );
}

#[test]
fn version_1_plugin_is_refused() {
    let path = plugin_path();
    let err =
        load_engine_plugin_with_entry(&path, "rge_engine_plugin_entry_v1", &EngineOptions::new())
            .expect_err("a version-1 table must be refused");
    assert!(
        matches!(
            err,
            EngineError::AbiVersion {
                found: 1,
                expected: 2,
                ..
            }
        ),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains(&path.display().to_string())
            && msg.contains("ABI version 1, this rge speaks version 2"),
        "{msg}"
    );
}

#[test]
fn bad_kernel_dtype_name_is_refused() {
    let path = plugin_path();
    let err = load_engine_plugin_with_entry(
        &path,
        "rge_engine_plugin_entry_bad_kernels",
        &EngineOptions::new(),
    )
    .expect_err("an unknown dtype name must be refused");
    assert_eq!(
        err.to_string(),
        format!(
            "engine plugin `{}`: engine `example`: kernel `Relu`: input 0: unknown dtype \"FLOT\" \
             (ONNX names such as \"FLOAT\")",
            path.display()
        )
    );
}

fn example_engine() -> Box<dyn Engine> {
    let mut engines = load_engine_plugin(&plugin_path(), &EngineOptions::new()).unwrap();
    assert_eq!(engines.len(), 1);
    engines.remove(0)
}

/// An op of `domain` with one FLOAT input and output of shape [2, 3].
fn float_op(name: &str, op_type: &str, domain: &str) -> OpDesc {
    let d = TensorDesc::with_shape_dtype(Shape::new([2, 3]), DataType::Float);
    let mut op = OpDesc::new(name, op_type)
        .with_input("x", d.clone())
        .with_output("y", d);
    op.set_domain(domain);
    op.set_opset(Some(13));
    op
}

/// Builds `op`'s kernel the way the runtime does: the engine's store selects the definition,
/// whose factory makes the kernel.
fn build(engine: &dyn Engine, op: &OpDesc) -> KernelResult<Box<dyn Kernel>> {
    let set = engine.kernel_store().unwrap().kernel_set().unwrap();
    let def = set.select(op, op_domain(op), op_opset(op)).unwrap();
    let (inputs, outputs) = port_types(op);
    let init = KernelInit {
        node_name: op.name(),
        op_type: op.op_type(),
        domain: op_domain(op),
        opset: op_opset(op),
        attrs: op.attrs(),
        input_types: &inputs,
        output_types: &outputs,
        subgraph_attrs: &[],
        constants: &[],
    };
    (def.factory)(&init)
}

fn input() -> Value {
    Value::Tensor(Tensor::from_vec(&[2, 3], vec![-1.0f32, 2.0, -0.5, 0.0, 3.5, -7.0]).unwrap())
}

fn run_relu(k: &dyn Kernel) -> Vec<f32> {
    let x = input();
    let out = run_owned(k, &[Some(&x)], 1, 1, None).unwrap();
    let Some(Some(Value::Tensor(t))) = out.into_iter().next() else {
        panic!("Relu produced no tensor");
    };
    assert_eq!(t.shape(), [2, 3]);
    t.as_slice::<f32>().unwrap().to_vec()
}

#[test]
fn plugin_relu_kernel_runs() {
    let e = example_engine();
    let relu = float_op("r", "Relu", "");
    assert_eq!(
        e.kernel_store().unwrap().check_supported(&relu),
        Support::Yes
    );
    let k = build(e.as_ref(), &relu).unwrap();
    assert_eq!(run_relu(k.as_ref()), [0.0, 2.0, 0.0, 0.0, 3.5, 0.0]);
    // A second call, and one from another thread, on the same kernel.
    assert_eq!(run_relu(k.as_ref()), [0.0, 2.0, 0.0, 0.0, 3.5, 0.0]);
    std::thread::scope(|s| {
        s.spawn(|| assert_eq!(run_relu(k.as_ref())[1], 2.0));
    });
    // The kernel keeps the library loaded after its engine is gone.
    drop(e);
    assert_eq!(run_relu(k.as_ref())[4], 3.5);
}

#[test]
fn plugin_kernel_failure_and_panic_are_errors() {
    let e = example_engine();
    let path = plugin_path().display().to_string();
    let x = input();

    let fail = build(e.as_ref(), &float_op("f", "Fail", "com.rge.example")).unwrap();
    let err = run_owned(fail.as_ref(), &[Some(&x)], 1, 1, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "engine plugin `{path}`: kernel `example.Fail` failed in kernel_compute: Fail was asked to fail"
        )
    );

    let panic = build(e.as_ref(), &float_op("p", "Panic", "com.rge.example")).unwrap();
    let err = run_owned(panic.as_ref(), &[Some(&x)], 1, 1, None).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "engine plugin `{path}`: kernel `example.Panic` panicked in kernel_compute: Panic was asked to panic"
        )
    );
    // The process and the plugin carry on: the same kernel fails the same way again, and a
    // Relu built after the panic runs.
    assert!(run_owned(panic.as_ref(), &[Some(&x)], 1, 1, None).is_err());
    let relu = build(e.as_ref(), &float_op("r", "Relu", "")).unwrap();
    assert_eq!(run_relu(relu.as_ref()), [0.0, 2.0, 0.0, 0.0, 3.5, 0.0]);

    // The test ops are of their own domain only.
    let set = e.kernel_store().unwrap().kernel_set().unwrap();
    let plain = float_op("f", "Fail", "");
    assert_eq!(
        set.select(&plain, op_domain(&plain), 13).unwrap_err(),
        "no kernel for op type Fail"
    );
    assert!(!e.kernel_store().unwrap().check_supported(&plain).is_yes());
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
