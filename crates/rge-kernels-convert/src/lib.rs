//! rge CPU kernels: convert ops — casts (Cast, CastLike, BitCast), quantization
//! (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear), reductions (Reduce*, ArgMax,
//! ArgMin), scans (CumSum, CumProd) and normalizations (Softmax, LogSoftmax, Hardmax,
//! LpNormalization, MeanVarianceNormalization).

use rge_kernels::{KernelRegistryBuilder, KernelResult, ONNX_DOMAIN};

mod acc;
mod arg;
pub mod cast;
mod cumulative;
mod normalize;
pub mod num;
mod plan;
mod quantize;
mod reduce;
pub mod small_float;
mod softmax;
pub mod strings;
mod util;

/// Registers this family's kernels.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    b.register(ONNX_DOMAIN, "Cast", cast::cast_factory)?;
    b.register(ONNX_DOMAIN, "CastLike", cast::cast_like_factory)?;
    b.register(ONNX_DOMAIN, "BitCast", cast::bitcast_factory)?;
    for op in reduce::OP_TYPES {
        b.register(ONNX_DOMAIN, op, reduce::factory)?;
    }
    b.register(ONNX_DOMAIN, "QuantizeLinear", quantize::quantize_factory)?;
    b.register(
        ONNX_DOMAIN,
        "DequantizeLinear",
        quantize::dequantize_factory,
    )?;
    b.register(
        ONNX_DOMAIN,
        "DynamicQuantizeLinear",
        quantize::dynamic_factory,
    )?;
    b.register(ONNX_DOMAIN, "ArgMax", arg::factory)?;
    b.register(ONNX_DOMAIN, "ArgMin", arg::factory)?;
    b.register(ONNX_DOMAIN, "CumSum", cumulative::factory)?;
    b.register(ONNX_DOMAIN, "CumProd", cumulative::factory)?;
    for op in ["Softmax", "LogSoftmax", "Hardmax"] {
        b.register(ONNX_DOMAIN, op, softmax::factory)?;
    }
    b.register(ONNX_DOMAIN, "LpNormalization", normalize::lp_factory)?;
    b.register(
        ONNX_DOMAIN,
        "MeanVarianceNormalization",
        normalize::mvn_factory,
    )?;
    Ok(())
}
