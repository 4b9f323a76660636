//! Times the depthwise plane kernel (a profiling aid):
//! `cargo run --release -p rge-dense --example dw_time [SIZE]` (only layers of that input size).
use rge_dense::depthwise::{DwGeometry, DwPlan, Isa};
use rge_dense::depthwise_blocked::{DwBlockPlan, BLOCK};
use rge_dense::gemm::Activation;
fn main() {
    let only: Option<usize> = std::env::args().nth(1).and_then(|a| a.parse().ok());
    // MobileNetV2's depthwise layers: (size, stride, channels).
    for (h, s, c) in [
        (112usize, 1usize, 32usize),
        (112, 2, 96),
        (56, 1, 144),
        (28, 1, 192),
        (14, 1, 384),
        (7, 1, 960),
        (56, 2, 144),
        (28, 2, 192),
        (14, 2, 576),
        (10, 1, 256),
    ] {
        if only.is_some_and(|size| size != h) {
            continue;
        }
        let o = (h + 2 - 3) / s + 1;
        let g = DwGeometry {
            h,
            w: h,
            kh: 3,
            kw: 3,
            stride_h: s,
            stride_w: s,
            dil_h: 1,
            dil_w: 1,
            pad_top: 1,
            pad_left: 1,
            oh: o,
            ow: o,
        };
        let x = vec![0.5f32; h * h];
        let w = vec![0.25f32; 9];
        let mut out = vec![0.0f32; o * o];
        let plan = DwPlan::new(&g);
        let mut scratch = plan.scratch();
        for isa in Isa::available() {
            let reps = 20;
            let t = std::time::Instant::now();
            for _ in 0..reps * c {
                plan.plane(isa, &x, &w, 0.0, &Activation::Relu, &mut out, &mut scratch);
            }
            println!(
                "h {h} s {s} c {c} {isa:?} plane: {:.4} ms",
                t.elapsed().as_secs_f64() * 1e3 / reps as f64
            );
        }
        let Some(bp) = DwBlockPlan::new(&g) else {
            continue;
        };
        let xb = vec![0.5f32; BLOCK * h * h];
        let wb = vec![0.25f32; BLOCK * 9];
        let mut ob = vec![0.0f32; BLOCK * o * o];
        let mut scratch = bp.scratch();
        for isa in Isa::available() {
            let reps = 20;
            let t = std::time::Instant::now();
            for _ in 0..reps * c.div_ceil(BLOCK) {
                bp.block(
                    isa,
                    &xb,
                    &wb,
                    None,
                    &Activation::Relu,
                    &mut ob,
                    &mut scratch,
                );
            }
            println!(
                "h {h} s {s} c {c} {isa:?} blocked: {:.4} ms",
                t.elapsed().as_secs_f64() * 1e3 / reps as f64
            );
        }
    }
}
