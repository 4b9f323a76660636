//! The 8-bit quantized elementwise ops and pools of com.microsoft: QuantizeLinear and
//! DequantizeLinear (the default domain's kernels), QLinearAdd/Mul (onnxruntime's MLAS
//! arithmetic: scale ratios in float, round half to even), QLinearSigmoid/LeakyRelu (a
//! 256-entry table), QLinearConcat, QLinearGlobalAveragePool and QLinearAveragePool.

use rge_ir::AttrMap;
use rge_kernels::{
    DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, TensorRef, Value,
};

use crate::inner::Inner;
use crate::util::{permute, value_f32};

/// A scale and zero point of a uint8 or int8 tensor.
#[derive(Clone, Copy)]
pub(crate) struct QParams {
    pub scale: f32,
    pub zp: i32,
    pub signed: bool,
}

impl QParams {
    /// From scalar inputs `scale` and `zp` (absent: 0 of `dtype`).
    pub(crate) fn read(
        ctx: &KernelCtx<'_>,
        scale: usize,
        zp: usize,
        dtype: DType,
    ) -> KernelResult<Self> {
        let s = ctx.input(scale)?.to_f64_vec()?;
        let z = match ctx.opt_input(zp)? {
            Some(t) => t.to_i64_vec()?,
            None => vec![0],
        };
        let (&[s], &[z]) = (&s[..], &z[..]) else {
            return Err(KernelError::invalid(format!(
                "inputs {scale} and {zp} (scale, zero point) must be scalars"
            )));
        };
        Ok(QParams {
            scale: s as f32,
            zp: z as i32,
            signed: signed(dtype)?,
        })
    }

    pub(crate) fn range(self) -> (i32, i32) {
        if self.signed {
            (-128, 127)
        } else {
            (0, 255)
        }
    }

    /// Quantizes `v`: round half to even of v / scale, plus the zero point, saturated.
    pub(crate) fn quantize(self, v: f32) -> i32 {
        let (lo, hi) = self.range();
        ((v / self.scale).round_ties_even() as i32)
            .saturating_add(self.zp)
            .clamp(lo, hi)
    }

    /// Quantizes `v` as onnxruntime's pooling does: the zero point added before rounding half
    /// to even (12.5 + 125 rounds to 138 where 12.5 rounds to 12), saturated.
    pub(crate) fn quantize_zp_first(self, v: f32) -> i32 {
        let (lo, hi) = self.range();
        (v / self.scale + self.zp as f32)
            .round_ties_even()
            .clamp(lo as f32, hi as f32) as i32
    }

    /// Adds the zero point to an already scaled value and saturates.
    pub(crate) fn saturate(self, v: f32) -> i32 {
        let (lo, hi) = self.range();
        (v.round_ties_even() as i32)
            .saturating_add(self.zp)
            .clamp(lo, hi)
    }

    pub(crate) fn dequantize(self, q: i32) -> f32 {
        (q - self.zp) as f32 * self.scale
    }
}

pub(crate) fn signed(dt: DType) -> KernelResult<bool> {
    match dt {
        DType::Uint8 => Ok(false),
        DType::Int8 => Ok(true),
        other => Err(KernelError::unsupported(format!(
            "{other}: supported are uint8 and int8"
        ))),
    }
}

/// The 8-bit values of a tensor as i32.
pub(crate) fn q_values(t: &TensorRef<'_>) -> KernelResult<Vec<i32>> {
    Ok(match t.dtype() {
        DType::Uint8 => t.as_slice::<u8>()?.iter().map(|&v| v as i32).collect(),
        DType::Int8 => t.as_slice::<i8>()?.iter().map(|&v| v as i32).collect(),
        other => {
            return Err(KernelError::unsupported(format!(
                "{other}: supported are uint8 and int8"
            )))
        }
    })
}

/// An 8-bit tensor of `signed` type from i32 values (already in range).
pub(crate) fn q_tensor(shape: &[usize], v: Vec<i32>, signed: bool) -> KernelResult<Tensor> {
    if signed {
        Tensor::from_vec(shape, v.into_iter().map(|x| x as i8).collect::<Vec<_>>())
    } else {
        Tensor::from_vec(shape, v.into_iter().map(|x| x as u8).collect::<Vec<_>>())
    }
}

/// The default domain's QuantizeLinear / DequantizeLinear (opset 13: `axis`).
struct Delegate {
    inner: Inner,
}

fn delegate(init: &KernelInit<'_>, op: &str) -> KernelResult<Box<dyn Kernel>> {
    let mut attrs = AttrMap::default();
    if let Some(a) = init.attrs.get("axis") {
        attrs.set("axis", a.clone());
    }
    Ok(Box::new(Delegate {
        inner: Inner::new(init, op, 13, &attrs, init.input_types, 1)?,
    }))
}

pub(crate) fn quantize_linear(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    delegate(init, "QuantizeLinear")
}

pub(crate) fn dequantize_linear(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    delegate(init, "DequantizeLinear")
}

impl Kernel for Delegate {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let ins: Vec<Option<Value>> = (0..ctx.input_count())
            .map(|i| ctx.value(i).map(|v| v.to_owned()))
            .collect();
        let refs: Vec<Option<&Value>> = ins.iter().map(Option::as_ref).collect();
        let y = self.inner.run1(&refs, ctx.threads())?;
        ctx.put(0, y)
    }
}

/// The output shape of a broadcast and, per output element, its two source offsets.
type Broadcast = (Vec<usize>, Vec<(usize, usize)>);

/// Numpy broadcasting of two shapes: the output shape and, per output element, the two
/// source offsets.
pub(crate) fn broadcast_offsets(a: &[usize], b: &[usize]) -> KernelResult<Broadcast> {
    let r = a.len().max(b.len());
    let pad = |s: &[usize]| -> Vec<usize> {
        std::iter::repeat_n(1, r - s.len())
            .chain(s.iter().copied())
            .collect()
    };
    let (a, b) = (pad(a), pad(b));
    let mut out = Vec::with_capacity(r);
    for (x, y) in a.iter().zip(&b) {
        out.push(match (x, y) {
            (x, y) if x == y => *x,
            (1, y) => *y,
            (x, 1) => *x,
            _ => {
                return Err(KernelError::invalid(format!(
                    "shapes {a:?} and {b:?} do not broadcast"
                )))
            }
        });
    }
    let strides = |s: &[usize]| -> Vec<usize> {
        let mut st = vec![0; r];
        let mut acc = 1;
        for d in (0..r).rev() {
            st[d] = if s[d] == 1 { 0 } else { acc };
            acc *= s[d];
        }
        st
    };
    let (sa, sb) = (strides(&a), strides(&b));
    let total: usize = out.iter().product();
    let mut idx = vec![0usize; r];
    let mut offs = Vec::with_capacity(total);
    for _ in 0..total {
        let oa = idx.iter().zip(&sa).map(|(i, s)| i * s).sum();
        let ob = idx.iter().zip(&sb).map(|(i, s)| i * s).sum();
        offs.push((oa, ob));
        for d in (0..r).rev() {
            idx[d] += 1;
            if idx[d] < out[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Ok((out, offs))
}

struct QLinearBinary {
    mul: bool,
}

pub(crate) fn qlinear_add(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(QLinearBinary { mul: false }))
}

pub(crate) fn qlinear_mul(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(QLinearBinary { mul: true }))
}

impl Kernel for QLinearBinary {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (a_t, b_t) = (ctx.input(0)?, ctx.input(3)?);
        let dt = a_t.dtype();
        let qa = QParams::read(ctx, 1, 2, dt)?;
        let qb = QParams::read(ctx, 4, 5, dt)?;
        let qc = QParams::read(ctx, 6, 7, dt)?;
        let (shape, offs) = broadcast_offsets(a_t.shape(), b_t.shape())?;
        let (a, b) = (q_values(&a_t)?, q_values(&b_t)?);
        let out: Vec<i32> = if self.mul {
            let m = qa.scale * qb.scale / qc.scale;
            offs.iter()
                .map(|&(i, j)| qc.saturate(m * ((a[i] - qa.zp) * (b[j] - qb.zp)) as f32))
                .collect()
        } else {
            let (ra, rb) = (qa.scale / qc.scale, qb.scale / qc.scale);
            offs.iter()
                .map(|&(i, j)| qc.saturate(ra * (a[i] - qa.zp) as f32 + rb * (b[j] - qb.zp) as f32))
                .collect()
        };
        ctx.put(0, q_tensor(&shape, out, qc.signed)?)
    }
}

/// QLinearSigmoid and QLinearLeakyRelu: a table over the 256 input values.
struct QLinearTable {
    leaky: Option<f32>,
}

pub(crate) fn qlinear_sigmoid(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(QLinearTable { leaky: None }))
}

pub(crate) fn qlinear_leaky_relu(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(QLinearTable {
        leaky: Some(init.float_or("alpha", 0.01)?),
    }))
}

impl Kernel for QLinearTable {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x_t = ctx.input(0)?;
        let dt = x_t.dtype();
        let qx = QParams::read(ctx, 1, 2, dt)?;
        let qy = QParams::read(ctx, 3, 4, dt)?;
        let (lo, _) = qx.range();
        let table: Vec<i32> = (lo..lo + 256)
            .map(|q| {
                let v = qx.dequantize(q);
                let f = match self.leaky {
                    Some(alpha) => {
                        if v >= 0.0 {
                            v
                        } else {
                            alpha * v
                        }
                    }
                    None => 1.0 / (1.0 + (-v).exp()),
                };
                qy.quantize(f)
            })
            .collect();
        let out = q_values(&x_t)?
            .into_iter()
            .map(|q| table[(q - lo) as usize])
            .collect();
        ctx.put(0, q_tensor(x_t.shape(), out, qy.signed)?)
    }
}

struct QLinearConcat {
    axis: i64,
}

pub(crate) fn qlinear_concat(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(QLinearConcat {
        axis: init.int("axis")?,
    }))
}

impl Kernel for QLinearConcat {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(1)?.dtype();
        let qy = QParams::read(ctx, 0, 1, dt)?;
        let n = ctx.input_count().saturating_sub(2);
        if n == 0 || n % 3 != 0 {
            return Err(KernelError::invalid(format!("{n} inputs after Y's scale and zero point do not form (tensor, scale, zero point) triples")));
        }
        let first = ctx.input(2)?.shape().to_vec();
        let r = first.len() as i64;
        let axis = if self.axis < 0 {
            self.axis + r
        } else {
            self.axis
        };
        if !(0..r).contains(&axis) {
            return Err(KernelError::attr(
                "axis",
                format!("{} is out of range for rank {r}", self.axis),
            ));
        }
        let axis = axis as usize;
        let outer: usize = first[..axis].iter().product();
        let mut parts = Vec::with_capacity(n / 3);
        let mut total_axis = 0;
        for k in 0..n / 3 {
            let t = ctx.input(2 + 3 * k)?;
            let s = t.shape();
            if s.len() != first.len()
                || s.iter()
                    .enumerate()
                    .any(|(d, &v)| d != axis && v != first[d])
            {
                return Err(KernelError::invalid(format!(
                    "input {} is {s:?}; it must match {first:?} except on axis {axis}",
                    2 + 3 * k
                )));
            }
            let qx = QParams::read(ctx, 3 + 3 * k, 4 + 3 * k, t.dtype())?;
            let same = qx.scale == qy.scale && qx.zp == qy.zp;
            let v: Vec<i32> = q_values(&t)?
                .into_iter()
                .map(|q| {
                    if same {
                        q
                    } else {
                        qy.quantize(qx.dequantize(q))
                    }
                })
                .collect();
            let inner: usize = s[axis..].iter().product();
            total_axis += s[axis];
            parts.push((v, inner));
        }
        let mut out = Vec::new();
        for o in 0..outer {
            for (v, inner) in &parts {
                out.extend_from_slice(&v[o * inner..(o + 1) * inner]);
            }
        }
        let mut shape = first;
        shape[axis] = total_axis;
        ctx.put(0, q_tensor(&shape, out, qy.signed)?)
    }
}

struct QLinearGlobalAveragePool {
    channels_last: bool,
}

pub(crate) fn qlinear_global_average_pool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(QLinearGlobalAveragePool {
        channels_last: init.int_or("channels_last", 0)? != 0,
    }))
}

impl Kernel for QLinearGlobalAveragePool {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x_t = ctx.input(0)?;
        let shape = x_t.shape().to_vec();
        if shape.len() < 3 {
            return Err(KernelError::invalid(format!(
                "X must have rank ≥ 3, got {shape:?}"
            )));
        }
        let qx = QParams::read(ctx, 1, 2, x_t.dtype())?;
        let qy = QParams::read(ctx, 3, 4, x_t.dtype())?;
        let (n, c) = if self.channels_last {
            (shape[0], shape[shape.len() - 1])
        } else {
            (shape[0], shape[1])
        };
        let image: usize = shape.iter().product::<usize>() / (n * c).max(1);
        let x = q_values(&x_t)?;
        let scale = qx.scale / (qy.scale * image as f32);
        let mut out = Vec::with_capacity(n * c);
        for b in 0..n {
            for ch in 0..c {
                let sum: i64 = (0..image)
                    .map(|p| {
                        let at = if self.channels_last {
                            (b * image + p) * c + ch
                        } else {
                            (b * c + ch) * image + p
                        };
                        x[at] as i64
                    })
                    .sum();
                let acc = sum - qx.zp as i64 * image as i64;
                out.push(qy.saturate(acc as f32 * scale));
            }
        }
        let mut out_shape = shape.clone();
        let spatial = if self.channels_last {
            1..shape.len() - 1
        } else {
            2..shape.len()
        };
        for d in spatial {
            out_shape[d] = 1;
        }
        ctx.put(0, q_tensor(&out_shape, out, qy.signed)?)
    }
}

/// QLinearAveragePool: the float AveragePool of the default domain between a dequantize and a
/// quantize.
struct QLinearAveragePool {
    pool: Inner,
    channels_last: bool,
}

pub(crate) fn qlinear_average_pool(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let mut attrs = AttrMap::default();
    for n in [
        "auto_pad",
        "ceil_mode",
        "count_include_pad",
        "kernel_shape",
        "pads",
        "strides",
    ] {
        if let Some(v) = init.attrs.get(n) {
            attrs.set(n, v.clone());
        }
    }
    Ok(Box::new(QLinearAveragePool {
        pool: Inner::new(init, "AveragePool", 19, &attrs, &[Some(DType::Float)], 1)?,
        channels_last: init.int_or("channels_last", 0)? != 0,
    }))
}

impl Kernel for QLinearAveragePool {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x_t = ctx.input(0)?;
        let qx = QParams::read(ctx, 1, 2, x_t.dtype())?;
        let qy = QParams::read(ctx, 3, 4, x_t.dtype())?;
        let mut shape = x_t.shape().to_vec();
        let r = shape.len();
        if r < 3 {
            return Err(KernelError::invalid(format!(
                "X must have rank ≥ 3, got {shape:?}"
            )));
        }
        let mut x: Vec<f32> = q_values(&x_t)?
            .into_iter()
            .map(|q| qx.dequantize(q))
            .collect();
        if self.channels_last {
            let perm: Vec<usize> = [0, r - 1].into_iter().chain(1..r - 1).collect();
            (x, shape) = permute(&x, &shape, &perm);
        }
        let y = self
            .pool
            .run1(&[Some(&value_f32(&shape, x)?)], ctx.threads())?;
        let mut y_shape = y.shape().to_vec();
        let mut yv: Vec<f32> = y.as_slice::<f32>()?.to_vec();
        if self.channels_last {
            let perm: Vec<usize> = [0].into_iter().chain(2..r).chain([1]).collect();
            (yv, y_shape) = permute(&yv, &y_shape, &perm);
        }
        let out = yv.into_iter().map(|v| qy.quantize_zp_first(v)).collect();
        ctx.put(0, q_tensor(&y_shape, out, qy.signed)?)
    }
}
