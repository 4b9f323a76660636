//! Graph optimizations (docs/optimizations.md): named passes over the whole graph, each of a
//! level like onnxruntime's (`none`, `basic`, `all`), each one that can be turned off by name
//! and that reports what it changed. The pipeline runs them in two stages of its own:
//! `optimize_graph` after inference (before the engines' optimizers, so the dense engine's
//! epilogue fusion sees the fused `Gelu`/`Swish` ops it can take) and `optimize_graph_late`
//! after the engines' original-graph optimizers (MatMul+Add → Gemm on what the dense engine
//! left).
//!
//! Passes change the graph through checked patches (docs/patch.md), one match at a time, and
//! never remove a graph input, a node whose output is a graph output (its name would change),
//! or a node with control edges.

mod attention;
mod cast;
mod cse;
mod dead;
mod dropout;
mod gelu;
mod gemm;
mod identity;
mod layernorm;
mod reshape;
mod shape_const;
mod silu;
mod transpose;
pub mod util;

use std::sync::Arc;
use std::time::{Duration, Instant};

use hashbrown::HashSet;
use rge_ir::ComputeGraph;

pub use attention::AttentionFusion;
pub use cast::CastElimination;
pub use cse::CommonSubexpressions;
pub use dead::DeadNodes;
pub use dropout::DropoutRemoval;
pub use gelu::GeluFusion;
pub use gemm::GemmFusion;
pub use identity::IdentityRemoval;
pub use layernorm::LayerNormFusion;
pub use reshape::ReshapeCancellation;
pub use shape_const::ShapeToConst;
pub use silu::SiluFusion;
pub use transpose::TransposeCancellation;

/// The option key of the optimization level (`none`, `basic`, `all`).
pub const OPTION_OPTIMIZATION: &str = "rge.optimization";
/// The option key of the passes turned off (comma separated pass names).
pub const OPTION_DISABLED_PASSES: &str = "rge.disabledPasses";
/// The node attribute a fusion pass sets on the node it made: the pass and the nodes replaced.
pub const REWRITE_ATTR: &str = "_rge_rewritten";

/// Optimization levels, like onnxruntime's `GraphOptimizationLevel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub enum OptLevel {
    /// No graph pass runs (the engines' own optimizers still do).
    None,
    /// Rewrites that only remove work: no-op removal, dead nodes, common subexpressions,
    /// cancellations, constant shapes.
    Basic,
    /// Basic, plus the fusions into larger ops (LayerNorm, GELU, SiLU, attention, Gemm).
    #[default]
    All,
}

impl OptLevel {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" | "0" | "disable_all" => Some(OptLevel::None),
            "basic" | "1" | "enable_basic" => Some(OptLevel::Basic),
            "all" | "extended" | "2" | "99" | "enable_all" | "enable_extended" => {
                Some(OptLevel::All)
            }
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            OptLevel::None => "none",
            OptLevel::Basic => "basic",
            OptLevel::All => "all",
        }
    }
}

/// When a pass runs: in `optimize_graph` (before the engines' optimizers) or in
/// `optimize_graph_late` (after them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Early,
    Late,
}

/// One graph optimization.
pub trait OptPass: Send + Sync {
    /// Its name (what `rge.disabledPasses` and the report use).
    fn name(&self) -> &'static str;
    /// The lowest level it runs at.
    fn level(&self) -> OptLevel;
    fn phase(&self) -> Phase {
        Phase::Early
    }
    /// The op types its rewrites make that the graph may not have had: the pass is skipped
    /// when no engine in use has a kernel for one of them.
    fn makes(&self) -> &'static [&'static str] {
        &[]
    }
    /// Op types one of which every rewrite of this pass starts from (`None`: no such list).
    /// The pass is skipped while the graph has none of them: one that finds nothing to do
    /// still visits every node, a cache miss each on a graph of a million nodes.
    fn starts_from(&self) -> Option<&'static [&'static str]> {
        None
    }
    /// Rewrites `graph`; returns how many rewrites it made. An error names the node at fault;
    /// the graph is then left as the last applied rewrite made it (every rewrite is whole).
    fn run(&self, graph: &mut ComputeGraph) -> Result<usize, String>;
}

/// What one pass did (summed over the rounds it ran).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PassReport {
    pub name: String,
    pub level: OptLevel,
    pub rewrites: usize,
    /// The root graph's node count when the pass first ran, and that count changed by what
    /// the pass itself added and removed over every round.
    pub nodes_before: usize,
    pub nodes_after: usize,
    pub elapsed: Duration,
}

impl PassReport {
    /// `rge: pass <name> (<level>): <n> rewrites, nodes <a> -> <b>, <ms> ms`.
    pub fn log_line(&self) -> String {
        format!(
            "rge: pass {} ({}): {} rewrites, nodes {} -> {}, {:.3} ms",
            self.name,
            self.level.name(),
            self.rewrites,
            self.nodes_before,
            self.nodes_after,
            self.elapsed.as_secs_f64() * 1e3
        )
    }
}

/// The level and the passes turned off.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OptSettings {
    pub level: OptLevel,
    pub disabled: Vec<String>,
}

impl OptSettings {
    /// Whether `pass` runs under these settings.
    pub fn enables(&self, pass: &dyn OptPass) -> bool {
        pass.level() <= self.level && !self.disabled.iter().any(|d| d == pass.name())
    }
}

/// The standard passes, in the order they run. The runtime adds constant folding after
/// `shape_to_const` (it needs kernels).
pub fn standard_passes() -> Vec<Arc<dyn OptPass>> {
    vec![
        Arc::new(IdentityRemoval),
        Arc::new(DropoutRemoval),
        Arc::new(ShapeToConst),
        Arc::new(CastElimination),
        Arc::new(TransposeCancellation),
        Arc::new(ReshapeCancellation),
        Arc::new(CommonSubexpressions),
        Arc::new(DeadNodes),
        Arc::new(LayerNormFusion),
        Arc::new(GeluFusion),
        Arc::new(SiluFusion),
        Arc::new(AttentionFusion),
        Arc::new(GemmFusion),
    ]
}

/// The most rounds over the pass list in one phase (a round that changes nothing ends it).
const MAX_ROUNDS: usize = 4;

/// Checks the disabled names against `passes`: an unknown name is an error naming it.
pub fn check_disabled(passes: &[Arc<dyn OptPass>], settings: &OptSettings) -> Result<(), String> {
    for d in &settings.disabled {
        if !passes.iter().any(|p| p.name() == d) {
            let names: Vec<&str> = passes.iter().map(|p| p.name()).collect();
            return Err(format!(
                "`{d}` is not a graph optimization pass (passes: {})",
                names.join(", ")
            ));
        }
    }
    Ok(())
}

/// The op types of every node of `graph`, in one sweep of its node table.
fn op_types_of(graph: &ComputeGraph) -> HashSet<Box<str>> {
    // Borrowed while sweeping, hashed with hashbrown's foldhash (std's SipHash per node was
    // a fifth of this sweep on a graph whose neighbours differ in type).
    let mut types: HashSet<&str> = HashSet::new();
    let mut last = "";
    for (_, node) in graph.nodes_unordered() {
        // Runs of one type are common (nodes are stored roughly in the order they were made).
        let t = node.op().op_type();
        if t != last {
            types.insert(t);
            last = t;
        }
    }
    types.into_iter().map(Box::from).collect()
}

/// Runs the enabled passes of `phase` over `graph` in rounds until a round changes nothing;
/// returns one report per enabled pass. A pass making an op type `supports` says no engine
/// runs is skipped. Logs each with `log`.
pub fn run_passes(
    graph: &mut ComputeGraph,
    passes: &[Arc<dyn OptPass>],
    settings: &OptSettings,
    phase: Phase,
    supports: &dyn Fn(&str) -> bool,
    log: bool,
) -> Result<Vec<PassReport>, String> {
    let enabled: Vec<&Arc<dyn OptPass>> = passes
        .iter()
        .filter(|p| p.phase() == phase && settings.enables(p.as_ref()))
        .filter(|p| p.makes().iter().all(|t| supports(t)))
        .collect();
    let mut reports: Vec<PassReport> = enabled
        .iter()
        .map(|p| PassReport {
            name: p.name().to_string(),
            level: p.level(),
            rewrites: 0,
            nodes_before: 0,
            nodes_after: 0,
            elapsed: Duration::ZERO,
        })
        .collect();
    let mut types = op_types_of(graph);
    for round in 0..MAX_ROUNDS {
        let mut changed = false;
        for (p, r) in enabled.iter().zip(reports.iter_mut()) {
            let before = graph.node_count(graph.root());
            if round == 0 {
                r.nodes_before = before;
                r.nodes_after = before;
            }
            if p.starts_from()
                .is_some_and(|s| !s.iter().any(|t| types.contains(*t)))
            {
                continue;
            }
            let start = Instant::now();
            let n = p
                .run(graph)
                .map_err(|e| format!("pass `{}`: {e}", p.name()))?;
            r.elapsed += start.elapsed();
            r.rewrites += n;
            // What this pass added or removed, over every round.
            r.nodes_after = (r.nodes_after + graph.node_count(graph.root())).saturating_sub(before);
            if n > 0 {
                types = op_types_of(graph);
            }
            changed |= n > 0;
        }
        if !changed {
            break;
        }
    }
    if log {
        for r in &reports {
            eprintln!("{}", r.log_line());
        }
    }
    Ok(reports)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Renames every `From` op to `To` (one rewrite each), or counts its runs.
    struct Retype {
        name: &'static str,
        from: Option<&'static [&'static str]>,
        runs: std::sync::atomic::AtomicUsize,
    }

    impl OptPass for Retype {
        fn name(&self) -> &'static str {
            self.name
        }
        fn level(&self) -> OptLevel {
            OptLevel::Basic
        }
        fn starts_from(&self) -> Option<&'static [&'static str]> {
            self.from
        }
        fn run(&self, g: &mut ComputeGraph) -> Result<usize, String> {
            self.runs.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let from: Vec<_> = g
                .nodes_of(g.root())
                .filter(|&n| g.op(n).is_some_and(|o| o.op_type() == "From"))
                .collect();
            for &n in &from {
                let op = g.op_mut(n).ok_or("stale node")?;
                *op = rge_ir::OpDesc::new(op.name(), "To");
            }
            Ok(from.len())
        }
    }

    fn retype(name: &'static str, from: Option<&'static [&'static str]>) -> Arc<Retype> {
        Arc::new(Retype {
            name,
            from,
            runs: Default::default(),
        })
    }

    #[test]
    fn a_pass_runs_only_while_the_graph_has_an_op_it_starts_from() {
        let mut g = ComputeGraph::new("g");
        g.add_root_node(rge_ir::OpDesc::new("a", "From")).unwrap();
        let absent = retype("absent", Some(&["Missing"]));
        let before = retype("waits_for_to", Some(&["To"]));
        let maker = retype("makes_to", None);
        let after = retype("reads_to", Some(&["To"]));
        let passes: Vec<Arc<dyn OptPass>> =
            vec![absent.clone(), before.clone(), maker.clone(), after.clone()];
        let settings = OptSettings::default();
        let reports =
            run_passes(&mut g, &passes, &settings, Phase::Early, &|_| true, false).unwrap();
        let runs = |p: &Retype| p.runs.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(runs(&absent), 0, "no Missing op: skipped every round");
        // Round 1: `To` appears only when `makes_to` has run, so `reads_to` runs right after
        // it; round 2 (the first changed something): both `To` readers run; nothing changes.
        assert_eq!(runs(&maker), 2);
        assert_eq!(runs(&before), 1);
        assert_eq!(runs(&after), 2);
        assert_eq!(reports[2].rewrites, 1);
        assert_eq!(reports[0].rewrites, 0);
    }

    #[test]
    fn levels_parse_and_order() {
        assert_eq!(OptLevel::parse("NONE"), Some(OptLevel::None));
        assert_eq!(OptLevel::parse("basic"), Some(OptLevel::Basic));
        assert_eq!(OptLevel::parse("all"), Some(OptLevel::All));
        assert_eq!(OptLevel::parse("most"), None);
        assert!(OptLevel::None < OptLevel::Basic && OptLevel::Basic < OptLevel::All);
    }

    #[test]
    fn settings_pick_passes_by_level_and_name() {
        let basic = OptSettings {
            level: OptLevel::Basic,
            disabled: vec!["dead_nodes".into()],
        };
        assert!(basic.enables(&IdentityRemoval));
        assert!(!basic.enables(&DeadNodes));
        assert!(!basic.enables(&GeluFusion));
        let none = OptSettings {
            level: OptLevel::None,
            disabled: vec![],
        };
        assert!(!none.enables(&IdentityRemoval));
        let passes = standard_passes();
        assert!(check_disabled(&passes, &basic).is_ok());
        let bad = OptSettings {
            level: OptLevel::All,
            disabled: vec!["gelu".into()],
        };
        let e = check_disabled(&passes, &bad).unwrap_err();
        assert!(e.contains("`gelu` is not a graph optimization pass"), "{e}");
        assert!(e.contains("gelu_fusion"), "{e}");
    }
}
