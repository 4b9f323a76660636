//! Launching a compute shader on the queue (the gpu stream): each tensor is bound as its own
//! storage range (the offset aligned down to the adapter's binding alignment, the remainder
//! passed to the shader as an element offset), the parameters as one read-only buffer of u32
//! words; the dispatch is recorded on the stream and not waited on.

use std::sync::Arc;

use wgpu::util::DeviceExt;

use crate::context::GpuContext;
use crate::error::GpuError;
use crate::memory::{DeviceMemory, DevicePlace};

/// Threads per workgroup of the one-dimensional shaders.
pub const GROUP: u32 = 64;

/// One tensor bound to a shader.
pub struct Bound {
    pub place: DevicePlace,
    /// Start of the binding (aligned).
    pub start: u64,
    /// Size of the binding.
    pub size: u64,
    /// Where the tensor begins inside the binding, in elements.
    pub elem_offset: u32,
}

impl Bound {
    /// `len` bytes at `offset` (a multiple of the adapter's binding alignment) of a kernel's
    /// own buffer.
    pub fn own(buffer: &Arc<wgpu::Buffer>, offset: u64, len: u64) -> Bound {
        Bound {
            place: DevicePlace {
                buffer: buffer.clone(),
                offset,
                len,
            },
            start: offset,
            size: len.div_ceil(4).max(1) * 4,
            elem_offset: 0,
        }
    }
}

/// Binds the tensor in `bytes` (elements of `elem` bytes).
pub fn bind(mem: &DeviceMemory, bytes: &[u8], elem: u64) -> Result<Bound, GpuError> {
    let place = mem.locate(bytes)?;
    let ctx = mem.context();
    let align = u64::from(ctx.limits.min_storage_buffer_offset_alignment).max(4);
    let start = place.offset / align * align;
    let rem = place.offset - start;
    let size = (rem + place.len).div_ceil(4).max(1) * 4;
    let size = size.min(place.buffer.size() - start);
    if size > ctx.max_binding() {
        return Err(GpuError::Device(format!(
            "a tensor of {} bytes is larger than the adapter's largest binding ({} bytes)",
            place.len,
            ctx.max_binding()
        )));
    }
    Ok(Bound {
        elem_offset: (rem / elem) as u32,
        place,
        start,
        size,
    })
}

/// Workgroup counts for `n` threads of a one-dimensional shader: (x, y) within the
/// per-dimension limit, and the threads per row of groups (`x * GROUP`).
pub fn groups_1d(ctx: &GpuContext, n: u64) -> Result<(u32, u32, u32), GpuError> {
    let max = u64::from(ctx.limits.max_compute_workgroups_per_dimension).max(1);
    let groups = n.div_ceil(u64::from(GROUP)).max(1);
    let x = groups.min(max);
    let y = groups.div_ceil(x);
    if y > max {
        return Err(GpuError::Device(format!(
            "{n} elements exceed the adapter's dispatch limits"
        )));
    }
    Ok((x as u32, y as u32, x as u32 * GROUP))
}

/// Workgroup counts for `n` workgroups (one per row, say): (x, y) within the per-dimension
/// limit, and x (the workgroups per row of the grid).
pub fn groups_2d(ctx: &GpuContext, n: u64) -> Result<(u32, u32, u32), GpuError> {
    let max = u64::from(ctx.limits.max_compute_workgroups_per_dimension).max(1);
    let x = n.clamp(1, max);
    let y = n.div_ceil(x);
    if y > max {
        return Err(GpuError::Device(format!(
            "{n} workgroups exceed the adapter's dispatch limits"
        )));
    }
    Ok((x as u32, y as u32, x as u32))
}

/// One dispatch: a pipeline, its tensors (bindings 0..), its parameter words (the next
/// binding) and its workgroup counts.
pub struct Dispatch<'a> {
    pub pipeline: &'a Arc<wgpu::ComputePipeline>,
    pub tensors: Vec<&'a Bound>,
    pub params: Vec<u32>,
    pub groups: (u32, u32, u32),
}

/// Records one dispatch of `pipeline` over `tensors` (bindings 0..) and `params` (the next
/// binding) on the stream, without waiting.
pub fn launch(
    ctx: &GpuContext,
    pipeline: &Arc<wgpu::ComputePipeline>,
    tensors: &[&Bound],
    params: &[u32],
    groups: (u32, u32, u32),
) -> Result<(), GpuError> {
    launch_all(
        ctx,
        &[Dispatch {
            pipeline,
            tensors: tensors.to_vec(),
            params: params.to_vec(),
            groups,
        }],
    )
}

/// Records `dispatches` one after the other with nothing between them (a kernel whose
/// dispatches share its own scratch buffer stays whole when two runs record at once).
pub fn launch_all(ctx: &GpuContext, dispatches: &[Dispatch<'_>]) -> Result<(), GpuError> {
    ctx.check_faults()?;
    let groups: Vec<wgpu::BindGroup> = dispatches.iter().map(|d| bind_group(ctx, d)).collect();
    ctx.record(|encoder| {
        for (d, group) in dispatches.iter().zip(&groups) {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            pass.set_pipeline(d.pipeline);
            pass.set_bind_group(0, group, &[]);
            pass.dispatch_workgroups(d.groups.0, d.groups.1, d.groups.2);
        }
    })
}

fn bind_group(ctx: &GpuContext, d: &Dispatch<'_>) -> wgpu::BindGroup {
    let params = ctx
        .device
        .create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("rge-gpu params"),
            contents: bytemuck::cast_slice(if d.params.is_empty() { &[0] } else { &d.params }),
            usage: wgpu::BufferUsages::STORAGE,
        });
    let mut entries: Vec<wgpu::BindGroupEntry<'_>> = d
        .tensors
        .iter()
        .enumerate()
        .map(|(i, t)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &t.place.buffer,
                offset: t.start,
                size: wgpu::BufferSize::new(t.size),
            }),
        })
        .collect();
    entries.push(wgpu::BindGroupEntry {
        binding: d.tensors.len() as u32,
        resource: params.as_entire_binding(),
    });
    let layout = d.pipeline.get_bind_group_layout(0);
    ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &layout,
        entries: &entries,
    })
}
