//! Times one packed-B GEMM `[m, k] · [k, n]` (an LSTM step's `H·Rᵀ` by default) at 1 and 2
//! threads: `cargo run --release -p rge-dense --example packed_time [M K N]`.

use rge_dense::gemm::{self, AOperand, BOperand, Epilogue, GemmParams, PackedB};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (m, k, n) = match args[..] {
        [m, k, n] => (m, k, n),
        _ => (8, 512, 2048),
    };
    let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 * 0.1).collect();
    let b: Vec<f32> = (0..k * n).map(|i| (i % 5) as f32 * 0.1).collect();
    let packed = PackedB::pack(&b, k, n, k, true).expect("pack");
    let mut c = vec![0f32; m * n];
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut times = Vec::new();
        pool.install(|| {
            for _ in 0..600 {
                let t = std::time::Instant::now();
                let p = GemmParams::new(m, n, k);
                let a = AOperand::Raw {
                    data: &a,
                    ld: k,
                    trans: false,
                };
                gemm::sgemm(
                    &p,
                    a,
                    BOperand::Packed(&packed),
                    &mut c,
                    n,
                    &Epilogue::default(),
                    threads,
                )
                .expect("gemm");
                times.push(t.elapsed().as_secs_f64() * 1e6);
            }
        });
        times.sort_by(f64::total_cmp);
        let gf = 2.0 * (m * n * k) as f64 / times[0] / 1e3;
        println!(
            "{threads} thread(s): min {:.1} us  median {:.1} us  ({gf:.1} GFLOP/s at min)",
            times[0],
            times[times.len() / 2]
        );
    }
}
