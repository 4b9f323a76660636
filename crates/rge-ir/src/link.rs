//! Linking anchors. Every operation checks all its rules before it changes anything, so both
//! ends change or neither (the seed's LinkTo/Unlink/Insert/ReplacePeer).

use crate::error::{AnchorSide, IrError, Result};
use crate::graph::ComputeGraph;
use crate::node::{InAnchor, NodeId, OutAnchor, CONTROL_INDEX};
use crate::ports::push_small;

impl ComputeGraph {
    fn check_out_anchor(&self, a: OutAnchor) -> Result<()> {
        let node = self.node_ref(a.node)?;
        if a.index != CONTROL_INDEX && (a.index < 0 || a.index as usize >= node.out_data.len()) {
            return Err(IrError::AnchorOutOfRange {
                node: node.name().to_string(),
                side: AnchorSide::Out,
                index: a.index,
                count: node.out_data.len(),
            });
        }
        Ok(())
    }

    fn check_in_anchor(&self, a: InAnchor) -> Result<()> {
        let node = self.node_ref(a.node)?;
        if a.index != CONTROL_INDEX && (a.index < 0 || a.index as usize >= node.in_data.len()) {
            return Err(IrError::AnchorOutOfRange {
                node: node.name().to_string(),
                side: AnchorSide::In,
                index: a.index,
                count: node.in_data.len(),
            });
        }
        Ok(())
    }

    fn check_same_graph(&self, a: NodeId, b: NodeId) -> Result<()> {
        let (ga, gb) = (self.nodes[a].graph, self.nodes[b].graph);
        if ga != gb {
            return Err(IrError::CrossGraphLink {
                src: self.name_of(a).into(),
                src_graph: self.graphs[ga].name.clone(),
                dst: self.name_of(b).into(),
                dst_graph: self.graphs[gb].name.clone(),
            });
        }
        Ok(())
    }

    /// True when `src` and `dst` are linked.
    pub fn is_linked(&self, src: OutAnchor, dst: InAnchor) -> bool {
        if dst.index == CONTROL_INDEX {
            return self.nodes.contains_key(src.node)
                && self.nodes.contains_key(dst.node)
                && self.control_linked(src, dst);
        }
        // An in-data anchor holds its one source: O(1) however wide the fan-out.
        self.nodes.contains_key(src.node)
            && self.nodes.get(dst.node).is_some_and(|d| {
                usize::try_from(dst.index)
                    .ok()
                    .and_then(|i| d.in_data.get(i))
                    .is_some_and(|s| *s == Some(src))
            })
    }

    /// Checks that `link(src, dst)` would succeed.
    pub fn check_link(&self, src: OutAnchor, dst: InAnchor) -> Result<()> {
        self.check_out_anchor(src)?;
        self.check_in_anchor(dst)?;
        self.check_same_graph(src.node, dst.node)?;
        if dst.index != CONTROL_INDEX {
            if let Some(peer) = self.nodes[dst.node].in_data[dst.index as usize] {
                return Err(IrError::InputAlreadyLinked {
                    node: self.name_of(dst.node).into(),
                    index: dst.index,
                    peer: format!("{}:{}", self.name_of(peer.node), peer.index),
                });
            }
        }
        // A free in-data anchor cannot already hold this link; for a control destination scan
        // the shorter side, so wide fan-out stays linear.
        if dst.index == CONTROL_INDEX && self.control_linked(src, dst) {
            return Err(self.link_error(src, dst, true));
        }
        Ok(())
    }

    fn control_linked(&self, src: OutAnchor, dst: InAnchor) -> bool {
        let outs = self.nodes[src.node].peers_of_out(src.index);
        let ins = self.nodes[dst.node].ctrl_in();
        if outs.len() <= ins.len() {
            outs.contains(&dst)
        } else {
            ins.contains(&src)
        }
    }

    fn link_error(&self, src: OutAnchor, dst: InAnchor, already: bool) -> IrError {
        let (s, d) = (self.name_of(src.node).into(), self.name_of(dst.node).into());
        if already {
            IrError::AlreadyLinked {
                src: s,
                src_index: src.index,
                dst: d,
                dst_index: dst.index,
            }
        } else {
            IrError::NotLinked {
                src: s,
                src_index: src.index,
                dst: d,
                dst_index: dst.index,
            }
        }
    }

    /// Links an out-anchor to an in-anchor. Data→data, control→control and the cross-type links
    /// data→control and control→data are all allowed; an in-data anchor takes one peer only.
    pub fn link(&mut self, src: OutAnchor, dst: InAnchor) -> Result<()> {
        self.check_link(src, dst)?;
        self.link_unchecked(src, dst);
        Ok(())
    }

    pub(crate) fn link_unchecked(&mut self, src: OutAnchor, dst: InAnchor) {
        self.touch();
        self.topo_ranks.invalidate();
        let s = &mut self.nodes[src.node];
        if src.index == CONTROL_INDEX {
            push_small(s.ctrl_out_mut(), dst);
        } else {
            push_small(&mut s.out_data[src.index as usize], dst);
        }
        let d = &mut self.nodes[dst.node];
        if dst.index == CONTROL_INDEX {
            push_small(d.ctrl_in_mut(), src);
        } else {
            d.in_data[dst.index as usize] = Some(src);
        }
    }

    /// Data link `src:out → dst:input`, GE's AddEdge.
    pub fn add_edge(&mut self, src: NodeId, out: usize, dst: NodeId, input: usize) -> Result<()> {
        self.link(src.out(out), dst.input(input))
    }

    /// Control link `src → dst`.
    pub fn add_control_edge(&mut self, src: NodeId, dst: NodeId) -> Result<()> {
        self.link(src.out_ctrl(), dst.in_ctrl())
    }

    /// Removes the link between `src` and `dst`.
    pub fn unlink(&mut self, src: OutAnchor, dst: InAnchor) -> Result<()> {
        self.check_out_anchor(src)?;
        self.check_in_anchor(dst)?;
        if !self.is_linked(src, dst) {
            return Err(self.link_error(src, dst, false));
        }
        self.unlink_unchecked(src, dst);
        Ok(())
    }

    pub(crate) fn unlink_unchecked(&mut self, src: OutAnchor, dst: InAnchor) {
        self.touch();
        let s = &mut self.nodes[src.node];
        let list = if src.index == CONTROL_INDEX {
            s.ctrl_out_mut()
        } else {
            &mut s.out_data[src.index as usize]
        };
        if let Some(p) = list.iter().position(|&x| x == dst) {
            list.remove(p);
        }
        let d = &mut self.nodes[dst.node];
        if dst.index == CONTROL_INDEX {
            if let Some(p) = d.ctrl_in_mut().iter().position(|&x| x == src) {
                d.ctrl_in_mut().remove(p);
            }
        } else {
            d.in_data[dst.index as usize] = None;
        }
    }

    /// GE's RemoveEdge for a data link.
    pub fn remove_edge(
        &mut self,
        src: NodeId,
        out: usize,
        dst: NodeId,
        input: usize,
    ) -> Result<()> {
        self.unlink(src.out(out), dst.input(input))
    }

    pub fn remove_control_edge(&mut self, src: NodeId, dst: NodeId) -> Result<()> {
        self.unlink(src.out_ctrl(), dst.in_ctrl())
    }

    /// Inserts `node` into the existing link `src → dst`: `src → node.input(node_in)` and
    /// `node.out(node_out) → dst`, keeping `dst`'s place in `src`'s peer list.
    pub fn insert_node_between(
        &mut self,
        src: OutAnchor,
        dst: InAnchor,
        node: NodeId,
        node_in: usize,
        node_out: usize,
    ) -> Result<()> {
        if !self.is_linked(src, dst) {
            self.check_out_anchor(src)?;
            self.check_in_anchor(dst)?;
            return Err(self.link_error(src, dst, false));
        }
        let (ni, no) = (node.input(node_in), node.out(node_out));
        self.check_in_anchor(ni)?;
        self.check_out_anchor(no)?;
        self.check_same_graph(src.node, node)?;
        if let Some(peer) = self.nodes[node].in_data[node_in] {
            return Err(IrError::InputAlreadyLinked {
                node: self.name_of(node).into(),
                index: node_in as i32,
                peer: format!("{}:{}", self.name_of(peer.node), peer.index),
            });
        }
        if node == src.node || node == dst.node || self.is_linked(no, dst) {
            return Err(IrError::Verify(format!(
                "cannot insert `{}` into its own link",
                self.name_of(node)
            )));
        }
        self.topo_ranks.invalidate();
        self.touch();
        // src's peer slot that pointed at dst now points at the new node's input.
        let s = &mut self.nodes[src.node];
        let list = if src.is_control() {
            s.ctrl_out_mut()
        } else {
            &mut s.out_data[src.index as usize]
        };
        let pos = list.iter().position(|&x| x == dst).expect("checked linked");
        list[pos] = ni;
        self.nodes[node].in_data[node_in] = Some(src);
        // dst's peer becomes the new node's output.
        let d = &mut self.nodes[dst.node];
        if dst.is_control() {
            let p = d
                .ctrl_in_mut()
                .iter()
                .position(|&x| x == src)
                .expect("checked");
            d.ctrl_in_mut()[p] = no;
        } else {
            d.in_data[dst.index as usize] = Some(no);
        }
        let n = &mut self.nodes[node];
        if no.is_control() {
            n.ctrl_out_mut().push(dst);
        } else {
            n.out_data[node_out].push(dst);
        }
        Ok(())
    }

    /// Replaces the source of in-anchor `dst` that is `old_src` by `new_src` (GE's ReplacePeer
    /// and ReplaceEdgeSrc). For an in-data anchor `old_src` must be its current peer.
    pub fn replace_source(
        &mut self,
        old_src: OutAnchor,
        dst: InAnchor,
        new_src: OutAnchor,
    ) -> Result<()> {
        if !self.is_linked(old_src, dst) {
            self.check_out_anchor(old_src)?;
            self.check_in_anchor(dst)?;
            return Err(self.link_error(old_src, dst, false));
        }
        if old_src == new_src {
            return Ok(());
        }
        self.check_out_anchor(new_src)?;
        self.check_same_graph(new_src.node, dst.node)?;
        if self.is_linked(new_src, dst) {
            return Err(self.link_error(new_src, dst, true));
        }
        self.unlink_unchecked(old_src, dst);
        self.link_unchecked(new_src, dst);
        Ok(())
    }

    /// Replaces the destination `old_dst` of `src` by `new_dst`, keeping the place in `src`'s
    /// peer list (GE's ReplaceEdgeDst).
    pub fn replace_destination(
        &mut self,
        src: OutAnchor,
        old_dst: InAnchor,
        new_dst: InAnchor,
    ) -> Result<()> {
        if !self.is_linked(src, old_dst) {
            self.check_out_anchor(src)?;
            self.check_in_anchor(old_dst)?;
            return Err(self.link_error(src, old_dst, false));
        }
        if old_dst == new_dst {
            return Ok(());
        }
        self.check_in_anchor(new_dst)?;
        self.check_same_graph(src.node, new_dst.node)?;
        if !new_dst.is_control() {
            if let Some(peer) = self.nodes[new_dst.node].in_data[new_dst.index as usize] {
                return Err(IrError::InputAlreadyLinked {
                    node: self.name_of(new_dst.node).into(),
                    index: new_dst.index,
                    peer: format!("{}:{}", self.name_of(peer.node), peer.index),
                });
            }
        }
        if self.is_linked(src, new_dst) {
            return Err(self.link_error(src, new_dst, true));
        }
        self.topo_ranks.invalidate();
        self.touch();
        let s = &mut self.nodes[src.node];
        let list = if src.is_control() {
            s.ctrl_out_mut()
        } else {
            &mut s.out_data[src.index as usize]
        };
        let pos = list.iter().position(|&x| x == old_dst).expect("checked");
        list[pos] = new_dst;
        let od = &mut self.nodes[old_dst.node];
        if old_dst.is_control() {
            od.ctrl_in_mut().retain(|&x| x != src);
        } else {
            od.in_data[old_dst.index as usize] = None;
        }
        let nd = &mut self.nodes[new_dst.node];
        if new_dst.is_control() {
            nd.ctrl_in_mut().push(src);
        } else {
            nd.in_data[new_dst.index as usize] = Some(src);
        }
        Ok(())
    }

    /// Moves every consumer of `from`'s outputs (data by index, and control) to `to`
    /// (GE's MoveOutputEdges). `to` must have at least as many outputs as are in use.
    pub fn move_output_edges(&mut self, from: NodeId, to: NodeId) -> Result<()> {
        self.touch();
        let f = self.node_ref(from)?;
        let t = self.node_ref(to)?;
        self.check_same_graph(from, to)?;
        for (i, peers) in f.out_data.iter().enumerate() {
            if !peers.is_empty() && i >= t.out_data.len() {
                return Err(IrError::AnchorOutOfRange {
                    node: t.name().to_string(),
                    side: AnchorSide::Out,
                    index: i as i32,
                    count: t.out_data.len(),
                });
            }
            for &p in peers {
                if self.is_linked(to.out(i), p) || p.node == to {
                    return Err(self.link_error(to.out(i), p, true));
                }
            }
        }
        for &p in f.ctrl_out() {
            if self.is_linked(to.out_ctrl(), p) || p.node == to {
                return Err(self.link_error(to.out_ctrl(), p, true));
            }
        }
        let moves: Vec<(OutAnchor, InAnchor)> = (0..f.out_data.len())
            .flat_map(|i| f.out_data[i].iter().map(move |&p| (from.out(i), p)))
            .chain(f.ctrl_out().iter().map(|&p| (from.out_ctrl(), p)))
            .collect();
        for (src, dst) in moves {
            self.unlink_unchecked(src, dst);
            self.link_unchecked(
                OutAnchor {
                    node: to,
                    index: src.index,
                },
                dst,
            );
        }
        Ok(())
    }
}
