//! Benchmarks (figures printed, never asserted):
//! 1. Per-node overhead: a chain of 10,000 Adds on 1-element tensors, ns per node for each
//!    executor, beside ONNX Runtime (1 thread) on the same ONNX file when `build/venv` has it
//!    (`bench/ort_overhead.sh` installs it). Bar: sequential ≤ 0.25× ONNX Runtime.
//! 2. Memory planning: the planned activation peak against the lower bound (the largest total of
//!    tensors alive at one step) on the models built here. Bar: ≤ 1.05×.

#[path = "../tests/common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use common::*;
use rge_runtime::{ExecutorKind, Model, Session, SessionOptions};

const NODES_DEFAULT: usize = 10_000;

/// The chain length (`RGE_BENCH_NODES` overrides 10,000).
fn nodes() -> usize {
    std::env::var("RGE_BENCH_NODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(NODES_DEFAULT)
}

/// Timed runs per measurement (`RGE_BENCH_RUNS` overrides 30; more for profiling).
fn runs() -> usize {
    std::env::var("RGE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
}

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn time_per_node(m: &Model, kind: ExecutorKind, runs: usize) -> f64 {
    let x = [tensor(&[1], vec![0.0])];
    for _ in 0..3 {
        m.run_with(&x, kind, None).unwrap();
    }
    let mut best = f64::INFINITY;
    for _ in 0..2 {
        let t = Instant::now();
        for _ in 0..runs {
            let out = m.run_with(&x, kind, None).unwrap();
            assert_eq!(floats(&out[0]), vec![nodes() as f32]);
        }
        best = best.min(t.elapsed().as_secs_f64() / runs as f64);
    }
    best * 1e9 / nodes() as f64
}

fn ort(path: &std::path::Path, runs: usize) -> Vec<(String, f64)> {
    let py = workspace().join("build/venv/bin/python");
    let script = workspace().join("bench/ort_overhead.py");
    if !py.is_file() {
        println!("onnxruntime: build/venv missing (run bench/ort_overhead.sh)");
        return Vec::new();
    }
    let out = Command::new(py)
        .arg(script)
        .arg(path)
        .arg(nodes().to_string())
        .arg(runs.to_string())
        .output();
    let Ok(out) = out else {
        println!("onnxruntime: could not start python");
        return Vec::new();
    };
    if !out.status.success() {
        println!(
            "onnxruntime: unavailable ({})",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::new();
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.as_slice() {
            ["ort_version", ver] => println!("onnxruntime {ver}"),
            ["ort_ns_per_node", name, ns] => {
                if let Ok(ns) = ns.parse() {
                    v.push((name.to_string(), ns));
                }
            }
            _ => {}
        }
    }
    v
}

/// `layers` MatMul + Add + Relu layers of varying widths, with skip Adds between equal widths.
fn ladder(layers: usize, batch: i64) -> rge_formats::onnx_proto::ModelProto {
    let widths: Vec<i64> = (0..=layers)
        .map(|i| [64, 256, 128, 512, 96][i % 5])
        .collect();
    let mut nodes = Vec::new();
    let mut inits = Vec::new();
    let mut prev = "x".to_string();
    let mut hist: Vec<(String, i64)> = vec![(prev.clone(), widths[0])];
    for i in 1..=layers {
        let (wi, wo) = (widths[i - 1], widths[i]);
        inits.push(f32_tensor(
            &format!("w{i}"),
            &[wi, wo],
            &vec![0.01; (wi * wo) as usize],
        ));
        inits.push(f32_tensor(
            &format!("b{i}"),
            &[batch, wo],
            &vec![0.1; (batch * wo) as usize],
        ));
        nodes.push(node(
            "MatMul",
            &format!("mm{i}"),
            &[&prev, &format!("w{i}")],
            &[&format!("m{i}")],
        ));
        nodes.push(node(
            "Add",
            &format!("add{i}"),
            &[&format!("m{i}"), &format!("b{i}")],
            &[&format!("a{i}")],
        ));
        nodes.push(node(
            "Relu",
            &format!("relu{i}"),
            &[&format!("a{i}")],
            &[&format!("h{i}")],
        ));
        let mut cur = format!("h{i}");
        if let Some((skip, _)) = hist.iter().rev().skip(1).find(|(_, w)| *w == wo) {
            nodes.push(node(
                "Add",
                &format!("skip{i}"),
                &[&cur, skip],
                &[&format!("s{i}")],
            ));
            cur = format!("s{i}");
        }
        hist.push((cur.clone(), wo));
        prev = cur;
    }
    nodes.push(node("Relu", "out", &[&prev], &["y"]));
    model(
        graph(
            "ladder",
            nodes,
            vec![vi("x", F32, Some(&[batch, widths[0]]))],
            vec![vi("y", F32, Some(&[batch, widths[layers]]))],
            inits,
        ),
        17,
    )
}

/// Residual blocks in stages (widths 64, 128, 256; a projection MatMul between stages): per block
/// y = Relu(MatMul(Relu(MatMul(x, W1) + b1), W2) + b2 + x).
fn resnet_like(blocks_per_stage: usize, batch: i64) -> rge_formats::onnx_proto::ModelProto {
    let mut nodes = Vec::new();
    let mut inits = Vec::new();
    let mut prev = "x".to_string();
    let mut w_prev = 64i64;
    let mut k = 0usize;
    let lin = |nodes: &mut Vec<_>, inits: &mut Vec<_>, x: &str, wi: i64, wo: i64, k: &mut usize| {
        *k += 1;
        let (w, b, m, a) = (
            format!("w{k}"),
            format!("b{k}"),
            format!("m{k}"),
            format!("a{k}"),
        );
        inits.push(f32_tensor(&w, &[wi, wo], &vec![0.01; (wi * wo) as usize]));
        inits.push(f32_tensor(
            &b,
            &[batch, wo],
            &vec![0.1; (batch * wo) as usize],
        ));
        nodes.push(node("MatMul", &format!("mm{k}"), &[x, &w], &[&m]));
        nodes.push(node("Add", &format!("add{k}"), &[&m, &b], &[&a]));
        a
    };
    for (si, &w) in [64i64, 128, 256].iter().enumerate() {
        if w != w_prev {
            prev = lin(&mut nodes, &mut inits, &prev, w_prev, w, &mut k);
            w_prev = w;
        }
        for bi in 0..blocks_per_stage {
            let a1 = lin(&mut nodes, &mut inits, &prev, w, w, &mut k);
            let h1 = format!("h{si}_{bi}");
            nodes.push(node("Relu", &format!("r1_{si}_{bi}"), &[&a1], &[&h1]));
            let a2 = lin(&mut nodes, &mut inits, &h1, w, w, &mut k);
            let s = format!("s{si}_{bi}");
            nodes.push(node("Add", &format!("res_{si}_{bi}"), &[&a2, &prev], &[&s]));
            let y = format!("y{si}_{bi}");
            nodes.push(node("Relu", &format!("r2_{si}_{bi}"), &[&s], &[&y]));
            prev = y;
        }
    }
    nodes.push(node("Relu", "out", &[&prev], &["y"]));
    model(
        graph(
            "resnet_like",
            nodes,
            vec![vi("x", F32, Some(&[batch, 64]))],
            vec![vi("y", F32, Some(&[batch, 256]))],
            inits,
        ),
        17,
    )
}

fn main() {
    let s = Session::new(SessionOptions {
        threads: 2,
        ..SessionOptions::with_kernels(kernels())
    })
    .unwrap();
    let n = nodes();
    let chain = add_chain(n);
    let dir = workspace().join("build/bench");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("add_chain_{n}.onnx"));
    std::fs::write(&path, bytes_of(&chain)).unwrap();
    let t = Instant::now();
    let m = s.compile_graph(to_graph(&chain)).unwrap();
    println!(
        "add chain: {n} nodes, compile + lower {:.1} ms, arena {} bytes",
        t.elapsed().as_secs_f64() * 1e3,
        m.plan().arena_bytes
    );
    println!("\n1. per-node overhead (ns/node; best of 3 rounds, rge and onnxruntime interleaved)");
    // RGE_BENCH_EXECUTORS=sequential,parallel picks executors; RGE_BENCH_ORT=0 skips onnxruntime.
    let only = std::env::var("RGE_BENCH_EXECUTORS").ok();
    let kinds: Vec<ExecutorKind> = ExecutorKind::ALL
        .into_iter()
        .filter(|k| {
            only.as_ref()
                .is_none_or(|o| o.split(',').any(|x| x == k.name()))
        })
        .collect();
    let with_ort = std::env::var("RGE_BENCH_ORT").map_or(true, |v| v != "0");
    let mut best_rge = vec![f64::INFINITY; kinds.len()];
    let mut best_ort: Vec<(String, f64)> = Vec::new();
    for _round in 0..3 {
        for (i, &kind) in kinds.iter().enumerate() {
            best_rge[i] = best_rge[i].min(time_per_node(&m, kind, runs()));
        }
        if with_ort {
            for (name, ns) in ort(&path, runs()) {
                match best_ort.iter_mut().find(|(n, _)| *n == name) {
                    Some(b) => b.1 = b.1.min(ns),
                    None => best_ort.push((name, ns)),
                }
            }
        }
    }
    let mut seq = f64::NAN;
    for (kind, ns) in kinds.iter().zip(&best_rge) {
        if *kind == ExecutorKind::Sequential {
            seq = *ns;
        }
        println!(
            "  rge {:<12} {ns:>8.1}   (the benchmark's own f32 Add)",
            kind.name()
        );
    }
    // The same chain with rge-kernels-elementwise's Add (broadcasting, every dtype).
    let mut b = rge_kernels::KernelRegistryBuilder::new();
    rge_kernels_elementwise::register(&mut b).unwrap();
    let real = Session::new(SessionOptions::with_kernels(b.build())).unwrap();
    let mr = real.compile_graph(to_graph(&chain)).unwrap();
    let mut seq_real = f64::INFINITY;
    for _ in 0..3 {
        seq_real = seq_real.min(time_per_node(&mr, ExecutorKind::Sequential, runs()));
    }
    println!("  rge sequential  {seq_real:>8.1}   (rge-kernels-elementwise Add)");
    for (name, ns) in &best_ort {
        println!(
            "  onnxruntime ({name:<11}) {ns:>8.1}   rge sequential / ort = {:.3} (own Add), {:.3} (elementwise Add)",
            seq / ns,
            seq_real / ns
        );
    }

    if std::env::var("RGE_BENCH_PLAN").is_ok_and(|v| v == "0") {
        return;
    }
    println!("\n2. memory plan: planned peak vs lower bound");
    // The benchmark's own kernels write Relu in place; rge's elementwise and nn kernels also
    // write Add in place, which makes one buffer of each layer (a harder ladder).
    let mut b = rge_kernels::KernelRegistryBuilder::new();
    rge_kernels_elementwise::register(&mut b).unwrap();
    rge_kernels_nn::register(&mut b).unwrap();
    let real = Session::new(SessionOptions::with_kernels(b.build())).unwrap();
    let models = [
        ("add_chain_10000", chain),
        ("resnet_like_3x4", resnet_like(4, 32)),
        ("resnet_like_3x16", resnet_like(16, 8)),
        ("ladder_40_b32", ladder(40, 32)),
        ("ladder_100_b8", ladder(100, 8)),
    ];
    let mut worst = 1.0f64;
    for (kernels, session) in [("bench", &s), ("rge", &real)] {
        println!("  with the {kernels} kernels:");
        for (name, mp) in &models {
            let t = Instant::now();
            let m = session.compile_graph(to_graph(mp)).unwrap();
            let ms = t.elapsed().as_secs_f64() * 1e3;
            let p = m.plan();
            worst = worst.max(p.ratio());
            println!(
                "    {name:<16} peak {:>10} B  lower bound {:>10} B  ratio {:.3}  (no reuse {} B, {} buffers, {} in place, {} views; compile {ms:.0} ms)",
                p.arena_bytes,
                p.lower_bound,
                p.ratio(),
                p.total_bytes,
                p.buffers,
                p.in_place,
                p.views
            );
        }
    }
    println!("  worst ratio {worst:.3} (bar 1.05)");
}
