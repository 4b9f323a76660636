//! Concat and Slice as strided copies with the map shader's identity: Concat copies each
//! input into its block of the output, Slice reads its input with the steps as strides.

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::dispatch::bind;
use crate::kernels::map::{self, elem_size, run_map};
use crate::kernels::strided;
use crate::memory::DeviceMemory;

/// Concat or Slice.
pub struct CopyKernel {
    mem: Arc<DeviceMemory>,
    pipeline: Arc<wgpu::ComputePipeline>,
    dtype: DType,
    slice: bool,
    axis: i64,
    /// Slice-1's attributes.
    attrs: Option<SliceAttrs>,
}

/// Slice-1's starts, ends and axes (attributes; later opsets take inputs).
struct SliceAttrs {
    starts: Vec<i64>,
    ends: Vec<i64>,
    axes: Option<Vec<i64>>,
}

/// Builds a Concat (`slice` false) or Slice kernel.
pub fn create(
    mem: &Arc<DeviceMemory>,
    init: &KernelInit<'_>,
    slice: bool,
) -> KernelResult<Box<dyn Kernel>> {
    let dtype = init.input_type(0).unwrap_or(DType::Float);
    let attrs = if slice && init.opset < 10 {
        Some(SliceAttrs {
            starts: init.ints_or_empty("starts")?,
            ends: init.ints_or_empty("ends")?,
            axes: init.ints_opt("axes")?.map(<[i64]>::to_vec),
        })
    } else {
        None
    };
    Ok(Box::new(CopyKernel {
        mem: mem.clone(),
        pipeline: map::pipeline(mem, "Identity", 1, dtype)?,
        dtype,
        slice,
        axis: if slice { 0 } else { init.int("axis")? },
        attrs,
    }))
}

/// Per dim (start, step, count) of a Slice over `shape`.
fn slice_plan(
    shape: &[usize],
    starts: &[i64],
    ends: &[i64],
    axes: &[i64],
    steps: &[i64],
) -> KernelResult<Vec<(i64, i64, usize)>> {
    let r = shape.len() as i64;
    let mut plan: Vec<(i64, i64, usize)> = shape.iter().map(|&d| (0, 1, d)).collect();
    for (k, &a) in axes.iter().enumerate() {
        let a = if a < 0 { a + r } else { a };
        if a < 0 || a >= r {
            return Err(KernelError::invalid(format!("Slice axis {a} out of range")));
        }
        let dim = shape[a as usize] as i64;
        let step = *steps.get(k).unwrap_or(&1);
        if step == 0 {
            return Err(KernelError::invalid("Slice step 0"));
        }
        let clampv = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
        let norm = |v: i64| if v < 0 { v + dim } else { v };
        let (s, e) = (norm(starts[k]), norm(ends[k]));
        let (s, e, count) = if step > 0 {
            let s = clampv(s, 0, dim);
            let e = clampv(e, 0, dim);
            (s, e, if e > s { (e - s + step - 1) / step } else { 0 })
        } else {
            let s = clampv(s, -1, dim - 1);
            let e = clampv(e, -1, dim - 1);
            (
                s,
                e,
                if s > e {
                    (s - e + (-step) - 1) / (-step)
                } else {
                    0
                },
            )
        };
        let _ = e;
        plan[a as usize] = (s, step, count as usize);
    }
    Ok(plan)
}

impl Kernel for CopyKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let es = elem_size(self.dtype);
        if self.slice {
            let x = ctx.input(0)?;
            let shape = x.shape().to_vec();
            let (starts, ends, axes, steps) = match &self.attrs {
                Some(a) => (
                    a.starts.clone(),
                    a.ends.clone(),
                    a.axes
                        .clone()
                        .unwrap_or_else(|| (0..a.starts.len() as i64).collect()),
                    Vec::new(),
                ),
                None => {
                    let starts = ctx.input(1)?.to_i64_vec()?;
                    let ends = ctx.input(2)?.to_i64_vec()?;
                    let axes = match ctx.opt_input(3)? {
                        Some(t) => t.to_i64_vec()?,
                        None => (0..starts.len() as i64).collect(),
                    };
                    let steps = match ctx.opt_input(4)? {
                        Some(t) => t.to_i64_vec()?,
                        None => Vec::new(),
                    };
                    (starts, ends, axes, steps)
                }
            };
            if starts.len() != ends.len() || axes.len() != starts.len() {
                return Err(KernelError::invalid(
                    "Slice: starts, ends and axes differ in length",
                ));
            }
            let plan = slice_plan(&shape, &starts, &ends, &axes, &steps)?;
            let own = strided::contiguous(&shape);
            let out_shape: Vec<usize> = plan.iter().map(|p| p.2).collect();
            let out = ctx.output_bytes(0, self.dtype, &out_shape)?;
            if out.is_empty() {
                return Ok(());
            }
            let bx = bind(&self.mem, x.bytes()?, es)?;
            let by = bind(&self.mem, out, es)?;
            let start: i64 = plan.iter().zip(&own).map(|(p, s)| p.0 * s).sum();
            let a_strides: Vec<i64> = plan.iter().zip(&own).map(|(p, s)| p.1 * s).collect();
            let strides = vec![strided::contiguous(&out_shape), a_strides];
            let base = [i64::from(by.elem_offset), i64::from(bx.elem_offset) + start];
            run_map(
                &self.mem,
                &self.pipeline,
                &out_shape,
                &strides,
                &[&bx, &by],
                &base,
                0.0,
                0.0,
            )?;
            return Ok(());
        }
        let n = ctx.input_count();
        let first = ctx.input(0)?;
        let r = first.rank() as i64;
        let axis = if self.axis < 0 {
            self.axis + r
        } else {
            self.axis
        };
        if axis < 0 || axis >= r {
            return Err(KernelError::invalid(format!(
                "Concat axis {} out of range",
                self.axis
            )));
        }
        let axis = axis as usize;
        let mut out_shape = first.shape().to_vec();
        out_shape[axis] = 0;
        for i in 0..n {
            let t = ctx.input(i)?;
            let s = t.shape();
            if s.len() != out_shape.len() || (0..s.len()).any(|d| d != axis && s[d] != out_shape[d])
            {
                return Err(KernelError::invalid(format!(
                    "Concat input {i} has shape {s:?}"
                )));
            }
            out_shape[axis] += s[axis];
        }
        let out = ctx.output_bytes(0, self.dtype, &out_shape)?;
        if out.is_empty() {
            return Ok(());
        }
        let by = bind(&self.mem, out, es)?;
        let ys = strided::contiguous(&out_shape);
        let mut at = 0i64;
        for i in 0..n {
            let t = ctx.input(i)?;
            let s = t.shape().to_vec();
            if !t.is_empty() {
                let bx = bind(&self.mem, t.bytes()?, es)?;
                let strides = vec![ys.clone(), strided::contiguous(&s)];
                let base = [
                    i64::from(by.elem_offset) + at * ys[axis],
                    i64::from(bx.elem_offset),
                ];
                run_map(
                    &self.mem,
                    &self.pipeline,
                    &s,
                    &strides,
                    &[&bx, &by],
                    &base,
                    0.0,
                    0.0,
                )?;
            }
            at += s[axis] as i64;
        }
        Ok(())
    }
}
