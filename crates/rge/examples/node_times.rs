//! Per-node times of a model over warm runs (a profiling aid):
//! `cargo run --release -p rge --example node_times -- MODEL [RUNS] [THREADS]`.

use std::collections::HashMap;
use std::path::PathBuf;

use rge::cli::run::{build, graph_of, session};
use rge::engines::EngineArgs;
use rge_kernels::{DType, Value};
use rge_runtime::{io, ExecutorKind, Profiler};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let model = PathBuf::from(
        args.get(1)
            .ok_or("usage: node_times MODEL [RUNS] [THREADS]")?,
    );
    let runs: usize = args.get(2).map_or(Ok(10), |s| s.parse())?;
    let threads: usize = args.get(3).map_or(Ok(1), |s| s.parse())?;
    let s = session(
        ExecutorKind::Sequential,
        Some(threads),
        Default::default(),
        &EngineArgs::default(),
    )
    .map_err(|e| e.message)?;
    let m = build(&s, &model).map_err(|e| e.message)?;
    let _ = graph_of;
    let inputs: Vec<Value> = m
        .inputs()
        .iter()
        .enumerate()
        .map(|(k, spec)| {
            let dims = spec.dims.clone().unwrap_or_default();
            io::random_tensor(spec.dtype.unwrap_or(DType::Float), &dims, k as u64 + 1)
                .map(Value::Tensor)
        })
        .collect::<Result<_, _>>()?;
    for _ in 0..3 {
        m.run(&inputs)?;
    }
    let p = Profiler::new();
    for _ in 0..runs {
        m.run_with(&inputs, ExecutorKind::Sequential, Some(&p))?;
    }
    let mut by: HashMap<(String, String), f64> = HashMap::new();
    for e in p.events() {
        *by.entry((e.node.clone(), e.kernel.clone())).or_default() += e.dur_us / runs as f64;
    }
    let mut v: Vec<_> = by.into_iter().collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total: f64 = v.iter().map(|x| x.1).sum();
    println!("total {:.3} ms per run", total / 1e3);
    for ((node, kernel), us) in v.iter().take(25) {
        println!("{us:10.1} us  {node:32} {kernel}");
    }
    Ok(())
}
