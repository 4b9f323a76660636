//! `rge explain`'s text: per node the engines asked and the outcome, the transfers, a summary.

use std::fmt::Write;

use super::report::{flops_label, ExplainReport, NodeExplain};

/// The report as text: a header, one block per node, the transfers, then one summary row per
/// engine (nodes and share of FLOPs).
pub fn render_text(report: &ExplainReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "model: {}", report.model);
    let _ = writeln!(
        out,
        "{} nodes, {} edges, {} partitions, {} transfers, {} FLOPs",
        report.nodes.len(),
        report.edges.len(),
        report.partitions.len(),
        report.transfers.len(),
        flops_label(report.total_flops())
    );
    for n in &report.nodes {
        out.push('\n');
        node_block(&mut out, n);
    }
    out.push('\n');
    if report.transfers.is_empty() {
        out.push_str("transfers: none\n");
    } else {
        let _ = writeln!(out, "transfers ({}):", report.transfers.len());
        for t in &report.transfers {
            let _ = writeln!(
                out,
                "  {}: {} {} -> {} ({} -> {})",
                t.name, t.tensor, t.from_space, t.to_space, t.from_node, t.to_node
            );
        }
    }
    out.push('\n');
    passes(&mut out, report);
    out.push('\n');
    summary_table(&mut out, report);
    out
}

/// The graph optimization passes that ran, with what they changed.
fn passes(out: &mut String, report: &ExplainReport) {
    if report.passes.is_empty() {
        out.push_str("graph optimizations: none\n");
        return;
    }
    let _ = writeln!(out, "graph optimizations ({}):", report.passes.len());
    for p in &report.passes {
        let _ = writeln!(
            out,
            "  {} ({}): {} rewrites, nodes {} -> {}",
            p.name, p.level, p.rewrites, p.nodes_before, p.nodes_after
        );
    }
}

fn node_block(out: &mut String, n: &NodeExplain) {
    let mut head = vec![n.op_type.clone()];
    if n.constant {
        head.push("constant".into());
    }
    if n.flops > 0 {
        // "3.0 k" + "FLOP", "950" + " FLOP".
        let l = flops_label(n.flops);
        let sep = if l.contains(' ') { "" } else { " " };
        head.push(format!("{l}{sep}FLOP"));
    }
    let _ = writeln!(out, "{} ({})", n.name, head.join(", "));
    for c in n.candidates_by_cost() {
        let _ = writeln!(out, "  {}", c.line());
    }
    let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "none".into());
    let stream = n.stream.map_or_else(|| "none".into(), |s| s.to_string());
    let space = if n.memory_space.is_empty() {
        "unknown"
    } else {
        &n.memory_space
    };
    let _ = writeln!(
        out,
        "  -> {}, partition {}, stream {}, kernel {}, memory space {}",
        n.engine,
        opt(&n.partition),
        stream,
        opt(&n.kernel),
        space
    );
    if let Some(f) = &n.fused_into {
        let _ = writeln!(out, "  fused into {f}");
    }
    for note in &n.notes {
        let _ = writeln!(out, "  note: {note}");
    }
}

fn summary_table(out: &mut String, report: &ExplainReport) {
    let header = ["engine", "cost", "memory", "nodes", "FLOPs", "share"];
    let rows: Vec<[String; 6]> = report
        .engine_summary()
        .iter()
        .map(|e| {
            [
                e.name.clone(),
                e.cost.to_string(),
                e.memory_space.clone(),
                e.nodes.to_string(),
                flops_label(e.flops),
                format!("{:.1}%", e.flops_share * 100.0),
            ]
        })
        .collect();
    let mut width = header.map(str::len);
    for r in &rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[&str]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(width)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        padded.join("  ").trim_end().to_string()
    };
    let _ = writeln!(out, "{}", line(&header));
    for r in &rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        let _ = writeln!(out, "{}", line(&cells));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::report::{Candidate, EngineSummary, TransferExplain};

    fn report() -> ExplainReport {
        ExplainReport {
            model: "m.onnx".into(),
            nodes: vec![
                NodeExplain {
                    name: "conv".into(),
                    op_type: "Conv".into(),
                    engine: "cpu".into(),
                    candidates: vec![
                        Candidate {
                            engine: "cpu".into(),
                            cost: 3,
                            supported: true,
                            ..Candidate::default()
                        },
                        Candidate {
                            engine: "dense".into(),
                            cost: 1,
                            reason: "input 0 has dtype FLOAT16; dense accepts FLOAT".into(),
                            ..Candidate::default()
                        },
                    ],
                    partition: Some("p0".into()),
                    stream: Some(1),
                    kernel: Some("ConvCpu".into()),
                    memory_space: "DDR".into(),
                    flops: 3_000,
                    fused_into: None,
                    notes: vec!["bias b folded in".into()],
                    ..NodeExplain::default()
                },
                NodeExplain {
                    name: "w".into(),
                    op_type: "Const".into(),
                    engine: "local".into(),
                    constant: true,
                    ..NodeExplain::default()
                },
                NodeExplain {
                    name: "relu".into(),
                    op_type: "Relu".into(),
                    engine: "dense".into(),
                    flops: 1_000,
                    ..NodeExplain::default()
                },
            ],
            engines: vec![
                EngineSummary {
                    name: "dense".into(),
                    cost: 1,
                    memory_space: "HBM".into(),
                    ..EngineSummary::default()
                },
                EngineSummary {
                    name: "cpu".into(),
                    cost: 3,
                    memory_space: "DDR".into(),
                    ..EngineSummary::default()
                },
            ],
            transfers: vec![TransferExplain {
                name: "copy0".into(),
                from_space: "DDR".into(),
                to_space: "HBM".into(),
                tensor: "conv:0".into(),
                from_node: "conv".into(),
                to_node: "relu".into(),
            }],
            ..ExplainReport::default()
        }
    }

    #[test]
    fn node_blocks_list_engines_in_cost_order() {
        let text = render_text(&report());
        let block = "conv (Conv, 3.0 kFLOP)\n\
            \x20 dense (1): no — input 0 has dtype FLOAT16; dense accepts FLOAT\n\
            \x20 cpu (3): yes\n\
            \x20 -> cpu, partition p0, stream 1, kernel ConvCpu, memory space DDR\n\
            \x20 note: bias b folded in\n";
        assert!(text.contains(block), "{text}");
        assert!(text.contains("w (Const, constant)\n"), "{text}");
        assert!(
            text.contains(
                "-> dense, partition none, stream none, kernel none, memory space unknown"
            ),
            "{text}"
        );
        assert!(
            text.contains("transfers (1):\n  copy0: conv:0 DDR -> HBM (conv -> relu)\n"),
            "{text}"
        );
    }

    #[test]
    fn ends_with_the_engine_summary() {
        let text = render_text(&report());
        let tail: Vec<&str> = text.lines().rev().take(4).collect();
        assert_eq!(tail[3], "engine  cost  memory  nodes  FLOPs  share");
        assert_eq!(tail[2], "dense   1     HBM     1      1.0 k  25.0%");
        assert_eq!(tail[1], "cpu     3     DDR     1      3.0 k  75.0%");
        assert_eq!(tail[0], "local   0             1      0      0.0%");
    }
}
