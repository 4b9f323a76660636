//! rge CPU kernels: the ai.onnx.ml ops of scikit-learn-style models — the classic tree
//! ensembles, linear and SVM models, the feature transforms and the map ops. (LabelEncoder,
//! ArrayFeatureExtractor, Binarizer and TreeEnsemble 5 are in rge-kernels-misc.)

// Index loops mirror the reference formulas (several arrays per index).
#![allow(clippy::needless_range_loop)]

mod input;
mod labels;
mod linear;
mod maps;
mod post;
mod svm;
mod transform;
mod tree;

use rge_kernels::{KernelFactory, KernelRegistryBuilder, KernelResult};

/// The ai.onnx.ml domain.
pub const ML_DOMAIN: &str = "ai.onnx.ml";

/// Every op of this family and its kernel factory.
const KERNELS: &[(&str, KernelFactory)] = &[
    ("TreeEnsembleClassifier", tree::tree_ensemble_classifier),
    ("TreeEnsembleRegressor", tree::tree_ensemble_regressor),
    ("LinearClassifier", linear::linear_classifier),
    ("LinearRegressor", linear::linear_regressor),
    ("SVMClassifier", svm::svm_classifier),
    ("SVMRegressor", svm::svm_regressor),
    ("Scaler", transform::scaler),
    ("Normalizer", transform::normalizer),
    ("Imputer", transform::imputer),
    ("OneHotEncoder", transform::one_hot_encoder),
    ("FeatureVectorizer", transform::feature_vectorizer),
    ("CategoryMapper", transform::category_mapper),
    ("ZipMap", maps::zip_map),
    ("DictVectorizer", maps::dict_vectorizer),
    ("CastMap", maps::cast_map),
];

/// Registers this family's kernels.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    for &(op, factory) in KERNELS {
        b.register(ML_DOMAIN, op, factory)?;
    }
    Ok(())
}
