//! Element-agnostic data movement: kernels that only move elements (Transpose, Gather,
//! Concat …) implement [`Movement`] once, generically over the element, and
//! [`run_movement`] runs it for every data type: byte-sized types as same-size unsigned
//! integers, strings as `String`s, and the packed sub-byte types (INT4, UINT4, FLOAT4E2M1,
//! INT2, UINT2) unpacked to one byte per element and packed again.

use rge_kernels::{
    element_count, DType, KernelCtx, KernelError, KernelResult, OwnedOutputs, Tensor, TensorRef,
};

/// An element type movement code may work with.
pub(crate) trait Item: Clone + Default + PartialEq + Send + Sync {}
impl<T: Clone + Default + PartialEq + Send + Sync> Item for T {}

/// A data-movement kernel body, generic over the element.
pub(crate) trait Movement: Sync {
    /// Fills every element of every output from the sources (all of one dtype).
    fn fill<T: Item>(&self, srcs: &[&[T]], outs: &mut [&mut [T]]) -> KernelResult<()>;
}

/// Runs `m` over `srcs` (all of one dtype) into outputs `(index, shape)`; the outputs have the
/// sources' dtype.
pub(crate) fn run_movement<M: Movement>(
    ctx: &mut KernelCtx<'_>,
    srcs: &[TensorRef<'_>],
    outs: &[(usize, Vec<usize>)],
    m: &M,
) -> KernelResult<()> {
    let dt = match srcs.first() {
        Some(s) => s.dtype(),
        None => return Err(KernelError::invalid("no input to move")),
    };
    if let Some(s) = srcs.iter().find(|s| s.dtype() != dt) {
        return Err(KernelError::invalid(format!(
            "inputs must share one type, got {dt} and {}",
            s.dtype()
        )));
    }
    let counts = outs
        .iter()
        .map(|(_, sh)| {
            element_count(sh).ok_or_else(|| KernelError::invalid(format!("shape {sh:?} overflows")))
        })
        .collect::<KernelResult<Vec<usize>>>()?;
    if dt.is_string() {
        let s = srcs
            .iter()
            .map(|t| t.as_strings())
            .collect::<KernelResult<Vec<&[String]>>>()?;
        let mut bufs: Vec<Vec<String>> = counts.iter().map(|&n| vec![String::new(); n]).collect();
        {
            let mut refs: Vec<&mut [String]> = bufs.iter_mut().map(|v| v.as_mut_slice()).collect();
            m.fill(&s, &mut refs)?;
        }
        for ((i, sh), b) in outs.iter().zip(bufs) {
            ctx.put(*i, Tensor::from_strings(sh, b)?)?;
        }
        return Ok(());
    }
    match dt.bits() {
        8 => typed::<u8, M>(ctx, dt, srcs, outs, m),
        16 => typed::<u16, M>(ctx, dt, srcs, outs, m),
        32 => typed::<u32, M>(ctx, dt, srcs, outs, m),
        64 => typed::<u64, M>(ctx, dt, srcs, outs, m),
        128 => typed::<u128, M>(ctx, dt, srcs, outs, m),
        bits @ (2 | 4) => {
            let unpacked = srcs
                .iter()
                .map(|t| Ok(unpack(t.bytes()?, bits, t.len())))
                .collect::<KernelResult<Vec<Vec<u8>>>>()?;
            let s: Vec<&[u8]> = unpacked.iter().map(Vec::as_slice).collect();
            let mut bufs: Vec<Vec<u8>> = counts.iter().map(|&n| vec![0u8; n]).collect();
            {
                let mut refs: Vec<&mut [u8]> = bufs.iter_mut().map(|v| v.as_mut_slice()).collect();
                m.fill(&s, &mut refs)?;
            }
            for ((i, sh), b) in outs.iter().zip(bufs) {
                let out = ctx.output_bytes(*i, dt, sh)?;
                pack(&b, bits, out);
            }
            Ok(())
        }
        _ => Err(KernelError::unsupported(format!("data type {dt}"))),
    }
}

/// [`run_movement`] into owned tensors (for sequence outputs and helpers).
pub(crate) fn movement_owned<M: Movement>(
    srcs: &[TensorRef<'_>],
    shapes: &[Vec<usize>],
    m: &M,
) -> KernelResult<Vec<Tensor>> {
    let mut sink = OwnedOutputs::new(shapes.len());
    {
        let mut ctx = KernelCtx::new(&[], &mut sink);
        let outs: Vec<(usize, Vec<usize>)> = shapes.iter().cloned().enumerate().collect();
        run_movement(&mut ctx, srcs, &outs, m)?;
    }
    sink.into_values()?
        .into_iter()
        .map(|v| {
            v.ok_or_else(|| KernelError::invalid("movement left an output unset"))?
                .into_tensor()
        })
        .collect()
}

fn typed<T: bytemuck::Pod + Item, M: Movement>(
    ctx: &mut KernelCtx<'_>,
    dt: DType,
    srcs: &[TensorRef<'_>],
    outs: &[(usize, Vec<usize>)],
    m: &M,
) -> KernelResult<()> {
    let s = srcs
        .iter()
        .map(|t| cast::<T>(t.bytes()?))
        .collect::<KernelResult<Vec<&[T]>>>()?;
    let mut refs: Vec<&mut [T]> = Vec::with_capacity(outs.len());
    for (i, sh) in outs {
        let bytes = ctx.output_bytes(*i, dt, sh)?;
        refs.push(cast_mut::<T>(bytes)?);
    }
    m.fill(&s, &mut refs)
}

/// Bytes viewed as plain integers of one element's size.
pub(crate) fn cast<T: bytemuck::Pod>(b: &[u8]) -> KernelResult<&[T]> {
    if b.is_empty() {
        return Ok(&[]);
    }
    bytemuck::try_cast_slice(b).map_err(|e| KernelError::invalid(format!("tensor data: {e}")))
}

/// Mutable counterpart of [`cast`].
pub(crate) fn cast_mut<T: bytemuck::Pod>(b: &mut [u8]) -> KernelResult<&mut [T]> {
    if b.is_empty() {
        return Ok(&mut []);
    }
    bytemuck::try_cast_slice_mut(b).map_err(|e| KernelError::invalid(format!("output data: {e}")))
}

/// Packed sub-byte elements (low bits first) to one byte each.
pub(crate) fn unpack(bytes: &[u8], bits: u32, n: usize) -> Vec<u8> {
    let per = (8 / bits) as usize;
    let mask = (1u16 << bits) as u8 - 1;
    (0..n)
        .map(|i| {
            let b = bytes.get(i / per).copied().unwrap_or(0);
            (b >> ((i % per) as u32 * bits)) & mask
        })
        .collect()
}

/// One byte per element to packed sub-byte elements (padding bits zero).
pub(crate) fn pack(vals: &[u8], bits: u32, out: &mut [u8]) {
    let per = (8 / bits) as usize;
    let mask = (1u16 << bits) as u8 - 1;
    out.fill(0);
    for (i, &v) in vals.iter().enumerate() {
        if let Some(b) = out.get_mut(i / per) {
            *b |= (v & mask) << ((i % per) as u32 * bits);
        }
    }
}

/// Copies a whole tensor to output `i` with a new shape (same element count).
pub(crate) fn copy_to_output(
    ctx: &mut KernelCtx<'_>,
    i: usize,
    t: TensorRef<'_>,
    shape: &[usize],
) -> KernelResult<()> {
    if element_count(shape) != Some(t.len()) {
        return Err(KernelError::invalid(format!(
            "cannot view {:?} as {shape:?}",
            t.shape()
        )));
    }
    if t.dtype().is_string() {
        let s = t.as_strings()?.to_vec();
        return ctx.put(i, Tensor::from_strings(shape, s)?);
    }
    let src = t.bytes()?;
    let out = ctx.output_bytes(i, t.dtype(), shape)?;
    // The planner may hand the input's own memory back as the output (reuse_input).
    if out.as_ptr() != src.as_ptr() {
        out.copy_from_slice(src);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_round_trip() {
        let bytes = [0x21u8, 0x43, 0x05];
        let v = unpack(&bytes, 4, 5);
        assert_eq!(v, vec![1, 2, 3, 4, 5]);
        let mut out = [0u8; 3];
        pack(&v, 4, &mut out);
        assert_eq!(out, bytes);
        let v2 = unpack(&[0b1110_0100], 2, 4);
        assert_eq!(v2, vec![0, 1, 2, 3]);
    }
}
