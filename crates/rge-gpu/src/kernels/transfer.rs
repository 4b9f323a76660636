//! The transfers the memory-space stage puts at the gpu's borders (`MemcpyAsync`, owned by
//! the engine on the device side). Host → gpu: a queue write, ordered before every later
//! submission, not waited on; a constant (a weight) is uploaded once, when the kernel is built
//! at compile time, and each run copies it device to device. Gpu → host: a copy into a
//! mappable buffer, then the host waits on the queue: the one event a host consumer needs.

use std::sync::mpsc;
use std::sync::Arc;

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};
use wgpu::util::DeviceExt;

use crate::error::GpuError;
use crate::memory::{DeviceMemory, GPU_SPACE};

/// The transfer kernel of one `MemcpyAsync` node.
pub struct Transfer {
    mem: Arc<DeviceMemory>,
    to_device: bool,
    /// A constant's device copy, uploaded when the kernel was built.
    weight: Option<Arc<wgpu::Buffer>>,
}

fn padded(bytes: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    if bytes.len() % 4 == 0 {
        bytes.into()
    } else {
        let mut v = bytes.to_vec();
        v.resize(bytes.len().div_ceil(4) * 4, 0);
        v.into()
    }
}

/// Builds the transfer of a `MemcpyAsync` node whose destination is `_rge_to_space`.
pub fn create(mem: &Arc<DeviceMemory>, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let to = init.str_or(rge_runtime::transfer::TO_SPACE_ATTR, "host")?;
    let to_device = to == GPU_SPACE;
    let weight = match (to_device, init.constant(0)) {
        (true, Some(t)) if !t.is_empty() => {
            let ctx = mem.context();
            let bytes = t
                .view()
                .bytes()
                .map_err(|e| KernelError::invalid(format!("weight upload: {e}")))?;
            if bytes.len() as u64 > ctx.max_binding() {
                return Err(GpuError::Device(format!(
                    "a weight of {} bytes is larger than the adapter's largest binding",
                    bytes.len()
                ))
                .into());
            }
            let buffer = ctx
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(init.node_name),
                    contents: &padded(bytes),
                    usage: wgpu::BufferUsages::COPY_SRC,
                });
            Some(Arc::new(buffer))
        }
        _ => None,
    };
    Ok(Box::new(Transfer {
        mem: mem.clone(),
        to_device,
        weight,
    }))
}

impl Kernel for Transfer {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let src = x.bytes()?;
        let out = ctx.output_bytes(0, x.dtype(), x.shape())?;
        if src.is_empty() {
            return Ok(());
        }
        let gpu = self.mem.context();
        gpu.check_faults()?;
        if self.to_device {
            let dst = self.mem.locate(out)?;
            match &self.weight {
                Some(w) => gpu.record(|enc| {
                    enc.copy_buffer_to_buffer(w, 0, &dst.buffer, dst.offset, w.size());
                })?,
                None => {
                    // The queue runs a write before its next submission: what was recorded
                    // before this write goes first.
                    gpu.flush()?;
                    gpu.queue
                        .write_buffer(&dst.buffer, dst.offset, &padded(src));
                }
            }
            return Ok(());
        }
        let place = self.mem.locate(src)?;
        let size = place.len.div_ceil(4) * 4;
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rge-gpu readback"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        gpu.record(|enc| {
            enc.copy_buffer_to_buffer(&place.buffer, place.offset, &staging, 0, size);
        })?;
        gpu.flush()?;
        let (tx, rx) = mpsc::channel();
        staging
            .slice(..)
            .map_async(wgpu::MapMode::Read, move |r| drop(tx.send(r)));
        gpu.wait()?;
        rx.recv()
            .map_err(|_| GpuError::Device("the readback was dropped".into()))?
            .map_err(|e| GpuError::Device(format!("reading back a tensor: {e}")))?;
        {
            let view = staging
                .slice(..)
                .get_mapped_range()
                .map_err(|e| GpuError::Device(format!("reading back a tensor: {e:?}")))?;
            out.copy_from_slice(&view[..out.len()]);
        }
        staging.unmap();
        Ok(())
    }
}
