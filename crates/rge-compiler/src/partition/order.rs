//! An ordered list with order labels (the order-maintenance problem): O(1) order comparison,
//! O(1) removal, insertion anywhere in amortized O(log n) relabels. Labels are u64; a full
//! gap is fixed by relabelling the smallest aligned label range around the insertion point
//! whose density is below (3/4)^i (Bender, Cole, Demaine, Farach-Colton, Zito, "Two
//! simplified algorithms for maintaining order in a list", ESA 2002).
//!
//! The merge pass keeps its clusters in a topological order of the cluster graph here.

const NIL: u32 = u32::MAX;
/// Spacing of appended labels.
const GAP: u64 = 1 << 32;
/// Labels stay below this (room for the aligned ranges of the relabelling).
const LIMIT: u64 = 1 << 62;

#[derive(Debug, Clone)]
pub(crate) struct OrderList {
    prev: Vec<u32>,
    next: Vec<u32>,
    label: Vec<u64>,
    head: u32,
    tail: u32,
    /// Full relabellings done (for statistics).
    pub(crate) relabels: u64,
}

impl OrderList {
    /// An empty list over items `0..n` (none linked yet). Item `n` is a sentinel kept at the
    /// head, so that every item has a predecessor.
    pub(crate) fn new(n: usize) -> Self {
        let s = n as u32;
        OrderList {
            prev: vec![NIL; n + 1],
            next: vec![NIL; n + 1],
            label: vec![0; n + 1],
            head: s,
            tail: s,
            relabels: 0,
        }
    }

    pub(crate) fn label(&self, v: u32) -> u64 {
        self.label[v as usize]
    }

    /// Appends `v` (not in the list).
    pub(crate) fn push_back(&mut self, v: u32) {
        if self.label[self.tail as usize] + GAP >= LIMIT {
            self.relabel_all();
        }
        self.label[v as usize] = self.label[self.tail as usize] + GAP;
        self.link_after(self.tail, v);
    }

    fn link_after(&mut self, a: u32, v: u32) {
        let b = self.next[a as usize];
        self.prev[v as usize] = a;
        self.next[v as usize] = b;
        self.next[a as usize] = v;
        if b == NIL {
            self.tail = v;
        } else {
            self.prev[b as usize] = v;
        }
    }

    /// Unlinks `v`.
    pub(crate) fn remove(&mut self, v: u32) {
        let (p, n) = (self.prev[v as usize], self.next[v as usize]);
        if p == NIL {
            self.head = n;
        } else {
            self.next[p as usize] = n;
        }
        if n == NIL {
            self.tail = p;
        } else {
            self.prev[n as usize] = p;
        }
        self.prev[v as usize] = NIL;
        self.next[v as usize] = NIL;
    }

    /// Puts `new` (not in the list) in `old`'s place, with its label; `old` leaves the list.
    pub(crate) fn replace(&mut self, old: u32, new: u32) {
        if old == new {
            return;
        }
        let (p, n) = (self.prev[old as usize], self.next[old as usize]);
        self.prev[new as usize] = p;
        self.next[new as usize] = n;
        self.label[new as usize] = self.label[old as usize];
        if p == NIL {
            self.head = new;
        } else {
            self.next[p as usize] = new;
        }
        if n == NIL {
            self.tail = new;
        } else {
            self.prev[n as usize] = new;
        }
        self.prev[old as usize] = NIL;
        self.next[old as usize] = NIL;
    }

    /// Inserts `v` (not in the list) right after `a`.
    pub(crate) fn insert_after(&mut self, a: u32, v: u32) {
        if self.next[a as usize] == NIL {
            if self.label[a as usize] + GAP >= LIMIT {
                self.relabel_all();
            }
            self.label[v as usize] = self.label[a as usize] + GAP;
            self.link_after(a, v);
            return;
        }
        let b = self.next[a as usize];
        if self.label[b as usize] - self.label[a as usize] < 2 {
            self.make_gap_after(a);
        }
        let b = self.next[a as usize];
        let (la, lb) = (self.label[a as usize], self.label[b as usize]);
        self.label[v as usize] = la + (lb - la) / 2;
        self.link_after(a, v);
    }

    /// Inserts `v` (not in the list) right before `b`.
    pub(crate) fn insert_before(&mut self, b: u32, v: u32) {
        // Every item has a predecessor: the sentinel heads the list.
        self.insert_after(self.prev[b as usize], v);
    }

    /// Spreads the items of the smallest sparse-enough aligned range around `a` evenly over it,
    /// leaving a gap of at least 2 after `a`.
    fn make_gap_after(&mut self, a: u32) {
        let la = self.label[a as usize];
        // Items found so far: from `lo_item` to `hi_item` inclusive, `count` of them.
        let (mut lo_item, mut hi_item, mut count) = (a, a, 1u64);
        let mut threshold = 1.0f64;
        for i in 1..62u32 {
            threshold *= 4.0 / 3.0;
            let size = 1u64 << i;
            let lo = la & !(size - 1);
            let hi = lo + size;
            while self.prev[lo_item as usize] != NIL
                && self.label[self.prev[lo_item as usize] as usize] >= lo
            {
                lo_item = self.prev[lo_item as usize];
                count += 1;
            }
            while self.next[hi_item as usize] != NIL
                && self.label[self.next[hi_item as usize] as usize] < hi
            {
                hi_item = self.next[hi_item as usize];
                count += 1;
            }
            // Room for the new item, and a density below the level's threshold.
            if ((count + 1) as f64) < threshold && (count + 1) * 2 <= size {
                let step = size / (count + 1);
                let mut cur = lo_item;
                let mut l = lo + step / 2;
                loop {
                    self.label[cur as usize] = l;
                    if cur == a {
                        // Leave a double step after `a` for the new item.
                        l += step;
                    }
                    if cur == hi_item {
                        break;
                    }
                    l += step;
                    cur = self.next[cur as usize];
                }
                return;
            }
        }
        self.relabel_all();
    }

    /// Relabels every item with spacing GAP (and, when that would overflow, the widest even
    /// spacing).
    fn relabel_all(&mut self) {
        self.relabels += 1;
        let mut n = 0u64;
        let mut cur = self.head;
        while cur != NIL {
            n += 1;
            cur = self.next[cur as usize];
        }
        let step = if n.saturating_mul(GAP) < LIMIT / 2 {
            GAP
        } else {
            (LIMIT / 2) / (n + 1)
        };
        let mut l = step;
        let mut cur = self.head;
        while cur != NIL {
            self.label[cur as usize] = l;
            l += step;
            cur = self.next[cur as usize];
        }
    }

    /// Items in order (for tests).
    #[cfg(test)]
    pub(crate) fn items(&self) -> Vec<u32> {
        let mut out = Vec::new();
        let mut cur = self.next[self.head as usize];
        while cur != NIL {
            out.push(cur);
            cur = self.next[cur as usize];
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(o: &OrderList, expect: &[u32]) {
        assert_eq!(o.items(), expect);
        for w in expect.windows(2) {
            assert!(o.label(w[0]) < o.label(w[1]), "labels out of order");
        }
    }

    #[test]
    fn insert_remove_replace_keep_labels_ordered() {
        let mut o = OrderList::new(10);
        for v in 0..4 {
            o.push_back(v);
        }
        o.insert_before(0, 4);
        o.insert_after(1, 5);
        o.remove(2);
        o.replace(3, 6);
        check(&o, &[4, 0, 1, 5, 6]);
    }

    #[test]
    fn many_inserts_at_one_spot_stay_ordered_and_cheap() {
        // The adversarial pattern for midpoint labelling: always insert right after the same
        // item. Relabelling keeps every label ordered and full relabels rare.
        let n = 20_000u32;
        let mut o = OrderList::new(n as usize + 2);
        o.push_back(0);
        o.push_back(1);
        let mut expect = vec![0u32];
        for v in 2..n {
            o.insert_after(0, v);
            expect.insert(1, v);
        }
        expect.push(1);
        check(&o, &expect);
        assert!(o.relabels <= 2, "{} full relabels", o.relabels);
        // And right before the same item.
        let mut o = OrderList::new(n as usize + 1);
        o.push_back(0);
        for v in 1..n {
            o.insert_before(0, v);
        }
        let mut expect: Vec<u32> = (1..n).collect();
        expect.push(0);
        check(&o, &expect);
    }
}
