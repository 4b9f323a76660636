//! Pad (constant, reflect, edge, wrap; pads as attribute or input, axes input) and
//! CenterCropPad.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor};

use crate::elems::run_movement;
use crate::maps::{AxisMaps, Fill, FILL};
use crate::util::{dims, distinct_axes, scalar_of, strides};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Constant,
    Reflect,
    Edge,
    Wrap,
}

/// The source indices (or FILL) of one padded axis; negative pads crop first.
fn pad_axis(dim: usize, begin: i64, end: i64, mode: Mode) -> KernelResult<Vec<usize>> {
    let d = dim as i64;
    let lo = (-begin).max(0);
    let hi = d - (-end).max(0);
    if hi < lo {
        return Err(KernelError::invalid(format!(
            "pads ({begin}, {end}) crop more than the dim {dim}"
        )));
    }
    let len = hi - lo;
    let (pb, pe) = (begin.max(0), end.max(0));
    let out_len = len
        .checked_add(pb)
        .and_then(|v| v.checked_add(pe))
        .filter(|&v| v <= isize::MAX as i64)
        .ok_or_else(|| KernelError::invalid("pads overflow"))?;
    if len == 0 && out_len > 0 && mode != Mode::Constant {
        return Err(KernelError::invalid(format!(
            "{mode:?} padding needs a non-empty dim"
        )));
    }
    Ok((0..out_len)
        .map(|j| {
            let k = j - pb;
            let src = match mode {
                Mode::Constant => {
                    if (0..len).contains(&k) {
                        k
                    } else {
                        return FILL;
                    }
                }
                Mode::Edge => k.clamp(0, len - 1),
                Mode::Wrap => k.rem_euclid(len),
                Mode::Reflect => {
                    if len == 1 {
                        0
                    } else {
                        let period = 2 * (len - 1);
                        let m = k.rem_euclid(period);
                        if m >= len {
                            period - m
                        } else {
                            m
                        }
                    }
                }
            };
            (lo + src) as usize
        })
        .collect())
}

/// Per-axis pad maps scaled by the source strides.
fn scale(maps: Vec<Vec<usize>>, shape: &[usize]) -> Vec<Vec<usize>> {
    let st = strides(shape);
    maps.into_iter()
        .zip(st)
        .map(|(m, s)| {
            m.into_iter()
                .map(|v| if v == FILL { FILL } else { v * s })
                .collect()
        })
        .collect()
}

struct Pad {
    mode: Mode,
    /// Opsets before 11: pads and the constant value from attributes.
    attr: Option<(Vec<i64>, f32)>,
}

impl Kernel for Pad {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let rank = data.rank();
        let (pads, value, axes): (Vec<i64>, Option<Tensor>, Option<Vec<i64>>) = match &self.attr {
            Some((p, v)) => {
                let value = if *v == 0.0 {
                    None
                } else {
                    Some(scalar_of(data.dtype(), f64::from(*v))?)
                };
                (p.clone(), value, None)
            }
            None => (
                ctx.input(1)?.to_i64_vec()?,
                match ctx.opt_input(2)? {
                    Some(t) if t.len() != 1 => {
                        return Err(KernelError::invalid(format!(
                            "constant_value must have one element, got shape {:?}",
                            t.shape()
                        )))
                    }
                    Some(t) => Some(t.to_owned()),
                    None => None,
                },
                ctx.opt_input(3)?.map(|t| t.to_i64_vec()).transpose()?,
            ),
        };
        let axes = match axes {
            Some(a) => distinct_axes(&a, rank)?,
            None => (0..rank).collect(),
        };
        if pads.len() != 2 * axes.len() {
            return Err(KernelError::invalid(format!(
                "pads {pads:?} must have 2 entries per padded axis ({} axes)",
                axes.len()
            )));
        }
        let shape = data.shape();
        let mut maps: Vec<Vec<usize>> = shape.iter().map(|&d| (0..d).collect()).collect();
        for (k, &a) in axes.iter().enumerate() {
            maps[a] = pad_axis(shape[a], pads[k], pads[k + axes.len()], self.mode)?;
        }
        let fill = if value.is_some() && self.mode == Mode::Constant {
            Fill::Src1
        } else {
            Fill::Zero
        };
        let maps = AxisMaps::new(scale(maps, shape), fill).with_threads(ctx.threads());
        let out = maps.out_shape();
        match &value {
            Some(v) if self.mode == Mode::Constant => {
                run_movement(ctx, &[data, v.view()], &[(0, out)], &maps)
            }
            _ => run_movement(ctx, &[data], &[(0, out)], &maps),
        }
    }
}

pub(crate) fn pad(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let mode = match init.str_or("mode", "constant")? {
        "constant" => Mode::Constant,
        "reflect" => Mode::Reflect,
        "edge" => Mode::Edge,
        "wrap" => Mode::Wrap,
        m => return Err(KernelError::attr("mode", format!("unknown mode {m}"))),
    };
    let attr = if init.opset < 11 {
        let name = if init.opset < 2 { "paddings" } else { "pads" };
        Some((init.ints_or_empty(name)?, init.float_or("value", 0.0)?))
    } else {
        None
    };
    Ok(Box::new(Pad { mode, attr }))
}

struct CenterCropPad {
    axes: Option<Vec<i64>>,
}

impl Kernel for CenterCropPad {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let target = dims(&ctx.input(1)?.to_i64_vec()?)?;
        let rank = data.rank();
        let axes = match &self.axes {
            Some(a) => distinct_axes(a, rank)?,
            None => (0..rank).collect(),
        };
        if target.len() != axes.len() {
            return Err(KernelError::invalid(format!(
                "shape {target:?} must have one entry per axis ({} axes)",
                axes.len()
            )));
        }
        let shape = data.shape();
        let mut maps: Vec<Vec<usize>> = shape.iter().map(|&d| (0..d).collect()).collect();
        for (&a, &sh) in axes.iter().zip(&target) {
            let dim = shape[a];
            maps[a] = if sh <= dim {
                let off = (dim - sh) / 2;
                (off..off + sh).collect()
            } else {
                let off = (sh - dim) / 2;
                (0..sh)
                    .map(|j| {
                        if j >= off && j - off < dim {
                            j - off
                        } else {
                            FILL
                        }
                    })
                    .collect()
            };
        }
        let maps = AxisMaps::new(scale(maps, shape), Fill::Zero).with_threads(ctx.threads());
        let out = maps.out_shape();
        run_movement(ctx, &[data], &[(0, out)], &maps)
    }
}

pub(crate) fn center_crop_pad(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(CenterCropPad {
        axes: init.ints_opt("axes")?.map(<[i64]>::to_vec),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(
            pad_axis(3, 2, 1, Mode::Reflect).unwrap(),
            vec![2, 1, 0, 1, 2, 1]
        );
        assert_eq!(
            pad_axis(3, 2, 1, Mode::Edge).unwrap(),
            vec![0, 0, 0, 1, 2, 2]
        );
        assert_eq!(
            pad_axis(3, 2, 1, Mode::Wrap).unwrap(),
            vec![1, 2, 0, 1, 2, 0]
        );
        assert_eq!(
            pad_axis(3, 1, -1, Mode::Constant).unwrap(),
            vec![FILL, 0, 1]
        );
        assert_eq!(pad_axis(4, -1, 2, Mode::Wrap).unwrap(), vec![1, 2, 3, 1, 2]);
        assert!(pad_axis(3, -2, -2, Mode::Constant).is_err());
        assert!(pad_axis(0, 1, 0, Mode::Edge).is_err());
    }
}
