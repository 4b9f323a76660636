//! Det (11, 22): determinants of the trailing [M, M] matrices by LU with partial pivoting.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::util::put_f64;

struct Det;

pub(crate) fn create_det(_init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Det))
}

/// The determinant of the row-major `m`×`m` matrix `a` (overwritten).
fn det(a: &mut [f64], m: usize) -> f64 {
    let mut d = 1.0;
    for c in 0..m {
        let p = (c..m)
            .max_by(|&i, &j| a[i * m + c].abs().total_cmp(&a[j * m + c].abs()))
            .unwrap_or(c);
        let pivot = a[p * m + c];
        if pivot == 0.0 {
            return 0.0;
        }
        if p != c {
            for k in 0..m {
                a.swap(c * m + k, p * m + k);
            }
            d = -d;
        }
        d *= pivot;
        for r in c + 1..m {
            let f = a[r * m + c] / pivot;
            if f != 0.0 {
                for k in c..m {
                    a[r * m + k] -= f * a[c * m + k];
                }
            }
        }
    }
    d
}

impl Kernel for Det {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let s = x.shape();
        let r = s.len();
        if r < 2 || s[r - 1] != s[r - 2] {
            return Err(KernelError::invalid(format!(
                "Det needs [*, M, M] input, got {s:?}"
            )));
        }
        let m = s[r - 1];
        let data = x.to_f64_vec()?;
        let batch: usize = s[..r - 2].iter().product();
        let mut out = Vec::with_capacity(batch);
        let mut buf = vec![0.0; m * m];
        for b in 0..batch {
            buf.copy_from_slice(&data[b * m * m..(b + 1) * m * m]);
            out.push(det(&mut buf, m));
        }
        put_f64(ctx, 0, x.dtype(), &s[..r - 2], &out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn determinants() {
        assert_eq!(det(&mut [0.0, 1.0, 2.0, 3.0], 2), -2.0);
        assert!((det(&mut [2.0, 0.0, 1.0, 1.0, 3.0, 2.0, 1.0, 1.0, 2.0], 3) - 6.0).abs() < 1e-12);
        assert_eq!(det(&mut [1.0, 2.0, 2.0, 4.0], 2), 0.0);
        assert_eq!(det(&mut [], 0), 1.0);
    }
}
