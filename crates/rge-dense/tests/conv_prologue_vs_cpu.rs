//! FusedConvNhwc with an input prologue (its input as the parts of a channel concatenation, then
//! a per-channel map and activation) against the `cpu` engine's Conv of the input computed here:
//! random parts, maps and activations, images on both sides of the band size, pointwise (the
//! GEMM and the direct kernel, read in bands) and 3×3 padded (the whole image read first), a
//! bias, residual and epilogue, constant and computed weights, 1 and 2 threads. Max relative
//! error 1e-4.

mod common;

use common::cases::{build, close, cpu, permuted, run, tensor, Case};
use proptest::prelude::*;
use rge_ir::{AttrMap, AttrValue};
use rge_kernels::Tensor;

/// One prologue case: the parts (`[n, h, w, cᵢ]`), the map, the convolution.
#[derive(Debug, Clone)]
struct Prologue {
    n: usize,
    h: usize,
    w: usize,
    widths: Vec<usize>,
    cout: usize,
    pointwise: bool,
    affine: bool,
    relu: bool,
    bias: bool,
    residual: bool,
    seed: u64,
}

impl Prologue {
    fn cin(&self) -> usize {
        self.widths.iter().sum()
    }

    fn parts(&self) -> Vec<Tensor> {
        let (n, h, w) = (self.n, self.h, self.w);
        let seed = self.seed;
        (self.widths.iter().enumerate())
            .map(|(k, &c)| tensor(&[n, h, w, c], seed ^ (10 + k as u64)))
            .collect()
    }

    fn map(&self) -> Option<(Tensor, Tensor)> {
        let c = self.cin();
        self.affine
            .then(|| (tensor(&[c], self.seed ^ 3), tensor(&[c], self.seed ^ 4)))
    }

    /// The input the convolution reads, `[n, h, w, C]`: the parts side by side, then the map.
    fn read_input(&self) -> Tensor {
        let parts = self.parts();
        let map = self.map();
        let mut v = Vec::new();
        for p in 0..self.n * self.h * self.w {
            let mut ch = 0;
            for (t, &c) in parts.iter().zip(&self.widths) {
                for &x in &t.as_slice::<f32>().unwrap()[p * c..(p + 1) * c] {
                    v.push(match &map {
                        None => x,
                        Some((s, h)) => {
                            let y = x * s.as_slice::<f32>().unwrap()[ch]
                                + h.as_slice::<f32>().unwrap()[ch];
                            if self.relu {
                                y.max(0.0)
                            } else {
                                y
                            }
                        }
                    });
                    ch += 1;
                }
            }
        }
        Tensor::from_vec(&[self.n, self.h, self.w, self.cin()], v).unwrap()
    }

    fn weights(&self) -> Tensor {
        let k = if self.pointwise { 1 } else { 3 };
        tensor(&[self.cout, self.cin(), k, k], self.seed ^ 1)
    }

    fn conv_attrs(&self) -> AttrMap {
        let mut attrs = AttrMap::new();
        if !self.pointwise {
            attrs.set("pads", AttrValue::ListInt(vec![1, 1, 1, 1]));
        }
        attrs
    }

    /// The reference: the cpu engine's Conv of the read input (NCHW), then the residual and
    /// the epilogue's Relu.
    fn want(&self) -> Tensor {
        let bias = self.bias.then(|| tensor(&[self.cout], self.seed ^ 2));
        let conv = Case {
            op: "Conv",
            attrs: self.conv_attrs(),
            inputs: vec![
                Some(permuted(&self.read_input(), [0, 3, 1, 2])),
                Some(self.weights()),
                bias,
            ],
        };
        let y = permuted(&cpu(&conv), [0, 2, 3, 1]);
        let z = self.residual_tensor();
        let v: Vec<f32> = (y.as_slice::<f32>().unwrap().iter().enumerate())
            .map(|(i, &a)| {
                (a + z.as_ref().map_or(0.0, |z| z.as_slice::<f32>().unwrap()[i])).max(0.0)
            })
            .collect();
        Tensor::from_vec(y.shape(), v).unwrap()
    }

    fn residual_tensor(&self) -> Option<Tensor> {
        self.residual
            .then(|| tensor(&[self.n, self.h, self.w, self.cout], self.seed ^ 5))
    }

    /// The FusedConvNhwc case: X, W, B, Z, S, H, then the further parts.
    fn fused(&self) -> Case {
        let mut attrs = self.conv_attrs();
        attrs.set("activation", "Relu");
        attrs.set("input_activation", if self.relu { "Relu" } else { "" });
        let parts = self.parts();
        let map = self.map();
        let mut inputs = vec![
            Some(parts[0].clone()),
            Some(self.weights()),
            self.bias.then(|| tensor(&[self.cout], self.seed ^ 2)),
            self.residual_tensor(),
            map.as_ref().map(|m| m.0.clone()),
            map.as_ref().map(|m| m.1.clone()),
        ];
        inputs.extend(parts[1..].iter().cloned().map(Some));
        Case {
            op: "FusedConvNhwc",
            attrs,
            inputs,
        }
    }
}

prop_compose! {
    /// Up to three parts of up to 200 channels (so bands of 12 to hundreds of pixels), output
    /// channels on both sides of AVX2's pointwise GEMM choice (four times the input's, no
    /// residual), images up to 2 × 24 × 24 pixels (several bands for deep inputs).
    fn prologue_case()(
        n in 1usize..3, widths in prop::collection::vec(prop_oneof![1usize..40, 150usize..200], 1..4),
        cout in prop_oneof![1usize..70, 129usize..140], h in 1usize..24, w in 1usize..24,
        pointwise in prop::bool::weighted(0.75), affine in any::<bool>(), relu in any::<bool>(),
        bias in any::<bool>(), residual in any::<bool>(), seed in any::<u64>()
    ) -> Prologue {
        Prologue { n, h, w, widths, cout, pointwise, affine, relu, bias, residual, seed }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn a_prologue_reads_what_the_reference_computes(p in prologue_case()) {
        let want = p.want();
        let case = p.fused();
        for constant in [&[][..], &[1][..]] {
            let k = build(rge_dense::conv_nhwc::create_conv_nhwc, &case, case.op, "ai.rge", constant);
            for threads in [1, 2] {
                let got = run(k.as_ref(), &case.inputs, threads).map_err(TestCaseError::fail)?;
                close(&got, &want).map_err(|e| {
                    TestCaseError::fail(format!("constant {constant:?}, threads {threads}: {e}"))
                })?;
            }
        }
    }
}

/// Deep inputs over large images: many bands, split over the threads (the proptest's images
/// rarely span more than a few).
#[test]
fn many_bands_over_two_threads() {
    for (widths, cout) in [(vec![256, 32, 32], 128), (vec![96, 1000], 40)] {
        let p = Prologue {
            n: 1,
            h: 28,
            w: 30,
            widths,
            cout,
            pointwise: true,
            affine: true,
            relu: true,
            bias: true,
            residual: false,
            seed: 7,
        };
        let want = p.want();
        let case = p.fused();
        let k = build(
            rge_dense::conv_nhwc::create_conv_nhwc,
            &case,
            case.op,
            "ai.rge",
            &[1],
        );
        for threads in [1, 2, 3] {
            let got = run(k.as_ref(), &case.inputs, threads).unwrap();
            close(&got, &want).unwrap_or_else(|e| panic!("threads {threads}: {e}"));
        }
    }
}

/// Operands that do not fit are errors naming them, not panics.
#[test]
fn bad_operands_are_errors() {
    let p = Prologue {
        n: 1,
        h: 4,
        w: 5,
        widths: vec![8, 8],
        cout: 16,
        pointwise: true,
        affine: true,
        relu: false,
        bias: false,
        residual: false,
        seed: 1,
    };
    let create = rge_dense::conv_nhwc::create_conv_nhwc;
    let fail = |case: &Case| {
        let k = build(create, case, case.op, "ai.rge", &[]);
        run(k.as_ref(), &case.inputs, 1).unwrap_err()
    };
    // A part of another image size.
    let mut c = p.fused();
    c.inputs[6] = Some(tensor(&[1, 4, 4, 8], 9));
    assert!(fail(&c).contains("input 6"), "{}", fail(&c));
    // S without H.
    let mut c = p.fused();
    c.inputs[5] = None;
    assert!(fail(&c).contains("both S and H"), "{}", fail(&c));
    // A map of the wrong length.
    let mut c = p.fused();
    c.inputs[4] = Some(tensor(&[8], 9));
    assert!(fail(&c).contains("8 scales"), "{}", fail(&c));
}
