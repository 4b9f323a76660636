//! The GEMM's use of the shared SIMD layer (`rge-simd`: the [`Simd`] vector trait, its
//! AVX-512 / AVX2+FMA / portable tokens, ISA detection): the one generic microkernel every ISA
//! instantiates, the per-ISA tile shapes ([`GemmSimd`]) and run-time dispatch.
//!
//! The microkernel and the epilogue math are written once, generically over [`Simd`]; each ISA
//! file only maps the trait onto its intrinsics and instantiates the kernel inside a
//! `#[target_feature]` function, so the generic code is compiled with that ISA enabled.

use super::epilogue::{self, EpiCtx};
use super::pack::{PANEL_A, PANEL_B};

#[cfg(target_arch = "x86_64")]
pub(crate) mod avx2;
#[cfg(target_arch = "x86_64")]
pub(crate) mod avx512;
mod lstm_cell;
pub(crate) mod scalar;

pub use rge_simd::Isa;
pub(crate) use rge_simd::Simd;

/// What the microkernel needs of a vector ISA beyond the shared [`Simd`] wrappers.
pub(crate) trait GemmSimd: Simd {
    /// Whether the microkernel prefetches the B stream in software.
    const PREFETCH_B: bool = false;

    /// [`store_tile`] compiled for this ISA, out of line.
    ///
    /// # Safety
    /// As [`micro`].
    unsafe fn store_general<const R: usize, const NV: usize>(
        self,
        acc: &[[Self::V; NV]; R],
        t: &Tile,
        st: &Store<'_>,
    );
}

/// How the first K block combines with the old C (later blocks always accumulate).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Mode {
    /// `C = acc` (beta = 0: C is not read, so NaN in C is ignored as BLAS does).
    Overwrite,
    /// `C = acc + beta·C`.
    Beta(f32),
    /// `C = acc + C`.
    Accumulate,
}

/// One output tile: `rows` × `cols` of C at (`row0`, `col0`), from an A micro-panel (`PANEL_A`
/// floats per k step) and B's rows: a packed micro-panel (`ldb == PANEL_B`) or, read in place,
/// the rows of a row-major B (`ldb` its row stride, every row holding the tile's full width).
#[derive(Clone, Copy)]
pub(crate) struct Tile {
    pub a: *const f32,
    pub b: *const f32,
    /// Floats from one k step of B to the next.
    pub ldb: usize,
    pub kc: usize,
    pub c: *mut f32,
    pub ldc: usize,
    pub rows: usize,
    pub cols: usize,
    pub row0: usize,
    pub col0: usize,
    /// Cache lines (64 bytes each, from `pf` on) to fetch into L2 while the tile computes:
    /// the tile's share of the next B block (see the driver), at most one per 4 k steps (more
    /// are not issued); 0 for none.
    pub pf: *const f32,
    pub pf_lines: usize,
}

/// What to do with the accumulators: scale by `alpha`, combine with C per `mode`, and (on the
/// last K block) apply the epilogue while the tile is still in registers.
pub(crate) struct Store<'e> {
    pub alpha: f32,
    pub mode: Mode,
    pub epi: Option<&'e EpiCtx<'e>>,
}

/// Runs one tile of at most `PANEL_A` × `PANEL_B` on `isa`.
///
/// # Safety
/// `isa` must be available; `t.a`/`t.b` must hold `t.kc` k steps of full panels (B's steps
/// `t.ldb` floats apart); C must be
/// writable for `t.rows` rows of `t.cols` floats at stride `t.ldc`; the epilogue's operands must
/// cover the tile (the driver validates all of this before the first tile).
#[inline]
pub(crate) unsafe fn run_tile(isa: Isa, t: &Tile, st: &Store<'_>) {
    debug_assert!(t.rows >= 1 && t.rows <= PANEL_A && t.cols >= 1 && t.cols <= PANEL_B);
    match isa {
        // SAFETY: forwarded contract; the ISA was checked by the caller.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => unsafe { avx512::tile(t, st) },
        // SAFETY: as above.
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => unsafe { avx2::tile(t, st) },
        // SAFETY: as above.
        _ => unsafe { scalar::tile(t, st) },
    }
}

/// Applies `act` in place on `xs` with `isa`'s vector code (the epilogue's activation alone).
pub(crate) fn activate(isa: Isa, act: &epilogue::Activation, xs: &mut [f32]) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => avx512::activate(act, xs),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => avx2::activate(act, xs),
        _ => scalar::activate(act, xs),
    }
}

/// [`lstm_cell::update`] with `isa`'s vector code.
///
/// # Safety
/// `cell.is_consistent()`.
pub(crate) unsafe fn lstm_cell(isa: Isa, cell: &mut rge_kernels_sequence::LstmCellBlock<'_, f32>) {
    // SAFETY: the caller's contract.
    unsafe {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 => avx512::lstm_cell(cell),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 => avx2::lstm_cell(cell),
            _ => scalar::lstm_cell(cell),
        }
    }
}

/// The slice loop behind [`activate`], generic over the ISA.
#[inline(always)]
pub(crate) fn activate_slice<S: Simd>(s: S, act: &epilogue::Activation, xs: &mut [f32]) {
    let mut chunks = xs.chunks_exact_mut(S::LANES);
    for ch in &mut chunks {
        // SAFETY: the chunk holds exactly LANES floats.
        unsafe {
            let v = epilogue::activation(s, act, s.load(ch.as_ptr()));
            s.store(ch.as_mut_ptr(), v);
        }
    }
    let rest = chunks.into_remainder();
    if !rest.is_empty() {
        // SAFETY: `rest` holds `rest.len() < LANES` floats.
        unsafe {
            let v = epilogue::activation(s, act, s.load_n(rest.as_ptr(), rest.len(), 0.0));
            s.store_n(rest.as_mut_ptr(), v, rest.len());
        }
    }
}

/// The microkernel: an `R` × `NV·LANES` register tile accumulated over `t.kc` k steps, then
/// stored through [`store_tile`]. `t.rows == R` and `t.cols` is in `((NV-1)·LANES, NV·LANES]`.
///
/// # Safety
/// As [`run_tile`], for this sub-tile.
#[inline(always)]
pub(crate) unsafe fn micro<S: GemmSimd, const R: usize, const NV: usize>(
    s: S,
    t: &Tile,
    st: &Store<'_>,
) {
    let mut acc = [[s.splat(0.0); NV]; R];
    let mut a = t.a;
    let mut b = t.b;
    // C is fetched into L1 for the last TAIL steps only: fetched earlier, the B stream going
    // through L1 would evict it again.
    const TAIL: usize = 24;
    let tail = TAIL.min(t.kc);
    let main = t.kc - tail;
    let mut pf = t.pf;
    let mut pf_left = t.pf_lines;
    // Unrolled by 4 so the loop's few integer ops rarely take an FMA port's slot.
    for _ in 0..main / 4 {
        // One line of the next B block per 4 steps: spread out, the fetches never queue up.
        if pf_left > 0 {
            s.prefetch_l2(pf);
            pf = pf.wrapping_add(LINE_FLOATS);
            pf_left -= 1;
        }
        // SAFETY: `a` and `b` have four steps left (kc steps in all).
        unsafe {
            step::<S, R, NV>(s, &mut acc, &mut a, &mut b, t.ldb);
            step::<S, R, NV>(s, &mut acc, &mut a, &mut b, t.ldb);
            step::<S, R, NV>(s, &mut acc, &mut a, &mut b, t.ldb);
            step::<S, R, NV>(s, &mut acc, &mut a, &mut b, t.ldb);
        }
    }
    for _ in 0..main % 4 {
        // SAFETY: `a` and `b` have a step left.
        unsafe { step::<S, R, NV>(s, &mut acc, &mut a, &mut b, t.ldb) };
    }
    prefetch_c::<S, R>(s, t);
    for _ in 0..tail {
        // SAFETY: as above.
        unsafe { step::<S, R, NV>(s, &mut acc, &mut a, &mut b, t.ldb) };
    }
    // SAFETY: forwarded contract.
    unsafe { store_acc::<S, R, NV>(s, &acc, t, st) }
}

/// Stores the accumulators: full-width tiles with no epilogue, or with a bias and a clamp
/// only, inline; anything else through the general store, out of line.
///
/// # Safety
/// As [`micro`].
#[inline(always)]
unsafe fn store_acc<S: GemmSimd, const R: usize, const NV: usize>(
    s: S,
    acc: &[[S::V; NV]; R],
    t: &Tile,
    st: &Store<'_>,
) {
    let full = t.cols == NV * S::LANES;
    let simple = st.epi.map(|e| e.bias_and_clamp());
    match simple {
        // SAFETY (both): forwarded contract.
        None if full => unsafe { store_plain::<S, R, NV>(s, acc, t, st) },
        Some(Some((bias, clamp))) if full && !matches!(st.mode, Mode::Beta(_)) => unsafe {
            store_bias_clamp::<S, R, NV>(s, acc, t, st, bias, clamp)
        },
        _ => {
            // The general store is large; kept out of line so `acc` stays in registers above.
            let spilled = *acc;
            // SAFETY: forwarded contract.
            unsafe { s.store_general::<R, NV>(&spilled, t, st) }
        }
    }
}

/// The common epilogue inline (a convolution's bias, then Relu, Clip or nothing): a
/// full-width tile, C overwritten or accumulated, the same operations in the same order as
/// [`store_tile`]. Out of line, the general store was 11% of a 1×1 convolution of depth 160
/// (MobileNetV2's 160→960 at 7×7).
///
/// # Safety
/// As [`micro`], with `t.cols == NV·LANES` and `st.mode` not `Beta`; a per-column bias holds
/// the tile's columns, a per-row one its rows.
#[inline(always)]
unsafe fn store_bias_clamp<S: Simd, const R: usize, const NV: usize>(
    s: S,
    acc: &[[S::V; NV]; R],
    t: &Tile,
    st: &Store<'_>,
    bias: epilogue::Bias<'_>,
    clamp: Option<(f32, f32)>,
) {
    use epilogue::Bias;
    let alpha = s.splat(st.alpha);
    let accumulate = matches!(st.mode, Mode::Accumulate);
    let mut per_column = [s.splat(0.0); NV];
    if let Bias::PerColumn(b) = bias {
        for (v, x) in per_column.iter_mut().enumerate() {
            // SAFETY: the bias holds the tile's columns (contract).
            *x = unsafe { s.load(b.as_ptr().add(t.col0 + v * S::LANES)) };
        }
    }
    for (r, acc) in acc.iter().enumerate() {
        let per_row = match bias {
            // SAFETY: the bias holds the tile's rows (contract).
            Bias::PerRow(b) => s.splat(unsafe { *b.as_ptr().add(t.row0 + r) }),
            _ => s.splat(0.0),
        };
        for (v, &x) in acc.iter().enumerate() {
            // SAFETY: (r, v·LANES..+LANES) is inside the full-width tile.
            let p = unsafe { t.c.add(r * t.ldc + v * S::LANES) };
            let mut x = s.mul(x, alpha);
            if accumulate {
                // SAFETY: as above.
                x = s.add(x, unsafe { s.load(p) });
            }
            match bias {
                Bias::None => {}
                Bias::PerColumn(_) => x = s.add(x, per_column[v]),
                Bias::PerRow(_) => x = s.add(x, per_row),
            }
            // The clamp as `epilogue::activation` computes Relu and Clip, operand order included
            // (NaN kept); matching the activation there per vector cost 2–3% of the layer.
            if let Some((lo, hi)) = clamp {
                x = s.min(s.splat(hi), s.max(s.splat(lo), x));
            }
            // SAFETY: as above.
            unsafe { s.store(p, x) };
        }
    }
}

/// The one-row tile (a GEMV-like product: `t.rows == 1`), all of B's `PANEL_B` columns at
/// once. The general kernel splits such a tile into `NV`-vector strips of one row, where every
/// FMA waits on the previous one into the same accumulator (latency 4, so 2 chains reach half
/// an FMA per cycle: BERT's 1×768 · 768×768 MatMul ran at 1.27× onnxruntime's time). Here `U`
/// sets of `NV` accumulators take alternate k steps, `U·NV` chains in flight, and the sets are
/// added before the store.
///
/// # Safety
/// As [`micro`], with `t.rows == 1` and `NV·LANES == PANEL_B`: B's steps hold `PANEL_B`
/// readable floats (a packed panel is zero-filled past the matrix; the driver reads B in place
/// only for full panels).
#[inline(always)]
pub(crate) unsafe fn micro_row<S: GemmSimd, const NV: usize, const U: usize>(
    s: S,
    t: &Tile,
    st: &Store<'_>,
) {
    debug_assert!(t.rows == 1 && NV * S::LANES == PANEL_B);
    let mut sets = [[s.splat(0.0); NV]; U];
    let (mut a, mut b) = (t.a, t.b);
    for _ in 0..t.kc / U {
        for set in &mut sets {
            // SAFETY: `a` and `b` have U steps left (kc steps in all).
            unsafe { step::<S, 1, NV>(s, core::array::from_mut(set), &mut a, &mut b, t.ldb) };
        }
    }
    for _ in 0..t.kc % U {
        // SAFETY: `a` and `b` have a step left.
        unsafe {
            step::<S, 1, NV>(
                s,
                core::array::from_mut(&mut sets[0]),
                &mut a,
                &mut b,
                t.ldb,
            )
        };
    }
    let mut acc = [sets[0]];
    for set in &sets[1..] {
        for (x, &y) in acc[0].iter_mut().zip(set) {
            *x = s.add(*x, y);
        }
    }
    // SAFETY: forwarded contract.
    unsafe { store_acc::<S, 1, NV>(s, &acc, t, st) }
}

/// Floats in a 64-byte cache line.
pub(crate) const LINE_FLOATS: usize = 16;

/// How many k steps ahead the B stream is prefetched (2 KiB: L2 latency with margin; past the
/// micro-panel's end it fetches the next tile's, which follows it in the block).
const PF_B_STEPS: usize = 16;

/// Prefetches the tile's C rows into L1.
#[inline(always)]
fn prefetch_c<S: Simd, const R: usize>(s: S, t: &Tile) {
    for r in 0..R {
        let row = t.c.wrapping_add(r * t.ldc);
        s.prefetch(row);
        s.prefetch(row.wrapping_add(t.cols - 1));
    }
}

/// One k step of the register tile: `acc += a[0..R] ⊗ b[0..NV·LANES]`, then advance (B by
/// `ldb`).
///
/// # Safety
/// `a` must hold `R` floats and `b` `NV·LANES` floats.
#[inline(always)]
unsafe fn step<S: GemmSimd, const R: usize, const NV: usize>(
    s: S,
    acc: &mut [[S::V; NV]; R],
    a: &mut *const f32,
    b: &mut *const f32,
    ldb: usize,
) {
    if S::PREFETCH_B {
        s.prefetch(b.wrapping_add(PF_B_STEPS * ldb));
        s.prefetch(b.wrapping_add(PF_B_STEPS * ldb + 16));
    }
    let mut bv = [s.splat(0.0); NV];
    for (v, bv) in bv.iter_mut().enumerate() {
        // SAFETY: a B micro-panel step holds PANEL_B >= NV·LANES floats.
        *bv = unsafe { s.load(b.add(v * S::LANES)) };
    }
    for (r, acc) in acc.iter_mut().enumerate() {
        // SAFETY: an A micro-panel step holds PANEL_A >= R floats.
        let av = s.splat(unsafe { *a.add(r) });
        for (acc, bv) in acc.iter_mut().zip(bv) {
            *acc = s.mul_add(av, bv, *acc);
        }
    }
    // SAFETY: at most one past the panel's last step (B: one row stride past the last row
    // read, wrapping: it is never read).
    unsafe {
        *a = a.add(PANEL_A);
    }
    *b = b.wrapping_add(ldb);
}

/// The common store: full-width tile, no epilogue (small enough to unroll into registers).
///
/// # Safety
/// As [`micro`].
#[inline(always)]
unsafe fn store_plain<S: Simd, const R: usize, const NV: usize>(
    s: S,
    acc: &[[S::V; NV]; R],
    t: &Tile,
    st: &Store<'_>,
) {
    let alpha = s.splat(st.alpha);
    match st.mode {
        // SAFETY (all three): forwarded contract; `p` is inside the tile.
        Mode::Overwrite => unsafe { each(s, acc, t, alpha, |_, x| x) },
        Mode::Beta(beta) => unsafe {
            each(s, acc, t, alpha, |p, x| {
                s.mul_add(s.load(p), s.splat(beta), x)
            })
        },
        Mode::Accumulate => unsafe { each(s, acc, t, alpha, |p, x| s.add(x, s.load(p))) },
    }
}

/// `C[r, v] = f(&C[r, v], alpha·acc[r][v])` over a full-width tile.
///
/// # Safety
/// As [`micro`], with `t.cols == NV·LANES`; `f` may read its pointer.
#[inline(always)]
unsafe fn each<S: Simd, const R: usize, const NV: usize>(
    s: S,
    acc: &[[S::V; NV]; R],
    t: &Tile,
    alpha: S::V,
    f: impl Fn(*mut f32, S::V) -> S::V,
) {
    for (r, acc) in acc.iter().enumerate() {
        for (v, &x) in acc.iter().enumerate() {
            // SAFETY: (r, v·LANES..+LANES) is inside the full-width tile.
            unsafe {
                let p = t.c.add(r * t.ldc + v * S::LANES);
                s.store(p, f(p, s.mul(x, alpha)));
            }
        }
    }
}

/// Writes the accumulators: `alpha·acc` combined with C per `st.mode`, then the epilogue; any
/// width (vectors past `t.cols` are dropped). Each ISA instantiates it out of line as
/// [`Simd::store_general`].
///
/// # Safety
/// As [`micro`].
#[inline(always)]
pub(crate) unsafe fn store_tile<S: Simd, const R: usize, const NV: usize>(
    s: S,
    acc: &[[S::V; NV]; R],
    t: &Tile,
    st: &Store<'_>,
) {
    let alpha = s.splat(st.alpha);
    for (r, acc) in acc.iter().enumerate() {
        // SAFETY: row r is inside the tile.
        let crow = unsafe { t.c.add(r * t.ldc) };
        for (v, &x) in acc.iter().enumerate() {
            let col = v * S::LANES;
            // A one-row tile keeps a whole panel's vectors however narrow it is.
            if col >= t.cols {
                break;
            }
            let n = (t.cols - col).min(S::LANES);
            let full = n == S::LANES;
            // SAFETY: columns col..col+n of row r are inside the tile.
            let cp = unsafe { crow.add(col) };
            let old = || {
                // SAFETY: as above.
                unsafe {
                    if full {
                        s.load(cp)
                    } else {
                        s.load_n(cp, n, 0.0)
                    }
                }
            };
            let mut x = s.mul(x, alpha);
            x = match st.mode {
                Mode::Overwrite => x,
                Mode::Beta(beta) => s.mul_add(old(), s.splat(beta), x),
                Mode::Accumulate => s.add(x, old()),
            };
            if let Some(e) = st.epi {
                // SAFETY: the epilogue's operands cover the tile (contract).
                x = unsafe { e.apply(s, x, t.row0 + r, t.col0 + col, n) };
            }
            // SAFETY: as above.
            unsafe {
                if full {
                    s.store(cp, x)
                } else {
                    s.store_n(cp, x, n)
                }
            }
        }
    }
}

/// Splits a tile of at most `PANEL_A` × `PANEL_B` into sub-tiles of at most `MR` × `NR` and runs
/// `f(sub_tile, rows, vectors)` on each, column half by column half so each B half-panel stays
/// in L1 across the row blocks.
#[inline(always)]
pub(crate) fn split_tile<const MR: usize, const NR: usize>(
    t: &Tile,
    lanes: usize,
    mut f: impl FnMut(&Tile, usize, usize),
) {
    let mut c0 = 0;
    while c0 < t.cols {
        let cols = (t.cols - c0).min(NR);
        let mut r0 = 0;
        while r0 < t.rows {
            let rows = (t.rows - r0).min(MR);
            let sub = Tile {
                a: t.a.wrapping_add(r0),
                b: t.b.wrapping_add(c0),
                c: t.c.wrapping_add(r0 * t.ldc + c0),
                rows,
                cols,
                row0: t.row0 + r0,
                col0: t.col0 + c0,
                // The tile's share of the prefetch, once.
                pf_lines: if c0 == 0 && r0 == 0 { t.pf_lines } else { 0 },
                ..*t
            };
            f(&sub, rows, cols.div_ceil(lanes));
            r0 += MR;
        }
        c0 += NR;
    }
}

/// Expands to a `match` from a tile's (rows, vectors) onto `$f::<R, NV>` for every listed `R`
/// and `NV` in {1, 2}; other shapes cannot reach it (the driver makes them) and do nothing.
macro_rules! dispatch_tile {
    ($f:ident, $t:expr, $st:expr, $rows:expr, $nv:expr; $($r:literal)*) => {
        match ($rows, $nv) {
            $( ($r, 1) => $f::<$r, 1>($t, $st), ($r, 2) => $f::<$r, 2>($t, $st), )*
            _ => debug_assert!(false, "tile shape out of range"),
        }
    };
}
pub(crate) use dispatch_tile;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm::pack::AlignedBuf;

    /// The bare microkernel on L1-resident panels (`cargo test --release -p rge-dense
    /// kernel_speed -- --ignored --nocapture`); prints GFLOP/s, asserts nothing.
    #[test]
    #[ignore]
    fn kernel_speed() {
        let env = |n: &str, d: usize| {
            std::env::var(n)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        // NB B micro-panels streamed past one A micro-panel (as the driver does), C in L1.
        let (kc, nb) = (env("KC", 256), env("NB", 1));
        let mut a = AlignedBuf::zeroed(PANEL_A * kc);
        let mut b = AlignedBuf::zeroed(PANEL_B * kc * nb);
        a.as_mut_slice()
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = (i % 7) as f32 * 0.01);
        b.as_mut_slice()
            .iter_mut()
            .enumerate()
            .for_each(|(i, x)| *x = (i % 5) as f32 * 0.01);
        let mut c = AlignedBuf::zeroed(PANEL_A * PANEL_B);
        for isa in Isa::available() {
            let st = Store {
                alpha: 1.0,
                mode: Mode::Accumulate,
                epi: None,
            };
            let reps = 200_000_000 / kc / nb / 5;
            let mut best = f64::MAX;
            for _ in 0..5 {
                let t0 = std::time::Instant::now();
                for _ in 0..reps {
                    for j in 0..nb {
                        let t = Tile {
                            a: a.as_slice().as_ptr(),
                            b: b.as_slice()[j * kc * PANEL_B..].as_ptr(),
                            ldb: PANEL_B,
                            kc,
                            c: c.as_mut_slice().as_mut_ptr(),
                            ldc: PANEL_B,
                            rows: PANEL_A,
                            cols: PANEL_B,
                            row0: 0,
                            col0: 0,
                            pf: std::ptr::null(),
                            pf_lines: 0,
                        };
                        // SAFETY: panels of kc steps, a 12 × 32 C, the ISA is available.
                        unsafe { run_tile(isa, &t, &st) };
                    }
                }
                best = best.min(t0.elapsed().as_secs_f64());
            }
            let flops = 2.0 * (PANEL_A * PANEL_B * kc * nb * reps) as f64;
            println!("{isa:?} kc {kc} nb {nb}: {:.1} GFLOP/s", flops / best / 1e9);
        }
    }
}
