//! Per-call cost of elementwise kernels on tiny tensors (ns per call; figures printed, never
//! asserted): what a kernel adds to a runtime's per-node overhead
//! (`bench/ort_overhead.sh` measures the whole runtime).

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::time::Instant;

use rge_kernels::{Tensor, Value};

fn ns_per_call(op: &str, inputs: &[Tensor], out_elems: usize) -> f64 {
    let k = common::kernel(op, inputs);
    let values: Vec<Value> = inputs.iter().cloned().map(Value::Tensor).collect();
    let refs: Vec<_> = values.iter().map(|v| Some(v.as_ref())).collect();
    let mut out = common::Planned::new(out_elems * 8);
    let iters = 2_000_000;
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        let t = Instant::now();
        for _ in 0..iters {
            common::call(k.as_ref(), black_box(&refs), &mut out);
        }
        best = best.min(t.elapsed().as_secs_f64() / iters as f64);
    }
    best * 1e9
}

fn f32s(shape: &[usize]) -> Tensor {
    let n = shape.iter().product::<usize>();
    Tensor::from_vec(shape, (0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap()
}

fn main() {
    let cases: Vec<(&str, &str, Vec<Tensor>, usize)> = vec![
        ("Add", "f32 [1] + [1]", vec![f32s(&[1]), f32s(&[1])], 1),
        ("Add", "f32 [] + []", vec![f32s(&[]), f32s(&[])], 1),
        ("Add", "f32 [1,1] + [1]", vec![f32s(&[1, 1]), f32s(&[1])], 1),
        ("Add", "f32 [8] + []", vec![f32s(&[8]), f32s(&[])], 8),
        (
            "Add",
            "f32 [2,3,4] + [3,1]",
            vec![f32s(&[2, 3, 4]), f32s(&[3, 1])],
            24,
        ),
        (
            "Mul",
            "f32 [2,1,3,1,2,2] + [1,2,1,3,1,2]",
            vec![f32s(&[2, 1, 3, 1, 2, 2]), f32s(&[1, 2, 1, 3, 1, 2])],
            144,
        ),
        ("Less", "f32 [1] < [1]", vec![f32s(&[1]), f32s(&[1])], 1),
        ("Relu", "f32 [1]", vec![f32s(&[1])], 1),
        ("Exp", "f32 [1]", vec![f32s(&[1])], 1),
        ("Sum", "f32 [1] + [1]", vec![f32s(&[1]), f32s(&[1])], 1),
    ];
    println!("elementwise kernels, ns per call (best of 5 rounds of 2M calls)");
    for (op, what, inputs, n) in cases {
        println!("  {op:<5} {what:<34} {:>7.1}", ns_per_call(op, &inputs, n));
    }
}
