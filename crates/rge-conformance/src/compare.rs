//! Comparing values with ONNX Runtime's rule: dtype and shape equal, each element within
//! `atol + rtol·|want|`, NaN equal to NaN, infinities equal when their signs are.

use rge_kernels::{DType, MapValue, Tensor, TensorData, Value};

/// Tolerances of the comparison.
#[derive(Debug, Clone, Copy)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
}

impl Default for Tolerance {
    /// The rule ONNX Runtime's pass count was measured with: rtol 1e-3, atol 1e-5.
    fn default() -> Self {
        Tolerance {
            rtol: 1e-3,
            atol: 1e-5,
        }
    }
}

fn as_f64s(t: &Tensor) -> Option<Vec<f64>> {
    t.view().to_f64_vec().ok()
}

fn close(got: f64, want: f64, tol: Tolerance) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() || got.is_infinite() {
        return want == got;
    }
    (got - want).abs() <= tol.atol + tol.rtol * want.abs()
}

/// Compares two tensors; the error says where they differ.
pub fn compare_tensors(want: &Tensor, got: &Tensor, tol: Tolerance) -> Result<(), String> {
    if want.dtype() != got.dtype() {
        return Err(format!("dtype {}, expected {}", got.dtype(), want.dtype()));
    }
    if want.shape() != got.shape() {
        return Err(format!(
            "shape {:?}, expected {:?}",
            got.shape(),
            want.shape()
        ));
    }
    match (want.data(), got.data()) {
        (TensorData::Strings(w), TensorData::Strings(g)) => {
            if let Some(i) = (0..w.len()).find(|&i| w[i] != g[i]) {
                return Err(format!("element {i}: {:?}, expected {:?}", g[i], w[i]));
            }
            Ok(())
        }
        (TensorData::Bytes(wb), TensorData::Bytes(gb)) => {
            let numeric = matches!(
                want.dtype(),
                DType::Float | DType::Double | DType::Float16 | DType::Bfloat16
            );
            if numeric {
                let (w, g) = (
                    as_f64s(want).unwrap_or_default(),
                    as_f64s(got).unwrap_or_default(),
                );
                if let Some(i) = (0..w.len()).find(|&i| !close(g[i], w[i], tol)) {
                    return Err(format!("element {i}: {}, expected {}", g[i], w[i]));
                }
                return Ok(());
            }
            // Integers, bools and the packed / 8-bit float types compare exactly.
            if wb != gb {
                let i = (0..wb.len())
                    .find(|&i| wb.as_slice()[i] != gb.as_slice()[i])
                    .unwrap_or(0);
                return Err(format!(
                    "byte {i}: {:#04x}, expected {:#04x}",
                    gb.as_slice().get(i).copied().unwrap_or(0),
                    wb.as_slice().get(i).copied().unwrap_or(0)
                ));
            }
            Ok(())
        }
        _ => Err("string tensor compared with a numeric one".into()),
    }
}

/// Compares two values of any kind.
pub fn compare_values(want: &Value, got: &Value, tol: Tolerance) -> Result<(), String> {
    match (want, got) {
        (Value::Tensor(w), Value::Tensor(g)) => compare_tensors(w, g, tol),
        (Value::Sequence { items: w, .. }, Value::Sequence { items: g, .. }) => {
            if w.len() != g.len() {
                return Err(format!("sequence of {}, expected {}", g.len(), w.len()));
            }
            for (i, (w, g)) in w.iter().zip(g).enumerate() {
                compare_tensors(w, g, tol).map_err(|e| format!("item {i}: {e}"))?;
            }
            Ok(())
        }
        (Value::Optional(w), Value::Optional(g)) => match (w, g) {
            (None, None) => Ok(()),
            (Some(w), Some(g)) => compare_values(w, g, tol),
            (None, Some(_)) => Err("optional has a value, expected none".into()),
            (Some(_), None) => Err("optional is empty, expected a value".into()),
        },
        (Value::Map(w), Value::Map(g)) => compare_maps(w, g, tol),
        (Value::MapSequence { items: w, .. }, Value::MapSequence { items: g, .. }) => {
            if w.len() != g.len() {
                return Err(format!(
                    "sequence of {} maps, expected {}",
                    g.len(),
                    w.len()
                ));
            }
            for (i, (w, g)) in w.iter().zip(g).enumerate() {
                compare_maps(w, g, tol).map_err(|e| format!("map {i}: {e}"))?;
            }
            Ok(())
        }
        _ => Err(format!("got a {}, expected a {}", got.kind(), want.kind())),
    }
}

/// Two maps are equal when they hold the same keys (in any order) with values within the
/// tolerance.
fn compare_maps(want: &MapValue, got: &MapValue, tol: Tolerance) -> Result<(), String> {
    let order = |m: &MapValue| -> Result<Vec<usize>, String> {
        let mut idx: Vec<usize> = (0..m.len()).collect();
        match m.keys().data() {
            TensorData::Strings(k) => idx.sort_by(|&a, &b| k[a].cmp(&k[b])),
            _ => {
                let k = m.keys().as_slice::<i64>().map_err(|e| e.to_string())?;
                idx.sort_by_key(|&i| k[i]);
            }
        }
        Ok(idx)
    };
    let sorted = |m: &MapValue| -> Result<(Tensor, Tensor), String> {
        let idx = order(m)?;
        let pick = |t: &Tensor| -> Result<Tensor, String> {
            let t = t.view();
            match t.as_strings() {
                Ok(s) => {
                    Tensor::from_strings(&[idx.len()], idx.iter().map(|&i| s[i].clone()).collect())
                }
                Err(_) => {
                    let w = t.dtype().bytes_for(1);
                    let b = t.bytes().map_err(|e| e.to_string())?;
                    let bytes: Vec<u8> = idx
                        .iter()
                        .flat_map(|&i| b[i * w..(i + 1) * w].to_vec())
                        .collect();
                    Tensor::from_bytes(t.dtype(), &[idx.len()], &bytes)
                }
            }
            .map_err(|e| e.to_string())
        };
        Ok((pick(m.keys())?, pick(m.values())?))
    };
    let (wk, wv) = sorted(want)?;
    let (gk, gv) = sorted(got)?;
    compare_tensors(&wk, &gk, tol).map_err(|e| format!("keys: {e}"))?;
    compare_tensors(&wv, &gv, tol).map_err(|e| format!("values: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule() {
        let t = Tolerance::default();
        let a = Tensor::from_vec(&[3], vec![1.0f32, f32::NAN, 100.0]).unwrap();
        let b = Tensor::from_vec(&[3], vec![1.000001f32, f32::NAN, 100.05]).unwrap();
        assert!(compare_tensors(&a, &b, t).is_ok());
        let c = Tensor::from_vec(&[3], vec![1.1f32, f32::NAN, 100.0]).unwrap();
        assert!(compare_tensors(&a, &c, t)
            .unwrap_err()
            .contains("element 0"));
        let d = Tensor::from_vec(&[3], vec![1i64, 2, 3]).unwrap();
        assert!(compare_tensors(&a, &d, t).unwrap_err().contains("dtype"));
    }
}
