//! GEMMs whose B is made one column tile at a time, the tiles in parallel: the implicit-GEMM
//! form of a convolution, whose im2col never exists whole. Each tile is a one-thread GEMM that
//! writes its columns of C in place, so no thread waits for another and nothing is copied.

use rayon::prelude::*;

use super::pack::check_raw;
use super::{sgemm_into, AOperand, BOperand, Bias, Epilogue, GemmError, GemmParams, Isa, Residual};

/// One tile's GEMM, called by the tile's B maker with the tile's `k × cols` B.
pub type TileGemm<'r> = dyn FnMut(BOperand<'_>) -> Result<(), GemmError> + 'r;

/// `C = epi(A·B)` (`p`'s alpha and beta apply) where B's columns `[c0, c0 + cols)` are made by
/// `make_b(c0, cols, gemm)`, which calls `gemm` once with them (a `k × cols` operand); tiles of
/// `tile` columns (the last one shorter) run on up to `threads` threads of the current rayon
/// pool, each writing its columns of C (`m × n`, row stride `ldc`). A per-column bias and a
/// residual are those of the whole C. The first error of a tile (its maker's or its GEMM's) is
/// returned; C's other tiles may then be written or not.
#[allow(clippy::too_many_arguments)]
pub fn sgemm_column_tiles<F>(
    p: &GemmParams,
    a: AOperand<'_>,
    tile: usize,
    c: &mut [f32],
    ldc: usize,
    epi: &Epilogue<'_>,
    threads: usize,
    make_b: F,
) -> Result<(), GemmError>
where
    F: Fn(usize, usize, &mut TileGemm<'_>) -> Result<(), GemmError> + Sync,
{
    let isa = Isa::best();
    let n = p.n;
    check_raw("C", c, p.m, n, ldc)?;
    if p.m == 0 || n == 0 {
        return Ok(());
    }
    let tile = tile.clamp(1, n);
    let base = crate::shared_out::SharedOut(c.as_mut_ptr());
    let run = |t: usize| -> Result<(), GemmError> {
        let c0 = t * tile;
        let cols = tile.min(n - c0);
        let tile_epi = Epilogue {
            bias: match epi.bias {
                Bias::PerColumn(b) => Bias::PerColumn(b.get(c0..).unwrap_or_default()),
                other => other,
            },
            residual: epi.residual.map(|r| Residual {
                data: r.data.get(c0..).unwrap_or_default(),
                ld: r.ld,
            }),
            activation: epi.activation,
        };
        let tp = GemmParams { n: cols, ..*p };
        make_b(c0, cols, &mut |b| {
            // SAFETY: C covers m × n at `ldc` (checked above) and `c` is borrowed mutably for
            // the whole call, so the tile's m × cols from column c0 lies in it; the tiles'
            // column ranges are disjoint, so no other tile touches those elements.
            unsafe { sgemm_into(isa, &tp, a, b, base.add(c0), ldc, &tile_epi, 1) }
        })
    };
    let tiles = n.div_ceil(tile);
    if threads > 1 && tiles > 1 {
        (0..tiles).into_par_iter().with_max_len(1).try_for_each(run)
    } else {
        (0..tiles).try_for_each(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm::sgemm;

    /// Tiles made on the fly give the one-GEMM result, with a bias per column, a residual and
    /// a ragged last tile, on 1 and 2 threads; a maker's error is returned.
    #[test]
    fn tiles_match_one_gemm() {
        let (m, n, k, ldc) = (7, 53, 11, 60);
        let a: Vec<f32> = (0..m * k).map(|i| (i % 13) as f32 * 0.25 - 1.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| (i % 7) as f32 * 0.5 - 1.5).collect();
        let bias: Vec<f32> = (0..n).map(|i| i as f32 * 0.1).collect();
        let res: Vec<f32> = (0..m * ldc).map(|i| (i % 5) as f32).collect();
        let epi = Epilogue::activation(crate::gemm::Activation::Relu)
            .with_bias(Bias::PerColumn(&bias))
            .with_residual(&res, ldc);
        let p = GemmParams::new(m, n, k);
        let a_op = AOperand::Raw {
            data: &a,
            ld: k,
            trans: false,
        };
        let b_op = BOperand::Raw {
            data: &b,
            ld: n,
            trans: false,
        };
        let mut want = vec![-7.0; m * ldc];
        sgemm(&p, a_op, b_op, &mut want, ldc, &epi, 1).unwrap();
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut got = vec![-7.0; m * ldc];
            pool.install(|| {
                sgemm_column_tiles(&p, a_op, 16, &mut got, ldc, &epi, threads, |c0, cols, g| {
                    let tile: Vec<f32> = (0..k)
                        .flat_map(|r| b[r * n + c0..r * n + c0 + cols].iter().copied())
                        .collect();
                    g(BOperand::Raw {
                        data: &tile,
                        ld: cols,
                        trans: false,
                    })
                })
            })
            .unwrap();
            assert_eq!(got, want, "{threads} threads");
        }
        let mut c = vec![0.0; m * ldc];
        let err = sgemm_column_tiles(&p, a_op, 16, &mut c, ldc, &epi, 1, |_, _, _| {
            Err(GemmError::Overflow)
        });
        assert_eq!(err, Err(GemmError::Overflow));
        let short = sgemm_column_tiles(&p, a_op, 16, &mut c[..10], ldc, &epi, 1, |_, _, _| Ok(()));
        assert!(matches!(short, Err(GemmError::TooShort { .. })));
    }
}
