//! Elementwise loops: chunked (optionally parallel) maps over contiguous slices and a
//! broadcast plan that walks the output in rows along its innermost (coalesced) dim, each
//! input advancing by 0 or 1 per element within a row.

use rayon::prelude::*;
use rge_kernels::KernelResult;

/// Element count from which a kernel splits its work across threads.
pub const PAR_MIN: usize = 1 << 16;

/// Calls `f(chunk, start)` over `out` split in chunks (start: the chunk's first element
/// index), in parallel when `threads > 1` and `out` is large.
pub fn for_chunks<O: Send>(threads: usize, out: &mut [O], f: impl Fn(&mut [O], usize) + Sync) {
    let n = out.len();
    if threads > 1 && n >= PAR_MIN {
        let chunk = n.div_ceil(threads * 4).max(4096);
        out.par_chunks_mut(chunk)
            .enumerate()
            .for_each(|(i, c)| f(c, i * chunk));
    } else {
        f(out, 0);
    }
}

/// `out[i] = f(a[i])`.
pub fn map<A: Copy + Sync, O: Send>(
    threads: usize,
    a: &[A],
    out: &mut [O],
    f: impl Fn(A) -> O + Sync,
) {
    for_chunks(threads, out, |o, s| {
        let src = &a[s..s + o.len()];
        for (o, &x) in o.iter_mut().zip(src) {
            *o = f(x);
        }
    });
}

/// A short list of dims, strides or indices, inline up to
/// [`rge_kernels::shape_util::INLINE_RANK`] values (the kernel core's shape vector), so that
/// per-call shape work does not allocate for common ranks.
pub use rge_kernels::shape_util::ShapeVec as DimVec;
pub use rge_kernels::shape_util::{broadcast_shapes, INLINE_RANK};

/// The broadcast of two shapes, borrowing `a` when both are equal (the common case: no work
/// beyond the comparison). `tmp` holds the result otherwise.
#[inline]
pub fn broadcast_pair<'s>(
    a: &'s [usize],
    b: &[usize],
    tmp: &'s mut DimVec,
) -> KernelResult<&'s [usize]> {
    if a == b {
        return Ok(a);
    }
    *tmp = broadcast_shapes(&[a, b])?;
    Ok(tmp)
}

/// How `K` inputs are read while walking an output of some shape.
pub struct Plan<const K: usize> {
    /// Outer dims (coalesced, innermost excluded).
    outer: DimVec,
    /// Each input's stride along each outer dim.
    outer_strides: [DimVec; K],
    /// The innermost dim's size.
    inner: usize,
    /// Each input's stride along the innermost dim: 0 (broadcast) or 1.
    pub inner_strides: [usize; K],
}

impl<const K: usize> Plan<K> {
    /// A plan for output `out` with inputs of `shapes` (each broadcastable to `out`: the
    /// caller checked with `broadcast_shapes`).
    pub fn new(out: &[usize], shapes: [&[usize]; K]) -> Self {
        // Each input's strides read as if broadcast to `out` (0 along broadcast dims).
        let full: [DimVec; K] = std::array::from_fn(|k| {
            let shape = shapes[k];
            let off = out.len() - shape.len();
            let mut s = DimVec::from_elem(0, out.len());
            let mut step = 1;
            for (i, &d) in shape.iter().enumerate().rev() {
                if d != 1 {
                    s[off + i] = step;
                }
                step *= d;
            }
            s
        });
        // Drop size-1 dims, then merge neighbours that every input walks contiguously.
        let mut dims = DimVec::new();
        let mut strides: [DimVec; K] = std::array::from_fn(|_| DimVec::new());
        for (d, &size) in out.iter().enumerate() {
            if size == 1 {
                continue;
            }
            let mergeable = !dims.is_empty()
                && (0..K).all(|k| {
                    let last = *strides[k].last().unwrap_or(&0);
                    last == full[k][d] * size
                });
            if mergeable {
                let last = dims.len() - 1;
                dims[last] *= size;
                for k in 0..K {
                    strides[k][last] = full[k][d];
                }
            } else {
                dims.push(size);
                for k in 0..K {
                    strides[k].push(full[k][d]);
                }
            }
        }
        let inner = dims.pop().unwrap_or(1);
        let inner_strides = std::array::from_fn(|k| strides[k].pop().unwrap_or(0));
        Plan {
            outer: dims,
            outer_strides: strides,
            inner,
            inner_strides,
        }
    }

    /// Calls `f(out_run, offsets)` over `out` (the plan's output, row-major) in runs along the
    /// innermost dim: `offsets[k]` is input k's element offset for `out_run[0]`; within a run
    /// input k advances by `inner_strides[k]`. Parallel when `threads > 1` and large.
    pub fn run<O: Send>(
        &self,
        threads: usize,
        out: &mut [O],
        f: impl Fn(&mut [O], [usize; K]) + Sync,
    ) {
        if self.inner == 0 || out.is_empty() {
            return;
        }
        for_chunks(threads, out, |chunk, start| {
            self.run_range(chunk, start, &f)
        });
    }

    fn run_range<O>(&self, out: &mut [O], start: usize, f: &impl Fn(&mut [O], [usize; K])) {
        let inner = self.inner;
        let mut row = start / inner;
        let mut col = start % inner;
        // Unravel the first row over the outer dims.
        let mut idx = DimVec::from_elem(0, self.outer.len());
        for d in (0..self.outer.len()).rev() {
            idx[d] = row % self.outer[d];
            row /= self.outer[d];
        }
        let mut base: [usize; K] = std::array::from_fn(|k| {
            idx.iter()
                .zip(self.outer_strides[k].iter())
                .map(|(i, s)| i * s)
                .sum()
        });
        let mut pos = 0;
        while pos < out.len() {
            let n = (inner - col).min(out.len() - pos);
            let offs = std::array::from_fn(|k| base[k] + col * self.inner_strides[k]);
            f(&mut out[pos..pos + n], offs);
            pos += n;
            col = 0;
            // Advance to the next row.
            let mut d = self.outer.len();
            while d > 0 {
                d -= 1;
                idx[d] += 1;
                for (b, s) in base.iter_mut().zip(&self.outer_strides) {
                    *b += s[d];
                }
                if idx[d] < self.outer[d] {
                    break;
                }
                for (b, s) in base.iter_mut().zip(&self.outer_strides) {
                    *b -= s[d] * self.outer[d];
                }
                idx[d] = 0;
            }
        }
    }
}

/// `out = f(a, b)` under numpy broadcasting (`out_shape` is the broadcast of both shapes;
/// the slices hold exactly their shapes' elements).
#[allow(clippy::too_many_arguments)]
pub fn binary<A, B, O>(
    threads: usize,
    a: &[A],
    a_shape: &[usize],
    b: &[B],
    b_shape: &[usize],
    out: &mut [O],
    out_shape: &[usize],
    f: impl Fn(&A, &B) -> O + Sync,
) where
    A: Sync,
    B: Sync,
    O: Copy + Send,
{
    let n = out.len();
    if a.len() == n && b.len() == n {
        for_chunks(threads, out, |o, s| {
            let e = s + o.len();
            for ((o, x), y) in o.iter_mut().zip(&a[s..e]).zip(&b[s..e]) {
                *o = f(x, y);
            }
        });
    } else if a.len() == n && b.len() == 1 {
        let y = &b[0];
        for_chunks(threads, out, |o, s| {
            let src = &a[s..s + o.len()];
            for (o, x) in o.iter_mut().zip(src) {
                *o = f(x, y);
            }
        });
    } else if b.len() == n && a.len() == 1 {
        let x = &a[0];
        for_chunks(threads, out, |o, s| {
            let src = &b[s..s + o.len()];
            for (o, y) in o.iter_mut().zip(src) {
                *o = f(x, y);
            }
        });
    } else {
        let plan = Plan::new(out_shape, [a_shape, b_shape]);
        let [sa, sb] = plan.inner_strides;
        plan.run(threads, out, |o, [oa, ob]| {
            let m = o.len();
            match (sa, sb) {
                (1, 1) => {
                    for ((o, x), y) in o.iter_mut().zip(&a[oa..oa + m]).zip(&b[ob..ob + m]) {
                        *o = f(x, y);
                    }
                }
                (1, _) => {
                    let y = &b[ob];
                    for (o, x) in o.iter_mut().zip(&a[oa..oa + m]) {
                        *o = f(x, y);
                    }
                }
                (_, 1) => {
                    let x = &a[oa];
                    for (o, y) in o.iter_mut().zip(&b[ob..ob + m]) {
                        *o = f(x, y);
                    }
                }
                _ => o.fill(f(&a[oa], &b[ob])),
            }
        });
    }
}

/// `out = f(out, x)` with `x` broadcast to `out_shape`.
pub fn accumulate<T: Copy + Sync + Send>(
    threads: usize,
    out: &mut [T],
    out_shape: &[usize],
    x: &[T],
    x_shape: &[usize],
    f: impl Fn(T, T) -> T + Sync,
) {
    if x.len() == out.len() {
        for_chunks(threads, out, |o, s| {
            let src = &x[s..s + o.len()];
            for (o, &v) in o.iter_mut().zip(src) {
                *o = f(*o, v);
            }
        });
    } else if x.len() == 1 {
        let v = x[0];
        for_chunks(threads, out, |o, _| {
            for o in o.iter_mut() {
                *o = f(*o, v);
            }
        });
    } else {
        let plan = Plan::new(out_shape, [x_shape]);
        let [sx] = plan.inner_strides;
        plan.run(threads, out, |o, [ox]| {
            if sx == 1 {
                let src = &x[ox..ox + o.len()];
                for (o, &v) in o.iter_mut().zip(src) {
                    *o = f(*o, v);
                }
            } else {
                let v = x[ox];
                for o in o.iter_mut() {
                    *o = f(*o, v);
                }
            }
        });
    }
}

/// Copies `x` broadcast to `out_shape` into `out`.
pub fn expand_into<T: Clone + Sync + Send>(
    threads: usize,
    out: &mut [T],
    out_shape: &[usize],
    x: &[T],
    x_shape: &[usize],
) {
    if x.len() == out.len() {
        out.clone_from_slice(x);
        return;
    }
    let plan = Plan::new(out_shape, [x_shape]);
    let [sx] = plan.inner_strides;
    plan.run(threads, out, |o, [ox]| {
        if sx == 1 {
            o.clone_from_slice(&x[ox..ox + o.len()]);
        } else {
            o.fill(x[ox].clone());
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: &[i64], ash: &[usize], b: &[i64], bsh: &[usize], osh: &[usize]) -> Vec<i64> {
        let sa = rge_kernels::shape_util::broadcast_strides(ash, osh);
        let sb = rge_kernels::shape_util::broadcast_strides(bsh, osh);
        let mut out = vec![0; osh.iter().product()];
        rge_kernels::shape_util::for_each_broadcast(osh, &[sa, sb], |i, o| {
            out[i] = a[o[0]] * 1000 + b[o[1]];
        });
        out
    }

    #[test]
    fn broadcast_matches_naive_walk() {
        let cases: &[(&[usize], &[usize])] = &[
            (&[2, 3, 4], &[4]),
            (&[2, 3, 4], &[3, 1]),
            (&[2, 1, 4], &[1, 3, 1]),
            (&[1], &[2, 3]),
            (&[2, 3], &[]),
            (&[3, 1, 5, 1], &[1, 4, 1, 2]),
            (&[], &[]),
            (&[2, 0, 3], &[3]),
            (&[1, 1, 7], &[7, 1, 1]),
        ];
        for &(ash, bsh) in cases {
            let osh = rge_kernels::shape_util::broadcast_shapes(&[ash, bsh]).unwrap();
            let a: Vec<i64> = (0..ash.iter().product::<usize>() as i64).collect();
            let b: Vec<i64> = (0..bsh.iter().product::<usize>() as i64).collect();
            let want = naive(&a, ash, &b, bsh, &osh);
            for threads in [1, 3] {
                let mut out = vec![0; want.len()];
                binary(threads, &a, ash, &b, bsh, &mut out, &osh, |x, y| {
                    x * 1000 + y
                });
                assert_eq!(out, want, "{ash:?} {bsh:?}");
            }
            // Each run-range start inside a row must work too.
            let plan = Plan::new(&osh, [ash, bsh]);
            let mut out = vec![0; want.len()];
            for s in 0..out.len() {
                plan.run_range(&mut out[s..s + 1], s, &|o: &mut [i64], [oa, ob]| {
                    o[0] = a[oa] * 1000 + b[ob]
                });
            }
            assert_eq!(out, want);
        }
    }

    #[test]
    fn large_parallel_broadcast() {
        let ash = [300usize, 1, 257];
        let bsh = [1usize, 3, 257];
        let osh = [300usize, 3, 257];
        let a: Vec<i64> = (0..300 * 257).collect();
        let b: Vec<i64> = (0..3 * 257).collect();
        let want = naive(&a, &ash, &b, &bsh, &osh);
        let mut out = vec![0; want.len()];
        binary(4, &a, &ash, &b, &bsh, &mut out, &osh, |x, y| x * 1000 + y);
        assert_eq!(out, want);
        let mut acc = vec![1i64; want.len()];
        accumulate(4, &mut acc, &osh, &b, &bsh, |x, y| x + y);
        let mut exp = vec![0i64; want.len()];
        expand_into(4, &mut exp, &osh, &b, &bsh);
        assert!(acc.iter().zip(&exp).all(|(a, e)| *a == e + 1));
    }
}
