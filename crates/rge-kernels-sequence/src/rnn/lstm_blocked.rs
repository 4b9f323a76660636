//! LSTM steps over a blocked R: each thread owns a fixed range of hidden units for the whole
//! sequence, and per step computes those units' four gates (its columns of `h·Rᵀ`, one
//! column range of the packed R) and their cell update, while the values are in cache.
//!
//! R's rows (`[4·hidden, hidden]`, gates i, o, f, c one after the other) are reordered once
//! when the kernel is built into blocks of [`UNIT_BLOCK`] units, each block holding its four
//! gates' rows one after the other; a thread's units are whole blocks, so its gates are one
//! contiguous column range. Against one parallel GEMM per step followed by a parallel cell
//! pass, a step is one fork instead of two, and the cell math splits by units (not batch
//! rows) right after the GEMM that made its inputs (the bench's LSTM, 8 rows × 512 units,
//! spent as long per step in the cells at 2 threads as at 1).

use std::ops::Range;
use std::sync::{Arc, Mutex};

use rge_kernels::{KernelError, KernelInit, KernelResult};

use super::cells::{lstm_bias, state, DirCfg, GateBlocks, LstmCell, LstmScratch};
use super::{Kind, Prepared, PreparedDirs};
use crate::common::{Acc, FastGemm, PreparedBt};

/// Hidden units per block: 4 × 64 = 256 columns, a whole number of packed panels on every
/// engine that computes column ranges (a multiple of its [`FastGemm::column_align`]).
pub(super) const UNIT_BLOCK: usize = 64;

/// R's rows in block order: block `b` (units `64·b..`) holds gate i's rows of its units, then
/// o's, f's and c's. `r` is one direction's `[4·hidden, hidden]`.
fn blocked_rows(r: &[f32], hid: usize) -> Vec<f32> {
    let mut out = Vec::with_capacity(r.len());
    for u0 in (0..hid).step_by(UNIT_BLOCK) {
        let u1 = (u0 + UNIT_BLOCK).min(hid);
        for q in 0..4 {
            out.extend_from_slice(&r[(q * hid + u0) * hid..(q * hid + u1) * hid]);
        }
    }
    out
}

/// Each direction's constant f32 R `[dirs, 4·hidden, hidden]` in block order, prepared by
/// `fast`, when `fast` computes column ranges of what it prepares; `None` otherwise.
pub(super) fn prepare(
    init: &KernelInit<'_>,
    dirs: usize,
    fast: Option<&Arc<dyn FastGemm>>,
) -> KernelResult<Option<PreparedDirs>> {
    if !fast
        .and_then(|f| f.column_align())
        .is_some_and(|a| a > 0 && (4 * UNIT_BLOCK) % a == 0)
    {
        return Ok(None);
    }
    super::prepare_constant_rows(init, 2, Kind::Lstm, dirs, fast, |r, hid| {
        blocked_rows(r, hid).into()
    })
}

/// One thread's share: its units, their gates' columns of `h·Rᵀ` per batch row, and their
/// hidden and cell states.
struct Part<F> {
    units: Range<usize>,
    /// `[batch, 4·units]`: this step's `h·Rᵀ` columns.
    hr: Vec<F>,
    /// `[batch, units]`: the new hidden state.
    h: Vec<F>,
    /// `[batch, units]`: the cell state.
    c: Vec<F>,
    scratch: LstmScratch<F>,
}

/// One direction of LSTM with `r` the direction's blocked R ([`prepare`]); what
/// `cells::lstm_dir` computes, with the same cell code.
pub(super) fn lstm_dir<F: Acc>(
    p: &Prepared<F>,
    cfg: &DirCfg<'_, F>,
    xw: &[F],
    (y, yh, yc): (&mut [F], &mut [F], &mut [F]),
    r: &dyn PreparedBt,
) -> KernelResult<()> {
    let (seq, batch, hid, d) = (p.seq, p.batch, p.hidden, cfg.d);
    let gh = 4 * hid;
    let bias = lstm_bias(p, d);
    let cell = LstmCell {
        p,
        cfg,
        bias: &bias,
        peep: &p.p[d * 3 * hid..(d + 1) * 3 * hid],
    };
    let blocks = hid.div_ceil(UNIT_BLOCK);
    let parts = p.threads.clamp(1, blocks);
    let mut h = state(&p.h0, d, batch, hid);
    let c0 = state(&p.c0, d, batch, hid);
    // Part t: blocks [⌈t·blocks/parts⌉, ⌈(t+1)·blocks/parts⌉): the first parts are the larger
    // (part 0 runs on the calling thread, which waits for the others).
    let states: Vec<Mutex<Part<F>>> = (0..parts)
        .map(|t| {
            let lo = ((blocks * t).div_ceil(parts) * UNIT_BLOCK).min(hid);
            let hi = ((blocks * (t + 1)).div_ceil(parts) * UNIT_BLOCK).min(hid);
            let w = hi - lo;
            let c = (0..batch)
                .flat_map(|b| c0[b * hid + lo..b * hid + hi].iter().copied())
                .collect();
            Mutex::new(Part {
                units: lo..hi,
                hr: vec![F::zero(); batch * 4 * w],
                h: vec![F::zero(); batch * w],
                c,
                scratch: LstmScratch::new(w),
            })
        })
        .collect();
    let failed: Mutex<Option<KernelError>> = Mutex::new(None);
    for s in 0..seq {
        let prev = &h;
        rge_kernels::parts::for_each_part(parts, |t| {
            // A part's lock is only ever taken by its own thread, and only here.
            let mut guard = states[t].lock().unwrap_or_else(|e| e.into_inner());
            let part = &mut *guard;
            let (units, w) = (part.units.clone(), part.units.len());
            let cols = 4 * units.start..4 * units.end;
            let done = F::fast_prepared_columns(r, batch, (prev, hid), cols, (&mut part.hr, 4 * w));
            if let Err(e) = done.and_then(|took| {
                took.then_some(()).ok_or_else(|| {
                    KernelError::invalid("the blocked R needs the engine's f32 GEMM")
                })
            }) {
                failed
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .get_or_insert(e);
                return;
            }
            for b in 0..batch {
                let hb = &mut part.h[b * w..(b + 1) * w];
                match cfg.time(s, p.lens[b]) {
                    Some(t) => {
                        let g = GateBlocks::Blocked {
                            g: &part.hr[b * 4 * w..(b + 1) * 4 * w],
                            units: w,
                            unit_block: UNIT_BLOCK,
                        };
                        let x = &xw[(t * batch + b) * gh..(t * batch + b + 1) * gh];
                        let cb = &mut part.c[b * w..(b + 1) * w];
                        cell.update(units.clone(), x, g, hb, cb, &mut part.scratch);
                    }
                    // A row past its length keeps its states.
                    None => hb.copy_from_slice(&prev[b * hid + units.start..b * hid + units.end]),
                }
            }
        });
        if let Some(e) = failed.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return Err(e);
        }
        for part in &states {
            let part = part.lock().unwrap_or_else(|e| e.into_inner());
            let (u, w) = (part.units.clone(), part.units.len());
            for b in 0..batch {
                h[b * hid + u.start..b * hid + u.end].copy_from_slice(&part.h[b * w..(b + 1) * w]);
            }
        }
        for b in 0..batch {
            if let Some(t) = cfg.time(s, p.lens[b]) {
                let yo = ((t * cfg.dirs + d) * batch + b) * hid;
                y[yo..yo + hid].copy_from_slice(&h[b * hid..(b + 1) * hid]);
            }
        }
    }
    yh[d * batch * hid..(d + 1) * batch * hid].copy_from_slice(&h);
    let yc = &mut yc[d * batch * hid..(d + 1) * batch * hid];
    for part in &states {
        let part = part.lock().unwrap_or_else(|e| e.into_inner());
        let (u, w) = (part.units.clone(), part.units.len());
        for b in 0..batch {
            yc[b * hid + u.start..b * hid + u.end].copy_from_slice(&part.c[b * w..(b + 1) * w]);
        }
    }
    Ok(())
}
