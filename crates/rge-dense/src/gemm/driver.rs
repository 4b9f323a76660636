//! Cache blocking and threading (the GotoBLAS/BLIS loop nest, in BLIS's order for a
//! broadcast-A kernel):
//!
//! ```text
//! for ic in M step MC            (MC is large: usually one block)
//!   for pc in K step KC          pack A[ic.., pc..] once (raw A only)
//!     for jc in N step NC        pack B[pc.., jc..] (raw B only): B block (KC × NC) in L2
//!       for ir in MC step 12       A micro-panel (12 × KC, 12 KiB) stays in L1 ...
//!         for jr in NC step 32     ... while B micro-panels stream from L2: one tile each
//! ```
//!
//! Walking a tile row keeps C's accesses sequential along its rows (prefetch- and TLB-
//! friendly), and each raw operand is packed exactly once per part.
//!
//! Threads split C into a grid of rectangles (whole panels, never K, so no reduction), chosen to
//! balance compute and to avoid re-packing a raw operand in every part; each part runs the loop
//! nest above with its own thread-local packing buffers.

use std::cell::RefCell;

use super::epilogue::EpiCtx;
use super::pack::{pack_a, pack_b, AlignedBuf, Raw, K_BLOCK, PANEL_A, PANEL_B};
use super::simd::{run_tile, Isa, Mode, Store, Tile, LINE_FLOATS};
use crate::shared_out::SharedOut;

/// An operand as the driver sees it: raw (packed per block) or prepacked panels.
#[derive(Clone, Copy)]
pub(crate) enum Src<'a> {
    Raw(Raw<'a>),
    Packed(&'a [f32]),
}

/// One validated GEMM (all operands checked to cover their shapes).
pub(crate) struct Problem<'a> {
    pub m: usize,
    pub n: usize,
    /// The depth to compute (0 when alpha is 0).
    pub k: usize,
    pub alpha: f32,
    pub beta: f32,
    pub a: Src<'a>,
    pub b: Src<'a>,
    pub c: SharedOut,
    pub ldc: usize,
    pub epi: Option<&'a EpiCtx<'a>>,
}

/// Cache block sizes, in elements (KC is the packed format's `K_BLOCK`).
struct Blocking {
    /// Rows of A packed at once (MC × KC floats of thread-local buffer).
    mc: usize,
    /// Columns of the B block (KC × NC floats), which should stay in L2.
    nc: usize,
}

fn blocking(isa: Isa) -> Blocking {
    match isa {
        // AVX-512 parts have 1-2 MiB of L2 per core: a 1 MiB B block.
        Isa::Avx512 => Blocking { mc: 4092, nc: 1024 },
        // AVX2 parts may have only 256-512 KiB: a 256 KiB B block.
        Isa::Avx2 => Blocking { mc: 4092, nc: 256 },
        Isa::Scalar => Blocking { mc: 4092, nc: 256 },
    }
}

/// Each thread's packing buffers, kept between calls so steady-state calls do not allocate.
#[derive(Default)]
struct PackBufs {
    a: AlignedBuf,
    b: AlignedBuf,
}

thread_local! {
    static BUFS: RefCell<PackBufs> = RefCell::new(PackBufs::default());
}

/// Runs `f` with this thread's buffers, or fresh ones if they are in use or being torn down.
fn with_bufs(f: impl FnOnce(&mut PackBufs)) {
    let mut f = Some(f);
    let _ = BUFS.try_with(|cell| {
        if let Ok(mut bufs) = cell.try_borrow_mut() {
            if let Some(f) = f.take() {
                f(&mut bufs);
            }
        }
    });
    if let Some(f) = f {
        f(&mut PackBufs::default());
    }
}

/// The ISA's fast transpose of a row-major A into packed panels, if it has one.
fn panel_transpose(isa: Isa) -> Option<super::pack::PanelTranspose> {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 if Isa::Avx512.is_available() => {
            Some(super::simd::avx512::transpose_into_panel)
        }
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 if Isa::Avx2.is_available() => Some(super::simd::avx2::transpose_into_panel),
        _ => None,
    }
}

/// Whether the full panels of a raw B are read in place by the microkernel instead of packed
/// (its tail panel is still packed, zero-filled). Only a row-major B, whose k steps are rows;
/// a row stride that is a multiple of 4 KiB would put a panel's rows on the same few L1 sets,
/// so such a B is packed. Packing a 1×1 Conv's input was 12% of MobileNetV2's run; read in
/// place, MobileNetV2 runs 3–5% faster at 1 and 2 threads, BERT's QKᵀ layer 7%, ResNet-50
/// about 1% at 1 thread (within noise at 2).
fn reads_b_in_place(raw: &Raw<'_>) -> bool {
    !raw.trans && !(raw.ld * 4).is_multiple_of(4096)
}

/// A part smaller than this many multiply-adds is not worth a fork (rayon's join costs a few
/// microseconds, the time of about this much work).
const MIN_PART_WORK: usize = 1 << 18;

/// The part grid (row parts, column parts) for `threads` parts.
fn plan(p: &Problem<'_>, threads: usize, bl: &Blocking) -> (usize, usize) {
    let work = p.m.saturating_mul(p.n).saturating_mul(p.k.max(1));
    let threads = threads.min((work / MIN_PART_WORK).max(1));
    if threads == 1 {
        return (1, 1);
    }
    let (tm, tn) = (p.m.div_ceil(PANEL_A), p.n.div_ceil(PANEL_B));
    let raw_a = matches!(p.a, Src::Raw(_));
    let raw_b = matches!(p.b, Src::Raw(_));
    let k = p.k.max(1) as f64;
    let mut best = (f64::INFINITY, 1, 1);
    for pm in 1..=threads.min(tm) {
        for pn in 1..=(threads / pm).min(tn) {
            let rows = (tm.div_ceil(pm) * PANEL_A).min(p.m) as f64;
            let cols = (tn.div_ceil(pn) * PANEL_B).min(p.n) as f64;
            // Cycles of the largest part: 32 multiply-adds per cycle, about one per packed value.
            let mut cost = rows * cols * k / 32.0;
            if raw_a {
                cost += rows * k;
            }
            if raw_b {
                cost += cols * k * (rows / bl.mc as f64).ceil();
            }
            if cost < best.0 {
                best = (cost, pm, pn);
            }
        }
    }
    (best.1, best.2)
}

/// `[lo, hi)` of part `i` of `parts` over `len` elements in whole panels of `panel`.
///
/// Rounded up, so that the first part is the larger: the calling thread runs it, and a caller
/// done first waits in rayon's join, where it falls asleep after a few microseconds and costs
/// a wake-up (an inter-processor interrupt) on the critical path; a worker done first waits in
/// its run's spinner (`rge-runtime`'s `keep_awake`), awake.
fn range(len: usize, panel: usize, parts: usize, i: usize) -> (usize, usize) {
    let tiles = len.div_ceil(panel);
    let lo = ((tiles * i).div_ceil(parts) * panel).min(len);
    let hi = ((tiles * (i + 1)).div_ceil(parts) * panel).min(len);
    (lo, hi)
}

/// The block of a prepacked B that follows block (`pc`, `jc`) in this part's loop nest
/// (columns `j0..j1`): its start and its length in cache lines; (null, 0) when there is none
/// (a raw B, or the last block).
fn next_packed_b(
    p: &Problem<'_>,
    bl: &Blocking,
    (pc, jc): (usize, usize),
    (j0, j1): (usize, usize),
) -> (*const f32, usize) {
    let Src::Packed(d) = p.b else {
        return (std::ptr::null(), 0);
    };
    let (pc, jc) = if jc + bl.nc < j1 {
        (pc, jc + bl.nc)
    } else if pc + K_BLOCK < p.k {
        (pc + K_BLOCK, j0)
    } else {
        return (std::ptr::null(), 0);
    };
    let kc = K_BLOCK.min(p.k - pc);
    let nc = bl.nc.min(j1 - jc);
    // Laid out as `run_part` reads it: depth block pc / K_BLOCK, then column jc.
    let off = (pc * p.n.div_ceil(PANEL_B) * PANEL_B + jc * kc).min(d.len());
    let len = (nc.div_ceil(PANEL_B) * PANEL_B * kc).min(d.len() - off);
    (d[off..].as_ptr(), len.div_ceil(LINE_FLOATS))
}

/// Runs a validated problem (m, n >= 1) in up to `threads` parts.
pub(crate) fn run(isa: Isa, p: &Problem<'_>, threads: usize) {
    let bl = blocking(isa);
    let (pm, pn) = plan(p, threads, &bl);
    let part = |i: usize| {
        let (i0, i1) = range(p.m, PANEL_A, pm, i / pn);
        let (j0, j1) = range(p.n, PANEL_B, pn, i % pn);
        if i0 < i1 && j0 < j1 {
            with_bufs(|bufs| run_part(isa, p, &bl, bufs, i0, i1, j0, j1));
        }
    };
    rge_kernels::parts::for_each_part(pm * pn, part);
}

/// Columns `j0..j1` (j0 a multiple of PANEL_B) of a validated problem, every row, on the
/// calling thread.
pub(crate) fn run_columns(isa: Isa, p: &Problem<'_>, j0: usize, j1: usize) {
    let bl = blocking(isa);
    with_bufs(|bufs| run_part(isa, p, &bl, bufs, 0, p.m, j0, j1.min(p.n)));
}

/// The loop nest over C[i0..i1, j0..j1] (i0 a multiple of PANEL_A, j0 of PANEL_B).
#[allow(clippy::too_many_arguments)]
fn run_part(
    isa: Isa,
    p: &Problem<'_>,
    bl: &Blocking,
    bufs: &mut PackBufs,
    i0: usize,
    i1: usize,
    j0: usize,
    j1: usize,
) {
    let first_mode = if p.beta == 0.0 {
        Mode::Overwrite
    } else if p.beta == 1.0 {
        Mode::Accumulate
    } else {
        Mode::Beta(p.beta)
    };
    let PackBufs { a: abuf, b: bbuf } = bufs;
    for ic in (i0..i1).step_by(bl.mc) {
        let mc = bl.mc.min(i1 - ic);
        // One pass when k = 0 too: C still gets beta and the epilogue.
        for pc in (0..p.k.max(1)).step_by(K_BLOCK) {
            let kc = K_BLOCK.min(p.k - pc.min(p.k));
            // A micro-panel r of this block starts at adata[r·kc·PANEL_A].
            let adata: &[f32] = match p.a {
                Src::Packed(d) => {
                    // Depth block pc / K_BLOCK, then panel ic / PANEL_A of it.
                    let off = pc * p.m.div_ceil(PANEL_A) * PANEL_A + ic * kc;
                    &d[off.min(d.len())..]
                }
                Src::Raw(raw) => {
                    let dst = abuf.resize(mc.div_ceil(PANEL_A) * PANEL_A * kc);
                    if kc > 0 {
                        pack_a(dst, raw, (ic, mc), (pc, kc), panel_transpose(isa));
                    }
                    abuf.as_slice()
                }
            };
            let store = Store {
                alpha: p.alpha,
                mode: if pc == 0 {
                    first_mode
                } else {
                    Mode::Accumulate
                },
                epi: if pc + kc >= p.k { p.epi } else { None },
            };
            for jc in (j0..j1).step_by(bl.nc) {
                let nc = bl.nc.min(j1 - jc);
                // Columns [jc, jc + direct) are read in place from a raw B; the rest is packed.
                let direct = match p.b {
                    Src::Raw(raw) if reads_b_in_place(&raw) => nc / PANEL_B * PANEL_B,
                    _ => 0,
                };
                // B micro-panel j of the packed part starts at bdata[(j - direct)·kc·PANEL_B].
                let bdata: &[f32] = match p.b {
                    Src::Packed(d) => {
                        let off = pc * p.n.div_ceil(PANEL_B) * PANEL_B + jc * kc;
                        &d[off.min(d.len())..]
                    }
                    Src::Raw(raw) => {
                        let rest = nc - direct;
                        let dst = bbuf.resize(rest.div_ceil(PANEL_B) * PANEL_B * kc);
                        if kc > 0 && rest > 0 {
                            pack_b(dst, raw, (pc, kc), (jc + direct, rest));
                        }
                        bbuf.as_slice()
                    }
                };
                // The next prepacked B block is fetched into L2 while this one computes,
                // each tile taking its share: a model's weights come from DRAM, and the first
                // row of tiles over a cold block stalled on them (a fifth of BERT's GEMM time).
                // With one row panel (a GEMV-like product) the tiles themselves stream B at
                // memory speed: fetching ahead only competes with them.
                let (pf_base, pf_lines) = if mc > PANEL_A {
                    next_packed_b(p, bl, (pc, jc), (j0, j1))
                } else {
                    (std::ptr::null(), 0)
                };
                let tiles = mc.div_ceil(PANEL_A) * nc.div_ceil(PANEL_B);
                // At most one line per 4 k steps (what the microkernel issues): with few row
                // panels only the block's first part is fetched ahead, never a burst.
                let pf_per_tile = pf_lines.div_ceil(tiles).min(kc / 4);
                let mut tile_index = 0;
                for ir in (0..mc).step_by(PANEL_A) {
                    for jr in (0..nc).step_by(PANEL_B) {
                        let pf_first = (tile_index * pf_per_tile).min(pf_lines);
                        let pf_count = pf_per_tile.min(pf_lines - pf_first);
                        tile_index += 1;
                        let (row, col) = (ic + ir, jc + jr);
                        let (b, ldb) = match p.b {
                            // Row pc of B at column col: `reads_b_in_place` B is row-major and
                            // validated to hold k rows of n columns.
                            Src::Raw(raw) if jr < direct => {
                                (raw.data.as_ptr().wrapping_add(pc * raw.ld + col), raw.ld)
                            }
                            _ => (bdata.as_ptr().wrapping_add((jr - direct) * kc), PANEL_B),
                        };
                        let t = Tile {
                            a: adata.as_ptr().wrapping_add(ir * kc),
                            b,
                            ldb,
                            kc,
                            c: p.c.0.wrapping_add(row * p.ldc + col),
                            ldc: p.ldc,
                            rows: (mc - ir).min(PANEL_A),
                            cols: (nc - jr).min(PANEL_B),
                            row0: row,
                            col0: col,
                            pf: pf_base.wrapping_add(pf_first * LINE_FLOATS),
                            pf_lines: pf_count,
                        };
                        // SAFETY: the ISA was checked by `sgemm_isa`; the panels hold `kc`
                        // full steps from these offsets (packed with the same K_BLOCK depth
                        // blocks, or just packed, or B's own rows pc..pc + kc, each holding the
                        // panel's PANEL_B columns); the tile lies inside the validated C, which
                        // only this part writes; the epilogue was validated for m × n.
                        unsafe { run_tile(isa, &t, &store) };
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each ISA's fast A panel packing writes what the value-by-value copy writes: every
    /// panel height, depths around its 8- and 16-step chunks, a row stride past the depth.
    #[test]
    fn panel_transposes_match_the_copy() {
        let (ld, depth) = (300, 259);
        let a: Vec<f32> = (0..PANEL_A * ld).map(|i| i as f32 * 0.5 - 7.0).collect();
        for isa in Isa::available() {
            let Some(t) = panel_transpose(isa) else {
                continue;
            };
            for rows in 1..=PANEL_A {
                for kc in [1, 7, 8, 9, 15, 16, 17, 31, 64, depth] {
                    let raw = Raw {
                        data: &a,
                        ld,
                        trans: false,
                    };
                    let mut want = vec![f32::NAN; kc * PANEL_A];
                    let mut got = want.clone();
                    pack_a(&mut want, raw, (0, rows), (3, kc), None);
                    pack_a(&mut got, raw, (0, rows), (3, kc), Some(t));
                    let same = want
                        .iter()
                        .zip(&got)
                        .all(|(w, g)| w.to_bits() == g.to_bits());
                    assert!(same, "{isa:?}: {rows} rows, {kc} steps");
                }
            }
        }
    }
}
