//! QuantizeLinear, DequantizeLinear and DynamicQuantizeLinear.
//!
//! Scale and zero point are per tensor (one element), per axis (1-D along `axis`) or blocked
//! (`block_size` > 0: same rank as x, `ceil(x.shape[axis] / block_size)` along axis).
//! Quantizing divides in the precision of x (or the `precision` attribute), rounds half to
//! even, adds the zero point and clamps to the output type's range; float8 outputs take
//! x / scale with the `saturate` rule and FLOAT4E2M1 takes x / scale + zero point, as the ONNX
//! reference does. Dequantizing computes (x - zero point) · scale in f32 and converts to the
//! scale's type (or `output_dtype`).

use rge_kernels::{
    bf16, dispatch_float, dispatch_types, f16, DType, Kernel, KernelCtx, KernelError, KernelInit,
    KernelResult, Tensor, TensorRef,
};

use crate::cast::{encode_slice, is_plain, widen, CastOpts};
use crate::num::Num;
use crate::small_float::{code_of_int, pack_codes, packed_int, packed_range, Minifloat};

/// How scale and zero point map onto x.
#[derive(Debug, Clone, Copy)]
enum Layout {
    PerTensor,
    /// Along an axis split as (outer, len, inner).
    PerAxis {
        dims: (usize, usize, usize),
    },
    Blocked {
        dims: (usize, usize, usize),
        block: usize,
        blocks: usize,
    },
}

fn layout(
    x_shape: &[usize],
    axis: i64,
    block_size: i64,
    scale: &TensorRef<'_>,
) -> KernelResult<Layout> {
    // One element is per tensor whatever the block size, as in the reference.
    if scale.len() == 1 {
        return Ok(Layout::PerTensor);
    }
    let rank = x_shape.len();
    let axis = rge_kernels::shape_util::normalize_axis(axis, rank)?;
    let dims = crate::plan::split3(x_shape, axis);
    if block_size <= 0 {
        if scale.rank() != 1 || scale.len() != dims.1 {
            return Err(KernelError::invalid(format!(
                "per-axis scale of shape {:?} does not fit axis {axis} of {x_shape:?}",
                scale.shape()
            )));
        }
        return Ok(Layout::PerAxis { dims });
    }
    let block = block_size as usize;
    let s = scale.shape();
    let fits = s.len() == rank
        && s.iter()
            .zip(x_shape)
            .enumerate()
            .all(|(d, (&a, &b))| d == axis || a == b)
        && s[axis] == dims.1.div_ceil(block);
    if !fits {
        return Err(KernelError::invalid(format!(
            "blocked scale of shape {s:?} does not fit {x_shape:?} with block {block} on axis {axis}"
        )));
    }
    Ok(Layout::Blocked {
        dims,
        block,
        blocks: s[axis],
    })
}

/// Calls `f(element, parameter index)` for every element of x in order.
fn for_each_param(n: usize, layout: Layout, mut f: impl FnMut(usize, usize)) {
    match layout {
        Layout::PerTensor => (0..n).for_each(|i| f(i, 0)),
        Layout::PerAxis {
            dims: (outer, len, inner),
        } => {
            let mut i = 0;
            for _ in 0..outer {
                for j in 0..len {
                    for _ in 0..inner {
                        f(i, j);
                        i += 1;
                    }
                }
            }
        }
        Layout::Blocked {
            dims: (outer, len, inner),
            block,
            blocks,
        } => {
            let mut i = 0;
            for o in 0..outer {
                for j in 0..len {
                    let row = (o * blocks + j / block) * inner;
                    for k in 0..inner {
                        f(i, row + k);
                        i += 1;
                    }
                }
            }
        }
    }
}

/// The values of any numeric tensor as f64 (small floats and packed integers decoded).
fn values_f64(t: &TensorRef<'_>) -> KernelResult<Vec<f64>> {
    match widen(t)? {
        Some(w) => w.view().to_f64_vec(),
        None => t.to_f64_vec(),
    }
}

fn dtype_attr(init: &KernelInit<'_>, name: &str) -> KernelResult<Option<DType>> {
    match init.int_or(name, 0)? {
        0 => Ok(None),
        v => i32::try_from(v)
            .ok()
            .and_then(DType::from_onnx)
            .map(Some)
            .ok_or_else(|| KernelError::attr(name, format!("{v} is not a data type"))),
    }
}

/// Rounds an f64 to the precision of a float type.
fn round_to(dt: DType, v: f64) -> f64 {
    match dt {
        DType::Float => v as f32 as f64,
        DType::Float16 => f16::from_f64(v).to_f64(),
        DType::Bfloat16 => bf16::from_f64(v).to_f64(),
        _ => v,
    }
}

/// numpy's result type of x / scale.
fn promote(x: DType, s: DType) -> DType {
    use DType as D;
    match (x, s) {
        (D::Double, _) | (_, D::Double) => D::Double,
        (D::Int32, D::Float) => D::Double,
        (D::Int32, other) => other,
        (a, b) if a == b => a,
        _ => D::Float,
    }
}

struct Quantize {
    axis: i64,
    block_size: i64,
    saturate: bool,
    output_dtype: Option<DType>,
    precision: Option<DType>,
}

pub fn quantize_factory(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Quantize {
        axis: init.int_or("axis", 1)?,
        block_size: init.int_or("block_size", 0)?,
        saturate: init.int_or("saturate", 1)? != 0,
        output_dtype: dtype_attr(init, "output_dtype")?,
        precision: dtype_attr(init, "precision")?,
    }))
}

impl Kernel for Quantize {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let scale = ctx.input(1)?;
        let zp = ctx.opt_input(2)?;
        let out_dt = match (zp, self.output_dtype) {
            (Some(z), Some(o)) if z.dtype() != o => {
                return Err(KernelError::invalid(format!(
                    "zero point is {} but output_dtype is {o}",
                    z.dtype()
                )))
            }
            (Some(z), _) => z.dtype(),
            (None, Some(o)) => o,
            (None, None) => DType::Uint8,
        };
        let lay = layout(x.shape(), self.axis, self.block_size, &scale)?;
        let s = scale.to_f64_vec()?;
        let z = match zp {
            Some(z) if z.len() != scale.len() => {
                return Err(KernelError::invalid(format!(
                    "zero point shape {:?} differs from scale shape {:?}",
                    z.shape(),
                    scale.shape()
                )))
            }
            Some(z) => values_f64(&z)?,
            None => vec![0.0; s.len()],
        };
        let prec = self
            .precision
            .unwrap_or_else(|| promote(x.dtype(), scale.dtype()));
        let n = x.len();
        let mut q = vec![0f64; n];
        let mut zs = vec![
            0f64;
            if out_dt == DType::Float4E2M1 || is_int(out_dt) {
                n
            } else {
                0
            }
        ];
        dispatch_types!(x.dtype(), T => {
            let xs = x.as_slice::<T>()?;
            for_each_param(n, lay, |i, p| {
                q[i] = round_to(prec, xs[i].to_f64() / s[p]);
                if let Some(zv) = zs.get_mut(i) {
                    *zv = z[p];
                }
            });
            Ok(())
        }; Float: f32, Double: f64, Float16: f16, Bfloat16: bf16, Int32: i32)?;
        if let Some((lo, hi)) = int_range(out_dt) {
            let ints = q
                .iter()
                .zip(&zs)
                .map(|(&v, &zv)| (v.round_ties_even() + zv).clamp(lo as f64, hi as f64) as i64);
            return write_ints(ctx, out_dt, x.shape(), ints);
        }
        let opts = CastOpts {
            saturate: self.saturate,
            ..CastOpts::default()
        };
        match out_dt {
            DType::Float4E2M1 => {
                for (v, zv) in q.iter_mut().zip(&zs) {
                    *v += zv;
                }
            }
            dt if Minifloat::of(dt).is_some() => {}
            other => return Err(KernelError::unsupported(format!("quantizing to {other}"))),
        }
        let dst = ctx.output_bytes(0, out_dt, x.shape())?;
        encode_slice(&q, out_dt, opts, dst)
    }
}

fn is_int(dt: DType) -> bool {
    int_range(dt).is_some()
}

/// The range of an integer quantized type.
fn int_range(dt: DType) -> Option<(i64, i64)> {
    match dt {
        DType::Uint8 => Some((0, 255)),
        DType::Int8 => Some((-128, 127)),
        DType::Uint16 => Some((0, 65535)),
        DType::Int16 => Some((-32768, 32767)),
        dt => packed_int(dt).map(|(bits, signed)| packed_range(bits, signed)),
    }
}

fn write_ints(
    ctx: &mut KernelCtx<'_>,
    dt: DType,
    shape: &[usize],
    ints: impl Iterator<Item = i64>,
) -> KernelResult<()> {
    if let Some((bits, _)) = packed_int(dt) {
        let dst = ctx.output_bytes(0, dt, shape)?;
        pack_codes(ints.map(|v| code_of_int(v, bits)), bits, dst);
        return Ok(());
    }
    dispatch_types!(dt, D => {
        let dst = ctx.output::<D>(0, shape)?;
        for (d, v) in dst.iter_mut().zip(ints) {
            *d = D::from_i64(v);
        }
        Ok(())
    }; Uint8: u8, Int8: i8, Uint16: u16, Int16: i16)
}

struct Dequantize {
    axis: i64,
    block_size: i64,
    output_dtype: Option<DType>,
}

pub fn dequantize_factory(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Dequantize {
        axis: init.int_or("axis", 1)?,
        block_size: init.int_or("block_size", 0)?,
        output_dtype: dtype_attr(init, "output_dtype")?,
    }))
}

impl Kernel for Dequantize {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let scale = ctx.input(1)?;
        let zp = ctx.opt_input(2)?;
        let xdt = x.dtype();
        if xdt.is_string()
            || !(xdt.is_integer() || xdt.is_float())
            || is_plain(xdt) && xdt.is_float()
        {
            return Err(KernelError::unsupported(format!("dequantizing {xdt}")));
        }
        let lay = layout(x.shape(), self.axis, self.block_size, &scale)?;
        let s = scale.to_f64_vec()?;
        let float_x = xdt.is_float();
        let z = match zp {
            Some(z) if z.len() != scale.len() => {
                return Err(KernelError::invalid(format!(
                    "zero point shape {:?} differs from scale shape {:?}",
                    z.shape(),
                    scale.shape()
                )))
            }
            Some(z) if !float_x => {
                if z.dtype() != xdt {
                    return Err(KernelError::invalid(format!(
                        "zero point is {} but x is {xdt}",
                        z.dtype()
                    )));
                }
                values_f64(&z)?
            }
            _ => vec![0.0; s.len()],
        };
        let xv = values_f64(&x)?;
        let n = x.len();
        let mut y = vec![0f32; n];
        for_each_param(n, lay, |i, p| {
            y[i] = (((xv[i] as f32) as f64 - z[p]) * s[p]) as f32;
        });
        let out_dt = self.output_dtype.unwrap_or(scale.dtype());
        dispatch_float!(out_dt, D => {
            let dst = ctx.output::<D>(0, x.shape())?;
            for (d, &v) in dst.iter_mut().zip(&y) {
                *d = D::from_f64(v as f64);
            }
            Ok(())
        })
    }
}

struct DynamicQuantize;

pub fn dynamic_factory(_init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(DynamicQuantize))
}

impl Kernel for DynamicQuantize {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let xs = x.as_slice::<f32>()?;
        let mut maxx = 0f32;
        let mut minx = 0f32;
        for &v in xs {
            if v > maxx || v.is_nan() {
                maxx = v;
            }
            if v < minx || v.is_nan() {
                minx = v;
            }
        }
        let range = if maxx == minx { 1.0 } else { maxx - minx };
        let scale = range / 255.0f32;
        let zp = (0.0f32 - minx / scale).clamp(0.0, 255.0).round_ties_even();
        let y = ctx.output::<u8>(0, x.shape())?;
        for (d, &v) in y.iter_mut().zip(xs) {
            *d = ((v / scale).round_ties_even() + zp).clamp(0.0, 255.0) as u8;
        }
        if ctx.output_count() > 1 {
            ctx.put(1, Tensor::scalar(scale))?;
        }
        if ctx.output_count() > 2 {
            ctx.put(2, Tensor::scalar(zp as u8))?;
        }
        Ok(())
    }
}
