//! Times the one-pass LSTM cell (a profiling aid): one thread's share of a step of the
//! bench's LSTM (8 batch rows × 256 units), per ISA, best of 7 batches:
//! `cargo run --release -p rge-dense --example lstm_cell_time [UNITS] [ROWS]`.
use rge_dense::gemm::{lstm_cell, Isa};
use rge_kernels_sequence::LstmCellBlock;

fn main() {
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .and_then(|a| a.parse().ok())
            .unwrap_or(d)
    };
    let (units, rows) = (arg(1, 256), arg(2, 8));
    let vals = |k: usize| -> Vec<f32> {
        (0..units)
            .map(|j| ((j * 7 + k * 13) % 41) as f32 / 10.0 - 2.0)
            .collect()
    };
    let ops: Vec<Vec<f32>> = (0..15).map(vals).collect();
    let mut c = vec![vec![0.5f32; units]; rows];
    let mut h = vec![vec![0.0f32; units]; rows];
    for isa in Isa::available() {
        // The portable twin is ~40× slower: fewer repetitions keep it to seconds.
        let reps = if isa == Isa::Scalar { 500 } else { 20_000 };
        let mut best = f64::MAX;
        for _ in 0..7 {
            let t0 = std::time::Instant::now();
            for _ in 0..reps {
                for (c, h) in c.iter_mut().zip(h.iter_mut()) {
                    let mut cell = LstmCellBlock {
                        x: std::array::from_fn(|q| &ops[q][..]),
                        r: std::array::from_fn(|q| &ops[4 + q][..]),
                        bias: std::array::from_fn(|q| &ops[8 + q][..]),
                        peep: std::array::from_fn(|q| &ops[12 + q][..]),
                        c,
                        h,
                    };
                    lstm_cell(isa, &mut cell).expect("consistent operands");
                }
                // Keep the states in range, as a real sequence's are.
                c.iter_mut()
                    .for_each(|c| c.iter_mut().for_each(|v| *v *= 0.5));
            }
            best = best.min(t0.elapsed().as_secs_f64() / reps as f64);
        }
        println!(
            "{isa:?}: {rows} rows × {units} units: {:.2} µs per step, {:.2} ns per unit",
            best * 1e6,
            best * 1e9 / (rows * units) as f64
        );
    }
}
