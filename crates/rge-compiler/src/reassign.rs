//! Re-assign passes (GE's `EngineReAssignPass` strategies, engines.md §4.4.2): run in order
//! after every node is placed, each may move nodes to other engines, recording why.

use std::sync::Arc;

use hashbrown::HashMap;
use rayon::prelude::*;
use rge_engine::standard::HOST;
use rge_engine::Support;
use rge_ir::{AttrValue, ComputeGraph, NodeId};

use crate::attr_names::{DATA_FLOW_HANDLE, HOST_EXEC_FLAG};
use crate::error::{CompileError, CompileResult};
use crate::manager::{EngineId, EngineManager, Exclusions};
use crate::placement::Placement;

/// What a pass sees.
pub struct ReassignCtx<'a> {
    pub graph: &'a ComputeGraph,
    pub manager: &'a EngineManager,
    pub exclusions: &'a Exclusions,
    /// The placed nodes whose ops carry at least one attribute, in placement order: all that
    /// a pass keyed on attributes needs to look at (most nodes of a large graph carry none
    /// before placement records its own).
    pub attributed: &'a [NodeId],
}

impl ReassignCtx<'_> {
    /// Whether engine `id` may take node `n`: not excluded, and its store has an info for the
    /// op type and supports the instance.
    pub fn ask(&self, id: EngineId, n: NodeId) -> Support {
        if let Some(r) = self.exclusions.reason(id) {
            return Support::No(r.to_string());
        }
        let op = self.graph.op(n).expect("live node");
        match self.manager.engine(id).kernel_store() {
            Some(s) if s.op_info(op.op_type()).is_some() => s.check_supported(op),
            _ => Support::no(format!("no kernel for op type {}", op.op_type())),
        }
    }
}

/// A re-assign strategy.
pub trait ReassignPass: Send + Sync {
    fn name(&self) -> &str;
    fn run(&self, ctx: &ReassignCtx<'_>, placement: &mut Placement) -> CompileResult<()>;
}

/// The default passes, in GE's order: dynamic data flow, then host-exec; then rge's own:
/// subgraph nodes stay in host memory.
pub fn default_passes() -> Vec<Arc<dyn ReassignPass>> {
    vec![
        Arc::new(DynamicDataFlowPass),
        Arc::new(HostExecPass),
        Arc::new(SubgraphHostSpacePass),
    ]
}

/// Nodes inside subgraphs (If/Loop/Scan bodies) run where host memory is: transfers are
/// inserted on the root graph only, and a body's values cross its boundary by the control-flow
/// kernels' host copies. A subgraph node placed on an engine with its own memory space (the
/// gpu) moves to the cheapest engine in host memory that supports it.
pub struct SubgraphHostSpacePass;

impl ReassignPass for SubgraphHostSpacePass {
    fn name(&self) -> &str {
        "SubgraphHostSpacePass"
    }

    fn run(&self, ctx: &ReassignCtx<'_>, placement: &mut Placement) -> CompileResult<()> {
        let m = ctx.manager;
        let off_host: Vec<EngineId> = m
            .ids()
            .filter(|&id| !m.engine(id).memory_space().is_host())
            .collect();
        if off_host.is_empty() {
            return Ok(());
        }
        let root = ctx.graph.root();
        let moved: Vec<NodeId> = placement
            .order
            .iter()
            .copied()
            .filter(|&n| ctx.graph.graph_of(n).is_some_and(|g| g != root))
            .filter(|&n| {
                placement
                    .engine_id(n)
                    .is_some_and(|e| off_host.contains(&e))
            })
            .collect();
        for n in moved {
            let from = placement.engine_id(n).map(|e| m.name(e).to_string());
            let to = m
                .by_cost()
                .iter()
                .copied()
                .filter(|id| !off_host.contains(id))
                .find(|&id| matches!(ctx.ask(id, n), Support::Yes));
            let Some(to) = to else {
                return Err(CompileError::Placement {
                    node: ctx.graph.name_of(n).to_string(),
                    message: format!(
                        "is in a subgraph, and no engine in host memory supports it (placed on `{}`)",
                        from.unwrap_or_default()
                    ),
                });
            };
            placement.reassign(
                n,
                to,
                None,
                self.name(),
                format!(
                    "in a subgraph, whose values stay in host memory (engine `{}` has its own)",
                    from.unwrap_or_default()
                ),
            );
        }
        Ok(())
    }
}

/// GE's `HostcpuEngineUpdatePass`: nodes flagged `_host_exec_flag` (true or non-zero) go to
/// the `host` engine. Impossible (no host engine, excluded, unsupported) is an error naming
/// the node, because the user asked for it explicitly.
pub struct HostExecPass;

fn flagged(v: Option<&AttrValue>) -> bool {
    matches!(v, Some(AttrValue::Bool(true))) || matches!(v, Some(AttrValue::Int(i)) if *i != 0)
}

impl ReassignPass for HostExecPass {
    fn name(&self) -> &str {
        "HostExecPass"
    }

    fn run(&self, ctx: &ReassignCtx<'_>, placement: &mut Placement) -> CompileResult<()> {
        let flagged_nodes: Vec<NodeId> = ctx
            .attributed
            .par_iter()
            .with_min_len(4096)
            .copied()
            .filter(|&n| flagged(ctx.graph.op(n).and_then(|o| o.attrs().get(HOST_EXEC_FLAG))))
            .collect();
        if flagged_nodes.is_empty() {
            return Ok(());
        }
        let err = |n: NodeId, message: String| CompileError::Placement {
            node: ctx.graph.name_of(n).to_string(),
            message,
        };
        let host = ctx.manager.id(HOST);
        for n in flagged_nodes {
            let host = host.ok_or_else(|| {
                err(
                    n,
                    format!("has {HOST_EXEC_FLAG} but no `{HOST}` engine is registered"),
                )
            })?;
            if placement.engine_id(n) == Some(host) {
                continue;
            }
            match ctx.ask(host, n) {
                Support::Yes => placement.reassign(
                    n,
                    host,
                    None,
                    self.name(),
                    format!("{HOST_EXEC_FLAG} is set"),
                ),
                Support::No(r) => {
                    return Err(err(
                        n,
                        format!("has {HOST_EXEC_FLAG} but engine `{HOST}` cannot take it: {r}"),
                    ))
                }
            }
        }
        Ok(())
    }
}

/// GE's `DynamicDataFlowEngineReassignPass`, as rge reads it: nodes that share a data-flow
/// resource handle (`_data_flow_handle`, a string or int) must run on one engine, the engine
/// of the group's first node in placement order. A member that engine cannot take is an error.
pub struct DynamicDataFlowPass;

fn handle_key(v: &AttrValue) -> Option<String> {
    match v {
        AttrValue::String(s) if !s.is_empty() => Some(s.clone()),
        AttrValue::Int(i) => Some(i.to_string()),
        _ => None,
    }
}

impl ReassignPass for DynamicDataFlowPass {
    fn name(&self) -> &str {
        "DynamicDataFlowPass"
    }

    fn run(&self, ctx: &ReassignCtx<'_>, placement: &mut Placement) -> CompileResult<()> {
        let members: Vec<(NodeId, String)> = ctx
            .attributed
            .par_iter()
            .with_min_len(4096)
            .filter_map(|&n| {
                ctx.graph
                    .op(n)
                    .and_then(|o| o.attrs().get(DATA_FLOW_HANDLE))
                    .and_then(handle_key)
                    .map(|k| (n, k))
            })
            .collect();
        let mut groups: Vec<(String, Vec<NodeId>)> = Vec::new();
        let mut index: HashMap<String, usize> = HashMap::new();
        for (n, key) in members {
            let i = *index.entry(key.clone()).or_insert_with(|| {
                groups.push((key, Vec::new()));
                groups.len() - 1
            });
            groups[i].1.push(n);
        }
        for (key, members) in groups {
            let first = members[0];
            let target = placement.engine_id(first).expect("placed");
            for &n in &members[1..] {
                if placement.engine_id(n) == Some(target) {
                    continue;
                }
                match ctx.ask(target, n) {
                    Support::Yes => placement.reassign(
                        n,
                        target,
                        None,
                        self.name(),
                        format!(
                            "shares data-flow handle `{key}` with `{}`",
                            ctx.graph.name_of(first)
                        ),
                    ),
                    Support::No(r) => {
                        return Err(CompileError::Placement {
                            node: ctx.graph.name_of(n).to_string(),
                            message: format!(
                                "shares data-flow handle `{key}` with `{}` on engine `{}`, which cannot take it: {r}",
                                ctx.graph.name_of(first),
                                ctx.manager.name(target)
                            ),
                        })
                    }
                }
            }
        }
        Ok(())
    }
}
