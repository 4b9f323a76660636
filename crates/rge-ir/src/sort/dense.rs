//! A graph in dense form for the sorts: dense node indexes, per-node flags and caches, the
//! counted links as CSR arrays, in-degrees and current positions. Links leaving a
//! NextIteration are not counted (see the module above), nor links to other graphs.

use std::cmp::Ordering;

use hashbrown::HashMap;
use slotmap::SecondaryMap;

use crate::error::{IrError, Result};
use crate::graph::{ComputeGraph, GraphId};
use crate::node::{Node, NodeId};
use crate::op_types;

/// Out-links of this node are ignored (NextIteration / RefNextIteration).
pub(super) const NEXT_ITER: u8 = 1;
/// A zero-in-degree node of this kind is seeded in the data block.
pub(super) const DATA_LIKE: u8 = 2;
/// A long-lifetime input for DelayTopoSort.
const LONG_LIVED: u8 = 4;
/// Exactly one in-data anchor.
pub(super) const ONE_IN_ANCHOR: u8 = 8;
/// At least one in-node.
pub(super) const HAS_INPUT: u8 = 16;
/// At least one in-node that is not long-lived.
pub(super) const SHORT_INPUT: u8 = 32;
/// The op names subgraph instances.
pub(super) const HAS_SUBGRAPHS: u8 = 64;
/// No counted out-link (set when the links are gathered from the input side).
pub(super) const SINK: u8 = 128;

pub(super) const NONE: u32 = u32::MAX;
/// Marks the last CSR entry of a DFS batch.
pub(super) const END: u32 = 1 << 31;

fn flags_of(node: &Node) -> u8 {
    let op_type = node.op_type();
    let mut f = 0;
    if op_types::is_next_iteration(op_type) {
        f |= NEXT_ITER;
    }
    let data = op_types::is_data(op_type);
    if data || matches!(op_type, "Input" | op_types::RECV | op_types::SEND) {
        f |= DATA_LIKE;
    }
    if data
        || op_types::is_const(op_type)
        || op_types::is_variable(op_type)
        || op_type == op_types::CONST_PLACEHOLDER
    {
        f |= LONG_LIVED;
    }
    if node.in_data.len() == 1 {
        f |= ONE_IN_ANCHOR;
    }
    if !node.op.subgraph_instance_names().is_empty() {
        f |= HAS_SUBGRAPHS;
    }
    f
}

/// The first 8 bytes of a name, zero-padded, big-endian: ordered as the names are, except that
/// equal prefixes need the full names.
fn prefix8(s: &str) -> u64 {
    let b = s.as_bytes();
    let mut a = [0u8; 8];
    let k = b.len().min(8);
    a[..k].copy_from_slice(&b[..k]);
    u64::from_be_bytes(a)
}

/// Sum of the output sizes (GE's `GetNodeOutputRealSize`); unknown sizes count 0.
fn output_bytes(node: &Node) -> i64 {
    node.op.outputs().iter().fold(0i64, |acc, d| {
        acc.saturating_add(d.calc_tensor_mem_size().ok().flatten().unwrap_or(0))
    })
}

/// Records the end of the raw batch `before..len` unless it is empty.
fn close_batch(ends: &mut Vec<u32>, before: usize, len: usize) {
    if len > before {
        ends.push(len as u32);
    }
}

/// A node's dense index and, while the CSR is built, its counted in-degree (low 30 bits) and
/// `HAS_INPUT`/`SHORT_INPUT` (top 2 bits): one random access per link.
#[derive(Clone, Copy)]
struct Entry {
    k: u32,
    deg: u32,
}
const DEG_MASK: u32 = (1 << 30) - 1;
const DEG_HAS_INPUT: u32 = 1 << 30;
const DEG_SHORT_INPUT: u32 = 1 << 31;

/// Node → `Entry`. A `SecondaryMap` is a vector over the arena's slots, so a small graph of a
/// big arena uses a hash map instead.
enum IndexMap {
    Dense(SecondaryMap<NodeId, Entry>),
    Sparse(HashMap<NodeId, Entry>),
}

impl IndexMap {
    fn new(ids: &[NodeId], arena_slots: usize) -> Self {
        let entries = ids.iter().enumerate().map(|(k, &id)| {
            (
                id,
                Entry {
                    k: k as u32,
                    deg: 0,
                },
            )
        });
        if ids.len().saturating_mul(16) >= arena_slots {
            let mut m = SecondaryMap::with_capacity(arena_slots);
            m.extend(entries);
            IndexMap::Dense(m)
        } else {
            IndexMap::Sparse(entries.collect())
        }
    }
    #[inline]
    fn get(&self, n: NodeId) -> Option<Entry> {
        match self {
            IndexMap::Dense(m) => m.get(n).copied(),
            IndexMap::Sparse(m) => m.get(&n).copied(),
        }
    }
    #[inline]
    fn get_mut(&mut self, n: NodeId) -> Option<&mut Entry> {
        match self {
            IndexMap::Dense(m) => m.get_mut(n),
            IndexMap::Sparse(m) => m.get_mut(&n),
        }
    }
}

/// List ranking: the order along a successor list from `head`, given per index as
/// `[next, NONE, 0]` (`NONE` ends the list); `None` unless the list covers every index exactly
/// once. The list is cut at every `STRIDE`-th index and the pieces are walked `LANES` at a
/// time, so that their cache misses overlap instead of forming one chain of dependent loads.
fn rank_list(mut cell: Vec<[u32; 3]>, head: u32) -> Option<Vec<u32>> {
    const STRIDE: usize = 64;
    const LANES: usize = 32;
    let n = cell.len();
    if n == 0 || head as usize >= n {
        return (n == 0 && head == NONE).then(Vec::new);
    }
    // Per index: [next, piece, offset in piece]; a ruler (piece start) has its piece set.
    let rulers: Vec<u32> = std::iter::once(head)
        .chain((0..n as u32).step_by(STRIDE).filter(|&k| k != head))
        .collect();
    for (i, &r) in rulers.iter().enumerate() {
        cell[r as usize][1] = i as u32;
    }
    let mut piece_next = vec![NONE; rulers.len()];
    let mut piece_len = vec![0u32; rulers.len()];
    let mut lanes = [(NONE, NONE, 0u32); LANES]; // (piece, current, offset)
    let mut started = 0;
    loop {
        let mut active = false;
        for lane in lanes.iter_mut() {
            if lane.0 == NONE {
                let Some(&r) = rulers.get(started) else {
                    continue;
                };
                *lane = (started as u32, cell[r as usize][0], 1);
                started += 1;
            }
            active = true;
            let (piece, cur, off) = *lane;
            let c = cell.get_mut(cur as usize).filter(|c| c[1] == NONE);
            let Some(c) = c else {
                // The list ends, or the next piece starts (or, in a broken list, a revisit).
                piece_next[piece as usize] = cell.get(cur as usize).map_or(NONE, |c| c[1]);
                piece_len[piece as usize] = off;
                lane.0 = NONE;
                continue;
            };
            c[1] = piece;
            c[2] = off;
            *lane = (piece, c[0], off + 1);
        }
        if !active {
            break;
        }
    }
    let mut piece_start = vec![NONE; rulers.len()];
    let (mut p, mut at) = (0u32, 0usize);
    while p != NONE && piece_start[p as usize] == NONE && at <= n {
        piece_start[p as usize] = at as u32;
        at += piece_len[p as usize] as usize;
        p = piece_next[p as usize];
    }
    if at != n || p != NONE {
        return None;
    }
    let mut by_pos = vec![NONE; n];
    for (k, c) in cell.iter().enumerate() {
        let start = *piece_start.get(c[1] as usize)?;
        let q = start.checked_add(c[2]).filter(|&q| (q as usize) < n)?;
        by_pos[q as usize] = k as u32;
    }
    by_pos.iter().all(|&k| k != NONE).then_some(by_pos)
}

/// What a sort needs built.
pub(super) struct Needs {
    /// Out-links in GE's DFS order with batch ends (DFS without the priority set); otherwise
    /// the links are gathered from the input side, which reads the nodes sequentially.
    pub(super) dfs_order: bool,
    /// Out-links at all (every mode but StableRDFS).
    pub(super) out_links: bool,
    /// `Ctx::pos` (StableRDFS).
    pub(super) pos: bool,
    pub(super) names: bool,
    pub(super) bytes: bool,
    pub(super) out_data: bool,
}

/// Rows of dense indexes: row `u` is `adj[start[u]..start[u + 1]]`.
#[derive(Clone, Default)]
pub(super) struct Csr {
    pub(super) start: Vec<u32>,
    pub(super) adj: Vec<u32>,
}

impl Csr {
    /// Row `u`; empty when the rows were not built.
    pub(super) fn row(&self, u: u32) -> &[u32] {
        match self.start.get(u as usize..u as usize + 2) {
            Some(&[a, b]) => &self.adj[a as usize..b as usize],
            _ => &[],
        }
    }

    /// The transposed rows, given each target's row length (`len`).
    fn transpose(&self, len: &[u32]) -> Csr {
        let mut start = Vec::with_capacity(len.len() + 1);
        let mut acc = 0u32;
        for &d in len {
            start.push(acc);
            acc += d;
        }
        start.push(acc);
        let mut fill = start[..len.len()].to_vec();
        let mut adj = vec![0u32; acc as usize];
        for u in 0..self.start.len().saturating_sub(1) as u32 {
            for &e in self.row(u) {
                let v = (e & !END) as usize;
                adj[fill[v] as usize] = u;
                fill[v] += 1;
            }
        }
        Csr { start, adj }
    }
}

/// One graph in dense form. Nodes have an index `k` (gathering order); `pos[k]` is the current
/// position and `by_pos` the current order.
pub(super) struct Ctx<'a> {
    cg: &'a ComputeGraph,
    pub(super) graph: &'a str,
    pub(super) ids: Vec<NodeId>,
    /// Current positions (empty unless needed).
    pub(super) pos: Vec<u32>,
    pub(super) by_pos: Vec<u32>,
    pub(super) flags: Vec<u8>,
    /// Name prefixes, output bytes, out-data link counts (empty unless needed).
    pub(super) prefix: Vec<u64>,
    pub(super) bytes: Vec<i64>,
    pub(super) out_data: Vec<u32>,
    /// Counted out-links (in GE's DFS visit order, `END` marking each batch's last entry, when
    /// built for DFS); empty unless needed.
    pub(super) outs: Csr,
    /// Counted in-links (any order); built when the links are gathered from the input side.
    pub(super) ins: Csr,
    /// Counted in-degree (GE's `GetInEdgeSize`; duplicates count).
    pub(super) deg: Vec<u32>,
}

impl<'a> Ctx<'a> {
    /// Builds the dense form of graph `g` from its nodes `ids` (in its order when `ordered`).
    pub(super) fn new(
        cg: &'a ComputeGraph,
        g: GraphId,
        ids: Vec<NodeId>,
        ordered: bool,
        needs: Needs,
    ) -> Result<Self> {
        let gd = cg.gdata(g)?;
        let n = ids.len();
        let broken =
            || IrError::Verify(format!("node order list of graph `{}` is broken", gd.name));
        if n != gd.len || n >= END as usize {
            return Err(broken());
        }
        let mut map = IndexMap::new(&ids, cg.nodes.capacity());
        let some_if = |b: bool| if b { n } else { 0 };
        let mut ctx = Ctx {
            cg,
            graph: &gd.name,
            ids: Vec::new(),
            pos: Vec::new(),
            by_pos: Vec::new(),
            flags: Vec::with_capacity(n),
            prefix: Vec::with_capacity(some_if(needs.names)),
            bytes: Vec::with_capacity(some_if(needs.bytes)),
            out_data: Vec::new(),
            outs: Csr::default(),
            ins: Csr::default(),
            deg: Vec::new(),
        };
        // Each pass below is a loop over the nodes in gathering order that does one thing, so
        // that the random accesses of consecutive nodes (to scattered peer lists, to the map)
        // are independent and their cache misses overlap.
        // Pass 1: flags and caches.
        for &id in &ids {
            let node = &cg.nodes[id];
            ctx.flags.push(flags_of(node));
            if needs.names {
                ctx.prefix.push(prefix8(node.name()));
            }
            if needs.bytes {
                ctx.bytes.push(output_bytes(node));
            }
        }
        // Pass 2: each node's successor in the order.
        let mut cell: Vec<[u32; 3]> = Vec::with_capacity(some_if(!ordered));
        if !ordered {
            for &id in &ids {
                let next = cg.nodes[id].next.and_then(|x| map.get(x));
                cell.push([next.map_or(NONE, |e| e.k), NONE, 0]);
            }
        }
        // Pass 3 (and 4): the links.
        if needs.dfs_order {
            ctx.links_from_outputs(&ids, &mut map, needs.out_data)?;
        } else {
            ctx.links_from_inputs(&ids, &map, needs.out_data);
            if needs.out_links {
                let mut out_len = vec![0u32; n];
                for &u in &ctx.ins.adj {
                    out_len[u as usize] += 1;
                }
                for (f, &len) in ctx.flags.iter_mut().zip(&out_len) {
                    if len == 0 {
                        *f |= SINK;
                    }
                }
                ctx.outs = ctx.ins.transpose(&out_len);
            }
        }
        ctx.by_pos = if ordered {
            (0..n as u32).collect()
        } else {
            let head = gd.first.and_then(|f| map.get(f)).map_or(NONE, |e| e.k);
            drop(map);
            rank_list(cell, head).ok_or_else(broken)?
        };
        if needs.pos {
            ctx.pos = vec![0u32; n];
            for (p, &k) in ctx.by_pos.iter().enumerate() {
                ctx.pos[k as usize] = p as u32;
            }
        }
        ctx.ids = ids;
        Ok(ctx)
    }

    /// The out-links in GE's DFS order, from the out-anchors' peer lists: per out-data anchor
    /// its data peers, then the control peers hung on it; then the out-control peers; each
    /// non-empty group is a batch. In-degrees and input flags are counted in the map.
    fn links_from_outputs(
        &mut self,
        ids: &[NodeId],
        map: &mut IndexMap,
        count_out_data: bool,
    ) -> Result<()> {
        let n = ids.len();
        // Pass 3: the raw peers, batch ends at `ends`.
        let mut raw: Vec<NodeId> = Vec::with_capacity(2 * n);
        let mut raw_start: Vec<u32> = Vec::with_capacity(n + 1);
        let mut ends: Vec<u32> = Vec::with_capacity(n);
        for &id in ids {
            let node = &self.cg.nodes[id];
            raw_start.push(raw.len() as u32);
            let mut data_links = 0;
            for peers in &node.out_data {
                let before = raw.len();
                raw.extend(peers.iter().filter(|p| !p.is_control()).map(|p| p.node));
                data_links += raw.len() - before;
                close_batch(&mut ends, before, raw.len());
                let before = raw.len();
                raw.extend(peers.iter().filter(|p| p.is_control()).map(|p| p.node));
                close_batch(&mut ends, before, raw.len());
            }
            let before = raw.len();
            raw.extend(node.ctrl_out().iter().map(|p| p.node));
            close_batch(&mut ends, before, raw.len());
            if count_out_data {
                self.out_data.push(data_links as u32);
            }
            if raw.len() >= u32::MAX as usize {
                return Err(IrError::Overflow {
                    what: format!("link count of graph `{}`", self.graph),
                });
            }
        }
        raw_start.push(raw.len() as u32);
        // Pass 4: dense targets; in-degrees and input flags in the map (one access per link).
        let outs = &mut self.outs;
        outs.start.reserve(n + 1);
        outs.adj.reserve(raw.len());
        let mut ends = ends.into_iter().peekable();
        for u in 0..n {
            outs.start.push(outs.adj.len() as u32);
            let f = self.flags[u];
            let counted = f & NEXT_ITER == 0;
            let bits = if f & LONG_LIVED == 0 {
                DEG_HAS_INPUT | DEG_SHORT_INPUT
            } else {
                DEG_HAS_INPUT
            };
            let mut batch = outs.adj.len();
            for i in raw_start[u]..raw_start[u + 1] {
                if let Some(e) = map.get_mut(raw[i as usize]) {
                    e.deg = (e.deg + u32::from(counted)) | bits;
                    if counted {
                        outs.adj.push(e.k);
                    }
                }
                if ends.next_if_eq(&(i + 1)).is_some() {
                    if outs.adj.len() > batch {
                        *outs.adj.last_mut().unwrap() |= END;
                    }
                    batch = outs.adj.len();
                }
            }
        }
        outs.start.push(outs.adj.len() as u32);
        self.deg.reserve(n);
        for (k, &id) in ids.iter().enumerate() {
            let d = map.get(id).map_or(0, |e| e.deg);
            self.deg.push(d & DEG_MASK);
            if d & DEG_HAS_INPUT != 0 {
                self.flags[k] |= HAS_INPUT;
            }
            if d & DEG_SHORT_INPUT != 0 {
                self.flags[k] |= SHORT_INPUT;
            }
        }
        Ok(())
    }

    /// The in-links, from the in-anchors (a node's few input peers sit inside it, so this
    /// reads the nodes sequentially), with in-degrees, input flags and out-data link counts.
    fn links_from_inputs(&mut self, ids: &[NodeId], map: &IndexMap, count_out_data: bool) {
        let n = ids.len();
        let ins = &mut self.ins;
        ins.start.reserve(n + 1);
        ins.adj.reserve(2 * n);
        self.deg.reserve(n);
        if count_out_data {
            self.out_data = vec![0; n];
        }
        for (v, &id) in ids.iter().enumerate() {
            let node = &self.cg.nodes[id];
            ins.start.push(ins.adj.len() as u32);
            let before = ins.adj.len();
            let data = node.in_data.iter().flatten().map(|p| (p, true));
            for (p, data_in) in data.chain(node.ctrl_in().iter().map(|p| (p, false))) {
                let Some(e) = map.get(p.node) else { continue };
                let f = self.flags[e.k as usize];
                self.flags[v] |= HAS_INPUT;
                if f & LONG_LIVED == 0 {
                    self.flags[v] |= SHORT_INPUT;
                }
                if f & NEXT_ITER == 0 {
                    ins.adj.push(e.k);
                }
                if count_out_data && data_in && !p.is_control() {
                    self.out_data[e.k as usize] += 1;
                }
            }
            self.deg.push((ins.adj.len() - before) as u32);
        }
        ins.start.push(ins.adj.len() as u32);
    }

    pub(super) fn len(&self) -> usize {
        self.ids.len()
    }
    pub(super) fn name(&self, v: u32) -> &'a str {
        self.cg.nodes[self.ids[v as usize]].name()
    }
    pub(super) fn name_cmp(&self, a: u32, b: u32) -> Ordering {
        self.prefix[a as usize]
            .cmp(&self.prefix[b as usize])
            .then_with(|| self.name(a).cmp(self.name(b)))
    }
    /// The counted out-links of `u` (`END` bits set on DFS batch ends).
    pub(super) fn out_row(&self, u: u32) -> &[u32] {
        self.outs.row(u)
    }

    /// The counted in-links (built from the out-links unless gathered so).
    pub(super) fn in_links(&self) -> std::borrow::Cow<'_, Csr> {
        if self.ins.start.is_empty() && !self.outs.start.is_empty() {
            std::borrow::Cow::Owned(self.outs.transpose(&self.deg))
        } else {
            std::borrow::Cow::Borrowed(&self.ins)
        }
    }
}
