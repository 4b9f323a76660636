//! The activations of fused epilogues (`FusedConv`, `FusedMatMul`, made by the dense engine's
//! optimizer): `y = activation(acc + bias + residual)` on the output tile before it is stored.
//! The activation is baked into the shader (one pipeline per activation, cached by name), its
//! parameters passed as two parameter words.

use rge_kernels::{KernelError, KernelInit, KernelResult};

/// A fused activation and its parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct Activation {
    /// The name the dense engine's optimizer writes (`""`: none).
    pub name: String,
    pub params: [f32; 2],
}

/// The activations the gpu's epilogues apply (the dense engine's list, docs/dense.md).
pub const ACTIVATIONS: &[&str] = &[
    "",
    "Relu",
    "Sigmoid",
    "Tanh",
    "HardSwish",
    "LeakyRelu",
    "HardSigmoid",
    "Silu",
    "Gelu",
    "GeluTanh",
    "Clip",
];

impl Activation {
    pub const NONE: Activation = Activation {
        name: String::new(),
        params: [0.0; 2],
    };

    /// The `activation`/`activation_params` attributes of a fused op.
    pub fn from_init(init: &KernelInit<'_>) -> KernelResult<Activation> {
        let name = init.str_or("activation", "")?.to_string();
        if !ACTIVATIONS.contains(&name.as_str()) {
            return Err(KernelError::unsupported(format!(
                "the gpu epilogue has no activation `{name}`"
            )));
        }
        let given = init.floats_opt("activation_params")?.unwrap_or(&[]);
        let mut params = match name.as_str() {
            "LeakyRelu" => [0.01, 0.0],
            "HardSigmoid" => [0.2, 0.5],
            "Clip" => [f32::MIN, f32::MAX],
            _ => [0.0, 0.0],
        };
        for (p, &g) in params.iter_mut().zip(given) {
            *p = g;
        }
        Ok(Activation { name, params })
    }

    /// The WGSL expression of the activation over `v` (f32), with parameters `a0`, `a1`.
    pub fn expr(&self) -> &'static str {
        match self.name.as_str() {
            "Relu" => "max(v, 0.0)",
            "Sigmoid" => "1.0 / (1.0 + exp(-v))",
            "Tanh" => "tanh(clamp(v, -15.0, 15.0))",
            "HardSwish" => "v * clamp(v / 6.0 + 0.5, 0.0, 1.0)",
            "LeakyRelu" => "select(a0 * v, v, v >= 0.0)",
            "HardSigmoid" => "clamp(a0 * v + a1, 0.0, 1.0)",
            "Silu" => "v / (1.0 + exp(-v))",
            "Gelu" => "0.5 * v * (1.0 + erf_(v * 0.70710678118654752))",
            "GeluTanh" => {
                "0.5 * v * (1.0 + tanh(clamp(0.7978845608028654 * (v + 0.044715 * v * v * v), -15.0, 15.0)))"
            }
            "Clip" => "clamp(v, a0, a1)",
            _ => "v",
        }
    }

    /// A name for pipelines specialized to this activation.
    pub fn key(&self) -> &str {
        if self.name.is_empty() {
            "none"
        } else {
            &self.name
        }
    }

    /// The WGSL function `act(v, a0, a1)` and the `erf_` it may use.
    pub fn wgsl(&self) -> String {
        format!(
            "{ERF_WGSL}
fn act(v: f32, a0: f32, a1: f32) -> f32 {{
    return {};
}}
",
            self.expr()
        )
    }
}

/// erf in f32 (Abramowitz and Stegun 7.1.26, absolute error below 1.5e-7).
pub const ERF_WGSL: &str = "fn erf_(v: f32) -> f32 {
    let s = sign(v);
    let z = abs(v);
    let t = 1.0 / (1.0 + 0.3275911 * z);
    let r = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * exp(-z * z);
    return s * r;
}";
