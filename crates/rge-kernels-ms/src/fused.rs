//! Fusions around the default domain's kernels: FusedConv (Conv + Z + activation), NhwcConv
//! (Conv on channels-last data), FusedGemm (Gemm + activation), FusedMatMul (MatMul with
//! transposes and a scale), and the com.microsoft copies of Trilu and GatherND.

use rge_ir::AttrMap;
use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Value};

use crate::inner::Inner;
use crate::util::{floats, permute, put_f32, value_f32, Activation};

/// The attributes of `names` the node has, for an inner kernel.
fn copy_attrs(init: &KernelInit<'_>, names: &[&str]) -> AttrMap {
    let mut m = AttrMap::default();
    for &n in names {
        if let Some(v) = init.attrs.get(n) {
            m.set(n, v.clone());
        }
    }
    m
}

const CONV: &[&str] = &[
    "auto_pad",
    "dilations",
    "group",
    "kernel_shape",
    "pads",
    "strides",
];

/// The inputs of the node, owned (the inner kernels take values).
fn owned_inputs(ctx: &KernelCtx<'_>, n: usize) -> Vec<Option<Value>> {
    (0..n).map(|i| ctx.value(i).map(|v| v.to_owned())).collect()
}

fn refs(v: &[Option<Value>]) -> Vec<Option<&Value>> {
    v.iter().map(Option::as_ref).collect()
}

struct FusedConv {
    conv: Inner,
    activation: Activation,
    channels_last: bool,
}

pub(crate) fn fused_conv(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let conv = Inner::new(
        init,
        "Conv",
        11,
        &copy_attrs(init, CONV),
        &init.input_types[..init.input_types.len().min(3)],
        1,
    )?;
    Ok(Box::new(FusedConv {
        conv,
        activation: Activation::from_init(init)?,
        channels_last: false,
    }))
}

pub(crate) fn nhwc_conv(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let conv = Inner::new(
        init,
        "Conv",
        11,
        &copy_attrs(init, CONV),
        &init.input_types[..init.input_types.len().min(3)],
        1,
    )?;
    Ok(Box::new(FusedConv {
        conv,
        activation: Activation::Identity,
        channels_last: true,
    }))
}

impl Kernel for FusedConv {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let mut ins = owned_inputs(ctx, ctx.input_count().min(3));
        if self.channels_last {
            // NHWC → NCHW for the Conv kernel, and back.
            let x = ctx.input(0)?;
            let r = x.rank();
            if r < 3 {
                return Err(KernelError::invalid(format!(
                    "X must have rank ≥ 3, got {:?}",
                    x.shape()
                )));
            }
            let perm: Vec<usize> = [0, r - 1].into_iter().chain(1..r - 1).collect();
            let (v, shape) = permute(&floats(&x, 0)?, x.shape(), &perm);
            ins[0] = Some(value_f32(&shape, v)?);
        }
        let y = self.conv.run1(&refs(&ins), ctx.threads())?;
        let mut shape = y.shape().to_vec();
        let mut out = floats(&y.view(), 0)?;
        if let Some(z) = ctx.opt_input(3)? {
            if z.shape() != shape.as_slice() {
                return Err(KernelError::invalid(format!(
                    "Z is {:?}; the convolution gives {shape:?}",
                    z.shape()
                )));
            }
            for (o, z) in out.iter_mut().zip(floats(&z, 3)?) {
                *o += z;
            }
        }
        self.activation.apply(&mut out);
        if self.channels_last {
            let r = shape.len();
            let perm: Vec<usize> = [0].into_iter().chain(2..r).chain([1]).collect();
            let (v, s) = permute(&out, &shape, &perm);
            out = v;
            shape = s;
        }
        put_f32(ctx, 0, &shape, out)
    }
}

struct FusedGemm {
    gemm: Inner,
    activation: Activation,
}

pub(crate) fn fused_gemm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let attrs = copy_attrs(init, &["alpha", "beta", "transA", "transB"]);
    Ok(Box::new(FusedGemm {
        gemm: Inner::new(init, "Gemm", 13, &attrs, init.input_types, 1)?,
        activation: Activation::from_init(init)?,
    }))
}

impl Kernel for FusedGemm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let ins = owned_inputs(ctx, ctx.input_count());
        let y = self.gemm.run1(&refs(&ins), ctx.threads())?;
        let mut out = floats(&y.view(), 0)?;
        self.activation.apply(&mut out);
        put_f32(ctx, 0, y.shape(), out)
    }
}

struct FusedMatMul {
    matmul: Inner,
    alpha: f32,
    trans_a: bool,
    trans_b: bool,
}

pub(crate) fn fused_matmul(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    for a in ["transBatchA", "transBatchB"] {
        if init.int_or(a, 0)? != 0 {
            return Err(KernelError::attr(a, "batch transposes are not supported"));
        }
    }
    Ok(Box::new(FusedMatMul {
        matmul: Inner::new(init, "MatMul", 13, &AttrMap::default(), init.input_types, 1)?,
        alpha: init.float_or("alpha", 1.0)?,
        trans_a: init.int_or("transA", 0)? != 0,
        trans_b: init.int_or("transB", 0)? != 0,
    }))
}

/// Swaps the last two dims (a 1-D tensor is left as it is).
fn transpose_last2(ctx: &KernelCtx<'_>, i: usize) -> KernelResult<Value> {
    let t = ctx.input(i)?;
    let r = t.rank();
    if r < 2 {
        return Ok(Value::Tensor(t.to_owned()));
    }
    let perm: Vec<usize> = (0..r - 2).chain([r - 1, r - 2]).collect();
    let (v, s) = permute(&floats(&t, i)?, t.shape(), &perm);
    value_f32(&s, v)
}

impl Kernel for FusedMatMul {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = if self.trans_a {
            transpose_last2(ctx, 0)?
        } else {
            ctx.value(0)
                .map(|v| v.to_owned())
                .ok_or_else(|| KernelError::invalid("A is missing"))?
        };
        let b = if self.trans_b {
            transpose_last2(ctx, 1)?
        } else {
            ctx.value(1)
                .map(|v| v.to_owned())
                .ok_or_else(|| KernelError::invalid("B is missing"))?
        };
        let y = self.matmul.run1(&[Some(&a), Some(&b)], ctx.threads())?;
        let mut out = floats(&y.view(), 0)?;
        if self.alpha != 1.0 {
            for v in &mut out {
                *v *= self.alpha;
            }
        }
        put_f32(ctx, 0, y.shape(), out)
    }
}

/// An op that is the default domain's op of `opset` under another name.
struct Same {
    inner: Inner,
}

pub(crate) fn trilu(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Same {
        inner: Inner::new(
            init,
            "Trilu",
            14,
            &copy_attrs(init, &["upper"]),
            init.input_types,
            1,
        )?,
    }))
}

pub(crate) fn gather_nd(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Same {
        inner: Inner::new(
            init,
            "GatherND",
            12,
            &AttrMap::default(),
            init.input_types,
            1,
        )?,
    }))
}

impl Kernel for Same {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let ins = owned_inputs(ctx, ctx.input_count());
        let y = self.inner.run1(&refs(&ins), ctx.threads())?;
        ctx.put(0, y)
    }
}
