//! MatMul (numpy semantics: N-D batched with broadcasting, 1-D operands promoted), Gemm,
//! MatMulInteger and QLinearMatMul.

use rayon::prelude::*;
use rge_kernels::shape_util::{broadcast_shapes, broadcast_strides, for_each_broadcast};
use rge_kernels::{
    bf16, f16, DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef,
};

use crate::blas::{gemm, gemm_par, Gemm as GemmElem, Mat};
use crate::util::Real;

/// The batched-matmul layout of two operands.
pub(crate) struct MatMulPlan {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub out_shape: Vec<usize>,
    /// Element offsets of each output batch's A and B matrices.
    pub a_offs: Vec<usize>,
    pub b_offs: Vec<usize>,
}

impl MatMulPlan {
    pub(crate) fn new(a: &[usize], b: &[usize]) -> KernelResult<Self> {
        if a.is_empty() || b.is_empty() {
            return Err(KernelError::invalid("MatMul operands must have rank ≥ 1"));
        }
        let (a2, a_vec) = if a.len() == 1 {
            (vec![1, a[0]], true)
        } else {
            (a.to_vec(), false)
        };
        let (b2, b_vec) = if b.len() == 1 {
            (vec![b[0], 1], true)
        } else {
            (b.to_vec(), false)
        };
        let (m, k) = (a2[a2.len() - 2], a2[a2.len() - 1]);
        let (k2, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
        if k != k2 {
            return Err(KernelError::invalid(format!(
                "MatMul: shapes {a:?} and {b:?} do not agree on the inner dimension"
            )));
        }
        let ab = &a2[..a2.len() - 2];
        let bb = &b2[..b2.len() - 2];
        let batch = broadcast_shapes(&[ab, bb])?;
        let mut out_shape = batch.to_vec();
        if !a_vec {
            out_shape.push(m);
        }
        if !b_vec {
            out_shape.push(n);
        }
        let sa = broadcast_strides(ab, &batch);
        let sb = broadcast_strides(bb, &batch);
        let count: usize = batch.iter().product();
        let mut a_offs = Vec::with_capacity(count);
        let mut b_offs = Vec::with_capacity(count);
        for_each_broadcast(&batch, &[sa, sb], |_, o| {
            a_offs.push(o[0] * m * k);
            b_offs.push(o[1] * k * n);
        });
        if batch.is_empty() {
            a_offs.push(0);
            b_offs.push(0);
        }
        Ok(MatMulPlan {
            m,
            k,
            n,
            out_shape,
            a_offs,
            b_offs,
        })
    }

    /// Runs the plan over typed slices into `out` (batch × m × n, contiguous).
    pub(crate) fn run<T: GemmElem>(
        &self,
        a: &[T],
        b: &[T],
        out: &mut [T],
        threads: usize,
    ) -> KernelResult<()> {
        let (m, k, n) = (self.m, self.k, self.n);
        let mn = m * n;
        if mn == 0 {
            return Ok(());
        }
        let batches = self.a_offs.len();
        // A contiguous batched A against one shared B: one tall GEMM.
        let b_shared = self.b_offs.iter().all(|&o| o == 0);
        let a_dense = self.a_offs.iter().enumerate().all(|(i, &o)| o == i * m * k);
        if batches > 1 && b_shared && a_dense {
            return gemm_par(
                batches * m,
                k,
                n,
                T::one(),
                a,
                Mat::row_major(k),
                b,
                Mat::row_major(n),
                T::zero(),
                out,
                threads,
            );
        }
        let one = |i: usize, c: &mut [T]| -> KernelResult<()> {
            let (ao, bo) = (self.a_offs[i], self.b_offs[i]);
            let a = a
                .get(ao..)
                .ok_or_else(|| KernelError::invalid("MatMul: A too small"))?;
            let b = b
                .get(bo..)
                .ok_or_else(|| KernelError::invalid("MatMul: B too small"))?;
            gemm(
                m,
                k,
                n,
                T::one(),
                a,
                Mat::row_major(k),
                b,
                Mat::row_major(n),
                T::zero(),
                c,
                Mat::row_major(n),
            )
        };
        if batches == 1 {
            return gemm_par(
                m,
                k,
                n,
                T::one(),
                a,
                Mat::row_major(k),
                b,
                Mat::row_major(n),
                T::zero(),
                out,
                threads,
            );
        }
        if threads > 1 && batches * mn * k >= (1 << 18) {
            out.par_chunks_mut(mn)
                .enumerate()
                .try_for_each(|(i, c)| one(i, c))
        } else {
            out.chunks_mut(mn)
                .enumerate()
                .try_for_each(|(i, c)| one(i, c))
        }
    }
}

struct MatMul;

fn matmul_typed<T: GemmElem>(
    ctx: &mut KernelCtx<'_>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    plan: &MatMulPlan,
) -> KernelResult<()> {
    let out = ctx.output::<T>(0, &plan.out_shape)?;
    plan.run(a.as_slice::<T>()?, b.as_slice::<T>()?, out, ctx.threads())
}

fn matmul_half<T: Real>(
    ctx: &mut KernelCtx<'_>,
    a: TensorRef<'_>,
    b: TensorRef<'_>,
    plan: &MatMulPlan,
) -> KernelResult<()> {
    let af: Vec<f32> = a.as_slice::<T>()?.iter().map(|v| v.to_f32()).collect();
    let bf: Vec<f32> = b.as_slice::<T>()?.iter().map(|v| v.to_f32()).collect();
    let out = ctx.output::<T>(0, &plan.out_shape)?;
    let mut tmp = vec![0f32; out.len()];
    plan.run(&af, &bf, &mut tmp, ctx.threads())?;
    out.iter_mut()
        .zip(&tmp)
        .for_each(|(o, &v)| *o = T::from_f32(v));
    Ok(())
}

impl Kernel for MatMul {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        if a.dtype() != b.dtype() {
            return Err(KernelError::invalid(format!(
                "MatMul: {} and {} operands",
                a.dtype(),
                b.dtype()
            )));
        }
        let plan = MatMulPlan::new(a.shape(), b.shape())?;
        match a.dtype() {
            DType::Float => matmul_typed::<f32>(ctx, a, b, &plan),
            DType::Double => matmul_typed::<f64>(ctx, a, b, &plan),
            DType::Float16 => matmul_half::<f16>(ctx, a, b, &plan),
            DType::Bfloat16 => matmul_half::<bf16>(ctx, a, b, &plan),
            dt => rge_kernels::dispatch_int!(dt, T => matmul_typed::<T>(ctx, a, b, &plan)),
        }
    }
}

pub(crate) fn create_matmul(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(MatMul))
}

struct Gemm {
    alpha: f32,
    beta: f32,
    trans_a: bool,
    trans_b: bool,
}

pub(crate) fn create_gemm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Gemm {
        alpha: init.float_or("alpha", 1.0)?,
        beta: init.float_or("beta", 1.0)?,
        trans_a: init.int_or("transA", 0)? != 0,
        trans_b: init.int_or("transB", 0)? != 0,
    }))
}

impl Gemm {
    fn dims(&self, a: &[usize], b: &[usize]) -> KernelResult<(usize, usize, usize, Mat, Mat)> {
        if a.len() != 2 || b.len() != 2 {
            return Err(KernelError::invalid(format!(
                "Gemm needs 2-D A and B, got {a:?} and {b:?}"
            )));
        }
        let (m, k) = if self.trans_a {
            (a[1], a[0])
        } else {
            (a[0], a[1])
        };
        let (k2, n) = if self.trans_b {
            (b[1], b[0])
        } else {
            (b[0], b[1])
        };
        if k != k2 {
            return Err(KernelError::invalid(format!(
                "Gemm: A {a:?} and B {b:?} do not agree on K"
            )));
        }
        // A stored (K, M) when transposed: element (i, p) at p*M + i; B likewise.
        let av = if self.trans_a {
            Mat::col_major(m)
        } else {
            Mat::row_major(k)
        };
        let bv = if self.trans_b {
            Mat::col_major(k)
        } else {
            Mat::row_major(n)
        };
        Ok((m, k, n, av, bv))
    }

    /// Fills `out` (m×n) with C broadcast (unidirectionally) to (m, n).
    fn fill_c<T: Copy>(
        c: &[T],
        cshape: &[usize],
        m: usize,
        n: usize,
        out: &mut [T],
    ) -> KernelResult<()> {
        if cshape.len() > 2 {
            return Err(KernelError::invalid(format!(
                "Gemm: C of rank {} ",
                cshape.len()
            )));
        }
        let mut full = vec![1usize; 2 - cshape.len()];
        full.extend_from_slice(cshape);
        let (cm, cn) = (full[0], full[1]);
        if !(cm == 1 || cm == m) || !(cn == 1 || cn == n) {
            return Err(KernelError::invalid(format!(
                "Gemm: C {cshape:?} does not broadcast to [{m}, {n}]"
            )));
        }
        for i in 0..m {
            for j in 0..n {
                let ci = if cm == 1 { 0 } else { i } * cn + if cn == 1 { 0 } else { j };
                out[i * n + j] = c[ci];
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn run<T: GemmElem>(
        &self,
        a: &[T],
        b: &[T],
        c: Option<(&[T], &[usize])>,
        dims: (usize, usize, usize, Mat, Mat),
        alpha: T,
        beta: T,
        out: &mut [T],
        threads: usize,
    ) -> KernelResult<()> {
        let (m, k, n, av, bv) = dims;
        let beta = match c {
            Some((cd, cs)) => {
                Self::fill_c(cd, cs, m, n, out)?;
                beta
            }
            None => T::zero(),
        };
        gemm_par(m, k, n, alpha, a, av, b, bv, beta, out, threads)
    }
}

impl Kernel for Gemm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        let c = ctx.opt_input(2)?;
        let dims = self.dims(a.shape(), b.shape())?;
        let shape = [dims.0, dims.2];
        let threads = ctx.threads();
        let dt = a.dtype();
        if b.dtype() != dt || c.is_some_and(|c| c.dtype() != dt) {
            return Err(KernelError::invalid("Gemm: operands of different types"));
        }
        match dt {
            DType::Float => {
                let out = ctx.output::<f32>(0, &shape)?;
                let c = c
                    .map(|c| Ok::<_, KernelError>((c.as_slice::<f32>()?, c.shape())))
                    .transpose()?;
                self.run(
                    a.as_slice()?,
                    b.as_slice()?,
                    c,
                    dims,
                    self.alpha,
                    self.beta,
                    out,
                    threads,
                )
            }
            DType::Double => {
                let out = ctx.output::<f64>(0, &shape)?;
                let c = c
                    .map(|c| Ok::<_, KernelError>((c.as_slice::<f64>()?, c.shape())))
                    .transpose()?;
                self.run(
                    a.as_slice()?,
                    b.as_slice()?,
                    c,
                    dims,
                    self.alpha as f64,
                    self.beta as f64,
                    out,
                    threads,
                )
            }
            DType::Float16 | DType::Bfloat16 => {
                let af = crate::util::to_f32_vec(&a)?;
                let bf = crate::util::to_f32_vec(&b)?;
                let cf = c.map(|c| crate::util::to_f32_vec(&c)).transpose()?;
                let mut tmp = vec![0f32; dims.0 * dims.2];
                let cc = cf.as_deref().zip(c.map(|c| c.shape()));
                self.run(&af, &bf, cc, dims, self.alpha, self.beta, &mut tmp, threads)?;
                rge_kernels::dispatch_types!(dt, T => {
                    let out = ctx.output::<T>(0, &shape)?;
                    out.iter_mut().zip(&tmp).for_each(|(o, &v)| *o = T::from_f32(v));
                    Ok(())
                }; Float16: f16, Bfloat16: bf16)
            }
            dt => rge_kernels::dispatch_types!(dt, T => {
                let out = ctx.output::<T>(0, &shape)?;
                let c = c.map(|c| Ok::<_, KernelError>((c.as_slice::<T>()?, c.shape()))).transpose()?;
                self.run(a.as_slice()?, b.as_slice()?, c, dims, self.alpha as T, self.beta as T, out, threads)
            }; Int32: i32, Int64: i64, Uint32: u32, Uint64: u64),
        }
    }
}

/// Reads an 8-bit (or any integer) tensor as i32 values.
pub(crate) fn int_values(t: &TensorRef<'_>) -> KernelResult<Vec<i32>> {
    Ok(match t.dtype() {
        DType::Uint8 => t.as_slice::<u8>()?.iter().map(|&v| v as i32).collect(),
        DType::Int8 => t.as_slice::<i8>()?.iter().map(|&v| v as i32).collect(),
        DType::Int16 => t.as_slice::<i16>()?.iter().map(|&v| v as i32).collect(),
        DType::Uint16 => t.as_slice::<u16>()?.iter().map(|&v| v as i32).collect(),
        DType::Int32 => t.as_slice::<i32>()?.to_vec(),
        dt => {
            return Err(KernelError::unsupported(format!(
                "quantized data type {dt}"
            )))
        }
    })
}

/// `x - zp` as f64 for a quantized matrix operand of `shape` (rank ≥ 1): the zero point is a
/// scalar, one value per row (`rows`: A's M) or per column (B's N), or per batch and row/col.
fn dequant_zero(
    x: &TensorRef<'_>,
    zp: Option<TensorRef<'_>>,
    per_row: bool,
) -> KernelResult<Vec<f64>> {
    let xv = int_values(x)?;
    let Some(zp) = zp else {
        return Ok(xv.into_iter().map(|v| v as f64).collect());
    };
    let z = int_values(&zp)?;
    let shape = x.shape();
    let (rows, cols) = match shape.len() {
        0 => (1, 1),
        1 => {
            if per_row {
                (1, shape[0])
            } else {
                (shape[0], 1)
            }
        }
        r => (shape[r - 2], shape[r - 1]),
    };
    let mat = (rows * cols).max(1);
    let per = if per_row { rows } else { cols };
    Ok(xv
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let zi = if z.len() == 1 {
                z[0]
            } else {
                let within = i % mat;
                let line = if per_row {
                    within / cols.max(1)
                } else {
                    within % cols.max(1)
                };
                let batch = i / mat;
                *z.get((batch * per + line) % z.len()).unwrap_or(&0)
            };
            (v - zi) as f64
        })
        .collect())
}

struct MatMulInteger;

impl Kernel for MatMulInteger {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        let plan = MatMulPlan::new(a.shape(), b.shape())?;
        let af = dequant_zero(&a, ctx.opt_input(2)?, true)?;
        let bf = dequant_zero(&b, ctx.opt_input(3)?, false)?;
        let mut tmp = vec![0f64; plan.out_shape.iter().product()];
        plan.run(&af, &bf, &mut tmp, ctx.threads())?;
        let out = ctx.output::<i32>(0, &plan.out_shape)?;
        out.iter_mut()
            .zip(&tmp)
            .for_each(|(o, &v)| *o = v as i64 as i32);
        Ok(())
    }
}

pub(crate) fn create_matmul_integer(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(MatMulInteger))
}

/// The requantization multiplier `a_scale·b_scale / y_scale`, computed in the scales' own
/// precision as the reference does (each product and quotient rounded to the scale type).
/// `a` may hold one value per row (`i`), `b` and `y` one per column (`j`).
pub(crate) struct ScaleMult {
    a: Vec<f64>,
    b: Vec<f64>,
    y: Vec<f64>,
    round: fn(f64) -> f64,
}

impl ScaleMult {
    pub(crate) fn new(
        a: &TensorRef<'_>,
        b: &TensorRef<'_>,
        y: &TensorRef<'_>,
    ) -> KernelResult<Self> {
        if a.is_empty() || b.is_empty() || y.is_empty() {
            return Err(KernelError::invalid("empty scale tensor"));
        }
        let round: fn(f64) -> f64 = if a.dtype() != b.dtype() || a.dtype() != y.dtype() {
            |v| v
        } else {
            match a.dtype() {
                DType::Float => |v| v as f32 as f64,
                DType::Float16 => |v| f16::from_f64(v).to_f64(),
                DType::Bfloat16 => |v| bf16::from_f64(v).to_f64(),
                _ => |v| v,
            }
        };
        Ok(ScaleMult {
            a: a.to_f64_vec()?,
            b: b.to_f64_vec()?,
            y: y.to_f64_vec()?,
            round,
        })
    }

    /// Checks the vector lengths against `rows` and `cols`.
    pub(crate) fn check(&self, rows: usize, cols: usize) -> KernelResult<()> {
        let ok = |v: &[f64], n: usize| v.len() == 1 || v.len() == n;
        if ok(&self.a, rows) && ok(&self.b, cols) && ok(&self.y, cols) {
            Ok(())
        } else {
            Err(KernelError::invalid(
                "scale vectors do not match the rows/columns they quantize",
            ))
        }
    }

    pub(crate) fn at(&self, i: usize, j: usize) -> f64 {
        let pick = |v: &[f64], k: usize| if v.len() == 1 { v[0] } else { v[k] };
        let p = (self.round)(pick(&self.a, i) * pick(&self.b, j));
        (self.round)(p / pick(&self.y, j))
    }
}

/// Writes `v` rounded half to even, saturated to the output's 8-bit type.
pub(crate) fn requantize(
    ctx: &mut KernelCtx<'_>,
    dt: DType,
    shape: &[usize],
    vals: &[f64],
) -> KernelResult<()> {
    match dt {
        DType::Uint8 => {
            let out = ctx.output::<u8>(0, shape)?;
            out.iter_mut()
                .zip(vals)
                .for_each(|(o, &v)| *o = v.round_ties_even().clamp(0.0, 255.0) as u8);
        }
        DType::Int8 => {
            let out = ctx.output::<i8>(0, shape)?;
            out.iter_mut()
                .zip(vals)
                .for_each(|(o, &v)| *o = v.round_ties_even().clamp(-128.0, 127.0) as i8);
        }
        dt => {
            return Err(KernelError::unsupported(format!(
                "quantized output type {dt}"
            )))
        }
    }
    Ok(())
}

struct QLinearMatMul;

impl Kernel for QLinearMatMul {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(3)?;
        let plan = MatMulPlan::new(a.shape(), b.shape())?;
        let af = dequant_zero(&a, ctx.opt_input(2)?, true)?;
        let bf = dequant_zero(&b, ctx.opt_input(5)?, false)?;
        let mult = ScaleMult::new(&ctx.input(1)?, &ctx.input(4)?, &ctx.input(6)?)?;
        mult.check(plan.m, plan.n)?;
        let yzp = ctx.opt_input(7)?;
        let (out_dt, zp) = match yzp {
            Some(z) => (z.dtype(), int_values(&z)?),
            None => (a.dtype(), vec![0]),
        };
        if zp.is_empty() {
            return Err(KernelError::invalid("QLinearMatMul: empty y_zero_point"));
        }
        let mut acc = vec![0f64; plan.out_shape.iter().product()];
        plan.run(&af, &bf, &mut acc, ctx.threads())?;
        if zp.len() != 1 && zp.len() != plan.n {
            return Err(KernelError::invalid(
                "QLinearMatMul: y_zero_point must be a scalar or one per column",
            ));
        }
        let (m, n) = (plan.m.max(1), plan.n.max(1));
        for (i, v) in acc.iter_mut().enumerate() {
            let (row, col) = ((i / n) % m, i % n);
            let z = zp[if zp.len() == 1 { 0 } else { col }];
            *v = *v * mult.at(row, col) + z as f64;
        }
        requantize(ctx, out_dt, &plan.out_shape, &acc)
    }
}

pub(crate) fn create_qlinear_matmul(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(QLinearMatMul))
}
