//! Topological sorting, after GE's `ComputeGraph::TopologicalSorting` (spec §3): BFS, DFS,
//! RDFS and StableRDFS, the memory-priority ready set (`NodeOutInfo`) and `DelayTopoSort`.
//!
//! Choices beyond GE (or where GE is unclear), all deliberate:
//! - **Cycles are errors in every mode**, reported as [`IrError::Cycle`](crate::IrError::Cycle)
//!   naming the nodes of one actual cycle in edge order. BFS/DFS find one among the nodes left
//!   unemitted; RDFS and StableRDFS stop at the first back edge (an in-node still Walking)
//!   instead of breaking the cycle silently as GE does (§3.7).
//! - **Every edge leaving a NextIteration/RefNextIteration is ignored**, data and control alike,
//!   in every mode: it does not count towards in-degree (GE skips only the data ones) and it is
//!   not followed when RDFS/StableRDFS walk in-nodes, so a NextIteration is a sink for RDFS. A
//!   while loop (Enter→Merge→…→NextIteration→Merge) therefore sorts, with Merge before
//!   NextIteration, in every mode.
//! - Links whose far end is outside the sorted graph (impossible through the public API) are
//!   ignored.
//! - `inputs_order` (GE's `inputs_order_`, set on the root graph only) applies to the root.
//! - Seeds placed in the data block: `op_types::is_data`, GE's `INPUT_TYPE` ("Input"), Recv and
//!   Send. Long-lived inputs for DelayTopoSort: Const/Constant, Variable-like, data-like
//!   (`op_types::is_data`) and ConstPlaceHolder; "all inputs" means data and control in-nodes.
//! - DelayTopoSort counts "more than one out node" over distinct nodes, and leaves a group
//!   whose last node has no out node where it is (GE would index past the end).
//! - `NodeOutInfo`'s and RDFS's byte sizes are the sum of `calc_tensor_mem_size` over the
//!   outputs, an unknown or failing size counting 0.
//!
//! Implementation (`dense`): the graph is first copied into dense form, reading the nodes in
//! arena order (sequential scans, never a walk along the shuffled order list). Nodes get dense
//! indexes; flags, name prefixes and sizes are cached; the links become CSR arrays: for DFS the
//! out-links in GE's visit order with batch ends marked (from the out-anchors' peer lists),
//! for the other modes the in-links (from the in-anchors, which sit inside the nodes) and
//! their transpose; positions come from list ranking over a dense `next` array. The sorts
//! (`algo`) then run on `Vec`s with no per-node allocation; names are compared through a
//! cached 8-byte prefix first, the full name only on a tie; the memory-priority set is a
//! bitmap tree over precomputed `NodeOutInfo` ranks, with the graph relabelled by rank.
//! Applying an order writes each node once, again in arena order.

mod algo;
mod dense;

use slotmap::SecondaryMap;

use crate::error::Result;
use crate::graph::{ComputeGraph, GraphId};
use crate::node::NodeId;
use dense::{Ctx, Needs, HAS_SUBGRAPHS, NONE};

/// GE's `TopoSortingMode` (kBFS=0 … kStableRDFS=3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortMode {
    /// Kahn with a FIFO queue; ready nodes enter in name order; the training default.
    Bfs = 0,
    /// Kahn with a LIFO stack, one batch per out-anchor; the inference default.
    #[default]
    Dfs = 1,
    /// Reverse post-order DFS from the sinks, smallest output first; then DelayTopoSort.
    Rdfs = 2,
    /// Reverse post-order DFS over all nodes in current order: keeps a valid order as it is.
    StableRdfs = 3,
}

impl SortMode {
    /// The mode for option `ge.topoSortingMode` (§3.1): its decimal value 0–3 (surrounding
    /// whitespace allowed); when unset, empty or anything else, BFS for training graphs and DFS
    /// otherwise.
    pub fn from_option(value: Option<&str>, is_training: bool) -> SortMode {
        match value.and_then(|v| v.trim().parse::<i64>().ok()) {
            Some(0) => SortMode::Bfs,
            Some(1) => SortMode::Dfs,
            Some(2) => SortMode::Rdfs,
            Some(3) => SortMode::StableRdfs,
            _ if is_training => SortMode::Bfs,
            _ => SortMode::Dfs,
        }
    }
}

/// How to sort.
#[derive(Debug, Clone, Default)]
pub struct SortOptions {
    pub mode: SortMode,
    /// `ge.exec.memoryOptimizationPolicy == "MemoryPriority"`: BFS/DFS pop the smallest
    /// `NodeOutInfo` (out-data node count, output bytes, name) first, and DelayTopoSort runs
    /// after every mode but StableRDFS.
    pub memory_priority: bool,
    /// Reverse each DFS batch before pushing it (GE's tuning flag); turns off the priority set.
    pub dfs_reverse: bool,
    /// The user's input order by node name (root graph only): earlier names are seeded first.
    pub inputs_order: Option<Vec<String>>,
}

/// One graph's sort result in dense form.
struct Sorted {
    /// Nodes by dense index (gathering order: arena order, or list order for `sorted_order`
    /// on a small graph).
    ids: Vec<NodeId>,
    /// Dense indexes in the new order.
    order: Vec<u32>,
    /// Per dense index (`HAS_SUBGRAPHS` is used here).
    flags: Vec<u8>,
}

impl ComputeGraph {
    /// Sorts the root graph and every subgraph (GE's `TopologicalSorting`, §3.2), then
    /// renumbers `OpDesc` ids from 0 over all nodes in the pre-order walk (a node, then the
    /// nodes of its subgraphs by slot, recursively), and reorders the flat subgraph list as that
    /// walk meets the subgraphs (each node's subgraphs in reverse slot order, as GE's
    /// `AllGraphNodes` gathers them) when the walk meets all of them. Nodes of subgraphs the walk
    /// does not reach get their position as id. On error nothing is changed.
    pub fn topological_sort(&mut self, opts: &SortOptions) -> Result<()> {
        // One arena scan gathers the nodes of every graph.
        let mut graphs = Vec::with_capacity(self.subgraphs.len() + 1);
        let mut index = SecondaryMap::<GraphId, usize>::with_capacity(self.subgraphs.len() + 1);
        let mut members = Vec::with_capacity(self.subgraphs.len() + 1);
        for g in std::iter::once(self.root).chain(self.subgraphs.iter().copied()) {
            if index.insert(g, graphs.len()).is_none() {
                members.push(Vec::with_capacity(self.gdata(g)?.len));
                graphs.push(g);
            }
        }
        for (id, node) in self.nodes.iter() {
            if let Some(&i) = index.get(node.graph) {
                members[i].push(id);
            }
        }
        let mut sorted = Vec::with_capacity(graphs.len());
        for (&g, ids) in graphs.iter().zip(members) {
            sorted.push(self.sort_dense(g, ids, false, opts)?);
        }
        self.apply_sorted(&graphs, &index, &sorted);
        Ok(())
    }

    /// Sorts graph `g` alone and applies the order; ids are left as they are.
    pub fn sort_graph(&mut self, g: GraphId, opts: &SortOptions) -> Result<Vec<NodeId>> {
        let order = self.sorted_order(g, opts)?;
        self.relink_order(g, &order);
        Ok(order)
    }

    /// The order `sort_graph` would give graph `g`, without applying it.
    pub fn sorted_order(&self, g: GraphId, opts: &SortOptions) -> Result<Vec<NodeId>> {
        let len = self.gdata(g)?.len;
        // A big graph is gathered by a sequential arena scan, a small one along its list.
        let s = if len.saturating_mul(4) >= self.nodes.capacity() {
            let ids = self
                .nodes
                .iter()
                .filter(|(_, n)| n.graph == g)
                .map(|(id, _)| id)
                .collect();
            self.sort_dense(g, ids, false, opts)?
        } else {
            self.sort_dense(g, self.nodes_of(g).collect(), true, opts)?
        };
        Ok(s.order.iter().map(|&k| s.ids[k as usize]).collect())
    }

    /// Sorts graph `g`, whose nodes are `ids` (in its order when `ordered`).
    fn sort_dense(
        &self,
        g: GraphId,
        ids: Vec<NodeId>,
        ordered: bool,
        opts: &SortOptions,
    ) -> Result<Sorted> {
        let mem_set = opts.memory_priority
            && opts.mode != SortMode::StableRdfs
            && !(opts.mode == SortMode::Dfs && opts.dfs_reverse);
        let needs = Needs {
            dfs_order: opts.mode == SortMode::Dfs && !mem_set,
            out_links: opts.mode != SortMode::StableRdfs,
            pos: opts.mode == SortMode::StableRdfs,
            names: opts.mode == SortMode::Bfs || opts.mode == SortMode::Rdfs || mem_set,
            bytes: opts.mode == SortMode::Rdfs || mem_set,
            out_data: mem_set,
        };
        let ctx = Ctx::new(self, g, ids, ordered, needs)?;
        let inputs_order = opts.inputs_order.as_deref().filter(|_| g == self.root);
        let order = match opts.mode {
            SortMode::Bfs => ctx.kahn(false, opts, inputs_order)?,
            SortMode::Dfs => ctx.kahn(true, opts, inputs_order)?,
            SortMode::Rdfs => ctx.rdfs(false)?,
            SortMode::StableRdfs => ctx.rdfs(true)?,
        };
        let delay = opts.mode == SortMode::Rdfs
            || (opts.memory_priority && opts.mode != SortMode::StableRdfs);
        let order = if delay {
            ctx.delay_topo_sort(&order)
        } else {
            order
        };
        Ok(Sorted {
            order,
            ids: ctx.ids,
            flags: ctx.flags,
        })
    }

    /// Applies sorted orders: ids from GE's `AllGraphNodes` pre-order walk, which also gives the
    /// new flat subgraph list (per node, instance names in reverse; a subgraph counts only under
    /// its parent node, and once); then each node is relinked and numbered in arena order.
    fn apply_sorted(
        &mut self,
        graphs: &[GraphId],
        index: &SecondaryMap<GraphId, usize>,
        sorted: &[Sorted],
    ) {
        let mut walk_id: Vec<Vec<u32>> = sorted.iter().map(|s| vec![NONE; s.ids.len()]).collect();
        let mut reached = vec![false; graphs.len()];
        reached[0] = true;
        let mut met = Vec::new();
        let mut next_id = 0u32;
        let mut subs = Vec::new();
        // (graph index, next position): the top frame is the graph being walked.
        let mut stack = vec![(0usize, 0usize)];
        while let Some(top) = stack.last_mut() {
            let (gi, p) = *top;
            let Some(&k) = sorted[gi].order.get(p) else {
                stack.pop();
                continue;
            };
            top.1 += 1;
            walk_id[gi][k as usize] = next_id;
            next_id += 1;
            if sorted[gi].flags[k as usize] & HAS_SUBGRAPHS == 0 {
                continue;
            }
            let n = sorted[gi].ids[k as usize];
            subs.clear();
            for name in self.nodes[n].op.subgraph_instance_names().iter().rev() {
                let Some(&s) = self.subgraph_names.get(name) else {
                    continue;
                };
                let Some(&si) = index.get(s) else { continue };
                if !reached[si] && self.graphs[s].parent_node == Some(n) {
                    reached[si] = true;
                    met.push(s);
                    subs.push(si);
                }
            }
            // Pushed in reverse slot order: slot 0 is walked first.
            stack.extend(subs.iter().map(|&si| (si, 0)));
        }
        self.touch();
        for (gi, s) in sorted.iter().enumerate() {
            let order: Vec<NodeId> = s.order.iter().map(|&k| s.ids[k as usize]).collect();
            let mut new_pos = vec![0u32; s.ids.len()];
            for (p, &k) in s.order.iter().enumerate() {
                new_pos[k as usize] = p as u32;
            }
            for (k, &id) in s.ids.iter().enumerate() {
                let p = new_pos[k] as usize;
                let node = &mut self.nodes[id];
                node.prev = p.checked_sub(1).map(|q| order[q]);
                node.next = order.get(p + 1).copied();
                let num = if reached[gi] {
                    walk_id[gi][k] as usize
                } else {
                    p
                };
                node.op.set_id(num as i64);
            }
            let d = &mut self.graphs[graphs[gi]];
            d.first = order.first().copied();
            d.last = order.last().copied();
            d.len = order.len();
        }
        if met.len() == self.subgraphs.len() {
            self.subgraphs = met;
        }
    }
}
