//! TensorFlow's StridedSlice: the sparse spec (`begin`, `end`, `strides` and the five masks)
//! resolved into one (begin, stride, size) per input dim and the final shape (new axes added,
//! shrunk axes dropped), as TF's `ValidateStridedSliceOp` does. Shared by the prototype and
//! the `cpu_tf` kernel.

use rge_ir::AttrMap;

/// The five mask attributes (bit `i` refers to entry `i` of begin/end/strides).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Masks {
    pub begin: i64,
    pub end: i64,
    pub ellipsis: i64,
    pub new_axis: i64,
    pub shrink_axis: i64,
}

impl Masks {
    pub fn from_attrs(attrs: &AttrMap) -> Result<Self, String> {
        let get = |name: &str| -> Result<i64, String> {
            match attrs.get(name) {
                None => Ok(0),
                Some(rge_ir::AttrValue::Int(v)) if *v >= 0 => Ok(*v),
                Some(v) => Err(format!(
                    "attribute `{name}` must be an int ≥ 0, got {}",
                    v.kind_name()
                )),
            }
        };
        Ok(Masks {
            begin: get("begin_mask")?,
            end: get("end_mask")?,
            ellipsis: get("ellipsis_mask")?,
            new_axis: get("new_axis_mask")?,
            shrink_axis: get("shrink_axis_mask")?,
        })
    }
}

/// The resolved slice: per input dim, the first index, the step and the count (-1 when the
/// dim is unknown), and the output shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlicePlan {
    pub begin: Vec<i64>,
    pub stride: Vec<i64>,
    pub size: Vec<i64>,
    pub final_shape: Vec<i64>,
}

enum Entry {
    /// Sparse entry `i` applies to the next dense dim.
    Dim(usize),
    /// A full-range dim (from an ellipsis).
    Full,
    NewAxis,
}

/// Resolves the sparse spec against an input of `dims`.
pub fn plan(
    dims: &[i64],
    begin: &[i64],
    end: &[i64],
    strides: &[i64],
    m: Masks,
) -> Result<SlicePlan, String> {
    let n = begin.len();
    if end.len() != n || strides.len() != n {
        return Err(format!(
            "begin, end and strides must have the same length, got {}, {} and {}",
            n,
            end.len(),
            strides.len()
        ));
    }
    if n > 62 {
        return Err(format!("{n} slice entries is too many"));
    }
    for (name, mask) in [
        ("begin_mask", m.begin),
        ("end_mask", m.end),
        ("ellipsis_mask", m.ellipsis),
        ("new_axis_mask", m.new_axis),
        ("shrink_axis_mask", m.shrink_axis),
    ] {
        if mask >> n != 0 {
            return Err(format!(
                "{name} {mask:#b} sets a bit past the {n} entries of begin/end/strides"
            ));
        }
    }
    if m.ellipsis.count_ones() > 1 {
        return Err(format!(
            "ellipsis_mask {:#b}: at most one ellipsis is allowed",
            m.ellipsis
        ));
    }
    let bit = |mask: i64, i: usize| mask >> i & 1 == 1;
    // Entries that consume an input dim (neither ellipsis nor new axis).
    let consuming = (0..n)
        .filter(|&i| !bit(m.ellipsis, i) && !bit(m.new_axis, i))
        .count();
    let rank = dims.len();
    if consuming > rank {
        return Err(format!(
            "{consuming} slice entries index an input of rank {rank}"
        ));
    }
    let mut entries = Vec::with_capacity(rank + n);
    let mut had_ellipsis = false;
    for i in 0..n {
        if bit(m.ellipsis, i) {
            had_ellipsis = true;
            entries.extend((0..rank - consuming).map(|_| Entry::Full));
        } else if bit(m.new_axis, i) {
            entries.push(Entry::NewAxis);
        } else {
            entries.push(Entry::Dim(i));
        }
    }
    if !had_ellipsis {
        entries.extend((0..rank - consuming).map(|_| Entry::Full));
    }
    let mut out = SlicePlan {
        begin: Vec::with_capacity(rank),
        stride: Vec::with_capacity(rank),
        size: Vec::with_capacity(rank),
        final_shape: Vec::new(),
    };
    for e in entries {
        let axis = out.begin.len();
        match e {
            Entry::NewAxis => out.final_shape.push(1),
            Entry::Full => {
                out.begin.push(0);
                out.stride.push(1);
                out.size.push(dims[axis]);
                out.final_shape.push(dims[axis]);
            }
            Entry::Dim(i) => {
                let (b, e, s) = (begin[i], end[i], strides[i]);
                let d = dims[axis];
                if s == 0 {
                    return Err(format!("strides[{i}] is 0"));
                }
                if bit(m.shrink_axis, i) {
                    let idx = if d >= 0 && b < 0 { b + d } else { b };
                    if idx < 0 || (d >= 0 && idx >= d) {
                        return Err(format!(
                            "begin[{i}] = {b} is out of range for dim {axis} of size {d} (shrink_axis_mask)"
                        ));
                    }
                    out.begin.push(idx);
                    out.stride.push(1);
                    out.size.push(1);
                    continue;
                }
                if d < 0 {
                    out.begin.push(0);
                    out.stride.push(s);
                    out.size.push(-1);
                    out.final_shape.push(-1);
                    continue;
                }
                let norm = |x: i64| -> i64 {
                    let x = if x < 0 { x + d } else { x };
                    if s > 0 {
                        x.clamp(0, d)
                    } else {
                        x.clamp(-1, d - 1)
                    }
                };
                let b = if bit(m.begin, i) {
                    if s > 0 {
                        0
                    } else {
                        d - 1
                    }
                } else {
                    norm(b)
                };
                let e = if bit(m.end, i) {
                    if s > 0 {
                        d
                    } else {
                        -1
                    }
                } else {
                    norm(e)
                };
                let size = if s > 0 {
                    ((e - b).max(0) + s - 1) / s
                } else {
                    ((b - e).max(0) + (-s) - 1) / (-s)
                };
                out.begin.push(b);
                out.stride.push(s);
                out.size.push(size);
                out.final_shape.push(size);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(dims: &[i64], b: &[i64], e: &[i64], s: &[i64], m: Masks) -> SlicePlan {
        plan(dims, b, e, s, m).unwrap()
    }

    #[test]
    fn masks_resolve_as_tf_does() {
        // x[1:, ::-1] on [4, 5]
        let r = p(
            &[4, 5],
            &[1, 0],
            &[0, 0],
            &[1, -1],
            Masks {
                end: 0b11,
                begin: 0b10,
                ..Default::default()
            },
        );
        assert_eq!(r.final_shape, vec![3, 5]);
        assert_eq!(r.begin, vec![1, 4]);
        // x[..., 2, tf.newaxis] on [2, 3, 4]: ellipsis, shrink, new axis.
        let r = p(
            &[2, 3, 4],
            &[0, 2, 0],
            &[0, 3, 0],
            &[1, 1, 1],
            Masks {
                ellipsis: 0b001,
                shrink_axis: 0b010,
                new_axis: 0b100,
                ..Default::default()
            },
        );
        assert_eq!(r.final_shape, vec![2, 3, 1]);
        assert_eq!(r.begin, vec![0, 0, 2]);
        assert!(plan(&[2], &[0], &[1], &[0], Masks::default()).is_err());
        assert!(plan(&[2], &[0], &[1, 2], &[1], Masks::default()).is_err());
        let m = Masks {
            begin: 0b100,
            ..Default::default()
        };
        assert!(plan(&[2], &[0], &[1], &[1], m)
            .unwrap_err()
            .contains("past"));
    }
}
