//! `ai.rge` FusedElementwise: a tree of f32 elementwise ops over the node's inputs run as one
//! kernel, made by the `fused` engine's optimizer (`docs/fused-engine.md`). The `program`
//! attribute lists the ops (`rge_vector::program`); the output has the numpy broadcast of the
//! inputs' shapes, as the elementwise ops it replaced had.

use rge_ir::DataType;

use super::util::broadcast_inputs;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::registry::OpRegistryBuilder;

fn infer(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dtype = ctx.input(0)?.dtype;
    let idx: Vec<usize> = (0..ctx.input_count()).collect();
    match broadcast_inputs(ctx, &idx)? {
        Some(d) => ctx.set_output_dims(0, dtype, &d),
        None => return super::util::all_unknown(ctx, dtype),
    }
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    b.register(
        crate::proto::OpProto::new(super::conv::RGE_DOMAIN, "FusedElementwise", 1)
            .sig("X*:T -> Y:T")
            .attrs("program:string!")
            .tc("T", &[DataType::Float])
            .infer(infer),
    )?;
    Ok(())
}
