//! Slice (opset 1 attributes; inputs from opset 10, negative steps, clamping).

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::elems::run_movement;
use crate::maps::{AxisMaps, Fill};
use crate::util::{distinct_axes, strides};

/// The source indices one axis of length `dim` keeps for (start, end, step), after ONNX's
/// clamping rules.
pub(crate) fn slice_axis(dim: usize, start: i64, end: i64, step: i64) -> KernelResult<Vec<usize>> {
    if step == 0 {
        return Err(KernelError::invalid("slice step is 0"));
    }
    if dim == 0 {
        return Ok(Vec::new());
    }
    let d = dim as i64;
    let norm = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
    let (s, e) = if step > 0 {
        (norm(start).clamp(0, d), norm(end).clamp(0, d))
    } else {
        (norm(start).clamp(0, d - 1), norm(end).clamp(-1, d - 1))
    };
    let mut out = Vec::new();
    let mut i = s;
    if step > 0 {
        while i < e {
            out.push(i as usize);
            i = i.saturating_add(step);
        }
    } else {
        while i > e {
            out.push(i as usize);
            i = i.saturating_add(step);
        }
    }
    Ok(out)
}

/// Opset 1's starts, ends and axes attributes.
type SliceAttrs = (Vec<i64>, Vec<i64>, Option<Vec<i64>>);

struct Slice {
    attrs: Option<SliceAttrs>,
}

impl Kernel for Slice {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let data = ctx.input(0)?;
        let (starts, ends, axes, steps) = match &self.attrs {
            Some((s, e, a)) => (s.clone(), e.clone(), a.clone(), None),
            None => (
                ctx.input(1)?.to_i64_vec()?,
                ctx.input(2)?.to_i64_vec()?,
                ctx.opt_input(3)?.map(|t| t.to_i64_vec()).transpose()?,
                ctx.opt_input(4)?.map(|t| t.to_i64_vec()).transpose()?,
            ),
        };
        let rank = data.rank();
        let n = starts.len();
        let axes = match axes {
            Some(a) => a,
            None => (0..n as i64).collect(),
        };
        let steps = steps.unwrap_or_else(|| vec![1; n]);
        if ends.len() != n || axes.len() != n || steps.len() != n {
            return Err(KernelError::invalid(format!(
                "starts, ends, axes and steps differ in length ({n}, {}, {}, {})",
                ends.len(),
                axes.len(),
                steps.len()
            )));
        }
        let axes = distinct_axes(&axes, rank)?;
        let shape = data.shape();
        let st = strides(shape);
        let mut maps: Vec<Vec<usize>> = shape
            .iter()
            .zip(&st)
            .map(|(&d, &s)| (0..d).map(|j| j * s).collect())
            .collect();
        for (k, &a) in axes.iter().enumerate() {
            maps[a] = slice_axis(shape[a], starts[k], ends[k], steps[k])?
                .into_iter()
                .map(|j| j * st[a])
                .collect();
        }
        let maps = AxisMaps::new(maps, Fill::None).with_threads(ctx.threads());
        let out = maps.out_shape();
        run_movement(ctx, &[data], &[(0, out)], &maps)
    }
}

pub(crate) fn slice(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let attrs = if init.opset < 10 {
        Some((
            init.ints_or_empty("starts")?,
            init.ints_or_empty("ends")?,
            init.ints_opt("axes")?.map(<[i64]>::to_vec),
        ))
    } else {
        None
    };
    Ok(Box::new(Slice { attrs }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamping() {
        assert_eq!(slice_axis(5, 1, 3, 1).unwrap(), vec![1, 2]);
        assert_eq!(
            slice_axis(5, -1, i64::MIN, -1).unwrap(),
            vec![4, 3, 2, 1, 0]
        );
        assert_eq!(slice_axis(5, 10, 0, -2).unwrap(), vec![4, 2]);
        assert_eq!(slice_axis(5, 0, i64::MAX, 3).unwrap(), vec![0, 3]);
        assert_eq!(slice_axis(5, 1000, 2000, 1).unwrap(), Vec::<usize>::new());
        assert_eq!(slice_axis(0, 0, -1, -1).unwrap(), Vec::<usize>::new());
        assert!(slice_axis(5, 0, 1, 0).is_err());
    }
}
