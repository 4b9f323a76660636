//! Small helpers shared by this family: numeric element traits, axis and shape checks.

use rge_kernels::{bf16, f16, DType, Elem, KernelError, KernelResult, Tensor, TensorRef};

/// A real numeric element (or bool) with the conversions and arithmetic kernels here need.
/// Integer arithmetic wraps (ONNX leaves overflow undefined; wrapping never panics).
pub(crate) trait Num: Elem + PartialOrd {
    fn from_f64(v: f64) -> Self;
    fn from_i64(v: i64) -> Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn is_nan(self) -> bool;
    fn zero() -> Self;
    fn one() -> Self;

    /// The larger value, NaN propagating (numpy's maximum).
    fn max_nan(self, o: Self) -> Self {
        if self.is_nan() || o.is_nan() {
            if self.is_nan() {
                self
            } else {
                o
            }
        } else if o > self {
            o
        } else {
            self
        }
    }

    /// The smaller value, NaN propagating (numpy's minimum).
    fn min_nan(self, o: Self) -> Self {
        if self.is_nan() || o.is_nan() {
            if self.is_nan() {
                self
            } else {
                o
            }
        } else if o < self {
            o
        } else {
            self
        }
    }
}

macro_rules! num_int {
    ($($t:ty),*) => {$(
        impl Num for $t {
            fn from_f64(v: f64) -> Self { v as $t }
            fn from_i64(v: i64) -> Self { v as $t }
            fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn is_nan(self) -> bool { false }
            fn zero() -> Self { 0 }
            fn one() -> Self { 1 }
        }
    )*};
}
num_int!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! num_float {
    ($($t:ty),*) => {$(
        impl Num for $t {
            fn from_f64(v: f64) -> Self { v as $t }
            fn from_i64(v: i64) -> Self { v as $t }
            fn add(self, o: Self) -> Self { self + o }
            fn mul(self, o: Self) -> Self { self * o }
            fn is_nan(self) -> bool { <$t>::is_nan(self) }
            fn zero() -> Self { 0.0 }
            fn one() -> Self { 1.0 }
        }
    )*};
}
num_float!(f32, f64);

macro_rules! num_half {
    ($($t:ty),*) => {$(
        impl Num for $t {
            fn from_f64(v: f64) -> Self { <$t>::from_f64(v) }
            fn from_i64(v: i64) -> Self { <$t>::from_f64(v as f64) }
            fn add(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() + o.to_f32()) }
            fn mul(self, o: Self) -> Self { <$t>::from_f32(self.to_f32() * o.to_f32()) }
            fn is_nan(self) -> bool { <$t>::is_nan(self) }
            fn zero() -> Self { <$t>::ZERO }
            fn one() -> Self { <$t>::ONE }
        }
    )*};
}
num_half!(f16, bf16);

impl Num for bool {
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    fn add(self, o: Self) -> Self {
        self || o
    }
    fn mul(self, o: Self) -> Self {
        self && o
    }
    fn is_nan(self) -> bool {
        false
    }
    fn zero() -> Self {
        false
    }
    fn one() -> Self {
        true
    }
}

/// A normalized axis in `[-rank, rank)`.
pub(crate) fn axis(axis: i64, rank: usize) -> KernelResult<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        return Err(KernelError::invalid(format!(
            "axis {axis} is out of range for rank {rank}"
        )));
    }
    Ok(if axis < 0 {
        (axis + r) as usize
    } else {
        axis as usize
    })
}

/// Normalized, distinct axes in `[-rank, rank)`.
pub(crate) fn distinct_axes(axes: &[i64], rank: usize) -> KernelResult<Vec<usize>> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let n = axis(a, rank)?;
        if out.contains(&n) {
            return Err(KernelError::invalid(format!(
                "axis {a} is repeated in {axes:?}"
            )));
        }
        out.push(n);
    }
    Ok(out)
}

/// Non-negative dims from an int64 list.
pub(crate) fn dims(v: &[i64]) -> KernelResult<Vec<usize>> {
    v.iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| KernelError::invalid(format!("dim {d} is negative")))
        })
        .collect()
}

/// The single value of a scalar or one-element tensor, as i64.
pub(crate) fn scalar_i64(t: TensorRef<'_>, what: &str) -> KernelResult<i64> {
    let v = t.to_i64_vec()?;
    match v.as_slice() {
        [x] => Ok(*x),
        _ => Err(KernelError::invalid(format!(
            "{what} must have one element, got shape {:?}",
            t.shape()
        ))),
    }
}

/// A one-element tensor of `dt` holding `v` (numeric types and bool).
pub(crate) fn scalar_of(dt: DType, v: f64) -> KernelResult<Tensor> {
    rge_kernels::dispatch_numeric_bool!(dt, T => Tensor::from_vec(&[1], vec![<T as Num>::from_f64(v)]))
}

/// Row-major strides.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    rge_kernels::shape_util::strides(shape)
}

/// Element count, erroring on overflow.
pub(crate) fn count(shape: &[usize]) -> KernelResult<usize> {
    rge_kernels::element_count(shape)
        .ok_or_else(|| KernelError::invalid(format!("shape {shape:?} overflows")))
}

/// A bounds-checked index in `[-n, n)`, normalized.
pub(crate) fn index(i: i64, n: usize) -> KernelResult<usize> {
    let ni = n as i64;
    let j = if i < 0 { i + ni } else { i };
    if j < 0 || j >= ni {
        return Err(KernelError::invalid(format!(
            "index {i} is out of range for a dim of {n}"
        )));
    }
    Ok(j as usize)
}
