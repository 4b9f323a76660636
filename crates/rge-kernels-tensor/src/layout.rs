//! Permutations of the layout: Transpose, DepthToSpace, SpaceToDepth.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::elems::run_movement;
use crate::maps::{AxisMaps, Fill};
use crate::util::strides;

/// Maps reading a contiguous tensor of `shape` in the order `perm`.
pub(crate) fn permute_maps(shape: &[usize], perm: &[usize]) -> AxisMaps {
    let st = strides(shape);
    let maps = perm
        .iter()
        .map(|&p| (0..shape[p]).map(|j| j * st[p]).collect())
        .collect();
    AxisMaps::new(maps, Fill::None)
}

struct Transpose {
    perm: Option<Vec<i64>>,
}

impl Kernel for Transpose {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let rank = data.rank();
        let perm: Vec<usize> = match &self.perm {
            None => (0..rank).rev().collect(),
            Some(p) => {
                if p.len() != rank {
                    return Err(KernelError::invalid(format!(
                        "perm {p:?} does not fit rank {rank}"
                    )));
                }
                let mut seen = vec![false; rank];
                let mut out = Vec::with_capacity(rank);
                for &a in p {
                    let i = usize::try_from(a)
                        .ok()
                        .filter(|&i| i < rank && !seen[i])
                        .ok_or_else(|| {
                            KernelError::invalid(format!("perm {p:?} is not a permutation"))
                        })?;
                    seen[i] = true;
                    out.push(i);
                }
                out
            }
        };
        let maps = permute_maps(data.shape(), &perm).with_threads(ctx.threads());
        let shape = maps.out_shape();
        run_movement(ctx, &[data], &[(0, shape)], &maps)
    }
}

pub(crate) fn transpose(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Transpose {
        perm: init.ints_opt("perm")?.map(<[i64]>::to_vec),
    }))
}

struct BlockShuffle {
    to_space: bool,
    crd: bool,
    block: usize,
}

impl Kernel for BlockShuffle {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let &[n, c, h, w] = data.shape() else {
            return Err(KernelError::invalid(format!(
                "input must be 4-D, got {:?}",
                data.shape()
            )));
        };
        let b = self.block;
        let (view, perm, out): ([usize; 6], [usize; 6], [usize; 4]) = if self.to_space {
            if c % (b * b) != 0 {
                return Err(KernelError::invalid(format!(
                    "channels {c} are not divisible by blocksize² {}",
                    b * b
                )));
            }
            let cc = c / (b * b);
            let out = [n, cc, h * b, w * b];
            if self.crd {
                ([n, cc, b, b, h, w], [0, 1, 4, 2, 5, 3], out)
            } else {
                ([n, b, b, cc, h, w], [0, 3, 4, 1, 5, 2], out)
            }
        } else {
            if h % b != 0 || w % b != 0 {
                return Err(KernelError::invalid(format!(
                    "height {h} and width {w} must be divisible by blocksize {b}"
                )));
            }
            let view = [n, c, h / b, b, w / b, b];
            let out = [n, c * b * b, h / b, w / b];
            if self.crd {
                (view, [0, 1, 3, 5, 2, 4], out)
            } else {
                (view, [0, 3, 5, 1, 2, 4], out)
            }
        };
        let maps = permute_maps(&view, &perm).with_threads(ctx.threads());
        run_movement(ctx, &[data], &[(0, out.to_vec())], &maps)
    }
}

fn block_shuffle(init: &KernelInit<'_>, to_space: bool) -> KernelResult<Box<dyn Kernel>> {
    let block = init.int("blocksize")?;
    let block = usize::try_from(block)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| KernelError::attr("blocksize", format!("{block} is not positive")))?;
    let crd = match init.str_or("mode", "DCR")? {
        "DCR" => false,
        "CRD" => true,
        m => return Err(KernelError::attr("mode", format!("unknown mode {m}"))),
    };
    Ok(Box::new(BlockShuffle {
        to_space,
        crd,
        block,
    }))
}

pub(crate) fn depth_to_space(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    block_shuffle(init, true)
}

pub(crate) fn space_to_depth(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    block_shuffle(init, false)
}
