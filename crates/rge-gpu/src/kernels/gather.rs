//! Gather along one axis. The indices are a host tensor (int32 or int64, usually a model
//! input or constant): the host checks them, folds negative ones and passes them in the
//! parameter buffer, so the shader reads only u32 words. One thread per output element.

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::dispatch::{bind, groups_1d, launch, GROUP};
use crate::error::GpuError;
use crate::kernels::map::{elem_size, enable, typed_pipeline};
use crate::memory::DeviceMemory;

/// The most indices one Gather takes (they travel in the parameter buffer).
pub const MAX_INDICES: usize = 1 << 20;

/// Parameter words before the indices.
const P_HEAD: usize = 8;

fn shader(ty: &str) -> String {
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> x: array<{ty}>;
@group(0) @binding(1) var<storage, read_write> y: array<{ty}>;
@group(0) @binding(2) var<storage, read> p: array<u32>;

// p: 0 n_out, 1 threads per grid row, 2 inner, 3 indices, 4 axis length, 5 x_off, 6 y_off;
// the indices from word {P_HEAD}
@compute @workgroup_size({GROUP})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
    let i = g.x + g.y * p[1];
    if (i >= p[0]) {{ return; }}
    let inner = p[2];
    let e = i % inner;
    let j = (i / inner) % p[3];
    let o = i / (inner * p[3]);
    y[p[6] + i] = x[p[5] + (o * p[4] + p[{P_HEAD}u + j]) * inner + e];
}}
",
        en = enable(ty)
    )
}

/// The gather pipeline for `dtype`.
pub fn pipeline(mem: &DeviceMemory, dtype: DType) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    typed_pipeline(mem, "Gather", dtype, "gather", shader)
}

/// A Gather kernel.
pub struct GatherKernel {
    mem: Arc<DeviceMemory>,
    pipeline: Arc<wgpu::ComputePipeline>,
    dtype: DType,
    axis: i64,
}

/// Builds the kernel.
pub fn create(mem: &Arc<DeviceMemory>, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let dtype = init.input_type(0).unwrap_or(DType::Float);
    Ok(Box::new(GatherKernel {
        mem: mem.clone(),
        pipeline: pipeline(mem, dtype)?,
        dtype,
        axis: init.int_or("axis", 0)?,
    }))
}

impl Kernel for GatherKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let idx = ctx.input(1)?;
        let shape = x.shape().to_vec();
        let r = shape.len() as i64;
        let axis = if self.axis < 0 {
            self.axis + r
        } else {
            self.axis
        };
        if axis < 0 || axis >= r {
            return Err(KernelError::invalid(format!(
                "axis {} out of range for rank {r}",
                self.axis
            )));
        }
        let axis = axis as usize;
        let len = shape[axis] as i64;
        let indices = idx.to_i64_vec()?;
        if indices.len() > MAX_INDICES {
            return Err(KernelError::invalid(format!(
                "{} indices; the gpu Gather takes at most {MAX_INDICES}",
                indices.len()
            )));
        }
        let mut p = vec![0u32; P_HEAD + indices.len().max(1)];
        for (k, &v) in indices.iter().enumerate() {
            let i = if v < 0 { v + len } else { v };
            if i < 0 || i >= len {
                return Err(KernelError::invalid(format!(
                    "index {v} is out of range for an axis of {len}"
                )));
            }
            p[P_HEAD + k] = i as u32;
        }
        let mut out_shape = shape[..axis].to_vec();
        out_shape.extend_from_slice(idx.shape());
        out_shape.extend_from_slice(&shape[axis + 1..]);
        let out = ctx.output_bytes(0, self.dtype, &out_shape)?;
        if out.is_empty() {
            return Ok(());
        }
        let es = elem_size(self.dtype);
        let bx = bind(&self.mem, x.bytes()?, es)?;
        let by = bind(&self.mem, out, es)?;
        let n: usize = out_shape.iter().product();
        let gpu = self.mem.context();
        let (gx, gy, row) = groups_1d(gpu, n as u64)?;
        p[0] = n as u32;
        p[1] = row;
        p[2] = shape[axis + 1..].iter().product::<usize>() as u32;
        p[3] = indices.len() as u32;
        p[4] = len as u32;
        p[5] = bx.elem_offset;
        p[6] = by.elem_offset;
        launch(gpu, &self.pipeline, &[&bx, &by], &p, (gx, gy, 1))?;
        Ok(())
    }
}
