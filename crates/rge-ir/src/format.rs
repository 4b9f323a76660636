//! Tensor layouts: `ge::Format` primary formats and the bit-packed format int.
//!
//! A [`Format`] packs (reference §2.2): bits 0–7 primary format, bits 8–23 sub-format
//! (e.g. the group count of FRACTAL_Z), bits 24–27 the c0 format (C0 = 1 << (c0_format − 1)),
//! bits 28–31 reserved. The layout string is `"PRIMARY"` or `"PRIMARY:sub"`; it never carries
//! the c0 bits.

use std::fmt;
use std::str::FromStr;

use crate::error::{IrError, Result};

macro_rules! primary_formats {
    ($(
        $var:ident = $val:literal, $enum_name:literal, $serial:expr;
    )*) => {
        /// A primary format (`ge::Format` low byte); the discriminant is GE's value.
        #[repr(u8)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum PrimaryFormat {
            $(
                #[doc = $enum_name]
                $var = $val,
            )*
        }

        impl PrimaryFormat {
            /// Every primary format, in value order (FORMAT_MAX last).
            pub const ALL: [PrimaryFormat; 57] = [$(PrimaryFormat::$var),*];

            /// The primary format with value `v`.
            pub const fn from_u8(v: u8) -> Option<Self> {
                match v {
                    $($val => Some(PrimaryFormat::$var),)*
                    _ => None,
                }
            }

            /// The C++ enumerator name, e.g. "FORMAT_FRACTAL_ZZ".
            pub const fn enum_name(self) -> &'static str {
                match self {
                    $(PrimaryFormat::$var => $enum_name,)*
                }
            }

            /// GE's serial string, `None` where GE has no mapping (FRACTAL_ZZ).
            const fn serial(self) -> Option<&'static str> {
                match self {
                    $(PrimaryFormat::$var => $serial,)*
                }
            }

            fn from_serial(s: &str) -> Option<Self> {
                Self::ALL.into_iter().find(|p| p.serial() == Some(s))
            }
        }
    };
}

primary_formats! {
    Nchw = 0, "FORMAT_NCHW", Some("NCHW");
    Nhwc = 1, "FORMAT_NHWC", Some("NHWC");
    Nd = 2, "FORMAT_ND", Some("ND");
    Nc1hwc0 = 3, "FORMAT_NC1HWC0", Some("NC1HWC0");
    FractalZ = 4, "FORMAT_FRACTAL_Z", Some("FRACTAL_Z");
    Nc1c0hwpad = 5, "FORMAT_NC1C0HWPAD", Some("NC1C0HWPAD");
    Nhwc1c0 = 6, "FORMAT_NHWC1C0", Some("NHWC1C0");
    FsrNchw = 7, "FORMAT_FSR_NCHW", Some("FSR_NCHW");
    FractalDeconv = 8, "FORMAT_FRACTAL_DECONV", Some("FRACTAL_DECONV");
    C1hwnc0 = 9, "FORMAT_C1HWNC0", Some("C1HWNC0");
    FractalDeconvTranspose = 10, "FORMAT_FRACTAL_DECONV_TRANSPOSE", Some("FRACTAL_DECONV_TRANSPOSE");
    FractalDeconvSpStrideTrans = 11, "FORMAT_FRACTAL_DECONV_SP_STRIDE_TRANS",
        Some("FRACTAL_DECONV_SP_STRIDE_TRANS");
    Nc1hwc0C04 = 12, "FORMAT_NC1HWC0_C04", Some("NC1HWC0_C04");
    FractalZC04 = 13, "FORMAT_FRACTAL_Z_C04", Some("FRACTAL_Z_C04");
    Chwn = 14, "FORMAT_CHWN", Some("CHWN");
    FractalDeconvSpStride8Trans = 15, "FORMAT_FRACTAL_DECONV_SP_STRIDE8_TRANS",
        Some("DECONV_SP_STRIDE8_TRANS");
    Hwcn = 16, "FORMAT_HWCN", Some("HWCN");
    Nc1khkwhwc0 = 17, "FORMAT_NC1KHKWHWC0", Some("NC1KHKWHWC0");
    BnWeight = 18, "FORMAT_BN_WEIGHT", Some("BN_WEIGHT");
    FilterHwck = 19, "FORMAT_FILTER_HWCK", Some("FILTER_HWCK");
    HashtableLookupLookups = 20, "FORMAT_HASHTABLE_LOOKUP_LOOKUPS", Some("LOOKUP_LOOKUPS");
    HashtableLookupKeys = 21, "FORMAT_HASHTABLE_LOOKUP_KEYS", Some("LOOKUP_KEYS");
    HashtableLookupValue = 22, "FORMAT_HASHTABLE_LOOKUP_VALUE", Some("LOOKUP_VALUE");
    HashtableLookupOutput = 23, "FORMAT_HASHTABLE_LOOKUP_OUTPUT", Some("LOOKUP_OUTPUT");
    HashtableLookupHits = 24, "FORMAT_HASHTABLE_LOOKUP_HITS", Some("LOOKUP_HITS");
    C1hwncoc0 = 25, "FORMAT_C1HWNCoC0", Some("C1HWNCoC0");
    Md = 26, "FORMAT_MD", Some("MD");
    Ndhwc = 27, "FORMAT_NDHWC", Some("NDHWC");
    FractalZz = 28, "FORMAT_FRACTAL_ZZ", None;
    FractalNz = 29, "FORMAT_FRACTAL_NZ", Some("FRACTAL_NZ");
    Ncdhw = 30, "FORMAT_NCDHW", Some("NCDHW");
    Dhwcn = 31, "FORMAT_DHWCN", Some("DHWCN");
    Ndc1hwc0 = 32, "FORMAT_NDC1HWC0", Some("NDC1HWC0");
    FractalZ3d = 33, "FORMAT_FRACTAL_Z_3D", Some("FRACTAL_Z_3D");
    Cn = 34, "FORMAT_CN", Some("CN");
    Nc = 35, "FORMAT_NC", Some("NC");
    Dhwnc = 36, "FORMAT_DHWNC", Some("DHWNC");
    FractalZ3dTranspose = 37, "FORMAT_FRACTAL_Z_3D_TRANSPOSE", Some("FRACTAL_Z_3D_TRANSPOSE");
    FractalZnLstm = 38, "FORMAT_FRACTAL_ZN_LSTM", Some("FRACTAL_ZN_LSTM");
    FractalZG = 39, "FORMAT_FRACTAL_Z_G", Some("FRACTAL_Z_G");
    Reserved = 40, "FORMAT_RESERVED", Some("FORMAT_RESERVED");
    All = 41, "FORMAT_ALL", Some("ALL");
    Null = 42, "FORMAT_NULL", Some("NULL");
    NdRnnBias = 43, "FORMAT_ND_RNN_BIAS", Some("ND_RNN_BIAS");
    FractalZnRnn = 44, "FORMAT_FRACTAL_ZN_RNN", Some("FRACTAL_ZN_RNN");
    Nyuv = 45, "FORMAT_NYUV", Some("NYUV");
    NyuvA = 46, "FORMAT_NYUV_A", Some("NYUV_A");
    Ncl = 47, "FORMAT_NCL", Some("NCL");
    FractalZWino = 48, "FORMAT_FRACTAL_Z_WINO", Some("FRACTAL_Z_WINO");
    C1hwc0 = 49, "FORMAT_C1HWC0", Some("C1HWC0");
    FractalNzC016 = 50, "FORMAT_FRACTAL_NZ_C0_16", Some("FRACTAL_NZ_C0_16");
    FractalNzC032 = 51, "FORMAT_FRACTAL_NZ_C0_32", Some("FRACTAL_NZ_C0_32");
    FractalNzC02 = 52, "FORMAT_FRACTAL_NZ_C0_2", Some("FRACTAL_NZ_C0_2");
    FractalNzC04 = 53, "FORMAT_FRACTAL_NZ_C0_4", Some("FRACTAL_NZ_C0_4");
    FractalNzC08 = 54, "FORMAT_FRACTAL_NZ_C0_8", Some("FRACTAL_NZ_C0_8");
    End = 55, "FORMAT_END", Some("END");
    Max = 255, "FORMAT_MAX", Some("MAX");
}

impl PrimaryFormat {
    /// GE's serial string (`FormatToSerialString`); FRACTAL_ZZ has no mapping and prints
    /// "RESERVED".
    pub const fn name(self) -> &'static str {
        match self.serial() {
            Some(s) => s,
            None => "RESERVED",
        }
    }

    /// Parses a serial string; "RESERVED" and "UNDEFINED" also give FORMAT_RESERVED.
    /// "FRACTAL_ZZ" is not accepted (GE has no string for it).
    pub fn from_name(s: &str) -> Option<Self> {
        match s {
            "RESERVED" | "UNDEFINED" => Some(PrimaryFormat::Reserved),
            _ => Self::from_serial(s),
        }
    }

    /// True for GE's internal ("private") device layouts (`IsInternalFormat`).
    pub const fn is_internal(self) -> bool {
        use PrimaryFormat::*;
        matches!(
            self,
            Nc1hwc0
                | FractalZ
                | Nc1c0hwpad
                | Nhwc1c0
                | FractalDeconv
                | C1hwnc0
                | FractalDeconvTranspose
                | FractalDeconvSpStrideTrans
                | Nc1hwc0C04
                | FractalZC04
                | FractalDeconvSpStride8Trans
                | Nc1khkwhwc0
                | C1hwncoc0
                | FractalZz
                | FractalNz
                | Ndc1hwc0
                | FractalZ3d
                | FractalZ3dTranspose
                | FractalZnLstm
                | FractalZG
                | NdRnnBias
                | FractalZnRnn
                | Nyuv
                | NyuvA
        )
    }
}

impl fmt::Display for PrimaryFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A full `ge::Format` int: primary format, sub-format and c0 format bit-packed.
#[derive(Copy, Clone, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub struct Format(u32);

impl Default for Format {
    fn default() -> Self {
        Format::ND
    }
}

impl From<PrimaryFormat> for Format {
    fn from(p: PrimaryFormat) -> Self {
        Format::new(p)
    }
}

impl Format {
    /// FORMAT_NCHW.
    pub const NCHW: Format = Format::new(PrimaryFormat::Nchw);
    /// FORMAT_NHWC.
    pub const NHWC: Format = Format::new(PrimaryFormat::Nhwc);
    /// FORMAT_ND.
    pub const ND: Format = Format::new(PrimaryFormat::Nd);
    /// FORMAT_NC1HWC0.
    pub const NC1HWC0: Format = Format::new(PrimaryFormat::Nc1hwc0);
    /// FORMAT_FRACTAL_Z.
    pub const FRACTAL_Z: Format = Format::new(PrimaryFormat::FractalZ);
    /// FORMAT_FRACTAL_NZ.
    pub const FRACTAL_NZ: Format = Format::new(PrimaryFormat::FractalNz);
    /// FORMAT_NCDHW.
    pub const NCDHW: Format = Format::new(PrimaryFormat::Ncdhw);
    /// FORMAT_NDHWC.
    pub const NDHWC: Format = Format::new(PrimaryFormat::Ndhwc);
    /// FORMAT_NDC1HWC0.
    pub const NDC1HWC0: Format = Format::new(PrimaryFormat::Ndc1hwc0);
    /// FORMAT_RESERVED.
    pub const RESERVED: Format = Format::new(PrimaryFormat::Reserved);
    /// FORMAT_HWCN.
    pub const HWCN: Format = Format::new(PrimaryFormat::Hwcn);
    /// FORMAT_CHWN.
    pub const CHWN: Format = Format::new(PrimaryFormat::Chwn);
    /// FORMAT_NC.
    pub const NC: Format = Format::new(PrimaryFormat::Nc);
    /// FORMAT_NCL.
    pub const NCL: Format = Format::new(PrimaryFormat::Ncl);

    /// The format with primary `p`, no sub-format and no c0 format.
    pub const fn new(p: PrimaryFormat) -> Self {
        Format(p as u32)
    }

    /// Unpacks a format int; errors if the primary byte is not a known primary format.
    pub fn from_raw(v: u32) -> Result<Self> {
        match PrimaryFormat::from_u8((v & 0xff) as u8) {
            Some(_) => Ok(Format(v)),
            None => Err(IrError::Invalid {
                what: "format",
                value: format!("{v:#x} (unknown primary format {})", v & 0xff),
            }),
        }
    }

    /// The packed int.
    pub const fn raw(self) -> u32 {
        self.0
    }

    /// The primary format (bits 0–7).
    pub fn primary(self) -> PrimaryFormat {
        // Every constructor checks the primary byte.
        PrimaryFormat::from_u8((self.0 & 0xff) as u8).unwrap_or(PrimaryFormat::Reserved)
    }

    /// The sub-format (bits 8–23), e.g. the group count of FRACTAL_Z.
    pub const fn sub_format(self) -> u16 {
        ((self.0 >> 8) & 0xffff) as u16
    }

    /// The c0 format (bits 24–27); 0 means none.
    pub const fn c0_format(self) -> u8 {
        ((self.0 >> 24) & 0xf) as u8
    }

    /// C0 = 1 << (c0_format − 1) when a c0 format is set.
    pub const fn c0(self) -> Option<u32> {
        match self.c0_format() {
            0 => None,
            c => Some(1u32 << (c - 1)),
        }
    }

    /// This format with sub-format `sub`.
    pub const fn with_sub_format(self, sub: u16) -> Self {
        Format((self.0 & !0x00ff_ff00) | ((sub as u32) << 8))
    }

    /// This format with c0 format `c0_format` (at most 15).
    pub fn with_c0_format(self, c0_format: u8) -> Result<Self> {
        if c0_format > 0xf {
            return Err(IrError::Invalid {
                what: "c0 format",
                value: format!("{c0_format} (at most 15)"),
            });
        }
        Ok(Format((self.0 & !0x0f00_0000) | ((c0_format as u32) << 24)))
    }

    /// True if the primary format is one of GE's internal layouts.
    pub fn is_internal(self) -> bool {
        self.primary().is_internal()
    }

    /// The layout string `"PRIMARY"` or `"PRIMARY:sub"` (c0 is not included; a primary
    /// without a string prints "RESERVED").
    pub fn to_layout_string(self) -> String {
        self.to_string()
    }

    /// Parses a layout string `"PRIMARY"` or `"PRIMARY:sub"`; rejects unknown names and
    /// sub-formats that are not integers in 0..=0xFFFF.
    pub fn parse_layout(s: &str) -> Result<Self> {
        let bad = |why: &str| IrError::Invalid {
            what: "format",
            value: format!("{s:?} ({why})"),
        };
        let (primary, sub) = match s.split_once(':') {
            Some((p, sub)) => {
                let n: u64 = sub
                    .parse()
                    .map_err(|_| bad("sub-format is not a non-negative integer"))?;
                let n = u16::try_from(n).map_err(|_| bad("sub-format exceeds 0xFFFF"))?;
                (p, n)
            }
            None => (s, 0),
        };
        let p = PrimaryFormat::from_name(primary).ok_or_else(|| bad("unknown primary format"))?;
        Ok(Format::new(p).with_sub_format(sub))
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.primary().serial() {
            Some(name) if self.sub_format() > 0 => write!(f, "{name}:{}", self.sub_format()),
            Some(name) => f.write_str(name),
            None => f.write_str("RESERVED"),
        }
    }
}

impl FromStr for Format {
    type Err = IrError;

    fn from_str(s: &str) -> Result<Self> {
        Format::parse_layout(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primary_values_and_names_round_trip() {
        for (i, p) in PrimaryFormat::ALL.iter().enumerate() {
            let v = *p as u8;
            if i <= 55 {
                assert_eq!(v as usize, i);
            } else {
                assert_eq!(v, 255);
            }
            assert_eq!(PrimaryFormat::from_u8(v), Some(*p));
            assert!(p.enum_name().starts_with("FORMAT_"));
            if *p == PrimaryFormat::FractalZz {
                assert_eq!(p.name(), "RESERVED");
                assert_eq!(PrimaryFormat::from_name("FRACTAL_ZZ"), None);
            } else {
                assert_eq!(PrimaryFormat::from_name(p.name()), Some(*p), "{p:?}");
                let f = Format::new(*p);
                assert_eq!(f.to_string().parse::<Format>().unwrap(), f);
            }
        }
        for v in 56..=254u8 {
            assert_eq!(PrimaryFormat::from_u8(v), None);
        }
    }

    #[test]
    fn special_names() {
        use PrimaryFormat as P;
        assert_eq!(
            P::FractalDeconvSpStride8Trans.name(),
            "DECONV_SP_STRIDE8_TRANS"
        );
        assert_eq!(P::HashtableLookupHits.name(), "LOOKUP_HITS");
        assert_eq!(P::C1hwncoc0.name(), "C1HWNCoC0");
        assert_eq!(P::Reserved.name(), "FORMAT_RESERVED");
        assert_eq!(P::All.name(), "ALL");
        assert_eq!(P::Max.name(), "MAX");
        assert_eq!(P::End.name(), "END");
        assert_eq!(P::FractalZz.enum_name(), "FORMAT_FRACTAL_ZZ");
        assert_eq!(P::from_name("RESERVED"), Some(P::Reserved));
        assert_eq!(P::from_name("UNDEFINED"), Some(P::Reserved));
        assert_eq!(P::from_name("FORMAT_NCHW"), None);
        assert_eq!(
            Format::new(P::FractalZz).with_sub_format(3).to_string(),
            "RESERVED"
        );
    }

    #[test]
    fn bit_packing_round_trip() {
        let f = Format::FRACTAL_Z.with_sub_format(16);
        assert_eq!(f.raw(), 4 | (16 << 8));
        assert_eq!(f.to_string(), "FRACTAL_Z:16");
        assert_eq!("FRACTAL_Z:16".parse::<Format>().unwrap(), f);
        let g = f.with_c0_format(5).unwrap();
        assert_eq!(g.raw(), 4 | (16 << 8) | (5 << 24));
        assert_eq!(g.primary(), PrimaryFormat::FractalZ);
        assert_eq!(g.sub_format(), 16);
        assert_eq!(g.c0_format(), 5);
        assert_eq!(g.c0(), Some(16));
        assert_eq!(f.c0(), None);
        // c0 is not part of the layout string.
        assert_eq!(g.to_layout_string(), "FRACTAL_Z:16");
        assert_eq!(Format::from_raw(g.raw()).unwrap(), g);
        let h = g.with_sub_format(0xffff).with_c0_format(15).unwrap();
        assert_eq!(h.sub_format(), 0xffff);
        assert_eq!(h.c0_format(), 15);
        assert_eq!(h.primary(), PrimaryFormat::FractalZ);
        assert!(g.with_c0_format(16).is_err());
        assert_eq!(Format::default(), Format::ND);
        assert_eq!(Format::from(PrimaryFormat::Nchw), Format::NCHW);
        assert_eq!("FRACTAL_Z:0".parse::<Format>().unwrap(), Format::FRACTAL_Z);
    }

    #[test]
    fn from_raw_rejects_unknown_primary() {
        assert!(Format::from_raw(56).is_err());
        assert!(Format::from_raw(0x0100_0038).is_err());
        assert_eq!(Format::from_raw(255).unwrap().primary(), PrimaryFormat::Max);
    }

    #[test]
    fn parse_rejects_bad_input() {
        let e = "FRACTAL_Z:65536".parse::<Format>().unwrap_err();
        assert!(matches!(e, IrError::Invalid { what: "format", .. }));
        assert!("FRACTAL_Z:65535".parse::<Format>().is_ok());
        assert!("FRACTAL_Z:-1".parse::<Format>().is_err());
        assert!("FRACTAL_Z:x".parse::<Format>().is_err());
        assert!("FRACTAL_Z:".parse::<Format>().is_err());
        assert!("NOPE".parse::<Format>().is_err());
        assert!("nchw".parse::<Format>().is_err());
        assert_eq!("RESERVED".parse::<Format>().unwrap(), Format::RESERVED);
    }

    #[test]
    fn internal_formats() {
        assert!(Format::NC1HWC0.is_internal());
        assert!(Format::FRACTAL_NZ.is_internal());
        assert!(Format::new(PrimaryFormat::NyuvA).is_internal());
        assert!(!Format::ND.is_internal());
        assert!(!Format::NCHW.is_internal());
        assert!(!Format::new(PrimaryFormat::FractalZWino).is_internal());
        let n = PrimaryFormat::ALL
            .iter()
            .filter(|p| p.is_internal())
            .count();
        assert_eq!(n, 24);
    }
}
