//! The `rng` engine (the seed's DSAEngine, cost 2): its attributes and kernel definitions.
//! It claims the random generators and training-mode Dropout (opset 12+, with a
//! `training_mode` input); inference Dropout stays with the engines after it (the identity).

use rge_engine::{
    BasicEngine, EngineAttributes, EngineKind, EngineResult, KernelStore, RuntimeType,
};
use rge_ir::{DataType, OpDesc};
use rge_kernels::{DType, KernelDef, KernelSet, PortDef, TypeSet};

use crate::kernels;

/// The engine's name.
pub const RNG: &str = "rng";

fn floats() -> TypeSet {
    TypeSet::of(&[DType::Float, DType::Double, DType::Float16, DType::Bfloat16])
}

fn numeric_bool() -> TypeSet {
    TypeSet::of(&[
        DType::Float,
        DType::Double,
        DType::Float16,
        DType::Bfloat16,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::Uint8,
        DType::Uint16,
        DType::Uint32,
        DType::Uint64,
        DType::Bool,
    ])
}

/// Dropout that may train: one with a `training_mode` input (opset 12+; older Dropouts, whose
/// training flag is `is_test`, stay on cpu).
fn training_dropout(op: &OpDesc) -> Result<(), String> {
    let has_mode = op
        .input(2)
        .is_some_and(|d| d.dtype() != DataType::Undefined);
    if has_mode {
        Ok(())
    } else {
        Err("inference Dropout (no training_mode input) is the identity; rng runs training-mode Dropout".into())
    }
}

/// The rng engine's kernel definitions.
pub fn kernel_set() -> KernelSet {
    let mut set = KernelSet::new();
    let f = || PortDef::types(floats());
    set.add(
        KernelDef::new(
            "rng.RandomUniform",
            "RandomUniform",
            kernels::create_random_uniform,
        )
        .outputs(vec![f()]),
    );
    set.add(
        KernelDef::new(
            "rng.RandomNormal",
            "RandomNormal",
            kernels::create_random_normal,
        )
        .outputs(vec![f()]),
    );
    set.add(
        KernelDef::new(
            "rng.RandomUniformLike",
            "RandomUniformLike",
            kernels::create_random_uniform_like,
        )
        .outputs(vec![f()]),
    );
    set.add(
        KernelDef::new(
            "rng.RandomNormalLike",
            "RandomNormalLike",
            kernels::create_random_normal_like,
        )
        .outputs(vec![f()]),
    );
    set.add(
        KernelDef::new("rng.Bernoulli", "Bernoulli", kernels::create_bernoulli)
            .inputs(vec![f()])
            .outputs(vec![PortDef::types(numeric_bool())]),
    );
    set.add(
        KernelDef::new(
            "rng.Multinomial",
            "Multinomial",
            kernels::create_multinomial,
        )
        .inputs(vec![f()])
        .outputs(vec![PortDef::types(TypeSet::of(&[
            DType::Int32,
            DType::Int64,
        ]))]),
    );
    set.add(
        KernelDef::new("rng.Dropout", "Dropout", kernels::create_dropout)
            .opsets(12, i64::MAX)
            .inputs(vec![f(), PortDef::ANY, PortDef::ANY])
            .outputs(vec![f(), PortDef::ANY])
            .with_check(training_dropout),
    );
    set
}

/// The rng engine: cost 2, device runtime (the seed's DSAEngine), its kernels.
pub fn rng_engine() -> EngineResult<BasicEngine> {
    let engine = match BasicEngine::standard(RNG) {
        Some(e) => e,
        None => BasicEngine::new(EngineAttributes {
            name: RNG.into(),
            mem_types: vec!["HBM".into()],
            compute_cost: 2,
            runtime: RuntimeType::Device,
            input_format: rge_ir::Format::RESERVED,
            output_format: rge_ir::Format::RESERVED,
            kind: EngineKind::Atomic,
        }),
    };
    Ok(engine.with_store(KernelStore::new(RNG, "rng_kernels", 2, kernel_set())))
}
