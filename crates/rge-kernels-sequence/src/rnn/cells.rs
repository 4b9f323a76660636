//! The RNN, GRU and LSTM cells, run over one direction. `xw` holds X·Wᵀ + Wb for every
//! (step, batch) row; each step adds H·Rᵀ (one GEMM over the batch) and the cell's
//! elementwise update. `y` is (seq, dirs, batch, hidden), states (dirs, batch, hidden).

use rayon::prelude::*;
use rge_kernels::{KernelError, KernelResult};

use super::{Act, Prepared};
use crate::common::{Acc, Gemm, LstmCellBlock, PreparedBt};

/// The per-direction settings.
pub struct DirCfg<'a, F> {
    pub d: usize,
    pub dirs: usize,
    pub reverse: bool,
    pub acts: &'a [Act],
    pub clip: Option<F>,
    pub input_forget: bool,
    pub linear_before_reset: bool,
}

impl<F: Acc> DirCfg<'_, F> {
    #[inline]
    fn act(&self, k: usize, x: F) -> F {
        let x = match self.clip {
            Some(c) => x.max(-c).min(c),
            None => x,
        };
        self.acts[k].apply(x)
    }

    /// The time index batch entry of length `len` processes at step `s`, if any.
    #[inline]
    pub(super) fn time(&self, s: usize, len: usize) -> Option<usize> {
        (s < len).then(|| if self.reverse { len - 1 - s } else { s })
    }
}

/// One direction's recurrence weights `R[rows × hid]`, prepared (packed) by the engine's GEMM
/// when it has one: once when the kernel was built for a constant R (direction `d` of
/// `Prepared::r_prepared`), else once per call, not once per step.
struct RMat<'a, F> {
    r: &'a [F],
    rows: usize,
    owned: Option<Box<dyn PreparedBt>>,
    built: Option<&'a dyn PreparedBt>,
}

impl<'a, F: Acc> RMat<'a, F> {
    /// `whole`: `r` is all of direction `d`'s R (what the kernel prepared when it was built).
    fn new(
        p: &'a Prepared<F>,
        r: &'a [F],
        rows: usize,
        hid: usize,
        whole: Option<usize>,
    ) -> KernelResult<Self> {
        let built = whole
            .and_then(|d| p.r_prepared.as_deref()?.get(d))
            .map(|b| &**b);
        let owned = match &p.fast {
            Some(fast) if built.is_none() && r.len() >= rows * hid => {
                F::fast_prepare_bt(fast.as_ref(), &r[..rows * hid], rows, hid, hid)?
            }
            _ => None,
        };
        Ok(RMat {
            r,
            rows,
            owned,
            built,
        })
    }

    fn prepared(&self) -> Option<&dyn PreparedBt> {
        self.built.or(self.owned.as_deref())
    }
}

/// `out[batch × n] = h[batch × hid] · R[..n, hid]ᵀ` written with row stride `ld`.
#[allow(clippy::too_many_arguments)]
fn h_times_r<F: Acc>(
    p: &Prepared<F>,
    h: &[F],
    r: &RMat<'_, F>,
    batch: usize,
    hid: usize,
    n: usize,
    out: &mut [F],
    ld: usize,
) -> KernelResult<()> {
    if let Some(prep) = r.prepared().filter(|_| n == r.rows) {
        if F::fast_prepared(prep, batch, (h, hid), (out, ld), p.threads)? {
            return Ok(());
        }
    }
    if r.r.len() < n * hid {
        // Only a prepared R goes uncopied, and the f32 GEMM always takes it.
        return Err(KernelError::invalid(
            "R was prepared when the kernel was built, and the GEMM did not take it",
        ));
    }
    p.gemm(
        Gemm {
            m: batch,
            k: hid,
            n,
            a: (hid, 1),
            b: (1, hid),
            c: (ld, 1),
            accumulate: false,
        },
        h,
        r.r,
        out,
    )
}

pub(super) fn state<F: Copy>(v: &[F], d: usize, batch: usize, hid: usize) -> Vec<F> {
    v[d * batch * hid..(d + 1) * batch * hid].to_vec()
}

/// One direction of RNN: Ht = f(Xt·Wᵀ + Ht-1·Rᵀ + Wb + Rb).
pub fn rnn_dir<F: Acc>(
    p: &Prepared<F>,
    cfg: &DirCfg<'_, F>,
    xw: &[F],
    y: &mut [F],
    yh: &mut [F],
) -> KernelResult<()> {
    let (seq, batch, hid, d) = (p.seq, p.batch, p.hidden, cfg.d);
    // Empty when R was prepared when the kernel was built (RMat then uses that).
    let r = p.r.get(d * hid * hid..(d + 1) * hid * hid).unwrap_or(&[]);
    let rb = &p.b[d * 2 * hid + hid..(d + 1) * 2 * hid];
    let mut h = state(&p.h0, d, batch, hid);
    let mut hr = vec![F::zero(); batch * hid];
    let r = RMat::new(p, r, hid, hid, Some(d))?;
    for s in 0..seq {
        h_times_r(p, &h, &r, batch, hid, hid, &mut hr, hid)?;
        for b in 0..batch {
            let Some(t) = cfg.time(s, p.lens[b]) else {
                continue;
            };
            let x = &xw[(t * batch + b) * hid..(t * batch + b + 1) * hid];
            let yo = ((t * cfg.dirs + d) * batch + b) * hid;
            for j in 0..hid {
                let v = cfg.act(0, x[j] + hr[b * hid + j] + rb[j]);
                h[b * hid + j] = v;
                y[yo + j] = v;
            }
        }
    }
    yh[d * batch * hid..(d + 1) * batch * hid].copy_from_slice(&h);
    Ok(())
}

/// One direction of GRU (gates z, r, h).
pub fn gru_dir<F: Acc>(
    p: &Prepared<F>,
    cfg: &DirCfg<'_, F>,
    xw: &[F],
    y: &mut [F],
    yh: &mut [F],
) -> KernelResult<()> {
    let (seq, batch, hid, d) = (p.seq, p.batch, p.hidden, cfg.d);
    let gh = 3 * hid;
    let r = &p.r[d * gh * hid..(d + 1) * gh * hid];
    let rh = &r[2 * hid * hid..];
    let rb = &p.b[d * 2 * gh + gh..(d + 1) * 2 * gh];
    let lbr = cfg.linear_before_reset;
    let mut h = state(&p.h0, d, batch, hid);
    let mut hr = vec![F::zero(); batch * gh];
    let mut rgate = vec![F::zero(); batch * hid];
    let mut zgate = vec![F::zero(); batch * hid];
    let mut rh_in = vec![F::zero(); batch * hid];
    let mut rh_out = vec![F::zero(); batch * hid];
    let n = if lbr { gh } else { 2 * hid };
    let r = RMat::new(p, r, n, hid, None)?;
    let rh = RMat::new(p, rh, hid, hid, None)?;
    for s in 0..seq {
        h_times_r(p, &h, &r, batch, hid, n, &mut hr, gh)?;
        for b in 0..batch {
            let Some(t) = cfg.time(s, p.lens[b]) else {
                continue;
            };
            let x = &xw[(t * batch + b) * gh..(t * batch + b + 1) * gh];
            let g = &hr[b * gh..(b + 1) * gh];
            for j in 0..hid {
                zgate[b * hid + j] = cfg.act(0, x[j] + g[j] + rb[j]);
                let rv = cfg.act(0, x[hid + j] + g[hid + j] + rb[hid + j]);
                rgate[b * hid + j] = rv;
                rh_in[b * hid + j] = rv * h[b * hid + j];
            }
        }
        if !lbr {
            h_times_r(p, &rh_in, &rh, batch, hid, hid, &mut rh_out, hid)?;
        }
        for b in 0..batch {
            let Some(t) = cfg.time(s, p.lens[b]) else {
                continue;
            };
            let x = &xw[(t * batch + b) * gh..(t * batch + b + 1) * gh];
            let g = &hr[b * gh..(b + 1) * gh];
            let yo = ((t * cfg.dirs + d) * batch + b) * hid;
            for j in 0..hid {
                let k = b * hid + j;
                let pre = if lbr {
                    x[2 * hid + j] + rgate[k] * (g[2 * hid + j] + rb[2 * hid + j])
                } else {
                    x[2 * hid + j] + rh_out[k] + rb[2 * hid + j]
                };
                let hh = cfg.act(1, pre);
                let z = zgate[k];
                let v = (F::one() - z) * hh + z * h[k];
                h[k] = v;
                y[yo + j] = v;
            }
        }
    }
    yh[d * batch * hid..(d + 1) * batch * hid].copy_from_slice(&h);
    Ok(())
}

/// One direction of LSTM (gates i, o, f, c; peepholes i, o, f). Each batch row's gates are
/// computed a pass at a time over the hidden units, so the activations run over whole slices
/// (the engine's vector code when it brings one).
pub fn lstm_dir<F: Acc>(
    p: &Prepared<F>,
    cfg: &DirCfg<'_, F>,
    xw: &[F],
    y: &mut [F],
    yh: &mut [F],
    yc: &mut [F],
) -> KernelResult<()> {
    let (seq, batch, hid, d) = (p.seq, p.batch, p.hidden, cfg.d);
    let gh = 4 * hid;
    // Empty when R was prepared when the kernel was built (RMat then uses that).
    let r = p.r.get(d * gh * hid..(d + 1) * gh * hid).unwrap_or(&[]);
    let bias = lstm_bias(p, d);
    let cell = LstmCell {
        p,
        cfg,
        bias: &bias,
        peep: &p.p[d * 3 * hid..(d + 1) * 3 * hid],
    };
    let mut h = state(&p.h0, d, batch, hid);
    let mut c = state(&p.c0, d, batch, hid);
    let mut hr = vec![F::zero(); batch * gh];
    let r = RMat::new(p, r, gh, hid, Some(d))?;
    // The batch rows' updates are independent: on several threads they split the rows (each
    // thread its own gate buffers), so a step's elementwise part is not serial after its
    // parallel GEMM (an LSTM of 8 rows × 512 units spent a fifth of its 2-thread run there).
    let parallel = p.threads > 1 && batch > 1 && batch * hid >= CELL_PAR_WORK;
    let mut serial_scratch = LstmScratch::new(hid);
    for s in 0..seq {
        h_times_r(p, &h, &r, batch, hid, gh, &mut hr, gh)?;
        let row = |scratch: &mut LstmScratch<F>, (b, (hb, cb)): (usize, (&mut [F], &mut [F]))| {
            if let Some(t) = cfg.time(s, p.lens[b]) {
                let x = &xw[(t * batch + b) * gh..(t * batch + b + 1) * gh];
                let g = GateBlocks::natural(&hr[b * gh..(b + 1) * gh], hid);
                cell.update(0..hid, x, g, hb, cb, scratch);
            }
        };
        if parallel {
            h.par_chunks_mut(hid)
                .zip(c.par_chunks_mut(hid))
                .enumerate()
                .for_each_init(|| LstmScratch::new(hid), row);
        } else {
            h.chunks_mut(hid)
                .zip(c.chunks_mut(hid))
                .enumerate()
                .for_each(|item| row(&mut serial_scratch, item));
        }
        for b in 0..batch {
            if let Some(t) = cfg.time(s, p.lens[b]) {
                let yo = ((t * cfg.dirs + d) * batch + b) * hid;
                y[yo..yo + hid].copy_from_slice(&h[b * hid..(b + 1) * hid]);
            }
        }
    }
    yh[d * batch * hid..(d + 1) * batch * hid].copy_from_slice(&h);
    yc[d * batch * hid..(d + 1) * batch * hid].copy_from_slice(&c);
    Ok(())
}

/// Direction `d`'s `Wb + Rb` (`[4·hidden]`), the bias an LSTM cell adds.
pub(super) fn lstm_bias<F: Acc>(p: &Prepared<F>, d: usize) -> Vec<F> {
    let gh = 4 * p.hidden;
    let b = &p.b[d * 2 * gh..(d + 1) * 2 * gh];
    b[..gh].iter().zip(&b[gh..]).map(|(&w, &r)| w + r).collect()
}

/// Batch rows times hidden units above which a step's LSTM cell updates split over threads.
const CELL_PAR_WORK: usize = 2048;

/// One LSTM direction's cell: the recurrence bias and peepholes, and how gates activate.
pub(super) struct LstmCell<'a, F> {
    pub(super) p: &'a Prepared<F>,
    pub(super) cfg: &'a DirCfg<'a, F>,
    /// `Wb + Rb`, `[4·hidden]` (gates i, o, f, c): the input projection leaves Wb out.
    pub(super) bias: &'a [F],
    /// Peepholes `[3·hidden]` (i, o, f).
    pub(super) peep: &'a [F],
}

/// A thread's gate buffers (i, f, o, c̃ and the new cell state), `hidden` each.
pub(super) struct LstmScratch<F> {
    ig: Vec<F>,
    fg: Vec<F>,
    og: Vec<F>,
    cg: Vec<F>,
    ct: Vec<F>,
}

impl<F: Acc> LstmScratch<F> {
    pub(super) fn new(hid: usize) -> Self {
        LstmScratch {
            ig: vec![F::zero(); hid],
            fg: vec![F::zero(); hid],
            og: vec![F::zero(); hid],
            cg: vec![F::zero(); hid],
            ct: vec![F::zero(); hid],
        }
    }
}

/// Gate `q`'s values of units `u` in `v`, which holds the gates one after the other, `hid`
/// values each.
fn gate<'v, F>(v: &'v [F], q: usize, hid: usize, u: &std::ops::Range<usize>) -> &'v [F] {
    &v[q * hid + u.start..q * hid + u.end]
}

impl<F: Acc> LstmCell<'_, F> {
    /// `xs = acts[k](xs)`: the engine's vector code, else element by element.
    fn act(&self, k: usize, xs: &mut [F]) {
        let a = &self.cfg.acts[k];
        if !self
            .p
            .fast
            .as_ref()
            .is_some_and(|f| F::fast_activate(f.as_ref(), a, xs))
        {
            xs.iter_mut().for_each(|v| *v = a.apply(*v));
        }
    }

    /// The update on the engine's vector cell ([`FastGemm::lstm_cell`]) when the cell is
    /// the default one (σ, tanh, tanh; no clip; no input-forget coupling) and the engine has
    /// it; false (nothing written) otherwise.
    ///
    /// [`FastGemm::lstm_cell`]: crate::FastGemm::lstm_cell
    fn fused(
        &self,
        units: std::ops::Range<usize>,
        x: &[F],
        g: GateBlocks<'_, F>,
        h: &mut [F],
        c: &mut [F],
    ) -> bool {
        let cfg = self.cfg;
        let plain = matches!(cfg.acts, [Act::Sigmoid, Act::Tanh, Act::Tanh, ..])
            && cfg.clip.is_none()
            && !cfg.input_forget;
        let Some(fast) = self.p.fast.as_deref().filter(|_| plain) else {
            return false;
        };
        let hid = self.p.hidden;
        for (o, r) in g.iter() {
            let n = r[0].len();
            let u = units.start + o..units.start + o + n;
            let mut cell = LstmCellBlock {
                x: [0, 1, 2, 3].map(|q| gate(x, q, hid, &u)),
                r,
                bias: [0, 1, 2, 3].map(|q| gate(self.bias, q, hid, &u)),
                peep: [0, 1, 2].map(|q| gate(self.peep, q, hid, &u)),
                c: &mut c[o..o + n],
                h: &mut h[o..o + n],
            };
            // The engine answers the same for every block: a refusal comes on the first.
            if !F::fast_lstm_cell(fast, &mut cell) {
                return false;
            }
        }
        true
    }

    /// One batch row's step over hidden units `units`: from its `x·Wᵀ + Wb` row `x` (all
    /// `4·hidden` values) and the units' `h·Rᵀ` values `g`, the new hidden state into `h` and
    /// cell state into `c` (which holds the previous one), `units.len()` values each.
    pub(super) fn update(
        &self,
        units: std::ops::Range<usize>,
        x: &[F],
        g: GateBlocks<'_, F>,
        h: &mut [F],
        c: &mut [F],
        sc: &mut LstmScratch<F>,
    ) {
        let hid = self.p.hidden;
        let w = units.len();
        let part = |v, q| gate(v, q, hid, &units);
        // Every operand cut to `w` values, so the loops below index without bounds checks.
        let (xi, xo, xf, xc) = (part(x, 0), part(x, 1), part(x, 2), part(x, 3));
        let b = self.bias;
        let (bi, bo, bf, bc) = (part(b, 0), part(b, 1), part(b, 2), part(b, 3));
        let (pi, po, pf) = (part(self.peep, 0), part(self.peep, 1), part(self.peep, 2));
        // Clipping is a pass of its own over each gate, so the sums' loops vectorize (with the
        // check inside, they ran scalar).
        let clip = |v: &mut [F]| {
            if let Some(c) = self.cfg.clip {
                v.iter_mut().for_each(|x| *x = x.max(-c).min(c));
            }
        };
        if self.fused(units.clone(), x, g, &mut h[..w], &mut c[..w]) {
            return;
        }
        let c = &mut c[..w];
        let (ig, fg, og, cg, ct) = (
            &mut sc.ig[..w],
            &mut sc.fg[..w],
            &mut sc.og[..w],
            &mut sc.cg[..w],
            &mut sc.ct[..w],
        );
        for (o, [gi, _, gf, gc]) in g.iter() {
            let n = gi.len();
            let (c, ig, fg, cg) = (
                &c[o..o + n],
                &mut ig[o..o + n],
                &mut fg[o..o + n],
                &mut cg[o..o + n],
            );
            let (xi, xf, xc) = (&xi[o..o + n], &xf[o..o + n], &xc[o..o + n]);
            let (bi, bf, bc, pi, pf) = (
                &bi[o..o + n],
                &bf[o..o + n],
                &bc[o..o + n],
                &pi[o..o + n],
                &pf[o..o + n],
            );
            let (gf, gc) = (&gf[..n], &gc[..n]);
            for j in 0..n {
                ig[j] = xi[j] + gi[j] + bi[j] + pi[j] * c[j];
                fg[j] = xf[j] + gf[j] + bf[j] + pf[j] * c[j];
                cg[j] = xc[j] + gc[j] + bc[j];
            }
        }
        clip(ig);
        clip(fg);
        clip(cg);
        self.act(0, ig);
        if self.cfg.input_forget {
            for (f, &i) in fg.iter_mut().zip(ig.iter()) {
                *f = F::one() - i;
            }
        } else {
            self.act(0, fg);
        }
        self.act(1, cg);
        for (o, [_, go, _, _]) in g.iter() {
            let n = go.len();
            let (c, ig, fg, cg) = (&c[o..o + n], &ig[o..o + n], &fg[o..o + n], &cg[o..o + n]);
            let (ct, og) = (&mut ct[o..o + n], &mut og[o..o + n]);
            let (xo, bo, po) = (&xo[o..o + n], &bo[o..o + n], &po[o..o + n]);
            for j in 0..n {
                let cn = fg[j] * c[j] + ig[j] * cg[j];
                ct[j] = cn;
                og[j] = xo[j] + go[j] + bo[j] + po[j] * cn;
            }
        }
        clip(og);
        self.act(0, og);
        c.copy_from_slice(ct);
        // The cell output's activation is not clipped.
        self.act(2, ct);
        for ((h, &o), &t) in h[..w].iter_mut().zip(og.iter()).zip(ct.iter()) {
            *h = o * t;
        }
    }
}

/// One batch row's `h·Rᵀ` values for a range of hidden units, as blocks of units: each block
/// its offset in the range and its four gates' values (i, o, f, c), one per unit.
#[derive(Clone, Copy)]
pub(super) enum GateBlocks<'a, F> {
    /// A whole row (units `0..hid`): the gates one after the other, `hid` values apart (R's
    /// own row order).
    Natural { g: &'a [F], hid: usize },
    /// Blocks of `unit_block` units, the last possibly shorter, each holding its gates one
    /// after the other (`lstm_blocked`'s order of R's rows).
    Blocked {
        g: &'a [F],
        units: usize,
        unit_block: usize,
    },
}

impl<'a, F> GateBlocks<'a, F> {
    pub(super) fn natural(g: &'a [F], hid: usize) -> Self {
        GateBlocks::Natural { g, hid }
    }

    /// (offset, [i, o, f, c]) of each block.
    fn iter(self) -> impl Iterator<Item = (usize, [&'a [F]; 4])> {
        let (g, units, block, stride) = match self {
            GateBlocks::Natural { g, hid } => (g, hid, hid.max(1), Some(hid)),
            GateBlocks::Blocked {
                g,
                units,
                unit_block,
            } => (g, units, unit_block.max(1), None),
        };
        (0..units).step_by(block).map(move |o| {
            let n = block.min(units - o);
            // Natural: gate q of unit o at q·hid + o. Blocked: the block at 4·o, gate q at
            // 4·o + q·n.
            let at = |q: usize| match stride {
                Some(hid) => q * hid + o,
                None => 4 * o + q * n,
            };
            (o, [0, 1, 2, 3].map(|q| &g[at(q)..at(q) + n]))
        })
    }
}
