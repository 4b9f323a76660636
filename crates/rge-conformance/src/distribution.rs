//! Tests compared by distribution. Some node tests store one draw of numpy's generator as the
//! expected output (Bernoulli, training-mode Dropout); ONNX does not specify the generator, so
//! an implementation with its own stream cannot match element by element. Those tests are
//! listed (`conformance/compared_by_distribution.txt`: test name, rule) and checked by what
//! the op guarantees instead: dtype and shape as expected, every element a value the op can
//! produce from its input, and the count of ones (kept elements) within 4 standard deviations
//! (+1) of its binomial mean.

use rge_kernels::{Tensor, Value};

/// How a listed test is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DistRule {
    /// Output 0 is Bernoulli(p) of input 0.
    Bernoulli,
    /// Dropout(x, ratio, training_mode): output 0 is 0 or x/(1−ratio), output 1 (when
    /// present) the keep mask.
    Dropout,
}

impl DistRule {
    pub fn parse(s: &str) -> Option<DistRule> {
        match s {
            "bernoulli" => Some(DistRule::Bernoulli),
            "dropout" => Some(DistRule::Dropout),
            _ => None,
        }
    }
}

/// (test name, rule) of each line `NAME RULE  # reason`; a bad rule is an error naming it.
pub fn parse_rules(text: &str) -> Result<Vec<(String, DistRule)>, String> {
    let mut v = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut w = line.split_whitespace();
        let (Some(name), Some(rule), None) = (w.next(), w.next(), w.next()) else {
            return Err(format!(
                "line {}: expected `TEST RULE`, got `{line}`",
                n + 1
            ));
        };
        let r = DistRule::parse(rule)
            .ok_or_else(|| format!("line {}: unknown rule `{rule}` (bernoulli, dropout)", n + 1))?;
        v.push((name.to_string(), r));
    }
    Ok(v)
}

fn tensor<'a>(v: &'a Value, what: &str) -> Result<&'a Tensor, String> {
    v.as_tensor()
        .ok_or_else(|| format!("{what} is not a tensor"))
}

fn floats(t: &Tensor, what: &str) -> Result<Vec<f64>, String> {
    t.view().to_f64_vec().map_err(|e| format!("{what}: {e}"))
}

fn same_kind(want: &Tensor, got: &Tensor) -> Result<(), String> {
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
    Ok(())
}

/// |count − mean| ≤ 4σ + 1 for a sum of Bernoulli(p_i).
fn plausible_count(count: usize, ps: impl Iterator<Item = f64>) -> Result<(), String> {
    let (mut mean, mut var) = (0.0, 0.0);
    for p in ps {
        mean += p;
        var += p * (1.0 - p);
    }
    let dev = (count as f64 - mean).abs();
    if dev > 4.0 * var.sqrt() + 1.0 {
        return Err(format!(
            "{count} ones, expected {mean:.1} ± {:.1} (4σ)",
            4.0 * var.sqrt()
        ));
    }
    Ok(())
}

/// Compares one data set's outputs by `rule`.
pub fn compare_by_distribution(
    rule: DistRule,
    inputs: &[Value],
    want: &[Value],
    got: &[Value],
) -> Result<(), String> {
    if want.len() != got.len() {
        return Err(format!("{} outputs, expected {}", got.len(), want.len()));
    }
    let x = floats(
        tensor(inputs.first().ok_or("no input")?, "input 0")?,
        "input 0",
    )?;
    let (w0, g0) = (
        tensor(&want[0], "expected output 0")?,
        tensor(&got[0], "output 0")?,
    );
    same_kind(w0, g0).map_err(|e| format!("output 0: {e}"))?;
    let y = floats(g0, "output 0")?;
    match rule {
        DistRule::Bernoulli => {
            for (i, (&p, &v)) in x.iter().zip(&y).enumerate() {
                let ok =
                    (v == 0.0 || v == 1.0) && !(p == 0.0 && v != 0.0) && !(p == 1.0 && v != 1.0);
                if !ok {
                    return Err(format!("element {i}: {v} for probability {p}"));
                }
            }
            let ones = y.iter().filter(|&&v| v == 1.0).count();
            plausible_count(ones, x.iter().copied()).map_err(|e| format!("output 0: {e}"))
        }
        DistRule::Dropout => {
            let scalar = |k: usize, default: f64| -> Result<f64, String> {
                match inputs.get(k) {
                    Some(v) => floats(tensor(v, "input")?, "input")?
                        .first()
                        .copied()
                        .ok_or_else(|| format!("input {k} is empty")),
                    None => Ok(default),
                }
            };
            let ratio = scalar(1, 0.5)?;
            let training = scalar(2, 0.0)? != 0.0;
            if !training || ratio == 0.0 {
                return crate::compare::compare_values(&want[0], &got[0], Default::default());
            }
            let scale = 1.0 / (1.0 - ratio);
            let mut kept = vec![false; x.len()];
            for (i, (&xv, &v)) in x.iter().zip(&y).enumerate() {
                let k = xv * scale;
                if (v - k).abs() <= 1e-5 + 1e-3 * k.abs() {
                    kept[i] = true;
                } else if v != 0.0 {
                    return Err(format!("element {i}: {v}, expected 0 or {k}"));
                }
            }
            if let (Some(wm), Some(gm)) = (want.get(1), got.get(1)) {
                let (wm, gm) = (tensor(wm, "expected mask")?, tensor(gm, "mask")?);
                same_kind(wm, gm).map_err(|e| format!("mask: {e}"))?;
                let m = floats(gm, "mask")?;
                for (i, &mv) in m.iter().enumerate() {
                    let on = mv != 0.0;
                    // An element of x = 0 reads as kept or dropped; the mask decides.
                    if on != kept[i] && x[i] != 0.0 {
                        return Err(format!("mask element {i} is {on}, output {}", y[i]));
                    }
                    kept[i] = on;
                }
            }
            let n = kept.iter().filter(|&&k| k).count();
            plausible_count(n, x.iter().map(|_| 1.0 - ratio)).map_err(|e| format!("kept: {e}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f32>) -> Value {
        Value::from(Tensor::from_vec(&[v.len()], v).unwrap())
    }

    #[test]
    fn bernoulli_rule_accepts_plausible_draws_and_rejects_others() {
        let p = t(vec![0.5; 100]);
        let want = vec![t(vec![0.0; 100])];
        let half: Vec<f32> = (0..100).map(|i| (i % 2) as f32).collect();
        compare_by_distribution(
            DistRule::Bernoulli,
            std::slice::from_ref(&p),
            &want,
            &[t(half)],
        )
        .unwrap();
        // All ones from p = 0.5: 50 away from the mean, σ = 5.
        let e = compare_by_distribution(
            DistRule::Bernoulli,
            std::slice::from_ref(&p),
            &want,
            &[t(vec![1.0; 100])],
        )
        .unwrap_err();
        assert!(e.contains("ones"), "{e}");
        let mut bad: Vec<f32> = (0..100).map(|i| (i % 2) as f32).collect();
        bad[3] = 0.5;
        assert!(compare_by_distribution(DistRule::Bernoulli, &[p], &want, &[t(bad)]).is_err());
        // Certain probabilities must be met exactly.
        let e = compare_by_distribution(
            DistRule::Bernoulli,
            &[t(vec![0.0])],
            &[t(vec![0.0])],
            &[t(vec![1.0])],
        );
        assert!(e.is_err());
    }

    #[test]
    fn dropout_rule_checks_values_and_the_kept_fraction() {
        let x = t((1..=200).map(|i| i as f32).collect());
        let r = Value::from(Tensor::from_vec(&[], vec![0.5f32]).unwrap());
        let on = Value::from(Tensor::from_vec(&[], vec![true]).unwrap());
        let want = vec![t(vec![0.0; 200])];
        let good: Vec<f32> = (1..=200)
            .map(|i| if i % 2 == 0 { 2.0 * i as f32 } else { 0.0 })
            .collect();
        let ins = [x.clone(), r, on];
        compare_by_distribution(DistRule::Dropout, &ins, &want, &[t(good.clone())]).unwrap();
        let mut unscaled = good.clone();
        unscaled[1] = 2.0;
        assert!(compare_by_distribution(DistRule::Dropout, &ins, &want, &[t(unscaled)]).is_err());
        let all: Vec<f32> = (1..=200).map(|i| 2.0 * i as f32).collect();
        assert!(compare_by_distribution(DistRule::Dropout, &ins, &want, &[t(all)]).is_err());
    }

    #[test]
    fn rules_file_parses_and_names_bad_lines() {
        let r = parse_rules("# c\ntest_a bernoulli # why\n\ntest_b dropout\n").unwrap();
        assert_eq!(
            r,
            vec![
                ("test_a".into(), DistRule::Bernoulli),
                ("test_b".into(), DistRule::Dropout)
            ]
        );
        assert!(parse_rules("test_a normal\n")
            .unwrap_err()
            .contains("line 1"));
    }
}
