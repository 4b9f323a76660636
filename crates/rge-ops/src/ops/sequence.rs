//! Sequences and optionals. A sequence's info describes its elements (data type, and the shape
//! they share: dims that differ are -1); its kind is `Sequence`. Optionals carry their
//! element's info with kind `OptionalTensor`/`OptionalSequence`.

use rge_ir::{DataType, Shape};

use super::util::*;
use crate::bail;
use crate::ctx::{InferCtx, TensorInfo, ValueKind};
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::registry::OpRegistryBuilder;

fn elem_union(a: &Shape, b: &Shape) -> Shape {
    match (a.rank(), b.rank()) {
        (Some(x), Some(y)) if x == y => Shape::new(
            a.dims()
                .iter()
                .zip(b.dims())
                .map(|(&p, &q)| if p == q { p } else { -1 }),
        ),
        _ => Shape::unknown_rank(),
    }
}

fn seq_of(dtype: DataType, shape: Shape) -> TensorInfo {
    TensorInfo {
        dtype,
        shape,
        kind: ValueKind::Sequence,
        ..Default::default()
    }
}

fn expect_seq(t: &TensorInfo, what: &str) -> OpResult<()> {
    if t.kind != ValueKind::Sequence {
        bail!("{what} must be a sequence, got a {}", t.kind.name());
    }
    Ok(())
}

fn sequence_empty(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.attr_dtype_opt("dtype")?.unwrap_or(DataType::Float);
    ctx.set_output_info(0, seq_of(dt, Shape::unknown_rank()));
    Ok(())
}

fn sequence_construct(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let first = ctx.input(0)?.clone();
    let mut shape = first.shape.clone();
    for i in 1..ctx.input_count() {
        shape = elem_union(&shape, &ctx.input(i)?.shape);
    }
    ctx.set_output_info(0, seq_of(first.dtype, shape));
    Ok(())
}

fn sequence_insert(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let s = ctx.input(0)?;
    expect_seq(s, "input_sequence")?;
    let t = ctx.input(1)?;
    if s.dtype != DataType::Undefined && t.dtype != s.dtype {
        bail!(
            "inserting a {} tensor into a sequence of {}",
            t.dtype,
            s.dtype
        );
    }
    ctx.set_output_info(0, seq_of(t.dtype, elem_union(&s.shape, &t.shape)));
    Ok(())
}

fn sequence_erase(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let s = ctx.input(0)?.clone();
    expect_seq(&s, "input_sequence")?;
    ctx.set_output_info(0, seq_of(s.dtype, s.shape));
    Ok(())
}

fn sequence_at(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let s = ctx.input(0)?;
    expect_seq(s, "input_sequence")?;
    ctx.set_output(0, s.dtype, s.shape.clone());
    Ok(())
}

fn sequence_length(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    expect_seq(ctx.input(0)?, "input_sequence")?;
    ctx.set_output(0, DataType::Int64, Shape::scalar());
    Ok(())
}

fn split_to_sequence(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let Some(d) = ctx.input(0)?.dims() else {
        ctx.set_output_info(0, seq_of(dt, Shape::unknown_rank()));
        return Ok(());
    };
    let a = norm_axis(ctx.attr_int("axis")?, d.len())?;
    let mut e = d.to_vec();
    match ctx.opt_input(1) {
        None => {
            if ctx.attr_int("keepdims")? != 0 {
                e[a] = 1;
            } else {
                e.remove(a);
            }
        }
        Some(_) => match ctx.input_value(1) {
            Some(v) if v.dims.is_empty() && !v.is_empty() => {
                let k = v.get_i64(0);
                e[a] = if d[a] >= 0 && k > 0 && d[a] % k == 0 {
                    k
                } else {
                    -1
                };
            }
            Some(v) => {
                let s = v.as_i64();
                e[a] = if s.windows(2).all(|w| w[0] == w[1]) && !s.is_empty() {
                    s[0]
                } else {
                    -1
                };
            }
            None => e[a] = -1,
        },
    }
    ctx.set_output_info(0, seq_of(dt, Shape::new(e)));
    Ok(())
}

fn concat_from_sequence(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let s = ctx.input(0)?;
    expect_seq(s, "input_sequence")?;
    let dt = s.dtype;
    let Some(d) = s.dims() else {
        return all_unknown(ctx, dt);
    };
    let new_axis = ctx.attr_int("new_axis")? != 0;
    let mut out = d.to_vec();
    if new_axis {
        let a = norm_axis(ctx.attr_int("axis")?, d.len() + 1)?;
        out.insert(a, -1);
    } else {
        let a = norm_axis(ctx.attr_int("axis")?, d.len())?;
        out[a] = -1;
    }
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn sequence_map(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let mut bind = Vec::new();
    for i in 0..ctx.input_count() {
        let Some(t) = ctx.opt_input(i) else {
            continue;
        };
        let mut e = t.clone();
        e.value = None;
        if e.kind == ValueKind::Sequence {
            e.kind = ValueKind::Tensor;
        }
        bind.push((i, e));
    }
    let body = ctx.subgraphs()?.slot_named("body").unwrap_or(0);
    let outs = ctx.subgraphs()?.infer(body, &bind)?;
    for (i, o) in outs.iter().enumerate() {
        ctx.set_output_info(i, seq_of(o.dtype, o.shape.clone()));
    }
    Ok(())
}

fn optional(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let info = match ctx.opt_input(0) {
        Some(t) => {
            let kind = if t.kind == ValueKind::Sequence {
                ValueKind::OptionalSequence
            } else {
                ValueKind::OptionalTensor
            };
            TensorInfo {
                kind,
                value: None,
                ..t.clone()
            }
        }
        None => {
            // An empty optional: its type comes from the `type` attribute (a tensor desc, or
            // the frontend's encoded TypeProto for other types).
            match ctx.attrs().get("type") {
                Some(rge_ir::AttrValue::TensorDesc(d)) => TensorInfo {
                    dtype: d.dtype(),
                    shape: d.shape().clone(),
                    kind: ValueKind::OptionalTensor,
                    ..Default::default()
                },
                Some(rge_ir::AttrValue::NamedAttrs(na)) => {
                    let decoded = na
                        .attrs
                        .get_as::<&[u8]>("bytes")
                        .ok()
                        .flatten()
                        .and_then(crate::onnx_types::decode_type_proto);
                    match decoded {
                        Some((kind, dt, dims)) => TensorInfo {
                            dtype: dt.unwrap_or_default(),
                            shape: dims.map_or_else(Shape::unknown_rank, Shape::new),
                            kind: if kind == ValueKind::Sequence {
                                ValueKind::OptionalSequence
                            } else {
                                ValueKind::OptionalTensor
                            },
                            ..Default::default()
                        },
                        None => bail!("cannot read the `type` attribute"),
                    }
                }
                _ => bail!("an Optional without input needs a `type` attribute"),
            }
        }
    };
    ctx.set_output_info(0, info);
    Ok(())
}

fn optional_has_element(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    ctx.set_output(0, DataType::Bool, Shape::scalar());
    Ok(())
}

fn optional_get_element(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let t = ctx.input(0)?;
    let kind = match t.kind {
        ValueKind::OptionalSequence | ValueKind::Sequence => ValueKind::Sequence,
        _ => ValueKind::Tensor,
    };
    ctx.set_output_info(
        0,
        TensorInfo {
            kind,
            value: None,
            ..t.clone()
        },
    );
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    b.register(
        op("SequenceEmpty", 11)
            .sig("-> output:S")
            .attrs("dtype:int")
            .tc("S", &[])
            .infer(sequence_empty),
    )?;
    b.register(
        op("SequenceConstruct", 11)
            .sig("inputs*:T -> output_sequence:S")
            .tc("T", ALL)
            .tc("S", &[])
            .infer(sequence_construct),
    )?;
    b.register(
        op("SequenceInsert", 11)
            .sig("input_sequence:S, tensor:T, position?:I -> output_sequence:S")
            .tc("S", &[])
            .tc("T", ALL)
            .tc("I", INT32_64)
            .infer(sequence_insert),
    )?;
    b.register(
        op("SequenceErase", 11)
            .sig("input_sequence:S, position?:I -> output_sequence:S")
            .tc("S", &[])
            .tc("I", INT32_64)
            .infer(sequence_erase),
    )?;
    b.register(
        op("SequenceAt", 11)
            .sig("input_sequence:S, position:I -> tensor:T")
            .tc("S", &[])
            .tc("T", ALL)
            .tc("I", INT32_64)
            .infer(sequence_at),
    )?;
    b.register(
        op("SequenceLength", 11)
            .sig("input_sequence:S -> length:I")
            .tc("S", &[])
            .tc("I", INT64)
            .infer(sequence_length),
    )?;
    for v in [11, 24] {
        b.register(
            op("SplitToSequence", v)
                .sig("input:T, split?:I -> output_sequence:S")
                .attrs("axis:int=0, keepdims:int=1")
                .tc("T", ALL)
                .tc("I", INT32_64)
                .tc("S", &[])
                .infer(split_to_sequence),
        )?;
    }
    b.register(
        op("ConcatFromSequence", 11)
            .sig("input_sequence:S -> concat_result:T")
            .attrs("axis:int!, new_axis:int=0")
            .tc("S", &[])
            .tc("T", ALL)
            .infer(concat_from_sequence),
    )?;
    b.register(
        op("SequenceMap", 17)
            .sig("input_sequence:S, additional_inputs+:V -> out_sequence*:S")
            .attrs("body:graph")
            .tc("S", &[])
            .tc("V", &[])
            .subgraph("body")
            .infer(sequence_map),
    )?;
    b.register(
        op("Optional", 15)
            .sig("input?:V -> output:O")
            .attrs("type:type_proto")
            .tc("V", &[])
            .tc("O", &[])
            .infer(optional),
    )?;
    for v in [15, 18] {
        b.register(
            op("OptionalHasElement", v)
                // The input is optional from 18 on.
                .sig(if v >= 18 {
                    "input?:O -> output:B"
                } else {
                    "input:O -> output:B"
                })
                .tc("O", &[])
                .tc("B", BOOL)
                .infer(optional_has_element),
        )?;
        b.register(
            op("OptionalGetElement", v)
                .sig("input:O -> output:V")
                .tc("O", &[])
                .tc("V", &[])
                .infer(optional_get_element),
        )?;
    }
    Ok(())
}
