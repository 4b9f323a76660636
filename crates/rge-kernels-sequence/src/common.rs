//! Shared numeric helpers: the compute float type (`f32` or `f64`), reading float tensors of
//! any float dtype into compute buffers, writing them back, rounding to a storage dtype (to
//! reproduce the rounding points of the ONNX reference for float16 / bfloat16), and a checked
//! GEMM wrapper over `matrixmultiply`.

use half::{bf16, f16};
use rge_kernels::{DType, KernelCtx, KernelError, KernelResult, TensorRef};

/// The float type kernels compute in: `f32` for float/float16/bfloat16 data, `f64` when double
/// precision is involved.
pub trait Acc:
    num_traits::Float
    + num_traits::FromPrimitive
    + std::iter::Sum
    + Default
    + Send
    + Sync
    + std::fmt::Debug
    + 'static
{
    /// `C ← A·B (+ C when accumulate)`; errors when a stride would leave a slice. Use
    /// [`gemm`].
    fn gemm_raw(g: &Gemm, a: &[Self], b: &[Self], c: &mut [Self]) -> KernelResult<()>;

    // The engine's fast paths ([`FastGemm`]) take f32 only: these defaults say "not taken",
    // and the f32 impl overrides them.

    /// `g` on an engine's [`FastGemm`] when this is f32 and `g` is the `A·Bᵀ` form it takes
    /// (row-major A, B and C, no accumulation); false when it is not (then use [`gemm`]).
    fn fast_gemm(
        _fast: &dyn FastGemm,
        _g: &Gemm,
        _a: &[Self],
        _b: &[Self],
        _c: &mut [Self],
        _threads: usize,
    ) -> KernelResult<bool> {
        Ok(false)
    }

    /// `b` (`n×k`, row stride `ldb`) prepared once by the engine for many `a·bᵀ` (f32 only).
    fn fast_prepare_bt(
        _fast: &dyn FastGemm,
        _b: &[Self],
        _n: usize,
        _k: usize,
        _ldb: usize,
    ) -> KernelResult<Option<Box<dyn PreparedBt>>> {
        Ok(None)
    }

    /// `xs = act(xs)` on the engine's vector code; false when this is not f32 or the engine
    /// lacks `act` (then apply it element by element).
    fn fast_activate(_fast: &dyn FastGemm, _act: &crate::rnn::Act, _xs: &mut [Self]) -> bool {
        false
    }

    /// [`FastGemm::lstm_cell`]; false when this is not f32 or the engine has no such code.
    fn fast_lstm_cell(_fast: &dyn FastGemm, _cell: &mut LstmCellBlock<'_, Self>) -> bool {
        false
    }

    /// `c = a·bᵀ` with a prepared `b`; false when this is not f32.
    fn fast_prepared(
        _prep: &dyn PreparedBt,
        _m: usize,
        _a: (&[Self], usize),
        _c: (&mut [Self], usize),
        _threads: usize,
    ) -> KernelResult<bool> {
        Ok(false)
    }

    /// Columns `cols` of `a·bᵀ` with a prepared `b` ([`PreparedBt::a_bt_columns`]); false
    /// when this is not f32 or the operand does not compute column ranges.
    fn fast_prepared_columns(
        _prep: &dyn PreparedBt,
        _m: usize,
        _a: (&[Self], usize),
        _cols: std::ops::Range<usize>,
        _c: (&mut [Self], usize),
    ) -> KernelResult<bool> {
        Ok(false)
    }

    /// Converts from f64 (rounding to the compute type).
    fn of(v: f64) -> Self {
        Self::from_f64(v).unwrap_or_else(Self::nan)
    }

    /// Widens to f64.
    fn f64(self) -> f64 {
        self.to_f64().unwrap_or(f64::NAN)
    }
}

/// The dimensions and strides of one GEMM call: `C[m×n] = A[m×k] · B[k×n]` with element
/// strides (row, column) for each matrix, plus offsets into the slices.
#[derive(Clone, Copy, Debug)]
pub struct Gemm {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub a: (usize, usize),
    pub b: (usize, usize),
    pub c: (usize, usize),
    pub accumulate: bool,
}

/// The largest index (plus one) a strided `rows × cols` matrix touches.
fn extent(rows: usize, cols: usize, (rs, cs): (usize, usize)) -> Option<usize> {
    if rows == 0 || cols == 0 {
        return Some(0);
    }
    (rows - 1)
        .checked_mul(rs)?
        .checked_add((cols - 1).checked_mul(cs)?)?
        .checked_add(1)
}

fn fits(g: &Gemm, a: usize, b: usize, c: usize) -> bool {
    let ok = |need: Option<usize>, have: usize| need.is_some_and(|n| n <= have);
    let isz = |s: usize| isize::try_from(s).is_ok();
    ok(extent(g.m, g.k, g.a), a)
        && ok(extent(g.k, g.n, g.b), b)
        && ok(extent(g.m, g.n, g.c), c)
        && [g.a.0, g.a.1, g.b.0, g.b.1, g.c.0, g.c.1]
            .into_iter()
            .all(isz)
}

/// A faster f32 GEMM an engine brings to these kernels (the dense engine's packed GEMM), for
/// the one form the recurrent nets use: `c[m×n] = a[m×k] · b[n×k]ᵀ`, each row-major with the
/// given row strides.
pub trait FastGemm: Send + Sync {
    /// Computes `c = a·bᵀ` on up to `threads` threads; errors when an operand is too short.
    #[allow(clippy::too_many_arguments)]
    fn a_bt(
        &self,
        m: usize,
        n: usize,
        k: usize,
        a: (&[f32], usize),
        b: (&[f32], usize),
        c: (&mut [f32], usize),
        threads: usize,
    ) -> KernelResult<()>;

    /// `xs = act(xs)` in place with the engine's vector code; false when it has no such
    /// activation (the caller applies it element by element).
    fn activate(&self, _act: &crate::rnn::Act, _xs: &mut [f32]) -> bool {
        false
    }

    /// One LSTM cell update with the default activations (σ, tanh, tanh), no clip and no
    /// input-forget coupling, on the engine's vector code (no scratch rows); false
    /// when the engine has none (nothing is written then, and it answers the same every time).
    fn lstm_cell(&self, _cell: &mut LstmCellBlock<'_, f32>) -> bool {
        false
    }

    /// `b` (`n×k`, row stride `ldb`) prepared (packed) once for many [`PreparedBt::a_bt`]
    /// calls; `None` when the engine does not prepare.
    fn prepare_bt(
        &self,
        _b: &[f32],
        _n: usize,
        _k: usize,
        _ldb: usize,
    ) -> KernelResult<Option<Box<dyn PreparedBt>>> {
        Ok(None)
    }

    /// The column alignment [`PreparedBt::a_bt_columns`] needs of a range's start, when the
    /// operands this engine prepares compute column ranges; `None` when they do not.
    fn column_align(&self) -> Option<usize> {
        None
    }
}

/// One batch row's LSTM cell update over `c.len()` hidden units, every operand cut to those
/// units, gates in ONNX's order i, o, f, c:
///
/// ```text
/// i = σ(x_i + r_i + b_i + p_i·c)    f = σ(x_f + r_f + b_f + p_f·c)    g = tanh(x_c + r_c + b_c)
/// c ← f·c + i·g                     o = σ(x_o + r_o + b_o + p_o·c)    h = o·tanh(c)
/// ```
pub struct LstmCellBlock<'a, F> {
    /// Each gate's input projection `x·Wᵀ`.
    pub x: [&'a [F]; 4],
    /// Each gate's `h·Rᵀ`.
    pub r: [&'a [F]; 4],
    /// Each gate's bias (`Wb + Rb`).
    pub bias: [&'a [F]; 4],
    /// The peepholes of gates i, o and f.
    pub peep: [&'a [F]; 3],
    /// The previous cell state in, the new one out.
    pub c: &'a mut [F],
    /// The new hidden state.
    pub h: &'a mut [F],
}

impl<F> LstmCellBlock<'_, F> {
    /// Whether every operand holds the `c.len()` units.
    pub fn is_consistent(&self) -> bool {
        let n = self.c.len();
        self.h.len() == n
            && self
                .x
                .iter()
                .chain(&self.r)
                .chain(&self.bias)
                .chain(&self.peep)
                .all(|v| v.len() == n)
    }
}

/// A right operand an engine prepared ([`FastGemm::prepare_bt`]).
pub trait PreparedBt: Send + Sync {
    /// `c[m×n] = a[m×k]·bᵀ` (row strides given).
    fn a_bt(
        &self,
        m: usize,
        a: (&[f32], usize),
        c: (&mut [f32], usize),
        threads: usize,
    ) -> KernelResult<()>;

    /// Columns `cols` of `a·bᵀ` into the `m × cols.len()` matrix `c`, on the calling thread
    /// (`cols.start` a multiple of [`FastGemm::column_align`]); false when this operand does
    /// not compute column ranges.
    fn a_bt_columns(
        &self,
        _m: usize,
        _a: (&[f32], usize),
        _cols: std::ops::Range<usize>,
        _c: (&mut [f32], usize),
    ) -> KernelResult<bool> {
        Ok(false)
    }
}

/// The `A·Bᵀ` row strides (A, B, C) of `g`, when it has that form.
fn a_bt_form(g: &Gemm) -> Option<(usize, usize, usize)> {
    (g.a.1 == 1 && g.b.0 == 1 && g.c.1 == 1 && !g.accumulate).then_some((g.a.0, g.b.1, g.c.0))
}

macro_rules! acc_impl {
    ($t:ty, $f:path $(, $fast:item)*) => {
        impl Acc for $t {
            $($fast)*

            fn gemm_raw(g: &Gemm, a: &[Self], b: &[Self], c: &mut [Self]) -> KernelResult<()> {
                if !fits(g, a.len(), b.len(), c.len()) {
                    return Err(KernelError::invalid(format!(
                        "internal: GEMM {}x{}x{} does not fit its buffers",
                        g.m, g.k, g.n
                    )));
                }
                if g.m == 0 || g.n == 0 {
                    return Ok(());
                }
                if g.k == 0 {
                    if !g.accumulate {
                        for i in 0..g.m {
                            for j in 0..g.n {
                                c[i * g.c.0 + j * g.c.1] = 0.0;
                            }
                        }
                    }
                    return Ok(());
                }
                let beta = if g.accumulate { 1.0 } else { 0.0 };
                // SAFETY: `fits` checked above that every strided index of A, B and C
                // lies inside its slice and that all strides fit an isize; C is borrowed
                // mutably and does not alias A or B (distinct borrows).
                unsafe {
                    $f(
                        g.m,
                        g.k,
                        g.n,
                        1.0,
                        a.as_ptr(),
                        g.a.0 as isize,
                        g.a.1 as isize,
                        b.as_ptr(),
                        g.b.0 as isize,
                        g.b.1 as isize,
                        beta,
                        c.as_mut_ptr(),
                        g.c.0 as isize,
                        g.c.1 as isize,
                    )
                }
                Ok(())
            }
        }
    };
}
acc_impl!(
    f32,
    matrixmultiply::sgemm,
    fn fast_gemm(
        fast: &dyn FastGemm,
        g: &Gemm,
        a: &[f32],
        b: &[f32],
        c: &mut [f32],
        threads: usize,
    ) -> KernelResult<bool> {
        let Some((lda, ldb, ldc)) = a_bt_form(g) else {
            return Ok(false);
        };
        fast.a_bt(g.m, g.n, g.k, (a, lda), (b, ldb), (c, ldc), threads)?;
        Ok(true)
    },
    fn fast_prepare_bt(
        fast: &dyn FastGemm,
        b: &[f32],
        n: usize,
        k: usize,
        ldb: usize,
    ) -> KernelResult<Option<Box<dyn PreparedBt>>> {
        fast.prepare_bt(b, n, k, ldb)
    },
    fn fast_activate(fast: &dyn FastGemm, act: &crate::rnn::Act, xs: &mut [f32]) -> bool {
        fast.activate(act, xs)
    },
    fn fast_lstm_cell(fast: &dyn FastGemm, cell: &mut LstmCellBlock<'_, f32>) -> bool {
        fast.lstm_cell(cell)
    },
    fn fast_prepared(
        prep: &dyn PreparedBt,
        m: usize,
        a: (&[f32], usize),
        c: (&mut [f32], usize),
        threads: usize,
    ) -> KernelResult<bool> {
        prep.a_bt(m, a, c, threads)?;
        Ok(true)
    },
    fn fast_prepared_columns(
        prep: &dyn PreparedBt,
        m: usize,
        a: (&[f32], usize),
        cols: std::ops::Range<usize>,
        c: (&mut [f32], usize),
    ) -> KernelResult<bool> {
        prep.a_bt_columns(m, a, cols, c)
    }
);
acc_impl!(f64, matrixmultiply::dgemm);

/// Checked GEMM: `C ← A·B` (or `C += A·B`); errors when a stride would leave a slice.
pub fn gemm<F: Acc>(g: Gemm, a: &[F], b: &[F], c: &mut [F]) -> KernelResult<()> {
    F::gemm_raw(&g, a, b, c)
}

/// True for the four float dtypes.
pub fn is_float(dt: DType) -> bool {
    matches!(
        dt,
        DType::Float | DType::Double | DType::Float16 | DType::Bfloat16
    )
}

/// Checks that `t` is a float tensor.
pub fn want_float(t: &TensorRef<'_>, what: &str) -> KernelResult<()> {
    if is_float(t.dtype()) {
        Ok(())
    } else {
        Err(KernelError::unsupported(format!(
            "{what}: data type {} (expected a float type)",
            t.dtype()
        )))
    }
}

/// The elements of a float tensor in the compute type (exact for float16/bfloat16/float
/// into f32, and for everything into f64).
pub fn read<F: Acc>(t: &TensorRef<'_>) -> KernelResult<Vec<F>> {
    Ok(match t.dtype() {
        DType::Float => t
            .as_slice::<f32>()?
            .iter()
            .map(|&v| F::of(v as f64))
            .collect(),
        DType::Double => t.as_slice::<f64>()?.iter().map(|&v| F::of(v)).collect(),
        DType::Float16 => t
            .as_slice::<f16>()?
            .iter()
            .map(|v| F::of(v.to_f64()))
            .collect(),
        DType::Bfloat16 => t
            .as_slice::<bf16>()?
            .iter()
            .map(|v| F::of(v.to_f64()))
            .collect(),
        dt => {
            return Err(KernelError::unsupported(format!(
                "data type {dt} (expected a float type)"
            )))
        }
    })
}

/// Writes compute values as output `i` of float dtype `dt` (rounding to nearest even).
pub fn write<F: Acc>(
    ctx: &mut KernelCtx<'_>,
    i: usize,
    dt: DType,
    shape: &[usize],
    vals: &[F],
) -> KernelResult<()> {
    match dt {
        DType::Float => fill(ctx.output::<f32>(i, shape)?, vals, |v| v.f64() as f32),
        DType::Double => fill(ctx.output::<f64>(i, shape)?, vals, |v| v.f64()),
        DType::Float16 => fill(ctx.output::<f16>(i, shape)?, vals, |v| to_f16(v.f64())),
        DType::Bfloat16 => fill(ctx.output::<bf16>(i, shape)?, vals, |v| to_bf16(v.f64())),
        dt => Err(KernelError::unsupported(format!("output data type {dt}"))),
    }
}

fn fill<F: Acc, T>(out: &mut [T], vals: &[F], f: impl Fn(F) -> T) -> KernelResult<()> {
    if out.len() != vals.len() {
        return Err(KernelError::invalid("internal: output size mismatch"));
    }
    for (o, &v) in out.iter_mut().zip(vals) {
        *o = f(v);
    }
    Ok(())
}

/// f64 → f16 rounded once (directly, not through f32).
fn to_f16(v: f64) -> f16 {
    f16::from_f64(v)
}

fn to_bf16(v: f64) -> bf16 {
    bf16::from_f64(v)
}

/// A rounding function: the value as stored in `dt` then widened back (identity for the
/// compute type itself and wider types).
pub type Round<F> = fn(F) -> F;

fn round_f32<F: Acc>(v: F) -> F {
    F::of(v.f64() as f32 as f64)
}
fn round_f16<F: Acc>(v: F) -> F {
    F::of(f16::from_f64(v.f64()).to_f64())
}
fn round_bf16<F: Acc>(v: F) -> F {
    F::of(bf16::from_f64(v.f64()).to_f64())
}
fn round_none<F: Acc>(v: F) -> F {
    v
}

/// The rounding function of storage dtype `dt` in compute type `F`.
pub fn rounder<F: Acc>(dt: DType) -> Round<F> {
    let f32_compute = std::mem::size_of::<F>() == 4;
    match dt {
        DType::Float16 => round_f16::<F>,
        DType::Bfloat16 => round_bf16::<F>,
        DType::Float if !f32_compute => round_f32::<F>,
        _ => round_none::<F>,
    }
}

/// True when the ONNX reference sums values of `dt` with a rounding after each addition
/// (bfloat16 through ml_dtypes); float16 and wider accumulate in at least f32.
pub fn sums_round_each_step(dt: DType) -> bool {
    dt == DType::Bfloat16
}

/// Sums `vals` as the reference does for storage type `dt` (see [`sums_round_each_step`]).
pub fn ref_sum<F: Acc>(vals: impl Iterator<Item = F>, round: Round<F>, step: bool) -> F {
    if step {
        vals.fold(F::zero(), |a, v| round(a + v))
    } else {
        round(vals.fold(F::zero(), |a, v| a + v))
    }
}

/// Reads an integer tensor as i64 values.
pub fn read_ints(t: &TensorRef<'_>, what: &str) -> KernelResult<Vec<i64>> {
    t.to_i64_vec()
        .map_err(|e| KernelError::invalid(format!("{what}: {e}")))
}

/// Parses a `softmax_precision`-style dtype attribute value.
pub fn float_dtype_attr(name: &str, v: i64) -> KernelResult<DType> {
    let dt = match v {
        1 => DType::Float,
        10 => DType::Float16,
        11 => DType::Double,
        16 => DType::Bfloat16,
        _ => {
            return Err(KernelError::attr(
                name,
                format!("{v} is not one of 1 (FLOAT), 10 (FLOAT16), 11 (DOUBLE), 16 (BFLOAT16)"),
            ))
        }
    };
    Ok(dt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemm_checks_bounds_and_multiplies() {
        let a = [1.0f32, 2.0, 3.0, 4.0];
        let b = [5.0f32, 6.0, 7.0, 8.0];
        let mut c = [0.0f32; 4];
        let g = Gemm {
            m: 2,
            k: 2,
            n: 2,
            a: (2, 1),
            b: (1, 2), // B transposed: B[k][n] = b[n*2 + k]
            c: (2, 1),
            accumulate: false,
        };
        gemm(g, &a, &b, &mut c).unwrap();
        assert_eq!(c, [17.0, 23.0, 39.0, 53.0]);
        let mut small = [0.0f32; 3];
        assert!(gemm(g, &a, &b, &mut small).is_err());
    }

    #[test]
    fn rounding_and_sums() {
        let r = rounder::<f32>(DType::Bfloat16);
        assert_eq!(r(1.0 + 1.0 / 512.0), 1.0);
        let vals = [1.0f32, 1.0 / 256.0, 1.0 / 256.0];
        assert_eq!(ref_sum(vals.iter().copied(), r, true), 1.0);
        assert_eq!(ref_sum(vals.iter().copied(), r, false), 1.0078125);
    }
}
