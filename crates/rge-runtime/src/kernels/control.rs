//! Control flow: If, Loop, Scan (opset 9+) and SequenceMap run their subgraphs through
//! `KernelCtx::run_subgraph`; the runtime appends the captured outer values (the parent's inputs
//! after `_onnx_formal_inputs`) to the body's inputs.

use rge_kernels::{
    DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, Value, ValueRef,
};

use super::tensors::{reverse_items, slice_axis, stack};

const FORMAL_INPUTS: &str = "_onnx_formal_inputs";

fn formal_inputs(init: &KernelInit<'_>) -> KernelResult<Option<usize>> {
    Ok(init.int_opt(FORMAL_INPUTS)?.map(|v| v.max(0) as usize))
}

fn truthy(t: rge_kernels::TensorRef<'_>) -> KernelResult<bool> {
    let v = t.to_f64_vec()?;
    match v.first() {
        Some(&x) => Ok(x != 0.0),
        None => Err(KernelError::invalid("condition tensor is empty")),
    }
}

fn put_all(ctx: &mut KernelCtx<'_>, outs: Vec<Value>) -> KernelResult<()> {
    let n = ctx.output_count();
    if outs.len() < n {
        return Err(KernelError::invalid(format!(
            "the subgraph made {} outputs, the node has {n}",
            outs.len()
        )));
    }
    for (i, v) in outs.into_iter().take(n).enumerate() {
        ctx.put(i, v)?;
    }
    Ok(())
}

#[derive(Debug)]
struct If {
    then_slot: usize,
    else_slot: usize,
}

pub(crate) fn make_if(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let then_slot = init.subgraph_slot("then_branch").unwrap_or(0);
    let else_slot = init.subgraph_slot("else_branch").unwrap_or(1);
    Ok(Box::new(If {
        then_slot,
        else_slot,
    }))
}

impl Kernel for If {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let c = truthy(ctx.input(0)?)?;
        let outs = ctx.run_subgraph(if c { self.then_slot } else { self.else_slot }, Vec::new())?;
        put_all(ctx, outs)
    }
}

#[derive(Debug)]
struct Loop {
    formal: Option<usize>,
    out_types: Vec<Option<DType>>,
}

pub(crate) fn make_loop(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Loop {
        formal: formal_inputs(init)?,
        out_types: init.output_types.to_vec(),
    }))
}

fn owned_input(ctx: &KernelCtx<'_>, i: usize) -> KernelResult<Value> {
    ctx.value(i)
        .map(|v| v.to_owned())
        .ok_or_else(|| KernelError::invalid(format!("input {i} is missing")))
}

impl Kernel for Loop {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let formal = self
            .formal
            .unwrap_or(ctx.input_count())
            .min(ctx.input_count());
        if formal < 2 {
            return Err(KernelError::invalid("Loop needs inputs M and cond"));
        }
        let n = formal - 2;
        let k = ctx.output_count().checked_sub(n).ok_or_else(|| {
            KernelError::invalid("Loop has fewer outputs than loop-carried values")
        })?;
        let max = match ctx.opt_input(0)? {
            Some(t) => Some(t.to_i64_vec()?.first().copied().unwrap_or(0)),
            None => None,
        };
        let mut cond = match ctx.opt_input(1)? {
            Some(t) => truthy(t)?,
            None => true,
        };
        let mut vals: Vec<Value> = (2..formal)
            .map(|i| owned_input(ctx, i))
            .collect::<KernelResult<_>>()?;
        let mut scans: Vec<Vec<Tensor>> = vec![Vec::new(); k];
        let mut i = 0i64;
        while cond && max.is_none_or(|m| i < m) {
            let mut ins = Vec::with_capacity(2 + n);
            ins.push(Value::Tensor(Tensor::scalar(i)));
            ins.push(Value::Tensor(Tensor::scalar(cond)));
            ins.append(&mut vals);
            let outs = ctx.run_subgraph(0, ins)?;
            if outs.len() != 1 + n + k {
                return Err(KernelError::invalid(format!(
                    "the body made {} outputs, expected {}",
                    outs.len(),
                    1 + n + k
                )));
            }
            let mut it = outs.into_iter();
            cond = match it.next() {
                Some(Value::Tensor(t)) => truthy(t.view())?,
                _ => return Err(KernelError::invalid("the body's condition is not a tensor")),
            };
            vals = it.by_ref().take(n).collect();
            for (s, v) in scans.iter_mut().zip(it) {
                s.push(v.into_tensor()?);
            }
            i += 1;
        }
        let mut outs = vals;
        for (j, s) in scans.iter().enumerate() {
            let dt = self
                .out_types
                .get(n + j)
                .copied()
                .flatten()
                .unwrap_or(DType::Float);
            outs.push(Value::Tensor(stack(s, 0, dt)?));
        }
        put_all(ctx, outs)
    }
}

#[derive(Debug)]
struct Scan {
    formal: Option<usize>,
    num_scan_inputs: usize,
    in_axes: Vec<i64>,
    in_dirs: Vec<i64>,
    out_axes: Vec<i64>,
    out_dirs: Vec<i64>,
    out_types: Vec<Option<DType>>,
}

pub(crate) fn make_scan(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    if init.opset < 9 {
        return Err(KernelError::unsupported(
            "Scan before opset 9 (with sequence_lens)",
        ));
    }
    Ok(Box::new(Scan {
        formal: formal_inputs(init)?,
        num_scan_inputs: init.int("num_scan_inputs")?.max(0) as usize,
        in_axes: init.ints_or_empty("scan_input_axes")?,
        in_dirs: init.ints_or_empty("scan_input_directions")?,
        out_axes: init.ints_or_empty("scan_output_axes")?,
        out_dirs: init.ints_or_empty("scan_output_directions")?,
        out_types: init.output_types.to_vec(),
    }))
}

fn axis_of(list: &[i64], i: usize, rank: usize) -> KernelResult<usize> {
    let a = list.get(i).copied().unwrap_or(0);
    let r = rank as i64;
    let x = if a < 0 { a + r } else { a };
    if x < 0 || x >= r.max(1) {
        return Err(KernelError::invalid(format!(
            "scan axis {a} out of range for rank {rank}"
        )));
    }
    Ok(x as usize)
}

impl Kernel for Scan {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let formal = self
            .formal
            .unwrap_or(ctx.input_count())
            .min(ctx.input_count());
        let m = self.num_scan_inputs;
        let n = formal
            .checked_sub(m)
            .ok_or_else(|| KernelError::invalid("fewer inputs than num_scan_inputs"))?;
        let k = ctx.output_count().saturating_sub(n);
        let scan_ins: Vec<rge_kernels::TensorRef<'_>> = (n..formal)
            .map(|i| ctx.input(i))
            .collect::<KernelResult<_>>()?;
        let mut axes = Vec::with_capacity(m);
        let mut len = None;
        for (j, t) in scan_ins.iter().enumerate() {
            let a = axis_of(&self.in_axes, j, t.rank())?;
            let l = t.shape()[a];
            if len.is_some_and(|x| x != l) {
                return Err(KernelError::invalid(
                    "scan inputs differ in sequence length",
                ));
            }
            len = Some(l);
            axes.push(a);
        }
        let len = len.unwrap_or(0);
        let mut state: Vec<Value> = (0..n)
            .map(|i| owned_input(ctx, i))
            .collect::<KernelResult<_>>()?;
        let mut scans: Vec<Vec<Tensor>> = vec![Vec::new(); k];
        for it in 0..len {
            let mut ins = std::mem::take(&mut state);
            for (j, t) in scan_ins.iter().enumerate() {
                let rev = self.in_dirs.get(j).copied().unwrap_or(0) == 1;
                let at = if rev { len - 1 - it } else { it };
                ins.push(Value::Tensor(slice_axis(*t, axes[j], at)?));
            }
            let outs = ctx.run_subgraph(0, ins)?;
            if outs.len() != n + k {
                return Err(KernelError::invalid(format!(
                    "the body made {} outputs, expected {}",
                    outs.len(),
                    n + k
                )));
            }
            let mut o = outs.into_iter();
            state = o.by_ref().take(n).collect();
            for (s, v) in scans.iter_mut().zip(o) {
                s.push(v.into_tensor()?);
            }
        }
        let mut outs = state;
        for (j, mut s) in scans.into_iter().enumerate() {
            if self.out_dirs.get(j).copied().unwrap_or(0) == 1 {
                reverse_items(&mut s);
            }
            let rank = s.first().map_or(0, |t| t.shape().len()) + 1;
            let a = axis_of(&self.out_axes, j, rank)?;
            let dt = self
                .out_types
                .get(n + j)
                .copied()
                .flatten()
                .unwrap_or(DType::Float);
            outs.push(Value::Tensor(stack(&s, a, dt)?));
        }
        put_all(ctx, outs)
    }
}

#[derive(Debug)]
struct SequenceMap {
    formal: Option<usize>,
    out_types: Vec<Option<DType>>,
}

pub(crate) fn make_sequence_map(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(SequenceMap {
        formal: formal_inputs(init)?,
        out_types: init.output_types.to_vec(),
    }))
}

impl Kernel for SequenceMap {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let formal = self
            .formal
            .unwrap_or(ctx.input_count())
            .min(ctx.input_count());
        let len = match ctx.value(0) {
            Some(ValueRef::Sequence { items, .. }) => items.len(),
            _ => return Err(KernelError::invalid("input 0 is not a sequence")),
        };
        let mut outs: Vec<Vec<Tensor>> = vec![Vec::new(); ctx.output_count()];
        for it in 0..len {
            let mut ins = Vec::with_capacity(formal);
            for i in 0..formal {
                match ctx.value(i) {
                    Some(ValueRef::Sequence { items, .. }) => {
                        let t = items.get(it).ok_or_else(|| {
                            KernelError::invalid(format!(
                                "sequence input {i} is shorter than input 0"
                            ))
                        })?;
                        ins.push(Value::Tensor(t.clone()));
                    }
                    Some(v) => ins.push(v.to_owned()),
                    None => return Err(KernelError::invalid(format!("input {i} is missing"))),
                }
            }
            let r = ctx.run_subgraph(0, ins)?;
            for (o, v) in outs.iter_mut().zip(r) {
                o.push(v.into_tensor()?);
            }
        }
        for (i, items) in outs.into_iter().enumerate() {
            let elem = items
                .first()
                .map(|t| t.dtype())
                .or(self.out_types.get(i).copied().flatten())
                .unwrap_or(DType::Float);
            ctx.put(i, Value::Sequence { elem, items })?;
        }
        Ok(())
    }
}
