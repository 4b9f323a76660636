//! A keyed Philox stream and the values drawn from it. Element `i` of a stream uses Philox
//! block `i / 2` (counter = block index, lane word 2 = the stream's purpose) and its word pair
//! `i % 2`: a 53-bit uniform double from two words; a normal pair from one block by Box–Muller.
//! Nothing depends on the order elements are drawn in.

use crate::philox::philox4x32_10;

/// SplitMix64's finalizer: a well-mixed 64-bit value of `x`.
pub fn mix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// FNV-1a of a node name (a stable, per-node distinct value).
fn name_hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// How an op keys its stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamKey {
    /// A seeded op: the seed alone decides the values.
    Seeded(i64),
    /// An unseeded op: the run's key and the node's name decide them.
    Unseeded { node_hash: u64 },
}

impl StreamKey {
    /// The key of an op with `seed` (or none) at node `node`.
    pub fn new(seed: Option<i64>, node: &str) -> Self {
        match seed {
            Some(s) => StreamKey::Seeded(s),
            None => StreamKey::Unseeded {
                node_hash: name_hash(node),
            },
        }
    }

    /// The stream of one call, given the run's key.
    pub fn stream(&self, run_key: u64) -> Stream {
        match self {
            StreamKey::Seeded(s) => Stream::new(mix64(*s as u64)),
            StreamKey::Unseeded { node_hash } => {
                Stream::new(mix64(run_key ^ mix64(*node_hash ^ 0xD5A6_1266_F0C9_392C)))
            }
        }
    }
}

/// A counter-based stream under one 64-bit key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stream {
    key: [u32; 2],
}

/// Counter word 2 of uniform draws.
const UNIFORM: u32 = 0;
/// Counter word 2 of normal draws (a separate sub-stream: a normal and a uniform op with the
/// same seed do not share blocks).
const NORMAL: u32 = 1;

impl Stream {
    pub fn new(key: u64) -> Self {
        Stream {
            key: [key as u32, (key >> 32) as u32],
        }
    }

    #[inline]
    fn block(&self, index: u64, purpose: u32) -> [u32; 4] {
        philox4x32_10([index as u32, (index >> 32) as u32, purpose, 0], self.key)
    }

    /// Element `i`: uniform in [0, 1), 53 random bits.
    #[inline]
    pub fn uniform(&self, i: u64) -> f64 {
        let b = self.block(i >> 1, UNIFORM);
        let (hi, lo) = if i & 1 == 0 {
            (b[0], b[1])
        } else {
            (b[2], b[3])
        };
        let bits = ((u64::from(hi) << 32) | u64::from(lo)) >> 11;
        bits as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// Element `i`: standard normal (Box–Muller over one block: elements 2j and 2j+1 are the
    /// cosine and sine of the same pair).
    #[inline]
    pub fn normal(&self, i: u64) -> f64 {
        let b = self.block(i >> 1, NORMAL);
        let u = |hi: u32, lo: u32| {
            (((u64::from(hi) << 32) | u64::from(lo)) >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
        };
        let u1 = 1.0 - u(b[0], b[1]); // (0, 1]: ln is finite
        let u2 = u(b[2], b[3]);
        let r = (-2.0 * u1.ln()).sqrt();
        let t = std::f64::consts::TAU * u2;
        if i & 1 == 0 {
            r * t.cos()
        } else {
            r * t.sin()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_keys_ignore_the_run_and_unseeded_use_it() {
        let s = StreamKey::new(Some(5), "a");
        assert_eq!(s.stream(1), s.stream(2));
        assert_eq!(s.stream(1), StreamKey::new(Some(5), "b").stream(9));
        let u = StreamKey::new(None, "a");
        assert_ne!(u.stream(1), u.stream(2));
        assert_ne!(u.stream(1), StreamKey::new(None, "b").stream(1));
        assert_ne!(
            StreamKey::new(Some(5), "a").stream(0),
            StreamKey::new(Some(6), "a").stream(0)
        );
    }

    #[test]
    fn values_are_in_range_and_order_free() {
        let s = Stream::new(42);
        for i in 0..10_000 {
            let u = s.uniform(i);
            assert!((0.0..1.0).contains(&u));
            assert!(s.normal(i).is_finite());
        }
        // Drawing backwards gives the same elements.
        let fwd: Vec<f64> = (0..100).map(|i| s.uniform(i)).collect();
        let bwd: Vec<f64> = (0..100).rev().map(|i| s.uniform(i)).collect();
        assert!(fwd.iter().eq(bwd.iter().rev()));
    }
}
