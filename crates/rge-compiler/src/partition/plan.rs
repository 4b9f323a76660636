//! From clusters to partitions (ge-reference §4.4–4.6): partitions numbered `k` in order of
//! their first node, data-like sources gathered into the rank-0 input graph, ranks 1, 2… in
//! order of first node, GE's names, and one End/PlaceHolder pair per crossing link.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use std::sync::Arc;

use slotmap::SecondaryMap;

use rge_ir::{ComputeGraph, InAnchor, NodeId, OutAnchor};

use super::dense::DenseGraph;
use super::{CrossingEdge, Item, ItemKind, PartitionInfo, PartitionMode, PartitionPlan};
use crate::attr_names::INPUT_NODES_SUBGRAPH;
use crate::error::CompileResult;

pub(crate) struct PlanInput<'a> {
    pub graph: &'a ComputeGraph,
    pub dense: &'a DenseGraph,
    pub roots: &'a [u32],
    pub data: &'a [bool],
    pub engine: &'a [u32],
    pub engine_names: &'a [String],
    /// Per node its stream label's index in `label_names` (0: none).
    pub label: &'a [u32],
    pub label_names: &'a [&'a str],
    /// The number of clusters (a bound on the number of partitions).
    pub clusters: usize,
    /// Per node its stage; empty when no node has one.
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
        label,
        label_names,
        clusters,
        stage,
        unknown,
        mode,
        times,
    } = input;
    let n = dense.len();
    let has_input = data.iter().any(|&d| d);
    let names: Vec<Arc<str>> = engine_names.iter().map(|e| Arc::from(e.as_str())).collect();
    let mut partitions: Vec<PartitionInfo> = Vec::with_capacity(clusters + 1);
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
    // Partition and `k` of each node; per partition its first node, `k` and counts. The
    // counters live in arrays of their own rather than in the (large) infos, which are
    // written once each.
    let mut part_of_root = vec![UNSET; n];
    let mut part = vec![0u32; n];
    let mut k_of = vec![0u32; n];
    let mut firsts: Vec<u32> = Vec::with_capacity(clusters);
    let mut k_of_part: Vec<u32> = Vec::with_capacity(clusters + 1);
    let mut node_count: Vec<u32> = Vec::with_capacity(clusters + 1);
    if has_input {
        k_of_part.push(UNSET);
        node_count.push(0);
    }
    let mut next_k = 0u32;
    for v in 0..n {
        if data[v] {
            k_of[v] = next_k;
            next_k += 1;
            part[v] = 0;
        } else {
            let r = roots[v] as usize;
            if part_of_root[r] == UNSET {
                part_of_root[r] = k_of_part.len() as u32;
                firsts.push(v as u32);
                k_of_part.push(next_k);
                node_count.push(0);
                next_k += 1;
            }
            part[v] = part_of_root[r];
            k_of[v] = k_of_part[part[v] as usize];
        }
        node_count[part[v] as usize] += 1;
    }
    drop(part_of_root);
    partitions.extend(firsts.iter().map(|&v| {
        let v = v as usize;
        let mut info = new_info(0, 0, names[engine[v] as usize].clone());
        info.stream_label = (label[v] != 0).then(|| label_names[label[v] as usize].to_string());
        info.stage = stage.get(v).copied().flatten();
        info.unknown_shape = unknown[v];
        info
    }));
    let mut node_start = Vec::with_capacity(partitions.len());
    let mut next = 0u32;
    for (p, info) in partitions.iter_mut().enumerate() {
        info.k = k_of_part[p];
        info.rank = p as u32 + u32::from(!has_input);
        info.nodes = (next, node_count[p]);
        node_start.push(next);
        next += node_count[p];
    }
    // Nodes grouped by partition; each node's slot in its partition.
    let mut nodes = vec![NodeId::default(); n];
    let mut location = SecondaryMap::with_capacity(n);
    let mut fill = vec![0u32; partitions.len()];
    for v in 0..n {
        let id = dense.ids[v];
        let p = part[v] as usize;
        let slot = fill[p];
        nodes[(node_start[p] + slot) as usize] = id;
        fill[p] += 1;
        location.insert(id, (part[v], slot, k_of[v]));
    }

    // Crossing links, in GE's order (consumers in topological order, then anchor order).
    let crossing = (0..n)
        .map(|v| {
            let pv = part[v];
            dense
                .preds(v as u32)
                .iter()
                .filter(|&&u| part[u as usize] != pv)
                .count()
        })
        .sum();
    let mut edges: Vec<CrossingEdge> = Vec::with_capacity(crossing);
    let mut end_count = vec![0u32; partitions.len()];
    let mut pld_count = vec![0u32; partitions.len()];
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
            let index = edges.len() as u32;
            edges.push(CrossingEdge {
                index,
                src,
                dst,
                src_partition: pu,
                dst_partition: pv,
                src_k: k_of[u as usize],
                dst_k: k_of[v],
            });
            end_count[pu as usize] += 1;
            pld_count[pv as usize] += 1;
        }
    }

    // Items, one array: per partition its nodes, Ends and PlaceHolders in GE's order — a node,
    // then its PlaceHolders; an End joins its producer's partition when its link is met.
    let mut item_at = Vec::with_capacity(partitions.len());
    let mut next = 0u32;
    for (p, info) in partitions.iter_mut().enumerate() {
        info.end_count = end_count[p] as usize;
        info.placeholder_count = pld_count[p] as usize;
        let len = node_count[p] + end_count[p] + pld_count[p];
        info.items = (next, len);
        item_at.push(next);
        next += len;
    }
    let mut items = vec![Item::new(ItemKind::End(0)); next as usize];
    let mut push = |p: u32, item: Item| {
        let at = &mut item_at[p as usize];
        items[*at as usize] = item;
        *at += 1;
    };
    let mut e = 0usize;
    // A partition's nodes come in the same order as its `Node` items.
    fill.fill(0);
    for (&id, &pv) in dense.ids.iter().zip(&part) {
        let slot = &mut fill[pv as usize];
        push(pv, Item::new(ItemKind::Node(*slot)));
        *slot += 1;
        while e < edges.len() && edges[e].dst.node == id {
            let x = &edges[e];
            push(x.src_partition, Item::new(ItemKind::End(x.index)));
            push(x.dst_partition, Item::new(ItemKind::Pld(x.index)));
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
