//! Ops that only relabel the shape: Identity, Reshape, Flatten, Squeeze, Unsqueeze.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, ValueRef};

use crate::elems::copy_to_output;
use crate::util::{count, distinct_axes};

/// Identity: tensors are copied; sequences and optionals are passed on.
struct Identity;

impl Kernel for Identity {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        match ctx.value(0) {
            Some(ValueRef::Tensor(t)) => copy_to_output(ctx, 0, t, t.shape()),
            Some(v) => ctx.put(0, v.to_owned()),
            None => Err(KernelError::invalid("input 0 is missing")),
        }
    }
}

pub(crate) fn identity(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Identity))
}

/// The output dims of Reshape: 0 copies the input dim (unless `allowzero`), -1 is inferred.
pub(crate) fn reshape_dims(
    input: &[usize],
    spec: &[i64],
    allowzero: bool,
) -> KernelResult<Vec<usize>> {
    let total = count(input)?;
    let mut out = Vec::with_capacity(spec.len());
    let mut infer = None;
    let mut known = 1usize;
    for (i, &d) in spec.iter().enumerate() {
        let v = match d {
            -1 => {
                if infer.replace(i).is_some() {
                    return Err(KernelError::invalid(format!(
                        "shape {spec:?} has more than one -1"
                    )));
                }
                1
            }
            0 if !allowzero => *input.get(i).ok_or_else(|| {
                KernelError::invalid(format!(
                    "shape {spec:?}: 0 at position {i} has no input dim (input {input:?})"
                ))
            })?,
            d if d < 0 => {
                return Err(KernelError::invalid(format!("shape {spec:?} has dim {d}")));
            }
            d => usize::try_from(d).map_err(|_| KernelError::invalid("dim overflows"))?,
        };
        known = known
            .checked_mul(v)
            .ok_or_else(|| KernelError::invalid(format!("shape {spec:?} overflows")))?;
        out.push(v);
    }
    if let Some(i) = infer {
        if known == 0 || total % known != 0 {
            return Err(KernelError::invalid(format!(
                "cannot reshape {input:?} to {spec:?}"
            )));
        }
        out[i] = total / known;
    } else if known != total {
        return Err(KernelError::invalid(format!(
            "cannot reshape {input:?} ({total} elements) to {spec:?}"
        )));
    }
    Ok(out)
}

struct Reshape {
    allowzero: bool,
    attr_shape: Option<Vec<i64>>,
}

impl Kernel for Reshape {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let spec = match &self.attr_shape {
            Some(s) => s.clone(),
            None => ctx.input(1)?.to_i64_vec()?,
        };
        let shape = reshape_dims(data.shape(), &spec, self.allowzero)?;
        copy_to_output(ctx, 0, data, &shape)
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

pub(crate) fn reshape(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let attr_shape = if init.opset < 5 {
        Some(init.ints_or_empty("shape")?)
    } else {
        None
    };
    Ok(Box::new(Reshape {
        allowzero: init.int_or("allowzero", 0)? != 0,
        attr_shape,
    }))
}

struct Flatten {
    axis: i64,
}

impl Kernel for Flatten {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let r = data.rank() as i64;
        if self.axis < -r || self.axis > r {
            return Err(KernelError::invalid(format!(
                "axis {} is out of range for rank {r}",
                self.axis
            )));
        }
        let a = if self.axis < 0 {
            self.axis + r
        } else {
            self.axis
        } as usize;
        let outer = count(&data.shape()[..a])?;
        let inner = count(&data.shape()[a..])?;
        copy_to_output(ctx, 0, data, &[outer, inner])
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

pub(crate) fn flatten(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Flatten {
        axis: init.int_or("axis", 1)?,
    }))
}

/// Axes from the attribute (old opsets) or input 1.
fn axes_of(ctx: &KernelCtx<'_>, attr: &Option<Vec<i64>>) -> KernelResult<Option<Vec<i64>>> {
    match attr {
        Some(a) => Ok(Some(a.clone())),
        None => ctx.opt_input(1)?.map(|t| t.to_i64_vec()).transpose(),
    }
}

struct Squeeze {
    axes: Option<Vec<i64>>,
}

impl Kernel for Squeeze {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let shape = data.shape();
        // No axes, or an empty list (as ONNX Runtime reads it): every dim of 1 goes.
        let out: Vec<usize> = match axes_of(ctx, &self.axes)?.filter(|a| !a.is_empty()) {
            None => shape.iter().copied().filter(|&d| d != 1).collect(),
            Some(axes) => {
                let axes = distinct_axes(&axes, shape.len())?;
                if let Some(&a) = axes.iter().find(|&&a| shape[a] != 1) {
                    return Err(KernelError::invalid(format!(
                        "cannot squeeze axis {a} of shape {shape:?}: it is not 1"
                    )));
                }
                shape
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !axes.contains(i))
                    .map(|(_, &d)| d)
                    .collect()
            }
        };
        copy_to_output(ctx, 0, data, &out)
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

pub(crate) fn squeeze(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let axes = if init.opset < 13 {
        init.ints_opt("axes")?.map(<[i64]>::to_vec)
    } else {
        None
    };
    Ok(Box::new(Squeeze { axes }))
}

struct Unsqueeze {
    /// Attribute axes (opsets before 13); `None`: read input 1.
    axes: Option<Vec<i64>>,
}

impl Kernel for Unsqueeze {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let axes = axes_of(ctx, &self.axes)?
            .ok_or_else(|| KernelError::invalid("Unsqueeze needs axes"))?;
        let rank = data.rank() + axes.len();
        let axes = distinct_axes(&axes, rank)?;
        let mut it = data.shape().iter();
        let out: Vec<usize> = (0..rank)
            .map(|i| {
                if axes.contains(&i) {
                    1
                } else {
                    it.next().copied().unwrap_or(1)
                }
            })
            .collect();
        copy_to_output(ctx, 0, data, &out)
    }

    fn reuse_input(&self) -> Option<(usize, usize)> {
        Some((0, 0))
    }
}

pub(crate) fn unsqueeze(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let axes = if init.opset < 13 {
        Some(init.ints_or_empty("axes")?)
    } else {
        None
    };
    Ok(Box::new(Unsqueeze { axes }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reshape_rules() {
        assert_eq!(
            reshape_dims(&[2, 3, 4], &[0, -1], false).unwrap(),
            vec![2, 12]
        );
        assert_eq!(reshape_dims(&[0, 3], &[3, 0], true).unwrap(), vec![3, 0]);
        assert!(reshape_dims(&[2, 3], &[-1, -1], false).is_err());
        assert!(reshape_dims(&[2, 3], &[4, -1], false).is_err());
        assert!(reshape_dims(&[2, 3], &[0, 0, 0], false).is_err());
        assert!(reshape_dims(&[2, 3], &[-2, 3], false).is_err());
        assert!(reshape_dims(&[2, 3], &[7], false).is_err());
    }
}
