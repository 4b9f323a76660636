//! The feature transforms: Scaler, Normalizer, Imputer, OneHotEncoder, FeatureVectorizer,
//! CategoryMapper.

use std::collections::HashMap;

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor};

/// One value per feature, or one for all: the value for feature j.
fn per_feature(v: &[f32], j: usize) -> f32 {
    if v.len() == 1 {
        v[0]
    } else {
        v[j]
    }
}

fn check_per_feature(what: &str, v: &[f32], f: usize) -> KernelResult<()> {
    if v.len() != 1 && v.len() != f {
        return Err(KernelError::invalid(format!(
            "{what} has {} values; X has {f} features",
            v.len()
        )));
    }
    Ok(())
}

struct Scaler {
    offset: Vec<f32>,
    scale: Vec<f32>,
}

pub(crate) fn scaler(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let offset = init.floats_opt("offset")?.unwrap_or(&[0.0]).to_vec();
    let scale = init.floats_opt("scale")?.unwrap_or(&[1.0]).to_vec();
    if offset.is_empty() || scale.is_empty() {
        return Err(KernelError::attr(
            "scale",
            "offset and scale must not be empty",
        ));
    }
    Ok(Box::new(Scaler { offset, scale }))
}

impl Kernel for Scaler {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let f = x.shape().last().copied().unwrap_or(1);
        check_per_feature("offset", &self.offset, f)?;
        check_per_feature("scale", &self.scale, f)?;
        let out: Vec<f32> = x
            .to_f64_vec()?
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                (v as f32 - per_feature(&self.offset, i % f)) * per_feature(&self.scale, i % f)
            })
            .collect();
        ctx.put(0, Tensor::from_vec(x.shape(), out)?)
    }
}

#[derive(Clone, Copy)]
enum Norm {
    Max,
    L1,
    L2,
}

struct Normalizer {
    norm: Norm,
}

pub(crate) fn normalizer(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let norm = match init.str_or("norm", "MAX")? {
        "MAX" => Norm::Max,
        "L1" => Norm::L1,
        "L2" => Norm::L2,
        other => {
            return Err(KernelError::attr(
                "norm",
                format!("`{other}` is not MAX, L1 or L2"),
            ))
        }
    };
    Ok(Box::new(Normalizer { norm }))
}

impl Kernel for Normalizer {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        if x.rank() > 2 {
            return Err(KernelError::invalid(format!(
                "X must be [N, C] or [C], got {:?}",
                x.shape()
            )));
        }
        let c = x.shape().last().copied().unwrap_or(1).max(1);
        let mut v: Vec<f32> = x.to_f64_vec()?.into_iter().map(|v| v as f32).collect();
        for row in v.chunks_exact_mut(c) {
            let d = match self.norm {
                Norm::Max => row.iter().copied().fold(f32::MIN, f32::max),
                Norm::L1 => row.iter().map(|v| v.abs()).sum(),
                Norm::L2 => row.iter().map(|v| v * v).sum::<f32>().sqrt(),
            };
            if d != 0.0 {
                row.iter_mut().for_each(|v| *v /= d);
            }
        }
        ctx.put(0, Tensor::from_vec(x.shape(), v)?)
    }
}

struct Imputer {
    floats: Vec<f32>,
    ints: Vec<i64>,
    replaced_float: f32,
    replaced_int: i64,
}

pub(crate) fn imputer(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let floats = init
        .floats_opt("imputed_value_floats")?
        .unwrap_or(&[])
        .to_vec();
    let ints = init.ints_or_empty("imputed_value_int64s")?;
    if floats.is_empty() == ints.is_empty() {
        return Err(KernelError::attr(
            "imputed_value_floats",
            "exactly one of imputed_value_floats and imputed_value_int64s must be set",
        ));
    }
    Ok(Box::new(Imputer {
        floats,
        ints,
        replaced_float: init.float_or("replaced_value_float", 0.0)?,
        replaced_int: init.int_or("replaced_value_int64", 0)?,
    }))
}

impl Kernel for Imputer {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let f = x.shape().last().copied().unwrap_or(1).max(1);
        match x.dtype() {
            DType::Float | DType::Double => {
                if self.floats.is_empty() {
                    return Err(KernelError::invalid(
                        "a float input needs imputed_value_floats",
                    ));
                }
                check_per_feature("imputed_value_floats", &self.floats, f)?;
                let r = self.replaced_float;
                let out: Vec<f64> = x
                    .to_f64_vec()?
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let hit = if r.is_nan() {
                            v.is_nan()
                        } else {
                            v as f32 == r
                        };
                        if hit {
                            per_feature(&self.floats, i % f) as f64
                        } else {
                            v
                        }
                    })
                    .collect();
                if x.dtype() == DType::Float {
                    ctx.put(
                        0,
                        Tensor::from_vec(
                            x.shape(),
                            out.into_iter().map(|v| v as f32).collect::<Vec<_>>(),
                        )?,
                    )
                } else {
                    ctx.put(0, Tensor::from_vec(x.shape(), out)?)
                }
            }
            DType::Int64 | DType::Int32 => {
                if self.ints.is_empty() || (self.ints.len() != 1 && self.ints.len() != f) {
                    return Err(KernelError::invalid(format!(
                        "imputed_value_int64s has {} values; X has {f} features",
                        self.ints.len()
                    )));
                }
                let out: Vec<i64> = x
                    .to_i64_vec()?
                    .into_iter()
                    .enumerate()
                    .map(|(i, v)| {
                        if v == self.replaced_int {
                            self.ints[if self.ints.len() == 1 { 0 } else { i % f }]
                        } else {
                            v
                        }
                    })
                    .collect();
                if x.dtype() == DType::Int64 {
                    ctx.put(0, Tensor::from_vec(x.shape(), out)?)
                } else {
                    ctx.put(
                        0,
                        Tensor::from_vec(
                            x.shape(),
                            out.into_iter().map(|v| v as i32).collect::<Vec<_>>(),
                        )?,
                    )
                }
            }
            other => Err(KernelError::unsupported(format!("X of type {other}"))),
        }
    }
}

/// String or integer categories and their index.
enum Cats {
    Ints(HashMap<i64, usize>),
    Strings(HashMap<String, usize>),
}

struct OneHotEncoder {
    cats: Cats,
    count: usize,
    zeros: bool,
}

pub(crate) fn one_hot_encoder(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let (cats, count) = match (
        init.strings_opt("cats_strings")?,
        init.ints_opt("cats_int64s")?,
    ) {
        (Some(s), _) if !s.is_empty() => (
            Cats::Strings(s.iter().enumerate().map(|(i, s)| (s.clone(), i)).collect()),
            s.len(),
        ),
        (_, Some(v)) if !v.is_empty() => (
            Cats::Ints(v.iter().enumerate().map(|(i, &v)| (v, i)).collect()),
            v.len(),
        ),
        _ => {
            return Err(KernelError::attr(
                "cats_int64s",
                "one of cats_strings and cats_int64s must be set",
            ))
        }
    };
    Ok(Box::new(OneHotEncoder {
        cats,
        count,
        zeros: init.int_or("zeros", 1)? != 0,
    }))
}

impl Kernel for OneHotEncoder {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let idx: Vec<Option<usize>> = match (&self.cats, x.dtype()) {
            (Cats::Strings(m), DType::String) => {
                x.as_strings()?.iter().map(|s| m.get(s).copied()).collect()
            }
            (Cats::Ints(m), dt) if dt != DType::String => x
                .to_f64_vec()?
                .into_iter()
                .map(|v| m.get(&(v as i64)).copied())
                .collect(),
            (_, dt) => {
                return Err(KernelError::invalid(format!(
                    "X of type {dt} does not match the categories' type"
                )))
            }
        };
        let mut out = vec![0f32; idx.len() * self.count];
        for (i, k) in idx.iter().enumerate() {
            match k {
                Some(k) => out[i * self.count + k] = 1.0,
                None if !self.zeros => {
                    return Err(KernelError::invalid(format!(
                        "element {i} is not a known category (zeros = 0)"
                    )))
                }
                None => {}
            }
        }
        let mut shape = x.shape().to_vec();
        shape.push(self.count);
        ctx.put(0, Tensor::from_vec(&shape, out)?)
    }
}

struct FeatureVectorizer {
    dims: Vec<usize>,
}

pub(crate) fn feature_vectorizer(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let dims = init
        .ints_or_empty("inputdimensions")?
        .iter()
        .map(|&d| {
            usize::try_from(d).map_err(|_| KernelError::attr("inputdimensions", format!("{d} < 0")))
        })
        .collect::<KernelResult<Vec<_>>>()?;
    Ok(Box::new(FeatureVectorizer { dims }))
}

impl Kernel for FeatureVectorizer {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        if ctx.input_count() != self.dims.len() {
            return Err(KernelError::attr(
                "inputdimensions",
                format!(
                    "has {} values for {} inputs",
                    self.dims.len(),
                    ctx.input_count()
                ),
            ));
        }
        let first = ctx.input(0)?;
        let n = if first.rank() <= 1 {
            1
        } else {
            first.shape()[0]
        };
        let total: usize = self.dims.iter().sum();
        let mut out = vec![0f32; n * total];
        let mut at = 0;
        for (i, &d) in self.dims.iter().enumerate() {
            let t = ctx.input(i)?;
            let rows = if t.rank() <= 1 { 1 } else { t.shape()[0] };
            if rows != n {
                return Err(KernelError::invalid(format!(
                    "input {i} has {rows} rows; input 0 has {n}"
                )));
            }
            let v = t.to_f64_vec()?;
            let w = v.len() / rows.max(1);
            for r in 0..n {
                for j in 0..d.min(w) {
                    out[r * total + at + j] = v[r * w + j] as f32;
                }
            }
            at += d;
        }
        ctx.put(0, Tensor::from_vec(&[n, total], out)?)
    }
}

struct CategoryMapper {
    to_int: HashMap<String, i64>,
    to_string: HashMap<i64, String>,
    default_int: i64,
    default_string: String,
}

pub(crate) fn category_mapper(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let s = init.strings_opt("cats_strings")?.unwrap_or(&[]);
    let i = init.ints_or_empty("cats_int64s")?;
    if s.len() != i.len() {
        return Err(KernelError::attr(
            "cats_int64s",
            format!("has {} values; cats_strings has {}", i.len(), s.len()),
        ));
    }
    Ok(Box::new(CategoryMapper {
        to_int: s.iter().cloned().zip(i.iter().copied()).collect(),
        to_string: i.iter().copied().zip(s.iter().cloned()).collect(),
        default_int: init.int_or("default_int64", -1)?,
        default_string: init.str_or("default_string", "_Unused")?.to_string(),
    }))
}

impl Kernel for CategoryMapper {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        if x.dtype() == DType::String {
            let out: Vec<i64> = x
                .as_strings()?
                .iter()
                .map(|s| self.to_int.get(s).copied().unwrap_or(self.default_int))
                .collect();
            ctx.put(0, Tensor::from_vec(x.shape(), out)?)
        } else {
            let out: Vec<String> = x
                .to_i64_vec()?
                .iter()
                .map(|v| {
                    self.to_string
                        .get(v)
                        .cloned()
                        .unwrap_or_else(|| self.default_string.clone())
                })
                .collect();
            ctx.put(0, Tensor::from_strings(x.shape(), out)?)
        }
    }
}
