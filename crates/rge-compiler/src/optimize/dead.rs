//! Dead-node elimination: nodes none of whose outputs is read or is a graph output go (and
//! then the nodes only they read). Graph inputs, graph outputs, nodes with control edges or
//! subgraphs, and state ops stay.

use std::collections::HashSet;

use rge_ir::{op_types, ComputeGraph, GraphPatch, NodeId};

use super::util::{has_control, is_graph_output, root_nodes};
use super::{OptLevel, OptPass};

/// Op types never removed, read or not.
const KEEP: &[&str] = &[
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

/// See the module docs.
#[derive(Debug, Clone, Copy, Default)]
pub struct DeadNodes;

fn dead(g: &ComputeGraph, n: NodeId, inputs: &HashSet<NodeId>) -> bool {
    let Some(node) = g.node(n) else {
        return false;
    };
    // A read output rules most nodes out: checked first, before the longer checks.
    if (0..node.out_data_count()).any(|o| !node.peers_of_output(o).is_empty()) {
        return false;
    }
    let op = node.op();
    if KEEP.contains(&op.op_type())
        || inputs.contains(&n)
        || has_control(g, n)
        || is_graph_output(g, n)
        || !g.node_subgraphs(n).is_empty()
        || !op.subgraph_instance_names().is_empty()
    {
        return false;
    }
    true
}

impl OptPass for DeadNodes {
    fn name(&self) -> &'static str {
        "dead_nodes"
    }
    fn level(&self) -> OptLevel {
        OptLevel::Basic
    }
    fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
        let root = g.root();
        let inputs: HashSet<NodeId> = g.input_nodes(root).iter().copied().collect();
        let mut total = 0;
        loop {
            let gone: Vec<NodeId> = root_nodes(g)
                .into_iter()
                .filter(|&n| dead(g, n, &inputs))
                .collect();
            if gone.is_empty() {
                return Ok(total);
            }
            let mut patch = GraphPatch::in_graph(root);
            for &n in &gone {
                patch.remove(n);
            }
            patch.drop_control();
            g.apply_patch(patch).map_err(|e| e.to_string())?;
            total += gone.len();
        }
    }
}
