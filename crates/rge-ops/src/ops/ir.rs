//! The IR's own ops (Data, Const, NetOutput): the pass infers them itself; their prototypes
//! make them creatable and listed.

use super::util::op;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::{types, FormatRule};
use crate::registry::OpRegistryBuilder;

fn inferred_by_pass(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    bail!("{} is inferred by the pass itself", ctx.op_type())
}

fn identity_all(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    for i in 0..ctx.output_count() {
        let t = ctx.opt_input(i).cloned().unwrap_or_default();
        ctx.set_output_info(i, t);
    }
    Ok(())
}

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    b.register_all([
        op("Data", 1)
            .sig("x?:T -> y:T")
            .attrs("index:int=0")
            .tc("T", &[])
            .infer(inferred_by_pass),
        op("Const", 1)
            .sig("-> y:T")
            .attrs("value:tensor!")
            .tc("T", types::ALL)
            .infer(inferred_by_pass),
        op("NetOutput", 1)
            .sig("x+:T -> y*:T")
            .tc("T", &[])
            .infer(identity_all)
            .format(FormatRule::FollowInputs),
        op("NoOp", 1).infer(identity_all),
    ])
}
