//! In-place writes with rge's elementwise kernels (Add, Neg, Relu … write over their input):
//! a tensor with several readers is overwritten only after the last of them, on every executor.

mod common;

use common::*;
use rge_runtime::{ExecutorKind, Session, SessionOptions};

const N: usize = 1 << 18;

/// a = Sigmoid(x); s = Sin(a), t = Cos(a) read `a` before u = Relu(a) writes over it; then
/// v = Neg(u), w = Add(v, s), y = Add(w, t), each over its first input.
fn side_readers() -> rge_formats::onnx_proto::ModelProto {
    let n = N as i64;
    model(
        graph(
            "side_readers",
            vec![
                node("Sigmoid", "sig", &["x"], &["a"]),
                node("Sin", "sin", &["a"], &["s"]),
                node("Cos", "cos", &["a"], &["t"]),
                node("Relu", "relu", &["a"], &["u"]),
                node("Neg", "neg", &["u"], &["v"]),
                node("Add", "add1", &["v", "s"], &["w"]),
                node("Add", "add2", &["w", "t"], &["y"]),
            ],
            vec![vi("x", F32, Some(&[n]))],
            vec![vi("y", F32, Some(&[n]))],
            vec![],
        ),
        17,
    )
}

#[test]
fn readers_finish_before_the_in_place_writer() {
    let mut b = rge_kernels::KernelRegistryBuilder::new();
    rge_kernels_elementwise::register(&mut b).unwrap();
    let s = Session::new(SessionOptions {
        threads: 4,
        ..SessionOptions::with_kernels(b.build())
    })
    .unwrap();
    let m = s.compile_graph(to_graph(&side_readers())).unwrap();
    assert!(m.plan().in_place >= 3, "{:?}", m.plan());
    let x: Vec<f32> = (0..N).map(|i| (i % 97) as f32 * 0.05 - 2.0).collect();
    let want: Vec<f32> = x
        .iter()
        .map(|&x| {
            let a = 1.0 / (1.0 + (-x).exp());
            -a.max(0.0) + a.sin() + a.cos()
        })
        .collect();
    for kind in ExecutorKind::ALL {
        for _ in 0..5 {
            let out = m.run_with(&[tensor(&[N], x.clone())], kind, None).unwrap();
            let got = floats(&out[0]);
            let worst = got
                .iter()
                .zip(&want)
                .map(|(g, w)| (g - w).abs())
                .fold(0.0f32, f32::max);
            assert!(worst < 1e-5, "{kind}: off by {worst}");
        }
    }
}
