//! SGEMM throughput: 2048³ f32 (or `RGE_GEMM_N`) on 1 and 2 threads, raw and prepacked B,
//! median of several runs, in GFLOP/s. `cargo bench -p rge-dense --bench gemm`.
//! Options (environment): `RGE_GEMM_N=1024`, `RGE_GEMM_RUNS=9`, `RGE_GEMM_ISA=avx2`.

use std::time::Instant;

use rge_dense::gemm::{sgemm_isa, AOperand, BOperand, Epilogue, GemmParams, Isa, PackedA, PackedB};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Nanoseconds this thread has run on a CPU (Linux), to see through time-slicing on a shared
/// machine; `None` elsewhere.
fn thread_cpu_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

fn main() {
    let n = env("RGE_GEMM_N", 2048);
    let runs = env("RGE_GEMM_RUNS", 9).max(1);
    let isa = match std::env::var("RGE_GEMM_ISA").as_deref() {
        Ok("scalar") => Isa::Scalar,
        Ok("avx2") => Isa::Avx2,
        Ok("avx512") => Isa::Avx512,
        _ => Isa::best(),
    };
    // RGE_GEMM_SHAPE=m,n,k for another shape; RGE_GEMM_REPS calls per timed sample.
    let shape: Vec<usize> = std::env::var("RGE_GEMM_SHAPE")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default();
    let (m, n, k) = match shape[..] {
        [m, n, k] => (m, n, k),
        _ => (n, n, n),
    };
    let reps = env("RGE_GEMM_REPS", 1).max(1);
    let a: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0)
        .collect();
    let b: Vec<f32> = (0..k * n)
        .map(|i| ((i * 5 % 11) as f32 - 5.0) / 8.0)
        .collect();
    let mut c = vec![0.0f32; m * n];
    let packed = PackedB::pack(&b, k, n, n, false).expect("pack B");
    let p = GemmParams::new(m, n, k);
    // RGE_GEMM_PACKED_A=1: A prepacked too (the kernel without any packing).
    let packed_a = PackedA::pack(&a, m, k, k, false).expect("pack A");
    let aop = if env("RGE_GEMM_PACKED_A", 0) == 1 {
        AOperand::Packed(&packed_a)
    } else {
        AOperand::Raw {
            data: &a,
            ld: k,
            trans: false,
        }
    };
    let flops = 2.0 * (m * n * k) as f64 * reps as f64;
    println!(
        "sgemm {m}x{n}x{k} f32, isa {}, median of {runs}",
        isa.name()
    );
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("rayon pool");
        for packed_b in [false, true] {
            let bop = if packed_b {
                BOperand::Packed(&packed)
            } else {
                BOperand::Raw {
                    data: &b,
                    ld: n,
                    trans: false,
                }
            };
            let mut times = Vec::with_capacity(runs);
            let mut cpu = Vec::with_capacity(runs);
            pool.install(|| {
                for r in 0..runs + 1 {
                    let c0 = thread_cpu_ns();
                    let t0 = Instant::now();
                    for _ in 0..reps {
                        sgemm_isa(isa, &p, aop, bop, &mut c, n, &Epilogue::NONE, threads)
                            .expect("sgemm");
                    }
                    // The first run warms the buffers and caches.
                    if r > 0 {
                        times.push(t0.elapsed().as_secs_f64());
                        if let (Some(a), Some(b)) = (c0, thread_cpu_ns()) {
                            cpu.push((b - a) as f64 * 1e-9);
                        }
                    }
                }
            });
            times.sort_by(f64::total_cmp);
            cpu.sort_by(f64::total_cmp);
            let med = times[times.len() / 2];
            // With one thread the work runs on this thread, so its CPU time is the work's.
            let cpu_note = match (threads, cpu.get(cpu.len() / 2), cpu.first()) {
                (1, Some(&c), Some(&c0)) => format!(
                    "; by CPU time {:.1}, best {:.1}",
                    flops / c / 1e9,
                    flops / c0 / 1e9
                ),
                _ => String::new(),
            };
            println!(
                "  threads {threads}  B {:<6}  {:7.1} GFLOP/s  (median {:.2} ms, best {:.1} GFLOP/s{cpu_note})",
                if packed_b { "packed" } else { "raw" },
                flops / med / 1e9,
                med * 1e3,
                flops / times[0] / 1e9
            );
        }
    }
    std::hint::black_box(&c);
}
