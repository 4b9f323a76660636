//! Numeric traits the kernels are generic over: [`Real`] (the type float math runs in),
//! [`FloatElem`] (a stored float type and its compute type: float16/bfloat16 compute in f32),
//! [`Num`] (arithmetic over every real numeric type, wrapping for integers) and [`Int`]
//! (integer-only operations).

use half::{bf16, f16};
use rge_kernels::Elem;

/// A type float math runs in (f32 or f64).
pub trait Real: num_traits::Float + Send + Sync + 'static {
    /// Rounds `v` to this type.
    fn from_f64(v: f64) -> Self;
    /// Widens to f64.
    fn as_f64(self) -> f64;
    /// The error function.
    fn erf(self) -> Self;
    /// Rounds half to even.
    fn round_even(self) -> Self;
}

impl Real for f32 {
    #[inline]
    fn from_f64(v: f64) -> Self {
        v as f32
    }
    #[inline]
    fn as_f64(self) -> f64 {
        self as f64
    }
    #[inline]
    fn erf(self) -> Self {
        erf32(self)
    }
    #[inline]
    fn round_even(self) -> Self {
        self.round_ties_even()
    }
}

impl Real for f64 {
    #[inline]
    fn from_f64(v: f64) -> Self {
        v
    }
    #[inline]
    fn as_f64(self) -> f64 {
        self
    }
    #[inline]
    fn erf(self) -> Self {
        erf64(self)
    }
    #[inline]
    fn round_even(self) -> Self {
        self.round_ties_even()
    }
}

/// The error function in f64 (relative error near 1e-16 over the whole line).
///
/// |x| < 2.5: erf(x) = 2/√π · e^(−x²) · Σ 2ⁿ x^(2n+1) / (1·3·…·(2n+1)), a series of positive
/// terms (no cancellation). 2.5 ≤ |x| < 6: 1 − erfc(x) with erfc from its continued fraction.
/// Beyond, ±1 (erfc(6) is below half an ulp of 1).
pub fn erf64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let ax = x.abs();
    let r = if ax < 2.5 {
        let x2 = ax * ax;
        let mut term = ax;
        let mut sum = ax;
        let mut k = 1.0f64;
        loop {
            k += 2.0;
            term *= 2.0 * x2 / k;
            sum += term;
            if term <= sum * 1e-17 {
                break;
            }
        }
        std::f64::consts::FRAC_2_SQRT_PI * (-x2).exp() * sum
    } else if ax < 6.0 {
        1.0 - erfc_cf(ax)
    } else {
        1.0
    };
    r.copysign(x)
}

/// erfc(x) for x ≥ 2.5: e^(−x²)/√π · 1/(x + (1/2)/(x + 1/(x + (3/2)/(x + …)))), evaluated
/// backwards from a fixed depth.
fn erfc_cf(x: f64) -> f64 {
    let mut t = x;
    for n in (1..=80).rev() {
        t = x + (n as f64 * 0.5) / t;
    }
    (-x * x).exp() / (t * std::f64::consts::PI.sqrt())
}

/// The error function for f32: piecewise polynomials (fitted offline to Chebyshev nodes of
/// erf; relative error below 1e-9 before the final rounding), evaluated in f64.
pub fn erf32(x: f32) -> f32 {
    let ax = (x as f64).abs();
    let r = if ax < 1.0 {
        let u = 2.0 * ax * ax - 1.0;
        ax * horner(&ERF_F32_HEAD, u)
    } else if ax < 4.0 {
        let k = ((ax - 1.0) * 2.0) as usize;
        let centre = 1.25 + k as f64 * 0.5;
        horner(&ERF_F32_BODY[k.min(5)], 4.0 * (ax - centre))
    } else if ax.is_nan() {
        return x;
    } else {
        1.0
    };
    (r as f32).copysign(x)
}

#[inline]
fn horner(c: &[f64; 8], t: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, &k| acc * t + k)
}

/// erf(x)/x on [0, 1] as a polynomial in u = 2x² − 1 (lowest degree first).
const ERF_F32_HEAD: [f64; 8] = [
    0.9654687386351056,
    -0.14053608897751346,
    0.019852497774794503,
    -0.0022854859887834994,
    0.0002175118330924789,
    -1.7536114827153028e-05,
    1.2317549728156884e-06,
    -7.600319629317772e-08,
];
/// erf on [1 + k/2, 1.5 + k/2] as polynomials in t = 4(x − centre) (lowest degree first).
const ERF_F32_BODY: [[f64; 8]; 6] = [
    [
        0.9229001289224565,
        0.05913028050064512,
        -0.01847823402948488,
        0.0026177482856656648,
        -2.395326165464053e-05,
        -4.608061911282533e-05,
        5.028744275144075e-06,
        2.2858340877407633e-07,
    ],
    [
        0.9866716711394664,
        0.013193748862766372,
        -0.005772262614452221,
        0.001408709170747385,
        -0.00018791220527840903,
        6.463352650053159e-06,
        2.2093492817186733e-06,
        -3.6212764611077794e-07,
    ],
    [
        0.9985372832943977,
        0.0017855798037107408,
        -0.0010043848065059144,
        0.000339445507579268,
        -7.456350122219473e-05,
        1.0410214348517287e-05,
        -6.78604778678675e-07,
        -4.403851479515539e-08,
    ],
    [
        0.9998993780875709,
        0.00014656932164435827,
        -0.00010076671379077601,
        4.3130942167981256e-05,
        -1.2725431429440116e-05,
        2.691690425482678e-06,
        -4.071900861119573e-07,
        3.8807089902923486e-08,
    ],
    [
        0.9999956972303053,
        7.297252930352929e-06,
        -5.929333325385651e-06,
        3.0595723399975495e-06,
        -1.1178493312370092e-06,
        3.0627817508525234e-07,
        -6.683555778781134e-08,
        1.0595489753752644e-08,
    ],
    [
        0.9999998862741138,
        2.2035721273504317e-07,
        -2.0662943375481745e-07,
        1.2453637192937063e-07,
        -5.3849253995590475e-08,
        1.790044886054764e-08,
        -5.0518610126688665e-09,
        1.0464305367134222e-09,
    ],
];

/// A stored float type and the type its math runs in.
pub trait FloatElem: Num {
    /// The compute type.
    type C: Real;
    /// Widens to the compute type.
    fn load(self) -> Self::C;
    /// Rounds from the compute type (to nearest even).
    fn store(c: Self::C) -> Self;
}

macro_rules! float_elem {
    ($t:ty, $c:ty, |$l:ident| $load:expr, |$s:ident| $store:expr) => {
        impl FloatElem for $t {
            type C = $c;
            #[inline]
            fn load(self) -> $c {
                let $l = self;
                $load
            }
            #[inline]
            fn store($s: $c) -> Self {
                $store
            }
        }
    };
}

float_elem!(f32, f32, |v| v, |c| c);
float_elem!(f64, f64, |v| v, |c| c);
float_elem!(f16, f32, |v| v.to_f32(), |c| f16::from_f32(c));
float_elem!(bf16, f32, |v| v.to_f32(), |c| bf16::from_f32(c));

/// Arithmetic over every real numeric type: floats round like their type (float16/bfloat16
/// through f32), integers wrap (two's complement). Integer division and remainder by zero
/// give 0 here; kernels reject a zero divisor before computing.
pub trait Num: Elem + PartialOrd {
    /// True for float types.
    const IS_FLOAT: bool;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// Floats: IEEE division; integers: truncating.
    fn div(self, o: Self) -> Self;
    /// `fmod`: remainder with the dividend's sign (truncated); otherwise with the divisor's
    /// sign (floored), as ONNX Mod defines them.
    fn modulo(self, o: Self, fmod: bool) -> Self;
    /// True when the value is zero.
    fn is_zero(self) -> bool;
    /// True for NaN.
    fn is_nan_val(self) -> bool;
    /// The value as f64.
    fn to_f64v(self) -> f64;
    /// `v` converted (`as` semantics for integers: truncation, saturation, NaN → 0).
    fn from_f64v(v: f64) -> Self;
}

/// The larger value, NaN propagating.
#[inline]
pub fn max_nan<T: PartialOrd + Copy>(a: T, b: T) -> T {
    if a > b {
        a
    } else if a <= b {
        b
    } else if a.partial_cmp(&a).is_none() {
        a
    } else {
        b
    }
}

/// The smaller value, NaN propagating.
#[inline]
pub fn min_nan<T: PartialOrd + Copy>(a: T, b: T) -> T {
    if a < b {
        a
    } else if a >= b {
        b
    } else if a.partial_cmp(&a).is_none() {
        a
    } else {
        b
    }
}

/// Floored float remainder with ONNX's special cases (result takes the divisor's sign).
#[inline]
fn floor_mod<C: Real>(a: C, b: C) -> C {
    let r = a % b;
    if r == C::zero() {
        // ±0 with the divisor's sign (NaN inputs never reach here: NaN % b is NaN).
        C::zero().copysign(b)
    } else if (r < C::zero()) != (b < C::zero()) {
        r + b
    } else {
        r
    }
}

macro_rules! num_float {
    ($($t:ty),*) => {$(
        impl Num for $t {
            const IS_FLOAT: bool = true;
            #[inline]
            fn add(self, o: Self) -> Self {
                Self::store(self.load() + o.load())
            }
            #[inline]
            fn sub(self, o: Self) -> Self {
                Self::store(self.load() - o.load())
            }
            #[inline]
            fn mul(self, o: Self) -> Self {
                Self::store(self.load() * o.load())
            }
            #[inline]
            fn div(self, o: Self) -> Self {
                Self::store(self.load() / o.load())
            }
            #[inline]
            fn modulo(self, o: Self, fmod: bool) -> Self {
                let (a, b) = (self.load(), o.load());
                Self::store(if fmod { a % b } else { floor_mod(a, b) })
            }
            #[inline]
            fn is_zero(self) -> bool {
                self.load() == num_traits::Zero::zero()
            }
            #[inline]
            fn is_nan_val(self) -> bool {
                self.load().is_nan()
            }
            #[inline]
            fn to_f64v(self) -> f64 {
                self.load().as_f64()
            }
            #[inline]
            fn from_f64v(v: f64) -> Self {
                Self::store(<Self as FloatElem>::C::from_f64(v))
            }
        }
    )*};
}

num_float!(f32, f64, f16, bf16);

/// Integer-only operations.
pub trait Int:
    Num
    + std::ops::BitAnd<Output = Self>
    + std::ops::BitOr<Output = Self>
    + std::ops::BitXor<Output = Self>
    + std::ops::Not<Output = Self>
{
    /// True for signed types.
    const SIGNED: bool;
    /// Left shift; a shift below 0 or at least the bit width gives 0.
    fn shl_op(self, s: Self) -> Self;
    /// Right shift (arithmetic for signed types); a shift below 0 or at least the bit width
    /// gives the sign fill (-1 for negative values, else 0).
    fn shr_op(self, s: Self) -> Self;
    /// Wrapping absolute value.
    fn wabs(self) -> Self;
    /// Wrapping negation.
    fn wneg(self) -> Self;
    /// -1, 0 or 1.
    fn sign(self) -> Self;
    /// Wrapping power; `None` for 0 to a negative power.
    fn ipow(self, e: i64) -> Option<Self>;
}

macro_rules! num_int {
    ($($t:ty: $signed:literal),*) => {$(
        impl Num for $t {
            const IS_FLOAT: bool = false;
            #[inline]
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            #[inline]
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            #[inline]
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            #[inline]
            fn div(self, o: Self) -> Self {
                if o == 0 { 0 } else { self.wrapping_div(o) }
            }
            #[inline]
            fn modulo(self, o: Self, fmod: bool) -> Self {
                if o == 0 {
                    return 0;
                }
                let r = self.wrapping_rem(o);
                #[allow(unused_comparisons)]
                let adjust = !fmod && r != 0 && ((r < 0) != (o < 0));
                if adjust { r.wrapping_add(o) } else { r }
            }
            #[inline]
            fn is_zero(self) -> bool {
                self == 0
            }
            #[inline]
            fn is_nan_val(self) -> bool {
                false
            }
            #[inline]
            fn to_f64v(self) -> f64 {
                self as f64
            }
            #[inline]
            fn from_f64v(v: f64) -> Self {
                v as $t
            }
        }

        impl Int for $t {
            const SIGNED: bool = $signed;
            #[inline]
            fn shl_op(self, s: Self) -> Self {
                let s = s as i128;
                if s < 0 || s >= <$t>::BITS as i128 { 0 } else { self.wrapping_shl(s as u32) }
            }
            #[inline]
            fn shr_op(self, s: Self) -> Self {
                let s = s as i128;
                if s < 0 || s >= <$t>::BITS as i128 {
                    #[allow(unused_comparisons)]
                    let neg = self < 0;
                    if neg { !0 } else { 0 }
                } else {
                    self.wrapping_shr(s as u32)
                }
            }
            #[inline]
            #[allow(unused_comparisons)]
            fn wabs(self) -> Self {
                if self < 0 { (0 as $t).wrapping_sub(self) } else { self }
            }
            #[inline]
            fn wneg(self) -> Self {
                (0 as $t).wrapping_sub(self)
            }
            #[inline]
            #[allow(unused_comparisons)]
            fn sign(self) -> Self {
                if self > 0 {
                    1
                } else if self < 0 {
                    (0 as $t).wrapping_sub(1)
                } else {
                    0
                }
            }
            fn ipow(self, e: i64) -> Option<Self> {
                if e < 0 {
                    return match self {
                        0 => None,
                        1 => Some(1),
                        // -1 (signed types only: the unsigned max never equals 1 or 0 here).
                        v if $signed && v == (0 as $t).wrapping_sub(1) => {
                            Some(if e % 2 == 0 { 1 } else { v })
                        }
                        _ => Some(0),
                    };
                }
                let mut base = self;
                let mut e = e as u64;
                let mut acc: $t = 1;
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                Some(acc)
            }
        }
    )*};
}

num_int!(i8: true, i16: true, i32: true, i64: true, u8: false, u16: false, u32: false, u64: false);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        // Reference values from Python's math.erf.
        let cases = [
            (0.0, 0.0),
            (1e-10, 1.1283791670955126e-10),
            (0.1, 0.1124629160182849),
            (0.5, 0.5204998778130465),
            (1.0, 0.8427007929497149),
            (2.0, 0.9953222650189527),
            (2.4999, 0.9995928300996666),
            (2.5, 0.999593047982555),
            (3.0, 0.9999779095030014),
            (4.0, 0.9999999845827421),
            (5.9, 0.9999999999999999),
            (-1.5, -0.9661051464753108),
        ];
        for (x, want) in cases {
            let got = erf64(x);
            assert!(
                (got - want).abs() <= 4e-16 * want.abs().max(1e-300),
                "erf({x}) = {got}, want {want}"
            );
        }
        assert!(erf64(f64::NAN).is_nan());
        assert_eq!(erf64(f64::INFINITY), 1.0);
        assert_eq!(erf64(f64::NEG_INFINITY), -1.0);
    }

    #[test]
    fn erf32_matches_erf64() {
        let mut x = -5.0f32;
        while x < 5.0 {
            let want = erf64(x as f64) as f32;
            let got = erf32(x);
            let ulp = (want.abs().max(1e-30) * f32::EPSILON).max(f32::MIN_POSITIVE);
            assert!((got - want).abs() <= ulp, "erf32({x}) = {got}, want {want}");
            x += 0.000_37;
        }
        assert_eq!(erf32(1e-30), erf64(1e-30) as f32);
        assert!(erf32(-0.0).is_sign_negative());
        assert!(erf32(f32::NAN).is_nan());
        assert_eq!(erf32(f32::INFINITY), 1.0);
        assert_eq!(erf32(f32::NEG_INFINITY), -1.0);
    }

    #[test]
    fn integer_rules() {
        assert_eq!(7i32.modulo(-3, false), -2);
        assert_eq!((-7i32).modulo(3, false), 2);
        assert_eq!((-7i32).modulo(3, true), -1);
        assert_eq!(i32::MIN.modulo(-1, false), 0);
        assert_eq!(i32::MIN.div(-1), i32::MIN);
        assert_eq!((-7i32).div(2), -3);
        assert_eq!((-8i8).shr_op(100), -1);
        assert_eq!((-8i8).shr_op(-1), -1);
        assert_eq!(8i8.shr_op(8), 0);
        assert_eq!(1i8.shl_op(7), i8::MIN);
        assert_eq!(1u8.shl_op(8), 0);
        assert_eq!(i8::MIN.wabs(), i8::MIN);
        assert_eq!(3i32.ipow(3), Some(27));
        assert_eq!((-1i32).ipow(-3), Some(-1));
        assert_eq!(2i32.ipow(-1), Some(0));
        assert_eq!(0i32.ipow(-1), None);
        assert_eq!(u8::MAX.ipow(-1), Some(0));
        assert_eq!(2u8.ipow(9), Some(0));
    }

    #[test]
    fn float_mod_special_cases() {
        assert_eq!(5.0f32.modulo(-3.0, false), -1.0);
        assert_eq!((-5.0f32).modulo(3.0, false), 1.0);
        assert_eq!((-5.0f32).modulo(3.0, true), -2.0);
        assert!(0.0f32.modulo(-2.0, false).is_sign_negative());
        assert!(f32::INFINITY.modulo(2.0, false).is_nan());
        assert!(1.0f32.modulo(0.0, false).is_nan());
        assert_eq!(1.0f32.modulo(f32::INFINITY, false), 1.0);
        assert_eq!((-1.0f32).modulo(f32::INFINITY, false), f32::INFINITY);
        assert!(max_nan(1.0f32, f32::NAN).is_nan());
        assert!(min_nan(f32::NAN, 1.0f32).is_nan());
        assert_eq!(max_nan(3i8, 4), 4);
    }
}
