//! ai.onnx.preview.training optimizers (1): Adagrad, Adam, Momentum (standard and Nesterov).
//! Inputs are R (learning rate), T (step), then the per-tensor groups; each op updates any
//! number of tensors at once.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::util::{put_f64, scalar_f64};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Adagrad {
        decay: f64,
        epsilon: f64,
        norm: f64,
    },
    Adam {
        alpha: f64,
        beta: f64,
        epsilon: f64,
        norm: f64,
        norm_post: f64,
    },
    Momentum {
        alpha: f64,
        beta: f64,
        norm: f64,
        nesterov: bool,
    },
}

struct Optimizer {
    kind: Kind,
}

fn f(init: &KernelInit<'_>, name: &str, default: f32) -> KernelResult<f64> {
    Ok(init.float_or(name, default)? as f64)
}

fn required(init: &KernelInit<'_>, name: &str) -> KernelResult<f64> {
    init.float_opt(name)?
        .map(|v| v as f64)
        .ok_or_else(|| KernelError::attr(name, "required but missing"))
}

pub(crate) fn create_adagrad(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Optimizer {
        kind: Kind::Adagrad {
            decay: f(init, "decay_factor", 0.0)?,
            epsilon: f(init, "epsilon", 0.0)?,
            norm: f(init, "norm_coefficient", 0.0)?,
        },
    }))
}

pub(crate) fn create_adam(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Optimizer {
        kind: Kind::Adam {
            alpha: f(init, "alpha", 0.9)?,
            beta: f(init, "beta", 0.999)?,
            epsilon: f(init, "epsilon", 1e-6)?,
            norm: f(init, "norm_coefficient", 0.0)?,
            norm_post: f(init, "norm_coefficient_post", 0.0)?,
        },
    }))
}

pub(crate) fn create_momentum(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let nesterov = match init.str_opt("mode")? {
        Some("standard") => false,
        Some("nesterov") => true,
        Some(other) => return Err(KernelError::attr("mode", format!("unknown mode '{other}'"))),
        None => return Err(KernelError::attr("mode", "required but missing")),
    };
    Ok(Box::new(Optimizer {
        kind: Kind::Momentum {
            alpha: required(init, "alpha")?,
            beta: required(init, "beta")?,
            norm: required(init, "norm_coefficient")?,
            nesterov,
        },
    }))
}

impl Kernel for Optimizer {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let r = scalar_f64(&ctx.input(0)?, "R")?;
        let t = scalar_f64(&ctx.input(1)?, "T")?;
        // Tensors per group: X, G, then one (Adagrad H, Momentum V) or two (Adam V, H) states.
        let per = match self.kind {
            Kind::Adam { .. } => 4,
            _ => 3,
        };
        let rest = ctx.input_count().saturating_sub(2);
        if rest == 0 || rest % per != 0 {
            return Err(KernelError::invalid(format!(
                "expected 2 + {per}·n inputs, got {}",
                ctx.input_count()
            )));
        }
        let n = rest / per;
        if ctx.output_count() > (per - 1) * n {
            return Err(KernelError::invalid("too many outputs"));
        }
        for i in 0..n {
            let x = ctx.input(2 + i)?;
            let g = ctx.input(2 + n + i)?;
            let s1 = ctx.input(2 + 2 * n + i)?;
            let s2 = if per == 4 {
                Some(ctx.input(2 + 3 * n + i)?)
            } else {
                None
            };
            for t2 in [Some(&g), Some(&s1), s2.as_ref()].into_iter().flatten() {
                if t2.shape() != x.shape() {
                    return Err(KernelError::invalid(format!(
                        "shapes {:?} and {:?} differ",
                        x.shape(),
                        t2.shape()
                    )));
                }
            }
            let xv = x.to_f64_vec()?;
            let gv = g.to_f64_vec()?;
            let mut a = s1.to_f64_vec()?;
            let mut b = match &s2 {
                Some(s) => s.to_f64_vec()?,
                None => Vec::new(),
            };
            let mut xo = vec![0.0; xv.len()];
            match self.kind {
                Kind::Adagrad {
                    decay,
                    epsilon,
                    norm,
                } => {
                    let lr = r / (1.0 + t * decay);
                    for j in 0..xv.len() {
                        let gr = norm * xv[j] + gv[j];
                        a[j] += gr * gr;
                        xo[j] = xv[j] - lr * gr / (a[j].sqrt() + epsilon);
                    }
                }
                Kind::Adam {
                    alpha,
                    beta,
                    epsilon,
                    norm,
                    norm_post,
                } => {
                    let lr = if t > 0.0 {
                        r * (1.0 - beta.powf(t)).sqrt() / (1.0 - alpha.powf(t))
                    } else {
                        r
                    };
                    for j in 0..xv.len() {
                        let gr = norm * xv[j] + gv[j];
                        a[j] = alpha * a[j] + (1.0 - alpha) * gr;
                        b[j] = beta * b[j] + (1.0 - beta) * gr * gr;
                        let xn = xv[j] - lr * (a[j] / (b[j].sqrt() + epsilon));
                        xo[j] = (1.0 - norm_post) * xn;
                    }
                }
                Kind::Momentum {
                    alpha,
                    beta,
                    norm,
                    nesterov,
                } => {
                    let bt = if t > 0.0 { beta } else { 1.0 };
                    for j in 0..xv.len() {
                        let gr = norm * xv[j] + gv[j];
                        a[j] = alpha * a[j] + bt * gr;
                        xo[j] = if nesterov {
                            xv[j] - r * (gr + alpha * a[j])
                        } else {
                            xv[j] - r * a[j]
                        };
                    }
                }
            }
            let shape = x.shape().to_vec();
            let outs: Vec<(usize, rge_kernels::DType, &Vec<f64>)> = if per == 4 {
                vec![
                    (i, x.dtype(), &xo),
                    (n + i, s1.dtype(), &a),
                    (2 * n + i, s2.map_or(x.dtype(), |s| s.dtype()), &b),
                ]
            } else {
                vec![(i, x.dtype(), &xo), (n + i, s1.dtype(), &a)]
            };
            for (o, dt, v) in outs {
                if o < ctx.output_count() {
                    put_f64(ctx, o, dt, &shape, v)?;
                }
            }
        }
        Ok(())
    }
}
