//! The per-op profile summary that `rge run --profile` and `rge bench` print (onnxruntime's
//! profiler summary, `benchmark_app -pc`): time, share, count and shapes per op type, then the
//! slowest nodes with their engine, kernel and shapes, from the profiler's step events.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use rge_runtime::profile::ProfileEvent;
use serde_json::{json, Value};

/// Nodes listed in the text summary (the JSON has all).
pub const TOP_NODES: usize = 15;
/// Distinct shapes listed per op type.
const SHAPES_PER_OP: usize = 3;

/// One op type's total.
#[derive(Debug, Clone)]
pub struct OpRow {
    pub op_type: String,
    /// Milliseconds per run.
    pub ms: f64,
    pub share: f64,
    /// Steps per run.
    pub count: usize,
    /// Distinct input/output shapes, most frequent first (at most [`SHAPES_PER_OP`]).
    pub shapes: Vec<String>,
}

/// One node's total.
#[derive(Debug, Clone)]
pub struct NodeRow {
    pub node: String,
    pub op_type: String,
    pub engine: String,
    pub kernel: String,
    /// Milliseconds per run.
    pub ms: f64,
    pub share: f64,
    pub shapes: String,
}

/// The summary of `runs` profiled runs.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub runs: usize,
    /// Step time per run, milliseconds.
    pub total_ms: f64,
    pub ops: Vec<OpRow>,
    pub nodes: Vec<NodeRow>,
}

/// Sums `events` (from `runs` runs) per op type and per node, slowest first.
pub fn summarize(events: &[ProfileEvent], runs: usize) -> Summary {
    let runs = runs.max(1);
    let per_run = |us: f64| us / 1e3 / runs as f64;
    let total_us: f64 = events.iter().map(|e| e.dur_us).sum();
    let share = |us: f64| if total_us > 0.0 { us / total_us } else { 0.0 };
    let mut ops: BTreeMap<&str, (f64, usize, BTreeMap<&str, usize>)> = BTreeMap::new();
    let mut nodes: BTreeMap<&str, (f64, &ProfileEvent)> = BTreeMap::new();
    for e in events {
        let o = ops.entry(e.op_type.as_str()).or_default();
        o.0 += e.dur_us;
        o.1 += 1;
        *o.2.entry(&e.shapes).or_default() += 1;
        nodes.entry(e.node.as_str()).or_insert((0.0, e)).0 += e.dur_us;
    }
    let mut ops: Vec<OpRow> = ops
        .into_iter()
        .map(|(op, (us, count, shapes))| {
            let mut shapes: Vec<(&str, usize)> = shapes.into_iter().collect();
            shapes.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
            OpRow {
                op_type: op.to_string(),
                ms: per_run(us),
                share: share(us),
                count: count / runs,
                shapes: shapes
                    .into_iter()
                    .take(SHAPES_PER_OP)
                    .map(|(s, _)| s.to_string())
                    .collect(),
            }
        })
        .collect();
    ops.sort_by(|a, b| {
        b.ms.total_cmp(&a.ms)
            .then_with(|| a.op_type.cmp(&b.op_type))
    });
    let mut nodes: Vec<NodeRow> = nodes
        .into_iter()
        .map(|(node, (us, e))| NodeRow {
            node: node.to_string(),
            op_type: e.op_type.clone(),
            engine: e.engine.clone(),
            kernel: e.kernel.clone(),
            ms: per_run(us),
            share: share(us),
            shapes: e.shapes.to_string(),
        })
        .collect();
    nodes.sort_by(|a, b| b.ms.total_cmp(&a.ms).then_with(|| a.node.cmp(&b.node)));
    Summary {
        runs,
        total_ms: per_run(total_us),
        ops,
        nodes,
    }
}

/// The summary as text: every op type, then the [`TOP_NODES`] slowest nodes.
pub fn text(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "profile: {:.3} ms of steps per run ({} run{}); by op type:",
        s.total_ms,
        s.runs,
        if s.runs == 1 { "" } else { "s" }
    );
    let _ = writeln!(
        out,
        "  {:<22} {:>10} {:>7} {:>6}  shapes",
        "op type", "ms/run", "share", "count"
    );
    for o in &s.ops {
        let _ = writeln!(
            out,
            "  {:<22} {:>10.3} {:>6.2}% {:>6}  {}",
            o.op_type,
            o.ms,
            o.share * 100.0,
            o.count,
            o.shapes.join(" | ")
        );
    }
    let shown = s.nodes.len().min(TOP_NODES);
    let _ = writeln!(out, "slowest nodes ({shown} of {}):", s.nodes.len());
    for n in s.nodes.iter().take(TOP_NODES) {
        let _ = writeln!(
            out,
            "  {:<28} {:<16} {:<8} {:>10.3} ms {:>6.2}%  {}",
            n.node,
            n.op_type,
            n.engine,
            n.ms,
            n.share * 100.0,
            n.shapes
        );
    }
    out
}

/// The summary as JSON: `{"runs", "total_ms", "op_types": [...], "nodes": [...]}`.
pub fn to_json(s: &Summary) -> Value {
    json!({
        "runs": s.runs,
        "total_ms": s.total_ms,
        "op_types": s.ops.iter().map(|o| json!({
            "op_type": o.op_type, "ms": o.ms, "share": o.share, "count": o.count,
            "shapes": o.shapes,
        })).collect::<Vec<_>>(),
        "nodes": s.nodes.iter().map(|n| json!({
            "node": n.node, "op_type": n.op_type, "engine": n.engine, "kernel": n.kernel,
            "ms": n.ms, "share": n.share, "shapes": n.shapes,
        })).collect::<Vec<_>>(),
    })
}
