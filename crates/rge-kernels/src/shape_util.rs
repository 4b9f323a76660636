//! Shape helpers shared by kernels: broadcasting and axis normalization.

use crate::error::{KernelError, KernelResult};

/// Ranks up to which a [`ShapeVec`] keeps its values inline (no heap allocation).
pub const INLINE_RANK: usize = 6;

/// Dims, strides or indices computed per kernel call: inline up to [`INLINE_RANK`] values.
pub type ShapeVec = smallvec::SmallVec<[usize; INLINE_RANK]>;

/// The numpy-style broadcast of several shapes (no heap allocation up to [`INLINE_RANK`]).
pub fn broadcast_shapes(shapes: &[&[usize]]) -> KernelResult<ShapeVec> {
    let rank = shapes.iter().map(|s| s.len()).max().unwrap_or(0);
    let mut out = ShapeVec::from_elem(1, rank);
    for s in shapes {
        let off = rank - s.len();
        for (i, &d) in s.iter().enumerate() {
            let o = &mut out[off + i];
            if *o == 1 {
                *o = d;
            } else if d != 1 && d != *o {
                return Err(KernelError::invalid(format!(
                    "shapes {shapes:?} cannot be broadcast together"
                )));
            }
        }
    }
    Ok(out)
}

/// Row-major strides (in elements) of `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Strides of `shape` read as if broadcast to `out` (0 along broadcast dims).
pub fn broadcast_strides(shape: &[usize], out: &[usize]) -> Vec<usize> {
    let own = strides(shape);
    let off = out.len() - shape.len();
    (0..out.len())
        .map(|i| {
            if i < off || shape[i - off] == 1 {
                0
            } else {
                own[i - off]
            }
        })
        .collect()
}

/// Normalizes an ONNX axis (negative counts from the end) for `rank`.
pub fn normalize_axis(axis: i64, rank: usize) -> KernelResult<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r.max(1) && !(rank == 0 && axis == 0) {
        return Err(KernelError::invalid(format!(
            "axis {axis} is out of range for rank {rank}"
        )));
    }
    Ok(if axis < 0 {
        (axis + r) as usize
    } else {
        axis as usize
    })
}

/// Calls `f(out_index, in_offsets)` for every element of `out`, with each input's element
/// offset under broadcasting (`in_strides` from [`broadcast_strides`]).
pub fn for_each_broadcast(
    out: &[usize],
    in_strides: &[Vec<usize>],
    mut f: impl FnMut(usize, &[usize]),
) {
    let n: usize = out.iter().product();
    if n == 0 {
        return;
    }
    let rank = out.len();
    let mut idx = vec![0usize; rank];
    let mut offs = vec![0usize; in_strides.len()];
    for flat in 0..n {
        f(flat, &offs);
        // Advance the multi-index and the input offsets incrementally.
        let mut d = rank;
        while d > 0 {
            d -= 1;
            idx[d] += 1;
            for (o, s) in offs.iter_mut().zip(in_strides) {
                *o += s[d];
            }
            if idx[d] < out[d] {
                break;
            }
            for (o, s) in offs.iter_mut().zip(in_strides) {
                *o -= s[d] * out[d];
            }
            idx[d] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting() {
        assert_eq!(
            broadcast_shapes(&[&[2, 1, 3], &[4, 1]]).unwrap().as_slice(),
            [2, 4, 3]
        );
        assert!(broadcast_shapes(&[&[2], &[3]]).is_err());
        assert_eq!(broadcast_strides(&[4, 1], &[2, 4, 3]), vec![0, 1, 0]);
        let mut seen = vec![];
        for_each_broadcast(&[2, 2], &[broadcast_strides(&[2], &[2, 2])], |i, o| {
            seen.push((i, o[0]))
        });
        assert_eq!(seen, vec![(0, 0), (1, 1), (2, 0), (3, 1)]);
    }

    #[test]
    fn axes() {
        assert_eq!(normalize_axis(-1, 3).unwrap(), 2);
        assert!(normalize_axis(3, 3).is_err());
        assert_eq!(normalize_axis(0, 0).unwrap(), 0);
    }
}
