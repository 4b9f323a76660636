//! Times the direct channels-last convolution kernel on one thread (a profiling aid):
//! `cargo run --release -p rge-dense --example direct_time [CHANNELS]` (only layers with that
//! filter size; `RGE_DIRECT_LAYER=size,kernel,stride,pad,cin,cout` for one layer of your own).
//! Prints ms per layer and the share of the FMA peak it implies at the
//! given GHz·FMA-units figure (`RGE_PEAK_GFLOPS`, default 0: not printed).
use rge_dense::depthwise::{DwGeometry, Isa};
use rge_dense::direct_nhwc::{DirectArgs, DirectNhwc};
use rge_dense::gemm::Activation;
fn main() {
    let only: Option<usize> = std::env::args().nth(1).and_then(|a| a.parse().ok());
    let peak: f64 = std::env::var("RGE_PEAK_GFLOPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    // `RGE_DIRECT_LAYER=size,kernel,stride,pad,cin,cout`: that layer only.
    let custom: Option<Vec<usize>> = std::env::var("RGE_DIRECT_LAYER")
        .ok()
        .map(|v| v.split(',').filter_map(|d| d.parse().ok()).collect());
    let custom = custom.and_then(|v| match v[..] {
        [h, k, s, p, cin, cout] => Some((h, k, s, p, cin, cout)),
        _ => None,
    });
    // ResNet's 3×3 layers and its stem: (size, kernel, stride, pad, cin, cout).
    let resnet = [
        (56usize, 3usize, 1usize, 1usize, 64usize, 64usize),
        (28, 3, 1, 1, 128, 128),
        (14, 3, 1, 1, 256, 256),
        (7, 3, 1, 1, 512, 512),
        (56, 3, 2, 1, 64, 128),
        (224, 7, 2, 3, 3, 64),
        (56, 1, 1, 0, 64, 256),
        (56, 1, 1, 0, 256, 64),
        (56, 1, 1, 0, 256, 128),
        (28, 1, 1, 0, 128, 512),
        (14, 1, 1, 0, 1024, 256),
        (7, 1, 1, 0, 2048, 512),
    ];
    let layers = custom.map_or(resnet.to_vec(), |l| vec![l]);
    for (h, k, s, p, cin, cout) in layers {
        if only.is_some_and(|kk| kk != k) {
            continue;
        }
        let o = (h + 2 * p - k) / s + 1;
        let g = DwGeometry {
            h,
            w: h,
            kh: k,
            kw: k,
            stride_h: s,
            stride_w: s,
            dil_h: 1,
            dil_w: 1,
            pad_top: p,
            pad_left: p,
            oh: o,
            ow: o,
        };
        let kd = DirectNhwc { g, cin, cout };
        let x: Vec<f32> = (0..h * h * cin).map(|i| (i % 7) as f32 * 0.1).collect();
        let w: Vec<f32> = (0..cout * cin * k * k)
            .map(|i| (i % 5) as f32 * 0.01)
            .collect();
        let wts = kd.repack_weights(&w);
        let mut xp = vec![0.0; kd.padded_len()];
        kd.pad_image(&x, &mut xp);
        let bias = vec![0.1f32; cout];
        let args = DirectArgs {
            x: &xp,
            wts: &wts,
            bias: Some(&bias),
            z: None,
            act: &Activation::Relu,
        };
        let mut out = vec![0.0f32; o * o * cout];
        let flops = 2.0 * (o * o * cout * cin * k * k) as f64;
        // The scalar twin is for the tests: hundreds of times slower.
        for isa in Isa::available().into_iter().filter(|i| *i != Isa::Scalar) {
            let run = |out: &mut Vec<f32>| {
                // SAFETY: `out` holds the whole output; one call at a time.
                unsafe { kd.run(isa, &args, (0, o * o), (0, kd.blocks()), out.as_mut_ptr()) }
            };
            run(&mut out);
            let reps = (2e9 / flops).clamp(3.0, 2000.0) as usize;
            let mut best = f64::MAX;
            for _ in 0..5 {
                let t = std::time::Instant::now();
                for _ in 0..reps {
                    run(&mut out);
                }
                best = best.min(t.elapsed().as_secs_f64() / reps as f64);
            }
            let gf = flops / best / 1e9;
            let share = if peak > 0.0 {
                format!(" {:.0}%", 100.0 * gf / peak)
            } else {
                String::new()
            };
            println!(
                "{h}x{h} k{k} s{s} {cin}->{cout} {isa:?}: {:.3} ms {gf:.0} GFLOP/s{share}",
                best * 1e3
            );
        }
    }
}
