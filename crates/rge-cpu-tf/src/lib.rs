//! rge's `cpu_tf` engine (the seed's DNN_VM_AICPU "AI CPU TF", cost 4): kernels for the
//! TensorFlow dialect of GE graphs — the op types GE's TF parser leaves (Conv2D with
//! `data_format`, BiasAdd, FusedBatchNorm, StridedSlice with its masks, ConcatV2, Mean with
//! `keep_dims`…), whose prototypes are `rge_ops::ops::tf`. See `docs/cpu-tf-engine.md`.
//!
//! Most kernels convert TF's attributes and layouts and then run the cpu engine's ONNX
//! kernels as steps ([`steps::Steps`]): Conv2D is transposes around ONNX Conv with explicit
//! pads, Mean is ReduceMean with `noop_with_empty_axes`, StridedSlice is ONNX Slice and a
//! reshape. What ONNX has no kernel for (FusedBatchNorm's outputs, Relu6, FloorDiv/FloorMod,
//! the TF pads, Range) is computed here.

pub mod array;
pub mod engine;
pub mod math;
pub mod nn;
pub mod pad;
pub mod steps;

pub use engine::{cpu_tf_engine, kernel_set, CPU_TF};
