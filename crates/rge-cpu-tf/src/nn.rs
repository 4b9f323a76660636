//! nn kernels of the TF dialect: Conv2D, DepthwiseConv2dNative, AvgPool, MaxPool (ONNX Conv
//! and pools over NCHW, with TF's SAME/VALID/EXPLICIT padding as explicit pads), BiasAdd,
//! FusedBatchNorm(V3), Softmax, the activations and the matrix products.

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{
    DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, TensorRef,
};
use rge_ops::ops::tf::flag;
use rge_ops::ops::tf::window::{spatial4, DataFormat, Window};

use crate::steps::{attr_err, put, Steps};

const TO_NCHW: [i64; 4] = [0, 3, 1, 2];
const TO_NHWC: [i64; 4] = [0, 2, 3, 1];

/// Runs `f` over `x` as NCHW and returns the result in `format`.
fn in_nchw(
    steps: &Steps,
    format: DataFormat,
    x: TensorRef<'_>,
    threads: usize,
    f: impl FnOnce(TensorRef<'_>) -> KernelResult<Tensor>,
) -> KernelResult<Tensor> {
    match format {
        DataFormat::Nchw => f(x),
        DataFormat::Nhwc => {
            let xt = steps.transpose(x, &TO_NCHW, threads)?;
            let y = f(xt.view())?;
            steps.transpose(y.view(), &TO_NHWC, threads)
        }
    }
}

fn rank4<'a>(t: &TensorRef<'a>, what: &str) -> KernelResult<[usize; 4]> {
    match *t.shape() {
        [a, b, c, d] => Ok([a, b, c, d]),
        ref s => Err(KernelError::invalid(format!(
            "{what} must have rank 4, got {s:?}"
        ))),
    }
}

/// The ONNX pads [h_begin, w_begin, h_end, w_end] of `win` over an NCHW input and a kernel.
fn onnx_pads(win: &Window, x: [usize; 4], k: [usize; 2]) -> KernelResult<Vec<i64>> {
    let ah = win.axis(0, x[2] as i64, k[0] as i64).map_err(attr_err)?;
    let aw = win.axis(1, x[3] as i64, k[1] as i64).map_err(attr_err)?;
    Ok(vec![
        ah.pad_before,
        aw.pad_before,
        ah.pad_after,
        aw.pad_after,
    ])
}

// ---- convolutions ----

pub struct Conv2d {
    steps: Steps,
    win: Window,
    depthwise: bool,
}

pub fn create_conv2d(steps: &Steps, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let win = Window::from_attrs(init.attrs).map_err(attr_err)?;
    Ok(Box::new(Conv2d {
        steps: steps.clone(),
        win,
        depthwise: init.op_type == "DepthwiseConv2dNative",
    }))
}

impl Kernel for Conv2d {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let f = ctx.input(1)?;
        let bias = ctx.opt_input(2)?;
        let th = ctx.threads();
        rank4(&x, "x")?;
        let [kh, kw, fi, fo] = rank4(&f, "filter")?;
        let s = &self.steps;
        // ONNX weights [O, I/group, KH, KW].
        let (w, group) = if self.depthwise {
            let w = s.transpose(f, &[2, 3, 0, 1], th)?;
            (w.reshaped(&[fi * fo, 1, kh, kw])?, fi)
        } else {
            let c = x.shape()[self.win.format.axes().2];
            if fi == 0 || c % fi != 0 {
                return Err(KernelError::invalid(format!(
                    "the input's {c} channels are not a multiple of the filter's {fi}"
                )));
            }
            (s.transpose(f, &[3, 2, 0, 1], th)?, c / fi)
        };
        let y = in_nchw(s, self.win.format, x, th, |xn| {
            let pads = onnx_pads(&self.win, rank4(&xn, "x")?, [kh, kw])?;
            let attrs = vec![
                ("strides", AttrValue::ListInt(self.win.strides.to_vec())),
                ("dilations", AttrValue::ListInt(self.win.dilations.to_vec())),
                ("pads", AttrValue::ListInt(pads)),
                ("group", AttrValue::Int(group as i64)),
                (
                    "kernel_shape",
                    AttrValue::ListInt(vec![kh as i64, kw as i64]),
                ),
            ];
            s.run("Conv", attrs, &[Some(xn), Some(w.view()), bias], th)
        })?;
        put(ctx, 0, y)
    }
}

// ---- pools ----

pub struct Pool {
    steps: Steps,
    win: Window,
    ksize: [i64; 2],
    max: bool,
}

pub fn create_pool(steps: &Steps, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let win = Window::from_attrs(init.attrs).map_err(attr_err)?;
    let ksize = spatial4(init.attrs, "ksize", win.format, None).map_err(attr_err)?;
    Ok(Box::new(Pool {
        steps: steps.clone(),
        win,
        ksize,
        max: init.op_type == "MaxPool",
    }))
}

impl Kernel for Pool {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        rank4(&x, "x")?;
        let th = ctx.threads();
        let k = [self.ksize[0] as usize, self.ksize[1] as usize];
        let y = in_nchw(&self.steps, self.win.format, x, th, |xn| {
            let pads = onnx_pads(&self.win, rank4(&xn, "x")?, k)?;
            let mut attrs = vec![
                ("kernel_shape", AttrValue::ListInt(self.ksize.to_vec())),
                ("strides", AttrValue::ListInt(self.win.strides.to_vec())),
                ("pads", AttrValue::ListInt(pads)),
            ];
            // TF averages over the window's elements inside the input only.
            if !self.max {
                attrs.push(("count_include_pad", AttrValue::Int(0)));
            }
            let op = if self.max { "MaxPool" } else { "AveragePool" };
            self.steps.run(op, attrs, &[Some(xn)], th)
        })?;
        put(ctx, 0, y)
    }
}

// ---- BiasAdd ----

pub struct BiasAdd {
    steps: Steps,
    format: DataFormat,
}

pub fn create_bias_add(steps: &Steps, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(BiasAdd {
        steps: steps.clone(),
        format: DataFormat::from_attrs(init.attrs).map_err(attr_err)?,
    }))
}

impl Kernel for BiasAdd {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let b = ctx.input(1)?;
        let r = x.rank();
        let c = match self.format {
            DataFormat::Nchw if r >= 2 => x.shape()[1],
            _ if r >= 1 => x.shape()[r - 1],
            _ => 0,
        };
        if r < 2 || b.shape() != [c] {
            return Err(KernelError::invalid(format!(
                "bias {:?} must be 1-D with the channel dim of value {:?}",
                b.shape(),
                x.shape()
            )));
        }
        // NCHW: bias [C, 1, …] broadcasts over the spatial dims.
        let shaped;
        let b = if self.format == DataFormat::Nchw {
            let mut d = vec![1usize; r - 1];
            d[0] = c;
            shaped = b.to_owned().reshaped(&d)?;
            shaped.view()
        } else {
            b
        };
        let y = self
            .steps
            .run("Add", Vec::new(), &[Some(x), Some(b)], ctx.threads())?;
        put(ctx, 0, y)
    }
}

// ---- FusedBatchNorm ----

pub struct FusedBatchNorm {
    format: DataFormat,
    epsilon: f32,
    training: bool,
    avg_factor: f32,
}

pub fn create_fused_batch_norm(
    _steps: &Steps,
    init: &KernelInit<'_>,
) -> KernelResult<Box<dyn Kernel>> {
    let training = match init.attrs.get("is_training") {
        None => true,
        Some(_) => flag(init.attrs, &["is_training"]).map_err(attr_err)?,
    };
    Ok(Box::new(FusedBatchNorm {
        format: DataFormat::from_attrs(init.attrs).map_err(attr_err)?,
        epsilon: init.float_or("epsilon", 1e-4)?,
        training,
        avg_factor: init.float_or("exponential_avg_factor", 1.0)?,
    }))
}

impl Kernel for FusedBatchNorm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let [n, d1, d2, d3] = rank4(&x, "x")?;
        let (c, inner) = match self.format {
            DataFormat::Nhwc => (d3, 1),
            DataFormat::Nchw => (d1, d2 * d3),
        };
        let xs = x.as_slice::<f32>()?;
        let vec_in = |i: usize, what: &str| -> KernelResult<Vec<f32>> {
            match ctx.opt_input(i)? {
                Some(t) if t.len() == c => Ok(t.as_slice::<f32>()?.to_vec()),
                Some(t) if t.is_empty() && i >= 3 => Ok(Vec::new()),
                Some(t) => Err(KernelError::invalid(format!(
                    "{what} has {} values for {c} channels",
                    t.len()
                ))),
                None if i >= 3 => Ok(Vec::new()),
                None => Err(KernelError::invalid(format!("{what} is missing"))),
            }
        };
        let scale = vec_in(1, "scale")?;
        let offset = vec_in(2, "offset")?;
        let mean_in = vec_in(3, "mean")?;
        let var_in = vec_in(4, "variance")?;
        let chan = |k: usize| (k / inner) % c;
        let count = xs.len() / c.max(1);
        let (mean, var) = if self.training {
            let mut s = vec![0f64; c];
            let mut q = vec![0f64; c];
            for (k, &v) in xs.iter().enumerate() {
                s[chan(k)] += f64::from(v);
            }
            let m: Vec<f64> = s.iter().map(|&v| v / count.max(1) as f64).collect();
            for (k, &v) in xs.iter().enumerate() {
                let d = f64::from(v) - m[chan(k)];
                q[chan(k)] += d * d;
            }
            let var: Vec<f64> = q.iter().map(|&v| v / count.max(1) as f64).collect();
            (m, var)
        } else {
            if mean_in.len() != c || var_in.len() != c {
                return Err(KernelError::invalid(
                    "mean and variance need one value per channel when is_training is false",
                ));
            }
            (
                mean_in.iter().map(|&v| f64::from(v)).collect(),
                var_in.iter().map(|&v| f64::from(v)).collect(),
            )
        };
        let mul: Vec<f64> = (0..c)
            .map(|k| f64::from(scale[k]) / (var[k] + f64::from(self.epsilon)).sqrt())
            .collect();
        let y: Vec<f32> = xs
            .iter()
            .enumerate()
            .map(|(k, &v)| {
                let ch = chan(k);
                ((f64::from(v) - mean[ch]) * mul[ch] + f64::from(offset[ch])) as f32
            })
            .collect();
        let _ = n;
        put(ctx, 0, Tensor::from_vec(x.shape(), y)?)?;
        // Outputs 1, 2: the running statistics (training: batch statistics, the variance
        // Bessel-corrected, blended by exponential_avg_factor); 3…: the batch statistics.
        let f = f64::from(self.avg_factor);
        let unbiased = count as f64 / (count.max(2) - 1) as f64;
        let running = |k: usize, batch: f64, old: &[f32]| -> f32 {
            if !self.training {
                return batch as f32;
            }
            if old.len() == c && f != 1.0 {
                ((1.0 - f) * f64::from(old[k]) + f * batch) as f32
            } else {
                batch as f32
            }
        };
        let bm: Vec<f32> = (0..c).map(|k| running(k, mean[k], &mean_in)).collect();
        let bv: Vec<f32> = (0..c)
            .map(|k| {
                let v = if self.training {
                    var[k] * unbiased
                } else {
                    var[k]
                };
                running(k, v, &var_in)
            })
            .collect();
        let m32: Vec<f32> = mean.iter().map(|&v| v as f32).collect();
        let v32: Vec<f32> = var.iter().map(|&v| v as f32).collect();
        let outs = [bm, bv, m32.clone(), v32, m32];
        for (i, v) in outs.into_iter().enumerate() {
            if i + 1 < ctx.output_count() && ctx.output_used(i + 1) {
                put(ctx, i + 1, Tensor::from_vec(&[c], v)?)?;
            }
        }
        Ok(())
    }
}

// ---- Softmax and the activations ----

/// A TF op that is one ONNX op with fixed attributes (Relu, Elu, Selu, Softmax, Sqrt…).
pub struct Direct {
    step: crate::steps::Step,
}

pub fn direct(
    steps: &Steps,
    op: &str,
    attrs: Vec<(&str, AttrValue)>,
) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Direct {
        step: steps.kernel(op, attrs)?,
    }))
}

impl Kernel for Direct {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let inputs: Vec<Option<TensorRef<'_>>> = (0..ctx.input_count())
            .map(|i| ctx.opt_input(i))
            .collect::<KernelResult<_>>()?;
        let y = self.step.run(&inputs, ctx.threads())?;
        put(ctx, 0, y)
    }
}

pub fn create_activation(steps: &Steps, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    match init.op_type {
        "Relu" => direct(steps, "Relu", Vec::new()),
        "Elu" => direct(steps, "Elu", vec![("alpha", AttrValue::Float(1.0))]),
        // ONNX's defaults are TF's constants.
        "Selu" => direct(steps, "Selu", Vec::new()),
        "LeakyRelu" => direct(
            steps,
            "LeakyRelu",
            vec![("alpha", AttrValue::Float(init.float_or("alpha", 0.2)?))],
        ),
        "Softmax" => direct(steps, "Softmax", vec![("axis", AttrValue::Int(-1))]),
        "Relu6" => Ok(Box::new(Relu6)),
        other => Err(KernelError::unsupported(format!("no activation {other}"))),
    }
}

/// min(max(x, 0), 6).
pub struct Relu6;

impl Kernel for Relu6 {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let y = match x.dtype() {
            DType::Float => {
                let v: Vec<f32> = x
                    .as_slice::<f32>()?
                    .iter()
                    .map(|&v| v.clamp(0.0, 6.0))
                    .collect();
                Tensor::from_vec(x.shape(), v)?
            }
            DType::Double => {
                let v: Vec<f64> = x
                    .as_slice::<f64>()?
                    .iter()
                    .map(|&v| v.clamp(0.0, 6.0))
                    .collect();
                Tensor::from_vec(x.shape(), v)?
            }
            DType::Int32 => {
                let v: Vec<i32> = x
                    .as_slice::<i32>()?
                    .iter()
                    .map(|&v| v.clamp(0, 6))
                    .collect();
                Tensor::from_vec(x.shape(), v)?
            }
            DType::Int64 => {
                let v: Vec<i64> = x
                    .as_slice::<i64>()?
                    .iter()
                    .map(|&v| v.clamp(0, 6))
                    .collect();
                Tensor::from_vec(x.shape(), v)?
            }
            other => {
                return Err(KernelError::unsupported(format!(
                    "Relu6 of {} values",
                    other.name()
                )))
            }
        };
        put(ctx, 0, y)
    }
}

// ---- matrix products ----

pub struct MatMul {
    steps: Steps,
    ta: bool,
    tb: bool,
    batch: bool,
}

pub fn create_matmul(steps: &Steps, init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let a: &AttrMap = init.attrs;
    let batch = init.op_type.starts_with("BatchMatMul");
    let (ta, tb) = if batch {
        (flag(a, &["adj_x", "adj_x1"]), flag(a, &["adj_y", "adj_x2"]))
    } else {
        (
            flag(a, &["transpose_a", "transpose_x1"]),
            flag(a, &["transpose_b", "transpose_x2"]),
        )
    };
    Ok(Box::new(MatMul {
        steps: steps.clone(),
        ta: ta.map_err(attr_err)?,
        tb: tb.map_err(attr_err)?,
        batch,
    }))
}

impl MatMul {
    /// `t` with its last two dims swapped when `swap` (adj_x / adj_y; real types only).
    fn last_two(&self, t: TensorRef<'_>, swap: bool, th: usize) -> KernelResult<Option<Tensor>> {
        if !swap {
            return Ok(None);
        }
        let r = t.rank();
        if r < 2 {
            return Err(KernelError::invalid(format!(
                "an adjoint needs rank ≥ 2, got {:?}",
                t.shape()
            )));
        }
        let mut perm: Vec<i64> = (0..r as i64).collect();
        perm.swap(r - 2, r - 1);
        Ok(Some(self.steps.transpose(t, &perm, th)?))
    }
}

impl Kernel for MatMul {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        let th = ctx.threads();
        let y = if self.batch {
            let at = self.last_two(a, self.ta, th)?;
            let bt = self.last_two(b, self.tb, th)?;
            let a = at.as_ref().map_or(a, Tensor::view);
            let b = bt.as_ref().map_or(b, Tensor::view);
            self.steps
                .run("MatMul", Vec::new(), &[Some(a), Some(b)], th)?
        } else {
            if a.rank() != 2 || b.rank() != 2 {
                return Err(KernelError::invalid(format!(
                    "MatMul needs 2-D inputs, got {:?} and {:?}",
                    a.shape(),
                    b.shape()
                )));
            }
            let attrs = vec![
                ("transA", AttrValue::Int(self.ta.into())),
                ("transB", AttrValue::Int(self.tb.into())),
            ];
            self.steps.run("Gemm", attrs, &[Some(a), Some(b)], th)?
        };
        put(ctx, 0, y)
    }
}
