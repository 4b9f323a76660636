//! Shapes and strides of the elementwise shaders: broadcasting an input to the output's
//! shape (stride 0 on broadcast dims), permuting for Transpose, and merging dims that are
//! contiguous in every tensor so most launches run over one flat dim.

/// The most dims a strided shader takes after merging.
pub const MAX_RANK: usize = 8;

/// Row-major strides of `shape`, in elements.
pub fn contiguous(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        s[d] = s[d + 1] * shape[d + 1].max(1) as i64;
    }
    s
}

/// The strides that read `shape` (right-aligned, numpy rules) as if it had `out`'s shape.
pub fn broadcast(shape: &[usize], out: &[usize]) -> Vec<i64> {
    rge_kernels::shape_util::broadcast_strides(shape, out)
        .into_iter()
        .map(|s| s as i64)
        .collect()
}

/// The broadcast shape of two shapes, or `None` when they do not broadcast.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    rge_kernels::shape_util::broadcast_shapes(&[a, b])
        .ok()
        .map(|s| s.to_vec())
}

/// Merges adjacent dims that every stride list walks contiguously (and drops size-1 dims),
/// so a launch indexes as few dims as possible.
pub fn merge(dims: &[usize], strides: &[Vec<i64>]) -> (Vec<usize>, Vec<Vec<i64>>) {
    let mut md: Vec<usize> = Vec::new();
    let mut ms: Vec<Vec<i64>> = vec![Vec::new(); strides.len()];
    for d in 0..dims.len() {
        if dims[d] == 1 {
            continue;
        }
        let can = !md.is_empty()
            && strides.iter().enumerate().all(|(k, s)| {
                let last = *ms[k].last().unwrap_or(&0);
                last == s[d] * dims[d] as i64
            });
        if can {
            let n = md.len() - 1;
            md[n] *= dims[d];
            for (k, s) in strides.iter().enumerate() {
                let m = ms[k].len() - 1;
                ms[k][m] = s[d];
            }
        } else {
            md.push(dims[d]);
            for (k, s) in strides.iter().enumerate() {
                ms[k].push(s[d]);
            }
        }
    }
    (md, ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcasting_and_merging() {
        assert_eq!(broadcast_shapes(&[2, 1, 3], &[4, 1]), Some(vec![2, 4, 3]));
        assert_eq!(broadcast_shapes(&[2], &[3]), None);
        assert_eq!(broadcast(&[4, 1], &[2, 4, 3]), vec![0, 1, 0]);
        let out = [2, 3, 4];
        let (d, s) = merge(&out, &[contiguous(&out), contiguous(&out)]);
        assert_eq!((d, s), (vec![24], vec![vec![1], vec![1]]));
        let (d, s) = merge(&out, &[contiguous(&out), broadcast(&[4], &out)]);
        assert_eq!(d, vec![6, 4]);
        assert_eq!(s, vec![vec![4, 1], vec![0, 1]]);
    }
}
