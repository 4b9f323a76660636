//! Recurrent ops: RNN, GRU, LSTM (layout 0: [seq, batch, …]; layout 1: [batch, seq, …]).

use super::util::*;
use crate::bail;
use crate::ctx::InferCtx;
use crate::error::{OpResult, OpsError};
use crate::proto::types::*;
use crate::proto::FormatRule;
use crate::registry::OpRegistryBuilder;

fn rnn(ctx: &mut InferCtx<'_>) -> OpResult<()> {
    let dt = ctx.input(0)?.dtype;
    let gates = match ctx.op_type() {
        "LSTM" => 4,
        "GRU" => 3,
        _ => 1,
    };
    let dirs = match ctx.attr_str("direction")? {
        "forward" | "reverse" => 1,
        "bidirectional" => 2,
        d => bail!("unknown direction `{d}`"),
    };
    let layout = ctx.attr_int_opt("layout")?.unwrap_or(0);
    let (Some(x), Some(w)) = (ctx.input(0)?.dims(), ctx.input(1)?.dims()) else {
        return all_unknown(ctx, dt);
    };
    if x.len() != 3 || w.len() != 3 {
        bail!("X {} and W {} must be 3-D", fmt_dims(x), fmt_dims(w));
    }
    if w[0] >= 0 && w[0] != dirs {
        bail!(
            "W {} has {} directions; direction needs {dirs}",
            fmt_dims(w),
            w[0]
        );
    }
    let hidden = match ctx.attr_int_opt("hidden_size")? {
        Some(h) => {
            if w[1] >= 0 && w[1] != gates * h {
                bail!(
                    "W {} does not hold {gates} gates of hidden_size {h}",
                    fmt_dims(w)
                );
            }
            h
        }
        None if w[1] >= 0 => w[1] / gates,
        None => -1,
    };
    let (seq, batch) = if layout == 0 {
        (x[0], x[1])
    } else {
        (x[1], x[0])
    };
    if layout == 0 {
        ctx.set_output_dims(0, dt, &[seq, dirs, batch, hidden]);
        ctx.set_output_dims(1, dt, &[dirs, batch, hidden]);
        ctx.set_output_dims(2, dt, &[dirs, batch, hidden]);
    } else {
        ctx.set_output_dims(0, dt, &[batch, seq, dirs, hidden]);
        ctx.set_output_dims(1, dt, &[batch, dirs, hidden]);
        ctx.set_output_dims(2, dt, &[batch, dirs, hidden]);
    }
    Ok(())
}

const COMMON: &str = "activation_alpha:floats, activation_beta:floats, activations:strings, clip:float, direction:string=forward, hidden_size:int";

pub(super) fn register(b: &mut OpRegistryBuilder) -> Result<(), OpsError> {
    for v in [7, 14, 22] {
        let layout = if v >= 14 { ", layout:int=0" } else { "" };
        b.register(
            op("RNN", v)
                .sig("X:T, W:T, R:T, B?:T, sequence_lens?:I, initial_h?:T -> Y?:T, Y_h?:T")
                .attrs(&format!("{COMMON}{layout}"))
                .tc("T", FLOATS)
                .tc("I", &[rge_ir::DataType::Int32])
                .infer(rnn)
                .format(FormatRule::Nd),
        )?;
        b.register(
            op("GRU", v)
                .sig("X:T, W:T, R:T, B?:T, sequence_lens?:I, initial_h?:T -> Y?:T, Y_h?:T")
                .attrs(&format!("{COMMON}, linear_before_reset:int=0{layout}"))
                .tc("T", FLOATS)
                .tc("I", &[rge_ir::DataType::Int32])
                .infer(rnn)
                .format(FormatRule::Nd),
        )?;
        b.register(
            op("LSTM", v)
                .sig("X:T, W:T, R:T, B?:T, sequence_lens?:I, initial_h?:T, initial_c?:T, P?:T -> Y?:T, Y_h?:T, Y_c?:T")
                .attrs(&format!("{COMMON}, input_forget:int=0{layout}"))
                .tc("T", FLOATS)
                .tc("I", &[rge_ir::DataType::Int32])
                .infer(rnn)
                .format(FormatRule::Nd),
        )?;
    }
    Ok(())
}
