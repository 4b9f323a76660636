//! rge CPU kernels: the com.microsoft ops that onnxruntime's quantization and transformer
//! tools emit (fused activations and normalizations, attention, fused convolutions and matrix
//! products, the 8-bit quantized ops, block-quantized weights, the quantized LSTM), the
//! com.microsoft.nchwc blocked-layout ops of models onnxruntime saved, and
//! SimplifiedLayerNormalization, which onnxruntime defines in the default domain. Where an op is
//! an ONNX op plus a fused step, the default domain's kernel does the ONNX part (`inner`).

// Index loops mirror the reference formulas (several arrays per index).
#![allow(clippy::needless_range_loop)]

mod attention;
mod fused;
mod gelu;
mod gqa;
mod inner;
mod lstm;
mod nchwc;
mod norm;
mod qlinear;
mod qmatmul;
mod rotary;
mod util;

use rge_kernels::{KernelFactory, KernelRegistryBuilder, KernelResult, ONNX_DOMAIN};

/// The com.microsoft domain.
pub const MS_DOMAIN: &str = "com.microsoft";

/// Every com.microsoft op of this family and its kernel factory.
const KERNELS: &[(&str, KernelFactory)] = &[
    ("Gelu", gelu::gelu),
    ("FastGelu", gelu::fast_gelu),
    ("BiasGelu", gelu::bias_gelu),
    ("QuickGelu", gelu::quick_gelu),
    ("BiasAdd", gelu::bias_add),
    ("BiasSplitGelu", gelu::bias_split_gelu),
    ("SkipLayerNormalization", norm::skip_layer_norm),
    (
        "SkipSimplifiedLayerNormalization",
        norm::skip_simplified_layer_norm,
    ),
    ("EmbedLayerNormalization", norm::embed_layer_norm),
    ("Attention", attention::attention),
    ("MultiHeadAttention", attention::multi_head_attention),
    ("GroupQueryAttention", gqa::group_query_attention),
    ("RotaryEmbedding", rotary::rotary_embedding),
    ("FusedConv", fused::fused_conv),
    ("NhwcConv", fused::nhwc_conv),
    ("FusedGemm", fused::fused_gemm),
    ("FusedMatMul", fused::fused_matmul),
    ("Trilu", fused::trilu),
    ("GatherND", fused::gather_nd),
    ("QuantizeLinear", qlinear::quantize_linear),
    ("DequantizeLinear", qlinear::dequantize_linear),
    ("QLinearAdd", qlinear::qlinear_add),
    ("QLinearMul", qlinear::qlinear_mul),
    ("QLinearSigmoid", qlinear::qlinear_sigmoid),
    ("QLinearLeakyRelu", qlinear::qlinear_leaky_relu),
    ("QLinearConcat", qlinear::qlinear_concat),
    (
        "QLinearGlobalAveragePool",
        qlinear::qlinear_global_average_pool,
    ),
    ("QLinearAveragePool", qlinear::qlinear_average_pool),
    ("QGemm", qmatmul::qgemm),
    ("DynamicQuantizeMatMul", qmatmul::dynamic_quantize_matmul),
    ("MatMulIntegerToFloat", qmatmul::matmul_integer_to_float),
    ("MatMulNBits", qmatmul::matmul_nbits),
    ("DynamicQuantizeLSTM", lstm::dynamic_quantize_lstm),
];

/// onnxruntime's blocked-layout domain (models it saved at its default optimization level).
pub const NCHWC_DOMAIN: &str = "com.microsoft.nchwc";

/// The com.microsoft.nchwc ops and their kernel factories.
const NCHWC_KERNELS: &[(&str, KernelFactory)] = &[
    ("Conv", nchwc::conv),
    ("MaxPool", nchwc::max_pool),
    ("AveragePool", nchwc::average_pool),
    ("GlobalMaxPool", nchwc::global_max_pool),
    ("GlobalAveragePool", nchwc::global_average_pool),
    ("Upsample", nchwc::upsample),
    ("ReorderInput", nchwc::reorder_input),
    ("ReorderOutput", nchwc::reorder_output),
];

/// Registers this family's kernels.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    for &(op, factory) in KERNELS {
        b.register(MS_DOMAIN, op, factory)?;
    }
    b.register(
        ONNX_DOMAIN,
        "SimplifiedLayerNormalization",
        norm::simplified_layer_norm,
    )?;
    for &(op, factory) in NCHWC_KERNELS {
        b.register(NCHWC_DOMAIN, op, factory)?;
    }
    Ok(())
}
