//! The `cpu_tf` engine (the seed's DNN_VM_AICPU, GE's "AI CPU TF" with kernel library
//! `aicpu_tf_kernel`, cost 4, device runtime, attach): its kernel definitions, one per TF op
//! type in domain `tf` and — for the names ONNX does not use — in the default domain too.

use std::sync::Arc;

use rge_engine::{BasicEngine, EngineResult, KernelStore};
use rge_kernels::{Kernel, KernelDef, KernelInit, KernelRegistry, KernelResult, KernelSet};
use rge_ops::ops::tf::{DEFAULT_DOMAIN_OPS, TF_DOMAIN};

use crate::steps::Steps;
use crate::{array, math, nn, pad};

/// The engine's name.
pub const CPU_TF: &str = "cpu_tf";

type Factory = fn(&Steps, &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>>;

/// Every TF-dialect op type and its kernel factory.
pub const KERNELS: &[(&str, Factory)] = &[
    ("Conv2D", nn::create_conv2d),
    ("DepthwiseConv2dNative", nn::create_conv2d),
    ("AvgPool", nn::create_pool),
    ("MaxPool", nn::create_pool),
    ("BiasAdd", nn::create_bias_add),
    ("FusedBatchNorm", nn::create_fused_batch_norm),
    ("FusedBatchNormV3", nn::create_fused_batch_norm),
    ("Relu", nn::create_activation),
    ("Relu6", nn::create_activation),
    ("Elu", nn::create_activation),
    ("Selu", nn::create_activation),
    ("LeakyRelu", nn::create_activation),
    ("Softmax", nn::create_activation),
    ("MatMul", nn::create_matmul),
    ("MatMulV2", nn::create_matmul),
    ("BatchMatMul", nn::create_matmul),
    ("BatchMatMulV2", nn::create_matmul),
    ("Add", math::create_arith),
    ("AddV2", math::create_arith),
    ("Sub", math::create_arith),
    ("Mul", math::create_arith),
    ("Div", math::create_arith),
    ("RealDiv", math::create_arith),
    ("FloorDiv", math::create_arith),
    ("FloorMod", math::create_arith),
    ("SquaredDifference", math::create_arith),
    ("Maximum", math::create_arith),
    ("Minimum", math::create_arith),
    ("Pow", math::create_arith),
    ("Rsqrt", math::create_arith),
    ("Square", math::create_arith),
    ("Sqrt", math::create_arith),
    ("Exp", math::create_arith),
    ("Log", math::create_arith),
    ("Neg", math::create_arith),
    ("Abs", math::create_arith),
    ("Tanh", math::create_arith),
    ("Sigmoid", math::create_arith),
    ("Mean", math::create_reduce),
    ("Sum", math::create_reduce),
    ("Max", math::create_reduce),
    ("Min", math::create_reduce),
    ("Prod", math::create_reduce),
    ("Pad", pad::create_pad),
    ("PadV2", pad::create_pad),
    ("MirrorPad", pad::create_pad),
    ("ConcatV2", array::create_array),
    ("Pack", array::create_array),
    ("Unpack", array::create_array),
    ("StridedSlice", array::create_array),
    ("Cast", array::create_array),
    ("Transpose", array::create_array),
    ("Tile", array::create_array),
    ("GatherV2", array::create_array),
    ("ExpandDims", array::create_array),
    ("Squeeze", array::create_array),
    ("Reshape", array::create_array),
    ("Shape", array::create_array),
    ("Fill", array::create_array),
    ("Range", array::create_array),
    ("Select", array::create_array),
    ("SelectV2", array::create_array),
    ("ResizeBilinear", array::create_array),
    ("ResizeNearestNeighbor", array::create_array),
];

/// The engine's kernel definitions over `onnx`, the cpu engine's kernel families (whose
/// kernels the TF kernels run as steps).
pub fn kernel_set(onnx: &KernelRegistry) -> KernelSet {
    let steps = Arc::new(Steps::new(onnx.clone()));
    let mut set = KernelSet::new();
    for &(op, factory) in KERNELS {
        let mut domains = vec![TF_DOMAIN];
        if DEFAULT_DOMAIN_OPS.contains(&op) {
            domains.push("");
        }
        for d in domains {
            let steps = Arc::clone(&steps);
            let name = if d.is_empty() {
                format!("{CPU_TF}.{op}")
            } else {
                format!("{CPU_TF}.{d}.{op}")
            };
            set.add(
                KernelDef::new(name, op, move |init: &KernelInit<'_>| factory(&steps, init))
                    .domain(d),
            );
        }
    }
    set
}

/// The cpu_tf engine: the standard attributes (cost 4, device runtime, attach) and the TF
/// kernels over `onnx`.
pub fn cpu_tf_engine(onnx: &KernelRegistry) -> EngineResult<BasicEngine> {
    let engine = BasicEngine::standard(CPU_TF).ok_or_else(|| rge_engine::EngineError::Invalid {
        engine: CPU_TF.into(),
        message: "not in the standard engine table".into(),
    })?;
    Ok(engine.with_store(KernelStore::new(
        CPU_TF,
        "aicpu_tf_kernel",
        4,
        kernel_set(onnx),
    )))
}
