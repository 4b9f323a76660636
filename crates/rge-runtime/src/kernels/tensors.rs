//! Byte-level tensor helpers for the control-flow kernels: slicing along an axis and stacking.

use rge_kernels::{DType, KernelError, KernelResult, Tensor, TensorData, TensorRef};

fn elem_bytes(dtype: DType) -> KernelResult<usize> {
    if dtype.is_string() || dtype.bits() % 8 != 0 {
        return Err(KernelError::unsupported(format!(
            "{dtype} tensors cannot be sliced or stacked here"
        )));
    }
    Ok(dtype.bits() as usize / 8)
}

/// Slice `j` of `t` along `axis` (the axis removed).
pub(crate) fn slice_axis(t: TensorRef<'_>, axis: usize, j: usize) -> KernelResult<Tensor> {
    let shape = t.shape();
    let eb = elem_bytes(t.dtype())?;
    let outer: usize = shape[..axis].iter().product();
    let len = shape[axis];
    let inner: usize = shape[axis + 1..].iter().product::<usize>() * eb;
    let bytes = t.bytes()?;
    let mut out = Vec::with_capacity(outer * inner);
    for o in 0..outer {
        let at = (o * len + j) * inner;
        out.extend_from_slice(&bytes[at..at + inner]);
    }
    let mut s = shape.to_vec();
    s.remove(axis);
    Tensor::from_bytes(t.dtype(), &s, &out)
}

/// Stacks same-shaped tensors along a new `axis`.
pub(crate) fn stack(items: &[Tensor], axis: usize, dtype: DType) -> KernelResult<Tensor> {
    let Some(first) = items.first() else {
        return Tensor::zeros(dtype, &[0]);
    };
    let es = first.shape().to_vec();
    if axis > es.len() {
        return Err(KernelError::invalid(format!(
            "axis {axis} out of range for rank {}",
            es.len() + 1
        )));
    }
    for t in items {
        if t.shape() != es.as_slice() || t.dtype() != first.dtype() {
            return Err(KernelError::invalid(format!(
                "iterations made {}{:?} and {}{:?}: cannot stack",
                first.dtype(),
                es,
                t.dtype(),
                t.shape()
            )));
        }
    }
    let mut shape = es.clone();
    shape.insert(axis, items.len());
    if first.dtype().is_string() {
        if axis != 0 {
            return Err(KernelError::unsupported(
                "string outputs stack on axis 0 only",
            ));
        }
        let mut v = Vec::new();
        for t in items {
            if let TensorData::Strings(s) = t.data() {
                v.extend(s.iter().cloned());
            }
        }
        return Tensor::from_strings(&shape, v);
    }
    let eb = elem_bytes(first.dtype())?;
    let outer: usize = es[..axis].iter().product();
    let inner: usize = es[axis..].iter().product::<usize>() * eb;
    let views: Vec<&[u8]> = items
        .iter()
        .map(|t| t.view().bytes())
        .collect::<KernelResult<_>>()?;
    let mut out = Vec::with_capacity(outer * inner * items.len());
    for o in 0..outer {
        for b in &views {
            out.extend_from_slice(&b[o * inner..(o + 1) * inner]);
        }
    }
    Tensor::from_bytes(first.dtype(), &shape, &out)
}

/// Reverses a stacked tensor along `axis`.
pub(crate) fn reverse_items(items: &mut [Tensor]) {
    items.reverse();
}
