//! Control flow: ONNX's If, Loop, Scan, and GE's functional ops (`functional_ops.h`): While,
//! `_While`, StatelessWhile, Case, PartitionedCall, StatefulPartitionedCall, `_If`,
//! StatelessIf. Their bodies are subgraphs; the pass infers a body when its parent is inferred,
//! with the body's Data nodes bound to the parent's inputs (formal inputs as each op defines
//! them, outer-scope captures as they are).

use rge_ir::op_desc::SubgraphKind;
use rge_ir::{DataType, Shape};

use super::util::*;
use crate::bail;
use crate::ctx::{InferCtx, TensorInfo, ValueKind};
use crate::error::{OpError, OpResult, OpsError};
use crate::proto::types::*;
use crate::registry::OpRegistryBuilder;

/// The common type of two infos: data types must agree; dims that differ become -1, ranks
/// that differ an unknown rank.
fn merge_info(a: &TensorInfo, b: &TensorInfo, what: &str) -> OpResult<TensorInfo> {
    if a.dtype != b.dtype && a.dtype != DataType::Undefined && b.dtype != DataType::Undefined {
        bail!("{what}: {} vs {}", a.dtype, b.dtype);
    }
    if a.kind != b.kind {
        bail!("{what}: {} vs {}", a.kind.name(), b.kind.name());
    }
    let shape = match (a.dims(), b.dims()) {
        (Some(x), Some(y)) if x.len() == y.len() => {
            Shape::new(x.iter().zip(y).map(|(&p, &q)| if p == q { p } else { -1 }))
        }
        _ => Shape::unknown_rank(),
    };
    let dtype = if a.dtype == DataType::Undefined {
        b.dtype
    } else {
        a.dtype
    };
    Ok(TensorInfo {
        dtype,
        shape,
        format: a.format,
        kind: a.kind,
        value: None,
    })
}

/// The kind an optional wraps.
fn optional_of(k: ValueKind) -> Option<ValueKind> {
    match k {
        ValueKind::OptionalTensor => Some(ValueKind::Tensor),
        ValueKind::OptionalSequence => Some(ValueKind::Sequence),
        _ => None,
    }
}

fn slot(ctx: &mut InferCtx<'_>, name: &str, fallback: usize) -> OpResult<usize> {
    let sub = ctx.subgraphs()?;
    sub.slot_named(name)
        .or((fallback < sub.slot_count()).then_some(fallback))
        .ok_or_else(|| OpError(format!("no `{name}` subgraph")))
}

fn if_infer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let cond = scalar_i64(ctx, 0)?.map(|x| x != 0);
    branches_infer(ctx, cond)
}

/// GE's condition rule on a known value: a scalar is true when non-zero, a tensor of rank 1 or
/// more when it has any element (strings: unknown here).
fn ge_cond(ctx: &InferCtx<'_>, i: usize) -> Option<bool> {
    let v = ctx.input_value(i)?;
    if !v.dims.is_empty() {
        return Some(!v.is_empty());
    }
    if v.dtype == DataType::String || v.is_empty() {
        return None;
    }
    Some(v.get_f64(0) != 0.0)
}

/// GE's `_If` / StatelessIf: If with any `cond` type and GE's condition rule.
fn ge_if_infer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let cond = ge_cond(ctx, 0);
    branches_infer(ctx, cond)
}

fn branches_infer(ctx: &mut InferCtx<'_>, cond: Option<bool>) -> OpResult<()> {
    let (ts, es) = (slot(ctx, "then_branch", 0)?, slot(ctx, "else_branch", 1)?);
    let sub = ctx.subgraphs()?;
    // A branch the known condition never takes may not fit these shapes at all (exporters
    // guard shape-specific code with If: Silero VAD squeezes an axis that exists only for
    // other inputs); its failure is not the model's. Its outputs take the live branch's.
    let t = sub.infer(ts, &[]);
    let e = sub.infer(es, &[]);
    let (t, e) = match (cond, t, e) {
        (Some(false) | None, Err(_), Ok(e)) => (e.clone(), e),
        (Some(true) | None, Ok(t), Err(_)) => (t.clone(), t),
        (_, t, e) => (t?, e?),
    };
    if t.len() != e.len() {
        bail!(
            "then_branch has {} outputs, else_branch {}",
            t.len(),
            e.len()
        );
    }
    if t.len() < ctx.output_count() {
        bail!(
            "the branches have {} outputs, the node {}",
            t.len(),
            ctx.output_count()
        );
    }
    for i in 0..ctx.output_count() {
        let out = match cond {
            Some(true) => t[i].clone(),
            Some(false) => e[i].clone(),
            None => merge_info(
                &t[i],
                &e[i],
                &format!("output {i} differs between branches"),
            )?,
        };
        ctx.set_output_info(i, out);
    }
    Ok(())
}

fn scalar(dtype: DataType) -> TensorInfo {
    TensorInfo::new(dtype, Shape::scalar())
}

fn without_value(t: &TensorInfo) -> TensorInfo {
    TensorInfo {
        value: None,
        ..t.clone()
    }
}

/// Prepends (or inserts at `axis`) a dim of `n` to `t`'s shape.
fn with_dim(t: &TensorInfo, axis: i64, n: i64) -> OpResult<TensorInfo> {
    let mut out = without_value(t);
    out.shape = match t.dims() {
        Some(d) => {
            let a = norm_axis(axis, d.len() + 1)?;
            let mut v = d.to_vec();
            v.insert(a, n);
            Shape::new(v)
        }
        None => Shape::unknown_rank(),
    };
    Ok(out)
}

fn loop_infer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let n_carried = ctx.input_count().saturating_sub(2);
    let formal = ctx
        .attr_int_opt(crate::FORMAL_INPUTS_ATTR)?
        .map_or(ctx.input_count(), |f| f as usize);
    let n_carried = n_carried.min(formal.saturating_sub(2));
    let trip = scalar_i64(ctx, 0)?;
    let cond_in = ctx.opt_input(1).cloned();
    let mut carried: Vec<TensorInfo> = (0..n_carried)
        .map(|j| ctx.opt_input(2 + j).map(without_value).unwrap_or_default())
        .collect();
    let body = slot(ctx, "body", 0)?;
    let mut outs;
    let mut rounds = 0;
    loop {
        let mut bind = vec![
            (0, scalar(DataType::Int64)),
            (1, cond_in.clone().unwrap_or_else(|| scalar(DataType::Bool))),
        ];
        bind.extend(carried.iter().enumerate().map(|(j, t)| (2 + j, t.clone())));
        outs = ctx.subgraphs()?.infer(body, &bind)?;
        if outs.len() < 1 + n_carried {
            bail!("the body has {} outputs; it needs the condition and {n_carried} loop-carried values", outs.len());
        }
        let mut changed = false;
        for j in 0..n_carried {
            // An optional initial value may be carried on as the value itself (Loop-16).
            let mut init = carried[j].clone();
            if optional_of(init.kind) == Some(outs[1 + j].kind) {
                init.kind = outs[1 + j].kind;
            }
            let merged = merge_info(
                &init,
                &outs[1 + j],
                &format!("loop-carried value {j} changes type"),
            )?;
            if merged.shape != carried[j].shape || merged.kind != carried[j].kind {
                changed = true;
                carried[j] = merged;
            }
        }
        rounds += 1;
        if !changed || rounds >= 4 {
            break;
        }
    }
    // The trip count is known when M is and the condition stays true (its value folds to
    // true with the initial condition bound), or when there is no condition.
    let cond_true = match (&cond_in, outs[0].value.as_deref()) {
        (None, _) => true,
        (Some(c), Some(v)) => {
            c.value
                .as_deref()
                .is_some_and(|c| c.as_i64().first() == Some(&1))
                && v.as_i64().first() == Some(&1)
        }
        _ => false,
    };
    let iters = match trip {
        Some(m) if cond_true => m.max(0),
        _ => -1,
    };
    for (j, c) in carried.iter().enumerate() {
        ctx.set_output_info(j, c.clone());
    }
    for (k, s) in outs[1 + n_carried..].iter().enumerate() {
        let out = if s.kind == ValueKind::Tensor {
            with_dim(s, 0, iters)?
        } else {
            without_value(s)
        };
        ctx.set_output_info(n_carried + k, out);
    }
    Ok(())
}

fn scan_infer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let v8 = ctx.proto().since_version < 9;
    let m = ctx.attr_int("num_scan_inputs")? as usize;
    let first = usize::from(v8);
    let formal = ctx
        .attr_int_opt(crate::FORMAL_INPUTS_ATTR)?
        .map_or(ctx.input_count(), |f| f as usize);
    if formal < first + m {
        bail!("num_scan_inputs is {m} but the node has {formal} inputs");
    }
    let n = formal - first - m;
    let in_axes = ctx.attr_ints("scan_input_axes")?.map(<[i64]>::to_vec);
    let out_axes = ctx.attr_ints("scan_output_axes")?.map(<[i64]>::to_vec);
    let mut bind = Vec::new();
    let mut seq_len = -1i64;
    let mut batch = -1i64;
    for j in 0..n {
        let t = ctx.input(first + j)?;
        let mut t = without_value(t);
        if v8 {
            batch = t.dims().and_then(|d| d.first().copied()).unwrap_or(-1);
            t.shape = t.dims().map_or_else(Shape::unknown_rank, |d| {
                Shape::from_slice(&d[1.min(d.len())..])
            });
        }
        bind.push((first + j, t));
    }
    for j in 0..m {
        let t = ctx.input(first + n + j)?;
        let mut e = without_value(t);
        if let Some(d) = t.dims() {
            let (skip, axis) = if v8 {
                (1, 1)
            } else {
                (0, norm_axis(in_axes.as_ref().map_or(0, |a| a[j]), d.len())?)
            };
            if v8 {
                batch = d.first().copied().unwrap_or(-1);
            }
            if axis >= d.len() {
                bail!("scan input {j} {} has no scan axis {axis}", fmt_dims(d));
            }
            if j == 0 {
                seq_len = d[axis];
            }
            let v: Vec<i64> = d
                .iter()
                .enumerate()
                .filter(|&(i, _)| i != axis && i >= skip)
                .map(|(_, &x)| x)
                .collect();
            e.shape = Shape::new(v);
        }
        bind.push((first + n + j, e));
    }
    let body = slot(ctx, "body", 0)?;
    let outs = ctx.subgraphs()?.infer(body, &bind)?;
    if outs.len() < n {
        bail!(
            "the body has {} outputs for {n} state variables",
            outs.len()
        );
    }
    for (j, o) in outs.iter().enumerate() {
        let out = if j < n {
            if v8 {
                with_dim(o, 0, batch)?
            } else {
                without_value(o)
            }
        } else if v8 {
            let t = with_dim(o, 0, seq_len)?;
            with_dim(&t, 0, batch)?
        } else {
            let k = j - n;
            let axis = out_axes
                .as_ref()
                .and_then(|a| a.get(k).copied())
                .unwrap_or(0);
            with_dim(o, axis, seq_len)?
        };
        ctx.set_output_info(j, out);
    }
    Ok(())
}

/// The info of each loop variable after the body runs until it stops changing (at most four
/// rounds): dims that change become -1.
fn carried_fixpoint(
    ctx: &mut InferCtx<'_>,
    body: usize,
    cond: Option<usize>,
    mut carried: Vec<TensorInfo>,
) -> OpResult<Vec<TensorInfo>> {
    let n = carried.len();
    for _ in 0..4 {
        let bind: Vec<(usize, TensorInfo)> = carried.iter().cloned().enumerate().collect();
        if let Some(c) = cond {
            let outs = ctx.subgraphs()?.infer(c, &bind)?;
            if outs.is_empty() {
                bail!("the cond subgraph has no output");
            }
        }
        let outs = ctx.subgraphs()?.infer(body, &bind)?;
        if outs.len() < n {
            bail!("the body has {} outputs for {n} loop variables", outs.len());
        }
        let mut changed = false;
        for j in 0..n {
            let merged = merge_info(
                &carried[j],
                &outs[j],
                &format!("loop variable {j} changes type"),
            )?;
            if merged.shape != carried[j].shape || merged.kind != carried[j].kind {
                changed = true;
                carried[j] = merged;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(carried)
}

/// GE's While: outputs are the loop variables (the inputs) after the body.
fn while_infer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let n = ctx.input_count();
    if ctx.output_count() > n {
        bail!(
            "While has {} outputs for {n} loop variables",
            ctx.output_count()
        );
    }
    let carried: Vec<TensorInfo> = (0..n)
        .map(|j| ctx.opt_input(j).map(without_value).unwrap_or_default())
        .collect();
    let (cs, bs) = (slot(ctx, "cond", 0)?, slot(ctx, "body", 1)?);
    let carried = carried_fixpoint(ctx, bs, Some(cs), carried)?;
    for (j, c) in carried.into_iter().take(ctx.output_count()).enumerate() {
        ctx.set_output_info(j, c);
    }
    Ok(())
}

/// GE's Case: the branch `branch_index` selects (the last one when out of range); unknown
/// index: the branches' outputs merged.
fn case_infer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let index = scalar_i64(ctx, 0)?;
    let count = ctx.subgraphs()?.slot_count();
    if count == 0 {
        bail!("Case has no branches");
    }
    let mut outs = Vec::with_capacity(count);
    for s in 0..count {
        let o = ctx.subgraphs()?.infer(s, &[])?;
        if o.len() < ctx.output_count() {
            bail!(
                "branch {s} has {} outputs, the node {}",
                o.len(),
                ctx.output_count()
            );
        }
        outs.push(o);
    }
    let chosen = index.map(|i| {
        usize::try_from(i)
            .ok()
            .filter(|&i| i < count)
            .unwrap_or(count - 1)
    });
    for i in 0..ctx.output_count() {
        let out = match chosen {
            Some(b) => outs[b][i].clone(),
            None => {
                let mut m = outs[0][i].clone();
                for o in &outs[1..] {
                    m = merge_info(&m, &o[i], &format!("output {i} differs between branches"))?;
                }
                m
            }
        };
        ctx.set_output_info(i, out);
    }
    Ok(())
}

/// GE's PartitionedCall: the outputs of `f`.
fn call_infer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let f = slot(ctx, "f", 0)?;
    let outs = ctx.subgraphs()?.infer(f, &[])?;
    if outs.len() < ctx.output_count() {
        bail!(
            "`f` has {} outputs, the node {}",
            outs.len(),
            ctx.output_count()
        );
    }
    for (i, o) in outs.into_iter().take(ctx.output_count()).enumerate() {
        ctx.set_output_info(i, o);
    }
    Ok(())
}

/// GE's functional ops (`functional_ops.h`), in the default domain from version 1.
fn register_ge(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    for t in ["_If", "StatelessIf"] {
        b.register(
            op(t, 1)
                .sig("cond:T, input+:V -> output*:V")
                .tc("T", &[])
                .tc("V", &[])
                .subgraph("then_branch")
                .subgraph("else_branch")
                .infer(ge_if_infer),
        )?;
    }
    for (t, attrs) in [
        ("While", "parallel_iterations:int=10"),
        ("StatelessWhile", "parallel_iterations:int=10"),
        ("_While", ""),
    ] {
        b.register(
            op(t, 1)
                .sig("input+:V -> output*:V")
                .attrs(attrs)
                .tc("V", &[])
                .subgraph("cond")
                .subgraph("body")
                .infer(while_infer),
        )?;
    }
    let mut case = op("Case", 1)
        .sig("branch_index:I, input+:V -> output*:V")
        .tc("I", INT32_64)
        .tc("V", &[])
        .infer(case_infer);
    case.subgraphs
        .push(("branches".to_string(), SubgraphKind::Dynamic));
    b.register(case)?;
    for t in ["PartitionedCall", "StatefulPartitionedCall"] {
        b.register(
            op(t, 1)
                .sig("args+:V -> output*:V")
                .attrs("config:string=, config_proto:string=, executor_type:string=")
                .tc("V", &[])
                .subgraph("f")
                .infer(call_infer),
        )?;
    }
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    register_ge(b)?;
    for v in [1, 11, 13, 16] {
        b.register(
            op("If", v)
                .sig("cond:B, captures+:V -> outputs*:V")
                .attrs("then_branch:graph, else_branch:graph")
                .tc("B", BOOL)
                .tc("V", &[])
                .subgraph("then_branch")
                .subgraph("else_branch")
                .infer(if_infer),
        )?;
    }
    for v in [1, 11, 13, 16] {
        b.register(
            op("Loop", v)
                .sig("M?:I, cond?:B, v_initial+:V -> v_final_and_scan_outputs*:V")
                .attrs("body:graph")
                .tc("I", INT64)
                .tc("B", BOOL)
                .tc("V", &[])
                .subgraph("body")
                .infer(loop_infer),
        )?;
    }
    b.register(
        op("Scan", 8)
            .sig("sequence_lens?:I, initial_state_and_scan_inputs+:V -> final_state_and_scan_outputs*:V")
            .attrs("body:graph, directions:ints, num_scan_inputs:int!")
            .tc("I", INT64)
            .tc("V", &[])
            .subgraph("body")
            .infer(scan_infer),
    )?;
    for v in [9, 11, 16] {
        b.register(
            op("Scan", v)
                .sig("initial_state_and_scan_inputs+:V -> final_state_and_scan_outputs*:V")
                .attrs("body:graph, num_scan_inputs:int!, scan_input_axes:ints, scan_input_directions:ints, scan_output_axes:ints, scan_output_directions:ints")
                .tc("V", &[])
                .subgraph("body")
                .infer(scan_infer),
        )?;
    }
    Ok(())
}
