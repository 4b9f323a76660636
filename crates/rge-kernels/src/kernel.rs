//! The kernel interface. A kernel is built once per node from a [`KernelInit`] (attributes
//! parsed, checked and kept), then computed any number of times, from many threads at once,
//! with a [`KernelCtx`] that lends the node's inputs and takes its outputs.

use std::ptr::NonNull;

use rge_ir::{AttrMap, AttrValue};

use crate::buffer::Buffer;
use crate::convert::tensor_from_ir;
use crate::dtype::DType;
use crate::elem::{cast_pod_mut, cast_slice_mut, Elem};
use crate::error::{KernelError, KernelResult};
use crate::tensor::{element_count, Tensor, TensorRef};
use crate::value::{Value, ValueRef};

/// A built kernel. `compute` must not keep state between calls (a model may run from many
/// threads at once); per-call scratch memory is allocated inside the call.
pub trait Kernel: Send + Sync {
    /// Computes the outputs of one node.
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()>;

    /// `Some((input, output))` when the output may be written over the input's memory (same
    /// dtype and shape; the kernel reads each element before writing it). The memory planner
    /// uses it when the input's last reader is this node.
    fn reuse_input(&self) -> Option<(usize, usize)> {
        None
    }

    /// Constant inputs the kernel keeps its own copy of (a weight it packed when it was built)
    /// and reads nothing of at run time but dtype and shape. When every reader of a constant
    /// absorbed it, a program built for running releases the constant's data (its bytes become
    /// empty; reading them is an error, never stale data).
    fn absorbed_inputs(&self) -> &[usize] {
        &[]
    }
}

/// Everything a kernel factory may read about its node.
pub struct KernelInit<'a> {
    /// The node's name (for messages).
    pub node_name: &'a str,
    /// The op type, e.g. "Conv".
    pub op_type: &'a str,
    /// The op's domain ("" for the default ONNX domain).
    pub domain: &'a str,
    /// The opset version of the op's domain the model imports.
    pub opset: i64,
    /// The node's attributes.
    pub attrs: &'a AttrMap,
    /// The input element types where known (None: unknown or absent optional input).
    pub input_types: &'a [Option<DType>],
    /// The output element types where known.
    pub output_types: &'a [Option<DType>],
    /// The ONNX attribute name of each subgraph slot, in slot order (`then_branch` …).
    pub subgraph_attrs: &'a [String],
    /// The inputs that are constants of the model (weights), by input index (`None`: computed
    /// at run time, or not known to be constant): what a kernel may prepack when it is built.
    pub constants: &'a [Option<&'a Tensor>],
}

impl<'a> KernelInit<'a> {
    fn get(&self, name: &str) -> Option<&'a AttrValue> {
        self.attrs.get(name)
    }

    /// An int attribute, or `default` when absent.
    pub fn int_or(&self, name: &str, default: i64) -> KernelResult<i64> {
        Ok(self.int_opt(name)?.unwrap_or(default))
    }

    /// An int attribute, if present (bools read as 0/1).
    pub fn int_opt(&self, name: &str) -> KernelResult<Option<i64>> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::Int(v)) => Ok(Some(*v)),
            Some(AttrValue::Bool(b)) => Ok(Some(*b as i64)),
            Some(other) => Err(mismatch(name, "an int", other)),
        }
    }

    /// A required int attribute.
    pub fn int(&self, name: &str) -> KernelResult<i64> {
        self.int_opt(name)?
            .ok_or_else(|| KernelError::attr(name, "required but missing"))
    }

    /// A float attribute, or `default` when absent.
    pub fn float_or(&self, name: &str, default: f32) -> KernelResult<f32> {
        Ok(self.float_opt(name)?.unwrap_or(default))
    }

    /// A float attribute, if present (ints accepted).
    pub fn float_opt(&self, name: &str) -> KernelResult<Option<f32>> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::Float(v)) => Ok(Some(*v)),
            Some(AttrValue::Int(v)) => Ok(Some(*v as f32)),
            Some(other) => Err(mismatch(name, "a float", other)),
        }
    }

    /// A string attribute, or `default` when absent (bytes accepted when UTF-8).
    pub fn str_or(&self, name: &str, default: &'a str) -> KernelResult<&'a str> {
        Ok(self.str_opt(name)?.unwrap_or(default))
    }

    /// A string attribute, if present.
    pub fn str_opt(&self, name: &str) -> KernelResult<Option<&'a str>> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::String(s)) => Ok(Some(s)),
            Some(AttrValue::Bytes(b)) => std::str::from_utf8(b)
                .map(Some)
                .map_err(|_| KernelError::attr(name, "not UTF-8")),
            Some(other) => Err(mismatch(name, "a string", other)),
        }
    }

    /// An int-list attribute, if present.
    pub fn ints_opt(&self, name: &str) -> KernelResult<Option<&'a [i64]>> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::ListInt(v)) => Ok(Some(v)),
            Some(other) => Err(mismatch(name, "a list of ints", other)),
        }
    }

    /// An int-list attribute, empty when absent.
    pub fn ints_or_empty(&self, name: &str) -> KernelResult<Vec<i64>> {
        Ok(self
            .ints_opt(name)?
            .map(<[i64]>::to_vec)
            .unwrap_or_default())
    }

    /// A float-list attribute, if present.
    pub fn floats_opt(&self, name: &str) -> KernelResult<Option<&'a [f32]>> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::ListFloat(v)) => Ok(Some(v)),
            Some(other) => Err(mismatch(name, "a list of floats", other)),
        }
    }

    /// A string-list attribute, if present.
    pub fn strings_opt(&self, name: &str) -> KernelResult<Option<&'a [String]>> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::ListString(v)) => Ok(Some(v)),
            Some(other) => Err(mismatch(name, "a list of strings", other)),
        }
    }

    /// A tensor attribute converted to a runtime tensor, if present.
    pub fn tensor_opt(&self, name: &str) -> KernelResult<Option<Tensor>> {
        match self.get(name) {
            None => Ok(None),
            Some(AttrValue::Tensor(t)) => tensor_from_ir(t)
                .map(Some)
                .map_err(|e| KernelError::attr(name, e.to_string())),
            Some(other) => Err(mismatch(name, "a tensor", other)),
        }
    }

    /// True when the attribute is set.
    pub fn has(&self, name: &str) -> bool {
        self.attrs.contains(name)
    }

    /// The subgraph slot of ONNX attribute `name` (`then_branch`, `body` …).
    pub fn subgraph_slot(&self, name: &str) -> KernelResult<usize> {
        self.subgraph_attrs
            .iter()
            .position(|s| s == name)
            .ok_or_else(|| KernelError::attr(name, "subgraph attribute missing"))
    }

    /// The known type of input `i`.
    pub fn input_type(&self, i: usize) -> Option<DType> {
        self.input_types.get(i).copied().flatten()
    }

    /// The known type of output `i`.
    pub fn output_type(&self, i: usize) -> Option<DType> {
        self.output_types.get(i).copied().flatten()
    }

    /// Input `i` when it is a constant of the model.
    pub fn constant(&self, i: usize) -> Option<&'a Tensor> {
        self.constants.get(i).copied().flatten()
    }
}

fn mismatch(name: &str, want: &str, got: &AttrValue) -> KernelError {
    KernelError::attr(name, format!("expected {want}, got {got:?}"))
}

/// Where a kernel's outputs go; implemented by the runtime (arena slots, a caching allocator,
/// or owned buffers as [`OwnedOutputs`] does).
///
/// # Safety
/// `alloc` must return memory of `dtype.bytes_for(element_count(shape))` bytes, aligned to 16,
/// initialized (any content), that nothing else reads or writes until the kernel call ends;
/// each index is allocated at most once per call (a second request is an error).
pub unsafe trait OutputSink {
    /// The number of outputs the node has.
    fn output_count(&self) -> usize;
    /// Memory for output `index`.
    fn alloc(&mut self, index: usize, dtype: DType, shape: &[usize]) -> KernelResult<NonNull<u8>>;
    /// Sets output `index` to an owned value (strings, sequences, optionals, or a tensor the
    /// kernel already holds).
    fn put(&mut self, index: usize, value: Value) -> KernelResult<()>;
    /// True when output `index` is consumed by anything (kernels may skip unused outputs).
    fn is_used(&self, index: usize) -> bool {
        index < self.output_count()
    }
}

/// Runs a node's subgraphs (If, Loop, Scan …); implemented by the runtime.
pub trait SubgraphRunner: Sync {
    /// Runs subgraph slot `slot` with `inputs` (its formal inputs, then captures are added by
    /// the runtime) and returns its outputs.
    fn run(&self, slot: usize, inputs: Vec<Value>) -> KernelResult<Vec<Value>>;
}

/// One kernel call: the node's inputs and where its outputs go.
pub struct KernelCtx<'a> {
    inputs: &'a [Option<ValueRef<'a>>],
    outputs: &'a mut dyn OutputSink,
    threads: usize,
    subgraphs: Option<&'a dyn SubgraphRunner>,
    run_key: u64,
}

impl<'a> KernelCtx<'a> {
    /// A call context.
    pub fn new(inputs: &'a [Option<ValueRef<'a>>], outputs: &'a mut dyn OutputSink) -> Self {
        KernelCtx {
            inputs,
            outputs,
            threads: 1,
            subgraphs: None,
            run_key: 0,
        }
    }

    /// Sets the run key: a value the runtime draws for each run of a model (from the
    /// session's entropy and a per-model run counter), which unseeded random kernels mix
    /// into their stream so that every run draws different values.
    pub fn with_run_key(mut self, key: u64) -> Self {
        self.run_key = key;
        self
    }

    /// The run key (0 when the caller set none: a single kernel call outside a model run).
    #[inline]
    pub fn run_key(&self) -> u64 {
        self.run_key
    }

    /// Sets the number of threads kernels may use.
    pub fn with_threads(mut self, threads: usize) -> Self {
        self.threads = threads.max(1);
        self
    }

    /// Sets the subgraph runner.
    pub fn with_subgraphs(mut self, runner: &'a dyn SubgraphRunner) -> Self {
        self.subgraphs = Some(runner);
        self
    }

    /// How many threads the kernel may use (1: run on the calling thread).
    #[inline]
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The number of input slots (absent optional inputs included).
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// The number of outputs.
    pub fn output_count(&self) -> usize {
        self.outputs.output_count()
    }

    /// Input `i` of any kind, or `None` when absent.
    #[inline]
    pub fn value(&self, i: usize) -> Option<ValueRef<'a>> {
        self.inputs.get(i).copied().flatten()
    }

    /// Required tensor input `i`.
    #[inline]
    pub fn input(&self, i: usize) -> KernelResult<TensorRef<'a>> {
        match self.value(i) {
            Some(v) => v
                .tensor()
                .map_err(|e| KernelError::invalid(format!("input {i}: {e}"))),
            None => Err(KernelError::invalid(format!("input {i} is missing"))),
        }
    }

    /// Optional tensor input `i` (absent, or an empty name in ONNX).
    #[inline]
    pub fn opt_input(&self, i: usize) -> KernelResult<Option<TensorRef<'a>>> {
        match self.value(i) {
            Some(v) => v
                .tensor()
                .map(Some)
                .map_err(|e| KernelError::invalid(format!("input {i}: {e}"))),
            None => Ok(None),
        }
    }

    /// True when output `i` is consumed.
    pub fn output_used(&self, i: usize) -> bool {
        self.outputs.is_used(i)
    }

    /// Typed memory for output `i` with `shape`.
    pub fn output<T: Elem>(&mut self, i: usize, shape: &[usize]) -> KernelResult<&'a mut [T]> {
        let bytes = self.output_bytes(i, T::DTYPE, shape)?;
        if T::DTYPE == DType::Bool {
            // Planned memory may hold old bytes that are not valid bools; normalizing (rather
            // than zeroing) keeps an in-place input's bools intact.
            for b in bytes.iter_mut() {
                *b = u8::from(*b != 0);
            }
        }
        cast_slice_mut(bytes).ok_or_else(|| KernelError::Output {
            index: i,
            msg: "runtime gave misaligned memory".into(),
        })
    }

    /// Memory for output `i` of type `dtype`, as words of the element's width (see
    /// [`TensorRef::as_raw`]); for kernels that move elements without reading them.
    pub fn output_raw<T: bytemuck::Pod>(
        &mut self,
        i: usize,
        dtype: DType,
        shape: &[usize],
    ) -> KernelResult<&'a mut [T]> {
        if dtype.bits() as usize != std::mem::size_of::<T>() * 8 {
            return Err(KernelError::Output {
                index: i,
                msg: format!(
                    "{dtype} output written as {}-byte words",
                    std::mem::size_of::<T>()
                ),
            });
        }
        let bytes = self.output_bytes(i, dtype, shape)?;
        cast_pod_mut(bytes).ok_or_else(|| KernelError::Output {
            index: i,
            msg: "runtime gave misaligned memory".into(),
        })
    }

    /// Raw memory for output `i` (any byte-sized or packed type; not strings).
    #[inline]
    pub fn output_bytes(
        &mut self,
        i: usize,
        dtype: DType,
        shape: &[usize],
    ) -> KernelResult<&'a mut [u8]> {
        if dtype.is_string() {
            return Err(KernelError::Output {
                index: i,
                msg: "string outputs are put, not allocated".into(),
            });
        }
        let n = element_count(shape).ok_or_else(|| KernelError::Output {
            index: i,
            msg: format!("shape {shape:?} overflows"),
        })?;
        let len = dtype.bytes_for(n);
        let ptr = self.outputs.alloc(i, dtype, shape)?;
        // SAFETY: `OutputSink` promises `len` initialized, exclusive bytes that stay valid for
        // the call ('a), handed out once per index.
        Ok(unsafe { std::slice::from_raw_parts_mut(ptr.as_ptr(), len) })
    }

    /// Sets output `i` to an owned value.
    pub fn put(&mut self, i: usize, value: impl Into<Value>) -> KernelResult<()> {
        self.outputs.put(i, value.into())
    }

    /// Runs subgraph `slot`.
    pub fn run_subgraph(&self, slot: usize, inputs: Vec<Value>) -> KernelResult<Vec<Value>> {
        match self.subgraphs {
            Some(r) => r.run(slot, inputs),
            None => Err(KernelError::unsupported(
                "this runtime context cannot run subgraphs",
            )),
        }
    }
}

/// An [`OutputSink`] that allocates each output as an owned buffer; for tests, constant
/// folding and dynamic-shape execution.
#[derive(Debug, Default)]
pub struct OwnedOutputs {
    slots: Vec<Slot>,
}

#[derive(Debug, Default)]
enum Slot {
    #[default]
    Empty,
    Alloc {
        dtype: DType,
        shape: Vec<usize>,
        buf: Buffer,
    },
    Value(Value),
}

impl OwnedOutputs {
    /// A sink for `n` outputs.
    pub fn new(n: usize) -> Self {
        OwnedOutputs {
            slots: (0..n).map(|_| Slot::Empty).collect(),
        }
    }

    /// The outputs; `None` for outputs the kernel did not produce.
    pub fn into_values(self) -> KernelResult<Vec<Option<Value>>> {
        self.slots
            .into_iter()
            .map(|s| match s {
                Slot::Empty => Ok(None),
                Slot::Value(v) => Ok(Some(v)),
                Slot::Alloc { dtype, shape, buf } => {
                    Tensor::from_buffer(dtype, &shape, buf).map(|t| Some(Value::Tensor(t)))
                }
            })
            .collect()
    }

    fn slot(&mut self, index: usize) -> KernelResult<&mut Slot> {
        let n = self.slots.len();
        let slot = self
            .slots
            .get_mut(index)
            .ok_or_else(|| KernelError::Output {
                index,
                msg: format!("the node has {n} outputs"),
            })?;
        if !matches!(slot, Slot::Empty) {
            return Err(KernelError::Output {
                index,
                msg: "set twice".into(),
            });
        }
        Ok(slot)
    }
}

// SAFETY: each buffer is a separate heap allocation of the requested size, zero-initialized,
// 16-aligned (`Buffer`), and never touched again until `into_values`; an index is refused the
// second time. Moving a `Buffer` into the slot vector does not move its heap memory.
unsafe impl OutputSink for OwnedOutputs {
    fn output_count(&self) -> usize {
        self.slots.len()
    }

    fn alloc(&mut self, index: usize, dtype: DType, shape: &[usize]) -> KernelResult<NonNull<u8>> {
        let n = element_count(shape).ok_or_else(|| KernelError::Output {
            index,
            msg: format!("shape {shape:?} overflows"),
        })?;
        let slot = self.slot(index)?;
        let mut buf = Buffer::zeroed(dtype.bytes_for(n));
        let ptr = NonNull::new(buf.as_mut_slice().as_mut_ptr()).expect("non-null");
        *slot = Slot::Alloc {
            dtype,
            shape: shape.to_vec(),
            buf,
        };
        Ok(ptr)
    }

    fn put(&mut self, index: usize, value: Value) -> KernelResult<()> {
        *self.slot(index)? = Slot::Value(value);
        Ok(())
    }
}

/// Runs `kernel` once over owned inputs and returns its outputs (absent ones as `None`).
pub fn run_owned(
    kernel: &dyn Kernel,
    inputs: &[Option<&Value>],
    output_count: usize,
    threads: usize,
    subgraphs: Option<&dyn SubgraphRunner>,
) -> KernelResult<Vec<Option<Value>>> {
    let refs: Vec<Option<ValueRef<'_>>> = inputs.iter().map(|v| v.map(Value::as_ref)).collect();
    let mut sink = OwnedOutputs::new(output_count);
    {
        let mut ctx = KernelCtx::new(&refs, &mut sink).with_threads(threads);
        if let Some(r) = subgraphs {
            ctx = ctx.with_subgraphs(r);
        }
        kernel.compute(&mut ctx)?;
    }
    sink.into_values()
}
