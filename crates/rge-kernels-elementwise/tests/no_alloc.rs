//! The per-call hot path of the elementwise kernels does not touch the heap: equal shapes,
//! scalar and general broadcasting up to rank 6, unary ops, two-input variadic ops and Where,
//! with the output written into planned memory.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use rge_kernels::{Tensor, Value};

struct Counting;

thread_local! {
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; only counts (per thread).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn f32s(shape: &[usize]) -> Tensor {
    let n = shape.iter().product::<usize>();
    Tensor::from_vec(shape, (0..n).map(|i| i as f32).collect::<Vec<_>>()).unwrap()
}

/// Heap allocations per call of `op` over `inputs` (after a warm-up call).
fn allocs_per_call(op: &str, inputs: &[Tensor], out_elems: usize) -> usize {
    let k = common::kernel(op, inputs);
    let values: Vec<Value> = inputs.iter().cloned().map(Value::Tensor).collect();
    let refs: Vec<_> = values.iter().map(|v| Some(v.as_ref())).collect();
    let mut out = common::Planned::new(out_elems * 8);
    common::call(k.as_ref(), &refs, &mut out);
    let before = ALLOCS.with(Cell::get);
    for _ in 0..10 {
        common::call(k.as_ref(), &refs, &mut out);
    }
    (ALLOCS.with(Cell::get) - before).div_ceil(10)
}

#[test]
fn hot_paths_do_not_allocate() {
    let bools = Tensor::from_vec(&[2, 3], vec![true, false, true, false, true, false]).unwrap();
    let cases: Vec<(&str, Vec<Tensor>, usize)> = vec![
        ("Add", vec![f32s(&[1]), f32s(&[1])], 1),
        ("Add", vec![f32s(&[]), f32s(&[])], 1),
        ("Sub", vec![f32s(&[1, 1]), f32s(&[1])], 1),
        ("Mul", vec![f32s(&[8]), f32s(&[])], 8),
        ("Div", vec![f32s(&[]), f32s(&[2, 4])], 8),
        ("Add", vec![f32s(&[2, 3, 4]), f32s(&[3, 1])], 24),
        (
            "Mul",
            vec![f32s(&[2, 1, 3, 1, 2, 2]), f32s(&[1, 2, 1, 3, 1, 2])],
            144,
        ),
        ("Less", vec![f32s(&[2, 3]), f32s(&[3])], 6),
        ("PRelu", vec![f32s(&[2, 3]), f32s(&[3])], 6),
        ("Pow", vec![f32s(&[2, 3]), f32s(&[])], 6),
        ("Relu", vec![f32s(&[1])], 1),
        ("Exp", vec![f32s(&[4])], 4),
        ("Neg", vec![f32s(&[2, 2])], 4),
        ("Sum", vec![f32s(&[1]), f32s(&[1])], 1),
        ("Max", vec![f32s(&[2, 3]), f32s(&[3])], 6),
        ("Mean", vec![f32s(&[2, 3]), f32s(&[3]), f32s(&[2, 1])], 6),
        ("Where", vec![bools, f32s(&[3]), f32s(&[])], 6),
    ];
    let mut bad = Vec::new();
    for (op, inputs, n) in &cases {
        let a = allocs_per_call(op, inputs, *n);
        if a != 0 {
            let shapes: Vec<_> = inputs.iter().map(|t| t.shape().to_vec()).collect();
            bad.push(format!("{op} {shapes:?}: {a} allocations per call"));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
