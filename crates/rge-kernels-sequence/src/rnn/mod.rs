//! RNN, GRU and LSTM: attribute parsing, input checks and layout handling shared by the three
//! ops; the cells themselves are in `cells.rs`. Everything computes in f32 (f64 for double)
//! and is rounded to the input type at the end. `sequence_lens` follows ONNX Runtime: steps
//! past a batch entry's length leave zeros in `Y`, `Y_h` / `Y_c` hold the state after the
//! last valid step, and the reverse direction starts at the entry's last valid step.

mod activation;
mod cells;
mod lstm_blocked;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef};

use std::sync::Arc;

use crate::common::{gemm, read, read_ints, want_float, write, Acc, FastGemm, Gemm, PreparedBt};
pub use activation::{parse_activations, Act};

/// Which recurrent op.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kind {
    Rnn,
    Gru,
    Lstm,
}

impl Kind {
    /// Gates per cell.
    fn gates(self) -> usize {
        match self {
            Kind::Rnn => 1,
            Kind::Gru => 3,
            Kind::Lstm => 4,
        }
    }

    fn default_acts(self) -> &'static [&'static str] {
        match self {
            Kind::Rnn => &["Tanh"],
            Kind::Gru => &["Sigmoid", "Tanh"],
            Kind::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// A built RNN / GRU / LSTM kernel.
pub struct Recurrent {
    kind: Kind,
    dirs: usize,
    reverse: bool,
    hidden: Option<usize>,
    batch_first: bool,
    clip: Option<f32>,
    acts: Vec<Act>,
    input_forget: bool,
    linear_before_reset: bool,
    /// An engine's f32 GEMM for the input projection and the per-step `H·Rᵀ`.
    fast: Option<Arc<dyn FastGemm>>,
    /// Each direction's R prepared by `fast` when the kernel was built, when R is a constant
    /// f32 tensor and the cell multiplies by the whole of it (RNN, LSTM): otherwise every run
    /// packed it again (4 MiB per layer of the bench's LSTM, 7% of its run at 2 threads).
    r_prepared: Option<PreparedDirs>,
    /// Each direction's W prepared the same way for the input projection, when W is a
    /// constant f32 tensor: otherwise every run copied and packed it.
    w_prepared: Option<PreparedDirs>,
    /// An LSTM's constant R in `lstm_blocked`'s block order, prepared by `fast` when it
    /// computes column ranges (then `r_prepared` is `None`).
    r_blocked: Option<PreparedDirs>,
}

/// One prepared operand per direction.
pub type PreparedDirs = Arc<[Box<dyn PreparedBt>]>;

/// Input `index` (W: 1, R: 2) prepared once by `fast`, one operand per direction, when it is
/// a constant f32 `[dirs, gates·hidden, k]` (for R, `k` = hidden); `None` otherwise, or when
/// `fast` declines a direction.
fn prepare_constant(
    init: &KernelInit<'_>,
    index: usize,
    kind: Kind,
    dirs: usize,
    fast: Option<&Arc<dyn FastGemm>>,
) -> KernelResult<Option<PreparedDirs>> {
    prepare_constant_rows(init, index, kind, dirs, fast, |rows, _| rows.into())
}

/// [`prepare_constant`] with each direction's `[gates·hidden, k]` rows first put in the order
/// `order(rows, k)` gives.
fn prepare_constant_rows(
    init: &KernelInit<'_>,
    index: usize,
    kind: Kind,
    dirs: usize,
    fast: Option<&Arc<dyn FastGemm>>,
    order: impl Fn(&[f32], usize) -> std::borrow::Cow<'_, [f32]>,
) -> KernelResult<Option<PreparedDirs>> {
    let (Some(fast), Some(t)) = (fast, init.constant(index)) else {
        return Ok(None);
    };
    let &[d, rows, k] = t.shape() else {
        return Ok(None);
    };
    let fits = d == dirs
        && k > 0
        && rows > 0
        && rows % kind.gates() == 0
        && (index != 2 || rows == kind.gates() * k);
    let values = match t.as_slice::<f32>() {
        Ok(v) if fits && t.dtype() == DType::Float => v,
        _ => return Ok(None),
    };
    let mut out = Vec::with_capacity(dirs);
    for part in values.chunks_exact(rows * k) {
        match fast.prepare_bt(&order(part, k), rows, k, k)? {
            Some(p) => out.push(p),
            None => return Ok(None),
        }
    }
    Ok(Some(out.into()))
}

fn build(
    init: &KernelInit<'_>,
    kind: Kind,
    fast: Option<Arc<dyn FastGemm>>,
) -> KernelResult<Box<dyn Kernel>> {
    let (dirs, reverse) = match init.str_or("direction", "forward")? {
        "forward" => (1, false),
        "reverse" => (1, true),
        "bidirectional" => (2, false),
        other => {
            return Err(KernelError::attr(
                "direction",
                format!("{other:?} is not forward, reverse or bidirectional"),
            ))
        }
    };
    let hidden = match init.int_opt("hidden_size")? {
        Some(h) if h <= 0 => return Err(KernelError::attr("hidden_size", "must be positive")),
        h => h.map(|h| h as usize),
    };
    let layout = init.int_or("layout", 0)?;
    if !(0..=1).contains(&layout) {
        return Err(KernelError::attr(
            "layout",
            format!("{layout} is not 0 or 1"),
        ));
    }
    let clip = init.float_opt("clip")?;
    if clip.is_some_and(|c| c.is_nan() || c < 0.0) {
        return Err(KernelError::attr("clip", "must be nonnegative"));
    }
    let acts = parse_activations(
        init.strings_opt("activations")?,
        init.floats_opt("activation_alpha")?,
        init.floats_opt("activation_beta")?,
        kind.default_acts(),
        dirs,
    )?;
    let r_blocked = match kind {
        Kind::Lstm => lstm_blocked::prepare(init, dirs, fast.as_ref())?,
        _ => None,
    };
    Ok(Box::new(Recurrent {
        kind,
        dirs,
        reverse,
        hidden,
        batch_first: layout == 1,
        clip,
        acts,
        input_forget: init.int_or("input_forget", 0)? != 0,
        linear_before_reset: init.int_or("linear_before_reset", 0)? != 0,
        // GRU's reset gate splits R: its cells multiply by parts of it, packed per run.
        r_prepared: match kind {
            Kind::Gru => None,
            Kind::Lstm if r_blocked.is_some() => None,
            _ => prepare_constant(init, 2, kind, dirs, fast.as_ref())?,
        },
        r_blocked,
        // The input projection takes whole directions of W, for every kind.
        w_prepared: prepare_constant(init, 1, kind, dirs, fast.as_ref())?,
        fast,
    }))
}

/// Builds an RNN kernel.
pub fn rnn(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    build(init, Kind::Rnn, None)
}

/// Builds a GRU kernel.
pub fn gru(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    build(init, Kind::Gru, None)
}

/// Builds an LSTM kernel.
pub fn lstm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    build(init, Kind::Lstm, None)
}

/// The RNN, GRU or LSTM kernel (by `init.op_type`) whose f32 GEMMs run on `fast`: an engine
/// (the dense engine) reuses these cells, attributes and checks with its own GEMM.
pub fn recurrent_with(
    init: &KernelInit<'_>,
    fast: Arc<dyn FastGemm>,
) -> KernelResult<Box<dyn Kernel>> {
    let kind = match init.op_type {
        "RNN" => Kind::Rnn,
        "GRU" => Kind::Gru,
        "LSTM" => Kind::Lstm,
        other => {
            return Err(KernelError::unsupported(format!(
                "{other} is not a recurrent op"
            )))
        }
    };
    build(init, kind, Some(fast))
}

/// The inputs of one call, checked, in compute type and (seq, batch, …) layout.
pub struct Prepared<F> {
    pub seq: usize,
    pub batch: usize,
    pub input: usize,
    pub hidden: usize,
    pub x: Vec<F>,
    pub w: Vec<F>,
    pub r: Vec<F>,
    /// (dirs, 2·gates·hidden), zeros when absent.
    pub b: Vec<F>,
    pub lens: Vec<usize>,
    /// (dirs, batch, hidden)
    pub h0: Vec<F>,
    pub c0: Vec<F>,
    /// (dirs, 3·hidden), zeros when absent.
    pub p: Vec<F>,
    /// The engine's GEMM and the threads it may use.
    pub fast: Option<Arc<dyn FastGemm>>,
    /// Each direction's R, prepared by `fast` when the kernel was built (`r` is then empty).
    pub r_prepared: Option<PreparedDirs>,
    /// Each direction's W, the same (`w` is then empty).
    pub w_prepared: Option<PreparedDirs>,
    /// An LSTM's R in block order (`lstm_blocked`; `r` is then empty).
    pub r_blocked: Option<PreparedDirs>,
    pub threads: usize,
}

impl<F: Acc> Prepared<F> {
    /// `g` on the engine's GEMM when it takes it, else the generic one.
    pub fn gemm(&self, g: Gemm, a: &[F], b: &[F], c: &mut [F]) -> KernelResult<()> {
        if let Some(fast) = &self.fast {
            if F::fast_gemm(fast.as_ref(), &g, a, b, c, self.threads)? {
                return Ok(());
            }
        }
        gemm(g, a, b, c)
    }
}

fn check_shape(t: &TensorRef<'_>, name: &str, want: &[usize]) -> KernelResult<()> {
    if t.shape() != want {
        return Err(KernelError::invalid(format!(
            "{name} has shape {:?}, expected {want:?}",
            t.shape()
        )));
    }
    Ok(())
}

/// (a, b, c) → (b, a, c).
fn swap01<F: Copy>(v: &[F], a: usize, b: usize, c: usize) -> Vec<F> {
    let mut out = Vec::with_capacity(v.len());
    for j in 0..b {
        for i in 0..a {
            out.extend_from_slice(&v[(i * b + j) * c..(i * b + j + 1) * c]);
        }
    }
    out
}

impl Recurrent {
    fn prepare<F: Acc>(&self, ctx: &KernelCtx<'_>) -> KernelResult<Prepared<F>> {
        let x = ctx.input(0)?;
        let w = ctx.input(1)?;
        let r = ctx.input(2)?;
        for (t, n) in [(&x, "X"), (&w, "W"), (&r, "R")] {
            want_float(t, n)?;
        }
        let xs = x.shape();
        if xs.len() != 3 {
            return Err(KernelError::invalid(format!("X must be 3-D, got {xs:?}")));
        }
        let (seq, batch) = if self.batch_first {
            (xs[1], xs[0])
        } else {
            (xs[0], xs[1])
        };
        let input = xs[2];
        let g = self.kind.gates();
        let ws = w.shape();
        if ws.len() != 3 || ws[1] % g != 0 {
            return Err(KernelError::invalid(format!("W has shape {ws:?}")));
        }
        let hidden = ws[1] / g;
        if let Some(h) = self.hidden {
            if h != hidden {
                return Err(KernelError::invalid(format!(
                    "W has shape {ws:?}, which does not fit hidden_size {h}"
                )));
            }
        }
        let dirs = self.dirs;
        check_shape(&w, "W", &[dirs, g * hidden, input])?;
        check_shape(&r, "R", &[dirs, g * hidden, hidden])?;
        let mut xv = read::<F>(&x)?;
        if self.batch_first {
            xv = swap01(&xv, batch, seq, input);
        }
        let b = match ctx.opt_input(3)? {
            Some(t) => {
                check_shape(&t, "B", &[dirs, 2 * g * hidden])?;
                read::<F>(&t)?
            }
            None => vec![F::zero(); dirs * 2 * g * hidden],
        };
        let lens = match ctx.opt_input(4)? {
            Some(t) => {
                check_shape(&t, "sequence_lens", &[batch])?;
                read_ints(&t, "sequence_lens")?
                    .into_iter()
                    .map(|l| {
                        usize::try_from(l)
                            .ok()
                            .filter(|&l| l <= seq)
                            .ok_or_else(|| {
                                KernelError::invalid(format!(
                                    "sequence_lens value {l} is outside [0, {seq}]"
                                ))
                            })
                    })
                    .collect::<KernelResult<Vec<_>>>()?
            }
            None => vec![seq; batch],
        };
        let state = |i: usize, name: &str| -> KernelResult<Vec<F>> {
            match ctx.opt_input(i)? {
                Some(t) => {
                    let want = if self.batch_first {
                        [batch, dirs, hidden]
                    } else {
                        [dirs, batch, hidden]
                    };
                    check_shape(&t, name, &want)?;
                    let v = read::<F>(&t)?;
                    Ok(if self.batch_first {
                        swap01(&v, batch, dirs, hidden)
                    } else {
                        v
                    })
                }
                None => Ok(vec![F::zero(); dirs * batch * hidden]),
            }
        };
        let h0 = state(5, "initial_h")?;
        let (c0, p) = if self.kind == Kind::Lstm {
            let c0 = state(6, "initial_c")?;
            let p = match ctx.opt_input(7)? {
                Some(t) => {
                    check_shape(&t, "P", &[dirs, 3 * hidden])?;
                    read::<F>(&t)?
                }
                None => vec![F::zero(); dirs * 3 * hidden],
            };
            (c0, p)
        } else {
            (Vec::new(), Vec::new())
        };
        Ok(Prepared {
            seq,
            batch,
            input,
            hidden,
            x: xv,
            // A prepared W or R is all the kernel reads: no copy of it per run.
            w: if self.w_prepared.is_some() {
                Vec::new()
            } else {
                read::<F>(&w)?
            },
            r: if self.r_prepared.is_some() || self.r_blocked.is_some() {
                Vec::new()
            } else {
                read::<F>(&r)?
            },
            b,
            lens,
            h0,
            c0,
            p,
            fast: self.fast.clone(),
            r_prepared: self.r_prepared.clone(),
            w_prepared: self.w_prepared.clone(),
            r_blocked: self.r_blocked.clone(),
            threads: ctx.threads(),
        })
    }

    fn run<F: Acc>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let p = self.prepare::<F>(ctx)?;
        let (seq, batch, hid, dirs) = (p.seq, p.batch, p.hidden, self.dirs);
        let mut y = vec![F::zero(); seq * dirs * batch * hid];
        let mut yh = vec![F::zero(); dirs * batch * hid];
        let mut yc = vec![
            F::zero();
            if self.kind == Kind::Lstm {
                dirs * batch * hid
            } else {
                0
            }
        ];
        let per = self.kind.default_acts().len();
        for d in 0..dirs {
            let reverse = self.reverse || d == 1;
            let cfg = cells::DirCfg {
                d,
                dirs,
                reverse,
                acts: &self.acts[d * per..(d + 1) * per],
                clip: self.clip.map(|c| F::of(c as f64)),
                input_forget: self.input_forget,
                linear_before_reset: self.linear_before_reset,
            };
            // The LSTM cells add Wb with Rb (one sum per unit, not a pass over every step's
            // row of X·Wᵀ).
            let xw = input_projection(&p, d, self.kind.gates(), self.kind != Kind::Lstm)?;
            match self.kind {
                Kind::Rnn => cells::rnn_dir(&p, &cfg, &xw, &mut y, &mut yh)?,
                Kind::Gru => cells::gru_dir(&p, &cfg, &xw, &mut y, &mut yh)?,
                Kind::Lstm => match p.r_blocked.as_deref().and_then(|r| r.get(d)) {
                    Some(r) => {
                        lstm_blocked::lstm_dir(&p, &cfg, &xw, (&mut y, &mut yh, &mut yc), &**r)?
                    }
                    None => cells::lstm_dir(&p, &cfg, &xw, &mut y, &mut yh, &mut yc)?,
                },
            }
        }
        let dt = ctx.input(0)?.dtype();
        let n_out = ctx.output_count();
        if n_out > 0 && ctx.output_used(0) {
            if self.batch_first {
                // (seq, dirs, batch, H) → (batch, seq, dirs, H)
                let mut t = Vec::with_capacity(y.len());
                for b in 0..batch {
                    for s in 0..seq {
                        for d in 0..dirs {
                            let off = ((s * dirs + d) * batch + b) * hid;
                            t.extend_from_slice(&y[off..off + hid]);
                        }
                    }
                }
                write(ctx, 0, dt, &[batch, seq, dirs, hid], &t)?;
            } else {
                write(ctx, 0, dt, &[seq, dirs, batch, hid], &y)?;
            }
        }
        let states = [(1, &yh), (2, &yc)];
        for (i, v) in states {
            if i >= n_out || !ctx.output_used(i) || (i == 2 && self.kind != Kind::Lstm) {
                continue;
            }
            if self.batch_first {
                write(
                    ctx,
                    i,
                    dt,
                    &[batch, dirs, hid],
                    &swap01(v, dirs, batch, hid),
                )?;
            } else {
                write(ctx, i, dt, &[dirs, batch, hid], v)?;
            }
        }
        Ok(())
    }
}

/// X·W_dᵀ + Wb_d for every step: (seq·batch, gates·hidden).
/// `X·W_dᵀ` for every (step, batch) row, plus `Wb` when `with_bias`.
fn input_projection<F: Acc>(
    p: &Prepared<F>,
    d: usize,
    gates: usize,
    with_bias: bool,
) -> KernelResult<Vec<F>> {
    let gh = gates * p.hidden;
    let rows = p.seq * p.batch;
    let mut xw = vec![F::zero(); rows * gh];
    let prepared = p.w_prepared.as_deref().and_then(|w| w.get(d));
    let done = match prepared {
        Some(w) => F::fast_prepared(&**w, rows, (&p.x, p.input), (&mut xw, gh), p.threads)?,
        None => false,
    };
    if !done {
        input_projection_gemm(p, d, gh, rows, &mut xw)?;
    }
    if !with_bias {
        return Ok(xw);
    }
    let wb = &p.b[d * 2 * gh..d * 2 * gh + gh];
    for row in xw.chunks_exact_mut(gh.max(1)) {
        for (v, &b) in row.iter_mut().zip(wb) {
            *v = *v + b;
        }
    }
    Ok(xw)
}

/// `xw = X·W_dᵀ` on the (engine's or generic) GEMM from the copied W.
fn input_projection_gemm<F: Acc>(
    p: &Prepared<F>,
    d: usize,
    gh: usize,
    rows: usize,
    xw: &mut [F],
) -> KernelResult<()> {
    let Some(w) = p.w.get(d * gh * p.input..(d + 1) * gh * p.input) else {
        // Only a prepared W goes uncopied, and the f32 GEMM always takes it.
        return Err(KernelError::invalid(
            "W was prepared when the kernel was built, and the GEMM did not take it",
        ));
    };
    p.gemm(
        Gemm {
            m: rows,
            k: p.input,
            n: gh,
            a: (p.input, 1),
            b: (1, p.input),
            c: (gh, 1),
            accumulate: false,
        },
        &p.x,
        w,
        xw,
    )
}

impl Kernel for Recurrent {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if ctx.input(0)?.dtype() == DType::Double {
            self.run::<f64>(ctx)
        } else {
            self.run::<f32>(ctx)
        }
    }
}

#[cfg(test)]
mod test_data;
#[cfg(test)]
mod tests;
