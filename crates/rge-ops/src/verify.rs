//! The checks every node gets from its prototype, before its op's own verify function: input
//! count, required inputs and attributes present, attribute types, input data types allowed by
//! their type constraint and equal across one type parameter.

use rge_ir::{DataType, IrInputKind};

use crate::ctx::InferCtx;
use crate::error::{OpError, OpResult};
use crate::registry::proto_input_for;

fn list(allowed: &[DataType]) -> String {
    let names: Vec<String> = allowed
        .iter()
        .map(|d| d.name().trim_start_matches("DT_").to_lowercase())
        .collect();
    names.join(", ")
}

/// Runs the prototype's checks on a node.
pub fn verify_generic(ctx: &InferCtx<'_>) -> OpResult<()> {
    let proto = ctx.proto();
    let n = ctx.input_count();
    let has_dynamic = proto.inputs.iter().any(|p| p.kind == IrInputKind::Dynamic);
    if !has_dynamic && n > proto.inputs.len() {
        return Err(OpError(format!(
            "has {n} inputs; {} takes at most {}",
            proto.op_type,
            proto.inputs.len()
        )));
    }
    // Required inputs present.
    let mut present = [false; 16];
    let mut bound: [(usize, DataType, usize); 8] = [(usize::MAX, DataType::Undefined, 0); 8];
    let mut nbound = 0;
    for i in 0..n {
        let Some(k) = proto_input_for(proto, n, i) else {
            continue;
        };
        let Some(info) = ctx.opt_input(i) else {
            continue;
        };
        if k < present.len() {
            present[k] = true;
        }
        let p = &proto.inputs[k];
        if p.type_param.is_empty() || info.dtype == DataType::Undefined {
            continue;
        }
        let Some(tc) = proto.constraint(&p.type_param) else {
            continue;
        };
        if !tc.allowed.is_empty() && !tc.allowed.contains(&info.dtype) {
            return Err(OpError(format!(
                "input {i} (`{}`) is {}; type `{}` allows {}",
                p.name,
                info.dtype,
                tc.name,
                list(&tc.allowed)
            )));
        }
        // One data type per type parameter (not for heterogeneous variadics).
        if p.heterogeneous {
            continue;
        }
        let tc_idx = proto
            .type_constraints
            .iter()
            .position(|t| t.name == tc.name)
            .unwrap_or(usize::MAX);
        match bound[..nbound].iter().find(|b| b.0 == tc_idx) {
            Some(&(_, dt, first)) if dt != info.dtype => {
                return Err(OpError(format!(
                    "input {i} (`{}`) is {} but input {first} is {}; both are type `{}`",
                    p.name, info.dtype, dt, tc.name
                )));
            }
            Some(_) => {}
            None if nbound < bound.len() => {
                bound[nbound] = (tc_idx, info.dtype, i);
                nbound += 1;
            }
            None => {}
        }
    }
    for (k, p) in proto.inputs.iter().enumerate() {
        if p.kind == IrInputKind::Required && k < present.len() && !present[k] {
            return Err(OpError(format!(
                "required input {k} (`{}`) is missing",
                p.name
            )));
        }
    }
    // Attributes.
    for a in &proto.attrs {
        match ctx.attrs().get(&a.name) {
            None if a.required => {
                return Err(OpError(format!(
                    "required attribute `{}` ({}) is missing",
                    a.name,
                    a.ty.name()
                )))
            }
            None => {}
            Some(v) if !a.ty.accepts(v) => {
                return Err(OpError(format!(
                    "attribute `{}` is {}, not {}",
                    a.name,
                    v.kind_name(),
                    a.ty.name()
                )))
            }
            Some(_) => {}
        }
    }
    Ok(())
}
