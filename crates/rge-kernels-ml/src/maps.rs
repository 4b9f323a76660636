//! The map ops: ZipMap (class scores → one label → score map per row), DictVectorizer (a map →
//! its values at a vocabulary's positions) and CastMap (an int64-keyed map → a dense or sparse
//! row, cast), with onnxruntime's semantics where the spec leaves room.

use rge_kernels::{
    DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult, MapValue, Tensor, TensorData,
    TensorRef, Value, ValueRef,
};

use crate::labels::Labels;

/// The map input 0, or an error naming the kind found.
fn map_input<'a>(ctx: &KernelCtx<'a>) -> KernelResult<&'a MapValue> {
    match ctx.value(0) {
        Some(ValueRef::Map(m)) => Ok(m),
        Some(other) => Err(KernelError::invalid(format!(
            "X must be a map, got a {}",
            other.kind()
        ))),
        None => Err(KernelError::invalid("X is missing")),
    }
}

/// Labels from `ints`/`strings`: exactly one set and not empty.
fn labels(init: &KernelInit<'_>, ints: &str, strings: &str) -> KernelResult<Labels> {
    let i = init.ints_opt(ints)?.filter(|v| !v.is_empty());
    let s = init.strings_opt(strings)?.filter(|v| !v.is_empty());
    match (i, s) {
        (Some(i), None) => Ok(Labels::Ints(i.to_vec())),
        (None, Some(s)) => Ok(Labels::Strings(s.to_vec())),
        (Some(_), Some(_)) => Err(KernelError::attr(
            ints,
            format!("only one of {ints}, {strings} may be set"),
        )),
        (None, None) => Err(KernelError::attr(
            ints,
            format!("one of {ints}, {strings} must be set (and not empty)"),
        )),
    }
}

impl Labels {
    /// The labels as a 1-D key tensor.
    fn keys(&self) -> KernelResult<Tensor> {
        match self {
            Labels::Ints(v) => Tensor::from_vec(&[v.len()], v.clone()),
            Labels::Strings(v) => Tensor::from_strings(&[v.len()], v.clone()),
        }
    }
}

struct ZipMap {
    labels: Labels,
    keys: Tensor,
}

pub(crate) fn zip_map(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let labels = labels(init, "classlabels_int64s", "classlabels_strings")?;
    let keys = labels.keys()?;
    Ok(Box::new(ZipMap { labels, keys }))
}

impl Kernel for ZipMap {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let c = self.labels.len();
        let cols = match *x.shape() {
            [f] | [_, f] => f,
            ref s => {
                return Err(KernelError::invalid(format!(
                    "X must be [N, C] or [C], got {s:?}"
                )))
            }
        };
        if cols != c {
            return Err(KernelError::invalid(format!(
                "X has {cols} columns but there are {c} class labels"
            )));
        }
        let scores = x.as_slice::<f32>()?;
        let items = scores
            .chunks_exact(c.max(1))
            .map(|row| MapValue::new(self.keys.clone(), Tensor::from_vec(&[c], row.to_vec())?))
            .collect::<KernelResult<Vec<_>>>()?;
        ctx.put(
            0,
            Value::MapSequence {
                key: self.keys.dtype(),
                value: DType::Float,
                items,
            },
        )
    }
}

/// A map's entries as (key index in the vocabulary, entry index).
fn positions(m: &MapValue, vocab: &Labels) -> KernelResult<Vec<(usize, usize)>> {
    let mut out = Vec::new();
    match (vocab, m.keys().data()) {
        (Labels::Strings(v), TensorData::Strings(keys)) => {
            let at: std::collections::HashMap<&str, usize> =
                v.iter().enumerate().map(|(i, s)| (s.as_str(), i)).collect();
            for (e, k) in keys.iter().enumerate() {
                if let Some(&i) = at.get(k.as_str()) {
                    out.push((i, e));
                }
            }
        }
        (Labels::Ints(v), _) if m.keys().dtype() == DType::Int64 => {
            let at: std::collections::HashMap<i64, usize> =
                v.iter().enumerate().map(|(i, &k)| (k, i)).collect();
            for (e, k) in m.keys().as_slice::<i64>()?.iter().enumerate() {
                if let Some(&i) = at.get(k) {
                    out.push((i, e));
                }
            }
        }
        _ => {
            return Err(KernelError::invalid(format!(
                "the map's keys are {} but the vocabulary is {}",
                m.keys().dtype(),
                match vocab {
                    Labels::Ints(_) => "int64",
                    Labels::Strings(_) => "string",
                }
            )))
        }
    }
    Ok(out)
}

/// Element `src` of `values` written at `dst` of `out` (both of one dtype; `out` 1-D).
fn scatter(values: TensorRef<'_>, picks: &[(usize, usize)], n: usize) -> KernelResult<Tensor> {
    let shape = [1, n];
    match values.dtype() {
        DType::String => {
            let v = values.as_strings()?;
            let mut out = vec![String::new(); n];
            for &(dst, src) in picks {
                out[dst] = v[src].clone();
            }
            Tensor::from_strings(&shape, out)
        }
        DType::Float => scatter_as(values.as_slice::<f32>()?, picks, &shape),
        DType::Double => scatter_as(values.as_slice::<f64>()?, picks, &shape),
        DType::Int64 => scatter_as(values.as_slice::<i64>()?, picks, &shape),
        other => Err(KernelError::unsupported(format!(
            "map values of type {other} (string, int64, float and double are supported)"
        ))),
    }
}

fn scatter_as<T: rge_kernels::Elem + Default + Copy>(
    v: &[T],
    picks: &[(usize, usize)],
    shape: &[usize; 2],
) -> KernelResult<Tensor> {
    let mut out = vec![T::default(); shape[1]];
    for &(dst, src) in picks {
        out[dst] = v[src];
    }
    Tensor::from_vec(shape, out)
}

struct DictVectorizer {
    vocab: Labels,
}

pub(crate) fn dict_vectorizer(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    Ok(Box::new(DictVectorizer {
        vocab: labels(init, "int64_vocabulary", "string_vocabulary")?,
    }))
}

impl Kernel for DictVectorizer {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let m = map_input(ctx)?;
        let picks = positions(m, &self.vocab)?;
        let y = scatter(m.values().view(), &picks, self.vocab.len())?;
        ctx.put(0, y)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum CastTo {
    Float,
    String,
    Int64,
}

struct CastMap {
    to: CastTo,
    /// `Some(width)` for SPARSE (keys index the row), `None` for DENSE.
    sparse: Option<usize>,
}

pub(crate) fn cast_map(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let to = match init.str_or("cast_to", "TO_FLOAT")? {
        "TO_FLOAT" => CastTo::Float,
        "TO_STRING" => CastTo::String,
        "TO_INT64" => CastTo::Int64,
        other => {
            return Err(KernelError::attr(
                "cast_to",
                format!("`{other}` is not TO_FLOAT, TO_STRING or TO_INT64"),
            ))
        }
    };
    let sparse = match init.str_or("map_form", "DENSE")? {
        "DENSE" => None,
        "SPARSE" => {
            let m = init.int_or("max_map", 1)?;
            // A row of max_map values is allocated: refuse what no map could need.
            let m = usize::try_from(m)
                .ok()
                .filter(|&m| (1..=1 << 30).contains(&m))
                .ok_or_else(|| {
                    KernelError::attr("max_map", format!("must be in 1..=2^30, got {m}"))
                })?;
            Some(m)
        }
        other => {
            return Err(KernelError::attr(
                "map_form",
                format!("`{other}` is not DENSE or SPARSE"),
            ))
        }
    };
    Ok(Box::new(CastMap { to, sparse }))
}

/// A map value as the cast's source: a number or a string.
enum Source<'a> {
    Float(&'a [f32]),
    String(&'a [String]),
}

/// C's `%f` (onnxruntime writes floats with `std::to_string`).
fn c_fixed(v: f32) -> String {
    if v.is_nan() {
        "nan".into()
    } else {
        format!("{:.6}", v as f64)
    }
}

fn parse_float(s: &str) -> KernelResult<f32> {
    s.trim()
        .parse::<f32>()
        .map_err(|_| KernelError::invalid(format!("map value {s:?} is not a number")))
}

impl Kernel for CastMap {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let m = map_input(ctx)?;
        if m.keys().dtype() != DType::Int64 {
            return Err(KernelError::invalid(format!(
                "the map's keys must be int64, got {}",
                m.keys().dtype()
            )));
        }
        let keys = m.keys().as_slice::<i64>()?;
        let src = match m.values().data() {
            TensorData::Strings(s) => Source::String(s),
            _ if m.values().dtype() == DType::Float => Source::Float(m.values().as_slice::<f32>()?),
            _ => {
                return Err(KernelError::invalid(format!(
                    "the map's values must be float or string, got {}",
                    m.values().dtype()
                )))
            }
        };
        // Entries in key order (onnxruntime's maps are ordered), placed densely or at their key.
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by_key(|&i| keys[i]);
        if let Some(&first) = order.first() {
            if self.sparse.is_some() && keys[first] < 0 {
                return Err(KernelError::invalid(format!(
                    "SPARSE maps need keys ≥ 0, got {}",
                    keys[first]
                )));
            }
        }
        let (width, picks): (usize, Vec<(usize, usize)>) = match self.sparse {
            None => (order.len(), order.iter().copied().enumerate().collect()),
            Some(w) => (
                w,
                order
                    .iter()
                    .filter(|&&i| (keys[i] as u64) < w as u64)
                    .map(|&i| (keys[i] as usize, i))
                    .collect(),
            ),
        };
        let shape = [1, width];
        let y = match self.to {
            CastTo::Float => {
                let mut out = vec![0f32; width];
                for &(dst, i) in &picks {
                    out[dst] = match &src {
                        Source::Float(v) => v[i],
                        Source::String(v) => parse_float(&v[i])?,
                    };
                }
                Tensor::from_vec(&shape, out)?
            }
            CastTo::Int64 => {
                let mut out = vec![0i64; width];
                for &(dst, i) in &picks {
                    let f = match &src {
                        Source::Float(v) => v[i],
                        Source::String(v) => parse_float(&v[i])?,
                    };
                    // Truncation toward zero, saturating, as a C cast of an in-range value.
                    out[dst] = f as i64;
                }
                Tensor::from_vec(&shape, out)?
            }
            CastTo::String => {
                // onnxruntime fills a sparse row's gaps with the text "0.f".
                let mut out = vec!["0.f".to_string(); width];
                for &(dst, i) in &picks {
                    out[dst] = match &src {
                        Source::Float(v) => c_fixed(v[i]),
                        Source::String(v) => v[i].clone(),
                    };
                }
                Tensor::from_strings(&shape, out)?
            }
        };
        ctx.put(0, y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_fixed_matches_std_to_string() {
        assert_eq!(c_fixed(-2.25), "-2.250000");
        assert_eq!(c_fixed(1e20), "100000002004087734272.000000");
        assert_eq!(c_fixed(1e-7), "0.000000");
        assert_eq!(c_fixed(f32::NAN), "nan");
        assert_eq!(c_fixed(f32::INFINITY), "inf");
    }
}
