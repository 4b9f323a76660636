// Hand-made image headers that declare a size and carry (almost) no pixel data, shared by
// `crates/rge-media/tests/kernels.rs` and `crates/rge/tests/media_engine.rs` (`include!`d).
// Each is what a hostile file would start with: a decoder that trusted the size would
// allocate `w · h · channels` bytes (30 GB for 100,000²) before finding the data missing.

/// PNG's CRC-32 (the reflected 0xEDB88320 polynomial).
fn header_crc32(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

/// A PNG whose IHDR declares `w × h` RGB pixels, a few bytes of IDAT, IEND.
fn huge_png(w: u32, h: u32) -> Vec<u8> {
    let mut ihdr = b"IHDR".to_vec();
    ihdr.extend_from_slice(&w.to_be_bytes());
    ihdr.extend_from_slice(&h.to_be_bytes());
    ihdr.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
    v.extend_from_slice(&13u32.to_be_bytes());
    v.extend_from_slice(&ihdr);
    v.extend_from_slice(&header_crc32(&ihdr).to_be_bytes());
    for (kind, body) in [(&b"IDAT"[..], &[0x78u8, 0x9c, 0, 0][..]), (b"IEND", &[])] {
        v.extend_from_slice(&(body.len() as u32).to_be_bytes());
        let chunk = [kind, body].concat();
        v.extend_from_slice(&chunk);
        v.extend_from_slice(&header_crc32(&chunk).to_be_bytes());
    }
    v
}

/// A baseline JPEG: SOI, an 8-bit 3-component SOF0 declaring `w × h` (16-bit fields: 65,535
/// is the most a JPEG can declare), a one-byte scan and EOI (no tables).
fn huge_jpeg(w: u16, h: u16) -> Vec<u8> {
    let mut v = vec![0xFF, 0xD8, 0xFF, 0xC0, 0, 17, 8];
    v.extend_from_slice(&h.to_be_bytes());
    v.extend_from_slice(&w.to_be_bytes());
    v.extend_from_slice(&[3, 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0]);
    v.extend_from_slice(&[0xFF, 0xDA, 0, 12, 3, 1, 0, 2, 0, 3, 0, 0, 63, 0, 0]);
    v.extend_from_slice(&[0xFF, 0xD9]);
    v
}

/// A 24-bit BMP: file header and BITMAPINFOHEADER declaring `w × h`, no pixel rows.
fn huge_bmp(w: i32, h: i32) -> Vec<u8> {
    let mut v = b"BM".to_vec();
    v.extend_from_slice(&54u32.to_le_bytes()); // file size
    v.extend_from_slice(&0u32.to_le_bytes()); // reserved
    v.extend_from_slice(&54u32.to_le_bytes()); // pixel data offset
    v.extend_from_slice(&40u32.to_le_bytes()); // info header size
    v.extend_from_slice(&w.to_le_bytes());
    v.extend_from_slice(&h.to_le_bytes());
    v.extend_from_slice(&1u16.to_le_bytes()); // planes
    v.extend_from_slice(&24u16.to_le_bytes()); // bits per pixel
    v.extend_from_slice(&[0; 24]); // BI_RGB, image size, resolution, palette counts
    v
}

/// An extended WebP: RIFF, a VP8X chunk whose canvas is `w × h` (24-bit fields), then an
/// empty VP8L chunk.
fn huge_webp(w: u32, h: u32) -> Vec<u8> {
    let mut vp8x = b"VP8X".to_vec();
    vp8x.extend_from_slice(&10u32.to_le_bytes());
    vp8x.extend_from_slice(&[0, 0, 0, 0]);
    vp8x.extend_from_slice(&(w - 1).to_le_bytes()[..3]);
    vp8x.extend_from_slice(&(h - 1).to_le_bytes()[..3]);
    let vp8l = [&b"VP8L"[..], &5u32.to_le_bytes(), &[0x2F, 0, 0, 0, 0], &[0]].concat();
    let body = [&b"WEBP"[..], &vp8x, &vp8l].concat();
    [&b"RIFF"[..], &(body.len() as u32).to_le_bytes(), &body].concat()
}

/// A JPEG 2000 codestream: SOC, SIZ declaring `w × h` in one tile of one 8-bit component,
/// COD (5 levels, one layer), QCD (no quantization), then SOT/SOD of an empty tile and EOC:
/// a header hayro parses.
fn huge_j2k(w: u32, h: u32) -> Vec<u8> {
    let mut v = vec![0xFF, 0x4F, 0xFF, 0x51, 0, 41, 0, 0];
    for x in [w, h, 0, 0, w, h, 0, 0] {
        v.extend_from_slice(&x.to_be_bytes());
    }
    v.extend_from_slice(&[0, 1, 7, 1, 1]);
    v.extend_from_slice(&[0xFF, 0x52, 0, 12, 0, 0, 0, 1, 0, 5, 4, 4, 0, 1]);
    // QCD: no quantization, 2 guard bits, an exponent for each of the 3·5 + 1 subbands.
    v.extend_from_slice(&[0xFF, 0x5C, 0, 19, 0x40]);
    v.extend_from_slice(&[0x40; 16]);
    v.extend_from_slice(&[0xFF, 0x90, 0, 10, 0, 0, 0, 0, 0, 14, 0, 1]);
    v.extend_from_slice(&[0xFF, 0x93, 0, 0xFF, 0xD9]);
    v
}

/// The same codestream in a JP2 file: signature, ftyp, jp2h (ihdr, colr) and jp2c boxes.
fn huge_jp2(w: u32, h: u32) -> Vec<u8> {
    let boxed =
        |ty: &[u8], body: &[u8]| [&((body.len() + 8) as u32).to_be_bytes()[..], ty, body].concat();
    let ihdr = [&h.to_be_bytes()[..], &w.to_be_bytes(), &[0, 1, 7, 7, 0, 0]].concat();
    let colr = [2u8, 0, 0, 0, 0, 0, 17];
    let jp2h = [boxed(b"ihdr", &ihdr), boxed(b"colr", &colr)].concat();
    [
        &b"\0\0\0\x0cjP  \r\n\x87\n"[..],
        &boxed(b"ftyp", b"jp2 \0\0\0\0jp2 "),
        &boxed(b"jp2h", &jp2h),
        &boxed(b"jp2c", &huge_j2k(w, h)),
    ]
    .concat()
}

/// Every format's huge header: (format, bytes, the size it declares).
fn huge_headers() -> Vec<(&'static str, Vec<u8>, (u64, u64))> {
    vec![
        ("PNG", huge_png(100_000, 100_000), (100_000, 100_000)),
        ("JPEG", huge_jpeg(65_535, 65_535), (65_535, 65_535)),
        ("BMP", huge_bmp(100_000, 100_000), (100_000, 100_000)),
        (
            "BMP top-down",
            huge_bmp(100_000, -100_000),
            (100_000, 100_000),
        ),
        ("WebP", huge_webp(100_000, 100_000), (100_000, 100_000)),
        ("JPEG 2000", huge_j2k(100_000, 100_000), (100_000, 100_000)),
        ("JP2", huge_jp2(100_000, 100_000), (100_000, 100_000)),
    ]
}
