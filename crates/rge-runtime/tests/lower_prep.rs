//! Kernels built around the sequential lowering pass (`lower_prep.rs`): a kernel that reads no
//! constant is built after its window, one that reads a constant in its turn; a factory error
//! names its node either way, and the first node in graph order is the one reported.

mod common;

use common::*;
use rge_compiler::CompileOptions;
use rge_engine::{BasicEngine, KernelStore};
use rge_kernels::{DType, KernelDef, KernelError, KernelSet, TypeSet};
use rge_runtime::{EngineSet, ExecutorKind, Session, SessionOptions};

/// An engine whose Relu and Add factories refuse, each with its own message, or (with `ok`)
/// build the cpu engine's kernels.
fn refusing_engine(relu_ok: bool, add_ok: bool) -> BasicEngine {
    let reg = kernels();
    let mut set = KernelSet::new();
    for (op, ok) in [("Relu", relu_ok), ("Add", add_ok)] {
        let cpu = reg.get("", op).expect("cpu kernel");
        set.add(
            KernelDef::new(format!("picky.{op}"), op, move |init| {
                if ok {
                    cpu(init)
                } else {
                    Err(KernelError::invalid(format!("{op} refused by picky")))
                }
            })
            .all_inputs(TypeSet::of(&[DType::Float]))
            .all_outputs(TypeSet::of(&[DType::Float])),
        );
    }
    BasicEngine::standard("dense")
        .unwrap()
        .with_store(KernelStore::new("dense", "picky_kernels", 1, set))
}

/// `relu = Relu(x)` (no constant input), then `add = Add(relu, c)` (a constant input).
fn model_with_constant() -> rge_formats::onnx_proto::ModelProto {
    model(
        graph(
            "m",
            vec![
                node("Relu", "relu", &["x"], &["r"]),
                node("Add", "add", &["r", "c"], &["y"]),
            ],
            vec![vi("x", F32, Some(&[2, 3]))],
            vec![vi("y", F32, Some(&[2, 3]))],
            vec![f32_tensor("c", &[2, 3], &[1.0; 6])],
        ),
        14,
    )
}

fn compile(engine: BasicEngine) -> Result<rge_runtime::Model, rge_runtime::RuntimeError> {
    let mut b = EngineSet::builder(rge_ops::OpRegistry::builtin());
    b.standard_engines(&kernels()).unwrap();
    b.register(engine);
    b.options(CompileOptions::default());
    let s = Session::new(SessionOptions::with_engines(b.build().unwrap())).unwrap();
    s.compile_graph(to_graph(&model_with_constant()))
}

#[test]
fn kernels_built_after_the_window_run_and_name_their_node_when_refused() {
    let m = compile(refusing_engine(true, true)).unwrap();
    let x = tensor(&[2, 3], vec![-1.0, 2.0, -3.0, 4.0, -5.0, 6.0]);
    let out = m
        .run_with(std::slice::from_ref(&x), ExecutorKind::Sequential, None)
        .unwrap();
    assert_eq!(floats(&out[0]), vec![1.0, 3.0, 1.0, 5.0, 1.0, 7.0]);

    // Relu reads no constant: its kernel is built after the window.
    let e = compile(refusing_engine(false, true))
        .unwrap_err()
        .to_string();
    assert!(e.contains("relu") && e.contains("Relu refused"), "{e}");
    // Add reads a constant: built in its turn.
    let e = compile(refusing_engine(true, false))
        .unwrap_err()
        .to_string();
    assert!(e.contains("add") && e.contains("Add refused"), "{e}");
    // Both refuse: the earlier node is reported, though its kernel is built later.
    let e = compile(refusing_engine(false, false))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("Relu refused") && !e.contains("Add refused"),
        "{e}"
    );
}
