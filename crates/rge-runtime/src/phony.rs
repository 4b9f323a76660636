//! The local engine's no-copy concat and split (GE's PhonyConcat / PhonySplit): no step runs;
//! the memory plan lays the pieces out back to back. PhonyConcat's inputs are written by their
//! producers straight into their regions of the output's buffer; PhonySplit's outputs are views
//! of regions of its input. Both need static shapes, a split/concat axis with only 1s before it
//! (so each piece is one contiguous run of bytes), and pieces starting 16-byte aligned (kernel
//! outputs must be); anything else is an error naming the node, as GE's ops have no copying
//! fallback either. The axis is attribute `concat_dim` / `split_dim` (or `axis`), default 0.

use rge_ir::NodeId;
use rge_kernels::DType;

use crate::error::RuntimeResult;
use crate::lower::{bytes_of, is_tensor_desc, lower_err, static_shape, Lowering};
use crate::program::{Dims, Slot, Storage};

fn axis(cx: &Lowering<'_>, n: NodeId, names: &[&str], rank: usize) -> RuntimeResult<usize> {
    let op = cx.op(n)?;
    let mut a = 0i64;
    for name in names {
        if let Ok(Some(v)) = op.attrs().get_int(name) {
            a = v;
            break;
        }
    }
    let r = rank as i64;
    let x = if a < 0 { a + r } else { a };
    if x < 0 || x >= r.max(1) {
        return Err(lower_err(
            cx.graph(),
            n,
            format!("axis {a} out of range for rank {rank}"),
        ));
    }
    Ok(x as usize)
}

/// Byte offsets of pieces of `sizes` laid back to back; errors unless each is 16-aligned.
fn offsets(cx: &Lowering<'_>, n: NodeId, sizes: &[usize]) -> RuntimeResult<Vec<usize>> {
    let mut at = 0usize;
    let mut v = Vec::with_capacity(sizes.len());
    for &s in sizes {
        if at % 16 != 0 {
            return Err(lower_err(
                cx.graph(),
                n,
                format!("a piece would start at byte {at}, not 16-byte aligned"),
            ));
        }
        v.push(at);
        at += s;
    }
    Ok(v)
}

/// The static shape, dtype and bytes of output `i` of `n`.
fn out_desc(cx: &Lowering<'_>, n: NodeId, i: usize) -> RuntimeResult<(Dims, DType, usize)> {
    let op = cx.op(n)?;
    let bad = |m: &str| lower_err(cx.graph(), n, format!("output {i}: {m}"));
    let d = op.output(i).ok_or_else(|| bad("missing"))?;
    let shape = static_shape(d)
        .filter(|_| is_tensor_desc(d))
        .ok_or_else(|| bad("needs a static tensor shape"))?;
    let dtype = DType::from_desc(d)
        .filter(|t| !t.is_string())
        .ok_or_else(|| bad("needs a numeric dtype"))?;
    let bytes = bytes_of(dtype, &shape).ok_or_else(|| bad("too large"))?;
    Ok((shape, dtype, bytes))
}

/// PhonyConcat: the output's buffer holds the inputs back to back.
pub(crate) fn lower_phony_concat(cx: &mut Lowering<'_>, n: NodeId) -> RuntimeResult<()> {
    let (shape, dtype, bytes) = out_desc(cx, n, 0)?;
    let ax = axis(cx, n, &["concat_dim", "axis"], shape.len())?;
    if shape[..ax].iter().any(|&d| d != 1) {
        return Err(lower_err(
            cx.graph(),
            n,
            format!("axis {ax}: the dims before it are not all 1"),
        ));
    }
    let count = cx.graph().node(n).map_or(0, |x| x.in_data_count());
    let mut roots = Vec::with_capacity(count);
    let mut sizes = Vec::with_capacity(count);
    for i in 0..count {
        let s = cx
            .input_slot(n, i)?
            .ok_or_else(|| lower_err(cx.graph(), n, format!("input {i} is not connected")))?;
        let r = cx.root_of[s as usize];
        let slot = &cx.slots[r as usize];
        if r != s || !cx.planned[r as usize] || slot.producer.is_none() || slot.dtype != Some(dtype)
        {
            return Err(lower_err(
                cx.graph(),
                n,
                format!(
                    "input {i} (`{}`) must be a {dtype} tensor of static shape written by a kernel",
                    slot.name
                ),
            ));
        }
        roots.push(r);
        sizes.push(slot.bytes);
    }
    if sizes.iter().sum::<usize>() != bytes {
        return Err(lower_err(
            cx.graph(),
            n,
            "the inputs' bytes do not add up to the output's",
        ));
    }
    let at = offsets(cx, n, &sizes)?;
    let slot = Slot {
        name: cx.slot_name(n, 0),
        dtype: Some(dtype),
        shape: Some(shape),
        storage: Storage::Dynamic(u32::MAX),
        bytes,
        producer: None,
        view: false,
        space: 0,
    };
    let out = cx.push_slot(n, 0, slot, None, true);
    cx.concats.push((out, roots.into_iter().zip(at).collect()));
    cx.eff_from_inputs(n);
    Ok(())
}

/// PhonySplit: each output is a view of a region of the input.
pub(crate) fn lower_phony_split(cx: &mut Lowering<'_>, n: NodeId) -> RuntimeResult<()> {
    let src = cx
        .input_slot(n, 0)?
        .ok_or_else(|| lower_err(cx.graph(), n, "input 0 is not connected"))?;
    let root = cx.root_of[src as usize];
    let s = cx.slots[src as usize].clone();
    let (Some(dtype), Some(in_shape)) = (s.dtype, s.shape.clone()) else {
        return Err(lower_err(
            cx.graph(),
            n,
            "input 0 needs a static tensor shape",
        ));
    };
    if !cx.planned[root as usize] {
        return Err(lower_err(
            cx.graph(),
            n,
            format!(
                "input `{}` is not in the arena (a graph input or constant)",
                s.name
            ),
        ));
    }
    let ax = axis(cx, n, &["split_dim", "axis"], in_shape.len())?;
    if in_shape[..ax].iter().any(|&d| d != 1) {
        return Err(lower_err(
            cx.graph(),
            n,
            format!("axis {ax}: the dims before it are not all 1"),
        ));
    }
    let count = cx.op(n)?.output_count();
    let mut outs = Vec::with_capacity(count);
    for i in 0..count {
        let (shape, dt, bytes) = out_desc(cx, n, i)?;
        if dt != dtype {
            return Err(lower_err(
                cx.graph(),
                n,
                format!("output {i} is {dt}, the input {dtype}"),
            ));
        }
        outs.push((shape, bytes));
    }
    let sizes: Vec<usize> = outs.iter().map(|o| o.1).collect();
    if sizes.iter().sum::<usize>() != s.bytes {
        return Err(lower_err(
            cx.graph(),
            n,
            "the outputs' bytes do not add up to the input's",
        ));
    }
    let at = offsets(cx, n, &sizes)?;
    let base = cx.rel[src as usize];
    for (i, ((shape, bytes), off)) in outs.into_iter().zip(at).enumerate() {
        let slot = Slot {
            name: cx.slot_name(n, i),
            dtype: Some(dtype),
            shape: Some(shape),
            storage: s.storage,
            bytes,
            producer: cx.slots[root as usize].producer,
            view: true,
            space: 0,
        };
        let id = cx.push_slot(n, i, slot, Some(root), false);
        cx.rel[id as usize] = base + off;
    }
    cx.eff_from_inputs(n);
    Ok(())
}
