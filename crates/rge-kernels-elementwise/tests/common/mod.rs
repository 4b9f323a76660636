//! Calls one kernel repeatedly the way a runtime does: inputs borrowed, the output written into
//! preallocated (planned) memory, so that only the kernel's own per-call work is measured.

use std::ptr::NonNull;

use rge_ir::AttrMap;
use rge_kernels::{
    element_count, DType, Kernel, KernelCtx, KernelError, KernelInit, KernelRegistryBuilder,
    KernelResult, OutputSink, Tensor, Value, ValueRef,
};

/// One planned output buffer (16-byte aligned).
pub struct Planned {
    buf: Vec<u128>,
    claimed: bool,
}

impl Planned {
    pub fn new(bytes: usize) -> Self {
        Planned {
            buf: vec![0; bytes.div_ceil(16).max(1)],
            claimed: false,
        }
    }
}

// SAFETY: the memory is 16-byte aligned, initialized, large enough (checked) and handed out once
// per call.
unsafe impl OutputSink for Planned {
    fn output_count(&self) -> usize {
        1
    }

    fn alloc(&mut self, index: usize, dtype: DType, shape: &[usize]) -> KernelResult<NonNull<u8>> {
        let n = element_count(shape).ok_or_else(|| KernelError::invalid("overflow"))?;
        if index != 0 || self.claimed || dtype.bytes_for(n) > self.buf.len() * 16 {
            return Err(KernelError::invalid("bad output request"));
        }
        self.claimed = true;
        NonNull::new(self.buf.as_mut_ptr().cast::<u8>()).ok_or_else(|| KernelError::invalid("null"))
    }

    fn put(&mut self, _: usize, _: Value) -> KernelResult<()> {
        Err(KernelError::invalid("put is not planned here"))
    }
}

/// A kernel of this family for `op` (opset 28, no attributes) over `inputs`.
pub fn kernel(op: &str, inputs: &[Tensor]) -> Box<dyn Kernel> {
    let mut b = KernelRegistryBuilder::new();
    rge_kernels_elementwise::register(&mut b).unwrap();
    let reg = b.build();
    let attrs = AttrMap::default();
    let types: Vec<Option<DType>> = inputs.iter().map(|t| Some(t.dtype())).collect();
    reg.create(&KernelInit {
        node_name: "n",
        op_type: op,
        domain: "",
        opset: 28,
        attrs: &attrs,
        input_types: &types,
        output_types: &[],
        subgraph_attrs: &[],
        constants: &[],
    })
    .unwrap()
}

/// Runs `kernel` once over `inputs` into `out`.
pub fn call(kernel: &dyn Kernel, inputs: &[Option<ValueRef<'_>>], out: &mut Planned) {
    out.claimed = false;
    let mut ctx = KernelCtx::new(inputs, out);
    kernel.compute(&mut ctx).unwrap();
}
