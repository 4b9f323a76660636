//! One topology per graph, shared by every reader: the nodes numbered in a topological order
//! (the graph's own order when it is one, else the nearest order Kahn's algorithm gives,
//! preferring earlier nodes) with their producer and consumer lists over data and control
//! links, in compact arrays.
//!
//! [`ComputeGraph::topology`] builds it on first use and keeps it until the graph's structure
//! changes: every edit that adds or removes a node or a link, or reorders a graph, bumps the
//! graph's revision, and a topology of an older revision is never handed out. Passes that
//! only read the graph (inference, placement, partitioning, kernel selection, lowering) then
//! share one snapshot instead of each walking the node list and building its own.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use rayon::prelude::*;
use slotmap::SecondaryMap;

use crate::error::{IrError, Result};
use crate::graph::{ComputeGraph, GraphId};
use crate::node::NodeId;
use crate::sort::SortOptions;

/// Nodes per parallel work item when reading the graph.
const CHUNK: usize = 4096;

/// Compressed adjacency: `start[v]..start[v + 1]` indexes `list`.
#[derive(Debug, Clone, Default)]
pub struct Csr {
    pub start: Vec<u32>,
    pub list: Vec<u32>,
}

impl Csr {
    pub fn of(&self, v: u32) -> &[u32] {
        let (a, b) = (self.start[v as usize], self.start[v as usize + 1]);
        &self.list[a as usize..b as usize]
    }

    /// Builds from per-node lists given as (node, neighbour) pairs grouped by node, in order.
    fn from_counts(counts: &[u32], mut fill: impl FnMut(&mut Vec<u32>)) -> Self {
        let mut start = Vec::with_capacity(counts.len() + 1);
        let mut acc = 0u32;
        start.push(0);
        for &c in counts {
            acc += c;
            start.push(acc);
        }
        let mut list = Vec::with_capacity(acc as usize);
        fill(&mut list);
        debug_assert_eq!(list.len(), acc as usize);
        Csr { start, list }
    }

    /// The reverse adjacency.
    fn transpose(&self, n: usize) -> Self {
        let mut counts = vec![0u32; n];
        for &u in &self.list {
            counts[u as usize] += 1;
        }
        let mut start = Vec::with_capacity(n + 1);
        let mut acc = 0u32;
        start.push(0);
        for &c in &counts {
            acc += c;
            start.push(acc);
        }
        let mut fill = start[..n].to_vec();
        let mut list = vec![0u32; acc as usize];
        for v in 0..n as u32 {
            for &u in self.of(v) {
                let slot = &mut fill[u as usize];
                list[*slot as usize] = v;
                *slot += 1;
            }
        }
        Csr { start, list }
    }
}

/// One graph's nodes in topological order with their links.
#[derive(Debug)]
pub struct Topology {
    /// Node ids in topological order.
    pub ids: Vec<NodeId>,
    /// Node id → position in `ids`.
    pub index: SecondaryMap<NodeId, u32>,
    /// Producers of each node (data then control links, with duplicates).
    pub preds: Csr,
    /// Per entry of `preds.list`: the link's anchors, (producer out index, consumer in
    /// index), -1 for control.
    pub pred_ports: Vec<(i32, i32)>,
    /// Consumers of each node, built on first use (the partitioner never needs them).
    succs: OnceLock<Csr>,
}

impl Topology {
    pub fn len(&self) -> usize {
        self.ids.len()
    }
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
    pub fn preds(&self, v: u32) -> &[u32] {
        self.preds.of(v)
    }
    pub fn succs(&self, v: u32) -> &[u32] {
        self.succ_csr().of(v)
    }
    /// Consumers of each node, as one adjacency.
    pub fn succ_csr(&self) -> &Csr {
        self.succs
            .get_or_init(|| self.preds.transpose(self.ids.len()))
    }
    /// `preds(v)` with each link's (producer out index, consumer in index).
    pub fn pred_links(&self, v: u32) -> impl Iterator<Item = (u32, i32, i32)> + '_ {
        let (a, b) = (
            self.preds.start[v as usize],
            self.preds.start[v as usize + 1],
        );
        (a..b).map(move |k| {
            let (o, i) = self.pred_ports[k as usize];
            (self.preds.list[k as usize], o, i)
        })
    }

    /// Reads graph `g` of `graph` (in parallel chunks of nodes). A cycle is an error naming
    /// its nodes.
    fn build(graph: &ComputeGraph, g: GraphId) -> Result<Self> {
        let ids0: Vec<NodeId> = graph.nodes_of(g).collect();
        let n = ids0.len();
        let mut index0 = SecondaryMap::with_capacity(n);
        for (i, &id) in ids0.iter().enumerate() {
            index0.insert(id, i as u32);
        }
        // Each chunk of nodes reads its nodes once: link counts, producers, anchors.
        // Links never leave their graph (the link rule), so every peer is in `index0`.
        struct Chunk {
            counts: Vec<u32>,
            list: Vec<u32>,
            ports: Vec<(i32, i32)>,
        }
        let chunks: Vec<Chunk> = ids0
            .par_chunks(CHUNK)
            .map(|ids| {
                let mut c = Chunk {
                    counts: Vec::with_capacity(ids.len()),
                    list: Vec::with_capacity(ids.len() * 2),
                    ports: Vec::with_capacity(ids.len() * 2),
                };
                for &id in ids {
                    let node = &graph.nodes[id];
                    let before = c.list.len();
                    for (i, p) in node.input_peers().iter().enumerate() {
                        if let Some(p) = p {
                            c.list.push(index0[p.node]);
                            c.ports.push((p.index, i as i32));
                        }
                    }
                    for p in node.in_ctrl_peers() {
                        c.list.push(index0[p.node]);
                        c.ports.push((p.index, -1));
                    }
                    c.counts.push((c.list.len() - before) as u32);
                }
                c
            })
            .collect();
        let links: usize = chunks.iter().map(|c| c.list.len()).sum();
        let mut start = Vec::with_capacity(n + 1);
        let mut list = Vec::with_capacity(links);
        let mut ports0 = Vec::with_capacity(links);
        start.push(0u32);
        for c in chunks {
            let mut acc = *start.last().expect("non-empty");
            start.extend(c.counts.iter().map(|&k| {
                acc += k;
                acc
            }));
            list.extend_from_slice(&c.list);
            ports0.extend_from_slice(&c.ports);
        }
        let preds0 = Csr { start, list };
        let sorted = (0..n as u32).all(|v| preds0.of(v).iter().all(|&u| u < v));
        if sorted {
            return Ok(Topology {
                ids: ids0,
                index: index0,
                preds: preds0,
                pred_ports: ports0,
                succs: OnceLock::new(),
            });
        }
        // Kahn's algorithm, smallest original position first.
        let succs0 = preds0.transpose(n);
        let mut deg: Vec<u32> = (0..n as u32).map(|v| preds0.of(v).len() as u32).collect();
        let mut heap: BinaryHeap<Reverse<u32>> = (0..n as u32)
            .filter(|&v| deg[v as usize] == 0)
            .map(Reverse)
            .collect();
        let mut order = Vec::with_capacity(n);
        while let Some(Reverse(v)) = heap.pop() {
            order.push(v);
            for &w in succs0.of(v) {
                deg[w as usize] -= 1;
                if deg[w as usize] == 0 {
                    heap.push(Reverse(w));
                }
            }
        }
        if order.len() != n {
            // The sorter names the nodes of one cycle.
            return Err(graph
                .sorted_order(g, &SortOptions::default())
                .err()
                .unwrap_or_else(|| IrError::Other("the graph has a cycle".into())));
        }
        let mut pos = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            pos[old as usize] = new as u32;
        }
        let ids: Vec<NodeId> = order.iter().map(|&o| ids0[o as usize]).collect();
        let mut index = SecondaryMap::with_capacity(n);
        for (i, &id) in ids.iter().enumerate() {
            index.insert(id, i as u32);
        }
        let counts: Vec<u32> = order.iter().map(|&o| preds0.of(o).len() as u32).collect();
        let mut pred_ports = Vec::with_capacity(ports0.len());
        let preds = Csr::from_counts(&counts, |list| {
            for &o in &order {
                list.extend(preds0.of(o).iter().map(|&u| pos[u as usize]));
                let (a, b) = (preds0.start[o as usize], preds0.start[o as usize + 1]);
                pred_ports.extend_from_slice(&ports0[a as usize..b as usize]);
            }
        });
        Ok(Topology {
            ids,
            index,
            preds,
            pred_ports,
            succs: OnceLock::new(),
        })
    }
}

/// The topologies built at the graph's current revision, one per graph asked for. Cloning
/// a graph starts the clone with none (they are rebuilt on demand).
#[derive(Default)]
pub(crate) struct TopologyCache(Mutex<Option<Held>>);

/// The revision the topologies were built at, and each graph's.
type Held = (u64, Vec<(GraphId, Arc<Topology>)>);

impl Clone for TopologyCache {
    fn clone(&self) -> Self {
        TopologyCache::default()
    }
}

impl std::fmt::Debug for TopologyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TopologyCache")
    }
}

impl ComputeGraph {
    /// The topology of graph `g`: built on the first call after the graph's structure last
    /// changed, then shared. A cycle is an error naming its nodes.
    pub fn topology(&self, g: GraphId) -> Result<Arc<Topology>> {
        if !self.graphs.contains_key(g) {
            return Err(IrError::Other("stale graph handle".into()));
        }
        let rev = self.revision;
        {
            let cache = self
                .topology
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some((at, list)) = cache.as_ref() {
                if *at == rev {
                    if let Some((_, t)) = list.iter().find(|(x, _)| *x == g) {
                        return Ok(t.clone());
                    }
                }
            }
        }
        // Built outside the lock: readers of other graphs are not held up.
        let t = Arc::new(Topology::build(self, g)?);
        let mut cache = self
            .topology
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match cache.as_mut() {
            Some((at, list)) if *at == rev => {
                if !list.iter().any(|(x, _)| *x == g) {
                    list.push((g, t.clone()));
                }
            }
            _ => *cache = Some((rev, vec![(g, t.clone())])),
        }
        Ok(t)
    }

    /// The structure revision: changes with every edit that adds or removes a node or a link
    /// or reorders a graph (not with attribute or desc edits).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Marks the structure changed: the topologies held are stale.
    pub(crate) fn touch(&mut self) {
        self.revision = self.revision.wrapping_add(1);
    }
}
