//! The thirteen byte-sized element types (floats, integers, bool) seen through one trait, with
//! numpy's conversion rules: floats to integers truncate toward zero and wrap to the target
//! width; integers wrap; anything to bool is "not zero" (NaN is true).

use rge_kernels::{bf16, f16, Elem};

/// How a type converts: through f64, i64 or u64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Float,
    Signed,
    Unsigned,
    Bool,
}

/// A byte-sized element type with numpy-style conversions and arithmetic.
pub trait Num: Elem + PartialOrd {
    const KIND: Kind;
    /// The value as f64 (exact for every float type and for integers up to 2^53).
    fn to_f64(self) -> f64;
    /// The value as i64 (floats truncate, saturating; unsigned wrap).
    fn to_i64(self) -> i64;
    /// The value as u64 (signed wrap).
    fn to_u64(self) -> u64;
    /// From f64: floats round to nearest even, integers truncate and wrap.
    fn from_f64(v: f64) -> Self;
    /// From i64: integers wrap, floats round.
    fn from_i64(v: i64) -> Self;
    /// From u64: integers wrap, floats round.
    fn from_u64(v: u64) -> Self;
    /// Addition (wrapping for integers, rounded to the type for floats).
    fn add(self, o: Self) -> Self;
    /// Multiplication (wrapping for integers).
    fn mul(self, o: Self) -> Self;
    const ZERO: Self;
    const ONE: Self;
}

/// 2^63.
const TWO_63: f64 = (1u64 << 63) as f64;

/// numpy's float → i64 conversion (truncation; NaN and out of range give i64::MIN as x86 does).
#[inline]
fn f64_to_i64(v: f64) -> i64 {
    if v.is_nan() || !(-TWO_63..TWO_63).contains(&v) {
        i64::MIN
    } else {
        v as i64
    }
}

/// Float → u64: values at or above 2^63 convert directly, the rest through i64 (wrapping).
#[inline]
fn f64_to_u64(v: f64) -> u64 {
    if (TWO_63..2.0 * TWO_63).contains(&v) {
        v as u64
    } else {
        f64_to_i64(v) as u64
    }
}

macro_rules! int_num {
    ($($t:ty => $kind:ident),*) => {$(
        impl Num for $t {
            const KIND: Kind = Kind::$kind;
            #[inline] fn to_f64(self) -> f64 { self as f64 }
            #[inline] fn to_i64(self) -> i64 { self as i64 }
            #[inline] fn to_u64(self) -> u64 { self as u64 }
            #[inline] fn from_f64(v: f64) -> Self {
                if Kind::$kind == Kind::Unsigned { f64_to_u64(v) as $t } else { f64_to_i64(v) as $t }
            }
            #[inline] fn from_i64(v: i64) -> Self { v as $t }
            #[inline] fn from_u64(v: u64) -> Self { v as $t }
            #[inline] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            const ZERO: Self = 0;
            const ONE: Self = 1;
        }
    )*};
}

int_num!(i8 => Signed, i16 => Signed, i32 => Signed, i64 => Signed,
    u8 => Unsigned, u16 => Unsigned, u32 => Unsigned, u64 => Unsigned);

impl Num for f32 {
    const KIND: Kind = Kind::Float;
    #[inline]
    fn to_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn to_i64(self) -> i64 {
        f64_to_i64(self as f64)
    }
    #[inline]
    fn to_u64(self) -> u64 {
        f64_to_u64(self as f64)
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn from_i64(v: i64) -> Self {
        v as f32
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        v as f32
    }
    #[inline]
    fn add(self, o: Self) -> Self {
        self + o
    }
    #[inline]
    fn mul(self, o: Self) -> Self {
        self * o
    }
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}

impl Num for f64 {
    const KIND: Kind = Kind::Float;
    #[inline]
    fn to_f64(self) -> f64 {
        self
    }
    #[inline]
    fn to_i64(self) -> i64 {
        f64_to_i64(self)
    }
    #[inline]
    fn to_u64(self) -> u64 {
        f64_to_u64(self)
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline]
    fn from_i64(v: i64) -> Self {
        v as f64
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        v as f64
    }
    #[inline]
    fn add(self, o: Self) -> Self {
        self + o
    }
    #[inline]
    fn mul(self, o: Self) -> Self {
        self * o
    }
    const ZERO: Self = 0.0;
    const ONE: Self = 1.0;
}

macro_rules! half_num {
    ($($t:ident),*) => {$(
        impl Num for $t {
            const KIND: Kind = Kind::Float;
            #[inline] fn to_f64(self) -> f64 { $t::to_f64(self) }
            #[inline] fn to_i64(self) -> i64 { f64_to_i64($t::to_f64(self)) }
            #[inline] fn to_u64(self) -> u64 { f64_to_u64($t::to_f64(self)) }
            #[inline] fn from_f64(v: f64) -> Self { $t::from_f64(v) }
            #[inline] fn from_i64(v: i64) -> Self { $t::from_f32(v as f32) }
            #[inline] fn from_u64(v: u64) -> Self { $t::from_f32(v as f32) }
            #[inline] fn add(self, o: Self) -> Self { $t::from_f32(self.to_f32() + o.to_f32()) }
            #[inline] fn mul(self, o: Self) -> Self { $t::from_f32(self.to_f32() * o.to_f32()) }
            const ZERO: Self = $t::ZERO;
            const ONE: Self = $t::ONE;
        }
    )*};
}

half_num!(f16, bf16);

impl Num for bool {
    const KIND: Kind = Kind::Bool;
    #[inline]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline]
    fn to_u64(self) -> u64 {
        self as u64
    }
    #[inline]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline]
    fn from_u64(v: u64) -> Self {
        v != 0
    }
    #[inline]
    fn add(self, o: Self) -> Self {
        self | o
    }
    #[inline]
    fn mul(self, o: Self) -> Self {
        self & o
    }
    const ZERO: Self = false;
    const ONE: Self = true;
}

/// Converts one value with numpy's `astype` rule.
#[inline]
pub fn convert<S: Num, D: Num>(s: S) -> D {
    match S::KIND {
        Kind::Float => D::from_f64(s.to_f64()),
        Kind::Signed | Kind::Bool => D::from_i64(s.to_i64()),
        Kind::Unsigned => D::from_u64(s.to_u64()),
    }
}

/// True for NaN (floats only).
#[inline]
#[allow(clippy::eq_op)]
pub fn is_nan<T: Num>(v: T) -> bool {
    v != v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_rules() {
        assert_eq!(convert::<f32, i8>(-2.7), -2);
        assert_eq!(convert::<f32, u8>(-2.7), 254);
        assert_eq!(convert::<f32, u32>(-2.7), 4_294_967_294);
        assert_eq!(convert::<i64, i8>(300), 44);
        assert!(convert::<f32, bool>(f32::NAN));
        assert!(!convert::<f32, bool>(-0.0));
        assert_eq!(convert::<bool, f32>(true), 1.0);
        assert_eq!(convert::<f64, f16>(65520.0), f16::INFINITY);
        assert_eq!(convert::<u64, f32>(u64::MAX), 1.8446744e19);
        assert_eq!(convert::<f64, u64>(1.8e19), 18_000_000_000_000_000_000);
        assert_eq!(127i8.add(1), -128);
    }
}
