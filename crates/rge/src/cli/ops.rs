//! `rge ops [--json]`: registered ops with domain, version range, inputs, outputs, attributes.

use rge_ops::listing::PortInfo;
use rge_ops::{list_ops, render_ops_text, OpRegistry};
use serde_json::{json, Value};

use super::CliResult;

fn op_json(o: &rge_ops::OpInfo) -> Value {
    let ports = |ps: &[PortInfo]| -> Vec<Value> {
        ps.iter()
            .map(|p| {
                json!({
                    "name": p.name,
                    "kind": p.kind,
                    "type_param": p.type_param,
                    "allowed": p.allowed,
                })
            })
            .collect()
    };
    json!({
        "domain": o.domain,
        "op_type": o.op_type,
        "since_version": o.since_version,
        "until_version": o.until_version,
        "inputs": ports(&o.inputs),
        "outputs": ports(&o.outputs),
        "attributes": o.attrs.iter().map(|a| json!({
            "name": a.name,
            "type": a.ty,
            "required": a.required,
            "default": a.default,
        })).collect::<Vec<_>>(),
        "subgraphs": o.subgraphs,
        "source": o.source,
    })
}

pub fn run(as_json: bool) -> CliResult {
    let reg = OpRegistry::builtin();
    if as_json {
        let ops: Vec<Value> = list_ops(&reg).iter().map(op_json).collect();
        let v = json!({ "ops": ops });
        return Ok(format!(
            "{}\n",
            serde_json::to_string_pretty(&v).expect("plain json")
        ));
    }
    Ok(render_ops_text(&reg))
}
