//! ai.onnx.ml classics: LabelEncoder (1–4), ArrayFeatureExtractor (1), Binarizer (1).

use std::collections::HashMap;

use rge_kernels::{
    DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, Tensor, TensorRef,
};

use crate::util::{put_f64, FromF64};

/// A lookup key: integers, floats (by canonical bits, so NaN finds NaN and -0.0 finds 0.0)
/// or strings.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Int(i64),
    Float(u64),
    Str(String),
}

fn float_key(v: f64) -> Key {
    let v = if v == 0.0 {
        0.0
    } else if v.is_nan() {
        f64::NAN
    } else {
        v
    };
    Key::Float(v.to_bits())
}

fn keys_of(t: &TensorRef<'_>) -> KernelResult<Vec<Key>> {
    Ok(match t.dtype() {
        DType::String => t
            .as_strings()?
            .iter()
            .map(|s| Key::Str(s.clone()))
            .collect(),
        dt if dt.is_float() => t.to_f64_vec()?.into_iter().map(float_key).collect(),
        _ => t.to_i64_vec()?.into_iter().map(Key::Int).collect(),
    })
}

/// The mapped values: strings or a numeric tensor (gathered by element bytes).
enum Values {
    Strings {
        values: Vec<String>,
        default: String,
    },
    Numbers {
        values: Tensor,
        default: Tensor,
    },
}

struct LabelEncoder {
    map: HashMap<Key, usize>,
    values: Values,
}

fn attr_tensor(init: &KernelInit<'_>, name: &str) -> KernelResult<Option<Tensor>> {
    init.tensor_opt(name)
}

pub(crate) fn create_label_encoder(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    if init.opset < 2 {
        return create_label_encoder_v1(init);
    }
    let keys: Vec<Key> = if let Some(k) = init.strings_opt("keys_strings")? {
        k.iter().map(|s| Key::Str(s.clone())).collect()
    } else if let Some(k) = init.ints_opt("keys_int64s")? {
        k.iter().map(|&v| Key::Int(v)).collect()
    } else if let Some(k) = init.floats_opt("keys_floats")? {
        k.iter().map(|&v| float_key(v as f64)).collect()
    } else if let Some(t) = attr_tensor(init, "keys_tensor")? {
        keys_of(&t.view())?
    } else {
        return Err(KernelError::attr("keys_*", "no keys given"));
    };
    let values = if let Some(v) = init.strings_opt("values_strings")? {
        Values::Strings {
            values: v.to_vec(),
            default: init.str_or("default_string", "_Unused")?.to_string(),
        }
    } else if let Some(v) = init.ints_opt("values_int64s")? {
        Values::Numbers {
            values: Tensor::from_slice(&[v.len()], v)?,
            default: Tensor::scalar(init.int_or("default_int64", -1)?),
        }
    } else if let Some(v) = init.floats_opt("values_floats")? {
        Values::Numbers {
            values: Tensor::from_slice(&[v.len()], v)?,
            default: Tensor::scalar(init.float_or("default_float", -0.0)?),
        }
    } else if let Some(t) = attr_tensor(init, "values_tensor")? {
        let default = attr_tensor(init, "default_tensor")?;
        if let Some(d) = &default {
            if d.dtype() != t.dtype() || d.len() != 1 {
                return Err(KernelError::attr(
                    "default_tensor",
                    "must be one element of the values' type",
                ));
            }
        }
        match t.dtype() {
            DType::String => Values::Strings {
                values: t.view().as_strings()?.to_vec(),
                default: match default {
                    Some(d) => d.view().as_strings()?[0].clone(),
                    None => "_Unused".to_string(),
                },
            },
            dt => {
                let default = match default {
                    Some(d) => d,
                    None => default_number(dt)?,
                };
                let n = t.len();
                Values::Numbers {
                    values: t.reshaped(&[n])?,
                    default,
                }
            }
        }
    } else {
        return Err(KernelError::attr("values_*", "no values given"));
    };
    let nvalues = match &values {
        Values::Strings { values, .. } => values.len(),
        Values::Numbers { values, .. } => values.len(),
    };
    if nvalues != keys.len() {
        return Err(KernelError::attr(
            "values_*",
            format!("{} keys but {nvalues} values", keys.len()),
        ));
    }
    let mut map = HashMap::with_capacity(keys.len());
    for (i, k) in keys.into_iter().enumerate() {
        map.insert(k, i);
    }
    Ok(Box::new(LabelEncoder { map, values }))
}

/// The default of a values tensor without `default_tensor`: -1 for integers, -0.0 for floats.
fn default_number(dt: DType) -> KernelResult<Tensor> {
    fn one<T: FromF64>(v: f64) -> Tensor {
        Tensor::scalar(T::from_f64(v))
    }
    let v = if dt.is_float() { -0.0 } else { -1.0 };
    rge_kernels::dispatch_numeric!(dt, T => Ok(one::<T>(v)))
}

/// LabelEncoder-1: strings ↔ int64 through `classes_strings` (the index is the value).
fn create_label_encoder_v1(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let classes = init.strings_opt("classes_strings")?.unwrap_or_default();
    let to_int = init.input_type(0) == Some(DType::String);
    let (map, values) = if to_int {
        let map = classes
            .iter()
            .enumerate()
            .map(|(i, s)| (Key::Str(s.clone()), i))
            .collect();
        let idx: Vec<i64> = (0..classes.len() as i64).collect();
        let values = Values::Numbers {
            values: Tensor::from_slice(&[idx.len()], &idx)?,
            default: Tensor::scalar(init.int_or("default_int64", -1)?),
        };
        (map, values)
    } else {
        let map = (0..classes.len())
            .map(|i| (Key::Int(i as i64), i))
            .collect();
        let values = Values::Strings {
            values: classes.to_vec(),
            default: init.str_or("default_string", "_Unused")?.to_string(),
        };
        (map, values)
    };
    Ok(Box::new(LabelEncoder { map, values }))
}

impl Kernel for LabelEncoder {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let keys = keys_of(&x)?;
        match &self.values {
            Values::Strings { values, default } => {
                let out = keys
                    .iter()
                    .map(|k| match self.map.get(k) {
                        Some(&i) => values[i].clone(),
                        None => default.clone(),
                    })
                    .collect();
                ctx.put(0, Tensor::from_strings(x.shape(), out)?)
            }
            Values::Numbers { values, default } => {
                let dt = values.dtype();
                let size = (dt.bits() / 8) as usize;
                let vb = values.view().bytes()?;
                let db = default.view().bytes()?;
                let out = ctx.output_bytes(0, dt, x.shape())?;
                for (o, k) in out.chunks_exact_mut(size).zip(&keys) {
                    let src = match self.map.get(k) {
                        Some(&i) => &vb[i * size..(i + 1) * size],
                        None => &db[..size],
                    };
                    o.copy_from_slice(src);
                }
                Ok(())
            }
        }
    }
}

struct ArrayFeatureExtractor;

pub(crate) fn create_array_feature_extractor(
    _init: &KernelInit<'_>,
) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(ArrayFeatureExtractor))
}

impl Kernel for ArrayFeatureExtractor {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let idx = ctx.input(1)?.to_i64_vec()?;
        let shape = x.shape();
        let n = *shape.last().unwrap_or(&1);
        let idx: Vec<usize> =
            idx.iter()
                .map(|&i| {
                    usize::try_from(i).ok().filter(|&i| i < n).ok_or_else(|| {
                        KernelError::invalid(format!("index {i} out of range [0, {n})"))
                    })
                })
                .collect::<KernelResult<_>>()?;
        let mut out_shape = if shape.len() <= 1 {
            vec![1]
        } else {
            shape[..shape.len() - 1].to_vec()
        };
        out_shape.push(idx.len());
        let rows = x.len().checked_div(n).unwrap_or(0);
        if x.dtype() == DType::String {
            let s = x.as_strings()?;
            let mut out = Vec::with_capacity(rows * idx.len());
            for r in 0..rows {
                out.extend(idx.iter().map(|&i| s[r * n + i].clone()));
            }
            return ctx.put(0, Tensor::from_strings(&out_shape, out)?);
        }
        let dt = x.dtype();
        if dt.bits() % 8 != 0 {
            return Err(KernelError::unsupported(format!("data type {dt}")));
        }
        let size = (dt.bits() / 8) as usize;
        let src = x.bytes()?;
        let out = ctx.output_bytes(0, dt, &out_shape)?;
        let mut o = 0;
        for r in 0..rows {
            for &i in &idx {
                let at = (r * n + i) * size;
                out[o..o + size].copy_from_slice(&src[at..at + size]);
                o += size;
            }
        }
        Ok(())
    }
}

struct Binarizer {
    threshold: f64,
}

pub(crate) fn create_binarizer(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(Binarizer {
        threshold: init.float_or("threshold", 0.0)? as f64,
    }))
}

impl Kernel for Binarizer {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let out: Vec<f64> = x
            .to_f64_vec()?
            .into_iter()
            .map(|v| if v > self.threshold { 1.0 } else { 0.0 })
            .collect();
        put_f64(ctx, 0, x.dtype(), x.shape(), &out)
    }
}
