//! The ai.onnx.ml ops of scikit-learn-style models: tree ensembles (the classic
//! TreeEnsembleClassifier/Regressor), linear and SVM models, scalers and encoders, and the map ops
//! (ZipMap, DictVectorizer, CastMap). (LabelEncoder
//! 2/4, ArrayFeatureExtractor, Binarizer and TreeEnsemble 5 are in text.rs.)

use rge_ir::{DataType, Shape};

use super::util::fmt_dims;
use crate::bail;
use crate::ctx::{InferCtx, MapKey, TensorInfo, ValueKind};
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::OpProto;
use crate::registry::OpRegistryBuilder;

fn ml(op_type: &str, since: i64) -> OpProto {
    OpProto::new("ai.onnx.ml", op_type, since)
}

/// The numeric inputs of the ml models.
const ML_NUM: &[DataType] = &[
    DataType::Float,
    DataType::Double,
    DataType::Int64,
    DataType::Int32,
];

/// The value types of DictVectorizer's maps and tensors.
const MAP_VALUES: &[DataType] = &[
    DataType::String,
    DataType::Int64,
    DataType::Float,
    DataType::Double,
];

/// The batch size N of a [N, F] or [F] input (-1 when unknown).
fn rows(ctx: &InferCtx<'_>) -> OpResult<i64> {
    Ok(match ctx.input(0)?.dims() {
        Some([]) | Some([_]) => 1,
        Some([n, ..]) => *n,
        None => -1,
    })
}

/// Classifiers: labels [N] (int64 or string, from which class label list is set), scores
/// [N, E] float.
fn classifier(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let n = rows(ctx)?;
    let (strings, ints) = if ctx.has_attr("classlabels_strings") {
        (ctx.attr_strings("classlabels_strings")?, None)
    } else {
        let key = if ctx.has_attr("classlabels_int64s") {
            "classlabels_int64s"
        } else {
            "classlabels_ints"
        };
        (None, ctx.attr_ints(key)?)
    };
    let classes = strings
        .map(|s| s.len())
        .or(ints.map(|i| i.len()))
        .unwrap_or(0);
    let label = if strings.is_some() {
        DataType::String
    } else {
        DataType::Int64
    };
    ctx.set_output_dims(0, label, &[n]);
    let e = if classes == 0 { -1 } else { classes as i64 };
    ctx.set_output_dims(1, DataType::Float, &[n, e]);
    Ok(())
}

fn tree_regressor(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let n = rows(ctx)?;
    let t = ctx.attr_int_opt("n_targets")?.unwrap_or(1);
    ctx.set_output_dims(0, DataType::Float, &[n, t]);
    Ok(())
}

fn removed_in_ml5(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    crate::bail!(
        "{} was removed in ai.onnx.ml opset 5 (deprecated there); import ai.onnx.ml 3 or 4, or use TreeEnsemble",
        ctx.op_type()
    )
}

fn linear_regressor(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let n = rows(ctx)?;
    let t = ctx.attr_int_opt("targets")?.unwrap_or(1);
    ctx.set_output_dims(0, DataType::Float, &[n, t]);
    Ok(())
}

fn svm_regressor(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let n = rows(ctx)?;
    ctx.set_output_dims(0, DataType::Float, &[n, 1]);
    Ok(())
}

/// Output float, shaped as the input.
fn float_like(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    ctx.set_output(0, DataType::Float, x.shape);
    Ok(())
}

fn same_like(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    ctx.set_output(0, x.dtype, x.shape);
    Ok(())
}

fn one_hot_encoder(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let c = match (
        ctx.attr_strings("cats_strings")?,
        ctx.attr_ints("cats_int64s")?,
    ) {
        (Some(s), _) if !s.is_empty() => s.len() as i64,
        (_, Some(i)) if !i.is_empty() => i.len() as i64,
        _ => bail!("one of cats_strings, cats_int64s must be set"),
    };
    match ctx.input(0)?.dims() {
        Some(d) => {
            let mut o = d.to_vec();
            o.push(c);
            ctx.set_output_dims(0, DataType::Float, &o);
        }
        None => ctx.set_output(0, DataType::Float, Shape::unknown_rank()),
    }
    Ok(())
}

/// CategoryMapper and LabelEncoder 1: strings ↔ int64, the other type of the input.
fn string_int_map(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let x = ctx.input(0)?.clone();
    let dt = match x.dtype {
        DataType::String => DataType::Int64,
        DataType::Int64 => DataType::String,
        DataType::Undefined => DataType::Undefined,
        other => bail!("input must be string or int64, got {other}"),
    };
    ctx.set_output(0, dt, x.shape);
    Ok(())
}

fn feature_vectorizer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dims = ctx.attr_ints("inputdimensions")?.unwrap_or(&[]);
    if dims.len() != ctx.input_count() {
        bail!(
            "inputdimensions has {} values for {} inputs",
            dims.len(),
            ctx.input_count()
        );
    }
    let n = rows(ctx)?;
    let total: i64 = dims.iter().sum();
    ctx.set_output_dims(0, DataType::Float, &[n, total]);
    Ok(())
}

/// The key type of the labels attribute pair `ints`/`strings` (exactly one set).
fn label_key(ctx: &InferCtx<'_>, ints: &str, strings: &str) -> OpResult<(MapKey, usize)> {
    match (ctx.attr_ints(ints)?, ctx.attr_strings(strings)?) {
        (Some(i), None) if !i.is_empty() => Ok((MapKey::Int64, i.len())),
        (None, Some(s)) if !s.is_empty() => Ok((MapKey::String, s.len())),
        (Some(_), Some(_)) => bail!("only one of {ints}, {strings} may be set"),
        _ => bail!("one of {ints}, {strings} must be set (and not empty)"),
    }
}

/// ZipMap: rows of class scores [N, C] (or [C]) → one map per row, label → score.
fn zip_map(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let (key, labels) = label_key(ctx, "classlabels_int64s", "classlabels_strings")?;
    if let Some(d) = ctx.input(0)?.dims() {
        let c = match d {
            [c] | [_, c] => *c,
            _ => bail!("X must be [N, C] or [C], got {}", fmt_dims(d)),
        };
        if c >= 0 && c as usize != labels {
            bail!("X has {c} columns but there are {labels} class labels");
        }
    }
    ctx.set_output_info(
        0,
        TensorInfo {
            dtype: DataType::Float,
            shape: Shape::new(vec![labels as i64]),
            kind: ValueKind::SequenceOfMaps(key),
            ..Default::default()
        },
    );
    Ok(())
}

/// The map an input holds, or an error naming the kind found.
fn map_input<'a>(ctx: &InferCtx<'a>) -> OpResult<(MapKey, &'a TensorInfo)> {
    let x = ctx.input(0)?;
    match x.kind {
        ValueKind::Map(key) => Ok((key, x)),
        // Not inferred yet (a graph input whose type the frontend did not give).
        ValueKind::Tensor if x.dtype == DataType::Undefined => Ok((MapKey::Int64, x)),
        other => bail!("X must be a map, got a {}", other.name()),
    }
}

/// DictVectorizer: a map → the [1, V] tensor of its values at the vocabulary's positions.
fn dict_vectorizer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let (key, x) = map_input(ctx)?;
    let (vocab_key, v) = label_key(ctx, "int64_vocabulary", "string_vocabulary")?;
    if x.kind != ValueKind::Tensor && key != vocab_key {
        bail!(
            "the map's keys are {} but the vocabulary is {}",
            key.dtype(),
            vocab_key.dtype()
        );
    }
    let dt = x.dtype;
    ctx.set_output_dims(0, dt, &[1, v as i64]);
    Ok(())
}

/// CastMap: a map of int64 keys → [1, entries] (DENSE) or [1, max_map] (SPARSE), cast.
fn cast_map(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let (key, x) = map_input(ctx)?;
    if x.kind != ValueKind::Tensor && key != MapKey::Int64 {
        bail!("the map's keys must be int64, got {}", key.dtype());
    }
    let dt = match ctx.attr_str("cast_to")? {
        "TO_FLOAT" => DataType::Float,
        "TO_STRING" => DataType::String,
        "TO_INT64" => DataType::Int64,
        other => bail!("cast_to `{other}` is not TO_FLOAT, TO_STRING or TO_INT64"),
    };
    let width = match ctx.attr_str("map_form")? {
        "DENSE" => x.dims().and_then(|d| d.first().copied()).unwrap_or(-1),
        "SPARSE" => {
            let m = ctx.attr_int_opt("max_map")?.unwrap_or(1);
            if m < 1 {
                bail!("max_map must be positive, got {m}");
            }
            m
        }
        other => bail!("map_form `{other}` is not DENSE or SPARSE"),
    };
    ctx.set_output_dims(0, dt, &[1, width]);
    Ok(())
}

fn check_2d(ctx: &InferCtx<'_>) -> OpResult<()> {
    if let Some(d) = ctx.input(0)?.dims() {
        if d.len() > 2 {
            bail!("X must be [N, F] or [F], got {}", fmt_dims(d));
        }
    }
    Ok(())
}

fn linear_classifier(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    check_2d(ctx)?;
    classifier(ctx)
}

const TREE_NODES: &str = "nodes_falsenodeids:ints, nodes_featureids:ints, nodes_hitrates:floats, nodes_missing_value_tracks_true:ints, nodes_modes:strings, nodes_nodeids:ints, nodes_treeids:ints, nodes_truenodeids:ints, nodes_values:floats, post_transform:string=NONE, base_values:floats";
const TREE_TENSORS: &str = ", base_values_as_tensor:tensor, nodes_hitrates_as_tensor:tensor, nodes_values_as_tensor:tensor";

/// TreeEnsembleClassifier's attributes at version `v` (3 adds the `*_as_tensor` forms).
fn tree_classifier_attrs(v: i64) -> String {
    let (extra, weights) = if v >= 3 {
        (TREE_TENSORS, ", class_weights_as_tensor:tensor")
    } else {
        ("", "")
    };
    format!("{TREE_NODES}{extra}, class_ids:ints, class_nodeids:ints, class_treeids:ints, class_weights:floats, classlabels_int64s:ints, classlabels_strings:strings{weights}")
}

/// TreeEnsembleRegressor's attributes at version `v` (3 adds the `*_as_tensor` forms).
fn tree_regressor_attrs(v: i64) -> String {
    let (extra, weights) = if v >= 3 {
        (TREE_TENSORS, ", target_weights_as_tensor:tensor")
    } else {
        ("", "")
    };
    format!("{TREE_NODES}{extra}, aggregate_function:string=SUM, n_targets:int, target_ids:ints, target_nodeids:ints, target_treeids:ints, target_weights:floats{weights}")
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    let labels = &[DataType::String, DataType::Int64][..];
    for v in [1, 3] {
        b.register(
            ml("TreeEnsembleClassifier", v)
                .sig("X:T1 -> Y:T2, Z:F")
                .attrs(&tree_classifier_attrs(v))
                .tc("T1", ML_NUM)
                .tc("T2", labels)
                .tc("F", FLOAT32)
                .infer(classifier),
        )?;
        b.register(
            ml("TreeEnsembleRegressor", v)
                .sig("X:T -> Y:F")
                .attrs(&tree_regressor_attrs(v))
                .tc("T", ML_NUM)
                .tc("F", FLOAT32)
                .infer(tree_regressor),
        )?;
    }
    // ai.onnx.ml 5 removed both (the schema history marks version 5 deprecated, with version
    // 3's attributes): a model importing it gets an error that names the replacement, as
    // onnxruntime refuses it too.
    for (op, sig, attrs) in [
        (
            "TreeEnsembleClassifier",
            "X:T1 -> Y:T2, Z:F",
            tree_classifier_attrs(3),
        ),
        (
            "TreeEnsembleRegressor",
            "X:T1 -> Y:F",
            tree_regressor_attrs(3),
        ),
    ] {
        b.register(
            ml(op, 5)
                .sig(sig)
                .attrs(&attrs)
                .tc("T1", ML_NUM)
                .tc("T2", labels)
                .tc("F", FLOAT32)
                .infer(removed_in_ml5),
        )?;
    }
    b.register(
        ml("ZipMap", 1)
            .sig("X:F -> Z:T")
            .attrs("classlabels_int64s:ints, classlabels_strings:strings")
            .tc("F", FLOAT32)
            .tc("T", FLOAT32)
            .infer(zip_map),
    )?;
    b.register(
        ml("DictVectorizer", 1)
            .sig("X:T1 -> Y:T2")
            .attrs("int64_vocabulary:ints, string_vocabulary:strings")
            .tc("T1", MAP_VALUES)
            .tc("T2", MAP_VALUES)
            .infer(dict_vectorizer),
    )?;
    b.register(
        ml("CastMap", 1)
            .sig("X:T1 -> Y:T2")
            .attrs("cast_to:string=TO_FLOAT, map_form:string=DENSE, max_map:int=1")
            .tc("T1", &[DataType::String, DataType::Float])
            .tc("T2", &[DataType::String, DataType::Float, DataType::Int64])
            .infer(cast_map),
    )?;
    b.register(
        ml("LinearClassifier", 1)
            .sig("X:T1 -> Y:T2, Z:F")
            .attrs("classlabels_ints:ints, classlabels_strings:strings, coefficients:floats!, intercepts:floats, multi_class:int=0, post_transform:string=NONE")
            .tc("T1", ML_NUM)
            .tc("T2", labels)
            .tc("F", FLOAT32)
            .infer(linear_classifier),
    )?;
    b.register(
        ml("LinearRegressor", 1)
            .sig("X:T -> Y:F")
            .attrs(
                "coefficients:floats, intercepts:floats, post_transform:string=NONE, targets:int=1",
            )
            .tc("T", ML_NUM)
            .tc("F", FLOAT32)
            .infer(linear_regressor),
    )?;
    b.register(
        ml("SVMClassifier", 1)
            .sig("X:T1 -> Y:T2, Z:F")
            .attrs("classlabels_ints:ints, classlabels_strings:strings, coefficients:floats, kernel_params:floats, kernel_type:string=LINEAR, post_transform:string=NONE, prob_a:floats, prob_b:floats, rho:floats, support_vectors:floats, vectors_per_class:ints")
            .tc("T1", ML_NUM)
            .tc("T2", labels)
            .tc("F", FLOAT32)
            .infer(classifier),
    )?;
    b.register(
        ml("SVMRegressor", 1)
            .sig("X:T -> Y:F")
            .attrs("coefficients:floats, kernel_params:floats, kernel_type:string=LINEAR, n_supports:int=0, one_class:int=0, post_transform:string=NONE, rho:floats, support_vectors:floats")
            .tc("T", ML_NUM)
            .tc("F", FLOAT32)
            .infer(svm_regressor),
    )?;
    b.register(
        ml("Scaler", 1)
            .sig("X:T -> Y:F")
            .attrs("offset:floats, scale:floats")
            .tc("T", ML_NUM)
            .tc("F", FLOAT32)
            .infer(float_like),
    )?;
    b.register(
        ml("Normalizer", 1)
            .sig("X:T -> Y:F")
            .attrs("norm:string=MAX")
            .tc("T", ML_NUM)
            .tc("F", FLOAT32)
            .infer(float_like),
    )?;
    b.register(
        ml("OneHotEncoder", 1)
            .sig("X:T -> Y:F")
            .attrs("cats_int64s:ints, cats_strings:strings, zeros:int=1")
            .tc(
                "T",
                &[
                    DataType::String,
                    DataType::Int64,
                    DataType::Int32,
                    DataType::Float,
                    DataType::Double,
                ],
            )
            .tc("F", FLOAT32)
            .infer(one_hot_encoder),
    )?;
    b.register(
        ml("Imputer", 1)
            .sig("X:T -> Y:T")
            .attrs("imputed_value_floats:floats, imputed_value_int64s:ints, replaced_value_float:float=0.0, replaced_value_int64:int=0")
            .tc("T", ML_NUM)
            .infer(same_like),
    )?;
    b.register(
        ml("FeatureVectorizer", 1)
            .sig("X+:T -> Y:F")
            .attrs("inputdimensions:ints")
            .tc("T", ML_NUM)
            .tc("F", FLOAT32)
            .infer(feature_vectorizer),
    )?;
    b.register(
        ml("CategoryMapper", 1)
            .sig("X:T1 -> Y:T2")
            .attrs("cats_int64s:ints, cats_strings:strings, default_int64:int=-1, default_string:string=_Unused")
            .tc("T1", labels)
            .tc("T2", labels)
            .infer(string_int_map),
    )?;
    b.register(
        ml("LabelEncoder", 1)
            .sig("X:T1 -> Y:T2")
            .attrs("classes_strings:strings, default_int64:int=-1, default_string:string=_Unused")
            .tc("T1", labels)
            .tc("T2", labels)
            .infer(string_int_map),
    )?;
    Ok(())
}
