//! Repetition: Expand (numpy broadcasting to a shape) and Tile.

use rge_kernels::shape_util::broadcast_shapes;
use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::elems::run_movement;
use crate::maps::{AxisMaps, Fill};
use crate::util::{dims, strides};

struct Expand;

impl Kernel for Expand {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let spec = dims(&ctx.input(1)?.to_i64_vec()?)?;
        let shape = data.shape();
        let out = broadcast_shapes(&[shape, &spec])?;
        let st = strides(shape);
        let off = out.len() - shape.len();
        let maps = out
            .iter()
            .enumerate()
            .map(|(k, &n)| {
                if k < off || shape[k - off] == 1 {
                    vec![0; n]
                } else {
                    (0..n).map(|j| j * st[k - off]).collect()
                }
            })
            .collect();
        let maps = AxisMaps::new(maps, Fill::None).with_threads(ctx.threads());
        run_movement(ctx, &[data], &[(0, out.to_vec())], &maps)
    }
}

pub(crate) fn expand(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Expand))
}

/// `v1`: Tile 1's inputs (input, tiles, axis): `tiles` copies along `axis`.
struct Tile {
    v1: bool,
}

impl Kernel for Tile {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let shape = data.shape();
        let reps = if self.v1 {
            let one = |i: usize, what: &str| -> KernelResult<i64> {
                match ctx.input(i)?.to_whole_i64_vec()?.as_slice() {
                    [v] => Ok(*v),
                    v => Err(KernelError::invalid(format!(
                        "{what} has {} elements; it must have 1",
                        v.len()
                    ))),
                }
            };
            let (tiles, axis) = (one(1, "tiles")?, one(2, "axis")?);
            let a = rge_kernels::shape_util::normalize_axis(axis, shape.len())?;
            let mut r = vec![1i64; shape.len()];
            r[a] = tiles;
            dims(&r)?
        } else {
            dims(&ctx.input(1)?.to_i64_vec()?)?
        };
        if reps.len() != shape.len() {
            return Err(KernelError::invalid(format!(
                "repeats {reps:?} must have one entry per dim of {shape:?}"
            )));
        }
        let st = strides(shape);
        let maps = shape
            .iter()
            .zip(&reps)
            .zip(&st)
            .map(|((&d, &r), &s)| {
                let n = d
                    .checked_mul(r)
                    .ok_or_else(|| KernelError::invalid("tiled shape overflows"))?;
                Ok((0..n).map(|j| (j % d) * s).collect())
            })
            .collect::<KernelResult<Vec<Vec<usize>>>>()?;
        let maps = AxisMaps::new(maps, Fill::None).with_threads(ctx.threads());
        let out = maps.out_shape();
        run_movement(ctx, &[data], &[(0, out)], &maps)
    }
}

pub(crate) fn tile(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Tile { v1: init.opset < 6 }))
}
