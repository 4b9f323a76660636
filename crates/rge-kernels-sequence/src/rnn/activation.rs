//! The activation functions of RNN, GRU and LSTM (`activations`, `activation_alpha`,
//! `activation_beta` attributes).

use rge_kernels::{KernelError, KernelResult};

use crate::common::Acc;

/// One activation with its parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Act {
    Relu,
    Tanh,
    Sigmoid,
    Affine(f32, f32),
    LeakyRelu(f32),
    ThresholdedRelu(f32),
    ScaledTanh(f32, f32),
    HardSigmoid(f32, f32),
    Elu(f32),
    Softsign,
    Softplus,
}

impl Act {
    /// Applies the activation.
    #[inline]
    pub fn apply<F: Acc>(self, x: F) -> F {
        let c = |v: f32| F::of(v as f64);
        match self {
            Act::Relu => x.max(F::zero()),
            Act::Tanh => x.tanh(),
            Act::Sigmoid => {
                // Stable for large |x|.
                if x >= F::zero() {
                    F::one() / (F::one() + (-x).exp())
                } else {
                    let e = x.exp();
                    e / (F::one() + e)
                }
            }
            Act::Affine(a, b) => c(a) * x + c(b),
            Act::LeakyRelu(a) => {
                if x >= F::zero() {
                    x
                } else {
                    c(a) * x
                }
            }
            Act::ThresholdedRelu(a) => {
                if x > c(a) {
                    x
                } else {
                    F::zero()
                }
            }
            Act::ScaledTanh(a, b) => c(a) * (c(b) * x).tanh(),
            Act::HardSigmoid(a, b) => (c(a) * x + c(b)).max(F::zero()).min(F::one()),
            Act::Elu(a) => {
                if x >= F::zero() {
                    x
                } else {
                    c(a) * (x.exp() - F::one())
                }
            }
            Act::Softsign => x / (F::one() + x.abs()),
            Act::Softplus => {
                // ln(1 + e^x) without overflow.
                if x > F::zero() {
                    x + (-x).exp().ln_1p()
                } else {
                    x.exp().ln_1p()
                }
            }
        }
    }
}

/// Which parameters an activation takes (alpha, beta) and their defaults.
fn params(name: &str) -> Option<(bool, bool, f32, f32)> {
    Some(match name {
        "relu" | "tanh" | "sigmoid" | "softsign" | "softplus" => (false, false, 0.0, 0.0),
        "affine" => (true, true, 1.0, 0.0),
        "leakyrelu" => (true, false, 0.01, 0.0),
        "thresholdedrelu" => (true, false, 1.0, 0.0),
        "scaledtanh" => (true, true, 1.0, 1.0),
        "hardsigmoid" => (true, true, 0.2, 0.5),
        "elu" => (true, false, 1.0, 0.0),
        _ => return None,
    })
}

/// Parses the activation list: `names` (defaults when absent), repeated for the second
/// direction when only one direction's worth is given; alphas and betas are consumed in
/// order by the activations that take them.
pub fn parse_activations(
    names: Option<&[String]>,
    alphas: Option<&[f32]>,
    betas: Option<&[f32]>,
    defaults: &[&str],
    dirs: usize,
) -> KernelResult<Vec<Act>> {
    let per = defaults.len();
    let mut list: Vec<String> = match names {
        Some(n) if !n.is_empty() => n.to_vec(),
        _ => defaults.iter().map(|s| s.to_string()).collect(),
    };
    if list.len() == per && dirs == 2 {
        list.extend_from_slice(&list.clone());
    }
    if list.len() != per * dirs {
        return Err(KernelError::attr(
            "activations",
            format!("expected {} activations, got {}", per * dirs, list.len()),
        ));
    }
    let (alphas, betas) = (alphas.unwrap_or(&[]), betas.unwrap_or(&[]));
    let (mut ai, mut bi) = (0, 0);
    let mut out = Vec::with_capacity(list.len());
    for name in &list {
        let lower = name.to_ascii_lowercase();
        let (ua, ub, da, db) = params(&lower).ok_or_else(|| {
            KernelError::attr("activations", format!("unknown activation {name:?}"))
        })?;
        let mut a = da;
        let mut b = db;
        if ua {
            if let Some(&v) = alphas.get(ai) {
                a = v;
                ai += 1;
            }
        }
        if ub {
            if let Some(&v) = betas.get(bi) {
                b = v;
                bi += 1;
            }
        }
        out.push(match lower.as_str() {
            "relu" => Act::Relu,
            "tanh" => Act::Tanh,
            "sigmoid" => Act::Sigmoid,
            "affine" => Act::Affine(a, b),
            "leakyrelu" => Act::LeakyRelu(a),
            "thresholdedrelu" => Act::ThresholdedRelu(a),
            "scaledtanh" => Act::ScaledTanh(a, b),
            "hardsigmoid" => Act::HardSigmoid(a, b),
            "elu" => Act::Elu(a),
            "softsign" => Act::Softsign,
            _ => Act::Softplus,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_and_apply() {
        let names: Vec<String> = ["LeakyRelu", "HardSigmoid", "Affine"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let acts = parse_activations(
            Some(&names),
            Some(&[0.1, 0.3, 2.0]),
            Some(&[0.4, 1.0]),
            &["Sigmoid", "Tanh", "Tanh"],
            1,
        )
        .unwrap();
        assert_eq!(
            acts,
            vec![
                Act::LeakyRelu(0.1),
                Act::HardSigmoid(0.3, 0.4),
                Act::Affine(2.0, 1.0)
            ]
        );
        assert_eq!(Act::LeakyRelu(0.1).apply(-2.0f32), -0.2f32);
        assert!((Act::Softplus.apply(1000.0f64) - 1000.0).abs() < 1e-9);
        assert!((Act::Sigmoid.apply(-1000.0f32)).abs() < 1e-30);
        let two = parse_activations(None, None, None, &["Sigmoid", "Tanh"], 2).unwrap();
        assert_eq!(two.len(), 4);
        assert!(parse_activations(Some(&names[..2]), None, None, &["Tanh"], 1).is_err());
        let bad = vec!["Gelu".to_string()];
        assert!(parse_activations(Some(&bad), None, None, &["Tanh"], 1).is_err());
    }
}
