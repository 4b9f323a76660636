//! The partitioner's view of one graph: rge-ir's shared [`Topology`] (nodes numbered in a
//! topological order, producer and consumer lists over data and control links), read from
//! the graph's cache, with per-node infos computed in one parallel pass over its order.

use std::sync::Arc;

use rayon::prelude::*;

use rge_ir::{ComputeGraph, GraphId, Node};

use crate::error::{CompileError, CompileResult};

pub use rge_ir::{Csr, Topology as DenseGraph};

/// Nodes per parallel work item when reading the graph.
const CHUNK: usize = 4096;

/// The topology of graph `g` of `graph`. A cycle is an error naming its nodes.
pub fn dense_graph(graph: &ComputeGraph, g: GraphId) -> CompileResult<Arc<DenseGraph>> {
    graph.topology(g).map_err(|source| CompileError::Ir {
        graph: graph.graph_name(g).unwrap_or("?").to_string(),
        source,
    })
}

/// [`dense_graph`], with `info` of each node in the order of its `ids`.
pub(crate) fn with_info<'g, T: Send>(
    graph: &'g ComputeGraph,
    g: GraphId,
    info: impl Fn(&'g Node) -> T + Sync,
) -> CompileResult<(Arc<DenseGraph>, Vec<T>)> {
    let dense = dense_graph(graph, g)?;
    let infos = dense
        .ids
        .par_chunks(CHUNK)
        .flat_map_iter(|ids| {
            ids.iter()
                .map(|&id| info(graph.node(id).expect("live node")))
                .collect::<Vec<T>>()
        })
        .collect();
    Ok((dense, infos))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_ir::OpDesc;

    #[test]
    fn reorders_only_when_needed() {
        let mut g = ComputeGraph::new("g");
        let r = g.root();
        let b = g
            .add_node(r, OpDesc::new("b", "T").with_ports(1, 1))
            .unwrap();
        let a = g
            .add_node(r, OpDesc::new("a", "T").with_ports(0, 1))
            .unwrap();
        let c = g
            .add_node(r, OpDesc::new("c", "T").with_ports(1, 0))
            .unwrap();
        g.add_edge(a, 0, b, 0).unwrap();
        g.add_edge(b, 0, c, 0).unwrap();
        g.add_control_edge(a, c).unwrap();
        let d = dense_graph(&g, r).unwrap();
        assert_eq!(d.ids, [a, b, c]);
        assert_eq!(d.preds(2), [1, 0]);
        assert_eq!(d.succs(0), [1, 2]);
        assert_eq!(
            d.pred_links(2).collect::<Vec<_>>(),
            [(1, 0, 0), (0, -1, -1)]
        );
        // Infos follow the reordered ids.
        let (d, names) = with_info(&g, r, |node| node.op().name()).unwrap();
        assert_eq!(d.ids, [a, b, c]);
        assert_eq!(names, ["a", "b", "c"]);
        g.add_control_edge(c, a).unwrap();
        let e = dense_graph(&g, r).unwrap_err();
        assert!(e.to_string().contains("cycle"), "{e}");
    }
}
