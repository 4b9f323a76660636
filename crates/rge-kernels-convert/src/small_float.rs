//! The small float types (FLOAT8E4M3FN, FLOAT8E4M3FNUZ, FLOAT8E5M2, FLOAT8E5M2FNUZ,
//! FLOAT4E2M1, FLOAT8E8M0) and the packed sub-byte integers (INT4, UINT4, INT2, UINT2):
//! decoding to f32 / integers and encoding with round-to-nearest-even, as the ONNX reference
//! (ml_dtypes) does. Packed types hold the first element in the low bits of each byte.

use rge_kernels::{DType, KernelError, KernelResult};

/// A small float format with sign, exponent and mantissa bits (E8M0 is separate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Minifloat {
    E4M3Fn,
    E4M3Fnuz,
    E5M2,
    E5M2Fnuz,
    E2M1,
}

impl Minifloat {
    /// The format of an ONNX type (None for other types).
    pub fn of(dt: DType) -> Option<Minifloat> {
        Some(match dt {
            DType::Float8E4M3Fn => Minifloat::E4M3Fn,
            DType::Float8E4M3Fnuz => Minifloat::E4M3Fnuz,
            DType::Float8E5M2 => Minifloat::E5M2,
            DType::Float8E5M2Fnuz => Minifloat::E5M2Fnuz,
            DType::Float4E2M1 => Minifloat::E2M1,
            _ => return None,
        })
    }

    /// Mantissa bits.
    const fn mbits(self) -> u32 {
        match self {
            Minifloat::E4M3Fn | Minifloat::E4M3Fnuz => 3,
            Minifloat::E5M2 | Minifloat::E5M2Fnuz => 2,
            Minifloat::E2M1 => 1,
        }
    }

    /// Exponent bias.
    const fn bias(self) -> i32 {
        match self {
            Minifloat::E4M3Fn => 7,
            Minifloat::E4M3Fnuz => 8,
            Minifloat::E5M2 => 15,
            Minifloat::E5M2Fnuz => 16,
            Minifloat::E2M1 => 1,
        }
    }

    /// The position of the sign bit.
    const fn sign_shift(self) -> u32 {
        match self {
            Minifloat::E2M1 => 3,
            _ => 7,
        }
    }

    /// The code (without sign) of the largest finite value.
    const fn max_mag(self) -> u8 {
        match self {
            Minifloat::E4M3Fn => 0x7E,
            Minifloat::E4M3Fnuz | Minifloat::E5M2Fnuz => 0x7F,
            Minifloat::E5M2 => 0x7B,
            Minifloat::E2M1 => 0x7,
        }
    }

    /// True for the "fnuz" formats: one NaN (0x80), no infinity, no negative zero.
    const fn fnuz(self) -> bool {
        matches!(self, Minifloat::E4M3Fnuz | Minifloat::E5M2Fnuz)
    }

    /// The value of `code` (upper bits beyond the format's width are ignored).
    pub fn decode(self, code: u8) -> f32 {
        let width = self.sign_shift() + 1;
        let code = if width == 8 { code } else { code & 0x0F };
        let sign = (code >> self.sign_shift()) & 1 == 1;
        let mag = code & !(1u8 << self.sign_shift());
        match self {
            Minifloat::E4M3Fn if mag == 0x7F => return signed_nan(sign),
            Minifloat::E5M2 if mag == 0x7C => {
                return if sign {
                    f32::NEG_INFINITY
                } else {
                    f32::INFINITY
                }
            }
            Minifloat::E5M2 if mag > 0x7C => return signed_nan(sign),
            Minifloat::E4M3Fnuz | Minifloat::E5M2Fnuz if code == 0x80 => return f32::NAN,
            _ => {}
        }
        let m = self.mbits();
        let exp = i32::from(mag >> m);
        let mant = f32::from(mag & ((1u8 << m) - 1));
        let v = if exp == 0 {
            mant * pow2(1 - self.bias() - m as i32)
        } else {
            (1.0 + mant / (1u32 << m) as f32) * pow2(exp - self.bias())
        };
        if sign {
            -v
        } else {
            v
        }
    }

    /// The code of `x`, rounded to nearest even. Out of range values (and infinities) become
    /// the largest finite value when `saturate`, else infinity (E5M2) or NaN; FLOAT4E2M1 has
    /// neither and always saturates.
    pub fn encode(self, x: f64, saturate: bool) -> u8 {
        let sign = x.is_sign_negative();
        let sbit = if sign { 1u8 << self.sign_shift() } else { 0 };
        if x.is_nan() {
            return match self {
                Minifloat::E4M3Fn => 0x7F | sbit,
                Minifloat::E5M2 => 0x7E | sbit,
                Minifloat::E4M3Fnuz | Minifloat::E5M2Fnuz => 0x80,
                // ml_dtypes turns NaN into a zero of the opposite sign.
                Minifloat::E2M1 => sbit ^ 0x8,
            };
        }
        let overflow = |s: Minifloat| -> u8 {
            if saturate || s == Minifloat::E2M1 {
                s.max_mag() | sbit
            } else {
                match s {
                    Minifloat::E5M2 => 0x7C | sbit,
                    Minifloat::E4M3Fn => 0x7F | sbit,
                    _ => 0x80,
                }
            }
        };
        let a = x.abs();
        if a.is_infinite() {
            return overflow(self);
        }
        if a == 0.0 {
            return if self.fnuz() { 0 } else { sbit };
        }
        let m = self.mbits() as i32;
        let emin = 1 - self.bias();
        let e = ((a.to_bits() >> 52) & 0x7FF) as i32 - 1023;
        // f64 subnormals are far below every format's range: they round to zero.
        let mut e = e.max(emin);
        let q = (a * pow2_f64(m - e)).round_ties_even();
        if q >= 2f64.powi(m + 2) {
            // Only possible for huge inputs whose exponent we clamped nowhere; treat as overflow.
            return overflow(self);
        }
        let mut mant = q as u32;
        if mant >= 2u32 << m {
            mant >>= 1;
            e += 1;
        }
        if mant == 0 {
            return if self.fnuz() { 0 } else { sbit };
        }
        let mag = if mant < 1u32 << m {
            mant // subnormal (e == emin)
        } else {
            let bexp = (e + self.bias()) as u32;
            (bexp << m) | (mant - (1u32 << m))
        };
        if mag > u32::from(self.max_mag()) {
            return overflow(self);
        }
        mag as u8 | sbit
    }
}

fn signed_nan(sign: bool) -> f32 {
    if sign {
        -f32::NAN
    } else {
        f32::NAN
    }
}

/// 2^e as f32 (e within the f32 normal range).
fn pow2(e: i32) -> f32 {
    f32::from_bits(((e + 127) as u32) << 23)
}

/// 2^e as f64 (|e| < 1000).
fn pow2_f64(e: i32) -> f64 {
    f64::from_bits(((e + 1023) as u64) << 52)
}

/// The rounding of a FLOAT8E8M0 cast (`round_mode` attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundMode {
    Up,
    Nearest,
    Down,
}

impl RoundMode {
    /// Parses the `round_mode` attribute.
    pub fn parse(s: &str) -> KernelResult<RoundMode> {
        match s {
            "up" => Ok(RoundMode::Up),
            "nearest" => Ok(RoundMode::Nearest),
            "down" => Ok(RoundMode::Down),
            other => Err(KernelError::attr(
                "round_mode",
                format!("'{other}' is not one of up, nearest, down"),
            )),
        }
    }
}

/// The value of a FLOAT8E8M0 code: 2^(code-127), NaN for 0xFF.
pub fn e8m0_decode(code: u8) -> f32 {
    match code {
        0xFF => f32::NAN,
        0 => f32::from_bits(0x0040_0000),
        c => f32::from_bits(u32::from(c) << 23),
    }
}

/// The FLOAT8E8M0 code of `x` (its sign is dropped): the f32 exponent, rounded by `mode`;
/// NaN and infinity give 0xFF; `saturate` keeps rounding from reaching 0xFF.
pub fn e8m0_encode(x: f32, saturate: bool, mode: RoundMode) -> u8 {
    let bits = x.to_bits();
    let exp = (bits >> 23) & 0xFF;
    if exp == 0xFF {
        return 0xFF;
    }
    let up = match mode {
        RoundMode::Down => false,
        RoundMode::Up => bits & 0x7F_FFFF != 0,
        RoundMode::Nearest => {
            let g = bits & 0x40_0000 != 0;
            let r = bits & 0x20_0000 != 0;
            let s = bits & 0x1F_FFFF != 0;
            g && (r || s || exp > 0)
        }
    };
    let up = up && !(saturate && exp == 0xFE);
    (exp + u32::from(up)) as u8
}

/// Bits per element of a packed integer type, and whether it is signed.
pub fn packed_int(dt: DType) -> Option<(u32, bool)> {
    match dt {
        DType::Int4 => Some((4, true)),
        DType::Uint4 => Some((4, false)),
        DType::Int2 => Some((2, true)),
        DType::Uint2 => Some((2, false)),
        _ => None,
    }
}

/// The `n` raw codes of a packed tensor of `bits`-bit elements, one per byte.
pub fn unpack_codes(bytes: &[u8], bits: u32, n: usize) -> Vec<u8> {
    let per = (8 / bits) as usize;
    let mask = ((1u16 << bits) - 1) as u8;
    (0..n)
        .map(|i| {
            let b = bytes.get(i / per).copied().unwrap_or(0);
            (b >> ((i % per) as u32 * bits)) & mask
        })
        .collect()
}

/// Packs codes (low `bits` bits of each) into `out` (zeroed first; unused high bits stay 0).
pub fn pack_codes(codes: impl IntoIterator<Item = u8>, bits: u32, out: &mut [u8]) {
    out.fill(0);
    let per = (8 / bits) as usize;
    let mask = ((1u16 << bits) - 1) as u8;
    for (i, c) in codes.into_iter().enumerate() {
        if let Some(b) = out.get_mut(i / per) {
            *b |= (c & mask) << ((i % per) as u32 * bits);
        }
    }
}

/// The integer value of a `bits`-bit code (sign-extended when `signed`).
#[inline]
pub fn int_of_code(code: u8, bits: u32, signed: bool) -> i64 {
    if signed {
        let shift = 8 - bits;
        i64::from(((code << shift) as i8) >> shift)
    } else {
        i64::from(code)
    }
}

/// The code of an integer wrapped to `bits` bits.
#[inline]
pub fn code_of_int(v: i64, bits: u32) -> u8 {
    (v as u8) & (((1u16 << bits) - 1) as u8)
}

/// The integer range of a packed type.
pub fn packed_range(bits: u32, signed: bool) -> (i64, i64) {
    if signed {
        (-(1i64 << (bits - 1)), (1i64 << (bits - 1)) - 1)
    } else {
        (0, (1i64 << bits) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spot_values() {
        assert_eq!(Minifloat::E4M3Fn.decode(0x7E), 448.0);
        assert_eq!(Minifloat::E4M3Fnuz.decode(0x7F), 240.0);
        assert_eq!(Minifloat::E5M2.decode(0x7B), 57344.0);
        assert_eq!(Minifloat::E2M1.decode(0x7), 6.0);
        assert_eq!(Minifloat::E2M1.decode(0x9), -0.5);
        assert_eq!(Minifloat::E4M3Fn.encode(464.0, false), 0x7E);
        assert_eq!(Minifloat::E4M3Fn.encode(465.0, false), 0x7F);
        assert_eq!(Minifloat::E4M3Fn.encode(1e6, true), 0x7E);
        assert_eq!(Minifloat::E5M2.encode(f64::INFINITY, false), 0x7C);
        assert_eq!(Minifloat::E4M3Fnuz.encode(-0.0, false), 0);
        assert_eq!(Minifloat::E2M1.encode(0.25, true), 0);
        assert_eq!(Minifloat::E2M1.encode(0.75, true), 2);
        assert_eq!(e8m0_encode(1.1, true, RoundMode::Up), 128);
        assert_eq!(e8m0_decode(127), 1.0);
    }

    #[test]
    fn packing() {
        let mut out = [0u8; 2];
        pack_codes([1, 2, 3], 4, &mut out);
        assert_eq!(out, [0x21, 0x03]);
        assert_eq!(unpack_codes(&out, 4, 3), vec![1, 2, 3]);
        pack_codes([1, 2, 3, 0, 1], 2, &mut out);
        assert_eq!(out, [0b0011_1001, 0b01]);
        assert_eq!(int_of_code(0xF, 4, true), -1);
        assert_eq!(int_of_code(0x2, 2, true), -2);
        assert_eq!(code_of_int(-8, 4), 8);
        assert_eq!(packed_range(2, true), (-2, 1));
    }
}
