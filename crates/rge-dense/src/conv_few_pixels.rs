//! NC(H)W convolutions with fewer output pixels than output channels (ResNet-50's and
//! MobileNetV2's 7×7 and 14×14 layers): `Yᵀ = colᵀ · Wᵀ`, the pixels as the GEMM's rows and the
//! output channels as its 32-wide column panels, then Y transposed out.
//!
//! `Y = W · col` makes the pixels the GEMM's columns, and a 7×7 image's 49 pixels fill two
//! 32-column panels with 49 of 64 columns. On one thread (`benches/gemm.rs`, weights packed),
//! ResNet-50's 3×3 stride-2 layer of 512 channels ran its GEMM at 87 GFLOP/s as 512 × 49 × 4608
//! and at 148 as 49 × 512 × 4608; its 1×1 512 → 2048 layer at 92 and 151; a 14×14 layer of
//! 1024 channels at 142 and 176. With more pixels than channels the usual form was as fast or
//! faster (28×28, 128 channels: 176 against 136), so the form follows that comparison.

use rayon::prelude::*;

use crate::depthwise::DwGeometry;
use crate::gemm::{self, AOperand, Activation, BOperand, Bias, Epilogue, GemmParams, Isa, PackedB};
use crate::im2col::{im2col_tile, with_im2col_buf};
use crate::kernels::gemm_err;
use rge_kernels::KernelResult;

/// Multiply-adds per image below which a product of few pixels keeps the usual form on more
/// than one thread. Split over two threads, `Yᵀ` is cut into column parts (its rows are too
/// few), and small products cut that way ran no faster than on one thread: MobileNetV2's
/// 49-pixel 576 → 160 layer took 0.083 ms at 1 thread and 0.088 at 2 as `Yᵀ`, against 0.062
/// at 2 in the usual form (row parts). Its 960 → 320 layer (15 M) and ResNet-50's (51 M and
/// more) scale as `Yᵀ`.
const PAR_WORK: usize = 8 << 20;

/// Whether a convolution of `pixels` output pixels per image, `cout` output channels and
/// `depth` (Cin·kh·kw) runs as `Yᵀ = colᵀ · Wᵀ` on `threads` threads (ungrouped only).
pub(crate) fn pixels_as_rows(
    pixels: usize,
    cout: usize,
    depth: usize,
    group: usize,
    threads: usize,
) -> bool {
    let work = pixels.saturating_mul(cout).saturating_mul(depth);
    group == 1
        && pixels < cout
        && (threads <= 1 || work >= PAR_WORK)
        && (Isa::best() != Isa::Avx2 || transposed_costs_less(pixels, cout, depth))
}

/// The AVX2 cost of each form in multiply-adds the GEMM issues: `Y = W · col` pads the pixels
/// to 32-column panels, `Yᵀ` pads them to 6-row tiles and pays [`TRANSPOSE_COST`] per output.
/// On an AVX2 EPYC (1 thread, single-Conv models, best of 200 runs, the two forms run one
/// after the other) MobileNetV2's 14×14 pointwise layers ran faster as `Y = W · col` (64 → 384:
/// 0.131 against 0.142 ms; 96 → 576: 0.271 against 0.287), ResNet-50's 256 → 1024 and the 7×7
/// layers faster as `Yᵀ` (1.12 against 1.18; 160 → 960: 0.194 against 0.226): the choices
/// these costs make. AVX-512 keeps `pixels < cout` (its GEMM, measured there, ran `Yᵀ` faster
/// at 14×14 too).
fn transposed_costs_less(pixels: usize, cout: usize, depth: usize) -> bool {
    let usual = cout * depth * pixels.next_multiple_of(32);
    let transposed = pixels.next_multiple_of(6) * depth * cout.next_multiple_of(32)
        + pixels * cout * TRANSPOSE_COST;
    transposed < usual
}

/// What transposing one output (and its bias on the GEMM's general store) costs, in
/// multiply-adds of the AVX2 GEMM (fitted to the layers above).
const TRANSPOSE_COST: usize = 17;

/// Output channels per band of the residual and activation pass (a part for one thread).
const BAND: usize = 16;

/// One ungrouped convolution's operands, NC(H)W.
pub(crate) struct FewPixels<'a> {
    pub g: &'a DwGeometry,
    pub cin: usize,
    pub cout: usize,
    /// Wᵀ, `(Cin·kh·kw) × Cout`.
    pub wt: &'a PackedB,
    pub bias: Option<&'a [f32]>,
    /// `[N, Cout, OH, OW]`, added before the activation.
    pub residual: Option<&'a [f32]>,
    pub activation: Activation,
}

impl FewPixels<'_> {
    /// `out = act(conv(x) + bias + residual)` for every image of `x` (`[N, Cin, H, W]`).
    pub(crate) fn run(&self, x: &[f32], out: &mut [f32], threads: usize) -> KernelResult<()> {
        let g = self.g;
        let (hw, pixels, cout) = (g.h * g.w, g.oh * g.ow, self.cout);
        let depth = self.cin * g.kh * g.kw;
        let pointwise = g.is_pointwise();
        let col_len = if pointwise { 0 } else { depth * pixels };
        let p = GemmParams::new(pixels, cout, depth);
        // A residual comes before the activation, so it runs after the transpose then.
        let act_in_gemm = if self.residual.is_some() {
            Activation::None
        } else {
            self.activation
        };
        let mut epi = Epilogue::activation(act_in_gemm);
        if let Some(b) = self.bias {
            epi = epi.with_bias(Bias::PerColumn(b));
        }
        with_im2col_buf(col_len + pixels * cout, |buf| {
            let (col, yt) = buf.split_at_mut(col_len);
            for (n, y) in out.chunks_exact_mut(cout * pixels).enumerate() {
                let xn = &x[n * self.cin * hw..(n + 1) * self.cin * hw];
                // colᵀ: A[pixel, (c, tap)] is col[(c, tap) · pixels + pixel]; a 1×1 stride-1
                // convolution's col is the image itself.
                let data = if pointwise {
                    xn
                } else {
                    self.im2col(xn, col, threads);
                    &col[..]
                };
                let a = AOperand::Raw {
                    data,
                    ld: pixels,
                    trans: true,
                };
                gemm::sgemm(&p, a, BOperand::Packed(self.wt), yt, cout, &epi, threads)
                    .map_err(gemm_err)?;
                let z = self
                    .residual
                    .map(|z| &z[n * cout * pixels..(n + 1) * cout * pixels]);
                self.transpose_out(yt, z, y, threads)?;
            }
            Ok(())
        })
    }

    /// The image's whole im2col matrix (`[Cin·kh·kw, pixels]`), its channels shared over the
    /// threads when there are several (built on one thread, ResNet-50's 28×28 stride-2
    /// 256-channel layer ran 1.38 ms at 2 threads; shared, 1.10).
    fn im2col(&self, xn: &[f32], col: &mut [f32], threads: usize) {
        let g = self.g;
        let (hw, pixels, taps) = (g.h * g.w, g.oh * g.ow, g.kh * g.kw);
        let per = self.cin.div_ceil(threads.max(1)).max(1);
        let part = |(i, rows): (usize, &mut [f32])| {
            let c0 = i * per;
            let c1 = (c0 + per).min(self.cin);
            im2col_tile(&xn[c0 * hw..c1 * hw], c1 - c0, g, 0, pixels, rows);
        };
        let chunks = per * taps * pixels;
        if threads > 1 {
            col.par_chunks_mut(chunks).enumerate().for_each(part);
        } else {
            part((0, col));
        }
    }

    /// `y[c, i] = act(yt[i, c] + z[c, i])` (the activation here only with a residual): the
    /// ISA's 16×16 transposes (the scalar copy was a fifth of a 14×14 layer's time), then the
    /// residual and activation in bands of [`BAND`] channels, over the threads when there are
    /// several.
    fn transpose_out(
        &self,
        yt: &[f32],
        z: Option<&[f32]>,
        y: &mut [f32],
        threads: usize,
    ) -> KernelResult<()> {
        let (pixels, cout) = (self.g.oh * self.g.ow, self.cout);
        crate::transdata::transpose(Isa::best(), yt, pixels, cout, y, threads);
        let Some(z) = z else {
            return Ok(());
        };
        let band = |(b, rows): (usize, &mut [f32])| -> KernelResult<()> {
            let zr = &z[b * BAND * pixels..][..rows.len()];
            rows.iter_mut().zip(zr).for_each(|(r, &z)| *r += z);
            if self.activation != Activation::None {
                gemm::activate(Isa::best(), &self.activation, rows).map_err(gemm_err)?;
            }
            Ok(())
        };
        if threads > 1 {
            y.par_chunks_mut(BAND * pixels)
                .enumerate()
                .try_for_each(band)
        } else {
            y.chunks_mut(BAND * pixels).enumerate().try_for_each(band)
        }
    }
}
