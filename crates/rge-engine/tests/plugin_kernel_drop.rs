//! Kernels made by a plugin are destroyed through the ABI when dropped; in a process of its
//! own, since the plugin's count of live kernels is global to the process.

use rge_engine::{load_engine_plugin, op_domain, op_opset, EngineOptions};
use rge_ir::{DataType, OpDesc, Shape, TensorDesc};
use rge_kernels::{port_types, KernelInit};

mod common;
use common::plugin_path;

#[test]
fn dropped_plugin_kernels_are_destroyed() {
    let path = plugin_path();
    let engines = load_engine_plugin(&path, &EngineOptions::new()).unwrap();
    // SAFETY: loading the example plugin, which the host just loaded and initialized too.
    let lib = unsafe { libloading::Library::new(&path) }.unwrap();
    // SAFETY: the example plugin exports `rge_example_live_kernels` with this signature.
    let live: libloading::Symbol<unsafe extern "C" fn() -> usize> =
        unsafe { lib.get(b"rge_example_live_kernels\0") }.unwrap();
    // SAFETY: a plain counter read.
    let count = || unsafe { live() };
    assert_eq!(count(), 0);

    let d = TensorDesc::with_shape_dtype(Shape::new([4]), DataType::Float);
    let op = OpDesc::new("r", "Relu")
        .with_input("x", d.clone())
        .with_output("y", d);
    let set = engines[0].kernel_store().unwrap().kernel_set().unwrap();
    let def = set.select(&op, op_domain(&op), op_opset(&op)).unwrap();
    let (inputs, outputs) = port_types(&op);
    let init = KernelInit {
        node_name: op.name(),
        op_type: op.op_type(),
        domain: op_domain(&op),
        opset: op_opset(&op),
        attrs: op.attrs(),
        input_types: &inputs,
        output_types: &outputs,
        subgraph_attrs: &[],
        constants: &[],
    };
    let a = (def.factory)(&init).unwrap();
    let b = (def.factory)(&init).unwrap();
    assert_eq!(count(), 2);
    drop(a);
    assert_eq!(count(), 1);
    drop(engines);
    drop(b);
    assert_eq!(count(), 0);
}
