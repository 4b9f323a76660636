//! SoftmaxCrossEntropyLoss and NegativeLogLikelihoodLoss over (N, C, d1, …) inputs with
//! (N, d1, …) integer targets, optional per-class weights, ignore_index and the three
//! reductions. Accumulates in f64.

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::common::{read, read_ints, want_float, write};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Reduction {
    None,
    Sum,
    Mean,
}

/// Both loss kernels; `softmax` selects SoftmaxCrossEntropyLoss.
pub struct Loss {
    softmax: bool,
    reduction: Reduction,
    ignore_index: Option<i64>,
}

fn build(init: &KernelInit<'_>, softmax: bool) -> KernelResult<Box<dyn Kernel>> {
    let reduction = match init.str_or("reduction", "mean")? {
        "none" => Reduction::None,
        "sum" => Reduction::Sum,
        "mean" => Reduction::Mean,
        other => {
            return Err(KernelError::attr(
                "reduction",
                format!("{other:?} is not none, sum or mean"),
            ))
        }
    };
    Ok(Box::new(Loss {
        softmax,
        reduction,
        ignore_index: init.int_opt("ignore_index")?,
    }))
}

/// Builds a SoftmaxCrossEntropyLoss kernel.
pub fn softmax_cross_entropy(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    build(init, true)
}

/// Builds a NegativeLogLikelihoodLoss kernel.
pub fn nll_loss(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    build(init, false)
}

/// log_softmax over axis 1 of (n, c, d) data.
fn log_softmax(x: &[f64], n: usize, c: usize, d: usize) -> Vec<f64> {
    let mut out = vec![0.0; x.len()];
    for ni in 0..n {
        for di in 0..d {
            let at = |ci: usize| (ni * c + ci) * d + di;
            let mx = (0..c).map(|ci| x[at(ci)]).fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = (0..c).map(|ci| (x[at(ci)] - mx).exp()).sum();
            let lse = sum.ln();
            for ci in 0..c {
                out[at(ci)] = x[at(ci)] - mx - lse;
            }
        }
    }
    out
}

impl Kernel for Loss {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        want_float(&x, "input")?;
        let target = ctx.input(1)?;
        if !matches!(target.dtype(), DType::Int32 | DType::Int64) {
            return Err(KernelError::unsupported(format!(
                "target data type {} (expected int32 or int64)",
                target.dtype()
            )));
        }
        let weight = ctx.opt_input(2)?;
        let xs = x.shape();
        if xs.len() < 2 {
            return Err(KernelError::invalid(format!(
                "input must have rank >= 2 (N, C, ...), got {xs:?}"
            )));
        }
        let (n, c) = (xs[0], xs[1]);
        let d: usize = xs[2..].iter().product();
        let mut tshape = vec![n];
        tshape.extend_from_slice(&xs[2..]);
        if target.shape() != tshape.as_slice() {
            return Err(KernelError::invalid(format!(
                "target shape {:?} does not match input {xs:?} (expected {tshape:?})",
                target.shape()
            )));
        }
        let w = match &weight {
            Some(w) => {
                want_float(w, "weight")?;
                if w.shape() != [c] {
                    return Err(KernelError::invalid(format!(
                        "weight shape {:?}, expected [{c}]",
                        w.shape()
                    )));
                }
                Some(read::<f64>(w)?)
            }
            None => None,
        };
        let xv = read::<f64>(&x)?;
        let lp = if self.softmax {
            log_softmax(&xv, n, c, d)
        } else {
            xv
        };
        let tv = read_ints(&target, "target")?;
        let mut loss = vec![0.0f64; n * d];
        let mut wsum = 0.0f64;
        for ni in 0..n {
            for di in 0..d {
                let t = tv[ni * d + di];
                if self.ignore_index == Some(t) {
                    continue;
                }
                if t < 0 || t as usize >= c {
                    return Err(KernelError::invalid(format!(
                        "target value {t} is out of range [0, {c})"
                    )));
                }
                let t = t as usize;
                let wt = w.as_ref().map_or(1.0, |w| w[t]);
                loss[ni * d + di] = -lp[(ni * c + t) * d + di] * wt;
                wsum += wt;
            }
        }
        let dt = x.dtype();
        match self.reduction {
            Reduction::None => write(ctx, 0, dt, &tshape, &loss)?,
            Reduction::Sum => write(ctx, 0, dt, &[], &[loss.iter().sum::<f64>()])?,
            Reduction::Mean => {
                let total: f64 = loss.iter().sum();
                let denom = if w.is_none() && self.ignore_index.is_none() {
                    (n * d) as f64
                } else {
                    wsum
                };
                write(ctx, 0, dt, &[], &[total / denom])?
            }
        }
        if self.softmax && ctx.output_count() > 1 && ctx.output_used(1) {
            write(ctx, 1, dt, xs, &lp)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_kernels::{run_owned, Tensor, Value};

    fn run(softmax: bool, ins: &[Value], n: usize) -> KernelResult<Vec<Option<Value>>> {
        let k = Loss {
            softmax,
            reduction: Reduction::Mean,
            ignore_index: Some(-1),
        };
        let refs: Vec<Option<&Value>> = ins.iter().map(Some).collect();
        run_owned(&k, &refs, n, 1, None)
    }

    fn x() -> Value {
        Value::Tensor(Tensor::from_vec(&[2, 3], vec![0.1f32, 0.2, 0.7, 0.5, 0.3, 0.2]).unwrap())
    }

    fn target(v: Vec<i64>) -> Value {
        let n = v.len();
        Value::Tensor(Tensor::from_vec(&[n], v).unwrap())
    }

    #[test]
    fn mean_with_ignored_entries() {
        let out = run(false, &[x(), target(vec![2, -1])], 1).unwrap();
        let Some(Value::Tensor(t)) = &out[0] else {
            panic!()
        };
        assert_eq!(t.shape(), &[] as &[usize]);
        assert!((t.as_slice::<f32>().unwrap()[0] + 0.7).abs() < 1e-6);
        let out = run(true, &[x(), target(vec![0, 1])], 2).unwrap();
        let Some(Value::Tensor(lp)) = &out[1] else {
            panic!()
        };
        let row: f64 = lp.as_slice::<f32>().unwrap()[..3]
            .iter()
            .map(|&v| (v as f64).exp())
            .sum();
        assert!((row - 1.0).abs() < 1e-6);
    }

    #[test]
    fn bad_inputs_are_errors() {
        // Target out of range.
        assert!(run(false, &[x(), target(vec![3, 0])], 1).is_err());
        assert!(run(true, &[x(), target(vec![-2, 0])], 1).is_err());
        // Target shape mismatch.
        assert!(run(false, &[x(), target(vec![0, 1, 2])], 1).is_err());
        // Weight of the wrong length.
        let w = Value::Tensor(Tensor::from_vec(&[2], vec![1.0f32, 1.0]).unwrap());
        assert!(run(false, &[x(), target(vec![0, 1]), w], 1).is_err());
        // Float target, rank-1 input.
        let ft = Value::Tensor(Tensor::from_vec(&[2], vec![0.0f32, 1.0]).unwrap());
        assert!(run(false, &[x(), ft], 1).is_err());
        let x1 = Value::Tensor(Tensor::from_vec(&[3], vec![0.0f32; 3]).unwrap());
        assert!(run(false, &[x1, target(vec![0])], 1).is_err());
    }
}
