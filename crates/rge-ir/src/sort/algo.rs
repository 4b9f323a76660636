//! The four sorts, DelayTopoSort and the cycle reports, over a graph in dense form.

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::VecDeque;

use hashbrown::HashMap;

use super::dense::{
    Csr, Ctx, DATA_LIKE, END, HAS_INPUT, NEXT_ITER, NONE, ONE_IN_ANCHOR, SHORT_INPUT, SINK,
};
use super::SortOptions;
use crate::error::IrError;
use crate::error::Result;

const NOT_WALKED: u8 = 0;
const WALKING: u8 = 1;
const WALKED: u8 = 2;

/// A set of distinct integers below a bound, with insert and pop-min in O(log₆₄ n): a 64-ary
/// tree of bitmaps (a bit per value; a parent bit is set iff its child word is non-zero).
struct MinSet {
    /// `levels[0]` holds the values, the last level is one word.
    levels: Vec<Vec<u64>>,
}

impl MinSet {
    fn new(n: usize) -> Self {
        let mut levels = Vec::new();
        let mut len = n.max(1);
        loop {
            let words = len.div_ceil(64);
            levels.push(vec![0u64; words]);
            if words == 1 {
                break;
            }
            len = words;
        }
        MinSet { levels }
    }

    fn insert(&mut self, x: u32) {
        let mut i = x as usize;
        for level in &mut self.levels {
            let was = level[i / 64];
            level[i / 64] = was | 1 << (i % 64);
            if was != 0 {
                break;
            }
            i /= 64;
        }
    }

    fn pop_min(&mut self) -> Option<u32> {
        let top = self.levels.len() - 1;
        if self.levels[top][0] == 0 {
            return None;
        }
        let mut i = 0;
        for level in self.levels.iter().rev() {
            i = i * 64 + level[i].trailing_zeros() as usize;
        }
        let x = i;
        for level in &mut self.levels {
            level[i / 64] &= !(1 << (i % 64));
            if level[i / 64] != 0 {
                break;
            }
            i /= 64;
        }
        Some(x as u32)
    }
}

/// GE's `TopoSortStack` without memory priority (see `Ctx::kahn_by_rank` for that).
enum Frontier {
    /// BFS: GE pushes at the front and pops the back, i.e. first in, first out.
    Fifo(VecDeque<u32>),
    /// DFS: last in, first out.
    Lifo(Vec<u32>),
}

impl Frontier {
    fn push(&mut self, v: u32) {
        match self {
            Frontier::Fifo(q) => q.push_back(v),
            Frontier::Lifo(s) => s.push(v),
        }
    }

    fn pop(&mut self) -> Option<u32> {
        match self {
            Frontier::Fifo(q) => q.pop_front(),
            Frontier::Lifo(s) => s.pop(),
        }
    }

    /// Pushes a batch (reversed first when `reverse`) and empties it.
    fn push_batch(&mut self, batch: &mut Vec<u32>, reverse: bool) {
        if reverse {
            batch.reverse();
        }
        for &v in batch.iter() {
            self.push(v);
        }
        batch.clear();
    }
}

impl Ctx<'_> {
    /// GE's `SortNodes`: [non-data seeds in reverse order, data seeds in reverse order], with
    /// the user's inputs reordered so that earlier ones sit nearer the back (popped first).
    fn seeds(&self, inputs_order: Option<&[String]>) -> Vec<u32> {
        let (mut seeds, mut data) = (Vec::new(), Vec::new());
        for &v in self.by_pos.iter().rev() {
            if self.deg[v as usize] != 0 {
                continue;
            }
            if self.flags[v as usize] & DATA_LIKE != 0 {
                data.push(v);
            } else {
                seeds.push(v);
            }
        }
        seeds.append(&mut data);
        if let Some(order) = inputs_order.filter(|o| !o.is_empty()) {
            // GE's pairwise swap loop is a selection sort, over the slots holding user inputs,
            // by descending index in the user order (first occurrence of a name).
            let mut rank: HashMap<&str, usize> = HashMap::with_capacity(order.len());
            for (i, name) in order.iter().enumerate() {
                rank.entry(name.as_str()).or_insert(i);
            }
            let slots: Vec<usize> = (0..seeds.len())
                .filter(|&k| rank.contains_key(self.name(seeds[k])))
                .collect();
            let mut vals: Vec<u32> = slots.iter().map(|&k| seeds[k]).collect();
            vals.sort_by_key(|&v| Reverse(rank[self.name(v)]));
            for (&k, v) in slots.iter().zip(vals) {
                seeds[k] = v;
            }
        }
        seeds
    }

    /// Every node's rank by GE's `NodeOutInfo` (out-data link count, output bytes, name), and
    /// the nodes by rank.
    fn out_info_ranks(&self) -> (Vec<u32>, Vec<u32>) {
        type Key = (u32, i64, u64, u32);
        let mut keys: Vec<Key> = (0..self.len())
            .map(|k| (self.out_data[k], self.bytes[k], self.prefix[k], k as u32))
            .collect();
        keys.sort_unstable();
        // Equal prefixes: order by the full names.
        let mut i = 0;
        while i < keys.len() {
            let head = &keys[i];
            let same = |x: &Key| (x.0, x.1, x.2) == (head.0, head.1, head.2);
            let j = i + keys[i..].iter().take_while(|x| same(x)).count();
            if j - i > 1 {
                keys[i..j].sort_unstable_by(|a, b| self.name(a.3).cmp(self.name(b.3)));
            }
            i = j;
        }
        let by_rank: Vec<u32> = keys.iter().map(|x| x.3).collect();
        let mut rank = vec![0u32; self.len()];
        for (r, &k) in by_rank.iter().enumerate() {
            rank[k as usize] = r as u32;
        }
        (rank, by_rank)
    }

    /// BFS (`dfs == false`, §3.3) or DFS (§3.4).
    pub(super) fn kahn(
        &self,
        dfs: bool,
        opts: &SortOptions,
        inputs_order: Option<&[String]>,
    ) -> Result<Vec<u32>> {
        let mut seeds = self.seeds(inputs_order);
        let reverse = dfs && opts.dfs_reverse;
        if opts.memory_priority && !reverse {
            return self.kahn_by_rank(dfs, seeds);
        }
        let mut deg = self.deg.clone();
        let mut fr = if dfs {
            Frontier::Lifo(Vec::new())
        } else {
            Frontier::Fifo(VecDeque::new())
        };
        if dfs {
            fr.push_batch(&mut seeds, false);
        }
        let mut out = Vec::with_capacity(self.len());
        let mut batch = Vec::new();
        // BFS takes the next seed only when the queue is empty.
        while let Some(u) = fr.pop().or_else(|| seeds.pop()) {
            out.push(u);
            for &e in self.out_row(u) {
                let v = e & !END;
                let d = &mut deg[v as usize];
                *d -= 1;
                if *d == 0 {
                    batch.push(v);
                }
                if dfs && e & END != 0 {
                    fr.push_batch(&mut batch, reverse);
                }
            }
            if !dfs {
                // GE gathers the ready nodes in a std::map by name.
                if batch.len() > 1 {
                    batch.sort_unstable_by(|&a, &b| self.name_cmp(a, b));
                }
                fr.push_batch(&mut batch, false);
            }
        }
        self.check_all_emitted(out)
    }

    /// BFS or DFS with memory priority: the ready set is GE's `std::map<NodeOutInfo, Node>`,
    /// so push order does not matter and the smallest `NodeOutInfo` is popped first (BFS still
    /// takes a seed only when the set is empty). The graph is relabelled by rank, so that the
    /// set holds the node indexes themselves (a `MinSet`) and the hot arrays are read in rank
    /// order.
    fn kahn_by_rank(&self, dfs: bool, seeds: Vec<u32>) -> Result<Vec<u32>> {
        let n = self.len();
        let (rank, by_rank) = self.out_info_ranks();
        let mut start = Vec::with_capacity(n + 1);
        let mut adj = Vec::with_capacity(self.outs.adj.len());
        let mut deg = Vec::with_capacity(n);
        for &k in &by_rank {
            start.push(adj.len() as u32);
            deg.push(self.deg[k as usize]);
            adj.extend(self.out_row(k).iter().map(|&e| rank[(e & !END) as usize]));
        }
        start.push(adj.len() as u32);
        let mut set = MinSet::new(n);
        let mut seeds: Vec<u32> = seeds.iter().map(|&k| rank[k as usize]).collect();
        if dfs {
            seeds.drain(..).for_each(|r| set.insert(r));
        }
        let mut out = Vec::with_capacity(n);
        while let Some(r) = set.pop_min().or_else(|| seeds.pop()) {
            out.push(r);
            for &t in &adj[start[r as usize] as usize..start[r as usize + 1] as usize] {
                let d = &mut deg[t as usize];
                *d -= 1;
                if *d == 0 {
                    set.insert(t);
                }
            }
        }
        for r in &mut out {
            *r = by_rank[*r as usize];
        }
        self.check_all_emitted(out)
    }

    /// `out` when it holds every node, else the error naming a cycle among the others.
    fn check_all_emitted(&self, out: Vec<u32>) -> Result<Vec<u32>> {
        if out.len() < self.len() {
            let mut left = vec![true; self.len()];
            for &v in &out {
                left[v as usize] = false;
            }
            return Err(self.cycle_among(&left, false));
        }
        Ok(out)
    }

    /// RDFS (§3.5) or StableRDFS (§3.6): iterative reverse post-order DFS over in-nodes.
    pub(super) fn rdfs(&self, stable: bool) -> Result<Vec<u32>> {
        let n = self.len();
        let in_links = self.in_links();
        // RDFS's order of in-nodes, (bytes, name prefix), in one array: one cache miss each.
        let key: Vec<(i64, u64)> = if stable {
            Vec::new()
        } else {
            self.bytes
                .iter()
                .copied()
                .zip(self.prefix.iter().copied())
                .collect()
        };
        let mut status = vec![NOT_WALKED; n];
        let mut out = Vec::with_capacity(n);
        let mut stack = Vec::new();
        let mut ins = Vec::new();
        for &root in &self.by_pos {
            // RDFS starts from the sinks; a NextIteration has no counted out-link, so it is one.
            let sink = self.flags[root as usize] & SINK != 0;
            if (!stable && !sink) || status[root as usize] == WALKED {
                continue;
            }
            stack.push(root);
            while let Some(&cur) = stack.last() {
                let c = cur as usize;
                match status[c] {
                    NOT_WALKED => {
                        status[c] = WALKING;
                        ins.clear();
                        for &v in in_links.row(cur) {
                            match status[v as usize] {
                                WALKING => return Err(self.cycle_on_stack(&stack, &status, v)),
                                NOT_WALKED => ins.push(v),
                                _ => {}
                            }
                        }
                        if stable {
                            // Smallest current position on top.
                            ins.sort_unstable_by_key(|&v| Reverse(self.pos[v as usize]));
                        } else {
                            // std::set<NodeCmp>: bytes descending, then name descending; so
                            // the smallest output ends on top.
                            ins.sort_unstable_by(|&a, &b| {
                                key[b as usize]
                                    .cmp(&key[a as usize])
                                    .then_with(|| self.name(b).cmp(self.name(a)))
                            });
                        }
                        ins.dedup();
                        stack.extend_from_slice(&ins);
                    }
                    WALKING => {
                        stack.pop();
                        status[c] = WALKED;
                        out.push(cur);
                    }
                    _ => {
                        stack.pop();
                    }
                }
            }
        }
        if out.len() < n {
            // Nodes that reach no sink: each has an out-link to another such node.
            let left: Vec<bool> = status.iter().map(|&s| s != WALKED).collect();
            return Err(self.cycle_among(&left, true));
        }
        Ok(out)
    }

    /// The cycle closed by a back edge `w → top of stack`: the Walking nodes from the top of
    /// the stack down to `w` (the DFS path, which runs against the edges).
    fn cycle_on_stack(&self, stack: &[u32], status: &[u8], w: u32) -> IrError {
        let mut taken = vec![false; self.len()];
        let mut cycle = Vec::new();
        for &x in stack.iter().rev() {
            if status[x as usize] != WALKING || taken[x as usize] {
                continue;
            }
            taken[x as usize] = true;
            cycle.push(x);
            if x == w {
                break;
            }
        }
        self.cycle_error(&cycle)
    }

    /// A cycle among the `left` nodes, where each has a counted in-link (`forward == false`)
    /// or out-link (`forward == true`) from/to another `left` node: follow those links until a
    /// node repeats.
    fn cycle_among(&self, left: &[bool], forward: bool) -> IrError {
        let in_links = if forward {
            Cow::Owned(Csr::default())
        } else {
            self.in_links()
        };
        let mut step = vec![NONE; self.len()];
        let mut path: Vec<u32> = Vec::new();
        let mut u = left.iter().position(|&l| l).unwrap_or(0) as u32;
        loop {
            if step[u as usize] != NONE {
                let mut cycle = path.split_off(step[u as usize] as usize);
                if !forward {
                    cycle.reverse();
                }
                return self.cycle_error(&cycle);
            }
            step[u as usize] = path.len() as u32;
            path.push(u);
            let next = if forward {
                self.out_row(u)
                    .iter()
                    .map(|&e| e & !END)
                    .find(|&v| left[v as usize])
            } else {
                in_links.row(u).iter().copied().find(|&v| left[v as usize])
            };
            match next {
                Some(v) => u = v,
                // Not reached: report the nodes left over, as GE logs them.
                None => {
                    let all: Vec<u32> = (0..self.len() as u32)
                        .filter(|&v| left[v as usize])
                        .collect();
                    return self.cycle_error(&all);
                }
            }
        }
    }

    fn cycle_error(&self, cycle: &[u32]) -> IrError {
        IrError::Cycle {
            graph: self.graph.to_string(),
            nodes: cycle.iter().map(|&v| self.name(v).to_string()).collect(),
        }
    }

    /// GE's `DelayTopoSort` (§3.8) over a sorted order. Slot groups are intrusive lists: a
    /// group is `head[slot]` → `next[..]` → … → `order[slot]` (prepending keeps the tail).
    pub(super) fn delay_topo_sort(&self, order: &[u32]) -> Vec<u32> {
        let n = order.len();
        let mut at = vec![0u32; n];
        for (i, &v) in order.iter().enumerate() {
            at[v as usize] = i as u32;
        }
        let mut head = order.to_vec();
        let mut next = vec![NONE; n];
        let mut delayable = vec![true; n];
        for i in 0..n {
            let first = head[i];
            if first == NONE || !delayable[i] {
                continue;
            }
            let last = order[i];
            let f = self.flags[last as usize];
            let movable = if first == last {
                // One node, fed by long-lived inputs only (at least one).
                f & (HAS_INPUT | SHORT_INPUT) == HAS_INPUT
            } else {
                f & ONE_IN_ANCHOR != 0
            };
            if !movable || f & NEXT_ITER != 0 {
                continue;
            }
            // The first out node, and whether there is more than one (distinct) out node.
            let (mut j, mut one, mut many) = (usize::MAX, NONE, false);
            for &e in self.out_row(last) {
                let v = e & !END;
                j = j.min(at[v as usize] as usize);
                if one == NONE {
                    one = v;
                } else if one != v {
                    many = true;
                }
            }
            if j == usize::MAX || j <= i + 1 {
                continue;
            }
            next[last as usize] = head[j];
            head[j] = first;
            head[i] = NONE;
            if many {
                delayable[j] = false;
            }
        }
        let mut out = Vec::with_capacity(n);
        for &h in &head {
            let mut v = h;
            while v != NONE {
                out.push(v);
                v = next[v as usize];
            }
        }
        out
    }
}
