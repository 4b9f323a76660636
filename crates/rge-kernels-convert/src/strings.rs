//! Numbers ↔ strings for Cast, as the ONNX reference (numpy `astype`) does: floats print
//! their shortest round-trip digits, positional between 1e-4 and a per-type limit and
//! scientific (`1e+16`, `1.5e-07`) outside it; strings parse with surrounding blanks allowed
//! and `nan` / `inf` / `infinity` in any case.

use rge_kernels::{bf16, f16, KernelError, KernelResult};

use crate::num::{Kind, Num};

/// Formats one element.
pub trait ToText: Num {
    fn to_text(self) -> String;
}

macro_rules! int_text {
    ($($t:ty),*) => {$(
        impl ToText for $t {
            fn to_text(self) -> String { self.to_string() }
        }
    )*};
}

int_text!(i8, i16, i32, i64, u8, u16, u32, u64);

impl ToText for bool {
    fn to_text(self) -> String {
        if self { "True" } else { "False" }.to_string()
    }
}

impl ToText for f32 {
    fn to_text(self) -> String {
        float_text(self as f64, &format!("{self:e}"), 1e6)
    }
}

impl ToText for f64 {
    fn to_text(self) -> String {
        float_text(self, &format!("{self:e}"), 1e16)
    }
}

impl ToText for f16 {
    fn to_text(self) -> String {
        let v = self.to_f32();
        float_text(
            v as f64,
            &shortest(v, |s| {
                s.parse::<f32>().ok().map(f16::from_f32) == Some(self)
            }),
            1e6,
        )
    }
}

impl ToText for bf16 {
    fn to_text(self) -> String {
        let v = self.to_f32();
        float_text(
            v as f64,
            &shortest(v, |s| {
                s.parse::<f32>().ok().map(bf16::from_f32) == Some(self)
            }),
            1e6,
        )
    }
}

/// The shortest scientific form of `v` (up to 9 digits) that reads back to the same value.
fn shortest(v: f32, same: impl Fn(&str) -> bool) -> String {
    if !v.is_finite() || v == 0.0 {
        return format!("{v:e}");
    }
    for p in 0..9 {
        let s = format!("{v:.p$e}");
        if same(&s) {
            return s;
        }
    }
    format!("{v:e}")
}

/// Python-style text of a float from its shortest scientific digits `sci` ("1.25e-3").
fn float_text(v: f64, sci: &str, pos_limit: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let (mant, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(|c| c.is_ascii_digit()).collect();
    let digits = digits.trim_end_matches('0');
    let digits = if digits.is_empty() { "0" } else { digits };
    let sign = if neg { "-" } else { "" };
    let a = v.abs();
    if (1e-4..pos_limit).contains(&a) {
        let body = if exp >= 0 {
            let int_len = exp as usize + 1;
            if digits.len() <= int_len {
                format!("{digits}{}.0", "0".repeat(int_len - digits.len()))
            } else {
                format!("{}.{}", &digits[..int_len], &digits[int_len..])
            }
        } else {
            format!("0.{}{digits}", "0".repeat((-exp - 1) as usize))
        };
        format!("{sign}{body}")
    } else {
        let m = if digits.len() > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits.to_string()
        };
        let es = if exp < 0 { '-' } else { '+' };
        format!("{sign}{m}e{es}{:02}", exp.unsigned_abs())
    }
}

/// A parsed string: a float, or an integer when the target is an integer type.
fn parse_f64(s: &str) -> KernelResult<f64> {
    let t = s.trim();
    t.parse::<f64>()
        .map_err(|_| KernelError::invalid(format!("cannot parse {s:?} as a number")))
}

/// Parses `s` as a value of `T` (floats through f64; integers as integers, falling back to a
/// float truncated; bool: non-empty is true, as numpy does).
pub fn parse<T: Num>(s: &str) -> KernelResult<T> {
    match T::KIND {
        Kind::Float => parse_f64(s).map(T::from_f64),
        Kind::Bool => Ok(T::from_i64(i64::from(!s.is_empty()))),
        Kind::Signed => match s.trim().parse::<i64>() {
            Ok(v) => Ok(T::from_i64(v)),
            Err(_) => parse_f64(s).map(T::from_f64),
        },
        Kind::Unsigned => match s.trim().trim_start_matches('+').parse::<u64>() {
            Ok(v) => Ok(T::from_u64(v)),
            Err(_) => parse_f64(s).map(T::from_f64),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_float_text() {
        let f = |v: f32| v.to_text();
        assert_eq!(f(0.1), "0.1");
        assert_eq!(f(1.0), "1.0");
        assert_eq!(f(2.5), "2.5");
        assert_eq!(f(1e16), "1e+16");
        assert_eq!(f(123456789.0), "1.2345679e+08");
        assert_eq!(f(123456.7), "123456.7");
        assert_eq!(f(1e-4), "1e-04");
        assert_eq!(f(0.000123), "0.000123");
        assert_eq!(f(1.5e-7), "1.5e-07");
        assert_eq!(f(-0.0), "-0.0");
        assert_eq!(f(f32::NEG_INFINITY), "-inf");
        assert_eq!(f(f32::NAN), "nan");
        assert_eq!(1e16f64.to_text(), "1e+16");
        assert_eq!(999999986991104.0f64.to_text(), "999999986991104.0");
        assert_eq!(0.1f32.to_f64().to_text(), "0.10000000149011612");
        assert_eq!(f16::from_f32(0.1).to_text(), "0.1");
        assert_eq!(f16::from_f32(2e-7).to_text(), "2e-07");
        assert_eq!(true.to_text(), "True");
        assert_eq!((-3i8).to_text(), "-3");
    }

    #[test]
    fn parsing() {
        assert_eq!(parse::<f32>(" 1.5 ").unwrap(), 1.5);
        assert!(parse::<f32>("NaN").unwrap().is_nan());
        assert_eq!(parse::<f32>("-INF").unwrap(), f32::NEG_INFINITY);
        assert_eq!(parse::<f64>("+infinity").unwrap(), f64::INFINITY);
        assert_eq!(parse::<i64>(" -3 ").unwrap(), -3);
        assert_eq!(parse::<u8>("+7").unwrap(), 7);
        assert_eq!(parse::<i32>("2.7").unwrap(), 2);
        assert!(parse::<i32>("abc").is_err());
        assert!(!parse::<bool>("").unwrap());
        assert!(parse::<bool>("0").unwrap());
    }
}
