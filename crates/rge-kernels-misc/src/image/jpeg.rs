//! Sequential (baseline and extended, Huffman, 8-bit) JPEG decoding that reproduces libjpeg's
//! default output exactly: the accurate integer IDCT ("islow"), its range limiting, fancy
//! (triangular) chroma upsampling with edge replication, and its fixed-point YCbCr → RGB.
//! Progressive and arithmetic-coded files are reported as unsupported.

use rge_kernels::{KernelError, KernelResult};

use super::{bad, check_dims, Picture};

const NATURAL: [usize; 64] = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20,
    13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59,
    52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
];

#[derive(Clone, Default)]
struct HuffTable {
    /// Largest code of each length (-1: none), 1-based lengths.
    maxcode: [i32; 18],
    /// Index into `values` of the first code of each length, minus that code.
    offset: [i32; 17],
    values: Vec<u8>,
    present: bool,
}

impl HuffTable {
    fn new(counts: &[u8; 16], values: Vec<u8>) -> KernelResult<Self> {
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        if total != values.len() || total > 256 {
            return Err(bad("bad JPEG Huffman table"));
        }
        let mut t = HuffTable {
            maxcode: [-1; 18],
            offset: [0; 17],
            values,
            present: true,
        };
        let (mut code, mut k) = (0i32, 0i32);
        for l in 1..=16 {
            let n = counts[l - 1] as i32;
            t.offset[l] = k - code;
            if n > 0 {
                code += n;
                k += n;
                t.maxcode[l] = code - 1;
            }
            code <<= 1;
        }
        t.maxcode[17] = i32::MAX;
        Ok(t)
    }
}

/// Entropy-coded data reader: stuffed 0xFF 0x00 bytes, zeros after the segment's end.
struct BitReader<'a> {
    data: &'a [u8],
    pos: usize,
    buf: u32,
    count: u32,
}

impl<'a> BitReader<'a> {
    fn fill(&mut self) {
        while self.count <= 24 {
            let mut b = 0u8;
            if self.pos < self.data.len() {
                b = self.data[self.pos];
                if b == 0xFF {
                    match self.data.get(self.pos + 1) {
                        Some(0) => self.pos += 2,
                        _ => b = 0, // a marker: feed zeros, stay put
                    }
                } else {
                    self.pos += 1;
                }
            }
            self.buf |= (b as u32) << (24 - self.count);
            self.count += 8;
        }
    }

    fn bits(&mut self, n: u32) -> u32 {
        if n == 0 {
            return 0;
        }
        self.fill();
        let v = self.buf >> (32 - n);
        self.buf <<= n;
        self.count -= n;
        v
    }

    fn decode(&mut self, t: &HuffTable) -> KernelResult<u8> {
        let mut code = 0i32;
        for l in 1..=16 {
            code = (code << 1) | self.bits(1) as i32;
            if code <= t.maxcode[l] {
                return t
                    .values
                    .get((t.offset[l] + code) as usize)
                    .copied()
                    .ok_or_else(|| bad("bad JPEG Huffman code"));
            }
        }
        Err(bad("bad JPEG Huffman code"))
    }

    /// Skips to just past the next RSTn marker.
    fn restart(&mut self) {
        self.buf = 0;
        self.count = 0;
        while self.pos + 1 < self.data.len() {
            if self.data[self.pos] == 0xFF && (0xD0..=0xD7).contains(&self.data[self.pos + 1]) {
                self.pos += 2;
                return;
            }
            self.pos += 1;
        }
    }
}

fn extend(v: u32, s: u32) -> i32 {
    if s == 0 {
        0
    } else if v < 1 << (s - 1) {
        v as i32 - (1 << s) + 1
    } else {
        v as i32
    }
}

struct Component {
    id: u8,
    h: usize,
    v: usize,
    tq: usize,
    /// Blocks per row and column (padded to whole MCUs).
    bw: usize,
    bh: usize,
    coefs: Vec<i16>,
    dc_pred: i32,
}

fn be16(b: &[u8], at: usize) -> KernelResult<usize> {
    b.get(at..at + 2)
        .map(|s| u16::from_be_bytes([s[0], s[1]]) as usize)
        .ok_or_else(|| bad("truncated JPEG"))
}

pub(crate) fn decode(b: &[u8]) -> KernelResult<Picture> {
    let mut qt = [[0u16; 64]; 4];
    let mut dc = vec![HuffTable::default(); 4];
    let mut ac = vec![HuffTable::default(); 4];
    let mut comps: Vec<Component> = Vec::new();
    let (mut width, mut height) = (0usize, 0usize);
    let (mut hmax, mut vmax) = (1usize, 1usize);
    let mut restart_interval = 0usize;
    let mut adobe_rgb = false;
    let mut pos = 2;
    loop {
        if pos >= b.len() {
            break;
        }
        // Next marker (skipping fill bytes).
        while b.get(pos) == Some(&0xFF) && b.get(pos + 1) == Some(&0xFF) {
            pos += 1;
        }
        if b.get(pos) != Some(&0xFF) {
            return Err(bad("JPEG marker expected"));
        }
        let m = *b.get(pos + 1).ok_or_else(|| bad("truncated JPEG"))?;
        pos += 2;
        if m == 0xD9 {
            break;
        }
        if (0xD0..=0xD7).contains(&m) || m == 0x01 {
            continue;
        }
        let len = be16(b, pos)?;
        let seg = b
            .get(pos + 2..pos + len)
            .ok_or_else(|| bad("truncated JPEG segment"))?;
        match m {
            0xDB => {
                let mut i = 0;
                while i < seg.len() {
                    let (p, t) = ((seg[i] >> 4) as usize, (seg[i] & 15) as usize);
                    if t > 3 {
                        return Err(bad("bad quantization table id"));
                    }
                    let n = if p == 0 { 64 } else { 128 };
                    let body = seg
                        .get(i + 1..i + 1 + n)
                        .ok_or_else(|| bad("truncated DQT"))?;
                    for k in 0..64 {
                        qt[t][NATURAL[k]] = if p == 0 {
                            body[k] as u16
                        } else {
                            u16::from_be_bytes([body[2 * k], body[2 * k + 1]])
                        };
                    }
                    i += 1 + n;
                }
            }
            0xC4 => {
                let mut i = 0;
                while i < seg.len() {
                    let (class, id) = (seg[i] >> 4, (seg[i] & 15) as usize);
                    let counts: [u8; 16] = seg
                        .get(i + 1..i + 17)
                        .and_then(|s| s.try_into().ok())
                        .ok_or_else(|| bad("truncated DHT"))?;
                    let n: usize = counts.iter().map(|&c| c as usize).sum();
                    let vals = seg
                        .get(i + 17..i + 17 + n)
                        .ok_or_else(|| bad("truncated DHT"))?;
                    if id > 3 || class > 1 {
                        return Err(bad("bad Huffman table id"));
                    }
                    let t = HuffTable::new(&counts, vals.to_vec())?;
                    if class == 0 {
                        dc[id] = t;
                    } else {
                        ac[id] = t;
                    }
                    i += 17 + n;
                }
            }
            0xC0 | 0xC1 => {
                if seg.len() < 6 || seg[0] != 8 {
                    return Err(KernelError::unsupported(
                        "ImageDecoder: JPEG precision other than 8 bits",
                    ));
                }
                height = be16(seg, 1)?;
                width = be16(seg, 3)?;
                check_dims(width, height)?;
                let n = seg[5] as usize;
                if !(n == 1 || n == 3) || seg.len() < 6 + 3 * n {
                    return Err(KernelError::unsupported(
                        "ImageDecoder: JPEG with other than 1 or 3 components",
                    ));
                }
                for c in 0..n {
                    let s = &seg[6 + 3 * c..9 + 3 * c];
                    let (h, v) = ((s[1] >> 4) as usize, (s[1] & 15) as usize);
                    if !(1..=4).contains(&h) || !(1..=4).contains(&v) || s[2] > 3 {
                        return Err(bad("bad JPEG sampling factors"));
                    }
                    comps.push(Component {
                        id: s[0],
                        h,
                        v,
                        tq: s[2] as usize,
                        bw: 0,
                        bh: 0,
                        coefs: Vec::new(),
                        dc_pred: 0,
                    });
                }
                hmax = comps.iter().map(|c| c.h).max().unwrap_or(1);
                vmax = comps.iter().map(|c| c.v).max().unwrap_or(1);
                let mcux = width.div_ceil(8 * hmax);
                let mcuy = height.div_ceil(8 * vmax);
                for c in &mut comps {
                    c.bw = mcux * c.h;
                    c.bh = mcuy * c.v;
                    c.coefs = vec![0; c.bw * c.bh * 64];
                }
            }
            0xC2 | 0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => {
                return Err(KernelError::unsupported(
                    "ImageDecoder: progressive, lossless or arithmetic JPEG",
                ));
            }
            0xDD => restart_interval = be16(seg, 0)?,
            0xEE if seg.len() >= 12 && seg.starts_with(b"Adobe") => {
                adobe_rgb = seg[11] == 0;
            }
            0xDA => {
                if comps.is_empty() {
                    return Err(bad("JPEG scan before the frame header"));
                }
                let ns = *seg.first().ok_or_else(|| bad("truncated SOS"))? as usize;
                let mut scan = Vec::with_capacity(ns);
                for i in 0..ns {
                    let s = seg
                        .get(1 + 2 * i..3 + 2 * i)
                        .ok_or_else(|| bad("truncated SOS"))?;
                    let ci = comps
                        .iter()
                        .position(|c| c.id == s[0])
                        .ok_or_else(|| bad("scan names an unknown component"))?;
                    let (td, ta) = ((s[1] >> 4) as usize, (s[1] & 15) as usize);
                    if td > 3 || ta > 3 || !dc[td].present || !ac[ta].present {
                        return Err(bad("scan uses a missing Huffman table"));
                    }
                    scan.push((ci, td, ta));
                }
                // The entropy-coded segment runs to the next non-RST marker.
                let start = pos + len;
                let mut end = start;
                while end + 1 < b.len()
                    && !(b[end] == 0xFF && b[end + 1] != 0 && !(0xD0..=0xD7).contains(&b[end + 1]))
                {
                    end += 1;
                }
                let end = if end + 1 >= b.len() { b.len() } else { end };
                decode_scan(
                    &b[start..end],
                    &mut comps,
                    &scan,
                    &dc,
                    &ac,
                    restart_interval,
                    (width, height, hmax, vmax),
                )?;
                pos = end;
                continue;
            }
            _ => {}
        }
        pos += len;
    }
    if comps.is_empty() {
        return Err(bad("JPEG without a frame"));
    }
    // Dequantize + IDCT each component into its (padded) plane.
    let planes: Vec<(Vec<u8>, usize, usize)> = comps
        .iter()
        .map(|c| {
            let pw = c.bw * 8;
            let mut plane = vec![0u8; pw * c.bh * 8];
            for by in 0..c.bh {
                for bx in 0..c.bw {
                    let blk = &c.coefs[(by * c.bw + bx) * 64..(by * c.bw + bx + 1) * 64];
                    idct_islow(blk, &qt[c.tq], &mut plane[by * 8 * pw + bx * 8..], pw);
                }
            }
            (plane, pw, c.bh * 8)
        })
        .collect();
    let (w, h) = (width, height);
    if comps.len() == 1 {
        let (plane, pw, _) = &planes[0];
        let data = (0..h)
            .flat_map(|y| plane[y * pw..y * pw + w].iter().copied())
            .collect();
        return Picture::checked(w, h, 1, data);
    }
    let full: Vec<Vec<u8>> = comps
        .iter()
        .zip(&planes)
        .map(|(c, (plane, pw, _))| {
            let dw = (w * c.h).div_ceil(hmax);
            let dh = (h * c.v).div_ceil(vmax);
            upsample(
                plane,
                *pw,
                dw,
                dh,
                hmax / c.h,
                vmax / c.v,
                (hmax % c.h, vmax % c.v),
                w,
                h,
            )
        })
        .collect::<KernelResult<_>>()?;
    let mut data = Vec::with_capacity(w * h * 3);
    for ((&y, &cb), &cr) in full[0].iter().zip(&full[1]).zip(&full[2]) {
        let (y, cb, cr) = (y as i32, cb as i32, cr as i32);
        if adobe_rgb {
            data.extend_from_slice(&[y as u8, cb as u8, cr as u8]);
        } else {
            data.extend_from_slice(&ycc_to_rgb(y, cb, cr));
        }
    }
    Picture::checked(w, h, 3, data)
}

#[allow(clippy::too_many_arguments)]
fn decode_scan(
    data: &[u8],
    comps: &mut [Component],
    scan: &[(usize, usize, usize)],
    dc: &[HuffTable],
    ac: &[HuffTable],
    restart_interval: usize,
    (width, height, hmax, vmax): (usize, usize, usize, usize),
) -> KernelResult<()> {
    let mut r = BitReader {
        data,
        pos: 0,
        buf: 0,
        count: 0,
    };
    for &(ci, _, _) in scan {
        comps[ci].dc_pred = 0;
    }
    // MCU grid: interleaved scans follow the frame; a single-component scan walks that
    // component's own (unpadded) block grid.
    let (mcux, mcuy) = if scan.len() == 1 {
        let c = &comps[scan[0].0];
        (
            (width * c.h).div_ceil(hmax).div_ceil(8),
            (height * c.v).div_ceil(vmax).div_ceil(8),
        )
    } else {
        (width.div_ceil(8 * hmax), height.div_ceil(8 * vmax))
    };
    let mut mcus_left = restart_interval;
    let mut block = [0i32; 64];
    for my in 0..mcuy {
        for mx in 0..mcux {
            if restart_interval > 0 {
                if mcus_left == 0 {
                    r.restart();
                    for &(ci, _, _) in scan {
                        comps[ci].dc_pred = 0;
                    }
                    mcus_left = restart_interval;
                }
                mcus_left -= 1;
            }
            for &(ci, td, ta) in scan {
                let (bh, bv) = if scan.len() == 1 {
                    (1, 1)
                } else {
                    (comps[ci].h, comps[ci].v)
                };
                for v in 0..bv {
                    for h in 0..bh {
                        block.fill(0);
                        let t = r.decode(&dc[td])? as u32;
                        if t > 15 {
                            return Err(bad("bad DC magnitude"));
                        }
                        let diff = extend(r.bits(t), t);
                        let c = &mut comps[ci];
                        c.dc_pred = c.dc_pred.wrapping_add(diff);
                        block[0] = c.dc_pred as i16 as i32;
                        let mut k = 1;
                        while k < 64 {
                            let rs = r.decode(&ac[ta])?;
                            let (run, s) = ((rs >> 4) as usize, (rs & 15) as u32);
                            if s == 0 {
                                if run == 15 {
                                    k += 16;
                                    continue;
                                }
                                break;
                            }
                            k += run;
                            if k > 63 {
                                return Err(bad("AC coefficient index out of range"));
                            }
                            block[NATURAL[k]] = extend(r.bits(s), s);
                            k += 1;
                        }
                        let (bx, by) = if scan.len() == 1 {
                            (mx, my)
                        } else {
                            (mx * c.h + h, my * c.v + v)
                        };
                        if bx < c.bw && by < c.bh {
                            let at = (by * c.bw + bx) * 64;
                            for (d, &s) in c.coefs[at..at + 64].iter_mut().zip(&block) {
                                *d = s as i16;
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// libjpeg's post-IDCT range limit: wraps to 10 bits, then clamps around the centre.
fn range_limit(x: i64) -> u8 {
    let j = (x & 1023) as i32;
    let s = if j >= 512 { j - 1024 } else { j };
    (s + 128).clamp(0, 255) as u8
}

fn descale(x: i64, n: u32) -> i64 {
    (x + (1 << (n - 1))) >> n
}

/// libjpeg's accurate integer inverse DCT (jidctint.c, CONST_BITS 13, PASS1_BITS 2).
fn idct_islow(coef: &[i16], q: &[u16; 64], out: &mut [u8], stride: usize) {
    const CB: u32 = 13;
    const P1: u32 = 2;
    const F0_298: i64 = 2446;
    const F0_390: i64 = 3196;
    const F0_541: i64 = 4433;
    const F0_765: i64 = 6270;
    const F0_899: i64 = 7373;
    const F1_175: i64 = 9633;
    const F1_501: i64 = 12299;
    const F1_847: i64 = 15137;
    const F1_961: i64 = 16069;
    const F2_053: i64 = 16819;
    const F2_562: i64 = 20995;
    const F3_072: i64 = 25172;
    // The even/odd butterfly shared by both passes: in[0..8] → 8 results before descaling.
    fn butterfly(i: [i64; 8]) -> [i64; 8] {
        let (z2, z3) = (i[2], i[6]);
        let z1 = (z2 + z3) * F0_541;
        let tmp2 = z1 + z3 * -F1_847;
        let tmp3 = z1 + z2 * F0_765;
        let tmp0 = (i[0] + i[4]) << CB;
        let tmp1 = (i[0] - i[4]) << CB;
        let (t10, t13, t11, t12) = (tmp0 + tmp3, tmp0 - tmp3, tmp1 + tmp2, tmp1 - tmp2);
        let (mut o0, mut o1, mut o2, mut o3) = (i[7], i[5], i[3], i[1]);
        let z1 = o0 + o3;
        let z2 = o1 + o2;
        let z3 = o0 + o2;
        let z4 = o1 + o3;
        let z5 = (z3 + z4) * F1_175;
        o0 *= F0_298;
        o1 *= F2_053;
        o2 *= F3_072;
        o3 *= F1_501;
        let z1 = z1 * -F0_899;
        let z2 = z2 * -F2_562;
        let z3 = z3 * -F1_961 + z5;
        let z4 = z4 * -F0_390 + z5;
        o0 += z1 + z3;
        o1 += z2 + z4;
        o2 += z2 + z3;
        o3 += z1 + z4;
        [
            t10 + o3,
            t11 + o2,
            t12 + o1,
            t13 + o0,
            t13 - o0,
            t12 - o1,
            t11 - o2,
            t10 - o3,
        ]
    }
    let mut ws = [0i64; 64];
    for c in 0..8 {
        let col: [i64; 8] =
            std::array::from_fn(|r| coef[r * 8 + c] as i64 * q[r * 8 + c] as i16 as i64);
        if col[1..].iter().all(|&v| v == 0) {
            let dc = ((col[0] << P1) as i32) as i64;
            (0..8).for_each(|r| ws[r * 8 + c] = dc);
            continue;
        }
        let o = butterfly(col);
        for r in 0..8 {
            ws[r * 8 + c] = (descale(o[r], CB - P1) as i32) as i64;
        }
    }
    for r in 0..8 {
        let row: [i64; 8] = std::array::from_fn(|c| ws[r * 8 + c]);
        let dst = &mut out[r * stride..r * stride + 8];
        if row[1..].iter().all(|&v| v == 0) {
            dst.fill(range_limit(descale(row[0], P1 + 3)));
            continue;
        }
        let o = butterfly(row);
        for (d, &v) in dst.iter_mut().zip(&o) {
            *d = range_limit(descale(v, CB + P1 + 3));
        }
    }
}

/// Upsamples a component plane (`dw`×`dh` valid samples, row stride `pw`) by (`fx`, `fy`)
/// to `w`×`h` with libjpeg's filters: triangular ("fancy") for 2×1, 1×2 and 2×2, box
/// replication otherwise. Rows above and below the plane repeat its edge rows.
#[allow(clippy::too_many_arguments)]
fn upsample(
    plane: &[u8],
    pw: usize,
    dw: usize,
    dh: usize,
    fx: usize,
    fy: usize,
    (rx, ry): (usize, usize),
    w: usize,
    h: usize,
) -> KernelResult<Vec<u8>> {
    if rx != 0 || ry != 0 {
        return Err(KernelError::unsupported(
            "ImageDecoder: fractional JPEG sampling ratios",
        ));
    }
    let at = |x: usize, y: usize| plane[y.min(dh - 1) * pw + x.min(dw - 1)] as i32;
    let ow = dw * fx;
    let mut out = vec![0u8; w * h];
    let fancy = dw > 2;
    // One upsampled row (width `ow`) of vertical "column sums" or plain samples.
    let mut line = vec![0i32; ow.max(w)];
    for oy in 0..h {
        match (fx, fy, fancy) {
            (1, 1, _) => (0..w).for_each(|x| line[x] = at(x, oy)),
            (2, 2, true) => {
                let iy = oy / 2;
                let ny = if oy % 2 == 0 {
                    iy.saturating_sub(1)
                } else {
                    iy + 1
                };
                let colsum = |x: usize| at(x, iy) * 3 + at(x, ny);
                let mut this = colsum(0);
                let mut next = colsum(1);
                line[0] = (this * 4 + 8) >> 4;
                line[1] = (this * 3 + next + 7) >> 4;
                let mut last = this;
                this = next;
                for x in 2..dw {
                    next = colsum(x);
                    line[2 * x - 2] = (this * 3 + last + 8) >> 4;
                    line[2 * x - 1] = (this * 3 + next + 7) >> 4;
                    last = this;
                    this = next;
                }
                line[2 * dw - 2] = (this * 3 + last + 8) >> 4;
                line[2 * dw - 1] = (this * 4 + 7) >> 4;
            }
            (2, 1, true) => {
                let y = oy;
                line[0] = at(0, y);
                line[1] = (at(0, y) * 3 + at(1, y) + 2) >> 2;
                for x in 1..dw - 1 {
                    let v = at(x, y) * 3;
                    line[2 * x] = (v + at(x - 1, y) + 1) >> 2;
                    line[2 * x + 1] = (v + at(x + 1, y) + 2) >> 2;
                }
                line[2 * dw - 2] = (at(dw - 1, y) * 3 + at(dw - 2, y) + 1) >> 2;
                line[2 * dw - 1] = at(dw - 1, y);
            }
            (1, 2, true) => {
                let iy = oy / 2;
                let (ny, bias) = if oy % 2 == 0 {
                    (iy.saturating_sub(1), 1)
                } else {
                    (iy + 1, 2)
                };
                (0..w).for_each(|x| line[x] = (at(x, iy) * 3 + at(x, ny) + bias) >> 2);
            }
            _ => (0..ow.max(w)).for_each(|x| line[x] = at(x / fx, oy / fy)),
        }
        for x in 0..w {
            out[oy * w + x] = line[x.min(ow.max(w) - 1)] as u8;
        }
    }
    Ok(out)
}

/// libjpeg's fixed-point YCbCr → RGB (16 fraction bits).
fn ycc_to_rgb(y: i32, cb: i32, cr: i32) -> [u8; 3] {
    const HALF: i64 = 1 << 15;
    let (cb, cr) = ((cb - 128) as i64, (cr - 128) as i64);
    let r = y as i64 + ((91881 * cr + HALF) >> 16);
    let g = y as i64 + ((-22554 * cb + HALF - 46802 * cr) >> 16);
    let b = y as i64 + ((116130 * cb + HALF) >> 16);
    [
        r.clamp(0, 255) as u8,
        g.clamp(0, 255) as u8,
        b.clamp(0, 255) as u8,
    ]
}
