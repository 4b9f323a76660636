//! ImageDecoder (20): decodes an encoded image (uint8 bytes) to [H, W, 3] RGB or BGR, or
//! [H, W, 1] grayscale. Built-in decoders, no image crates: BMP, PNM (P2/P3/P5/P6), TIFF
//! (uncompressed or PackBits, 8-bit chunky), PNG (own inflate) and baseline JPEG (bit-exact
//! with libjpeg's integer IDCT and fancy upsampling, as Pillow decodes). WebP and JPEG 2000
//! are reported as unsupported.
//!
//! Not registered on the cpu engine: ImageDecoder runs on the `media` engine (`rge-media`),
//! which decodes JPEG with [`decode_jpeg`] (bit-exact with libjpeg, as Pillow decodes) and the
//! other formats with the `image` crate. [`create_image_decoder`] stays for callers that
//! want this decoder on its own.

mod jpeg;
mod png;

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

/// A decoded picture: 1 (gray) or 3 (RGB) interleaved 8-bit channels.
pub(crate) struct Picture {
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub data: Vec<u8>,
}

impl Picture {
    fn checked(width: usize, height: usize, channels: usize, data: Vec<u8>) -> KernelResult<Self> {
        if data.len() != width * height * channels {
            return Err(bad("pixel data size does not match the header"));
        }
        Ok(Picture {
            width,
            height,
            channels,
            data,
        })
    }
}

pub(crate) fn bad(msg: &str) -> KernelError {
    KernelError::invalid(format!("ImageDecoder: {msg}"))
}

/// The most pixels a decoded image may have (guards allocations on hostile headers).
pub(crate) const MAX_PIXELS: usize = 1 << 28;

pub(crate) fn check_dims(w: usize, h: usize) -> KernelResult<()> {
    if w == 0 || h == 0 || w.checked_mul(h).is_none_or(|n| n > MAX_PIXELS) {
        return Err(bad(&format!("image size {w}x{h} is out of range")));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum PixelFormat {
    Rgb,
    Bgr,
    Gray,
}

struct ImageDecoder {
    format: PixelFormat,
}

pub fn create_image_decoder(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let format = match init.str_or("pixel_format", "RGB")? {
        "RGB" => PixelFormat::Rgb,
        "BGR" => PixelFormat::Bgr,
        "Grayscale" => PixelFormat::Gray,
        other => {
            return Err(KernelError::attr(
                "pixel_format",
                format!("unknown pixel format '{other}'"),
            ))
        }
    };
    Ok(Box::new(ImageDecoder { format }))
}

/// Baseline JPEG decoded as libjpeg does (integer IDCT, fancy upsampling): (width, height,
/// channels 1 or 3, interleaved samples).
pub fn decode_jpeg(b: &[u8]) -> KernelResult<(usize, usize, usize, Vec<u8>)> {
    let p = jpeg::decode(b)?;
    Ok((p.width, p.height, p.channels, p.data))
}

/// Decodes by sniffing the signature.
pub(crate) fn decode(b: &[u8]) -> KernelResult<Picture> {
    if b.starts_with(&[0xFF, 0xD8]) {
        jpeg::decode(b)
    } else if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        png::decode(b)
    } else if b.starts_with(b"BM") {
        decode_bmp(b)
    } else if b.starts_with(b"II*\0") || b.starts_with(b"MM\0*") {
        decode_tiff(b)
    } else if b.len() >= 2 && b[0] == b'P' && matches!(b[1], b'2' | b'3' | b'5' | b'6') {
        decode_pnm(b)
    } else if b.len() >= 12 && &b[..4] == b"RIFF" && &b[8..12] == b"WEBP" {
        Err(KernelError::unsupported("ImageDecoder: WebP images"))
    } else if b.starts_with(b"\0\0\0\x0cjP  ") || b.starts_with(&[0xFF, 0x4F, 0xFF, 0x51]) {
        Err(KernelError::unsupported("ImageDecoder: JPEG 2000 images"))
    } else {
        Err(bad("unknown image format"))
    }
}

impl Kernel for ImageDecoder {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let pic = decode(x.as_slice::<u8>()?)?;
        let (w, h) = (pic.width, pic.height);
        match self.format {
            PixelFormat::Gray => {
                let out = ctx.output::<u8>(0, &[h, w, 1])?;
                if pic.channels == 1 {
                    out.copy_from_slice(&pic.data);
                } else {
                    for (o, p) in out.iter_mut().zip(pic.data.chunks_exact(3)) {
                        *o = luma(p[0], p[1], p[2]);
                    }
                }
            }
            PixelFormat::Rgb | PixelFormat::Bgr => {
                let out = ctx.output::<u8>(0, &[h, w, 3])?;
                let bgr = self.format == PixelFormat::Bgr;
                if pic.channels == 1 {
                    for (o, &g) in out.chunks_exact_mut(3).zip(&pic.data) {
                        o.fill(g);
                    }
                } else {
                    for (o, p) in out.chunks_exact_mut(3).zip(pic.data.chunks_exact(3)) {
                        if bgr {
                            o.copy_from_slice(&[p[2], p[1], p[0]]);
                        } else {
                            o.copy_from_slice(p);
                        }
                    }
                }
            }
        }
        Ok(())
    }
}

/// ITU-R 601 luma in Pillow's fixed point (RGB → L).
fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((r as u32 * 19595 + g as u32 * 38470 + b as u32 * 7471 + 0x8000) >> 16) as u8
}

fn le16(b: &[u8], at: usize) -> KernelResult<u16> {
    b.get(at..at + 2)
        .map(|s| u16::from_le_bytes([s[0], s[1]]))
        .ok_or_else(|| bad("truncated header"))
}

fn le32(b: &[u8], at: usize) -> KernelResult<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| bad("truncated header"))
}

/// Uncompressed BMP: 8-bit paletted, 24- or 32-bit, bottom-up or top-down.
fn decode_bmp(b: &[u8]) -> KernelResult<Picture> {
    let data_off = le32(b, 10)? as usize;
    let header_size = le32(b, 14)? as usize;
    let w = le32(b, 18)? as i32;
    let h = le32(b, 22)? as i32;
    let bpp = le16(b, 28)?;
    let compression = le32(b, 30)?;
    if w <= 0 || h == 0 || !(compression == 0 || (compression == 3 && bpp == 32)) {
        return Err(KernelError::unsupported(
            "ImageDecoder: compressed or odd BMP",
        ));
    }
    let (width, height) = (w as usize, h.unsigned_abs() as usize);
    check_dims(width, height)?;
    let bottom_up = h > 0;
    let palette: Vec<[u8; 3]> = if bpp == 8 {
        let n = match le32(b, 46)? {
            0 => 256,
            n => n.min(256) as usize,
        };
        let start = 14 + header_size;
        (0..n)
            .map(|i| {
                let p = b
                    .get(start + 4 * i..start + 4 * i + 3)
                    .ok_or_else(|| bad("truncated palette"))?;
                Ok([p[2], p[1], p[0]])
            })
            .collect::<KernelResult<_>>()?
    } else {
        Vec::new()
    };
    let bytes_pp = match bpp {
        8 => 1,
        24 => 3,
        32 => 4,
        _ => {
            return Err(KernelError::unsupported(format!(
                "ImageDecoder: {bpp}-bit BMP"
            )))
        }
    };
    let stride = (width * bytes_pp).div_ceil(4) * 4;
    let mut out = Vec::with_capacity(width * height * 3);
    for y in 0..height {
        let row_idx = if bottom_up { height - 1 - y } else { y };
        let start = data_off + row_idx * stride;
        let row = b
            .get(start..start + width * bytes_pp)
            .ok_or_else(|| bad("truncated BMP pixel data"))?;
        for px in row.chunks_exact(bytes_pp) {
            if bytes_pp == 1 {
                let c = palette
                    .get(px[0] as usize)
                    .ok_or_else(|| bad("palette index out of range"))?;
                out.extend_from_slice(c);
            } else {
                out.extend_from_slice(&[px[2], px[1], px[0]]);
            }
        }
    }
    Picture::checked(width, height, 3, out)
}

/// PNM: P2/P5 (gray) and P3/P6 (RGB), maxval up to 255 (scaled to 255).
fn decode_pnm(b: &[u8]) -> KernelResult<Picture> {
    let ascii = matches!(b[1], b'2' | b'3');
    let channels = if matches!(b[1], b'3' | b'6') { 3 } else { 1 };
    let mut pos = 2;
    let next_num = |pos: &mut usize| -> KernelResult<usize> {
        loop {
            match b.get(*pos) {
                Some(c) if c.is_ascii_whitespace() => *pos += 1,
                Some(b'#') => {
                    while b.get(*pos).is_some_and(|&c| c != b'\n') {
                        *pos += 1;
                    }
                }
                Some(c) if c.is_ascii_digit() => break,
                _ => return Err(bad("malformed PNM header")),
            }
        }
        let mut v: usize = 0;
        while let Some(c) = b.get(*pos).filter(|c| c.is_ascii_digit()) {
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add((c - b'0') as usize))
                .ok_or_else(|| bad("PNM number overflows"))?;
            *pos += 1;
        }
        Ok(v)
    };
    let width = next_num(&mut pos)?;
    let height = next_num(&mut pos)?;
    let maxval = next_num(&mut pos)?;
    check_dims(width, height)?;
    if maxval == 0 || maxval > 255 {
        return Err(KernelError::unsupported(
            "ImageDecoder: PNM maxval above 255",
        ));
    }
    let n = width * height * channels;
    let raw: Vec<usize> = if ascii {
        (0..n)
            .map(|_| next_num(&mut pos))
            .collect::<KernelResult<_>>()?
    } else {
        pos += 1; // the single whitespace after maxval
        b.get(pos..pos + n)
            .ok_or_else(|| bad("truncated PNM pixel data"))?
            .iter()
            .map(|&v| v as usize)
            .collect()
    };
    let out = raw
        .into_iter()
        .map(|v| {
            let v = v.min(maxval);
            if maxval == 255 {
                v as u8
            } else {
                ((v * 255 + maxval / 2) / maxval) as u8
            }
        })
        .collect();
    Picture::checked(width, height, channels, out)
}

/// Baseline TIFF: 8-bit chunky gray or RGB(A), uncompressed or PackBits, in strips.
fn decode_tiff(b: &[u8]) -> KernelResult<Picture> {
    let le = b[0] == b'I';
    let u16_at = |at: usize| -> KernelResult<u32> {
        let s = b.get(at..at + 2).ok_or_else(|| bad("truncated TIFF"))?;
        Ok(if le {
            u16::from_le_bytes([s[0], s[1]])
        } else {
            u16::from_be_bytes([s[0], s[1]])
        } as u32)
    };
    let u32_at = |at: usize| -> KernelResult<u32> {
        let s = b.get(at..at + 4).ok_or_else(|| bad("truncated TIFF"))?;
        let a = [s[0], s[1], s[2], s[3]];
        Ok(if le {
            u32::from_le_bytes(a)
        } else {
            u32::from_be_bytes(a)
        })
    };
    let ifd = u32_at(4)? as usize;
    let count = u16_at(ifd)? as usize;
    // Values of a tag (SHORT or LONG), inline or at an offset.
    let values = |entry: usize| -> KernelResult<Vec<u32>> {
        let typ = u16_at(entry + 2)?;
        let n = u32_at(entry + 4)? as usize;
        let size = match typ {
            3 => 2,
            4 => 4,
            _ => return Ok(Vec::new()),
        };
        if n > 1 << 24 {
            return Err(bad("TIFF tag too long"));
        }
        let base = if n * size <= 4 {
            entry + 8
        } else {
            u32_at(entry + 8)? as usize
        };
        (0..n)
            .map(|i| {
                if size == 2 {
                    u16_at(base + 2 * i)
                } else {
                    u32_at(base + 4 * i)
                }
            })
            .collect()
    };
    let (mut w, mut h, mut bits, mut comp, mut photo, mut spp, mut rps, mut planar) =
        (0, 0, vec![1], 1, 1, 1, u32::MAX, 1);
    let (mut offsets, mut counts) = (Vec::new(), Vec::new());
    for i in 0..count {
        let e = ifd + 2 + 12 * i;
        let tag = u16_at(e)?;
        let v = values(e)?;
        let first = v.first().copied().unwrap_or(0);
        match tag {
            256 => w = first,
            257 => h = first,
            258 => bits = v,
            259 => comp = first,
            262 => photo = first,
            273 => offsets = v,
            277 => spp = first,
            278 => rps = first,
            279 => counts = v,
            284 => planar = first,
            _ => {}
        }
    }
    let (width, height, spp) = (w as usize, h as usize, spp as usize);
    check_dims(width, height)?;
    if bits.iter().any(|&b| b != 8) || planar != 1 || !(1..=4).contains(&spp) || photo > 2 {
        return Err(KernelError::unsupported(
            "ImageDecoder: TIFF layout (needs 8-bit chunky gray/RGB)",
        ));
    }
    if offsets.len() != counts.len() {
        return Err(bad("TIFF strip tables differ in length"));
    }
    let need = width * height * spp;
    let mut raw = Vec::with_capacity(need);
    for (&o, &c) in offsets.iter().zip(&counts) {
        let strip = b
            .get(o as usize..o as usize + c as usize)
            .ok_or_else(|| bad("TIFF strip outside the file"))?;
        match comp {
            1 => raw.extend_from_slice(strip),
            32773 => unpack_bits(strip, &mut raw, need)?,
            _ => {
                return Err(KernelError::unsupported(format!(
                    "ImageDecoder: TIFF compression {comp}"
                )))
            }
        }
    }
    let _ = rps;
    if raw.len() < need {
        return Err(bad("TIFF pixel data is short"));
    }
    raw.truncate(need);
    let (channels, out) = if spp >= 3 {
        (
            3,
            raw.chunks_exact(spp)
                .flat_map(|p| [p[0], p[1], p[2]])
                .collect(),
        )
    } else {
        let inv = photo == 0;
        (
            1,
            raw.chunks_exact(spp)
                .map(|p| if inv { 255 - p[0] } else { p[0] })
                .collect(),
        )
    };
    Picture::checked(width, height, channels, out)
}

fn unpack_bits(src: &[u8], out: &mut Vec<u8>, limit: usize) -> KernelResult<()> {
    let mut i = 0;
    while i < src.len() && out.len() < limit {
        let n = src[i] as i8;
        i += 1;
        if n >= 0 {
            let len = n as usize + 1;
            out.extend_from_slice(
                src.get(i..i + len)
                    .ok_or_else(|| bad("truncated PackBits run"))?,
            );
            i += len;
        } else if n != -128 {
            let v = *src.get(i).ok_or_else(|| bad("truncated PackBits run"))?;
            out.extend(std::iter::repeat_n(v, (1 - n as isize) as usize));
            i += 1;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_formats_decode_and_garbage_fails_cleanly() {
        let p = decode(b"P6\n2 1\n255\n\x01\x02\x03\x04\x05\x06").unwrap();
        assert_eq!((p.width, p.height, p.channels), (2, 1, 3));
        assert_eq!(p.data, [1, 2, 3, 4, 5, 6]);
        let g = decode(b"P2 2 1 # c\n 15 0 15").unwrap();
        assert_eq!(g.data, [0, 255]);
        for junk in [
            &b"P6\n2 1\n255\n\x01"[..],
            b"BM",
            b"II*\0\x08",
            b"\xFF\xD8\xFF",
            b"\x89PNG\r\n\x1a\n",
            b"xyz",
        ] {
            assert!(decode(junk).is_err());
        }
        assert_eq!(luma(255, 255, 255), 255);
        assert_eq!(luma(0, 0, 0), 0);
    }
}
