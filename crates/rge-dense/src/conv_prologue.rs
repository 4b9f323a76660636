//! The input prologue of FusedConvNhwc: the convolution reads its input as the parts of a
//! channel concatenation (inputs 0 and 6…, each `[N, H, W, Cᵢ]`) and maps it per channel to
//! `act(X·S + H)` (inputs S and H, `input_activation`), while it reads it. DenseNet's
//! pre-activation (a Concat, a BatchNormalization and Relu before each 1×1 convolution;
//! `prologue_fold.rs` folds them in) otherwise makes two passes of their own over every
//! concatenation, each written to memory whole and read back.
//!
//! A pointwise convolution (1×1, stride 1, unpadded) reads its input in bands of pixels small
//! enough to stay in L2 ([`band_pixels`]), each band convolved right after; the band is the
//! whole input of a run over its pixels. Any other convolution reads the whole image first
//! (zero padding then applies to the mapped values, as in the unfused graph).
//!
//! `X·S` and `+ H` are rounded apart (no FMA), as the Mul and Add they replace: the fused and
//! unfused graphs give the same values.

use crate::conv_nhwc::DIRECT_PIXEL_ALIGN;
use crate::depthwise::Isa;
use crate::gemm::{activation, Activation};
use rge_simd::{Scalar, Simd};

/// The attribute naming the prologue's activation (as `activation` names the epilogue's).
pub const INPUT_ACTIVATION: &str = "input_activation";
/// The prologue activation's parameters (as `activation_params`).
pub const INPUT_ACTIVATION_PARAMS: &str = "input_activation_params";
/// The first input holding a further part of the concatenated input (input 0 is the first).
pub const FIRST_EXTRA_PART: usize = 6;

/// Bytes of one band of the read input: with a block of weights beside it, within a 512 KiB
/// L2.
const BAND_BYTES: usize = 256 * 1024;

/// Pixels per band of a pointwise convolution with `cin` input channels: a multiple of 12 (the
/// widest register tile), at least one tile.
pub fn band_pixels(cin: usize) -> usize {
    (BAND_BYTES / (4 * cin.max(1)) / DIRECT_PIXEL_ALIGN).max(1) * DIRECT_PIXEL_ALIGN
}

/// The per-channel map: a scale and a shift per input channel, then an activation.
#[derive(Debug, Clone, Copy)]
pub struct Affine<'a> {
    pub scale: &'a [f32],
    pub shift: &'a [f32],
    pub act: Activation,
}

/// How a convolution reads its input: the parts of its channels, each `[pixels, Cᵢ]` (one
/// part when the input is one tensor), then the per-channel map when there is one.
#[derive(Debug, Clone)]
pub struct InputRead<'a> {
    pub parts: Vec<(&'a [f32], usize)>,
    pub affine: Option<Affine<'a>>,
}

impl InputRead<'_> {
    /// The input channels: the parts' together.
    pub fn channels(&self) -> usize {
        self.parts.iter().map(|p| p.1).sum()
    }

    /// Whether reading the input does anything but take input 0 as it is.
    pub fn is_plain(&self) -> bool {
        self.parts.len() == 1 && self.affine.is_none()
    }

    /// Pixels `[p0, p1)` of the input as the convolution reads it into `dst` (`(p1 - p0)·C`
    /// floats). Falls back to the baseline when the CPU lacks `isa`.
    ///
    /// # Panics
    /// When a part is shorter than `p1` pixels, `dst` is not `(p1 - p0)·C` floats or the map
    /// does not have `C` channels (a caller's bug: the kernel checks the operands' shapes).
    pub fn read(&self, isa: Isa, (p0, p1): (usize, usize), dst: &mut [f32]) {
        let c = self.channels();
        assert!(p0 <= p1 && dst.len() == (p1 - p0) * c);
        assert!(self.parts.iter().all(|&(x, ci)| x.len() >= p1 * ci));
        assert!(self
            .affine
            .is_none_or(|a| a.scale.len() == c && a.shift.len() == c));
        // SAFETY (each arm): the ISA is available (checked in the arm's guard); the lengths were
        // checked above.
        unsafe {
            match isa {
                #[cfg(target_arch = "x86_64")]
                Isa::Avx512 if Isa::Avx512.is_available() => read_avx512(self, (p0, p1), dst),
                #[cfg(target_arch = "x86_64")]
                Isa::Avx2 if Isa::Avx2.is_available() => read_avx2(self, (p0, p1), dst),
                _ => read_simd(Scalar, self, (p0, p1), dst),
            }
        }
    }
}

/// Pixel after pixel, part after part: channel vectors then a short last one.
///
/// # Safety
/// The token `s` must be of an ISA this CPU runs; the lengths as [`InputRead::read`] checks.
#[inline(always)]
unsafe fn read_simd<S: Simd>(s: S, r: &InputRead<'_>, (p0, p1): (usize, usize), dst: &mut [f32]) {
    let c = r.channels();
    for (p, y) in (p0..p1).zip(dst.chunks_exact_mut(c)) {
        let mut off = 0;
        for &(x, ci) in &r.parts {
            let src = &x[p * ci..(p + 1) * ci];
            let out = &mut y[off..off + ci];
            match r.affine {
                None => out.copy_from_slice(src),
                Some(a) => {
                    let (sp, hp) = (a.scale[off..].as_ptr(), a.shift[off..].as_ptr());
                    let (xp, yp) = (src.as_ptr(), out.as_mut_ptr());
                    let mut i = 0;
                    while i + S::LANES <= ci {
                        // SAFETY: i + LANES <= ci for the part's pixel, its output and its
                        // channels of S and H.
                        unsafe {
                            let v = s.mul(s.load(xp.add(i)), s.load(sp.add(i)));
                            let v = s.add(v, s.load(hp.add(i)));
                            s.store(yp.add(i), activation(s, &a.act, v));
                        }
                        i += S::LANES;
                    }
                    if i < ci {
                        let l = ci - i;
                        // SAFETY: l < LANES channels remain in each.
                        unsafe {
                            let v = s.mul(s.load_n(xp.add(i), l, 0.0), s.load_n(sp.add(i), l, 0.0));
                            let v = s.add(v, s.load_n(hp.add(i), l, 0.0));
                            s.store_n(yp.add(i), activation(s, &a.act, v), l);
                        }
                    }
                }
            }
            off += ci;
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn read_avx512(r: &InputRead<'_>, px: (usize, usize), dst: &mut [f32]) {
    // SAFETY: reached only from `InputRead::read` after the ISA check.
    let s = unsafe { rge_simd::Avx512::new_unchecked() };
    // SAFETY: as this function's.
    unsafe { read_simd(s, r, px, dst) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn read_avx2(r: &InputRead<'_>, px: (usize, usize), dst: &mut [f32]) {
    // SAFETY: reached only from `InputRead::read` after the ISA check.
    let s = unsafe { rge_simd::Avx2::new_unchecked() };
    // SAFETY: as this function's.
    unsafe { read_simd(s, r, px, dst) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every ISA gives the formula's values bit for bit: whole vectors and short tails, one part
    /// or several, with and without the map, a range of pixels not from 0.
    #[test]
    fn every_isa_matches_the_formula() {
        let value = |i: usize| (i as f32 * 0.37).sin() * 3.0;
        for widths in [&[1usize][..], &[7], &[8, 19], &[64, 3, 32]] {
            let c: usize = widths.iter().sum();
            let pixels = 5;
            let parts: Vec<Vec<f32>> = widths
                .iter()
                .enumerate()
                .map(|(k, &w)| (0..w * pixels).map(|i| value(i + 100 * k)).collect())
                .collect();
            let scale: Vec<f32> = (0..c).map(|i| 0.5 + i as f32 * 0.1).collect();
            let shift: Vec<f32> = (0..c).map(|i| (i as f32 * 0.7).cos()).collect();
            let acts = [
                None,
                Some(Activation::None),
                Some(Activation::Relu),
                Some(Activation::Clip {
                    min: -0.5,
                    max: 1.0,
                }),
            ];
            for act in acts {
                let read = InputRead {
                    parts: parts
                        .iter()
                        .map(Vec::as_slice)
                        .zip(widths.iter().copied())
                        .collect(),
                    affine: act.map(|act| Affine {
                        scale: &scale,
                        shift: &shift,
                        act,
                    }),
                };
                let mut want = Vec::new();
                for p in 1..pixels {
                    for (k, &w) in widths.iter().enumerate() {
                        let off: usize = widths[..k].iter().sum();
                        for j in 0..w {
                            let x = parts[k][p * w + j];
                            want.push(match act {
                                None => x,
                                Some(a) => {
                                    let v = x * scale[off + j] + shift[off + j];
                                    match a {
                                        Activation::Relu => v.max(0.0),
                                        Activation::Clip { min, max } => v.max(min).min(max),
                                        _ => v,
                                    }
                                }
                            });
                        }
                    }
                }
                for isa in Isa::available() {
                    let mut got = vec![f32::NAN; want.len()];
                    read.read(isa, (1, pixels), &mut got);
                    assert_eq!(got, want, "{isa:?}, parts {widths:?}, {act:?}");
                }
            }
        }
    }

    #[test]
    fn bands_are_whole_tiles_within_the_budget() {
        for cin in [1, 32, 128, 992, 1024, 100_000] {
            let b = band_pixels(cin);
            assert!(b >= 12 && b.is_multiple_of(12), "{cin}: {b}");
            assert!(b == 12 || b * cin * 4 <= BAND_BYTES, "{cin}: {b}");
        }
    }
}
