//! `ai.rge` FusedConvNhwc: `Y = act(conv(X, W) + B + Z)` on channels-last data (X `[N, H, W,
//! Cin]`, Y and Z `[N, OH, OW, Cout]`; W stays ONNX's `[Cout, Cin/group, kh, kw]`), the op of the
//! dense engine's channels-last regions (`layout.rs`).
//!
//! Channels-last makes every output pixel's channels contiguous, so the bias is per vector
//! lane and the residual is read in place:
//! - 1×1, stride 1, no padding, deeper than the direct kernel's chunks (on the portable path,
//!   more than [`MAX_DIRECT_COUT`] output and [`MAX_DIRECT_CIN`] input channels): one GEMM,
//!   `Y[N·H·W × Cout] = X[N·H·W × Cin] · Wᵀ`, with X read as it is and W packed;
//! - other ungrouped convolutions: the direct kernel of `direct_nhwc.rs` (no patch matrix, no
//!   packing of the input; a zero-bordered copy of a padded input);
//! - depthwise: the direct kernel of `depthwise_nhwc.rs`.
//!
//! An input prologue (`conv_prologue.rs`: the input as the parts of a channel concatenation,
//! inputs 0 and 6…, and `act(X·S + H)` per channel, inputs S and H) is read in L2-sized bands
//! of pixels, each convolved right after, on a pointwise convolution; on any other the whole
//! image is read first.
//!
//! Constant weights of the GEMM are packed once (CompileOp) and kept in saved models; the direct
//! kernels repack theirs when the kernel is made.

use rayon::prelude::*;
use rge_ir::AttrValue;
use rge_kernels::parts::{for_each_chunk_mut, for_each_part};
use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};
use rge_kernels_nn::WindowAttrs;

use crate::conv_prologue::{
    band_pixels, Affine, InputRead, FIRST_EXTRA_PART, INPUT_ACTIVATION, INPUT_ACTIVATION_PARAMS,
};
use crate::depthwise::DwGeometry;
use crate::depthwise_nhwc::{DwNhwc, DwNhwcArgs};
use crate::direct_nhwc::{self, DirectArgs, DirectNhwc};
use crate::gemm::{self, AOperand, Activation, BOperand, Bias, Epilogue, GemmParams, Isa, PackedB};
use crate::im2col::with_im2col_buf;
use crate::kernels::{activation, activation_named, f32s, gemm_err, PACKED_B_ATTR};
use crate::shared_out::SharedOut;
use crate::winograd_nhwc::{WinogradArgs, WinogradNhwc, WINOGRAD_ATTR};

/// Multiply-adds per parallel task of the depthwise kernel, at least.
const DIRECT_TASK_WORK: usize = 16 * 1024;

/// Multiply-adds of an ungrouped direct convolution worth splitting over threads.
const DIRECT_PAR_WORK: usize = 256 * 1024;

/// Pixel splits fall on multiples of the widest register tile (AVX-512's 12 pixels).
pub(crate) const DIRECT_PIXEL_ALIGN: usize = 12;

/// On the portable path, a 1×1 stride-1 convolution runs on the direct kernel, not the GEMM,
/// when it has at most this many output channels or at most [`MAX_DIRECT_CIN`] input channels
/// (with SIMD, see [`pointwise_as_gemm`]). The GEMM's 32-column tiles would be half empty, and
/// with few steps its packing and tile overheads cost more than the arithmetic.
pub const MAX_DIRECT_COUT: usize = 128;

/// See [`MAX_DIRECT_COUT`].
pub const MAX_DIRECT_CIN: usize = 64;

/// Whether a pointwise convolution of `cin` → `cout` channels runs as one GEMM on this
/// machine. With SIMD the direct kernel's tiles with the residual and activation in registers
/// beat the GEMM plus its epilogue in the model, though the bare GEMM is faster on its own: so
/// only inputs too deep for those tiles (chunked) stay on the GEMM. Measured on ResNet-50 at 1
/// thread: with AVX-512 the summed 1×1 time 4% lower (28² 128→512 0.78 → 0.68 ms, 28² 512→256
/// 1.59 → 1.21); with AVX2 (an EPYC, 6 × 2 tiles) the model 101 → 97 ms (best of 10, three
/// alternated runs), the same or better at 2 threads and on MobileNetV2. Since the GEMM's
/// one-row tiles and register packing, on AVX2 inputs of 1024 channels and more run faster on
/// it (ResNet-50 in the model, 1 thread: 7² 2048→512 1.52 → 1.24 ms, 14² 1024→256 1.19 →
/// 1.15, 14² 1024→512 2.38 → 2.23), shallower ones still slower (56² 64→256 with its residual
/// 1.38 → 1.96, 28² 512→128 1.10 → 1.19), except expansions (at least 4× the channels out)
/// without a residual, where the direct kernel's blocks of 32 outputs re-read each pixel's
/// input many times (MobileNetV2 at 1 thread: 14² 96→576 0.275 → 0.244 ms, 7² 160→960 0.228 →
/// 0.198, 56² 24→144 0.352 → 0.319; its projections stay direct: 56² 144→24 0.25 against 0.40
/// as a GEMM).
///
/// An image of few pixels (the node's `few_pixels`, set by the channels-last pass) runs as a
/// GEMM on AVX2 whatever its depth: the direct kernel's few pixel tiles each re-read their
/// weight blocks. In the models at 1 thread, best of 6–8 alternated runs: ResNet-50's 7²
/// 512→2048 with its residual 1.68 → 1.52 ms per node (2 threads 0.81 → 0.78), MobileNetV2's
/// 7² 960→160 with its residual 0.238 → 0.202, 960→320 0.472 → 0.412; by depth instead (512
/// input channels at any size), 28² 512→128 lost 1.18 → 1.27.
fn pointwise_as_gemm(cin: usize, cout: usize, residual: bool, few_pixels: bool) -> bool {
    match Isa::best() {
        Isa::Avx2 => cin >= AVX2_GEMM_DEPTH || (!residual && cout >= 4 * cin) || few_pixels,
        Isa::Scalar => cout > MAX_DIRECT_COUT && cin > MAX_DIRECT_CIN,
        _ => cin > direct_nhwc::CHUNKED_DEPTH,
    }
}

/// On AVX2, the fewest input channels of a pointwise convolution run as one GEMM.
const AVX2_GEMM_DEPTH: usize = 1024;

/// The attribute the channels-last pass sets (1) on a pointwise convolution whose output has at
/// most [`FEW_PIXELS`] pixels (see [`pointwise_as_gemm`]).
pub const FEW_PIXELS_ATTR: &str = "few_pixels";

/// The most output pixels of a [`FEW_PIXELS_ATTR`] convolution: a 7×7 image.
pub const FEW_PIXELS: i64 = 49;

/// The kernel: its window, group, activation and its constant weights, packed for the GEMM
/// (`[Cin × Cout]`) or repacked for a direct kernel.
pub struct ConvNhwcKernel {
    window: WindowAttrs,
    group: usize,
    activation: Activation,
    /// The activation of the input prologue (when the node has S and H).
    input_activation: Activation,
    packed_w: Option<PackedB>,
    /// Constant weights of the direct kernels, repacked (`[kh, kw, Cin, Cout]`, or depthwise
    /// `[kh·kw, C]`).
    direct_w: Option<Vec<f32>>,
    /// Constant weights transformed for Winograd, when the channels-last pass chose it
    /// (`winograd = 1`); then there are no direct weights.
    winograd: Option<WinogradNhwc>,
    /// The node's `few_pixels` (see [`pointwise_as_gemm`]).
    few_pixels: bool,
}

/// Whether the weight shape `[Cout, Cin/group, kh, kw]` with `group` is one the kernel runs:
/// ungrouped or depthwise (one filter per channel).
pub fn supported_grouping(w: &[i64], group: i64) -> bool {
    w.len() == 4 && (group == 1 || (w[1] == 1 && w[0] == group))
}

/// ONNX weights `[Cout, Cin, kh, kw]` as the GEMM's `[(kh, kw, Cin) × Cout]`, packed.
fn pack_weights(w: &[f32], shape: &[usize]) -> KernelResult<PackedB> {
    let (cout, cin, kh, kw) = (shape[0], shape[1], shape[2], shape[3]);
    let k = cin * kh * kw;
    if w.len() != cout * k {
        return Err(KernelError::invalid(format!(
            "weights of {} values for shape {shape:?}",
            w.len()
        )));
    }
    // Row `co` of `[Cout × (kh, kw, Cin)]`, read transposed by the packer.
    let mut rows = vec![0.0f32; cout * k];
    for co in 0..cout {
        for ci in 0..cin {
            for t in 0..kh * kw {
                rows[co * k + t * cin + ci] = w[(co * cin + ci) * kh * kw + t];
            }
        }
    }
    PackedB::pack(&rows, k, cout, k, true).map_err(gemm_err)
}

fn conv_group(init: &KernelInit<'_>) -> KernelResult<usize> {
    usize::try_from(init.int_or("group", 1)?)
        .ok()
        .filter(|&g| g > 0)
        .ok_or_else(|| KernelError::attr("group", "must be positive"))
}

/// Whether a convolution with weights `[Cout, Cin, kh, kw]` runs as one GEMM: ungrouped 1×1,
/// stride 1, unpadded, with the channel counts (and residual or not) of [`pointwise_as_gemm`].
fn runs_as_gemm(
    window: &WindowAttrs,
    w: &[usize],
    group: usize,
    (residual, few_pixels): (bool, bool),
) -> bool {
    group == 1
        && w.len() == 4
        && pointwise_as_gemm(w[1], w[0], residual, few_pixels)
        && w[2] == 1
        && w[3] == 1
        && all_ones(&window.strides)
        && window
            .pads
            .as_ref()
            .is_none_or(|p| p.iter().all(|&x| x == 0))
}

/// Whether an optional per-axis attribute (strides, dilations) is absent or all ones.
fn all_ones(v: &Option<Vec<usize>>) -> bool {
    v.as_ref().is_none_or(|v| v.iter().all(|&x| x == 1))
}

/// Whether the node has a residual input (Z), and whether the pass marked its image as one of
/// few pixels.
fn residual_and_size(init: &KernelInit<'_>) -> KernelResult<(bool, bool)> {
    let residual = init.input_types.get(3).is_some_and(Option::is_some);
    Ok((residual, init.int_or(FEW_PIXELS_ATTR, 0)? != 0))
}

/// The packed weights of a constant W that runs as a GEMM.
fn packed_from_constant(
    init: &KernelInit<'_>,
    window: &WindowAttrs,
    group: usize,
    hints: (bool, bool),
) -> KernelResult<Option<PackedB>> {
    match init.constant(1) {
        Some(w) if runs_as_gemm(window, w.shape(), group, hints) => {
            Ok(Some(pack_weights(w.as_slice::<f32>()?, w.shape())?))
        }
        _ => Ok(None),
    }
}

/// The repacked constant weights of the direct kernels: depthwise ones, or ungrouped ones
/// that do not run as a GEMM.
fn direct_from_constant(
    init: &KernelInit<'_>,
    window: &WindowAttrs,
    group: usize,
    hints: (bool, bool),
) -> KernelResult<Option<Vec<f32>>> {
    let Some(w) = init.constant(1).filter(|w| w.shape().len() == 4) else {
        return Ok(None);
    };
    let s = w.shape();
    let data = w.as_slice::<f32>()?;
    let g = DwGeometry {
        h: 0,
        w: 0,
        kh: s[2],
        kw: s[3],
        stride_h: 1,
        stride_w: 1,
        dil_h: 1,
        dil_w: 1,
        pad_top: 0,
        pad_left: 0,
        oh: 0,
        ow: 0,
    };
    let expected = s.iter().product::<usize>();
    if data.len() != expected {
        return Ok(None);
    }
    Ok(if group > 1 && s[1] == 1 && s[0] == group {
        Some(DwNhwc { g, channels: s[0] }.repack_weights(data))
    } else if group == 1 && !runs_as_gemm(window, s, group, hints) {
        Some(
            DirectNhwc {
                g,
                cin: s[1],
                cout: s[0],
            }
            .repack_weights(data),
        )
    } else {
        None
    })
}

/// Compile time (CompileOp): the packed constant weights, kept on the op.
pub fn prepare_conv_nhwc(init: &KernelInit<'_>) -> KernelResult<Vec<(String, AttrValue)>> {
    let window = WindowAttrs::parse(init)?;
    let hints = residual_and_size(init)?;
    let packed = packed_from_constant(init, &window, conv_group(init)?, hints)?;
    Ok(packed
        .map(|p| {
            vec![(
                PACKED_B_ATTR.to_string(),
                AttrValue::Bytes(p.as_bytes().to_vec()),
            )]
        })
        .unwrap_or_default())
}

/// Builds the kernel.
pub fn create_conv_nhwc(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let group = conv_group(init)?;
    let window = WindowAttrs::parse(init)?;
    let hints = residual_and_size(init)?;
    let packed_w = match init.attrs.get(PACKED_B_ATTR) {
        Some(AttrValue::Bytes(b)) => Some(
            PackedB::from_bytes(b).map_err(|e| KernelError::attr(PACKED_B_ATTR, e.to_string()))?,
        ),
        Some(_) => return Err(KernelError::attr(PACKED_B_ATTR, "not bytes")),
        None => packed_from_constant(init, &window, group, hints)?,
    };
    let winograd = winograd_from_constant(init, &window, group)?;
    let direct_w = match winograd {
        Some(_) => None,
        None => direct_from_constant(init, &window, group, hints)?,
    };
    Ok(Box::new(ConvNhwcKernel {
        window,
        group,
        activation: activation(init)?,
        input_activation: activation_named(init, INPUT_ACTIVATION, INPUT_ACTIVATION_PARAMS)?,
        packed_w,
        direct_w,
        winograd,
        few_pixels: hints.1,
    }))
}

/// The Winograd weights of a node marked `winograd = 1` with constant weights; the mark on a
/// window other than 3×3, stride 1, undilated and ungrouped is an error.
fn winograd_from_constant(
    init: &KernelInit<'_>,
    window: &WindowAttrs,
    group: usize,
) -> KernelResult<Option<WinogradNhwc>> {
    match init.int_or(WINOGRAD_ATTR, 0)? {
        0 => return Ok(None),
        1 => {}
        v => {
            return Err(KernelError::attr(
                WINOGRAD_ATTR,
                format!("{v}: must be 0 or 1"),
            ))
        }
    }
    let threes = window.kernel.as_ref().is_none_or(|k| k == &[3, 3]);
    if group != 1 || !all_ones(&window.strides) || !all_ones(&window.dilations) || !threes {
        return Err(KernelError::attr(
            WINOGRAD_ATTR,
            "set on a convolution that is not 3x3, stride 1, undilated and ungrouped",
        ));
    }
    let Some(w) = init.constant(1) else {
        // Computed weights: the direct kernel, repacking them on each run.
        return Ok(None);
    };
    let s = w.shape();
    if s.len() != 4 || s[2] != 3 || s[3] != 3 {
        return Err(KernelError::attr(
            WINOGRAD_ATTR,
            format!("set on weights of shape {s:?}, not [Cout, Cin, 3, 3]"),
        ));
    }
    WinogradNhwc::new(w.as_slice::<f32>()?, s[0], s[1])
        .map(Some)
        .map_err(gemm_err)
}

/// One convolution's sizes.
struct Dims {
    n: usize,
    cin: usize,
    cout: usize,
    g: DwGeometry,
}

impl Kernel for ConvNhwcKernel {
    fn absorbed_inputs(&self) -> &[usize] {
        if self.packed_w.is_some() || self.direct_w.is_some() || self.winograd.is_some() {
            &[1]
        } else {
            &[]
        }
    }

    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let w = ctx.input(1)?;
        let (sx, sw) = (x.shape().to_vec(), w.shape().to_vec());
        if sx.len() != 4 || sw.len() != 4 {
            return Err(KernelError::invalid(format!(
                "FusedConvNhwc is 2-D: input {sx:?}, weights {sw:?}"
            )));
        }
        let (n, h, wd) = (sx[0], sx[1], sx[2]);
        let read = self.input_read(ctx, &sx)?;
        let cin = read.channels();
        let (cout, cin_g, kh, kw) = (sw[0], sw[1], sw[2], sw[3]);
        let grp = self.group;
        let depthwise = grp > 1 && grp == cin && cout == cin && cin_g == 1;
        if cin != cin_g * grp || !(grp == 1 || depthwise) {
            return Err(KernelError::invalid(format!(
                "FusedConvNhwc: input channels {cin}, weights {sw:?}, group {grp}: only \
                 ungrouped and depthwise convolutions run channels-last"
            )));
        }
        let geo = self.window.resolve(&[h, wd], Some(&[kh, kw]))?;
        let g = DwGeometry {
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
        };
        let out_shape = [n, g.oh, g.ow, cout];
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
        let pointwise = g.is_pointwise();
        // Pointwise, the input is read in bands (`banded`); else here, whole (module docs).
        let banded = !read.is_plain() && pointwise && !depthwise;
        let whole;
        let xv = if read.is_plain() || banded {
            read.parts[0].0
        } else {
            let mut v = vec![0.0f32; n * h * wd * cin];
            read.read(Isa::best(), (0, n * h * wd), &mut v);
            whole = v;
            &whole[..]
        };
        let packed = self
            .packed_w
            .as_ref()
            .filter(|p| p.k() == cin * kh * kw && p.n() == cout);
        let direct_w = self.direct_w.as_ref().filter(|v| {
            let want = if depthwise {
                cout * kh * kw
            } else {
                cout.div_ceil(direct_nhwc::BLOCK) * direct_nhwc::BLOCK * cin * kh * kw
            };
            v.len() == want
        });
        let winograd = self
            .winograd
            .as_ref()
            .filter(|wg| !depthwise && wg.cin() == cin && wg.cout() == cout);
        // Packed weights are the kernel's own copy: the constant's data may have been released.
        let wv = if packed.is_some() || direct_w.is_some() || winograd.is_some() {
            &[][..]
        } else {
            f32s(&w, "W")?
        };
        let threads = ctx.threads().max(1);
        let out = ctx.output::<f32>(0, &out_shape)?;
        if out.is_empty() {
            return Ok(());
        }
        let d = Dims { n, cin, cout, g };
        let io = Io { x: xv, bias, z };
        // Weights packed at compile time run the GEMM (a model saved on another machine).
        if !depthwise
            && pointwise
            && (packed.is_some() || pointwise_as_gemm(cin, cout, z.is_some(), self.few_pixels))
        {
            let owned;
            let b_op = match packed {
                Some(p) => BOperand::Packed(p),
                None => {
                    owned = pack_weights(wv, &sw)?;
                    BOperand::Packed(&owned)
                }
            };
            if banded {
                return self.banded(&d, &io, &read, Pointwise::Gemm(b_op), out, threads);
            }
            return self.gemm(&d, &io, b_op, out, threads);
        }
        if let Some(wg) = winograd {
            return self.winograd(wg, &d, &io, out, threads);
        }
        let repacked;
        let wts = match direct_w {
            Some(v) => v.as_slice(),
            None => {
                check_weights(wv, cout * cin_g * kh * kw)?;
                repacked = if depthwise {
                    DwNhwc { g, channels: cout }.repack_weights(wv)
                } else {
                    DirectNhwc { g, cin, cout }.repack_weights(wv)
                };
                &repacked
            }
        };
        if depthwise {
            self.depthwise(&d, &io, wts, out, threads)
        } else if banded {
            self.banded(&d, &io, &read, Pointwise::Direct(wts), out, threads)
        } else {
            self.direct(&d, &io, wts, out, threads)
        }
    }
}

/// How a pointwise convolution runs: a GEMM with these weights, or the direct kernel with
/// these repacked ones.
#[derive(Clone, Copy)]
enum Pointwise<'a> {
    Gemm(BOperand<'a>),
    Direct(&'a [f32]),
}

/// A run's input, bias and residual.
struct Io<'a> {
    x: &'a [f32],
    bias: Option<&'a [f32]>,
    z: Option<&'a [f32]>,
}

impl ConvNhwcKernel {
    /// How the node reads its input (`conv_prologue.rs`): input 0 of shape `sx` and the
    /// further parts of its channels (inputs 6…, of the same image size), then the per-channel
    /// map of inputs 4 and 5 (`[C]` each) when the node has them.
    fn input_read<'a>(&self, ctx: &KernelCtx<'a>, sx: &[usize]) -> KernelResult<InputRead<'a>> {
        let mut parts = vec![(f32s(&ctx.input(0)?, "X")?, sx[3])];
        for i in FIRST_EXTRA_PART..ctx.input_count() {
            let t = ctx.input(i)?;
            let st = t.shape();
            if st.len() != 4 || st[..3] != sx[..3] {
                return Err(KernelError::invalid(format!(
                    "input {i}, a part of the input's channels, has shape {st:?}; X has {sx:?}"
                )));
            }
            parts.push((f32s(&t, "an input part")?, st[3]));
        }
        let affine = match (ctx.opt_input(4)?, ctx.opt_input(5)?) {
            (None, None) => None,
            (Some(s), Some(h)) => Some(Affine {
                scale: f32s(&s, "S")?,
                shift: f32s(&h, "H")?,
                act: self.input_activation,
            }),
            _ => {
                return Err(KernelError::invalid(
                    "the input prologue needs both S and H (or neither)",
                ))
            }
        };
        let read = InputRead { parts, affine };
        let c = read.channels();
        if let Some(a) = &read.affine {
            if a.scale.len() != c || a.shift.len() != c {
                return Err(KernelError::invalid(format!(
                    "the input prologue has {} scales and {} shifts for {c} input channels",
                    a.scale.len(),
                    a.shift.len()
                )));
            }
        }
        Ok(read)
    }

    /// Pointwise with an input prologue: bands of pixels read into a buffer that stays in L2,
    /// each convolved right after. The threads take whole bands when there are enough,
    /// else share each band's work.
    fn banded(
        &self,
        d: &Dims,
        io: &Io<'_>,
        read: &InputRead<'_>,
        conv: Pointwise<'_>,
        out: &mut [f32],
        threads: usize,
    ) -> KernelResult<()> {
        let (rows, cin, cout) = (d.n * d.g.oh * d.g.ow, d.cin, d.cout);
        let isa = Isa::best();
        let tasks = if threads > 1 && rows * cin * cout >= DIRECT_PAR_WORK {
            threads
        } else {
            1
        };
        // As many bands per task, of whole tiles, at most L2's size each.
        let mut band = band_pixels(cin);
        let mut bands = rows.div_ceil(band);
        if bands >= tasks {
            bands = bands.div_ceil(tasks) * tasks;
            band = rows.div_ceil(bands).div_ceil(DIRECT_PIXEL_ALIGN) * DIRECT_PIXEL_ALIGN;
            bands = rows.div_ceil(band);
        }
        // Rows [r0, r1): transformed into `buf`, then convolved on `inner` threads into `o`.
        let run_band = |r0: usize, r1: usize, buf: &mut [f32], o: &mut [f32], inner: usize| {
            let xb = &mut buf[..(r1 - r0) * cin];
            read.read(isa, (r0, r1), xb);
            self.pointwise_rows(d, io, conv, xb, (r0, r1), o, inner)
        };
        if tasks == 1 || bands < tasks {
            return with_im2col_buf(band * cin, |buf| {
                for r0 in (0..rows).step_by(band) {
                    let r1 = (r0 + band).min(rows);
                    run_band(r0, r1, buf, &mut out[r0 * cout..r1 * cout], tasks)?;
                }
                Ok(())
            });
        }
        let per = bands.div_ceil(tasks) * band;
        let failed = std::sync::Mutex::new(None);
        for_each_chunk_mut(out, per * cout, |t, o| {
            let first = t * per;
            let last = (first + per).min(rows);
            let done = with_im2col_buf(band * cin, |buf| {
                for r0 in (first..last).step_by(band) {
                    let r1 = (r0 + band).min(last);
                    let o = &mut o[(r0 - first) * cout..(r1 - first) * cout];
                    run_band(r0, r1, buf, o, 1)?;
                }
                Ok(())
            });
            if let (Err(e), Ok(mut slot)) = (done, failed.lock()) {
                slot.get_or_insert(e);
            }
        });
        match failed.into_inner() {
            Ok(Some(e)) => Err(e),
            _ => Ok(()),
        }
    }

    /// Output rows `[r0, r1)` (pixels over all images) of a pointwise convolution of the input
    /// rows `x`, into `o`, on `threads`.
    #[allow(clippy::too_many_arguments)]
    fn pointwise_rows(
        &self,
        d: &Dims,
        io: &Io<'_>,
        conv: Pointwise<'_>,
        x: &[f32],
        (r0, r1): (usize, usize),
        o: &mut [f32],
        threads: usize,
    ) -> KernelResult<()> {
        let px = r1 - r0;
        match conv {
            Pointwise::Gemm(b) => {
                let a = AOperand::Raw {
                    data: x,
                    ld: d.cin,
                    trans: false,
                };
                let p = GemmParams::new(px, d.cout, d.cin);
                let epi = self.epilogue(io, d.cout, r0);
                gemm::sgemm(&p, a, b, o, d.cout, &epi, threads).map_err(gemm_err)
            }
            Pointwise::Direct(wts) => {
                // The band is an image of one row (the window stays the pointwise one).
                let g = DwGeometry {
                    h: 1,
                    w: px,
                    oh: 1,
                    ow: px,
                    ..d.g
                };
                let k = DirectNhwc {
                    g,
                    cin: d.cin,
                    cout: d.cout,
                };
                let args = DirectArgs {
                    x,
                    wts,
                    bias: io.bias,
                    z: io.z.map(|z| &z[r0 * d.cout..]),
                    act: &self.activation,
                };
                let (blocks, isa) = (k.blocks(), Isa::best());
                let tasks = threads.min(blocks).max(1);
                let dst = SharedOut(o.as_mut_ptr());
                for_each_part(tasks, |t| {
                    // SAFETY: `dst` is `o`, the band's `px · Cout` outputs, borrowed for the
                    // call; the tasks write disjoint channel blocks.
                    unsafe { k.run(isa, &args, (0, px), share(blocks, tasks, t, 1), dst.ptr()) }
                });
                Ok(())
            }
        }
    }

    /// The epilogue of output rows from `r0` on.
    fn epilogue<'a>(&self, io: &Io<'a>, cout: usize, r0: usize) -> Epilogue<'a> {
        let mut epi = Epilogue::activation(self.activation);
        if let Some(b) = io.bias {
            epi = epi.with_bias(Bias::PerColumn(b));
        }
        if let Some(z) = io.z {
            epi = epi.with_residual(&z[r0 * cout..], cout);
        }
        epi
    }

    /// 1×1 stride 1 unpadded: one GEMM over pixels, X read in place.
    fn gemm(
        &self,
        d: &Dims,
        io: &Io<'_>,
        b_op: BOperand<'_>,
        out: &mut [f32],
        threads: usize,
    ) -> KernelResult<()> {
        let rows = d.n * d.g.oh * d.g.ow;
        let a = AOperand::Raw {
            data: io.x,
            ld: d.cin,
            trans: false,
        };
        let p = GemmParams::new(rows, d.cout, d.cin);
        let epi = self.epilogue(io, d.cout, 0);
        gemm::sgemm(&p, a, b_op, out, d.cout, &epi, threads).map_err(gemm_err)
    }

    /// Winograd, image by image (the threads share each image's tile rows and points).
    fn winograd(
        &self,
        wg: &WinogradNhwc,
        d: &Dims,
        io: &Io<'_>,
        out: &mut [f32],
        threads: usize,
    ) -> KernelResult<()> {
        let pixels = d.g.oh * d.g.ow;
        for (img, o) in out.chunks_exact_mut(pixels * d.cout).enumerate() {
            let args = WinogradArgs {
                x: io.image(d, img),
                bias: io.bias,
                z: io.residual(d, img, 0),
                act: &self.activation,
            };
            wg.conv(&args, &d.g, o, threads).map_err(gemm_err)?;
        }
        Ok(())
    }

    /// Depthwise: the direct channels-last kernel (weights repacked), output rows split over
    /// the threads.
    fn depthwise(
        &self,
        d: &Dims,
        io: &Io<'_>,
        wts: &[f32],
        out: &mut [f32],
        threads: usize,
    ) -> KernelResult<()> {
        let g = d.g;
        let k = DwNhwc {
            g,
            channels: d.cout,
        };
        let isa = Isa::best();
        by_rows(d, out, threads, g.kh * g.kw, |img, oy, o| {
            let args = DwNhwcArgs {
                x: io.image(d, img),
                wts,
                bias: io.bias,
                z: io.residual(d, img, oy),
                act: &self.activation,
            };
            k.rows(isa, &args, oy, o);
        });
        Ok(())
    }

    /// Ungrouped, not a GEMM: the direct kernel, image by image, a padded image read from its
    /// zero-bordered copy. Threads split the channel blocks when the weights outweigh the
    /// image (deep layers on small images: each thread streams only its blocks' weights), else
    /// the pixels.
    fn direct(
        &self,
        d: &Dims,
        io: &Io<'_>,
        wts: &[f32],
        out: &mut [f32],
        threads: usize,
    ) -> KernelResult<()> {
        let g = d.g;
        let k = DirectNhwc {
            g,
            cin: d.cin,
            cout: d.cout,
        };
        let isa = Isa::best();
        let (pixels, blocks) = (g.oh * g.ow, k.blocks());
        let work = pixels * d.cout * d.cin * g.kh * g.kw;
        let tasks = if threads > 1 && work >= DIRECT_PAR_WORK {
            threads
        } else {
            1
        };
        let by_blocks = tasks > 1 && blocks >= tasks && wts.len() > g.h * g.w * d.cin;
        let padded_len = if k.needs_padding() { k.padded_len() } else { 0 };
        with_im2col_buf(padded_len, |padded| {
            for (img, o) in out.chunks_exact_mut(pixels * d.cout).enumerate() {
                let mut x = io.image(d, img);
                if k.needs_padding() {
                    // The copy in bands on the tasks' threads, not before them on one
                    // (ResNet-18 at 2 threads: 4% faster).
                    let buf = &mut padded[..k.padded_len()];
                    let row = k.padded_row();
                    let per = (buf.len() / row).div_ceil(tasks) * row;
                    if tasks > 1 && per > 0 {
                        for_each_chunk_mut(buf, per, |i, band| k.pad_rows(x, i * per / row, band));
                    } else {
                        k.pad_image(x, buf);
                    }
                    x = padded;
                }
                let args = DirectArgs {
                    x,
                    wts,
                    bias: io.bias,
                    z: io.residual(d, img, 0),
                    act: &self.activation,
                };
                let dst = SharedOut(o.as_mut_ptr());
                let part = |t: usize| {
                    let (px, bl) = if by_blocks {
                        ((0, pixels), share(blocks, tasks, t, 1))
                    } else {
                        (share(pixels, tasks, t, DIRECT_PIXEL_ALIGN), (0, blocks))
                    };
                    // SAFETY: `dst` is this image's output (`o`, borrowed for the loop's
                    // body); the tasks write disjoint pixels or disjoint channel blocks.
                    unsafe { k.run(isa, &args, px, bl, dst.ptr()) }
                };
                for_each_part(tasks, part);
            }
        });
        Ok(())
    }
}

/// Part `t` of `n` items shared over `parts`, cut at multiples of `align`.
fn share(n: usize, parts: usize, t: usize, align: usize) -> (usize, usize) {
    let units = n.div_ceil(align);
    // Rounded up: the first part, which the calling thread runs, is the larger (see
    // `gemm::driver::range`).
    let at = |t: usize| ((units * t).div_ceil(parts) * align).min(n);
    (at(t), at(t + 1))
}

impl Io<'_> {
    /// Image `img` of the input.
    fn image(&self, d: &Dims, img: usize) -> &[f32] {
        let len = d.g.h * d.g.w * d.cin;
        &self.x[img * len..(img + 1) * len]
    }

    /// The residual from output row `oy` of image `img` on.
    fn residual(&self, d: &Dims, img: usize, oy: usize) -> Option<&[f32]> {
        let row = d.g.ow * d.cout;
        self.z.map(|z| &z[(img * d.g.oh + oy) * row..])
    }
}

fn check_weights(wv: &[f32], want: usize) -> KernelResult<()> {
    if wv.len() != want {
        return Err(KernelError::invalid(format!(
            "weights of {} values where {want} are needed",
            wv.len()
        )));
    }
    Ok(())
}

/// Runs `rows(img, oy, out)` over runs of output rows of one image at a time, the runs split
/// over the threads (tasks of at least `DIRECT_TASK_WORK` multiply-adds at `per_output` each).
fn by_rows(
    d: &Dims,
    out: &mut [f32],
    threads: usize,
    per_output: usize,
    rows: impl Fn(usize, usize, &mut [f32]) + Sync,
) {
    let g = &d.g;
    let row = g.ow * d.cout;
    let all = d.n * g.oh;
    let per = (DIRECT_TASK_WORK / (row * per_output).max(1))
        .max(1)
        .max(all.div_ceil(threads));
    // A task: `per` output rows counted over all images (a task may span two).
    let task = |(t, o): (usize, &mut [f32])| {
        let mut done = 0;
        while done < o.len() {
            let r = t * per + done / row;
            let (img, oy) = (r / g.oh, r % g.oh);
            let take = ((g.oh - oy) * row).min(o.len() - done);
            rows(img, oy, &mut o[done..done + take]);
            done += take;
        }
    };
    if threads > 1 && all > per {
        // Runs on the session's pool (the runtime installs it for kernel threads > 1).
        out.par_chunks_mut(per * row).enumerate().for_each(task);
    } else {
        out.chunks_mut(per * row).enumerate().for_each(task);
    }
}
