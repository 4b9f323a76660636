//! The `rge` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rge::cli;

/// The command line's allocator. glibc's malloc slows down on the millions of small
/// allocations of a large compile (its free-list consolidation grows with the heap: a 300k-node
/// graph took six times as long as a 100k one); mimalloc stays near-linear.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "rge",
    version,
    about = "rge: heterogeneous graph compiler and runtime"
)]
struct Args {
    #[command(subcommand)]
    command: Command,
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
        }
    }
}

#[derive(Subcommand)]
enum Command {
    /// Format, graphs, op type counts, inputs and outputs, weight bytes.
    Inspect {
        file: PathBuf,
        #[arg(long)]
        json: bool,
        /// Infer and print every tensor's dtype and shape.
        #[arg(long)]
        shapes: bool,
        /// NAME=D0,D1,…: fix an input's dims before inference; repeatable.
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shape: Vec<String>,
    },
    /// Engines: cost, runtime, atomic/composite, stream flags, op types supported.
    Engines {
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        engines: EngineOpts,
    },
    /// Engine of every node, with the reason.
    Place {
        file: PathBuf,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        engines: EngineOpts,
    },
    /// For every node: each engine asked with its answer, the engine, partition, stream,
    /// kernel and memory space; the transfers; a summary per engine.
    Explain {
        file: PathBuf,
        #[arg(long)]
        json: bool,
        /// Write an HTML page with the partitioned graph as SVG.
        #[arg(long)]
        html: Option<PathBuf>,
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
        #[arg(long)]
        json: bool,
    },
    /// Registered ops: domain, version range, inputs, outputs, attributes.
    Ops {
        #[arg(long)]
        json: bool,
    },
    /// Convert between .onnx, GE ModelDef .pb/.txt/.pbtxt, .dump and .dot (by extension).
    Convert { input: PathBuf, output: PathBuf },
    /// Compile (or load a compiled model) and run it; inputs from .npy/.pb, random otherwise.
    Run {
        model: PathBuf,
        /// NAME=FILE (.npy or ONNX TensorProto .pb); repeatable.
        #[arg(long = "input")]
        inputs: Vec<String>,
        /// Write every output as DIR/NAME.npy.
        #[arg(long)]
        output_dir: Option<PathBuf>,
        /// sequential, topological, parallel, priority or stream.
        #[arg(long)]
        executor: Option<String>,
        /// Worker threads of the parallel executor.
        #[arg(long)]
        threads: Option<usize>,
        /// Write a Chrome trace of the run.
        #[arg(long)]
        profile: Option<PathBuf>,
        /// NAME=D0,D1,…: fix an input's dims before compiling; repeatable.
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shapes: Vec<String>,
        #[command(flatten)]
        engines: EngineOpts,
    },
    /// Compile once (timed), warm up, time each run: min/median/p90 and time share per op type.
    Bench {
        model: PathBuf,
        /// NAME=FILE (.npy or ONNX TensorProto .pb); repeatable; others are random.
        #[arg(long = "input")]
        inputs: Vec<String>,
        /// NAME=D0,D1,…: fix an input's dims before compiling; repeatable.
        #[arg(long = "shape", value_name = "NAME=DIMS")]
        shapes: Vec<String>,
        /// Executor pool and kernel threads.
        #[arg(long)]
        threads: Option<usize>,
        /// Timed runs.
        #[arg(long, default_value_t = cli::bench::DEFAULT_RUNS)]
        runs: usize,
        /// Untimed runs before the timed ones.
        #[arg(long, default_value_t = cli::bench::DEFAULT_WARMUP)]
        warmup: usize,
        /// sequential, topological, parallel, priority or stream.
        #[arg(long)]
        executor: Option<String>,
        /// Write the outputs of the last timed run as DIR/NAME.npy.
        #[arg(long)]
        output_dir: Option<PathBuf>,
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
        #[arg(long)]
        json: bool,
        /// Exit with an error when fewer tests pass (CI's floor).
        #[arg(long)]
        min_pass: Option<usize>,
        /// Tests run at once (0: one per core).
        #[arg(long, default_value_t = 0)]
        jobs: usize,
    },
    /// Print node names in topological order.
    Sort {
        file: PathBuf,
        #[arg(long, default_value = "dfs", value_parser = cli::sort::parse_mode)]
        mode: rge::ir::SortMode,
        #[arg(long)]
        memory_priority: bool,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    let result = match args.command {
        Command::Inspect {
            file,
            json,
            shapes,
            shape,
        } => {
            if shapes {
                cli::shapes::run_with_shapes(&file, json, &shape)
            } else if let Some(s) = shape.first() {
                Err(cli::CliError::new(format!(
                    "--shape `{s}`: only with --shapes"
                )))
            } else {
                cli::inspect::run(&file, json)
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
            engines,
        } => cli::explain::run(&file, &engines.args(), json, html.as_deref()),
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
            output_dir,
            executor,
            threads,
            profile,
            shapes,
            engines,
        } => cli::run::run_with_shapes(
            &cli::run::RunArgs {
                model,
                inputs,
                output_dir,
                executor,
                threads,
                profile,
                engines: engines.args(),
            },
            &shapes,
        ),
        Command::Bench {
            model,
            inputs,
            shapes,
            threads,
            runs,
            warmup,
            executor,
            output_dir,
            json,
            engines,
        } => cli::bench::run(&cli::bench::BenchArgs {
            model,
            inputs,
            shapes,
            threads,
            executor,
            runs,
            warmup,
            json,
            output_dir,
            engines: engines.args(),
        }),
        Command::Compile {
            model,
            output,
            shapes,
            engines,
        } => cli::compile::run_with_shapes(&model, &output, &engines.args(), &shapes),
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
        } => cli::sort::run(&file, mode, memory_priority),
    };
    match result {
        Ok(out) => {
            print!("{out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("rge: {}", e.message);
            ExitCode::from(e.code.clamp(1, 255) as u8)
        }
    }
}
