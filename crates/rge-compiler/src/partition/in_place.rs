//! Partitions without copies, the pipeline's path. Only the partitions an engine's optimizer
//! rewrites become graphs: their nodes' ops move out of the root graph (leaving shells) and,
//! once optimized, move back in place of the shells. The other partitions stay in the root
//! graph untouched. So partitioning clones no op, and a compile touches each node a constant
//! number of times. The result is the graph [`super::merge_partitions`] builds from the same
//! partitions (nodes, links, order, inputs and outputs); `tests/partition_props.rs` checks it.

use slotmap::SecondaryMap;

use rge_ir::{ComputeGraph, NodeId};

use super::build::materialize_moving;
use super::merge_back::{
    boundary_of, end_producer, placeholder_consumers, restore_io_and_order, Boundaries,
};
use super::PartitionPlan;
use crate::error::{CompileError, CompileResult};
use crate::graph_copy::{copy_in_links, move_node};

/// Partitions moved out of their graph ([`PartitionPlan::take_partitions`]).
#[derive(Debug)]
pub struct Taken {
    /// The taken partitions (plan indexes).
    pub partitions: Vec<u32>,
    /// Their graphs, in the same order, for the optimizers.
    pub graphs: Vec<ComputeGraph>,
    /// Original node (root or nested) → (position in `graphs`, its node there).
    moved: SecondaryMap<NodeId, (u32, NodeId)>,
}

/// What [`PartitionPlan::merge_in_place`] reports.
#[derive(Debug)]
pub struct InPlace {
    /// Each root node's partition.
    pub partition_of: SecondaryMap<NodeId, u32>,
    /// Original node → its node now, for the nodes that moved and that the optimizers kept.
    /// Nodes of partitions that were not taken keep their ids.
    pub moved: SecondaryMap<NodeId, NodeId>,
}

impl PartitionPlan {
    /// Moves partitions `wanted` (ascending plan indexes) out of `graph`, the graph the plan
    /// was made for, into graphs of their own, as [`PartitionPlan::materialize`] builds them.
    /// Their nodes stay in `graph` as shells until [`PartitionPlan::merge_in_place`].
    pub fn take_partitions(
        &self,
        graph: &mut ComputeGraph,
        wanted: Vec<u32>,
    ) -> CompileResult<Taken> {
        let mut moved = SecondaryMap::new();
        let graphs = materialize_moving(self, graph, &wanted, &mut moved)?;
        Ok(Taken {
            partitions: wanted,
            graphs,
            moved,
        })
    }

    /// Puts taken partitions (optimized or not) back into `graph` in place of their shells,
    /// linked across their End/PlaceHolder pairs, with the node order, inputs and outputs
    /// [`super::merge_partitions`] gives.
    pub fn merge_in_place(&self, graph: &mut ComputeGraph, taken: Taken) -> CompileResult<InPlace> {
        let err = |message: String| CompileError::Partition {
            graph: self.graph_name.clone(),
            message,
        };
        let ir = |e| CompileError::ir(&self.graph_name, e);
        let Taken {
            partitions,
            mut graphs,
            moved,
        } = taken;
        if partitions.len() != graphs.len() {
            return Err(err(format!(
                "{} graphs for {} taken partitions",
                graphs.len(),
                partitions.len()
            )));
        }
        let order = self
            .topological_order()
            .ok_or_else(|| err("the partition graph has a cycle".into()))?;
        // Per plan partition: its position among the taken ones.
        let mut pos: Vec<Option<usize>> = vec![None; self.partitions.len()];
        for (i, &p) in partitions.iter().enumerate() {
            pos[p as usize] = Some(i);
        }

        // Each taken graph's own nodes, and its boundary nodes by peerIndex.
        let mut ends: Boundaries = vec![None; self.edges.len()];
        let mut plds: Boundaries = vec![None; self.edges.len()];
        let mut inner: Vec<Vec<NodeId>> = Vec::with_capacity(graphs.len());
        for (i, g) in graphs.iter().enumerate() {
            let mut own = Vec::with_capacity(g.node_count(g.root()));
            for n in g.nodes_of(g.root()) {
                if !boundary_of(self, i, g, n, &mut ends, &mut plds).map_err(err)? {
                    own.push(n);
                }
            }
            inner.push(own);
        }
        for (idx, e) in self.edges.iter().enumerate() {
            let complete = |b: Option<(usize, NodeId)>, p: u32| match pos[p as usize] {
                Some(i) => b.is_some_and(|(j, _)| j == i),
                None => b.is_none(),
            };
            if !complete(ends[idx], e.src_partition) || !complete(plds[idx], e.dst_partition) {
                return Err(err(format!(
                    "the End/PlaceHolder pair {idx} does not match its partitions"
                )));
            }
        }

        // The shells leave, with every link they had; the taken nodes come back. The input
        // and output lists are set again by name at the end; emptied first, so that removing
        // a shell does not search them (quadratic in a graph with many outputs).
        let root = graph.root();
        if !partitions.is_empty() {
            graph.set_input_nodes(root, Vec::new()).map_err(ir)?;
            graph.set_output_nodes(root, Vec::new()).map_err(ir)?;
        }
        for &p in &partitions {
            for &n in self.nodes_of(p) {
                graph.remove_node_unlinked(n).map_err(ir)?;
            }
        }
        let mut maps: Vec<SecondaryMap<NodeId, NodeId>> = Vec::with_capacity(graphs.len());
        for (g, own) in graphs.iter_mut().zip(&inner) {
            let mut map = SecondaryMap::with_capacity(own.len());
            for &n in own {
                move_node(g, n, graph, root, &mut map).map_err(ir)?;
            }
            maps.push(map);
        }
        for ((g, own), map) in graphs.iter().zip(&inner).zip(&maps) {
            for &n in own {
                copy_in_links(g, n, graph, map).map_err(ir)?;
            }
        }

        // Crossing links with a taken end: from the End's producer (or the original producer)
        // to the PlaceHolder's consumers (or the original consumer).
        for (idx, e) in self.edges.iter().enumerate() {
            let (ps, pd) = (pos[e.src_partition as usize], pos[e.dst_partition as usize]);
            if ps.is_none() && pd.is_none() {
                continue;
            }
            let from = match ps {
                None => e.src,
                Some(i) => {
                    let (_, end) = ends[idx].expect("checked above");
                    end_producer(&graphs[i], end, &maps[i]).map_err(err)?
                }
            };
            let tos = match pd {
                None => vec![e.dst],
                Some(i) => {
                    let (_, pld) = plds[idx].expect("checked above");
                    placeholder_consumers(&graphs[i], pld, &maps[i]).map_err(err)?
                }
            };
            for to in tos {
                if !graph.is_linked(from, to) {
                    graph.link(from, to).map_err(ir)?;
                }
            }
        }

        // What is left of the taken graphs (shells, End/PlaceHolder pairs) goes before the
        // tables below are built: a million-node partition's node table is a quarter gigabyte.
        drop(graphs);

        // Partitions in topological order, each in its own order.
        let mut ids = Vec::with_capacity(graph.node_count(root));
        let mut partition_of = SecondaryMap::with_capacity(graph.node_count(root));
        for &p in &order {
            match pos[p as usize] {
                None => {
                    for &n in self.nodes_of(p) {
                        ids.push(n);
                        partition_of.insert(n, p);
                    }
                }
                Some(i) => {
                    for &n in &inner[i] {
                        let m = maps[i][n];
                        ids.push(m);
                        partition_of.insert(m, p);
                    }
                }
            }
        }
        drop(inner);
        if partitions.is_empty() {
            // Nothing was taken: the input and output lists are as they were, and the order
            // by partition is topological as it stands (partitions in a topological order of
            // the partition graph, whose edges are every crossing link, data and control; each
            // partition's nodes in graph order), so the check that rebuilds the topology is
            // left out (23 ms of the 100k-node DAG's 30).
            if ids.iter().copied().ne(graph.nodes_of(root)) {
                graph.set_node_order(root, &ids).map_err(ir)?;
            }
            debug_assert!(graph.topology(root).is_ok_and(|t| t
                .ids
                .iter()
                .copied()
                .eq(graph.nodes_of(root))));
        } else {
            graph.set_node_order(root, &ids).map_err(ir)?;
            restore_io_and_order(self, graph)?;
        }
        drop(ids);

        let mut now = SecondaryMap::with_capacity(moved.len());
        for (n, (i, local)) in moved {
            if let Some(&m) = maps[i as usize].get(local) {
                now.insert(n, m);
            }
        }
        Ok(InPlace {
            partition_of,
            moved: now,
        })
    }
}
