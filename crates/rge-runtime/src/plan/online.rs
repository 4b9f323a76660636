//! The planner's O(n log n) placements: a walk over the steps in order that frees every buffer
//! after its last reader and gives each new buffer the best-fitting free gap (a malloc
//! simulation over the arena, as onnxruntime's and TVM's linear planners do), and the matching
//! check of outside offsets. Both visit each buffer a constant number of times with ordered
//! maps, so they stay fast on graphs of millions of buffers where the offline greedy orders,
//! which look at every overlapping buffer, do not.
//!
//! Buffers of one size are placed optimally (a freed slot always fits the next buffer, so the
//! arena is the most bytes alive at one step); with mixed sizes, fragmentation can leave it
//! above that, and the offline orders run beside it where their work is bounded.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};

use super::{aligned, BufferReq};

/// The buffers with bytes, by first step, larger ones first within a step (they fragment the
/// free gaps least when placed first).
fn by_definition(reqs: &[BufferReq]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..reqs.len()).filter(|&i| reqs[i].size > 0).collect();
    order.sort_by_key(|&i| (reqs[i].def, Reverse(reqs[i].size), i));
    order
}

/// Free byte ranges below the arena's top, by offset and by (length, offset).
#[derive(Default)]
struct FreeGaps {
    by_offset: BTreeMap<usize, usize>,
    by_len: BTreeSet<(usize, usize)>,
    top: usize,
}

impl FreeGaps {
    fn insert(&mut self, off: usize, len: usize) {
        self.by_offset.insert(off, len);
        self.by_len.insert((len, off));
    }

    fn remove(&mut self, off: usize, len: usize) {
        self.by_offset.remove(&off);
        self.by_len.remove(&(len, off));
    }

    /// Takes `size` bytes: the smallest gap that fits (lowest offset among equals), else the
    /// top, extended from a free gap that ends at it.
    fn take(&mut self, size: usize) -> usize {
        if let Some(&(len, off)) = self.by_len.range((size, 0)..).next() {
            self.remove(off, len);
            if len > size {
                self.insert(off + size, len - size);
            }
            return off;
        }
        let last = self.by_offset.iter().next_back().map(|(&o, &l)| (o, l));
        let start = match last {
            Some((off, len)) if off + len == self.top => {
                self.remove(off, len);
                off
            }
            _ => self.top,
        };
        self.top = start + size;
        start
    }

    /// Returns `[off, off + len)`, merged with the free gaps it touches.
    fn give_back(&mut self, mut off: usize, mut len: usize) {
        if let Some((&o, &l)) = self.by_offset.range(..off).next_back() {
            if o + l == off {
                self.remove(o, l);
                off = o;
                len += l;
            }
        }
        if let Some(&l) = self.by_offset.get(&(off + len)) {
            self.remove(off + len, l);
            len += l;
        }
        self.insert(off, len);
    }
}

/// Places every buffer in one walk over the steps: at each step the buffers whose last reader
/// has run are freed, then the buffers defined there take the best-fitting free gap. Returns
/// each buffer's offset (0 for empty ones) and the arena size.
pub fn place_online(reqs: &[BufferReq]) -> (Vec<usize>, usize) {
    let mut offsets = vec![0usize; reqs.len()];
    let mut gaps = FreeGaps::default();
    // Live buffers by last step, earliest first.
    let mut live: BinaryHeap<Reverse<(u32, usize)>> = BinaryHeap::new();
    for i in by_definition(reqs) {
        let r = &reqs[i];
        while let Some(&Reverse((last, j))) = live.peek() {
            if last >= r.def {
                break;
            }
            live.pop();
            gaps.give_back(offsets[j], aligned(reqs[j].size));
        }
        offsets[i] = gaps.take(aligned(r.size));
        if r.last != u32::MAX {
            live.push(Reverse((r.last, i)));
        }
    }
    (offsets, gaps.top)
}

/// Checks offsets from outside (a saved model's plan) against `reqs`: one per buffer, aligned,
/// and no two buffers alive at one step sharing a byte. Returns the arena size.
pub fn check_offsets(reqs: &[BufferReq], offsets: &[usize]) -> Result<usize, String> {
    if offsets.len() != reqs.len() {
        return Err(format!(
            "{} buffer offsets for {} buffers",
            offsets.len(),
            reqs.len()
        ));
    }
    let mut arena = 0usize;
    // Live buffers: offset → (end, buffer), and by last step for freeing.
    let mut by_offset: BTreeMap<usize, (usize, usize)> = BTreeMap::new();
    let mut live: BinaryHeap<Reverse<(u32, usize)>> = BinaryHeap::new();
    for i in by_definition(reqs) {
        let (off, size) = (offsets[i], aligned(reqs[i].size));
        let end = off
            .checked_add(size)
            .ok_or_else(|| format!("buffer {i}: offset {off} overflows"))?;
        if off % super::ALIGN != 0 {
            return Err(format!(
                "buffer {i}: offset {off} is not {}-aligned",
                super::ALIGN
            ));
        }
        while let Some(&Reverse((last, j))) = live.peek() {
            if last >= reqs[i].def {
                break;
            }
            live.pop();
            by_offset.remove(&offsets[j]);
        }
        // Live buffers never share a byte, so only the nearest one starting below `end` can
        // reach into `[off, end)`.
        if let Some((&o, &(e, j))) = by_offset.range(..end).next_back() {
            if e > off && o < end {
                return Err(format!(
                    "buffers {j} and {i} are alive together and share bytes"
                ));
            }
        }
        by_offset.insert(off, (end, i));
        live.push(Reverse((reqs[i].last, i)));
        arena = arena.max(end);
    }
    Ok(arena)
}

/// Pairs of buffers alive at a common step, counted up to `limit` (more: `None`), in
/// O(n log n): what the offline placements would visit.
pub fn overlap_pairs(reqs: &[BufferReq], limit: usize) -> Option<usize> {
    let mut defs: Vec<u32> = reqs.iter().filter(|r| r.size > 0).map(|r| r.def).collect();
    defs.sort_unstable();
    let mut pairs = 0usize;
    // For each buffer, the later-defined ones (by position in `defs`) that start before it ends.
    let mut by_def: Vec<(u32, u32)> = reqs
        .iter()
        .filter(|r| r.size > 0)
        .map(|r| (r.def, r.last))
        .collect();
    by_def.sort_unstable();
    for (k, &(_, last)) in by_def.iter().enumerate() {
        let end = defs.partition_point(|&d| d <= last);
        pairs += end.saturating_sub(k + 1);
        if pairs > limit {
            return None;
        }
    }
    Some(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(size: usize, def: u32, last: u32) -> BufferReq {
        BufferReq {
            size,
            def,
            last,
            writers: vec![def],
            readers: vec![last],
        }
    }

    #[test]
    fn equal_sizes_reach_the_bound() {
        // Windows of 64 steps, some alive to the end: the most alive at one step is the bound.
        let reqs: Vec<BufferReq> = (0..5_000u32)
            .map(|i| {
                let last = if i % 7 == 0 { u32::MAX } else { i + 1 + i % 64 };
                req(64, i, last)
            })
            .collect();
        let (offs, arena) = place_online(&reqs);
        assert_eq!(check_offsets(&reqs, &offs), Ok(arena));
        assert_eq!(arena, super::super::lower_bound(&reqs, 5_000));
    }

    #[test]
    fn freed_gaps_merge() {
        // Two small buffers freed next to each other take one larger one.
        let reqs = vec![req(64, 0, 1), req(64, 0, 1), req(128, 2, 3)];
        let (offs, arena) = place_online(&reqs);
        assert_eq!(arena, 128);
        assert_eq!(offs[2], 0);
    }

    #[test]
    fn check_finds_shared_bytes() {
        let reqs = vec![req(128, 0, 5), req(64, 2, 3)];
        assert!(check_offsets(&reqs, &[0, 64])
            .unwrap_err()
            .contains("share bytes"));
        assert_eq!(check_offsets(&reqs, &[0, 128]), Ok(192));
        assert!(check_offsets(&reqs, &[0, 130])
            .unwrap_err()
            .contains("aligned"));
        assert!(check_offsets(&reqs, &[0]).is_err());
    }

    #[test]
    fn pairs_are_counted() {
        let reqs = vec![req(1, 0, 2), req(1, 1, 1), req(1, 2, 3), req(1, 4, 4)];
        // (0,1), (0,2); 1 ends before 2 starts; 3 alone.
        assert_eq!(overlap_pairs(&reqs, 10), Some(2));
        assert_eq!(overlap_pairs(&reqs, 1), None);
    }
}
