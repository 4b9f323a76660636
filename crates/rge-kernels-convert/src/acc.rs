//! Accumulators for reductions: floats reduce in f64, signed integers (and bool) in i64,
//! unsigned in u64, wrapping as numpy's same-type accumulation does.

use rge_kernels::{bf16, f16};

use crate::num::Num;

/// An accumulator value.
pub trait Acc: Copy + PartialOrd + Send + Sync + 'static {
    const ZERO: Self;
    const ONE: Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    fn abs(self) -> Self;
    /// Division by an element count (integers truncate; a zero count gives 0).
    fn div_count(self, n: usize) -> Self;
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
    /// `a` or `b`, whichever is larger; NaN wins.
    #[inline]
    #[allow(clippy::eq_op)]
    fn max_nan(a: Self, b: Self) -> Self {
        if b > a || b != b {
            b
        } else {
            a
        }
    }
    /// `a` or `b`, whichever is smaller; NaN wins.
    #[inline]
    #[allow(clippy::eq_op)]
    fn min_nan(a: Self, b: Self) -> Self {
        if b < a || b != b {
            b
        } else {
            a
        }
    }
}

impl Acc for f64 {
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
    #[inline]
    fn add(self, o: Self) -> Self {
        self + o
    }
    #[inline]
    fn mul(self, o: Self) -> Self {
        self * o
    }
    #[inline]
    fn abs(self) -> Self {
        f64::abs(self)
    }
    #[inline]
    fn div_count(self, n: usize) -> Self {
        self / n as f64
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
}

impl Acc for i64 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    #[inline]
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline]
    fn mul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    #[inline]
    fn abs(self) -> Self {
        self.wrapping_abs()
    }
    #[inline]
    fn div_count(self, n: usize) -> Self {
        if n == 0 {
            0
        } else {
            self.wrapping_div(n as i64)
        }
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as i64
    }
}

impl Acc for u64 {
    const ZERO: Self = 0;
    const ONE: Self = 1;
    #[inline]
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    #[inline]
    fn mul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    #[inline]
    fn abs(self) -> Self {
        self
    }
    #[inline]
    fn div_count(self, n: usize) -> Self {
        if n == 0 {
            0
        } else {
            self / n as u64
        }
    }
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as u64
    }
}

/// An element type with its accumulator.
pub trait Reducible: Num {
    type A: Acc;
    /// The smallest value (the max of an empty set): -inf, the integer minimum, false.
    const LOWEST: Self::A;
    /// The largest value (the min of an empty set).
    const HIGHEST: Self::A;
    fn load(self) -> Self::A;
    fn store(a: Self::A) -> Self;
}

macro_rules! reducible {
    ($($t:ty => $a:ty, $lo:expr, $hi:expr);* $(;)?) => {$(
        impl Reducible for $t {
            type A = $a;
            const LOWEST: $a = $lo;
            const HIGHEST: $a = $hi;
            #[inline] fn load(self) -> $a { self as $a }
            #[inline] fn store(a: $a) -> Self { a as $t }
        }
    )*};
}

reducible! {
    i8 => i64, i8::MIN as i64, i8::MAX as i64;
    i16 => i64, i16::MIN as i64, i16::MAX as i64;
    i32 => i64, i32::MIN as i64, i32::MAX as i64;
    i64 => i64, i64::MIN, i64::MAX;
    u8 => u64, 0, u8::MAX as u64;
    u16 => u64, 0, u16::MAX as u64;
    u32 => u64, 0, u32::MAX as u64;
    u64 => u64, 0, u64::MAX;
    f32 => f64, f64::NEG_INFINITY, f64::INFINITY;
    f64 => f64, f64::NEG_INFINITY, f64::INFINITY;
}

/// The half floats accumulate in f64.
macro_rules! half_reducible {
    ($($t:ty),*) => {$(
        impl Reducible for $t {
            type A = f64;
            const LOWEST: f64 = f64::NEG_INFINITY;
            const HIGHEST: f64 = f64::INFINITY;
            #[inline]
            fn load(self) -> f64 {
                self.to_f64()
            }
            #[inline]
            fn store(a: f64) -> Self {
                <$t>::from_f64(a)
            }
        }
    )*};
}

half_reducible!(f16, bf16);

impl Reducible for bool {
    type A = i64;
    const LOWEST: i64 = 0;
    const HIGHEST: i64 = 1;
    #[inline]
    fn load(self) -> i64 {
        self as i64
    }
    #[inline]
    fn store(a: i64) -> Self {
        a != 0
    }
}
