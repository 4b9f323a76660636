//! GridSample (opsets 16, 20, 22: any spatial rank) and AffineGrid (20: 2-D and 3-D).

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::util::put_f64;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    Nearest,
    Linear,
    Cubic,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Padding {
    Zeros,
    Border,
    Reflection,
}

struct GridSample {
    mode: Mode,
    padding: Padding,
    align_corners: bool,
}

pub(crate) fn create_grid_sample(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let default_mode = if init.opset >= 20 {
        "linear"
    } else {
        "bilinear"
    };
    let mode = match init.str_or("mode", default_mode)? {
        "nearest" => Mode::Nearest,
        "linear" | "bilinear" => Mode::Linear,
        "cubic" | "bicubic" => Mode::Cubic,
        other => return Err(KernelError::attr("mode", format!("unknown mode '{other}'"))),
    };
    let padding = match init.str_or("padding_mode", "zeros")? {
        "zeros" => Padding::Zeros,
        "border" => Padding::Border,
        "reflection" => Padding::Reflection,
        other => {
            return Err(KernelError::attr(
                "padding_mode",
                format!("unknown padding mode '{other}'"),
            ))
        }
    };
    Ok(Box::new(GridSample {
        mode,
        padding,
        align_corners: init.int_or("align_corners", 0)? != 0,
    }))
}

/// Reflects `x` into `[lo, hi]` by folding at the borders.
fn reflect(x: f64, lo: f64, hi: f64) -> f64 {
    let range = hi - lo;
    if range <= 0.0 {
        return lo;
    }
    if x < lo {
        let dx = lo - x;
        let n = (dx / range).trunc();
        let r = dx - n * range;
        if n % 2.0 == 0.0 {
            lo + r
        } else {
            hi - r
        }
    } else if x > hi {
        let dx = x - hi;
        let n = (dx / range).trunc();
        let r = dx - n * range;
        if n % 2.0 == 0.0 {
            hi - r
        } else {
            lo + r
        }
    } else {
        x
    }
}

fn cubic_coeffs(t: f64) -> [f64; 4] {
    let a = -0.75;
    let x = t.abs();
    [
        ((a * (x + 1.0) - 5.0 * a) * (x + 1.0) + 8.0 * a) * (x + 1.0) - 4.0 * a,
        ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0,
        ((a + 2.0) * (1.0 - x) - (a + 3.0)) * (1.0 - x) * (1.0 - x) + 1.0,
        ((a * (2.0 - x) - 5.0 * a) * (2.0 - x) + 8.0 * a) * (2.0 - x) - 4.0 * a,
    ]
}

impl GridSample {
    /// The input index to read for integer position `i` along a dim of size `d`, or `None`
    /// for a zero (zeros padding out of range).
    fn pixel_index(&self, i: i64, d: usize, lo: f64, hi: f64) -> Option<usize> {
        let last = d as i64 - 1;
        match self.padding {
            Padding::Zeros => (0..=last).contains(&i).then_some(i as usize),
            Padding::Border => Some(i.clamp(0, last) as usize),
            Padding::Reflection => {
                Some((reflect(i as f64, lo, hi).trunc() as i64).clamp(0, last) as usize)
            }
        }
    }

    /// The taps (index or zero, weight) of one spatial dim for a grid coordinate `g`.
    fn taps(&self, g: f32, d: usize, taps: &mut Vec<(Option<usize>, f64)>) {
        taps.clear();
        let (lo, hi) = if self.align_corners {
            (0.0, d as f64 - 1.0)
        } else {
            (-0.5, d as f64 - 0.5)
        };
        // Denormalize in single precision, as the reference does.
        let len = d as f32;
        let mut x = if self.align_corners {
            (g + 1.0) / 2.0 * (len - 1.0)
        } else {
            ((g + 1.0) * len - 1.0) / 2.0
        };
        if self.mode == Mode::Nearest {
            x = x.round_ties_even();
        }
        let xf = x as f64;
        if xf < lo || xf > hi {
            match self.padding {
                Padding::Border => x = xf.clamp(0.0, d as f64 - 1.0) as f32,
                Padding::Reflection => x = reflect(xf, lo, hi) as f32,
                Padding::Zeros => {}
            }
        }
        if !x.is_finite() {
            taps.push((None, 0.0));
            return;
        }
        match self.mode {
            Mode::Nearest => {
                let i = x.trunc() as i64;
                taps.push((self.pixel_index(i, d, lo, hi), 1.0));
            }
            Mode::Linear => {
                let x0 = x.floor();
                let t = (x - x0) as f64;
                let i0 = x0 as i64;
                taps.push((self.pixel_index(i0, d, lo, hi), 1.0 - t));
                taps.push((self.pixel_index(i0 + 1, d, lo, hi), t));
            }
            Mode::Cubic => {
                let x0 = x.floor();
                let c = cubic_coeffs((x - x0) as f64);
                let i0 = x0 as i64;
                for (k, &w) in c.iter().enumerate() {
                    taps.push((self.pixel_index(i0 - 1 + k as i64, d, lo, hi), w));
                }
            }
        }
    }
}

impl Kernel for GridSample {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let grid = ctx.input(1)?;
        let xs = x.shape();
        let gs = grid.shape();
        if xs.len() < 3
            || gs.len() != xs.len()
            || gs[0] != xs[0]
            || gs[gs.len() - 1] != xs.len() - 2
        {
            return Err(KernelError::invalid(format!(
                "GridSample: X {xs:?} and grid {gs:?} do not match"
            )));
        }
        let k = xs.len() - 2;
        let (n, c) = (xs[0], xs[1]);
        let in_dims = &xs[2..];
        let out_dims = &gs[1..gs.len() - 1];
        let mut out_shape = vec![n, c];
        out_shape.extend_from_slice(out_dims);
        let in_sp: usize = in_dims.iter().product();
        let out_sp: usize = out_dims.iter().product();
        let data = x.to_f64_vec()?;
        let g = grid.to_f64_vec()?;
        let mut out = vec![0.0f64; n * c * out_sp];
        // Strides of the input's spatial dims.
        let mut in_strides = vec![1usize; k];
        for i in (0..k.saturating_sub(1)).rev() {
            in_strides[i] = in_strides[i + 1] * in_dims[i + 1];
        }
        let mut per_dim: Vec<Vec<(Option<usize>, f64)>> = vec![Vec::new(); k];
        // The combined taps (flat spatial offset, weight) of one output position.
        let mut combined: Vec<(usize, f64)> = Vec::new();
        for b in 0..n {
            for p in 0..out_sp {
                let gp = &g[(b * out_sp + p) * k..(b * out_sp + p + 1) * k];
                for (i, taps) in per_dim.iter_mut().enumerate() {
                    // The grid lists coordinates innermost (x) first.
                    self.taps(gp[k - 1 - i] as f32, in_dims[i], taps);
                }
                combined.clear();
                combined.push((0, 1.0));
                for (i, taps) in per_dim.iter().enumerate() {
                    let prev = std::mem::take(&mut combined);
                    for &(off, w) in &prev {
                        for &(t, tw) in taps {
                            if let Some(t) = t {
                                combined.push((off + t * in_strides[i], w * tw));
                            }
                        }
                    }
                }
                for ch in 0..c {
                    let plane = &data[(b * c + ch) * in_sp..(b * c + ch + 1) * in_sp];
                    let v: f64 = combined.iter().map(|&(o, w)| w * plane[o]).sum();
                    out[(b * c + ch) * out_sp + p] = v;
                }
            }
        }
        put_f64(ctx, 0, x.dtype(), &out_shape, &out)
    }
}

struct AffineGrid {
    align_corners: bool,
}

pub(crate) fn create_affine_grid(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(AffineGrid {
        align_corners: init.int_or("align_corners", 0)? != 0,
    }))
}

impl AffineGrid {
    /// The normalized base coordinates along a dim of `n` positions.
    fn base(&self, n: usize) -> Vec<f64> {
        if self.align_corners {
            if n <= 1 {
                return vec![-1.0; n];
            }
            let step = 2.0 / (n as f64 - 1.0);
            (0..n).map(|i| -1.0 + i as f64 * step).collect()
        } else {
            let step = 2.0 / n as f64;
            let start = -1.0 + step / 2.0;
            (0..n).map(|i| start + i as f64 * step).collect()
        }
    }
}

impl Kernel for AffineGrid {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let theta = ctx.input(0)?;
        let size = ctx.input(1)?.to_i64_vec()?;
        let size: Vec<usize> = size
            .iter()
            .map(|&v| usize::try_from(v))
            .collect::<Result<_, _>>()
            .map_err(|_| KernelError::invalid(format!("size {size:?} has a negative dim")))?;
        let k = match size.len() {
            4 => 2,
            5 => 3,
            l => {
                return Err(KernelError::invalid(format!(
                    "size must have 4 or 5 values, got {l}"
                )))
            }
        };
        let n = size[0];
        if theta.shape() != [n, k, k + 1] {
            return Err(KernelError::invalid(format!(
                "theta has shape {:?}, expected [{n}, {k}, {}]",
                theta.shape(),
                k + 1
            )));
        }
        let th = theta.to_f64_vec()?;
        let sp = &size[2..];
        // Coordinates per output dim: x follows the last dim, y the one before, z the first.
        let bases: Vec<Vec<f64>> = sp.iter().map(|&d| self.base(d)).collect();
        let count: usize = sp.iter().product();
        let mut out_shape = vec![n];
        out_shape.extend_from_slice(sp);
        out_shape.push(k);
        let mut out = Vec::with_capacity(n * count * k);
        let mut idx = vec![0usize; k];
        for b in 0..n {
            let t = &th[b * k * (k + 1)..(b + 1) * k * (k + 1)];
            idx.iter_mut().for_each(|v| *v = 0);
            for _ in 0..count {
                // Homogeneous point (x, y[, z], 1).
                let mut pt = [0.0f64; 4];
                for i in 0..k {
                    pt[i] = bases[k - 1 - i][idx[k - 1 - i]];
                }
                pt[k] = 1.0;
                for r in 0..k {
                    let row = &t[r * (k + 1)..(r + 1) * (k + 1)];
                    out.push(row.iter().zip(&pt).map(|(a, b)| a * b).sum());
                }
                for d in (0..k).rev() {
                    idx[d] += 1;
                    if idx[d] < sp[d] {
                        break;
                    }
                    idx[d] = 0;
                }
            }
        }
        put_f64(ctx, 0, theta.dtype(), &out_shape, &out)
    }
}
