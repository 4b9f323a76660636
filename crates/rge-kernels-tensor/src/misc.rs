//! OneHot, Trilu, ReverseSequence.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::elems::{run_movement, Item, Movement};
use crate::gather::TakeBlocks;
use crate::util::{count, scalar_i64};

/// Output element `(o, d, i)` is `values[1]` where `hot[o * inner + i] == d`, else
/// `values[0]`.
struct OneHotFill {
    hot: Vec<Option<usize>>,
    depth: usize,
    inner: usize,
}

impl Movement for OneHotFill {
    fn fill<T: Item>(&self, srcs: &[&[T]], outs: &mut [&mut [T]]) -> KernelResult<()> {
        let (Some([off, on]), Some(out)) = (srcs.first().copied(), outs.first_mut()) else {
            return Err(KernelError::invalid(
                "values must hold [off_value, on_value]",
            ));
        };
        out.fill(off.clone());
        let (depth, inner) = (self.depth, self.inner);
        for (p, h) in self.hot.iter().enumerate() {
            if let Some(d) = h {
                let (o, i) = (p / inner, p % inner);
                out[(o * depth + d) * inner + i] = on.clone();
            }
        }
        Ok(())
    }
}

struct OneHot {
    axis: i64,
}

impl Kernel for OneHot {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let ind = ctx.input(0)?;
        let depth_t = ctx.input(1)?;
        let values = ctx.input(2)?;
        if values.len() != 2 {
            return Err(KernelError::invalid(format!(
                "values must have two elements, got shape {:?}",
                values.shape()
            )));
        }
        let depth = match depth_t.to_f64_vec()?.as_slice() {
            [d] => *d,
            _ => return Err(KernelError::invalid("depth must have one element")),
        };
        if !(depth >= 1.0 && depth <= (usize::MAX >> 8) as f64) {
            return Err(KernelError::invalid(format!(
                "depth {depth} is not positive"
            )));
        }
        let depth = depth as i64;
        let r = ind.rank() as i64;
        if self.axis < -(r + 1) || self.axis > r {
            return Err(KernelError::invalid(format!(
                "axis {} is out of range for rank {}",
                self.axis,
                r + 1
            )));
        }
        let a = if self.axis < 0 {
            self.axis + r + 1
        } else {
            self.axis
        } as usize;
        let hot = ind
            .to_f64_vec()?
            .into_iter()
            .map(|v| {
                let v = v as i64;
                let v = if v < 0 { v + depth } else { v };
                (0..depth).contains(&v).then_some(v as usize)
            })
            .collect();
        let mut out = ind.shape().to_vec();
        out.insert(a, depth as usize);
        let fill = OneHotFill {
            hot,
            depth: depth as usize,
            inner: count(&ind.shape()[a..])?.max(1),
        };
        run_movement(ctx, &[values], &[(0, out)], &fill)
    }
}

pub(crate) fn one_hot(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(OneHot {
        axis: init.int_or("axis", -1)?,
    }))
}

/// Keeps the upper (`j - i >= k`) or lower (`j - i <= k`) triangle of each trailing matrix.
struct Triangle {
    rows: usize,
    cols: usize,
    k: i64,
    upper: bool,
}

impl Movement for Triangle {
    fn fill<T: Item>(&self, srcs: &[&[T]], outs: &mut [&mut [T]]) -> KernelResult<()> {
        let (Some(src), Some(out)) = (srcs.first(), outs.first_mut()) else {
            return Err(KernelError::invalid("Trilu needs an input and an output"));
        };
        if src.len() != out.len() {
            return Err(KernelError::invalid("Trilu size mismatch"));
        }
        let (rows, cols) = (self.rows, self.cols);
        if rows * cols == 0 {
            return Ok(());
        }
        for (s, o) in src.chunks(rows * cols).zip(out.chunks_mut(rows * cols)) {
            for i in 0..rows {
                for j in 0..cols {
                    let d = j as i64 - i as i64;
                    let keep = if self.upper { d >= self.k } else { d <= self.k };
                    let p = i * cols + j;
                    o[p] = if keep { s[p].clone() } else { T::default() };
                }
            }
        }
        Ok(())
    }
}

struct Trilu {
    upper: bool,
}

impl Kernel for Trilu {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let k = match ctx.opt_input(1)? {
            Some(t) => scalar_i64(t, "k")?,
            None => 0,
        };
        let shape = x.shape();
        let &[.., rows, cols] = shape else {
            return Err(KernelError::invalid(format!(
                "Trilu needs rank >= 2, got {shape:?}"
            )));
        };
        let tri = Triangle {
            rows,
            cols,
            k,
            upper: self.upper,
        };
        run_movement(ctx, &[x], &[(0, shape.to_vec())], &tri)
    }
}

pub(crate) fn trilu(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Trilu {
        upper: init.int_or("upper", 1)? != 0,
    }))
}

struct ReverseSequence {
    time_axis: usize,
}

impl Kernel for ReverseSequence {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let lens = ctx.input(1)?.to_i64_vec()?;
        let shape = x.shape();
        if shape.len() < 2 {
            return Err(KernelError::invalid(format!(
                "input must have rank >= 2, got {shape:?}"
            )));
        }
        let (t_ax, b_ax) = (self.time_axis, 1 - self.time_axis);
        let (max_len, batch) = (shape[t_ax], shape[b_ax]);
        if lens.len() != batch {
            return Err(KernelError::invalid(format!(
                "sequence_lens has {} entries for batch {batch}",
                lens.len()
            )));
        }
        if let Some(l) = lens.iter().find(|&&l| l < 0 || l as usize > max_len) {
            return Err(KernelError::invalid(format!(
                "sequence length {l} is outside [0, {max_len}]"
            )));
        }
        let inner = count(&shape[2..])?;
        let mut starts = Vec::with_capacity(shape[0] * shape[1]);
        for x0 in 0..shape[0] {
            for x1 in 0..shape[1] {
                let (t, b) = if t_ax == 0 { (x0, x1) } else { (x1, x0) };
                let len = lens[b] as usize;
                let src_t = if t < len { len - 1 - t } else { t };
                let (y0, y1) = if t_ax == 0 { (src_t, b) } else { (b, src_t) };
                starts.push((y0 * shape[1] + y1) * inner);
            }
        }
        let take = TakeBlocks {
            starts,
            block: inner,
        };
        run_movement(ctx, &[x], &[(0, shape.to_vec())], &take)
    }
}

pub(crate) fn reverse_sequence(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let t = init.int_or("time_axis", 0)?;
    let b = init.int_or("batch_axis", 1)?;
    if !matches!((t, b), (0, 1) | (1, 0)) {
        return Err(KernelError::attr(
            "time_axis",
            format!("time_axis {t} and batch_axis {b} must be 0 and 1"),
        ));
    }
    Ok(Box::new(ReverseSequence {
        time_axis: t as usize,
    }))
}
