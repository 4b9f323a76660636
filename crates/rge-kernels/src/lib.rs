//! rge kernel core: runtime element types, tensors and values, the kernel interface and the
//! kernel registry. Kernel families live in their own crates (`rge-kernels-*`) and register
//! into a [`KernelRegistryBuilder`]; the runtime builds one [`Kernel`] per node and calls it
//! with a [`KernelCtx`] that lends inputs and takes outputs (planned arena memory or owned
//! buffers).

pub mod buffer;
pub mod convert;
pub mod def;
mod dispatch;
pub mod dtype;
pub mod elem;
pub mod error;
pub mod kernel;
pub mod parts;
pub mod registry;
pub mod shape_util;
pub mod tensor;
pub mod value;

pub use buffer::Buffer;
pub use convert::{tensor_from_ir, tensor_to_ir};
pub use def::{
    port_types, DefCheck, DefFactory, DefPrepare, KernelDef, KernelSet, MemSpace, PortDef, TypeSet,
    HOST_SPACE,
};
pub use dtype::DType;
pub use elem::{as_bytes, Elem};
pub use error::{KernelError, KernelResult};
pub use half::{bf16, f16};
pub use kernel::{
    run_owned, Kernel, KernelCtx, KernelInit, OutputSink, OwnedOutputs, SubgraphRunner,
};
pub use ndarray;
pub use registry::{KernelFactory, KernelRegistry, KernelRegistryBuilder, ONNX_DOMAIN};
pub use tensor::{element_count, DataRef, Dims, Tensor, TensorData, TensorRef};
pub use value::{MapValue, Value, ValueRef};
