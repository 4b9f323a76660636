//! GE's cluster merging as the reference (ge-reference §4.3): clusters with ordered in/out
//! sets, parents tried by ascending out-degree, and `HasSecondPath` — a DFS from the parent
//! over out-clusters with an index below the child's original index — before each merge.
//! Quadratic on long chains and wide fan-out; kept for comparison (tests, benchmark) and
//! selectable with `MergeAlgorithm::GeReference`.

use std::collections::BTreeSet;

use super::dense::DenseGraph;
use super::merge::{MergeStats, NO_MERGE};

/// Merges as GE's `MarkClusters` does. Returns each node's cluster representative.
pub fn ge_merge_clusters(dense: &DenseGraph, keys: &[u32]) -> (Vec<u32>, MergeStats) {
    let n = dense.len();
    let mut ins: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n];
    let mut outs: Vec<BTreeSet<u32>> = vec![BTreeSet::new(); n];
    for v in 0..n as u32 {
        for &p in dense.preds(v) {
            ins[v as usize].insert(p);
            outs[p as usize].insert(v);
        }
    }
    // alias[i]: the cluster index i now belongs to (GE's clusters_[big] = small).
    let mut alias: Vec<u32> = (0..n as u32).collect();
    let mut stats = MergeStats::default();
    let mut stack: Vec<u32> = Vec::new();
    let mut visited: Vec<u32> = vec![u32::MAX; n];
    let mut dfs_id = 0u32;
    for child0 in 0..n as u32 {
        let mut child = child0;
        let mut parents: Vec<u32> = ins[child as usize].iter().copied().collect();
        parents.sort_by_key(|&p| outs[p as usize].len());
        for p in parents {
            let parent = find(&mut alias, p);
            if parent == child
                || keys[parent as usize] == NO_MERGE
                || keys[parent as usize] != keys[child as usize]
            {
                continue;
            }
            // HasSecondPath(parent, child, upper_bound = child0), the direct edge removed.
            dfs_id += 1;
            stack.clear();
            stack.push(parent);
            visited[parent as usize] = dfs_id;
            let mut second = false;
            'dfs: while let Some(c) = stack.pop() {
                for &o in &outs[c as usize] {
                    stats.work += 1;
                    if c == parent && o == child {
                        continue;
                    }
                    if o == child {
                        second = true;
                        break 'dfs;
                    }
                    if o < child0 && visited[o as usize] != dfs_id {
                        visited[o as usize] = dfs_id;
                        stack.push(o);
                    }
                }
            }
            if second {
                stats.refused_path += 1;
                continue;
            }
            // MergeTwoClusters: keep the smaller index.
            let (small, big) = if parent < child {
                (parent, child)
            } else {
                (child, parent)
            };
            let big_ins = std::mem::take(&mut ins[big as usize]);
            let big_outs = std::mem::take(&mut outs[big as usize]);
            for &i in &big_ins {
                outs[i as usize].remove(&big);
                if i != small {
                    outs[i as usize].insert(small);
                    ins[small as usize].insert(i);
                }
            }
            for &o in &big_outs {
                ins[o as usize].remove(&big);
                if o != small {
                    ins[o as usize].insert(small);
                    outs[small as usize].insert(o);
                }
            }
            ins[small as usize].remove(&big);
            outs[small as usize].remove(&big);
            alias[big as usize] = small;
            stats.merges += 1;
            child = small;
        }
    }
    let roots: Vec<u32> = (0..n as u32).map(|v| find(&mut alias, v)).collect();
    let mut seen = vec![false; n];
    stats.clusters = roots
        .iter()
        .filter(|&&r| !std::mem::replace(&mut seen[r as usize], true))
        .count();
    (roots, stats)
}

/// The cluster index `v` belongs to now (path-compressed).
fn find(alias: &mut [u32], mut v: u32) -> u32 {
    let mut r = v;
    while alias[r as usize] != r {
        r = alias[r as usize];
    }
    while alias[v as usize] != r {
        let next = alias[v as usize];
        alias[v as usize] = r;
        v = next;
    }
    r
}
