//! Dropout. Inference (or ratio 0) is the identity with an all-true mask. Training draws the
//! keep mask as numpy does in the ONNX reference (`RandomState(seed).uniform(0, 1, shape) >=
//! ratio`, MT19937 with 53-bit doubles), so a given seed reproduces the reference exactly.

use std::sync::atomic::{AtomicU64, Ordering};

use rge_kernels::{DType, Kernel, KernelCtx, KernelError, KernelInit, KernelResult};

use crate::util::Real;

/// The MT19937 generator with numpy's legacy integer seeding and `random_sample`.
pub(crate) struct Mt19937 {
    mt: [u32; 624],
    idx: usize,
}

impl Mt19937 {
    pub(crate) fn new(seed: u32) -> Self {
        let mut mt = [0u32; 624];
        mt[0] = seed;
        for i in 1..624 {
            mt[i] = 1812433253u32
                .wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        Mt19937 { mt, idx: 624 }
    }

    fn twist(&mut self) {
        for i in 0..624 {
            let y = (self.mt[i] & 0x8000_0000) | (self.mt[(i + 1) % 624] & 0x7fff_ffff);
            let mut v = self.mt[(i + 397) % 624] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            self.mt[i] = v;
        }
        self.idx = 0;
    }

    pub(crate) fn next_u32(&mut self) -> u32 {
        if self.idx >= 624 {
            self.twist();
        }
        let mut y = self.mt[self.idx];
        self.idx += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// A double in [0, 1) with 53 random bits.
    pub(crate) fn next_f64(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = (self.next_u32() >> 6) as f64;
        (a * 67108864.0 + b) / 9007199254740992.0
    }
}

struct Dropout {
    seed: Option<i64>,
    /// Opset < 12: the ratio attribute; inference unless `is_test` says otherwise (opset < 7).
    attr_ratio: Option<f64>,
    legacy_training: bool,
    mask_type: DType,
}

pub(crate) fn create_dropout(init: &KernelInit<'_>) -> KernelResult<Box<dyn Kernel>> {
    let legacy = init.opset < 12;
    let seed = match init.int_opt("seed") {
        Ok(v) => v,
        Err(_) => init.float_opt("seed")?.map(|f| f as i64),
    };
    Ok(Box::new(Dropout {
        seed,
        attr_ratio: if legacy {
            Some(init.float_or("ratio", 0.5)? as f64)
        } else {
            None
        },
        legacy_training: legacy && init.opset < 7 && init.int_or("is_test", 0)? == 0,
        mask_type: init.output_type(1).unwrap_or(DType::Bool),
    }))
}

static SEED_COUNTER: AtomicU64 = AtomicU64::new(0x5eed);

impl Dropout {
    fn typed<T: Real>(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let x = ctx.input(0)?;
        let (ratio, training) = match self.attr_ratio {
            Some(r) => (r, self.legacy_training),
            None => {
                let r = match ctx.opt_input(1)? {
                    Some(t) => *t
                        .to_f64_vec()?
                        .first()
                        .ok_or_else(|| KernelError::invalid("Dropout: empty ratio"))?,
                    None => 0.5,
                };
                let t = match ctx.opt_input(2)? {
                    Some(t) => t.to_i64_vec()?.first().copied().unwrap_or(0) != 0,
                    None => false,
                };
                (r, t)
            }
        };
        if training && !(0.0..1.0).contains(&ratio) {
            return Err(KernelError::invalid(format!(
                "Dropout: ratio {ratio} outside [0, 1)"
            )));
        }
        let xs = x.as_slice::<T>()?;
        let keep: Option<Vec<bool>> = if training && ratio != 0.0 {
            let seed = self.seed.unwrap_or_else(|| {
                let t = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                (t ^ SEED_COUNTER.fetch_add(0x9e37_79b9, Ordering::Relaxed)) as i64
            });
            let mut rng = Mt19937::new(seed as u32);
            Some((0..xs.len()).map(|_| rng.next_f64() >= ratio).collect())
        } else {
            None
        };
        let y = ctx.output::<T>(0, x.shape())?;
        match &keep {
            None => y.copy_from_slice(xs),
            Some(k) => {
                let scale = 1.0 / (1.0 - ratio);
                for ((o, &v), &kp) in y.iter_mut().zip(xs).zip(k) {
                    *o = if kp {
                        T::from_f64(v.to_f64() * scale)
                    } else {
                        T::from_f64(0.0)
                    };
                }
            }
        }
        if ctx.output_count() > 1 && ctx.output_used(1) {
            let bits = |i: usize| keep.as_ref().is_none_or(|k| k[i]);
            match self.mask_type {
                DType::Bool => {
                    let m = ctx.output::<bool>(1, x.shape())?;
                    m.iter_mut().enumerate().for_each(|(i, o)| *o = bits(i));
                }
                dt => rge_kernels::dispatch_float!(dt, M => {
                    let m = ctx.output::<M>(1, x.shape())?;
                    m.iter_mut().enumerate().for_each(|(i, o)| *o = M::from_f64(if bits(i) { 1.0 } else { 0.0 }));
                    Ok(())
                })?,
            }
        }
        Ok(())
    }
}

impl Kernel for Dropout {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let dt = ctx.input(0)?.dtype();
        rge_kernels::dispatch_float!(dt, T => self.typed::<T>(ctx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpy_mt19937_stream() {
        // numpy: np.random.seed(0); np.random.random_sample(2)
        let mut r = Mt19937::new(0);
        assert!((r.next_f64() - 0.5488135039273248).abs() < 1e-15);
        assert!((r.next_f64() - 0.7151893663724195).abs() < 1e-15);
    }
}
