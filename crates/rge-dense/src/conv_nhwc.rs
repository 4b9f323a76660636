//! `ai.rge` FusedConvNhwc: `Y = act(conv(X, W) + B + Z)` on channels-last data (X `[N, H, W,
//! Cin]`, Y and Z `[N, OH, OW, Cout]`; W stays ONNX's `[Cout, Cin/group, kh, kw]`), the op of the
//! dense engine's channels-last regions (`layout.rs`).
//!
//! Channels-last turns every convolution the region takes into a GEMM whose rows are output
//! pixels and whose columns are output channels, so the bias is per column and the residual
//! is read in place:
//! - 1×1, stride 1, no padding: `Y[N·H·W × Cout] = X[N·H·W × Cin] · Wᵀ` with X read as it is;
//! - other ungrouped convolutions: patch rows (each `kh·kw` runs of `Cin` contiguous
//!   channels) built a tile of pixels at a time into a thread-local buffer, times the weights
//!   reordered to `[(kh, kw, Cin) × Cout]`;
//! - at most [`MAX_DIRECT_COUT`] output channels: the direct kernel of `direct_nhwc.rs` (no
//!   packing, no 32-column tile mostly wasted);
//! - depthwise: the direct kernel of `depthwise_nhwc.rs`.
//!
//! Constant weights are packed once (CompileOp) and kept in saved models.

use rayon::prelude::*;
use rge_ir::AttrValue;
use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};
use rge_kernels_nn::WindowAttrs;

use crate::depthwise::DwGeometry;
use crate::depthwise_nhwc::{DwNhwc, DwNhwcArgs};
use crate::direct_nhwc::{DirectArgs, DirectNhwc};
use crate::gemm::{self, AOperand, Activation, BOperand, Bias, Epilogue, GemmParams, Isa, PackedB};
use crate::im2col::{with_im2col_buf, IM2COL_TILE_FLOATS, PAR_TILE_WORK};
use crate::kernels::{activation, f32s, gemm_err, PACKED_B_ATTR};

/// Multiply-adds per parallel task of the direct kernels, at least.
const DIRECT_TASK_WORK: usize = 16 * 1024;

/// The most output channels of an ungrouped convolution that runs on the direct kernel (two
/// AVX-512 vectors): the GEMM's 32-column tiles would be half empty, and its packing of every
/// pixel would cost more than the arithmetic (MobileNetV2's 144→24 projection: 0.31 ms as a
/// GEMM, 0.10 direct).
pub const MAX_DIRECT_COUT: usize = 32;

/// The kernel: its window, group, activation and, for constant ungrouped weights, the packed
/// `[(kh, kw, Cin) × Cout]` operand.
pub struct ConvNhwcKernel {
    window: WindowAttrs,
    group: usize,
    activation: Activation,
    packed_w: Option<PackedB>,
    /// Constant weights of the direct kernels, repacked (`[kh, kw, Cin, Cout]`, or depthwise
    /// `[kh·kw, C]`).
    direct_w: Option<Vec<f32>>,
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

/// The packed weights of a constant ungrouped W.
fn packed_from_constant(init: &KernelInit<'_>, group: usize) -> KernelResult<Option<PackedB>> {
    match init.constant(1) {
        Some(w) if group == 1 && w.shape().len() == 4 && w.shape()[0] > MAX_DIRECT_COUT => {
            Ok(Some(pack_weights(w.as_slice::<f32>()?, w.shape())?))
        }
        _ => Ok(None),
    }
}

/// The repacked constant weights of the direct kernels: depthwise ones, or ungrouped ones of
/// at most [`MAX_DIRECT_COUT`] output channels.
fn direct_from_constant(init: &KernelInit<'_>, group: usize) -> KernelResult<Option<Vec<f32>>> {
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
    } else if group == 1 && s[0] <= MAX_DIRECT_COUT {
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
    Ok(packed_from_constant(init, conv_group(init)?)?
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
    let packed_w = match init.attrs.get(PACKED_B_ATTR) {
        Some(AttrValue::Bytes(b)) => Some(
            PackedB::from_bytes(b).map_err(|e| KernelError::attr(PACKED_B_ATTR, e.to_string()))?,
        ),
        Some(_) => return Err(KernelError::attr(PACKED_B_ATTR, "not bytes")),
        None => packed_from_constant(init, group)?,
    };
    Ok(Box::new(ConvNhwcKernel {
        window: WindowAttrs::parse(init)?,
        group,
        activation: activation(init)?,
        packed_w,
        direct_w: direct_from_constant(init, group)?,
    }))
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
        if self.packed_w.is_some() || self.direct_w.is_some() {
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
        let (n, h, wd, cin) = (sx[0], sx[1], sx[2], sx[3]);
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
        let xv = f32s(&x, "X")?;
        let packed = self
            .packed_w
            .as_ref()
            .filter(|p| p.k() == cin * kh * kw && p.n() == cout);
        let direct_w = self
            .direct_w
            .as_ref()
            .filter(|v| v.len() == cout * cin_g * kh * kw);
        // Packed weights are the kernel's own copy: the constant's data may have been released.
        let wv = if packed.is_some() || direct_w.is_some() {
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
        if depthwise || cout <= MAX_DIRECT_COUT {
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
            return if depthwise {
                self.depthwise(&d, &io, wts, out, threads)
            } else {
                self.direct(&d, &io, wts, out, threads)
            };
        }
        let owned;
        let b_op = match packed {
            Some(p) => BOperand::Packed(p),
            None => {
                owned = pack_weights(wv, &sw)?;
                BOperand::Packed(&owned)
            }
        };
        self.gemm(&d, &io, b_op, out, threads)
    }
}

/// A run's input, bias and residual.
struct Io<'a> {
    x: &'a [f32],
    bias: Option<&'a [f32]>,
    z: Option<&'a [f32]>,
}

impl ConvNhwcKernel {
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

    /// Ungrouped: one GEMM over pixels (1×1 stride 1 unpadded, X read in place), else patch
    /// rows a tile at a time, the tiles in parallel on several threads.
    fn gemm(
        &self,
        d: &Dims,
        io: &Io<'_>,
        b_op: BOperand<'_>,
        out: &mut [f32],
        threads: usize,
    ) -> KernelResult<()> {
        let g = &d.g;
        let (ohw, k) = (g.oh * g.ow, d.cin * g.kh * g.kw);
        let rows = d.n * ohw;
        let pointwise = g.kh == 1
            && g.kw == 1
            && g.stride_h == 1
            && g.stride_w == 1
            && g.pad_top == 0
            && g.pad_left == 0
            && g.oh == g.h
            && g.ow == g.w;
        if pointwise {
            let a = AOperand::Raw {
                data: io.x,
                ld: d.cin,
                trans: false,
            };
            let p = GemmParams::new(rows, d.cout, d.cin);
            let epi = self.epilogue(io, d.cout, 0);
            return gemm::sgemm(&p, a, b_op, out, d.cout, &epi, threads).map_err(gemm_err);
        }
        let tile = (IM2COL_TILE_FLOATS / k.max(1)).clamp(16, rows.max(16));
        let run = |r0: usize, o: &mut [f32], th: usize| -> KernelResult<()> {
            let m = o.len() / d.cout;
            with_im2col_buf(m * k, |col| {
                patch_rows(io.x, d, r0, m, col);
                let a = AOperand::Raw {
                    data: col,
                    ld: k,
                    trans: false,
                };
                let p = GemmParams::new(m, d.cout, k);
                let epi = self.epilogue(io, d.cout, r0);
                gemm::sgemm(&p, a, b_op, o, d.cout, &epi, th).map_err(gemm_err)
            })
        };
        let work = rows.saturating_mul(k).saturating_mul(d.cout);
        if threads > 1 && rows >= 2 * 16 * threads && work >= PAR_TILE_WORK {
            // As many tiles as a multiple of the threads, each with its own patch rows and a
            // one-thread GEMM into its rows of the output.
            let tiles = rows.div_ceil(tile).div_ceil(threads) * threads;
            let per = rows.div_ceil(tiles).max(1);
            out.par_chunks_mut(per * d.cout)
                .enumerate()
                .try_for_each(|(i, o)| run(i * per, o, 1))
        } else {
            out.chunks_mut(tile * d.cout)
                .enumerate()
                .try_for_each(|(i, o)| run(i * tile, o, threads))
        }
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

    /// Few output channels: the direct channels-last kernel (weights repacked), output rows
    /// split over the threads.
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
        by_rows(d, out, threads, d.cin * g.kh * g.kw, |img, oy, o| {
            let args = DirectArgs {
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

/// Patch rows `[r0, r0 + m)` (output pixels counted over all images) of channels-last `x`
/// into `col` (`[m × (kh, kw, Cin)]`): each tap a run of `Cin` channels, zeros outside.
fn patch_rows(x: &[f32], d: &Dims, r0: usize, m: usize, col: &mut [f32]) {
    let (g, cin) = (&d.g, d.cin);
    let k = cin * g.kh * g.kw;
    let ohw = g.oh * g.ow;
    for (q, dst) in col[..m * k].chunks_exact_mut(k).enumerate() {
        let r = r0 + q;
        let (img, oy, ox) = (r / ohw, r % ohw / g.ow, r % g.ow);
        let base = img * g.h * g.w * cin;
        for i in 0..g.kh {
            let iy = (oy * g.stride_h + i * g.dil_h) as isize - g.pad_top as isize;
            for j in 0..g.kw {
                let ix = (ox * g.stride_w + j * g.dil_w) as isize - g.pad_left as isize;
                let run = &mut dst[(i * g.kw + j) * cin..(i * g.kw + j + 1) * cin];
                if iy < 0 || ix < 0 || iy as usize >= g.h || ix as usize >= g.w {
                    run.fill(0.0);
                } else {
                    let at = base + (iy as usize * g.w + ix as usize) * cin;
                    run.copy_from_slice(&x[at..at + cin]);
                }
            }
        }
    }
}
