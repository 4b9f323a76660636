//! Control flow: If, Loop, Scan (Scan-8 with its batch axis and `sequence_lens`, Scan-9 on) and
//! SequenceMap run their subgraphs through `KernelCtx::run_subgraph`; the runtime appends the
//! captured outer values (the parent's inputs after `_onnx_formal_inputs`) to the body's inputs.

use rge_kernels::{
    DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, Value, ValueRef,
};

use super::functional::{formal_values, ge_truthy};
use super::tensors::{reverse_items, slice_axis, stack};

use rge_formats::onnx::names::FORMAL_INPUTS;

pub(crate) fn formal_inputs(init: &KernelInit<'_>) -> KernelResult<Option<usize>> {
    Ok(init.int_opt(FORMAL_INPUTS)?.map(|v| v.max(0) as usize))
}

fn truthy(t: rge_kernels::TensorRef<'_>) -> KernelResult<bool> {
    let v = t.to_f64_vec()?;
    match v.first() {
        Some(&x) => Ok(x != 0.0),
        None => Err(KernelError::invalid("condition tensor is empty")),
    }
}

pub(crate) fn put_all(ctx: &mut KernelCtx<'_>, outs: Vec<Value>) -> KernelResult<()> {
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

/// If (ONNX's, GE's, and GE's aliases `_If` / `StatelessIf`): the branches take the inputs
/// after `cond` (GE; ONNX's If has none but captures).
#[derive(Debug)]
struct If {
    then_slot: usize,
    else_slot: usize,
    formal: Option<usize>,
    /// GE's rule for `cond` (a non-scalar is true when non-empty): GE's op types, and If in a
    /// graph with no ONNX opset import; else ONNX's single element.
    ge_cond: bool,
}

pub(crate) fn make_if(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let then_slot = init.subgraph_slot("then_branch").unwrap_or(0);
    let else_slot = init.subgraph_slot("else_branch").unwrap_or(1);
    Ok(Box::new(If {
        then_slot,
        else_slot,
        formal: formal_inputs(init)?,
        ge_cond: init.op_type != "If" || init.opset == i64::MAX,
    }))
}

impl Kernel for If {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let cond = ctx.input(0)?;
        let c = if self.ge_cond {
            ge_truthy(cond)?
        } else {
            truthy(cond)?
        };
        let ins = formal_values(ctx, self.formal, 1)?;
        let outs = ctx.run_subgraph(if c { self.then_slot } else { self.else_slot }, ins)?;
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

pub(crate) fn owned_input(ctx: &KernelCtx<'_>, i: usize) -> KernelResult<Value> {
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
    /// Scan-8: a batch axis first on every input and output, `sequence_lens` as input 0.
    v8: bool,
    formal: Option<usize>,
    num_scan_inputs: usize,
    in_axes: Vec<i64>,
    in_dirs: Vec<i64>,
    out_axes: Vec<i64>,
    out_dirs: Vec<i64>,
    out_types: Vec<Option<DType>>,
}

pub(crate) fn make_scan(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let v8 = init.opset < 9;
    Ok(Box::new(Scan {
        v8,
        formal: formal_inputs(init)?,
        num_scan_inputs: init.int("num_scan_inputs")?.max(0) as usize,
        in_axes: if v8 {
            Vec::new()
        } else {
            init.ints_or_empty("scan_input_axes")?
        },
        in_dirs: init.ints_or_empty(if v8 {
            "directions"
        } else {
            "scan_input_directions"
        })?,
        out_axes: if v8 {
            Vec::new()
        } else {
            init.ints_or_empty("scan_output_axes")?
        },
        out_dirs: if v8 {
            Vec::new()
        } else {
            init.ints_or_empty("scan_output_directions")?
        },
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

/// The result of scanning one sequence: the final states and each scan output's items.
struct Scanned {
    state: Vec<Value>,
    scans: Vec<Vec<Tensor>>,
}

impl Scan {
    fn reversed(&self, j: usize) -> bool {
        self.in_dirs.get(j).copied().unwrap_or(0) == 1
    }

    fn out_type(&self, i: usize) -> DType {
        self.out_types
            .get(i)
            .copied()
            .flatten()
            .unwrap_or(DType::Float)
    }

    /// Runs the body `len` times over `scan_ins` (sliced along `axes`), from `state`.
    fn scan(
        &self,
        ctx: &KernelCtx<'_>,
        mut state: Vec<Value>,
        scan_ins: &[rge_kernels::TensorRef<'_>],
        axes: &[usize],
        len: usize,
        k: usize,
    ) -> KernelResult<Scanned> {
        let n = state.len();
        let mut scans: Vec<Vec<Tensor>> = vec![Vec::new(); k];
        for it in 0..len {
            let mut ins = std::mem::take(&mut state);
            for (j, t) in scan_ins.iter().enumerate() {
                let at = if self.reversed(j) { len - 1 - it } else { it };
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
        Ok(Scanned { state, scans })
    }

    /// Scan-8: every input and output has the batch axis first; scan inputs are
    /// `[batch, sequence, ...]`; `sequence_lens` (input 0, optional) gives each batch item's
    /// length; scan outputs past a shorter length are zeros.
    fn compute_v8(&self, ctx: &mut KernelCtx<'_>, formal: usize) -> KernelResult<()> {
        let m = self.num_scan_inputs;
        let n = formal
            .checked_sub(1 + m)
            .ok_or_else(|| KernelError::invalid("fewer inputs than num_scan_inputs"))?;
        let k = ctx.output_count().saturating_sub(n);
        let states: Vec<rge_kernels::TensorRef<'_>> = (1..1 + n)
            .map(|i| ctx.input(i))
            .collect::<KernelResult<_>>()?;
        let scan_ins: Vec<rge_kernels::TensorRef<'_>> = (1 + n..formal)
            .map(|i| ctx.input(i))
            .collect::<KernelResult<_>>()?;
        let mut batch = None;
        let mut max_len = None;
        for (i, t) in states.iter().chain(&scan_ins).enumerate() {
            let need = if i < n { 1 } else { 2 };
            if t.rank() < need {
                return Err(KernelError::invalid(format!(
                    "input {} has rank {}; Scan-8 needs a batch axis{}",
                    1 + i,
                    t.rank(),
                    if i < n { "" } else { " and a sequence axis" }
                )));
            }
            if batch.is_some_and(|b| b != t.shape()[0]) {
                return Err(KernelError::invalid("inputs differ in batch size"));
            }
            batch = Some(t.shape()[0]);
            if i >= n {
                if max_len.is_some_and(|l| l != t.shape()[1]) {
                    return Err(KernelError::invalid(
                        "scan inputs differ in sequence length",
                    ));
                }
                max_len = Some(t.shape()[1]);
            }
        }
        let batch = batch.unwrap_or(0);
        let max_len = max_len.unwrap_or(0);
        let lens: Vec<usize> = match ctx.opt_input(0)? {
            None => vec![max_len; batch],
            Some(t) => {
                let v = t.to_i64_vec()?;
                if v.len() != batch {
                    return Err(KernelError::invalid(format!(
                        "sequence_lens has {} entries for a batch of {batch}",
                        v.len()
                    )));
                }
                v.iter()
                    .map(|&l| {
                        usize::try_from(l)
                            .ok()
                            .filter(|&l| l <= max_len)
                            .ok_or_else(|| {
                                KernelError::invalid(format!(
                                    "sequence length {l} is outside [0, {max_len}]"
                                ))
                            })
                    })
                    .collect::<KernelResult<_>>()?
            }
        };
        let mut finals: Vec<Vec<Tensor>> = vec![Vec::with_capacity(batch); n];
        let mut per_batch: Vec<Vec<Vec<Tensor>>> = vec![Vec::with_capacity(batch); k];
        for (b, &len) in lens.iter().enumerate() {
            let state: Vec<Value> = states
                .iter()
                .map(|t| slice_axis(*t, 0, b).map(Value::Tensor))
                .collect::<KernelResult<_>>()?;
            let items: Vec<Tensor> = scan_ins
                .iter()
                .map(|t| slice_axis(*t, 0, b))
                .collect::<KernelResult<_>>()?;
            let views: Vec<rge_kernels::TensorRef<'_>> = items.iter().map(Tensor::view).collect();
            let r = self.scan(ctx, state, &views, &vec![0; m], len, k)?;
            for (f, v) in finals.iter_mut().zip(r.state) {
                f.push(v.into_tensor()?);
            }
            for (p, s) in per_batch.iter_mut().zip(r.scans) {
                p.push(s);
            }
        }
        let mut outs = Vec::with_capacity(n + k);
        for (j, f) in finals.iter().enumerate() {
            outs.push(Value::Tensor(if batch == 0 {
                states[j].to_owned()
            } else {
                stack(f, 0, self.out_type(j))?
            }));
        }
        for (j, batches) in per_batch.into_iter().enumerate() {
            let dt = self.out_type(n + j);
            // The element shape and type from any iteration; zeros pad shorter sequences.
            let Some(first) = batches.iter().flatten().next() else {
                outs.push(Value::Tensor(Tensor::zeros(dt, &[batch, max_len])?));
                continue;
            };
            let pad = Tensor::zeros(first.dtype(), first.shape())?;
            let dt = first.dtype();
            let rows = batches
                .into_iter()
                .map(|mut items| {
                    items.resize(max_len, pad.clone());
                    stack(&items, 0, dt)
                })
                .collect::<KernelResult<Vec<_>>>()?;
            outs.push(Value::Tensor(stack(&rows, 0, dt)?));
        }
        put_all(ctx, outs)
    }
}

impl Kernel for Scan {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let formal = self
            .formal
            .unwrap_or(ctx.input_count())
            .min(ctx.input_count());
        if self.v8 {
            return self.compute_v8(ctx, formal);
        }
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
        let state: Vec<Value> = (0..n)
            .map(|i| owned_input(ctx, i))
            .collect::<KernelResult<_>>()?;
        let Scanned { state, scans } = self.scan(ctx, state, &scan_ins, &axes, len, k)?;
        let mut outs = state;
        for (j, mut s) in scans.into_iter().enumerate() {
            if self.out_dirs.get(j).copied().unwrap_or(0) == 1 {
                reverse_items(&mut s);
            }
            let rank = s.first().map_or(0, |t| t.shape().len()) + 1;
            let a = axis_of(&self.out_axes, j, rank)?;
            outs.push(Value::Tensor(stack(&s, a, self.out_type(n + j))?));
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
