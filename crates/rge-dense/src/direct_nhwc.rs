//! Ungrouped convolution on channels-last data computed directly: the kernel of FusedConvNhwc
//! for every ungrouped convolution but the 1×1 stride-1 ones (a plain GEMM over pixels).
//!
//! Each output pixel's channels are vectors; every input value of its taps is broadcast
//! straight from the image and multiplied by a vector of weights, for a tile of pixels at once
//! (independent accumulators), with no patch matrix and no packing of the input. The weights
//! are repacked once into blocks of [`BLOCK`] output channels, `[block][kh·kw][Cin][BLOCK]`, so
//! a block's weights are one contiguous stream that stays in L2 while the block sweeps over the
//! pixels. A padded input reads a zero-bordered copy ([`DirectNhwc::pad_image`]) so that every
//! pixel runs the same tile, and a tile may span output rows (a 7×7 image is 49 pixels, not
//! seven rows of seven). Bias, residual and a clamp activation (none, Relu, Clip) are applied
//! in registers; other activations in a pass over the stored tile.
//!
//! Register tiles, chosen at run time: AVX-512 6 pixels × 4 vectors over a pair of whole blocks
//! and 12 × 2 over a single one; AVX2+FMA 6 × 2 over each half of a block in turn and 4 × 3 over
//! a last block of 17–24 channels (3 × 4 over a whole block left 17 registers for 16, the
//! weights as memory operands: 34% of the FMA peak on an EPYC's 3×3 layers); the baseline (the
//! scalar twin the tests compare against) 1 × 32.

use crate::depthwise::{DwGeometry, Isa};
use crate::gemm::{activation, Activation, LINE_FLOATS};
use rge_simd::{Scalar, Simd};

/// Output channels per weight block: two AVX-512 vectors, four AVX2 ones.
pub const BLOCK: usize = 32;

/// Depth steps `(tap, Cin)` per chunk when a block is deeper than [`CHUNKED_DEPTH`]: 32 KiB of
/// its weights, which stay in L1 while a group's tiles read them. Measured on ResNet-18: 7% off
/// its 3×3 layers of 512 channels (a block's weights 576 KiB), nothing or worse on shallower
/// ones, which run unchunked.
const K_CHUNK: usize = 256;

/// The depth above which blocks are cut into chunks (512 KiB of a block's weights).
pub const CHUNKED_DEPTH: usize = 4096;

/// Output pixels per group: its sums (12 KiB of a block) stay in L1 between depth chunks.
const GROUP: usize = 96;

/// Bytes of the blocks' weights up to which a run sweeps the pixels once (group outer, blocks
/// inner): a quarter of a 2 MiB L2, so they stay there beside the group's input and output.
const GROUP_OUTER_WEIGHTS: usize = 512 * 1024;

/// Floats ahead in a block's weights that a tile fetches into L1 while it computes: the
/// hardware prefetcher alone left the weight loads waiting on L2 (ResNet-18's 3×3 layers went
/// from 69–74% of the FMA peak to 77–86%).
const PF: usize = 256;

/// One direct convolution: its geometry and channel counts.
#[derive(Debug, Clone, Copy)]
pub struct DirectNhwc {
    pub g: DwGeometry,
    pub cin: usize,
    pub cout: usize,
}

/// The operands of a run over one image.
pub struct DirectArgs<'a> {
    /// The image: `[h, w, Cin]`, or its padded copy when [`DirectNhwc::needs_padding`].
    pub x: &'a [f32],
    /// The weights, see [`DirectNhwc::repack_weights`].
    pub wts: &'a [f32],
    /// `[Cout]`, or none.
    pub bias: Option<&'a [f32]>,
    /// The image's residual, `[oh, ow, Cout]`, or none.
    pub z: Option<&'a [f32]>,
    pub act: &'a Activation,
}

/// The geometry of the input a run reads: its width in pixels and the offset of each tap.
struct Source {
    /// Pixels per input row.
    pitch: usize,
    /// Floats from a pixel's first tap to each run of contiguous input: a filter row's
    /// (`[kh]`), or with a dilated row each tap's (`[kh·kw]`).
    runs: Vec<usize>,
    /// Floats per run: `kw·Cin` or `Cin`. The weights' depth order `(tap, Cin)` is the runs'
    /// order.
    run: usize,
}

impl DirectNhwc {
    /// Blocks of [`BLOCK`] output channels (the last one zero-filled past `Cout`).
    pub fn blocks(&self) -> usize {
        self.cout.div_ceil(BLOCK)
    }

    /// ONNX weights `[Cout, Cin, kh, kw]` as `[block][kh·kw][Cin][BLOCK]`, zeros past `Cout`.
    pub fn repack_weights(&self, w: &[f32]) -> Vec<f32> {
        let (taps, cin, cout) = (self.g.kh * self.g.kw, self.cin, self.cout);
        let mut out = vec![0.0; self.blocks() * taps * cin * BLOCK];
        for co in 0..cout {
            let (b, lane) = (co / BLOCK, co % BLOCK);
            for ci in 0..cin {
                for t in 0..taps {
                    out[((b * taps + t) * cin + ci) * BLOCK + lane] = w[(co * cin + ci) * taps + t];
                }
            }
        }
        out
    }

    /// Whether some tap of some output pixel falls outside the image, so that a run reads the
    /// padded copy of [`DirectNhwc::pad_image`].
    pub fn needs_padding(&self) -> bool {
        let (hp, wp) = self.padded_dims();
        self.g.pad_top > 0 || self.g.pad_left > 0 || hp > self.g.h || wp > self.g.w
    }

    /// The rows and columns the taps of all output pixels span, from the first tap of pixel
    /// (0, 0).
    fn padded_dims(&self) -> (usize, usize) {
        let g = &self.g;
        let span = |o: usize, s: usize, k: usize, d: usize| {
            (o.max(1) - 1) * s.max(1) + (k.max(1) - 1) * d.max(1) + 1
        };
        (
            span(g.oh, g.stride_h, g.kh, g.dil_h),
            span(g.ow, g.stride_w, g.kw, g.dil_w),
        )
    }

    /// Floats of the padded copy of one image.
    pub fn padded_len(&self) -> usize {
        let (hp, wp) = self.padded_dims();
        hp * wp * self.cin
    }

    /// Floats per row of the padded copy.
    pub fn padded_row(&self) -> usize {
        self.padded_dims().1 * self.cin
    }

    /// The padded copy of one image `x` (`[h, w, Cin]`) into `xp` ([`DirectNhwc::padded_len`]
    /// floats): zeros where a tap falls outside the image.
    pub fn pad_image(&self, x: &[f32], xp: &mut [f32]) {
        self.pad_rows(x, 0, &mut xp[..self.padded_len()]);
    }

    /// Rows `[r0, r0 + n)` of the padded copy of `x` into `rows` (`n` whole padded rows,
    /// [`DirectNhwc::padded_row`] floats each): threads pad bands of one image.
    pub fn pad_rows(&self, x: &[f32], r0: usize, rows: &mut [f32]) {
        let g = &self.g;
        let wp = self.padded_dims().1;
        let cin = self.cin;
        for (i, row) in rows.chunks_exact_mut(wp * cin).enumerate() {
            let iy = (r0 + i) as isize - g.pad_top as isize;
            if iy < 0 || iy as usize >= g.h {
                row.fill(0.0);
                continue;
            }
            let src = &x[iy as usize * g.w * cin..(iy as usize + 1) * g.w * cin];
            // Columns `[pad_left, pad_left + w)` of the padded row hold the image's row.
            let first = g.pad_left.min(wp);
            let last = (g.pad_left + g.w).min(wp);
            row[..first * cin].fill(0.0);
            row[first * cin..last * cin].copy_from_slice(&src[..(last - first) * cin]);
            row[last * cin..].fill(0.0);
        }
    }

    fn source(&self) -> Source {
        let g = &self.g;
        let pitch = if self.needs_padding() {
            self.padded_dims().1
        } else {
            g.w
        };
        let (dh, dw) = (g.dil_h.max(1), g.dil_w.max(1));
        let mut runs = Vec::with_capacity(g.kh * g.kw);
        let run = if dw == 1 {
            // A filter row's taps are adjacent pixels: one run of `kw·Cin` floats.
            for i in 0..g.kh {
                runs.push(i * dh * pitch * self.cin);
            }
            g.kw * self.cin
        } else {
            for i in 0..g.kh {
                for j in 0..g.kw {
                    runs.push((i * dh * pitch + j * dw) * self.cin);
                }
            }
            self.cin
        };
        Source { pitch, runs, run }
    }

    /// Output pixels `[p0, p1)` (counted `oy·ow + ox`) of one image for the channel blocks
    /// `[b0, b1)`, into `out` (the image's output, `[oh, ow, Cout]`). Falls back to the
    /// baseline when the CPU lacks `isa`.
    ///
    /// # Safety
    /// `out` must be valid for writing the image's `oh·ow·Cout` floats, and no other thread may
    /// read or write the pixels and channels this call writes while it runs.
    ///
    /// # Panics
    /// When a slice is shorter than the geometry needs (a caller's bug, not bad input).
    pub unsafe fn run(
        &self,
        isa: Isa,
        a: &DirectArgs<'_>,
        pixels: (usize, usize),
        blocks: (usize, usize),
        out: *mut f32,
    ) {
        let g = &self.g;
        let need_x = if self.needs_padding() {
            self.padded_len()
        } else {
            g.h * g.w * self.cin
        };
        assert!(a.x.len() >= need_x);
        assert!(a.wts.len() >= self.blocks() * g.kh * g.kw * self.cin * BLOCK);
        assert!(a.bias.is_none_or(|b| b.len() >= self.cout));
        assert!(a.z.is_none_or(|z| z.len() >= g.oh * g.ow * self.cout));
        assert!(pixels.0 <= pixels.1 && pixels.1 <= g.oh * g.ow);
        assert!(blocks.0 <= blocks.1 && blocks.1 <= self.blocks());
        let src = self.source();
        let job = Job {
            k: self,
            a,
            src: &src,
            out,
        };
        // SAFETY (each arm): the ISA is available (checked in the arm's guard); the caller's
        // contract on `out`; the slices' lengths were checked above.
        unsafe {
            match isa {
                #[cfg(target_arch = "x86_64")]
                Isa::Avx512 if Isa::Avx512.is_available() => run_avx512(&job, pixels, blocks),
                #[cfg(target_arch = "x86_64")]
                Isa::Avx2 if Isa::Avx2.is_available() => run_avx2(&job, pixels, blocks),
                _ => run_simd::<Scalar, 1, 1, 1, BLOCK, { BLOCK / 2 }, 0, 0, BLOCK, 0, 0>(
                    Scalar, &job, pixels, blocks,
                ),
            }
        }
    }
}

/// What the tiles of one run share.
struct Job<'a, 'b> {
    k: &'a DirectNhwc,
    a: &'a DirectArgs<'b>,
    src: &'a Source,
    out: *mut f32,
}

/// Block after block, group after group of [`GROUP`] pixels, depth chunk after depth chunk
/// (at most [`K_CHUNK`] `(tap, Cin)` steps, whose weights stay in L1 while the group's tiles
/// read them), every tile of `PX` pixels (the last one shorter).
///
/// # Safety
/// As [`DirectNhwc::run`]; `U·LANES` divides [`BLOCK`], `UH` is `U / 2`; `PX1 <= PX2 <= PX` (the
/// narrower tiles); `U3` vectors (none when 0) of `PX3` pixels for a last block of more than
/// `U·LANES` channels and at most `U3·LANES`.
#[inline(always)]
unsafe fn run_simd<
    S: Simd,
    const PX: usize,
    const PX1: usize,
    const PX2: usize,
    const U: usize,
    const UH: usize,
    const PP: usize,
    const PPH: usize,
    const U2: usize,
    const PX3: usize,
    const U3: usize,
>(
    s: S,
    job: &Job<'_, '_>,
    (p0, p1): (usize, usize),
    (b0, b1): (usize, usize),
) {
    debug_assert_eq!(BLOCK % (U * S::LANES), 0);
    let depth = job.k.g.kh * job.k.g.kw * job.k.cin;
    // Pairs of whole blocks run as one tile of `PP` pixels when the ISA has one (`PP > 0`) and
    // the blocks are not chunked.
    let pairs = PP > 0 && depth <= CHUNKED_DEPTH;
    let cout = job.k.cout;
    // Small weights (all the blocks' in L2) sweep the pixels once, group by group, every block
    // over a group while its input and output lines are in L1; large ones go block by block,
    // each block's weights read once from memory.
    let weights = (b1 - b0) * depth * BLOCK * 4;
    // The pixel groups of [p0, p1): GROUP pixels each, the last one shorter.
    let groups = || {
        (p0..p1)
            .step_by(GROUP)
            .map(move |g0| (g0, (g0 + GROUP).min(p1)))
    };
    // Whether block `b` starts a pair: it and the next are whole and in the range.
    let pair_at = |b: usize| pairs && b + 1 < b1 && (b + 2) * BLOCK <= cout;
    // No closures below: they would not inherit the ISA's target features.
    if weights <= GROUP_OUTER_WEIGHTS {
        for px in groups() {
            let mut b = b0;
            while b < b1 {
                // SAFETY: as this function's.
                unsafe {
                    if pair_at(b) {
                        group_pair::<S, PP, PPH, U2>(s, job, b, px, depth);
                        b += 2;
                    } else {
                        group::<S, PX, PX1, PX2, U, UH, PX3, U3>(s, job, b, px, depth);
                        b += 1;
                    }
                }
            }
        }
    } else {
        let mut b = b0;
        while b < b1 {
            let pair = pair_at(b);
            for px in groups() {
                // SAFETY: as this function's.
                unsafe {
                    if pair {
                        group_pair::<S, PP, PPH, U2>(s, job, b, px, depth);
                    } else {
                        group::<S, PX, PX1, PX2, U, UH, PX3, U3>(s, job, b, px, depth);
                    }
                }
            }
            b += if pair { 2 } else { 1 };
        }
    }
}

/// Blocks `b` and `b + 1` (both whole, unchunked) over pixels `[g0, g1)`: tiles of `PP`
/// pixels (`PPH` for a short last one) × `U2` vectors, two blocks' worth. On AVX-512, 6 × 4
/// against 12 × 2: the same 24 sums from 10 loads per depth step instead of 14, and six tap
/// pointers instead of twelve, which no longer spill from the integer registers.
///
/// # Safety
/// As [`group`], with `b + 1` a whole block.
#[inline(always)]
unsafe fn group_pair<S: Simd, const PP: usize, const PPH: usize, const U2: usize>(
    s: S,
    job: &Job<'_, '_>,
    b: usize,
    (g0, g1): (usize, usize),
    depth: usize,
) {
    let mut p = g0;
    while p < g1 {
        let n = (g1 - p).min(PP);
        let part = Part {
            p,
            n,
            b,
            lane0: 0,
            k: (0, depth),
            pf: std::ptr::null(),
            pf_lines: 0,
        };
        // SAFETY: as `group`'s tiles; the pair's second block exists (the caller's).
        unsafe {
            if n <= PPH {
                tile::<S, PPH, U2, false>(s, job, &part)
            } else {
                tile::<S, PP, U2, false>(s, job, &part)
            }
        }
        p += n;
    }
}

/// Block `b` over pixels `[g0, g1)`: depth chunk after depth chunk, every tile of `PX` pixels
/// (the last one shorter).
///
/// # Safety
/// As [`run_simd`], with `b` a block and the pixels inside the image.
#[inline(always)]
unsafe fn group<
    S: Simd,
    const PX: usize,
    const PX1: usize,
    const PX2: usize,
    const U: usize,
    const UH: usize,
    const PX3: usize,
    const U3: usize,
>(
    s: S,
    job: &Job<'_, '_>,
    b: usize,
    (g0, g1): (usize, usize),
    depth: usize,
) {
    let kc = if depth > CHUNKED_DEPTH {
        K_CHUNK
    } else {
        depth
    };
    // Channels of a tile: the whole block, or with fewer registers (AVX2) a part of it, the
    // parts running one after another over the same pixels and depth chunk.
    let sub = U * S::LANES;
    // No closures below: they would not inherit the ISA's target features.
    let mut k0 = 0;
    while k0 < depth {
        let k1 = (k0 + kc).min(depth);
        // A chunked block streams its weights from memory: each tile fetches its share of the
        // next chunk's lines into L2 while it computes, one line per depth step inside its
        // loop (a burst at the tile's start stalled it: ResNet-50's 7×7 layers of 512
        // channels ran 70% over their hot-cache time). After a block's last chunk the next
        // chunk is the next block's first, which follows it in memory.
        let next_steps = if kc < depth {
            if k1 < depth {
                kc.min(depth - k1)
            } else if b + 1 < job.k.blocks() {
                kc
            } else {
                0
            }
        } else {
            0
        };
        let lines = (next_steps * BLOCK).div_ceil(LINE_FLOATS);
        let next = job.a.wts.as_ptr().wrapping_add((b * depth + k1) * BLOCK);
        let per_tile = lines.div_ceil((g1 - g0).div_ceil(PX)).min(k1 - k0);
        let mut line = 0;
        let mut lane0 = 0;
        while lane0 < BLOCK && b * BLOCK + lane0 < job.k.cout {
            let left = job.k.cout - b * BLOCK - lane0;
            // A last block of 17–24 channels on AVX2 runs one part of `U3` vectors (4 × 3),
            // not a whole part and a half one: the half one's broadcasts outnumbered its
            // multiply-adds (the OCR detector's 96 → 24 3×3 layers ran at 51% of the peak).
            let three = U3 > 0 && lane0 == 0 && left > sub && left <= U3 * S::LANES;
            // A part of at most half its width runs half as many vectors.
            let half = !three && left <= UH * S::LANES;
            let px = if three { PX3 } else { PX };
            let mut p = g0;
            while p < g1 {
                let n = (g1 - p).min(px);
                let pf_lines = per_tile.min(lines.saturating_sub(line));
                let part = Part {
                    p,
                    n,
                    b,
                    lane0,
                    k: (k0, k1),
                    // `wrapping_add`: a hint's address need not be in bounds.
                    pf: next.wrapping_add(line * LINE_FLOATS),
                    pf_lines,
                };
                line += per_tile;
                // SAFETY: pixels `[p, p + n)`, block `b` and the depth range exist (the caller's
                // contract, `depth`). A short last tile runs a narrower tile (a 7×7 image is four
                // tiles of 12 and one of 1).
                // The prefetching tiles are instances of their own: the pointer and the count take
                // two more integer registers in the inner loop, whose tap pointers already fill
                // them (the unchunked layers ran 4% slower sharing that code).
                unsafe {
                    match (half, pf_lines > 0) {
                        _ if three => tile::<S, PX3, U3, false>(s, job, &part),
                        (true, false) => tile::<S, PX, UH, false>(s, job, &part),
                        (true, true) => tile::<S, PX, UH, true>(s, job, &part),
                        (false, false) if n <= PX1 => tile::<S, PX1, U, false>(s, job, &part),
                        (false, true) if n <= PX1 => tile::<S, PX1, U, true>(s, job, &part),
                        (false, false) if n <= PX2 => tile::<S, PX2, U, false>(s, job, &part),
                        (false, true) if n <= PX2 => tile::<S, PX2, U, true>(s, job, &part),
                        (false, false) => tile::<S, PX, U, false>(s, job, &part),
                        (false, true) => tile::<S, PX, U, true>(s, job, &part),
                    }
                }
                p += n;
            }
            lane0 += if three { BLOCK } else { sub };
        }
        k0 = k1;
    }
}

/// One tile's share of the work: `n` pixels from `p`, block `b`, depth steps `[k.0, k.1)`;
/// and `pf_lines` lines from `pf` (the next chunk's weights) to fetch into L2 on the way, one
/// per depth step.
struct Part {
    p: usize,
    n: usize,
    b: usize,
    /// The tile's first channel in the block (0 unless a tile is narrower than a block).
    lane0: usize,
    k: (usize, usize),
    pf: *const f32,
    pf_lines: usize,
}

/// `n` (at most `PX`) pixels from `p` × block `b` over depth steps `[k.0, k.1)`: starts from
/// the bias (first chunk) or the sums stored so far, adds the chunk's taps, stores the sums,
/// and after the last chunk adds the residual and applies the activation. Lanes past `n`
/// repeat the last pixel and are not stored.
///
/// # Safety
/// As [`run_simd`], with `p + n` at most the image's pixels, `n >= 1`, `b` a block, the depth
/// range inside `kh·kw·Cin`.
// Index loops over the register tile's pixels and vectors read as the tile's shape.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn tile<S: Simd, const PX: usize, const U: usize, const L2_AHEAD: bool>(
    s: S,
    job: &Job<'_, '_>,
    part: &Part,
) {
    let (k, a) = (job.k, job.a);
    let (g, cin, cout) = (&k.g, k.cin, k.cout);
    let Part {
        p,
        n,
        b,
        lane0,
        k: (k0, k1),
        mut pf,
        pf_lines: mut pf_left,
    } = *part;
    let c0 = b * BLOCK + lane0;
    // Vectors per block: a tile of more (a pair of blocks) reads the next block's weights
    // `bstride` floats further.
    let ub = const { BLOCK / S::LANES };
    let bstride = g.kh * g.kw * cin * BLOCK;
    let mut width = [0usize; U];
    for (u, w) in width.iter_mut().enumerate() {
        *w = cout.saturating_sub(c0 + u * S::LANES).min(S::LANES);
    }
    let (sh, sw) = (g.stride_h.max(1), g.stride_w.max(1));
    let taps = g.kh * g.kw;
    // SAFETY (every load and store below): taps of pixels inside the (padded) image, weights
    // of block `b`, and lanes of existing channels (`width`) of the tile's pixels; `run`
    // checked the slices' lengths.
    unsafe {
        let mut acc = [[s.splat(0.0); U]; PX];
        if k0 == 0 {
            if let Some(bias) = a.bias {
                for u in 0..U {
                    if width[u] > 0 {
                        let v = s.load_n(bias.as_ptr().add(c0 + u * S::LANES), width[u], 0.0);
                        for q in 0..PX {
                            acc[q][u] = v;
                        }
                    }
                }
            }
        } else {
            for q in 0..PX {
                if q < n {
                    let at = (p + q) * cout + c0;
                    for u in 0..U {
                        if width[u] > 0 {
                            let o = job.out.add(at + u * S::LANES);
                            acc[q][u] = s.load_n(o, width[u], 0.0);
                        }
                    }
                }
            }
        }
        // The residual is read after the last chunk's sums: its lines (from memory, the
        // previous block's output) are fetched now, while the tile computes.
        if let Some(z) = a.z.filter(|_| k1 == taps * cin) {
            for q in 0..n {
                let zq = z.as_ptr().wrapping_add((p + q) * cout + c0);
                s.prefetch(zq);
                s.prefetch(zq.wrapping_add(BLOCK - 1));
            }
        }
        let x = a.x.as_ptr();
        let mut xp = [x; PX];
        // One division for the tile (it may span rows), not one per pixel: a tile of a
        // 3-channel stem has only 27 multiply-adds per pixel.
        let (mut oy, mut ox) = (p / g.ow, p % g.ow);
        for q in 0..PX {
            xp[q] = x.add((oy * sh * job.src.pitch + ox * sw) * cin);
            // Pixels past `n` repeat the last one.
            if q + 1 < n {
                ox += 1;
                if ox == g.ow {
                    ox = 0;
                    oy += 1;
                }
            }
        }
        let wb = a.wts.as_ptr().add(b * taps * cin * BLOCK + lane0);
        let run = job.src.run;
        for t in k0 / run..k1.div_ceil(run) {
            let off = job.src.runs[t];
            let (ci0, ci1) = (k0.max(t * run) - t * run, k1.min((t + 1) * run) - t * run);
            let wt = wb.add(t * run * BLOCK);
            let mut xt = [x; PX];
            for q in 0..PX {
                xt[q] = xp[q].add(off);
            }
            // Running pointers, not `base + ci·stride`: the index arithmetic took as many
            // instructions as the loads it fed, in a loop bound by issue width.
            let mut ahead = xt[0].wrapping_add(PX * sw * cin);
            let mut wp = wt.add(ci0 * BLOCK);
            for ci in ci0..ci1 {
                s.prefetch(wp.wrapping_add(PF));
                if U * S::LANES > LINE_FLOATS {
                    s.prefetch(wp.wrapping_add(PF + LINE_FLOATS));
                }
                s.prefetch(ahead);
                ahead = ahead.wrapping_add(LINE_FLOATS);
                if L2_AHEAD && pf_left > 0 {
                    s.prefetch_l2(pf);
                    pf = pf.wrapping_add(LINE_FLOATS);
                    pf_left -= 1;
                }
                if U > ub {
                    s.prefetch(wp.wrapping_add(bstride + PF));
                    s.prefetch(wp.wrapping_add(bstride + PF + 16));
                }
                let mut wv = [s.splat(0.0); U];
                for u in 0..U {
                    wv[u] = s.load(wp.add((u / ub) * bstride + (u % ub) * S::LANES));
                }
                for q in 0..PX {
                    let xv = s.splat(*xt[q].add(ci));
                    for u in 0..U {
                        acc[q][u] = s.mul_add(wv[u], xv, acc[q][u]);
                    }
                }
                wp = wp.wrapping_add(BLOCK);
            }
        }
        // The last chunk of a tile whose activation is a clamp (none, Relu, Clip) finishes in
        // registers, by a loop with no branch on the operands (one instance with a residual,
        // one without) so that it unrolls whole: with branches, `acc` went to memory.
        let clamp = a.act.clamp_bounds().filter(|_| k1 == taps * cin);
        if let Some((lo, hi)) = clamp {
            let (lo, hi) = (s.splat(lo), s.splat(hi));
            match a.z {
                Some(z) => {
                    // Pixels past `n` read the last one's residual (and are not stored).
                    let zp = z.as_ptr().add(p * cout + c0);
                    let mut rows = [zp; PX];
                    for q in 0..PX {
                        rows[q] = zp.add(q.min(n - 1) * cout);
                    }
                    finish::<S, PX, U, true>(s, &mut acc, &rows, &width, (lo, hi));
                }
                None => finish::<S, PX, U, false>(s, &mut acc, &[x; PX], &width, (lo, hi)),
            }
        }
        // The sums are stored first, by a loop small enough to unroll whole: an index into
        // `acc` that the compiler cannot resolve would keep `acc` in memory (a store after every
        // FMA). Residual and activation then run over the stored pixels.
        for q in 0..PX {
            if q >= n {
                break;
            }
            let at = (p + q) * cout + c0;
            for u in 0..U {
                let o = job.out.add(at + u * S::LANES);
                if width[u] == S::LANES {
                    s.store(o, acc[q][u]);
                } else if width[u] > 0 {
                    s.store_n(o, acc[q][u], width[u]);
                }
            }
        }
        if clamp.is_some() || k1 < taps * cin {
            return;
        }
        for q in 0..n {
            let at = (p + q) * cout + c0;
            for u in 0..U {
                if width[u] == 0 {
                    continue;
                }
                let (off, w) = (at + u * S::LANES, width[u]);
                let o = job.out.add(off);
                // Plain loads and stores for whole vectors: a masked load of a line just
                // stored is not forwarded from the store buffer and waits for it to drain
                // (a fifth of a 1×1 layer of 64 channels' time went there).
                if w == S::LANES {
                    let mut v = s.load(o);
                    if let Some(z) = a.z {
                        v = s.add(v, s.load(z.as_ptr().add(off)));
                    }
                    s.store(o, activation(s, a.act, v));
                } else {
                    let mut v = s.load_n(o, w, 0.0);
                    if let Some(z) = a.z {
                        v = s.add(v, s.load_n(z.as_ptr().add(off), w, 0.0));
                    }
                    s.store_n(o, activation(s, a.act, v), w);
                }
            }
        }
    }
}

/// Adds each pixel's residual row (`rows[q]`, when `RESIDUAL`) to a tile's final sums and
/// clamps them to `[lo, hi]`.
///
/// # Safety
/// With `RESIDUAL`, every row holds the tile's channels (`width`).
#[allow(clippy::needless_range_loop)]
#[inline(always)]
unsafe fn finish<S: Simd, const PX: usize, const U: usize, const RESIDUAL: bool>(
    s: S,
    acc: &mut [[S::V; U]; PX],
    rows: &[*const f32; PX],
    width: &[usize; U],
    (lo, hi): (S::V, S::V),
) {
    for q in 0..PX {
        for u in 0..U {
            let mut v = acc[q][u];
            if RESIDUAL {
                // SAFETY: the caller's.
                v = s.add(v, unsafe {
                    s.load_n(rows[q].add(u * S::LANES), width[u], 0.0)
                });
            }
            acc[q][u] = s.min(hi, s.max(lo, v));
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn run_avx512(job: &Job<'_, '_>, pixels: (usize, usize), blocks: (usize, usize)) {
    // SAFETY: reached only from `DirectNhwc::run` after the ISA check, with its contract.
    unsafe {
        let s = rge_simd::Avx512::new_unchecked();
        run_simd::<_, 12, 4, 8, 2, 1, 6, 3, 4, 0, 0>(s, job, pixels, blocks)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn run_avx2(job: &Job<'_, '_>, pixels: (usize, usize), blocks: (usize, usize)) {
    // SAFETY: reached only from `DirectNhwc::run` after the ISA check, with its contract.
    unsafe {
        let s = rge_simd::Avx2::new_unchecked();
        run_simd::<_, 6, 2, 4, 2, 1, 0, 0, 4, 4, 3>(s, job, pixels, blocks)
    }
}

#[cfg(test)]
mod tests;
