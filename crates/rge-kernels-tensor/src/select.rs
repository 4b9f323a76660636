//! Value-dependent selection: NonZero, TopK, Unique.

use std::cmp::Ordering;

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef};

use crate::elems::run_movement;
use crate::gather::select_maps;
use crate::util::{axis, count, Num};

/// A total order over numbers: NaN is the largest and equal to itself.
pub(crate) fn total_cmp<T: Num>(a: T, b: T) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

struct NonZero;

fn nonzero<T: Num>(ctx: &mut KernelCtx<'_>, x: TensorRef<'_>) -> KernelResult<()> {
    let v = x.as_slice::<T>()?;
    let hits: Vec<usize> = v
        .iter()
        .enumerate()
        .filter(|(_, &e)| e != T::zero())
        .map(|(i, _)| i)
        .collect();
    let shape = x.shape();
    let rank = shape.len();
    let n = hits.len();
    let st = crate::util::strides(shape);
    let out = ctx.output::<i64>(0, &[rank, n])?;
    for (k, &h) in hits.iter().enumerate() {
        for d in 0..rank {
            out[d * n + k] = ((h / st[d]) % shape[d]) as i64;
        }
    }
    Ok(())
}

impl Kernel for NonZero {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        rge_kernels::dispatch_numeric_bool!(x.dtype(), T => nonzero::<T>(ctx, x))
    }
}

pub(crate) fn non_zero(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(NonZero))
}

struct TopK {
    axis: i64,
    largest: bool,
    attr_k: Option<i64>,
}

fn topk<T: Num>(
    ctx: &mut KernelCtx<'_>,
    x: TensorRef<'_>,
    a: usize,
    k: usize,
    largest: bool,
) -> KernelResult<()> {
    let v = x.as_slice::<T>()?;
    let shape = x.shape();
    let dim = shape[a];
    let outer = count(&shape[..a])?;
    let inner = count(&shape[a + 1..])?;
    let mut out_shape = shape.to_vec();
    out_shape[a] = k;
    let vals = ctx.output::<T>(0, &out_shape)?;
    let idxs = ctx.output::<i64>(1, &out_shape)?;
    let mut order: Vec<usize> = Vec::with_capacity(dim);
    for o in 0..outer {
        for i in 0..inner {
            let at = |j: usize| v[(o * dim + j) * inner + i];
            let cmp = |p: &usize, q: &usize| {
                let c = total_cmp(at(*p), at(*q));
                let c = if largest { c.reverse() } else { c };
                c.then(p.cmp(q))
            };
            order.clear();
            order.extend(0..dim);
            if k > 0 && k < dim {
                order.select_nth_unstable_by(k - 1, cmp);
                order.truncate(k);
            }
            order.sort_unstable_by(cmp);
            for (r, &j) in order.iter().take(k).enumerate() {
                let p = (o * k + r) * inner + i;
                vals[p] = at(j);
                idxs[p] = j as i64;
            }
        }
    }
    Ok(())
}

impl Kernel for TopK {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let a = axis(self.axis, x.rank())?;
        let k = match self.attr_k {
            Some(k) => k,
            None => crate::util::scalar_i64(ctx.input(1)?, "K")?,
        };
        let k = usize::try_from(k)
            .ok()
            .filter(|&k| k <= x.shape()[a])
            .ok_or_else(|| {
                KernelError::invalid(format!("k {k} is outside [0, {}]", x.shape()[a]))
            })?;
        rge_kernels::dispatch_numeric!(x.dtype(), T => topk::<T>(ctx, x, a, k, self.largest))
    }
}

pub(crate) fn top_k(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let attr_k = if init.opset < 10 {
        Some(init.int("k")?)
    } else {
        None
    };
    Ok(Box::new(TopK {
        axis: init.int_or("axis", -1)?,
        largest: init.int_or("largest", 1)? != 0,
        attr_k,
    }))
}

/// Unique rows: for each unique row (in sorted order, or first-occurrence order), its first
/// index and count; and for each row, the position of its unique.
struct Uniques {
    first: Vec<usize>,
    counts: Vec<usize>,
    inverse: Vec<usize>,
}

fn uniques(n: usize, sorted: bool, cmp: impl Fn(usize, usize) -> Ordering) -> Uniques {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&p, &q| cmp(p, q).then(p.cmp(&q)));
    let mut first = Vec::new();
    let mut counts = Vec::new();
    let mut inverse = vec![0usize; n];
    for (pos, &r) in order.iter().enumerate() {
        if pos == 0 || cmp(order[pos - 1], r) != Ordering::Equal {
            first.push(r);
            counts.push(0);
        }
        let u = first.len() - 1;
        counts[u] += 1;
        inverse[r] = u;
    }
    if !sorted {
        let mut by_first: Vec<usize> = (0..first.len()).collect();
        by_first.sort_by_key(|&u| first[u]);
        let mut rank = vec![0usize; first.len()];
        for (new, &old) in by_first.iter().enumerate() {
            rank[old] = new;
        }
        first = by_first.iter().map(|&u| first[u]).collect();
        counts = by_first.iter().map(|&u| counts[u]).collect();
        for v in &mut inverse {
            *v = rank[*v];
        }
    }
    Uniques {
        first,
        counts,
        inverse,
    }
}

/// Lexicographic comparison of slices `p` and `q` along the axis of a tensor viewed as
/// (outer, dim, inner).
fn row_cmp<T>(
    v: &[T],
    (outer, dim, inner): (usize, usize, usize),
    p: usize,
    q: usize,
    cmp: impl Fn(&T, &T) -> Ordering,
) -> Ordering {
    for o in 0..outer {
        for i in 0..inner {
            let c = cmp(&v[(o * dim + p) * inner + i], &v[(o * dim + q) * inner + i]);
            if c != Ordering::Equal {
                return c;
            }
        }
    }
    Ordering::Equal
}

fn unique_num<T: Num>(
    x: TensorRef<'_>,
    geo: (usize, usize, usize),
    sorted: bool,
) -> KernelResult<Uniques> {
    let v = x.as_slice::<T>()?;
    Ok(uniques(geo.1, sorted, |p, q| {
        row_cmp(v, geo, p, q, |a, b| total_cmp(*a, *b))
    }))
}

struct Unique {
    axis: Option<i64>,
    sorted: bool,
}

impl Kernel for Unique {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let flat = [x.len()];
        let (shape, a): (&[usize], usize) = match self.axis {
            Some(ax) => (x.shape(), axis(ax, x.rank())?),
            None => (&flat, 0),
        };
        let geo = (count(&shape[..a])?, shape[a], count(&shape[a + 1..])?);
        let u = if x.dtype().is_string() {
            let v = x.as_strings()?;
            uniques(geo.1, self.sorted, |p, q| {
                row_cmp(v, geo, p, q, |a, b| a.cmp(b))
            })
        } else {
            rge_kernels::dispatch_numeric_bool!(x.dtype(), T => unique_num::<T>(x, geo, self.sorted))?
        };
        let maps = select_maps(shape, a, &u.first);
        let y_shape = maps.out_shape();
        run_movement(ctx, &[x], &[(0, y_shape)], &maps)?;
        let lists = [&u.first, &u.inverse, &u.counts];
        for (i, list) in lists.iter().enumerate() {
            if i + 1 < ctx.output_count() {
                let out = ctx.output::<i64>(i + 1, &[list.len()])?;
                for (o, &v) in out.iter_mut().zip(list.iter()) {
                    *o = v as i64;
                }
            }
        }
        Ok(())
    }
}

pub(crate) fn unique(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Unique {
        axis: init.int_opt("axis")?,
        sorted: init.int_or("sorted", 1)? != 0,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unique_orders() {
        let v = [2, 1, 1, 3, 4, 3];
        let u = uniques(6, true, |p, q| v[p].cmp(&v[q]));
        assert_eq!(u.first, vec![1, 0, 3, 4]);
        assert_eq!(u.counts, vec![2, 1, 2, 1]);
        assert_eq!(u.inverse, vec![1, 0, 0, 2, 3, 2]);
        let u = uniques(6, false, |p, q| v[p].cmp(&v[q]));
        assert_eq!(u.first, vec![0, 1, 3, 4]);
        assert_eq!(u.counts, vec![1, 2, 2, 1]);
        assert_eq!(u.inverse, vec![0, 1, 1, 2, 3, 2]);
    }

    #[test]
    fn nan_order() {
        assert_eq!(total_cmp(f32::NAN, 1.0), Ordering::Greater);
        assert_eq!(total_cmp(f32::NAN, f32::NAN), Ordering::Equal);
    }
}
