//! Reading by index: Gather, GatherElements, GatherND, Compress.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::elems::{run_movement, Item, Movement};
use crate::maps::{AxisMaps, Fill};
use crate::util::{axis, count, index, strides};

/// Copies blocks: output block `i` is `src[starts[i]..starts[i] + block]`.
pub(crate) struct TakeBlocks {
    pub(crate) starts: Vec<usize>,
    pub(crate) block: usize,
}

impl Movement for TakeBlocks {
    fn fill<T: Item>(&self, srcs: &[&[T]], outs: &mut [&mut [T]]) -> KernelResult<()> {
        let src = srcs.first().copied().unwrap_or(&[]);
        let out = outs
            .first_mut()
            .ok_or_else(|| KernelError::invalid("no output"))?;
        let b = self.block;
        if out.len() != self.starts.len() * b {
            return Err(KernelError::invalid("take: output size mismatch"));
        }
        if b == 0 {
            return Ok(());
        }
        if let Some(&s) = self.starts.iter().find(|&&s| s + b > src.len()) {
            return Err(KernelError::invalid(format!(
                "take: block at {s} is outside a {}-element source",
                src.len()
            )));
        }
        if b == 1 {
            for (o, &s) in out.iter_mut().zip(&self.starts) {
                *o = src[s].clone();
            }
        } else {
            for (o, &s) in out.chunks_mut(b).zip(&self.starts) {
                o.clone_from_slice(&src[s..s + b]);
            }
        }
        Ok(())
    }
}

/// Maps reading `shape` in order, except axis `a`, which reads source positions `sel`.
pub(crate) fn select_maps(shape: &[usize], a: usize, sel: &[usize]) -> AxisMaps {
    let st = strides(shape);
    let maps = shape
        .iter()
        .zip(&st)
        .enumerate()
        .map(|(k, (&d, &s))| {
            if k == a {
                sel.iter().map(|&j| j * s).collect()
            } else {
                (0..d).map(|j| j * s).collect()
            }
        })
        .collect();
    AxisMaps::new(maps, Fill::None)
}

struct Gather {
    axis: i64,
}

impl Kernel for Gather {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let ind = ctx.input(1)?;
        let shape = data.shape();
        let a = axis(self.axis, shape.len())?;
        let sel = ind
            .to_i64_vec()?
            .into_iter()
            .map(|i| index(i, shape[a]))
            .collect::<KernelResult<Vec<usize>>>()?;
        let maps = select_maps(shape, a, &sel).with_threads(ctx.threads());
        let mut out = shape[..a].to_vec();
        out.extend_from_slice(ind.shape());
        out.extend_from_slice(&shape[a + 1..]);
        run_movement(ctx, &[data], &[(0, out)], &maps)
    }
}

pub(crate) fn gather(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Gather {
        axis: init.int_or("axis", 0)?,
    }))
}

/// Source offsets of GatherElements / ScatterElements: for every position of `ind_shape`,
/// the data offset with the axis coordinate replaced by the index.
pub(crate) fn element_offsets(
    data_shape: &[usize],
    ind_shape: &[usize],
    ind: &[i64],
    a: usize,
) -> KernelResult<Vec<usize>> {
    if ind_shape.len() != data_shape.len() {
        return Err(KernelError::invalid(format!(
            "indices {ind_shape:?} and data {data_shape:?} differ in rank"
        )));
    }
    if let Some(d) = (0..ind_shape.len()).find(|&d| d != a && ind_shape[d] > data_shape[d]) {
        return Err(KernelError::invalid(format!(
            "indices {ind_shape:?} exceed data {data_shape:?} in dim {d}"
        )));
    }
    let st = strides(data_shape);
    let rank = ind_shape.len();
    let mut idx = vec![0usize; rank];
    let mut out = Vec::with_capacity(ind.len());
    for &i in ind {
        let mut off = index(i, data_shape[a])? * st[a];
        for d in 0..rank {
            if d != a {
                off += idx[d] * st[d];
            }
        }
        out.push(off);
        for d in (0..rank).rev() {
            idx[d] += 1;
            if idx[d] < ind_shape[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok(out)
}

struct GatherElements {
    axis: i64,
}

impl Kernel for GatherElements {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let ind = ctx.input(1)?;
        let a = axis(self.axis, data.rank())?;
        let starts = element_offsets(data.shape(), ind.shape(), &ind.to_i64_vec()?, a)?;
        let take = TakeBlocks { starts, block: 1 };
        run_movement(ctx, &[data], &[(0, ind.shape().to_vec())], &take)
    }
}

pub(crate) fn gather_elements(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(GatherElements {
        axis: init.int_or("axis", 0)?,
    }))
}

/// The shared geometry of GatherND and ScatterND: for every index tuple, the offset of the
/// data block it selects, and the block size.
pub(crate) struct NdPlan {
    pub(crate) starts: Vec<usize>,
    pub(crate) block: usize,
    /// indices.shape[..q-1] + data.shape[b+k..].
    pub(crate) out_shape: Vec<usize>,
}

pub(crate) fn nd_plan(
    data_shape: &[usize],
    ind_shape: &[usize],
    ind: &[i64],
    batch_dims: usize,
) -> KernelResult<NdPlan> {
    let r = data_shape.len();
    let q = ind_shape.len();
    let b = batch_dims;
    if q < 1 || r < 1 || b >= q || b >= r {
        return Err(KernelError::invalid(format!(
            "indices {ind_shape:?} and data {data_shape:?} do not fit batch_dims {b}"
        )));
    }
    let k = ind_shape[q - 1];
    if k > r - b {
        return Err(KernelError::invalid(format!(
            "index tuples of {k} exceed data rank {r} (batch_dims {b})"
        )));
    }
    if ind_shape[..b] != data_shape[..b] {
        return Err(KernelError::invalid(format!(
            "batch dims of indices {ind_shape:?} and data {data_shape:?} differ"
        )));
    }
    let st = strides(data_shape);
    let block = count(&data_shape[b + k..])?;
    let batches = count(&data_shape[..b])?;
    let batch_size = count(&data_shape[b..])?;
    let tuples = count(&ind_shape[b..q - 1])?;
    let n = batches * tuples;
    if ind.len() != n * k {
        return Err(KernelError::invalid("indices do not match their shape"));
    }
    let starts = (0..n)
        .map(|t| {
            let mut off = (t / tuples) * batch_size;
            for j in 0..k {
                off += index(ind[t * k + j], data_shape[b + j])? * st[b + j];
            }
            Ok(off)
        })
        .collect::<KernelResult<Vec<usize>>>()?;
    let mut out_shape = ind_shape[..q - 1].to_vec();
    out_shape.extend_from_slice(&data_shape[b + k..]);
    Ok(NdPlan {
        starts,
        block,
        out_shape,
    })
}

struct GatherNd {
    batch_dims: usize,
}

impl Kernel for GatherNd {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let ind = ctx.input(1)?;
        let plan = nd_plan(
            data.shape(),
            ind.shape(),
            &ind.to_i64_vec()?,
            self.batch_dims,
        )?;
        let take = TakeBlocks {
            starts: plan.starts,
            block: plan.block,
        };
        run_movement(ctx, &[data], &[(0, plan.out_shape)], &take)
    }
}

pub(crate) fn gather_nd(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let b = init.int_or("batch_dims", 0)?;
    let batch_dims = usize::try_from(b)
        .map_err(|_| KernelError::attr("batch_dims", format!("{b} is negative")))?;
    Ok(Box::new(GatherNd { batch_dims }))
}

struct Compress {
    axis: Option<i64>,
}

impl Kernel for Compress {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let cond = ctx.input(1)?;
        if cond.rank() != 1 {
            return Err(KernelError::invalid(format!(
                "condition must be 1-D, got {:?}",
                cond.shape()
            )));
        }
        let cond = cond.to_i64_vec()?;
        let flat = [data.len()];
        let (shape, a): (&[usize], usize) = match self.axis {
            Some(ax) => (data.shape(), axis(ax, data.rank())?),
            None => (&flat, 0),
        };
        if cond.len() > shape[a] {
            return Err(KernelError::invalid(format!(
                "condition of {} entries is longer than dim {}",
                cond.len(),
                shape[a]
            )));
        }
        let sel: Vec<usize> = cond
            .iter()
            .enumerate()
            .filter(|(_, &c)| c != 0)
            .map(|(i, _)| i)
            .collect();
        let maps = select_maps(shape, a, &sel).with_threads(ctx.threads());
        let out = maps.out_shape();
        run_movement(ctx, &[data], &[(0, out)], &maps)
    }
}

pub(crate) fn compress(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Compress {
        axis: init.int_opt("axis")?,
    }))
}
