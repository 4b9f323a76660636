//! How fast a slice loop over the shared math runs when it is instantiated inside a
//! `#[target_feature]` function (the way the vector engine's loops are), against the STREAM
//! copy of the same arrays and against plain scalar `std` code (what the cpu engine's kernels
//! compute). Single thread; median of the runs. Asserts nothing.
//!
//!   cargo run --release -p rge-simd --example loop_speed -- [--mib 64] [--runs 9]

use std::time::Instant;

use rge_simd::{math, Isa, Simd};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
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

/// `y = f(x)` over the slices, full vectors then a masked tail; no closure in the loop.
macro_rules! map_with {
    ($s:expr, $x:expr, $y:expr, |$v:ident| $e:expr) => {{
        let (s, x, y) = ($s, $x, $y);
        let n = x.len();
        let lanes = lanes_of(s);
        let mut i = 0;
        while i + lanes <= n {
            // SAFETY: i + LANES <= n for both slices.
            let $v = unsafe { s.load(x.as_ptr().add(i)) };
            let r = $e;
            // SAFETY: as above.
            unsafe { s.store(y.as_mut_ptr().add(i), r) };
            i += lanes;
        }
        if i < n {
            // SAFETY: n - i < LANES floats remain.
            let $v = unsafe { s.load_n(x.as_ptr().add(i), n - i, 0.0) };
            let r = $e;
            // SAFETY: as above.
            unsafe { s.store_n(y.as_mut_ptr().add(i), r, n - i) };
        }
    }};
}

fn lanes_of<S: Simd>(_: S) -> usize {
    S::LANES
}

#[derive(Clone, Copy)]
enum F {
    Relu,
    Sigmoid,
    Tanh,
    Erf,
    Gelu,
}

#[inline(always)]
fn run<S: Simd>(s: S, f: F, x: &[f32], y: &mut [f32]) {
    let zero = s.splat(0.0);
    match f {
        F::Relu => map_with!(s, x, y, |v| s.max(zero, v)),
        F::Sigmoid => map_with!(s, x, y, |v| math::sigmoid(s, v)),
        F::Tanh => map_with!(s, x, y, |v| math::tanh(s, v)),
        F::Erf => map_with!(s, x, y, |v| math::erf(s, v)),
        F::Gelu => map_with!(s, x, y, |v| math::gelu(s, v)),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
fn run_avx512(f: F, x: &[f32], y: &mut [f32]) {
    // SAFETY: only called when AVX-512F was detected.
    run(unsafe { rge_simd::Avx512::new_unchecked() }, f, x, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn run_avx2(f: F, x: &[f32], y: &mut [f32]) {
    // SAFETY: only called when AVX2 and FMA were detected.
    run(unsafe { rge_simd::Avx2::new_unchecked() }, f, x, y)
}

fn run_isa(isa: Isa, f: F, x: &[f32], y: &mut [f32]) {
    match isa {
        // SAFETY: the ISA is available (the caller lists only available ones).
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { run_avx512(f, x, y) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { run_avx2(f, x, y) },
        _ => run(rge_simd::Scalar, f, x, y),
    }
}

/// What plain scalar code computes (the cpu kernels' formulas).
fn scalar_std(f: F, x: &[f32], y: &mut [f32]) -> bool {
    match f {
        F::Relu => y.iter_mut().zip(x).for_each(|(y, x)| *y = x.max(0.0)),
        F::Sigmoid => y
            .iter_mut()
            .zip(x)
            .for_each(|(y, x)| *y = 1.0 / (1.0 + (-x).exp())),
        F::Tanh => y.iter_mut().zip(x).for_each(|(y, x)| *y = x.tanh()),
        _ => return false,
    }
    true
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, d: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (mib, runs) = (arg("--mib", 64), arg("--runs", 9).max(1));
    let n = mib * (1 << 20) / 4;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 / 125.0 - 4.0).collect();
    let mut y = vec![0.0f32; n];
    let gbs = |t: f64| (2 * n * 4) as f64 / t / 1e9;
    let copy = time(runs, || y.copy_from_slice(&x));
    println!("{mib} MiB arrays, 1 thread, median of {runs}");
    println!("  STREAM copy {:8.2} GB/s", gbs(copy));
    let funs = [
        ("Relu", F::Relu),
        ("Sigmoid", F::Sigmoid),
        ("Tanh", F::Tanh),
        ("Erf", F::Erf),
        ("Gelu", F::Gelu),
    ];
    for (name, f) in funs {
        let mut line = format!("  {name:8}");
        for isa in Isa::available() {
            let t = time(runs, || run_isa(isa, f, &x, &mut y));
            line.push_str(&format!(
                "  {} {:7.2} ms {:5.1}% of copy",
                isa.name(),
                t * 1e3,
                100.0 * copy / t
            ));
        }
        if scalar_std(f, &x, &mut y) {
            let t = time(runs, || {
                scalar_std(f, &x, &mut y);
            });
            line.push_str(&format!("  std scalar {:7.2} ms", t * 1e3));
        }
        println!("{line}");
    }
    if y.iter().take(4).any(|v| v.is_nan()) {
        eprintln!("loop_speed: NaN in the result");
    }
}
