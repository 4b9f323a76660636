//! SGEMM throughput: 2048³ f32 on 1 and 2 threads (a rayon pool of that size), raw and
//! prepacked B, median of several runs, in GFLOP/s. `cargo bench -p rge-dense --bench gemm`.
//!
//! Options (environment): `RGE_GEMM_N=1024` (a cube), `RGE_GEMM_SHAPE=m,n,k`, `RGE_GEMM_RUNS=9`,
//! `RGE_GEMM_REPS=1` (calls per timed run, for small shapes), `RGE_GEMM_ISA=scalar|avx2|avx512`,
//! `RGE_GEMM_PACKED_A=1` (A prepacked too: no packing at all in the call).
//! Compare with the FMA peak measured in the same session (`/work/shared/bench/fma_peak.c`):
//! machines here are shared, so only ratios measured together mean anything.

use std::time::Instant;

use rge_dense::gemm::{sgemm_isa, AOperand, BOperand, Epilogue, GemmParams, Isa, PackedA, PackedB};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let cube = env("RGE_GEMM_N", 2048);
    let runs = env("RGE_GEMM_RUNS", 9).max(1);
    let reps = env("RGE_GEMM_REPS", 1).max(1);
    let isa = match std::env::var("RGE_GEMM_ISA").as_deref() {
        Ok("scalar") => Isa::Scalar,
        Ok("avx2") => Isa::Avx2,
        Ok("avx512") => Isa::Avx512,
        _ => Isa::best(),
    };
    let shape: Vec<usize> = std::env::var("RGE_GEMM_SHAPE")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default();
    let (m, n, k) = match shape[..] {
        [m, n, k] => (m, n, k),
        _ => (cube, cube, cube),
    };
    let a: Vec<f32> = (0..m * k)
        .map(|i| ((i * 7 % 13) as f32 - 6.0) / 8.0)
        .collect();
    let b: Vec<f32> = (0..k * n)
        .map(|i| ((i * 5 % 11) as f32 - 5.0) / 8.0)
        .collect();
    // C starts on a cache line, as an arena slot does.
    let mut c_buf = vec![0.0f32; m * n + 16];
    let off = (64 - c_buf.as_ptr() as usize % 64) % 64 / 4;
    let c = &mut c_buf[off..off + m * n];
    let packed_b = PackedB::pack(&b, k, n, n, false).expect("pack B");
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
    let p = GemmParams::new(m, n, k);
    let flops = 2.0 * (m * n * k) as f64 * reps as f64;
    println!(
        "sgemm {m}x{n}x{k} f32, isa {}, A {}, median of {runs}",
        isa.name(),
        match aop {
            AOperand::Packed(_) => "packed",
            AOperand::Raw { .. } => "raw",
        }
    );
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("rayon pool");
        for prepacked in [false, true] {
            let bop = if prepacked {
                BOperand::Packed(&packed_b)
            } else {
                BOperand::Raw {
                    data: &b,
                    ld: n,
                    trans: false,
                }
            };
            let mut times = Vec::with_capacity(runs);
            pool.install(|| {
                // The first run warms the packing buffers and the caches.
                for r in 0..=runs {
                    let t0 = Instant::now();
                    for _ in 0..reps {
                        sgemm_isa(isa, &p, aop, bop, c, n, &Epilogue::NONE, threads)
                            .expect("sgemm");
                    }
                    if r > 0 {
                        times.push(t0.elapsed().as_secs_f64());
                    }
                }
            });
            times.sort_by(f64::total_cmp);
            let med = times[times.len() / 2];
            println!(
                "  threads {threads}  B {:<6}  {:7.1} GFLOP/s  (median {:.2} ms; best {:.1} GFLOP/s)",
                if prepacked { "packed" } else { "raw" },
                flops / med / 1e9,
                med * 1e3,
                flops / times[0] / 1e9
            );
        }
    }
    std::hint::black_box(&c_buf);
}
