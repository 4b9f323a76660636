//! The dense engine's Attention (ONNX opset 23+, what the graph's attention fusion makes):
//! the `cpu` kernel's f32 path (`rge_kernels_sequence::attention_with`: masks, causal and
//! window bias, threads over heads, and the general kernel for every other call) with each
//! head's two GEMMs on this engine's packed GEMM and the row softmax in vector code.
//!
//! Why: on the `cpu` engine the heads ran `matrixmultiply` and a scalar softmax, 33 GFLOP/s;
//! BERT-base spent 10% of its run there and BERT-tiny 35%.

use std::sync::Arc;

use rge_ir::{DataType, OpDesc};
use rge_kernels::{Kernel, KernelError, KernelInit, KernelResult};
use rge_kernels_sequence::HeadMath;
use rge_simd::{math, Scalar, Simd};

use crate::gemm::{self, AOperand, BOperand, Epilogue, GemmParams, Isa};

/// The per-head arithmetic on `isa`.
#[derive(Debug, Clone, Copy)]
pub struct DenseHeads {
    isa: Isa,
}

impl DenseHeads {
    /// On this machine's best ISA.
    pub fn new() -> Self {
        Self::on(Isa::best())
    }

    /// On `isa` (the scalar twin where this machine lacks it).
    pub fn on(isa: Isa) -> Self {
        DenseHeads {
            isa: if isa.is_available() { isa } else { Isa::Scalar },
        }
    }
}

impl Default for DenseHeads {
    fn default() -> Self {
        Self::new()
    }
}

impl DenseHeads {
    /// `c[m×n] = alpha · a[m×k] · op(b)` on one thread, every operand contiguous: `b` is
    /// `[k×n]`, or `[n×k]` read transposed when `b_trans`.
    fn product(
        &self,
        (m, n, k): (usize, usize, usize),
        alpha: f32,
        a: &[f32],
        b: &[f32],
        b_trans: bool,
        c: &mut [f32],
    ) -> KernelResult<()> {
        gemm::sgemm_isa(
            self.isa,
            &GemmParams::new(m, n, k).alpha(alpha),
            AOperand::Raw {
                data: a,
                ld: k,
                trans: false,
            },
            BOperand::Raw {
                data: b,
                ld: if b_trans { k } else { n },
                trans: b_trans,
            },
            c,
            n,
            &Epilogue::NONE,
            1,
        )
        .map_err(|e| KernelError::invalid(format!("attention: {e}")))
    }
}

impl HeadMath for DenseHeads {
    fn scores(
        &self,
        lq: usize,
        lk: usize,
        d: usize,
        scale: f32,
        q: &[f32],
        k: &[f32],
        p: &mut [f32],
    ) -> KernelResult<()> {
        self.product((lq, lk, d), scale, q, k, true, p)
    }

    fn softmax(&self, row: &mut [f32], bias: Option<&[f32]>) -> KernelResult<()> {
        if let Some(b) = bias {
            rge_kernels_sequence::check_bias(row, b)?;
        }
        softmax_row(self.isa, row, bias);
        Ok(())
    }

    fn weighted(
        &self,
        lq: usize,
        lk: usize,
        dv: usize,
        p: &[f32],
        v: &[f32],
        y: &mut [f32],
    ) -> KernelResult<()> {
        self.product((lq, dv, lk), 1.0, p, v, false, y)
    }
}

/// Builds the Attention kernel.
pub fn create_attention(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    rge_kernels_sequence::attention_with(init, Arc::new(DenseHeads::new()))
}

/// The Attention the dense engine runs: its f32 path's case, 4-D Q, K, V with the same heads,
/// no KV cache, only output Y, no softcap, an f32 softmax. The rest stays on `cpu`.
pub fn check_attention(op: &OpDesc) -> Result<(), String> {
    let present = |d: &rge_ir::TensorDesc| d.dtype() != DataType::Undefined;
    if op.inputs().iter().skip(4).any(present) {
        return Err("a KV cache (past_key, past_value or nonpad_kv_seqlen) runs on cpu".into());
    }
    if op.outputs().iter().skip(1).any(present) {
        return Err("present_key, present_value or qk_matmul_output run on cpu".into());
    }
    let mut heads = None;
    for (i, name) in ["Q", "K", "V"].iter().enumerate() {
        let dims = op
            .input(i)
            .map(|d| d.shape().dims().to_vec())
            .ok_or_else(|| format!("no {name}"))?;
        if dims.len() != 4 {
            return Err(format!(
                "{name} has rank {}; dense runs 4-D attention",
                dims.len()
            ));
        }
        match heads {
            Some(h) if h != dims[1] && h >= 0 && dims[1] >= 0 => {
                return Err("grouped query heads run on cpu".into())
            }
            _ => heads = Some(dims[1]),
        }
    }
    if op
        .attrs()
        .get_float("softcap")
        .ok()
        .flatten()
        .unwrap_or(0.0)
        != 0.0
    {
        return Err("softcap runs on cpu".into());
    }
    match op.attrs().get_int("softmax_precision").ok().flatten() {
        None | Some(1) => Ok(()),
        Some(p) => Err(format!("softmax_precision {p} runs on cpu")),
    }
}

/// `row ← softmax(row + bias)` on `isa` (see [`HeadMath::softmax`]); `bias`, when given, is at
/// least as long as `row`.
pub(crate) fn softmax_row(isa: Isa, row: &mut [f32], bias: Option<&[f32]>) {
    // SAFETY (each arm): the ISA is available (checked in the guard); the loop reads `bias`
    // only within `row.len()`, which the caller guarantees it covers.
    unsafe {
        match isa {
            #[cfg(target_arch = "x86_64")]
            Isa::Avx512 if isa.is_available() => softmax_avx512(row, bias),
            #[cfg(target_arch = "x86_64")]
            Isa::Avx2 if isa.is_available() => softmax_avx2(row, bias),
            _ => softmax_simd(Scalar, row, bias),
        }
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn softmax_avx512(row: &mut [f32], bias: Option<&[f32]>) {
    // SAFETY: reached only after the ISA check, with `softmax_row`'s bounds.
    unsafe { softmax_simd(rge_simd::Avx512::new_unchecked(), row, bias) }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn softmax_avx2(row: &mut [f32], bias: Option<&[f32]>) {
    // SAFETY: reached only after the ISA check, with `softmax_row`'s bounds.
    unsafe { softmax_simd(rge_simd::Avx2::new_unchecked(), row, bias) }
}

/// Three passes over a row that sits in L1: add the bias and take the max; store `e^(x − max)`
/// and sum it; scale by the sum's inverse. A NaN anywhere makes the sum NaN and the row NaN; a
/// row of −∞ gives zeros (the `cpu` kernel's rules). Terms below `e^-87` are 0, as in the
/// `cpu` kernel's scalar exp ([`math::exp_normal`]: masked scores would otherwise make denormals).
///
/// # Safety
/// `bias`, when given, holds at least `row.len()` values.
#[inline(always)]
unsafe fn softmax_simd<S: Simd>(s: S, row: &mut [f32], bias: Option<&[f32]>) {
    let n = row.len();
    let p = row.as_mut_ptr();
    let l = S::LANES;
    let mut mx = s.splat(f32::NEG_INFINITY);
    let mut i = 0;
    while i < n {
        let w = l.min(n - i);
        // SAFETY: lanes i..i + w lie in `row` and, by the contract, in `bias`.
        unsafe {
            let mut x = s.load_n(p.add(i), w, f32::NEG_INFINITY);
            if let Some(b) = bias {
                x = s.add(x, s.load_n(b.as_ptr().add(i), w, 0.0));
                s.store_n(p.add(i), x, w);
            }
            mx = s.max(mx, x);
        }
        i += l;
    }
    let m = s.hmax(mx);
    let shift = s.splat(if m == f32::NEG_INFINITY { 0.0 } else { m });
    let mut acc = s.splat(0.0);
    let mut i = 0;
    while i < n {
        let w = l.min(n - i);
        // SAFETY: as above.
        unsafe {
            let x = s.load_n(p.add(i), w, f32::NEG_INFINITY);
            let e = math::exp_normal(s, s.sub(x, shift));
            s.store_n(p.add(i), e, w);
            acc = s.add(acc, e);
        }
        i += l;
    }
    let sum = s.hsum(acc);
    if sum.is_nan() {
        row.fill(f32::NAN);
        return;
    }
    let inv = s.splat(if sum == 0.0 { 1.0 } else { 1.0 / sum });
    let mut i = 0;
    while i < n {
        let w = l.min(n - i);
        // SAFETY: as above.
        unsafe {
            let e = s.load_n(p.add(i), w, 0.0);
            s.store_n(p.add(i), s.mul(e, inv), w);
        }
        i += l;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_ir::{Shape, TensorDesc};

    fn op(q: &[i64], k: &[i64], extra_inputs: usize, outputs: usize) -> OpDesc {
        let f = |d: &[i64]| TensorDesc::with_shape_dtype(Shape::new(d.to_vec()), DataType::Float);
        let mut op = OpDesc::new("a", "Attention");
        op.add_input("Q", f(q)).unwrap();
        op.add_input("K", f(k)).unwrap();
        op.add_input("V", f(k)).unwrap();
        op.add_input("", TensorDesc::default()).unwrap();
        for i in 0..extra_inputs {
            op.add_input(&format!("past{i}"), f(k)).unwrap();
        }
        for i in 0..outputs {
            op.add_output(&format!("y{i}"), f(q)).unwrap();
        }
        op
    }

    #[test]
    fn dense_takes_the_fast_paths_case_and_leaves_the_rest_to_cpu() {
        let (q, k) = ([1, 12, 128, 64], [1, 12, 96, 64]);
        assert_eq!(check_attention(&op(&q, &k, 0, 1)), Ok(()));
        let why = |o: &OpDesc| check_attention(o).unwrap_err();
        assert!(why(&op(&q, &k, 2, 1)).contains("KV cache"));
        assert!(why(&op(&q, &k, 0, 3)).contains("present_key"));
        assert!(why(&op(&[1, 128, 768], &[1, 96, 768], 0, 1)).contains("rank 3"));
        assert!(why(&op(&q, &[1, 4, 96, 64], 0, 1)).contains("grouped"));
        let mut capped = op(&q, &k, 0, 1);
        capped.attrs_mut().set("softcap", 30.0f32);
        assert!(why(&capped).contains("softcap"));
        let mut wide = op(&q, &k, 0, 1);
        wide.attrs_mut().set("softmax_precision", 11i64);
        assert!(why(&wide).contains("softmax_precision"));
    }

    /// The f64 definition of softmax(row + bias), with the kernel's NaN and −∞ rules.
    fn reference(row: &[f32], bias: Option<&[f32]>) -> Vec<f64> {
        let x: Vec<f64> = row
            .iter()
            .enumerate()
            .map(|(i, &v)| v as f64 + bias.map_or(0.0, |b| b[i] as f64))
            .collect();
        if x.iter().any(|v| v.is_nan()) {
            return vec![f64::NAN; x.len()];
        }
        let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let shift = if m == f64::NEG_INFINITY { 0.0 } else { m };
        let e: Vec<f64> = x.iter().map(|v| (v - shift).exp()).collect();
        if e.iter().any(|v| v.is_nan()) {
            return vec![f64::NAN; x.len()];
        }
        let sum: f64 = e.iter().sum();
        let inv = if sum == 0.0 { 1.0 } else { 1.0 / sum };
        e.iter().map(|v| v * inv).collect()
    }

    fn check(row: &[f32], bias: Option<&[f32]>) {
        let want = reference(row, bias);
        for isa in Isa::available() {
            let mut got = row.to_vec();
            softmax_row(isa, &mut got, bias);
            for (j, (&g, &w)) in got.iter().zip(&want).enumerate() {
                if w.is_nan() {
                    assert!(g.is_nan(), "{isa:?} lane {j}: {g}, want NaN");
                } else {
                    assert!(
                        (g as f64 - w).abs() <= 1e-5 * w.abs() + 1e-37,
                        "{isa:?} n {} lane {j}: {g}, want {w}",
                        row.len()
                    );
                }
            }
        }
    }

    #[test]
    fn every_isa_matches_the_definition() {
        for n in [1, 2, 7, 8, 15, 16, 17, 33, 128, 200] {
            let row: Vec<f32> = (0..n)
                .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.7)
                .collect();
            let bias: Vec<f32> = (0..n)
                .map(|i| {
                    if i % 5 == 3 {
                        f32::NEG_INFINITY
                    } else {
                        (i % 3) as f32
                    }
                })
                .collect();
            check(&row, None);
            check(&row, Some(&bias));
        }
    }

    #[test]
    fn a_short_bias_row_is_an_error() {
        let mut row = [1.0f32; 8];
        let err = DenseHeads::new()
            .softmax(&mut row, Some(&[0.0; 5]))
            .unwrap_err();
        assert!(err.to_string().contains("5 values for 8 scores"), "{err}");
        assert!(DenseHeads::new().softmax(&mut row, Some(&[0.0; 8])).is_ok());
    }

    #[test]
    fn nan_infinity_and_empty_rows_follow_the_rules() {
        let mut with_nan: Vec<f32> = (0..40).map(|i| i as f32 * 0.1).collect();
        with_nan[37] = f32::NAN;
        check(&with_nan, None);
        let mut nan_bias = vec![0.0f32; 40];
        nan_bias[3] = f32::NAN;
        check(&with_nan[..20], Some(&nan_bias));
        let mut inf = vec![1.0f32; 19];
        inf[18] = f32::INFINITY;
        check(&inf, None);
        check(&[f32::NEG_INFINITY; 21], None);
        check(&[], None);
        check(&[1e30, -1e30, 88.0, -88.0], None);
    }
}
