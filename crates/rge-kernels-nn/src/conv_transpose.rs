//! ConvTranspose (GEMM then col2im scatter-add) and Col2Im.

use rayon::prelude::*;
use rge_kernels::{bf16, f16, DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::blas::{gemm, Gemm, Mat};
use crate::conv::coord_table;
use crate::util::{nc_spatial, usize_list, AutoPad, Real};

/// Scatter-adds `col` ((C·prod(kernel)) × prod(grid), row-major) into `img` (C × prod(img)).
/// `tables[d][k * grid[d] + o]` is the image coordinate of kernel offset k at grid position o
/// along dim d, or -1 when it falls outside the image.
pub(crate) fn col2im_add<T: Gemm>(
    col: &[T],
    channels: usize,
    img_dims: &[usize],
    grid: &[usize],
    kernel: &[usize],
    tables: &[Vec<isize>],
    img: &mut [T],
) {
    let nd = img_dims.len();
    let imgsz: usize = img_dims.iter().product();
    let gsz: usize = grid.iter().product();
    let ksz: usize = kernel.iter().product();
    if gsz == 0 || nd == 0 {
        return;
    }
    let strides = rge_kernels::shape_util::strides(img_dims);
    let last = nd - 1;
    let glast = grid[last];
    let outer = gsz / glast;
    let mut kidx = vec![0usize; nd];
    for kflat in 0..ksz {
        let mut gidx = vec![0usize; nd];
        for ob in 0..outer {
            let mut base = Some(0usize);
            for d in 0..last {
                let p = tables[d][kidx[d] * grid[d] + gidx[d]];
                if p < 0 {
                    base = None;
                    break;
                }
                base = base.map(|b| b + p as usize * strides[d]);
            }
            if let Some(base) = base {
                let tl = &tables[last][kidx[last] * glast..][..glast];
                for c in 0..channels {
                    let src = &col[((c * ksz + kflat) * gsz + ob * glast)..][..glast];
                    let dst = &mut img[c * imgsz..][..imgsz];
                    for (&v, &p) in src.iter().zip(tl) {
                        if p >= 0 {
                            let o = &mut dst[base + p as usize];
                            *o = o.add(v);
                        }
                    }
                }
            }
            for d in (0..last).rev() {
                gidx[d] += 1;
                if gidx[d] < grid[d] {
                    break;
                }
                gidx[d] = 0;
            }
        }
        for d in (0..nd).rev() {
            kidx[d] += 1;
            if kidx[d] < kernel[d] {
                break;
            }
            kidx[d] = 0;
        }
    }
}

/// [`col2im_add`] on f32 (the dense engine's ConvTranspose scatters its GEMM's columns with it).
pub fn col2im_add_f32(
    col: &[f32],
    channels: usize,
    img_dims: &[usize],
    grid: &[usize],
    kernel: &[usize],
    tables: &[Vec<isize>],
    img: &mut [f32],
) {
    col2im_add(col, channels, img_dims, grid, kernel, tables, img)
}

/// ConvTranspose's attributes, parsed once; [`ConvTranspose::plan`] resolves them against the
/// shapes of a run (shared with the dense engine's kernel).
pub struct ConvTranspose {
    auto_pad: AutoPad,
    group: usize,
    kernel: Option<Vec<usize>>,
    strides: Option<Vec<usize>>,
    dilations: Option<Vec<usize>>,
    pads: Option<Vec<i64>>,
    output_padding: Option<Vec<usize>>,
    output_shape: Option<Vec<usize>>,
}

pub(crate) fn create_conv_transpose(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(ConvTranspose::parse(init)?))
}

impl ConvTranspose {
    /// Parses and checks the attributes.
    pub fn parse(init: &KernelInit<'_>) -> KernelResult<Self> {
        let group = init.int_or("group", 1)?;
        if group < 1 {
            return Err(KernelError::attr("group", "must be ≥ 1"));
        }
        let strides = usize_list(init, "strides")?;
        let dilations = usize_list(init, "dilations")?;
        if strides.iter().chain(&dilations).any(|v| v.contains(&0)) {
            return Err(KernelError::attr(
                "strides",
                "strides and dilations must be positive",
            ));
        }
        Ok(ConvTranspose {
            auto_pad: AutoPad::parse(init)?,
            group: group as usize,
            kernel: usize_list(init, "kernel_shape")?,
            strides,
            dilations,
            pads: init.ints_opt("pads")?.map(<[i64]>::to_vec),
            output_padding: usize_list(init, "output_padding")?,
            output_shape: usize_list(init, "output_shape")?,
        })
    }

    /// The group count.
    pub fn group(&self) -> usize {
        self.group
    }
}

/// A ConvTranspose resolved against the shapes of a run: batch, input and output channels,
/// spatial sizes and the col2im coordinate tables.
pub struct CtPlan {
    pub n: usize,
    pub c: usize,
    pub m: usize,
    pub input: Vec<usize>,
    pub kernel: Vec<usize>,
    pub out: Vec<usize>,
    pub tables: Vec<Vec<isize>>,
}

impl ConvTranspose {
    /// Resolves pads and output sizes for input shape `xs` and weights `ws`.
    pub fn plan(&self, xs: &[usize], ws: &[usize]) -> KernelResult<CtPlan> {
        let (n, c, input) = nc_spatial(xs, 3)?;
        let nd = input.len();
        let g = self.group;
        if ws.len() != xs.len() || ws[0] != c || c % g != 0 {
            return Err(KernelError::invalid(format!(
                "ConvTranspose: W {ws:?} does not fit X {xs:?} with group {g}"
            )));
        }
        let m = ws[1] * g;
        let kernel = self.kernel.clone().unwrap_or_else(|| ws[2..].to_vec());
        if kernel[..] != ws[2..] {
            return Err(KernelError::invalid(format!(
                "ConvTranspose: kernel_shape {kernel:?} differs from W {ws:?}"
            )));
        }
        let get = |v: &Option<Vec<usize>>, name: &str, def: usize| -> KernelResult<Vec<usize>> {
            match v {
                None => Ok(vec![def; nd]),
                Some(v) if v.len() == nd => Ok(v.clone()),
                Some(v) => Err(KernelError::attr(
                    name,
                    format!("{v:?} does not fit {nd} spatial dims"),
                )),
            }
        };
        let strides = get(&self.strides, "strides", 1)?;
        let dilations = get(&self.dilations, "dilations", 1)?;
        let out_pad = get(&self.output_padding, "output_padding", 0)?;
        let out_shape = match &self.output_shape {
            Some(v) if v.len() == nd + 2 => Some(v[2..].to_vec()),
            Some(v) if v.len() == nd => Some(v.clone()),
            Some(v) => {
                return Err(KernelError::attr(
                    "output_shape",
                    format!("{v:?} does not fit {nd} spatial dims"),
                ))
            }
            None => None,
        };
        let mut pb = vec![0isize; nd];
        let mut out = vec![0usize; nd];
        for i in 0..nd {
            let dk = ((kernel[i].saturating_sub(1)) * dilations[i] + 1) as isize;
            let full = (strides[i] * input[i].saturating_sub(1) + out_pad[i]) as isize + dk;
            let same = matches!(self.auto_pad, AutoPad::SameUpper | AutoPad::SameLower);
            let target = match &out_shape {
                Some(o) => Some(o[i] as isize),
                None if same && self.pads.is_none() => Some((input[i] * strides[i]) as isize),
                None => None,
            };
            match target {
                Some(t) => {
                    let total = (full - t).max(0);
                    pb[i] = if self.auto_pad == AutoPad::SameUpper {
                        total / 2
                    } else {
                        total - total / 2
                    };
                    out[i] = t as usize;
                }
                None => {
                    let (b, e) = match &self.pads {
                        Some(p) if p.len() == 2 * nd => (p[i] as isize, p[i + nd] as isize),
                        Some(p) => {
                            return Err(KernelError::attr(
                                "pads",
                                format!("{p:?} does not fit {nd} spatial dims"),
                            ))
                        }
                        None => (0, 0),
                    };
                    pb[i] = b;
                    let o = full - b - e;
                    if o < 0 {
                        return Err(KernelError::invalid("ConvTranspose: negative output size"));
                    }
                    out[i] = o as usize;
                }
            }
        }
        let tables = (0..nd)
            .map(|i| coord_table(out[i], kernel[i], input[i], strides[i], dilations[i], pb[i]))
            .collect();
        Ok(CtPlan {
            n,
            c,
            m,
            input: input.to_vec(),
            kernel,
            out,
            tables,
        })
    }

    fn run<T: Gemm>(
        &self,
        p: &CtPlan,
        x: &[T],
        w: &[T],
        bias: Option<&[T]>,
        y: &mut [T],
        threads: usize,
    ) -> KernelResult<()> {
        let g = self.group;
        let (cg, mg) = (p.c / g, p.m / g);
        let insz: usize = p.input.iter().product();
        let ksz: usize = p.kernel.iter().product();
        let outsz: usize = p.out.iter().product();
        let rows = mg * ksz;
        if x.len() != p.n * p.c * insz || w.len() != p.c * rows || y.len() != p.n * p.m * outsz {
            return Err(KernelError::invalid(
                "ConvTranspose: operand sizes do not fit the shapes",
            ));
        }
        if bias.is_some_and(|b| b.len() != p.m) {
            return Err(KernelError::invalid(
                "ConvTranspose: bias size differs from the output channels",
            ));
        }
        let one = |idx: usize, yo: &mut [T]| -> KernelResult<()> {
            let (ni, gi) = (idx / g, idx % g);
            let xs = &x[(ni * p.c + gi * cg) * insz..][..cg * insz];
            let wg = &w[gi * cg * rows..][..cg * rows];
            let mut col = vec![T::zero(); rows * insz];
            gemm(
                rows,
                cg,
                insz,
                T::one(),
                wg,
                Mat::col_major(rows),
                xs,
                Mat::row_major(insz),
                T::zero(),
                &mut col,
                Mat::row_major(insz),
            )?;
            yo.iter_mut().for_each(|v| *v = T::zero());
            col2im_add(&col, mg, &p.out, &p.input, &p.kernel, &p.tables, yo);
            if let Some(b) = bias {
                for (mi, row) in yo.chunks_mut(outsz.max(1)).enumerate() {
                    let bv = b[gi * mg + mi];
                    row.iter_mut().for_each(|v| *v = v.add(bv));
                }
            }
            Ok(())
        };
        let chunk = mg * outsz;
        if chunk == 0 {
            return Ok(());
        }
        if threads > 1 && p.n * g > 1 && y.len() * ksz >= (1 << 16) {
            y.par_chunks_mut(chunk)
                .enumerate()
                .try_for_each(|(i, yo)| one(i, yo))
        } else {
            y.chunks_mut(chunk)
                .enumerate()
                .try_for_each(|(i, yo)| one(i, yo))
        }
    }
}

fn ct_half<T: Real>(
    k: &ConvTranspose,
    ctx: &mut KernelCtx<'_>,
    p: &CtPlan,
    shape: &[usize],
) -> KernelResult<()> {
    let f = |i: usize| -> KernelResult<Option<Vec<f32>>> {
        ctx.opt_input(i)?
            .map(|t| Ok(t.as_slice::<T>()?.iter().map(|v| v.to_f32()).collect()))
            .transpose()
    };
    let (x, w, b) = (f(0)?.unwrap_or_default(), f(1)?.unwrap_or_default(), f(2)?);
    let mut tmp = vec![0f32; shape.iter().product()];
    k.run(p, &x, &w, b.as_deref(), &mut tmp, ctx.threads())?;
    let out = ctx.output::<T>(0, shape)?;
    out.iter_mut()
        .zip(&tmp)
        .for_each(|(o, &v)| *o = T::from_f32(v));
    Ok(())
}

fn ct_typed<T: Gemm>(
    k: &ConvTranspose,
    ctx: &mut KernelCtx<'_>,
    p: &CtPlan,
    shape: &[usize],
) -> KernelResult<()> {
    let x = ctx.input(0)?.as_slice::<T>()?;
    let w = ctx.input(1)?.as_slice::<T>()?;
    let b = ctx.opt_input(2)?.map(|t| t.as_slice::<T>()).transpose()?;
    let threads = ctx.threads();
    let y = ctx.output::<T>(0, shape)?;
    k.run(p, x, w, b, y, threads)
}

impl Kernel for ConvTranspose {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let w = ctx.input(1)?;
        if x.dtype() != w.dtype() {
            return Err(KernelError::invalid(
                "ConvTranspose: X and W of different types",
            ));
        }
        let p = self.plan(x.shape(), w.shape())?;
        let mut shape = vec![p.n, p.m];
        shape.extend_from_slice(&p.out);
        match x.dtype() {
            DType::Float => ct_typed::<f32>(self, ctx, &p, &shape),
            DType::Double => ct_typed::<f64>(self, ctx, &p, &shape),
            DType::Float16 => ct_half::<f16>(self, ctx, &p, &shape),
            DType::Bfloat16 => ct_half::<bf16>(self, ctx, &p, &shape),
            dt => Err(KernelError::unsupported(format!("ConvTranspose on {dt}"))),
        }
    }
}

struct Col2Im {
    strides: Option<Vec<usize>>,
    dilations: Option<Vec<usize>>,
    pads: Option<Vec<i64>>,
}

pub(crate) fn create_col2im(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let strides = usize_list(init, "strides")?;
    let dilations = usize_list(init, "dilations")?;
    if strides.iter().chain(&dilations).any(|v| v.contains(&0)) {
        return Err(KernelError::attr(
            "strides",
            "strides and dilations must be positive",
        ));
    }
    let pads = init.ints_opt("pads")?.map(<[i64]>::to_vec);
    if pads.as_ref().is_some_and(|p| p.iter().any(|&v| v < 0)) {
        return Err(KernelError::attr("pads", "must be non-negative"));
    }
    Ok(Box::new(Col2Im {
        strides,
        dilations,
        pads,
    }))
}

fn col2im_typed<T: Real + Gemm>(
    ctx: &mut KernelCtx<'_>,
    c: usize,
    img: &[usize],
    grid: &[usize],
    block: &[usize],
    tables: &[Vec<isize>],
) -> KernelResult<()> {
    let x = ctx.input(0)?;
    let n = x.shape()[0];
    let xs = x.as_slice::<T>()?;
    let mut shape = vec![n, c];
    shape.extend_from_slice(img);
    let y = ctx.output::<T>(0, &shape)?;
    let per_in = xs.len() / n.max(1);
    let per_out = y.len() / n.max(1);
    for ni in 0..n {
        let dst = &mut y[ni * per_out..][..per_out];
        dst.iter_mut().for_each(|v| *v = T::zero());
        col2im_add(
            &xs[ni * per_in..][..per_in],
            c,
            img,
            grid,
            block,
            tables,
            dst,
        );
    }
    Ok(())
}

impl Kernel for Col2Im {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let to_usize = |v: Vec<i64>, what: &str| -> KernelResult<Vec<usize>> {
            v.into_iter()
                .map(|d| {
                    usize::try_from(d)
                        .map_err(|_| KernelError::invalid(format!("Col2Im: negative {what}")))
                })
                .collect()
        };
        let img = to_usize(ctx.input(1)?.to_i64_vec()?, "image_shape")?;
        let block = to_usize(ctx.input(2)?.to_i64_vec()?, "block_shape")?;
        let nd = img.len();
        if block.len() != nd || nd == 0 || x.rank() != 3 {
            return Err(KernelError::invalid(
                "Col2Im: input must be [N, C·prod(block), L] with matching image/block ranks",
            ));
        }
        let get = |v: &Option<Vec<usize>>, def: usize| v.clone().unwrap_or_else(|| vec![def; nd]);
        let strides = get(&self.strides, 1);
        let dilations = get(&self.dilations, 1);
        let pads: Vec<usize> = self.pads.as_ref().map_or_else(
            || vec![0; 2 * nd],
            |p| p.iter().map(|&v| v as usize).collect(),
        );
        if strides.len() != nd || dilations.len() != nd || pads.len() != 2 * nd {
            return Err(KernelError::invalid(
                "Col2Im: attributes do not fit the image rank",
            ));
        }
        let ksz: usize = block.iter().product();
        if ksz == 0 || x.shape()[1] % ksz != 0 {
            return Err(KernelError::invalid(
                "Col2Im: input channels are not a multiple of prod(block_shape)",
            ));
        }
        let c = x.shape()[1] / ksz;
        let mut grid = vec![0usize; nd];
        for i in 0..nd {
            let dk = (block[i] - 1) * dilations[i] + 1;
            let padded = img[i] + pads[i] + pads[i + nd];
            grid[i] = if padded >= dk {
                (padded - dk) / strides[i] + 1
            } else {
                0
            };
        }
        if grid.iter().product::<usize>() != x.shape()[2] {
            return Err(KernelError::invalid(format!(
                "Col2Im: L = {} does not match the block grid {grid:?}",
                x.shape()[2]
            )));
        }
        let tables: Vec<Vec<isize>> = (0..nd)
            .map(|i| {
                coord_table(
                    img[i],
                    block[i],
                    grid[i],
                    strides[i],
                    dilations[i],
                    pads[i] as isize,
                )
            })
            .collect();
        match x.dtype() {
            DType::Float => col2im_typed::<f32>(ctx, c, &img, &grid, &block, &tables),
            DType::Double => col2im_typed::<f64>(ctx, c, &img, &grid, &block, &tables),
            DType::Float16 | DType::Bfloat16 => {
                let xf = crate::util::to_f32_vec(&x)?;
                let n = x.shape()[0];
                let per_in = xf.len() / n.max(1);
                let per_out = c * img.iter().product::<usize>();
                let mut yf = vec![0f32; n * per_out];
                for ni in 0..n {
                    col2im_add(
                        &xf[ni * per_in..][..per_in],
                        c,
                        &img,
                        &grid,
                        &block,
                        &tables,
                        &mut yf[ni * per_out..][..per_out],
                    );
                }
                let mut shape = vec![n, c];
                shape.extend_from_slice(&img);
                rge_kernels::dispatch_types!(x.dtype(), T => {
                    let y = ctx.output::<T>(0, &shape)?;
                    y.iter_mut().zip(&yf).for_each(|(o, &v)| *o = T::from_f32(v));
                    Ok(())
                }; Float16: f16, Bfloat16: bf16)
            }
            dt => Err(KernelError::unsupported(format!("Col2Im on {dt}"))),
        }
    }
}
