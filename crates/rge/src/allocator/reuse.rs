//! Which freed large blocks are kept mapped for the next large allocation, and which one serves
//! it. Pure bookkeeping (addresses and sizes): `mapped.rs` does the system calls.
//!
//! A fresh mapping costs a page fault per page (or a 2 MiB page zeroed whole) the first time
//! each page is written: a model run that returns a 4.8 MiB output paid about 150 faults per
//! run, and a single-op Conv of MobileNetV2 took 1.0 ms against 0.43 inside the model. Keeping
//! a few freed blocks (at most [`CAPACITY`] bytes) gives the next run's output the same pages.

/// The most bytes kept (GPT-2's 128-token logits are 25 MiB).
const CAPACITY: usize = 64 << 20;
/// The most blocks kept.
const SLOTS: usize = 8;

/// A mapped block: its address and the size it was allocated with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Block {
    pub ptr: usize,
    pub size: usize,
}

/// Blocks for the caller to unmap (at most one more than the slots).
pub(super) type Evicted = [Option<Block>; SLOTS + 1];

/// The kept blocks, each with the time (a counter) it was freed.
#[derive(Debug)]
pub(super) struct Reuse {
    slots: [Option<(Block, u64)>; SLOTS],
    /// Bytes of the kept blocks.
    held: usize,
    clock: u64,
}

impl Reuse {
    pub(super) const fn new() -> Self {
        Reuse {
            slots: [None; SLOTS],
            held: 0,
            clock: 0,
        }
    }

    /// The kept block to serve `size` bytes (`len` maps a size to its mapping's length),
    /// removed: one of the same length, else the shortest that is at most twice as long (to
    /// shrink), else the longest shorter one (to grow); the most recently freed among equals.
    /// None when only much longer ones are kept: shrinking one would give up pages a later
    /// allocation of its size would want.
    pub(super) fn take(&mut self, size: usize, len: impl Fn(usize) -> usize) -> Option<Block> {
        let need = len(size);
        let rank = |b: &Block| {
            let l = len(b.size);
            if l == need {
                Some((0, 0))
            } else if l > need && l <= need.saturating_mul(2) {
                Some((1, l))
            } else if l < need {
                Some((2, usize::MAX - l))
            } else {
                None
            }
        };
        let best = (0..SLOTS)
            .filter_map(|i| self.slots[i].map(|(b, t)| (i, b, t)))
            .filter_map(|(i, b, t)| rank(&b).map(|r| ((r, u64::MAX - t), i)))
            .min()?
            .1;
        let (b, _) = self.slots[best].take()?;
        self.held -= b.size;
        Some(b)
    }

    /// Keeps `b`, evicting the oldest blocks as needed to stay within [`CAPACITY`] and the
    /// slots; returns what to unmap (`b` itself when it is larger than the capacity).
    pub(super) fn put(&mut self, b: Block) -> Evicted {
        let mut out: Evicted = [None; SLOTS + 1];
        if b.size > CAPACITY {
            out[0] = Some(b);
            return out;
        }
        let mut n = 0;
        while self.held + b.size > CAPACITY || self.slots.iter().all(Option::is_some) {
            let oldest = (0..SLOTS)
                .filter_map(|i| self.slots[i].map(|(_, t)| (t, i)))
                .min()
                .map(|(_, i)| i);
            let Some((old, _)) = oldest.and_then(|i| self.slots[i].take()) else {
                break;
            };
            self.held -= old.size;
            out[n] = Some(old);
            n += 1;
        }
        self.clock += 1;
        if let Some(slot) = self.slots.iter_mut().find(|s| s.is_none()) {
            *slot = Some((b, self.clock));
            self.held += b.size;
        } else {
            out[n] = Some(b);
        }
        out
    }

    /// Gives up every kept block (to unmap).
    pub(super) fn drain(&mut self) -> Evicted {
        let mut out: Evicted = [None; SLOTS + 1];
        for (o, s) in out.iter_mut().zip(self.slots.iter_mut()) {
            *o = s.take().map(|(b, _)| b);
        }
        self.held = 0;
        out
    }

    /// Bytes kept.
    #[cfg(test)]
    pub(super) fn held(&self) -> usize {
        self.held
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn len(size: usize) -> usize {
        size.next_multiple_of(4096)
    }

    fn block(ptr: usize, size: usize) -> Block {
        Block { ptr, size }
    }

    fn evicted(e: &Evicted) -> Vec<Block> {
        e.iter().flatten().copied().collect()
    }

    #[test]
    fn the_same_length_is_served_first_then_the_closest_longer_then_the_longest_shorter() {
        let mut r = Reuse::new();
        for b in [
            block(1, 3 * MIB),
            block(2, 5 * MIB),
            block(3, 9 * MIB),
            block(4, 4 * MIB),
        ] {
            assert!(evicted(&r.put(b)).is_empty());
        }
        // Same page count: 4 MiB - 100 bytes maps to 4 MiB.
        assert_eq!(r.take(4 * MIB - 100, len), Some(block(4, 4 * MIB)));
        // 3.5 MiB: 5 MiB is within twice, 9 MiB too, the shorter wins.
        assert_eq!(r.take(7 * MIB / 2, len), Some(block(2, 5 * MIB)));
        // 20 MiB: nothing longer; the longest shorter one grows.
        assert_eq!(r.take(20 * MIB, len), Some(block(3, 9 * MIB)));
        // 1 MiB: only 3 MiB is left, more than twice as long: kept.
        assert_eq!(r.take(MIB, len), None);
        assert_eq!(r.held(), 3 * MIB);
    }

    #[test]
    fn the_most_recently_freed_of_equal_blocks_is_served() {
        let mut r = Reuse::new();
        r.put(block(1, 3 * MIB));
        r.put(block(2, 3 * MIB));
        assert_eq!(r.take(3 * MIB, len), Some(block(2, 3 * MIB)));
        assert_eq!(r.take(3 * MIB, len), Some(block(1, 3 * MIB)));
        assert_eq!(r.take(3 * MIB, len), None);
    }

    #[test]
    fn the_oldest_blocks_go_when_the_capacity_or_the_slots_run_out() {
        let mut r = Reuse::new();
        let big = CAPACITY / 2;
        r.put(block(1, big));
        r.put(block(2, big));
        // A third half-capacity block evicts the oldest.
        assert_eq!(evicted(&r.put(block(3, big))), vec![block(1, big)]);
        assert_eq!(r.held(), CAPACITY);
        // A block larger than the capacity is not kept, and evicts nothing.
        assert_eq!(
            evicted(&r.put(block(9, CAPACITY + 1))),
            vec![block(9, CAPACITY + 1)]
        );
        assert_eq!(r.held(), CAPACITY);
        // Slots: small blocks beyond their number evict the oldest.
        let mut r = Reuse::new();
        for i in 0..SLOTS {
            assert!(evicted(&r.put(block(i + 1, 2 * MIB))).is_empty());
        }
        assert_eq!(evicted(&r.put(block(99, 2 * MIB))), vec![block(1, 2 * MIB)]);
        assert_eq!(evicted(&r.drain()).len(), SLOTS);
        assert_eq!(r.held(), 0);
    }
}
