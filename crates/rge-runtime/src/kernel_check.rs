//! Kernel definitions checked against op prototypes when an engine set is built: a definition
//! that contradicts its op's prototype (more ports than the op has, a dtype the op never
//! takes, an empty opset range) is an error naming the engine and the kernel, not a surprise
//! at run time. Ops without a prototype (a plugin's own ops) are taken as declared.

use rge_kernels::{DType, KernelDef, PortDef, TypeSet};
use rge_ops::{OpProto, OpRegistry};

use crate::error::{RuntimeError, RuntimeResult};

fn bad(engine: &str, def: &KernelDef, msg: String) -> RuntimeError {
    RuntimeError::KernelDef {
        engine: engine.to_string(),
        kernel: def.name.clone(),
        msg,
    }
}

/// The types a prototype allows for a port whose type parameter is `param` (`ANY` when the
/// port is untyped or its constraint is unknown).
fn allowed(proto: &OpProto, param: &str) -> TypeSet {
    match proto.constraint(param) {
        Some(c) if !param.is_empty() => {
            let types: Vec<DType> = c
                .allowed
                .iter()
                .filter_map(|&t| DType::from_ir(t))
                .collect();
            TypeSet::of(&types)
        }
        _ => TypeSet::ANY,
    }
}

fn check_ports(
    engine: &str,
    def: &KernelDef,
    kind: &str,
    ports: &[PortDef],
    proto_params: &[(String, bool)],
    proto: &OpProto,
    widest: usize,
) -> RuntimeResult<()> {
    // A definition serving several versions may declare the widest one's ports (MaxPool 8's
    // `Indices` over MaxPool 1 too): the count is checked against the widest in its range.
    let variadic = proto_params.last().is_some_and(|p| p.1);
    if !variadic && ports.len() > widest && !proto_params.is_empty() {
        return Err(bad(
            engine,
            def,
            format!(
                "declares {} {kind}s; op {} has {}",
                ports.len(),
                def.op_type,
                proto_params.len()
            ),
        ));
    }
    for (i, p) in ports.iter().enumerate() {
        if p.types.is_any() {
            continue;
        }
        let Some((param, _)) = proto_params.get(i).or(proto_params.last()) else {
            continue;
        };
        let ok = allowed(proto, param);
        if !p.types.is_subset(ok) {
            let extra: Vec<&str> = p
                .types
                .types()
                .filter(|t| !ok.contains(*t))
                .map(DType::name)
                .collect();
            return Err(bad(
                engine,
                def,
                format!(
                    "{kind} {i} accepts {}, which op {} never takes there (it allows {ok})",
                    extra.join("|"),
                    def.op_type
                ),
            ));
        }
    }
    Ok(())
}

/// Checks `def` of `engine` against the prototypes in `ops`.
pub fn check_def(ops: &OpRegistry, engine: &str, def: &KernelDef) -> RuntimeResult<()> {
    if def.op_type.is_empty() {
        return Err(bad(engine, def, "names no op type".into()));
    }
    if def.since > def.until {
        return Err(bad(
            engine,
            def,
            format!("opset range {}..={} is empty", def.since, def.until),
        ));
    }
    let versions = ops.versions(&def.domain, &def.op_type);
    if versions.is_empty() {
        return Ok(());
    }
    // The prototypes in force over the definition's range.
    let in_range: Vec<&OpProto> = versions
        .iter()
        .enumerate()
        .filter(|(i, p)| {
            let next = versions
                .get(i + 1)
                .map_or(i64::MAX, |n| n.since_version - 1);
            p.since_version <= def.until && next >= def.since
        })
        .map(|(_, p)| p.as_ref())
        .collect();
    if in_range.is_empty() {
        return Err(bad(
            engine,
            def,
            format!(
                "serves opsets {}..={} but op {} exists only from opset {}",
                def.since, def.until, def.op_type, versions[0].since_version
            ),
        ));
    }
    let widest_in = in_range.iter().map(|p| p.inputs.len()).max().unwrap_or(0);
    let widest_out = in_range.iter().map(|p| p.outputs.len()).max().unwrap_or(0);
    for proto in in_range {
        let inputs: Vec<(String, bool)> = proto
            .inputs
            .iter()
            .map(|p| {
                (
                    p.type_param.clone(),
                    p.kind == rge_ir::op_desc::IrInputKind::Dynamic,
                )
            })
            .collect();
        let outputs: Vec<(String, bool)> = proto
            .outputs
            .iter()
            .map(|p| {
                (
                    p.type_param.clone(),
                    p.kind == rge_ir::op_desc::IrOutputKind::Dynamic,
                )
            })
            .collect();
        check_ports(engine, def, "input", &def.inputs, &inputs, proto, widest_in)?;
        check_ports(
            engine,
            def,
            "output",
            &def.outputs,
            &outputs,
            proto,
            widest_out,
        )?;
    }
    Ok(())
}
