//! Cast between the types WGSL has: f32, f16 (where the adapter has SHADER_F16) and i32.
//! One thread per element; float to int truncates toward zero as ONNX's Cast does.

use std::sync::Arc;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::dispatch::{bind, groups_1d, launch, GROUP};
use crate::error::GpuError;
use crate::kernels::map::enable_for;
use crate::memory::DeviceMemory;

/// The WGSL type of a dtype the cast shader takes.
pub fn cast_type(dtype: DType) -> Option<&'static str> {
    match dtype {
        DType::Float => Some("f32"),
        DType::Float16 => Some("f16"),
        DType::Int32 => Some("i32"),
        _ => None,
    }
}

fn shader(from: &str, to: &str) -> String {
    let en = enable_for(&[from, to]);
    format!(
        "{en}@group(0) @binding(0) var<storage, read_write> x: array<{from}>;
@group(0) @binding(1) var<storage, read_write> y: array<{to}>;
@group(0) @binding(2) var<storage, read> p: array<u32>;

// p: 0 n, 1 threads per grid row, 2 x_off, 3 y_off
@compute @workgroup_size({GROUP})
fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
    let i = g.x + g.y * p[1];
    if (i >= p[0]) {{ return; }}
    y[p[3] + i] = {to}(x[p[2] + i]);
}}
"
    )
}

/// The cast pipeline from `from` to `to`.
pub fn pipeline(
    mem: &DeviceMemory,
    from: DType,
    to: DType,
) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
    let (Some(f), Some(t)) = (cast_type(from), cast_type(to)) else {
        return Err(GpuError::Device(format!(
            "the gpu Cast has no {from:?} -> {to:?}"
        )));
    };
    mem.context()
        .pipeline(&format!("cast.{f}.{t}"), || shader(f, t))
}

/// A Cast kernel.
pub struct CastKernel {
    mem: Arc<DeviceMemory>,
    pipeline: Arc<wgpu::ComputePipeline>,
    from: DType,
    to: DType,
}

/// Builds the kernel (the target type from `to`).
pub fn create(mem: &Arc<DeviceMemory>, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let from = init.input_type(0).unwrap_or(DType::Float);
    let to = init
        .output_type(0)
        .ok_or_else(|| KernelError::invalid("Cast: the output type is unknown"))?;
    Ok(Box::new(CastKernel {
        mem: mem.clone(),
        pipeline: pipeline(mem, from, to)?,
        from,
        to,
    }))
}

fn size_of(dtype: DType) -> u64 {
    if dtype == DType::Float16 {
        2
    } else {
        4
    }
}

impl Kernel for CastKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        if x.dtype() != self.from {
            return Err(KernelError::invalid(format!(
                "Cast: input is {:?}, the kernel was built for {:?}",
                x.dtype(),
                self.from
            )));
        }
        let shape = x.shape().to_vec();
        let out = ctx.output_bytes(0, self.to, &shape)?;
        if out.is_empty() {
            return Ok(());
        }
        let bx = bind(&self.mem, x.bytes()?, size_of(self.from))?;
        let by = bind(&self.mem, out, size_of(self.to))?;
        let n: usize = shape.iter().product();
        let gpu = self.mem.context();
        let (gx, gy, row) = groups_1d(gpu, n as u64)?;
        let p = [n as u32, row, bx.elem_offset, by.elem_offset];
        launch(gpu, &self.pipeline, &[&bx, &by], &p, (gx, gy, 1))?;
        Ok(())
    }
}
