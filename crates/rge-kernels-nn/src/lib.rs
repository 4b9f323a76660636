//! rge CPU kernels: nn ops (matrix products, convolutions, pooling, normalizations, Einsum,
//! Dropout).

mod blas;
mod causal;
mod conv;
mod conv_transpose;
mod deform;
mod dropout;
mod einsum;
mod matmul;
mod norm;
mod pool;
mod roi;
mod util;

/// The sliding-window geometry (auto_pad, pads, strides, dilations) of Conv-like ops, shared
/// with the faster engines so their windows are exactly the reference's.
pub use conv_transpose::{col2im_add_f32, ConvTranspose, CtPlan};
pub use util::{AutoPad, Geometry, WindowAttrs, WindowTaps};

use rge_kernels::{KernelFactory, KernelRegistryBuilder, KernelResult, ONNX_DOMAIN};

/// Every op of this family (default ONNX domain) and its kernel factory.
const KERNELS: &[(&str, KernelFactory)] = &[
    ("MatMul", matmul::create_matmul),
    ("Gemm", matmul::create_gemm),
    ("MatMulInteger", matmul::create_matmul_integer),
    ("QLinearMatMul", matmul::create_qlinear_matmul),
    ("Conv", conv::create_conv),
    ("ConvInteger", conv::create_conv_integer),
    ("QLinearConv", conv::create_qlinear_conv),
    ("ConvTranspose", conv_transpose::create_conv_transpose),
    ("Col2Im", conv_transpose::create_col2im),
    ("DeformConv", deform::create_deform_conv),
    ("CausalConvWithState", causal::create_causal_conv),
    ("AveragePool", pool::create_average_pool),
    ("LpPool", pool::create_lp_pool),
    ("MaxPool", pool::create_max_pool),
    ("GlobalAveragePool", pool::create_global_average_pool),
    ("GlobalMaxPool", pool::create_global_max_pool),
    ("GlobalLpPool", pool::create_global_lp_pool),
    ("MaxUnpool", pool::create_max_unpool),
    ("MaxRoiPool", roi::create_max_roi_pool),
    ("RoiAlign", roi::create_roi_align),
    ("BatchNormalization", norm::create_batch_norm),
    ("InstanceNormalization", norm::create_instance_norm),
    ("LayerNormalization", norm::create_layer_norm),
    ("GroupNormalization", norm::create_group_norm),
    ("RMSNormalization", norm::create_rms_norm),
    ("LRN", norm::create_lrn),
    ("Dropout", dropout::create_dropout),
    ("Einsum", einsum::create_einsum),
];

/// Registers this family's kernels.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    for &(op, factory) in KERNELS {
        b.register(ONNX_DOMAIN, op, factory)?;
    }
    Ok(())
}
