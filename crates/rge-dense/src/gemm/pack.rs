//! Panel packing and the prepacked operands [`PackedA`] and [`PackedB`].
//!
//! The microkernel reads A as panels of [`PANEL_A`] rows and B as panels of [`PANEL_B`]
//! columns, k-major inside a panel: A panel `p` holds, for each k, the `PANEL_A` values
//! `op(A)[p·PANEL_A + r, k]`; B panel `p` holds, for each k, `op(B)[k, p·PANEL_B + j]`; rows or
//! columns past the matrix are zero. The depth is cut into blocks of [`K_BLOCK`] (the last one
//! shorter), and block after block holds all panels of its depth range, so one cache block of
//! the GEMM is contiguous memory (no power-of-two strides between panels to thrash L2 sets).
//! The widths and the block depth are fixed (every ISA's kernel reads them), so a packed
//! operand is the same on every machine and can be saved in a compiled model.
//!
//! Serialized form ([`PackedB::as_bytes`]), little-endian, a 64-byte header then the panels:
//!
//! | offset | field |
//! |---|---|
//! | 0 | magic `RGEPACK\0` |
//! | 8 | u32 format version (2) |
//! | 12 | u32 kind: 0 = A, 1 = B |
//! | 16 | u64 rows (A: m, B: k) |
//! | 24 | u64 cols (A: k, B: n) |
//! | 32 | u32 panel width (A: 12, B: 32) |
//! | 36 | u32 depth block (256) |
//! | 40 | u64 number of f32 values that follow |
//! | 48 | u64 checksum of the header's bytes 0..48 and the values (4-lane FNV-1a over u32 words) |
//! | 56 | u64 reserved, 0 |
//! | 64 | the panels, f32 |

use super::GemmError;

/// Rows per A panel (the AVX-512 register tile's height; AVX2 and scalar run 2 × 6).
pub const PANEL_A: usize = 12;
/// Columns per B panel (two AVX-512 vectors; AVX2 and scalar run 2 × 16).
pub const PANEL_B: usize = 32;
/// Depth of one packed block: also the GEMM's KC, so a KC × 32 B micro-panel (32 KiB) stays
/// in L1.
pub const K_BLOCK: usize = 256;

const MAGIC: &[u8; 8] = b"RGEPACK\0";
const VERSION: u32 = 2;
/// Header size in f32 words (64 bytes, so the panels start on a cache line).
const HEADER: usize = 16;
/// Alignment of panel data, in f32 words (64 bytes).
const ALIGN: usize = 16;

/// A growable f32 buffer whose contents start on a 64-byte boundary, so panel loads never split
/// cache lines. Plain safe code: an over-allocated `Vec` and an offset.
#[derive(Default)]
pub(crate) struct AlignedBuf {
    raw: Vec<f32>,
    off: usize,
    len: usize,
}

impl AlignedBuf {
    /// A zeroed buffer of `len` floats.
    pub(crate) fn zeroed(len: usize) -> Self {
        let mut b = AlignedBuf::default();
        b.resize(len);
        b
    }

    /// Makes room for `len` floats (contents unspecified; reuses the allocation when it fits).
    pub(crate) fn resize(&mut self, len: usize) -> &mut [f32] {
        if self.raw.len() < len + ALIGN {
            self.raw = vec![0.0; len + ALIGN];
        }
        let addr = self.raw.as_ptr() as usize;
        self.off = (64 - addr % 64) % 64 / 4;
        self.len = len;
        &mut self.raw[self.off..self.off + len]
    }

    pub(crate) fn as_slice(&self) -> &[f32] {
        &self.raw[self.off..self.off + self.len]
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [f32] {
        &mut self.raw[self.off..self.off + self.len]
    }
}

impl Clone for AlignedBuf {
    fn clone(&self) -> Self {
        // A fresh allocation has its own alignment offset.
        let mut b = AlignedBuf::zeroed(self.len);
        b.as_mut_slice().copy_from_slice(self.as_slice());
        b
    }
}

/// A raw row-major operand: `op(X)[i, j]` is `data[i·ld + j]`, or `data[j·ld + i]` when
/// `trans`.
#[derive(Clone, Copy)]
pub(crate) struct Raw<'a> {
    pub data: &'a [f32],
    pub ld: usize,
    pub trans: bool,
}

/// Transposes `rows` (≤ PANEL_A) rows of `kc` values (row stride `ld`) into a panel's `kc`
/// steps of PANEL_A values; only the first `rows` values of each step are written.
pub(crate) type PanelTranspose = unsafe fn(&[f32], usize, &mut [f32], usize, usize);

/// Packs `op(A)[r0..r0+mc, p0..p0+kc]` (`rows = (r0, mc)`, `depth = (p0, kc)`) into `dst` as
/// `ceil(mc/PANEL_A)` panels of `kc` steps; the caller checked bounds. A row-major A is
/// transposed into the panels by `transpose` when the ISA has a fast one (AVX-512's in-register
/// 16×16), else value by value (packing an NHWC convolution's pixels that way was a fifth of
/// MobileNetV2's run).
pub(crate) fn pack_a(
    dst: &mut [f32],
    a: Raw<'_>,
    rows: (usize, usize),
    depth: (usize, usize),
    transpose: Option<PanelTranspose>,
) {
    let Raw {
        data: a,
        ld: lda,
        trans,
    } = a;
    let ((r0, mc), (p0, kc)) = (rows, depth);
    let panels = mc.div_ceil(PANEL_A);
    for (p, panel) in dst[..panels * kc * PANEL_A]
        .chunks_exact_mut(kc * PANEL_A)
        .enumerate()
    {
        let rows = (mc - p * PANEL_A).min(PANEL_A);
        let i0 = r0 + p * PANEL_A;
        if trans && rows == PANEL_A {
            // op(A) rows are contiguous along i: copy a step's values per k, a copy of known
            // size (inlined; a `memcpy` call per 48 bytes was 14% of ResNet-50's 256@28² 3×3
            // stride-2 layer, whose im2col columns are A).
            for (kk, step) in panel.chunks_exact_mut(PANEL_A).enumerate() {
                copy_fixed::<PANEL_A>(step, &a[(p0 + kk) * lda + i0..]);
            }
        } else if trans {
            for (kk, step) in panel.chunks_exact_mut(PANEL_A).enumerate() {
                let src = &a[(p0 + kk) * lda + i0..][..rows];
                step[..rows].copy_from_slice(src);
                step[rows..].fill(0.0);
            }
        } else {
            match transpose {
                // SAFETY: rows `i0..i0 + rows` of A hold columns `p0..p0 + kc` (the caller
                // checked bounds), and the panel holds `kc` steps of PANEL_A >= rows values.
                Some(t) => unsafe { t(&a[i0 * lda + p0..], lda, panel, rows, kc) },
                None => {
                    for r in 0..rows {
                        let src = &a[(i0 + r) * lda + p0..][..kc];
                        for (kk, &v) in src.iter().enumerate() {
                            panel[kk * PANEL_A + r] = v;
                        }
                    }
                }
            }
            if rows < PANEL_A {
                for step in panel.chunks_exact_mut(PANEL_A) {
                    step[rows..].fill(0.0);
                }
            }
        }
    }
}

/// `dst[..N] = src[..N]` as one copy of a known size, which the compiler inlines.
#[inline(always)]
fn copy_fixed<const N: usize>(dst: &mut [f32], src: &[f32]) {
    let (Some(dst), Some(src)) = (dst.first_chunk_mut::<N>(), src.first_chunk::<N>()) else {
        panic!("copy_fixed: fewer than {N} values");
    };
    *dst = *src;
}

/// Packs `op(B)[p0..p0+kc, c0..c0+nc]` (`depth = (p0, kc)`, `cols = (c0, nc)`) into `dst` as
/// `ceil(nc/PANEL_B)` panels of `kc` steps; the caller checked bounds.
pub(crate) fn pack_b(dst: &mut [f32], b: Raw<'_>, depth: (usize, usize), cols: (usize, usize)) {
    let Raw {
        data: b,
        ld: ldb,
        trans,
    } = b;
    let ((p0, kc), (c0, nc)) = (depth, cols);
    let panels = nc.div_ceil(PANEL_B);
    for (p, panel) in dst[..panels * kc * PANEL_B]
        .chunks_exact_mut(kc * PANEL_B)
        .enumerate()
    {
        let cols = (nc - p * PANEL_B).min(PANEL_B);
        let j0 = c0 + p * PANEL_B;
        if trans {
            for j in 0..cols {
                let src = &b[(j0 + j) * ldb + p0..][..kc];
                for (kk, &v) in src.iter().enumerate() {
                    panel[kk * PANEL_B + j] = v;
                }
            }
            if cols < PANEL_B {
                for step in panel.chunks_exact_mut(PANEL_B) {
                    step[cols..].fill(0.0);
                }
            }
        } else if cols == PANEL_B {
            for (kk, step) in panel.chunks_exact_mut(PANEL_B).enumerate() {
                copy_fixed::<PANEL_B>(step, &b[(p0 + kk) * ldb + j0..]);
            }
        } else {
            for (kk, step) in panel.chunks_exact_mut(PANEL_B).enumerate() {
                let src = &b[(p0 + kk) * ldb + j0..][..cols];
                step[..cols].copy_from_slice(src);
                step[cols..].fill(0.0);
            }
        }
    }
}

/// Minimum slice length of a `rows × cols` row-major matrix at leading dimension `ld`, after
/// checking `ld >= cols`.
pub(crate) fn matrix_len(
    what: &'static str,
    rows: usize,
    cols: usize,
    ld: usize,
) -> Result<usize, GemmError> {
    if rows == 0 || cols == 0 {
        return Ok(0);
    }
    if ld < cols {
        return Err(GemmError::LeadingDim {
            operand: what,
            ld,
            min: cols,
        });
    }
    (rows - 1)
        .checked_mul(ld)
        .and_then(|x| x.checked_add(cols))
        .ok_or(GemmError::Overflow)
}

/// Checks a raw operand's slice against its stored shape.
pub(crate) fn check_raw(
    what: &'static str,
    data: &[f32],
    rows: usize,
    cols: usize,
    ld: usize,
) -> Result<(), GemmError> {
    let need = matrix_len(what, rows, cols, ld)?;
    if data.len() < need {
        return Err(GemmError::TooShort {
            operand: what,
            len: data.len(),
            need,
        });
    }
    Ok(())
}

/// A prepacked operand's storage: header and panels in one aligned buffer.
#[derive(Clone)]
struct Packed {
    buf: AlignedBuf,
    rows: usize,
    cols: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    A = 0,
    B = 1,
}

impl Kind {
    fn panel(self) -> usize {
        match self {
            Kind::A => PANEL_A,
            Kind::B => PANEL_B,
        }
    }
}

/// Floats of panel data for a `rows × cols` operand of `kind` (A: m × k, B: k × n).
fn data_len(kind: Kind, rows: usize, cols: usize) -> Option<usize> {
    let (wide, depth) = match kind {
        Kind::A => (rows, cols),
        Kind::B => (cols, rows),
    };
    wide.div_ceil(kind.panel())
        .checked_mul(kind.panel())?
        .checked_mul(depth)
}

/// Checksum of the panel words: FNV-1a in 4 interleaved lanes (so it runs at memory speed).
fn checksum(head: &[f32], data: &[f32]) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut h = [0xcbf2_9ce4_8422_2325u64; 4];
    let mut mix = |words: &[f32]| {
        let mut chunks = words.chunks_exact(4);
        for c in &mut chunks {
            for (h, v) in h.iter_mut().zip(c) {
                *h = (*h ^ u64::from(v.to_bits())).wrapping_mul(PRIME);
            }
        }
        for (h, v) in h.iter_mut().zip(chunks.remainder()) {
            *h = (*h ^ u64::from(v.to_bits())).wrapping_mul(PRIME);
        }
    };
    mix(&head[..12]);
    mix(data);
    h.iter().fold(data.len() as u64, |acc, &x| {
        (acc ^ x).wrapping_mul(PRIME).rotate_left(29)
    })
}

fn put_u32(words: &mut [f32], i: usize, v: u32) {
    words[i] = f32::from_bits(v);
}

fn put_u64(words: &mut [f32], i: usize, v: u64) {
    put_u32(words, i, v as u32);
    put_u32(words, i + 1, (v >> 32) as u32);
}

impl Packed {
    /// Packs `src` (`rows × cols` after op, stored with `ld`, transposed when `trans`).
    fn pack(
        kind: Kind,
        src: &[f32],
        rows: usize,
        cols: usize,
        ld: usize,
        trans: bool,
    ) -> Result<Self, GemmError> {
        let what = match kind {
            Kind::A => "A",
            Kind::B => "B",
        };
        let (sr, sc) = if trans { (cols, rows) } else { (rows, cols) };
        check_raw(what, src, sr, sc, ld)?;
        let len = data_len(kind, rows, cols).ok_or(GemmError::Overflow)?;
        let total = len.checked_add(HEADER).ok_or(GemmError::Overflow)?;
        let mut buf = AlignedBuf::zeroed(total);
        let (head, data) = buf.as_mut_slice().split_at_mut(HEADER);
        let (wide, depth) = match kind {
            Kind::A => (rows, cols),
            Kind::B => (cols, rows),
        };
        let block = wide.div_ceil(kind.panel()) * kind.panel();
        for p0 in (0..depth).step_by(K_BLOCK) {
            let kc = K_BLOCK.min(depth - p0);
            let dst = &mut data[p0 * block..];
            let raw = Raw {
                data: src,
                ld,
                trans,
            };
            match kind {
                Kind::A => pack_a(dst, raw, (0, rows), (p0, kc), None),
                Kind::B => pack_b(dst, raw, (p0, kc), (0, cols)),
            }
        }
        for (i, w) in MAGIC.chunks_exact(4).enumerate() {
            put_u32(head, i, u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        }
        put_u32(head, 2, VERSION);
        put_u32(head, 3, kind as u32);
        put_u64(head, 4, rows as u64);
        put_u64(head, 6, cols as u64);
        put_u32(head, 8, kind.panel() as u32);
        put_u32(head, 9, K_BLOCK as u32);
        put_u64(head, 10, len as u64);
        let sum = checksum(head, data);
        put_u64(head, 12, sum);
        Ok(Packed { buf, rows, cols })
    }

    fn from_bytes(kind: Kind, bytes: &[u8]) -> Result<Self, GemmError> {
        let bad = |why: String| GemmError::BadPacked(why);
        if bytes.len() < HEADER * 4 {
            return Err(bad(format!(
                "{} bytes is shorter than the 64-byte header",
                bytes.len()
            )));
        }
        let u32_at =
            |o: usize| u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
        let u64_at = |o: usize| u64::from(u32_at(o)) | (u64::from(u32_at(o + 4)) << 32);
        if &bytes[..8] != MAGIC {
            return Err(bad("not a packed operand (bad magic)".into()));
        }
        if u32_at(8) != VERSION {
            return Err(bad(format!(
                "format version {} (expected {VERSION})",
                u32_at(8)
            )));
        }
        if u32_at(12) != kind as u32 {
            return Err(bad(format!(
                "kind {} (expected {} for {kind:?})",
                u32_at(12),
                kind as u32
            )));
        }
        if u32_at(32) as usize != kind.panel() {
            return Err(bad(format!(
                "panel width {} (expected {})",
                u32_at(32),
                kind.panel()
            )));
        }
        if u32_at(36) as usize != K_BLOCK {
            return Err(bad(format!(
                "depth block {} (expected {K_BLOCK})",
                u32_at(36)
            )));
        }
        if u64_at(56) != 0 {
            return Err(bad("reserved header field is not zero".into()));
        }
        let dim = |o: usize| usize::try_from(u64_at(o)).map_err(|_| GemmError::Overflow);
        let (rows, cols) = (dim(16)?, dim(24)?);
        let len = data_len(kind, rows, cols).ok_or(GemmError::Overflow)?;
        if u64_at(40) != len as u64 {
            return Err(bad(format!(
                "{} values recorded, {rows}×{cols} needs {len}",
                u64_at(40)
            )));
        }
        let total = len.checked_add(HEADER).ok_or(GemmError::Overflow)?;
        if Some(bytes.len()) != total.checked_mul(4) {
            return Err(bad(format!(
                "{} bytes, {rows}×{cols} needs {}",
                bytes.len(),
                total * 4
            )));
        }
        let mut buf = AlignedBuf::zeroed(total);
        for (w, b) in buf.as_mut_slice().iter_mut().zip(bytes.chunks_exact(4)) {
            *w = f32::from_bits(u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
        }
        let (head, data) = buf.as_slice().split_at(HEADER);
        if checksum(head, data) != u64_at(48) {
            return Err(bad("checksum mismatch (corrupted header or panels)".into()));
        }
        Ok(Packed { buf, rows, cols })
    }

    fn as_bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self.buf.as_slice())
    }

    fn data(&self) -> &[f32] {
        &self.buf.as_slice()[HEADER..]
    }
}

/// A constant left-hand operand `op(A)` (m × k), packed once into `PANEL_A`-row panels, e.g.
/// conv weights in conv-as-GEMM (`C[Cout × HW] = W[Cout × K] · X[K × HW]`).
#[derive(Clone)]
pub struct PackedA(Packed);

/// A constant right-hand operand `op(B)` (k × n), packed once into `PANEL_B`-column panels,
/// e.g. MatMul/Gemm weights.
#[derive(Clone)]
pub struct PackedB(Packed);

impl PackedA {
    /// Packs `op(A)`, m × k: `A[i, p]` is `a[i·lda + p]`, or `a[p·lda + i]` when `trans`.
    pub fn pack(a: &[f32], m: usize, k: usize, lda: usize, trans: bool) -> Result<Self, GemmError> {
        Packed::pack(Kind::A, a, m, k, lda, trans).map(PackedA)
    }
    /// Reads [`PackedA::as_bytes`] output back, validating header, size and checksum.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, GemmError> {
        Packed::from_bytes(Kind::A, bytes).map(PackedA)
    }
    /// The serialized form (header and panels); identical on every machine.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
    /// Rows (m).
    pub fn m(&self) -> usize {
        self.0.rows
    }
    /// Depth (k).
    pub fn k(&self) -> usize {
        self.0.cols
    }
    /// The panels: depth block `b` (of `K_BLOCK`) at `b·K_BLOCK·ceil(m/PANEL_A)·PANEL_A`.
    pub(crate) fn data(&self) -> &[f32] {
        self.0.data()
    }

    /// `op(A)` back as a row-major m × k matrix (the panels hold every value).
    pub fn unpack(&self) -> Vec<f32> {
        let (m, k) = (self.m(), self.k());
        let block = m.div_ceil(PANEL_A) * PANEL_A;
        let data = self.data();
        let mut out = vec![0.0f32; m * k];
        for p0 in (0..k).step_by(K_BLOCK) {
            let kc = K_BLOCK.min(k - p0);
            let blk = &data[p0 * block..];
            for (i, row) in out.chunks_exact_mut(k.max(1)).enumerate().take(m) {
                let panel = &blk[(i / PANEL_A) * kc * PANEL_A..];
                for (kk, v) in row[p0..p0 + kc].iter_mut().enumerate() {
                    *v = panel[kk * PANEL_A + i % PANEL_A];
                }
            }
        }
        out
    }

    /// `op(A)ᵀ` (k × m) as a packed right operand: the same weights for a product whose rows
    /// and columns trade places (a convolution of few pixels computes `Yᵀ = colᵀ·Wᵀ`).
    pub fn transposed(&self) -> Result<PackedB, GemmError> {
        let (m, k) = (self.m(), self.k());
        PackedB::pack(&self.unpack(), k, m, k.max(1), true)
    }
}

impl PackedB {
    /// Packs `op(B)`, k × n: `B[p, j]` is `b[p·ldb + j]`, or `b[j·ldb + p]` when `trans`.
    pub fn pack(b: &[f32], k: usize, n: usize, ldb: usize, trans: bool) -> Result<Self, GemmError> {
        Packed::pack(Kind::B, b, k, n, ldb, trans).map(PackedB)
    }
    /// Reads [`PackedB::as_bytes`] output back, validating header, size and checksum.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, GemmError> {
        Packed::from_bytes(Kind::B, bytes).map(PackedB)
    }
    /// The serialized form (header and panels); identical on every machine.
    pub fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
    /// Depth (k).
    pub fn k(&self) -> usize {
        self.0.rows
    }
    /// Columns (n).
    pub fn n(&self) -> usize {
        self.0.cols
    }
    /// The panels: depth block `b` (of `K_BLOCK`) at `b·K_BLOCK·ceil(n/PANEL_B)·PANEL_B`.
    pub(crate) fn data(&self) -> &[f32] {
        self.0.data()
    }
}

impl std::fmt::Debug for PackedA {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackedA({}×{})", self.m(), self.k())
    }
}

impl std::fmt::Debug for PackedB {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackedB({}×{})", self.k(), self.n())
    }
}
