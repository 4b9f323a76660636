//! The [N, F] input of the ml models as f32 rows (ints and doubles converted, as onnxruntime
//! does).

use rge_kernels::{KernelCtx, KernelError, KernelResult};

/// Input 0's (rows N, features F): [F] is one row, [N, F] N rows.
pub(crate) fn rows_and_features(ctx: &KernelCtx<'_>) -> KernelResult<(usize, usize)> {
    match *ctx.input(0)?.shape() {
        [f] => Ok((1, f)),
        [n, f] => Ok((n, f)),
        ref s => Err(KernelError::invalid(format!(
            "X must be [N, F] or [F], got {s:?}"
        ))),
    }
}

/// Input 0 as (rows N, features F, values).
pub(crate) fn rows(ctx: &KernelCtx<'_>) -> KernelResult<(usize, usize, Vec<f32>)> {
    let (n, f) = rows_and_features(ctx)?;
    let v = ctx
        .input(0)?
        .to_f64_vec()?
        .into_iter()
        .map(|v| v as f32)
        .collect();
    Ok((n, f, v))
}
