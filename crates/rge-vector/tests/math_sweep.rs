//! The accuracy of the vectorized math on every ISA this machine runs, against f64 references
//! (std and `libm`): a stride through all 2^32 bit patterns (every 4099th), plus every float in
//! windows of 2^16 consecutive bit patterns around each point where an algorithm switches
//! branches or a result reaches a limit (both signs). The error is in ulps of the f64 result
//! rounded to f32 (denormal results: ulps of the smallest denormal); non-finite results must
//! match exactly (NaN for NaN). The bounds are the documented maxima (docs/vector-engine.md).
//!
//! Run with `--nocapture` to print the table of measured maxima.

use std::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI};

use rge_vector::simd::{self, Isa, UnaryOp};

fn sigmoid(x: f64) -> f64 {
    if x >= 0.0 {
        1.0 / (1.0 + (-x).exp())
    } else {
        let e = x.exp();
        e / (1.0 + e)
    }
}

struct Case {
    name: &'static str,
    op: UnaryOp,
    reference: fn(f64) -> f64,
    /// Points around which every float of a 2^16 window is tested.
    points: &'static [f32],
    /// The largest error allowed, in ulps.
    max_ulp: f64,
}

fn cases() -> Vec<Case> {
    use std::f64::consts::FRAC_1_SQRT_2;
    vec![
        Case {
            name: "exp",
            op: UnaryOp::Exp,
            reference: f64::exp,
            points: &[0.0, 0.3466, 1.0, 88.72, -87.33, -103.3, -110.0],
            max_ulp: 2.0,
        },
        Case {
            name: "log",
            op: UnaryOp::Log,
            reference: f64::ln,
            points: &[
                1.0,
                std::f32::consts::SQRT_2,
                std::f32::consts::FRAC_1_SQRT_2,
                f32::MIN_POSITIVE,
                2.0,
                1e-45,
            ],
            max_ulp: 2.0,
        },
        Case {
            name: "tanh",
            op: UnaryOp::Tanh,
            reference: f64::tanh,
            points: &[0.0, 0.625, 9.0, 1e-30],
            max_ulp: 2.0,
        },
        Case {
            name: "sigmoid",
            op: UnaryOp::Sigmoid,
            reference: sigmoid,
            points: &[0.0, 17.0, 87.0, 103.0, 1e-30],
            max_ulp: 3.0,
        },
        Case {
            name: "silu",
            op: UnaryOp::Swish(1.0),
            reference: |x| x * sigmoid(x),
            points: &[0.0, 17.0, 80.0, -80.0, 87.0, 103.0, 1e-30],
            max_ulp: 4.0,
        },
        Case {
            name: "erf",
            op: UnaryOp::Erf,
            reference: libm::erf,
            points: &[0.0, 0.75, 2.0, 3.9, 1e-30],
            max_ulp: 3.0,
        },
        Case {
            name: "gelu",
            op: UnaryOp::Gelu,
            reference: |x| x * 0.5 * libm::erfc(-x * FRAC_1_SQRT_2),
            points: &[0.0, 1.0, 5.0, 13.0, 14.0, 20.0],
            max_ulp: 6.0,
        },
        Case {
            name: "gelu_tanh",
            op: UnaryOp::GeluTanh,
            reference: |x| {
                let u = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
                x * sigmoid(2.0 * u)
            },
            points: &[0.0, 1.0, 5.0, 10.0, 20.0],
            max_ulp: 4.0,
        },
        Case {
            name: "softplus",
            op: UnaryOp::Softplus,
            reference: |x| x.max(0.0) + (-x.abs()).exp().ln_1p(),
            points: &[0.0, 1.0, 17.0, 87.0, 103.0, 1e-30],
            max_ulp: 3.0,
        },
        Case {
            name: "expm1 (Elu)",
            op: UnaryOp::Elu(1.0),
            reference: |x| if x > 0.0 { x } else { x.exp_m1() },
            points: &[0.0, 0.5, 1e-30, 20.0],
            max_ulp: 3.0,
        },
        Case {
            name: "sin",
            op: UnaryOp::Sin,
            reference: f64::sin,
            points: &[0.0, FRAC_PI_4, FRAC_PI_2, PI, 4096.0, 1e5, 1e-30],
            max_ulp: 2.0,
        },
        Case {
            name: "cos",
            op: UnaryOp::Cos,
            reference: f64::cos,
            points: &[0.0, FRAC_PI_4, FRAC_PI_2, PI, 4096.0, 1e5, 1e-30],
            max_ulp: 2.0,
        },
    ]
}

/// The inputs of a case: the stride through all bit patterns, then the windows.
fn inputs(points: &[f32]) -> Vec<f32> {
    let mut xs: Vec<f32> = (0..=u32::MAX / 4099)
        .map(|i| f32::from_bits(i * 4099))
        .collect();
    for &p in points {
        for p in [p, -p] {
            let c = p.to_bits() as i64;
            for b in (c - (1 << 15))..(c + (1 << 15)) {
                if (0..=u32::MAX as i64).contains(&b) {
                    xs.push(f32::from_bits(b as u32));
                }
            }
        }
    }
    for s in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 0.0, -0.0] {
        xs.push(s);
    }
    xs
}

/// The error of `got` against the f64 `want`, in ulps (infinite for a wrong non-finite).
fn ulp_err(got: f32, want: f64) -> f64 {
    if want.is_nan() {
        return if got.is_nan() { 0.0 } else { f64::INFINITY };
    }
    let w32 = want as f32;
    if w32.is_infinite() {
        return if got == w32 { 0.0 } else { f64::INFINITY };
    }
    if !got.is_finite() {
        return f64::INFINITY;
    }
    let a = w32.abs();
    let ulp = if a < f32::MIN_POSITIVE {
        f64::from(f32::from_bits(1))
    } else {
        2f64.powi(((a.to_bits() >> 23) as i32) - 127 - 23)
    };
    (got as f64 - want).abs() / ulp
}

#[test]
fn math_within_documented_ulps() {
    let mut failures = Vec::new();
    for case in cases() {
        let xs = inputs(case.points);
        let want: Vec<f64> = xs.iter().map(|&x| (case.reference)(x as f64)).collect();
        for isa in Isa::available() {
            let mut ys = vec![0.0f32; xs.len()];
            simd::unary(isa, &case.op, &xs, &mut ys);
            let (mut worst, mut at) = (0.0f64, 0.0f32);
            for ((&x, &y), &w) in xs.iter().zip(&ys).zip(&want) {
                let e = ulp_err(y, w);
                if e > worst {
                    worst = e;
                    at = x;
                }
            }
            println!(
                "{:12} {:7} max {:6.2} ulp at x = {at:e}",
                case.name,
                isa.name(),
                worst
            );
            if worst > case.max_ulp {
                failures.push(format!(
                    "{} on {}: {worst} ulp at x = {at:e} (bound {})",
                    case.name,
                    isa.name(),
                    case.max_ulp
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn isas_agree_with_the_scalar_twin_on_every_op() {
    let ops = [
        UnaryOp::Relu,
        UnaryOp::LeakyRelu(0.1),
        UnaryOp::Clip(-1.0, 6.0),
        UnaryOp::HardSigmoid(0.2, 0.5),
        UnaryOp::HardSwish,
        UnaryOp::Sqrt,
        UnaryOp::Reciprocal,
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Softsign,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Selu(1.67, 1.05),
        UnaryOp::Celu(0.5),
        UnaryOp::ThresholdedRelu(1.0),
        UnaryOp::Mish,
        UnaryOp::Swish(1.0),
    ];
    let xs: Vec<f32> = (0..=u32::MAX / 65521)
        .map(|i| f32::from_bits(i * 65521))
        .chain([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, -0.0, 2.5, -2.5])
        .collect();
    for op in ops {
        let mut want = vec![0.0f32; xs.len()];
        simd::unary(Isa::Scalar, &op, &xs, &mut want);
        for isa in Isa::available() {
            let mut got = vec![0.0f32; xs.len()];
            simd::unary(isa, &op, &xs, &mut got);
            for ((x, g), w) in xs.iter().zip(&got).zip(&want) {
                let same = g.to_bits() == w.to_bits() || (g.is_nan() && w.is_nan());
                let close = (g - w).abs() <= 4.0 * f32::EPSILON * w.abs();
                assert!(
                    same || close,
                    "{op:?} on {}: x {x:e}: {g:e} vs {w:e}",
                    isa.name()
                );
            }
        }
    }
}
