//! One run of a program: its arena, its run-time values, and the step launcher every executor
//! calls. A frame is shared by the worker threads of a run; what makes that sound is the
//! schedule: a step starts only after the steps it depends on finished (data, control and
//! memory-reuse dependencies, see `plan::memory_deps`), and the memory plan never gives two
//! values alive at once overlapping bytes.

use std::cell::UnsafeCell;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use rge_kernels::{
    element_count, DType, KernelCtx, KernelError, KernelResult, OutputSink, SubgraphRunner, Tensor,
    TensorRef, Value, ValueRef,
};

use crate::error::{RuntimeError, RuntimeResult};
use crate::exec::{run_program, RunOptions};
use crate::program::{Flow, Program, Step, Storage};

/// Arena memory (16-byte aligned words).
#[derive(Debug, Default)]
pub(crate) struct Arena {
    words: Vec<u128>,
}

impl Arena {
    fn with_bytes(n: usize) -> Self {
        Arena {
            words: vec![0u128; n.div_ceil(16)],
        }
    }
}

struct DynCell {
    value: UnsafeCell<Option<Value>>,
    readers: AtomicU32,
}

/// The state of one run.
pub(crate) struct Frame<'a> {
    prog: &'a Program,
    arena: Arena,
    base: *mut u8,
    /// The arenas of the other memory spaces (`Program::spaces`), from their allocators, and
    /// their bases.
    space_arenas: Vec<Vec<u128>>,
    space_bases: Vec<*mut u8>,
    inputs: &'a [Option<ValueRef<'a>>],
    dynamic: Box<[DynCell]>,
    pub(crate) opts: &'a RunOptions<'a>,
}

// SAFETY: the frame is shared between the worker threads of one run. The arena is only reached
// through `base` (never as one slice), in the disjoint byte ranges the memory plan gives to
// values alive at the same time; a dynamic cell is written by its producer before any reader
// starts and emptied by its last reader (see `value` and `release`). The executors' schedules
// (dependencies with acquire/release counters) provide the happens-before edges.
unsafe impl Sync for Frame<'_> {}
// SAFETY: as above; the raw pointer points into `arena`, which moves with the frame (a Vec's
// heap memory does not move).
unsafe impl Send for Frame<'_> {}

impl<'a> Frame<'a> {
    pub(crate) fn new(
        prog: &'a Program,
        inputs: &'a [Option<ValueRef<'a>>],
        opts: &'a RunOptions<'a>,
    ) -> Self {
        let want = prog.plan.arena_bytes;
        let mut arena = prog
            .arenas
            .lock()
            .ok()
            .and_then(|mut v| v.pop())
            .filter(|a| a.words.len() * 16 >= want)
            .unwrap_or_else(|| Arena::with_bytes(want));
        let base = arena.words.as_mut_ptr().cast::<u8>();
        let mut space_arenas: Vec<Vec<u128>> = prog
            .spaces
            .iter()
            .map(|p| p.allocator.alloc_arena(p.arena_bytes))
            .collect();
        let space_bases = space_arenas
            .iter_mut()
            .map(|a| a.as_mut_ptr().cast::<u8>())
            .collect();
        let dynamic = prog
            .dynamic_readers
            .iter()
            .map(|&r| DynCell {
                value: UnsafeCell::new(None),
                readers: AtomicU32::new(r),
            })
            .collect();
        Frame {
            prog,
            arena,
            base,
            space_arenas,
            space_bases,
            inputs,
            dynamic,
            opts,
        }
    }

    pub(crate) fn program(&self) -> &'a Program {
        self.prog
    }

    /// The base of memory space `space`'s arena (0: the host's).
    #[inline]
    fn base_of(&self, space: u8) -> *mut u8 {
        if space == 0 {
            self.base
        } else {
            self.space_bases[space as usize - 1]
        }
    }

    /// The value of `slot`, `None` when absent.
    ///
    /// Callers must only read slots whose producer has finished (the schedule guarantees it).
    #[inline]
    pub(crate) fn value(&self, slot: u32) -> Option<ValueRef<'_>> {
        let s = &self.prog.slots[slot as usize];
        match s.storage {
            Storage::Arena { space, offset } => {
                let shape = s.shape.as_deref()?;
                let dtype = s.dtype?;
                // SAFETY: `offset..offset + bytes` lies in the space's arena (the planner sized
                // it); its producer finished and no step alive now writes these bytes.
                let bytes =
                    unsafe { std::slice::from_raw_parts(self.base_of(space).add(offset), s.bytes) };
                Some(ValueRef::Tensor(TensorRef::new_trusted(
                    dtype, shape, bytes,
                )))
            }
            Storage::Const(i) => {
                let t = self.prog.consts[i as usize].view();
                Some(if s.view {
                    reshape_ref(t, s.shape.as_deref())
                } else {
                    ValueRef::Tensor(t)
                })
            }
            Storage::Input(k) => {
                let v = self.inputs.get(k as usize).copied().flatten()?;
                Some(match v {
                    ValueRef::Tensor(t) if s.view => reshape_ref(t, s.shape.as_deref()),
                    other => other,
                })
            }
            Storage::Dynamic(d) => {
                // SAFETY: written by the producer before this reader started; emptied only by
                // the last reader, after every reader finished.
                let v = unsafe { &*self.dynamic[d as usize].value.get() };
                v.as_ref().map(Value::as_ref)
            }
        }
    }

    /// Drops run-time values whose last reader was `step`.
    fn release(&self, step: &Step) {
        if self.dynamic.is_empty() {
            return;
        }
        for &s in step.inputs.iter().flatten() {
            if let Storage::Dynamic(d) = self.prog.slots[s as usize].storage {
                let cell = &self.dynamic[d as usize];
                if cell.readers.fetch_sub(1, Ordering::AcqRel) == 1 {
                    // SAFETY: every reader finished (the count reached zero), no one else
                    // touches the cell any more.
                    if let Some(v) = unsafe { (*cell.value.get()).take() } {
                        self.prog.allocator.recycle(v);
                    }
                }
            }
        }
    }

    /// Runs step `i` as the executors see it: a plain step, a whole flat region through its
    /// entry, or nothing for a step inside a region (its region runs it).
    #[inline]
    pub(crate) fn run_unit(&self, i: usize, lane: usize) -> RuntimeResult<()> {
        match self.prog.unit.get(i) {
            Some(&u) if u as usize != i => Ok(()),
            _ => match &self.prog.steps[i].flow {
                Some(Flow::Active { end }) => self.run_region(i, *end as usize, lane),
                _ => self.run_step(i, lane),
            },
        }
    }

    /// Runs the flat region `start..end` in order, following its labels and switches.
    fn run_region(&self, start: usize, end: usize, lane: usize) -> RuntimeResult<()> {
        let mut pc = start + 1;
        while pc < end {
            let step = &self.prog.steps[pc];
            match &step.flow {
                Some(Flow::Label) | Some(Flow::Active { .. }) => pc += 1,
                Some(Flow::Goto { target }) => pc = *target as usize,
                Some(Flow::Switch { targets }) => {
                    self.run_step(pc, lane)?;
                    let index = step
                        .outputs
                        .first()
                        .and_then(|&o| self.value(o))
                        .and_then(|v| match v {
                            ValueRef::Tensor(t) => t.to_i64_vec().ok(),
                            _ => None,
                        })
                        .and_then(|v| v.first().copied())
                        .ok_or_else(|| RuntimeError::Kernel {
                            node: step.node.clone(),
                            op_type: step.op_type.to_string(),
                            msg: "the switch wrote no branch index".into(),
                        })?;
                    let last = targets.len().saturating_sub(1);
                    let k = usize::try_from(index).map_or(last, |k| k.min(last));
                    pc = targets.get(k).map_or(end, |&t| t as usize);
                }
                None => {
                    self.run_step(pc, lane)?;
                    pc += 1;
                }
            }
        }
        Ok(())
    }

    /// Runs step `i`: builds the kernel context over the frame and calls the kernel.
    pub(crate) fn run_step(&self, i: usize, lane: usize) -> RuntimeResult<()> {
        let step = &self.prog.steps[i];
        let start = self.opts.profile.map(|_| Instant::now());
        let n_in = step.inputs.len();
        let mut small: [Option<ValueRef<'_>>; 4] = [None, None, None, None];
        let big: Vec<Option<ValueRef<'_>>>;
        let ins: &[Option<ValueRef<'_>>] = if n_in <= 4 {
            for (dst, s) in small.iter_mut().zip(step.inputs.iter()) {
                if let Some(s) = *s {
                    *dst = self.value(s);
                }
            }
            &small[..n_in]
        } else {
            big = step
                .inputs
                .iter()
                .map(|s| s.and_then(|s| self.value(s)))
                .collect();
            &big
        };
        let mut sink = StepSink {
            frame: self,
            step,
            done: 0,
            done_big: if step.outputs.len() > 64 {
                vec![false; step.outputs.len()]
            } else {
                Vec::new()
            },
            pending: Vec::new(),
        };
        let result = {
            let mut ctx = KernelCtx::new(ins, &mut sink).with_run_key(self.opts.run_key);
            if self.opts.kernel_threads > 1 {
                ctx = ctx.with_threads(self.opts.kernel_threads);
            }
            let runner;
            if !step.subgraphs.is_empty() {
                runner = Subgraphs {
                    progs: &step.subgraphs,
                    parent: ins,
                    opts: self.opts,
                };
                ctx = ctx.with_subgraphs(&runner);
            }
            // A panicking kernel is a bug in the kernel; the run reports it as an error of the
            // node instead of unwinding through the executor.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                step.kernel.compute(&mut ctx)
            }))
            .unwrap_or_else(|p| {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Err(KernelError::invalid(format!("the kernel panicked: {msg}")))
            })
        };
        let pending = std::mem::take(&mut sink.pending);
        drop(sink);
        result.map_err(|e| RuntimeError::Kernel {
            node: step.node.clone(),
            op_type: step.op_type.to_string(),
            msg: e.to_string(),
        })?;
        for (index, value) in pending {
            let slot = &self.prog.slots[step.outputs[index] as usize];
            if let Storage::Dynamic(d) = slot.storage {
                // SAFETY: only this step writes the cell, and readers start after it finishes.
                unsafe { *self.dynamic[d as usize].value.get() = Some(value) };
            }
        }
        self.release(step);
        if let (Some(p), Some(t0)) = (self.opts.profile, start) {
            p.record(step, lane, t0);
        }
        Ok(())
    }

    /// The graph outputs: run-time values moved out of the frame (large outputs are made so,
    /// see `assemble::own_large_outputs`), planned ones copied out of the arena.
    pub(crate) fn outputs(&mut self) -> RuntimeResult<Vec<Value>> {
        let prog = self.prog;
        let mut out: Vec<Value> = Vec::with_capacity(prog.outputs.len());
        for (k, (name, slot)) in prog.outputs.iter().enumerate() {
            let v = slot.and_then(|s| {
                self.take_output(s).or_else(|| {
                    // Moved out already: an earlier output is the same value.
                    let j = prog.outputs[..k].iter().position(|o| o.1 == Some(s))?;
                    Some(out[j].clone())
                })
            });
            out.push(v.ok_or_else(|| {
                RuntimeError::Other(format!("graph output `{name}` has no value"))
            })?);
        }
        Ok(out)
    }

    /// The value of output slot `s`: moved out when it is a run-time value, else copied.
    fn take_output(&mut self, s: u32) -> Option<Value> {
        if let Storage::Dynamic(d) = self.prog.slots[s as usize].storage {
            if let Some(v) = self
                .dynamic
                .get_mut(d as usize)
                .and_then(|c| c.value.get_mut().take())
            {
                return Some(v);
            }
        }
        self.value(s).map(|v| v.to_owned())
    }
}

impl Drop for Frame<'_> {
    fn drop(&mut self) {
        for cell in self.dynamic.iter_mut() {
            if let Some(v) = cell.value.get_mut().take() {
                self.prog.allocator.recycle(v);
            }
        }
        if let Ok(mut pool) = self.prog.arenas.lock() {
            if pool.len() < 64 {
                pool.push(std::mem::take(&mut self.arena));
            }
        }
        for (p, a) in self.prog.spaces.iter().zip(self.space_arenas.drain(..)) {
            p.allocator.free_arena(a);
        }
    }
}

fn reshape_ref<'b>(t: TensorRef<'b>, shape: Option<&'b [usize]>) -> ValueRef<'b> {
    match (shape, t.bytes()) {
        (Some(sh), Ok(bytes)) if !same_dims(sh, t.shape()) => {
            ValueRef::Tensor(TensorRef::new_trusted(t.dtype(), sh, bytes))
        }
        _ => ValueRef::Tensor(t),
    }
}

/// The output sink of one step: planned arena slices, or owned values for run-time outputs.
struct StepSink<'f, 'a> {
    frame: &'f Frame<'a>,
    step: &'f Step,
    /// Outputs handed out (bit per output, for nodes with at most 64 outputs).
    done: u64,
    done_big: Vec<bool>,
    pending: Vec<(usize, Value)>,
}

impl StepSink<'_, '_> {
    fn claim(&mut self, index: usize) -> KernelResult<()> {
        let n = self.step.outputs.len();
        if index >= n {
            return Err(KernelError::Output {
                index,
                msg: format!("the node has {n} outputs"),
            });
        }
        let twice = if n <= 64 {
            let bit = 1u64 << index;
            let t = self.done & bit != 0;
            self.done |= bit;
            t
        } else {
            std::mem::replace(&mut self.done_big[index], true)
        };
        if twice {
            return Err(KernelError::Output {
                index,
                msg: "set twice".into(),
            });
        }
        Ok(())
    }
}

fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

fn planned_mismatch(
    index: usize,
    dtype: Option<DType>,
    shape: &[usize],
    got: String,
) -> KernelError {
    let want = dtype.map_or("?".to_string(), |d| d.to_string());
    KernelError::Output {
        index,
        msg: format!("planned as {want}{shape:?}, the kernel made {got}"),
    }
}

// SAFETY: arena outputs are the planned ranges of this step's output slots: in bounds, 16-byte
// aligned (offsets are multiples of 64 from a 16-aligned base), initialized (the arena is
// zeroed when made), and not read or written by any other step running now (the memory plan
// and the schedule). Each index is handed out once (`claim`). Dynamic outputs are separate
// heap buffers, as in `OwnedOutputs`.
unsafe impl OutputSink for StepSink<'_, '_> {
    fn output_count(&self) -> usize {
        self.step.outputs.len()
    }

    fn alloc(&mut self, index: usize, dtype: DType, shape: &[usize]) -> KernelResult<NonNull<u8>> {
        self.claim(index)?;
        let slot = &self.frame.prog.slots[self.step.outputs[index] as usize];
        match slot.storage {
            Storage::Arena { space, offset } => {
                let want = slot.shape.as_deref().unwrap_or(&[]);
                if slot.dtype != Some(dtype) || !same_dims(want, shape) {
                    return Err(planned_mismatch(
                        index,
                        slot.dtype,
                        want,
                        format!("{dtype}{shape:?}"),
                    ));
                }
                // SAFETY: see the impl's comment: in bounds of the space's arena.
                let p = unsafe { self.frame.base_of(space).add(offset) };
                NonNull::new(p).ok_or_else(|| KernelError::invalid("null arena"))
            }
            _ => {
                let n = element_count(shape).ok_or_else(|| KernelError::Output {
                    index,
                    msg: format!("shape {shape:?} overflows"),
                })?;
                let mut buf = self.frame.prog.allocator.take(dtype.bytes_for(n));
                if dtype == DType::Bool {
                    // A recycled buffer holds old bytes; a bool tensor must hold 0 or 1.
                    buf.as_mut_slice().fill(0);
                }
                let ptr = NonNull::new(buf.as_mut_slice().as_mut_ptr())
                    .ok_or_else(|| KernelError::invalid("null buffer"))?;
                // Moving the Buffer moves its handle, not its heap memory.
                let t = Tensor::from_buffer(dtype, shape, buf)?;
                self.pending.push((index, Value::Tensor(t)));
                Ok(ptr)
            }
        }
    }

    fn put(&mut self, index: usize, value: Value) -> KernelResult<()> {
        self.claim(index)?;
        let slot = &self.frame.prog.slots[self.step.outputs[index] as usize];
        match slot.storage {
            Storage::Arena { space, offset } => {
                let want = slot.shape.as_deref().unwrap_or(&[]);
                let t = match &value {
                    Value::Tensor(t) if Some(t.dtype()) == slot.dtype && t.shape() == want => t,
                    other => {
                        let got = match other {
                            Value::Tensor(t) => format!("{}{:?}", t.dtype(), t.shape()),
                            v => format!("a {}", v.kind()),
                        };
                        return Err(planned_mismatch(index, slot.dtype, want, got));
                    }
                };
                let bytes = t.view().bytes()?;
                // SAFETY: the planned range of this output (see the impl's comment), `bytes`
                // long because dtype and shape match the plan.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        bytes.as_ptr(),
                        self.frame.base_of(space).add(offset),
                        bytes.len().min(slot.bytes),
                    )
                };
                Ok(())
            }
            _ => {
                self.pending.push((index, value));
                Ok(())
            }
        }
    }

    fn is_used(&self, index: usize) -> bool {
        self.step.used.get(index).copied().unwrap_or(false)
    }
}

/// Runs a step's subgraphs: formal inputs from the kernel, captures from the parent's inputs.
struct Subgraphs<'r> {
    progs: &'r [std::sync::Arc<Program>],
    parent: &'r [Option<ValueRef<'r>>],
    opts: &'r RunOptions<'r>,
}

impl SubgraphRunner for Subgraphs<'_> {
    fn run(&self, slot: usize, inputs: Vec<Value>) -> KernelResult<Vec<Value>> {
        let prog = self
            .progs
            .get(slot)
            .ok_or_else(|| KernelError::invalid(format!("no subgraph in slot {slot}")))?;
        let formal: Vec<Option<ValueRef<'_>>> = inputs.iter().map(|v| Some(v.as_ref())).collect();
        let opts = self.opts.for_subgraph();
        run_program(prog, &formal, self.parent, &opts)
            .map_err(|e| KernelError::invalid(format!("subgraph `{}`: {e}", prog.name)))
    }
}
