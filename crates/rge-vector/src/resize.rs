//! Resize (opsets 10–19) of f32 tensors whose last two axes change (images: NCHW upsampling in
//! FPNs and detectors), or the two before an unchanged last one (NHWC: channels-last regions of
//! the dense engine), every mode. The `cpu` kernel's plan (`ResizeSpec::plan`: per axis, each
//! output position's source taps and weights, in f64) is taken as it is and run in f32, one
//! plane per task (or a band of its rows, when the planes are too few for the threads): each
//! output row blends its source rows (a nearest row is read in place), then samples that line
//! along the width. Output rows with the same source rows as the row before them (every second
//! row of a ×2 nearest upsample) are copies of it. Taps of weight 0 are dropped, as the
//! reference skips them, so an infinity beside a sample does not turn it into NaN. In NHWC a
//! position is its run of channels. Other axes, extrapolated positions (tf_crop_and_resize
//! outside the crop), other dtypes and empty tensors run the `cpu` kernel.

use rge_kernels::{
    DType, Kernel, KernelCtx, KernelDef, KernelFactory, KernelInit, KernelResult, KernelSet,
    PortDef, TypeSet,
};
use rge_kernels_misc::{AxisPass, ResizeSpec};

use crate::elementwise::fallback;
use crate::rows::for_rows;

struct Resize {
    spec: ResizeSpec,
    fallback: Box<dyn Kernel>,
}

/// One axis's taps in f32: output `j` reads `idx[start[j]..start[j + 1]]` with the same
/// weights (at least one tap each).
struct Taps {
    start: Vec<usize>,
    idx: Vec<usize>,
    w: Vec<f32>,
}

impl Taps {
    /// The taps of `pass`, or the identity over `len` positions.
    fn from_pass(pass: Option<&AxisPass>, len: usize) -> Taps {
        let mut t = Taps {
            start: Vec::with_capacity(len + 1),
            idx: Vec::with_capacity(len),
            w: Vec::with_capacity(len),
        };
        t.start.push(0);
        for j in 0..len {
            match pass {
                Some(p) => {
                    let (ix, ws) = (
                        &p.index[j * p.taps..][..p.taps],
                        &p.weight[j * p.taps..][..p.taps],
                    );
                    for (&i, &w) in ix.iter().zip(ws).filter(|(_, &w)| w != 0.0) {
                        t.idx.push(i);
                        t.w.push(w as f32);
                    }
                    if t.idx.len() == *t.start.last().unwrap_or(&0) {
                        // Every weight 0 (not produced by the plan's modes): a zero sample.
                        t.idx.push(ix[0]);
                        t.w.push(0.0);
                    }
                }
                None => {
                    t.idx.push(j);
                    t.w.push(1.0);
                }
            }
            t.start.push(t.idx.len());
        }
        t
    }

    fn of(&self, j: usize) -> (&[usize], &[f32]) {
        let (a, b) = (self.start[j], self.start[j + 1]);
        (&self.idx[a..b], &self.w[a..b])
    }

    /// Output `j` reads exactly one input with weight 1.
    fn is_copy(&self, j: usize) -> bool {
        let (ix, w) = self.of(j);
        ix.len() == 1 && w[0] == 1.0
    }

    /// `Some(k)` when output `j` is input `j / k` for every `j` (a nearest upsample by an
    /// integer factor, or the identity for k = 1).
    fn repeat_factor(&self, in_len: usize) -> Option<usize> {
        let out_len = self.start.len() - 1;
        if in_len == 0 || !out_len.is_multiple_of(in_len) {
            return None;
        }
        let k = out_len / in_len;
        (0..out_len)
            .all(|j| self.is_copy(j) && self.of(j).0[0] == j / k)
            .then_some(k)
    }
}

/// Samples `line` (`inner` floats per position) along the width into `dst`.
fn sample_row(cols: &Taps, repeat: Option<usize>, line: &[f32], dst: &mut [f32], inner: usize) {
    if inner > 1 {
        match repeat {
            Some(k) => {
                for (d, v) in dst
                    .chunks_exact_mut(k * inner)
                    .zip(line.chunks_exact(inner))
                {
                    for r in d.chunks_exact_mut(inner) {
                        r.copy_from_slice(v);
                    }
                }
            }
            None => {
                for (j, d) in dst.chunks_exact_mut(inner).enumerate() {
                    let (ix, w) = cols.of(j);
                    let at = |i: usize| &line[i * inner..][..inner];
                    match (ix, w) {
                        ([i], [w]) => d.iter_mut().zip(at(*i)).for_each(|(d, &v)| *d = w * v),
                        _ => {
                            d.fill(0.0);
                            for (&i, &w) in ix.iter().zip(w) {
                                d.iter_mut().zip(at(i)).for_each(|(d, &v)| *d += w * v);
                            }
                        }
                    }
                }
            }
        }
        return;
    }
    match repeat {
        Some(1) => dst.copy_from_slice(line),
        Some(2) => {
            for (d, &v) in dst.chunks_exact_mut(2).zip(line) {
                d[0] = v;
                d[1] = v;
            }
        }
        Some(k) => {
            for (d, &v) in dst.chunks_exact_mut(k).zip(line) {
                d.fill(v);
            }
        }
        None => {
            for (j, d) in dst.iter_mut().enumerate() {
                let (ix, w) = cols.of(j);
                *d = match (ix, w) {
                    ([i], [w]) => w * line[*i],
                    ([i0, i1], [w0, w1]) => w0 * line[*i0] + w1 * line[*i1],
                    _ => ix.iter().zip(w).map(|(&i, &w)| w * line[i]).sum(),
                };
            }
        }
    }
}

impl Resize {
    fn run(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<bool> {
        let x = ctx.input(0)?;
        if x.dtype() != DType::Float || x.rank() < 2 || x.is_empty() {
            return Ok(false);
        }
        let shape = x.shape().to_vec();
        let plan = self.spec.plan(ctx, &shape)?;
        let rank = shape.len();
        if plan.out_shape.contains(&0) || plan.passes.iter().any(|p| p.extrapolate.contains(&true))
        {
            return Ok(false);
        }
        // The two resized axes: the last two (NCHW), or the two before the last, which is
        // unchanged (NHWC: a position is `inner` contiguous channels).
        let within = |lo: usize| plan.passes.iter().all(|p| (lo..lo + 2).contains(&p.axis));
        let ha = if within(rank - 2) {
            rank - 2
        } else if rank >= 3 && within(rank - 3) {
            rank - 3
        } else {
            return Ok(false);
        };
        let inner: usize = shape[ha + 2..].iter().product();
        let (h, w) = (shape[ha], shape[ha + 1]);
        let (oh, ow) = (plan.out_shape[ha], plan.out_shape[ha + 1]);
        let pass = |axis: usize| plan.passes.iter().find(|p| p.axis == axis);
        let rows = Taps::from_pass(pass(ha), oh);
        let cols = Taps::from_pass(pass(ha + 1), ow);
        let repeat = cols.repeat_factor(w);
        let xs = x.as_slice::<f32>()?;
        let threads = ctx.threads();
        let (line_len, out_len) = (w * inner, ow * inner);
        let out = ctx.output::<f32>(0, &plan.out_shape)?;
        // Tasks of `band` output rows (a whole plane when there are planes enough for the
        // threads; else, as for one NHWC image, rows of it); a task's first row is computed,
        // the next ones copy the row before them when they have the same sources.
        let planes = plan.out_shape[..ha].iter().product::<usize>();
        let band = if threads <= 1 || planes >= 2 * threads {
            oh
        } else {
            oh.div_ceil(2 * threads).max(1)
        };
        for_rows(threads, out, band * out_len, |ci, chunk| {
            let mut blend = vec![0f32; line_len];
            for j in 0..chunk.len() / out_len {
                let r = ci * band + j;
                let (p, oy) = (r / oh, r % oh);
                let src = &xs[p * h * line_len..][..h * line_len];
                let (done, rest) = chunk.split_at_mut(j * out_len);
                let dst = &mut rest[..out_len];
                if j > 0 && oy > 0 && rows.of(oy) == rows.of(oy - 1) {
                    dst.copy_from_slice(&done[(j - 1) * out_len..]);
                    continue;
                }
                let line = if rows.is_copy(oy) {
                    &src[rows.of(oy).0[0] * line_len..][..line_len]
                } else {
                    let (ix, ws) = rows.of(oy);
                    blend.fill(0.0);
                    for (&i, &wt) in ix.iter().zip(ws) {
                        for (b, &v) in blend.iter_mut().zip(&src[i * line_len..][..line_len]) {
                            *b += wt * v;
                        }
                    }
                    &blend[..]
                };
                sample_row(&cols, repeat, line, dst, inner);
            }
        });
        Ok(true)
    }
}

impl Kernel for Resize {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if self.run(ctx)? {
            Ok(())
        } else {
            self.fallback.compute(ctx)
        }
    }
}

fn create(init: &KernelInit<'_>, r: KernelFactory) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Resize {
        spec: ResizeSpec::from_init(init)?,
        fallback: fallback(r, init)?,
    }))
}

/// Adds the Resize kernel (opsets 10 and later), falling back to `r`, the `cpu` engine's.
pub fn add_kernels(set: &mut KernelSet, r: KernelFactory) {
    let f32_only = || PortDef::types(TypeSet::of(&[DType::Float]));
    set.add(
        KernelDef::new("vector.Resize", "Resize", move |i| create(i, r))
            .opsets(10, i64::MAX)
            // X; roi (any float type or empty); scales (f32); sizes (i64).
            .inputs(vec![f32_only(), PortDef::ANY, f32_only(), PortDef::ANY])
            .outputs(vec![f32_only()]),
    );
}
