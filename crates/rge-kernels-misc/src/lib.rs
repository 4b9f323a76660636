//! rge CPU kernels: misc ops — resizing and sampling (Resize, Upsample, GridSample,
//! AffineGrid), NonMaxSuppression, signal processing (DFT, STFT, windows, MelWeightMatrix),
//! Det, string ops, text vectorization, the ai.onnx.ml classics, random generators, the
//! training optimizers and ImageDecoder.

use rge_kernels::{KernelRegistryBuilder, KernelResult, ONNX_DOMAIN};

mod det;
mod grid;
pub mod image;
mod ml;
mod nms;
mod random;
mod resize;
mod signal;
mod strings;
mod tfidf;
mod training;
mod tree;
mod util;

pub use resize::{AxisPass, ResizePlan, ResizeSpec};

/// The ai.onnx.ml domain.
pub const ML_DOMAIN: &str = "ai.onnx.ml";
/// The training preview domain.
pub const TRAINING_DOMAIN: &str = "ai.onnx.preview.training";

/// Registers this family's kernels.
pub fn register(b: &mut KernelRegistryBuilder) -> KernelResult<()> {
    let d = ONNX_DOMAIN;
    b.register(d, "Resize", resize::create_resize)?;
    b.register(d, "Upsample", resize::create_upsample)?;
    b.register(d, "GridSample", grid::create_grid_sample)?;
    b.register(d, "AffineGrid", grid::create_affine_grid)?;
    b.register(d, "NonMaxSuppression", nms::create_nms)?;
    b.register(d, "DFT", signal::create_dft)?;
    b.register(d, "STFT", signal::create_stft)?;
    b.register(d, "HannWindow", signal::create_hann)?;
    b.register(d, "HammingWindow", signal::create_hamming)?;
    b.register(d, "BlackmanWindow", signal::create_blackman)?;
    b.register(d, "MelWeightMatrix", signal::create_mel)?;
    b.register(d, "Det", det::create_det)?;
    b.register(d, "StringNormalizer", strings::create_string_normalizer)?;
    b.register(d, "StringConcat", strings::create_string_concat)?;
    b.register(d, "StringSplit", strings::create_string_split)?;
    b.register(d, "RegexFullMatch", strings::create_regex_full_match)?;
    b.register(d, "TfIdfVectorizer", tfidf::create_tfidf)?;
    b.register(d, "Bernoulli", random::create_bernoulli)?;
    b.register(d, "RandomNormal", random::create_random_normal)?;
    b.register(d, "RandomUniform", random::create_random_uniform)?;
    b.register(d, "RandomNormalLike", random::create_random_normal_like)?;
    b.register(d, "RandomUniformLike", random::create_random_uniform_like)?;
    b.register(d, "Multinomial", random::create_multinomial)?;
    b.register(ML_DOMAIN, "LabelEncoder", ml::create_label_encoder)?;
    b.register(
        ML_DOMAIN,
        "ArrayFeatureExtractor",
        ml::create_array_feature_extractor,
    )?;
    b.register(ML_DOMAIN, "Binarizer", ml::create_binarizer)?;
    b.register(ML_DOMAIN, "TreeEnsemble", tree::create_tree_ensemble)?;
    b.register(TRAINING_DOMAIN, "Adagrad", training::create_adagrad)?;
    b.register(TRAINING_DOMAIN, "Adam", training::create_adam)?;
    b.register(TRAINING_DOMAIN, "Momentum", training::create_momentum)?;
    Ok(())
}
