//! Topological ranks that keep a run of patches linear: [`TopoRanks`].
//!
//! A patch is refused when it would close a cycle, and a cycle must run through one of the
//! links the patch makes. Without more knowledge the check walks everything downstream of
//! those links, which is most of a large graph, once per patch: an optimizer that applies a
//! patch per region is then quadratic. With ranks (every link goes from a lower rank to a
//! higher one) the walk can stop at nodes ranked above the highest old source of a planned
//! link: a path of kept links only climbs, so no such node leads back to a source. A fusion
//! patch then costs its own size.
//!
//! The graph keeps them: computed on the first patch after an edit that added a link (one
//! pass), kept valid by each patch (its new nodes get ranks between their producers and
//! consumers; spaced ranks leave room), recomputed only when a patch leaves no room. Removing
//! links or nodes keeps them valid.

use slotmap::SecondaryMap;

use crate::graph::{ComputeGraph, GraphId};
use crate::node::NodeId;
use crate::patch_apply::V;

/// The gap between neighbouring ranks when they are (re)computed: room for 32 halvings.
const SPACING: u64 = 1 << 32;

/// Ranks of one graph's nodes: every link goes from a lower rank to a higher one.
#[derive(Debug, Clone, Default)]
pub(crate) struct TopoRanks {
    /// The graph they rank; `None` when they must be recomputed.
    graph: Option<GraphId>,
    /// A graph found to have a cycle (no ranks) since the last edit that added a link.
    cyclic: Option<GraphId>,
    rank: SecondaryMap<NodeId, u64>,
}

impl TopoRanks {
    /// The ranks of graph `g`, computed when they are not held; `None` when `g` has a cycle
    /// (no ranks exist) or is not in `graph`.
    pub(crate) fn of(&mut self, graph: &ComputeGraph, g: GraphId) -> Option<&Self> {
        if self.graph != Some(g) {
            if self.cyclic == Some(g) {
                return None;
            }
            self.compute(graph, g)?;
        }
        Some(self)
    }

    pub(crate) fn get(&self, n: NodeId) -> Option<u64> {
        self.rank.get(n).copied()
    }

    /// Forgets the ranks: the next patch recomputes them.
    pub(crate) fn invalidate(&mut self) {
        self.graph = None;
        self.cyclic = None;
    }

    /// From the graph's shared topology (data and control links): spaced ranks in its order.
    fn compute(&mut self, graph: &ComputeGraph, g: GraphId) -> Option<()> {
        self.graph = None;
        self.rank.clear();
        let Ok(t) = graph.topology(g) else {
            self.cyclic = Some(g);
            return None;
        };
        for (i, &n) in t.ids.iter().enumerate() {
            self.rank.insert(n, (i as u64 + 1) * SPACING);
        }
        self.graph = Some(g);
        Some(())
    }
}

/// A rank strictly between `lo` and `hi` (`None` for no upper bound), if there is one.
fn between(lo: u64, hi: Option<u64>) -> Option<u64> {
    match hi {
        None => lo.checked_add(SPACING),
        Some(h) if h.saturating_sub(lo) > 1 => Some(lo + (h - lo) / 2),
        Some(_) => None,
    }
}

impl TopoRanks {
    /// Keeps the ranks valid after a patch made `links` (between kept nodes, `V::Old`, and the
    /// patch's new nodes, `V::New(k)`, now `ids[k]`); forgets them when there is no room.
    pub(crate) fn absorb(&mut self, links: &[(V, V)], ids: &[NodeId]) {
        if self.graph.is_none() || self.absorb_inner(links, ids).is_none() {
            self.invalidate();
        }
    }

    fn absorb_inner(&mut self, links: &[(V, V)], ids: &[NodeId]) -> Option<()> {
        let k = ids.len();
        let mut lo = vec![0u64; k];
        let mut hi: Vec<Option<u64>> = vec![None; k];
        let mut succs: Vec<Vec<usize>> = vec![Vec::new(); k];
        let mut indeg = vec![0u32; k];
        for &(s, d) in links {
            match (s, d) {
                (V::Old(a), V::Old(b)) => {
                    if self.get(a)? >= self.get(b)? {
                        return None;
                    }
                }
                (V::Old(a), V::New(j)) => lo[j] = lo[j].max(self.get(a)?),
                (V::New(j), V::Old(b)) => {
                    let r = self.get(b)?;
                    hi[j] = Some(hi[j].map_or(r, |h| h.min(r)));
                }
                (V::New(i), V::New(j)) => {
                    succs[i].push(j);
                    indeg[j] += 1;
                }
            }
        }
        // New nodes in a topological order of the links among them.
        let mut order: Vec<usize> = (0..k).filter(|&j| indeg[j] == 0).collect();
        let mut head = 0;
        while head < order.len() {
            let i = order[head];
            head += 1;
            for &j in &succs[i] {
                indeg[j] -= 1;
                if indeg[j] == 0 {
                    order.push(j);
                }
            }
        }
        if order.len() != k {
            return None;
        }
        // A node's bound is also below its new successors' bounds.
        for &i in order.iter().rev() {
            for &j in &succs[i] {
                if let Some(h) = hi[j] {
                    hi[i] = Some(hi[i].map_or(h, |x| x.min(h)));
                }
            }
        }
        for &i in &order {
            let r = between(lo[i], hi[i])?;
            self.rank.insert(ids[i], r);
            for &j in &succs[i] {
                lo[j] = lo[j].max(r);
            }
        }
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use crate::graph::ComputeGraph;
    use crate::node::NodeId;
    use crate::op_desc::OpDesc;
    use crate::patch::{GraphPatch, Outlet, PatchNode};
    use crate::tensor_desc::TensorDesc;

    /// A small LCG: the test's choices are reproducible.
    struct Lcg(u64);
    impl Lcg {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n
        }
    }

    fn op(name: &str, inputs: usize) -> OpDesc {
        let mut op = OpDesc::new(name, "Add");
        for i in 0..inputs {
            op.add_input(&format!("x{i}"), TensorDesc::default())
                .unwrap();
        }
        op.add_output("y", TensorDesc::default()).unwrap();
        op
    }

    /// A random DAG: each node reads two of the last 16 values.
    fn random_dag(rng: &mut Lcg, n: usize) -> (ComputeGraph, Vec<NodeId>) {
        let mut g = ComputeGraph::new("dag");
        let mut ids = vec![g.add_root_node(op("src", 0)).unwrap()];
        for k in 0..n {
            let id = g.add_root_node(op(&format!("n{k}"), 2)).unwrap();
            for i in 0..2 {
                let lo = ids.len().saturating_sub(16);
                let s = ids[lo + rng.below(ids.len() - lo)];
                g.add_edge(s, 0, id, i).unwrap();
            }
            ids.push(id);
        }
        (g, ids)
    }

    /// Every link of the root graph climbs in rank, when ranks are held.
    fn ranks_hold(g: &ComputeGraph) -> bool {
        if g.topo_ranks.graph.is_none() {
            return false;
        }
        for n in g.nodes_of(g.root()) {
            let r = g.topo_ranks.get(n).expect("ranked");
            for p in g.nodes[n].all_out_peers() {
                assert!(
                    r < g.topo_ranks.get(p.node).expect("ranked"),
                    "a link descends"
                );
            }
        }
        true
    }

    /// Random replacements, rewires and control edges (some closing cycles): the ranked cycle
    /// check refuses exactly what the full walk refuses, and the ranks stay valid.
    #[test]
    fn ranked_cycle_check_matches_the_full_walk() {
        let mut rng = Lcg(7);
        let (mut g, _) = random_dag(&mut rng, 300);
        let (mut refused, mut held) = (0, 0);
        for step in 0..600 {
            let live: Vec<NodeId> = g.nodes_of(g.root()).skip(1).collect();
            let a = live[rng.below(live.len())];
            let b = live[rng.below(live.len())];
            let mut p = GraphPatch::in_graph(g.root());
            match step % 3 {
                0 => {
                    // Replace `a` by a new node reading its inputs (a fusion's shape).
                    let k = p.add_node(op(&format!("f{step}"), 2));
                    for i in 0..2 {
                        let s = g.node(a).unwrap().peer_of_input(i).unwrap();
                        p.connect(Outlet::old(s.node, s.index as usize), k, i);
                    }
                    p.remove(a)
                        .shunt(a, 0, Outlet::new_node(k, 0))
                        .drop_control();
                }
                1 => {
                    p.rewire(a, rng.below(2), Outlet::old(b, 0));
                }
                _ => {
                    p.add_control_edge(PatchNode::Old(a), PatchNode::Old(b));
                }
            }
            let full = g.plan_patch(&p, &[], None).is_ok();
            let ranked = g.apply_patch(p).is_ok();
            assert_eq!(ranked, full, "step {step}");
            refused += usize::from(!ranked);
            held += usize::from(ranks_hold(&g));
        }
        assert!(refused > 50, "few patches closed a cycle: {refused}");
        assert!(held > 300, "the ranks were rarely kept: {held}");
    }
}
