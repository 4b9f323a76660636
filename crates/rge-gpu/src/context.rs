//! The adapter, device and queue the gpu engine runs on, found once per engine set; the
//! compiled pipelines (cached by name); the device's fault flags (lost, uncaptured errors),
//! which every kernel checks so a fault is a clear error instead of a hang.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::GpuError;

/// The environment variable that turns the engine off (`RGE_GPU=0`) or lets it run on a
/// software adapter (`RGE_GPU=1`: Mesa's lavapipe, SwiftShader, WARP), which it skips by
/// default: a CPU rasterizer is slower than the host engines, so it is for tests, not use.
pub const GPU_ENV: &str = "RGE_GPU";

/// The environment variable that makes every recorded command wait for the device
/// (`RGE_GPU_SYNC=1`): per-op profiles then show each kernel's device time, as
/// CUDA_LAUNCH_BLOCKING does for CUDA.
pub const GPU_SYNC_ENV: &str = "RGE_GPU_SYNC";

/// How long the host waits on the queue before a wait is an error (a hung device).
const WAIT_LIMIT: Duration = Duration::from_secs(600);

/// One adapter's device and queue, with what the engine needs to know about them.
pub struct GpuContext {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    pub info: wgpu::AdapterInfo,
    pub limits: wgpu::Limits,
    /// The adapter has SHADER_F16 (and the device was created with it).
    pub f16: bool,
    faults: Arc<Mutex<Option<String>>>,
    pipelines: Mutex<HashMap<String, Result<Arc<wgpu::ComputePipeline>, String>>>,
    /// Commands recorded and not yet submitted, and how many.
    pending: Mutex<Option<(wgpu::CommandEncoder, usize)>>,
    /// Wait for the device after every command (`RGE_GPU_SYNC=1`).
    sync: bool,
}

/// Commands recorded before the queue is given them: one submission costs far more than one
/// recorded dispatch, and the device starts on a batch while the host records the next.
const BATCH: usize = 32;

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "GpuContext({} on {:?})",
            self.info.name, self.info.backend
        )
    }
}

/// Finds an adapter and opens its device: `Err` says why the engine is absent (turned off by
/// `RGE_GPU=0`, no adapter, the device refused).
pub fn discover() -> Result<Arc<GpuContext>, GpuError> {
    let setting = std::env::var(GPU_ENV).unwrap_or_default();
    if setting.trim() == "0" {
        return Err(GpuError::Absent(format!("turned off by {GPU_ENV}=0")));
    }
    let allow_software = setting.trim() == "1";
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::PRIMARY;
    let instance = wgpu::Instance::new(desc);
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        force_fallback_adapter: false,
        compatible_surface: None,
        apply_limit_buckets: false,
    }))
    .map_err(|e| GpuError::Absent(format!("no gpu adapter (Vulkan, Metal or DX12): {e}")))?;
    let info = adapter.get_info();
    if info.device_type == wgpu::DeviceType::Cpu && !allow_software {
        return Err(GpuError::Absent(format!(
            "only a software adapter, `{}` ({:?}); {GPU_ENV}=1 uses it",
            info.name, info.backend
        )));
    }
    let f16 = adapter.features().contains(wgpu::Features::SHADER_F16);
    let features = if f16 {
        wgpu::Features::SHADER_F16
    } else {
        wgpu::Features::empty()
    };
    // Take every limit the adapter offers: large models need its largest buffers.
    let limits = adapter.limits();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("rge-gpu"),
        required_features: features,
        required_limits: limits.clone(),
        ..Default::default()
    }))
    .map_err(|e| GpuError::Absent(format!("gpu adapter `{}` refused a device: {e}", info.name)))?;
    let faults: Arc<Mutex<Option<String>>> = Arc::default();
    let lost = faults.clone();
    device.set_device_lost_callback(move |reason, msg| {
        if let Ok(mut f) = lost.lock() {
            f.get_or_insert(format!("device lost ({reason:?}): {msg}"));
        }
    });
    let uncaptured = faults.clone();
    // The default handler panics; a device error becomes the next kernel's error instead.
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        if let Ok(mut f) = uncaptured.lock() {
            f.get_or_insert(e.to_string());
        }
    }));
    Ok(Arc::new(GpuContext {
        device,
        queue,
        info,
        limits,
        f16,
        faults,
        pipelines: Mutex::default(),
        pending: Mutex::default(),
        sync: std::env::var(GPU_SYNC_ENV).is_ok_and(|v| v.trim() == "1"),
    }))
}

impl GpuContext {
    /// One line about the adapter, for `rge engines` and the docs.
    pub fn describe(&self) -> String {
        format!(
            "{} ({:?}, {:?}){}",
            self.info.name,
            self.info.backend,
            self.info.device_type,
            if self.f16 { ", f16" } else { "" }
        )
    }

    /// The first fault the device reported (lost, an error no scope caught), as an error.
    pub fn check_faults(&self) -> Result<(), GpuError> {
        match self.faults.lock().ok().and_then(|f| f.clone()) {
            Some(msg) if msg.starts_with("device lost") => Err(GpuError::DeviceLost(msg)),
            Some(msg) if msg.to_lowercase().contains("out of memory") => {
                Err(GpuError::OutOfMemory(msg))
            }
            Some(msg) => Err(GpuError::Device(msg)),
            None => Ok(()),
        }
    }

    /// The largest tensor one binding can hold, in bytes.
    pub fn max_binding(&self) -> u64 {
        self.limits
            .max_storage_buffer_binding_size
            .min(self.limits.max_buffer_size)
    }

    /// The pipeline of the WGSL shader `name` (entry `main`), compiled on first use and
    /// cached; a shader that fails to compile is an error naming it (and stays failed).
    pub fn pipeline(
        &self,
        name: &str,
        source: impl FnOnce() -> String,
    ) -> Result<Arc<wgpu::ComputePipeline>, GpuError> {
        let mut cache = self
            .pipelines
            .lock()
            .map_err(|_| GpuError::Device("pipeline cache poisoned".into()))?;
        let entry = cache
            .entry(name.to_string())
            .or_insert_with(|| self.compile(name, &source()));
        entry.clone().map_err(|msg| GpuError::Shader {
            name: name.to_string(),
            msg,
        })
    }

    fn compile(&self, name: &str, source: &str) -> Result<Arc<wgpu::ComputePipeline>, String> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self
            .device
            .create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some(name),
                source: wgpu::ShaderSource::Wgsl(source.into()),
            });
        let pipeline = self
            .device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(name),
                layout: None,
                module: &module,
                entry_point: Some("main"),
                compilation_options: Default::default(),
                cache: None,
            });
        match pollster::block_on(scope.pop()) {
            Some(e) => Err(e.to_string()),
            None => Ok(Arc::new(pipeline)),
        }
    }

    /// Records commands on the stream (submitted in order with the ones before; the queue
    /// gets them in batches, and at every [`GpuContext::flush`]).
    pub fn record(&self, f: impl FnOnce(&mut wgpu::CommandEncoder)) -> Result<(), GpuError> {
        self.check_faults()?;
        let mut pending = self
            .pending
            .lock()
            .map_err(|_| GpuError::Device("command recorder poisoned".into()))?;
        let (encoder, count) = pending.get_or_insert_with(|| {
            let e = self
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
            (e, 0)
        });
        f(encoder);
        *count += 1;
        if *count >= BATCH || self.sync {
            if let Some((e, _)) = pending.take() {
                self.queue.submit(Some(e.finish()));
            }
        }
        drop(pending);
        if self.sync {
            self.wait()?;
        }
        Ok(())
    }

    /// Submits what was recorded (before a queue write, which the queue orders before the
    /// next submission, and before the host waits).
    ///
    /// The submission happens under the recorder's lock: a thread that finds nothing pending
    /// knows that everything recorded before (by any thread) is on the queue, so its read-back
    /// or queue write is ordered after it.
    pub fn flush(&self) -> Result<(), GpuError> {
        let mut pending = self
            .pending
            .lock()
            .map_err(|_| GpuError::Device("command recorder poisoned".into()))?;
        if let Some((e, _)) = pending.take() {
            self.queue.submit(Some(e.finish()));
        }
        Ok(())
    }

    /// Blocks until the queue has finished everything recorded (an event the host waits
    /// on); a device that does not finish within the limit is an error, not a hang.
    pub fn wait(&self) -> Result<(), GpuError> {
        self.flush()?;
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: Some(WAIT_LIMIT),
            })
            .map_err(|e| GpuError::Device(format!("waiting on the queue: {e}")))?;
        self.check_faults()
    }
}
