//! Default-domain kernels run inside a com.microsoft kernel: most of these ops are an ONNX op
//! plus a fused step (FusedConv is Conv + an activation, QLinearAdd is Add between a
//! dequantize and a quantize), so they reuse the default domain's kernels instead of copies.

use std::sync::OnceLock;

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    run_owned, DType, Kernel, KernelError, KernelInit, KernelRegistry, KernelRegistryBuilder,
    KernelResult, Tensor, Value, ONNX_DOMAIN,
};

/// The default-domain kernel families the com.microsoft kernels build on.
fn families() -> &'static KernelRegistry {
    static REGISTRY: OnceLock<KernelRegistry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let mut b = KernelRegistryBuilder::new();
        // The families register disjoint op types (rge's tests/kernels.rs checks it).
        let ok = rge_kernels_elementwise::register(&mut b)
            .and_then(|_| rge_kernels_convert::register(&mut b))
            .and_then(|_| rge_kernels_nn::register(&mut b))
            .and_then(|_| rge_kernels_tensor::register(&mut b));
        debug_assert!(ok.is_ok(), "kernel families overlap: {ok:?}");
        b.build()
    })
}

/// One default-domain kernel, built for a node of a com.microsoft op.
pub(crate) struct Inner {
    kernel: Box<dyn Kernel>,
    outputs: usize,
}

/// Attributes for an inner kernel.
pub(crate) fn attrs(pairs: Vec<(&str, AttrValue)>) -> AttrMap {
    let mut m = AttrMap::default();
    for (k, v) in pairs {
        m.set(k, v);
    }
    m
}

impl Inner {
    /// The default-domain `op_type` kernel of opset `opset` with `attrs`, for inputs of the
    /// given types; `outer` names the com.microsoft node in errors.
    pub(crate) fn new(
        outer: &KernelInit<'_>,
        op_type: &str,
        opset: i64,
        attrs: &AttrMap,
        input_types: &[Option<DType>],
        outputs: usize,
    ) -> KernelResult<Self> {
        let output_types = vec![None; outputs];
        let constants = vec![None; input_types.len()];
        let init = KernelInit {
            node_name: outer.node_name,
            op_type,
            domain: ONNX_DOMAIN,
            opset,
            attrs,
            input_types,
            output_types: &output_types,
            subgraph_attrs: &[],
            constants: &constants,
        };
        let kernel = families().create(&init).map_err(|e| {
            KernelError::invalid(format!("{} (as its {op_type} part): {e}", outer.op_type))
        })?;
        Ok(Inner { kernel, outputs })
    }

    /// Runs the kernel on `inputs` (None: an absent optional input).
    pub(crate) fn run(
        &self,
        inputs: &[Option<&Value>],
        threads: usize,
    ) -> KernelResult<Vec<Value>> {
        let out = run_owned(self.kernel.as_ref(), inputs, self.outputs, threads, None)?;
        out.into_iter()
            .map(|v| v.ok_or_else(|| KernelError::invalid("an inner kernel left an output unset")))
            .collect()
    }

    /// Runs the kernel and returns its first output as a tensor.
    pub(crate) fn run1(&self, inputs: &[Option<&Value>], threads: usize) -> KernelResult<Tensor> {
        self.run(inputs, threads)?
            .into_iter()
            .next()
            .ok_or_else(|| KernelError::invalid("an inner kernel gave no output"))?
            .into_tensor()
    }
}
