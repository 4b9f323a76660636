//! Pooling: AveragePool, MaxPool (with Indices), LpPool, the Global* pools and MaxUnpool.

use rayon::prelude::*;
use rge_kernels::{DType, Elem, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::conv::coord_table;
use crate::util::{nc_spatial, usize_list, Geometry, Real, WindowAttrs};

/// Every output position's window over one N·C plane: the in-plane offsets of the input
/// elements it covers (`offs[starts[o]..starts[o+1]]`) and how many window positions fall
/// inside the input or its explicit padding (count_include_pad's divisor).
struct Windows {
    offs: Vec<u32>,
    starts: Vec<usize>,
    padded_counts: Vec<usize>,
}

fn windows(g: &Geometry) -> KernelResult<Windows> {
    let nd = g.input.len();
    let insz: usize = g.input.iter().product();
    if insz > u32::MAX as usize {
        return Err(KernelError::unsupported("pooling planes over 4G elements"));
    }
    let tables: Vec<Vec<isize>> = (0..nd)
        .map(|i| {
            coord_table(
                g.input[i],
                g.kernel[i],
                g.out[i],
                g.strides[i],
                g.dilations[i],
                g.pads_begin[i] as isize,
            )
        })
        .collect();
    // Positions inside the input or its explicit padding (not the ceil_mode overhang).
    let in_pad = |d: usize, k: usize, o: usize| -> bool {
        let p = (o * g.strides[d] + k * g.dilations[d]) as isize - g.pads_begin[d] as isize;
        p < (g.input[d] + g.pads_end[d]) as isize
    };
    let strides = rge_kernels::shape_util::strides(&g.input);
    let outsz: usize = g.out.iter().product();
    let ksz: usize = g.kernel.iter().product();
    let mut w = Windows {
        offs: Vec::with_capacity(outsz * ksz),
        starts: Vec::with_capacity(outsz + 1),
        padded_counts: Vec::with_capacity(outsz),
    };
    crate::util::for_each_index(&g.out, |_, o| {
        w.starts.push(w.offs.len());
        let mut padded = 0;
        crate::util::for_each_index(&g.kernel, |_, k| {
            let mut off = 0usize;
            let mut inside = true;
            let mut in_region = true;
            for d in 0..nd {
                let p = tables[d][k[d] * g.out[d] + o[d]];
                if p < 0 {
                    inside = false;
                } else {
                    off += p as usize * strides[d];
                }
                in_region &= in_pad(d, k[d], o[d]);
            }
            if in_region {
                padded += 1;
            }
            if inside {
                w.offs.push(off as u32);
            }
        });
        w.padded_counts.push(padded);
    });
    w.starts.push(w.offs.len());
    Ok(w)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Avg { include_pad: bool },
    Lp(f64),
}

struct Pool {
    win: WindowAttrs,
    mode: Mode,
}

pub(crate) fn create_average_pool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Pool {
        win: WindowAttrs {
            short_input_window: true,
            ..WindowAttrs::parse(init)?
        },
        mode: Mode::Avg {
            include_pad: init.int_or("count_include_pad", 0)? != 0,
        },
    }))
}

pub(crate) fn create_lp_pool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Pool {
        win: WindowAttrs {
            short_input_window: true,
            ..WindowAttrs::parse(init)?
        },
        mode: Mode::Lp(init.float_or("p", 2.0)? as f64),
    }))
}

fn for_planes<T: Send>(
    out: &mut [T],
    plane: usize,
    threads: usize,
    f: impl Fn(usize, &mut [T]) + Sync,
) {
    if plane == 0 {
        return;
    }
    if threads > 1 && out.len() >= (1 << 15) {
        out.par_chunks_mut(plane)
            .enumerate()
            .for_each(|(i, o)| f(i, o));
    } else {
        out.chunks_mut(plane).enumerate().for_each(|(i, o)| f(i, o));
    }
}

fn pool_float<T: Real>(
    ctx: &mut KernelCtx<'_>,
    mode: Mode,
    g: &Geometry,
    shape: &[usize],
) -> KernelResult<()> {
    let x = ctx.input(0)?.as_slice::<T>()?;
    let w = windows(g)?;
    let insz: usize = g.input.iter().product();
    let outsz: usize = g.out.iter().product();
    let threads = ctx.threads();
    let y = ctx.output::<T>(0, shape)?;
    for_planes(y, outsz, threads, |pi, yo| {
        let xp = &x[pi * insz..][..insz];
        for (o, v) in yo.iter_mut().enumerate() {
            let offs = &w.offs[w.starts[o]..w.starts[o + 1]];
            *v = T::from_f64(match mode {
                Mode::Avg { include_pad } => {
                    let s: f64 = offs.iter().map(|&i| xp[i as usize].to_f64()).sum();
                    let n = if include_pad {
                        w.padded_counts[o]
                    } else {
                        offs.len()
                    };
                    if n == 0 {
                        f64::NAN
                    } else {
                        s / n as f64
                    }
                }
                Mode::Lp(p) => {
                    let s: f64 = offs
                        .iter()
                        .map(|&i| xp[i as usize].to_f64().abs().powf(p))
                        .sum();
                    s.powf(1.0 / p)
                }
            });
        }
    });
    Ok(())
}

/// N, C and the resolved geometry of a pooling input.
fn pool_geometry(shape: &[usize], win: &WindowAttrs) -> KernelResult<(Geometry, Vec<usize>)> {
    let (n, c, spatial) = nc_spatial(shape, 3)?;
    let g = win.resolve(spatial, None)?;
    let mut out = vec![n, c];
    out.extend_from_slice(&g.out);
    Ok((g, out))
}

impl Kernel for Pool {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (g, shape) = pool_geometry(x.shape(), &self.win)?;
        rge_kernels::dispatch_float!(x.dtype(), T => pool_float::<T>(ctx, self.mode, &g, &shape))
    }
}

struct MaxPool {
    win: WindowAttrs,
    column_major: bool,
}

pub(crate) fn create_max_pool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(MaxPool {
        win: WindowAttrs {
            short_input_window: true,
            ..WindowAttrs::parse(init)?
        },
        column_major: init.int_or("storage_order", 0)? != 0,
    }))
}

fn max_pool_typed<T: Elem + PartialOrd>(
    k: &MaxPool,
    ctx: &mut KernelCtx<'_>,
    g: &Geometry,
    shape: &[usize],
) -> KernelResult<()> {
    let x = ctx.input(0)?.as_slice::<T>()?;
    let w = windows(g)?;
    let insz: usize = g.input.iter().product();
    let outsz: usize = g.out.iter().product();
    let threads = ctx.threads();
    let want_idx = ctx.output_count() > 1 && ctx.output_used(1);
    // argmax per output (in-plane offset, or -1 for an empty window).
    let mut arg = vec![-1i64; if want_idx { shape.iter().product() } else { 0 }];
    let y = ctx.output::<T>(0, shape)?;
    let run = |pi: usize, yo: &mut [T], ao: Option<&mut [i64]>| {
        let xp = &x[pi * insz..][..insz];
        let mut ao = ao;
        for (o, v) in yo.iter_mut().enumerate() {
            let offs = &w.offs[w.starts[o]..w.starts[o + 1]];
            let mut best: Option<(T, u32)> = None;
            for &i in offs {
                let xv = xp[i as usize];
                if best.is_none_or(|(b, _)| xv > b) {
                    best = Some((xv, i));
                }
            }
            *v = best.map_or_else(T::default, |b| b.0);
            if let Some(a) = ao.as_deref_mut() {
                a[o] = best.map_or(-1, |b| b.1 as i64);
            }
        }
    };
    if outsz > 0 {
        if want_idx {
            y.chunks_mut(outsz)
                .zip(arg.chunks_mut(outsz))
                .enumerate()
                .for_each(|(pi, (yo, ao))| run(pi, yo, Some(ao)));
        } else {
            for_planes(y, outsz, threads, |pi, yo| run(pi, yo, None));
        }
    }
    if want_idx {
        let strides_c = {
            // Column-major strides of the spatial dims.
            let mut s = vec![1usize; g.input.len()];
            for d in 1..g.input.len() {
                s[d] = s[d - 1] * g.input[d - 1];
            }
            s
        };
        let strides_r = rge_kernels::shape_util::strides(&g.input);
        let idx = ctx.output::<i64>(1, shape)?;
        for (i, (o, &a)) in idx.iter_mut().zip(&arg).enumerate() {
            let plane = (i / outsz.max(1)) as i64;
            *o = if a < 0 {
                -1
            } else if k.column_major {
                let mut rem = a as usize;
                let mut cm = 0usize;
                for d in 0..g.input.len() {
                    cm += (rem / strides_r[d]) * strides_c[d];
                    rem %= strides_r[d];
                }
                plane * insz as i64 + cm as i64
            } else {
                plane * insz as i64 + a
            };
        }
    }
    Ok(())
}

impl Kernel for MaxPool {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (g, shape) = pool_geometry(x.shape(), &self.win)?;
        rge_kernels::dispatch_numeric!(x.dtype(), T => max_pool_typed::<T>(self, ctx, &g, &shape))
    }
}

#[derive(Clone, Copy)]
enum Global {
    Avg,
    Max,
    Lp(f64),
}

struct GlobalPool(Global);

pub(crate) fn create_global_average_pool(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(GlobalPool(Global::Avg)))
}
pub(crate) fn create_global_max_pool(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(GlobalPool(Global::Max)))
}
pub(crate) fn create_global_lp_pool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(GlobalPool(
        Global::Lp(init.int_or("p", 2)? as f64),
    )))
}

fn global_typed<T: Real>(mode: Global, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
    let x = ctx.input(0)?;
    let (n, c, spatial) = nc_spatial(x.shape(), 2)?;
    let insz: usize = spatial.iter().product();
    if insz == 0 && n * c > 0 {
        // The mean (or max) of nothing: refused, as onnxruntime does, rather than NaN.
        return Err(KernelError::invalid(format!(
            "input {:?} has an empty spatial map: a global pool of no elements has no value",
            x.shape()
        )));
    }
    let mut shape = vec![n, c];
    shape.extend(spatial.iter().map(|_| 1));
    let xs = x.as_slice::<T>()?;
    let y = ctx.output::<T>(0, &shape)?;
    for (i, v) in y.iter_mut().enumerate() {
        let p = &xs[i * insz..][..insz];
        *v = match mode {
            Global::Avg => T::from_f64(p.iter().map(|v| v.to_f64()).sum::<f64>() / insz as f64),
            Global::Max => p
                .iter()
                .copied()
                .fold(None, |b: Option<T>, v| match b {
                    Some(b) if b.partial_cmp(&v) != Some(std::cmp::Ordering::Less) => Some(b),
                    _ => Some(v),
                })
                .unwrap_or_else(|| T::from_f64(f64::NAN)),
            Global::Lp(e) => T::from_f64(
                p.iter()
                    .map(|v| v.to_f64().abs().powf(e))
                    .sum::<f64>()
                    .powf(1.0 / e),
            ),
        };
    }
    Ok(())
}

impl Kernel for GlobalPool {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        rge_kernels::dispatch_float!(dt, T => global_typed::<T>(self.0, ctx))
    }
}

struct MaxUnpool {
    kernel: Vec<usize>,
    strides: Option<Vec<usize>>,
    pads: Option<Vec<usize>>,
}

pub(crate) fn create_max_unpool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(MaxUnpool {
        kernel: usize_list(init, "kernel_shape")?
            .ok_or_else(|| KernelError::attr("kernel_shape", "required but missing"))?,
        strides: usize_list(init, "strides")?,
        pads: usize_list(init, "pads")?,
    }))
}

fn unpool_typed<T: Elem>(
    ctx: &mut KernelCtx<'_>,
    inferred: &[usize],
    shape: &[usize],
) -> KernelResult<()> {
    let x = ctx.input(0)?.as_slice::<T>()?;
    let idx = ctx.input(1)?.to_i64_vec()?;
    if idx.len() != x.len() {
        return Err(KernelError::invalid("MaxUnpool: X and I differ in size"));
    }
    let total: usize = inferred.iter().product();
    // Scatter into the inferred shape, then place that at the origin of the output shape.
    let mut full = vec![T::default(); total];
    for (&v, &i) in x.iter().zip(&idx) {
        let i = usize::try_from(i)
            .ok()
            .filter(|&i| i < total)
            .ok_or_else(|| KernelError::invalid(format!("MaxUnpool: index {i} out of range")))?;
        full[i] = v;
    }
    let y = ctx.output::<T>(0, shape)?;
    if inferred == shape {
        y.copy_from_slice(&full);
        return Ok(());
    }
    y.iter_mut().for_each(|v| *v = T::default());
    let ys = rge_kernels::shape_util::strides(shape);
    crate::util::for_each_index(inferred, |flat, ix| {
        if ix.iter().zip(shape).all(|(&i, &d)| i < d) {
            let o: usize = ix.iter().zip(&ys).map(|(&i, &s)| i * s).sum();
            y[o] = full[flat];
        }
    });
    Ok(())
}

impl Kernel for MaxUnpool {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (n, c, spatial) = nc_spatial(x.shape(), 3)?;
        let nd = spatial.len();
        let strides = self.strides.clone().unwrap_or_else(|| vec![1; nd]);
        let pads = self.pads.clone().unwrap_or_else(|| vec![0; 2 * nd]);
        if self.kernel.len() != nd || strides.len() != nd || pads.len() != 2 * nd {
            return Err(KernelError::invalid(
                "MaxUnpool: attributes do not fit the input rank",
            ));
        }
        let mut inferred = vec![n, c];
        for d in 0..nd {
            let v = (spatial[d].saturating_sub(1) * strides[d] + self.kernel[d])
                .checked_sub(pads[d] + pads[d + nd]);
            inferred
                .push(v.ok_or_else(|| KernelError::invalid("MaxUnpool: pads exceed the output"))?);
        }
        let shape = match ctx.opt_input(2)? {
            Some(s) => {
                let v = s.to_i64_vec()?;
                if v.len() != nd + 2 || v.iter().any(|&d| d < 0) {
                    return Err(KernelError::invalid(format!(
                        "MaxUnpool: bad output_shape {v:?}"
                    )));
                }
                v.into_iter().map(|d| d as usize).collect()
            }
            None => inferred.clone(),
        };
        let dt = x.dtype();
        if dt == DType::String {
            return Err(KernelError::unsupported("MaxUnpool on strings"));
        }
        rge_kernels::dispatch_numeric!(dt, T => unpool_typed::<T>(ctx, &inferred, &shape))
    }
}
