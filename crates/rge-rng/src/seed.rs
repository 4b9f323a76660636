//! The `seed` attribute: an integer (Dropout's is an int attribute; RandomUniform's, Bernoulli's
//! and Multinomial's are floats that must hold an integer value). Anything else is an error
//! naming the attribute, never a silently truncated seed.

use rge_ir::{AttrMap, AttrValue};
use rge_kernels::{KernelError, KernelResult};

/// The largest float seed taken: every integer up to 2^53 is exact in f64 (f32 attributes
/// are exact up to 2^24; larger ones are still integers, just sparse).
const MAX_FLOAT_SEED: f64 = 9_007_199_254_740_992.0;

/// The op's seed: `None` when absent, the integer otherwise.
pub fn seed_attr(attrs: &AttrMap) -> KernelResult<Option<i64>> {
    match attrs.get("seed") {
        None => Ok(None),
        Some(AttrValue::Int(v)) => Ok(Some(*v)),
        Some(AttrValue::Float(f)) => {
            let f = f64::from(*f);
            if !f.is_finite() || f.fract() != 0.0 || f.abs() > MAX_FLOAT_SEED {
                return Err(KernelError::attr(
                    "seed",
                    format!("{f} is not an integer (a seed must be a whole number)"),
                ));
            }
            Ok(Some(f as i64))
        }
        Some(other) => Err(KernelError::attr(
            "seed",
            format!("must be an int or an integer-valued float, got {other:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(v: AttrValue) -> AttrMap {
        let mut m = AttrMap::default();
        m.set("seed", v);
        m
    }

    #[test]
    fn integers_and_integer_floats_pass_others_fail() {
        assert_eq!(seed_attr(&AttrMap::default()).unwrap(), None);
        assert_eq!(seed_attr(&with(AttrValue::Int(-3))).unwrap(), Some(-3));
        assert_eq!(seed_attr(&with(AttrValue::Float(7.0))).unwrap(), Some(7));
        for bad in [1.5f32, f32::NAN, f32::INFINITY, 1e30] {
            let e = seed_attr(&with(AttrValue::Float(bad))).unwrap_err();
            assert!(e.to_string().contains("seed"), "{e}");
        }
        assert!(seed_attr(&with(AttrValue::String("1".into()))).is_err());
    }
}
