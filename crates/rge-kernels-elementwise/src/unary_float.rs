//! Float-only unary ops (math functions and activations), generic over the compute type:
//! float16/bfloat16 compute in f32 and round back.

use rge_kernels::{
    dispatch_float, Kernel, KernelCtx, KernelError, KernelInit, KernelRegistryBuilder,
    KernelResult, TensorRef,
};

use crate::bcast::map;
use crate::num::{FloatElem, Real};

/// A float function with its attributes.
pub trait FloatFn: Send + Sync + 'static {
    fn apply<C: Real>(&self, x: C) -> C;
}

/// A unary float kernel: `y = f(x)`, same shape and dtype.
pub struct FloatUnary<F>(pub F);

impl<F: FloatFn> FloatUnary<F> {
    fn run<T: FloatElem>(&self, ctx: &mut KernelCtx<'_>, x: TensorRef<'_>) -> KernelResult<()> {
        let xs = x.as_slice::<T>()?;
        let out = ctx.output::<T>(0, x.shape())?;
        map(ctx.threads(), xs, out, |v| T::store(self.0.apply(v.load())));
        Ok(())
    }
}

impl<F: FloatFn> Kernel for FloatUnary<F> {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        dispatch_float!(x.dtype(), T => self.run::<T>(ctx, x))
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

#[inline]
fn c<C: Real>(v: f64) -> C {
    C::from_f64(v)
}

/// Declares a function struct with f64 parameters and its `apply` body.
macro_rules! float_fn {
    ($name:ident $(, $p:ident)* => |$s:ident, $x:ident| $body:expr) => {
        pub struct $name {
            $(pub $p: f64,)*
        }
        impl FloatFn for $name {
            #[inline]
            #[allow(unused_variables)]
            fn apply<C: Real>(&self, $x: C) -> C {
                let $s = self;
                $body
            }
        }
    };
}

float_fn!(Exp => |s, x| x.exp());
float_fn!(Log => |s, x| x.ln());
float_fn!(Sqrt => |s, x| x.sqrt());
float_fn!(Reciprocal => |s, x| x.recip());
float_fn!(Sin => |s, x| x.sin());
float_fn!(Cos => |s, x| x.cos());
float_fn!(Tan => |s, x| x.tan());
float_fn!(Asin => |s, x| x.asin());
float_fn!(Acos => |s, x| x.acos());
float_fn!(Atan => |s, x| x.atan());
float_fn!(Sinh => |s, x| x.sinh());
float_fn!(Cosh => |s, x| x.cosh());
float_fn!(Tanh => |s, x| x.tanh());
float_fn!(Asinh => |s, x| x.asinh());
float_fn!(Acosh => |s, x| x.acosh());
float_fn!(Atanh => |s, x| x.atanh());
float_fn!(Ceil => |s, x| x.ceil());
float_fn!(Floor => |s, x| x.floor());
float_fn!(Round => |s, x| x.round_even());
float_fn!(Erf => |s, x| x.erf());
float_fn!(Sigmoid => |s, x| sigmoid(x));
float_fn!(Softsign => |s, x| x / (C::one() + x.abs()));
float_fn!(Softplus => |s, x| softplus(x));
float_fn!(Mish => |s, x| x * softplus(x).tanh());
float_fn!(LeakyRelu, alpha => |s, x| if x < C::zero() { c::<C>(s.alpha) * x } else { x });
float_fn!(Elu, alpha => |s, x| if x > C::zero() { x } else { c::<C>(s.alpha) * x.exp_m1() });
float_fn!(Selu, alpha, gamma => |s, x| {
    let g = c::<C>(s.gamma);
    if x > C::zero() { g * x } else { g * (c::<C>(s.alpha) * x.exp_m1()) }
});
float_fn!(Celu, alpha => |s, x| {
    let a = c::<C>(s.alpha);
    x.max(C::zero()) + (a * (x / a).exp_m1()).min(C::zero())
});
float_fn!(HardSigmoid, alpha, beta => |s, x| {
    (c::<C>(s.alpha) * x + c::<C>(s.beta)).min(C::one()).max(C::zero())
});
float_fn!(HardSwish => |s, x| {
    x * (x / c::<C>(6.0) + c::<C>(0.5)).min(C::one()).max(C::zero())
});
float_fn!(ThresholdedRelu, alpha => |s, x| if x > c::<C>(s.alpha) { x } else { C::zero() });
float_fn!(Swish, alpha => |s, x| x * sigmoid(c::<C>(s.alpha) * x));
float_fn!(GeluErf => |s, x| {
    c::<C>(0.5) * x * (C::one() + (x * c::<C>(std::f64::consts::FRAC_1_SQRT_2)).erf())
});
float_fn!(GeluTanh => |s, x| {
    let k = c::<C>((2.0 / std::f64::consts::PI).sqrt());
    let inner = k * (x + c::<C>(0.044715) * x * x * x);
    c::<C>(0.5) * x * (C::one() + inner.tanh())
});
// Shrink on floats (the integer path is in unary_num).
float_fn!(Shrink, lambd, bias => |s, x| {
    if x < c::<C>(-s.lambd) {
        x + c::<C>(s.bias)
    } else if x > c::<C>(s.lambd) {
        x - c::<C>(s.bias)
    } else {
        C::zero()
    }
});

/// Logistic sigmoid, stable for large |x|.
#[inline]
pub fn sigmoid<C: Real>(x: C) -> C {
    if x >= C::zero() {
        C::one() / (C::one() + (-x).exp())
    } else {
        let e = x.exp();
        e / (C::one() + e)
    }
}

/// ln(1 + eˣ), stable for large |x|.
#[inline]
fn softplus<C: Real>(x: C) -> C {
    if x > C::zero() {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

fn boxed<F: FloatFn>(f: F) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(FloatUnary(f)))
}

fn attr(init: &KernelInit<'_>, name: &str, default: f32) -> KernelResult<f64> {
    Ok(init.float_or(name, default)? as f64)
}

/// Registers the float unary ops.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    b.register("", "Exp", |_| boxed(Exp {}))?;
    b.register("", "Log", |_| boxed(Log {}))?;
    b.register("", "Sqrt", |_| boxed(Sqrt {}))?;
    b.register("", "Reciprocal", |_| boxed(Reciprocal {}))?;
    b.register("", "Sin", |_| boxed(Sin {}))?;
    b.register("", "Cos", |_| boxed(Cos {}))?;
    b.register("", "Tan", |_| boxed(Tan {}))?;
    b.register("", "Asin", |_| boxed(Asin {}))?;
    b.register("", "Acos", |_| boxed(Acos {}))?;
    b.register("", "Atan", |_| boxed(Atan {}))?;
    b.register("", "Sinh", |_| boxed(Sinh {}))?;
    b.register("", "Cosh", |_| boxed(Cosh {}))?;
    b.register("", "Tanh", |_| boxed(Tanh {}))?;
    b.register("", "Asinh", |_| boxed(Asinh {}))?;
    b.register("", "Acosh", |_| boxed(Acosh {}))?;
    b.register("", "Atanh", |_| boxed(Atanh {}))?;
    b.register("", "Ceil", |_| boxed(Ceil {}))?;
    b.register("", "Floor", |_| boxed(Floor {}))?;
    b.register("", "Round", |_| boxed(Round {}))?;
    b.register("", "Erf", |_| boxed(Erf {}))?;
    b.register("", "Sigmoid", |_| boxed(Sigmoid {}))?;
    b.register("", "Softsign", |_| boxed(Softsign {}))?;
    b.register("", "Softplus", |_| boxed(Softplus {}))?;
    b.register("", "Mish", |_| boxed(Mish {}))?;
    b.register("", "HardSwish", |_| boxed(HardSwish {}))?;
    b.register("", "LeakyRelu", |i| {
        boxed(LeakyRelu {
            alpha: attr(i, "alpha", 0.01)?,
        })
    })?;
    b.register("", "Elu", |i| {
        boxed(Elu {
            alpha: attr(i, "alpha", 1.0)?,
        })
    })?;
    b.register("", "Selu", |i| {
        boxed(Selu {
            alpha: attr(i, "alpha", 1.673_263_2)?,
            gamma: attr(i, "gamma", 1.050_701)?,
        })
    })?;
    b.register("", "Celu", |i| {
        let alpha = attr(i, "alpha", 1.0)?;
        if alpha == 0.0 {
            return Err(KernelError::attr("alpha", "must not be 0"));
        }
        boxed(Celu { alpha })
    })?;
    b.register("", "HardSigmoid", |i| {
        boxed(HardSigmoid {
            alpha: attr(i, "alpha", 0.2)?,
            beta: attr(i, "beta", 0.5)?,
        })
    })?;
    b.register("", "ThresholdedRelu", |i| {
        boxed(ThresholdedRelu {
            alpha: attr(i, "alpha", 1.0)?,
        })
    })?;
    b.register("", "Swish", |i| {
        boxed(Swish {
            alpha: attr(i, "alpha", 1.0)?,
        })
    })?;
    b.register("", "Gelu", |i| match i.str_or("approximate", "none")? {
        "none" => boxed(GeluErf {}),
        "tanh" => boxed(GeluTanh {}),
        other => Err(KernelError::attr(
            "approximate",
            format!("must be 'none' or 'tanh', got '{other}'"),
        )),
    })?;
    Ok(())
}
