//! LinearClassifier and LinearRegressor: X · coefficientsᵀ + intercepts, then onnxruntime's
//! label choice and post-transform.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor};

use crate::input::rows;
use crate::labels::Labels;
use crate::post::{binary_scores, probit, Post, SecondClass};

/// Scores [N, T] of rows x [N, F] against coefficients [T, F].
fn scores(x: &[f32], n: usize, f: usize, coef: &[f32], intercepts: &[f32], t: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(n * t);
    for r in 0..n {
        let xr = &x[r * f..(r + 1) * f];
        for k in 0..t {
            let dot: f32 = xr
                .iter()
                .zip(&coef[k * f..(k + 1) * f])
                .map(|(a, b)| a * b)
                .sum();
            out.push(dot + intercepts.get(k).copied().unwrap_or(0.0));
        }
    }
    out
}

fn targets_of(coef: &[f32], intercepts: &[f32], f: usize) -> KernelResult<usize> {
    let t = if intercepts.is_empty() {
        coef.len() / f.max(1)
    } else {
        intercepts.len()
    };
    if t == 0 || coef.len() != t * f {
        return Err(KernelError::invalid(format!(
            "{} coefficients do not make {t} rows of the input's {f} features",
            coef.len()
        )));
    }
    Ok(t)
}

struct LinearClassifier {
    coef: Vec<f32>,
    intercepts: Vec<f32>,
    labels: Labels,
    post: Post,
}

pub(crate) fn linear_classifier(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let coef = init.floats_opt("coefficients")?.unwrap_or(&[]).to_vec();
    if coef.is_empty() {
        return Err(KernelError::attr("coefficients", "no coefficients"));
    }
    let intercepts = init.floats_opt("intercepts")?.unwrap_or(&[]).to_vec();
    let labels = Labels::from_init(init, "classlabels_ints")?;
    let classes = if intercepts.is_empty() {
        labels.len()
    } else {
        intercepts.len()
    };
    if labels.len() != classes && !(classes == 1 && labels.len() == 2) {
        return Err(KernelError::attr(
            "classlabels_ints",
            format!("{} labels for {classes} classes (intercepts)", labels.len()),
        ));
    }
    Ok(Box::new(LinearClassifier {
        coef,
        intercepts,
        labels,
        post: Post::parse(init.str_or("post_transform", "NONE")?)?,
    }))
}

impl Kernel for LinearClassifier {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (n, f, x) = rows(ctx)?;
        let t = targets_of(&self.coef, &self.intercepts, f)?;
        if t > 1 && t != self.labels.len() {
            return Err(KernelError::invalid(format!(
                "{t} classes of coefficients but {} class labels",
                self.labels.len()
            )));
        }
        let s = scores(&x, n, f, &self.coef, &self.intercepts, t);
        let mut picks = Vec::with_capacity(n);
        let two = t == 1 && self.labels.len() == 2;
        let width = if two { 2 } else { t };
        let mut out = Vec::with_capacity(n * width);
        for row in s.chunks_exact(t) {
            if t == 1 {
                picks.push(self.labels.binary(row[0] > 0.0));
                if self.post == Post::Probit {
                    out.push(probit(row[0]));
                } else if two {
                    // onnxruntime: (1 - s, s), but (logistic(-s), logistic(s)) under LOGISTIC.
                    let second = if self.post == Post::Logistic {
                        SecondClass::Mirror
                    } else {
                        SecondClass::Complement
                    };
                    out.extend(binary_scores(row[0], self.post, second));
                } else {
                    out.push(row[0]);
                }
                continue;
            }
            let mut best = 0;
            for k in 1..t {
                if row[k] > row[best] {
                    best = k;
                }
            }
            picks.push(Ok(best));
            let mut row = row.to_vec();
            self.post.apply_row(&mut row);
            out.extend(row);
        }
        self.labels.put(ctx, 0, &picks)?;
        ctx.put(1, Tensor::from_vec(&[n, width], out)?)
    }
}

struct LinearRegressor {
    coef: Vec<f32>,
    intercepts: Vec<f32>,
    targets: usize,
    post: Post,
}

pub(crate) fn linear_regressor(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let targets = init.int_or("targets", 1)?;
    let targets = usize::try_from(targets)
        .ok()
        .filter(|&t| t > 0)
        .ok_or_else(|| KernelError::attr("targets", format!("must be positive, got {targets}")))?;
    let intercepts = init.floats_opt("intercepts")?.unwrap_or(&[]).to_vec();
    if !intercepts.is_empty() && intercepts.len() != targets {
        return Err(KernelError::attr(
            "intercepts",
            format!("has {} values for {targets} targets", intercepts.len()),
        ));
    }
    Ok(Box::new(LinearRegressor {
        coef: init.floats_opt("coefficients")?.unwrap_or(&[]).to_vec(),
        intercepts,
        targets,
        post: Post::parse(init.str_or("post_transform", "NONE")?)?,
    }))
}

impl Kernel for LinearRegressor {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (n, f, x) = rows(ctx)?;
        let t = self.targets;
        if self.coef.len() != t * f {
            return Err(KernelError::invalid(format!(
                "{} coefficients do not make {t} rows of the input's {f} features",
                self.coef.len()
            )));
        }
        let mut s = scores(&x, n, f, &self.coef, &self.intercepts, t);
        if t >= 2 {
            s.chunks_exact_mut(t)
                .for_each(|row| self.post.apply_row(row));
        } else if self.post == Post::Probit {
            s.iter_mut().for_each(|v| *v = probit(*v));
        }
        ctx.put(0, Tensor::from_vec(&[n, t], s)?)
    }
}
