//! LpNormalization (x / ‖x‖ₚ along `axis`, 0 where the norm is 0) and
//! MeanVarianceNormalization ((x - mean) / (sqrt(var) + 1e-9) over `axes`, default [0, 2, 3],
//! with var = mean(x²) - mean(x)² as the op's function body defines it). Both compute in f64.

use rge_kernels::{
    dispatch_float, shape_util::normalize_axis, Kernel, KernelCtx, KernelError, KernelInit,
    KernelResult,
};

use crate::acc::Reducible;
use crate::plan::{normalize_axes, split3, ReducePlan};

struct LpNorm {
    axis: i64,
    p: i64,
}

pub fn lp_factory(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let p = init.int_or("p", 2)?;
    if p < 1 {
        return Err(KernelError::attr("p", format!("must be 1 or 2, got {p}")));
    }
    Ok(Box::new(LpNorm {
        axis: init.int_or("axis", -1)?,
        p,
    }))
}

impl Kernel for LpNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let axis = normalize_axis(self.axis, x.rank())?;
        let dims = split3(x.shape(), axis);
        let p = self.p;
        dispatch_float!(x.dtype(), T => {
            let src = x.as_slice::<T>()?;
            let dst = ctx.output::<T>(0, x.shape())?;
            lp::<T>(src, dst, dims, p);
            Ok(())
        })
    }
}

fn lp<T: Reducible<A = f64>>(
    src: &[T],
    dst: &mut [T],
    (outer, len, inner): (usize, usize, usize),
    p: i64,
) {
    let mut norm = vec![0f64; inner];
    for o in 0..outer {
        let base = o * len * inner;
        norm.fill(0.0);
        for j in 0..len {
            let r = &src[base + j * inner..base + (j + 1) * inner];
            for (n, &v) in norm.iter_mut().zip(r) {
                let a = v.load().abs();
                *n += match p {
                    1 => a,
                    2 => a * a,
                    _ => a.powi(p as i32),
                };
            }
        }
        for n in norm.iter_mut() {
            *n = match p {
                1 => *n,
                2 => n.sqrt(),
                _ => n.powf(1.0 / p as f64),
            };
        }
        for j in 0..len {
            let r = base + j * inner..base + (j + 1) * inner;
            for ((d, &v), &n) in dst[r.clone()].iter_mut().zip(&src[r]).zip(&norm) {
                *d = T::store(if n == 0.0 { 0.0 } else { v.load() / n });
            }
        }
    }
}

struct Mvn {
    axes: Vec<i64>,
}

pub fn mvn_factory(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Mvn {
        axes: init
            .ints_opt("axes")?
            .map_or_else(|| vec![0, 2, 3], <[i64]>::to_vec),
    }))
}

impl Kernel for Mvn {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let mask = normalize_axes(&self.axes, x.rank())?;
        let plan = ReducePlan::new(x.shape(), &mask, true);
        dispatch_float!(x.dtype(), T => {
            let src = x.as_slice::<T>()?;
            let dst = ctx.output::<T>(0, x.shape())?;
            mvn::<T>(&plan, src, dst);
            Ok(())
        })
    }
}

fn mvn<T: Reducible<A = f64>>(plan: &ReducePlan, src: &[T], dst: &mut [T]) {
    let mut s1 = vec![0f64; plan.out_len];
    let mut s2 = vec![0f64; plan.out_len];
    plan.for_each_run(|i, len, o, step| {
        for (j, &v) in src[i..i + len].iter().enumerate() {
            let v = v.load();
            s1[o + j * step] += v;
            s2[o + j * step] += v * v;
        }
    });
    let n = plan.group.max(1) as f64;
    for (a, b) in s1.iter_mut().zip(s2.iter_mut()) {
        let mean = *a / n;
        let var = (*b / n - mean * mean).max(0.0);
        *a = mean;
        *b = var.sqrt() + 1e-9;
    }
    plan.for_each_run(|i, len, o, step| {
        for (j, (d, &v)) in dst[i..i + len].iter_mut().zip(&src[i..i + len]).enumerate() {
            let k = o + j * step;
            *d = T::store((v.load() - s1[k]) / s2[k]);
        }
    });
}
