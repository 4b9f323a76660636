//! Writing by index: ScatterElements (and its old name Scatter), ScatterND, TensorScatter.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef};

use crate::elems::{run_movement, Item, Movement};
use crate::gather::{element_offsets, nd_plan};
use crate::util::{axis, count, index, Num};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reduction {
    None,
    Add,
    Mul,
    Max,
    Min,
}

fn reduction(init: &KernelInit<'_>) -> KernelResult<Reduction> {
    Ok(match init.str_or("reduction", "none")? {
        "none" => Reduction::None,
        "add" => Reduction::Add,
        "mul" => Reduction::Mul,
        "max" => Reduction::Max,
        "min" => Reduction::Min,
        r => {
            return Err(KernelError::attr(
                "reduction",
                format!("unknown reduction {r}"),
            ))
        }
    })
}

/// A copy of the data with update block `i` written at `starts[i]` (later writes win).
struct ScatterBlocks {
    starts: Vec<usize>,
    block: usize,
}

impl ScatterBlocks {
    fn check(&self, data_len: usize, upd_len: usize) -> KernelResult<()> {
        if upd_len != self.starts.len() * self.block {
            return Err(KernelError::invalid(format!(
                "updates have {upd_len} elements, indices select {}",
                self.starts.len() * self.block
            )));
        }
        if let Some(&s) = self.starts.iter().find(|&&s| s + self.block > data_len) {
            return Err(KernelError::invalid(format!(
                "scatter offset {s} is outside the data"
            )));
        }
        Ok(())
    }
}

impl Movement for ScatterBlocks {
    fn fill<T: Item>(&self, srcs: &[&[T]], outs: &mut [&mut [T]]) -> KernelResult<()> {
        let (Some(data), Some(upd), Some(out)) = (srcs.first(), srcs.get(1), outs.first_mut())
        else {
            return Err(KernelError::invalid(
                "scatter needs data, updates and an output",
            ));
        };
        self.check(data.len(), upd.len())?;
        out.clone_from_slice(data);
        if self.block == 0 {
            return Ok(());
        }
        for (&s, u) in self.starts.iter().zip(upd.chunks(self.block)) {
            out[s..s + self.block].clone_from_slice(u);
        }
        Ok(())
    }
}

fn reduce_typed<T: Num>(
    ctx: &mut KernelCtx<'_>,
    data: TensorRef<'_>,
    upd: TensorRef<'_>,
    plan: &ScatterBlocks,
    red: Reduction,
) -> KernelResult<()> {
    let d = data.as_slice::<T>()?;
    let u = upd.as_slice::<T>()?;
    plan.check(d.len(), u.len())?;
    let out = ctx.output::<T>(0, data.shape())?;
    out.copy_from_slice(d);
    if plan.block == 0 {
        return Ok(());
    }
    let f: fn(T, T) -> T = match red {
        Reduction::Add => T::add,
        Reduction::Mul => T::mul,
        Reduction::Max => T::max_nan,
        Reduction::Min => T::min_nan,
        Reduction::None => |_, b| b,
    };
    for (&s, blk) in plan.starts.iter().zip(u.chunks(plan.block)) {
        for (o, &v) in out[s..s + plan.block].iter_mut().zip(blk) {
            *o = f(*o, v);
        }
    }
    Ok(())
}

fn scatter(
    ctx: &mut KernelCtx<'_>,
    data: TensorRef<'_>,
    upd: TensorRef<'_>,
    plan: ScatterBlocks,
    red: Reduction,
) -> KernelResult<()> {
    if upd.dtype() != data.dtype() {
        return Err(KernelError::invalid(format!(
            "updates are {}, data {}",
            upd.dtype(),
            data.dtype()
        )));
    }
    if red == Reduction::None {
        let shape = data.shape().to_vec();
        return run_movement(ctx, &[data, upd], &[(0, shape)], &plan);
    }
    rge_kernels::dispatch_numeric!(data.dtype(), T => reduce_typed::<T>(ctx, data, upd, &plan, red))
}

struct ScatterElements {
    axis: i64,
    red: Reduction,
}

impl Kernel for ScatterElements {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let ind = ctx.input(1)?;
        let upd = ctx.input(2)?;
        if upd.shape() != ind.shape() {
            return Err(KernelError::invalid(format!(
                "updates {:?} and indices {:?} differ in shape",
                upd.shape(),
                ind.shape()
            )));
        }
        let a = axis(self.axis, data.rank())?;
        let starts = element_offsets(data.shape(), ind.shape(), &ind.to_i64_vec()?, a)?;
        scatter(ctx, data, upd, ScatterBlocks { starts, block: 1 }, self.red)
    }
}

pub(crate) fn scatter_elements(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(ScatterElements {
        axis: init.int_or("axis", 0)?,
        red: reduction(init)?,
    }))
}

struct ScatterNd {
    red: Reduction,
}

impl Kernel for ScatterNd {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let ind = ctx.input(1)?;
        let upd = ctx.input(2)?;
        let plan = nd_plan(data.shape(), ind.shape(), &ind.to_i64_vec()?, 0)?;
        if upd.shape() != plan.out_shape.as_slice() {
            return Err(KernelError::invalid(format!(
                "updates {:?} must have shape {:?}",
                upd.shape(),
                plan.out_shape
            )));
        }
        let blocks = ScatterBlocks {
            starts: plan.starts,
            block: plan.block,
        };
        scatter(ctx, data, upd, blocks, self.red)
    }
}

pub(crate) fn scatter_nd(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(ScatterNd {
        red: reduction(init)?,
    }))
}

struct TensorScatter {
    axis: i64,
    circular: bool,
}

impl Kernel for TensorScatter {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let cache = ctx.input(0)?;
        let upd = ctx.input(1)?;
        let shape = cache.shape();
        let ushape = upd.shape();
        let a = axis(self.axis, shape.len())?;
        if a == 0 {
            return Err(KernelError::invalid(
                "the sequence axis cannot be the batch axis 0",
            ));
        }
        if ushape.len() != shape.len()
            || (0..shape.len()).any(|d| d != a && shape[d] != ushape[d])
            || ushape[a] > shape[a]
        {
            return Err(KernelError::invalid(format!(
                "update {ushape:?} does not fit cache {shape:?} on axis {a}"
            )));
        }
        let batch = shape[0];
        let write = match ctx.opt_input(2)? {
            Some(w) => {
                let w = w.to_i64_vec()?;
                if w.len() != batch {
                    return Err(KernelError::invalid(format!(
                        "write_indices has {} entries for batch {batch}",
                        w.len()
                    )));
                }
                w
            }
            None => vec![0; batch],
        };
        let max_len = shape[a];
        let seq = ushape[a];
        let inner = count(&shape[a + 1..])?;
        let prefixes = count(&shape[..a])?;
        let per_batch = prefixes / batch.max(1);
        let mut starts = Vec::with_capacity(prefixes * seq);
        for p in 0..prefixes {
            let w = write[p / per_batch.max(1)];
            for s in 0..seq {
                let pos = w
                    .checked_add(s as i64)
                    .ok_or_else(|| KernelError::invalid("write index overflows"))?;
                let pos = if self.circular {
                    index(pos.rem_euclid(max_len.max(1) as i64), max_len)?
                } else if (0..max_len as i64).contains(&pos) {
                    pos as usize
                } else {
                    return Err(KernelError::invalid(format!(
                        "write position {pos} is outside the cache length {max_len}"
                    )));
                };
                starts.push((p * max_len + pos) * inner);
            }
        }
        let plan = ScatterBlocks {
            starts,
            block: inner,
        };
        scatter(ctx, cache, upd, plan, Reduction::None)
    }
}

pub(crate) fn tensor_scatter(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let circular = match init.str_or("mode", "linear")? {
        "linear" => false,
        "circular" => true,
        m => return Err(KernelError::attr("mode", format!("unknown mode {m}"))),
    };
    Ok(Box::new(TensorScatter {
        axis: init.int_or("axis", -2)?,
        circular,
    }))
}
