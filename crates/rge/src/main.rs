//! The `rge` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rge::cli;

#[cfg(feature = "mimalloc")]
mod allocator;

/// The command line's allocator (allocator.rs).
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

#[derive(Parser)]
#[command(
    name = "rge",
    version,
    about = "rge: heterogeneous graph compiler and runtime"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
    /// End with an error, not an out-of-memory kill, when rge's heap would pass SIZE (bytes, or
    /// with K, M, G or T: KiB to TiB; e.g. 4G). Memory-mapped model files are not counted.
    #[arg(long, global = true, value_name = "SIZE")]
    memory_limit: Option<String>,
}

/// Sets `--memory-limit` in the allocator; an error for a bad size, or in a build without the
/// command line's allocator.
fn set_memory_limit(size: &str) -> Result<(), String> {
    let bytes = cli::memory_limit::parse_size(size).map_err(|e| format!("--memory-limit: {e}"))?;
    #[cfg(feature = "mimalloc")]
    {
        let args: Vec<String> = std::env::args().skip(1).collect();
        allocator::set_limit(bytes, format!("running `rge {}`", args.join(" ")));
        Ok(())
    }
    #[cfg(not(feature = "mimalloc"))]
    {
        let _ = bytes;
        Err(
            "--memory-limit: this build has no allocator of its own (the `mimalloc` feature)"
                .into(),
        )
    }
}

/// The engine options every command that places, compiles or runs takes.
#[derive(clap::Args, Debug, Clone, Default)]
struct EngineOpts {
    /// Engines to leave out, comma separated (rge names or GE accelerator names).
    #[arg(long)]
    exclude_engines: Option<String>,
    /// Core engine type: dense or vector.
    #[arg(long)]
    engine_type: Option<String>,
    /// Load an engine plugin (a shared library); repeatable.
    #[arg(long = "engine-plugin")]
    engine_plugins: Vec<PathBuf>,
    /// Print each compile stage's time and what each graph pass did (as RGE_LOG=info does).
    #[arg(long, short = 'v')]
    verbose: bool,
    /// Graph optimization level: none, basic or all (default all; docs/optimizations.md).
    #[arg(long)]
    optimization: Option<String>,
    /// Graph optimization passes to turn off, comma separated (e.g. gelu_fusion,dead_nodes).
    #[arg(long)]
    disable_passes: Option<String>,
    /// How If, Case, While and Loop run: nested (subgraph programs) or rts (the rts engine's
    /// flat program; static shapes) [default: rts].
    #[arg(long, value_parser = ["nested", "rts"])]
    control_flow: Option<String>,
}

/// How `run` and `bench` execute.
#[derive(clap::Args, Debug, Clone)]
struct ExecOpts {
    /// The executor.
    #[arg(long, default_value = "sequential",
        value_parser = ["sequential", "topological", "parallel", "priority", "stream"])]
    executor: String,
    /// Threads: the parallel executor's workers, and each kernel's threads [default: 1].
    #[arg(long)]
    threads: Option<usize>,
    /// Pin the pool's workers to CPUs: auto, on or off (`auto` when the pool has one thread
    /// per CPU the process may use and its kernels use them all; docs/runtime.md).
    #[arg(long, default_value = "auto")]
    pin_threads: rge_runtime::ThreadPinning,
}

/// Distributed runs (`mpirun -np N rge run …`; docs/comm-engine.md).
#[derive(clap::Args, Debug, Clone, Default)]
struct DistOpts {
    /// Split the batch (dim 0 of every input) across the ranks; outputs gathered on rank 0.
    #[arg(long, conflicts_with = "check")]
    data_parallel: bool,
    /// Shard MatMul/Gemm weights across N ranks (N = the number of ranks).
    #[arg(long, value_name = "N", conflicts_with = "check")]
    tensor_parallel: Option<usize>,
    /// NAME=R0,R1,…: a group of ranks for the collectives' `group` attribute; repeatable.
    #[arg(long = "comm-group", value_name = "NAME=RANKS")]
    comm_groups: Vec<String>,
    /// Seconds a collective waits for the other ranks before failing [default: 60].
    #[arg(long, value_name = "SECS")]
    comm_timeout: Option<f64>,
}

impl DistOpts {
    fn args(self) -> cli::distributed::DistArgs {
        cli::distributed::DistArgs {
            data_parallel: self.data_parallel,
            tensor_parallel: self.tensor_parallel,
            groups: self.comm_groups,
            timeout: self.comm_timeout,
        }
    }
}

/// Random inputs of `run` and `bench`.
#[derive(clap::Args, Debug, Clone)]
struct RandomOpts {
    /// Fill the inputs not given by --input with random data (by default only when no input
    /// is given).
    #[arg(long)]
    random_inputs: bool,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = cli::inputs::DEFAULT_SEED)]
    seed: u64,
}

impl RandomOpts {
    fn args(&self) -> cli::inputs::RandomInputs {
        cli::inputs::RandomInputs {
            forced: self.random_inputs,
            seed: Some(self.seed),
        }
    }
}

impl EngineOpts {
    fn args(self) -> rge::engines::EngineArgs {
        rge::engines::EngineArgs {
            exclude_engines: self.exclude_engines,
            engine_type: self.engine_type,
            plugins: self.engine_plugins,
            verbose: self.verbose,
            optimization: self.optimization,
            disable_passes: self.disable_passes,
            control_flow: self.control_flow,
            comm: None,
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Format, graphs, op type counts, inputs and outputs, weight bytes.
    Inspect {
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Infer and print every tensor's dtype and shape.
        #[arg(long)]
        shapes: bool,
        /// NAME=D0,D1,…: fix an input's dims before inference; repeatable.
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shape: Vec<String>,
        /// Count Data, NetOutput and Const nodes among the op types too.
        #[arg(long)]
        all_ops: bool,
    },
    /// Engines: cost, runtime, atomic/composite, stream flags, op types supported.
    Engines {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        engines: EngineOpts,
    },
    /// Engine of every node, with the reason.
    Place {
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        engines: EngineOpts,
    },
    /// For every node: each engine asked with its answer, the engine, partition, stream,
    /// kernel and memory space; the transfers; a summary per engine.
    Explain {
        file: PathBuf,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Write an HTML page with the partitioned graph as SVG.
        #[arg(long)]
        html: Option<PathBuf>,
        /// Explain rank 0's shard of an N-rank tensor-parallel run (docs/comm-engine.md).
        #[arg(long, value_name = "N")]
        tensor_parallel: Option<usize>,
        #[command(flatten)]
        engines: EngineOpts,
    },
    /// Per-engine partitions with PlaceHolder/End counts and streams.
    Partition {
        file: PathBuf,
        #[command(flatten)]
        engines: EngineOpts,
        /// Write a DOT graph with nodes coloured by engine.
        #[arg(long)]
        dot: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Registered ops: domain, version range, inputs, outputs, attributes.
    Ops {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Convert between .onnx, GE ModelDef .pb/.txt/.pbtxt, .dump and .dot (by extension).
    Convert { input: PathBuf, output: PathBuf },
    /// Compile (or load a compiled model) and run it; inputs from .npy/.pb, random when none is
    /// given (or with --random-inputs); or, with --check DIR, run an ONNX test folder and
    /// compare with its outputs.
    Run {
        /// The model (.onnx, GE .pb/.txt, or a compiled model); not with --check.
        #[arg(required_unless_present = "check")]
        model: Option<PathBuf>,
        /// NAME=FILE (.npy or ONNX TensorProto .pb); repeatable, each input once.
        #[arg(long = "input", value_name = "NAME=FILE")]
        inputs: Vec<String>,
        #[command(flatten)]
        random: RandomOpts,
        /// Write every output as DIR/NAME.npy.
        #[arg(long)]
        output_dir: Option<PathBuf>,
        #[command(flatten)]
        exec: ExecOpts,
        /// Write a Chrome trace of the run and print the per-op summary.
        #[arg(long, value_name = "TRACE.json")]
        profile: Option<PathBuf>,
        /// NAME=D0,D1,…: fix an input's dims before compiling; repeatable.
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shapes: Vec<String>,
        /// Run an ONNX test folder (model.onnx + test_data_set_*/) and compare the outputs.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["model", "inputs", "profile", "output_dir", "shapes"])]
        check: Option<PathBuf>,
        /// --check: relative tolerance [default: 1e-3].
        #[arg(long, requires = "check")]
        rtol: Option<f64>,
        /// --check: absolute tolerance [default: 1e-5].
        #[arg(long, requires = "check")]
        atol: Option<f64>,
        #[command(flatten)]
        dist: DistOpts,
        #[command(flatten)]
        engines: EngineOpts,
    },
    /// Compile once (timed), warm up, time each run: min/median/p90, then the per-op profile.
    Bench {
        model: PathBuf,
        /// NAME=FILE (.npy or ONNX TensorProto .pb); repeatable, each input once.
        #[arg(long = "input", value_name = "NAME=FILE")]
        inputs: Vec<String>,
        #[command(flatten)]
        random: RandomOpts,
        /// NAME=D0,D1,…: fix an input's dims before compiling; repeatable.
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shapes: Vec<String>,
        /// Timed runs.
        #[arg(long, default_value_t = cli::bench::DEFAULT_RUNS)]
        runs: usize,
        /// Untimed runs before the timed ones.
        #[arg(long, default_value_t = cli::bench::DEFAULT_WARMUP)]
        warmup: usize,
        #[command(flatten)]
        exec: ExecOpts,
        /// Write the outputs of the last timed run as DIR/NAME.npy.
        #[arg(long)]
        output_dir: Option<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        engines: EngineOpts,
    },
    /// Compile a model and write the compiled model (run it with `rge run OUT`).
    Compile {
        model: PathBuf,
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
        /// NAME=D0,D1,…: fix an input's dims before compiling; repeatable.
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shapes: Vec<String>,
        #[command(flatten)]
        engines: EngineOpts,
    },
    /// Run ONNX backend node-test folders through the whole pipeline and compare outputs.
    Conformance {
        dir: PathBuf,
        /// Only tests whose folder name matches this regex.
        #[arg(long)]
        filter: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
        /// Pass when at least N tests pass (CI's floor); without it any failure fails.
        #[arg(long)]
        min_pass: Option<usize>,
        /// Tests run at once (0: one per core).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
    },
    /// Print node names in topological order.
    Sort {
        file: PathBuf,
        /// The sort order.
        #[arg(long, default_value = "dfs", value_parser = ["bfs", "dfs", "rdfs", "stable-rdfs"])]
        mode: String,
        /// Among ready nodes, prefer those that free memory first.
        #[arg(long)]
        memory_priority: bool,
    },
}

/// Mesa's Vulkan device-select layer (an implicit layer that `mesa-vulkan-drivers` installs)
/// opens a Wayland connection while the gpu engine looks for adapters, and without a session
/// (`XDG_RUNTIME_DIR` unset: CI, containers, cron) libwayland prints an error line on every
/// command. rge picks its adapter through wgpu, so the layer is turned off there, before any
/// thread exists.
#[cfg(feature = "gpu")]
fn quiet_vulkan_layers() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none()
        && std::env::var_os("NODEVICE_SELECT").is_none()
    {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
}

fn main() -> ExitCode {
    #[cfg(feature = "gpu")]
    quiet_vulkan_layers();
    let args = Args::parse();
    if let Some(size) = &args.memory_limit {
        if let Err(e) = set_memory_limit(size) {
            eprintln!("rge: {e}");
            return ExitCode::from(2);
        }
    }
    let result = match args.command {
        Command::Inspect {
            file,
            json,
            shapes,
            shape,
            all_ops,
        } => {
            if shapes {
                cli::shapes::run_with_shapes(&file, json, &shape)
            } else if let Some(s) = shape.first() {
                Err(cli::CliError::new(format!(
                    "--shape `{s}`: only with --shapes"
                )))
            } else {
                cli::inspect::run_with(&file, json, all_ops)
            }
        }
        Command::Ops { json } => cli::ops::run(json),
        Command::Engines { json, engines } => cli::engines::list(&engines.args(), json),
        Command::Place {
            file,
            json,
            engines,
        } => cli::engines::place(&file, &engines.args(), json),
        Command::Explain {
            file,
            json,
            html,
            tensor_parallel,
            engines,
        } => match tensor_parallel {
            Some(n) => {
                cli::explain::run_tensor_parallel(&file, &engines.args(), json, html.as_deref(), n)
            }
            None => cli::explain::run(&file, &engines.args(), json, html.as_deref()),
        },
        Command::Partition {
            file,
            engines,
            dot,
            json,
        } => cli::engines::partition(&file, &engines.args(), dot.as_deref(), json),
        Command::Convert { input, output } => cli::convert::run(&input, &output),
        Command::Run {
            model,
            inputs,
            random,
            output_dir,
            exec,
            profile,
            shapes,
            check,
            rtol,
            atol,
            dist,
            engines,
        } => match (check, model) {
            (Some(dir), _) => cli::run::executor_of(Some(&exec.executor), exec.threads).and_then(
                |(executor, _)| {
                    cli::check::run(&cli::check::CheckArgs {
                        dir: &dir,
                        rtol,
                        atol,
                        executor,
                        threads: exec.threads,
                        pin_threads: exec.pin_threads,
                        engines: &engines.args(),
                    })
                },
            ),
            (None, Some(model)) => {
                let run = cli::run::RunArgs {
                    model,
                    pin_threads: exec.pin_threads,
                    inputs,
                    output_dir,
                    executor: Some(exec.executor),
                    threads: exec.threads,
                    profile,
                    engines: engines.args(),
                    random: random.args(),
                };
                let dist = dist.args();
                if dist.active() || cli::distributed::under_mpi() {
                    cli::distributed::run(&run, &shapes, &dist)
                } else {
                    cli::run::run_with_shapes(&run, &shapes)
                }
            }
            (None, None) => Err(cli::CliError::new("run: give a model, or --check DIR")),
        },
        Command::Bench {
            model,
            inputs,
            random,
            shapes,
            runs,
            warmup,
            exec,
            output_dir,
            json,
            engines,
        } => cli::bench::run(&cli::bench::BenchArgs {
            pin_threads: exec.pin_threads,
            model,
            inputs,
            shapes,
            threads: exec.threads,
            executor: Some(exec.executor),
            runs,
            warmup,
            json,
            output_dir,
            engines: engines.args(),
            random: random.args(),
        }),
        Command::Compile {
            model,
            output,
            shapes,
            engines,
        } => {
            #[cfg(feature = "mimalloc")]
            allocator::tune_for_compile();
            cli::compile::compile_to(&model, &output, &engines.args(), &shapes).map(|c| {
                // The process ends after this command: its exit frees the graph at once.
                std::mem::forget(c.model);
                c.summary
            })
        }
        Command::Conformance {
            dir,
            filter,
            json,
            min_pass,
            jobs,
        } => cli::conformance::run(&cli::conformance::ConformanceArgs {
            dir: &dir,
            filter: filter.as_deref(),
            json,
            min_pass,
            jobs,
        }),
        Command::Sort {
            file,
            mode,
            memory_priority,
        } => cli::sort::parse_mode(&mode)
            .map_err(cli::CliError::new)
            .and_then(|mode| cli::sort::run(&file, mode, memory_priority)),
    };
    match result {
        Ok(out) => {
            print_out(&out);
            ExitCode::SUCCESS
        }
        Err(e) => {
            print_out(&e.output);
            eprintln!("rge: {}", e.message);
            ExitCode::from(e.code.clamp(1, 255) as u8)
        }
    }
}

/// Writes a command's output to stdout. A reader that went away (`rge place … | head -1`) ends
/// the output quietly: a closed pipe is no error of the command.
fn print_out(out: &str) {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(out.as_bytes())
        .and_then(|()| stdout.flush());
}
