//! The one engine set of the command line: every command that places, partitions, compiles,
//! explains or runs builds it here, from the same engine options (`--exclude-engines`,
//! `--engine-type`, `--engine-plugin`), so `rge place` shows the placement `rge run` executes.
//! The engines themselves are rge-runtime's standard set over every kernel family
//! ([`crate::kernels::default_kernels`]: `local`, `cpu`, `host`), the `dense` engine
//! (`rge-dense`: packed GEMM and convolution kernels), the `vector` engine (`rge-vector`: SIMD
//! elementwise, normalization, reduction and pooling kernels), the `fused` engine (`rge-fused`:
//! the composite over dense and vector that fuses elementwise trees), the `rng` engine (`rge-rng`:
//! Philox random generators and training-mode Dropout), the `media` engine (`rge-media`: image
//! decode, resize, crop, colour, normalize), the `rts` engine (`rge-rts`: control flow in the
//! flat program; `--control-flow`), the `cpu_tf` engine (`rge-cpu-tf`: the TensorFlow
//! dialect of GE graphs), then the plugins' engines.

use std::path::PathBuf;
use std::sync::Arc;

use rge_compiler::report;
use rge_runtime::{EngineSet, RuntimeError, RuntimeResult};

/// Op types the local engine runs without computing: graph I/O, constants, views.
pub use rge_runtime::LOCAL_OPS;

/// The engine options of a command.
#[derive(Debug, Clone, Default)]
pub struct EngineArgs {
    /// Engines never chosen, comma separated (rge names or GE accelerator names).
    pub exclude_engines: Option<String>,
    /// The core engine type: dense or vector.
    pub engine_type: Option<String>,
    /// Engine plugins (shared libraries) to load.
    pub plugins: Vec<PathBuf>,
    /// Print each compile stage's time and each graph pass's report.
    pub verbose: bool,
    /// The graph optimization level (`none`, `basic`, `all`; default all).
    pub optimization: Option<String>,
    /// Graph passes to turn off, comma separated.
    pub disable_passes: Option<String>,
    /// How control flow runs: `nested` (subgraph programs) or `rts` (the flat program of the
    /// rts engine); `None`: the default, [`DEFAULT_CONTROL_FLOW`].
    pub control_flow: Option<String>,
    /// The communicator of this rank for the `comm` engine (`None`: a world of one).
    pub comm: Option<Arc<dyn rge_comm::Communicator>>,
}

/// The default of `--control-flow`: `rts`, the faster as measured by `bench/control_flow.sh`
/// (docs/rts-engine.md, "Measured").
pub const DEFAULT_CONTROL_FLOW: &str = "rts";

/// Whether `--control-flow` asks for the rts engine's flat lowering.
fn control_flow_is_rts(arg: Option<&str>) -> RuntimeResult<bool> {
    match arg.unwrap_or(DEFAULT_CONTROL_FLOW) {
        "rts" => Ok(true),
        "nested" => Ok(false),
        other => Err(RuntimeError::Option {
            option: "--control-flow".into(),
            msg: format!("`{other}`: expected nested or rts"),
        }),
    }
}

/// The engine set for `args`: the standard engines, then each plugin's; options checked
/// against the engines (an unknown engine name is an error naming the option).
pub fn engine_set(args: &EngineArgs) -> RuntimeResult<Arc<EngineSet>> {
    let mut options =
        report::cli_options(args.exclude_engines.as_deref(), args.engine_type.as_deref())
            .map_err(|e| RuntimeError::Compile(e.to_string()))?;
    options.verbose = args.verbose;
    if !control_flow_is_rts(args.control_flow.as_deref())? {
        options.exclude_engines.push(rge_rts::RTS.to_string());
    }
    if let Some(level) = &args.optimization {
        options.optimization.level = rge_compiler::options::parse_opt_level(level)
            .map_err(|e| RuntimeError::Compile(format!("--optimization: {e}")))?;
    }
    if let Some(d) = &args.disable_passes {
        options.optimization.disabled = rge_compiler::options::split_engine_list(d);
        let passes = rge_runtime::fold_pass::graph_passes(&crate::kernels::default_kernels());
        rge_compiler::optimize::check_disabled(&passes, &options.optimization)
            .map_err(|e| RuntimeError::Compile(format!("--disable-passes: {e}")))?;
    }
    let mut b = EngineSet::builder(rge_ops::OpRegistry::builtin());
    b.standard_engines(&crate::kernels::default_kernels())?;
    // Before dense (both cost 1): the accelerator wins where it runs an op, so dense's
    // channels-last convolutions (which only it runs) are off while the gpu takes part.
    #[cfg(feature = "gpu")]
    let gpu_in_use = crate::gpu::register(&mut b).is_none()
        && !options.exclude_engines.iter().any(|e| e == rge_gpu::GPU);
    #[cfg(not(feature = "gpu"))]
    let gpu_in_use = false;
    b.register(
        rge_dense::dense_engine_with(!gpu_in_use)
            .map_err(|e| RuntimeError::Compile(e.to_string()))?,
    );
    b.register(rge_vector::vector_engine().map_err(|e| RuntimeError::Compile(e.to_string()))?);
    // The composite over dense and vector: its optimizer fuses elementwise trees.
    b.register(rge_fused::fused_engine().map_err(|e| RuntimeError::Compile(e.to_string()))?);
    b.register(rge_rng::rng_engine().map_err(|e| RuntimeError::Compile(e.to_string()))?);
    b.register(rge_media::media_engine().map_err(|e| RuntimeError::Compile(e.to_string()))?);
    rge_rts::register(&mut b)?;
    b.register(
        rge_cpu_tf::cpu_tf_engine(&crate::kernels::default_kernels())
            .map_err(|e| RuntimeError::Compile(e.to_string()))?,
    );
    let comm = args
        .comm
        .clone()
        .unwrap_or_else(|| Arc::new(rge_comm::solo()));
    b.register(rge_comm::comm_engine(comm).map_err(|e| RuntimeError::Compile(e.to_string()))?);
    for p in &args.plugins {
        b.load_plugin(p)?;
    }
    b.options(options);
    b.build()
}

/// The engine set with default options and no plugin.
pub fn default_engine_set() -> RuntimeResult<Arc<EngineSet>> {
    engine_set(&EngineArgs::default())
}
