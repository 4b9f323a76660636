//! Stream assignment (GE's logical stream allocator, ge-reference §5.1, simplified): per
//! partition, in a topological order of the partition graph —
//!
//! 1. the input graph and partitions of `skip_assign_stream` engines get no stream;
//! 2. a user stream label (`_stream_label`) gets one stream, shared by its partitions;
//! 3. an `independent` engine gets one stream of its own, shared by its partitions;
//! 4. with engine parallelism off, every other partition shares one stream;
//! 5. otherwise a partition reuses the stream of a predecessor partition — latest rank first —
//!    whose stream no other successor took yet, when both are on the same engine or this
//!    engine has `attach`, and the predecessor is neither independent nor labelled; else it
//!    gets a new stream.
//!
//! Events: a node waits for a producer on another stream. A producer without a stream is
//! looked through to the streamed producers behind it.

use std::collections::{BTreeMap, HashMap};

use slotmap::SecondaryMap;

use rge_engine::SchedulingFlags;
use rge_ir::{ComputeGraph, NodeId};

use crate::manager::EngineManager;
use crate::options::CompileOptions;
use crate::partition::PartitionPlan;

/// One cross-stream dependency: `dst` (on `dst_stream`) waits for `src` (on `src_stream`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    pub id: u32,
    pub src: NodeId,
    pub dst: NodeId,
    pub src_stream: u32,
    pub dst_stream: u32,
}

/// Streams of a plan's partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionStreams {
    /// Per partition of the plan (plan order): its stream, or `None`.
    pub streams: Vec<Option<u32>>,
    pub stream_count: u32,
}

fn flags_of(manager: &EngineManager, engine: &str) -> SchedulingFlags {
    manager
        .get(engine)
        .map_or(SchedulingFlags::SKIP_ATTACH, |e| e.scheduling())
}

/// Assigns streams to the partitions of `plan`.
pub fn assign_partition_streams(
    plan: &PartitionPlan,
    manager: &EngineManager,
    options: &CompileOptions,
) -> PartitionStreams {
    let p = plan.partitions.len();
    let mut preds: Vec<Vec<u32>> = vec![Vec::new(); p];
    for e in &plan.edges {
        let list = &mut preds[e.dst_partition as usize];
        if !list.contains(&e.src_partition) {
            list.push(e.src_partition);
        }
    }
    let order = plan
        .topological_order()
        .unwrap_or_else(|| (0..p as u32).collect());
    let mut streams: Vec<Option<u32>> = vec![None; p];
    let mut count = 0u32;
    let mut new_stream = || {
        count += 1;
        count - 1
    };
    let mut by_label: BTreeMap<String, u32> = BTreeMap::new();
    let mut by_engine: BTreeMap<String, u32> = BTreeMap::new();
    let mut shared: Option<u32> = None;
    let mut reused = vec![false; p];
    // Streams that must not be reused by dependency (independent or labelled).
    let mut pinned = vec![false; p];
    for &i in &order {
        let info = &plan.partitions[i as usize];
        let flags = flags_of(manager, &info.engine);
        if info.is_input_graph() || flags.skip_assign_stream {
            continue;
        }
        let s = if let Some(label) = &info.stream_label {
            pinned[i as usize] = true;
            *by_label
                .entry(label.clone())
                .or_insert_with(&mut new_stream)
        } else if flags.independent {
            pinned[i as usize] = true;
            *by_engine
                .entry(info.engine.to_string())
                .or_insert_with(&mut new_stream)
        } else if !options.engine_parallel {
            *shared.get_or_insert_with(&mut new_stream)
        } else {
            let mut cands = preds[i as usize].clone();
            cands.sort_by_key(|&q| std::cmp::Reverse(plan.partitions[q as usize].rank));
            let pick = cands.into_iter().find(|&q| {
                let qi = &plan.partitions[q as usize];
                streams[q as usize].is_some()
                    && !reused[q as usize]
                    && !pinned[q as usize]
                    && (qi.engine == info.engine || flags.attach)
            });
            match pick {
                Some(q) => {
                    reused[q as usize] = true;
                    streams[q as usize].expect("has a stream")
                }
                None => new_stream(),
            }
        };
        streams[i as usize] = Some(s);
    }
    PartitionStreams {
        streams,
        stream_count: count,
    }
}

/// Events on `graph`'s root for the given node streams: for every link whose consumer has a
/// stream, one event per streamed producer on another stream (producers without a stream are
/// looked through). Deduplicated per (producer, consumer), in node order.
pub fn events(graph: &ComputeGraph, node_stream: &SecondaryMap<NodeId, Option<u32>>) -> Vec<Event> {
    let stream = |n: NodeId| node_stream.get(n).copied().flatten();
    // Streamed producers behind a stream-less node, memoized.
    let mut behind: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    fn producers_of(
        graph: &ComputeGraph,
        n: NodeId,
        stream: &dyn Fn(NodeId) -> Option<u32>,
        behind: &mut HashMap<NodeId, Vec<NodeId>>,
    ) -> Vec<NodeId> {
        if let Some(v) = behind.get(&n) {
            return v.clone();
        }
        // Iterative post-order over stream-less producers.
        let mut stack = vec![(n, false)];
        while let Some((m, done)) = stack.pop() {
            if behind.contains_key(&m) {
                continue;
            }
            let ins = graph.node(m).map(|x| x.in_nodes()).unwrap_or_default();
            if !done {
                stack.push((m, true));
                for p in ins.iter().copied().filter(|&p| stream(p).is_none()) {
                    if !behind.contains_key(&p) {
                        stack.push((p, false));
                    }
                }
                continue;
            }
            let mut acc: Vec<NodeId> = Vec::new();
            for p in ins {
                if stream(p).is_some() {
                    acc.push(p);
                } else if let Some(v) = behind.get(&p) {
                    acc.extend(v.iter().copied());
                }
            }
            acc.sort_unstable();
            acc.dedup();
            behind.insert(m, acc);
        }
        behind[&n].clone()
    }
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for v in graph.nodes_of(graph.root()) {
        let Some(t) = stream(v) else { continue };
        let node = graph.node(v).expect("live node");
        for u in node.in_nodes() {
            let srcs = match stream(u) {
                Some(_) => vec![u],
                None => producers_of(graph, u, &stream, &mut behind),
            };
            for s in srcs {
                let ss = stream(s).expect("streamed");
                if ss != t && seen.insert((s, v)) {
                    out.push(Event {
                        id: out.len() as u32,
                        src: s,
                        dst: v,
                        src_stream: ss,
                        dst_stream: t,
                    });
                }
            }
        }
    }
    out
}
