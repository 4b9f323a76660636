//! `rge explain MODEL [--json] [--html FILE]`: compiles the model with the command line's
//! engine set and reports, for every node, each engine asked in cost order with its answer
//! and reason, the chosen engine, partition, stream, kernel and memory space; the transfers
//! between memory spaces; and a summary per engine (nodes, share of FLOPs).

use std::collections::HashMap;
use std::path::Path;

use rge_compiler::CompiledModel;
use rge_engine::Support;
use rge_ir::ComputeGraph;
use rge_runtime::EngineSet;

use super::{CliError, CliResult};
use crate::engines::EngineArgs;
use crate::explain::{
    flops::node_flops, report::shape_label, Candidate, EdgeExplain, EngineSummary, ExplainReport,
    NodeExplain, PartitionExplain, PassExplain, TransferExplain,
};

/// `rge explain`.
pub fn run(file: &Path, engines: &EngineArgs, as_json: bool, html: Option<&Path>) -> CliResult {
    let (set, compiled) = super::engines::compile_file(file, engines)?;
    let report = explain(&set, &compiled, &file.display().to_string())
        .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
    render(&report, as_json, html)
}

/// `rge explain --tensor-parallel N`: the report of rank 0's shard of the model
/// (`rge_comm::tensor_parallel`): which nodes were split, by rows or columns, and the
/// collectives inserted, placed like every node.
pub fn run_tensor_parallel(
    file: &Path,
    engines: &EngineArgs,
    as_json: bool,
    html: Option<&Path>,
    ranks: usize,
) -> CliResult {
    if ranks == 0 {
        return Err(CliError::new(
            "option `--tensor-parallel`: must be at least 1",
        ));
    }
    let (m, _) = crate::model::load(file)?;
    let mut graph = super::run::graph_of(m);
    let shard = rge_comm::tensor_parallel::shard(&mut graph, 0, ranks)
        .map_err(|e| CliError::new(format!("{}: --tensor-parallel: {e}", file.display())))?;
    // Rank 0 of a world of `ranks` (nothing is communicated while explaining).
    let world = rge_comm::local_world(rge_comm::Groups::world(ranks), rge_comm::DEFAULT_TIMEOUT);
    let comm: std::sync::Arc<dyn rge_comm::Communicator> = std::sync::Arc::new(
        world
            .into_iter()
            .next()
            .ok_or_else(|| CliError::new("a world without ranks"))?,
    );
    let engines = EngineArgs {
        comm: Some(comm),
        ..engines.clone()
    };
    let set = crate::engines::engine_set(&engines)?;
    let compiled = set
        .pipeline()
        .compile(graph)
        .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
    let report = explain(
        &set,
        &compiled,
        &format!(
            "{} (tensor parallel, rank 0 of {ranks}: {})",
            file.display(),
            shard.summary()
        ),
    )
    .map_err(|e| CliError::new(format!("{}: {e}", file.display())))?;
    render(&report, as_json, html)
}

/// The report as text or JSON, and as an HTML page when asked.
fn render(report: &ExplainReport, as_json: bool, html: Option<&Path>) -> CliResult {
    if let Some(out) = html {
        std::fs::write(out, crate::explain::render_html(report))
            .map_err(|e| CliError::new(format!("{}: {e}", out.display())))?;
    }
    Ok(if as_json {
        super::engines::pretty(report.to_json())
    } else {
        crate::explain::render_text(report)
    })
}

fn is_constant(op_type: &str) -> bool {
    matches!(op_type, "Const" | "Constant")
}

/// The report of a compiled model.
pub fn explain(
    set: &EngineSet,
    compiled: &CompiledModel,
    model: &str,
) -> Result<ExplainReport, String> {
    let graph: &ComputeGraph = &compiled.graph;
    let manager = set.manager();
    let exclusions = manager
        .exclusions(set.options())
        .map_err(|e| e.to_string())?;
    let mut partition_of: HashMap<&str, &str> = HashMap::new();
    for p in &compiled.partitions {
        for n in &p.nodes {
            partition_of.insert(n.as_str(), p.name.as_str());
        }
    }
    let mut report = ExplainReport {
        model: model.to_string(),
        passes: compiled
            .optimizations
            .iter()
            .map(|p| PassExplain {
                name: p.name.clone(),
                level: p.level.name().to_string(),
                rewrites: p.rewrites,
                nodes_before: p.nodes_before,
                nodes_after: p.nodes_after,
            })
            .collect(),
        ..ExplainReport::default()
    };
    for n in graph.nodes_of(graph.root()) {
        let Some(op) = graph.op(n) else { continue };
        let mut candidates = Vec::new();
        for &id in manager.by_cost() {
            let engine = manager.engine(id);
            let cost = engine.attributes().compute_cost;
            let store = engine.kernel_store();
            let (supported, reason) = match store {
                None => (false, "the engine has no kernels".to_string()),
                Some(s) if s.op_info(op.op_type()).is_none() => {
                    (false, format!("no kernel for op type {}", op.op_type()))
                }
                Some(s) => match s.check_supported(op) {
                    Support::Yes => (true, "supported".to_string()),
                    Support::No(r) => (false, r),
                },
            };
            let excluded = exclusions.is_excluded(id);
            let reason = match exclusions.reason(id) {
                Some(r) if supported => format!("{reason}, but excluded ({r})"),
                _ => reason,
            };
            candidates.push(Candidate {
                engine: engine.name().to_string(),
                cost,
                supported,
                excluded,
                reason,
            });
        }
        let engine = op.engine_name().to_string();
        let memory_space = manager
            .get(&engine)
            .map_or_else(|| "host".to_string(), |e| e.memory_space().to_string());
        let mut notes = Vec::new();
        if let Some(rge_ir::AttrValue::ListString(v)) = op.attrs().get(rge_dense::fuse::FUSED_ATTR)
        {
            notes.push(format!("fused by the dense engine from: {}", v.join(", ")));
        }
        if op
            .attrs()
            .get_int(rge_dense::winograd_nhwc::WINOGRAD_ATTR)
            .ok()
            .flatten()
            == Some(1)
        {
            notes.push(
                "Winograd F(2x2, 3x3) on channel vectors (the dense engine's choice for a 3x3 \
                 stride-1 layer; docs/dense-engine.md)"
                    .to_string(),
            );
        }
        if let Some(rge_ir::AttrValue::ListString(v)) = op.attrs().get(rge_fused::REGION_ATTR) {
            if let Some((why, from)) = v.split_first() {
                notes.push(format!(
                    "fused by the fused engine ({why}) from: {}",
                    from.join(", ")
                ));
            }
        }
        if let Some(rge_ir::AttrValue::ListString(v)) =
            op.attrs().get(rge_compiler::optimize::REWRITE_ATTR)
        {
            if let Some((pass, from)) = v.split_first() {
                notes.push(format!("made by pass `{pass}` from: {}", from.join(", ")));
            }
        }
        if let Some(rge_ir::AttrValue::String(v)) =
            op.attrs().get(rge_comm::tensor_parallel::TP_ATTR)
        {
            notes.push(format!("tensor parallel: {v}"));
        }
        if op.op_type().starts_with("Hcom") {
            let group = op.attrs().get_str("group").ok().flatten().unwrap_or("");
            notes.push(format!("collective over group `{group}`"));
        }
        if compiled.placement.get(n).is_some() {
            notes.push(compiled.placement.reason(graph, n));
        }
        let node = NodeExplain {
            name: op.name().to_string(),
            op_type: op.op_type().to_string(),
            kernel: op
                .attrs()
                .get_str(rge_runtime::lower::KERNEL_ATTR)
                .ok()
                .flatten()
                .map(str::to_string)
                .or_else(|| set.kernel_name(op)),
            partition: partition_of.get(op.name()).map(|s| s.to_string()),
            stream: compiled.node_streams.get(n).copied().flatten(),
            memory_space,
            constant: is_constant(op.op_type()),
            flops: node_flops(graph, n),
            fused_into: None,
            notes,
            engine,
            candidates,
        };
        if op.op_type() == rge_runtime::transfer::TRANSFER_OP {
            let attrs = op.attrs();
            let get = |k: &str| attrs.get_str(k).ok().flatten().unwrap_or("").to_string();
            let node_ref = graph.node(n);
            let from_node = node_ref
                .and_then(|nd| nd.peer_of_input(0))
                .map(|a| graph.name_of(a.node).to_string())
                .unwrap_or_default();
            let to_node = node_ref
                .and_then(|nd| nd.peers_of_output(0).first().copied())
                .map(|a| graph.name_of(a.node).to_string())
                .unwrap_or_default();
            report.transfers.push(TransferExplain {
                name: op.name().to_string(),
                from_space: get(rge_runtime::transfer::FROM_SPACE_ATTR),
                to_space: get(rge_runtime::transfer::TO_SPACE_ATTR),
                tensor: from_node.clone(),
                from_node,
                to_node,
            });
        }
        report.nodes.push(node);
        let Some(node_ref) = graph.node(n) else {
            continue;
        };
        for i in 0..node_ref.in_data_count() {
            let Some(a) = node_ref.peer_of_input(i) else {
                continue;
            };
            let out = a.index.max(0) as usize;
            let desc = graph.op(a.node).and_then(|o| o.output(out));
            report.edges.push(EdgeExplain {
                from: graph.name_of(a.node).to_string(),
                from_output: out,
                to: op.name().to_string(),
                to_input: i,
                dtype: desc.map_or_else(String::new, |d| format!("{:?}", d.dtype())),
                shape: desc.map_or_else(String::new, |d| shape_label(d.shape())),
            });
        }
    }
    report.partitions = compiled
        .partitions
        .iter()
        .map(|p| PartitionExplain {
            name: p.name.clone(),
            engine: p.engine.clone(),
            stream: p.stream,
            nodes: p.nodes.clone(),
        })
        .collect();
    report.engines = manager
        .by_cost()
        .iter()
        .map(|&id| {
            let e = manager.engine(id);
            EngineSummary {
                name: e.name().to_string(),
                cost: e.attributes().compute_cost,
                memory_space: e.memory_space().to_string(),
                ..EngineSummary::default()
            }
        })
        .collect();
    report.engines = report.engine_summary();
    Ok(report)
}
