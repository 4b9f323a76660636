//! Winograd F(2×2, 3×3) convolution for 3×3, stride-1, undilated, ungrouped layers (Lavin and
//! Gray, "Fast Algorithms for Convolutional Neural Networks"): each 2×2 block of outputs is
//! computed from a 4×4 input tile with 16 multiplications per channel pair instead of 36, so
//! the GEMMs do 2.25× fewer multiply-adds than the im2col GEMM.
//!
//! The filter transform `U = G·g·Gᵀ` runs once, when the kernel is built from constant
//! weights, and is packed as 16 `[cout × cin]` GEMM operands (one per point of the 4×4 tile).
//! Per image: the input transform `V = Bᵀ·d·B` of every tile, laid out `[cin][16][tiles]`; 16
//! GEMMs `M_p = U_p · V_p` into `[16][cout][tiles]`; the output transform `Y = Aᵀ·M·A`, then
//! bias, residual and activation on each output plane. The transforms run on whole rows of
//! tiles (the horizontal half of each is shared by the two tile rows an input row belongs to),
//! so their loops are elementwise over slices and vectorize. F(2×2, 3×3)'s transforms are
//! exact in binary (±1 and ½), which keeps its error at the im2col GEMM's (F(4×4, 3×3)
//! would be 4× fewer multiplies but about 10× the error).

use rayon::prelude::*;

use crate::depthwise::DwGeometry;
use crate::gather::gather_strided;
use crate::gemm::PackedA;
use crate::gemm::{self, AOperand, Activation, BOperand, Epilogue, GemmError, GemmParams, Isa};
use crate::im2col::with_im2col_buf;

/// Points of a transformed tile (4×4).
const POINTS: usize = 16;

/// The fewest tiles (2×2 output blocks) per image for which Winograd was measured to beat the
/// im2col GEMM: ResNet's 7×7 layers have 16 (512 channels: 1.9 against 3.9 ms on 1 thread,
/// 1.0 against 2.4 on 2); smaller planes were not measured.
pub(crate) const MIN_TILES: usize = 16;

/// Tiles per block of tile rows (at least one row): V and M of a block, 16 points × channels ×
/// this many floats each, stay in L2 at 64 channels (0.5 MiB each).
const BLOCK_TILES: usize = 128;

/// The fewest channels in and out: below them the transforms outweigh the saved multiplies.
const MIN_CHANNELS: usize = 16;

/// The transformed, packed filters of one Conv.
#[derive(Debug, Clone)]
pub struct WinogradWeights {
    u: Vec<PackedA>,
    cout: usize,
    cin: usize,
}

/// Whether an ungrouped convolution of this geometry and these channels runs as Winograd
/// (given constant weights).
pub fn suits(g: &DwGeometry, cin: usize, cout: usize) -> bool {
    g.kh == 3
        && g.kw == 3
        && g.stride_h == 1
        && g.stride_w == 1
        && g.dil_h == 1
        && g.dil_w == 1
        && g.oh.div_ceil(2) * g.ow.div_ceil(2) >= MIN_TILES
        && cin.min(cout) >= MIN_CHANNELS
}

impl WinogradWeights {
    /// From OIHW weights `[cout, cin, 3, 3]`.
    pub fn new(w: &[f32], cout: usize, cin: usize) -> Result<Self, GemmError> {
        let n = cout * cin;
        if w.len() < n * 9 {
            return Err(GemmError::TooShort {
                operand: "Winograd weights",
                len: w.len(),
                need: n * 9,
            });
        }
        let mut planes = vec![0f32; POINTS * n];
        for (pair, g) in w.chunks_exact(9).take(n).enumerate() {
            for (p, u) in transform_filter(g).into_iter().enumerate() {
                planes[p * n + pair] = u;
            }
        }
        let u = planes
            .chunks_exact(n)
            .map(|plane| PackedA::pack(plane, cout, cin, cin, false))
            .collect::<Result<_, _>>()?;
        Ok(WinogradWeights { u, cout, cin })
    }

    /// Whether a convolution of this geometry (3×3 filter assumed) should run here.
    pub fn suits(&self, g: &DwGeometry) -> bool {
        suits(g, self.cin, self.cout)
    }

    /// One image: `out` (`[cout, oh, ow]`) = `act(conv(x) + bias + z)` from `x` (`[cin, h, w]`).
    #[allow(clippy::too_many_arguments)]
    pub fn conv(
        &self,
        x: &[f32],
        g: &DwGeometry,
        bias: Option<&[f32]>,
        z: Option<&[f32]>,
        act: &Activation,
        out: &mut [f32],
        threads: usize,
    ) -> Result<(), GemmError> {
        let (cin, cout) = (self.cin, self.cout);
        let (th, tw) = (g.oh.div_ceil(2), g.ow.div_ceil(2));
        let ohw = g.oh * g.ow;
        for (what, len, need) in [
            ("X", x.len(), cin * g.h * g.w),
            ("Y", out.len(), cout * ohw),
            ("bias", bias.map_or(cout, <[f32]>::len), cout),
            ("residual", z.map_or(cout * ohw, <[f32]>::len), cout * ohw),
        ] {
            if len < need {
                return Err(GemmError::TooShort {
                    operand: what,
                    len,
                    need,
                });
            }
        }
        let isa = Isa::best();
        // Tile rows in blocks of about BLOCK_TILES tiles, so V and M stay in L2 between the
        // transforms and the GEMMs (the whole image's were megabytes: a fourth of the run went
        // to the memory-bound transforms).
        let rows_per_block = (BLOCK_TILES / tw).clamp(1, th);
        let most = rows_per_block * tw;
        let (vlen, mlen) = (cin * POINTS * most, cout * POINTS * most);
        // V and M in this thread's scratch, kept between calls (fresh pages would cost a page
        // fault each, every run).
        with_im2col_buf(vlen + mlen, |bufs| -> Result<(), GemmError> {
            let (vbuf, mbuf) = bufs.split_at_mut(vlen);
            for t0 in (0..th).step_by(rows_per_block) {
                let rows = TileRows {
                    t0,
                    t1: (t0 + rows_per_block).min(th),
                };
                let bt = (rows.t1 - rows.t0) * tw;
                let v = &mut vbuf[..cin * POINTS * bt];
                let m = &mut mbuf[..cout * POINTS * bt];
                self.block(isa, x, g, rows, v, m, threads)?;
                let m = &*m;
                let (r0, r1) = (2 * rows.t0 * g.ow, (2 * rows.t1).min(g.oh) * g.ow);
                let task = |s: &mut Vec<f32>, (co, y): (usize, &mut [f32])| {
                    output_isa(isa, &m[co * bt..], cout * bt, g, rows, y, s);
                    let b = bias.map_or(0.0, |b| b[co]);
                    let zr = z.map(|z| &z[co * ohw + r0..co * ohw + r1]);
                    epilogue(isa, &mut y[r0..r1], b, zr, act)
                };
                if threads > 1 {
                    out.par_chunks_mut(ohw)
                        .enumerate()
                        .try_for_each_init(Vec::new, task)?;
                } else {
                    let mut s = Vec::new();
                    out.chunks_exact_mut(ohw)
                        .enumerate()
                        .try_for_each(|it| task(&mut s, it))?;
                }
            }
            Ok(())
        })
    }
}

/// [`transform_input`] compiled for AVX2 when the CPU has it (its slice loops then vectorize
/// 8 wide; the baseline build is the scalar twin, bit for bit the same arithmetic).
fn input_isa(isa: Isa, x: &[f32], g: &DwGeometry, rows: TileRows, v: &mut [f32], s: &mut Vec<f32>) {
    #[cfg(target_arch = "x86_64")]
    if isa != Isa::Scalar && Isa::Avx2.is_available() {
        // SAFETY: AVX2 is available (checked just above).
        return unsafe { input_avx2(x, g, rows, v, s) };
    }
    let _ = isa;
    transform_input(x, g, rows, v, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn input_avx2(x: &[f32], g: &DwGeometry, rows: TileRows, v: &mut [f32], s: &mut Vec<f32>) {
    transform_input(x, g, rows, v, s)
}

/// [`transform_output`] compiled for AVX2 when the CPU has it.
#[allow(clippy::too_many_arguments)]
fn output_isa(
    isa: Isa,
    m: &[f32],
    stride: usize,
    g: &DwGeometry,
    rows: TileRows,
    y: &mut [f32],
    s: &mut Vec<f32>,
) {
    #[cfg(target_arch = "x86_64")]
    if isa != Isa::Scalar && Isa::Avx2.is_available() {
        // SAFETY: AVX2 is available (checked just above).
        return unsafe { output_avx2(m, stride, g, rows, y, s) };
    }
    let _ = isa;
    transform_output(m, stride, g, rows, y, s)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn output_avx2(
    m: &[f32],
    stride: usize,
    g: &DwGeometry,
    rows: TileRows,
    y: &mut [f32],
    s: &mut Vec<f32>,
) {
    transform_output(m, stride, g, rows, y, s)
}

impl WinogradWeights {
    /// One block of tile rows: its input tiles transformed into `v` (`[cin][16][bt]`) and the
    /// 16 GEMMs into `m` (`[16][cout][bt]`, point-major, so the GEMMs write disjoint blocks and
    /// run in parallel, one thread each).
    #[allow(clippy::too_many_arguments)]
    fn block(
        &self,
        isa: Isa,
        x: &[f32],
        g: &DwGeometry,
        rows: TileRows,
        v: &mut [f32],
        m: &mut [f32],
        threads: usize,
    ) -> Result<(), GemmError> {
        let (cin, cout) = (self.cin, self.cout);
        let bt = (rows.t1 - rows.t0) * g.ow.div_ceil(2);
        let plane = g.h * g.w;
        if threads > 1 {
            v.par_chunks_mut(POINTS * bt)
                .zip(x.par_chunks(plane))
                .for_each_init(Vec::new, |s, (v, x)| input_isa(isa, x, g, rows, v, s));
        } else {
            let mut s = Vec::new();
            v.chunks_exact_mut(POINTS * bt)
                .zip(x.chunks_exact(plane))
                .for_each(|(v, x)| input_isa(isa, x, g, rows, v, &mut s));
        }
        let v = &*v;
        let p = GemmParams::new(cout, bt, cin);
        let point = |(pt, (c, u)): (usize, (&mut [f32], &PackedA))| {
            let b = BOperand::Raw {
                data: &v[pt * bt..],
                ld: POINTS * bt,
                trans: false,
            };
            gemm::sgemm(&p, AOperand::Packed(u), b, c, bt, &Epilogue::NONE, 1)
        };
        if threads > 1 {
            m.par_chunks_mut(cout * bt)
                .zip(self.u.par_iter())
                .enumerate()
                .try_for_each(point)
        } else {
            m.chunks_exact_mut(cout * bt)
                .zip(self.u.iter())
                .enumerate()
                .try_for_each(point)
        }
    }
}

/// Tile rows `[t0, t1)` of an image.
#[derive(Clone, Copy, Debug)]
struct TileRows {
    t0: usize,
    t1: usize,
}

/// `G·g·Gᵀ` of one 3×3 filter, row-major 4×4.
pub(crate) fn transform_filter(g: &[f32]) -> [f32; POINTS] {
    // G = [1 0 0; ½ ½ ½; ½ -½ ½; 0 0 1], applied to the columns and then to the rows.
    let rows = |a: f32, b: f32, c: f32| [a, 0.5 * (a + b + c), 0.5 * (a - b + c), c];
    let t: [[f32; 4]; 3] = std::array::from_fn(|j| rows(g[j], g[3 + j], g[6 + j]));
    let mut u = [0f32; POINTS];
    for i in 0..4 {
        u[i * 4..i * 4 + 4].copy_from_slice(&rows(t[0][i], t[1][i], t[2][i]));
    }
    u
}

/// `Bᵀ·d·B` of every 4×4 tile of one channel's image `x` (`[h, w]`) into `v`
/// (`[16][tiles]`), `s` a scratch. Bᵀ = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
#[inline(always)]
fn transform_input(x: &[f32], g: &DwGeometry, rows: TileRows, v: &mut [f32], s: &mut Vec<f32>) {
    let tw = g.ow.div_ceil(2);
    let th = rows.t1 - rows.t0;
    let tiles = th * tw;
    // Padded input rows 2·t0 .. 2·t1 + 2.
    let nrows = 2 * th + 2;
    let q0 = 2 * rows.t0;
    // Per padded input row: its even and odd columns (tw + 1 each), then the horizontal
    // transform `d·B` of its tiles (4 × tw).
    let phase = tw + 1;
    s.clear();
    s.resize(2 * phase + nrows * 4 * tw, 0.0);
    let (eo, hs) = s.split_at_mut(2 * phase);
    let (even, odd) = eo.split_at_mut(phase);
    for (dq, h) in hs.chunks_exact_mut(4 * tw).enumerate() {
        let Some(iy) = (q0 + dq).checked_sub(g.pad_top).filter(|&iy| iy < g.h) else {
            h.fill(0.0);
            continue;
        };
        even.fill(0.0);
        odd.fill(0.0);
        // Padded column c = ix + pad_left goes to phase c % 2 at c / 2; only those below
        // 2·phase are read.
        let row = &x[iy * g.w..(iy + 1) * g.w];
        let cols = (2 * phase).saturating_sub(g.pad_left).min(g.w);
        for (q, dst) in [(0, &mut *even), (1, &mut *odd)] {
            let ix0 = (q + g.pad_left) % 2;
            if ix0 < cols {
                let k0 = (ix0 + g.pad_left) / 2;
                let n = (cols - ix0).div_ceil(2);
                gather_strided(&mut dst[k0..k0 + n], &row[ix0..cols], 2);
            }
        }
        let (h01, h23) = h.split_at_mut(2 * tw);
        let (h0, h1) = h01.split_at_mut(tw);
        let (h2, h3) = h23.split_at_mut(tw);
        let (e0, e1, o0, o1) = (&even[..tw], &even[1..], &odd[..tw], &odd[1..]);
        for k in 0..tw {
            h0[k] = e0[k] - e1[k];
            h1[k] = o0[k] + e1[k];
            h2[k] = e1[k] - o0[k];
            h3[k] = o0[k] - o1[k];
        }
    }
    let hrow = |q: usize, j: usize| &hs[(q * 4 + j) * tw..(q * 4 + j + 1) * tw];
    for t in 0..th {
        let q = 2 * t;
        for j in 0..4 {
            let (d0, d1, d2, d3) = (hrow(q, j), hrow(q + 1, j), hrow(q + 2, j), hrow(q + 3, j));
            let at = |i: usize| (i * 4 + j) * tiles + t * tw;
            let (lo, hi) = v.split_at_mut(at(2));
            let (v0, v1) = lo.split_at_mut(at(1));
            let (v2, v3) = hi.split_at_mut(at(3) - at(2));
            let (v0, v1) = (&mut v0[at(0)..][..tw], &mut v1[..tw]);
            let (v2, v3) = (&mut v2[..tw], &mut v3[..tw]);
            for k in 0..tw {
                v0[k] = d0[k] - d2[k];
                v1[k] = d1[k] + d2[k];
                v2[k] = d2[k] - d1[k];
                v3[k] = d1[k] - d3[k];
            }
        }
    }
}

/// `Aᵀ·m·A` of every tile of one output channel into its plane `y` (`[oh, ow]`), `s` a
/// scratch; point `p`'s tiles are `m[p·point_stride..]`. Aᵀ = [1 1 1 0; 0 1 -1 -1].
#[inline(always)]
fn transform_output(
    m: &[f32],
    point_stride: usize,
    g: &DwGeometry,
    rows: TileRows,
    y: &mut [f32],
    s: &mut Vec<f32>,
) {
    let tw = g.ow.div_ceil(2);
    s.clear();
    s.resize(10 * tw, 0.0);
    let (sv, yr) = s.split_at_mut(8 * tw);
    let (y0, y1) = yr.split_at_mut(tw);
    for (dt, t) in (rows.t0..rows.t1).enumerate() {
        let mrow = |i: usize, j: usize| &m[(i * 4 + j) * point_stride + dt * tw..][..tw];
        // Vertical: s_0j = m_0j + m_1j + m_2j, s_1j = m_1j - m_2j - m_3j.
        for j in 0..4 {
            let (m0, m1, m2, m3) = (mrow(0, j), mrow(1, j), mrow(2, j), mrow(3, j));
            let (s0, s1) = sv[2 * j * tw..(2 * j + 2) * tw].split_at_mut(tw);
            for k in 0..tw {
                s0[k] = m0[k] + m1[k] + m2[k];
                s1[k] = m1[k] - m2[k] - m3[k];
            }
        }
        for a in 0..2 {
            let oy = 2 * t + a;
            if oy >= g.oh {
                break;
            }
            let sj = |j: usize| &sv[(2 * j + a) * tw..(2 * j + a + 1) * tw];
            let (c0, c1, c2, c3) = (sj(0), sj(1), sj(2), sj(3));
            for k in 0..tw {
                y0[k] = c0[k] + c1[k] + c2[k];
                y1[k] = c1[k] - c2[k] - c3[k];
            }
            let row = &mut y[oy * g.ow..(oy + 1) * g.ow];
            let mut pairs = row.chunks_exact_mut(2);
            for ((pair, &a0), &a1) in (&mut pairs).zip(y0.iter()).zip(y1.iter()) {
                pair[0] = a0;
                pair[1] = a1;
            }
            if let [last] = pairs.into_remainder() {
                *last = y0[tw - 1];
            }
        }
    }
}

/// Bias, residual and activation on one output plane.
fn epilogue(
    isa: Isa,
    y: &mut [f32],
    bias: f32,
    z: Option<&[f32]>,
    act: &Activation,
) -> Result<(), GemmError> {
    match z {
        Some(z) => y.iter_mut().zip(z).for_each(|(v, r)| *v += bias + r),
        None if bias != 0.0 => y.iter_mut().for_each(|v| *v += bias),
        None => {}
    }
    if *act != Activation::None {
        gemm::activate(isa, act, y)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry(
        h: usize,
        w: usize,
        pad_top: usize,
        pad_left: usize,
        oh: usize,
        ow: usize,
    ) -> DwGeometry {
        DwGeometry {
            h,
            w,
            kh: 3,
            kw: 3,
            stride_h: 1,
            stride_w: 1,
            dil_h: 1,
            dil_w: 1,
            pad_top,
            pad_left,
            oh,
            ow,
        }
    }

    /// The direct sum in f64.
    fn direct(x: &[f32], w: &[f32], cin: usize, cout: usize, g: &DwGeometry) -> Vec<f64> {
        let mut y = vec![0f64; cout * g.oh * g.ow];
        for co in 0..cout {
            for oy in 0..g.oh {
                for ox in 0..g.ow {
                    let mut acc = 0f64;
                    for ci in 0..cin {
                        for i in 0..3 {
                            for j in 0..3 {
                                let (iy, ix) = (oy + i, ox + j);
                                if iy < g.pad_top || ix < g.pad_left {
                                    continue;
                                }
                                let (iy, ix) = (iy - g.pad_top, ix - g.pad_left);
                                if iy >= g.h || ix >= g.w {
                                    continue;
                                }
                                let xv = x[(ci * g.h + iy) * g.w + ix];
                                acc +=
                                    f64::from(xv) * f64::from(w[((co * cin + ci) * 3 + i) * 3 + j]);
                            }
                        }
                    }
                    y[(co * g.oh + oy) * g.ow + ox] = acc;
                }
            }
        }
        y
    }

    /// Odd and even sizes, asymmetric padding, partial last tiles and blocks, bias, residual and Relu, on
    /// 1 and 2 threads, against the direct sum: within 1e-4 of the output's scale.
    #[test]
    fn matches_the_direct_sum() {
        let mut rnd = crate::test_values::values(5);
        // (h, w, pad_top, pad_left, pad_bottom, pad_right, cin, cout)
        for &(h, w, pt, pl, pb, pr, cin, cout) in &[
            (12, 12, 1, 1, 1, 1, 16, 16),
            (11, 14, 1, 1, 1, 1, 17, 20),
            (17, 13, 0, 0, 0, 0, 16, 18),
            (10, 15, 2, 1, 0, 2, 19, 16),
            (13, 13, 1, 0, 1, 1, 33, 16),
            // Several blocks of tile rows (6 rows of 19 tiles), the last one partial.
            (41, 37, 1, 1, 1, 1, 16, 17),
        ] {
            let (oh, ow) = (h + pt + pb - 2, w + pl + pr - 2);
            let g = geometry(h, w, pt, pl, oh, ow);
            let x: Vec<f32> = (0..cin * h * w).map(|_| rnd()).collect();
            let wt: Vec<f32> = (0..cout * cin * 9).map(|_| rnd()).collect();
            let bias: Vec<f32> = (0..cout).map(|_| rnd()).collect();
            let z: Vec<f32> = (0..cout * oh * ow).map(|_| rnd()).collect();
            let ww = WinogradWeights::new(&wt, cout, cin).unwrap();
            assert!(ww.suits(&g), "{g:?}");
            let want: Vec<f64> = direct(&x, &wt, cin, cout, &g)
                .iter()
                .enumerate()
                .map(|(i, v)| (v + f64::from(bias[i / (oh * ow)]) + f64::from(z[i])).max(0.0))
                .collect();
            let scale = want.iter().fold(0f64, |m, v| m.max(v.abs()));
            for threads in [1, 2] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let mut got = vec![f32::NAN; cout * oh * ow];
                pool.install(|| {
                    ww.conv(
                        &x,
                        &g,
                        Some(&bias),
                        Some(&z),
                        &Activation::Relu,
                        &mut got,
                        threads,
                    )
                })
                .unwrap();
                for (i, (a, b)) in got.iter().zip(&want).enumerate() {
                    let err = (f64::from(*a) - b).abs();
                    assert!(err <= 1e-4 * scale, "{g:?} at {i}: {a} vs {b}");
                }
            }
        }
    }

    /// The AVX2 build of the transforms is the baseline's arithmetic, bit for bit.
    #[test]
    fn transforms_match_their_scalar_twin() {
        let g = geometry(13, 10, 1, 2, 13, 12);
        let (th, tw) = (g.oh.div_ceil(2), g.ow.div_ceil(2));
        let x: Vec<f32> = (0..g.h * g.w)
            .map(|i| (i % 17) as f32 * 0.37 - 2.0)
            .collect();
        let m: Vec<f32> = (0..POINTS * th * tw)
            .map(|i| (i % 23) as f32 * 0.11 - 1.0)
            .collect();
        let mut s = Vec::new();
        let run = |isa: Isa, s: &mut Vec<f32>| {
            let mut v = vec![0.0; POINTS * th * tw];
            let rows = TileRows { t0: 0, t1: th };
            input_isa(isa, &x, &g, rows, &mut v, s);
            let mut y = vec![0.0; g.oh * g.ow];
            output_isa(isa, &m, th * tw, &g, rows, &mut y, s);
            (v, y)
        };
        assert_eq!(run(Isa::Scalar, &mut s), run(Isa::best(), &mut s));
    }

    #[test]
    fn small_planes_and_few_channels_are_left_to_the_gemm() {
        let ww = WinogradWeights::new(&vec![0.5; 16 * 16 * 9], 16, 16).unwrap();
        assert!(!ww.suits(&geometry(5, 5, 1, 1, 5, 5)));
        assert!(ww.suits(&geometry(7, 7, 1, 1, 7, 7)));
        assert!(ww.suits(&geometry(14, 14, 1, 1, 14, 14)));
        let strided = DwGeometry {
            stride_h: 2,
            ..geometry(28, 28, 1, 1, 14, 14)
        };
        assert!(!ww.suits(&strided));
        let narrow = WinogradWeights::new(&vec![0.5; 8 * 16 * 9], 16, 8).unwrap();
        assert!(!narrow.suits(&geometry(14, 14, 1, 1, 14, 14)));
        let mut y = vec![0.0; 4];
        let short = ww.conv(
            &[0.0; 3],
            &geometry(2, 2, 1, 1, 2, 2),
            None,
            None,
            &Activation::None,
            &mut y,
            1,
        );
        assert!(matches!(
            short,
            Err(GemmError::TooShort { operand: "X", .. })
        ));
    }
}
