//! From clusters to partitions (ge-reference §4.4–4.6): partitions numbered `k` in order of
//! their first node, data-like sources gathered into the rank-0 input graph, ranks 1, 2… in
//! order of first node, GE's names, and one End/PlaceHolder pair per crossing link.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use std::sync::Arc;

use slotmap::SecondaryMap;

use rge_ir::{ComputeGraph, InAnchor, NodeId, OutAnchor};

use super::dense::DenseGraph;
use super::{CrossingEdge, Item, PartitionInfo, PartitionMode, PartitionPlan};
use crate::attr_names::{INPUT_NODES_SUBGRAPH, STREAM_LABEL};
use crate::error::CompileResult;

pub(crate) struct PlanInput<'a> {
    pub graph: &'a ComputeGraph,
    pub dense: &'a DenseGraph,
    pub roots: &'a [u32],
    pub data: &'a [bool],
    pub engine: &'a [u32],
    pub engine_names: &'a [String],
    pub stage: &'a [Option<i64>],
    pub unknown: &'a [bool],
    pub mode: PartitionMode,
    pub times: u32,
}

const UNSET: u32 = u32::MAX;

pub(crate) fn build_plan(input: PlanInput<'_>) -> CompileResult<PartitionPlan> {
    let PlanInput {
        graph,
        dense,
        roots,
        data,
        engine,
        engine_names,
        stage,
        unknown,
        mode,
        times,
    } = input;
    let n = dense.len();
    let has_input = data.iter().any(|&d| d);
    let names: Vec<Arc<str>> = engine_names.iter().map(|e| Arc::from(e.as_str())).collect();
    let mut partitions: Vec<PartitionInfo> = Vec::new();
    let new_info = |k: u32, rank: u32, engine: Arc<str>| PartitionInfo {
        k,
        rank,
        times,
        engine,
        stream_label: None,
        stage: None,
        unknown_shape: false,
        nodes: (0, 0),
        end_count: 0,
        placeholder_count: 0,
        items: (0, 0),
    };
    if has_input {
        partitions.push(new_info(UNSET, 0, Arc::from(INPUT_NODES_SUBGRAPH)));
    }
    // Partition and `k` of each node; node counts.
    let mut part_of_root = vec![UNSET; n];
    let mut part = vec![0u32; n];
    let mut k_of = vec![0u32; n];
    let mut next_k = 0u32;
    for v in 0..n {
        if data[v] {
            k_of[v] = next_k;
            next_k += 1;
            part[v] = 0;
        } else {
            let r = roots[v] as usize;
            if part_of_root[r] == UNSET {
                let p = partitions.len() as u32;
                part_of_root[r] = p;
                let rank = p + u32::from(!has_input);
                let op = graph.op(dense.ids[v]).expect("live node");
                let mut info = new_info(next_k, rank, names[engine[v] as usize].clone());
                info.stream_label = op
                    .attrs()
                    .get_str(STREAM_LABEL)
                    .ok()
                    .flatten()
                    .map(String::from);
                info.stage = stage[v];
                info.unknown_shape = unknown[v];
                partitions.push(info);
                next_k += 1;
            }
            part[v] = part_of_root[r];
            k_of[v] = partitions[part[v] as usize].k;
        }
        partitions[part[v] as usize].nodes.1 += 1;
    }
    let mut next = 0u32;
    for p in partitions.iter_mut() {
        let count = p.nodes.1;
        p.nodes = (next, 0);
        next += count;
    }
    let mut nodes = vec![NodeId::default(); n];
    let mut location = SecondaryMap::with_capacity(n);
    for v in 0..n {
        let id = dense.ids[v];
        let p = &mut partitions[part[v] as usize];
        let slot = p.nodes.1;
        nodes[(p.nodes.0 + slot) as usize] = id;
        p.nodes.1 += 1;
        location.insert(id, (part[v], slot, k_of[v]));
    }

    // Crossing links, in GE's order (consumers in topological order, then anchor order).
    let mut edges: Vec<CrossingEdge> = Vec::new();
    for v in 0..n {
        let id = dense.ids[v];
        let pv = part[v];
        for (u, out, inp) in dense.pred_links(v as u32) {
            let pu = part[u as usize];
            if pu == pv {
                continue;
            }
            let src = OutAnchor {
                node: dense.ids[u as usize],
                index: out,
            };
            let dst = InAnchor {
                node: id,
                index: inp,
            };
            let src_k = k_of[u as usize];
            let index = edges.len() as u32;
            edges.push(CrossingEdge {
                index,
                src,
                dst,
                src_partition: pu,
                dst_partition: pv,
                src_k,
                dst_k: k_of[v],
            });
            partitions[pu as usize].end_count += 1;
            partitions[pv as usize].placeholder_count += 1;
        }
    }

    // Items, one array: per partition its nodes, Ends and PlaceHolders in GE's order — a node,
    // then its PlaceHolders; an End joins its producer's partition when its link is met.
    let mut next = 0u32;
    for p in partitions.iter_mut() {
        let len = p.nodes.1 + (p.end_count + p.placeholder_count) as u32;
        p.items = (next, 0);
        next += len;
    }
    let mut items = vec![Item::End(0); next as usize];
    let mut push = |partitions: &mut [PartitionInfo], p: u32, item: Item| {
        let r = &mut partitions[p as usize].items;
        items[(r.0 + r.1) as usize] = item;
        r.1 += 1;
    };
    let mut e = 0usize;
    for (&id, &pv) in dense.ids.iter().zip(&part) {
        push(&mut partitions, pv, Item::Node(id));
        while e < edges.len() && edges[e].dst.node == id {
            let x = &edges[e];
            push(&mut partitions, x.src_partition, Item::End(x.index));
            push(&mut partitions, x.dst_partition, Item::Pld(x.index));
            e += 1;
        }
    }
    let root = graph.root();
    Ok(PartitionPlan {
        mode,
        times,
        graph_name: graph.name().to_string(),
        partitions,
        edges,
        nodes,
        items,
        levels: Vec::new(),
        location,
        graph_attrs: graph.graph_attrs(root).cloned().unwrap_or_default(),
        inputs: graph
            .input_nodes(root)
            .iter()
            .map(|&x| graph.name_of(x).to_string())
            .collect(),
        outputs: graph
            .output_nodes(root)
            .iter()
            .map(|&(x, i)| (graph.name_of(x).to_string(), i))
            .collect(),
    })
}

/// Kahn's algorithm over the partition graph, lowest rank first.
pub(crate) fn partition_topo_order(plan: &PartitionPlan) -> Option<Vec<u32>> {
    let p = plan.partitions.len();
    let mut succ: Vec<Vec<u32>> = vec![Vec::new(); p];
    let mut deg = vec![0u32; p];
    let mut seen = std::collections::HashSet::new();
    for e in &plan.edges {
        if seen.insert((e.src_partition, e.dst_partition)) {
            succ[e.src_partition as usize].push(e.dst_partition);
            deg[e.dst_partition as usize] += 1;
        }
    }
    let mut heap: BinaryHeap<Reverse<(u32, u32)>> = (0..p as u32)
        .filter(|&i| deg[i as usize] == 0)
        .map(|i| Reverse((plan.partitions[i as usize].rank, i)))
        .collect();
    let mut order = Vec::with_capacity(p);
    while let Some(Reverse((_, i))) = heap.pop() {
        order.push(i);
        for &j in &succ[i as usize] {
            deg[j as usize] -= 1;
            if deg[j as usize] == 0 {
                heap.push(Reverse((plan.partitions[j as usize].rank, j)));
            }
        }
    }
    (order.len() == p).then_some(order)
}

/// `(partition, position)` of an original node (for materialization).
pub(crate) fn location(plan: &PartitionPlan, n: NodeId) -> Option<(u32, u32)> {
    plan.location.get(n).map(|&(p, slot, _)| (p, slot))
}
