//! The `rge` command line.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use rge::cli;

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
    },
    /// Engines: cost, runtime, atomic/composite, stream flags, op types supported.
    Engines {
        #[arg(long)]
        json: bool,
    },
    /// Engine of every node, with the reason.
    Place {
        file: PathBuf,
        /// Engines to leave out, comma separated.
        #[arg(long)]
        exclude_engines: Option<String>,
        /// Core engine type: dense or vector.
        #[arg(long)]
        engine_type: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Per-engine partitions with PlaceHolder/End counts and streams.
    Partition {
        file: PathBuf,
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
        Command::Inspect { file, json, shapes } => {
            if shapes {
                cli::shapes::run(&file, json)
            } else {
                cli::inspect::run(&file, json)
            }
        }
        Command::Ops { json } => cli::ops::run(json),
        Command::Engines { json } => cli::engines::list(json),
        Command::Place {
            file,
            exclude_engines,
            engine_type,
            json,
        } => cli::engines::place(
            &file,
            exclude_engines.as_deref(),
            engine_type.as_deref(),
            json,
        ),
        Command::Partition { file, dot, json } => {
            cli::engines::partition(&file, dot.as_deref(), json)
        }
        Command::Convert { input, output } => cli::convert::run(&input, &output),
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
