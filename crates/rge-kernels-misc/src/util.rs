//! Helpers shared by this crate's kernels: f64 round trips for the ops that compute in
//! double precision, and small attribute/input readers.

use rge_kernels::{bf16, f16, DType, Elem, KernelCtx, KernelError, KernelResult, TensorRef};

/// An element type written from an f64 result: floats round to nearest, integers round half
/// to even and saturate (numpy's `saturate_cast`).
pub(crate) trait FromF64: Elem {
    fn from_f64(v: f64) -> Self;
}

macro_rules! from_f64_float {
    ($($t:ty => $e:expr),*) => {
        $(impl FromF64 for $t {
            #[inline]
            fn from_f64(v: f64) -> Self {
                let f: fn(f64) -> $t = $e;
                f(v)
            }
        })*
    };
}

from_f64_float! {
    f32 => |v| v as f32,
    f64 => |v| v,
    f16 => f16::from_f64,
    bf16 => bf16::from_f64
}

macro_rules! from_f64_int {
    ($($t:ty),*) => {
        $(impl FromF64 for $t {
            #[inline]
            fn from_f64(v: f64) -> Self {
                // `as` saturates and maps NaN to 0.
                v.round_ties_even() as $t
            }
        })*
    };
}

from_f64_int!(i8, i16, i32, i64, u8, u16, u32, u64);

impl FromF64 for bool {
    #[inline]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
}

/// Writes `values` (f64) to output `i` as `dtype` with `shape`.
pub(crate) fn put_f64(
    ctx: &mut KernelCtx<'_>,
    i: usize,
    dtype: DType,
    shape: &[usize],
    values: &[f64],
) -> KernelResult<()> {
    fn go<T: FromF64>(
        ctx: &mut KernelCtx<'_>,
        i: usize,
        shape: &[usize],
        values: &[f64],
    ) -> KernelResult<()> {
        let out = ctx.output::<T>(i, shape)?;
        if out.len() != values.len() {
            return Err(KernelError::invalid("internal: result size mismatch"));
        }
        for (o, &v) in out.iter_mut().zip(values) {
            *o = T::from_f64(v);
        }
        Ok(())
    }
    rge_kernels::dispatch_numeric!(dtype, T => go::<T>(ctx, i, shape, values))
}

/// A scalar (or one-element tensor) input as f64.
pub(crate) fn scalar_f64(t: &TensorRef<'_>, what: &str) -> KernelResult<f64> {
    let v = t.to_f64_vec()?;
    match v.as_slice() {
        [x] => Ok(*x),
        _ => Err(KernelError::invalid(format!(
            "{what} must hold one value, got shape {:?}",
            t.shape()
        ))),
    }
}

/// A scalar (or one-element tensor) integer input.
pub(crate) fn scalar_i64(t: &TensorRef<'_>, what: &str) -> KernelResult<i64> {
    let v = t.to_i64_vec()?;
    match v.as_slice() {
        [x] => Ok(*x),
        _ => Err(KernelError::invalid(format!(
            "{what} must hold one value, got shape {:?}",
            t.shape()
        ))),
    }
}

/// The output dtype named by an ONNX `dtype`-style attribute value.
pub(crate) fn dtype_attr(name: &str, code: i64) -> KernelResult<DType> {
    i32::try_from(code)
        .ok()
        .and_then(DType::from_onnx)
        .ok_or_else(|| KernelError::attr(name, format!("unknown data type {code}")))
}

/// Normalizes `axes` for `rank` and checks they are distinct.
pub(crate) fn normalize_axes(axes: &[i64], rank: usize) -> KernelResult<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = rge_kernels::shape_util::normalize_axis(a, rank)?;
        if out.contains(&n) {
            return Err(KernelError::invalid(format!(
                "axis {a} repeated in {axes:?}"
            )));
        }
        out.push(n);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_casts_round_half_even_and_saturate() {
        assert_eq!(u8::from_f64(2.5), 2);
        assert_eq!(u8::from_f64(3.5), 4);
        assert_eq!(u8::from_f64(-3.0), 0);
        assert_eq!(u8::from_f64(300.0), 255);
        assert_eq!(i8::from_f64(-200.0), -128);
        assert_eq!(i32::from_f64(f64::NAN), 0);
    }
}
