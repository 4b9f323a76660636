//! A reference interpreter: runs a graph's root node by node in topological order with a
//! kernel registry and owned buffers. No placement, memory plan or subgraphs; the runtime is
//! the real executor, this is the yardstick kernel crates test themselves with.

use std::collections::HashMap;

use rge_ir::{op_types, AttrValue, ComputeGraph, NodeId};
use rge_kernels::{run_owned, tensor_from_ir, DType, KernelInit, KernelRegistry, Value};

pub use rge_ops::SUBGRAPH_ATTRS_ATTR;

/// The opset version of `domain` in `opsets` (the latest known when not imported).
pub fn opset_of(opsets: &[(String, i64)], domain: &str) -> i64 {
    let norm = |d: &str| {
        if d == "ai.onnx" {
            String::new()
        } else {
            d.to_string()
        }
    };
    let want = norm(domain);
    opsets
        .iter()
        .find(|(d, _)| norm(d) == want)
        .map_or(i64::MAX, |o| o.1)
}

/// Runs `graph`'s root with `inputs` (one per Data node, in input order) and returns the
/// NetOutput's inputs. Errors name the node at fault.
pub fn interpret(
    graph: &ComputeGraph,
    registry: &KernelRegistry,
    opsets: &[(String, i64)],
    inputs: &[Value],
) -> Result<Vec<Value>, String> {
    let root = graph.root();
    let order = rge_ops::topo_order(graph, root).map_err(|e| e.to_string())?;
    let mut data_index: HashMap<NodeId, usize> = HashMap::new();
    for &n in graph.input_nodes(root) {
        if graph
            .op(n)
            .is_some_and(|op| op_types::is_data(op.op_type()))
        {
            let k = data_index.len();
            data_index.insert(n, k);
        }
    }
    let mut values: HashMap<(NodeId, i32), Value> = HashMap::new();
    for n in order {
        let node = graph.node(n).ok_or("stale node id")?;
        let op = node.op();
        let name = op.name();
        let t = op.op_type();
        if op_types::is_data(t) {
            let k = *data_index
                .get(&n)
                .ok_or_else(|| format!("node {name}: Data node not among the graph inputs"))?;
            let v = inputs
                .get(k)
                .ok_or_else(|| format!("node {name}: graph input {k} not given"))?;
            values.insert((n, 0), v.clone());
            continue;
        }
        if t == op_types::CONST {
            let v = match op.attrs().get("value") {
                Some(AttrValue::Tensor(tensor)) => {
                    tensor_from_ir(tensor).map_err(|e| format!("node {name}: {e}"))?
                }
                _ => return Err(format!("node {name}: Const without a 'value' tensor")),
            };
            values.insert((n, 0), Value::Tensor(v));
            continue;
        }
        let ins: Vec<Option<&Value>> = node
            .input_peers()
            .iter()
            .enumerate()
            .map(|(i, p)| match p {
                None => Ok(None),
                Some(a) => values
                    .get(&(a.node, a.index))
                    .map(Some)
                    .ok_or_else(|| format!("node {name}: input {i} has no value")),
            })
            .collect::<Result<_, String>>()?;
        if t == op_types::NET_OUTPUT {
            return ins
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    v.cloned()
                        .ok_or_else(|| format!("graph output {i} is not connected"))
                })
                .collect();
        }
        let domain = op.domain();
        let input_types: Vec<Option<DType>> = (0..op.input_count())
            .map(|i| op.input(i).and_then(DType::from_desc))
            .collect();
        let output_types: Vec<Option<DType>> = (0..op.output_count())
            .map(|i| op.output(i).and_then(DType::from_desc))
            .collect();
        let subgraph_attrs: Vec<String> = match op.attrs().get(SUBGRAPH_ATTRS_ATTR) {
            Some(AttrValue::ListString(v)) => v.clone(),
            _ => Vec::new(),
        };
        let init = KernelInit {
            node_name: name,
            op_type: t,
            domain,
            // The op's own record first; `opsets` for ops built without one.
            opset: op.opset().unwrap_or_else(|| opset_of(opsets, domain)),
            attrs: op.attrs(),
            input_types: &input_types,
            output_types: &output_types,
            subgraph_attrs: &subgraph_attrs,
            constants: &[],
        };
        let kernel = registry
            .create(&init)
            .map_err(|e| format!("node {name} ({t}): {e}"))?;
        let outs = run_owned(kernel.as_ref(), &ins, op.output_count(), 1, None)
            .map_err(|e| format!("node {name} ({t}): {e}"))?;
        for (i, v) in outs.into_iter().enumerate() {
            if let Some(v) = v {
                values.insert((n, i as i32), v);
            }
        }
    }
    Err("the graph has no NetOutput".into())
}
