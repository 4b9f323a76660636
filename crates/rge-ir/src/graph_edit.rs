//! Compound edits: remove, isolate, fuse, and adding ports to a linked node. Each checks
//! everything that can fail first, so a failed edit leaves the graph as it was.

use crate::attr_names;
use crate::error::{AnchorSide, IrError, Result};
use crate::graph::ComputeGraph;
use crate::node::{InAnchor, NodeId, OutAnchor};
use crate::op_desc::OpDesc;
use crate::op_types;
use crate::tensor_desc::TensorDesc;

impl ComputeGraph {
    /// The default bypass used by `remove_node`: output `i` takes the producer of input `i`;
    /// a node with one input passes it to every output.
    pub fn default_io_map(&self, n: NodeId) -> Vec<(usize, usize)> {
        let Some(node) = self.nodes.get(n) else {
            return Vec::new();
        };
        let (ins, outs) = (node.in_data.len(), node.out_data.len());
        if ins == 1 {
            (0..outs).map(|o| (0, o)).collect()
        } else {
            (0..ins.min(outs)).map(|i| (i, i)).collect()
        }
    }

    /// Disconnects `n` from everything and bypasses it: for each `(input, output)` in `io_map`,
    /// the producer of that input is linked to every consumer of that output. Control order is
    /// kept: each control producer of `n` gets a control edge to each consumer of `n`, and each
    /// data producer to each control consumer.
    pub fn isolate_node(&mut self, n: NodeId, io_map: &[(usize, usize)]) -> Result<()> {
        let node = self.node_ref(n)?;
        for &(i, o) in io_map {
            if i >= node.in_data.len() || o >= node.out_data.len() {
                let (side, index, count) = if i >= node.in_data.len() {
                    (AnchorSide::In, i, node.in_data.len())
                } else {
                    (AnchorSide::Out, o, node.out_data.len())
                };
                return Err(IrError::AnchorOutOfRange {
                    node: node.name().to_string(),
                    side,
                    index: index as i32,
                    count,
                });
            }
            if io_map.iter().filter(|&&(_, o2)| o2 == o).count() > 1 {
                return Err(IrError::Invalid {
                    what: "io map",
                    value: format!("output {o} of `{}` is mapped twice", node.name()),
                });
            }
        }
        let mut plan: Vec<(OutAnchor, InAnchor)> = Vec::new();
        let push = |plan: &mut Vec<(OutAnchor, InAnchor)>, s: OutAnchor, d: InAnchor| {
            if s.node != n && d.node != n && !plan.contains(&(s, d)) {
                plan.push((s, d));
            }
        };
        for &(i, o) in io_map {
            if let Some(src) = node.in_data[i] {
                for &dst in &node.out_data[o] {
                    push(&mut plan, src, dst);
                }
            }
        }
        let consumers = node.out_nodes();
        for &c in node.ctrl_in() {
            for &dn in &consumers {
                push(&mut plan, c.node.out_ctrl(), dn.in_ctrl());
            }
        }
        let ctrl_consumers: Vec<NodeId> = node.ctrl_out().iter().map(|p| p.node).collect();
        for src in node.in_data.iter().flatten() {
            for &dn in &ctrl_consumers {
                push(&mut plan, src.node.out_ctrl(), dn.in_ctrl());
            }
        }
        self.disconnect(n);
        for (s, d) in plan {
            if !self.is_linked(s, d) {
                self.link_unchecked(s, d);
            }
        }
        Ok(())
    }

    /// Unlinks every anchor of `n`.
    pub(crate) fn disconnect(&mut self, n: NodeId) {
        let node = &self.nodes[n];
        let ins: Vec<(OutAnchor, InAnchor)> = node
            .in_data
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.map(|p| (p, n.input(i))))
            .chain(node.ctrl_in().iter().map(|&p| (p, n.in_ctrl())))
            .collect();
        let outs: Vec<(OutAnchor, InAnchor)> = node
            .out_data
            .iter()
            .enumerate()
            .flat_map(|(i, ps)| ps.iter().map(move |&p| (n.out(i), p)))
            .chain(node.ctrl_out().iter().map(|&p| (n.out_ctrl(), p)))
            .collect();
        for (s, d) in ins.into_iter().chain(outs) {
            self.unlink_unchecked(s, d);
        }
    }

    /// Removes a node as GE's RemoveNode does: Const inputs used only by it are removed too, it
    /// leaves the graph's input and output lists, it is bypassed (`default_io_map`, control edges
    /// kept), and its subgraphs are removed with it. Returns the removed op.
    pub fn remove_node(&mut self, n: NodeId) -> Result<OpDesc> {
        let node = self.node_ref(n)?;
        let mut consts: Vec<NodeId> = Vec::new();
        for p in node.in_data.iter().flatten() {
            let c = &self.nodes[p.node];
            if p.node != n
                && op_types::is_const(c.op_type())
                && c.all_out_peers().all(|q| q.node == n)
                && !self.graphs[c.graph].output_refs.contains_key(&p.node)
                && !consts.contains(&p.node)
            {
                consts.push(p.node);
            }
        }
        let io_map = self.default_io_map(n);
        for c in consts {
            self.remove_isolated_or_not(c);
        }
        self.isolate_node(n, &io_map)?;
        Ok(self.remove_isolated_or_not(n))
    }

    /// Removes `n` after unlinking it, without any bypass.
    pub fn remove_node_unlinked(&mut self, n: NodeId) -> Result<OpDesc> {
        self.touch();
        self.node_ref(n)?;
        Ok(self.remove_isolated_or_not(n))
    }

    fn remove_isolated_or_not(&mut self, n: NodeId) -> OpDesc {
        for s in self.node_subgraphs(n) {
            if self.graphs.get(s).is_some_and(|d| d.parent_node == Some(n)) {
                let _ = self.remove_subgraph(s);
            }
        }
        self.disconnect(n);
        let g = self.nodes[n].graph;
        let d = &mut self.graphs[g];
        d.inputs.retain(|&x| x != n);
        d.remove_output_node(n);
        self.unindex_name(n);
        self.layout_remove(n);
        self.nodes.remove(n).expect("checked live").op
    }

    /// Inserts fused ops at the place of the earliest of `originals` in the node order (the
    /// seed's FuseNodeKeepTopo). The new nodes inherit the stream label and super-kernel scope
    /// the originals share, and the core counts of the first original that has them. Edges are
    /// the caller's to move; the originals stay until the caller removes them.
    pub fn fuse_nodes_keep_topo(
        &mut self,
        originals: &[NodeId],
        fused: Vec<OpDesc>,
    ) -> Result<Vec<NodeId>> {
        let first = *originals
            .first()
            .ok_or_else(|| IrError::Other("fuse_nodes_keep_topo: no original nodes".into()))?;
        let g = self.node_ref(first)?.graph;
        for &o in originals {
            if self.node_ref(o)?.graph != g {
                return Err(IrError::Verify(format!(
                    "fused node `{}` is not in graph `{}`",
                    self.name_of(o),
                    self.graphs[g].name
                )));
            }
        }
        for (i, op) in fused.iter().enumerate() {
            if self.find_node(g, op.name()).is_some()
                || fused[..i].iter().any(|o| o.name() == op.name())
            {
                return Err(IrError::DuplicateNodeName {
                    graph: self.graphs[g].name.clone(),
                    name: op.name().to_string(),
                });
            }
        }
        let anchor = self
            .nodes_of(g)
            .find(|n| originals.contains(n))
            .expect("originals are in g");
        let inherit = self.shared_fusion_attrs(originals);
        let mut out = Vec::with_capacity(fused.len());
        for mut op in fused {
            for (k, v) in &inherit {
                if !op.attrs().contains(k) {
                    op.attrs_mut().set(k.clone(), v.clone());
                }
            }
            out.push(self.add_node_before(anchor, op)?);
        }
        Ok(out)
    }

    fn shared_fusion_attrs(&self, originals: &[NodeId]) -> Vec<(String, crate::attr::AttrValue)> {
        let mut out = Vec::new();
        for key in [attr_names::STREAM_LABEL, attr_names::SUPER_KERNEL_SCOPE] {
            let first = self.nodes[originals[0]].op.attrs().get(key);
            if let Some(v) = first {
                if originals
                    .iter()
                    .all(|&o| self.nodes[o].op.attrs().get(key) == Some(v))
                {
                    out.push((key.to_string(), v.clone()));
                }
            }
        }
        for key in [attr_names::OP_AICORE_NUM, attr_names::OP_VECTORCORE_NUM] {
            if let Some(v) = originals
                .iter()
                .find_map(|&o| self.nodes[o].op.attrs().get(key))
            {
                out.push((key.to_string(), v.clone()));
            }
        }
        out
    }

    /// Adds an input desc and its in-data anchor at the end of `n`'s inputs. Returns its index.
    pub fn append_input(&mut self, n: NodeId, name: &str, desc: TensorDesc) -> Result<usize> {
        self.touch();
        self.node_ref(n)?;
        let node = &mut self.nodes[n];
        let i = node.op.add_input(name, desc)?;
        node.in_data.push(None);
        Ok(i)
    }

    /// Adds an output desc and its out-data anchor at the end of `n`'s outputs.
    pub fn append_output(&mut self, n: NodeId, name: &str, desc: TensorDesc) -> Result<usize> {
        self.touch();
        self.node_ref(n)?;
        let node = &mut self.nodes[n];
        let i = node.op.add_output(name, desc)?;
        node.out_data.push(Vec::new());
        Ok(i)
    }

    /// Inserts an input desc at `index`; later in-data anchors move up one with their links.
    pub fn insert_input(
        &mut self,
        n: NodeId,
        index: usize,
        name: &str,
        desc: TensorDesc,
    ) -> Result<()> {
        self.node_ref(n)?;
        self.nodes[n].op.insert_input(index, name, desc)?;
        self.shift_in_anchor_refs(n, index, 1);
        self.nodes[n].in_data.insert(index, None);
        Ok(())
    }

    /// Removes input `index` (its link too); later in-data anchors move down one.
    pub fn remove_input(&mut self, n: NodeId, index: usize) -> Result<TensorDesc> {
        self.touch();
        let node = self.node_ref(n)?;
        if index >= node.in_data.len() {
            return Err(IrError::AnchorOutOfRange {
                node: node.name().to_string(),
                side: AnchorSide::In,
                index: index as i32,
                count: node.in_data.len(),
            });
        }
        if let Some(src) = node.in_data[index] {
            self.unlink_unchecked(src, n.input(index));
        }
        let (_, desc) = self.nodes[n].op.remove_input(index).expect("checked index");
        self.shift_in_anchor_refs(n, index + 1, -1);
        self.nodes[n].in_data.remove(index);
        Ok(desc)
    }

    /// Shifts, by `delta`, every producer's reference to an in-data anchor of `n` whose index
    /// is at least `from` (before the anchors themselves move).
    fn shift_in_anchor_refs(&mut self, n: NodeId, from: usize, delta: i32) {
        self.touch();
        let mut producers: Vec<NodeId> = self.nodes[n].in_data[from..]
            .iter()
            .flatten()
            .map(|p| p.node)
            .collect();
        producers.sort_unstable();
        producers.dedup();
        for p in producers {
            let node = &mut self.nodes[p];
            for e in node.out_lists_mut().flatten() {
                if e.node == n && e.index >= from as i32 {
                    e.index += delta;
                }
            }
        }
    }
}
