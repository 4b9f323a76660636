//! The [N, F] input of the ml models as f32 rows (ints and doubles converted, as onnxruntime
//! does).

use rge_kernels::{KernelCtx, KernelError, KernelResult};

/// Input 0 as (rows N, features F, values): [F] is one row, [N, F] N rows.
pub(crate) fn rows(ctx: &KernelCtx<'_>) -> KernelResult<(usize, usize, Vec<f32>)> {
    let x = ctx.input(0)?;
    let (n, f) = match *x.shape() {
        [f] => (1, f),
        [n, f] => (n, f),
        ref s => {
            return Err(KernelError::invalid(format!(
                "X must be [N, F] or [F], got {s:?}"
            )))
        }
    };
    let v = x.to_f64_vec()?.into_iter().map(|v| v as f32).collect();
    Ok((n, f, v))
}
