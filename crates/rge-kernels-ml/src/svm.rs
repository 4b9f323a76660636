//! SVMClassifier and SVMRegressor: kernel values against the support vectors (LINEAR, POLY,
//! RBF, SIGMOID with `kernel_params` gamma, coef0, degree), one-vs-one votes and Platt
//! probabilities for classifiers, as onnxruntime computes them.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor};

use crate::input::rows;
use crate::labels::Labels;
use crate::post::{logistic, probit, Post};

#[derive(Clone, Copy)]
enum Kind {
    Linear,
    Poly,
    Rbf,
    Sigmoid,
}

#[derive(Clone, Copy)]
struct SvmKernel {
    kind: Kind,
    gamma: f32,
    coef0: f32,
    degree: f32,
}

impl SvmKernel {
    fn from_init(init: &KernelInit<'_>) -> KernelResult<Self> {
        let p = init.floats_opt("kernel_params")?.unwrap_or(&[]);
        let kind = match init.str_or("kernel_type", "LINEAR")? {
            "LINEAR" => Kind::Linear,
            "POLY" => Kind::Poly,
            "RBF" => Kind::Rbf,
            "SIGMOID" => Kind::Sigmoid,
            other => {
                return Err(KernelError::attr(
                    "kernel_type",
                    format!("`{other}` is not LINEAR, POLY, RBF or SIGMOID"),
                ))
            }
        };
        Ok(SvmKernel {
            kind,
            gamma: p.first().copied().unwrap_or(0.0),
            coef0: p.get(1).copied().unwrap_or(0.0),
            degree: p.get(2).copied().unwrap_or(0.0),
        })
    }

    fn eval(self, x: &[f32], sv: &[f32]) -> f32 {
        match self.kind {
            Kind::Rbf => {
                let d: f32 = x.iter().zip(sv).map(|(a, b)| (a - b) * (a - b)).sum();
                (-self.gamma * d).exp()
            }
            _ => {
                let dot: f32 = x.iter().zip(sv).map(|(a, b)| a * b).sum();
                match self.kind {
                    Kind::Linear => dot,
                    Kind::Poly => (self.gamma * dot + self.coef0).powf(self.degree),
                    _ => (self.gamma * dot + self.coef0).tanh(),
                }
            }
        }
    }
}

fn floats(init: &KernelInit<'_>, name: &str) -> KernelResult<Vec<f32>> {
    Ok(init.floats_opt(name)?.unwrap_or(&[]).to_vec())
}

struct SvmClassifier {
    kernel: SvmKernel,
    labels: Labels,
    coef: Vec<f32>,
    sv: Vec<f32>,
    rho: Vec<f32>,
    prob_a: Vec<f32>,
    prob_b: Vec<f32>,
    per_class: Vec<usize>,
    starts: Vec<usize>,
    features: usize,
    all_positive: bool,
    post: Post,
}

pub(crate) fn svm_classifier(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let labels = Labels::from_init(init, "classlabels_ints")?;
    let c = labels.len();
    if c == 0 {
        return Err(KernelError::attr(
            "classlabels_ints",
            "no class labels (classlabels_ints or classlabels_strings)",
        ));
    }
    let coef = floats(init, "coefficients")?;
    let sv = floats(init, "support_vectors")?;
    let rho = floats(init, "rho")?;
    let (prob_a, prob_b) = (floats(init, "prob_a")?, floats(init, "prob_b")?);
    if prob_a.len() != prob_b.len() {
        return Err(KernelError::attr(
            "prob_b",
            format!("has {} values; prob_a has {}", prob_b.len(), prob_a.len()),
        ));
    }
    let per_class: Vec<usize> = init
        .ints_or_empty("vectors_per_class")?
        .iter()
        .map(|&v| {
            usize::try_from(v)
                .map_err(|_| KernelError::attr("vectors_per_class", format!("{v} < 0")))
        })
        .collect::<KernelResult<_>>()?;
    let vectors: usize = per_class.iter().sum();
    let pairs = c * (c - 1) / 2;
    let features = if vectors > 0 {
        if per_class.len() != c {
            return Err(KernelError::attr(
                "vectors_per_class",
                format!("has {} values for {c} classes", per_class.len()),
            ));
        }
        if sv.len() % vectors != 0
            || coef.len() < (c - 1) * vectors
            || rho.len() < pairs
            || (!prob_a.is_empty() && prob_a.len() < pairs)
        {
            return Err(KernelError::attr("coefficients", format!(
                "sizes do not fit {c} classes and {vectors} support vectors (support_vectors {}, coefficients {}, rho {})",
                sv.len(), coef.len(), rho.len()
            )));
        }
        sv.len() / vectors
    } else {
        if coef.is_empty() || coef.len() % c != 0 || rho.is_empty() {
            return Err(KernelError::attr(
                "coefficients",
                format!(
                    "{} coefficients (and {} rho) do not fit {c} classes",
                    coef.len(),
                    rho.len()
                ),
            ));
        }
        coef.len() / c
    };
    let mut starts = Vec::with_capacity(per_class.len());
    let mut acc = 0;
    for &v in &per_class {
        starts.push(acc);
        acc += v;
    }
    Ok(Box::new(SvmClassifier {
        kernel: SvmKernel::from_init(init)?,
        all_positive: coef.iter().all(|&v| v >= 0.0),
        labels,
        coef,
        sv,
        rho,
        prob_a,
        prob_b,
        per_class,
        starts,
        features,
        post: Post::parse(init.str_or("post_transform", "NONE")?)?,
    }))
}

/// Pairwise probabilities to class probabilities (libsvm's second method, as onnxruntime).
fn multiclass_probability(k: usize, r: &[f32], p: &mut [f32]) {
    let mut q = vec![0f32; k * k];
    let mut qp = vec![0f32; k];
    let eps = 0.005 / k as f32;
    for i in 0..k {
        p[i] = 1.0 / k as f32;
        for j in 0..i {
            q[i * k + i] += r[j * k + i] * r[j * k + i];
            q[i * k + j] = q[j * k + i];
        }
        for j in i + 1..k {
            q[i * k + i] += r[j * k + i] * r[j * k + i];
            q[i * k + j] = -r[j * k + i] * r[i * k + j];
        }
    }
    for _ in 0..100 {
        let mut pqp = 0.0;
        for i in 0..k {
            qp[i] = (0..k).map(|j| q[i * k + j] * p[j]).sum();
            pqp += p[i] * qp[i];
        }
        let max_error = (0..k).map(|i| (qp[i] - pqp).abs()).fold(0.0, f32::max);
        if max_error < eps {
            break;
        }
        for i in 0..k {
            let diff = (-qp[i] + pqp) / q[i * k + i];
            p[i] += diff;
            pqp = (pqp + diff * (diff * q[i * k + i] + 2.0 * qp[i])) / (1.0 + diff) / (1.0 + diff);
            for j in 0..k {
                qp[j] = (qp[j] + diff * q[i * k + j]) / (1.0 + diff);
                p[j] /= 1.0 + diff;
            }
        }
    }
}

/// The first index of the largest value.
fn argmax<T: PartialOrd + Copy>(v: &[T]) -> usize {
    let mut best = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[best] {
            best = i;
        }
    }
    best
}

impl Kernel for SvmClassifier {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (n, f, x) = rows(ctx)?;
        if f != self.features {
            return Err(KernelError::invalid(format!(
                "X has {f} features; the model has {}",
                self.features
            )));
        }
        let c = self.labels.len();
        let pairs = c * (c - 1) / 2;
        let vectors: usize = self.per_class.iter().sum();
        let proba = !self.prob_a.is_empty();
        let width = if vectors > 0 && !proba {
            if c > 2 {
                pairs
            } else {
                2
            }
        } else {
            c
        };
        let mut picks = Vec::with_capacity(n);
        let mut out = Vec::with_capacity(n * width);
        for r in 0..n {
            let xr = &x[r * f..(r + 1) * f];
            if vectors == 0 {
                // liblinear: one score per class.
                let mut scores: Vec<f32> = (0..c)
                    .map(|k| self.kernel.eval(xr, &self.coef[k * f..(k + 1) * f]) + self.rho[0])
                    .collect();
                let best = argmax(&scores);
                let w = scores[best];
                picks.push(if c == 2 {
                    self.choose(w, best, false)
                } else {
                    Ok(best)
                });
                if c >= 2 {
                    self.post.apply_row(&mut scores);
                } else if self.post == Post::Probit {
                    scores[0] = probit(scores[0]);
                }
                out.extend(scores);
                continue;
            }
            let kernels: Vec<f32> = (0..vectors)
                .map(|v| self.kernel.eval(xr, &self.sv[v * f..(v + 1) * f]))
                .collect();
            let mut votes = vec![0i64; c];
            let mut scores = Vec::with_capacity(pairs);
            let mut idx = 0;
            for i in 0..c - 1 {
                for j in i + 1..c {
                    let mut sum = 0f64;
                    for m in 0..self.per_class[i] {
                        sum += (self.coef[vectors * (j - 1) + self.starts[i] + m]
                            * kernels[self.starts[i] + m]) as f64;
                    }
                    for m in 0..self.per_class[j] {
                        sum += (self.coef[vectors * i + self.starts[j] + m]
                            * kernels[self.starts[j] + m]) as f64;
                    }
                    sum += self.rho[idx] as f64;
                    idx += 1;
                    scores.push(sum as f32);
                    votes[if sum > 0.0 { i } else { j }] += 1;
                }
            }
            let best = argmax(&votes);
            picks.push(if pairs == 1 {
                self.choose(0.0, best, proba)
            } else {
                Ok(best)
            });
            if proba {
                let mut pp = vec![0f32; c * c];
                let mut k = 0;
                for i in 0..c - 1 {
                    for j in i + 1..c {
                        let v = (1.0 - logistic(scores[k] * self.prob_a[k] + self.prob_b[k]))
                            .clamp(1e-7, 1.0 - 1e-7);
                        pp[i * c + j] = v;
                        pp[j * c + i] = 1.0 - v;
                        k += 1;
                    }
                }
                let mut p = vec![0f32; c];
                multiclass_probability(c, &pp, &mut p);
                if c >= 2 {
                    self.post.apply_row(&mut p);
                }
                out.extend(p);
            } else if c <= 2 {
                let s = scores[0];
                out.extend(if self.post == Post::None {
                    [-s, s]
                } else {
                    [1.0 - s, s]
                });
            } else {
                self.post.apply_row(&mut scores);
                out.extend(scores);
            }
        }
        self.labels.put(ctx, 0, &picks)?;
        ctx.put(1, Tensor::from_vec(&[n, width], out)?)
    }
}

impl SvmClassifier {
    /// onnxruntime's label choice for two classes.
    fn choose(&self, max_weight: f32, best: usize, proba: bool) -> Result<usize, bool> {
        if self.labels.len() != 2 {
            return self.labels.binary(max_weight > 0.0);
        }
        if !proba
            && ((self.all_positive && max_weight >= 0.5)
                || (max_weight > 0.0 && !self.all_positive))
        {
            Ok(1)
        } else {
            Ok(best)
        }
    }
}

struct SvmRegressor {
    kernel: SvmKernel,
    coef: Vec<f32>,
    sv: Vec<f32>,
    rho: f32,
    supports: usize,
    one_class: bool,
    post: Post,
}

pub(crate) fn svm_regressor(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let coef = floats(init, "coefficients")?;
    let sv = floats(init, "support_vectors")?;
    let rho = floats(init, "rho")?;
    let supports = init.int_or("n_supports", 0)?;
    let supports = usize::try_from(supports)
        .map_err(|_| KernelError::attr("n_supports", format!("{supports} < 0")))?;
    if rho.is_empty()
        || coef.is_empty()
        || (supports > 0 && (coef.len() < supports || sv.len() % supports != 0))
    {
        return Err(KernelError::attr(
            "coefficients",
            format!(
            "{} coefficients, {} support vector values and {} rho do not fit {supports} supports",
            coef.len(), sv.len(), rho.len()
        ),
        ));
    }
    Ok(Box::new(SvmRegressor {
        kernel: if supports > 0 {
            SvmKernel::from_init(init)?
        } else {
            SvmKernel {
                kind: Kind::Linear,
                gamma: 0.0,
                coef0: 0.0,
                degree: 0.0,
            }
        },
        coef,
        sv,
        rho: rho[0],
        supports,
        one_class: init.int_or("one_class", 0)? != 0,
        post: Post::parse(init.str_or("post_transform", "NONE")?)?,
    }))
}

impl Kernel for SvmRegressor {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (n, f, x) = rows(ctx)?;
        let want = self
            .sv
            .len()
            .checked_div(self.supports)
            .unwrap_or(self.coef.len());
        if f != want {
            return Err(KernelError::invalid(format!(
                "X has {f} features; the model has {want}"
            )));
        }
        let mut out = Vec::with_capacity(n);
        for r in 0..n {
            let xr = &x[r * f..(r + 1) * f];
            let mut s = if self.supports > 0 {
                (0..self.supports)
                    .map(|v| {
                        (self.coef[v] * self.kernel.eval(xr, &self.sv[v * f..(v + 1) * f])) as f64
                    })
                    .sum::<f64>() as f32
                    + self.rho
            } else {
                self.kernel.eval(xr, &self.coef) + self.rho
            };
            if self.one_class {
                s = if s > 0.0 { 1.0 } else { -1.0 };
            }
            if self.post == Post::Probit {
                s = probit(s);
            }
            out.push(s);
        }
        ctx.put(0, Tensor::from_vec(&[n, 1], out)?)
    }
}
