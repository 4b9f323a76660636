//! The `dense` engine (the seed's AIcoreEngine, cost 1): its attributes, kernel definitions
//! and optimizer. It claims f32 MatMul, Gemm, 1-D/2-D Conv, 1-D/2-D/3-D ConvTranspose, Einsum's
//! GEMM patterns (every padding mode, groups, depthwise, dilations), f32 Attention (its heads'
//! GEMMs and softmax; KV caches stay on `cpu`) and the forms its optimizer
//! makes (`ai.rge` FusedConv and FusedMatMul; in channels-last regions FusedConvNhwc,
//! MaxPoolNhwc and AveragePoolNhwc); everything else falls to the next engine by cost (`cpu`,
//! the reference).

use rge_engine::{
    BasicEngine, EngineAttributes, EngineKind, EngineResult, KernelStore, RuntimeType,
};
use rge_ir::OpDesc;
use rge_kernels::{DType, KernelDef, KernelSet, PortDef, TypeSet};

use crate::fuse::{DenseFusion, RGE_DOMAIN};
use crate::{attention, conv_transpose, einsum, kernels};

/// The engine's name.
pub const DENSE: &str = "dense";

fn f32_only() -> TypeSet {
    TypeSet::of(&[DType::Float])
}

/// Conv that the dense kernels run: 1-D or 2-D (weights of rank 3 or 4), f32.
fn conv_2d(op: &OpDesc) -> Result<(), String> {
    match op.input(1).and_then(|d| d.shape().rank()) {
        Some(3 | 4) => Ok(()),
        Some(r) => Err(format!(
            "dense runs 1-D and 2-D convolutions; the weights have rank {r}"
        )),
        None => Err("the weights' rank is unknown".into()),
    }
}

/// FusedConvNhwc that the dense kernel runs: 2-D, ungrouped or depthwise.
fn conv_nhwc(op: &OpDesc) -> Result<(), String> {
    let group = op.attrs().get_int("group").ok().flatten().unwrap_or(1);
    match op.input(1).map(|d| d.shape().dims().to_vec()) {
        Some(w) if crate::conv_nhwc::supported_grouping(&w, group) => Ok(()),
        Some(w) => Err(format!(
            "channels-last convolutions are 2-D, ungrouped or depthwise: weights {w:?}, group {group}"
        )),
        None => Err("the weights' shape is unknown".into()),
    }
}

/// Transpose that the dense kernel runs: a 4-D layout conversion between NCHW and NHWC.
fn transdata(op: &OpDesc) -> Result<(), String> {
    let perm = match op.attrs().get("perm") {
        Some(rge_ir::AttrValue::ListInt(p)) => p.clone(),
        _ => return Err("dense transposes only with an explicit perm".into()),
    };
    if !crate::transdata::supported_perm(&perm) {
        return Err(format!(
            "dense transposes between NCHW and NHWC only; perm {perm:?}"
        ));
    }
    match op.input(0).and_then(|d| d.shape().rank()) {
        Some(4) => Ok(()),
        r => Err(format!("a layout conversion of rank {r:?}")),
    }
}

/// ConvTranspose that the dense kernel runs: weights of rank 3 or more (1-D, 2-D, 3-D).
fn conv_transpose_nd(op: &OpDesc) -> Result<(), String> {
    match op.input(1).and_then(|d| d.shape().rank()) {
        Some(r) if r >= 3 => Ok(()),
        Some(r) => Err(format!("ConvTranspose weights of rank {r}")),
        None => Err("the weights' rank is unknown".into()),
    }
}

/// The dense engine's kernel definitions.
pub fn kernel_set() -> KernelSet {
    let mut set = KernelSet::new();
    let ports = |n: usize| vec![PortDef::types(f32_only()); n];
    set.add(
        KernelDef::new("dense.MatMul", "MatMul", kernels::create_matmul)
            .with_prepare(kernels::prepare_matmul)
            .inputs(ports(2))
            .outputs(ports(1)),
    );
    set.add(
        KernelDef::new("dense.Gemm", "Gemm", kernels::create_gemm)
            .with_prepare(kernels::prepare_gemm)
            .inputs(ports(3))
            .outputs(ports(1)),
    );
    set.add(
        KernelDef::new("dense.Conv", "Conv", kernels::create_conv)
            .with_prepare(kernels::prepare_conv)
            .inputs(ports(3))
            .outputs(ports(1))
            .with_check(conv_2d),
    );
    set.add(
        KernelDef::new(
            "dense.ConvTranspose",
            "ConvTranspose",
            conv_transpose::create_conv_transpose,
        )
        .with_prepare(conv_transpose::prepare_conv_transpose)
        .inputs(ports(3))
        .outputs(ports(1))
        .with_check(conv_transpose_nd),
    );
    set.add(
        KernelDef::new("dense.Einsum", "Einsum", einsum::create_einsum)
            .inputs(ports(2))
            .outputs(ports(1))
            .with_check(einsum::check),
    );
    set.add(
        KernelDef::new("dense.FusedConv", "FusedConv", kernels::create_conv)
            .with_prepare(kernels::prepare_conv)
            .domain(RGE_DOMAIN)
            .inputs(ports(4))
            .outputs(ports(1))
            .with_check(conv_2d),
    );
    set.add(
        KernelDef::new(
            "dense.FusedConvNhwc",
            crate::layout::CONV_NHWC,
            crate::conv_nhwc::create_conv_nhwc,
        )
        .with_prepare(crate::conv_nhwc::prepare_conv_nhwc)
        .domain(RGE_DOMAIN)
        .inputs(ports(4))
        .outputs(ports(1))
        .with_check(conv_nhwc),
    );
    for op in [
        crate::pool_nhwc::MAX_POOL_NHWC,
        crate::pool_nhwc::AVG_POOL_NHWC,
    ] {
        set.add(
            KernelDef::new(
                format!("dense.{op}"),
                op,
                crate::pool_nhwc::create_pool_nhwc,
            )
            .domain(RGE_DOMAIN)
            .inputs(ports(1))
            .outputs(ports(1)),
        );
    }
    set.add(
        KernelDef::new(
            "dense.TransData",
            "Transpose",
            crate::transdata::create_transdata,
        )
        .inputs(ports(1))
        .outputs(ports(1))
        .with_check(transdata),
    );
    // The recurrent nets: X, W, R, B, sequence_lens (int32), initial_h[, initial_c, P].
    let recurrent_inputs = |n: usize| {
        let mut v = ports(n);
        v[4] = PortDef::types(TypeSet::of(&[DType::Int32]));
        v
    };
    for (op, inputs, outputs) in [("RNN", 6, 2), ("GRU", 6, 2), ("LSTM", 8, 3)] {
        set.add(
            KernelDef::new(
                format!("dense.{op}"),
                op,
                crate::recurrent::create_recurrent,
            )
            .inputs(recurrent_inputs(inputs))
            .outputs(ports(outputs)),
        );
    }
    // Attention: Q, K, V (f32), attn_mask (bool or additive f32); the check keeps KV caches,
    // grouped heads and the extra outputs on cpu.
    let mut attention_inputs = ports(3);
    attention_inputs.push(PortDef::types(TypeSet::of(&[DType::Float, DType::Bool])));
    set.add(
        KernelDef::new("dense.Attention", "Attention", attention::create_attention)
            .opsets(23, i64::MAX)
            .inputs(attention_inputs)
            .outputs(ports(1))
            .with_check(attention::check_attention),
    );
    set.add(
        KernelDef::new("dense.FusedMatMul", "FusedMatMul", kernels::create_matmul)
            .with_prepare(kernels::prepare_matmul)
            .domain(RGE_DOMAIN)
            .inputs(ports(4))
            .outputs(ports(1)),
    );
    set
}

/// The dense engine: cost 1, device runtime (GE's AI Core), host memory (rge's counterpart
/// runs on the CPU), its kernels and its fusion optimizer, channels-last regions included.
pub fn dense_engine() -> EngineResult<BasicEngine> {
    dense_engine_with(true)
}

/// [`dense_engine`], with channels-last regions only when `channels_last` (pass false when an
/// engine placed before dense runs convolutions: their NHWC form would keep them off it).
pub fn dense_engine_with(channels_last: bool) -> EngineResult<BasicEngine> {
    let engine = match BasicEngine::standard(DENSE) {
        Some(e) => e,
        None => BasicEngine::new(EngineAttributes {
            name: DENSE.into(),
            mem_types: vec!["HBM".into()],
            compute_cost: 1,
            runtime: RuntimeType::Device,
            input_format: rge_ir::Format::RESERVED,
            output_format: rge_ir::Format::RESERVED,
            kind: EngineKind::Atomic,
        }),
    };
    Ok(engine
        .with_store(KernelStore::new(DENSE, "dense_kernels", 1, kernel_set()))
        .with_optimizer(DenseFusion {
            enabled: true,
            channels_last,
        }))
}
