//! Joining and cutting along an axis: Concat and Split.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef};

use crate::elems::{run_movement, Item, Movement};
use crate::util::{axis, count, dims};

/// Copies `outer` rows of each source's chunk, one source after another, into one output.
pub(crate) struct Join {
    outer: usize,
    chunks: Vec<usize>,
    /// Threads to split the rows over (when there are enough of them: [`parts_for`]).
    pub(crate) threads: usize,
}

/// Elements from which a concatenation or split spreads its rows over the threads.
const PAR_MIN: usize = 1 << 16;

/// How many parts `outer` rows of `total` elements split into on `threads` threads: one per
/// thread when the rows are many and the copy is large (a channels-last image's pixels,
/// concatenated channel by channel), else one.
fn parts_for(threads: usize, outer: usize, total: usize) -> usize {
    if threads > 1 && total >= PAR_MIN && outer >= 2 * threads {
        threads
    } else {
        1
    }
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
        let fill_rows = |first: usize, dst: &mut [T]| {
            let mut pos = 0;
            for o in first..first + dst.len() / row.max(1) {
                for (s, &c) in srcs.iter().zip(&self.chunks) {
                    dst[pos..pos + c].clone_from_slice(&s[o * c..(o + 1) * c]);
                    pos += c;
                }
            }
        };
        let parts = parts_for(self.threads, self.outer, out.len());
        if parts <= 1 || row == 0 {
            fill_rows(0, out);
        } else {
            let per = self.outer.div_ceil(parts);
            rge_kernels::parts::for_each_chunk_mut(out, per * row, |t, dst| {
                fill_rows(t * per, dst)
            });
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
    Ok((
        out,
        Join {
            outer,
            chunks,
            threads: 1,
        },
    ))
}

struct Concat {
    axis: i64,
}

impl Kernel for Concat {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let inputs = (0..ctx.input_count())
            .map(|i| ctx.input(i))
            .collect::<KernelResult<Vec<_>>>()?;
        let (out, mut join) = join_plan(&inputs, self.axis, false)?;
        join.threads = ctx.threads();
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
    /// Threads to split the rows over (as [`Join::threads`]).
    pub(crate) threads: usize,
}

impl Movement for Cut {
    fn fill<T: Item>(&self, srcs: &[&[T]], outs: &mut [&mut [T]]) -> KernelResult<()> {
        let src = srcs.first().copied().unwrap_or(&[]);
        let row: usize = self.chunks.iter().sum();
        if src.len() != self.outer * row || outs.len() != self.chunks.len() {
            return Err(KernelError::invalid("split sizes do not add up"));
        }
        // Rows `first..first + n` into `dsts` (each output's slice of those rows).
        let cut_rows = |first: usize, n: usize, dsts: &mut [&mut [T]]| {
            let mut pos = first * row;
            for o in 0..n {
                for (out, &c) in dsts.iter_mut().zip(&self.chunks) {
                    out[o * c..(o + 1) * c].clone_from_slice(&src[pos..pos + c]);
                    pos += c;
                }
            }
        };
        let parts = parts_for(self.threads, self.outer, src.len());
        if parts <= 1 || row == 0 {
            cut_rows(0, self.outer, outs);
            return Ok(());
        }
        // Part t: rows `t·per..`, cut out of every output.
        let per = self.outer.div_ceil(parts);
        let mut mine: Vec<Vec<&mut [T]>> = (0..parts).map(|_| Vec::new()).collect();
        for (out, &c) in outs.iter_mut().zip(&self.chunks) {
            let mut rest: &mut [T] = out;
            for m in mine.iter_mut() {
                let (head, tail) = rest.split_at_mut((per * c).min(rest.len()));
                m.push(head);
                rest = tail;
            }
        }
        let mine: Vec<std::sync::Mutex<Vec<&mut [T]>>> =
            mine.into_iter().map(std::sync::Mutex::new).collect();
        rge_kernels::parts::for_each_part(parts, |t| {
            if let Ok(mut d) = mine[t].lock() {
                let first = (t * per).min(self.outer);
                cut_rows(first, per.min(self.outer - first), &mut d);
            }
        });
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
    Ok((
        shapes,
        Cut {
            outer,
            chunks,
            threads: 1,
        },
    ))
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
        let (shapes, mut cut) = cut_plan(data.shape(), a, &sizes)?;
        cut.threads = ctx.threads();
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

    /// A concatenation and a split of many rows (a channels-last image's pixels) give the same
    /// elements on 3 threads (rows split over them) as on 1, with an empty chunk among them.
    #[test]
    fn rows_split_over_threads() {
        let (outer, chunks) = (9_001usize, vec![3usize, 5, 0, 7]);
        let srcs: Vec<Vec<f32>> = chunks
            .iter()
            .enumerate()
            .map(|(k, &c)| (0..outer * c).map(|i| (i * 31 + k) as f32).collect())
            .collect();
        let refs: Vec<&[f32]> = srcs.iter().map(Vec::as_slice).collect();
        let row: usize = chunks.iter().sum();
        let joined: Vec<Vec<f32>> = [1, 3]
            .into_iter()
            .map(|threads| {
                let join = Join {
                    outer,
                    chunks: chunks.clone(),
                    threads,
                };
                let mut out = vec![0f32; outer * row];
                join.fill(&refs, &mut [&mut out[..]]).unwrap();
                out
            })
            .collect();
        assert_eq!(joined[0], joined[1]);
        assert_eq!(joined[0][row..row + 3], srcs[0][3..6]);
        for threads in [1, 3] {
            let cut = Cut {
                outer,
                chunks: chunks.clone(),
                threads,
            };
            let mut outs: Vec<Vec<f32>> = chunks.iter().map(|&c| vec![0f32; outer * c]).collect();
            let mut dsts: Vec<&mut [f32]> = outs.iter_mut().map(Vec::as_mut_slice).collect();
            cut.fill(&[&joined[0][..]], &mut dsts).unwrap();
            assert_eq!(outs, srcs, "split on {threads} threads");
        }
    }

    #[test]
    fn uneven_sizes() {
        assert_eq!(equal_sizes(7, 3).unwrap(), vec![3, 3, 1]);
        assert_eq!(equal_sizes(6, 3).unwrap(), vec![2, 2, 2]);
        assert_eq!(equal_sizes(4, 3).unwrap(), vec![2, 2, 0]);
        assert!(equal_sizes(2, 4).is_err());
        assert!(equal_sizes(4, 0).is_err());
    }
}
