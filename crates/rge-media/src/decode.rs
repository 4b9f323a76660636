//! Image decode: PNG, BMP, WebP (lossy and lossless), PNM, TIFF and progressive JPEG through
//! the `image` crate, baseline JPEG through rge's libjpeg-exact decoder (`rge-kernels-misc`),
//! JPEG 2000 (JP2 or a raw codestream) through `hayro-jpeg2000`. The header's size is
//! read by [`declared_size`] (JPEG's SOF, PNG's IHDR, BMP's info header, WebP's VP8/VP8L/VP8X,
//! JPEG 2000's ihdr and SIZ) and checked against [`MAX_SIDE`] and [`MAX_PIXELS`] before any
//! decoder is built, so a hostile header is an error, never an allocation it sized; the
//! `image` crate's decoders (PNM, TIFF too) also get [`Limits`] before they read the header.

use std::io::Cursor;

use image::{ImageDecoder, ImageReader, Limits};

/// The longest side a decoded image may have.
pub const MAX_SIDE: u32 = 1 << 15;
/// The most pixels a decoded image may have (64 Mi: 192 MiB as RGB).
pub const MAX_PIXELS: u64 = 1 << 26;

/// Why an image does not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("the encoded image is empty")]
    Empty,
    #[error("not an image in a known format (JPEG, PNG, BMP, WebP, PNM, TIFF, JPEG 2000)")]
    UnknownFormat,
    #[error("the header declares {width}x{height} pixels, over the limit of {MAX_SIDE} per side and {MAX_PIXELS} in all")]
    TooLarge { width: u64, height: u64 },
    #[error("corrupt or truncated {format} image: {msg}")]
    Corrupt { format: &'static str, msg: String },
}

/// The channels a caller wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channels {
    Rgb,
    Gray,
}

/// A decoded picture: `height × width × channels` interleaved 8-bit samples.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    pub width: usize,
    pub height: usize,
    pub channels: usize,
    pub data: Vec<u8>,
}

/// Checks a header's size against the limits.
pub fn check_size(width: u64, height: u64) -> Result<(), DecodeError> {
    if width == 0 || height == 0 {
        return Err(DecodeError::Corrupt {
            format: "image",
            msg: format!("the header declares {width}x{height} pixels"),
        });
    }
    if width > u64::from(MAX_SIDE) || height > u64::from(MAX_SIDE) || width * height > MAX_PIXELS {
        return Err(DecodeError::TooLarge { width, height });
    }
    Ok(())
}

/// ITU-R 601 luma in Pillow's fixed point (its RGB → L conversion).
pub fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((u32::from(r) * 19595 + u32::from(g) * 38470 + u32::from(b) * 7471 + 0x8000) >> 16) as u8
}

/// Interleaved samples of `n` channels (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA) to `want`.
fn convert(data: &[u8], n: usize, want: Channels) -> Result<Vec<u8>, DecodeError> {
    let px = data.chunks_exact(n);
    Ok(match (n, want) {
        (1 | 2, Channels::Gray) => px.map(|p| p[0]).collect(),
        (1 | 2, Channels::Rgb) => px.flat_map(|p| [p[0]; 3]).collect(),
        (3 | 4, Channels::Gray) => px.map(|p| luma(p[0], p[1], p[2])).collect(),
        (3 | 4, Channels::Rgb) => px.flat_map(|p| [p[0], p[1], p[2]]).collect(),
        _ => {
            return Err(DecodeError::Corrupt {
                format: "image",
                msg: format!("{n} channels"),
            })
        }
    })
}

fn be16(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u16::from_be_bytes(
        b.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn be32(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u32::from_be_bytes(
        b.get(at..at + 4)?.try_into().ok()?,
    )))
}

fn le16(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u16::from_le_bytes(
        b.get(at..at + 2)?.try_into().ok()?,
    )))
}

fn le24(b: &[u8], at: usize) -> Option<u64> {
    let v = b.get(at..at + 3)?;
    Some(u64::from(v[0]) | u64::from(v[1]) << 8 | u64::from(v[2]) << 16)
}

fn le32(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from(u32::from_le_bytes(
        b.get(at..at + 4)?.try_into().ok()?,
    )))
}

/// The (width, height) a JPEG's first frame header (SOF0–SOF15) declares.
fn jpeg_size(b: &[u8]) -> Option<(u64, u64)> {
    let mut i = 2;
    loop {
        if *b.get(i)? != 0xFF {
            return None;
        }
        while *b.get(i)? == 0xFF {
            i += 1;
        }
        let m = *b.get(i)?;
        i += 1;
        match m {
            // Markers without a length.
            0x01 | 0xD0..=0xD8 => continue,
            // Entropy-coded data begins: no frame header before it.
            0xDA | 0xD9 => return None,
            0xC0..=0xCF if !matches!(m, 0xC4 | 0xC8 | 0xCC) => {
                // Length, precision, height, width.
                return Some((be16(b, i + 5)?, be16(b, i + 3)?));
            }
            _ => i += usize::try_from(be16(b, i)?).ok()?,
        }
    }
}

/// The (width, height) a BMP's info header declares (a negative height is top-down).
fn bmp_size(b: &[u8]) -> Option<(u64, u64)> {
    if le32(b, 14)? == 12 {
        // BITMAPCOREHEADER: 16-bit sides.
        return Some((le16(b, 18)?, le16(b, 20)?));
    }
    let w = i32::from_le_bytes(b.get(18..22)?.try_into().ok()?);
    let h = i32::from_le_bytes(b.get(22..26)?.try_into().ok()?);
    Some((u64::from(w.unsigned_abs()), u64::from(h.unsigned_abs())))
}

/// The (width, height) of a WebP's first chunk: VP8X's canvas, VP8L's or VP8's frame.
fn webp_size(b: &[u8]) -> Option<(u64, u64)> {
    match b.get(12..16)? {
        b"VP8X" => Some((le24(b, 24)? + 1, le24(b, 27)? + 1)),
        b"VP8L" => {
            let v = le32(b, 21)?;
            Some(((v & 0x3FFF) + 1, ((v >> 14) & 0x3FFF) + 1))
        }
        // Frame tag (3 bytes), start code (3), then 14-bit width and height.
        b"VP8 " => Some((le16(b, 26)? & 0x3FFF, le16(b, 28)? & 0x3FFF)),
        _ => None,
    }
}

/// The image area of a JPEG 2000 codestream's SIZ marker (Xsiz − XOsiz, Ysiz − YOsiz).
fn siz_size(cs: &[u8]) -> Option<(u64, u64)> {
    if cs.get(..4)? != [0xFF, 0x4F, 0xFF, 0x51] {
        return None;
    }
    let (xs, ys, xo, yo) = (be32(cs, 8)?, be32(cs, 12)?, be32(cs, 16)?, be32(cs, 20)?);
    Some((xs.saturating_sub(xo), ys.saturating_sub(yo)))
}

/// The size a JPEG 2000 file declares: a raw codestream's SIZ, or a JP2's image header box
/// and its codestream's SIZ (the larger of each side when both are there).
fn jpeg2000_size(b: &[u8]) -> Option<(u64, u64)> {
    if b.starts_with(&[0xFF, 0x4F]) {
        return siz_size(b);
    }
    // JP2 boxes: [length u32][type 4], length 1: a u64 length follows, 0: to the end.
    fn boxes(b: &[u8]) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut i = 0usize;
        std::iter::from_fn(move || {
            let len = be32(b, i)?;
            let ty = b.get(i + 4..i + 8)?;
            let (start, len) = match len {
                0 => (i + 8, (b.len() - i) as u64),
                1 => (i + 16, be32(b, i + 8)? << 32 | be32(b, i + 12)?),
                n => (i + 8, n),
            };
            let end = i.checked_add(usize::try_from(len).ok()?)?.min(b.len());
            let body = b.get(start..end.max(start))?;
            i = end.max(i + 8);
            Some((ty, body))
        })
    }
    let mut size: Option<(u64, u64)> = None;
    let mut widen = |w: u64, h: u64| {
        let (a, c) = size.unwrap_or((0, 0));
        size = Some((a.max(w), c.max(h)));
    };
    for (ty, body) in boxes(b) {
        match ty {
            b"jp2h" => {
                for (ty, body) in boxes(body) {
                    if ty == b"ihdr" {
                        if let (Some(h), Some(w)) = (be32(body, 0), be32(body, 4)) {
                            widen(w, h);
                        }
                    }
                }
            }
            b"jp2c" => {
                if let Some((w, h)) = siz_size(body) {
                    widen(w, h);
                }
            }
            _ => {}
        }
    }
    size
}

/// The (width, height) an image's header declares, read without decoding anything, for the
/// formats whose header is at a fixed place (JPEG, PNG, BMP, WebP, JPEG 2000); `None` for
/// other formats or a header too short to read.
pub fn declared_size(b: &[u8]) -> Option<(u64, u64)> {
    if b.starts_with(&[0xFF, 0xD8]) {
        jpeg_size(b)
    } else if b.starts_with(b"\x89PNG\r\n\x1a\n") && b.get(12..16)? == b"IHDR" {
        Some((be32(b, 16)?, be32(b, 20)?))
    } else if b.starts_with(b"BM") {
        bmp_size(b)
    } else if b.starts_with(b"RIFF") && b.get(8..12)? == b"WEBP" {
        webp_size(b)
    } else if is_jpeg2000(b) {
        jpeg2000_size(b)
    } else {
        None
    }
}

fn is_jpeg2000(b: &[u8]) -> bool {
    b.starts_with(b"\0\0\0\x0cjP  ") || b.starts_with(&[0xFF, 0x4F, 0xFF, 0x51])
}

fn decode_jpeg2000(b: &[u8], want: Channels) -> Result<Picture, DecodeError> {
    let corrupt = |e: &dyn std::fmt::Debug| DecodeError::Corrupt {
        format: "JPEG 2000",
        msg: format!("{e:?}"),
    };
    // The declared size is checked before hayro parses anything.
    let (dw, dh) = jpeg2000_size(b).ok_or_else(|| corrupt(&"no image header (SIZ) found"))?;
    check_size(dw, dh)?;
    let img = hayro_jpeg2000::Image::new(b, &hayro_jpeg2000::DecodeSettings::default())
        .map_err(|e| corrupt(&e))?;
    let (w, h) = (img.width(), img.height());
    check_size(u64::from(w), u64::from(h))?;
    let n = usize::from(img.color_space().num_channels()) + usize::from(img.has_alpha());
    if n == 4 && !img.has_alpha() {
        return Err(DecodeError::Corrupt {
            format: "JPEG 2000",
            msg: "CMYK images are not supported".into(),
        });
    }
    let mut ctx = hayro_jpeg2000::DecoderContext::default();
    let decoded = img.decode(&mut ctx).map_err(|e| corrupt(&e))?;
    let data = decoded.data_u8();
    let (w, h) = (w as usize, h as usize);
    if data.len() != w * h * n {
        return Err(corrupt(&"sample count does not match the header"));
    }
    Ok(Picture {
        width: w,
        height: h,
        channels: if want == Channels::Rgb { 3 } else { 1 },
        data: convert(&data, n, want)?,
    })
}

/// Decodes `bytes` (format sniffed from the signature) to `want`.
pub fn decode(bytes: &[u8], want: Channels) -> Result<Picture, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    if is_jpeg2000(bytes) {
        return decode_jpeg2000(bytes, want);
    }
    let reader = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|_| DecodeError::UnknownFormat)?;
    let format = reader.format().ok_or(DecodeError::UnknownFormat)?;
    let name = format.extensions_str().first().copied().unwrap_or("image");
    let name: &'static str = match name {
        "jpg" | "jpeg" => "JPEG",
        "png" => "PNG",
        "bmp" => "BMP",
        "webp" => "WebP",
        "tif" | "tiff" => "TIFF",
        "pbm" | "pgm" | "ppm" | "pnm" | "pam" => "PNM",
        _ => "image",
    };
    let corrupt = |e: image::ImageError| DecodeError::Corrupt {
        format: name,
        msg: e.to_string(),
    };
    // The header's own size, read here, is checked before a decoder exists; the decoders
    // also get the limits before they read anything (PNM and TIFF rely on them alone).
    if let Some((dw, dh)) = declared_size(bytes) {
        check_size(dw, dh)?;
    }
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_PIXELS * 16);
    let mut reader = reader;
    reader.limits(limits);
    let decoder = reader.into_decoder().map_err(corrupt)?;
    let (w, h) = decoder.dimensions();
    check_size(u64::from(w), u64::from(h))?;
    if name == "JPEG" {
        // A JPEG cut short has no end-of-image marker after its last scan (Pillow refuses it
        // too); inside entropy-coded data 0xFF is never followed by 0xD9 or 0xDA.
        let last = |m: u8| bytes.windows(2).rposition(|w| w == [0xFF, m]);
        if last(0xD9).is_none_or(|eoi| last(0xDA).is_some_and(|sos| eoi < sos)) {
            return Err(DecodeError::Corrupt {
                format: name,
                msg: "truncated: no end-of-image marker after the last scan".into(),
            });
        }
        // rge's own baseline decoder is bit-exact with libjpeg (what Pillow gives); the
        // `image` crate's differs by a unit or two. Progressive files fall through.
        if let Ok((pw, ph, n, data)) = rge_kernels_misc::image::decode_jpeg(bytes) {
            if (pw, ph) == (w as usize, h as usize) && data.len() == pw * ph * n {
                return Ok(Picture {
                    width: pw,
                    height: ph,
                    channels: if want == Channels::Rgb { 3 } else { 1 },
                    data: convert(&data, n, want)?,
                });
            }
        }
    }
    let img = image::DynamicImage::from_decoder(decoder).map_err(corrupt)?;
    let (data, n) = match img.color().channel_count() {
        1 => (img.to_luma8().into_raw(), 1),
        2 => (img.to_luma_alpha8().into_raw(), 2),
        _ => (img.to_rgb8().into_raw(), 3),
    };
    Ok(Picture {
        width: w as usize,
        height: h as usize,
        channels: if want == Channels::Rgb { 3 } else { 1 },
        data: convert(&data, n, want)?,
    })
}
