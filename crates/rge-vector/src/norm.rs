//! Softmax and LogSoftmax along a contiguous axis, LayerNormalization and RMSNormalization,
//! BatchNormalization (inference), InstanceNormalization and GroupNormalization, on f32 rows
//! with the SIMD loops (statistics in f32 lanes with f64 totals); Softmax and LogSoftmax along
//! an inner axis too (column by column, in bands of columns). Forms they do not take (the
//! optional statistics outputs, training mode, other dtypes) run the `cpu` engine's kernel of
//! the node.

use rge_kernels::shape_util::normalize_axis;
use rge_kernels::{
    DType, Kernel, KernelCtx, KernelDef, KernelError, KernelFactory, KernelInit, KernelRegistry,
    KernelResult, KernelSet, PortDef, TypeSet,
};

use crate::elementwise::fallback;
use crate::rows::for_rows;
use crate::simd::{self, BinOp, Isa, Reduce, Src, UnaryOp};

struct Softmax {
    log: bool,
    axis: i64,
    coerce_2d: bool,
    isa: Isa,
    fallback: Box<dyn Kernel>,
}

impl Kernel for Softmax {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        if x.dtype() != DType::Float {
            return self.fallback.compute(ctx);
        }
        let shape = x.shape();
        let cols = if self.coerce_2d {
            let r = shape.len() as i64;
            let a = if self.axis < 0 {
                self.axis + r
            } else {
                self.axis
            };
            if !(0..=r).contains(&a) {
                return self.fallback.compute(ctx);
            }
            shape[a as usize..].iter().product::<usize>()
        } else {
            let a = normalize_axis(self.axis, shape.len())?;
            let inner = shape[a + 1..].iter().product::<usize>();
            if inner != 1 {
                let (outer, len) = (shape[..a].iter().product::<usize>(), shape[a]);
                let xs = x.as_slice::<f32>()?;
                let (isa, log, threads) = (self.isa, self.log, ctx.threads());
                let out = ctx.output::<f32>(0, shape)?;
                softmax_inner(isa, log, threads, xs, out, (outer, len, inner));
                return Ok(());
            }
            shape.get(a).copied().unwrap_or(1)
        };
        let xs = x.as_slice::<f32>()?;
        let (isa, log) = (self.isa, self.log);
        let out = ctx.output::<f32>(0, shape)?;
        for_rows(ctx.threads(), out, cols, |r, y| {
            simd::softmax(isa, &xs[r * cols..][..cols], y, log)
        });
        Ok(())
    }
}

/// Columns of an inner-axis softmax handled together: `len` rows of them stay in L1/L2 through
/// the passes.
const SOFTMAX_COLS: usize = 1024;

/// Softmax (or log-softmax) along an axis with `inner` values after it: each of the `outer`
/// blocks is `len` rows of `inner` columns, and every column is one softmax. Column bands are
/// the tasks; each runs the row loops on its band: the column max, `e^{x-max}` and its column
/// sum, then a scale (log: `x - max - ln Σ`).
fn softmax_inner(
    isa: Isa,
    log: bool,
    threads: usize,
    xs: &[f32],
    out: &mut [f32],
    (outer, len, inner): (usize, usize, usize),
) {
    if out.is_empty() {
        return;
    }
    let bands = inner.div_ceil(SOFTMAX_COLS);
    // Per (block, band): the band's slice of each of the block's rows, disjoint.
    let mut tasks: Vec<(usize, usize, Vec<&mut [f32]>)> = Vec::with_capacity(outer * bands);
    for (o, block) in out.chunks_mut(len * inner).enumerate() {
        let mut per_band: Vec<Vec<&mut [f32]>> =
            (0..bands).map(|_| Vec::with_capacity(len)).collect();
        for row in block.chunks_mut(inner) {
            let mut rest = row;
            for band in per_band.iter_mut() {
                let (head, tail) = rest.split_at_mut(rest.len().min(SOFTMAX_COLS));
                band.push(head);
                rest = tail;
            }
        }
        for (b, rows) in per_band.into_iter().enumerate() {
            tasks.push((o, b * SOFTMAX_COLS, rows));
        }
    }
    let run = |(o, c0, mut rows): (usize, usize, Vec<&mut [f32]>)| {
        let w = rows[0].len();
        let x_row = |l: usize| &xs[(o * len + l) * inner + c0..][..w];
        let mut max = vec![f32::NEG_INFINITY; w];
        for l in 0..len {
            simd::accumulate(isa, Reduce::Max, &mut max, x_row(l));
        }
        let mut sum = vec![0f32; w];
        for (l, y) in rows.iter_mut().enumerate() {
            simd::binary(isa, BinOp::Sub, Src::Slice(x_row(l)), Src::Slice(&max), y);
            if log {
                // Σ e^{x-max} from a scratch copy; y keeps x - max.
                let mut e = y.to_vec();
                simd::unary_in_place(isa, &UnaryOp::Exp, &mut e);
                simd::accumulate(isa, Reduce::Sum, &mut sum, &e);
            } else {
                simd::unary_in_place(isa, &UnaryOp::Exp, y);
                simd::accumulate(isa, Reduce::Sum, &mut sum, y);
            }
        }
        if log {
            simd::unary_in_place(isa, &UnaryOp::Log, &mut sum);
        }
        let op = if log { BinOp::Sub } else { BinOp::Div };
        for y in rows.iter_mut() {
            simd::binary_in_place(isa, op, Src::Slice(&sum), y);
        }
    };
    if threads > 1 && tasks.len() > 1 && xs.len() >= crate::rows::PAR_MIN {
        use rayon::prelude::*;
        tasks.into_par_iter().for_each(run);
    } else {
        tasks.into_iter().for_each(run);
    }
}

/// The scale or bias of a normalization over rows of `cols`: a row of `cols` values or one.
fn row_param<'a>(v: &'a [f32], cols: usize) -> Option<Src<'a>> {
    match v.len() {
        1 => Some(Src::Scalar(v[0])),
        n if n == cols => Some(Src::Slice(v)),
        _ => None,
    }
}

struct LayerNorm {
    axis: i64,
    epsilon: f64,
    rms: bool,
    isa: Isa,
    fallback: Box<dyn Kernel>,
}

impl LayerNorm {
    fn run(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<bool> {
        let x = ctx.input(0)?;
        let scale = ctx.input(1)?;
        let bias = if self.rms { None } else { ctx.opt_input(2)? };
        let stats_wanted = (1..ctx.output_count()).any(|i| ctx.output_used(i));
        if stats_wanted
            || x.dtype() != DType::Float
            || scale.dtype() != DType::Float
            || bias.is_some_and(|b| b.dtype() != DType::Float)
        {
            return Ok(false);
        }
        let shape = x.shape();
        let axis = normalize_axis(self.axis, shape.len())?;
        let cols: usize = shape[axis..].iter().product();
        let sv = scale.as_slice::<f32>()?;
        let bv = match bias {
            Some(b) => Some(b.as_slice::<f32>()?),
            None => None,
        };
        let (Some(g), b) = (row_param(sv, cols), bv.map(|b| row_param(b, cols))) else {
            return Ok(false);
        };
        let b = match b {
            None => Src::Scalar(0.0),
            Some(Some(b)) => b,
            Some(None) => return Ok(false),
        };
        let xs = x.as_slice::<f32>()?;
        let (isa, rms, eps) = (self.isa, self.rms, self.epsilon);
        let out = ctx.output::<f32>(0, shape)?;
        for_rows(ctx.threads(), out, cols, |r, y| {
            let row = &xs[r * cols..][..cols];
            let (m, v) = simd::mean_var(isa, row, rms);
            let inv = (1.0 / (v as f64 + eps).sqrt()) as f32;
            simd::scale_shift(isa, row, y, m, inv, g, b);
        });
        Ok(true)
    }
}

impl Kernel for LayerNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if self.run(ctx)? {
            Ok(())
        } else {
            self.fallback.compute(ctx)
        }
    }
}

/// (N, C, spatial size) of an NC… tensor.
fn nc_sp(shape: &[usize]) -> Option<(usize, usize, usize)> {
    if shape.len() < 2 {
        return None;
    }
    Some((shape[0], shape[1], shape[2..].iter().product()))
}

/// The f32 values of input `i`, or None when it is not f32.
fn f32_input<'a>(ctx: &KernelCtx<'a>, i: usize) -> KernelResult<Option<&'a [f32]>> {
    let t = ctx.input(i)?;
    if t.dtype() != DType::Float {
        return Ok(None);
    }
    Ok(Some(t.as_slice::<f32>()?))
}

/// BatchNormalization in inference form: `(x - mean)/√(var + ε)·scale + B` per channel.
struct BatchNorm {
    epsilon: f64,
    training: bool,
    isa: Isa,
    fallback: Box<dyn Kernel>,
}

impl BatchNorm {
    fn run(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<bool> {
        if self.training || ctx.input_count() < 5 {
            return Ok(false);
        }
        let x = ctx.input(0)?;
        let Some((_, c, sp)) = nc_sp(x.shape()) else {
            return Ok(false);
        };
        let mut p = [&[][..]; 5];
        for (i, slot) in p.iter_mut().enumerate() {
            match f32_input(ctx, i)? {
                Some(v) => *slot = v,
                None => return Ok(false),
            }
        }
        let [xs, scale, bias, mean, var] = p;
        if [scale, bias, mean, var].iter().any(|v| v.len() != c) {
            return Ok(false);
        }
        let (isa, eps) = (self.isa, self.epsilon);
        let out = ctx.output::<f32>(0, x.shape())?;
        for_rows(ctx.threads(), out, sp, |r, y| {
            let ch = r % c;
            let inv = (1.0 / (var[ch] as f64 + eps).sqrt()) as f32;
            let row = &xs[r * sp..][..sp];
            simd::scale_shift(
                isa,
                row,
                y,
                mean[ch],
                inv,
                Src::Scalar(scale[ch]),
                Src::Scalar(bias[ch]),
            );
        });
        Ok(true)
    }
}

impl Kernel for BatchNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if self.run(ctx)? {
            Ok(())
        } else {
            self.fallback.compute(ctx)
        }
    }
}

/// InstanceNormalization (`groups == 0`) and GroupNormalization: statistics per (n, group)
/// over the group's channels and the spatial dims, then a per-channel (or per-group) affine.
struct GroupNorm {
    /// 0: one group per channel (InstanceNormalization).
    groups: usize,
    /// GroupNormalization opset 21: scale and bias per channel.
    per_channel: bool,
    epsilon: f64,
    isa: Isa,
    fallback: Box<dyn Kernel>,
}

impl GroupNorm {
    fn run(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<bool> {
        let x = ctx.input(0)?;
        let (xs, scale, bias) = match (f32_input(ctx, 0)?, f32_input(ctx, 1)?, f32_input(ctx, 2)?) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => return Ok(false),
        };
        let Some((_, c, sp)) = nc_sp(x.shape()) else {
            return Ok(false);
        };
        if x.rank() < 3 && self.groups == 0 {
            return Ok(false);
        }
        let g = if self.groups == 0 { c } else { self.groups };
        if g == 0 || c % g != 0 {
            return Ok(false);
        }
        // The same reading of scale/bias as the reference (opset 18: per group; 21: per channel).
        let per_channel = if scale.len() == c && bias.len() == c && (self.per_channel || c != g) {
            true
        } else if scale.len() == g && bias.len() == g {
            false
        } else {
            return Ok(false);
        };
        let cg = c / g;
        let len = cg * sp;
        let (isa, eps) = (self.isa, self.epsilon);
        let out = ctx.output::<f32>(0, x.shape())?;
        for_rows(ctx.threads(), out, len, |r, y| {
            let row = &xs[r * len..][..len];
            let (m, v) = simd::mean_var(isa, row, false);
            let inv = (1.0 / (v as f64 + eps).sqrt()) as f32;
            let group = r % g;
            for k in 0..cg {
                let ch = group * cg + k;
                let p = if per_channel { ch } else { group };
                let seg = k * sp..(k + 1) * sp;
                simd::scale_shift(
                    isa,
                    &row[seg.clone()],
                    &mut y[seg],
                    m,
                    inv,
                    Src::Scalar(scale[p]),
                    Src::Scalar(bias[p]),
                );
            }
        });
        Ok(true)
    }
}

impl Kernel for GroupNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if self.run(ctx)? {
            Ok(())
        } else {
            self.fallback.compute(ctx)
        }
    }
}

fn ref_factory(reg: &KernelRegistry, op: &str) -> KernelResult<KernelFactory> {
    reg.get("", op).ok_or_else(|| {
        KernelError::unsupported(format!(
            "the reference kernels have no `{op}` to fall back to"
        ))
    })
}

fn create(init: &KernelInit<'_>, r: KernelFactory, isa: Isa) -> KernelResult<Box<dyn Kernel>> {
    let fb = fallback(r, init)?;
    let eps = init.float_or("epsilon", 1e-5)? as f64;
    Ok(match init.op_type {
        "Softmax" | "LogSoftmax" => {
            let coerce_2d = init.opset < 13;
            Box::new(Softmax {
                log: init.op_type == "LogSoftmax",
                axis: init.int_or("axis", if coerce_2d { 1 } else { -1 })?,
                coerce_2d,
                isa,
                fallback: fb,
            })
        }
        "LayerNormalization" | "RMSNormalization" => Box::new(LayerNorm {
            axis: init.int_or("axis", -1)?,
            epsilon: eps,
            rms: init.op_type == "RMSNormalization",
            isa,
            fallback: fb,
        }),
        "BatchNormalization" => {
            let training = if init.opset >= 14 {
                init.int_or("training_mode", 0)? != 0
            } else if init.opset <= 6 {
                init.int_or("is_test", 0)? == 0 && init.output_types.len() > 1
            } else {
                init.output_types.len() > 1
            };
            Box::new(BatchNorm {
                epsilon: eps,
                training,
                isa,
                fallback: fb,
            })
        }
        "InstanceNormalization" => Box::new(GroupNorm {
            groups: 0,
            per_channel: true,
            epsilon: eps,
            isa,
            fallback: fb,
        }),
        "GroupNormalization" => {
            let g = init.int("num_groups")?;
            if g < 1 {
                return Err(KernelError::attr("num_groups", "must be ≥ 1"));
            }
            Box::new(GroupNorm {
                groups: g as usize,
                per_channel: init.opset >= 21,
                epsilon: eps,
                isa,
                fallback: fb,
            })
        }
        other => {
            return Err(KernelError::unsupported(format!(
                "`{other}` is not a vector normalization"
            )))
        }
    })
}

/// The normalization ops.
pub const NORM_OPS: &[&str] = &[
    "Softmax",
    "LogSoftmax",
    "LayerNormalization",
    "RMSNormalization",
    "BatchNormalization",
    "InstanceNormalization",
    "GroupNormalization",
];

/// Adds the normalization kernels.
pub fn add_kernels(set: &mut KernelSet, reg: &KernelRegistry, isa: Isa) -> KernelResult<()> {
    for &op in NORM_OPS {
        let r = ref_factory(reg, op)?;
        let mut def = KernelDef::new(format!("vector.{op}"), op, move |i| create(i, r, isa))
            .inputs(vec![PortDef::types(TypeSet::of(&[DType::Float]))]);
        if op != "LayerNormalization" {
            // LayerNormalization's statistics outputs may be of another type: checked at run
            // time (used ones go to the reference).
            def = def.outputs(vec![PortDef::types(TypeSet::of(&[DType::Float]))]);
        }
        set.add(def);
    }
    Ok(())
}
