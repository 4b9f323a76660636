//! Sequences and optionals: SequenceEmpty, SequenceConstruct, SequenceAt, SequenceInsert,
//! SequenceErase, SequenceLength, SplitToSequence, ConcatFromSequence, Optional,
//! OptionalHasElement, OptionalGetElement.

use rge_kernels::{
    DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, TensorRef, Value,
    ValueRef,
};

use crate::concat::{cut_plan, join_plan};
use crate::elems::{copy_to_output, movement_owned, run_movement};
use crate::util::{axis, dims, scalar_i64};

/// Input `i` as a sequence.
fn seq<'a>(ctx: &KernelCtx<'a>, i: usize) -> KernelResult<(DType, &'a [Tensor])> {
    match ctx.value(i) {
        Some(ValueRef::Sequence { elem, items }) => Ok((elem, items)),
        Some(v) => Err(KernelError::invalid(format!(
            "input {i}: expected a sequence, got {}",
            v.kind()
        ))),
        None => Err(KernelError::invalid(format!("input {i} is missing"))),
    }
}

/// A position in `[-n, n)` (or `[-n, n]` when `end_ok`), normalized.
fn position(p: i64, n: usize, end_ok: bool) -> KernelResult<usize> {
    let ni = n as i64;
    let j = if p < 0 { p + ni } else { p };
    let hi = if end_ok { ni } else { ni - 1 };
    if j < 0 || j > hi {
        return Err(KernelError::invalid(format!(
            "position {p} is out of range for a sequence of {n}"
        )));
    }
    Ok(j as usize)
}

fn dtype_attr(init: &KernelInit<'_>, default: DType) -> KernelResult<DType> {
    match init.int_opt("dtype")? {
        Some(c) => i32::try_from(c)
            .ok()
            .and_then(DType::from_onnx)
            .ok_or_else(|| KernelError::attr("dtype", format!("unknown type {c}"))),
        None => Ok(default),
    }
}

struct SequenceEmpty {
    elem: DType,
}

impl Kernel for SequenceEmpty {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        ctx.put(
            0,
            Value::Sequence {
                elem: self.elem,
                items: Vec::new(),
            },
        )
    }
}

pub(crate) fn sequence_empty(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(SequenceEmpty {
        elem: dtype_attr(init, DType::Float)?,
    }))
}

struct SequenceConstruct;

impl Kernel for SequenceConstruct {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let items = (0..ctx.input_count())
            .map(|i| ctx.input(i).map(|t| t.to_owned()))
            .collect::<KernelResult<Vec<Tensor>>>()?;
        let elem = items
            .first()
            .map(Tensor::dtype)
            .ok_or_else(|| KernelError::invalid("SequenceConstruct needs an input"))?;
        if let Some(t) = items.iter().find(|t| t.dtype() != elem) {
            return Err(KernelError::invalid(format!(
                "sequence elements must share one type, got {elem} and {}",
                t.dtype()
            )));
        }
        ctx.put(0, Value::Sequence { elem, items })
    }
}

pub(crate) fn sequence_construct(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(SequenceConstruct))
}

struct SequenceAt;

impl Kernel for SequenceAt {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (_, items) = seq(ctx, 0)?;
        let p = position(scalar_i64(ctx.input(1)?, "position")?, items.len(), false)?;
        let t = items[p].view();
        copy_to_output(ctx, 0, t, t.shape())
    }
}

pub(crate) fn sequence_at(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(SequenceAt))
}

struct SequenceInsert;

impl Kernel for SequenceInsert {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (elem, items) = seq(ctx, 0)?;
        let t = ctx.input(1)?;
        if t.dtype() != elem {
            return Err(KernelError::invalid(format!(
                "cannot insert a {} tensor into a sequence of {elem}",
                t.dtype()
            )));
        }
        let p = match ctx.opt_input(2)? {
            Some(p) => position(scalar_i64(p, "position")?, items.len(), true)?,
            None => items.len(),
        };
        let mut items = items.to_vec();
        items.insert(p, t.to_owned());
        ctx.put(0, Value::Sequence { elem, items })
    }
}

pub(crate) fn sequence_insert(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(SequenceInsert))
}

struct SequenceErase;

impl Kernel for SequenceErase {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (elem, items) = seq(ctx, 0)?;
        let p = match ctx.opt_input(1)? {
            Some(p) => position(scalar_i64(p, "position")?, items.len(), false)?,
            None => position(-1, items.len(), false)?,
        };
        let mut items = items.to_vec();
        items.remove(p);
        ctx.put(0, Value::Sequence { elem, items })
    }
}

pub(crate) fn sequence_erase(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(SequenceErase))
}

struct SequenceLength;

impl Kernel for SequenceLength {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (_, items) = seq(ctx, 0)?;
        ctx.output::<i64>(0, &[])?[0] = items.len() as i64;
        Ok(())
    }
}

pub(crate) fn sequence_length(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(SequenceLength))
}

struct SplitToSequence {
    axis: i64,
    keepdims: bool,
}

impl Kernel for SplitToSequence {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let a = axis(self.axis, x.rank())?;
        let dim = x.shape()[a];
        let (sizes, squeeze) = match ctx.opt_input(1)? {
            None => (vec![1; dim], !self.keepdims),
            Some(s) if s.rank() == 0 => {
                let c = scalar_i64(s, "split")?;
                let c = usize::try_from(c)
                    .ok()
                    .filter(|&c| c > 0)
                    .ok_or_else(|| KernelError::invalid(format!("split {c} is not positive")))?;
                let mut v = vec![c; dim / c];
                if dim % c != 0 {
                    v.push(dim % c);
                }
                (v, false)
            }
            Some(s) => (dims(&s.to_i64_vec()?)?, false),
        };
        let (mut shapes, cut) = cut_plan(x.shape(), a, &sizes)?;
        let mut items = movement_owned(&[x], &shapes, &cut)?;
        if squeeze {
            for (t, s) in items.iter_mut().zip(&mut shapes) {
                s.remove(a);
                *t = std::mem::replace(t, Tensor::scalar(0u8)).reshaped(s)?;
            }
        }
        ctx.put(
            0,
            Value::Sequence {
                elem: x.dtype(),
                items,
            },
        )
    }
}

pub(crate) fn split_to_sequence(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(SplitToSequence {
        axis: init.int_or("axis", 0)?,
        keepdims: init.int_or("keepdims", 1)? != 0,
    }))
}

struct ConcatFromSequence {
    axis: i64,
    new_axis: bool,
}

impl Kernel for ConcatFromSequence {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let (_, items) = seq(ctx, 0)?;
        let views: Vec<TensorRef<'_>> = items.iter().map(Tensor::view).collect();
        let (out, join) = join_plan(&views, self.axis, self.new_axis)?;
        run_movement(ctx, &views, &[(0, out)], &join)
    }
}

pub(crate) fn concat_from_sequence(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(ConcatFromSequence {
        axis: init.int("axis")?,
        new_axis: init.int_or("new_axis", 0)? != 0,
    }))
}

struct Optional;

impl Kernel for Optional {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let v = ctx.value(0).map(|v| Box::new(v.to_owned()));
        ctx.put(0, Value::Optional(v))
    }
}

pub(crate) fn optional(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Optional))
}

struct OptionalHasElement;

impl Kernel for OptionalHasElement {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let has = match ctx.value(0) {
            None | Some(ValueRef::Optional(None)) => false,
            Some(_) => true,
        };
        ctx.output::<bool>(0, &[])?[0] = has;
        Ok(())
    }
}

pub(crate) fn optional_has_element(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(OptionalHasElement))
}

struct OptionalGetElement;

impl Kernel for OptionalGetElement {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let v = match ctx.value(0) {
            Some(ValueRef::Optional(Some(v))) => v.as_ref(),
            Some(ValueRef::Optional(None)) | None => {
                return Err(KernelError::invalid("the optional input is empty"))
            }
            Some(v) => v,
        };
        match v {
            ValueRef::Tensor(t) => copy_to_output(ctx, 0, t, t.shape()),
            other => ctx.put(0, other.to_owned()),
        }
    }
}

pub(crate) fn optional_get_element(_: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(OptionalGetElement))
}
