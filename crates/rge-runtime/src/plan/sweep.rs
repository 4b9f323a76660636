//! Time-ordered placement search: buffers in order of their first step, each placed at the
//! bottom or the top of a free gap among the buffers alive then, depth first with backtracking.
//!
//! It complements the offset-ordered search in [`super::search`]: that one fills memory from
//! offset 0 up across the whole program, so on long programs a poor choice low down is found
//! out only far above it. Here a poor choice shows up within the lifetimes that follow it, so
//! backtracking stays local — what long chains of skip connections need. Not complete (a buffer
//! never floats in the middle of a gap), bounded by work rather than time, deterministic.

use super::search::{Outcome, Problem};

/// Searches a placement within `cap` units; `work` as in [`super::search::solve`]. Returns the
/// offset of every problem buffer in units.
pub(super) fn solve(p: &Problem, cap: u64, work: &mut u64) -> Option<Vec<u64>> {
    let mut order: Vec<u32> = (0..p.len() as u32).collect();
    order.sort_by_key(|&k| (p.span(k).0, std::cmp::Reverse(p.size(k)), k));
    let mut s = Sweep {
        p,
        cap,
        order,
        offset: vec![u64::MAX; p.len()],
        work_left: *work,
        busy: Vec::new(),
        candidates: Vec::new(),
    };
    let outcome = s.dfs(0);
    *work = s.work_left;
    (outcome == Outcome::Found).then_some(s.offset)
}

struct Sweep<'a> {
    p: &'a Problem,
    cap: u64,
    order: Vec<u32>,
    offset: Vec<u64>,
    work_left: u64,
    /// Scratch: occupied ranges.
    busy: Vec<(u64, u64)>,
    /// The candidate offsets of every depth, stacked.
    candidates: Vec<(u64, u64)>,
}

impl Sweep<'_> {
    fn dfs(&mut self, pos: usize) -> Outcome {
        let Some(&k) = self.order.get(pos) else {
            return Outcome::Found;
        };
        let p = self.p;
        // Charged like the offset-ordered search's nodes: the overlaps visited, sorted and
        // scanned, plus a fixed cost per node.
        let cost = 4 * p.overlaps(k).len() as u64 + 16;
        if self.work_left < cost {
            return Outcome::OutOfWork;
        }
        self.work_left -= cost;
        let size = p.size(k);
        // Buffers placed so far that overlap `k` are exactly those alive at its first step.
        self.busy.clear();
        for &j in p.overlaps(k) {
            let o = self.offset[j as usize];
            if o != u64::MAX {
                self.busy.push((o, o + p.size(j)));
            }
        }
        self.busy.sort_unstable();
        // Candidates: (gap size, offset), smallest fitting gap first, its bottom before its top.
        let mark = self.candidates.len();
        let mut at = 0u64;
        for n in 0..=self.busy.len() {
            let (lo, hi) = self.busy.get(n).copied().unwrap_or((self.cap, self.cap));
            if lo >= at + size {
                let gap = lo - at;
                self.candidates.push((gap, at));
                if gap > size {
                    self.candidates.push((gap, lo - size));
                }
            }
            at = at.max(hi);
        }
        let end = self.candidates.len();
        self.candidates[mark..end].sort_unstable();
        let mut outcome = Outcome::Infeasible;
        for n in mark..end {
            self.offset[k as usize] = self.candidates[n].1;
            outcome = self.dfs(pos + 1);
            if outcome != Outcome::Infeasible {
                break;
            }
        }
        self.candidates.truncate(mark);
        if outcome == Outcome::Found {
            return outcome;
        }
        self.offset[k as usize] = u64::MAX;
        outcome
    }
}
