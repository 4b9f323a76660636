//! The runtime's own kernels: control flow (ONNX's If, Loop, Scan, SequenceMap; GE's While,
//! Case, PartitionedCall and their aliases), which run subgraphs through
//! `KernelCtx::run_subgraph`, and the local engine's view ops for when a view cannot be
//! planned (dynamic shapes, sequences): they copy.

mod control;
mod functional;
mod tensors;
mod views;

use rge_kernels::{KernelRegistry, KernelRegistryBuilder, ONNX_DOMAIN};

/// Op types the runtime has kernels for.
pub fn builtin_op_types() -> &'static [&'static str] {
    &[
        "If",
        "Loop",
        "Scan",
        "SequenceMap",
        "_If",
        "StatelessIf",
        "While",
        "_While",
        "StatelessWhile",
        "Case",
        "PartitionedCall",
        "StatefulPartitionedCall",
        "Identity",
        "Reshape",
        "Squeeze",
        "Unsqueeze",
        "Flatten",
    ]
}

/// The runtime's kernel registry.
pub fn builtin_kernels() -> KernelRegistry {
    let mut b = KernelRegistryBuilder::new();
    let regs: [(&str, rge_kernels::KernelFactory); 17] = [
        ("If", control::make_if),
        ("Loop", control::make_loop),
        ("Scan", control::make_scan),
        ("SequenceMap", control::make_sequence_map),
        ("_If", control::make_if),
        ("StatelessIf", control::make_if),
        ("While", functional::make_while),
        ("_While", functional::make_while),
        ("StatelessWhile", functional::make_while),
        ("Case", functional::make_case),
        ("PartitionedCall", functional::make_call),
        ("StatefulPartitionedCall", functional::make_call),
        ("Identity", views::make_view),
        ("Reshape", views::make_view),
        ("Squeeze", views::make_view),
        ("Unsqueeze", views::make_view),
        ("Flatten", views::make_view),
    ];
    for (t, f) in regs {
        // The names are distinct, so registration cannot fail.
        let _ = b.register(ONNX_DOMAIN, t, f);
    }
    b.build()
}
