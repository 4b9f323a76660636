//! Every ISA kernel this machine runs, and the scalar twin, against a naive f64 GEMM: random
//! shapes (primes and panel edges included), both transposes, raw and packed operands, every
//! epilogue, alpha/beta, threads; plus the blocking edges and bad input.

mod common;

use common::{rand_vec, Case};
use proptest::prelude::*;
use rge_dense::gemm::*;

/// Max error relative to the magnitude of the dot products.
const TOL: f64 = 1e-4;

#[derive(Clone, Debug)]
struct Spec {
    m: usize,
    n: usize,
    k: usize,
    ta: bool,
    tb: bool,
    pack_a: bool,
    pack_b: bool,
    pads: (usize, usize, usize, usize),
    alpha: f32,
    beta: f32,
    bias: u8,
    residual: bool,
    act: Activation,
    threads: usize,
    seed: u64,
}

fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![
        1..=16usize,
        prop::sample::select(vec![
            11, 12, 13, 23, 24, 25, 31, 32, 33, 47, 48, 49, 63, 64, 65, 97, 131, 197, 251, 255,
            256, 257, 293
        ]),
        1..=300usize,
    ]
}

fn activation() -> impl Strategy<Value = Activation> {
    prop_oneof![
        Just(Activation::None),
        Just(Activation::Relu),
        (-1.0f32..0.0, 0.0f32..1.0).prop_map(|(min, max)| Activation::Clip { min, max }),
        (-0.5f32..2.0).prop_map(|alpha| Activation::LeakyRelu { alpha }),
        Just(Activation::Sigmoid),
        (0.05f32..0.5, 0.0f32..1.0)
            .prop_map(|(alpha, beta)| Activation::HardSigmoid { alpha, beta }),
        Just(Activation::HardSwish),
        (0.5f32..2.0).prop_map(|alpha| Activation::Swish { alpha }),
        Just(Activation::Gelu),
        Just(Activation::GeluTanh),
        Just(Activation::Tanh),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    let shape = (dim(), dim(), dim()).prop_filter("at most 3M multiply-adds", |(m, n, k)| {
        m * n * k <= 3_000_000
    });
    (
        shape,
        any::<(bool, bool, bool, bool)>(),
        (0..4usize, 0..4usize, 0..4usize, 0..4usize),
        prop::sample::select(vec![1.0f32, -0.5, 2.0, 0.0]),
        prop::sample::select(vec![0.0f32, 1.0, 0.5, -1.5]),
        (0..3u8, any::<bool>()),
        activation(),
        1..=3usize,
        any::<u64>(),
    )
        .prop_map(
            |(
                (m, n, k),
                (ta, tb, pack_a, pack_b),
                pads,
                alpha,
                beta,
                (bias, residual),
                act,
                threads,
                seed,
            )| Spec {
                m,
                n,
                k,
                ta,
                tb,
                pack_a,
                pack_b,
                pads,
                alpha,
                beta,
                bias,
                residual,
                act,
                threads,
                seed,
            },
        )
}

/// Runs `s` on every available ISA and checks each against the f64 reference.
fn run_spec(s: &Spec) -> Result<(), String> {
    let (m, n, k) = (s.m, s.n, s.k);
    let (ar, ac) = if s.ta { (k, m) } else { (m, k) };
    let (br, bc) = if s.tb { (n, k) } else { (k, n) };
    let (lda, ldb, ldc, ldr) = (ac + s.pads.0, bc + s.pads.1, n + s.pads.2, n + s.pads.3);
    let a = rand_vec(ar * lda, s.seed);
    let b = rand_vec(br * ldb, s.seed ^ 1);
    let mut c0 = rand_vec(m * ldc, s.seed ^ 2);
    if s.beta == 0.0 {
        // beta = 0 must not read C.
        c0.iter_mut().for_each(|x| *x = f32::NAN);
    }
    let bias_v = rand_vec(m.max(n), s.seed ^ 3);
    let res_v = rand_vec(m * ldr, s.seed ^ 4);
    let mut epi = Epilogue::activation(s.act);
    epi = match s.bias {
        1 => epi.with_bias(Bias::PerColumn(&bias_v[..n])),
        2 => epi.with_bias(Bias::PerRow(&bias_v[..m])),
        _ => epi,
    };
    if s.residual {
        epi = epi.with_residual(&res_v, ldr);
    }
    let pa = PackedA::pack(&a, m, k, lda, s.ta).map_err(|e| e.to_string())?;
    let pb = PackedB::pack(&b, k, n, ldb, s.tb).map_err(|e| e.to_string())?;
    let case = Case {
        m,
        n,
        k,
        alpha: s.alpha,
        beta: s.beta,
        a: &a,
        lda,
        ta: s.ta,
        b: &b,
        ldb,
        tb: s.tb,
        c0: &c0,
        ldc,
        epi,
    };
    let p = GemmParams::new(m, n, k).alpha(s.alpha).beta(s.beta);
    for isa in Isa::available() {
        let aop = if s.pack_a {
            AOperand::Packed(&pa)
        } else {
            AOperand::Raw {
                data: &a,
                ld: lda,
                trans: s.ta,
            }
        };
        let bop = if s.pack_b {
            BOperand::Packed(&pb)
        } else {
            BOperand::Raw {
                data: &b,
                ld: ldb,
                trans: s.tb,
            }
        };
        let mut c = c0.clone();
        sgemm_isa(isa, &p, aop, bop, &mut c, ldc, &epi, s.threads)
            .map_err(|e| format!("{isa:?}: {e}"))?;
        case.check(&c, TOL).map_err(|e| format!("{isa:?}: {e}"))?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn sgemm_matches_f64_reference(s in spec()) {
        run_spec(&s).map_err(TestCaseError::fail)?;
    }
}

fn base(m: usize, n: usize, k: usize) -> Spec {
    Spec {
        m,
        n,
        k,
        ta: false,
        tb: false,
        pack_a: false,
        pack_b: false,
        pads: (0, 0, 0, 0),
        alpha: 1.0,
        beta: 0.0,
        bias: 0,
        residual: false,
        act: Activation::None,
        threads: 1,
        seed: 7,
    }
}

#[test]
fn blocking_edges() {
    // Shapes across every ISA's KC (256), MC (96/144/480) and NC (1024/2048) boundaries,
    // each with both operands raw and packed, accumulating over several K blocks. A raw
    // row-major B is read in place but for its tail panel, and packed whole when its row
    // stride is a multiple of 4 KiB (n = 1024).
    for (m, n, k) in [
        (40, 1024, 300),
        (500, 70, 600),
        (25, 2100, 7),
        (97, 1030, 260),
        (1, 1, 1000),
        (300, 1, 1),
        (145, 33, 513),
    ] {
        for (pack_a, pack_b, ta, tb) in [
            (false, false, false, false),
            (true, true, true, true),
            (false, true, true, false),
        ] {
            let s = Spec {
                pack_a,
                pack_b,
                ta,
                tb,
                beta: 0.5,
                bias: 1,
                act: Activation::GeluTanh,
                ..base(m, n, k)
            };
            run_spec(&s).unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
        }
    }
}

#[test]
fn short_row_tiles() {
    // A one-row tile (m = 1, and the last row of m = 7, 13) runs its own kernel, k steps taken
    // alternately by several accumulator sets, and AVX2 runs the last two rows past a multiple
    // of 6 (m = 2, 8, 14) as one 2×32 tile: odd and even depths, one and several K blocks,
    // partial panels, every store mode, raw B read in place and packed.
    for m in [1, 2, 7, 8, 13, 14] {
        for (n, k) in [
            (1, 1),
            (7, 2),
            (31, 3),
            (32, 255),
            (33, 256),
            (100, 257),
            (64, 513),
        ] {
            for (pack_a, pack_b, ta, tb, beta) in [
                (false, false, false, false, 0.0),
                (false, true, false, false, 1.0),
                (true, false, true, false, 0.5),
                (false, false, true, true, -1.5),
            ] {
                let s = Spec {
                    pack_a,
                    pack_b,
                    ta,
                    tb,
                    beta,
                    bias: 1,
                    act: if beta == 0.0 {
                        Activation::None
                    } else {
                        Activation::Sigmoid
                    },
                    ..base(m, n, k)
                };
                run_spec(&s).unwrap_or_else(|e| panic!("{m}x{n}x{k}: {e}"));
            }
        }
    }
}

#[test]
fn threads_split_rows_and_columns() {
    for (m, n, k, threads) in [
        (700, 40, 300, 2),
        (13, 900, 300, 2),
        (300, 300, 100, 3),
        (260, 260, 64, 4),
        (40, 40, 40, 8),
    ] {
        for (pack_a, pack_b) in [(false, false), (true, false), (false, true), (true, true)] {
            let s = Spec {
                pack_a,
                pack_b,
                threads,
                bias: 2,
                residual: true,
                act: Activation::Relu,
                ..base(m, n, k)
            };
            run_spec(&s).unwrap_or_else(|e| panic!("{m}x{n}x{k} on {threads}: {e}"));
        }
    }
}

#[test]
fn k_zero_is_beta_c_plus_epilogue() {
    for beta in [0.0, 1.0, -2.0] {
        let s = Spec {
            beta,
            bias: 1,
            residual: true,
            act: Activation::Sigmoid,
            ..base(17, 45, 0)
        };
        run_spec(&s).unwrap();
    }
}

#[test]
fn alpha_zero_does_not_read_a_or_b() {
    let (m, n, k) = (20, 40, 30);
    let a = vec![f32::NAN; m * k];
    let b = vec![f32::INFINITY; k * n];
    for isa in Isa::available() {
        let mut c = vec![2.0f32; m * n];
        let p = GemmParams::new(m, n, k).alpha(0.0).beta(0.5);
        let a_op = AOperand::Raw {
            data: &a,
            ld: k,
            trans: false,
        };
        let b_op = BOperand::Raw {
            data: &b,
            ld: n,
            trans: false,
        };
        sgemm_isa(isa, &p, a_op, b_op, &mut c, n, &Epilogue::NONE, 1).unwrap();
        assert!(c.iter().all(|&x| x == 1.0), "{isa:?}");
    }
}

#[test]
fn bad_input_is_an_error() {
    let a = vec![1.0f32; 6];
    let b = vec![1.0f32; 6];
    let mut c = vec![0.0f32; 4];
    let p = GemmParams::new(2, 2, 3);
    let raw_a = AOperand::Raw {
        data: &a,
        ld: 3,
        trans: false,
    };
    let raw_b = BOperand::Raw {
        data: &b,
        ld: 2,
        trans: false,
    };
    let none = Epilogue::NONE;
    assert!(sgemm(&p, raw_a, raw_b, &mut c, 2, &none, 1).is_ok());
    let short = AOperand::Raw {
        data: &a[..5],
        ld: 3,
        trans: false,
    };
    assert!(matches!(
        sgemm(&p, short, raw_b, &mut c, 2, &none, 1),
        Err(GemmError::TooShort { .. })
    ));
    let bad_ld = AOperand::Raw {
        data: &a,
        ld: 2,
        trans: false,
    };
    assert!(matches!(
        sgemm(&p, bad_ld, raw_b, &mut c, 2, &none, 1),
        Err(GemmError::LeadingDim { .. })
    ));
    assert!(matches!(
        sgemm(&p, raw_a, raw_b, &mut c, 1, &none, 1),
        Err(GemmError::LeadingDim { .. })
    ));
    assert!(matches!(
        sgemm(&p, raw_a, raw_b, &mut c[..3], 2, &none, 1),
        Err(GemmError::TooShort { .. })
    ));
    let pb = PackedB::pack(&b, 2, 3, 3, false).unwrap();
    assert!(matches!(
        sgemm(&p, raw_a, BOperand::Packed(&pb), &mut c, 2, &none, 1),
        Err(GemmError::PackedShape { .. })
    ));
    let pa = PackedA::pack(&a, 3, 2, 2, false).unwrap();
    assert!(matches!(
        sgemm(&p, AOperand::Packed(&pa), raw_b, &mut c, 2, &none, 1),
        Err(GemmError::PackedShape { .. })
    ));
    let bias = [1.0f32];
    let e = Epilogue::NONE.with_bias(Bias::PerColumn(&bias));
    assert!(matches!(
        sgemm(&p, raw_a, raw_b, &mut c, 2, &e, 1),
        Err(GemmError::BiasLen { .. })
    ));
    let e = Epilogue::NONE.with_residual(&bias, 2);
    assert!(matches!(
        sgemm(&p, raw_a, raw_b, &mut c, 2, &e, 1),
        Err(GemmError::TooShort { .. })
    ));
    let huge = GemmParams::new(usize::MAX / 2, 2, 3);
    assert!(sgemm(&huge, raw_a, raw_b, &mut c, 2, &none, 1).is_err());
    assert!(PackedA::pack(&a, 3, 3, 3, false).is_err());
    // Empty problems are fine.
    let empty = GemmParams::new(0, 5, 3);
    assert!(sgemm(
        &empty,
        AOperand::Raw {
            data: &[],
            ld: 3,
            trans: false
        },
        raw_b,
        &mut [],
        5,
        &none,
        1
    )
    .is_err());
    let empty = GemmParams::new(0, 2, 3);
    assert!(sgemm(
        &empty,
        AOperand::Raw {
            data: &[],
            ld: 3,
            trans: false
        },
        raw_b,
        &mut [],
        2,
        &none,
        1
    )
    .is_ok());
}

#[test]
fn unavailable_isa_is_an_error() {
    for isa in Isa::ALL {
        let r = activate(isa, &Activation::Relu, &mut [1.0]);
        assert_eq!(r.is_ok(), isa.is_available());
    }
}

#[test]
fn half_inputs_convert() {
    let src: Vec<half::f16> = [1.0f32, -2.5, 65504.0]
        .iter()
        .map(|&x| half::f16::from_f32(x))
        .collect();
    let mut dst = [0.0f32; 3];
    f16_to_f32(&src, &mut dst).unwrap();
    assert_eq!(dst, [1.0, -2.5, 65504.0]);
    let src: Vec<half::bf16> = [1.0f32, -3.0]
        .iter()
        .map(|&x| half::bf16::from_f32(x))
        .collect();
    let mut dst = [0.0f32; 2];
    bf16_to_f32(&src, &mut dst).unwrap();
    assert_eq!(dst, [1.0, -3.0]);
    assert!(bf16_to_f32(&src, &mut [0.0; 3]).is_err());
}
