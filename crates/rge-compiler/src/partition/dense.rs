//! A dense copy of one graph's topology for the partitioner: nodes numbered in a topological
//! order (the graph's own order when it is one, else the nearest order Kahn's algorithm gives
//! preferring earlier nodes), predecessor and successor lists over data and control links.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::OnceLock;

use rayon::prelude::*;
use slotmap::SecondaryMap;

use rge_ir::{ComputeGraph, GraphId, Node, NodeId, SortOptions};

use crate::error::{CompileError, CompileResult};

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
#[derive(Debug, Clone)]
pub struct DenseGraph {
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

impl DenseGraph {
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

    /// The topology of graph `g` of `graph`. A cycle is an error naming its nodes.
    pub fn new(graph: &ComputeGraph, g: GraphId) -> CompileResult<Self> {
        Self::with_info(graph, g, |_| ()).map(|(d, _)| d)
    }

    /// [`DenseGraph::new`], also computing `info` for each node in the same (parallel) pass
    /// over the nodes; the infos come in the order of `ids`.
    pub(crate) fn with_info<'g, T: Send>(
        graph: &'g ComputeGraph,
        g: GraphId,
        info: impl Fn(&'g Node) -> T + Sync,
    ) -> CompileResult<(Self, Vec<T>)> {
        let ids0: Vec<NodeId> = graph.nodes_of(g).collect();
        let n = ids0.len();
        let mut index0 = SecondaryMap::with_capacity(n);
        for (i, &id) in ids0.iter().enumerate() {
            index0.insert(id, i as u32);
        }
        // Each chunk of nodes reads its nodes once: link counts, producers, anchors, infos.
        // Links never leave their graph (rge-ir's rule), so every peer is in `index0`.
        struct Chunk<T> {
            counts: Vec<u32>,
            list: Vec<u32>,
            ports: Vec<(i32, i32)>,
            infos: Vec<T>,
        }
        let chunks: Vec<Chunk<T>> = ids0
            .par_chunks(CHUNK)
            .map(|ids| {
                let mut c = Chunk {
                    counts: Vec::with_capacity(ids.len()),
                    list: Vec::with_capacity(ids.len() * 2),
                    ports: Vec::with_capacity(ids.len() * 2),
                    infos: Vec::with_capacity(ids.len()),
                };
                for &id in ids {
                    let node = graph.node(id).expect("live node");
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
                    c.infos.push(info(node));
                }
                c
            })
            .collect();
        let links: usize = chunks.iter().map(|c| c.list.len()).sum();
        let mut start = Vec::with_capacity(n + 1);
        let mut list = Vec::with_capacity(links);
        let mut ports0 = Vec::with_capacity(links);
        let mut infos = Vec::with_capacity(n);
        start.push(0u32);
        for c in chunks {
            let mut acc = *start.last().expect("non-empty");
            start.extend(c.counts.iter().map(|&k| {
                acc += k;
                acc
            }));
            list.extend_from_slice(&c.list);
            ports0.extend_from_slice(&c.ports);
            infos.extend(c.infos);
        }
        let preds0 = Csr { start, list };
        let sorted = (0..n as u32).all(|v| preds0.of(v).iter().all(|&u| u < v));
        if sorted {
            let dense = DenseGraph {
                ids: ids0,
                index: index0,
                preds: preds0,
                pred_ports: ports0,
                succs: OnceLock::new(),
            };
            return Ok((dense, infos));
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
            let gname = graph.graph_name(g).unwrap_or("?").to_string();
            // rge-ir names the nodes of one cycle.
            let source = graph
                .sorted_order(g, &SortOptions::default())
                .err()
                .unwrap_or(rge_ir::IrError::Other("the graph has a cycle".into()));
            return Err(CompileError::Ir {
                graph: gname,
                source,
            });
        }
        let mut pos = vec![0u32; n];
        for (new, &old) in order.iter().enumerate() {
            pos[old as usize] = new as u32;
        }
        let ids: Vec<NodeId> = order.iter().map(|&o| ids0[o as usize]).collect();
        let mut slots: Vec<Option<T>> = infos.into_iter().map(Some).collect();
        let infos: Vec<T> = order
            .iter()
            .map(|&o| slots[o as usize].take().expect("each node once"))
            .collect();
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
        let dense = DenseGraph {
            ids,
            index,
            preds,
            pred_ports,
            succs: OnceLock::new(),
        };
        Ok((dense, infos))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_ir::OpDesc;

    #[test]
    fn reorders_only_when_needed() {
        let mut g = ComputeGraph::new("g");
        let r = g.root();
        let b = g
            .add_node(r, OpDesc::new("b", "T").with_ports(1, 1))
            .unwrap();
        let a = g
            .add_node(r, OpDesc::new("a", "T").with_ports(0, 1))
            .unwrap();
        let c = g
            .add_node(r, OpDesc::new("c", "T").with_ports(1, 0))
            .unwrap();
        g.add_edge(a, 0, b, 0).unwrap();
        g.add_edge(b, 0, c, 0).unwrap();
        g.add_control_edge(a, c).unwrap();
        let d = DenseGraph::new(&g, r).unwrap();
        assert_eq!(d.ids, [a, b, c]);
        assert_eq!(d.preds(2), [1, 0]);
        assert_eq!(d.succs(0), [1, 2]);
        assert_eq!(
            d.pred_links(2).collect::<Vec<_>>(),
            [(1, 0, 0), (0, -1, -1)]
        );
        // Infos follow the reordered ids.
        let (d, names) = DenseGraph::with_info(&g, r, |node| node.op().name()).unwrap();
        assert_eq!(d.ids, [a, b, c]);
        assert_eq!(names, ["a", "b", "c"]);
        g.add_control_edge(c, a).unwrap();
        let e = DenseGraph::new(&g, r).unwrap_err();
        assert!(e.to_string().contains("cycle"), "{e}");
    }
}
