//! The dense engine's kernels: MatMul/FusedMatMul, Gemm and Conv/FusedConv over the packed
//! GEMM (`crate::gemm`), with constant weights packed once when the kernel is built (at
//! lowering, from the model's constants) and the bias, residual and activation applied in the
//! GEMM's epilogue.

use rge_ir::AttrValue;
use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, TensorRef};
use rge_kernels_nn::WindowAttrs;

use crate::conv_few_pixels::{pixels_as_rows, FewPixels};
use crate::depthwise::{DwGeometry, DwPlan};
use crate::depthwise_blocked::{self, DwBlockPlan, BLOCK};
use crate::gemm::{
    self, AOperand, Activation, BOperand, Bias, Epilogue, GemmError, GemmParams, Isa, PackedA,
    PackedB,
};
use crate::im2col::{im2col_tile, with_im2col_buf, IM2COL_TILE_FLOATS, PAR_TILE_WORK};
use crate::winograd::WinogradWeights;

/// Multiply-adds per parallel depthwise task, at least.
const DW_TASK_OUTPUTS: usize = 16 * 1024;

pub(crate) fn gemm_err(e: GemmError) -> KernelError {
    KernelError::invalid(e.to_string())
}

/// The epilogue activation of a fused op (`activation`, `activation_params`), or None.
pub(crate) fn activation(init: &KernelInit<'_>) -> KernelResult<Activation> {
    activation_named(init, "activation", "activation_params")
}

/// The activation named by attribute `name` with its parameters in `params`, or None.
pub(crate) fn activation_named(
    init: &KernelInit<'_>,
    name: &str,
    params: &str,
) -> KernelResult<Activation> {
    let p = init.floats_opt(params)?.unwrap_or(&[]);
    let at = |i: usize, d: f32| p.get(i).copied().unwrap_or(d);
    Ok(match init.str_or(name, "")? {
        "" => Activation::None,
        "Relu" => Activation::Relu,
        "Clip" => Activation::Clip {
            min: at(0, f32::MIN),
            max: at(1, f32::MAX),
        },
        "LeakyRelu" => Activation::LeakyRelu { alpha: at(0, 0.01) },
        "Sigmoid" => Activation::Sigmoid,
        "HardSigmoid" => Activation::HardSigmoid {
            alpha: at(0, 0.2),
            beta: at(1, 0.5),
        },
        "HardSwish" => Activation::HardSwish,
        "Silu" => Activation::SILU,
        "Gelu" => Activation::Gelu,
        "GeluTanh" => Activation::GeluTanh,
        "Tanh" => Activation::Tanh,
        other => {
            return Err(KernelError::attr(
                name,
                format!("`{other}` is not an activation the dense kernels apply"),
            ))
        }
    })
}

pub(crate) fn f32s<'a>(t: &TensorRef<'a>, what: &str) -> KernelResult<&'a [f32]> {
    t.as_slice::<f32>()
        .map_err(|e| KernelError::invalid(format!("{what}: {e}")))
}

// ---- MatMul / FusedMatMul ----

/// MatMul (numpy semantics, batch broadcasting) and FusedMatMul (`act(A·B + bias + Z)`).
pub struct MatMulKernel {
    /// B packed when it is a constant matrix.
    packed_b: Option<PackedB>,
    activation: Activation,
    /// FusedMatMul's `transB`: B's last two dims are swapped (B is `[…, n, k]`).
    trans_b: bool,
}

/// The attribute a compiled MatMul or Gemm keeps its packed B in.
pub const PACKED_B_ATTR: &str = "_rge_packed_b";
/// The attribute a compiled Conv keeps its packed weights in (one per group).
pub const PACKED_W_ATTR: &str = "_rge_packed_w";

/// MatMul's B packed, when it is a constant matrix.
fn pack_matmul_b(init: &KernelInit<'_>) -> KernelResult<Option<PackedB>> {
    let trans = trans_b(init)?;
    match init.constant(1) {
        Some(b) if b.shape().len() == 2 => {
            let (r, c) = (b.shape()[0], b.shape()[1]);
            let (k, n) = if trans { (c, r) } else { (r, c) };
            let data = b.as_slice::<f32>()?;
            Ok(Some(PackedB::pack(data, k, n, c, trans).map_err(gemm_err)?))
        }
        _ => Ok(None),
    }
}

/// FusedMatMul's `transB` (MatMul has none).
fn trans_b(init: &KernelInit<'_>) -> KernelResult<bool> {
    Ok(init.int_or("transB", 0)? != 0)
}

/// The packed B a compiled model recorded (checked), else packed from the constant now.
fn packed_b_of(
    init: &KernelInit<'_>,
    pack: impl Fn(&KernelInit<'_>) -> KernelResult<Option<PackedB>>,
) -> KernelResult<Option<PackedB>> {
    match init.attrs.get(PACKED_B_ATTR) {
        Some(AttrValue::Bytes(b)) => PackedB::from_bytes(b)
            .map(Some)
            .map_err(|e| KernelError::attr(PACKED_B_ATTR, e.to_string())),
        Some(_) => Err(KernelError::attr(PACKED_B_ATTR, "not bytes")),
        None => pack(init),
    }
}

/// Compile time (CompileOp): MatMul's packed constant B, kept on the op.
pub fn prepare_matmul(init: &KernelInit<'_>) -> KernelResult<Vec<(String, AttrValue)>> {
    Ok(pack_matmul_b(init)?
        .map(|p| {
            vec![(
                PACKED_B_ATTR.to_string(),
                AttrValue::Bytes(p.as_bytes().to_vec()),
            )]
        })
        .unwrap_or_default())
}

/// Builds the MatMul kernel.
pub fn create_matmul(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(MatMulKernel {
        packed_b: packed_b_of(init, pack_matmul_b)?,
        activation: activation(init)?,
        trans_b: trans_b(init)?,
    }))
}

/// The flat offset, in matrices, of batch index `idx` of `out_batch` in an operand of batch
/// shape `dims` (broadcast dims of size 1 stay at 0).
fn batch_offset(idx: usize, out_batch: &[usize], dims: &[usize]) -> usize {
    let mut rem = idx;
    let mut off = 0;
    let mut stride = 1;
    let lead = out_batch.len() - dims.len();
    for i in (0..out_batch.len()).rev() {
        let o = rem % out_batch[i];
        rem /= out_batch[i];
        if i >= lead {
            let d = dims[i - lead];
            if d != 1 {
                off += o * stride;
            }
            stride *= d;
        }
    }
    off
}

impl Kernel for MatMulKernel {
    fn absorbed_inputs(&self) -> &[usize] {
        if self.packed_b.is_some() {
            &[1]
        } else {
            &[]
        }
    }

    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        let (sa, sb) = (a.shape(), b.shape());
        if sa.is_empty() || sb.is_empty() {
            return Err(KernelError::invalid("MatMul of a scalar"));
        }
        // Numpy: a 1-D A is a row, a 1-D B a column; the added dim is dropped again.
        let (m, k) = if sa.len() == 1 {
            (1, sa[0])
        } else {
            (sa[sa.len() - 2], sa[sa.len() - 1])
        };
        let (kb, n) = match (sb.len(), self.trans_b) {
            (1, false) => (sb[0], 1),
            (1, true) => {
                return Err(KernelError::invalid(format!(
                    "transB with a B of shape {sb:?}: needs rank 2 or more"
                )))
            }
            (r, false) => (sb[r - 2], sb[r - 1]),
            (r, true) => (sb[r - 1], sb[r - 2]),
        };
        if k != kb {
            return Err(KernelError::invalid(format!(
                "MatMul shapes {sa:?} and {sb:?} (transB {}): inner dims {k} and {kb} differ",
                self.trans_b
            )));
        }
        let ba = &sa[..sa.len().saturating_sub(2)];
        let bb = &sb[..sb.len().saturating_sub(2)];
        let batch = rge_kernels::shape_util::broadcast_shapes(&[ba, bb])?.to_vec();
        let mut out_shape = batch.clone();
        if sa.len() > 1 {
            out_shape.push(m);
        }
        if sb.len() > 1 {
            out_shape.push(n);
        }
        let bias = match ctx.opt_input(2)? {
            Some(t) => {
                let v = f32s(&t, "bias")?;
                if v.len() != n {
                    return Err(KernelError::invalid(format!(
                        "bias of {} values for {n} output columns",
                        v.len()
                    )));
                }
                Bias::PerColumn(v)
            }
            None => Bias::None,
        };
        let z = match ctx.opt_input(3)? {
            Some(t) => {
                if t.shape() != out_shape.as_slice() {
                    return Err(KernelError::invalid(format!(
                        "residual of shape {:?} for an output of shape {out_shape:?}",
                        t.shape()
                    )));
                }
                Some(f32s(&t, "residual")?)
            }
            None => None,
        };
        let av = f32s(&a, "A")?;
        let packed = self.packed_b.as_ref().filter(|p| p.k() == k && p.n() == n);
        // A packed B is the kernel's own copy: the constant's data may have been released.
        let bv = match packed {
            Some(_) => &[][..],
            None => f32s(&b, "B")?,
        };
        let threads = ctx.threads();
        let nbatch: usize = batch.iter().product();
        let out = ctx.output::<f32>(0, &out_shape)?;
        let b_is_matrix = bb.iter().all(|&d| d == 1);
        let b_op = |off: usize| match packed {
            Some(p) => BOperand::Packed(p),
            None => BOperand::Raw {
                data: &bv[off * k * n..(off + 1) * k * n],
                ld: if self.trans_b { k } else { n },
                trans: self.trans_b,
            },
        };
        let epi = |z_off: usize| {
            let e = Epilogue {
                bias,
                residual: None,
                activation: self.activation,
            };
            match z {
                Some(z) => e.with_residual(&z[z_off..], n),
                None => e,
            }
        };
        if b_is_matrix
            && ba.iter().all(|&d| d == nbatch || d == 1)
            && ba.iter().product::<usize>() == nbatch
        {
            // One B for every batch and A's batch contiguous: one tall GEMM.
            let rows = nbatch * m;
            let p = GemmParams::new(rows, n, k);
            let a_op = AOperand::Raw {
                data: av,
                ld: k,
                trans: false,
            };
            return gemm::sgemm(&p, a_op, b_op(0), out, n, &epi(0), threads).map_err(gemm_err);
        }
        let p = GemmParams::new(m, n, k);
        let one = |t: usize, c: &mut [f32], th: usize| {
            let oa = batch_offset(t, &batch, ba);
            let ob = batch_offset(t, &batch, bb);
            let a_op = AOperand::Raw {
                data: &av[oa * m * k..(oa + 1) * m * k],
                ld: k,
                trans: false,
            };
            gemm::sgemm(&p, a_op, b_op(ob), c, n, &epi(t * m * n), th).map_err(gemm_err)
        };
        if m * n == 0 {
            return Ok(());
        }
        // Batches that share out evenly (attention's heads) run in parallel, one thread each:
        // splitting each small GEMM instead forked once per batch (BERT's 12 × 128×128×64 QKᵀ
        // did not scale at all on 2 threads).
        if threads > 1 && (nbatch.is_multiple_of(threads) || nbatch >= 4 * threads) {
            use rayon::prelude::*;
            return out
                .par_chunks_mut(m * n)
                .enumerate()
                .try_for_each(|(t, c)| one(t, c, 1));
        }
        out.chunks_mut(m * n)
            .enumerate()
            .try_for_each(|(t, c)| one(t, c, threads))
    }
}

// ---- Gemm ----

/// ONNX Gemm: `alpha·op(A)·op(B) + beta·C`.
pub struct GemmKernel {
    trans_a: bool,
    trans_b: bool,
    alpha: f32,
    beta: f32,
    packed_b: Option<PackedB>,
}

/// Gemm's B packed (as op(B)), when it is a constant matrix.
fn pack_gemm_b(init: &KernelInit<'_>) -> KernelResult<Option<PackedB>> {
    let trans_b = init.int_or("transB", 0)? != 0;
    match init.constant(1) {
        Some(b) if b.shape().len() == 2 => {
            let (r, c) = (b.shape()[0], b.shape()[1]);
            let (k, n) = if trans_b { (c, r) } else { (r, c) };
            let p = PackedB::pack(b.as_slice::<f32>()?, k, n, c, trans_b).map_err(gemm_err)?;
            Ok(Some(p))
        }
        _ => Ok(None),
    }
}

/// Compile time (CompileOp): Gemm's packed constant B, kept on the op.
pub fn prepare_gemm(init: &KernelInit<'_>) -> KernelResult<Vec<(String, AttrValue)>> {
    Ok(pack_gemm_b(init)?
        .map(|p| {
            vec![(
                PACKED_B_ATTR.to_string(),
                AttrValue::Bytes(p.as_bytes().to_vec()),
            )]
        })
        .unwrap_or_default())
}

/// Builds the Gemm kernel.
pub fn create_gemm(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let trans_a = init.int_or("transA", 0)? != 0;
    let trans_b = init.int_or("transB", 0)? != 0;
    let packed_b = packed_b_of(init, pack_gemm_b)?;
    Ok(Box::new(GemmKernel {
        trans_a,
        trans_b,
        alpha: init.float_or("alpha", 1.0)?,
        beta: init.float_or("beta", 1.0)?,
        packed_b,
    }))
}

impl Kernel for GemmKernel {
    fn absorbed_inputs(&self) -> &[usize] {
        if self.packed_b.is_some() {
            &[1]
        } else {
            &[]
        }
    }

    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let a = ctx.input(0)?;
        let b = ctx.input(1)?;
        let (sa, sb) = (a.shape(), b.shape());
        if sa.len() != 2 || sb.len() != 2 {
            return Err(KernelError::invalid(format!(
                "Gemm takes matrices, got {sa:?} and {sb:?}"
            )));
        }
        let (m, k) = if self.trans_a {
            (sa[1], sa[0])
        } else {
            (sa[0], sa[1])
        };
        let (kb, n) = if self.trans_b {
            (sb[1], sb[0])
        } else {
            (sb[0], sb[1])
        };
        if k != kb {
            return Err(KernelError::invalid(format!(
                "Gemm shapes {sa:?} and {sb:?} (transA {}, transB {}): inner dims {k} and {kb} differ",
                self.trans_a, self.trans_b
            )));
        }
        let c_in = ctx.opt_input(2)?;
        let av = f32s(&a, "A")?;
        let packed = self
            .packed_b
            .as_ref()
            .filter(|pb| pb.k() == k && pb.n() == n);
        // A packed B is the kernel's own copy: the constant's data may have been released.
        let bv = match packed {
            Some(_) => &[][..],
            None => f32s(&b, "B")?,
        };
        // C broadcast to (m, n): a full matrix goes through beta; a row, a column or a scalar
        // becomes the epilogue's bias (times beta).
        enum CForm<'c> {
            None,
            Full(&'c [f32]),
            Bias(Vec<f32>, bool),
        }
        let cform = match &c_in {
            None => CForm::None,
            Some(c) => {
                let cv = f32s(c, "C")?;
                let s = c.shape();
                let dims: Vec<usize> = std::iter::repeat_n(1, 2usize.saturating_sub(s.len()))
                    .chain(s.iter().copied())
                    .collect();
                if dims.len() != 2
                    || !(dims[0] == m || dims[0] == 1)
                    || !(dims[1] == n || dims[1] == 1)
                {
                    return Err(KernelError::invalid(format!(
                        "C of shape {s:?} does not broadcast to ({m}, {n})"
                    )));
                }
                match (dims[0], dims[1]) {
                    (r, c) if r == m && c == n && m > 1 && n > 1 => CForm::Full(cv),
                    (1, c) if c == n => {
                        CForm::Bias(cv.iter().map(|v| v * self.beta).collect(), true)
                    }
                    (r, 1) if r == m => {
                        CForm::Bias(cv.iter().map(|v| v * self.beta).collect(), false)
                    }
                    _ => CForm::Bias(vec![cv[0] * self.beta; n], true),
                }
            }
        };
        let threads = ctx.threads();
        let out = ctx.output::<f32>(0, &[m, n])?;
        let mut p = GemmParams::new(m, n, k).alpha(self.alpha);
        let mut epi = Epilogue::NONE;
        match &cform {
            CForm::None => {}
            CForm::Full(c) => {
                out.copy_from_slice(c);
                p = p.beta(self.beta);
            }
            CForm::Bias(v, per_col) => {
                epi = epi.with_bias(if *per_col {
                    Bias::PerColumn(v)
                } else {
                    Bias::PerRow(v)
                });
            }
        }
        let a_op = AOperand::Raw {
            data: av,
            ld: sa[1],
            trans: self.trans_a,
        };
        let b_op = match packed {
            Some(pb) => BOperand::Packed(pb),
            None => BOperand::Raw {
                data: bv,
                ld: sb[1],
                trans: self.trans_b,
            },
        };
        gemm::sgemm(&p, a_op, b_op, out, n, &epi, threads).map_err(gemm_err)
    }
}

// ---- Conv / FusedConv ----

/// 1-D and 2-D convolution in NC(H)W as GEMMs over groups (`W_g · im2col(X_g)`; 1×1 stride-1 kernels
/// need no im2col), depthwise convolutions by the direct kernel; bias, residual and activation
/// in the epilogue.
pub struct ConvKernel {
    window: WindowAttrs,
    group: usize,
    activation: Activation,
    /// The weights packed per group, when they are a constant.
    packed_w: Option<Vec<PackedA>>,
    /// The Winograd-transformed weights of a constant 3×3 stride-1 ungrouped Conv.
    winograd: Option<WinogradWeights>,
    /// Wᵀ packed as a right operand, made from `packed_w` on the first run with fewer output
    /// pixels than channels (`conv_few_pixels.rs`).
    packed_wt: std::sync::OnceLock<PackedB>,
}

fn conv_group(init: &KernelInit<'_>) -> KernelResult<usize> {
    usize::try_from(init.int_or("group", 1)?)
        .ok()
        .filter(|&g| g > 0)
        .ok_or_else(|| KernelError::attr("group", "must be positive"))
}

/// Compile time (CompileOp): the Conv's packed constant weights, one per group, kept on the op.
pub fn prepare_conv(init: &KernelInit<'_>) -> KernelResult<Vec<(String, AttrValue)>> {
    Ok(pack_conv_w(init, conv_group(init)?)?
        .map(|v| {
            let bytes = v.iter().map(|p| p.as_bytes().to_vec()).collect();
            vec![(PACKED_W_ATTR.to_string(), AttrValue::ListBytes(bytes))]
        })
        .unwrap_or_default())
}

/// Builds the Conv kernel (Conv and FusedConv).
pub fn create_conv(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let group = conv_group(init)?;
    let packed_w = match init.attrs.get(PACKED_W_ATTR) {
        Some(AttrValue::ListBytes(v)) if v.len() == group => Some(
            v.iter()
                .map(|b| PackedA::from_bytes(b))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| KernelError::attr(PACKED_W_ATTR, e.to_string()))?,
        ),
        Some(_) => {
            return Err(KernelError::attr(
                PACKED_W_ATTR,
                format!("not a list of {group} packed weights"),
            ))
        }
        None => pack_conv_w(init, group)?,
    };
    let window = WindowAttrs::parse(init)?;
    let ones = |v: &Option<Vec<usize>>| v.as_ref().is_none_or(|v| v.iter().all(|&d| d == 1));
    let winograd = match init.constant(1) {
        Some(w)
            if group == 1
                && w.shape().len() == 4
                && w.shape()[2..] == [3, 3]
                && ones(&window.strides)
                && ones(&window.dilations) =>
        {
            let s = w.shape();
            Some(WinogradWeights::new(w.as_slice::<f32>()?, s[0], s[1]).map_err(gemm_err)?)
        }
        _ => None,
    };
    Ok(Box::new(ConvKernel {
        window,
        group,
        activation: activation(init)?,
        packed_w,
        winograd,
        packed_wt: std::sync::OnceLock::new(),
    }))
}

/// The Conv's weights packed per group, when they are a constant (depthwise convs use their
/// weights directly: none).
fn pack_conv_w(init: &KernelInit<'_>, group: usize) -> KernelResult<Option<Vec<PackedA>>> {
    let conv_rank = |w: &Tensor| matches!(w.shape().len(), 3 | 4);
    let depthwise = init
        .constant(1)
        .is_some_and(|w| conv_rank(w) && w.shape()[1] == 1 && w.shape()[0] == group);
    if depthwise {
        return Ok(None);
    }
    Ok(match init.constant(1) {
        Some(w) if conv_rank(w) && w.shape()[0] % group == 0 => {
            let s = w.shape();
            let (cout_g, kk) = (s[0] / group, s[1..].iter().product::<usize>());
            let data = w.as_slice::<f32>()?;
            let mut v = Vec::with_capacity(group);
            for g in 0..group {
                let part = &data[g * cout_g * kk..(g + 1) * cout_g * kk];
                v.push(PackedA::pack(part, cout_g, kk, kk, false).map_err(gemm_err)?);
            }
            Some(v)
        }
        _ => None,
    })
}

impl Kernel for ConvKernel {
    fn absorbed_inputs(&self) -> &[usize] {
        if self.packed_w.is_some() {
            &[1]
        } else {
            &[]
        }
    }

    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let w = ctx.input(1)?;
        let (sx, sw) = (x.shape(), w.shape());
        // 1-D convolutions run as 2-D ones of height 1 (same memory layout).
        let one_d = sx.len() == 3 && sw.len() == 3;
        if !one_d && (sx.len() != 4 || sw.len() != 4) {
            return Err(KernelError::invalid(format!(
                "dense Conv is 1-D or 2-D: input {sx:?}, weights {sw:?}"
            )));
        }
        let (nb, cin, h, wd) = if one_d {
            (sx[0], sx[1], 1, sx[2])
        } else {
            (sx[0], sx[1], sx[2], sx[3])
        };
        let (cout, cin_g, kh, kw) = if one_d {
            (sw[0], sw[1], 1, sw[2])
        } else {
            (sw[0], sw[1], sw[2], sw[3])
        };
        let grp = self.group;
        if cin != cin_g * grp || cout % grp != 0 {
            return Err(KernelError::invalid(format!(
                "Conv: input channels {cin}, weights {sw:?}, group {grp} do not fit"
            )));
        }
        let g = if one_d {
            let geo = self.window.resolve(&[wd], Some(&[kw]))?;
            DwGeometry {
                h: 1,
                w: wd,
                kh: 1,
                kw,
                stride_h: 1,
                stride_w: geo.strides[0],
                dil_h: 1,
                dil_w: geo.dilations[0],
                pad_top: 0,
                pad_left: geo.pads_begin[0],
                oh: 1,
                ow: geo.out[0],
            }
        } else {
            let geo = self.window.resolve(&[h, wd], Some(&[kh, kw]))?;
            DwGeometry {
                h,
                w: wd,
                kh,
                kw,
                stride_h: geo.strides[0],
                stride_w: geo.strides[1],
                dil_h: geo.dilations[0],
                dil_w: geo.dilations[1],
                pad_top: geo.pads_begin[0],
                pad_left: geo.pads_begin[1],
                oh: geo.out[0],
                ow: geo.out[1],
            }
        };
        let cout_g = cout / grp;
        let kk = cin_g * kh * kw;
        let ohw = g.oh * g.ow;
        let bias = match ctx.opt_input(2)? {
            Some(b) => {
                let v = f32s(&b, "B")?;
                if v.len() != cout {
                    return Err(KernelError::invalid(format!(
                        "bias of {} values for {cout} output channels",
                        v.len()
                    )));
                }
                Some(v)
            }
            None => None,
        };
        let out_shape: &[usize] = if one_d {
            &[nb, cout, g.ow]
        } else {
            &[nb, cout, g.oh, g.ow]
        };
        let z = match ctx.opt_input(3)? {
            Some(t) if t.shape() != out_shape => {
                return Err(KernelError::invalid(format!(
                    "residual of shape {:?} for an output of shape {out_shape:?}",
                    t.shape()
                )))
            }
            Some(t) => Some(f32s(&t, "residual")?),
            None => None,
        };
        let xv = f32s(&x, "X")?;
        let depthwise = grp == cin && cout == cin && cin_g == 1;
        let all_packed = self
            .packed_w
            .as_ref()
            .is_some_and(|pw| pw.len() == grp && pw.iter().all(|p| p.m() == cout_g && p.k() == kk));
        // Packed weights are the kernel's own copy: the constant's data may have been released.
        let wv = if all_packed && !depthwise {
            &[][..]
        } else {
            f32s(&w, "W")?
        };
        let threads = ctx.threads();
        let out = ctx.output::<f32>(0, out_shape)?;
        if ohw == 0 || cout == 0 {
            return Ok(());
        }
        if depthwise {
            return self.depthwise(xv, wv, bias, z, &g, cout, out, threads);
        }
        if let Some(wg) = self.winograd.as_ref().filter(|wg| wg.suits(&g) && grp == 1) {
            for (n, y) in out.chunks_exact_mut(cout * ohw).enumerate() {
                let xn = &xv[n * cin * h * wd..(n + 1) * cin * h * wd];
                let zn = z.map(|z| &z[n * cout * ohw..(n + 1) * cout * ohw]);
                wg.conv(xn, &g, bias, zn, &self.activation, y, threads)
                    .map_err(gemm_err)?;
            }
            return Ok(());
        }
        if all_packed && pixels_as_rows(ohw, cout, kk, grp, threads) {
            if let Some(pw) = self.packed_w.as_ref().and_then(|p| p.first()) {
                let few = FewPixels {
                    g: &g,
                    cin,
                    cout,
                    wt: self.weights_transposed(pw)?,
                    bias,
                    residual: z,
                    activation: self.activation,
                };
                return few.run(xv, out, threads);
            }
        }
        let pointwise = g.is_pointwise();
        // im2col by tiles of output columns (each tile's matrix stays in L2 while the GEMM
        // packs it). With several threads the tiles run in parallel, each with its own im2col
        // and a one-thread GEMM: splitting each tile's small GEMM instead left the im2col on
        // one thread and synchronized the threads once per tile.
        let t = threads.max(1);
        let tile_max = if pointwise {
            ohw
        } else {
            (IM2COL_TILE_FLOATS / kk.max(1)).max(128) / 32 * 32
        };
        let work = cout_g.saturating_mul(ohw).saturating_mul(kk);
        // A pointwise Conv has no im2col to share out: one GEMM over all columns, split by the
        // GEMM driver, writes C in place (parallel tiles would each allocate and copy a part).
        let parallel = t > 1 && !pointwise && ohw >= 64 * t && work >= PAR_TILE_WORK;
        let mut tiles = ohw.div_ceil(tile_max.max(1));
        if parallel {
            tiles = tiles.div_ceil(t) * t;
        }
        let tile = ohw.div_ceil(tiles).next_multiple_of(16).min(ohw).max(1);
        for n in 0..nb {
            for gi in 0..grp {
                let xg =
                    &xv[(n * cin + gi * cin_g) * h * wd..(n * cin + (gi + 1) * cin_g) * h * wd];
                let first = (n * cout + gi * cout_g) * ohw;
                let bias_g = bias.map(|b| &b[gi * cout_g..(gi + 1) * cout_g]);
                let a_op = match &self.packed_w {
                    Some(pw) if all_packed => AOperand::Packed(&pw[gi]),
                    _ => AOperand::Raw {
                        data: &wv[gi * cout_g * kk..(gi + 1) * cout_g * kk],
                        ld: kk,
                        trans: false,
                    },
                };
                // Bias, residual (from output column c0 on) and activation.
                let epi_at = |c0: usize| {
                    let mut epi = Epilogue::activation(self.activation);
                    if let Some(b) = bias_g {
                        epi = epi.with_bias(Bias::PerRow(b));
                    }
                    if let Some(z) = z {
                        epi = epi.with_residual(&z[first + c0..first + cout_g * ohw], ohw);
                    }
                    epi
                };
                // One tile: columns [c0, c0 + cols) of this group's output into `c` (row
                // stride `ldc`), on `th` threads.
                let run_tile = |c0: usize,
                                cols: usize,
                                c: &mut [f32],
                                ldc: usize,
                                th: usize|
                 -> KernelResult<()> {
                    let epi = epi_at(c0);
                    let p = GemmParams::new(cout_g, cols, kk);
                    if pointwise {
                        let b_op = BOperand::Raw {
                            data: &xg[c0..],
                            ld: ohw,
                            trans: false,
                        };
                        return gemm::sgemm(&p, a_op, b_op, c, ldc, &epi, th).map_err(gemm_err);
                    }
                    with_im2col_buf(kk * cols, |col| {
                        im2col_tile(xg, cin_g, &g, c0, cols, col);
                        let b_op = BOperand::Raw {
                            data: col,
                            ld: cols,
                            trans: false,
                        };
                        gemm::sgemm(&p, a_op, b_op, c, ldc, &epi, th).map_err(gemm_err)
                    })
                };
                if parallel {
                    // The tiles in parallel, each im2col'd into its thread's buffer and
                    // multiplied straight into its columns of the output.
                    let epi = epi_at(0);
                    let p = GemmParams::new(cout_g, ohw, kk);
                    let dst = &mut out[first..first + cout_g * ohw];
                    gemm::sgemm_column_tiles(&p, a_op, tile, dst, ohw, &epi, t, |c0, cols, mm| {
                        with_im2col_buf(kk * cols, |col| {
                            im2col_tile(xg, cin_g, &g, c0, cols, col);
                            mm(BOperand::Raw {
                                data: col,
                                ld: cols,
                                trans: false,
                            })
                        })
                    })
                    .map_err(gemm_err)?;
                } else {
                    let mut c0 = 0;
                    while c0 < ohw {
                        let cols = tile.min(ohw - c0);
                        let c = &mut out[first + c0..first + cout_g * ohw];
                        run_tile(c0, cols, c, ohw, threads)?;
                        c0 += cols;
                    }
                }
            }
        }
        Ok(())
    }
}

impl ConvKernel {
    /// Wᵀ as a packed right operand, packed from `pw` once (the kernel may outlive the raw
    /// weights).
    fn weights_transposed(&self, pw: &PackedA) -> KernelResult<&PackedB> {
        if let Some(wt) = self.packed_wt.get() {
            return Ok(wt);
        }
        // Two runs racing here both pack; one result is kept.
        let wt = pw.transposed().map_err(gemm_err)?;
        Ok(self.packed_wt.get_or_init(|| wt))
    }

    /// Depthwise: one direct 2-D filter per channel, channels split over the threads.
    #[allow(clippy::too_many_arguments)]
    fn depthwise(
        &self,
        xv: &[f32],
        wv: &[f32],
        bias: Option<&[f32]>,
        z: Option<&[f32]>,
        g: &DwGeometry,
        channels: usize,
        out: &mut [f32],
        threads: usize,
    ) -> KernelResult<()> {
        use rayon::prelude::*;
        let isa = Isa::best();
        let (hw, ohw, taps) = (g.h * g.w, g.oh * g.ow, g.kh * g.kw);
        let plan = DwPlan::new(g);
        // A residual is added after the filter, so the activation follows it; otherwise the
        // activation runs on the filter's registers.
        let in_plane = if z.is_some() {
            Activation::None
        } else {
            self.activation
        };
        // The residual of the output planes from `first` on, then the activation.
        let residual = |o: &mut [f32], first: usize| -> KernelResult<()> {
            if let Some(z) = z {
                for (v, r) in o.iter_mut().zip(&z[first * ohw..]) {
                    *v += r;
                }
                if self.activation != Activation::None {
                    gemm::activate(isa, &self.activation, o).map_err(gemm_err)?;
                }
            }
            Ok(())
        };
        let plane_fn =
            |scratch: &mut Vec<f32>, (plane, o): (usize, &mut [f32])| -> KernelResult<()> {
                let c = plane % channels;
                let img = &xv[plane * hw..(plane + 1) * hw];
                let wts = &wv[c * taps..(c + 1) * taps];
                let b = bias.map_or(0.0, |b| b[c]);
                plan.plane(isa, img, wts, b, &in_plane, o, scratch);
                residual(o, plane)
            };
        // Small planes go in blocks of 16 channels (when there are enough channels to fill a
        // block mostly).
        if channels >= BLOCK / 2 && depthwise_blocked::pays_off(g, isa) {
            if let Some(bp) = DwBlockPlan::new(g) {
                let block_fn = |scratch: &mut Vec<f32>,
                                (n, b, o): (usize, usize, &mut [f32])|
                 -> KernelResult<()> {
                    let (c0, nc) = (b * BLOCK, o.len() / ohw);
                    let first = n * channels + c0;
                    let x = &xv[first * hw..(first + nc) * hw];
                    let wts = &wv[c0 * taps..(c0 + nc) * taps];
                    let b = bias.map(|b| &b[c0..c0 + nc]);
                    bp.block(isa, x, wts, b, &in_plane, o, scratch);
                    residual(o, first)
                };
                let mut tasks: Vec<(usize, usize, &mut [f32])> = out
                    .chunks_mut(channels * ohw)
                    .enumerate()
                    .flat_map(|(n, img)| {
                        img.chunks_mut(BLOCK * ohw)
                            .enumerate()
                            .map(move |(b, o)| (n, b, o))
                    })
                    .collect();
                let min_blocks = (DW_TASK_OUTPUTS / (BLOCK * ohw * taps).max(1)).max(1);
                let per = tasks.len().div_ceil(threads).max(min_blocks);
                let run = |part: &mut [(usize, usize, &mut [f32])]| -> KernelResult<()> {
                    let mut scratch = bp.scratch();
                    part.iter_mut()
                        .try_for_each(|(n, b, o)| block_fn(&mut scratch, (*n, *b, o)))
                };
                if threads > 1 && tasks.len() > per {
                    // Runs on the session's pool (the runtime installs it for kernel threads > 1).
                    tasks.par_chunks_mut(per).try_for_each(run)?;
                } else {
                    run(&mut tasks)?;
                }
                return Ok(());
            }
        }
        // One scratch per part, reused across its channels (zeroed once: every channel rewrites
        // the same pixels of it). As many parts as threads: a scratch per rayon leaf cost as
        // much as the arithmetic of a small layer (a zeroed allocation each).
        let min_planes = (DW_TASK_OUTPUTS / (ohw * taps).max(1)).max(1);
        let planes = out.len() / ohw.max(1);
        let per = planes.div_ceil(threads).max(min_planes);
        let run = |(k, part): (usize, &mut [f32])| -> KernelResult<()> {
            let mut scratch = plan.scratch();
            part.chunks_mut(ohw)
                .enumerate()
                .try_for_each(|(i, o)| plane_fn(&mut scratch, (k * per + i, o)))
        };
        if threads > 1 && planes > per {
            // Runs on the session's pool (the runtime installs it for kernel threads > 1).
            out.par_chunks_mut(per * ohw).enumerate().try_for_each(run)
        } else {
            run((0, out))
        }
    }
}
