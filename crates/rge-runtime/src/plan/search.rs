//! Exact placement search for small programs, after MiniMalloc (Moffitt, ASPLOS 2023): a
//! depth-first search over *canonical* solutions for a fixed arena capacity.
//!
//! Any valid placement can be settled by pushing every buffer down until it rests on another
//! buffer or on offset 0. Listed by (offset, a fixed preorder), each buffer of a settled placement
//! sits exactly at its *minimum offset* — the highest top among the buffers placed before it that
//! are alive at a common step. So the search only ever places a buffer at its minimum offset, in
//! non-decreasing (offset, preorder). Two prunings keep it small:
//! - dominance: a buffer is never placed at or above the lowest top some unplaced buffer could
//!   reach now (that buffer could then drop into the gap left below, so the placement is not
//!   settled);
//! - section inference: per section (a run of steps with one set of live buffers), the floor —
//!   the current offset, the tops placed there, the lowest minimum offset of its unplaced
//!   buffers — plus the sizes still to place there must fit in the capacity.
//!
//! The search is bounded by a count of work (buffers, sections and overlaps visited), not by
//! time, so plans stay deterministic.

use super::{aligned, BufferReq, ALIGN};

/// A search's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    Found,
    Infeasible,
    OutOfWork,
}

const UNPLACED: u64 = u64::MAX;

/// An unplaced buffer in the search order: (minimum offset, rank in the preorder, buffer).
type Entry = (u64, u32, u32);

/// Buffers as spans of sections with sizes in alignment units.
pub(super) struct Problem {
    /// Index into the caller's requests.
    index: Vec<usize>,
    size: Vec<u64>,
    /// Sections `[lo, hi)` the buffer is alive in.
    span: Vec<(u32, u32)>,
    /// Buffers alive at a common section.
    overlaps: Vec<Vec<u32>>,
    /// Buffers alive in each section.
    sections: Vec<Vec<u32>>,
}

impl Problem {
    /// Builds the problem from `conflicts`: for every request, the requests alive at a common
    /// step (the greedy placements' conflict lists).
    pub(super) fn new(reqs: &[BufferReq], conflicts: &[Vec<u32>]) -> Problem {
        let index: Vec<usize> = (0..reqs.len()).filter(|&i| reqs[i].size > 0).collect();
        // Steps [def, last]; graph outputs (last = MAX) stay alive to the last step.
        let end = index
            .iter()
            .map(|&i| match reqs[i].last {
                u32::MAX => reqs[i].def,
                last => last.max(reqs[i].def),
            })
            .max()
            .unwrap_or(0);
        let steps = |i: usize| (reqs[i].def, reqs[i].last.min(end).max(reqs[i].def) + 1);
        let mut points: Vec<u32> = index
            .iter()
            .flat_map(|&i| [steps(i).0, steps(i).1])
            .collect();
        points.sort_unstable();
        points.dedup();
        let at = |p: u32| points.binary_search(&p).unwrap_or(0) as u32;
        let span: Vec<(u32, u32)> = index
            .iter()
            .map(|&i| {
                let (a, b) = steps(i);
                (at(a), at(b))
            })
            .collect();
        let nsec = points.len().saturating_sub(1);
        let mut sections = vec![Vec::new(); nsec];
        for (k, &(lo, hi)) in span.iter().enumerate() {
            for s in lo..hi {
                sections[s as usize].push(k as u32);
            }
        }
        let mut compact = vec![u32::MAX; reqs.len()];
        for (k, &i) in index.iter().enumerate() {
            compact[i] = k as u32;
        }
        let overlaps = index
            .iter()
            .map(|&i| conflicts[i].iter().map(|&j| compact[j as usize]).collect())
            .collect();
        Problem {
            size: index
                .iter()
                .map(|&i| (aligned(reqs[i].size) / ALIGN) as u64)
                .collect(),
            index,
            span,
            overlaps,
            sections,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.index.len()
    }

    pub(super) fn size(&self, k: u32) -> u64 {
        self.size[k as usize]
    }

    pub(super) fn span(&self, k: u32) -> (u32, u32) {
        self.span[k as usize]
    }

    pub(super) fn overlaps(&self, k: u32) -> &[u32] {
        &self.overlaps[k as usize]
    }

    /// Byte offsets for each of `nreqs` requests (empty ones at 0) from offsets in units, and
    /// the arena size.
    pub(super) fn to_bytes(&self, units: &[u64], nreqs: usize) -> (Vec<usize>, usize) {
        let mut offsets = vec![0usize; nreqs];
        let mut arena = 0;
        for k in 0..self.len() {
            offsets[self.index[k]] = units[k] as usize * ALIGN;
            arena = arena.max((units[k] + self.size[k]) as usize * ALIGN);
        }
        (offsets, arena)
    }

    /// Work of one descent from the root to a full placement.
    pub(super) fn descent_work(&self) -> u64 {
        (self.len() * (self.len() + self.sections.len())) as u64
    }

    /// Static orders to try: MiniMalloc's preorderings (by the largest section total over a
    /// buffer's span, by span width, by area), each a different first guess for the search.
    fn preorders(&self) -> Vec<Vec<u32>> {
        let total: Vec<u64> = self
            .sections
            .iter()
            .map(|s| s.iter().map(|&b| self.size[b as usize]).sum())
            .collect();
        let n = self.len();
        let peak: Vec<u64> = (0..n)
            .map(|k| {
                let (lo, hi) = self.span[k];
                (lo..hi).map(|s| total[s as usize]).max().unwrap_or(0)
            })
            .collect();
        let width = |k: usize| u64::from(self.span[k].1 - self.span[k].0);
        let area = |k: usize| width(k) * self.size[k];
        type Key = (u64, u64, u64);
        let keys: [&dyn Fn(usize) -> Key; 3] = [
            &|k| (peak[k], width(k), area(k)),
            &|k| (peak[k], area(k), width(k)),
            &|k| (width(k), area(k), peak[k]),
        ];
        keys.iter()
            .map(|key| {
                let mut o: Vec<u32> = (0..n as u32).collect();
                o.sort_by_key(|&k| (std::cmp::Reverse(key(k as usize)), k));
                o
            })
            .collect()
    }
}

/// Searches placements within `cap` units with the time-ordered sweep and the offset-ordered
/// search under each preorder, round robin with a doubling work limit (MiniMalloc's scheme: an
/// easy instance is solved cheaply by whichever strategy suits it). `work` is the budget
/// (about one unit per buffer, section or overlap visited); what is used is taken off. Returns
/// the offset of every problem buffer in units.
pub(super) fn solve(p: &Problem, cap: u64, work: &mut u64) -> Option<Vec<u64>> {
    let preorders = p.preorders();
    let mut limit = p.descent_work().max(1);
    while *work > 0 {
        for strategy in 0..=preorders.len() {
            let given = limit.min(*work);
            let (outcome, offsets, left) = match strategy {
                0 => {
                    let mut left = given;
                    match super::sweep::solve(p, cap, &mut left) {
                        Some(o) => (Outcome::Found, o, left),
                        None => (Outcome::OutOfWork, Vec::new(), left),
                    }
                }
                _ => {
                    let mut s = Search::new(p, cap, &preorders[strategy - 1], given);
                    let outcome = s.run();
                    (outcome, s.offset, s.work_left)
                }
            };
            // A budget too small for even one node is spent.
            *work = if left == given {
                0
            } else {
                *work - (given - left)
            };
            match outcome {
                Outcome::Found => return Some(offsets),
                // A complete search proved the capacity too small.
                Outcome::Infeasible => return None,
                Outcome::OutOfWork => {}
            }
        }
        limit = limit.saturating_mul(2);
    }
    None
}

/// Whether some placement fits `capacity` bytes: `None` when `work` ran out first.
#[cfg(test)]
pub(super) fn feasible(p: &Problem, capacity: usize, work: u64) -> Option<bool> {
    let mut s = Search::new(p, (capacity / ALIGN) as u64, &p.preorders()[0], work);
    match s.run() {
        Outcome::Found => Some(true),
        Outcome::Infeasible => Some(false),
        Outcome::OutOfWork => None,
    }
}

struct Search<'a> {
    p: &'a Problem,
    cap: u64,
    /// Rank of each buffer in the preorder.
    rank: Vec<u32>,
    offset: Vec<u64>,
    min_offset: Vec<u64>,
    floor: Vec<u64>,
    /// Sizes still unplaced in each section.
    total: Vec<u64>,
    /// Work units left (about one per buffer, section or overlap visited).
    work_left: u64,
    /// The search order of each depth: unplaced buffers by (minimum offset, rank).
    orders: Vec<Vec<Entry>>,
    /// Undo logs: (buffer, previous minimum offset) and (section, previous floor).
    offset_log: Vec<(u32, u64)>,
    floor_log: Vec<(u32, u64)>,
    /// Scratch: the entries a placement raised, sorted.
    raised: Vec<Entry>,
    /// Scratch stamps: sections rescanned, buffers raised (by placement epoch).
    section_stamp: Vec<u32>,
    moved: Vec<u32>,
    epoch: u32,
}

impl<'a> Search<'a> {
    fn new(p: &'a Problem, cap: u64, preorder: &[u32], work: u64) -> Self {
        let mut rank = vec![0u32; p.len()];
        for (r, &k) in preorder.iter().enumerate() {
            rank[k as usize] = r as u32;
        }
        Search {
            p,
            cap,
            rank,
            offset: vec![UNPLACED; p.len()],
            min_offset: vec![0; p.len()],
            floor: vec![0; p.sections.len()],
            total: p
                .sections
                .iter()
                .map(|s| s.iter().map(|&b| p.size[b as usize]).sum())
                .collect(),
            work_left: work,
            orders: vec![Vec::new(); p.len() + 1],
            offset_log: Vec::new(),
            floor_log: Vec::new(),
            raised: Vec::new(),
            section_stamp: vec![0; p.sections.len()],
            moved: vec![0; p.len()],
            epoch: 0,
        }
    }

    fn run(&mut self) -> Outcome {
        if self.total.iter().any(|&t| t > self.cap) {
            return Outcome::Infeasible;
        }
        let mut order: Vec<Entry> = (0..self.p.len())
            .map(|k| (0, self.rank[k], k as u32))
            .collect();
        order.sort_unstable();
        self.orders[0] = order;
        self.dfs(0, 0, 0)
    }

    /// Searches on from `depth` placed buffers; the last was placed at (`last_offset`,
    /// `last_rank`).
    fn dfs(&mut self, depth: usize, last_offset: u64, last_rank: u32) -> Outcome {
        let p = self.p;
        let order = std::mem::take(&mut self.orders[depth]);
        let cost = order.len() as u64 + 16;
        let mut outcome = Outcome::Infeasible;
        if self.work_left < cost {
            outcome = Outcome::OutOfWork;
        } else if order.is_empty() {
            outcome = Outcome::Found;
        } else {
            self.work_left -= cost;
            let min_height = order
                .iter()
                .map(|&(o, _, k)| o + p.size[k as usize])
                .min()
                .unwrap_or(0);
            for &(off, rank, k) in &order {
                // Dominance: from here on every placement leaves a gap some buffer could drop
                // into.
                if off >= min_height {
                    break;
                }
                // Canonical order: (offset, rank) never decreases along a branch.
                if (off, rank) < (last_offset, last_rank) || off + p.size[k as usize] > self.cap {
                    continue;
                }
                let r = self.place(&order, depth, k as usize, off);
                if r != Outcome::Infeasible {
                    outcome = r;
                    break;
                }
            }
        }
        self.orders[depth] = order;
        outcome
    }

    /// Places buffer `k` (from `order`, the order at `depth`) at `off`, searches on, and undoes
    /// the placement unless a solution was found.
    fn place(&mut self, order: &[Entry], depth: usize, k: usize, off: u64) -> Outcome {
        let p = self.p;
        let top = off + p.size[k];
        self.offset[k] = off;
        let (lo, hi) = p.span[k];
        let offset_mark = self.offset_log.len();
        let floor_mark = self.floor_log.len();
        // Work: the overlaps and sections visited here (the node itself is charged in `dfs`).
        let mut spent = p.overlaps[k].len() + (hi - lo) as usize;
        for &j in &p.overlaps[k] {
            let j = j as usize;
            if self.offset[j] == UNPLACED && self.min_offset[j] < top {
                self.offset_log.push((j as u32, self.min_offset[j]));
                self.min_offset[j] = top;
            }
        }
        for s in lo..hi {
            let s = s as usize;
            self.floor_log.push((s as u32, self.floor[s]));
            self.floor[s] = self.floor[s].max(top);
            self.total[s] -= p.size[k];
        }
        // A section's floor is at least the lowest minimum offset of its unplaced buffers.
        self.epoch += 1;
        for n in offset_mark..self.offset_log.len() {
            let (lo, hi) = p.span[self.offset_log[n].0 as usize];
            for s in lo..hi {
                let s = s as usize;
                if self.section_stamp[s] == self.epoch {
                    continue;
                }
                self.section_stamp[s] = self.epoch;
                spent += p.sections[s].len();
                let lowest = p.sections[s]
                    .iter()
                    .filter(|&&b| self.offset[b as usize] == UNPLACED)
                    .map(|&b| self.min_offset[b as usize])
                    .min();
                if let Some(lowest) = lowest.filter(|&l| l > self.floor[s]) {
                    self.floor_log.push((s as u32, self.floor[s]));
                    self.floor[s] = lowest;
                }
            }
        }
        let fits = self
            .floor
            .iter()
            .zip(&self.total)
            .all(|(&f, &t)| t == 0 || f.max(off) + t <= self.cap);
        // The floor check above visited every section.
        spent += p.sections.len();
        let outcome = if self.work_left < spent as u64 {
            self.work_left = 0;
            Outcome::OutOfWork
        } else if fits {
            self.work_left -= spent as u64;
            // The child's order: unchanged entries keep their places; merge in the raised ones.
            self.raised.clear();
            for n in offset_mark..self.offset_log.len() {
                let j = self.offset_log[n].0;
                self.moved[j as usize] = self.epoch;
                self.raised
                    .push((self.min_offset[j as usize], self.rank[j as usize], j));
            }
            self.raised.sort_unstable();
            let mut child = std::mem::take(&mut self.orders[depth + 1]);
            child.clear();
            let mut next = 0;
            for &e in order {
                if e.2 as usize == k || self.moved[e.2 as usize] == self.epoch {
                    continue;
                }
                while next < self.raised.len() && self.raised[next] < e {
                    child.push(self.raised[next]);
                    next += 1;
                }
                child.push(e);
            }
            child.extend_from_slice(&self.raised[next..]);
            self.orders[depth + 1] = child;
            self.dfs(depth + 1, off, self.rank[k])
        } else {
            self.work_left -= spent as u64;
            Outcome::Infeasible
        };
        if outcome != Outcome::Found {
            for &(s, f) in self.floor_log[floor_mark..].iter().rev() {
                self.floor[s as usize] = f;
            }
            for s in lo..hi {
                self.total[s as usize] += p.size[k];
            }
            for &(j, m) in self.offset_log[offset_mark..].iter().rev() {
                self.min_offset[j as usize] = m;
            }
            self.offset[k] = UNPLACED;
        }
        self.floor_log.truncate(floor_mark);
        self.offset_log.truncate(offset_mark);
        outcome
    }
}
