//! Times channels-last Winograd on ResNet's 3×3 stride-1 layers (a profiling aid):
//! `cargo run --release -p rge-dense --example winograd_time [THREADS [SIZE]]`. Prints the best of 30
//! runs (`RGE_RUNS`) per layer in ms.
use rge_dense::depthwise::DwGeometry;
use rge_dense::gemm::Activation;
use rge_dense::winograd_nhwc::{WinogradArgs, WinogradNhwc};

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1);
    let only: Option<usize> = std::env::args().nth(2).and_then(|a| a.parse().ok());
    let runs: usize = std::env::var("RGE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("a thread pool");
    // (size, channels in, out): ResNet's 3×3 stride-1 layers, or `RGE_WINOGRAD_LAYER=size,cin,cout`.
    let custom: Option<Vec<usize>> = std::env::var("RGE_WINOGRAD_LAYER")
        .ok()
        .map(|v| v.split(',').filter_map(|d| d.parse().ok()).collect());
    let layers = match custom.as_deref() {
        Some(&[h, ci, co]) => vec![(h, ci, co)],
        _ => vec![
            (56usize, 64usize, 64usize),
            (28, 128, 128),
            (14, 256, 256),
            (7, 512, 512),
        ],
    };
    // `RGE_ACT=silu`: SiLU instead of Relu (YOLOv8's).
    let act = match std::env::var("RGE_ACT").as_deref() {
        Ok("silu") => Activation::SILU,
        _ => Activation::Relu,
    };
    for (h, ci, c) in layers {
        if only.is_some_and(|o| o != h) {
            continue;
        }
        let g = DwGeometry {
            h,
            w: h,
            kh: 3,
            kw: 3,
            stride_h: 1,
            stride_w: 1,
            dil_h: 1,
            dil_w: 1,
            pad_top: 1,
            pad_left: 1,
            oh: h,
            ow: h,
        };
        let x: Vec<f32> = (0..h * h * ci).map(|i| (i % 7) as f32 * 0.1).collect();
        let w: Vec<f32> = (0..c * ci * 9).map(|i| (i % 5) as f32 * 0.01).collect();
        let wg = WinogradNhwc::new(&w, c, ci).expect("weights");
        let bias = vec![0.1f32; c];
        let args = WinogradArgs {
            x: &x,
            bias: Some(&bias),
            z: None,
            act: &act,
        };
        let mut out = vec![0.0f32; h * h * c];
        let mut best = f64::MAX;
        pool.install(|| {
            for _ in 0..runs {
                let t = std::time::Instant::now();
                wg.conv(&args, &g, &mut out, threads).expect("conv");
                best = best.min(t.elapsed().as_secs_f64() * 1e3);
            }
        });
        println!("{h}x{h} {ci}->{c}: {best:.3} ms at {threads} thread(s)");
    }
}
