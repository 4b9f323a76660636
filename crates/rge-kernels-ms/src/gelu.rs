//! The GELU family and bias adds: Gelu, FastGelu, BiasGelu, QuickGelu, BiasAdd, BiasSplitGelu.
//! The erf forms run the default domain's Gelu kernel; the tanh and sigmoid forms are written
//! out (one line each).

use rge_ir::AttrValue;
use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::inner::{attrs, Inner};
use crate::util::{add_last, check_len, f32s, last_dim, opt_f32s, put_f32, value_f32};

/// Which member of the family a kernel is.
#[derive(Clone, Copy, PartialEq)]
enum Form {
    /// Gelu(X): erf.
    Erf,
    /// BiasGelu(A, B): erf of A + B.
    BiasErf,
    /// FastGelu(X, bias?): tanh approximation.
    Tanh,
    /// QuickGelu(X): x · sigmoid(alpha · x).
    Quick(f32),
    /// BiasAdd(X, bias, skip): X + bias + skip.
    BiasAdd,
    /// BiasSplitGelu(X, bias): left half · Gelu(right half) of X + bias.
    SplitErf,
}

struct GeluKernel {
    form: Form,
    /// The erf Gelu of the default domain, for the erf forms.
    erf: Option<Inner>,
}

fn create(init: &KernelInit<'_>, form: Form) -> KernelResult<Box<dyn Kernel>> {
    let erf = match form {
        Form::Erf | Form::BiasErf | Form::SplitErf => Some(Inner::new(
            init,
            "Gelu",
            20,
            &attrs(vec![("approximate", AttrValue::String("none".into()))]),
            &[Some(DType::Float)],
            1,
        )?),
        _ => None,
    };
    Ok(Box::new(GeluKernel { form, erf }))
}

pub(crate) fn gelu(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create(init, Form::Erf)
}
pub(crate) fn bias_gelu(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create(init, Form::BiasErf)
}
pub(crate) fn fast_gelu(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create(init, Form::Tanh)
}
pub(crate) fn quick_gelu(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let alpha = init.float_or("alpha", 1.702)?;
    create(init, Form::Quick(alpha))
}
pub(crate) fn bias_add(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create(init, Form::BiasAdd)
}
pub(crate) fn bias_split_gelu(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    create(init, Form::SplitErf)
}

impl GeluKernel {
    fn erf(&self, ctx: &KernelCtx<'_>, shape: &[usize], x: Vec<f32>) -> KernelResult<Vec<f32>> {
        let inner = self
            .erf
            .as_ref()
            .ok_or_else(|| KernelError::invalid("no erf kernel"))?;
        let v = value_f32(shape, x)?;
        Ok(inner
            .run1(&[Some(&v)], ctx.threads())?
            .as_slice::<f32>()?
            .to_vec())
    }
}

impl Kernel for GeluKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let shape = ctx.input(0)?.shape().to_vec();
        let n = last_dim(&shape);
        let mut x = f32s(ctx, 0)?;
        match self.form {
            Form::Erf => {
                let y = self.erf(ctx, &shape, x)?;
                put_f32(ctx, 0, &shape, y)
            }
            Form::BiasErf | Form::Tanh => {
                if let Some(b) = opt_f32s(ctx, 1)? {
                    check_len("the bias", &b, n)?;
                    add_last(&mut x, &b);
                }
                let y = if self.form == Form::BiasErf {
                    self.erf(ctx, &shape, x)?
                } else {
                    const C: f32 = 0.797_884_6; // sqrt(2 / pi)
                    x.iter()
                        .map(|&v| 0.5 * v * (1.0 + (C * (v + 0.044715 * v * v * v)).tanh()))
                        .collect()
                };
                put_f32(ctx, 0, &shape, y)
            }
            Form::Quick(alpha) => {
                for v in &mut x {
                    *v *= 1.0 / (1.0 + (-alpha * *v).exp());
                }
                put_f32(ctx, 0, &shape, x)
            }
            Form::BiasAdd => {
                let b = f32s(ctx, 1)?;
                check_len("the bias", &b, n)?;
                let skip = ctx.input(2)?;
                if skip.shape() != shape.as_slice() {
                    return Err(KernelError::invalid(format!(
                        "skip is {:?}; X is {shape:?}",
                        skip.shape()
                    )));
                }
                add_last(&mut x, &b);
                for (v, s) in x.iter_mut().zip(f32s(ctx, 2)?) {
                    *v += s;
                }
                put_f32(ctx, 0, &shape, x)
            }
            Form::SplitErf => {
                let b = f32s(ctx, 1)?;
                check_len("the bias", &b, n)?;
                if n % 2 != 0 {
                    return Err(KernelError::invalid(format!(
                        "the last dim {n} of X is odd"
                    )));
                }
                add_last(&mut x, &b);
                let half = n / 2;
                let (mut left, mut right) = (
                    Vec::with_capacity(x.len() / 2),
                    Vec::with_capacity(x.len() / 2),
                );
                for row in x.chunks_exact(n) {
                    left.extend_from_slice(&row[..half]);
                    right.extend_from_slice(&row[half..]);
                }
                let mut out_shape = shape.clone();
                if let Some(l) = out_shape.last_mut() {
                    *l = half;
                }
                let g = self.erf(ctx, &out_shape, right)?;
                for (l, g) in left.iter_mut().zip(g) {
                    *l *= g;
                }
                put_f32(ctx, 0, &out_shape, left)
            }
        }
    }
}
