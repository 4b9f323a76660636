//! Row-major f32 GEMM with prepacked operands and a fused epilogue:
//!
//! `C[m×n] = epilogue(alpha · op(A)[m×k] · op(B)[k×n] + beta · C)`
//!
//! where `op` is identity or transpose, every matrix has its own leading dimension, and the
//! epilogue (bias per column or per row, a residual, an activation) runs on each output tile
//! while it is in registers. Either operand may be prepacked once ([`PackedA`], [`PackedB`]);
//! a raw operand is packed per cache block inside the call, into a thread-local buffer that is
//! reused by later calls on the same thread (so a batched caller's loop allocates nothing
//! after its first call). The kernel is picked at run time ([`Isa::best`]); `sgemm_isa` forces
//! one (tests compare them all against an f64 reference).
//!
//! Semantics follow BLAS: `beta == 0` means C is not read (NaN there is ignored) and
//! `alpha == 0` means A and B are not read. The epilogue sees `v = alpha·A·B + beta·C` and
//! writes `activation(v + bias + residual)`.

mod convert;
mod driver;
mod epilogue;
mod pack;
mod simd;
mod tiles;

pub use convert::{bf16_to_f32, f16_to_f32};
pub(crate) use epilogue::activation;
pub use epilogue::{Activation, Bias, Epilogue, Residual};
pub use pack::{PackedA, PackedB, K_BLOCK, PANEL_A, PANEL_B};
pub use simd::Isa;
pub(crate) use simd::LINE_FLOATS;
pub use tiles::{sgemm_column_tiles, TileGemm};

use pack::check_raw;

/// Sizes and scalars of one GEMM.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GemmParams {
    /// Rows of C and op(A).
    pub m: usize,
    /// Columns of C and op(B).
    pub n: usize,
    /// The contracted dimension.
    pub k: usize,
    pub alpha: f32,
    pub beta: f32,
}

impl GemmParams {
    /// `C = A·B` (alpha 1, beta 0).
    pub fn new(m: usize, n: usize, k: usize) -> Self {
        GemmParams {
            m,
            n,
            k,
            alpha: 1.0,
            beta: 0.0,
        }
    }
    pub fn alpha(self, alpha: f32) -> Self {
        GemmParams { alpha, ..self }
    }
    pub fn beta(self, beta: f32) -> Self {
        GemmParams { beta, ..self }
    }
}

/// The left operand, op(A) of m × k.
#[derive(Clone, Copy, Debug)]
pub enum AOperand<'a> {
    /// Row-major: `op(A)[i, p]` is `data[i·ld + p]`, or `data[p·ld + i]` when `trans`.
    Raw {
        data: &'a [f32],
        ld: usize,
        trans: bool,
    },
    /// Packed once by [`PackedA::pack`].
    Packed(&'a PackedA),
}

/// The right operand, op(B) of k × n.
#[derive(Clone, Copy, Debug)]
pub enum BOperand<'a> {
    /// Row-major: `op(B)[p, j]` is `data[p·ld + j]`, or `data[j·ld + p]` when `trans`.
    Raw {
        data: &'a [f32],
        ld: usize,
        trans: bool,
    },
    /// Packed once by [`PackedB::pack`].
    Packed(&'a PackedB),
}

/// Why a GEMM (or a packed operand) was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GemmError {
    #[error("{operand}: leading dimension {ld} is less than its row length {min}")]
    LeadingDim {
        operand: &'static str,
        ld: usize,
        min: usize,
    },
    #[error("{operand}: {len} values, the shape needs {need}")]
    TooShort {
        operand: &'static str,
        len: usize,
        need: usize,
    },
    #[error("{operand}: packed as {got_rows}×{got_cols}, the GEMM needs {rows}×{cols}")]
    PackedShape {
        operand: &'static str,
        rows: usize,
        cols: usize,
        got_rows: usize,
        got_cols: usize,
    },
    #[error("bias: {len} values, needs {need} (one per output {per})")]
    BiasLen {
        len: usize,
        need: usize,
        per: &'static str,
    },
    #[error("conversion: {src} source values for {dst} destination values")]
    LenMismatch { src: usize, dst: usize },
    #[error("sizes overflow the address space")]
    Overflow,
    #[error("the {} kernel needs CPU features this machine lacks", .0.name())]
    IsaUnavailable(Isa),
    #[error("packed operand: {0}")]
    BadPacked(String),
    #[error("window: {0}")]
    Window(String),
}

/// `C = epi(alpha·op(A)·op(B) + beta·C)` with the fastest kernel of this machine, split into
/// `threads` parallel parts on the current rayon pool (1, or 0, runs on the calling thread; the
/// count is lowered for problems too small to gain from it).
pub fn sgemm(
    p: &GemmParams,
    a: AOperand<'_>,
    b: BOperand<'_>,
    c: &mut [f32],
    ldc: usize,
    epi: &Epilogue<'_>,
    threads: usize,
) -> Result<(), GemmError> {
    sgemm_isa(Isa::best(), p, a, b, c, ldc, epi, threads)
}

/// [`sgemm`] on a given ISA (an error when this machine cannot run it).
#[allow(clippy::too_many_arguments)]
pub fn sgemm_isa(
    isa: Isa,
    p: &GemmParams,
    a: AOperand<'_>,
    b: BOperand<'_>,
    c: &mut [f32],
    ldc: usize,
    epi: &Epilogue<'_>,
    threads: usize,
) -> Result<(), GemmError> {
    check_raw("C", c, p.m, p.n, ldc)?;
    // SAFETY: `c` is a unique borrow for the whole call and covers the m × n matrix at `ldc`
    // (checked just above).
    unsafe {
        sgemm_into(
            isa,
            p,
            a,
            b,
            crate::shared_out::SharedOut(c.as_mut_ptr()),
            ldc,
            epi,
            threads,
        )
    }
}

/// [`sgemm_isa`] with C given by its base pointer.
///
/// # Safety
/// `c` must be valid for reads and writes of the m × n matrix of row stride `ldc` (elements
/// `i·ldc + j`), which nothing else may access during the call.
#[allow(clippy::too_many_arguments)]
unsafe fn sgemm_into(
    isa: Isa,
    p: &GemmParams,
    a: AOperand<'_>,
    b: BOperand<'_>,
    c: crate::shared_out::SharedOut,
    ldc: usize,
    epi: &Epilogue<'_>,
    threads: usize,
) -> Result<(), GemmError> {
    if !isa.is_available() {
        return Err(GemmError::IsaUnavailable(isa));
    }
    let (m, n, k) = (p.m, p.n, p.k);
    let a = match a {
        AOperand::Raw { data, ld, trans } => {
            let (r, cl) = if trans { (k, m) } else { (m, k) };
            check_raw("A", data, r, cl, ld)?;
            driver::Src::Raw(pack::Raw { data, ld, trans })
        }
        AOperand::Packed(pa) => {
            if (pa.m(), pa.k()) != (m, k) {
                return Err(packed_shape("A", m, k, pa.m(), pa.k()));
            }
            driver::Src::Packed(pa.data())
        }
    };
    let b = match b {
        BOperand::Raw { data, ld, trans } => {
            let (r, cl) = if trans { (n, k) } else { (k, n) };
            check_raw("B", data, r, cl, ld)?;
            driver::Src::Raw(pack::Raw { data, ld, trans })
        }
        BOperand::Packed(pb) => {
            if (pb.k(), pb.n()) != (k, n) {
                return Err(packed_shape("B", k, n, pb.k(), pb.n()));
            }
            driver::Src::Packed(pb.data())
        }
    };
    match epi.bias {
        Bias::PerColumn(bias) if bias.len() < n => {
            return Err(GemmError::BiasLen {
                len: bias.len(),
                need: n,
                per: "column",
            })
        }
        Bias::PerRow(bias) if bias.len() < m => {
            return Err(GemmError::BiasLen {
                len: bias.len(),
                need: m,
                per: "row",
            })
        }
        _ => {}
    }
    if let Some(r) = epi.residual {
        check_raw("residual", r.data, m, n, r.ld)?;
    }
    if m == 0 || n == 0 {
        return Ok(());
    }
    let ctx = epilogue::EpiCtx { epi: *epi };
    let prob = driver::Problem {
        m,
        n,
        // alpha = 0: A·B does not contribute and is not computed (BLAS).
        k: if p.alpha == 0.0 { 0 } else { k },
        alpha: p.alpha,
        beta: p.beta,
        a,
        b,
        c,
        ldc,
        epi: (!epi.is_identity()).then_some(&ctx),
    };
    driver::run(isa, &prob, threads.max(1));
    Ok(())
}

/// `C = A·B[:, cols]` on the calling thread for a prepacked B: columns `cols` of the product
/// into the `m × cols.len()` matrix `c` (row stride `ldc`). A recurrent kernel's threads each
/// take a fixed column range of the same packed weights step after step (and use the values
/// while they are in cache) instead of splitting every step's GEMM anew. `cols` starts on a
/// packed panel (a multiple of [`PANEL_B`]).
pub fn sgemm_packed_columns(
    m: usize,
    a: (&[f32], usize),
    b: &PackedB,
    cols: std::ops::Range<usize>,
    c: &mut [f32],
    ldc: usize,
) -> Result<(), GemmError> {
    let isa = Isa::best();
    let (k, n) = (b.k(), b.n());
    if cols.start > cols.end || cols.end > n || !cols.start.is_multiple_of(PANEL_B) {
        return Err(GemmError::Window(format!(
            "columns {}..{} of a packed B of {n} columns (the range must start on a \
             {PANEL_B}-column panel)",
            cols.start, cols.end
        )));
    }
    let width = cols.end - cols.start;
    pack::check_raw("A", a.0, m, k, a.1)?;
    pack::check_raw("C", c, m, width, ldc)?;
    if m == 0 || width == 0 {
        return Ok(());
    }
    let prob = driver::Problem {
        m,
        n,
        k,
        alpha: 1.0,
        beta: 0.0,
        a: driver::Src::Raw(pack::Raw {
            data: a.0,
            ld: a.1,
            trans: false,
        }),
        b: driver::Src::Packed(b.data()),
        // The driver addresses column j at `c + j`: the base sits `cols.start` before `c`, so
        // columns cols.start.. land at c[0..] (wrapping arithmetic: only in-bounds addresses
        // are formed from it).
        c: crate::shared_out::SharedOut(c.as_mut_ptr().wrapping_sub(cols.start)),
        ldc,
        epi: None,
    };
    driver::run_columns(isa, &prob, cols.start, cols.end);
    Ok(())
}

fn packed_shape(
    operand: &'static str,
    rows: usize,
    cols: usize,
    gr: usize,
    gc: usize,
) -> GemmError {
    GemmError::PackedShape {
        operand,
        rows,
        cols,
        got_rows: gr,
        got_cols: gc,
    }
}

/// One LSTM cell update with σ, tanh, tanh on `isa`'s vector code, the gates in registers
/// ([`rge_kernels_sequence::LstmCellBlock`] says what it computes).
pub fn lstm_cell(
    isa: Isa,
    cell: &mut rge_kernels_sequence::LstmCellBlock<'_, f32>,
) -> Result<(), GemmError> {
    if !isa.is_available() {
        return Err(GemmError::IsaUnavailable(isa));
    }
    if !cell.is_consistent() {
        return Err(GemmError::Window(format!(
            "an LSTM cell of {} units with an operand of another length",
            cell.c.len()
        )));
    }
    // SAFETY: the operands hold the units, checked above.
    unsafe { simd::lstm_cell(isa, cell) };
    Ok(())
}

/// Applies `act` in place with `isa`'s vector code: the epilogue's activation on its own (the
/// same code the GEMM runs, exposed for other kernels and for accuracy tests).
pub fn activate(isa: Isa, act: &Activation, xs: &mut [f32]) -> Result<(), GemmError> {
    if !isa.is_available() {
        return Err(GemmError::IsaUnavailable(isa));
    }
    simd::activate(isa, act, xs);
    Ok(())
}
