//! Winograd F(2×2, 3×3) on channels-last data: the FusedConvNhwc of a 3×3, stride-1,
//! undilated, ungrouped layer that the channels-last pass marked `winograd = 1` (`layout.rs`).
//!
//! Channels-last suits the transforms: the 16 inputs of a 4×4 tile are 16 contiguous channel
//! vectors, so `V = Bᵀ·d·B` and `Y = Aᵀ·M·A` are sums of whole vectors (no gathers, no
//! transposes), and the bias and residual of an output pixel are vectors too. Per block of
//! tile rows: the input transform into `V` (`[tile][16][cin]`, tile-major so whole tile rows
//! go to the threads); 16 products `M_p[tiles × cout] = V_p · U_p` (`U_p` = the filters'
//! transform at point p, prepared once: a GEMM's packed operand, or below 64 outputs the direct
//! kernel's 1×1 weights) into `M` (`[16][tile][cout]`, point-major so the products write
//! disjoint blocks and run in parallel); the output transform
//! with bias, residual and a clamp activation in registers before the one store. F(2×2, 3×3)
//! is exact in binary (see `winograd.rs`), so the error stays at the GEMM's.

use rayon::prelude::*;

use crate::depthwise::DwGeometry;
use crate::direct_nhwc::{DirectArgs, DirectNhwc};
use crate::gemm::PackedB;
use crate::gemm::{self, AOperand, Activation, BOperand, Epilogue, GemmError, GemmParams, Isa};
use crate::im2col::with_im2col_buf;
use crate::winograd::{transform_filter, MIN_TILES};

/// The FusedConvNhwc attribute the channels-last pass sets on the convolutions that run here.
pub const WINOGRAD_ATTR: &str = "winograd";

/// The fewest input channels: the input transform's cost grows with them and the saved
/// multiplies with both counts. Against the direct kernel (1 thread, EPYC, ms): 160² 16→16 1.85
/// / 1.33, 16→32 3.21 / 2.73, 24→24 2.84 / 2.97, 64→16 4.63 / 6.15, 80² 32→32 1.11 / 1.49.
pub const MIN_CIN: usize = 32;

/// The fewest output channels.
pub const MIN_COUT: usize = 16;

/// Points of a transformed tile (4×4).
const POINTS: usize = 16;

/// Tiles per block of tile rows (at least one row), as in `winograd.rs`: a block's V and M
/// (16 points × channels × tiles each) stay in L2 at 64 channels.
const BLOCK_TILES: usize = 128;

/// Channels per step of the transforms: one AVX2 vector (the baseline build runs the same
/// arrays as scalars).
const LANES: usize = 8;

/// Whether a convolution of this shape runs as channels-last Winograd: 3×3, stride 1,
/// undilated, ungrouped, at least [`MIN_CIN`] channels in and [`MIN_COUT`] out, and
/// `MIN_TILES` 2×2 output blocks (`winograd.rs`'s limit).
pub fn suits(
    kernel: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    cin: usize,
    cout: usize,
    out: [usize; 2],
) -> bool {
    kernel == [3, 3]
        && strides == [1, 1]
        && dilations == [1, 1]
        && cin >= MIN_CIN
        && cout >= MIN_COUT
        && out[0].div_ceil(2) * out[1].div_ceil(2) >= MIN_TILES
}

/// Each point's filters, as the products of that point take them.
#[derive(Debug, Clone)]
enum PointFilters {
    /// `[cin × cout]` packed for the GEMM.
    Gemm(Vec<PackedB>),
    /// Repacked for the direct kernel's 1×1 tiles.
    Direct(Vec<Vec<f32>>),
}

/// Whether the 16 products run on the direct kernel rather than the GEMM: below 64 output
/// channels, where the GEMM's packing of V (once per point, used for only `cout` columns)
/// outweighs its faster tiles. Measured at 1 thread on an EPYC (GEMM / direct, ms): 160² 96→24
/// 11.3 / 8.2, 56² 128→32 1.83 / 1.66, 56² 64→64 1.78 / 1.83, 40² 128→128 2.83 / 3.08, 14²
/// 256→256 1.21 / 1.67.
fn points_run_direct(cout: usize) -> bool {
    cout < 64
}

/// The transformed filters of one convolution.
#[derive(Debug, Clone)]
pub struct WinogradNhwc {
    u: PointFilters,
    cin: usize,
    cout: usize,
}

/// One image's operands.
pub struct WinogradArgs<'a> {
    /// The image, `[h, w, cin]`.
    pub x: &'a [f32],
    /// One value per output channel.
    pub bias: Option<&'a [f32]>,
    /// The image's residual, `[oh, ow, cout]`.
    pub z: Option<&'a [f32]>,
    pub act: &'a Activation,
}

impl WinogradNhwc {
    /// From ONNX weights `[cout, cin, 3, 3]`.
    pub fn new(w: &[f32], cout: usize, cin: usize) -> Result<Self, GemmError> {
        let n = cout * cin;
        if w.len() != n * 9 {
            return Err(GemmError::TooShort {
                operand: "Winograd weights",
                len: w.len(),
                need: n * 9,
            });
        }
        // Point p's filters as 1×1 ones, `[cout, cin]`.
        let mut planes = vec![0f32; POINTS * n];
        for (pair, g) in w.chunks_exact(9).enumerate() {
            for (p, u) in transform_filter(g).into_iter().enumerate() {
                planes[p * n + pair] = u;
            }
        }
        let u = if points_run_direct(cout) {
            let k = point_kernel(1, cin, cout);
            PointFilters::Direct(
                planes
                    .chunks_exact(n)
                    .map(|plane| k.repack_weights(plane))
                    .collect(),
            )
        } else {
            // Point p's `[cin × cout]`, read transposed from `[cout, cin]`.
            PointFilters::Gemm(
                planes
                    .chunks_exact(n)
                    .map(|plane| PackedB::pack(plane, cin, cout, cin, true))
                    .collect::<Result<_, _>>()?,
            )
        };
        Ok(WinogradNhwc { u, cin, cout })
    }

    pub fn cin(&self) -> usize {
        self.cin
    }

    pub fn cout(&self) -> usize {
        self.cout
    }

    /// One image: `out` (`[oh, ow, cout]`) = `act(conv(x) + bias + z)`. `g` must be a 3×3,
    /// stride-1, undilated geometry (any padding).
    pub fn conv(
        &self,
        a: &WinogradArgs<'_>,
        g: &DwGeometry,
        out: &mut [f32],
        threads: usize,
    ) -> Result<(), GemmError> {
        let (cin, cout) = (self.cin, self.cout);
        let shape_ok = g.kh == 3
            && g.kw == 3
            && g.stride_h == 1
            && g.stride_w == 1
            && g.dil_h == 1
            && g.dil_w == 1;
        if !shape_ok {
            return Err(GemmError::Window(format!(
                "Winograd F(2x2, 3x3) needs a 3x3 stride-1 undilated window, not {g:?}"
            )));
        }
        let ohw = g.oh * g.ow;
        for (what, len, need) in [
            ("X", a.x.len(), cin * g.h * g.w),
            ("Y", out.len(), cout * ohw),
            ("bias", a.bias.map_or(cout, <[f32]>::len), cout),
            ("residual", a.z.map_or(cout * ohw, <[f32]>::len), cout * ohw),
        ] {
            if len < need {
                return Err(GemmError::TooShort {
                    operand: what,
                    len,
                    need,
                });
            }
        }
        if ohw == 0 || cout == 0 {
            return Ok(());
        }
        let (th, tw) = (g.oh.div_ceil(2), g.ow.div_ceil(2));
        let rows_per_block = (BLOCK_TILES / tw).clamp(1, th);
        let run = RowRun {
            isa: Isa::best(),
            a,
            g,
            rows_per_block,
        };
        let tasks = th.div_ceil(rows_per_block).min(threads);
        if tasks > 1 {
            // Enough blocks for every thread: each runs its own tile rows' blocks alone, V and
            // M in its own L2, with no join inside (splitting each block's phases over the
            // threads instead, ResNet's 56×56 layer ran 1.34 ms at 2 threads against 1.79 at 1).
            let per = th.div_ceil(tasks);
            out.par_chunks_mut(2 * per * g.ow * cout)
                .enumerate()
                .try_for_each(|(i, y)| self.tile_rows(&run, i * per, ((i + 1) * per).min(th), y, 1))
        } else {
            self.tile_rows(&run, 0, th, out, threads)
        }
    }

    /// Tile rows `[t_begin, t_end)` of one image, block by block, into `y` (the output from row
    /// `2·t_begin` on), each block's phases split over `threads`.
    fn tile_rows(
        &self,
        run: &RowRun<'_>,
        t_begin: usize,
        t_end: usize,
        y: &mut [f32],
        threads: usize,
    ) -> Result<(), GemmError> {
        let (cin, cout) = (self.cin, self.cout);
        let RowRun {
            isa,
            a,
            g,
            rows_per_block,
        } = *run;
        let tw = g.ow.div_ceil(2);
        let most = rows_per_block.min(t_end - t_begin) * tw;
        let (vlen, mlen) = (most * POINTS * cin, POINTS * most * cout);
        let out_row = 2 * g.ow * cout;
        // V, M and a zero vector (the padding's taps) in this thread's scratch, kept between
        // calls (fresh pages would cost a page fault each, every run).
        with_im2col_buf(vlen + mlen + cin, |bufs| -> Result<(), GemmError> {
            let (vbuf, rest) = bufs.split_at_mut(vlen);
            let (mbuf, zeros) = rest.split_at_mut(mlen);
            zeros.fill(0.0);
            let zeros = &*zeros;
            for t0 in (t_begin..t_end).step_by(rows_per_block) {
                let t1 = (t0 + rows_per_block).min(t_end);
                let bt = (t1 - t0) * tw;
                let v = &mut vbuf[..bt * POINTS * cin];
                let input = |(r, vrow): (usize, &mut [f32])| {
                    input_isa(isa, a.x, g, cin, t0 + r, zeros, vrow)
                };
                if threads > 1 {
                    v.par_chunks_mut(tw * POINTS * cin)
                        .enumerate()
                        .for_each(input);
                } else {
                    v.chunks_mut(tw * POINTS * cin).enumerate().for_each(input);
                }
                let v = &*v;
                let m = &mut mbuf[..POINTS * bt * cout];
                self.products(isa, v, m, bt, threads)?;
                let m = &*m;
                let (r0, r1) = (2 * (t0 - t_begin), (2 * t1).min(g.oh) - 2 * t_begin);
                let yb = &mut y[r0 * g.ow * cout..r1 * g.ow * cout];
                let output = |(r, yrow): (usize, &mut [f32])| {
                    let rows = Rows {
                        m,
                        bt,
                        r,
                        ty: t0 + r,
                    };
                    output_isa(isa, &rows, a, g, cout, yrow);
                    match a.act.clamp_bounds() {
                        Some(_) => Ok(()),
                        None => gemm::activate(isa, a.act, yrow),
                    }
                };
                if threads > 1 {
                    yb.par_chunks_mut(out_row)
                        .enumerate()
                        .try_for_each(output)?;
                } else {
                    yb.chunks_mut(out_row).enumerate().try_for_each(output)?;
                }
            }
            Ok(())
        })
    }

    /// The 16 products `M_p = V_p · U_p` of a block of `bt` tiles (V tile-major, M
    /// point-major), the points split over `threads`.
    fn products(
        &self,
        isa: Isa,
        v: &[f32],
        m: &mut [f32],
        bt: usize,
        threads: usize,
    ) -> Result<(), GemmError> {
        let (cin, cout) = (self.cin, self.cout);
        let k = point_kernel(bt, cin, cout);
        let p = GemmParams::new(bt, cout, cin);
        let point = |pt: usize, c: &mut [f32]| -> Result<(), GemmError> {
            match &self.u {
                // A 1×1 convolution of stride 16 over V (point p's tiles are every 16th
                // vector from the p-th) on the direct kernel: it broadcasts V where it lies;
                // the GEMM's packing of V was a fifth of a layer with 24 output channels.
                PointFilters::Direct(u) => {
                    let args = DirectArgs {
                        x: &v[pt * cin..],
                        wts: &u[pt],
                        bias: None,
                        z: None,
                        act: &Activation::None,
                    };
                    // SAFETY: `c` is this point's `bt × cout` block of M, borrowed mutably
                    // for the call.
                    unsafe { k.run(isa, &args, (0, bt), (0, k.blocks()), c.as_mut_ptr()) };
                    Ok(())
                }
                PointFilters::Gemm(u) => {
                    let a = AOperand::Raw {
                        data: &v[pt * cin..],
                        ld: POINTS * cin,
                        trans: false,
                    };
                    let b = BOperand::Packed(&u[pt]);
                    gemm::sgemm(&p, a, b, c, cout, &Epilogue::NONE, 1)
                }
            }
        };
        if threads > 1 {
            m.par_chunks_mut(bt * cout)
                .enumerate()
                .try_for_each(|(pt, c)| point(pt, c))
        } else {
            m.chunks_mut(bt * cout)
                .enumerate()
                .try_for_each(|(pt, c)| point(pt, c))
        }
    }
}

/// The 1×1 stride-16 convolution that multiplies one point's `tiles` rows of V (tile-major,
/// `[tile][16][cin]`, read from that point's first vector on) by its filters.
fn point_kernel(tiles: usize, cin: usize, cout: usize) -> DirectNhwc {
    DirectNhwc {
        g: DwGeometry {
            h: 1,
            w: (tiles - 1) * POINTS + 1,
            kh: 1,
            kw: 1,
            stride_h: 1,
            stride_w: POINTS,
            dil_h: 1,
            dil_w: 1,
            pad_top: 0,
            pad_left: 0,
            oh: 1,
            ow: tiles,
        },
        cin,
        cout,
    }
}

/// What every block of one image's run shares.
#[derive(Clone, Copy)]
struct RowRun<'a> {
    isa: Isa,
    a: &'a WinogradArgs<'a>,
    g: &'a DwGeometry,
    rows_per_block: usize,
}

/// [`input_row`] compiled for AVX2 when the CPU has it (the 8-channel arrays become vectors;
/// the baseline build is the scalar twin, the same arithmetic bit for bit).
fn input_isa(
    isa: Isa,
    x: &[f32],
    g: &DwGeometry,
    cin: usize,
    ty: usize,
    zeros: &[f32],
    v: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if isa != Isa::Scalar && Isa::Avx2.is_available() {
        // SAFETY: AVX2 and FMA are available (checked just above).
        return unsafe { input_avx2(x, g, cin, ty, zeros, v) };
    }
    let _ = isa;
    input_row(x, g, cin, ty, zeros, v)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn input_avx2(
    x: &[f32],
    g: &DwGeometry,
    cin: usize,
    ty: usize,
    zeros: &[f32],
    v: &mut [f32],
) {
    input_row(x, g, cin, ty, zeros, v)
}

/// `Bᵀ·d·B` of the tiles of tile row `ty` into `v` (`[tw][16][cin]`), taps outside the image
/// read from `zeros`. Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]; point `4i + j` is row i
/// (vertical) and column j, as `transform_filter` orders U.
#[inline(always)]
fn input_row(x: &[f32], g: &DwGeometry, cin: usize, ty: usize, zeros: &[f32], v: &mut [f32]) {
    for (tx, vt) in v.chunks_exact_mut(POINTS * cin).enumerate() {
        let mut d: [&[f32]; POINTS] = [&zeros[..cin]; POINTS];
        for (p, d) in d.iter_mut().enumerate() {
            let iy = (2 * ty + p / 4)
                .checked_sub(g.pad_top)
                .filter(|&iy| iy < g.h);
            let ix = (2 * tx + p % 4)
                .checked_sub(g.pad_left)
                .filter(|&ix| ix < g.w);
            if let (Some(iy), Some(ix)) = (iy, ix) {
                *d = &x[(iy * g.w + ix) * cin..][..cin];
            }
        }
        let mut c0 = 0;
        while c0 + LANES <= cin {
            tile_in::<LANES>(&d, vt, cin, c0);
            c0 += LANES;
        }
        while c0 < cin {
            tile_in::<1>(&d, vt, cin, c0);
            c0 += 1;
        }
    }
}

/// Channels `c0 .. c0 + L` of one tile's input transform (plain array loops: `from_fn`
/// closures were left uninlined, a fifth of the layer).
#[inline(always)]
fn tile_in<const L: usize>(d: &[&[f32]; POINTS], v: &mut [f32], cin: usize, c0: usize) {
    let mut r = [[0f32; L]; POINTS];
    for (r, d) in r.iter_mut().zip(d) {
        r.copy_from_slice(&d[c0..c0 + L]);
    }
    // Bᵀ·d, column by column.
    let mut t = [[0f32; L]; POINTS];
    for j in 0..4 {
        for l in 0..L {
            t[j][l] = r[j][l] - r[8 + j][l];
            t[4 + j][l] = r[4 + j][l] + r[8 + j][l];
            t[8 + j][l] = r[8 + j][l] - r[4 + j][l];
            t[12 + j][l] = r[4 + j][l] - r[12 + j][l];
        }
    }
    // (Bᵀ·d)·B, row by row.
    for i in 0..4 {
        let b = 4 * i;
        let mut o = [[0f32; L]; 4];
        for l in 0..L {
            o[0][l] = t[b][l] - t[b + 2][l];
            o[1][l] = t[b + 1][l] + t[b + 2][l];
            o[2][l] = t[b + 2][l] - t[b + 1][l];
            o[3][l] = t[b + 1][l] - t[b + 3][l];
        }
        for (j, o) in o.iter().enumerate() {
            v[(b + j) * cin + c0..][..L].copy_from_slice(o);
        }
    }
}

/// One tile row of a block's GEMM results: tile row `r` of the block (`bt` tiles, M
/// point-major), tile row `ty` of the image.
struct Rows<'a> {
    m: &'a [f32],
    bt: usize,
    r: usize,
    ty: usize,
}

/// [`output_row`] compiled for AVX2 when the CPU has it.
fn output_isa(
    isa: Isa,
    rows: &Rows<'_>,
    a: &WinogradArgs<'_>,
    g: &DwGeometry,
    cout: usize,
    y: &mut [f32],
) {
    #[cfg(target_arch = "x86_64")]
    if isa != Isa::Scalar && Isa::Avx2.is_available() {
        // SAFETY: AVX2 and FMA are available (checked just above).
        return unsafe { output_avx2(rows, a, g, cout, y) };
    }
    let _ = isa;
    output_row(rows, a, g, cout, y)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn output_avx2(
    rows: &Rows<'_>,
    a: &WinogradArgs<'_>,
    g: &DwGeometry,
    cout: usize,
    y: &mut [f32],
) {
    output_row(rows, a, g, cout, y)
}

/// Where one tile's outputs go and what is added to them.
struct TileOut<'a> {
    /// The tile row's output rows (one or two), from the tile's first pixel on.
    y: &'a mut [f32],
    /// The residual at the same pixels.
    z: Option<&'a [f32]>,
    bias: Option<&'a [f32]>,
    /// Output rows and columns of the tile inside the image (1 or 2 each).
    rows: usize,
    cols: usize,
    /// Floats between the tile's two output rows, and between its two columns (`cout`).
    row_stride: usize,
    pixel: usize,
    clamp: Option<(f32, f32)>,
}

/// `Aᵀ·m·A` of the tiles of one tile row into its output rows `y` (`[1 or 2][ow][cout]`),
/// plus bias and residual, clamped when the activation is a clamp (others run after, over
/// `y`). Aᵀ = [1 1 1 0; 0 1 -1 -1].
#[inline(always)]
fn output_row(rows: &Rows<'_>, a: &WinogradArgs<'_>, g: &DwGeometry, cout: usize, y: &mut [f32]) {
    let tw = g.ow.div_ceil(2);
    let row_stride = g.ow * cout;
    let nrows = (g.oh - 2 * rows.ty).min(2);
    let z_row = a.z.map(|z| &z[2 * rows.ty * row_stride..]);
    for tx in 0..tw {
        let t = rows.r * tw + tx;
        let mut m: [&[f32]; POINTS] = [&[]; POINTS];
        for (p, m) in m.iter_mut().enumerate() {
            *m = &rows.m[(p * rows.bt + t) * cout..][..cout];
        }
        let at = 2 * tx * cout;
        let mut o = TileOut {
            y: &mut y[at..],
            z: z_row.map(|z| &z[at..]),
            bias: a.bias,
            rows: nrows,
            cols: (g.ow - 2 * tx).min(2),
            row_stride,
            pixel: cout,
            clamp: a.act.clamp_bounds(),
        };
        let mut c0 = 0;
        while c0 + LANES <= cout {
            tile_out::<LANES>(&m, &mut o, c0);
            c0 += LANES;
        }
        while c0 < cout {
            tile_out::<1>(&m, &mut o, c0);
            c0 += 1;
        }
    }
}

/// Channels `c0 .. c0 + L` of one tile's output transform and epilogue.
#[inline(always)]
fn tile_out<const L: usize>(m: &[&[f32]; POINTS], o: &mut TileOut<'_>, c0: usize) {
    let mut r = [[0f32; L]; POINTS];
    for (r, m) in r.iter_mut().zip(m) {
        r.copy_from_slice(&m[c0..c0 + L]);
    }
    // Vertical: s_0j = m_0j + m_1j + m_2j, s_1j = m_1j - m_2j - m_3j.
    let mut s = [[[0f32; L]; 4]; 2];
    for j in 0..4 {
        for l in 0..L {
            s[0][j][l] = r[j][l] + r[4 + j][l] + r[8 + j][l];
            s[1][j][l] = r[4 + j][l] - r[8 + j][l] - r[12 + j][l];
        }
    }
    let mut bias = [0f32; L];
    if let Some(b) = o.bias {
        bias.copy_from_slice(&b[c0..c0 + L]);
    }
    for (a, s) in s.iter().enumerate().take(o.rows) {
        let mut y = [[0f32; L]; 2];
        for l in 0..L {
            y[0][l] = s[0][l] + s[1][l] + s[2][l] + bias[l];
            y[1][l] = s[1][l] - s[2][l] - s[3][l] + bias[l];
        }
        for (b, y) in y.iter_mut().enumerate().take(o.cols) {
            let px = a * o.row_stride + b * o.pixel + c0;
            if let Some(z) = o.z {
                for (y, z) in y.iter_mut().zip(&z[px..px + L]) {
                    *y += z;
                }
            }
            if let Some((lo, hi)) = o.clamp {
                // Written as comparisons so that NaN stays NaN.
                for x in y.iter_mut() {
                    *x = if *x < lo {
                        lo
                    } else if *x > hi {
                        hi
                    } else {
                        *x
                    };
                }
            }
            o.y[px..px + L].copy_from_slice(y);
        }
    }
}

#[cfg(test)]
mod tests;
