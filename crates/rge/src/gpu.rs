//! The `gpu` engine in the command line's engine set (cargo feature `gpu`): registered with
//! its memory space when an adapter is found, absent otherwise (`rge engines` says why).

use rge_runtime::EngineSetBuilder;

/// Registers the gpu engine and its memory space when an adapter is found and `RGE_GPU` is
/// not 0; returns why it is absent otherwise.
pub fn register(b: &mut EngineSetBuilder) -> Option<String> {
    match rge_gpu::discover() {
        Ok(ctx) => {
            let gpu = rge_gpu::gpu_engine(ctx);
            b.register(gpu.engine);
            b.memory_space(gpu.allocator);
            None
        }
        Err(e) => Some(e.to_string()),
    }
}

/// The line `rge engines` prints when the engine is absent.
pub fn absent_line() -> String {
    match rge_gpu::discover() {
        Ok(ctx) => format!(
            "gpu: absent (excluded by the engine options; adapter {})",
            ctx.describe()
        ),
        Err(e) => format!("gpu: absent ({e}); every op runs on the other engines"),
    }
}
