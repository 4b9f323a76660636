//! The dense engine's one-pass LSTM cell on every ISA against the cell's formula in f64, over
//! lengths that leave vector tails, values far into the activations' tails, and NaN.

use proptest::prelude::*;
use rge_dense::gemm::{lstm_cell, Isa};
use rge_kernels_sequence::LstmCellBlock;

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// (c, h) after one update, in f64 from the f32 sums `x + r + b` (the kernel's first
/// rounding, so what is compared is the cell's math).
fn reference(
    x: &[Vec<f32>],
    r: &[Vec<f32>],
    b: &[Vec<f32>],
    p: &[Vec<f32>],
    c: &[f32],
) -> (Vec<f64>, Vec<f64>) {
    let pre = |q: usize, j: usize| (x[q][j] + r[q][j] + b[q][j]) as f64;
    (0..c.len())
        .map(|j| {
            let c0 = c[j] as f64;
            let i = sigmoid(pre(0, j) + p[0][j] as f64 * c0);
            let f = sigmoid(pre(2, j) + p[2][j] as f64 * c0);
            let g = pre(3, j).tanh();
            let c1 = f * c0 + i * g;
            let o = sigmoid(pre(1, j) + p[1][j] as f64 * c1);
            (c1, o * c1.tanh())
        })
        .unzip()
}

/// Runs the cell on `isa`, returning (c, h).
fn run(
    isa: Isa,
    x: &[Vec<f32>],
    r: &[Vec<f32>],
    b: &[Vec<f32>],
    p: &[Vec<f32>],
    c: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let (mut c, mut h) = (c.to_vec(), vec![0.0; c.len()]);
    let mut cell = LstmCellBlock {
        x: std::array::from_fn(|q| &x[q][..]),
        r: std::array::from_fn(|q| &r[q][..]),
        bias: std::array::from_fn(|q| &b[q][..]),
        peep: std::array::from_fn(|q| &p[q][..]),
        c: &mut c,
        h: &mut h,
    };
    lstm_cell(isa, &mut cell).unwrap();
    (c, h)
}

fn close(got: &[f32], want: &[f64]) -> Result<(), String> {
    for (j, (&g, &w)) in got.iter().zip(want).enumerate() {
        // A few f32 roundings of values up to ~|c|: a wrong gate or operand is off by O(1).
        if (g as f64 - w).abs() > 1e-5 * w.abs().max(1.0) {
            return Err(format!("unit {j}: {g} against {w}"));
        }
    }
    Ok(())
}

fn values(n: usize, scale: f32) -> impl Strategy<Value = Vec<f32>> {
    prop::collection::vec(-scale..scale, n)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_one_pass_cell_matches_the_formula(
        (x, r, b, p, c) in (0usize..40, prop_oneof![Just(1.0f32), Just(4.0), Just(60.0)]).prop_flat_map(|(n, s)| (
            prop::collection::vec(values(n, s), 4),
            prop::collection::vec(values(n, s), 4),
            prop::collection::vec(values(n, s), 4),
            prop::collection::vec(values(n, 1.0), 3),
            values(n, s),
        )),
    ) {
        let (wc, wh) = reference(&x, &r, &b, &p, &c);
        for isa in Isa::available() {
            let (gc, gh) = run(isa, &x, &r, &b, &p, &c);
            close(&gc, &wc).map_err(|e| TestCaseError::fail(format!("{isa:?} c: {e}")))?;
            close(&gh, &wh).map_err(|e| TestCaseError::fail(format!("{isa:?} h: {e}")))?;
        }
    }
}

#[test]
fn nan_in_any_operand_reaches_both_states_of_its_unit_only() {
    let n = 11;
    for isa in Isa::available() {
        for operand in 0..13 {
            let mut v: Vec<Vec<f32>> = (0..16)
                .map(|k| (0..n).map(|j| 0.1 * (j + k) as f32 / n as f32).collect())
                .collect();
            // Operands 0–3 x, 4–7 r, 8–11 bias, 12 c (the peepholes are zero: NaN·0 is NaN too,
            // but the c operand covers the product).
            v[operand][5] = f32::NAN;
            let (x, r, b) = (&v[0..4], &v[4..8], &v[8..12]);
            let p = vec![vec![0.0; n]; 3];
            let (c, h) = run(isa, x, r, b, &p, &v[12]);
            let bad: Vec<usize> = (0..n).filter(|&j| c[j].is_nan() || h[j].is_nan()).collect();
            // A NaN in the output gate's operands leaves c finite; h is NaN in every case.
            assert!(h[5].is_nan(), "{isa:?} operand {operand}: h = {h:?}");
            assert_eq!(bad, [5], "{isa:?} operand {operand}: c = {c:?}, h = {h:?}");
        }
    }
}

#[test]
fn operands_of_other_lengths_are_refused() {
    let (x, short) = (vec![0.5f32; 9], vec![0.5f32; 8]);
    let (mut c, mut h) = (vec![0.0f32; 9], vec![0.0f32; 9]);
    let mut cell = LstmCellBlock {
        x: [&x[..], &x, &x, &short],
        r: [&x[..]; 4],
        bias: [&x[..]; 4],
        peep: [&x[..]; 3],
        c: &mut c,
        h: &mut h,
    };
    assert!(lstm_cell(Isa::best(), &mut cell).is_err());
    assert!(c.iter().all(|&v| v == 0.0) && h.iter().all(|&v| v == 0.0));
}
