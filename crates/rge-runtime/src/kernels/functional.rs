//! GE's functional control flow (`functional_ops.h`): While (and its aliases `_While`,
//! `StatelessWhile`), Case, PartitionedCall (and `StatefulPartitionedCall`), and If's aliases
//! `_If` / `StatelessIf` (the If kernel of `control.rs` serves all three).
//!
//! A GE subgraph's Data nodes take the parent's data inputs after the control input (none for
//! While and PartitionedCall, `cond` for If, `branch_index` for Case) in their `index` order:
//! the kernels pass those inputs as the subgraph's formal inputs. A subgraph's outputs are its
//! NetOutput's inputs in order.

use rge_kernels::{Kernel, KernelCtx, KernelError, KernelInit, KernelResult, TensorRef, Value};

use super::control::{formal_inputs, owned_input, put_all};

/// GE's condition rule (If, While): a scalar is true when non-zero (a string scalar when
/// non-empty); a tensor of rank 1 or more is true when it has any element.
pub(crate) fn ge_truthy(t: TensorRef<'_>) -> KernelResult<bool> {
    if t.rank() > 0 {
        return Ok(!t.is_empty());
    }
    if t.dtype().is_string() {
        return Ok(t.as_strings()?.first().is_some_and(|s| !s.is_empty()));
    }
    let v = t.to_f64_vec()?;
    Ok(v.first().is_some_and(|&x| x != 0.0))
}

/// The node's data inputs from `from` to its formal count (captures excluded), owned.
pub(crate) fn formal_values(
    ctx: &KernelCtx<'_>,
    formal: Option<usize>,
    from: usize,
) -> KernelResult<Vec<Value>> {
    let end = formal.unwrap_or(ctx.input_count()).min(ctx.input_count());
    (from.min(end)..end).map(|i| owned_input(ctx, i)).collect()
}

fn slot_or(init: &KernelInit<'_>, name: &str, fallback: usize) -> usize {
    init.subgraph_slot(name).unwrap_or(fallback)
}

/// While: `output = input; while cond(output) { output = body(output) }`.
#[derive(Debug)]
struct While {
    cond_slot: usize,
    body_slot: usize,
    formal: Option<usize>,
}

pub(crate) fn make_while(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(While {
        cond_slot: slot_or(init, "cond", 0),
        body_slot: slot_or(init, "body", 1),
        formal: formal_inputs(init)?,
    }))
}

impl Kernel for While {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let mut vals = formal_values(ctx, self.formal, 0)?;
        let n = vals.len();
        if ctx.output_count() > n {
            return Err(KernelError::invalid(format!(
                "While has {} outputs for {n} loop variables",
                ctx.output_count()
            )));
        }
        loop {
            let c = ctx.run_subgraph(self.cond_slot, vals.clone())?;
            let go = match c.first() {
                Some(Value::Tensor(t)) => ge_truthy(t.view())?,
                Some(v) => {
                    return Err(KernelError::invalid(format!(
                        "the cond subgraph made a {}, not a tensor",
                        v.kind()
                    )))
                }
                None => return Err(KernelError::invalid("the cond subgraph made no output")),
            };
            if !go {
                break;
            }
            let outs = ctx.run_subgraph(self.body_slot, vals)?;
            if outs.len() < n {
                return Err(KernelError::invalid(format!(
                    "the body made {} outputs for {n} loop variables",
                    outs.len()
                )));
            }
            vals = outs;
            vals.truncate(n);
        }
        put_all(ctx, vals)
    }
}

/// Case: runs `branches[branch_index]` on the inputs after `branch_index`; an index out of
/// range runs the last branch (TensorFlow's and GE's rule) when the branch count is known.
#[derive(Debug)]
struct Case {
    /// The number of branches, when the frontend named the slots.
    branches: Option<usize>,
    formal: Option<usize>,
}

pub(crate) fn make_case(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Case {
        branches: (!init.subgraph_attrs.is_empty()).then_some(init.subgraph_attrs.len()),
        formal: formal_inputs(init)?,
    }))
}

impl Kernel for Case {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let index = *ctx
            .input(0)?
            .to_i64_vec()?
            .first()
            .ok_or_else(|| KernelError::invalid("branch_index is empty"))?;
        let slot = match self.branches {
            Some(0) => return Err(KernelError::invalid("Case has no branches")),
            Some(n) if index < 0 || index as u64 >= n as u64 => n - 1,
            _ => usize::try_from(index).map_err(|_| {
                KernelError::invalid(format!("branch_index {index} selects no branch"))
            })?,
        };
        let ins = formal_values(ctx, self.formal, 1)?;
        let outs = ctx
            .run_subgraph(slot, ins)
            .map_err(|e| KernelError::invalid(format!("branch {slot}: {e}")))?;
        put_all(ctx, outs)
    }
}

/// PartitionedCall / StatefulPartitionedCall: runs `f` on the inputs.
#[derive(Debug)]
struct Call {
    slot: usize,
    formal: Option<usize>,
}

pub(crate) fn make_call(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Call {
        slot: slot_or(init, "f", 0),
        formal: formal_inputs(init)?,
    }))
}

impl Kernel for Call {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let ins = formal_values(ctx, self.formal, 0)?;
        let outs = ctx.run_subgraph(self.slot, ins)?;
        put_all(ctx, outs)
    }
}
