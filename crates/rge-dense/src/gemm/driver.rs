//! Cache blocking and threading (the GotoBLAS/BLIS loop nest).
//!
//! ```text
//! for jc in N step NC            B block (KC × NC) streams from L3
//!   for pc in K step KC          pack B[pc.., jc..] (raw B only)
//!     for ic in M step MC        pack A[ic.., pc..] (raw A only): A block (MC × KC) in L2
//!       for jr in NC step 32       B micro-panel (KC × 32) stays in L1 ...
//!         for ir in MC step 12     ... while A micro-panels stream past it: one tile each
//! ```
//!
//! Threads split C into a grid of rectangles (whole panels, never K, so no reduction), chosen to
//! balance compute and to avoid re-packing a raw operand in every part; each part runs the loop
//! nest above with its own thread-local packing buffers.

use std::cell::RefCell;

use rayon::prelude::*;

use super::epilogue::EpiCtx;
use super::pack::{pack_a, pack_b, AlignedBuf, K_BLOCK, PANEL_A, PANEL_B};
use super::simd::{run_tile, Isa, Mode, Store, Tile};

/// An operand as the driver sees it: raw (packed per block) or prepacked panels.
#[derive(Clone, Copy)]
pub(crate) enum Src<'a> {
    Raw {
        data: &'a [f32],
        ld: usize,
        trans: bool,
    },
    Packed(&'a [f32]),
}

/// C's base pointer, shared by the parts.
#[derive(Clone, Copy)]
pub(crate) struct CPtr(pub *mut f32);
// SAFETY: the parts of one call write disjoint rectangles of C (see `run`), and the `&mut [f32]`
// it came from is borrowed for the whole call.
unsafe impl Send for CPtr {}
// SAFETY: as above.
unsafe impl Sync for CPtr {}

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
    pub c: CPtr,
    pub ldc: usize,
    pub epi: Option<&'a EpiCtx<'a>>,
}

/// Cache block sizes (in elements; KC is the packed format's `K_BLOCK`): MC × KC floats of A
/// fit half of L2, KC × NC of B streams from L3.
struct Blocking {
    mc: usize,
    nc: usize,
}

fn blocking(isa: Isa) -> Blocking {
    // TUNING ONLY (remove): RGE_DENSE_BLOCK=kc,mc,nc
    if let Ok(v) = std::env::var("RGE_DENSE_BLOCK") {
        let v: Vec<usize> = v.split(',').filter_map(|x| x.parse().ok()).collect();
        if v.len() == 3 {
            return Blocking { mc: v[1], nc: v[2] };
        }
    }
    match isa {
        Isa::Avx512 => Blocking { mc: 480, nc: 2048 },
        Isa::Avx2 => Blocking { mc: 144, nc: 2048 },
        Isa::Scalar => Blocking { mc: 96, nc: 1024 },
    }
}

fn pf() -> (usize, usize, usize) {
    static V: std::sync::OnceLock<(usize, usize, usize)> = std::sync::OnceLock::new();
    *V.get_or_init(|| {
        let g = |n, d| {
            std::env::var(n)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        (g("RGE_PFA", 0), g("RGE_PFB", 0), g("RGE_PFC", 1))
    })
}

fn a_resident() -> bool {
    static V: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *V.get_or_init(|| std::env::var("RGE_DENSE_ARES").is_ok())
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
    let raw_a = matches!(p.a, Src::Raw { .. });
    let raw_b = matches!(p.b, Src::Raw { .. });
    let k = p.k.max(1) as f64;
    let mut best = (f64::INFINITY, 1, 1);
    for pm in 1..=threads.min(tm) {
        for pn in 1..=(threads / pm).min(tn) {
            let rows = (tm.div_ceil(pm) * PANEL_A).min(p.m) as f64;
            let cols = (tn.div_ceil(pn) * PANEL_B).min(p.n) as f64;
            // Cycles of the largest part: 32 multiply-adds per cycle, about one per packed value.
            let mut cost = rows * cols * k / 32.0;
            if raw_a {
                cost += rows * k * (cols / bl.nc as f64).ceil();
            }
            if raw_b {
                cost += cols * k;
            }
            if cost < best.0 {
                best = (cost, pm, pn);
            }
        }
    }
    (best.1, best.2)
}

/// `[lo, hi)` of part `i` of `parts` over `len` elements in whole panels of `panel`.
fn range(len: usize, panel: usize, parts: usize, i: usize) -> (usize, usize) {
    let tiles = len.div_ceil(panel);
    let lo = (tiles * i / parts * panel).min(len);
    let hi = (tiles * (i + 1) / parts * panel).min(len);
    (lo, hi)
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
    if pm * pn == 1 {
        part(0);
    } else {
        (0..pm * pn).into_par_iter().with_max_len(1).for_each(part);
    }
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
    let mut jc = j0;
    while jc < j1 {
        let nc = bl.nc.min(j1 - jc);
        let mut pc = 0;
        loop {
            let kc = K_BLOCK.min(p.k - pc);
            // B micro-panel j of this block starts at bdata[j·bstride].
            let (bdata, bstride): (&[f32], usize) = match p.b {
                Src::Packed(d) => {
                    // Depth block pc / K_BLOCK, then panel jc / PANEL_B of it.
                    let off = pc * p.n.div_ceil(PANEL_B) * PANEL_B + jc * kc;
                    (&d[off.min(d.len())..], kc * PANEL_B)
                }
                Src::Raw { data, ld, trans } => {
                    let len = nc.div_ceil(PANEL_B) * PANEL_B * kc;
                    let dst = bbuf.resize(len);
                    if kc > 0 {
                        pack_b(dst, data, ld, trans, pc, kc, jc, nc);
                    }
                    (bbuf.as_slice(), kc * PANEL_B)
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
            let mut ic = i0;
            while ic < i1 {
                let mc = bl.mc.min(i1 - ic);
                let (adata, astride): (&[f32], usize) = match p.a {
                    Src::Packed(d) => {
                        let off = pc * p.m.div_ceil(PANEL_A) * PANEL_A + ic * kc;
                        (&d[off.min(d.len())..], kc * PANEL_A)
                    }
                    Src::Raw { data, ld, trans } => {
                        let len = mc.div_ceil(PANEL_A) * PANEL_A * kc;
                        let dst = abuf.resize(len);
                        if kc > 0 {
                            pack_a(dst, data, ld, trans, ic, mc, pc, kc);
                        }
                        (abuf.as_slice(), kc * PANEL_A)
                    }
                };
                let tile = |ir: usize, jr: usize| {
                    let (row, col) = (ic + ir, jc + jr);
                    let t = Tile {
                        a: adata.as_ptr().wrapping_add(ir / PANEL_A * astride),
                        b: bdata.as_ptr().wrapping_add(jr / PANEL_B * bstride),
                        kc,
                        c: p.c.0.wrapping_add(row * p.ldc + col),
                        ldc: p.ldc,
                        rows: (mc - ir).min(PANEL_A),
                        cols: (nc - jr).min(PANEL_B),
                        row0: row,
                        col0: col,
                        pf_a: pf().0,
                        pf_b: pf().1,
                        pf_c: pf().2,
                    };
                    // SAFETY: the ISA was checked by `sgemm_isa`; the panels hold `kc` full
                    // steps from these offsets (packed with the same K_BLOCK depth blocks, or
                    // just packed); the tile lies inside the validated C, which only this part
                    // writes; the epilogue was validated for m × n.
                    unsafe { run_tile(isa, &t, &store) };
                };
                if a_resident() {
                    for ir in (0..mc).step_by(PANEL_A) {
                        for jr in (0..nc).step_by(PANEL_B) {
                            tile(ir, jr);
                        }
                    }
                } else {
                    for jr in (0..nc).step_by(PANEL_B) {
                        for ir in (0..mc).step_by(PANEL_A) {
                            tile(ir, jr);
                        }
                    }
                }
                ic += mc;
            }
            pc += kc;
            if pc >= p.k {
                break;
            }
        }
        jc += nc;
    }
}
