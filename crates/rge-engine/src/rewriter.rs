//! The graph rewriter an engine's optimizer is handed (ARCHITECTURE.md decision 12). It lends
//! the graph read-only and changes it only through checked calls: [`GraphRewriter::apply`]
//! (an all-or-nothing `GraphPatch`) and [`GraphRewriter::set_attr`] (annotating an existing
//! op). In a fused-graph optimization the partition's boundary nodes (`End`, `PlaceHolder`)
//! are protected: they are how the partition is merged back, so no patch may remove them and
//! no attribute of theirs may change.

use rge_ir::{
    AttrValue, ComputeGraph, GraphPatch, InAnchor, NodeId, OpDesc, OutAnchor, PatchError,
    PatchResult,
};

use crate::error::{EngineError, EngineResult};
use crate::optimizer::OptimizeStage;

/// The op types of a partition's boundary nodes, protected in the fused stage.
pub const BOUNDARY_OP_TYPES: [&str; 2] = ["End", "PlaceHolder"];

/// Checked, engine-attributed access to the graph being optimized.
pub struct GraphRewriter<'g> {
    graph: &'g mut ComputeGraph,
    engine: String,
    stage: OptimizeStage,
    protected: Vec<String>,
    applied: usize,
}

impl<'g> GraphRewriter<'g> {
    /// A rewriter for `engine`'s optimization `stage`; the fused stage protects the boundary
    /// op types.
    pub fn new(
        graph: &'g mut ComputeGraph,
        engine: impl Into<String>,
        stage: OptimizeStage,
    ) -> Self {
        let protected = match stage {
            OptimizeStage::Fused => BOUNDARY_OP_TYPES.iter().map(|t| t.to_string()).collect(),
            OptimizeStage::Original | OptimizeStage::Whole => Vec::new(),
        };
        GraphRewriter {
            graph,
            engine: engine.into(),
            stage,
            protected,
            applied: 0,
        }
    }

    /// Replaces the protected op types.
    pub fn with_protected(mut self, op_types: &[&str]) -> Self {
        self.protected = op_types.iter().map(|t| t.to_string()).collect();
        self
    }

    /// The graph, read-only.
    pub fn graph(&self) -> &ComputeGraph {
        self.graph
    }

    pub fn engine(&self) -> &str {
        &self.engine
    }

    pub fn stage(&self) -> OptimizeStage {
        self.stage
    }

    /// Patches applied so far.
    pub fn patches_applied(&self) -> usize {
        self.applied
    }

    /// Whether node `n` is of a protected op type.
    pub fn is_protected(&self, n: NodeId) -> bool {
        self.graph
            .op(n)
            .is_some_and(|op| self.protected.iter().any(|t| t == op.op_type()))
    }

    fn err(&self, source: PatchError) -> EngineError {
        EngineError::patch(&self.engine, source)
    }

    /// Applies `patch`, or refuses it (naming this engine, and the node and anchor at fault)
    /// leaving the graph unchanged.
    pub fn apply(&mut self, patch: GraphPatch) -> EngineResult<PatchResult> {
        let protected: Vec<&str> = self.protected.iter().map(String::as_str).collect();
        let r = self
            .graph
            .apply_patch_protecting(patch, &protected)
            .map_err(|e| EngineError::patch(&self.engine, e))?;
        self.applied += 1;
        Ok(r)
    }

    /// Sets attribute `key` on node `n`'s op (a live, unprotected node).
    pub fn set_attr(
        &mut self,
        n: NodeId,
        key: impl Into<String>,
        value: impl Into<AttrValue>,
    ) -> EngineResult<()> {
        self.check_annotatable(n)?;
        if let Some(op) = self.graph.op_mut(n) {
            op.attrs_mut().set(key, value);
        }
        Ok(())
    }

    /// Checks that [`GraphRewriter::set_attr`] on `n` would succeed.
    pub fn check_annotatable(&self, n: NodeId) -> EngineResult<()> {
        let op = self.graph.op(n).ok_or_else(|| {
            self.err(PatchError::StaleNode {
                what: "the node to annotate".into(),
            })
        })?;
        if self.is_protected(n) {
            return Err(self.err(PatchError::Protected {
                node: op.name().to_string(),
                op_type: op.op_type().to_string(),
            }));
        }
        Ok(())
    }

    /// Replaces node `n` by `op` with the same ports ([`GraphPatch::replace_node`]).
    pub fn replace_node(&mut self, n: NodeId, op: OpDesc) -> EngineResult<NodeId> {
        let p = GraphPatch::replace_node(self.graph, n, op).map_err(|e| self.err(e))?;
        self.apply(p).map(|r| r.nodes[0])
    }

    /// Removes `n`, its output `output` read from its input `input`'s producer; its control
    /// edges, if any, move to that producer ([`GraphPatch::bypass_node`]).
    pub fn bypass_node(&mut self, n: NodeId, output: usize, input: usize) -> EngineResult<()> {
        let mut p =
            GraphPatch::bypass_node(self.graph, n, output, input).map_err(|e| self.err(e))?;
        if let Some(src) = self.graph.node(n).and_then(|x| x.peer_of_input(input)) {
            p.carry_control_to(rge_ir::PatchNode::Old(src.node));
        }
        self.apply(p).map(|_| ())
    }

    /// Inserts `op` on the data edge `src → dst` ([`GraphPatch::insert_on_edge`]).
    pub fn insert_on_edge(
        &mut self,
        src: OutAnchor,
        dst: InAnchor,
        op: OpDesc,
        node_in: usize,
        node_out: usize,
    ) -> EngineResult<NodeId> {
        let p = GraphPatch::insert_on_edge(self.graph, src, dst, op, node_in, node_out)
            .map_err(|e| self.err(e))?;
        self.apply(p).map(|r| r.nodes[0])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rge_ir::Outlet;

    fn graph() -> (ComputeGraph, NodeId, NodeId, NodeId) {
        let mut g = ComputeGraph::new("p");
        let ph = g
            .add_root_node(OpDesc::new("ph", "PlaceHolder").with_ports(0, 1))
            .unwrap();
        let r = g
            .add_root_node(OpDesc::new("r", "Relu").with_ports(1, 1))
            .unwrap();
        let end = g
            .add_root_node(OpDesc::new("end", "End").with_ports(1, 0))
            .unwrap();
        g.add_edge(ph, 0, r, 0).unwrap();
        g.add_edge(r, 0, end, 0).unwrap();
        (g, ph, r, end)
    }

    #[test]
    fn the_fused_stage_protects_boundary_nodes() {
        let (mut g, ph, r, end) = graph();
        let before = g.clone();
        let mut rw = GraphRewriter::new(&mut g, "dense", OptimizeStage::Fused);
        let mut p = GraphPatch::new();
        p.remove(ph).shunt(ph, 0, Outlet::old(r, 0));
        let e = rw.apply(p).unwrap_err();
        assert_eq!(
            e.to_string(),
            "engine `dense`: node `ph` (PlaceHolder) is protected here and cannot be removed or changed"
        );
        let e = rw.set_attr(end, "_x", true).unwrap_err();
        assert!(e.to_string().contains("`end` (End)"), "{e}");
        assert_eq!(rw.patches_applied(), 0);
        // Its own nodes it may rewrite and annotate.
        let n = rw
            .replace_node(r, OpDesc::new("r", "Gelu").with_ports(1, 1))
            .unwrap();
        rw.set_attr(n, "_fused", 1i64).unwrap();
        assert_eq!(rw.patches_applied(), 1);
        assert!(g != before);
        g.verify().unwrap();
        // The whole-graph stage protects nothing.
        let mut rw = GraphRewriter::new(&mut g, "dense", OptimizeStage::Whole);
        rw.set_attr(end, "_x", true).unwrap();
    }

    #[test]
    fn bypass_moves_control_to_the_producer() {
        let (mut g, ph, r, end) = graph();
        let k = g
            .add_root_node(OpDesc::new("k", "NoOp").with_ports(0, 0))
            .unwrap();
        g.add_control_edge(r, k).unwrap();
        let mut rw = GraphRewriter::new(&mut g, "e", OptimizeStage::Original);
        rw.bypass_node(r, 0, 0).unwrap();
        assert_eq!(
            g.node(end).unwrap().peer_of_input(0),
            Some(ph.out(0)),
            "end reads the placeholder"
        );
        assert_eq!(g.node(k).unwrap().in_ctrl_peers(), [ph.out_ctrl()]);
        g.verify().unwrap();
    }
}
