//! Common-subexpression elimination: two nodes of the same op type, domain, opset and
//! attributes reading the same values compute the same outputs, so the readers of the later
//! one read the earlier one's. Small constants (up to 256 bytes) of the same type, shape and
//! bytes merge too, so what reads them can merge next. Random ops, nodes with control edges
//! or subgraphs, and nodes whose outputs are graph outputs are never merged away.

use std::collections::HashMap;

use rge_ir::{op_types, ComputeGraph, GraphPatch, NodeId, OutAnchor, Outlet};

use super::util::{const_tensor, has_control, is_graph_output, root_nodes};
use super::{OptLevel, OptPass};

/// Ops whose results differ between two calls with the same inputs.
const NONDETERMINISTIC: &[&str] = &[
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Bernoulli",
    "Multinomial",
    "Dropout",
];

/// Ops that are never merged (graph I/O, state, partition markers).
const NEVER: &[&str] = &[
    op_types::NET_OUTPUT,
    "Data",
    "RefData",
    "Variable",
    "VariableV2",
    "Assign",
    "PlaceHolder",
    "End",
    "Send",
    "Recv",
    "NoOp",
];

/// The largest constant merged, in bytes.
const MAX_CONST_BYTES: usize = 256;

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct CommonSubexpressions;

/// What makes two nodes compute the same values (`None`: never merged).
fn key(g: &ComputeGraph, n: NodeId) -> Option<String> {
    let node = g.node(n)?;
    let op = node.op();
    let t = op.op_type();
    if NEVER.contains(&t)
        || NONDETERMINISTIC.contains(&t)
        || has_control(g, n)
        || !g.node_subgraphs(n).is_empty()
        || !op.subgraph_instance_names().is_empty()
        || g.input_nodes(g.root()).contains(&n)
    {
        return None;
    }
    if let Some(c) = const_tensor(g, n) {
        if c.data.len() > MAX_CONST_BYTES {
            return None;
        }
        return Some(format!(
            "const {:?} {:?} {:?}",
            c.desc.dtype(),
            c.desc.shape().dims(),
            c.data.as_ref()
        ));
    }
    if node.input_peers().iter().all(Option::is_none) {
        // Generators without inputs (other than constants) stay as they are.
        return None;
    }
    let inputs: Vec<Option<OutAnchor>> = node.input_peers().to_vec();
    let attrs: Vec<String> = op
        .attrs()
        .iter()
        .filter(|(k, _)| !k.starts_with('_'))
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect();
    let dtypes: Vec<String> = op
        .outputs()
        .iter()
        .map(|d| format!("{:?}", d.dtype()))
        .collect();
    Some(format!(
        "{} {} {:?} {:?} {:?} {:?}",
        op.domain(),
        t,
        op.opset(),
        inputs,
        attrs,
        dtypes
    ))
}

impl OptPass for CommonSubexpressions {
    fn name(&self) -> &'static str {
        "common_subexpressions"
    }
    fn level(&self) -> OptLevel {
        OptLevel::Basic
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let order = g
            .sorted_order(g.root(), &rge_ir::SortOptions::default())
            .unwrap_or_else(|_| root_nodes(g));
        let mut seen: HashMap<String, NodeId> = HashMap::new();
        let mut done = 0;
        for n in order {
            if g.node(n).is_none() {
                continue;
            }
            let Some(k) = key(g, n) else { continue };
            let Some(&keep) = seen.get(&k) else {
                seen.insert(k, n);
                continue;
            };
            if is_graph_output(g, n) {
                continue;
            }
            let outs = g.node(n).map_or(0, |nd| nd.out_data_count());
            let mut patch = GraphPatch::in_graph(g.root());
            patch.remove(n);
            for o in 0..outs {
                patch.shunt(n, o, Outlet::old(keep, o));
            }
            patch.drop_control();
            g.apply_patch(patch).map_err(|e| e.to_string())?;
            done += 1;
        }
        Ok(done)
    }
}
