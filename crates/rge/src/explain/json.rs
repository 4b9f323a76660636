//! `rge explain --json`: the report as one JSON object (schema in docs/explain.md).

use serde_json::{json, Value};

#[cfg(test)]
use super::report::PassExplain;
use super::report::{
    Candidate, EdgeExplain, EngineSummary, ExplainReport, NodeExplain, PartitionExplain,
    TransferExplain,
};

impl ExplainReport {
    /// The report as one object: `model`, `nodes`, `edges`, `partitions`, `engines` (counted
    /// from the nodes, [`ExplainReport::engine_summary`]), `transfers`, `passes` (the graph
    /// optimizations).
    pub fn to_json(&self) -> Value {
        json!({
            "model": self.model,
            "nodes": self.nodes.iter().map(node_json).collect::<Vec<_>>(),
            "edges": self.edges.iter().map(edge_json).collect::<Vec<_>>(),
            "partitions": self.partitions.iter().map(partition_json).collect::<Vec<_>>(),
            "engines": self.engine_summary().iter().map(engine_json).collect::<Vec<_>>(),
            "transfers": self.transfers.iter().map(transfer_json).collect::<Vec<_>>(),
            "passes": self.passes.iter().map(|p| json!({
                "name": p.name,
                "level": p.level,
                "rewrites": p.rewrites,
                "nodes_before": p.nodes_before,
                "nodes_after": p.nodes_after,
            })).collect::<Vec<_>>(),
        })
    }
}

fn node_json(n: &NodeExplain) -> Value {
    json!({
        "name": n.name,
        "op_type": n.op_type,
        "engine": n.engine,
        "candidates": n.candidates.iter().map(candidate_json).collect::<Vec<_>>(),
        "partition": n.partition,
        "stream": n.stream,
        "kernel": n.kernel,
        "memory_space": n.memory_space,
        "constant": n.constant,
        "flops": n.flops,
        "fused_into": n.fused_into,
        "notes": n.notes,
    })
}

fn candidate_json(c: &Candidate) -> Value {
    json!({
        "engine": c.engine,
        "cost": c.cost,
        "supported": c.supported,
        "excluded": c.excluded,
        "reason": c.reason,
    })
}

fn edge_json(e: &EdgeExplain) -> Value {
    json!({
        "from": e.from,
        "from_output": e.from_output,
        "to": e.to,
        "to_input": e.to_input,
        "dtype": e.dtype,
        "shape": e.shape,
    })
}

fn partition_json(p: &PartitionExplain) -> Value {
    json!({
        "name": p.name,
        "engine": p.engine,
        "stream": p.stream,
        "nodes": p.nodes,
    })
}

fn engine_json(e: &EngineSummary) -> Value {
    json!({
        "name": e.name,
        "cost": e.cost,
        "memory_space": e.memory_space,
        "nodes": e.nodes,
        "flops": e.flops,
        "flops_share": e.flops_share,
    })
}

fn transfer_json(t: &TransferExplain) -> Value {
    json!({
        "name": t.name,
        "from_space": t.from_space,
        "to_space": t.to_space,
        "tensor": t.tensor,
        "from_node": t.from_node,
        "to_node": t.to_node,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> ExplainReport {
        ExplainReport {
            model: "m.onnx".into(),
            nodes: vec![
                NodeExplain {
                    name: "w".into(),
                    op_type: "Const".into(),
                    engine: "local".into(),
                    constant: true,
                    memory_space: "HBM".into(),
                    ..NodeExplain::default()
                },
                NodeExplain {
                    name: "conv".into(),
                    op_type: "Conv".into(),
                    engine: "dense".into(),
                    candidates: vec![Candidate {
                        engine: "dense".into(),
                        cost: 1,
                        supported: true,
                        excluded: false,
                        reason: String::new(),
                    }],
                    partition: Some("p1".into()),
                    stream: Some(0),
                    kernel: Some("Conv".into()),
                    memory_space: "HBM".into(),
                    flops: 1000,
                    notes: vec!["bias folded".into()],
                    ..NodeExplain::default()
                },
            ],
            edges: vec![EdgeExplain {
                from: "w".into(),
                from_output: 0,
                to: "conv".into(),
                to_input: 1,
                dtype: "FLOAT".into(),
                shape: "8x3x3x3".into(),
            }],
            partitions: vec![PartitionExplain {
                name: "p1".into(),
                engine: "dense".into(),
                stream: Some(0),
                nodes: vec!["conv".into()],
            }],
            engines: vec![EngineSummary {
                name: "dense".into(),
                cost: 1,
                memory_space: "HBM".into(),
                ..EngineSummary::default()
            }],
            transfers: vec![TransferExplain {
                name: "copy0".into(),
                from_space: "HBM".into(),
                to_space: "DDR".into(),
                tensor: "conv:0".into(),
                from_node: "conv".into(),
                to_node: "out".into(),
            }],
            passes: vec![PassExplain {
                name: "gelu_fusion".into(),
                level: "all".into(),
                rewrites: 2,
                nodes_before: 20,
                nodes_after: 10,
            }],
        }
    }

    #[test]
    fn keys_are_present_and_typed() {
        let v = report().to_json();
        assert_eq!(v["model"], "m.onnx");
        for key in [
            "nodes",
            "edges",
            "partitions",
            "engines",
            "transfers",
            "passes",
        ] {
            assert!(v[key].is_array(), "{key}");
        }
        assert_eq!(v["passes"][0]["name"], "gelu_fusion");
        assert_eq!(v["passes"][0]["nodes_after"], 10);
        let n = &v["nodes"][1];
        assert_eq!(n["name"], "conv");
        assert_eq!(n["op_type"], "Conv");
        assert_eq!(n["engine"], "dense");
        assert_eq!(n["partition"], "p1");
        assert_eq!(n["stream"], 0);
        assert_eq!(n["kernel"], "Conv");
        assert_eq!(n["memory_space"], "HBM");
        assert_eq!(n["constant"], false);
        assert_eq!(n["flops"], 1000);
        assert!(n["fused_into"].is_null());
        assert_eq!(n["notes"][0], "bias folded");
        let c = &n["candidates"][0];
        assert_eq!(c["engine"], "dense");
        assert_eq!(c["cost"], 1);
        assert_eq!(c["supported"], true);
        assert_eq!(c["excluded"], false);
        assert!(c["reason"].is_string());
        let w = &v["nodes"][0];
        assert_eq!(w["constant"], true);
        assert!(w["partition"].is_null() && w["stream"].is_null() && w["kernel"].is_null());
        let e = &v["edges"][0];
        assert_eq!(e["from"], "w");
        assert_eq!(e["from_output"], 0);
        assert_eq!(e["to_input"], 1);
        assert_eq!(e["dtype"], "FLOAT");
        assert_eq!(e["shape"], "8x3x3x3");
        let p = &v["partitions"][0];
        assert_eq!(p["nodes"][0], "conv");
        assert_eq!(p["stream"], 0);
        // Engines are counted from the nodes even without finish_summary.
        let engines = v["engines"].as_array().unwrap();
        assert_eq!(engines.len(), 2);
        assert_eq!(engines[0]["nodes"], 1);
        assert_eq!(engines[0]["flops"], 1000);
        assert!(engines[0]["flops_share"].is_f64());
        assert_eq!(engines[1]["name"], "local");
        let t = &v["transfers"][0];
        for key in [
            "name",
            "from_space",
            "to_space",
            "tensor",
            "from_node",
            "to_node",
        ] {
            assert!(t[key].is_string(), "{key}");
        }
    }

    #[test]
    fn round_trips_through_text() {
        let v = report().to_json();
        let back: Value = serde_json::from_str(&v.to_string()).unwrap();
        assert_eq!(back, v);
    }
}
