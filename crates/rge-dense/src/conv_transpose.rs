//! ConvTranspose (1-D, 2-D, 3-D; groups, strides, dilations, pads, output padding and shape):
//! per image and group a GEMM `cols = W_gᵀ · X_g` on the packed SGEMM, with `W_gᵀ` packed once
//! when the weights are constant, then the columns scatter-added into the output (col2im) and
//! the bias added. The attribute and shape rules are the reference kernel's
//! (`rge_kernels_nn::ConvTranspose`), so both engines agree on every output size.

use rge_ir::AttrValue;
use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};
use rge_kernels_nn::{col2im_add_f32, ConvTranspose, CtPlan};

use crate::gemm::{self, AOperand, BOperand, Epilogue, GemmParams, PackedA};
use crate::kernels::{f32s, gemm_err, PACKED_W_ATTR};

/// The dense ConvTranspose kernel.
pub struct ConvTransposeKernel {
    attrs: ConvTranspose,
    /// `W_gᵀ` (`(M/g)·prod(kernel)` × `C/g`) packed per group, when W is a constant.
    packed: Option<Vec<PackedA>>,
}

/// `W_gᵀ` of each group, packed: W is `[C, M/g, k…]`, so group g's rows `C/g` form a
/// `(C/g) × rows` row-major matrix whose transpose is the GEMM's A.
fn pack_weights(init: &KernelInit<'_>, group: usize) -> KernelResult<Option<Vec<PackedA>>> {
    let Some(w) = init.constant(1) else {
        return Ok(None);
    };
    let s = w.shape();
    if s.len() < 3 || s[0] % group != 0 {
        return Ok(None);
    }
    let (cg, rows) = (s[0] / group, s[1..].iter().product::<usize>());
    let data = w.as_slice::<f32>()?;
    (0..group)
        .map(|g| {
            PackedA::pack(
                &data[g * cg * rows..(g + 1) * cg * rows],
                rows,
                cg,
                rows,
                true,
            )
            .map_err(gemm_err)
        })
        .collect::<KernelResult<Vec<_>>>()
        .map(Some)
}

/// Compile time (CompileOp): the packed `W_gᵀ` of each group, kept on the op.
pub fn prepare_conv_transpose(init: &KernelInit<'_>) -> KernelResult<Vec<(String, AttrValue)>> {
    let group = ConvTranspose::parse(init)?.group();
    Ok(pack_weights(init, group)?
        .map(|v| {
            let bytes = v.iter().map(|p| p.as_bytes().to_vec()).collect();
            vec![(PACKED_W_ATTR.to_string(), AttrValue::ListBytes(bytes))]
        })
        .unwrap_or_default())
}

/// Builds the kernel.
pub fn create_conv_transpose(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let attrs = ConvTranspose::parse(init)?;
    let group = attrs.group();
    let packed = match init.attrs.get(PACKED_W_ATTR) {
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
        None => pack_weights(init, group)?,
    };
    Ok(Box::new(ConvTransposeKernel { attrs, packed }))
}

impl Kernel for ConvTransposeKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let w = ctx.input(1)?;
        let p = self.attrs.plan(x.shape(), w.shape())?;
        let bias = ctx.opt_input(2)?.map(|b| f32s(&b, "B")).transpose()?;
        if bias.is_some_and(|b| b.len() != p.m) {
            return Err(KernelError::invalid(format!(
                "ConvTranspose: a bias of {} values for {} output channels",
                bias.map_or(0, <[f32]>::len),
                p.m
            )));
        }
        let (xv, wv) = (f32s(&x, "X")?, f32s(&w, "W")?);
        let mut shape = vec![p.n, p.m];
        shape.extend_from_slice(&p.out);
        let threads = ctx.threads();
        let y = ctx.output::<f32>(0, &shape)?;
        self.run(&p, xv, wv, bias, y, threads)
    }
}

impl ConvTransposeKernel {
    fn run(
        &self,
        p: &CtPlan,
        x: &[f32],
        w: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        threads: usize,
    ) -> KernelResult<()> {
        let g = self.attrs.group();
        let (cg, mg) = (p.c / g, p.m / g);
        let insz: usize = p.input.iter().product();
        let ksz: usize = p.kernel.iter().product();
        let outsz: usize = p.out.iter().product();
        let rows = mg * ksz;
        if x.len() != p.n * p.c * insz || w.len() != p.c * rows || y.len() != p.n * p.m * outsz {
            return Err(KernelError::invalid(
                "ConvTranspose: operand sizes do not fit the shapes",
            ));
        }
        if y.is_empty() {
            return Ok(());
        }
        // 1-D and 2-D images go through the columns a band of input rows at a time
        // (`BandRun`); a 3-D one whole.
        let mut col = if p.input.len() > 2 {
            vec![0.0f32; rows * insz]
        } else {
            Vec::new()
        };
        // Kernel offsets that tile the output write each output value once: no bias fill
        // first, and no scatter-add.
        let exact = tiles_exactly(p);
        for ni in 0..p.n {
            for gi in 0..g {
                let xs = &x[(ni * p.c + gi * cg) * insz..][..cg * insz];
                let a = match &self.packed {
                    Some(pw) if pw[gi].m() == rows && pw[gi].k() == cg => AOperand::Packed(&pw[gi]),
                    _ => AOperand::Raw {
                        data: &w[gi * cg * rows..][..cg * rows],
                        ld: rows,
                        trans: true,
                    },
                };
                let yo = &mut y[(ni * p.m + gi * mg) * outsz..][..mg * outsz];
                // Each output channel starts at its bias, then takes the columns' sums.
                if !exact {
                    for (mi, row) in yo.chunks_mut(outsz.max(1)).enumerate() {
                        row.fill(bias.map_or(0.0, |b| b[gi * mg + mi]));
                    }
                }
                if p.input.len() > 2 {
                    let b = BOperand::Raw {
                        data: xs,
                        ld: insz,
                        trans: false,
                    };
                    if insz > 0 && cg > 0 {
                        let params = GemmParams::new(rows, insz, cg);
                        gemm::sgemm(&params, a, b, &mut col, insz, &Epilogue::NONE, threads)
                            .map_err(gemm_err)?;
                    } else {
                        col.fill(0.0);
                    }
                    col2im_add_f32(&col, mg, &p.out, &p.input, &p.kernel, &p.tables, yo);
                    continue;
                }
                let bands = BandRun {
                    p,
                    a,
                    xs,
                    rows,
                    cg,
                    mg,
                    exact,
                    bias: bias.map(|b| &b[gi * mg..][..mg]),
                };
                bands.run(yo, threads)?;
            }
        }
        Ok(())
    }
}

/// One image and group of a 1-D or 2-D ConvTranspose, run a band of input rows at a time, so
/// the band's columns stay in L2 between the GEMM that writes them and the col2im that reads
/// them (whole, the OCR detector's 24→24 2×2/2 upsample wrote and read 10 MB).
struct BandRun<'a> {
    p: &'a CtPlan,
    a: AOperand<'a>,
    /// The group's input channels, `cg` planes.
    xs: &'a [f32],
    /// GEMM rows: the group's output channels times the kernel's size.
    rows: usize,
    cg: usize,
    mg: usize,
    /// Whether the kernel offsets tile the output ([`tiles_exactly`]): the columns are then
    /// placed with the bias, into planes not filled before.
    exact: bool,
    /// The group's bias.
    bias: Option<&'a [f32]>,
}

impl BandRun<'_> {
    fn dims(&self) -> (usize, usize, usize) {
        let p = self.p;
        match (&p.input[..], &p.out[..]) {
            ([h, w], [_, ow]) => (*h, *w, *ow),
            _ => (1, p.input.iter().product(), p.out.iter().product()),
        }
    }

    /// Input rows per band: [`COL_BAND_FLOATS`] of columns, at least one row.
    fn band(&self) -> usize {
        let (h, width, _) = self.dims();
        (COL_BAND_FLOATS / (self.rows * width).max(1)).clamp(1, h.max(1))
    }

    /// The output rows band `y0..y1` writes, if any (`[lo, hi)`).
    fn out_rows(&self, y0: usize, y1: usize) -> Option<(usize, usize)> {
        let p = self.p;
        if p.input.len() != 2 {
            return Some((0, 1));
        }
        let h = p.input[0];
        let rows = (0..p.kernel[0])
            .flat_map(|ki| (y0..y1).map(move |iy| p.tables[0][ki * h + iy]))
            .filter(|&r| r >= 0);
        let (lo, hi) = rows.fold((isize::MAX, -1), |(lo, hi), r| (lo.min(r), hi.max(r)));
        (hi >= 0).then(|| (lo as usize, hi as usize + 1))
    }

    /// Bands `first..last` (band indices) into the output planes `planes`, which hold the
    /// output rows from `row0` on: per band the GEMM's columns, then col2im.
    fn bands(
        &self,
        range: std::ops::Range<usize>,
        planes: &mut [&mut [f32]],
        row0: usize,
        threads: usize,
    ) -> KernelResult<()> {
        let ((h, width, _), band) = (self.dims(), self.band());
        let mut col = vec![0.0f32; self.rows * band * width];
        for b in range {
            let (y0, y1) = (b * band, ((b + 1) * band).min(h));
            let cols = (y1 - y0) * width;
            let col = &mut col[..self.rows * cols];
            if cols > 0 && self.cg > 0 {
                let bop = BOperand::Raw {
                    data: &self.xs[y0 * width..],
                    ld: h * width,
                    trans: false,
                };
                let params = GemmParams::new(self.rows, cols, self.cg);
                gemm::sgemm(&params, self.a, bop, col, cols, &Epilogue::NONE, threads)
                    .map_err(gemm_err)?;
            } else {
                col.fill(0.0);
            }
            if self.exact {
                place_tiles(col, self.p, planes, row0, y0..y1, self.bias);
            } else {
                col2im_2d(col, self.mg, self.p, planes, row0, y0..y1);
            }
        }
        Ok(())
    }

    /// All bands into `yo` (the group's `mg` output planes). On several threads, when the
    /// bands' output rows do not overlap (a stride at least the kernel's height, as in an
    /// FPN's 2×2/2 upsample), runs of bands are the tasks, each on its own rows of every
    /// plane; otherwise the bands run in order, each GEMM on the threads.
    fn run(&self, yo: &mut [f32], threads: usize) -> KernelResult<()> {
        let ((h, _, ow), band) = (self.dims(), self.band());
        let outsz = yo.len() / self.mg.max(1);
        let n_bands = h.div_ceil(band).max(1);
        let spans: Vec<Option<(usize, usize)>> = (0..n_bands)
            .map(|b| self.out_rows(b * band, ((b + 1) * band).min(h)))
            .collect();
        let disjoint = spans
            .iter()
            .flatten()
            .zip(spans.iter().flatten().skip(1))
            .all(|(a, b)| a.1 <= b.0);
        let parts = threads.min(n_bands);
        if parts <= 1 || !disjoint || outsz == 0 {
            let mut planes: Vec<&mut [f32]> = yo.chunks_mut(outsz.max(1)).collect();
            return self.bands(0..n_bands, &mut planes, 0, threads);
        }
        // Part t: bands `t·per..`, its output rows from the first band's first row to the next
        // part's first row (the last: to the end), cut out of every plane.
        let per = n_bands.div_ceil(parts);
        let starts: Vec<usize> = (0..parts)
            .map(|t| {
                spans[(t * per).min(n_bands)..]
                    .iter()
                    .flatten()
                    .next()
                    .map_or(outsz / ow.max(1), |s| s.0)
            })
            .collect();
        let mut slices: Vec<Vec<&mut [f32]>> = (0..parts).map(|_| Vec::new()).collect();
        for plane in yo.chunks_mut(outsz) {
            let (_, mut rest) = plane.split_at_mut(starts[0] * ow);
            for t in 0..parts {
                let end = starts.get(t + 1).map_or(outsz / ow, |&s| s) * ow;
                let len = end - starts[t] * ow;
                let (mine, tail) = rest.split_at_mut(len);
                slices[t].push(mine);
                rest = tail;
            }
        }
        let slices: Vec<std::sync::Mutex<Vec<&mut [f32]>>> =
            slices.into_iter().map(std::sync::Mutex::new).collect();
        let failed = std::sync::Mutex::new(None);
        rge_kernels::parts::for_each_part(parts, |t| {
            let Ok(mut planes) = slices[t].lock() else {
                return;
            };
            let range = (t * per).min(n_bands)..((t + 1) * per).min(n_bands);
            if let Err(e) = self.bands(range, &mut planes, starts[t], 1) {
                if let Ok(mut f) = failed.lock() {
                    *f = Some(e);
                }
            }
        });
        match failed.into_inner() {
            Ok(Some(e)) => Err(e),
            _ => Ok(()),
        }
    }
}

/// Whether the kernel offsets of a 2-D plan tile its output: input position `i` and offset `o`
/// write output position `i·k + o` along each dim, and nothing else is written (a stride equal
/// to the kernel, no pads, dilation or output padding: an FPN's or a U-Net's 2×2/2 upsample).
fn tiles_exactly(p: &CtPlan) -> bool {
    p.input.len() == 2
        && (0..2).all(|d| {
            let (n, k) = (p.input[d], p.kernel[d]);
            p.out[d] == n * k
                && p.tables[d].len() == k * n
                && (0..k).all(|o| (0..n).all(|i| p.tables[d][o * n + i] == (i * k + o) as isize))
        })
}

/// The columns of the input rows `band` placed into the output planes when the kernel
/// offsets tile it ([`tiles_exactly`]): each output row is one kernel row's columns of one
/// input row, interleaved, plus the bias, written once. The scatter-add into planes filled
/// with the bias first read and wrote the OCR detector's 10 MB output five times.
fn place_tiles(
    col: &[f32],
    p: &CtPlan,
    planes: &mut [&mut [f32]],
    row0: usize,
    band: std::ops::Range<usize>,
    bias: Option<&[f32]>,
) {
    let (w, kh, kw, ow) = (p.input[1], p.kernel[0], p.kernel[1], p.out[1]);
    let insz = band.len() * w;
    for (c, dst) in planes.iter_mut().enumerate() {
        let b = bias.map_or(0.0, |b| b[c]);
        for ki in 0..kh {
            let plane = |kj: usize| &col[((c * kh + ki) * kw + kj) * insz..][..insz];
            for iy in band.clone() {
                let row = &mut dst[(iy * kh + ki - row0) * ow..][..ow];
                let at = (iy - band.start) * w;
                if kw == 2 {
                    interleave_pair(row, &plane(0)[at..][..w], &plane(1)[at..][..w], b);
                    continue;
                }
                for kj in 0..kw {
                    let src = &plane(kj)[at..][..w];
                    for (o, &v) in row[kj..].iter_mut().step_by(kw).zip(src) {
                        *o = v + b;
                    }
                }
            }
        }
    }
}

/// `row[2i] = even[i] + b` and `row[2i + 1] = odd[i] + b` (the sums the scatter-add makes,
/// bias first, bit for bit).
fn interleave_pair(row: &mut [f32], even: &[f32], odd: &[f32], b: f32) {
    for ((pair, &e), &o) in row.chunks_exact_mut(2).zip(even).zip(odd) {
        pair[0] = e + b;
        pair[1] = o + b;
    }
}

/// Floats of GEMM columns per band of input rows (512 KiB: within L2 beside the GEMM's panels).
const COL_BAND_FLOATS: usize = 128 * 1024;

/// The valid run of one kernel offset along a dim: the first grid position whose image
/// coordinate is inside, how many follow, the first coordinate and the step between them
/// (coordinates grow by the stride along the grid, so the valid ones are one run).
fn valid_run(table: &[isize]) -> Option<(usize, usize, usize, usize)> {
    let first = table.iter().position(|&c| c >= 0)?;
    let count = table[first..].iter().take_while(|&&c| c >= 0).count();
    let step = if count > 1 {
        (table[first + 1] - table[first]) as usize
    } else {
        1
    };
    Some((first, count, table[first] as usize, step))
}

/// col2im for 1-D and 2-D, for the input rows `band` (`col` holds their columns: per channel
/// and kernel offset, a plane of `band.len()` rows): per channel and kernel offset, each input
/// row adds into one output row at a fixed step, with the bounds found once per row (no test
/// per element). The sums of the reference's table walk, in its order, after the bias.
fn col2im_2d(
    col: &[f32],
    channels: usize,
    p: &CtPlan,
    planes: &mut [&mut [f32]],
    row0: usize,
    band: std::ops::Range<usize>,
) {
    let two_d = p.input.len() == 2;
    let (h, w) = if two_d {
        (p.input[0], p.input[1])
    } else {
        (1, p.input[0])
    };
    let (kh, kw) = if two_d {
        (p.kernel[0], p.kernel[1])
    } else {
        (1, p.kernel[0])
    };
    let (oh, ow) = if two_d {
        (p.out[0], p.out[1])
    } else {
        (1, p.out[0])
    };
    let xt = &p.tables[p.input.len() - 1];
    let (insz, outsz) = (band.len() * w, oh * ow);
    debug_assert!(band.end <= h);
    debug_assert!(outsz > 0 && planes.len() == channels);
    for (c, dst) in planes.iter_mut().enumerate().take(channels) {
        for ki in 0..kh {
            for kj in 0..kw {
                let Some((ix0, n, ox0, sx)) = valid_run(&xt[kj * w..][..w]) else {
                    continue;
                };
                let src_plane = &col[((c * kh + ki) * kw + kj) * insz..][..insz];
                for iy in band.clone() {
                    let oy = if two_d { p.tables[0][ki * h + iy] } else { 0 };
                    if oy < 0 {
                        continue;
                    }
                    let src = &src_plane[(iy - band.start) * w + ix0..][..n];
                    let row = &mut dst[(oy as usize - row0) * ow..][..ow];
                    if sx == 1 {
                        for (o, &v) in row[ox0..ox0 + n].iter_mut().zip(src) {
                            *o += v;
                        }
                    } else {
                        for (k, &v) in src.iter().enumerate() {
                            row[ox0 + k * sx] += v;
                        }
                    }
                }
            }
        }
    }
}
