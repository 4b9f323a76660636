//! Region-of-interest pooling: RoiAlign (avg|max, half_pixel / output_half_pixel) and
//! MaxRoiPool (Caffe semantics: rounded ROI corners, floor/ceil bins).

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::util::Real;

struct RoiAlign {
    max: bool,
    half_pixel: bool,
    out_h: usize,
    out_w: usize,
    sampling_ratio: i64,
    scale: f64,
}

pub(crate) fn create_roi_align(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let max = match init.str_or("mode", "avg")? {
        "avg" => false,
        "max" => true,
        m => return Err(KernelError::attr("mode", format!("unknown mode {m}"))),
    };
    // Opset 10 had no attribute and behaved as output_half_pixel.
    let default_ctm = if init.opset >= 16 {
        "half_pixel"
    } else {
        "output_half_pixel"
    };
    let half_pixel = match init.str_or("coordinate_transformation_mode", default_ctm)? {
        "half_pixel" => true,
        "output_half_pixel" => false,
        m => {
            return Err(KernelError::attr(
                "coordinate_transformation_mode",
                format!("unknown mode {m}"),
            ))
        }
    };
    let oh = init.int_or("output_height", 1)?;
    let ow = init.int_or("output_width", 1)?;
    if oh < 1 || ow < 1 {
        return Err(KernelError::attr(
            "output_height",
            "output sizes must be ≥ 1",
        ));
    }
    Ok(Box::new(RoiAlign {
        max,
        half_pixel,
        out_h: oh as usize,
        out_w: ow as usize,
        sampling_ratio: init.int_or("sampling_ratio", 0)?,
        scale: init.float_or("spatial_scale", 1.0)? as f64,
    }))
}

/// One bilinear sample: four (offset, weight) pairs, all zero when outside the map.
fn bilinear(y: f64, x: f64, h: usize, w: usize) -> [(usize, f64); 4] {
    if y < -1.0 || y > h as f64 || x < -1.0 || x > w as f64 || h == 0 || w == 0 {
        return [(0, 0.0); 4];
    }
    let (mut y, mut x) = (y.max(0.0), x.max(0.0));
    let (mut yl, mut xl) = (y as usize, x as usize);
    let yh = if yl >= h - 1 {
        yl = h - 1;
        y = yl as f64;
        yl
    } else {
        yl + 1
    };
    let xh = if xl >= w - 1 {
        xl = w - 1;
        x = xl as f64;
        xl
    } else {
        xl + 1
    };
    let (ly, lx) = (y - yl as f64, x - xl as f64);
    let (hy, hx) = (1.0 - ly, 1.0 - lx);
    [
        (yl * w + xl, hy * hx),
        (yl * w + xh, hy * lx),
        (yh * w + xl, ly * hx),
        (yh * w + xh, ly * lx),
    ]
}

impl RoiAlign {
    fn typed<T: Real>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let rois = ctx.input(1)?.to_f64_vec()?;
        let bidx = ctx.input(2)?.to_i64_vec()?;
        let xs = x.shape();
        if xs.len() != 4 {
            return Err(KernelError::invalid("RoiAlign: X must be 4-D"));
        }
        let (n, c, h, w) = (xs[0], xs[1], xs[2], xs[3]);
        let nr = bidx.len();
        if rois.len() != nr * 4 {
            return Err(KernelError::invalid(
                "RoiAlign: rois must be [num_rois, 4] with one batch index each",
            ));
        }
        let xv = x.as_slice::<T>()?;
        let (ph_n, pw_n) = (self.out_h, self.out_w);
        let y = ctx.output::<T>(0, &[nr, c, ph_n, pw_n])?;
        let off = if self.half_pixel { 0.5 } else { 0.0 };
        for r in 0..nr {
            let bi = usize::try_from(bidx[r])
                .ok()
                .filter(|&b| b < n)
                .ok_or_else(|| {
                    KernelError::invalid(format!("RoiAlign: batch index {} out of range", bidx[r]))
                })?;
            let roi = &rois[r * 4..][..4];
            let (sw, sh) = (roi[0] * self.scale - off, roi[1] * self.scale - off);
            let (ew, eh) = (roi[2] * self.scale - off, roi[3] * self.scale - off);
            let (mut rw, mut rh) = (ew - sw, eh - sh);
            if !self.half_pixel {
                rw = rw.max(1.0);
                rh = rh.max(1.0);
            }
            let (bh, bw) = (rh / ph_n as f64, rw / pw_n as f64);
            let grid = |sz: f64, bins: usize| -> usize {
                if self.sampling_ratio > 0 {
                    self.sampling_ratio as usize
                } else {
                    (sz / bins as f64).ceil().max(0.0) as usize
                }
            };
            let (gh, gw) = (grid(rh, ph_n), grid(rw, pw_n));
            let count = (gh * gw).max(1) as f64;
            // Samples shared by all channels.
            let mut samples = Vec::with_capacity(ph_n * pw_n * gh * gw);
            for ph in 0..ph_n {
                for pw in 0..pw_n {
                    for iy in 0..gh {
                        let yy = sh + ph as f64 * bh + (iy as f64 + 0.5) * bh / gh as f64;
                        for ix in 0..gw {
                            let xx = sw + pw as f64 * bw + (ix as f64 + 0.5) * bw / gw as f64;
                            samples.push(bilinear(yy, xx, h, w));
                        }
                    }
                }
            }
            let per = gh * gw;
            for ci in 0..c {
                let plane = &xv[(bi * c + ci) * h * w..][..h * w];
                let yo = &mut y[(r * c + ci) * ph_n * pw_n..][..ph_n * pw_n];
                for (bin, o) in yo.iter_mut().enumerate() {
                    let ss = &samples[bin * per..][..per];
                    let v = if self.max {
                        ss.iter()
                            .map(|s| {
                                s.iter()
                                    .map(|&(p, wt)| wt * plane[p].to_f64())
                                    .fold(f64::NEG_INFINITY, f64::max)
                            })
                            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
                            .unwrap_or(0.0)
                    } else {
                        ss.iter()
                            .map(|s| s.iter().map(|&(p, wt)| wt * plane[p].to_f64()).sum::<f64>())
                            .sum::<f64>()
                            / count
                    };
                    *o = T::from_f64(v);
                }
            }
        }
        Ok(())
    }
}

impl Kernel for RoiAlign {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        rge_kernels::dispatch_float!(dt, T => self.typed::<T>(ctx))
    }
}

struct MaxRoiPool {
    ph: usize,
    pw: usize,
    scale: f64,
}

pub(crate) fn create_max_roi_pool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let ps = init
        .ints_opt("pooled_shape")?
        .ok_or_else(|| KernelError::attr("pooled_shape", "required but missing"))?;
    if ps.len() != 2 || ps.iter().any(|&v| v < 1) {
        return Err(KernelError::attr(
            "pooled_shape",
            "must be two positive sizes",
        ));
    }
    Ok(Box::new(MaxRoiPool {
        ph: ps[0] as usize,
        pw: ps[1] as usize,
        scale: init.float_or("spatial_scale", 1.0)? as f64,
    }))
}

impl MaxRoiPool {
    fn typed<T: Real>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let rois = ctx.input(1)?.to_f64_vec()?;
        let xs = x.shape();
        if xs.len() != 4 || rois.len() % 5 != 0 {
            return Err(KernelError::invalid(
                "MaxRoiPool: X must be 4-D and rois [num_rois, 5]",
            ));
        }
        let (n, c, h, w) = (xs[0], xs[1], xs[2], xs[3]);
        let nr = rois.len() / 5;
        let xv = x.as_slice::<T>()?;
        let (phn, pwn) = (self.ph, self.pw);
        let y = ctx.output::<T>(0, &[nr, c, phn, pwn])?;
        for r in 0..nr {
            let roi = &rois[r * 5..][..5];
            let bi = roi[0];
            if !(bi >= 0.0 && (bi as usize) < n) {
                return Err(KernelError::invalid(format!(
                    "MaxRoiPool: batch index {bi} out of range"
                )));
            }
            let bi = bi as usize;
            let sw = (roi[1] * self.scale).round() as i64;
            let sh = (roi[2] * self.scale).round() as i64;
            let ew = (roi[3] * self.scale).round() as i64;
            let eh = (roi[4] * self.scale).round() as i64;
            let rh = (eh - sh + 1).max(1) as f64;
            let rw = (ew - sw + 1).max(1) as f64;
            let (bh, bw) = (rh / phn as f64, rw / pwn as f64);
            for ci in 0..c {
                let plane = &xv[(bi * c + ci) * h * w..][..h * w];
                for ph in 0..phn {
                    let hs = ((ph as f64 * bh).floor() as i64 + sh).clamp(0, h as i64) as usize;
                    let he =
                        (((ph + 1) as f64 * bh).ceil() as i64 + sh).clamp(0, h as i64) as usize;
                    for pw in 0..pwn {
                        let ws = ((pw as f64 * bw).floor() as i64 + sw).clamp(0, w as i64) as usize;
                        let we =
                            (((pw + 1) as f64 * bw).ceil() as i64 + sw).clamp(0, w as i64) as usize;
                        let mut best: Option<T> = None;
                        for yy in hs..he {
                            for xx in ws..we {
                                let v = plane[yy * w + xx];
                                if best.is_none_or(|b| v > b) {
                                    best = Some(v);
                                }
                            }
                        }
                        y[((r * c + ci) * phn + ph) * pwn + pw] =
                            best.unwrap_or_else(|| T::from_f64(0.0));
                    }
                }
            }
        }
        Ok(())
    }
}

impl Kernel for MaxRoiPool {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        rge_kernels::dispatch_float!(dt, T => self.typed::<T>(ctx))
    }
}
