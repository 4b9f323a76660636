//! The Attention kernel's f32 path for the case graph fusion makes (docs/optimizations.md):
//! 4-D f32 Q, K, V with the same heads, no cache, no softcap, only output 0. Per head, in
//! parallel over heads: `S = scale·Q·Kᵀ` (one GEMM reading Q and K in place), the bias row
//! (mask, causal, window) added, a softmax per row, `Y = P·V` (one GEMM written in place).
//! The general kernel ([`crate::attention`]) rounds at every step as the ONNX reference does
//! and copies its inputs into head layout; this path gives the same values in f32 to within
//! summation order (checked against it by property tests below).
//!
//! The three per-head steps are a [`HeadMath`]: the `cpu` engine's is [`PortableHeads`]
//! (the `matrixmultiply` crate and scalar code); an engine with faster GEMMs and vector code
//! (the `dense` engine) passes its own to [`crate::attention_with`] and keeps the masks, the
//! threading and the general kernel's fallback of this crate.

use std::sync::{Arc, Mutex};

use rge_kernels::parts::for_each_chunk_mut;
use rge_kernels::{DType, KernelCtx, KernelError, KernelResult};

use crate::attention_bias::{BiasSpec, Mask};
use crate::common::{rounder, Round};

/// The per-head arithmetic of the f32 path. Matrices are row-major and contiguous.
pub trait HeadMath: Send + Sync + std::fmt::Debug {
    /// `p = scale · q · kᵀ`: `q` is lq×d, `k` is lk×d, `p` is lq×lk.
    #[allow(clippy::too_many_arguments)]
    fn scores(
        &self,
        lq: usize,
        lk: usize,
        d: usize,
        scale: f32,
        q: &[f32],
        k: &[f32],
        p: &mut [f32],
    ) -> KernelResult<()>;
    /// The softmax of `row + bias` (of `row` when `bias` is None) in place. A row holding a
    /// NaN becomes all NaN; a row of −∞ becomes zeros. A bias shorter than the row is an
    /// error.
    fn softmax(&self, row: &mut [f32], bias: Option<&[f32]>) -> KernelResult<()>;
    /// `y = p · v`: `p` is lq×lk, `v` is lk×dv, `y` is lq×dv.
    #[allow(clippy::too_many_arguments)]
    fn weighted(
        &self,
        lq: usize,
        lk: usize,
        dv: usize,
        p: &[f32],
        v: &[f32],
        y: &mut [f32],
    ) -> KernelResult<()>;
}

/// The `cpu` engine's [`HeadMath`]: `matrixmultiply`'s GEMM and a scalar softmax.
#[derive(Debug, Default, Clone, Copy)]
pub struct PortableHeads;

impl HeadMath for PortableHeads {
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
        if q.len() < lq * d || k.len() < lk * d || p.len() < lq * lk {
            return Err(KernelError::invalid("attention scores: operands too short"));
        }
        // SAFETY: q is lq×d row-major, k is lk×d row-major (read as its transpose, d×lk,
        // with strides (1, d)), p is lq×lk row-major: every index the GEMM touches lies inside
        // its slice (checked above), and p does not alias q or k (a unique borrow).
        unsafe {
            matrixmultiply::sgemm(
                lq,
                d,
                lk,
                scale,
                q.as_ptr(),
                d as isize,
                1,
                k.as_ptr(),
                1,
                d as isize,
                0.0,
                p.as_mut_ptr(),
                lk as isize,
                1,
            );
        }
        Ok(())
    }

    fn softmax(&self, row: &mut [f32], bias: Option<&[f32]>) -> KernelResult<()> {
        if let Some(b) = bias {
            check_bias(row, b)?;
            for (x, &bv) in row.iter_mut().zip(b) {
                *x += bv;
            }
        }
        softmax_row(row, false);
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
        if p.len() < lq * lk || v.len() < lk * dv || y.len() < lq * dv {
            return Err(KernelError::invalid(
                "attention weighted sum: operands too short",
            ));
        }
        // SAFETY: p is lq×lk, v is lk×dv, y is lq×dv, all row-major and inside their slices
        // (checked above); y does not alias p or v (a unique borrow).
        unsafe {
            matrixmultiply::sgemm(
                lq,
                lk,
                dv,
                1.0,
                p.as_ptr(),
                lk as isize,
                1,
                v.as_ptr(),
                dv as isize,
                1,
                0.0,
                y.as_mut_ptr(),
                dv as isize,
                1,
            );
        }
        Ok(())
    }
}

/// A bias row must cover its score row.
pub fn check_bias(row: &[f32], bias: &[f32]) -> KernelResult<()> {
    if bias.len() < row.len() {
        return Err(KernelError::invalid(format!(
            "attention: a bias row of {} values for {} scores",
            bias.len(),
            row.len()
        )));
    }
    Ok(())
}

/// The `cpu` engine's heads, shared.
pub(crate) fn portable() -> Arc<dyn HeadMath> {
    Arc::new(PortableHeads)
}

/// What the fast path needs of the op's attributes.
#[derive(Clone, Copy, Debug)]
pub struct FastSpec {
    pub scale: Option<f32>,
    pub is_causal: bool,
    pub left: i64,
    pub right: i64,
}

/// The sizes of one call: batch·heads, query length, key length, head dims.
#[derive(Clone, Copy, Debug)]
struct Sizes {
    batch: usize,
    heads: usize,
    lq: usize,
    lk: usize,
    dq: usize,
    dv: usize,
}

/// Whether the call is one the fast path takes (see the module docs).
pub fn applies(ctx: &KernelCtx<'_>, softcap: f32, softmax_f32: bool) -> bool {
    let f32_4d = |i: usize| {
        ctx.input(i)
            .is_ok_and(|t| t.dtype() == DType::Float && t.shape().len() == 4)
    };
    let absent = |i: usize| ctx.opt_input(i).is_ok_and(|t| t.is_none());
    let only_y = (1..ctx.output_count()).all(|i| !ctx.output_used(i));
    let mask_ok = ctx
        .opt_input(3)
        .is_ok_and(|m| m.is_none_or(|m| matches!(m.dtype(), DType::Float | DType::Bool)));
    softcap == 0.0
        && softmax_f32
        && only_y
        && mask_ok
        && (0..3).all(f32_4d)
        && (4..7).all(absent)
        && sizes(ctx).is_some()
}

fn sizes(ctx: &KernelCtx<'_>) -> Option<Sizes> {
    let (q, k, v) = (ctx.input(0).ok()?, ctx.input(1).ok()?, ctx.input(2).ok()?);
    let (q, k, v) = (q.shape(), k.shape(), v.shape());
    let same = q[0] == k[0] && k[0] == v[0] && q[1] == k[1] && k[1] == v[1];
    (same && q[3] == k[3] && k[2] == v[2]).then_some(Sizes {
        batch: q[0],
        heads: q[1],
        lq: q[2],
        lk: k[2],
        dq: q[3],
        dv: v[3],
    })
}

/// Runs the fast path with `math` (call only when [`applies`]).
pub fn run(spec: FastSpec, ctx: &mut KernelCtx<'_>, math: &dyn HeadMath) -> KernelResult<()> {
    let s = sizes(ctx).ok_or_else(|| rge_kernels::KernelError::invalid("Q, K, V shapes"))?;
    let q = ctx.input(0)?;
    let k = ctx.input(1)?;
    let v = ctx.input(2)?;
    let (q, k, v) = (
        q.as_slice::<f32>()?,
        k.as_slice::<f32>()?,
        v.as_slice::<f32>()?,
    );
    let rt: Round<f32> = rounder::<f32>(DType::Float);
    let mask = ctx
        .opt_input(3)?
        .map(|m| Mask::new(&m, [s.batch, s.heads, s.lq], s.lk, rt))
        .transpose()?;
    let bias = BiasSpec {
        mask: mask.as_ref(),
        is_causal: spec.is_causal,
        left: spec.left,
        right: spec.right,
        offsets: vec![0; s.batch],
        nonpad: None,
        round: rt,
    };
    let scale = spec.scale.unwrap_or(1.0 / (s.dq as f32).sqrt());
    let threads = ctx.threads();
    let parallel = threads > 1 && s.batch * s.heads > 1;
    let y = ctx.output::<f32>(0, &[s.batch, s.heads, s.lq, s.dv])?;
    let (yq, qq, kq, vq) = (s.lq * s.dv, s.lq * s.dq, s.lk * s.dq, s.lk * s.dv);
    let head = |scratch: &mut Scratch, bh: usize, yc: &mut [f32]| {
        one_head(
            math,
            s,
            bh,
            scale,
            &bias,
            [
                &q[bh * qq..(bh + 1) * qq],
                &k[bh * kq..(bh + 1) * kq],
                &v[bh * vq..(bh + 1) * vq],
            ],
            yc,
            scratch,
        )
    };
    if yq == 0 {
        return Ok(());
    }
    let scratch = || Scratch {
        p: vec![0.0; s.lq * s.lk],
        bias: vec![0.0; s.lk],
    };
    if parallel {
        // A run of heads per thread (the first runs the most), the calling thread waiting
        // awake (`rge_kernels::parts`): in a rayon loop it slept about once a layer.
        let heads = s.batch * s.heads;
        let parts = threads.min(heads);
        let per = heads.div_ceil(parts);
        let failed: Mutex<Option<KernelError>> = Mutex::new(None);
        for_each_chunk_mut(y, per * yq, |t, ys| {
            let mut sc = scratch();
            let done = ys
                .chunks_mut(yq)
                .enumerate()
                .try_for_each(|(i, yc)| head(&mut sc, t * per + i, yc));
            if let Err(e) = done {
                if let Ok(mut f) = failed.lock() {
                    f.get_or_insert(e);
                }
            }
        });
        match failed.into_inner() {
            Ok(Some(e)) => Err(e),
            _ => Ok(()),
        }
    } else {
        let mut sc = scratch();
        y.chunks_mut(yq)
            .enumerate()
            .try_for_each(|(bh, yc)| head(&mut sc, bh, yc))
    }
}

/// One worker's buffers: a head's scores and one bias row.
struct Scratch {
    p: Vec<f32>,
    bias: Vec<f32>,
}

/// One head: `y = softmax(scale·q·kᵀ + bias)·v`.
#[allow(clippy::too_many_arguments)]
fn one_head(
    math: &dyn HeadMath,
    s: Sizes,
    bh: usize,
    scale: f32,
    bias: &BiasSpec<'_, f32>,
    [q, k, v]: [&[f32]; 3],
    y: &mut [f32],
    scratch: &mut Scratch,
) -> KernelResult<()> {
    let (lq, lk, dq, dv) = (s.lq, s.lk, s.dq, s.dv);
    let p = &mut scratch.p[..lq * lk];
    math.scores(lq, lk, dq, scale, q, k, p)?;
    let (b, h) = (bh / s.heads, bh % s.heads);
    let trivial = bias.is_trivial();
    let mask_only = bias.mask_only();
    for (i, row) in p.chunks_mut(lk.max(1)).enumerate().take(lq) {
        if trivial {
            math.softmax(row, None)?;
            continue;
        }
        let m = match mask_only.and_then(|m| m.row_slice(b, h, i, lk)) {
            Some(m) => m,
            None => {
                bias.row(b, h, i, &mut scratch.bias);
                &scratch.bias
            }
        };
        // A fully masked row gives zeros (as the general kernel does).
        if m.iter().all(|&x| x == f32::NEG_INFINITY) {
            row.fill(0.0);
        } else {
            math.softmax(row, Some(m))?;
        }
    }
    math.weighted(lq, lk, dv, p, v, y)
}

/// Softmax of one row in place; a fully masked row gives zeros (as the general kernel does).
fn softmax_row(row: &mut [f32], masked: bool) {
    if masked {
        row.fill(0.0);
        return;
    }
    let mut mx = f32::NEG_INFINITY;
    let mut nan = false;
    for &x in row.iter() {
        nan |= x.is_nan();
        mx = mx.max(x);
    }
    if nan {
        row.fill(f32::NAN);
        return;
    }
    let safe = if mx == f32::NEG_INFINITY { 0.0 } else { mx };
    for x in row.iter_mut() {
        *x = exp_f32(*x - safe);
    }
    let sum: f32 = row.iter().sum();
    let inv = if sum == 0.0 { 1.0 } else { 1.0 / sum };
    for x in row.iter_mut() {
        *x *= inv;
    }
}

/// `e^x` for f32 (Cephes' `expf`: `2^n · p(r)` with `r = x − n·ln 2`, a degree-6
/// polynomial), within 2 ulp over the normal range; written without branches so the row loop
/// vectorizes. Below −87.3 (−∞ included) it is 0, above 88 it saturates at e^88; NaN is
/// handled by the caller.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    // 1.5 · 2^23: adding and subtracting it rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let x0 = x;
    let x = x.clamp(-87.336_54, 88.0);
    let n = (x * LOG2E + ROUND) - ROUND;
    let r = x - n * 0.693_359_4 - n * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 0.166_666_65;
    p = p * r + 0.5;
    let y = p * r * r + r + 1.0;
    let v = y * f32::from_bits((((n as i32) + 127) << 23) as u32);
    if x0 < -87.336_54 {
        0.0
    } else {
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attention::{attention, general};
    use proptest::prelude::*;
    use rge_ir::AttrMap;
    use rge_kernels::{run_owned, KernelInit, Tensor, Value};

    /// The general kernel's result with the fast path off, and the fast path's.
    fn both(
        shape: [usize; 4],
        lk: usize,
        mask: Option<Vec<usize>>,
        causal: bool,
        seed: u64,
    ) -> (Vec<f32>, Vec<f32>) {
        let [b, h, lq, d] = shape;
        let gen = |n: usize, salt: u64| -> Vec<f32> {
            (0..n)
                .map(|i| {
                    let x = (i as u64 + salt)
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(seed)
                        >> 40;
                    (x % 2000) as f32 / 1000.0 - 1.0
                })
                .collect()
        };
        let t = |dims: &[usize], salt| {
            Some(Value::Tensor(
                Tensor::from_vec(dims, gen(dims.iter().product(), salt)).unwrap(),
            ))
        };
        let mut ins = vec![
            t(&[b, h, lq, d], 1),
            t(&[b, h, lk, d], 2),
            t(&[b, h, lk, d], 3),
        ];
        if let Some(m) = &mask {
            ins.push(t(m, 4));
        }
        let mut attrs = AttrMap::default();
        attrs.set("is_causal", i64::from(causal));
        let types: Vec<Option<DType>> = vec![Some(DType::Float); ins.len()];
        let init = KernelInit {
            node_name: "a",
            op_type: "Attention",
            domain: "",
            opset: 23,
            attrs: &attrs,
            input_types: &types,
            output_types: &[Some(DType::Float)],
            subgraph_attrs: &[],
            constants: &[],
        };
        let refs: Vec<Option<&Value>> = ins.iter().map(Option::as_ref).collect();
        let kernel = attention(&init).unwrap();
        let fast = run_owned(kernel.as_ref(), &refs, 1, 1, None).unwrap();
        let kernel = general(&init).unwrap();
        let slow = run_owned(kernel.as_ref(), &refs, 1, 1, None).unwrap();
        let get = |v: &Option<Value>| {
            v.as_ref()
                .unwrap()
                .as_tensor()
                .unwrap()
                .as_slice::<f32>()
                .unwrap()
                .to_vec()
        };
        (get(&fast[0]), get(&slow[0]))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn fast_path_matches_the_general_kernel(
            b in 1usize..3, h in 1usize..4, lq in 1usize..9, lk in 1usize..9, d in 1usize..9,
            mask_kind in 0usize..4, causal in any::<bool>(), seed in any::<u64>(),
        ) {
            let mask = match mask_kind {
                0 => None,
                1 => Some(vec![b, 1, 1, lk]),
                2 => Some(vec![lq, lk]),
                _ => Some(vec![b, h, lq, lk]),
            };
            let (fast, slow) = both([b, h, lq, d], lk, mask, causal, seed);
            prop_assert_eq!(fast.len(), slow.len());
            for (x, y) in fast.iter().zip(&slow) {
                prop_assert!((x - y).abs() <= 1e-5 * y.abs().max(1.0), "{} vs {}", x, y);
            }
        }
    }

    #[test]
    fn exp_is_within_two_ulp() {
        let mut x = -87.0f32;
        while x < 88.0 {
            let want = (x as f64).exp();
            let got = exp_f32(x) as f64;
            let ulp = (want as f32).abs() * f32::EPSILON;
            assert!(
                (got - want).abs() <= 2.0 * ulp as f64,
                "exp({x}) = {got}, want {want}"
            );
            x += 0.001_7;
        }
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-1e4), 0.0);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
    }

    #[test]
    fn softmax_rows() {
        let mut r = [0.0f32, f32::NEG_INFINITY, 0.0];
        softmax_row(&mut r, false);
        assert_eq!(r, [0.5, 0.0, 0.5]);
        let mut r = [1.0f32, f32::NAN];
        softmax_row(&mut r, false);
        assert!(r.iter().all(|x| x.is_nan()));
        let mut r = [1.0f32, 2.0];
        softmax_row(&mut r, true);
        assert_eq!(r, [0.0, 0.0]);
    }
}
