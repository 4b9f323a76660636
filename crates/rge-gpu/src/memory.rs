//! The gpu memory space. The runtime plans the space's arena like the host's and asks this
//! allocator for one per run; the arena it hands back is a host-side address range that the
//! runtime slices by the plan's offsets, and each range has a device buffer of the same size
//! behind it. Kernels turn the slices they are lent back into (buffer, offset) and only ever
//! touch the device buffer. The host range is zeroed lazily by the OS (calloc) and never
//! written, so it costs address space, not memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use rge_kernels::MemSpace;
use rge_runtime::memory::SpaceAllocator;

use crate::context::GpuContext;
use crate::error::GpuError;

/// The memory space's name.
pub const GPU_SPACE: &str = "gpu";

/// Arenas kept for the next run (runs of one model ask for the same size).
const POOL: usize = 4;

/// A device arena: the buffer, or why it could not be made.
#[derive(Clone)]
struct Arena {
    len: usize,
    buffer: Result<Arc<wgpu::Buffer>, String>,
}

/// The device arenas alive now, by the address of their host range.
pub struct DeviceMemory {
    ctx: Arc<GpuContext>,
    arenas: Mutex<BTreeMap<usize, Arena>>,
    pool: Mutex<Vec<(Vec<u128>, Arena)>>,
}

/// Where a tensor lives on the device.
#[derive(Clone)]
pub struct DevicePlace {
    pub buffer: Arc<wgpu::Buffer>,
    /// Byte offset in the buffer.
    pub offset: u64,
    /// Byte length of the tensor.
    pub len: u64,
}

impl DeviceMemory {
    pub fn new(ctx: Arc<GpuContext>) -> Arc<DeviceMemory> {
        Arc::new(DeviceMemory {
            ctx,
            arenas: Mutex::default(),
            pool: Mutex::default(),
        })
    }

    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// The device place of a tensor the runtime lent from a gpu arena; an error when the
    /// bytes are not in gpu memory (a missing transfer) or the arena could not be allocated.
    pub fn locate(&self, bytes: &[u8]) -> Result<DevicePlace, GpuError> {
        let addr = bytes.as_ptr() as usize;
        let arenas = self
            .arenas
            .lock()
            .map_err(|_| GpuError::Device("arena table poisoned".into()))?;
        let (&base, arena) = arenas
            .range(..=addr)
            .next_back()
            .filter(|(&b, a)| addr + bytes.len() <= b + a.len)
            .ok_or_else(|| GpuError::Device("tensor is not in gpu memory".into()))?;
        let buffer = arena.buffer.clone().map_err(GpuError::OutOfMemory)?;
        Ok(DevicePlace {
            buffer,
            offset: (addr - base) as u64,
            len: bytes.len() as u64,
        })
    }

    fn make_buffer(&self, bytes: u64) -> Result<Arc<wgpu::Buffer>, String> {
        if bytes > self.ctx.limits.max_buffer_size {
            return Err(format!(
                "the gpu arena needs {bytes} bytes; the adapter's largest buffer is {} bytes",
                self.ctx.limits.max_buffer_size
            ));
        }
        let scope = self
            .ctx
            .device
            .push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let buffer = self.ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rge-gpu arena"),
            size: bytes,
            usage: wgpu::BufferUsages::STORAGE
                | wgpu::BufferUsages::COPY_SRC
                | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        match pollster::block_on(scope.pop()) {
            Some(e) => Err(format!("an arena of {bytes} bytes: {e}")),
            None => Ok(Arc::new(buffer)),
        }
    }
}

/// The runtime's allocator of the gpu space.
pub struct GpuAllocator(pub Arc<DeviceMemory>);

impl SpaceAllocator for GpuAllocator {
    fn space(&self) -> MemSpace {
        MemSpace::new(GPU_SPACE)
    }

    fn alloc_arena(&self, bytes: usize) -> Vec<u128> {
        let words = bytes.div_ceil(16).max(1);
        let reused = self.0.pool.lock().ok().and_then(|mut pool| {
            let k = pool.iter().position(|(v, _)| v.len() == words)?;
            Some(pool.swap_remove(k))
        });
        let (host, arena) = match reused {
            Some(p) => p,
            None => {
                let host = vec![0u128; words];
                let len = words * 16;
                let buffer = self.0.make_buffer(len as u64);
                (host, Arena { len, buffer })
            }
        };
        if let Ok(mut arenas) = self.0.arenas.lock() {
            arenas.insert(host.as_ptr() as usize, arena);
        }
        host
    }

    fn free_arena(&self, arena: Vec<u128>) {
        let removed = self
            .0
            .arenas
            .lock()
            .ok()
            .and_then(|mut a| a.remove(&(arena.as_ptr() as usize)));
        if let (Some(dev), Ok(mut pool)) = (removed, self.0.pool.lock()) {
            if dev.buffer.is_ok() && pool.len() < POOL {
                pool.push((arena, dev));
            }
        }
    }
}

/// A kernel's own device buffer for values between its dispatches (split-K partial sums, a
/// resize's intermediate axes): made on first use, grown when a larger one is needed. The
/// dispatches that use it are recorded together, so runs on several threads do not mix.
#[derive(Default)]
pub struct Scratch(Mutex<Option<Arc<wgpu::Buffer>>>);

impl Scratch {
    /// The buffer, at least `bytes` long.
    pub fn get(&self, ctx: &GpuContext, bytes: u64) -> Result<Arc<wgpu::Buffer>, GpuError> {
        let mut s = self
            .0
            .lock()
            .map_err(|_| GpuError::Device("scratch buffer poisoned".into()))?;
        if let Some(b) = s.as_ref().filter(|b| b.size() >= bytes) {
            return Ok(b.clone());
        }
        if bytes > ctx.limits.max_buffer_size {
            return Err(GpuError::OutOfMemory(format!(
                "{bytes} bytes of scratch; the adapter's largest buffer is {} bytes",
                ctx.limits.max_buffer_size
            )));
        }
        let b = Arc::new(ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("rge-gpu scratch"),
            size: bytes.max(4),
            usage: wgpu::BufferUsages::STORAGE,
            mapped_at_creation: false,
        }));
        *s = Some(b.clone());
        Ok(b)
    }
}
