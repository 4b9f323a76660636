//! PNG decoding (non-interlaced; gray, RGB, palette, with or without alpha; 1–16 bits) over a
//! small zlib inflater.

use rge_kernels::{KernelError, KernelResult};

use super::{bad, check_dims, Picture};

/// LSB-first bit reader.
struct Bits<'a> {
    data: &'a [u8],
    pos: usize,
    bit: u32,
    nbits: u32,
}

impl<'a> Bits<'a> {
    fn new(data: &'a [u8]) -> Self {
        Bits {
            data,
            pos: 0,
            bit: 0,
            nbits: 0,
        }
    }

    fn need(&mut self, n: u32) -> KernelResult<u32> {
        while self.nbits < n {
            let b = *self
                .data
                .get(self.pos)
                .ok_or_else(|| bad("truncated deflate stream"))?;
            self.pos += 1;
            self.bit |= (b as u32) << self.nbits;
            self.nbits += 8;
        }
        let v = self.bit & ((1u64 << n) - 1) as u32;
        self.bit >>= n;
        self.nbits -= n;
        Ok(v)
    }

    fn align(&mut self) {
        self.bit = 0;
        self.nbits = 0;
    }
}

/// A canonical Huffman code: symbols by code length.
struct Huffman {
    counts: [u16; 16],
    symbols: Vec<u16>,
}

impl Huffman {
    fn new(lengths: &[u8]) -> KernelResult<Self> {
        let mut counts = [0u16; 16];
        for &l in lengths {
            counts[l as usize] += 1;
        }
        counts[0] = 0;
        let mut offs = [0u16; 16];
        for l in 1..15 {
            offs[l + 1] = offs[l] + counts[l];
        }
        let mut symbols = vec![0u16; lengths.len()];
        for (s, &l) in lengths.iter().enumerate() {
            if l != 0 {
                symbols[offs[l as usize] as usize] = s as u16;
                offs[l as usize] += 1;
            }
        }
        Ok(Huffman { counts, symbols })
    }

    fn decode(&self, bits: &mut Bits<'_>) -> KernelResult<u16> {
        let (mut code, mut first, mut index) = (0i32, 0i32, 0i32);
        for len in 1..16 {
            code |= bits.need(1)? as i32;
            let count = self.counts[len] as i32;
            if code - count < first {
                return self
                    .symbols
                    .get((index + code - first) as usize)
                    .copied()
                    .ok_or_else(|| bad("bad Huffman code"));
            }
            index += count;
            first = (first + count) << 1;
            code <<= 1;
        }
        Err(bad("bad Huffman code"))
    }
}

const LEN_BASE: [u16; 29] = [
    3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131,
    163, 195, 227, 258,
];
const LEN_EXTRA: [u8; 29] = [
    0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
];
const DIST_BASE: [u16; 30] = [
    1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
    2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577,
];
const DIST_EXTRA: [u8; 30] = [
    0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13,
    13,
];

/// Inflates a zlib stream, producing at most `limit` bytes.
pub(crate) fn inflate_zlib(data: &[u8], limit: usize) -> KernelResult<Vec<u8>> {
    if data.len() < 2
        || data[0] & 0x0F != 8
        || (u16::from(data[0]) << 8 | u16::from(data[1])) % 31 != 0
    {
        return Err(bad("bad zlib header"));
    }
    if data[1] & 0x20 != 0 {
        return Err(bad("zlib preset dictionaries are not supported"));
    }
    let mut bits = Bits::new(&data[2..]);
    let mut out: Vec<u8> = Vec::new();
    loop {
        let last = bits.need(1)? == 1;
        match bits.need(2)? {
            0 => {
                bits.align();
                let p = bits.pos;
                let hdr = bits
                    .data
                    .get(p..p + 4)
                    .ok_or_else(|| bad("truncated stored block"))?;
                let len = u16::from_le_bytes([hdr[0], hdr[1]]) as usize;
                let block = bits
                    .data
                    .get(p + 4..p + 4 + len)
                    .ok_or_else(|| bad("truncated stored block"))?;
                out.extend_from_slice(block);
                bits.pos = p + 4 + len;
            }
            1 => {
                let mut l = [0u8; 288];
                l[..144].fill(8);
                l[144..256].fill(9);
                l[256..280].fill(7);
                l[280..].fill(8);
                let lit = Huffman::new(&l)?;
                let dist = Huffman::new(&[5u8; 30])?;
                codes(&mut bits, &mut out, &lit, &dist, limit)?;
            }
            2 => {
                let hlit = bits.need(5)? as usize + 257;
                let hdist = bits.need(5)? as usize + 1;
                let hclen = bits.need(4)? as usize + 4;
                const ORDER: [usize; 19] = [
                    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
                ];
                let mut cl = [0u8; 19];
                for &o in ORDER.iter().take(hclen) {
                    cl[o] = bits.need(3)? as u8;
                }
                let clh = Huffman::new(&cl)?;
                let mut lens = vec![0u8; hlit + hdist];
                let mut i = 0;
                while i < hlit + hdist {
                    let sym = clh.decode(&mut bits)?;
                    let (val, rep) = match sym {
                        0..=15 => (sym as u8, 1),
                        16 => {
                            let prev = *lens
                                .get(i.wrapping_sub(1))
                                .ok_or_else(|| bad("repeat with no previous length"))?;
                            (prev, 3 + bits.need(2)? as usize)
                        }
                        17 => (0, 3 + bits.need(3)? as usize),
                        _ => (0, 11 + bits.need(7)? as usize),
                    };
                    if i + rep > lens.len() {
                        return Err(bad("code lengths overflow"));
                    }
                    lens[i..i + rep].fill(val);
                    i += rep;
                }
                let lit = Huffman::new(&lens[..hlit])?;
                let dist = Huffman::new(&lens[hlit..])?;
                codes(&mut bits, &mut out, &lit, &dist, limit)?;
            }
            _ => return Err(bad("bad deflate block type")),
        }
        if out.len() > limit {
            return Err(bad("inflated data larger than the image"));
        }
        if last {
            return Ok(out);
        }
    }
}

fn codes(
    bits: &mut Bits<'_>,
    out: &mut Vec<u8>,
    lit: &Huffman,
    dist: &Huffman,
    limit: usize,
) -> KernelResult<()> {
    loop {
        let sym = lit.decode(bits)? as usize;
        if sym < 256 {
            out.push(sym as u8);
        } else if sym == 256 {
            return Ok(());
        } else {
            let s = sym - 257;
            if s >= 29 {
                return Err(bad("bad length code"));
            }
            let len = LEN_BASE[s] as usize + bits.need(LEN_EXTRA[s] as u32)? as usize;
            let d = dist.decode(bits)? as usize;
            if d >= 30 {
                return Err(bad("bad distance code"));
            }
            let back = DIST_BASE[d] as usize + bits.need(DIST_EXTRA[d] as u32)? as usize;
            if back > out.len() {
                return Err(bad("distance before the start of the data"));
            }
            let start = out.len() - back;
            for k in 0..len {
                out.push(out[start + k]);
            }
        }
        if out.len() > limit {
            return Err(bad("inflated data larger than the image"));
        }
    }
}

fn be32(b: &[u8], at: usize) -> KernelResult<u32> {
    b.get(at..at + 4)
        .map(|s| u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| bad("truncated PNG"))
}

pub(crate) fn decode(b: &[u8]) -> KernelResult<Picture> {
    let mut pos = 8;
    let mut ihdr: Option<&[u8]> = None;
    let mut palette: &[u8] = &[];
    let mut idat = Vec::new();
    while pos + 8 <= b.len() {
        let len = be32(b, pos)? as usize;
        let kind = &b[pos + 4..pos + 8];
        let body = b
            .get(pos + 8..pos + 8 + len)
            .ok_or_else(|| bad("truncated PNG chunk"))?;
        match kind {
            b"IHDR" => ihdr = Some(body),
            b"PLTE" => palette = body,
            b"IDAT" => idat.extend_from_slice(body),
            b"IEND" => break,
            _ => {}
        }
        pos += 12 + len;
    }
    let h = ihdr
        .filter(|h| h.len() >= 13)
        .ok_or_else(|| bad("PNG without IHDR"))?;
    let (width, height) = (be32(h, 0)? as usize, be32(h, 4)? as usize);
    let (depth, color, interlace) = (h[8] as usize, h[9], h[12]);
    check_dims(width, height)?;
    if interlace != 0 {
        return Err(KernelError::unsupported("ImageDecoder: interlaced PNG"));
    }
    let channels = match color {
        0 => 1,
        2 => 3,
        3 => 1,
        4 => 2,
        6 => 4,
        _ => return Err(bad("bad PNG color type")),
    };
    if !matches!(depth, 1 | 2 | 4 | 8 | 16) || (depth < 8 && !matches!(color, 0 | 3)) {
        return Err(bad("bad PNG bit depth"));
    }
    let row_bytes = (width * channels * depth).div_ceil(8);
    let bpp = (channels * depth).div_ceil(8);
    let raw = inflate_zlib(&idat, height * (row_bytes + 1))?;
    if raw.len() < height * (row_bytes + 1) {
        return Err(bad("PNG pixel data is short"));
    }
    let mut img = vec![0u8; height * row_bytes];
    for y in 0..height {
        let filter = raw[y * (row_bytes + 1)];
        let src = &raw[y * (row_bytes + 1) + 1..(y + 1) * (row_bytes + 1)];
        let (done, cur) = img.split_at_mut(y * row_bytes);
        let prev = if y > 0 {
            &done[(y - 1) * row_bytes..]
        } else {
            &[][..]
        };
        let cur = &mut cur[..row_bytes];
        for i in 0..row_bytes {
            let a = if i >= bpp { cur[i - bpp] as i32 } else { 0 };
            let up = prev.get(i).map_or(0, |&v| v as i32);
            let c = if i >= bpp {
                prev.get(i - bpp).map_or(0, |&v| v as i32)
            } else {
                0
            };
            let pred = match filter {
                0 => 0,
                1 => a,
                2 => up,
                3 => (a + up) / 2,
                4 => {
                    let p = a + up - c;
                    let (pa, pb, pc) = ((p - a).abs(), (p - up).abs(), (p - c).abs());
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        up
                    } else {
                        c
                    }
                }
                _ => return Err(bad("bad PNG filter")),
            };
            cur[i] = (src[i] as i32 + pred) as u8;
        }
    }
    // Samples as 8-bit values (16-bit: high byte; low depths: scaled unless paletted).
    let sample = |row: &[u8], i: usize| -> u8 {
        match depth {
            8 => row[i],
            16 => row[2 * i],
            d => {
                let per = 8 / d;
                let v = (row[i / per] >> (8 - d * (i % per + 1))) & ((1 << d) - 1) as u8;
                if color == 3 {
                    v
                } else {
                    (v as u32 * 255 / ((1u32 << d) - 1)) as u8
                }
            }
        }
    };
    let out_ch = if color == 0 || color == 4 { 1 } else { 3 };
    let mut out = Vec::with_capacity(width * height * out_ch);
    for y in 0..height {
        let row = &img[y * row_bytes..(y + 1) * row_bytes];
        for x in 0..width {
            match color {
                0 | 4 => out.push(sample(row, x * channels)),
                2 | 6 => (0..3).for_each(|c| out.push(sample(row, x * channels + c))),
                _ => {
                    let i = sample(row, x) as usize;
                    let p = palette
                        .get(3 * i..3 * i + 3)
                        .ok_or_else(|| bad("palette index out of range"))?;
                    out.extend_from_slice(p);
                }
            }
        }
    }
    Picture::checked(width, height, out_ch, out)
}
