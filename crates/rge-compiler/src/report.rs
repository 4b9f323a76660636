//! What the `rge` command line prints: `rge engines`, `rge place`, `rge partition` — as plain
//! data, JSON and text (and DOT for partitions). The CLI itself lives in the `rge` crate.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde_json::{json, Value};

use rge_ir::{ComputeGraph, NodeId};

use crate::error::CompileResult;
use crate::manager::EngineManager;
use crate::model::PartitionSummary;
use crate::options::{split_engine_list, CompileOptions, CoreEngineType, OPTION_ENGINE_TYPE};
use crate::partition::{partition, PartitionMode, PartitionPlan};
use crate::placement::Placement;
use crate::placer::place;
use crate::streams::{assign_partition_streams, events};

/// Compile options from the command line's `--exclude-engines a,b` and `--engine-type T`.
pub fn cli_options(
    exclude: Option<&str>,
    engine_type: Option<&str>,
) -> CompileResult<CompileOptions> {
    let mut o = CompileOptions::default();
    if let Some(e) = exclude {
        o.exclude_engines = split_engine_list(e);
    }
    if let Some(t) = engine_type {
        o.core_engine_type =
            Some(
                CoreEngineType::parse(t).ok_or_else(|| crate::CompileError::Option {
                    key: OPTION_ENGINE_TYPE.into(),
                    message: format!("`{t}` is not a core engine type (dense or vector)"),
                })?,
            );
    }
    Ok(o)
}

/// One engine in `rge engines`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineRow {
    pub name: String,
    pub cost: u8,
    pub runtime: &'static str,
    /// "atomic" or "composite".
    pub kind: &'static str,
    pub members: Vec<String>,
    pub independent: bool,
    pub attach: bool,
    pub skip_assign_stream: bool,
    /// Op types with kernels; `None` when the engine takes any op type.
    pub op_types: Option<usize>,
}

/// Every engine, in cost order.
pub fn list_engines(manager: &EngineManager) -> Vec<EngineRow> {
    manager
        .by_cost()
        .iter()
        .map(|&id| {
            let e = manager.engine(id);
            let a = e.attributes();
            let f = e.scheduling();
            EngineRow {
                name: a.name.clone(),
                cost: a.compute_cost,
                runtime: a.runtime.name(),
                kind: if a.is_atomic() { "atomic" } else { "composite" },
                members: a.kind.members().to_vec(),
                independent: f.independent,
                attach: f.attach,
                skip_assign_stream: f.skip_assign_stream,
                op_types: e.kernel_store().map_or(Some(0), |s| s.op_types().count()),
            }
        })
        .collect()
}

/// `{"engines": [{name, cost, runtime, kind, members, independent, attach,
/// skip_assign_stream, op_types}]}`; `op_types` is a count or "any".
pub fn engines_json(rows: &[EngineRow]) -> Value {
    let list: Vec<Value> = rows
        .iter()
        .map(|r| {
            json!({
                "name": r.name,
                "cost": r.cost,
                "runtime": r.runtime,
                "kind": r.kind,
                "members": r.members,
                "independent": r.independent,
                "attach": r.attach,
                "skip_assign_stream": r.skip_assign_stream,
                "op_types": r.op_types.map_or(json!("any"), |n| json!(n)),
            })
        })
        .collect();
    json!({ "engines": list })
}

/// A table of engines.
pub fn engines_text(rows: &[EngineRow]) -> String {
    let mut s = format!(
        "{:<12} {:>4}  {:<7} {:<22} {:<18} {}\n",
        "ENGINE", "COST", "RUNTIME", "KIND", "STREAMS", "OP TYPES"
    );
    for r in rows {
        let kind = if r.members.is_empty() {
            r.kind.to_string()
        } else {
            format!("{}({})", r.kind, r.members.join("+"))
        };
        let flags = rge_engine::SchedulingFlags {
            independent: r.independent,
            attach: r.attach,
            skip_assign_stream: r.skip_assign_stream,
        }
        .describe();
        let ops = r.op_types.map_or("any".to_string(), |n| n.to_string());
        let _ = writeln!(
            s,
            "{:<12} {:>4}  {:<7} {:<22} {:<18} {}",
            r.name, r.cost, r.runtime, kind, flags, ops
        );
    }
    s
}

/// One node in `rge place`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceRow {
    pub name: String,
    pub op_type: String,
    pub engine: String,
    pub reason: String,
}

/// The rows of a placement, in placement order (subgraph nodes after their parent).
pub fn place_rows(graph: &ComputeGraph, placement: &Placement) -> Vec<PlaceRow> {
    placement
        .nodes()
        .iter()
        .map(|&n| PlaceRow {
            name: graph.name_of(n).to_string(),
            op_type: graph.op(n).map_or("", |o| o.op_type()).to_string(),
            engine: placement.engine(n).unwrap_or("").to_string(),
            reason: placement.reason(graph, n),
        })
        .collect()
}

/// Places `graph` and returns its rows (`rge place`).
pub fn place_graph(
    graph: &mut ComputeGraph,
    manager: &EngineManager,
    options: &CompileOptions,
) -> CompileResult<Vec<PlaceRow>> {
    let p = place(graph, manager, options)?;
    Ok(place_rows(graph, &p))
}

/// `{"nodes": [{name, type, engine, reason}]}`.
pub fn place_json(rows: &[PlaceRow]) -> Value {
    let list: Vec<Value> = rows
        .iter()
        .map(|r| json!({"name": r.name, "type": r.op_type, "engine": r.engine, "reason": r.reason}))
        .collect();
    json!({ "nodes": list })
}

/// One line per node: name, type, engine, reason.
pub fn place_text(rows: &[PlaceRow]) -> String {
    let w = rows.iter().map(|r| r.name.len()).max().unwrap_or(4).max(4);
    let t = rows
        .iter()
        .map(|r| r.op_type.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut s = format!("{:<w$}  {:<t$}  {:<10}  REASON\n", "NODE", "TYPE", "ENGINE");
    for r in rows {
        let _ = writeln!(
            s,
            "{:<w$}  {:<t$}  {:<10}  {}",
            r.name, r.op_type, r.engine, r.reason
        );
    }
    s
}

/// `rge partition`: the atomic partitions of a graph with their streams.
#[derive(Debug, Clone)]
pub struct PartitionReport {
    pub graph: String,
    pub partitions: Vec<PartitionSummary>,
    pub stream_count: u32,
    pub event_count: usize,
    /// Graphviz: nodes coloured by engine, grouped by partition.
    pub dot: String,
}

/// Places and partitions `graph` (atomic engines), assigns streams (`rge partition`).
pub fn partition_graph(
    graph: &mut ComputeGraph,
    manager: &EngineManager,
    options: &CompileOptions,
) -> CompileResult<PartitionReport> {
    place(graph, manager, options)?;
    let plan = partition(graph, manager, options, PartitionMode::Atomic, 0)?;
    let streams = assign_partition_streams(&plan, manager, options);
    let mut node_streams = slotmap::SecondaryMap::new();
    for i in 0..plan.partitions.len() {
        for &n in plan.nodes_of(i as u32) {
            node_streams.insert(n, streams.streams[i]);
        }
    }
    let event_count = events(graph, &node_streams).len();
    Ok(PartitionReport {
        graph: graph.name().to_string(),
        partitions: PartitionSummary::all(&plan, graph, &streams.streams),
        stream_count: streams.stream_count,
        event_count,
        dot: partitions_dot(graph, &plan, &streams.streams),
    })
}

/// `{"partitions": [{name, engine, stream, nodes, rank, ends, placeholders}]}`; `stream` is
/// null for partitions without one; `nodes` are original node names.
pub fn partitions_json(report: &PartitionReport) -> Value {
    let list: Vec<Value> = report
        .partitions
        .iter()
        .map(|p| {
            json!({
                "name": p.name,
                "engine": p.engine,
                "stream": p.stream,
                "nodes": p.nodes,
                "rank": p.rank,
                "ends": p.end_count,
                "placeholders": p.placeholder_count,
            })
        })
        .collect();
    json!({
        "graph": report.graph,
        "streams": report.stream_count,
        "events": report.event_count,
        "partitions": list,
    })
}

/// One line per partition.
pub fn partitions_text(report: &PartitionReport) -> String {
    let mut s = format!(
        "graph {}: {} partitions, {} streams, {} events\n",
        report.graph,
        report.partitions.len(),
        report.stream_count,
        report.event_count
    );
    for p in &report.partitions {
        let stream = p.stream.map_or("-".to_string(), |x| x.to_string());
        let _ = writeln!(
            s,
            "{:<40} engine={:<18} stream={:<3} nodes={:<6} ends={:<4} placeholders={}",
            p.name,
            p.engine,
            stream,
            p.nodes.len(),
            p.end_count,
            p.placeholder_count
        );
    }
    s
}

const PALETTE: &[&str] = &[
    "#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
    "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f",
];

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// Graphviz of the root graph: one cluster per partition, nodes filled by engine colour.
pub fn partitions_dot(
    graph: &ComputeGraph,
    plan: &PartitionPlan,
    streams: &[Option<u32>],
) -> String {
    let mut colour: HashMap<&str, &str> = HashMap::new();
    let mut ids: HashMap<NodeId, usize> = HashMap::new();
    let mut s = format!("digraph \"{}\" {{\n", dot_escape(graph.name()));
    s.push_str("  node [shape=box, style=filled, fontname=\"monospace\"];\n");
    for (i, p) in plan.partitions.iter().enumerate() {
        let stream = streams
            .get(i)
            .copied()
            .flatten()
            .map_or("-".to_string(), |x| x.to_string());
        let _ = writeln!(s, "  subgraph \"cluster_{i}\" {{");
        let _ = writeln!(
            s,
            "    label=\"{}\\n{} stream {}\";",
            dot_escape(&p.name()),
            dot_escape(&p.engine),
            stream
        );
        for &n in plan.nodes_of(i as u32) {
            let k = ids.len();
            ids.insert(n, k);
            let engine = graph.op(n).map_or("", |o| o.engine_name());
            let next = PALETTE[colour.len() % PALETTE.len()];
            let c = *colour.entry(engine).or_insert(next);
            let op = graph.op(n).expect("live node");
            let _ = writeln!(
                s,
                "    n{k} [label=\"{}\\n{}\\n{}\", fillcolor=\"{c}\"];",
                dot_escape(op.name()),
                dot_escape(op.op_type()),
                dot_escape(engine)
            );
        }
        s.push_str("  }\n");
    }
    for &n in &plan.nodes {
        let k = ids[&n];
        let Some(node) = graph.node(n) else { continue };
        let mut peers: Vec<(usize, bool)> = node
            .all_out_peers()
            .filter_map(|p| ids.get(&p.node).map(|&d| (d, p.is_control())))
            .collect();
        peers.sort_unstable();
        for (d, ctrl) in peers {
            let style = if ctrl { " [style=dashed]" } else { "" };
            let _ = writeln!(s, "  n{k} -> n{d}{style};");
        }
    }
    s.push_str("}\n");
    s
}
