//! The `vector` engine (the seed's VectorEngine, cost 2): its attributes and kernel
//! definitions. It claims f32 elementwise, normalization, reduction and pooling ops, each
//! kernel keeping the `cpu` engine's kernel of the same node for inputs it does not take; and
//! MatMul, Gemm and Conv (the reference kernels) so that with `ge.engineType = vector`, which
//! excludes `dense`, the matrix ops stay on a core engine. By default `dense` (cost 1) wins
//! those. Everything else falls to the next engine by cost (`cpu`).

use rge_engine::{
    BasicEngine, EngineAttributes, EngineKind, EngineResult, KernelStore, RuntimeType,
};
use rge_ir::OpDesc;
use rge_kernels::{
    DType, KernelDef, KernelError, KernelFactory, KernelRegistry, KernelRegistryBuilder,
    KernelResult, KernelSet, PortDef, TypeSet,
};

use crate::elementwise::{self, BINARY_OPS, UNARY_OPS};
use crate::simd::Isa;
use crate::{norm, pool, reduce, resize};

/// The engine's name.
pub const VECTOR: &str = "vector";

/// The domain of rge's fused ops (`ai.rge`).
pub const FUSED_DOMAIN: &str = "ai.rge";

fn f32_only() -> PortDef {
    PortDef::types(TypeSet::of(&[DType::Float]))
}

/// The reference kernels the vector kernels fall back to (and the matrix ops run).
fn reference() -> KernelResult<KernelRegistry> {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_elementwise::register(&mut b)?;
    rge_kernels_nn::register(&mut b)?;
    rge_kernels_convert::register(&mut b)?;
    rge_kernels_misc::register(&mut b)?;
    Ok(b.build())
}

fn factory(reg: &KernelRegistry, op: &str) -> KernelResult<KernelFactory> {
    reg.get("", op).ok_or_else(|| {
        KernelError::unsupported(format!(
            "the reference kernels have no `{op}` to fall back to"
        ))
    })
}

/// Max and Min of exactly two inputs (the variadic forms stay with the reference).
fn two_inputs(op: &OpDesc) -> Result<(), String> {
    match op.input_count() {
        2 => Ok(()),
        n => Err(format!(
            "vector runs {} of two inputs; this one has {n}",
            op.op_type()
        )),
    }
}

/// The vector engine's kernel definitions, for the ISA `isa` (the best one by default).
pub fn kernel_set_for(isa: Isa) -> KernelResult<KernelSet> {
    let reg = reference()?;
    let mut set = matrix_kernels(&reg)?;
    for &op in UNARY_OPS {
        let r = factory(&reg, op)?;
        set.add(
            KernelDef::new(format!("vector.{op}"), op, move |i| {
                elementwise::create_unary(i, r, isa)
            })
            // One port that repeats: Clip's min and max are f32 too.
            .inputs(vec![f32_only()])
            .outputs(vec![f32_only()])
            .in_place(0, 0),
        );
    }
    for &op in BINARY_OPS {
        let r = factory(&reg, op)?;
        let mut def = KernelDef::new(format!("vector.{op}"), op, move |i| {
            elementwise::create_binary(i, r, isa)
        })
        // Opsets before 7 broadcast by `axis`: the reference's.
        .opsets(7, i64::MAX)
        .inputs(vec![f32_only(); 2])
        .outputs(vec![f32_only()]);
        if op == "Max" || op == "Min" {
            def = def.with_check(two_inputs);
        }
        set.add(def);
    }
    let r = factory(&reg, "Where")?;
    set.add(
        KernelDef::new("vector.Where", "Where", move |i| {
            elementwise::create_where(i, r)
        })
        .inputs(vec![
            PortDef::types(TypeSet::of(&[DType::Bool])),
            f32_only(),
            f32_only(),
        ])
        .outputs(vec![f32_only()]),
    );
    // The fused engine's one-pass elementwise trees (`ai.rge` FusedElementwise).
    set.add(
        KernelDef::new("vector.FusedElementwise", "FusedElementwise", move |i| {
            crate::fused::create_fused(i, isa)
        })
        .domain(FUSED_DOMAIN)
        .inputs(vec![f32_only()])
        .outputs(vec![f32_only()]),
    );
    norm::add_kernels(&mut set, &reg, isa)?;
    reduce::add_kernels(&mut set, &reg, isa)?;
    pool::add_kernels(&mut set, &reg, isa)?;
    resize::add_kernels(&mut set, factory(&reg, "Resize")?);
    Ok(set)
}

/// The matrix ops, for `ge.engineType = vector`: the reference kernels (f32).
fn matrix_kernels(reg: &rge_kernels::KernelRegistry) -> KernelResult<KernelSet> {
    let mut set = KernelSet::new();
    for op in ["MatMul", "Gemm", "Conv"] {
        let r = factory(reg, op)?;
        set.add(
            KernelDef::from_fn(format!("vector.{op}"), "", op, r)
                .all_inputs(TypeSet::of(&[DType::Float]))
                .all_outputs(TypeSet::of(&[DType::Float])),
        );
    }
    Ok(set)
}

/// The vector engine's kernel definitions on this machine's best ISA.
pub fn kernel_set() -> KernelResult<KernelSet> {
    kernel_set_for(Isa::best())
}

/// The vector engine: cost 2, device runtime (GE's Vector Core), its kernels.
pub fn vector_engine() -> EngineResult<BasicEngine> {
    let engine = vector_attrs();
    let set = kernel_set().map_err(|e| rge_engine::EngineError::Engine {
        engine: VECTOR.into(),
        message: e.to_string(),
    })?;
    Ok(engine.with_store(KernelStore::new(VECTOR, "vector_kernels", 2, set)))
}

/// The engine's attributes: the seed's VectorEngine row.
fn vector_attrs() -> BasicEngine {
    match BasicEngine::standard(VECTOR) {
        Some(e) => e,
        None => BasicEngine::new(EngineAttributes {
            name: VECTOR.into(),
            mem_types: vec!["HBM".into()],
            compute_cost: 2,
            runtime: RuntimeType::Device,
            input_format: rge_ir::Format::RESERVED,
            output_format: rge_ir::Format::RESERVED,
            kind: EngineKind::Atomic,
        }),
    }
}
