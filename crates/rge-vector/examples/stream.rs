//! A STREAM-like measurement of the machine's memory bandwidth (copy, scale, add, triad over
//! arrays far larger than the caches; the median of `--runs`), then the vector engine's large
//! elementwise loops (Add, Mul, Relu, Sigmoid, Erf) on the same arrays, each as a fraction of
//! the STREAM kernel that moves the same bytes (unary ops: copy/scale, 2 arrays; binary: add,
//! 3 arrays). Bytes counted as STREAM does (reads + writes, no write-allocate).
//!
//!   cargo run --release -p rge-vector --example stream -- [--mib 64] [--runs 15] [--threads N] [--json]

use std::time::Instant;

use rayon::prelude::*;
use rge_vector::simd::{self, BinOp, Isa, Src, UnaryOp};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Splits `n` into one chunk per thread (aligned to 16 floats).
fn chunk(n: usize, threads: usize) -> usize {
    n.div_ceil(threads).div_ceil(16) * 16
}

fn time(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    median(
        (0..runs)
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

fn main() {
    let mut mib = 64usize;
    let mut runs = 15usize;
    let mut threads = 1usize;
    let mut json = false;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let val = |i: usize| -> usize {
            args.get(i + 1)
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| {
                    eprintln!("stream: `{}` needs a positive integer", args[i]);
                    std::process::exit(2)
                })
        };
        match args[i].as_str() {
            "--mib" => {
                mib = val(i);
                i += 1
            }
            "--runs" => {
                runs = val(i).max(1);
                i += 1
            }
            "--threads" => {
                threads = val(i).max(1);
                i += 1
            }
            "--json" => json = true,
            other => {
                eprintln!("stream: unknown option `{other}` (--mib, --runs, --threads, --json)");
                std::process::exit(2)
            }
        }
        i += 1;
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");
    let n = mib * (1 << 20) / 4;
    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 / 250.0 - 2.0).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 777) as f32 / 300.0 - 1.0).collect();
    let mut c = vec![0.0f32; n];
    let ch = chunk(n, threads);
    let isa = Isa::best();
    let gbs = |arrays: usize, t: f64| (arrays * n * 4) as f64 / t / 1e9;
    let mut stream = Vec::new();
    pool.install(|| {
        let t = time(runs, || {
            c.par_chunks_mut(ch)
                .zip(a.par_chunks(ch))
                .for_each(|(c, a)| c.copy_from_slice(a))
        });
        stream.push(("copy", gbs(2, t)));
        let t = time(runs, || {
            c.par_chunks_mut(ch)
                .zip(a.par_chunks(ch))
                .for_each(|(c, a)| {
                    for (c, a) in c.iter_mut().zip(a) {
                        *c = 3.0 * a;
                    }
                })
        });
        stream.push(("scale", gbs(2, t)));
        let t = time(runs, || {
            c.par_chunks_mut(ch)
                .zip(a.par_chunks(ch).zip(b.par_chunks(ch)))
                .for_each(|(c, (a, b))| {
                    for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
                        *c = a + b;
                    }
                })
        });
        stream.push(("add", gbs(3, t)));
        let t = time(runs, || {
            c.par_chunks_mut(ch)
                .zip(a.par_chunks(ch).zip(b.par_chunks(ch)))
                .for_each(|(c, (a, b))| {
                    for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
                        *c = a + 3.0 * b;
                    }
                })
        });
        stream.push(("triad", gbs(3, t)));
    });
    let best2 = stream[..2].iter().map(|s| s.1).fold(0.0, f64::max);
    let best3 = stream[2..].iter().map(|s| s.1).fold(0.0, f64::max);
    let mut ops = Vec::new();
    pool.install(|| {
        for (name, op) in [("Add", BinOp::Add), ("Mul", BinOp::Mul)] {
            let t = time(runs, || {
                c.par_chunks_mut(ch)
                    .zip(a.par_chunks(ch).zip(b.par_chunks(ch)))
                    .for_each(|(c, (a, b))| simd::binary(isa, op, Src::Slice(a), Src::Slice(b), c))
            });
            ops.push((name, gbs(3, t), gbs(3, t) / best3));
        }
        for (name, op) in [
            ("Relu", UnaryOp::Relu),
            ("Sigmoid", UnaryOp::Sigmoid),
            ("Erf", UnaryOp::Erf),
        ] {
            let t = time(runs, || {
                c.par_chunks_mut(ch)
                    .zip(a.par_chunks(ch))
                    .for_each(|(c, a)| simd::unary(isa, &op, a, c))
            });
            ops.push((name, gbs(2, t), gbs(2, t) / best2));
        }
    });
    if json {
        let s: Vec<String> = stream
            .iter()
            .map(|(k, v)| format!("\"{k}\": {v:.2}"))
            .collect();
        let o: Vec<String> = ops
            .iter()
            .map(|(k, v, f)| format!("\"{k}\": {{\"gb_s\": {v:.2}, \"fraction\": {f:.3}}}"))
            .collect();
        println!(
            "{{\"mib\": {mib}, \"threads\": {threads}, \"runs\": {runs}, \"isa\": \"{}\", \"stream_gb_s\": {{{}}}, \"ops\": {{{}}}}}",
            isa.name(),
            s.join(", "),
            o.join(", ")
        );
    } else {
        println!(
            "arrays of {mib} MiB, {threads} thread(s), median of {runs}, vector ISA {}",
            isa.name()
        );
        for (k, v) in &stream {
            println!("  STREAM {k:6} {v:8.2} GB/s");
        }
        for (k, v, f) in &ops {
            println!("  vector {k:8} {v:8.2} GB/s  {:5.1}% of STREAM", f * 100.0);
        }
    }
    // Keep the result observable.
    if c.iter().take(4).any(|v| v.is_nan()) {
        eprintln!("stream: NaN in the result");
    }
}
