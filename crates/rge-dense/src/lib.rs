//! rge's `dense` engine core (the counterpart of Ascend's AI Core): a blocked, prepacked SIMD
//! GEMM with fused epilogues, dispatched at run time to AVX-512, AVX2+FMA or a portable scalar
//! path (see `docs/dense.md`).

#[cfg(target_endian = "big")]
compile_error!(
    "rge-dense's packed-operand format is little-endian; big-endian targets are not supported"
);

pub mod attention;
mod conv_few_pixels;
pub mod conv_nhwc;
pub mod conv_prologue;
pub mod conv_transpose;
pub mod depthwise;
pub mod depthwise_blocked;
pub mod depthwise_nhwc;
pub mod direct_nhwc;
pub mod einsum;
pub mod engine;
pub mod fuse;
pub mod fuse_transpose;
mod gather;
pub mod gemm;
mod im2col;
pub mod kernels;
pub mod layout;
pub mod pool_nhwc;
mod prologue_fold;
pub mod recurrent;
mod shared_out;
#[cfg(test)]
mod test_values;
pub mod transdata;
pub mod winograd;
pub mod winograd_nhwc;

pub use engine::{dense_engine, dense_engine_with, kernel_set, DENSE};
