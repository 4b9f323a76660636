//! Joining and cutting along an axis: Concat and Split.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef};

use crate::elems::{run_movement, Item, Movement};
use crate::util::{axis, count, dims};

/// Copies `outer` rows of each source's chunk, one source after another, into one output.
pub(crate) struct Join {
    outer: usize,
    chunks: Vec<usize>,
}

impl Movement for Join {
    fn fill<T: Item>(&self, srcs: &[&[T]], outs: &mut [&mut [T]]) -> KernelResult<()> {
        let out = outs
            .first_mut()
            .ok_or_else(|| KernelError::invalid("no output"))?;
        let row: usize = self.chunks.iter().sum();
        if out.len() != self.outer * row || srcs.len() != self.chunks.len() {
            return Err(KernelError::invalid("concat sizes do not add up"));
        }
        for (s, &c) in srcs.iter().zip(&self.chunks) {
            if s.len() != self.outer * c {
                return Err(KernelError::invalid("concat input size mismatch"));
            }
        }
        let mut pos = 0;
        for o in 0..self.outer {
            for (s, &c) in srcs.iter().zip(&self.chunks) {
                out[pos..pos + c].clone_from_slice(&s[o * c..(o + 1) * c]);
                pos += c;
            }
        }
        Ok(())
    }
}

/// The output shape and movement of concatenating `inputs` along `axis` (normalized by the
/// first input's rank; `new_axis` inserts the axis first, as ConcatFromSequence does).
pub(crate) fn join_plan(
    inputs: &[TensorRef<'_>],
    ax: i64,
    new_axis: bool,
) -> KernelResult<(Vec<usize>, Join)> {
    let first = inputs
        .first()
        .ok_or_else(|| KernelError::invalid("nothing to concatenate"))?;
    let rank = first.rank() + usize::from(new_axis);
    let a = axis(ax, rank)?;
    let shape_of = |t: &TensorRef<'_>| -> Vec<usize> {
        let mut s = t.shape().to_vec();
        if new_axis {
            s.insert(a, 1);
        }
        s
    };
    let base = shape_of(first);
    let mut total = 0usize;
    let mut chunks = Vec::with_capacity(inputs.len());
    let inner = count(&base[a + 1..])?;
    for t in inputs {
        let s = shape_of(t);
        if s.len() != rank
            || s.iter()
                .zip(&base)
                .enumerate()
                .any(|(i, (x, y))| i != a && x != y)
        {
            return Err(KernelError::invalid(format!(
                "cannot concatenate {:?} and {:?} along axis {a}",
                first.shape(),
                t.shape()
            )));
        }
        total += s[a];
        chunks.push(s[a] * inner);
    }
    let mut out = base;
    out[a] = total;
    let outer = count(&out[..a])?;
    Ok((out, Join { outer, chunks }))
}

struct Concat {
    axis: i64,
}

impl Kernel for Concat {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let inputs = (0..ctx.input_count())
            .map(|i| ctx.input(i))
            .collect::<KernelResult<Vec<_>>>()?;
        let (out, join) = join_plan(&inputs, self.axis, false)?;
        run_movement(ctx, &inputs, &[(0, out)], &join)
    }
}

pub(crate) fn concat(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let axis = if init.opset < 4 {
        init.int_or("axis", 1)?
    } else {
        init.int("axis")?
    };
    Ok(Box::new(Concat { axis }))
}

/// Cuts one source into consecutive chunks along an axis: each output gets `outer` rows of
/// its chunk.
pub(crate) struct Cut {
    outer: usize,
    chunks: Vec<usize>,
}

impl Movement for Cut {
    fn fill<T: Item>(&self, srcs: &[&[T]], outs: &mut [&mut [T]]) -> KernelResult<()> {
        let src = srcs.first().copied().unwrap_or(&[]);
        let row: usize = self.chunks.iter().sum();
        if src.len() != self.outer * row || outs.len() != self.chunks.len() {
            return Err(KernelError::invalid("split sizes do not add up"));
        }
        let mut pos = 0;
        for o in 0..self.outer {
            for (out, &c) in outs.iter_mut().zip(&self.chunks) {
                out[o * c..(o + 1) * c].clone_from_slice(&src[pos..pos + c]);
                pos += c;
            }
        }
        Ok(())
    }
}

/// The output shapes and movement of cutting `data` along axis `a` into `sizes`.
pub(crate) fn cut_plan(
    shape: &[usize],
    a: usize,
    sizes: &[usize],
) -> KernelResult<(Vec<Vec<usize>>, Cut)> {
    let sum = sizes
        .iter()
        .try_fold(0usize, |x, &y| x.checked_add(y))
        .ok_or_else(|| KernelError::invalid("split sizes overflow"))?;
    if sum != shape[a] {
        return Err(KernelError::invalid(format!(
            "split sizes {sizes:?} do not add up to dim {} of {shape:?}",
            shape[a]
        )));
    }
    let inner = count(&shape[a + 1..])?;
    let outer = count(&shape[..a])?;
    let shapes = sizes
        .iter()
        .map(|&s| {
            let mut v = shape.to_vec();
            v[a] = s;
            v
        })
        .collect();
    let chunks = sizes.iter().map(|&s| s * inner).collect();
    Ok((shapes, Cut { outer, chunks }))
}

/// Sizes of `n` chunks of `dim`: equal, or ceil-sized with a smaller last one (as the ONNX
/// reference splits, for every opset).
pub(crate) fn equal_sizes(dim: usize, n: usize) -> KernelResult<Vec<usize>> {
    if n == 0 {
        return Err(KernelError::invalid("cannot split into 0 parts"));
    }
    if dim % n == 0 {
        return Ok(vec![dim / n; n]);
    }
    let c = dim / n + 1;
    let last = dim
        .checked_sub(c * (n - 1))
        .ok_or_else(|| KernelError::invalid(format!("dim {dim} cannot be split into {n} parts")))?;
    let mut sizes = vec![c; n];
    sizes[n - 1] = last;
    Ok(sizes)
}

struct Split {
    axis: i64,
    attr_split: Option<Vec<i64>>,
    num_outputs: Option<usize>,
}

impl Kernel for Split {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let a = axis(self.axis, data.rank())?;
        let n = ctx.output_count();
        let split = match &self.attr_split {
            Some(s) => Some(s.clone()),
            None => ctx
                .opt_input(1)?
                .map(|t| t.to_whole_i64_vec())
                .transpose()?,
        };
        let sizes = match split {
            Some(s) => {
                if s.len() != n {
                    return Err(KernelError::invalid(format!(
                        "split {s:?} must have one entry per output ({n})"
                    )));
                }
                dims(&s)?
            }
            None => {
                let parts = self.num_outputs.unwrap_or(n);
                if parts != n {
                    return Err(KernelError::invalid(format!(
                        "num_outputs {parts} differs from the {n} outputs"
                    )));
                }
                equal_sizes(data.shape()[a], n)?
            }
        };
        let (shapes, cut) = cut_plan(data.shape(), a, &sizes)?;
        let outs: Vec<(usize, Vec<usize>)> = shapes.into_iter().enumerate().collect();
        run_movement(ctx, &[data], &outs, &cut)
    }
}

pub(crate) fn split(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let attr_split = if init.opset < 13 {
        init.ints_opt("split")?.map(<[i64]>::to_vec)
    } else {
        None
    };
    let num_outputs = match init.int_opt("num_outputs")? {
        Some(v) => Some(
            usize::try_from(v)
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| KernelError::attr("num_outputs", format!("{v} is not positive")))?,
        ),
        None => None,
    };
    Ok(Box::new(Split {
        axis: init.int_or("axis", 0)?,
        attr_split,
        num_outputs,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uneven_sizes() {
        assert_eq!(equal_sizes(7, 3).unwrap(), vec![3, 3, 1]);
        assert_eq!(equal_sizes(6, 3).unwrap(), vec![2, 2, 2]);
        assert_eq!(equal_sizes(4, 3).unwrap(), vec![2, 2, 0]);
        assert!(equal_sizes(2, 4).is_err());
        assert!(equal_sizes(4, 0).is_err());
    }
}
