//! Colour conversion between RGB, BGR, GRAY and YUV420SP (NV12: Y plane then interleaved
//! U,V; NV21: V,U), BT.601 limited range as DVPP and OpenCV's `COLOR_YUV2RGB_NV12` use.

use crate::decode::luma;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColorFormat {
    Rgb,
    Bgr,
    Gray,
    Nv12,
    Nv21,
}

impl ColorFormat {
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "RGB" => ColorFormat::Rgb,
            "BGR" => ColorFormat::Bgr,
            "GRAY" => ColorFormat::Gray,
            "NV12" => ColorFormat::Nv12,
            "NV21" => ColorFormat::Nv21,
            _ => return None,
        })
    }

    pub fn is_yuv(self) -> bool {
        matches!(self, ColorFormat::Nv12 | ColorFormat::Nv21)
    }
}

fn clamp(v: f64) -> u8 {
    v.round().clamp(0.0, 255.0) as u8
}

/// `h × w` pixels of `fmt` to interleaved RGB.
pub fn to_rgb(src: &[u8], fmt: ColorFormat, h: usize, w: usize) -> Vec<u8> {
    match fmt {
        ColorFormat::Rgb => src.to_vec(),
        ColorFormat::Bgr => src
            .chunks_exact(3)
            .flat_map(|p| [p[2], p[1], p[0]])
            .collect(),
        ColorFormat::Gray => src.iter().flat_map(|&g| [g; 3]).collect(),
        ColorFormat::Nv12 | ColorFormat::Nv21 => {
            let (y_plane, uv) = src.split_at(h * w);
            let mut out = Vec::with_capacity(h * w * 3);
            for r in 0..h {
                for c in 0..w {
                    let y = 1.164 * (f64::from(y_plane[r * w + c]) - 16.0);
                    let k = (r / 2) * w + (c / 2) * 2;
                    let (a, b) = (f64::from(uv[k]) - 128.0, f64::from(uv[k + 1]) - 128.0);
                    let (u, v) = if fmt == ColorFormat::Nv12 {
                        (a, b)
                    } else {
                        (b, a)
                    };
                    out.extend_from_slice(&[
                        clamp(y + 1.596 * v),
                        clamp(y - 0.813 * v - 0.391 * u),
                        clamp(y + 2.018 * u),
                    ]);
                }
            }
            out
        }
    }
}

/// Interleaved RGB to `fmt` (`h`, `w` even for the YUV formats).
pub fn from_rgb(rgb: &[u8], fmt: ColorFormat, h: usize, w: usize) -> Vec<u8> {
    match fmt {
        ColorFormat::Rgb => rgb.to_vec(),
        ColorFormat::Bgr => rgb
            .chunks_exact(3)
            .flat_map(|p| [p[2], p[1], p[0]])
            .collect(),
        ColorFormat::Gray => rgb
            .chunks_exact(3)
            .map(|p| luma(p[0], p[1], p[2]))
            .collect(),
        ColorFormat::Nv12 | ColorFormat::Nv21 => {
            let px = |r: usize, c: usize| {
                let p = &rgb[(r * w + c) * 3..][..3];
                (f64::from(p[0]), f64::from(p[1]), f64::from(p[2]))
            };
            let mut out = Vec::with_capacity(h * w * 3 / 2);
            for r in 0..h {
                for c in 0..w {
                    let (r_, g_, b_) = px(r, c);
                    out.push(clamp(0.257 * r_ + 0.504 * g_ + 0.098 * b_ + 16.0));
                }
            }
            for r in (0..h).step_by(2) {
                for c in (0..w).step_by(2) {
                    let (mut u, mut v) = (0.0, 0.0);
                    for (dr, dc) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
                        let (r_, g_, b_) = px(r + dr, c + dc);
                        u += -0.148 * r_ - 0.291 * g_ + 0.439 * b_ + 128.0;
                        v += 0.439 * r_ - 0.368 * g_ - 0.071 * b_ + 128.0;
                    }
                    let (u, v) = (clamp(u / 4.0), clamp(v / 4.0));
                    if fmt == ColorFormat::Nv12 {
                        out.extend_from_slice(&[u, v]);
                    } else {
                        out.extend_from_slice(&[v, u]);
                    }
                }
            }
            out
        }
    }
}
