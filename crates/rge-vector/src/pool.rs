//! MaxPool and AveragePool over 2-D NCHW f32 tensors (any kernel, strides, pads, auto_pad,
//! ceil_mode; MaxPool also dilations), GlobalAveragePool and GlobalMaxPool (any rank). Each
//! (n, c) plane is one task; a pooled row is built tap by tap over its valid output range, so
//! the padding costs no test in the inner loop (MaxPool first takes the max of its window's
//! rows). MaxPool's Indices output, other ranks and dtypes run the `cpu` engine's kernel.

use rge_kernels::{
    DType, Kernel, KernelCtx, KernelDef, KernelError, KernelFactory, KernelInit, KernelRegistry,
    KernelResult, KernelSet, PortDef, TypeSet,
};
use rge_kernels_nn::{Geometry, WindowAttrs, WindowTaps};

use crate::elementwise::fallback;
use crate::rows::for_rows;
use crate::simd::{self, Isa, Reduce};

struct Pool {
    win: WindowAttrs,
    /// None: max; Some(include_pad): average.
    avg: Option<bool>,
    fallback: Box<dyn Kernel>,
}

/// The output columns `[lo, hi)` whose tap `t` lies inside the row (`ow·s - pb + t·dil` in
/// `[0, w)`).
fn col_range(t: usize, g: &Geometry, ow: usize) -> (usize, usize) {
    let (s, pb, w) = (
        g.strides[1] as i64,
        g.pads_begin[1] as i64,
        g.input[1] as i64,
    );
    let off = (t * g.dilations[1]) as i64 - pb;
    // ow·s + off >= 0  and  ow·s + off < w
    let lo = if off >= 0 { 0 } else { (-off + s - 1) / s };
    let hi = if w - off <= 0 {
        0
    } else {
        (w - off + s - 1) / s
    };
    (lo.min(ow as i64) as usize, hi.clamp(0, ow as i64) as usize)
}

/// The larger of `v` and `x`; a NaN in either wins (the reference's comparison order).
#[inline(always)]
fn max_nan(v: f32, x: f32) -> f32 {
    let m = if x > v { x } else { v };
    if x.is_nan() {
        x
    } else {
        m
    }
}

impl Pool {
    fn run(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<bool> {
        let x = ctx.input(0)?;
        let indices = ctx.output_count() > 1 && ctx.output_used(1);
        if x.dtype() != DType::Float || x.rank() != 4 || indices {
            return Ok(false);
        }
        let shape = x.shape();
        let g = self.win.resolve(&shape[2..], None)?;
        if self.avg.is_some() && g.dilations.iter().any(|&d| d != 1) {
            return Ok(false);
        }
        let (h, w) = (shape[2], shape[3]);
        let (oh, ow) = (g.out[0], g.out[1]);
        let out_shape = [shape[0], shape[1], oh, ow];
        let xs = x.as_slice::<f32>()?;
        let avg = self.avg;
        let sw = g.strides[1];
        let rows: Vec<WindowTaps> = (0..oh).map(|o| g.taps(o, 0)).collect();
        let cols: Vec<WindowTaps> = (0..ow).map(|o| g.taps(o, 1)).collect();
        let ranges: Vec<(usize, usize)> = (0..g.kernel[1]).map(|t| col_range(t, &g, ow)).collect();
        let out = ctx.output::<f32>(0, &out_shape)?;
        // A strided row is split into its `sw` phases (`x[p], x[p + sw], …`), so that every tap
        // reads a contiguous run and the loops below vectorize.
        let pw = w.div_ceil(sw);
        for_rows(ctx.threads(), out, oh * ow, |p, y| {
            let plane = &xs[p * h * w..][..h * w];
            let mut phases = vec![0.0f32; if sw > 1 { sw * pw } else { 0 }];
            let mut vmax = vec![0.0f32; if avg.is_none() { w } else { 0 }];
            for (r, yr) in y.chunks_mut(ow).enumerate() {
                let rt = rows[r];
                yr.fill(if avg.is_some() {
                    0.0
                } else {
                    f32::NEG_INFINITY
                });
                // MaxPool: the rows' elementwise max first (exact in any order), so the
                // strided split and the column taps run once per output row, not per tap row.
                let vertical = avg.is_none() && rt.end > rt.first + 1;
                if vertical {
                    let row = |kh: usize| {
                        let ih = (r * g.strides[0] + kh * g.dilations[0]) - g.pads_begin[0];
                        &plane[ih * w..][..w]
                    };
                    vmax.copy_from_slice(row(rt.first));
                    for kh in rt.first + 1..rt.end {
                        for (v, &x) in vmax.iter_mut().zip(row(kh)) {
                            *v = max_nan(*v, x);
                        }
                    }
                }
                let taps = if vertical { 0..1 } else { rt.first..rt.end };
                for kh in taps {
                    let xrow = if vertical {
                        &vmax[..]
                    } else {
                        let ih = (r * g.strides[0] + kh * g.dilations[0]) - g.pads_begin[0];
                        &plane[ih * w..][..w]
                    };
                    if sw > 1 {
                        // One strided pass per phase (a division per element cost most of a
                        // 3×3 stride-2 pool: 2.6 ms on ResNet's 64×112×112).
                        for (q, dst) in phases.chunks_exact_mut(pw).enumerate() {
                            for (d, &v) in dst.iter_mut().zip(xrow.iter().skip(q).step_by(sw)) {
                                *d = v;
                            }
                        }
                    }
                    for (kw, &(lo, hi)) in ranges.iter().enumerate() {
                        if lo >= hi {
                            continue;
                        }
                        let base = (lo * sw + kw * g.dilations[1]) - g.pads_begin[1];
                        let dst = &mut yr[lo..hi];
                        // Element i reads x[base + i·sw]: phase base % sw from base / sw on.
                        let src = if sw > 1 {
                            &phases[(base % sw) * pw + base / sw..][..hi - lo]
                        } else {
                            &xrow[base..][..hi - lo]
                        };
                        if avg.is_some() {
                            for (v, &xv) in dst.iter_mut().zip(src) {
                                *v += xv;
                            }
                        } else {
                            // Branch-free (a data-dependent branch mispredicts half the time).
                            for (v, &xv) in dst.iter_mut().zip(src) {
                                *v = max_nan(*v, xv);
                            }
                        }
                    }
                }
                if avg.is_none() {
                    // A window with no input element gives 0, as the reference does.
                    for (v, ct) in yr.iter_mut().zip(&cols) {
                        if rt.first == rt.end || ct.first == ct.end {
                            *v = 0.0;
                        }
                    }
                }
                if let Some(include_pad) = avg {
                    for (v, ct) in yr.iter_mut().zip(&cols) {
                        let n = if include_pad {
                            rt.padded * ct.padded
                        } else {
                            (rt.end - rt.first) * (ct.end - ct.first)
                        };
                        *v /= n as f32;
                    }
                }
            }
        });
        Ok(true)
    }
}

impl Kernel for Pool {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if self.run(ctx)? {
            Ok(())
        } else {
            self.fallback.compute(ctx)
        }
    }
}

/// GlobalAveragePool / GlobalMaxPool: one SIMD reduction per (n, c) plane.
struct GlobalPool {
    max: bool,
    isa: Isa,
    fallback: Box<dyn Kernel>,
}

impl Kernel for GlobalPool {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        if x.dtype() != DType::Float || x.rank() < 3 || x.is_empty() {
            return self.fallback.compute(ctx);
        }
        let shape = x.shape();
        let sp: usize = shape[2..].iter().product();
        let mut out_shape = shape.to_vec();
        out_shape[2..].fill(1);
        let xs = x.as_slice::<f32>()?;
        let (isa, max) = (self.isa, self.max);
        let out = ctx.output::<f32>(0, &out_shape)?;
        let planes = out.len();
        let chunk = planes.div_ceil(ctx.threads().max(1) * 4).max(1);
        let th = if xs.len() >= crate::rows::PAR_MIN {
            ctx.threads()
        } else {
            1
        };
        for_rows(th, out, chunk, |ci, ys| {
            for (k, y) in ys.iter_mut().enumerate() {
                let p = ci * chunk + k;
                let plane = &xs[p * sp..][..sp];
                *y = if max {
                    simd::reduce(isa, Reduce::Max, plane)
                } else {
                    (simd::reduce(isa, Reduce::Sum, plane) as f64 / sp as f64) as f32
                };
            }
        });
        Ok(())
    }
}

fn create(init: &KernelInit<'_>, r: KernelFactory, isa: Isa) -> KernelResult<Box<dyn Kernel>> {
    let fb = fallback(r, init)?;
    // The cpu kernels' output-size rule (onnxruntime's: a short input still gives one window).
    let win = || -> KernelResult<WindowAttrs> {
        Ok(WindowAttrs {
            short_input_window: true,
            ..WindowAttrs::parse(init)?
        })
    };
    Ok(match init.op_type {
        "MaxPool" => Box::new(Pool {
            win: win()?,
            avg: None,
            fallback: fb,
        }),
        "AveragePool" => Box::new(Pool {
            win: win()?,
            avg: Some(init.int_or("count_include_pad", 0)? != 0),
            fallback: fb,
        }),
        "GlobalAveragePool" | "GlobalMaxPool" => Box::new(GlobalPool {
            max: init.op_type == "GlobalMaxPool",
            isa,
            fallback: fb,
        }),
        other => {
            return Err(KernelError::unsupported(format!(
                "`{other}` is not a vector pool"
            )))
        }
    })
}

/// The pooling ops.
pub const POOL_OPS: &[&str] = &[
    "MaxPool",
    "AveragePool",
    "GlobalAveragePool",
    "GlobalMaxPool",
];

/// Adds the pooling kernels.
pub fn add_kernels(set: &mut KernelSet, reg: &KernelRegistry, isa: Isa) -> KernelResult<()> {
    for &op in POOL_OPS {
        let r = reg.get("", op).ok_or_else(|| {
            KernelError::unsupported(format!("the reference kernels have no `{op}`"))
        })?;
        let mut def = KernelDef::new(format!("vector.{op}"), op, move |i| create(i, r, isa))
            .inputs(vec![PortDef::types(TypeSet::of(&[DType::Float]))]);
        if op != "MaxPool" {
            def = def.outputs(vec![PortDef::types(TypeSet::of(&[DType::Float]))]);
        } else {
            def = def.outputs(vec![
                PortDef::types(TypeSet::of(&[DType::Float])),
                PortDef::types(TypeSet::of(&[DType::Int64])),
            ]);
        }
        set.add(def);
    }
    Ok(())
}
