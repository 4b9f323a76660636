//! The RNN, GRU and LSTM cells, run over one direction. `xw` holds X·Wᵀ + Wb for every
//! (step, batch) row; each step adds H·Rᵀ (one GEMM over the batch) and the cell's
//! elementwise update. `y` is (seq, dirs, batch, hidden), states (dirs, batch, hidden).

use rge_kernels::{KernelError, KernelResult};

use super::{Act, Prepared};
use crate::common::{Acc, Gemm, PreparedBt};

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
    fn time(&self, s: usize, len: usize) -> Option<usize> {
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

fn state<F: Copy>(v: &[F], d: usize, batch: usize, hid: usize) -> Vec<F> {
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
    let rb = &p.b[d * 2 * gh + gh..(d + 1) * 2 * gh];
    let pp = &p.p[d * 3 * hid..(d + 1) * 3 * hid];
    let (pi, po, pf) = (&pp[..hid], &pp[hid..2 * hid], &pp[2 * hid..]);
    let mut h = state(&p.h0, d, batch, hid);
    let mut c = state(&p.c0, d, batch, hid);
    let mut hr = vec![F::zero(); batch * gh];
    let r = RMat::new(p, r, gh, hid, Some(d))?;
    let clip = |x: F| match cfg.clip {
        Some(c) => x.max(-c).min(c),
        None => x,
    };
    // `xs = acts[k](xs)`: the engine's vector code, else element by element.
    let act = |k: usize, xs: &mut [F]| {
        let a = &cfg.acts[k];
        if !p
            .fast
            .as_ref()
            .is_some_and(|f| F::fast_activate(f.as_ref(), a, xs))
        {
            xs.iter_mut().for_each(|v| *v = a.apply(*v));
        }
    };
    let (mut ig, mut fg, mut og, mut cg, mut ct) = (
        vec![F::zero(); hid],
        vec![F::zero(); hid],
        vec![F::zero(); hid],
        vec![F::zero(); hid],
        vec![F::zero(); hid],
    );
    for s in 0..seq {
        h_times_r(p, &h, &r, batch, hid, gh, &mut hr, gh)?;
        for b in 0..batch {
            let Some(t) = cfg.time(s, p.lens[b]) else {
                continue;
            };
            let x = &xw[(t * batch + b) * gh..(t * batch + b + 1) * gh];
            let g = &hr[b * gh..(b + 1) * gh];
            let pre = |q: usize, j: usize| x[q * hid + j] + g[q * hid + j] + rb[q * hid + j];
            let cp = &c[b * hid..(b + 1) * hid];
            for j in 0..hid {
                ig[j] = clip(pre(0, j) + pi[j] * cp[j]);
                fg[j] = clip(pre(2, j) + pf[j] * cp[j]);
                cg[j] = clip(pre(3, j));
            }
            act(0, &mut ig);
            if cfg.input_forget {
                for (f, &i) in fg.iter_mut().zip(&ig) {
                    *f = F::one() - i;
                }
            } else {
                act(0, &mut fg);
            }
            act(1, &mut cg);
            for j in 0..hid {
                let cn = fg[j] * cp[j] + ig[j] * cg[j];
                ct[j] = cn;
                og[j] = clip(pre(1, j) + po[j] * cn);
            }
            act(0, &mut og);
            c[b * hid..(b + 1) * hid].copy_from_slice(&ct);
            // The cell output's activation is not clipped.
            act(2, &mut ct);
            let yo = ((t * cfg.dirs + d) * batch + b) * hid;
            for j in 0..hid {
                let hn = og[j] * ct[j];
                h[b * hid + j] = hn;
                y[yo + j] = hn;
            }
        }
    }
    yh[d * batch * hid..(d + 1) * batch * hid].copy_from_slice(&h);
    yc[d * batch * hid..(d + 1) * batch * hid].copy_from_slice(&c);
    Ok(())
}
