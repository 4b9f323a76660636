//! The data of `rge explain`: what the compiler decided for every node and why. Plain structs,
//! filled by the command from the placement and partition results, read by the renderers.

/// The whole report of one model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExplainReport {
    pub model: String,
    pub nodes: Vec<NodeExplain>,
    pub edges: Vec<EdgeExplain>,
    pub partitions: Vec<PartitionExplain>,
    pub engines: Vec<EngineSummary>,
    pub transfers: Vec<TransferExplain>,
    /// What each graph optimization pass did (docs/optimizations.md).
    pub passes: Vec<PassExplain>,
}

/// One graph optimization pass: its level, rewrites and the root-graph node counts around it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PassExplain {
    pub name: String,
    pub level: String,
    pub rewrites: usize,
    pub nodes_before: usize,
    pub nodes_after: usize,
}

/// One node: where it went and why.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeExplain {
    pub name: String,
    pub op_type: String,
    pub engine: String,
    /// The engines asked, with their answers.
    pub candidates: Vec<Candidate>,
    pub partition: Option<String>,
    pub stream: Option<u32>,
    pub kernel: Option<String>,
    pub memory_space: String,
    /// Const, Constant and initializer nodes (folded away in the HTML graph).
    pub constant: bool,
    pub flops: u64,
    /// The node an optimizer folded this one into (a bias into a conv).
    pub fused_into: Option<String>,
    pub notes: Vec<String>,
}

/// One engine's answer for one node.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Candidate {
    pub engine: String,
    pub cost: u8,
    pub supported: bool,
    pub excluded: bool,
    pub reason: String,
}

/// One data link: an output anchor to an input anchor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EdgeExplain {
    pub from: String,
    pub from_output: usize,
    pub to: String,
    pub to_input: usize,
    pub dtype: String,
    /// `1x3x224x224`; `?` for unknown dims (see [`shape_label`]).
    pub shape: String,
}

/// One partition of the partitioned graph.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartitionExplain {
    pub name: String,
    pub engine: String,
    pub stream: Option<u32>,
    pub nodes: Vec<String>,
}

/// One engine's share of the model.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EngineSummary {
    pub name: String,
    pub cost: u8,
    pub memory_space: String,
    pub nodes: usize,
    pub flops: u64,
    /// This engine's FLOPs over the model's, 0..1.
    pub flops_share: f64,
}

/// A copy inserted between memory spaces.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TransferExplain {
    pub name: String,
    pub from_space: String,
    pub to_space: String,
    pub tensor: String,
    pub from_node: String,
    pub to_node: String,
}

impl ExplainReport {
    /// The engine table with node counts and FLOPs counted from `nodes`: the listed engines in
    /// their order (zero when unused), then engines that nodes name but the list lacks (cost 0,
    /// the memory space of their first node). Shares sum to 1 unless the model has no FLOPs.
    pub fn engine_summary(&self) -> Vec<EngineSummary> {
        let mut engines: Vec<EngineSummary> = self
            .engines
            .iter()
            .map(|e| EngineSummary {
                nodes: 0,
                flops: 0,
                flops_share: 0.0,
                ..e.clone()
            })
            .collect();
        for n in &self.nodes {
            let i = match engines.iter().position(|e| e.name == n.engine) {
                Some(i) => i,
                None => {
                    engines.push(EngineSummary {
                        name: n.engine.clone(),
                        memory_space: n.memory_space.clone(),
                        ..EngineSummary::default()
                    });
                    engines.len() - 1
                }
            };
            engines[i].nodes += 1;
            engines[i].flops = engines[i].flops.saturating_add(n.flops);
        }
        let total: u64 = engines.iter().fold(0u64, |a, e| a.saturating_add(e.flops));
        if total > 0 {
            for e in &mut engines {
                e.flops_share = e.flops as f64 / total as f64;
            }
        }
        engines
    }

    /// Fills `engines[*].nodes/flops/flops_share` from `nodes` (see [`Self::engine_summary`]).
    pub fn finish_summary(&mut self) {
        self.engines = self.engine_summary();
    }

    /// Total FLOPs of the model.
    pub fn total_flops(&self) -> u64 {
        self.nodes
            .iter()
            .fold(0u64, |a, n| a.saturating_add(n.flops))
    }
}

impl Candidate {
    /// The answer in words: `yes`, `no` or `excluded`.
    pub fn answer(&self) -> &'static str {
        if self.excluded {
            "excluded"
        } else if self.supported {
            "yes"
        } else {
            "no"
        }
    }

    /// `dense (1): no — reason` (the reason left out when empty).
    pub fn line(&self) -> String {
        let head = format!("{} ({}): {}", self.engine, self.cost, self.answer());
        if self.reason.is_empty() {
            head
        } else {
            format!("{head} — {}", self.reason)
        }
    }
}

impl NodeExplain {
    /// The candidates in ascending cost, ties in the given order.
    pub fn candidates_by_cost(&self) -> Vec<&Candidate> {
        let mut c: Vec<&Candidate> = self.candidates.iter().collect();
        c.sort_by_key(|c| c.cost);
        c
    }
}

/// A shape as `1x3x224x224`: `?` for an unknown dim, `scalar` for no dims, `?...` for an
/// unknown rank.
pub fn shape_label(shape: &rge_ir::Shape) -> String {
    if shape.is_unknown_rank() {
        return "?...".into();
    }
    if shape.is_scalar() {
        return "scalar".into();
    }
    let dims: Vec<String> = shape
        .dims()
        .iter()
        .map(|&d| if d < 0 { "?".into() } else { d.to_string() })
        .collect();
    dims.join("x")
}

/// A FLOP count with a unit: `950`, `1.2 k`, `3.4 M`, `5.6 G`, `7.8 T`.
pub fn flops_label(flops: u64) -> String {
    const UNITS: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    let f = flops as f64;
    for (scale, unit) in UNITS {
        if f >= scale {
            return format!("{:.1} {unit}", f / scale);
        }
    }
    flops.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, engine: &str, flops: u64) -> NodeExplain {
        NodeExplain {
            name: name.into(),
            op_type: "Add".into(),
            engine: engine.into(),
            flops,
            ..NodeExplain::default()
        }
    }

    #[test]
    fn summary_counts_nodes_and_shares_sum_to_one() {
        let mut r = ExplainReport {
            nodes: vec![
                node("a", "dense", 300),
                node("b", "cpu", 100),
                node("c", "dense", 0),
                node("d", "rts", 600),
            ],
            engines: vec![
                EngineSummary {
                    name: "dense".into(),
                    cost: 1,
                    ..EngineSummary::default()
                },
                EngineSummary {
                    name: "vector".into(),
                    cost: 2,
                    nodes: 7,
                    ..EngineSummary::default()
                },
                EngineSummary {
                    name: "cpu".into(),
                    cost: 3,
                    ..EngineSummary::default()
                },
            ],
            ..ExplainReport::default()
        };
        r.finish_summary();
        let names: Vec<&str> = r.engines.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["dense", "vector", "cpu", "rts"]);
        assert_eq!(r.engines[0].nodes, 2);
        assert_eq!(r.engines[0].flops, 300);
        assert_eq!(r.engines[1].nodes, 0, "unused engines keep zero");
        assert_eq!(r.engines[1].flops_share, 0.0);
        assert_eq!(r.engines[2].cost, 3);
        let sum: f64 = r.engines.iter().map(|e| e.flops_share).sum();
        assert!((sum - 1.0).abs() < 1e-12, "{sum}");
        assert!((r.engines[3].flops_share - 0.6).abs() < 1e-12);
        // Twice gives the same.
        let once = r.engines.clone();
        r.finish_summary();
        assert_eq!(r.engines, once);
    }

    #[test]
    fn no_flops_gives_zero_shares() {
        let mut r = ExplainReport {
            nodes: vec![node("a", "cpu", 0)],
            ..ExplainReport::default()
        };
        r.finish_summary();
        assert_eq!(r.engines[0].nodes, 1);
        assert_eq!(r.engines[0].flops_share, 0.0);
    }

    #[test]
    fn labels() {
        use rge_ir::Shape;
        assert_eq!(shape_label(&Shape::new([1, 3, 224, 224])), "1x3x224x224");
        assert_eq!(shape_label(&Shape::new([-1, 128])), "?x128");
        assert_eq!(shape_label(&Shape::scalar()), "scalar");
        assert_eq!(shape_label(&Shape::unknown_rank()), "?...");
        assert_eq!(flops_label(950), "950");
        assert_eq!(flops_label(1_250_000), "1.2 M");
        assert_eq!(flops_label(3_000_000_000), "3.0 G");
    }

    #[test]
    fn candidate_lines_and_cost_order() {
        let n = NodeExplain {
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
                Candidate {
                    engine: "vector".into(),
                    cost: 2,
                    excluded: true,
                    reason: "core engine type is dense".into(),
                    ..Candidate::default()
                },
            ],
            ..NodeExplain::default()
        };
        let lines: Vec<String> = n.candidates_by_cost().iter().map(|c| c.line()).collect();
        assert_eq!(
            lines,
            [
                "dense (1): no — input 0 has dtype FLOAT16; dense accepts FLOAT",
                "vector (2): excluded — core engine type is dense",
                "cpu (3): yes",
            ]
        );
    }
}
