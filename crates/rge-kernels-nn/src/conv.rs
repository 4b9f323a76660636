//! Conv (1-D/2-D/3-D/N-D, groups, dilations, strides, pads, auto_pad, bias) by im2col + GEMM,
//! and the quantized ConvInteger and QLinearConv on the same core (exact in f64).

use rayon::prelude::*;
use rge_kernels::{bf16, f16, DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::blas::{gemm_par, Gemm, Mat};
use crate::matmul::{int_values, requantize, ScaleMult};
use crate::util::{nc_spatial, Geometry, Real, WindowAttrs};

/// Conv attributes.
#[derive(Debug, Clone)]
pub(crate) struct ConvAttrs {
    pub win: WindowAttrs,
    pub group: usize,
}

impl ConvAttrs {
    pub(crate) fn parse(init: &KernelInit<'_>) -> KernelResult<Self> {
        let group = init.int_or("group", 1)?;
        if group < 1 {
            return Err(KernelError::attr("group", "must be ≥ 1"));
        }
        let mut win = WindowAttrs::parse(init)?;
        win.ceil_mode = false;
        Ok(ConvAttrs {
            win,
            group: group as usize,
        })
    }
}

/// A resolved convolution.
#[derive(Debug, Clone)]
pub(crate) struct ConvPlan {
    pub n: usize,
    pub c: usize,
    pub m: usize,
    pub group: usize,
    pub geom: Geometry,
    pub out_shape: Vec<usize>,
}

impl ConvPlan {
    pub(crate) fn new(xs: &[usize], ws: &[usize], attrs: &ConvAttrs) -> KernelResult<Self> {
        let (n, c, spatial) = nc_spatial(xs, 3)?;
        if ws.len() != xs.len() {
            return Err(KernelError::invalid(format!(
                "Conv: W {ws:?} does not fit X {xs:?}"
            )));
        }
        let g = attrs.group;
        let m = ws[0];
        if c % g != 0 || m % g != 0 || ws[1] * g != c {
            return Err(KernelError::invalid(format!(
                "Conv: X {xs:?} and W {ws:?} do not fit group {g}"
            )));
        }
        let geom = attrs.win.resolve(spatial, Some(&ws[2..]))?;
        if geom.kernel[..] != ws[2..] {
            return Err(KernelError::invalid(format!(
                "Conv: kernel_shape {:?} differs from W {ws:?}",
                geom.kernel
            )));
        }
        let mut out_shape = vec![n, m];
        out_shape.extend_from_slice(&geom.out);
        Ok(ConvPlan {
            n,
            c,
            m,
            group: g,
            geom,
            out_shape,
        })
    }

    fn in_size(&self) -> usize {
        self.geom.input.iter().product()
    }
    fn out_size(&self) -> usize {
        self.geom.out.iter().product()
    }
    fn kernel_size(&self) -> usize {
        self.geom.kernel.iter().product()
    }
    fn is_pointwise(&self) -> bool {
        let g = &self.geom;
        g.kernel.iter().all(|&k| k == 1)
            && g.strides.iter().all(|&s| s == 1)
            && g.pads_begin.iter().chain(&g.pads_end).all(|&p| p == 0)
    }

    /// Runs the convolution: `out` is N×M×out_spatial.
    pub(crate) fn run<T: Gemm>(
        &self,
        x: &[T],
        w: &[T],
        bias: Option<&[T]>,
        out: &mut [T],
        threads: usize,
    ) -> KernelResult<()> {
        let (insz, outsz, ksz) = (self.in_size(), self.out_size(), self.kernel_size());
        let g = self.group;
        let (cg, mg) = (self.c / g, self.m / g);
        let rows = cg * ksz;
        if x.len() != self.n * self.c * insz
            || w.len() != self.m * rows
            || out.len() != self.n * self.m * outsz
        {
            return Err(KernelError::invalid(
                "Conv: operand sizes do not fit the shapes",
            ));
        }
        if let Some(b) = bias {
            if b.len() != self.m {
                return Err(KernelError::invalid(format!(
                    "Conv: bias has {} values, expected {}",
                    b.len(),
                    self.m
                )));
            }
        }
        if out.is_empty() {
            return Ok(());
        }
        let pointwise = self.is_pointwise();
        let chunk = mg * outsz;
        let one = |idx: usize, y: &mut [T], inner_threads: usize| -> KernelResult<()> {
            let (ni, gi) = (idx / g, idx % g);
            let xs = &x[(ni * self.c + gi * cg) * insz..][..cg * insz];
            let wg = &w[gi * mg * rows..][..mg * rows];
            let col_buf;
            let col: &[T] = if pointwise {
                xs
            } else {
                col_buf = im2col(xs, cg, &self.geom);
                &col_buf
            };
            gemm_par(
                mg,
                rows,
                outsz,
                T::one(),
                wg,
                Mat::row_major(rows),
                col,
                Mat::row_major(outsz),
                T::zero(),
                y,
                inner_threads,
            )?;
            if let Some(b) = bias {
                for (mi, row) in y.chunks_mut(outsz).enumerate() {
                    let bv = b[gi * mg + mi];
                    row.iter_mut().for_each(|v| *v = v.add(bv));
                }
            }
            Ok(())
        };
        let jobs = self.n * g;
        let work = jobs.saturating_mul(chunk).saturating_mul(rows);
        if threads > 1 && jobs > 1 && work >= (1 << 18) {
            out.par_chunks_mut(chunk)
                .enumerate()
                .try_for_each(|(i, y)| one(i, y, 1))
        } else {
            out.chunks_mut(chunk)
                .enumerate()
                .try_for_each(|(i, y)| one(i, y, threads))
        }
    }
}

/// For one spatial dim: for each kernel offset and window position, the coordinate in the
/// `len`-long dim, or -1 when it falls outside (padding).
pub(crate) fn coord_table(
    len: usize,
    k: usize,
    o: usize,
    s: usize,
    d: usize,
    pad_begin: isize,
) -> Vec<isize> {
    let mut t = Vec::with_capacity(k * o);
    for kk in 0..k {
        for oo in 0..o {
            let pos = (oo * s + kk * d) as isize - pad_begin;
            t.push(if pos >= 0 && (pos as usize) < len {
                pos
            } else {
                -1
            });
        }
    }
    t
}

fn coord_tables(geom: &Geometry) -> Vec<Vec<isize>> {
    (0..geom.input.len())
        .map(|i| {
            coord_table(
                geom.input[i],
                geom.kernel[i],
                geom.out[i],
                geom.strides[i],
                geom.dilations[i],
                geom.pads_begin[i] as isize,
            )
        })
        .collect()
}

/// im2col: `x` is C×in_spatial; the result is (C·prod(kernel)) × prod(out) row-major.
pub(crate) fn im2col<T: Gemm>(x: &[T], channels: usize, geom: &Geometry) -> Vec<T> {
    let nd = geom.input.len();
    let insz: usize = geom.input.iter().product();
    let outsz: usize = geom.out.iter().product();
    let ksz: usize = geom.kernel.iter().product();
    let mut col = vec![T::zero(); channels * ksz * outsz];
    if outsz == 0 {
        return col;
    }
    let tables = coord_tables(geom);
    let in_strides = rge_kernels::shape_util::strides(&geom.input);
    let last = nd - 1;
    let olast = geom.out[last];
    let outer: usize = outsz / olast;
    let mut kidx = vec![0usize; nd];
    for kflat in 0..ksz {
        // Rows of this kernel offset for every channel.
        let mut oidx = vec![0usize; nd];
        for ob in 0..outer {
            // Input offset of the outer dims, or None when one falls in the padding.
            let mut base = Some(0usize);
            for d in 0..last {
                let p = tables[d][kidx[d] * geom.out[d] + oidx[d]];
                if p < 0 {
                    base = None;
                    break;
                }
                base = base.map(|b| b + p as usize * in_strides[d]);
            }
            if let Some(base) = base {
                let tl = &tables[last][kidx[last] * olast..][..olast];
                for c in 0..channels {
                    let xc = &x[c * insz..][..insz];
                    let dst = &mut col[((c * ksz + kflat) * outsz + ob * olast)..][..olast];
                    for (o, &p) in dst.iter_mut().zip(tl) {
                        if p >= 0 {
                            *o = xc[base + p as usize];
                        }
                    }
                }
            }
            for d in (0..last).rev() {
                oidx[d] += 1;
                if oidx[d] < geom.out[d] {
                    break;
                }
                oidx[d] = 0;
            }
        }
        for d in (0..nd).rev() {
            kidx[d] += 1;
            if kidx[d] < geom.kernel[d] {
                break;
            }
            kidx[d] = 0;
        }
    }
    col
}

struct Conv {
    attrs: ConvAttrs,
}

pub(crate) fn create_conv(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Conv {
        attrs: ConvAttrs::parse(init)?,
    }))
}

fn conv_half<T: Real>(ctx: &mut KernelCtx<'_>, plan: &ConvPlan) -> KernelResult<()> {
    let conv = |i: usize| -> KernelResult<Option<Vec<f32>>> {
        ctx.opt_input(i)?
            .map(|t| Ok(t.as_slice::<T>()?.iter().map(|v| v.to_f32()).collect()))
            .transpose()
    };
    let x = conv(0)?.unwrap_or_default();
    let w = conv(1)?.unwrap_or_default();
    let b = conv(2)?;
    let mut tmp = vec![0f32; plan.out_shape.iter().product()];
    plan.run(&x, &w, b.as_deref(), &mut tmp, ctx.threads())?;
    let out = ctx.output::<T>(0, &plan.out_shape)?;
    out.iter_mut()
        .zip(&tmp)
        .for_each(|(o, &v)| *o = T::from_f32(v));
    Ok(())
}

fn conv_typed<T: Gemm>(ctx: &mut KernelCtx<'_>, plan: &ConvPlan) -> KernelResult<()> {
    let x = ctx.input(0)?.as_slice::<T>()?;
    let w = ctx.input(1)?.as_slice::<T>()?;
    let b = ctx.opt_input(2)?.map(|t| t.as_slice::<T>()).transpose()?;
    let threads = ctx.threads();
    let out = ctx.output::<T>(0, &plan.out_shape)?;
    plan.run(x, w, b, out, threads)
}

impl Kernel for Conv {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let w = ctx.input(1)?;
        if w.dtype() != x.dtype() {
            return Err(KernelError::invalid("Conv: X and W of different types"));
        }
        let plan = ConvPlan::new(x.shape(), w.shape(), &self.attrs)?;
        match x.dtype() {
            DType::Float => conv_typed::<f32>(ctx, &plan),
            DType::Double => conv_typed::<f64>(ctx, &plan),
            DType::Float16 => conv_half::<f16>(ctx, &plan),
            DType::Bfloat16 => conv_half::<bf16>(ctx, &plan),
            dt => Err(KernelError::unsupported(format!("Conv on {dt}"))),
        }
    }
}

/// `x - zp` (scalar zero point) as f64.
fn shift(x: &[i32], zp: Option<&[i32]>) -> KernelResult<Vec<f64>> {
    let z = match zp {
        None => 0,
        Some([z]) => *z,
        Some(_) => {
            return Err(KernelError::invalid(
                "the input zero point must be a scalar",
            ))
        }
    };
    Ok(x.iter().map(|&v| (v - z) as f64).collect())
}

/// `w - zp` with a scalar or per-output-channel zero point, as f64.
fn shift_per_channel(w: &[i32], m: usize, zp: Option<&[i32]>) -> KernelResult<Vec<f64>> {
    let per = w.len().checked_div(m).unwrap_or(0);
    match zp {
        None => Ok(w.iter().map(|&v| v as f64).collect()),
        Some([z]) => Ok(w.iter().map(|&v| (v - z) as f64).collect()),
        Some(z) if z.len() == m => Ok(w
            .iter()
            .enumerate()
            .map(|(i, &v)| (v - z[i / per.max(1)]) as f64)
            .collect()),
        Some(z) => Err(KernelError::invalid(format!(
            "weight zero point has {} values for {m} channels",
            z.len()
        ))),
    }
}

struct ConvInteger {
    attrs: ConvAttrs,
}

pub(crate) fn create_conv_integer(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(ConvInteger {
        attrs: ConvAttrs::parse(init)?,
    }))
}

impl Kernel for ConvInteger {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let w = ctx.input(1)?;
        let plan = ConvPlan::new(x.shape(), w.shape(), &self.attrs)?;
        let xz = ctx.opt_input(2)?.map(|t| int_values(&t)).transpose()?;
        let wz = ctx.opt_input(3)?.map(|t| int_values(&t)).transpose()?;
        let xf = shift(&int_values(&x)?, xz.as_deref())?;
        let wf = shift_per_channel(&int_values(&w)?, plan.m, wz.as_deref())?;
        let mut tmp = vec![0f64; plan.out_shape.iter().product()];
        plan.run(&xf, &wf, None, &mut tmp, ctx.threads())?;
        let out = ctx.output::<i32>(0, &plan.out_shape)?;
        out.iter_mut()
            .zip(&tmp)
            .for_each(|(o, &v)| *o = v as i64 as i32);
        Ok(())
    }
}

struct QLinearConv {
    attrs: ConvAttrs,
}

pub(crate) fn create_qlinear_conv(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(QLinearConv {
        attrs: ConvAttrs::parse(init)?,
    }))
}

impl Kernel for QLinearConv {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let w = ctx.input(3)?;
        let plan = ConvPlan::new(x.shape(), w.shape(), &self.attrs)?;
        let xz = ctx.opt_input(2)?.map(|t| int_values(&t)).transpose()?;
        let wz = ctx.opt_input(5)?.map(|t| int_values(&t)).transpose()?;
        let xf = shift(&int_values(&x)?, xz.as_deref())?;
        let wf = shift_per_channel(&int_values(&w)?, plan.m, wz.as_deref())?;
        let bias = ctx.opt_input(8)?.map(|t| int_values(&t)).transpose()?;
        let bias: Option<Vec<f64>> = bias.map(|b| b.into_iter().map(|v| v as f64).collect());
        let mut acc = vec![0f64; plan.out_shape.iter().product()];
        plan.run(&xf, &wf, bias.as_deref(), &mut acc, ctx.threads())?;
        let mult = ScaleMult::new(&ctx.input(1)?, &ctx.input(4)?, &ctx.input(6)?)?;
        mult.check(1, plan.m)?;
        let (out_dt, zp) = match ctx.opt_input(7)? {
            Some(z) => (z.dtype(), int_values(&z)?.first().copied().unwrap_or(0)),
            None => (x.dtype(), 0),
        };
        let per: usize = plan.geom.out.iter().product::<usize>().max(1);
        for (i, v) in acc.iter_mut().enumerate() {
            let ch = (i / per) % plan.m.max(1);
            *v = *v * mult.at(0, ch) + zp as f64;
        }
        requantize(ctx, out_dt, &plan.out_shape, &acc)
    }
}
