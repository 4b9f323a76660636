//! DeformConv (2-D): each kernel tap samples the input bilinearly (zeros outside) at its
//! position plus a learned offset, scaled by an optional mask; then a grouped GEMM with W.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::blas::{gemm, Mat};
use crate::util::{usize_list, Real};

struct DeformConv {
    group: usize,
    offset_group: usize,
    kernel: Option<Vec<usize>>,
    strides: Option<Vec<usize>>,
    dilations: Option<Vec<usize>>,
    pads: Option<Vec<usize>>,
}

pub(crate) fn create_deform_conv(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let group = init.int_or("group", 1)?;
    let og = init.int_or("offset_group", 1)?;
    if group < 1 || og < 1 {
        return Err(KernelError::attr(
            "group",
            "group and offset_group must be ≥ 1",
        ));
    }
    let strides = usize_list(init, "strides")?;
    let dilations = usize_list(init, "dilations")?;
    if strides.iter().chain(&dilations).any(|v| v.contains(&0)) {
        return Err(KernelError::attr(
            "strides",
            "strides and dilations must be positive",
        ));
    }
    Ok(Box::new(DeformConv {
        group: group as usize,
        offset_group: og as usize,
        kernel: usize_list(init, "kernel_shape")?,
        strides,
        dilations,
        pads: usize_list(init, "pads")?,
    }))
}

/// Bilinear sample of an h×w plane at (y, x) with zeros outside.
fn sample(plane: &[f64], h: usize, w: usize, y: f64, x: f64) -> f64 {
    let (y0, x0) = (y.floor(), x.floor());
    let (ly, lx) = (y - y0, x - x0);
    let mut v = 0.0;
    for (dy, wy) in [(0.0, 1.0 - ly), (1.0, ly)] {
        for (dx, wx) in [(0.0, 1.0 - lx), (1.0, lx)] {
            let (yy, xx) = (y0 + dy, x0 + dx);
            if yy >= 0.0 && xx >= 0.0 && (yy as usize) < h && (xx as usize) < w {
                v += wy * wx * plane[yy as usize * w + xx as usize];
            }
        }
    }
    v
}

impl DeformConv {
    fn typed<T: Real>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let wt = ctx.input(1)?;
        let off = ctx.input(2)?;
        let (xs, ws, os) = (x.shape(), wt.shape(), off.shape());
        if xs.len() != 4 || ws.len() != 4 || os.len() != 4 {
            return Err(KernelError::unsupported(
                "DeformConv: only 2-D (4-D tensors) is supported",
            ));
        }
        let (n, c, h, w) = (xs[0], xs[1], xs[2], xs[3]);
        let (m, g, og) = (ws[0], self.group, self.offset_group);
        if ws[1] * g != c || m % g != 0 || c % og != 0 {
            return Err(KernelError::invalid(format!(
                "DeformConv: X {xs:?} / W {ws:?} do not fit group {g}, offset_group {og}"
            )));
        }
        let (kh, kw) = (ws[2], ws[3]);
        if self.kernel.as_ref().is_some_and(|k| k[..] != [kh, kw]) {
            return Err(KernelError::invalid(
                "DeformConv: kernel_shape differs from W",
            ));
        }
        let two = |v: &Option<Vec<usize>>, d: usize, len: usize| -> KernelResult<Vec<usize>> {
            match v {
                None => Ok(vec![d; len]),
                Some(v) if v.len() == len => Ok(v.clone()),
                Some(_) => Err(KernelError::invalid("DeformConv: attribute rank mismatch")),
            }
        };
        let st = two(&self.strides, 1, 2)?;
        let dl = two(&self.dilations, 1, 2)?;
        let pd = two(&self.pads, 0, 4)?;
        let ext = |i: usize, k: usize, p0: usize, p1: usize, s: usize, d: usize| -> usize {
            let dk = (k - 1) * d + 1;
            if i + p0 + p1 >= dk {
                (i + p0 + p1 - dk) / s + 1
            } else {
                0
            }
        };
        let oh = ext(h, kh, pd[0], pd[2], st[0], dl[0]);
        let ow = ext(w, kw, pd[1], pd[3], st[1], dl[1]);
        let ksz = kh * kw;
        if os != [n, og * ksz * 2, oh, ow] {
            return Err(KernelError::invalid(format!(
                "DeformConv: offset {os:?} should be [{n}, {}, {oh}, {ow}]",
                og * ksz * 2
            )));
        }
        let mask = ctx.opt_input(4)?;
        if mask.is_some_and(|t| t.shape() != [n, og * ksz, oh, ow]) {
            return Err(KernelError::invalid("DeformConv: mask shape does not fit"));
        }
        let bias = ctx.opt_input(3)?.map(|t| t.to_f64_vec()).transpose()?;
        if bias.as_ref().is_some_and(|b| b.len() != m) {
            return Err(KernelError::invalid("DeformConv: B must have M values"));
        }
        let xv: Vec<f64> = x.as_slice::<T>()?.iter().map(|v| v.to_f64()).collect();
        let wv: Vec<f64> = wt.as_slice::<T>()?.iter().map(|v| v.to_f64()).collect();
        let ov = off.to_f64_vec()?;
        let mv = mask.map(|t| t.to_f64_vec()).transpose()?;
        let osz = oh * ow;
        let (cg, mg, cpo) = (c / g, m / g, c / og);
        let rows = cg * ksz;
        let mut y = vec![0f64; n * m * osz];
        let mut col = vec![0f64; c * ksz * osz];
        for ni in 0..n {
            for ci in 0..c {
                let ogi = ci / cpo;
                let plane = &xv[(ni * c + ci) * h * w..][..h * w];
                for a in 0..kh {
                    for b in 0..kw {
                        let tap = (ogi * kh + a) * kw + b;
                        let oh_base = ((ni * og * ksz + tap) * 2) * osz;
                        let ow_base = oh_base + osz;
                        let dst = &mut col[((ci * kh + a) * kw + b) * osz..][..osz];
                        for i in 0..oh {
                            for j in 0..ow {
                                let p = i * ow + j;
                                let yy =
                                    (i * st[0] + a * dl[0]) as f64 - pd[0] as f64 + ov[oh_base + p];
                                let xx =
                                    (j * st[1] + b * dl[1]) as f64 - pd[1] as f64 + ov[ow_base + p];
                                let mk = mv
                                    .as_ref()
                                    .map_or(1.0, |mv| mv[(ni * og * ksz + tap) * osz + p]);
                                dst[p] = sample(plane, h, w, yy, xx) * mk;
                            }
                        }
                    }
                }
            }
            for gi in 0..g {
                let yo = &mut y[(ni * m + gi * mg) * osz..][..mg * osz];
                gemm(
                    mg,
                    rows,
                    osz,
                    1.0,
                    &wv[gi * mg * rows..],
                    Mat::row_major(rows),
                    &col[gi * rows * osz..],
                    Mat::row_major(osz),
                    0.0,
                    yo,
                    Mat::row_major(osz),
                )?;
                if let Some(bv) = &bias {
                    for (mi, row) in yo.chunks_mut(osz.max(1)).enumerate() {
                        row.iter_mut().for_each(|v| *v += bv[gi * mg + mi]);
                    }
                }
            }
        }
        let out = ctx.output::<T>(0, &[n, m, oh, ow])?;
        out.iter_mut()
            .zip(&y)
            .for_each(|(o, &v)| *o = T::from_f64(v));
        Ok(())
    }
}

impl Kernel for DeformConv {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        rge_kernels::dispatch_float!(dt, T => self.typed::<T>(ctx))
    }
}
