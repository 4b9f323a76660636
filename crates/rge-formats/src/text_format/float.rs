//! `float` printing as protobuf's C++ `SimpleFtoa`: `%.6g` if that parses back to
//! the same `f32` (with `strtof`, which rejects subnormal results), else `%.9g`;
//! `inf`, `-inf` and `nan` spelled out.

use std::fmt::Write;

/// Formats an `f32` exactly as C++ protobuf's text format prints a `float` field.
///
/// ```
/// use rge_formats::text_format::format_float;
/// assert_eq!(format_float(0.0), "0");
/// assert_eq!(format_float(-128.0), "-128");
/// assert_eq!(format_float(28.762505), "28.7625046"); // shortest Rust form is 28.762505
/// assert_eq!(format_float(0.1), "0.1");
/// assert_eq!(format_float(1e6), "1e+06");
/// assert_eq!(format_float(f32::NEG_INFINITY), "-inf");
/// ```
pub fn format_float(v: f32) -> String {
    if v.is_nan() {
        return "nan".to_owned();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let short = format_g(f64::from(v), 6);
    // C++ checks the round trip with `strtof`, which fails with ERANGE when the
    // result is subnormal: subnormals therefore always take `%.9g`.
    if !v.is_subnormal() && short.parse::<f32>().ok() == Some(v) {
        short
    } else {
        format_g(f64::from(v), 9)
    }
}

/// C's `printf("%.{precision}g", v)` for a finite `v` (precision >= 1), with
/// round-half-even on the exact binary value as glibc does.
fn format_g(v: f64, precision: usize) -> String {
    // Rust's `{:.N e}` is exact and rounds ties to even, like glibc.
    let sci = format!("{:.*e}", precision - 1, v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (negative, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    // Significant digits, `precision` of them.
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();

    let mut out = String::with_capacity(precision + 8);
    if negative {
        out.push('-');
    }
    let p = i32::try_from(precision).unwrap_or(i32::MAX);
    if exp < -4 || exp >= p {
        // Exponential style: d.ddd (trailing zeros removed) e±XX.
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        let rest = rest.trim_end_matches('0');
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let sign = if exp < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{:02}", exp.unsigned_abs());
    } else if exp >= 0 {
        // Fixed style, decimal point after exp + 1 digits.
        let split = usize::try_from(exp).unwrap_or(0) + 1;
        let (int_part, frac) = digits.split_at(split.min(digits.len()));
        out.push_str(int_part);
        let frac = frac.trim_end_matches('0');
        if !frac.is_empty() {
            out.push('.');
            out.push_str(frac);
        }
    } else {
        // Fixed style, 0.000ddd.
        out.push_str("0.");
        for _ in 0..exp.unsigned_abs() - 1 {
            out.push('0');
        }
        out.push_str(digits.trim_end_matches('0'));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_style_matches_printf() {
        // Expected values from glibc printf.
        let cases: &[(f64, usize, &str)] = &[
            (0.0, 6, "0"),
            (-0.0, 6, "-0"),
            (100000.0, 6, "100000"),
            (1000000.0, 6, "1e+06"),
            (0.0001, 6, "0.0001"),
            (0.00001, 6, "1e-05"),
            (2097150.625, 9, "2097150.62"),
            (1.5e-45, 9, "1.5e-45"),
            (3.4e38, 6, "3.4e+38"),
            (123.456, 6, "123.456"),
            (0.000123456, 6, "0.000123456"),
            (999999.5, 6, "1e+06"),
        ];
        for &(v, p, want) in cases {
            assert_eq!(format_g(v, p), want, "{v} %.{p}g");
        }
    }

    #[test]
    fn float_fallback() {
        assert_eq!(format_float(28.762_505), "28.7625046");
        assert_eq!(format_float(f32::from_bits(1)), "1.40129846e-45");
        assert_eq!(format_float(f32::MAX), "3.40282347e+38");
        assert_eq!(format_float(-0.0), "-0");
        assert_eq!(format_float(16_777_216.0), "16777216");
        assert_eq!(format_float(1e-10), "1e-10");
    }
}
