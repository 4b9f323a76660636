//! The additive attention bias of the Attention op: the attention mask (bool or additive,
//! right-aligned broadcast against `(batch, q_heads, q_len, total_len)`, its last dim padded
//! with -inf), the offset-aligned causal mask, the sliding window and the key padding mask
//! from `nonpad_kv_seqlen`.

use rge_kernels::{DType, KernelError, KernelResult, TensorRef};

use crate::common::{read, Acc, Round};

/// A mask read once per call: values in the compute type (bool as 0 / -inf), broadcast
/// strides over (batch, head, query) and its own last dim.
pub struct Mask<F> {
    vals: Vec<F>,
    strides: [usize; 3],
    kv: usize,
}

impl<F: Acc> Mask<F> {
    /// Reads `t` as the mask of a `(batch, heads, q_len, total)` attention.
    pub fn new(
        t: &TensorRef<'_>,
        dims: [usize; 3],
        total: usize,
        round: Round<F>,
    ) -> KernelResult<Self> {
        let shape = t.shape();
        if shape.is_empty() || shape.len() > 4 {
            return Err(KernelError::invalid(format!(
                "attn_mask must have rank 1 to 4, got shape {shape:?}"
            )));
        }
        let kv = shape[shape.len() - 1];
        if kv > total {
            return Err(KernelError::invalid(format!(
                "attn_mask last dim {kv} exceeds the total sequence length {total}"
            )));
        }
        let vals: Vec<F> = match t.dtype() {
            DType::Bool => t
                .as_slice::<bool>()?
                .iter()
                .map(|&b| if b { F::zero() } else { F::neg_infinity() })
                .collect(),
            DType::Float | DType::Double | DType::Float16 | DType::Bfloat16 => {
                read::<F>(t)?.into_iter().map(round).collect()
            }
            _ => t
                .to_f64_vec()?
                .into_iter()
                .map(|v| round(F::of(v)))
                .collect(),
        };
        // Strides of the leading dims aligned to (batch, heads, q_len).
        let lead = &shape[..shape.len() - 1];
        let mut strides = [0usize; 3];
        let mut stride = kv;
        for (k, &d) in lead.iter().enumerate().rev() {
            let target_axis = 3 - (lead.len() - k);
            let want = dims[target_axis];
            if d != 1 && d != want {
                return Err(KernelError::invalid(format!(
                    "attn_mask shape {shape:?} does not broadcast to {:?}",
                    [dims[0], dims[1], dims[2], total]
                )));
            }
            strides[target_axis] = if d == 1 { 0 } else { stride };
            stride *= d;
        }
        Ok(Mask { vals, strides, kv })
    }
}

impl<F> Mask<F> {
    /// The mask row of query `i` of batch `b`, head `h`, when it covers all `total` keys.
    pub fn row_slice(&self, b: usize, h: usize, i: usize, total: usize) -> Option<&[F]> {
        if self.kv != total {
            return None;
        }
        let base = b * self.strides[0] + h * self.strides[1] + i * self.strides[2];
        self.vals.get(base..base + total)
    }
}

/// Everything that decides the bias of one query row.
pub struct BiasSpec<'m, F> {
    pub mask: Option<&'m Mask<F>>,
    pub is_causal: bool,
    pub left: i64,
    pub right: i64,
    /// Per-batch causal / window offset (past length, or nonpad - q_len).
    pub offsets: Vec<i64>,
    /// Per-batch count of valid keys (key padding mask), when given.
    pub nonpad: Option<Vec<i64>>,
    pub round: Round<F>,
}

impl<F: Acc> BiasSpec<'_, F> {
    /// True when nothing masks (all biases are 0).
    pub fn is_trivial(&self) -> bool {
        self.mask.is_none()
            && !self.is_causal
            && self.left < 0
            && self.right < 0
            && self.nonpad.is_none()
    }

    /// The mask alone, when nothing else (causal, window, padding) adds to the bias.
    pub fn mask_only(&self) -> Option<&Mask<F>> {
        let plain = !self.is_causal && self.left < 0 && self.right < 0 && self.nonpad.is_none();
        self.mask.filter(|_| plain)
    }

    /// Fills `row` (length total) with the bias of query `i` of batch `b`, head `h`.
    pub fn row(&self, b: usize, h: usize, i: usize, row: &mut [F]) {
        let ninf = F::neg_infinity();
        let off = self.offsets.get(b).copied().unwrap_or(0);
        let pos = i as i64 + off;
        let limit = self.nonpad.as_ref().map(|n| n.get(b).copied().unwrap_or(0));
        let base = self
            .mask
            .map(|m| b * m.strides[0] + h * m.strides[1] + i * m.strides[2]);
        for (j, slot) in row.iter_mut().enumerate() {
            let mut v = match (self.mask, base) {
                (Some(m), Some(base)) => {
                    if j < m.kv {
                        m.vals.get(base + j).copied().unwrap_or(ninf)
                    } else {
                        ninf
                    }
                }
                _ => F::zero(),
            };
            let jj = j as i64;
            if self.is_causal && jj > pos {
                v = v + ninf;
            }
            let diff = pos - jj;
            if self.left >= 0 && diff > self.left {
                v = v + ninf;
            }
            if self.right >= 0 && -diff > self.right {
                v = v + ninf;
            }
            if limit.is_some_and(|l| jj >= l) {
                v = v + ninf;
            }
            *slot = (self.round)(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::rounder;
    use rge_kernels::Tensor;

    #[test]
    fn mask_broadcast_and_padding() {
        let t = Tensor::from_vec(&[2, 2], vec![true, false, false, true]).unwrap();
        let m = Mask::<f32>::new(&t.view(), [1, 3, 2], 3, rounder(DType::Float)).unwrap();
        let spec = BiasSpec {
            mask: Some(&m),
            is_causal: false,
            left: -1,
            right: -1,
            offsets: vec![0],
            nonpad: None,
            round: rounder(DType::Float),
        };
        let mut row = [0.0f32; 3];
        spec.row(0, 2, 1, &mut row);
        assert_eq!(row, [f32::NEG_INFINITY, 0.0, f32::NEG_INFINITY]);
        let bad = Tensor::from_vec(&[3, 2], vec![true; 6]).unwrap();
        assert!(Mask::<f32>::new(&bad.view(), [1, 3, 2], 3, rounder(DType::Float)).is_err());
        let long = Tensor::from_vec(&[4], vec![true; 4]).unwrap();
        assert!(Mask::<f32>::new(&long.view(), [1, 3, 2], 3, rounder(DType::Float)).is_err());
    }

    #[test]
    fn causal_window_and_padding() {
        let spec = BiasSpec::<f32> {
            mask: None,
            is_causal: true,
            left: 1,
            right: -1,
            offsets: vec![2],
            nonpad: Some(vec![4]),
            round: rounder(DType::Float),
        };
        let mut row = [0.0f32; 5];
        spec.row(0, 0, 1, &mut row);
        let ninf = f32::NEG_INFINITY;
        assert_eq!(row, [ninf, ninf, 0.0, 0.0, ninf]);
    }
}
