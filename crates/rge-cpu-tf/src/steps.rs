//! The cpu engine's ONNX kernels as steps of a TF-dialect kernel: built from the kernel
//! families' registry with converted attributes, run over borrowed inputs into owned outputs.

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    DType, Kernel, KernelCtx, KernelError, KernelInit, KernelRegistry, KernelResult, OwnedOutputs,
    Tensor, TensorRef, Value, ValueRef,
};

/// The ONNX kernels a TF kernel may run (shared, cheap to clone).
#[derive(Clone)]
pub struct Steps {
    registry: KernelRegistry,
}

/// The opset the steps are built for (Reduce*, Pad, Slice take their axes as inputs).
pub const STEP_OPSET: i64 = 18;

impl Steps {
    pub fn new(registry: KernelRegistry) -> Self {
        Steps { registry }
    }

    /// The ONNX kernel `op_type` with `attrs`.
    pub fn kernel(&self, op_type: &str, attrs: Vec<(&str, AttrValue)>) -> KernelResult<Step> {
        let mut map = AttrMap::new();
        for (k, v) in attrs {
            map.set(k, v);
        }
        let init = KernelInit {
            node_name: op_type,
            op_type,
            domain: "",
            opset: STEP_OPSET,
            attrs: &map,
            input_types: &[],
            output_types: &[],
            subgraph_attrs: &[],
            constants: &[],
        };
        let f = self.registry.get("", op_type).ok_or_else(|| {
            KernelError::unsupported(format!("the cpu kernels have no {op_type}"))
        })?;
        Ok(Step { kernel: f(&init)? })
    }

    /// Builds and runs `op_type` once, returning output 0.
    pub fn run(
        &self,
        op_type: &str,
        attrs: Vec<(&str, AttrValue)>,
        inputs: &[Option<TensorRef<'_>>],
        threads: usize,
    ) -> KernelResult<Tensor> {
        self.kernel(op_type, attrs)?.run(inputs, threads)
    }

    /// ONNX Transpose of `x` by `perm`.
    pub fn transpose(
        &self,
        x: TensorRef<'_>,
        perm: &[i64],
        threads: usize,
    ) -> KernelResult<Tensor> {
        self.run(
            "Transpose",
            vec![("perm", AttrValue::ListInt(perm.to_vec()))],
            &[Some(x)],
            threads,
        )
    }
}

/// One built ONNX kernel.
pub struct Step {
    kernel: Box<dyn Kernel>,
}

impl Step {
    /// Runs the kernel; output 0 must be produced.
    pub fn run(&self, inputs: &[Option<TensorRef<'_>>], threads: usize) -> KernelResult<Tensor> {
        let refs: Vec<Option<ValueRef<'_>>> =
            inputs.iter().map(|t| t.map(ValueRef::Tensor)).collect();
        let mut sink = OwnedOutputs::new(1);
        {
            let mut ctx = KernelCtx::new(&refs, &mut sink).with_threads(threads);
            self.kernel.compute(&mut ctx)?;
        }
        match sink.into_values()?.into_iter().next().flatten() {
            Some(v) => v.into_tensor(),
            None => Err(KernelError::invalid("the step produced no output")),
        }
    }
}

/// A 1-D int64 tensor (the axes, pads and shapes ONNX steps take).
pub fn i64s(v: &[i64]) -> KernelResult<Tensor> {
    Tensor::from_slice(&[v.len()], v)
}

/// Puts `t` as output `i` of the TF node.
pub fn put(ctx: &mut KernelCtx<'_>, i: usize, t: Tensor) -> KernelResult<()> {
    ctx.put(i, Value::Tensor(t))
}

/// Puts `x` under new dims (ExpandDims, Squeeze, Reshape, the layout-only steps).
pub fn put_reshaped(
    ctx: &mut KernelCtx<'_>,
    i: usize,
    x: TensorRef<'_>,
    dims: &[usize],
) -> KernelResult<()> {
    put(ctx, i, x.to_owned().reshaped(dims)?)
}

/// The bytes per element of `dt`, for the kernels that move elements without reading them.
pub fn elem_bytes(dt: DType) -> KernelResult<usize> {
    if dt.is_string() || !dt.bits().is_multiple_of(8) {
        return Err(KernelError::unsupported(format!(
            "{} elements cannot be moved bytewise",
            dt.name()
        )));
    }
    Ok(dt.bits() as usize / 8)
}

/// An error for a bad attribute message from the shared TF helpers.
pub fn attr_err(msg: String) -> KernelError {
    KernelError::invalid(msg)
}
