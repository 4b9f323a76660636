//! Quantized matrix products: QGemm, DynamicQuantizeMatMul, MatMulIntegerToFloat (integer
//! products with int32 accumulation, scaled to float as onnxruntime does) and MatMulNBits
//! (4/8-bit block-quantized weights, dequantized then multiplied in float).

use rge_kernels::{
    DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, TensorRef,
};

use crate::qlinear::{q_tensor, q_values, signed, QParams};
use crate::util::{f32s, floats, opt_f32s, put_f32};

/// onnxruntime's dynamic quantization of an operand (`GetQuantizationParameter`): uint8 over
/// [min(x, 0), max(x, 0)], scale 1 for an all-zero range.
pub(crate) fn dynamic_quantize(x: &[f32]) -> (Vec<i32>, f32, i32) {
    let (mut lo, mut hi) = (0f32, 0f32);
    for &v in x {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    let scale = if hi == lo { 1.0 } else { (hi - lo) / 255.0 };
    let zp = (0.0 - lo / scale).clamp(0.0, 255.0).round_ties_even() as i32;
    let q = x
        .iter()
        .map(|&v| {
            ((v / scale).round_ties_even() as i32)
                .saturating_add(zp)
                .clamp(0, 255)
        })
        .collect();
    (q, scale, zp)
}

/// Per-column values (scale or zero point): one for all N columns, or N.
fn per_column<T: Copy>(v: &[T], n: usize, what: &str) -> KernelResult<Vec<T>> {
    match v.len() {
        1 => Ok(vec![v[0]; n]),
        len if len == n => Ok(v.to_vec()),
        len => Err(KernelError::invalid(format!(
            "{what} has {len} values; need 1 or {n} (one per column)"
        ))),
    }
}

/// B [K, N] and its shape, or an error for other ranks.
fn matrix_b(t: &TensorRef<'_>) -> KernelResult<(usize, usize)> {
    match *t.shape() {
        [k, n] => Ok((k, n)),
        ref s => Err(KernelError::unsupported(format!(
            "B of shape {s:?}: supported is a [K, N] matrix"
        ))),
    }
}

/// (A - za) · (B - zb[col]) over rows of A [M, K] and B [K, N], as int32 sums.
pub(crate) fn int_matmul(
    a: &[i32],
    za: i32,
    b: &[i32],
    zb: &[i32],
    m: usize,
    k: usize,
    n: usize,
) -> Vec<i32> {
    let mut acc = vec![0i32; m * n];
    for i in 0..m {
        let o = &mut acc[i * n..(i + 1) * n];
        for kk in 0..k {
            let av = a[i * k + kk] - za;
            if av == 0 {
                continue;
            }
            let br = &b[kk * n..(kk + 1) * n];
            for j in 0..n {
                // int32 accumulation wraps, as onnxruntime's.
                o[j] = o[j].wrapping_add(av.wrapping_mul(br[j] - zb[j]));
            }
        }
    }
    acc
}

/// The leading dims of A [.., K] and its row count M.
fn rows_of(a: &TensorRef<'_>, k: usize) -> KernelResult<(Vec<usize>, usize)> {
    let s = a.shape();
    if s.last() != Some(&k) {
        return Err(KernelError::invalid(format!(
            "A is {s:?}; its last dim must be K = {k}"
        )));
    }
    Ok((s[..s.len() - 1].to_vec(), a.len() / k.max(1)))
}

struct DynamicQuantizeMatMul;

pub(crate) fn dynamic_quantize_matmul(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(DynamicQuantizeMatMul))
}

impl Kernel for DynamicQuantizeMatMul {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let b_t = ctx.input(1)?;
        let (k, n) = matrix_b(&b_t)?;
        let a_t = ctx.input(0)?;
        let (lead, m) = rows_of(&a_t, k)?;
        let (aq, a_scale, a_zp) = dynamic_quantize(&f32s(ctx, 0)?);
        let b_scale = per_column(&f32s(ctx, 2)?, n, "b_scale")?;
        let b_zp = match ctx.opt_input(3)? {
            Some(z) => per_column(&q_values(&z)?, n, "b_zero_point")?,
            None => vec![0; n],
        };
        let acc = int_matmul(&aq, a_zp, &q_values(&b_t)?, &b_zp, m, k, n);
        let bias = opt_f32s(ctx, 4)?;
        let out = scale_out(&acc, n, |j| a_scale * b_scale[j], bias.as_deref())?;
        let mut shape = lead;
        shape.push(n);
        put_f32(ctx, 0, &shape, out)
    }
}

/// acc · scale(col) + bias(col).
fn scale_out(
    acc: &[i32],
    n: usize,
    scale: impl Fn(usize) -> f32,
    bias: Option<&[f32]>,
) -> KernelResult<Vec<f32>> {
    if let Some(b) = bias {
        if b.len() != n {
            return Err(KernelError::invalid(format!(
                "bias has {} values; need N = {n}",
                b.len()
            )));
        }
    }
    Ok(acc
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let j = i % n;
            v as f32 * scale(j) + bias.map_or(0.0, |b| b[j])
        })
        .collect())
}

struct MatMulIntegerToFloat;

pub(crate) fn matmul_integer_to_float(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(MatMulIntegerToFloat))
}

impl Kernel for MatMulIntegerToFloat {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let b_t = ctx.input(1)?;
        let (k, n) = matrix_b(&b_t)?;
        let a_t = ctx.input(0)?;
        let (lead, m) = rows_of(&a_t, k)?;
        let a_scale = f32s(ctx, 2)?;
        let &[a_scale] = &a_scale[..] else {
            return Err(KernelError::unsupported("a_scale other than a scalar"));
        };
        let b_scale = per_column(&f32s(ctx, 3)?, n, "b_scale")?;
        let a_zp = match ctx.opt_input(4)? {
            Some(z) => match q_values(&z)?[..] {
                [z] => z,
                _ => return Err(KernelError::unsupported("a_zero_point other than a scalar")),
            },
            None => 0,
        };
        let b_zp = match ctx.opt_input(5)? {
            Some(z) => per_column(&q_values(&z)?, n, "b_zero_point")?,
            None => vec![0; n],
        };
        let acc = int_matmul(&q_values(&a_t)?, a_zp, &q_values(&b_t)?, &b_zp, m, k, n);
        let bias = opt_f32s(ctx, 6)?;
        let out = scale_out(&acc, n, |j| a_scale * b_scale[j], bias.as_deref())?;
        let mut shape = lead;
        shape.push(n);
        put_f32(ctx, 0, &shape, out)
    }
}

struct QGemm {
    alpha: f32,
    trans_a: bool,
    trans_b: bool,
}

pub(crate) fn qgemm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(QGemm {
        alpha: init.float_or("alpha", 1.0)?,
        trans_a: init.int_or("transA", 0)? != 0,
        trans_b: init.int_or("transB", 0)? != 0,
    }))
}

/// A 2-D operand, transposed when asked, as i32 values and (rows, cols).
fn matrix(t: &TensorRef<'_>, trans: bool, what: &str) -> KernelResult<(Vec<i32>, usize, usize)> {
    let &[r, c] = t.shape() else {
        return Err(KernelError::invalid(format!(
            "{what} must be 2-D, got {:?}",
            t.shape()
        )));
    };
    let v = q_values(t)?;
    if !trans {
        return Ok((v, r, c));
    }
    let mut out = vec![0; v.len()];
    for i in 0..r {
        for j in 0..c {
            out[j * r + i] = v[i * c + j];
        }
    }
    Ok((out, c, r))
}

impl Kernel for QGemm {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (a, m, k) = matrix(&ctx.input(0)?, self.trans_a, "A")?;
        let (b, kb, n) = matrix(&ctx.input(3)?, self.trans_b, "B")?;
        if kb != k {
            return Err(KernelError::invalid(format!(
                "A gives K = {k}, B gives {kb}"
            )));
        }
        let a_scale = ctx.input(1)?.to_f64_vec()?;
        let a_zp = q_values(&ctx.input(2)?)?;
        let (&[a_scale], &[a_zp]) = (&a_scale[..], &a_zp[..]) else {
            return Err(KernelError::unsupported(
                "a_scale / a_zero_point other than scalars",
            ));
        };
        let b_scale = per_column(&f32s(ctx, 4)?, n, "b_scale")?;
        let b_zp = per_column(&q_values(&ctx.input(5)?)?, n, "b_zero_point")?;
        let mut acc = int_matmul(&a, a_zp, &b, &b_zp, m, k, n);
        if let Some(c) = ctx.opt_input(6)? {
            let (cv, cs) = (c.to_i64_vec()?, c.shape().to_vec());
            let (shape, offs) = crate::qlinear::broadcast_offsets(&[m, n], &cs)?;
            if shape != [m, n] {
                return Err(KernelError::invalid(format!(
                    "C {cs:?} does not broadcast to [{m}, {n}]"
                )));
            }
            for (o, (_, j)) in acc.iter_mut().zip(offs) {
                *o = o.wrapping_add(cv[j] as i32);
            }
        }
        let scale = |j: usize| self.alpha * a_scale as f32 * b_scale[j];
        match ctx.opt_input(7)? {
            None => put_f32(ctx, 0, &[m, n], scale_out(&acc, n, scale, None)?),
            Some(_) => {
                let dt = ctx.opt_input(8)?.map_or(DType::Uint8, |t| t.dtype());
                let qy = QParams::read(ctx, 7, 8, dt)?;
                let out = acc
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| qy.saturate(v as f32 * scale(i % n) / qy.scale))
                    .collect();
                ctx.put(0, q_tensor(&[m, n], out, signed(dt)?)?)
            }
        }
    }
}

struct MatMulNBits {
    k: usize,
    n: usize,
    bits: usize,
    block: usize,
}

pub(crate) fn matmul_nbits(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let get = |name: &str| -> KernelResult<usize> {
        let v = init.int(name)?;
        usize::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| KernelError::attr(name, format!("must be positive, got {v}")))
    };
    let bits = init.int_or("bits", 4)?;
    if bits != 4 && bits != 8 {
        return Err(KernelError::attr(
            "bits",
            format!("{bits}: supported are 4 and 8"),
        ));
    }
    let block = get("block_size")?;
    if block < 16 || !block.is_power_of_two() {
        return Err(KernelError::attr(
            "block_size",
            format!("{block} must be a power of two ≥ 16"),
        ));
    }
    if init.input_type(4).is_some() {
        return Err(KernelError::unsupported("MatMulNBits with g_idx"));
    }
    Ok(Box::new(MatMulNBits {
        k: get("K")?,
        n: get("N")?,
        bits: bits as usize,
        block,
    }))
}

impl MatMulNBits {
    /// The dequantized weights as [K, N].
    fn weights(&self, ctx: &KernelCtx<'_>) -> KernelResult<Vec<f32>> {
        let (k, n, bits, block) = (self.k, self.n, self.bits, self.block);
        let blocks = k.div_ceil(block);
        let blob = block * bits / 8;
        let b_t = ctx.input(1)?;
        let want = n.checked_mul(blocks).and_then(|v| v.checked_mul(blob));
        if b_t.dtype() != DType::Uint8 || Some(b_t.len()) != want {
            return Err(KernelError::invalid(format!(
                "B is {} {:?}; need uint8 [{n}, {blocks}, {blob}] for K = {k}, N = {n}, block_size = {block}",
                b_t.dtype(),
                b_t.shape()
            )));
        }
        let b = b_t.as_slice::<u8>()?;
        let scales = floats(&ctx.input(2)?, 2)?;
        if scales.len() != n * blocks {
            return Err(KernelError::invalid(format!(
                "scales has {} values; need N · blocks = {}",
                scales.len(),
                n * blocks
            )));
        }
        // Zero points: packed like B (two 4-bit values a byte, rows padded to whole bytes),
        // or float; absent: the middle of the range.
        let default_zp = (1 << (bits - 1)) as f32;
        let zp: Box<dyn Fn(usize, usize) -> f32> = match ctx.opt_input(3)? {
            None => Box::new(|_, _| default_zp),
            Some(z) if z.dtype() == DType::Uint8 => {
                let per_row = (blocks * bits).div_ceil(8);
                let z = z.as_slice::<u8>()?;
                if z.len() != n * per_row {
                    return Err(KernelError::invalid(format!(
                        "zero_points has {} bytes; need {}",
                        z.len(),
                        n * per_row
                    )));
                }
                Box::new(move |col, blk| {
                    let byte = z[col * per_row + blk * bits / 8];
                    if bits == 8 {
                        byte as f32
                    } else {
                        ((byte >> ((blk % 2) * 4)) & 0xF) as f32
                    }
                })
            }
            Some(z) => {
                let z = floats(&z, 3)?;
                if z.len() != n * blocks {
                    return Err(KernelError::invalid(format!(
                        "zero_points has {} values; need {}",
                        z.len(),
                        n * blocks
                    )));
                }
                Box::new(move |col, blk| z[col * blocks + blk])
            }
        };
        let mut w = vec![0f32; k * n];
        for col in 0..n {
            for blk in 0..blocks {
                let s = scales[col * blocks + blk];
                let z = zp(col, blk);
                let bytes = &b[(col * blocks + blk) * blob..][..blob];
                for e in 0..block {
                    let kk = blk * block + e;
                    if kk >= k {
                        break;
                    }
                    let q = if bits == 8 {
                        bytes[e]
                    } else {
                        (bytes[e / 2] >> ((e % 2) * 4)) & 0xF
                    };
                    w[kk * n + col] = (q as f32 - z) * s;
                }
            }
        }
        Ok(w)
    }
}

impl Kernel for MatMulNBits {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (k, n) = (self.k, self.n);
        let a_t = ctx.input(0)?;
        let (lead, m) = rows_of(&a_t, k)?;
        let a = floats(&a_t, 0)?;
        let w = self.weights(ctx)?;
        let mut out = vec![0f32; m * n];
        for i in 0..m {
            let o = &mut out[i * n..(i + 1) * n];
            for kk in 0..k {
                let av = a[i * k + kk];
                for (o, wv) in o.iter_mut().zip(&w[kk * n..(kk + 1) * n]) {
                    *o += av * wv;
                }
            }
        }
        if let Some(b) = opt_f32s(ctx, 5)? {
            crate::util::check_len("bias", &b, n)?;
            crate::util::add_last(&mut out, &b);
        }
        let mut shape = lead;
        shape.push(n);
        ctx.put(0, Tensor::from_vec(&shape, out)?)
    }
}
