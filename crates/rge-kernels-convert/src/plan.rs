//! Iteration plans over a row-major tensor: a reduction over a set of axes (walked as
//! contiguous runs, with adjacent dims of the same kind merged) and the (outer, len, inner)
//! split around one axis used by scans, arg-reductions and softmax.

use rge_kernels::{KernelError, KernelResult};

/// A reduction of `in_shape` over some axes.
#[derive(Debug, Clone)]
pub struct ReducePlan {
    /// Merged dims (size, reduced), outermost first; no size-1 dims, at least one entry.
    dims: Vec<(usize, bool)>,
    /// Output shape (with or without the kept 1s).
    pub out_shape: Vec<usize>,
    /// Output element count.
    pub out_len: usize,
    /// Input element count.
    pub in_len: usize,
    /// Elements reduced into each output.
    pub group: usize,
}

/// Normalizes ONNX axes (negative counts from the end) for `rank`; errors on out of range
/// and repeated axes.
pub fn normalize_axes(axes: &[i64], rank: usize) -> KernelResult<Vec<bool>> {
    let mut mask = vec![false; rank];
    for &a in axes {
        let r = rank as i64;
        if a < -r || a >= r {
            return Err(KernelError::invalid(format!(
                "axis {a} is out of range for rank {rank}"
            )));
        }
        let i = if a < 0 { a + r } else { a } as usize;
        if mask[i] {
            return Err(KernelError::invalid(format!("axis {a} is repeated")));
        }
        mask[i] = true;
    }
    Ok(mask)
}

impl ReducePlan {
    /// The plan for reducing `shape` over the axes set in `mask`.
    pub fn new(shape: &[usize], mask: &[bool], keepdims: bool) -> Self {
        let mut out_shape = Vec::with_capacity(shape.len());
        let mut dims: Vec<(usize, bool)> = Vec::new();
        for (&d, &r) in shape.iter().zip(mask) {
            if r {
                if keepdims {
                    out_shape.push(1);
                }
            } else {
                out_shape.push(d);
            }
            if d == 1 {
                continue;
            }
            match dims.last_mut() {
                Some(last) if last.1 == r => last.0 *= d,
                _ => dims.push((d, r)),
            }
        }
        if dims.is_empty() {
            dims.push((1, false));
        }
        let in_len: usize = shape.iter().product();
        let out_len: usize = out_shape.iter().product();
        let group = shape
            .iter()
            .zip(mask)
            .filter(|(_, &r)| r)
            .map(|(&d, _)| d)
            .product();
        ReducePlan {
            dims,
            out_shape,
            out_len,
            in_len,
            group,
        }
    }

    /// Calls `run(in_start, len, out_start, out_step)` for every contiguous run of the input
    /// in order: elements `in_start..in_start+len` go to output `out_start + j*out_step`
    /// (`out_step` 0 when the run is reduced into one output, 1 otherwise).
    pub fn for_each_run(&self, mut run: impl FnMut(usize, usize, usize, usize)) {
        if self.in_len == 0 {
            return;
        }
        let (last_len, last_red) = self.dims[self.dims.len() - 1];
        let outer = &self.dims[..self.dims.len() - 1];
        let step = usize::from(!last_red);
        // Output strides of the outer merged dims.
        let mut ostride = vec![0usize; outer.len()];
        let mut s = if last_red { 1 } else { last_len };
        for (k, &(d, r)) in outer.iter().enumerate().rev() {
            if !r {
                ostride[k] = s;
                s *= d;
            }
        }
        let mut idx = vec![0usize; outer.len()];
        let mut in_off = 0;
        let mut out_off = 0;
        loop {
            run(in_off, last_len, out_off, step);
            in_off += last_len;
            let mut k = outer.len();
            loop {
                if k == 0 {
                    return;
                }
                k -= 1;
                idx[k] += 1;
                out_off += ostride[k];
                if idx[k] < outer[k].0 {
                    break;
                }
                out_off -= ostride[k] * outer[k].0;
                idx[k] = 0;
            }
        }
    }
}

/// (outer, len, inner) of `shape` around `axis`.
pub fn split3(shape: &[usize], axis: usize) -> (usize, usize, usize) {
    let outer = shape[..axis].iter().product();
    let len = shape.get(axis).copied().unwrap_or(1);
    let inner = shape.get(axis + 1..).map_or(1, |s| s.iter().product());
    (outer, len, inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(shape: &[usize], axes: &[i64]) -> Vec<(usize, usize, usize, usize)> {
        let mask = normalize_axes(axes, shape.len()).unwrap();
        let p = ReducePlan::new(shape, &mask, true);
        let mut v = vec![];
        p.for_each_run(|a, b, c, d| v.push((a, b, c, d)));
        v
    }

    #[test]
    fn walks() {
        assert_eq!(runs(&[2, 3], &[1]), vec![(0, 3, 0, 0), (3, 3, 1, 0)]);
        assert_eq!(runs(&[2, 3], &[0]), vec![(0, 3, 0, 1), (3, 3, 0, 1)]);
        assert_eq!(
            runs(&[2, 2, 2], &[1]),
            vec![(0, 2, 0, 1), (2, 2, 0, 1), (4, 2, 2, 1), (6, 2, 2, 1)]
        );
        assert_eq!(runs(&[2, 1, 3], &[0, 2]), vec![(0, 6, 0, 0)]);
        assert_eq!(runs(&[], &[]), vec![(0, 1, 0, 1)]);
        assert!(normalize_axes(&[3], 3).is_err());
        assert!(normalize_axes(&[1, -2], 3).is_err());
        let p = ReducePlan::new(&[2, 0, 3], &[false, true, false], false);
        assert_eq!(
            (p.out_shape.clone(), p.out_len, p.group),
            (vec![2, 3], 6, 0)
        );
        assert_eq!(split3(&[2, 3, 4], 1), (2, 3, 4));
    }
}
