//! Times the depthwise row kernel (a profiling aid): `cargo run --release -p rge-dense --example dw_time`.
use rge_dense::depthwise::{plane, scratch_len, DwGeometry, Isa};
fn main() {
    for (h, s, c) in [(112usize, 1usize, 32usize), (112, 2, 96)] {
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
        let mut scratch = vec![0.0f32; scratch_len(&g)];
        for isa in Isa::available() {
            let t = std::time::Instant::now();
            for _ in 0..c {
                plane(isa, &x, &w, &g, &mut out, &mut scratch);
            }
            println!(
                "h {h} s {s} c {c} {isa:?}: {:.3} ms",
                t.elapsed().as_secs_f64() * 1e3
            );
        }
    }
}
