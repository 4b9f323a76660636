//! The local engine's view ops as copying kernels, for when lowering cannot make a view
//! (dynamic shapes, non-tensor Identity).

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Value};

#[derive(Debug)]
enum View {
    Identity,
    Reshape { allowzero: bool },
    Squeeze { axes: Option<Vec<i64>> },
    Unsqueeze { axes: Option<Vec<i64>> },
    Flatten { axis: i64 },
}

pub(crate) fn make_view(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let v = match init.op_type {
        "Identity" => View::Identity,
        "Reshape" => View::Reshape {
            allowzero: init.int_or("allowzero", 0)? != 0,
        },
        "Squeeze" => View::Squeeze {
            axes: init.ints_opt("axes")?.map(<[i64]>::to_vec),
        },
        "Unsqueeze" => View::Unsqueeze {
            axes: init.ints_opt("axes")?.map(<[i64]>::to_vec),
        },
        "Flatten" => View::Flatten {
            axis: init.int_or("axis", 1)?,
        },
        t => return Err(KernelError::unsupported(format!("{t} is not a view op"))),
    };
    Ok(Box::new(v))
}

fn norm_axis(a: i64, rank: usize) -> KernelResult<usize> {
    let r = rank as i64;
    let x = if a < 0 { a + r } else { a };
    if x < 0 || x >= r {
        return Err(KernelError::invalid(format!(
            "axis {a} out of range for rank {rank}"
        )));
    }
    Ok(x as usize)
}

fn axes_input(ctx: &KernelCtx<'_>, attr: &Option<Vec<i64>>) -> KernelResult<Option<Vec<i64>>> {
    if let Some(a) = attr {
        return Ok(Some(a.clone()));
    }
    Ok(match ctx.opt_input(1)? {
        Some(t) => Some(t.to_i64_vec()?),
        None => None,
    })
}

impl View {
    fn out_shape(&self, ctx: &KernelCtx<'_>, shape: &[usize]) -> KernelResult<Vec<usize>> {
        Ok(match self {
            View::Identity => shape.to_vec(),
            View::Reshape { allowzero } => {
                let want = ctx.input(1)?.to_i64_vec()?;
                let total: usize = shape.iter().product();
                let mut out = Vec::with_capacity(want.len());
                let mut infer = None;
                for (i, &d) in want.iter().enumerate() {
                    match d {
                        -1 if infer.is_none() => {
                            infer = Some(i);
                            out.push(1);
                        }
                        0 if !allowzero => out.push(*shape.get(i).ok_or_else(|| {
                            KernelError::invalid(format!("shape[{i}] = 0 copies a missing dim"))
                        })?),
                        d if d >= 0 => out.push(d as usize),
                        d => return Err(KernelError::invalid(format!("bad dim {d} in shape"))),
                    }
                }
                if let Some(i) = infer {
                    let rest: usize = out.iter().product();
                    if rest == 0 || total % rest != 0 {
                        return Err(KernelError::invalid(format!(
                            "cannot reshape {shape:?} to {want:?}"
                        )));
                    }
                    out[i] = total / rest;
                }
                if out.iter().product::<usize>() != total {
                    return Err(KernelError::invalid(format!(
                        "cannot reshape {shape:?} to {want:?}"
                    )));
                }
                out
            }
            View::Squeeze { axes } => match axes_input(ctx, axes)? {
                None => shape.iter().copied().filter(|&d| d != 1).collect(),
                Some(ax) => {
                    let ax: Vec<usize> = ax
                        .iter()
                        .map(|&a| norm_axis(a, shape.len()))
                        .collect::<KernelResult<_>>()?;
                    shape
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !ax.contains(i))
                        .map(|(_, &d)| d)
                        .collect()
                }
            },
            View::Unsqueeze { axes } => {
                let ax = axes_input(ctx, axes)?
                    .ok_or_else(|| KernelError::invalid("Unsqueeze without axes"))?;
                let rank = shape.len() + ax.len();
                let mut ax: Vec<usize> = ax
                    .iter()
                    .map(|&a| norm_axis(a, rank))
                    .collect::<KernelResult<_>>()?;
                ax.sort_unstable();
                let mut out = shape.to_vec();
                for a in ax {
                    out.insert(a.min(out.len()), 1);
                }
                out
            }
            View::Flatten { axis } => {
                let r = shape.len() as i64;
                let a = if *axis < 0 { axis + r } else { *axis };
                if a < 0 || a > r {
                    return Err(KernelError::invalid(format!("axis {axis} out of range")));
                }
                let a = a as usize;
                vec![shape[..a].iter().product(), shape[a..].iter().product()]
            }
        })
    }
}

impl Kernel for View {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let v = ctx
            .value(0)
            .ok_or_else(|| KernelError::invalid("input 0 is missing"))?;
        match (self, v.tensor()) {
            (_, Ok(t)) => {
                let shape = self.out_shape(ctx, t.shape())?;
                let out = t.to_owned().reshaped(&shape)?;
                ctx.put(0, Value::Tensor(out))
            }
            (View::Identity, Err(_)) => ctx.put(0, v.to_owned()),
            (_, Err(e)) => Err(e),
        }
    }
}
