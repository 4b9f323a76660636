//! Image decode: PNG, BMP, WebP (lossy and lossless), PNM, TIFF and progressive JPEG through
//! the `image` crate, baseline JPEG through rge's libjpeg-exact decoder (`rge-kernels-misc`),
//! JPEG 2000 (JP2 or a raw codestream) through `hayro-jpeg2000`. The header's size is
//! checked against [`MAX_SIDE`] and [`MAX_PIXELS`] before any pixel memory is allocated, so a
//! hostile header is an error, never an allocation it sized.

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

fn is_jpeg2000(b: &[u8]) -> bool {
    b.starts_with(b"\0\0\0\x0cjP  ") || b.starts_with(&[0xFF, 0x4F, 0xFF, 0x51])
}

fn decode_jpeg2000(b: &[u8], want: Channels) -> Result<Picture, DecodeError> {
    let corrupt = |e: &dyn std::fmt::Debug| DecodeError::Corrupt {
        format: "JPEG 2000",
        msg: format!("{e:?}"),
    };
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
    let mut decoder = reader.into_decoder().map_err(corrupt)?;
    let (w, h) = decoder.dimensions();
    check_size(u64::from(w), u64::from(h))?;
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_PIXELS * 16);
    decoder.set_limits(limits).map_err(corrupt)?;
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
