//! Cluster merging without cycles, near-linear.
//!
//! GE's rule (ge-reference §4.3): nodes are visited in topological order; each node starts as
//! its own cluster, and each parent cluster of the same key (engine, stream label…) is merged
//! into it unless another path leads from the parent to the child — merging would then make a
//! cycle. GE finds "another path" with a DFS bounded only by cluster indexes, which is
//! quadratic on long chains and wide fan-out.
//!
//! Here the clusters are kept in a *topological order of the cluster graph* in an
//! order-maintenance list (`order.rs`: O(1) comparisons, cheap insertion anywhere). Merging
//! parent X into child Y (an edge X → Y, so X is before Y) is decided with the order, as in
//! Pearce and Kelly's dynamic topological sort:
//!
//! - R = the clusters that reach Y and lie after X (a backward search from Y, pruned at X's
//!   place in the order). If some member of R has X as a parent, there is another path.
//! - F = the clusters X reaches that lie before Y (a forward search from X, pruned at Y's
//!   place). If some member of F has Y as a child, there is another path.
//!
//! Either search alone decides the question, so both run in lockstep and the first to finish
//! wins. If R finishes, R moves (in order) to just before X and the merged cluster takes X's
//! place; if F finishes, F moves to just after Y and the merged cluster takes Y's place. Both
//! keep the order topological. The common cases finish in one step: a child whose other parents
//! all lie before X (R = ∅, no move), and a parent with no other children (F = ∅).
//!
//! Each decision is bounded by a work budget (clusters and links visited); a decision that
//! would need more refuses the merge — conservatively, so no cycle can ever be made. The whole
//! pass costs O((n + m) · α(n) + merges · budget) plus O(m log m) for joining adjacency lists
//! smaller-into-larger and amortized O(log n) per moved cluster for the order labels.

use smallvec::SmallVec;

use super::dense::DenseGraph;
use super::order::OrderList;

/// A key that never merges (data-like sources).
pub const NO_MERGE: u32 = u32::MAX;

/// What the merge pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MergeStats {
    /// Clusters at the end.
    pub clusters: usize,
    /// Merges done.
    pub merges: usize,
    /// Merges that moved clusters in the order.
    pub reorders: usize,
    /// Clusters moved in the order, in total.
    pub moved: usize,
    /// Merges refused because another path exists.
    pub refused_path: usize,
    /// Merges refused because the budget ran out.
    pub refused_budget: usize,
    /// Clusters and links visited by the searches.
    pub work: u64,
}

type Adj = SmallVec<[u32; 4]>;

struct Merger {
    budget: u64,
    parent: Vec<u32>,
    size: Vec<u32>,
    /// Per cluster root: cluster (or member node) ids of children / parents, possibly stale
    /// (resolve with `find`) and repeated.
    outs: Vec<Adj>,
    ins: Vec<Adj>,
    order: OrderList,
    mark_r: Vec<u32>,
    mark_f: Vec<u32>,
    epoch: u32,
    /// Per-scan dedup stamps.
    seen: Vec<u32>,
    scan: u32,
    stats: MergeStats,
    // Scratch.
    stack_r: Vec<u32>,
    stack_f: Vec<u32>,
    found_r: Vec<u32>,
    found_f: Vec<u32>,
}

enum Outcome {
    /// No other path; move these clusters before X (`true`) or after Y (`false`).
    Merge {
        before_x: bool,
    },
    OtherPath,
    Budget,
}

/// Merges the nodes of `dense` (in its topological order) into clusters of equal key without
/// creating a cycle. Returns each node's cluster representative and statistics.
pub fn merge_clusters(dense: &DenseGraph, keys: &[u32], budget: u32) -> (Vec<u32>, MergeStats) {
    let n = dense.len();
    let mut m = Merger {
        budget: u64::from(budget.max(2)),
        parent: (0..n as u32).collect(),
        size: vec![1; n],
        outs: vec![Adj::new(); n],
        ins: vec![Adj::new(); n],
        order: OrderList::new(n),
        mark_r: vec![0; n],
        mark_f: vec![0; n],
        epoch: 0,
        seen: vec![0; n],
        scan: 0,
        stats: MergeStats::default(),
        stack_r: Vec::new(),
        stack_f: Vec::new(),
        found_r: Vec::new(),
        found_f: Vec::new(),
    };
    let mut cands: Vec<u32> = Vec::new();
    for v in 0..n as u32 {
        m.order.push_back(v);
        cands.clear();
        for &p in dense.preds(v) {
            let rp = m.find(p);
            m.ins[v as usize].push(rp);
            m.outs[rp as usize].push(v);
            if keys[v as usize] != NO_MERGE && keys[rp as usize] == keys[v as usize] {
                cands.push(rp);
            }
        }
        if cands.is_empty() {
            continue;
        }
        cands.sort_unstable();
        cands.dedup();
        // GE tries parents by ascending out-degree; ties: the later cluster first.
        cands.sort_by_key(|&c| {
            (
                m.outs[c as usize].len(),
                std::cmp::Reverse(m.order.label(c)),
            )
        });
        for &c in &cands {
            let x = m.find(c);
            let y = m.find(v);
            if x != y {
                m.try_merge(x, y);
            }
        }
    }
    let roots: Vec<u32> = (0..n as u32).map(|v| m.find(v)).collect();
    let mut seen = vec![false; n];
    m.stats.clusters = roots
        .iter()
        .filter(|&&r| !std::mem::replace(&mut seen[r as usize], true))
        .count();
    (roots, m.stats)
}

impl Merger {
    fn find(&mut self, mut v: u32) -> u32 {
        let mut r = v;
        while self.parent[r as usize] != r {
            r = self.parent[r as usize];
        }
        while self.parent[v as usize] != r {
            let next = self.parent[v as usize];
            self.parent[v as usize] = r;
            v = next;
        }
        r
    }

    /// Merges cluster `x` into its child cluster `y` unless that makes a cycle.
    fn try_merge(&mut self, x: u32, y: u32) {
        match self.search(x, y) {
            Outcome::OtherPath => self.stats.refused_path += 1,
            Outcome::Budget => self.stats.refused_budget += 1,
            Outcome::Merge { before_x } => {
                let moved = if before_x {
                    self.found_r.len()
                } else {
                    self.found_f.len()
                };
                if moved > 0 {
                    self.stats.reorders += 1;
                    self.stats.moved += moved;
                }
                if before_x {
                    let mut r = std::mem::take(&mut self.found_r);
                    r.sort_unstable_by_key(|&c| self.order.label(c));
                    for &c in &r {
                        self.order.remove(c);
                        self.order.insert_before(x, c);
                    }
                    self.found_r = r;
                    self.union(x, y);
                } else {
                    let mut f = std::mem::take(&mut self.found_f);
                    f.sort_unstable_by_key(|&c| self.order.label(c));
                    let mut at = y;
                    for &c in &f {
                        self.order.remove(c);
                        self.order.insert_after(at, c);
                        at = c;
                    }
                    self.found_f = f;
                    self.union(y, x);
                }
                self.stats.merges += 1;
            }
        }
    }

    /// Joins `drop` into `keep`; the merged cluster takes `keep`'s place in the order.
    fn union(&mut self, keep: u32, drop: u32) {
        self.order.remove(drop);
        let (k, d) = (keep as usize, drop as usize);
        // Union by size; the new root inherits `keep`'s place.
        let (root, child) = if self.size[k] >= self.size[d] {
            (keep, drop)
        } else {
            (drop, keep)
        };
        self.parent[child as usize] = root;
        self.size[root as usize] = self.size[k] + self.size[d];
        if root != keep {
            self.order.replace(keep, root);
        }
        for lists in [&mut self.outs, &mut self.ins] {
            let mut a = std::mem::take(&mut lists[k]);
            let mut b = std::mem::take(&mut lists[d]);
            if a.len() < b.len() {
                std::mem::swap(&mut a, &mut b);
            }
            a.extend(b);
            lists[root as usize] = a;
        }
    }

    /// Decides whether merging `x` into its child `y` is safe (see the module docs), filling
    /// `found_r` or `found_f` with the clusters to move. The two searches alternate; a side
    /// whose next step would overrun the budget stalls while the other goes on.
    fn search(&mut self, x: u32, y: u32) -> Outcome {
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.mark_r.fill(0);
            self.mark_f.fill(0);
            self.epoch = 1;
        }
        let (lx, ly) = (self.order.label(x), self.order.label(y));
        self.stack_r.clear();
        self.stack_f.clear();
        self.found_r.clear();
        self.found_f.clear();
        self.stack_r.push(y);
        self.stack_f.push(x);
        self.mark_r[y as usize] = self.epoch;
        self.mark_f[x as usize] = self.epoch;
        let mut work = 0u64;
        let (mut stalled_r, mut stalled_f) = (false, false);
        let mut backward = true;
        let outcome = loop {
            if self.stack_r.is_empty() {
                break Outcome::Merge { before_x: true };
            }
            if self.stack_f.is_empty() {
                break Outcome::Merge { before_x: false };
            }
            if stalled_r && stalled_f {
                break Outcome::Budget;
            }
            if (backward && stalled_r) || (!backward && stalled_f) {
                backward = !backward;
            }
            let stack = if backward {
                &self.stack_r
            } else {
                &self.stack_f
            };
            let c = *stack.last().expect("non-empty");
            let cost = 1 + if backward {
                self.ins[c as usize].len()
            } else {
                self.outs[c as usize].len()
            } as u64;
            if work + cost > self.budget {
                if backward {
                    stalled_r = true;
                } else {
                    stalled_f = true;
                }
                backward = !backward;
                continue;
            }
            work += cost;
            let hit = if backward {
                self.stack_r.pop();
                self.expand_back(c, x, y, lx)
            } else {
                self.stack_f.pop();
                self.expand_fwd(c, x, y, ly)
            };
            if hit {
                break Outcome::OtherPath;
            }
            backward = !backward;
        };
        self.stats.work += work;
        outcome
    }

    fn next_scan(&mut self) -> u32 {
        self.scan = self.scan.wrapping_add(1);
        if self.scan == 0 {
            self.seen.fill(0);
            self.scan = 1;
        }
        self.scan
    }

    /// Scans the parents of `c`, compacting its list to distinct clusters; pushes unvisited
    /// ones after `x` in the order. True when `x` is a parent of `c` other than through the
    /// direct link.
    fn expand_back(&mut self, c: u32, x: u32, y: u32, lx: u64) -> bool {
        let scan = self.next_scan();
        let list = std::mem::take(&mut self.ins[c as usize]);
        let mut kept = Adj::new();
        let mut hit = false;
        for &e in &list {
            let r = self.find(e);
            if r == c || self.seen[r as usize] == scan {
                continue;
            }
            self.seen[r as usize] = scan;
            kept.push(r);
            if r == x {
                hit |= c != y;
                continue;
            }
            if self.mark_r[r as usize] != self.epoch && self.order.label(r) > lx {
                self.mark_r[r as usize] = self.epoch;
                self.found_r.push(r);
                self.stack_r.push(r);
            }
        }
        self.ins[c as usize] = kept;
        hit
    }

    /// Scans the children of `c`, compacting its list; pushes unvisited ones before `y`. True
    /// when `y` is a child of `c` other than through the direct link.
    fn expand_fwd(&mut self, c: u32, x: u32, y: u32, ly: u64) -> bool {
        let scan = self.next_scan();
        let list = std::mem::take(&mut self.outs[c as usize]);
        let mut kept = Adj::new();
        let mut hit = false;
        for &e in &list {
            let r = self.find(e);
            if r == c || self.seen[r as usize] == scan {
                continue;
            }
            self.seen[r as usize] = scan;
            kept.push(r);
            if r == y {
                hit |= c != x;
                continue;
            }
            if self.mark_f[r as usize] != self.epoch && self.order.label(r) < ly {
                self.mark_f[r as usize] = self.epoch;
                self.found_f.push(r);
                self.stack_f.push(r);
            }
        }
        self.outs[c as usize] = kept;
        hit
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_ir::{ComputeGraph, OpDesc};

    /// A graph from `(name, preds)`; returns its dense form.
    fn dense(spec: &[(&str, &[&str])]) -> std::sync::Arc<DenseGraph> {
        let mut g = ComputeGraph::new("g");
        let root = g.root();
        for (name, preds) in spec {
            let n = g
                .add_node(root, OpDesc::new(*name, "T").with_ports(preds.len(), 1))
                .unwrap();
            for (k, p) in preds.iter().enumerate() {
                let s = g.find_node(root, p).unwrap();
                g.add_edge(s, 0, n, k).unwrap();
            }
        }
        super::super::dense::dense_graph(&g, root).unwrap()
    }

    fn groups(roots: &[u32]) -> Vec<Vec<u32>> {
        let mut by_root: std::collections::BTreeMap<u32, Vec<u32>> = Default::default();
        for (v, &r) in roots.iter().enumerate() {
            by_root.entry(r).or_default().push(v as u32);
        }
        let mut out: Vec<Vec<u32>> = by_root.into_values().collect();
        out.sort();
        out
    }

    #[test]
    fn backward_side_moves_an_unrelated_parent_before_the_cluster() {
        // a(A) → a2(B); b(B) is a source seen after a; c(A) reads a and b.
        let d = dense(&[("a", &[]), ("a2", &["a"]), ("b", &[]), ("c", &["a", "b"])]);
        let (roots, st) = merge_clusters(&d, &[0, 1, 1, 0], 64);
        assert_eq!(groups(&roots), [vec![0, 3], vec![1], vec![2]]);
        assert_eq!((st.merges, st.reorders, st.moved), (1, 1, 1));
    }

    #[test]
    fn forward_side_moves_a_child_after_the_cluster() {
        // x(A) → w(B) (a sink); a long B chain ends in c9; y(A) reads x and c9. R (the chain)
        // is long, F = {w} is short: w moves after y.
        let mut spec: Vec<(String, Vec<String>)> =
            vec![("x".into(), vec![]), ("w".into(), vec!["x".into()])];
        spec.push(("c0".into(), vec![]));
        for i in 1..10 {
            spec.push((format!("c{i}"), vec![format!("c{}", i - 1)]));
        }
        spec.push(("y".into(), vec!["x".into(), "c9".into()]));
        let refs: Vec<(&str, Vec<&str>)> = spec
            .iter()
            .map(|(n, p)| (n.as_str(), p.iter().map(String::as_str).collect()))
            .collect();
        let spec: Vec<(&str, &[&str])> = refs.iter().map(|(n, p)| (*n, p.as_slice())).collect();
        let d = dense(&spec);
        let mut keys = vec![1u32; d.len()];
        keys[0] = 0;
        keys[d.len() - 1] = 0;
        let (roots, st) = merge_clusters(&d, &keys, 1000);
        assert_eq!(roots[0], roots[d.len() - 1], "x and y merge");
        assert_eq!((st.reorders, st.moved), (1, 1));
        // The B chain merged too (one cluster), w alone.
        assert_eq!(st.clusters, 3);
    }

    #[test]
    fn another_path_refuses_and_a_small_budget_refuses_safely() {
        // a → b → c with a → c: b is another engine, so c may not join a.
        let d = dense(&[("a", &[]), ("b", &["a"]), ("c", &["b", "a"])]);
        let (roots, st) = merge_clusters(&d, &[0, 1, 0], 64);
        assert_eq!(groups(&roots).len(), 3);
        assert_eq!(st.refused_path, 1);
        // Both searches long, budget tiny: refused without a cycle check result.
        let d = dense(&[
            ("a", &[]),
            ("a1", &["a"]),
            ("a2", &["a1"]),
            ("s", &[]),
            ("s1", &["s"]),
            ("s2", &["s1"]),
            ("y", &["a", "s2"]),
        ]);
        let (_, st) = merge_clusters(&d, &[0, 1, 2, 3, 4, 5, 0], 2);
        assert_eq!((st.merges, st.refused_budget), (0, 1));
        let (_, st) = merge_clusters(&d, &[0, 1, 2, 3, 4, 5, 0], 64);
        assert_eq!(st.merges, 1);
    }
}
