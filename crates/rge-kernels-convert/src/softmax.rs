//! Softmax, LogSoftmax and Hardmax along `axis`. From opset 13 the op works along one axis
//! (default -1); before, the input is seen as 2-D [prod(dims before axis), prod(the rest)]
//! (default axis 1) and the op works along each row. Softmax subtracts the maximum first so
//! large inputs do not overflow; Hardmax marks the first maximum.

use num_traits::{Float, One, Zero};
use rge_kernels::{
    bf16, dispatch_float, f16, shape_util::normalize_axis, Kernel, KernelCtx, KernelInit,
    KernelResult,
};

use crate::num::{is_nan, Num};
use crate::plan::split3;
use crate::util::PAR_MIN;

/// A float element type and the type it computes in (f32 for the 16-bit floats).
pub trait FloatElem: Num {
    type C: Float + Send + Sync + std::iter::Sum;
    /// How the ONNX reference (numpy) sums this type along a row: `None` for f32/f64 (we
    /// compute in full precision), `Some(false)` for float16 (in f32, rounded once at the
    /// end), `Some(true)` for bfloat16 (each addition rounded to bfloat16).
    const NUMPY_SUM: Option<bool> = None;
    fn to_c(self) -> Self::C;
    fn from_c(c: Self::C) -> Self;
}

impl FloatElem for f32 {
    type C = f32;
    #[inline]
    fn to_c(self) -> f32 {
        self
    }
    #[inline]
    fn from_c(c: f32) -> Self {
        c
    }
}

impl FloatElem for f64 {
    type C = f64;
    #[inline]
    fn to_c(self) -> f64 {
        self
    }
    #[inline]
    fn from_c(c: f64) -> Self {
        c
    }
}

impl FloatElem for f16 {
    type C = f32;
    const NUMPY_SUM: Option<bool> = Some(false);
    #[inline]
    fn to_c(self) -> f32 {
        self.to_f32()
    }
    #[inline]
    fn from_c(c: f32) -> Self {
        f16::from_f32(c)
    }
}

impl FloatElem for bf16 {
    type C = f32;
    const NUMPY_SUM: Option<bool> = Some(true);
    #[inline]
    fn to_c(self) -> f32 {
        self.to_f32()
    }
    #[inline]
    fn from_c(c: f32) -> Self {
        bf16::from_f32(c)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Soft,
    LogSoft,
    Hard,
}

struct Softmax {
    mode: Mode,
    axis: i64,
    /// Opset < 13: coerce to 2-D at `axis`.
    coerce_2d: bool,
}

pub fn factory(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let mode = match init.op_type {
        "LogSoftmax" => Mode::LogSoft,
        "Hardmax" => Mode::Hard,
        _ => Mode::Soft,
    };
    let coerce_2d = init.opset < 13;
    Ok(Box::new(Softmax {
        mode,
        axis: init.int_or("axis", if coerce_2d { 1 } else { -1 })?,
        coerce_2d,
    }))
}

impl Kernel for Softmax {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let shape = x.shape();
        let (outer, len, inner) = if self.coerce_2d {
            // Axis may equal the rank here (every row one element).
            let r = shape.len() as i64;
            let a = if self.axis < 0 {
                self.axis + r
            } else {
                self.axis
            };
            if a < 0 || a > r {
                normalize_axis(self.axis, shape.len())?;
            }
            let a = a.clamp(0, r) as usize;
            (shape[..a].iter().product(), shape[a..].iter().product(), 1)
        } else {
            split3(shape, normalize_axis(self.axis, shape.len())?)
        };
        let mode = self.mode;
        let threads = ctx.threads();
        dispatch_float!(x.dtype(), T => {
            let src = x.as_slice::<T>()?;
            let dst = ctx.output::<T>(0, shape)?;
            run::<T>(src, dst, (outer, len, inner), mode, threads);
            Ok(())
        })
    }
}

fn run<T: FloatElem>(
    src: &[T],
    dst: &mut [T],
    (outer, len, inner): (usize, usize, usize),
    mode: Mode,
    threads: usize,
) {
    let block = len * inner;
    if block == 0 || outer == 0 {
        return;
    }
    let one = |s: &[T], d: &mut [T]| {
        if let (Some(rounded), true) = (T::NUMPY_SUM, mode != Mode::Hard) {
            stepwise16::<T>(s, d, len, inner, mode, rounded);
        } else if inner == 1 {
            row::<T>(s, d, mode);
        } else {
            strided::<T>(s, d, len, inner, mode);
        }
    };
    if threads > 1 && src.len() >= PAR_MIN && outer > 1 {
        use rayon::prelude::*;
        dst.par_chunks_mut(block)
            .zip(src.par_chunks(block))
            .for_each(|(d, s)| one(s, d));
    } else {
        for (d, s) in dst.chunks_mut(block).zip(src.chunks(block)) {
            one(s, d);
        }
    }
}

/// One contiguous row.
fn row<T: FloatElem>(s: &[T], d: &mut [T], mode: Mode) {
    if mode == Mode::Hard {
        let mut best = 0;
        for (j, &v) in s.iter().enumerate().skip(1) {
            let b = s[best];
            if !is_nan(b) && (is_nan(v) || v > b) {
                best = j;
            }
        }
        for (j, o) in d.iter_mut().enumerate() {
            *o = if j == best { T::ONE } else { T::ZERO };
        }
        return;
    }
    let m = s
        .iter()
        .map(|v| v.to_c())
        .fold(T::C::neg_infinity(), |a, b| {
            if b > a || b.is_nan() {
                b
            } else {
                a
            }
        });
    let mut sum = T::C::zero();
    for (o, &v) in d.iter_mut().zip(s) {
        let e = (v.to_c() - m).exp();
        sum = sum + e;
        if mode == Mode::Soft {
            *o = T::from_c(e);
        }
    }
    match mode {
        Mode::Soft => {
            if std::mem::size_of::<T>() == std::mem::size_of::<T::C>() {
                let inv = T::C::one() / sum;
                for o in d.iter_mut() {
                    *o = T::from_c(o.to_c() * inv);
                }
            } else {
                // 16-bit outputs: divide the unrounded exponentials.
                for (o, &v) in d.iter_mut().zip(s) {
                    *o = T::from_c((v.to_c() - m).exp() / sum);
                }
            }
        }
        Mode::LogSoft => {
            let ls = sum.ln();
            for (o, &v) in d.iter_mut().zip(s) {
                *o = T::from_c(v.to_c() - m - ls);
            }
        }
        Mode::Hard => {}
    }
}

/// One [len, inner] block, working along len for every inner position at once.
fn strided<T: FloatElem>(s: &[T], d: &mut [T], len: usize, inner: usize, mode: Mode) {
    if mode == Mode::Hard {
        let mut best: Vec<usize> = vec![0; inner];
        for j in 1..len {
            for (k, b) in best.iter_mut().enumerate() {
                let (v, bv) = (s[j * inner + k], s[*b * inner + k]);
                if !is_nan(bv) && (is_nan(v) || v > bv) {
                    *b = j;
                }
            }
        }
        d.fill(T::ZERO);
        for (k, &b) in best.iter().enumerate() {
            d[b * inner + k] = T::ONE;
        }
        return;
    }
    let mut m = vec![T::C::neg_infinity(); inner];
    for r in s.chunks(inner) {
        for (a, &v) in m.iter_mut().zip(r) {
            let v = v.to_c();
            if v > *a || v.is_nan() {
                *a = v;
            }
        }
    }
    let mut sum = vec![T::C::zero(); inner];
    for r in s.chunks(inner) {
        for ((a, &v), &mx) in sum.iter_mut().zip(r).zip(&m) {
            *a = *a + (v.to_c() - mx).exp();
        }
    }
    if mode == Mode::LogSoft {
        for a in sum.iter_mut() {
            *a = a.ln();
        }
    }
    for (ro, ri) in d.chunks_mut(inner).zip(s.chunks(inner)) {
        for (((o, &v), &mx), &sm) in ro.iter_mut().zip(ri).zip(&m).zip(&sum) {
            let t = v.to_c() - mx;
            *o = T::from_c(if mode == Mode::Soft {
                t.exp() / sm
            } else {
                t - sm
            });
        }
    }
}

/// Softmax / LogSoftmax of 16-bit floats the way the ONNX reference computes them with numpy:
/// every step (x - max, exp, the division, the log) rounded to the type, the sum in f32
/// (float16 along the last axis) or rounded at each addition (bfloat16, or float16 along an
/// outer axis). Matching those roundings keeps results within the test tolerance, which is
/// finer than these types' precision.
fn stepwise16<T: FloatElem>(
    s: &[T],
    d: &mut [T],
    len: usize,
    inner: usize,
    mode: Mode,
    rounded_sum: bool,
) {
    let rounded_sum = rounded_sum || inner > 1;
    let mut col: Vec<T> = Vec::with_capacity(len);
    for k in 0..inner {
        col.clear();
        col.extend((0..len).map(|j| s[j * inner + k]));
        let m = col
            .iter()
            .map(|v| v.to_c())
            .fold(T::C::neg_infinity(), |a, b| {
                if b > a || b.is_nan() {
                    b
                } else {
                    a
                }
            });
        for v in col.iter_mut() {
            let t = T::from_c(v.to_c() - m);
            *v = T::from_c(t.to_c().exp());
        }
        let sum = if rounded_sum {
            col.iter()
                .fold(T::ZERO, |a, &e| T::from_c(a.to_c() + e.to_c()))
                .to_c()
        } else {
            T::from_c(col.iter().fold(T::C::zero(), |a, &e| a + e.to_c())).to_c()
        };
        for (j, &e) in col.iter().enumerate() {
            let y = T::from_c(e.to_c() / sum);
            d[j * inner + k] = if mode == Mode::LogSoft {
                T::from_c(y.to_c().ln())
            } else {
                y
            };
        }
    }
}
