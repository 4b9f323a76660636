//! String ops, the ai.onnx.ml ops in the node tests, and the preview training optimizers and
//! Gradient.

use rge_ir::{DataType, Shape};

use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::{FormatRule, OpProto};
use crate::registry::OpRegistryBuilder;

fn string_normalizer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let Some(d) = dims_or_unknown(ctx, 0, DataType::String)? else {
        return Ok(());
    };
    // Stopwords may remove elements; an all-removed [C] input gives [1] ("" kept).
    let stop = ctx
        .attr_strings("stopwords")?
        .is_some_and(|s| !s.is_empty());
    let out: Vec<i64> = match d {
        [c] => vec![if stop { -1 } else { *c }],
        [1, c] => vec![1, if stop { -1 } else { *c }],
        _ => bail!("input must be [C] or [1, C], got {}", fmt_dims(d)),
    };
    ctx.set_output_dims(0, DataType::String, &out);
    Ok(())
}

fn string_concat(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    match broadcast_inputs(ctx, &[0, 1])? {
        Some(d) => ctx.set_output_dims(0, DataType::String, &d),
        None => all_unknown(ctx, DataType::String)?,
    }
    Ok(())
}

fn string_split(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let Some(d) = dims_or_unknown(ctx, 0, DataType::String)? else {
        return Ok(());
    };
    let mut y = d.to_vec();
    y.push(-1);
    ctx.set_output_dims(0, DataType::String, &y);
    ctx.set_output_dims(1, DataType::Int64, d);
    Ok(())
}

fn regex_full_match(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    ctx.set_output(0, DataType::Bool, x.shape.clone());
    Ok(())
}

fn tfidf(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let Some(d) = dims_or_unknown(ctx, 0, DataType::Float)? else {
        return Ok(());
    };
    let n = match ctx
        .attr_ints("ngram_indexes")?
        .and_then(|v| v.iter().max().copied())
    {
        None => -1,
        Some(m) if (0..i64::MAX).contains(&m) => m + 1,
        Some(m) => bail!("ngram_indexes holds {m}, not a valid output index"),
    };
    let out = match d {
        [_] => vec![n],
        [b, _] => vec![*b, n],
        _ => bail!("input must be [C] or [N, C], got {}", fmt_dims(d)),
    };
    ctx.set_output_dims(0, DataType::Float, &out);
    Ok(())
}

fn label_encoder(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    let dt = if ctx.has_attr("values_strings") {
        DataType::String
    } else if ctx.has_attr("values_int64s") {
        DataType::Int64
    } else if ctx.has_attr("values_floats") {
        DataType::Float
    } else if let Some(t) = ctx.attr_tensor("values_tensor")? {
        t.desc.dtype()
    } else {
        bail!("one of values_strings, values_int64s, values_floats, values_tensor must be set");
    };
    ctx.set_output(0, dt, x.shape.clone());
    Ok(())
}

fn array_feature_extractor(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let (Some(x), Some(y)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    let n = product(y).unwrap_or(-1);
    let mut out = if x.len() <= 1 {
        vec![1]
    } else {
        x[..x.len() - 1].to_vec()
    };
    out.push(n);
    ctx.set_output_dims(0, dt, &out);
    Ok(())
}

fn binarizer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    ctx.set_output(0, x.dtype, x.shape.clone());
    Ok(())
}

fn tree_ensemble(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?;
    let n = x.dims().and_then(|d| d.first().copied()).unwrap_or(-1);
    let targets = ctx.attr_int("n_targets")?;
    ctx.set_output(0, x.dtype, Shape::new([n, targets]));
    Ok(())
}

/// Training optimizers: outputs are the updated tensors, group by group, each shaped as the
/// matching input X_i.
fn optimizer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let groups = match ctx.op_type() {
        "Adam" => 4,
        _ => 3,
    };
    let n = ctx.input_count().saturating_sub(2);
    if n == 0 || n % groups != 0 {
        bail!("{} inputs after R and T do not form {groups} groups", n);
    }
    let per = n / groups;
    if ctx.output_count() != (groups - 1) * per {
        bail!(
            "{} outputs; {} tensors need {}",
            ctx.output_count(),
            per,
            (groups - 1) * per
        );
    }
    for k in 0..ctx.output_count() {
        let x = ctx.input(2 + k % per)?;
        ctx.set_output(k, x.dtype, x.shape.clone());
    }
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    b.register(
        op("StringNormalizer", 10)
            .sig("X:S -> Y:S")
            .attrs("case_change_action:string=NONE, is_case_sensitive:int=0, locale:string, stopwords:strings")
            .tc("S", STRING)
            .infer(string_normalizer)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("StringConcat", 20)
            .sig("X:S, Y:S -> Z:S")
            .tc("S", STRING)
            .infer(string_concat),
    )?;
    b.register(
        op("StringSplit", 20)
            .sig("X:S -> Y:S, Z:I")
            .attrs("delimiter:string, maxsplit:int")
            .tc("S", STRING)
            .tc("I", INT64)
            .infer(string_split)
            .format(FormatRule::Nd),
    )?;
    b.register(
        op("RegexFullMatch", 20)
            .sig("X:S -> Y:B")
            .attrs("pattern:string")
            .tc("S", STRING)
            .tc("B", BOOL)
            .infer(regex_full_match),
    )?;
    b.register(
        op("TfIdfVectorizer", 9)
            .sig("X:T -> Y:F")
            .attrs("max_gram_length:int!, max_skip_count:int!, min_gram_length:int!, mode:string!, ngram_counts:ints!, ngram_indexes:ints!, pool_int64s:ints, pool_strings:strings, weights:floats")
            .tc("T", &[DataType::String, DataType::Int32, DataType::Int64])
            .tc("F", FLOAT32)
            .infer(tfidf)
            .format(FormatRule::Nd),
    )?;
    let ml = |t: &str, v: i64| OpProto::new("ai.onnx.ml", t, v);
    for v in [2, 4] {
        b.register(
            ml("LabelEncoder", v)
                .sig("X:T1 -> Y:T2")
                // The `*_tensor` forms from 4 on.
                .attrs(if v >= 4 {
                    "default_float:float=-0.0, default_int64:int=-1, default_string:string=_Unused, default_tensor:tensor, keys_floats:floats, keys_int64s:ints, keys_strings:strings, keys_tensor:tensor, values_floats:floats, values_int64s:ints, values_strings:strings, values_tensor:tensor"
                } else {
                    "default_float:float=-0.0, default_int64:int=-1, default_string:string=_Unused, keys_floats:floats, keys_int64s:ints, keys_strings:strings, values_floats:floats, values_int64s:ints, values_strings:strings"
                })
                .tc("T1", ALL)
                .tc("T2", ALL)
                .infer(label_encoder),
        )?;
    }
    b.register(
        ml("ArrayFeatureExtractor", 1)
            .sig("X:T, Y:I -> Z:T")
            .tc("T", ALL)
            .tc("I", INT64)
            .infer(array_feature_extractor)
            .format(FormatRule::Nd),
    )?;
    b.register(
        ml("Binarizer", 1)
            .sig("X:T -> Y:T")
            .attrs("threshold:float=0.0")
            .tc("T", NUMERIC)
            .infer(binarizer),
    )?;
    b.register(
        ml("TreeEnsemble", 5)
            .sig("X:T -> Y:T")
            .attrs("aggregate_function:int=1, leaf_targetids:ints, leaf_weights:tensor, membership_values:tensor, n_targets:int!, nodes_falseleafs:ints, nodes_falsenodeids:ints, nodes_featureids:ints, nodes_hitrates:tensor, nodes_missing_value_tracks_true:ints, nodes_modes:tensor, nodes_splits:tensor, nodes_trueleafs:ints, nodes_truenodeids:ints, post_transform:int=0, tree_roots:ints")
            .tc("T", FLOATS)
            .infer(tree_ensemble)
            .format(FormatRule::Nd),
    )?;
    let tr = |t: &str| OpProto::new("ai.onnx.preview.training", t, 1);
    b.register(
        tr("Adagrad")
            .sig("R:T1, T:T2, inputs+:T3 -> outputs*:T3")
            .attrs("decay_factor:float=0.0, epsilon:float=1e-6, norm_coefficient:float=0.0")
            .tc("T1", FLOATS)
            .tc("T2", INT64)
            .tc("T3", FLOATS)
            .infer(optimizer),
    )?;
    b.register(tr("Adam").sig("R:T1, T:T2, inputs+:T3 -> outputs*:T3").attrs("alpha:float=0.9, beta:float=0.999, epsilon:float=1e-6, norm_coefficient:float=0.0, norm_coefficient_post:float=0.0").tc("T1", FLOATS).tc("T2", INT64).tc("T3", FLOATS).infer(optimizer))?;
    b.register(
        tr("Momentum")
            .sig("R:T1, T:T2, inputs+:T3 -> outputs*:T3")
            .attrs("alpha:float!, beta:float!, mode:string!, norm_coefficient:float!")
            .tc("T1", FLOATS)
            .tc("T2", INT64)
            .tc("T3", FLOATS)
            .infer(optimizer),
    )?;
    // Expanded into its backward graph before inference (crate::gradient); a node that reaches
    // inference was not (it is in a subgraph the expansion refused).
    b.register(
        tr("Gradient")
            .sig("Inputs+:T1 -> Outputs*:T2")
            .attrs("xs:strings!, y:string!, zs:strings")
            .tc("T1", ALL)
            .tc("T2", FLOATS)
            .infer(unexpanded_gradient),
    )?;
    Ok(())
}

fn unexpanded_gradient(_: &mut InferCtx<'_>) -> OpResult<()> {
    bail!("Gradient was not expanded into its backward graph")
}
