//! `ComputeGraph`: the root graph. It owns every node (one generational arena) and every
//! subgraph (ARCHITECTURE.md decision 3); a `GraphId` names the root or one subgraph. Each graph
//! keeps its own node order, input nodes, output nodes with indexes, attributes and a name index.

use std::hash::BuildHasher;

use hashbrown::{DefaultHashBuilder, HashMap, HashTable};
use slotmap::{new_key_type, SlotMap};
use smallvec::SmallVec;

use crate::attr::AttrMap;
use crate::error::{IrError, Result};
use crate::node::{Node, NodeId};
use crate::op_desc::OpDesc;

new_key_type! {
    /// A graph handle: the root graph or one of its subgraphs.
    pub struct GraphId;
}

/// One graph's own data. Nodes are in the root's arena.
#[derive(Debug, Clone, Default)]
pub(crate) struct GraphData {
    pub(crate) name: String,
    pub(crate) attrs: AttrMap,
    pub(crate) parent_graph: Option<GraphId>,
    pub(crate) parent_node: Option<NodeId>,
    pub(crate) first: Option<NodeId>,
    pub(crate) last: Option<NodeId>,
    pub(crate) len: usize,
    pub(crate) inputs: Vec<NodeId>,
    pub(crate) outputs: Vec<(NodeId, u32)>,
    /// Each output node's entries in `outputs` (positions, ascending): membership is O(1),
    /// and a patch replacing an output node finds its entries without a search.
    pub(crate) output_refs: HashMap<NodeId, SmallVec<[u32; 1]>>,
    /// Node name → node, hashed by the name stored in the node (no second copy of names).
    pub(crate) names: HashTable<NodeId>,
}

impl GraphData {
    pub(crate) fn set_outputs(&mut self, outputs: Vec<(NodeId, u32)>) {
        self.outputs = outputs;
        self.index_outputs();
    }

    fn index_outputs(&mut self) {
        self.output_refs.clear();
        self.output_refs.reserve(self.outputs.len());
        for (pos, &(n, _)) in self.outputs.iter().enumerate() {
            self.output_refs.entry(n).or_default().push(pos as u32);
        }
    }

    pub(crate) fn push_output(&mut self, n: NodeId, index: u32) {
        let pos = self.outputs.len() as u32;
        self.output_refs.entry(n).or_default().push(pos);
        self.outputs.push((n, index));
    }

    /// The positions in `outputs` of node `n`'s entries.
    pub(crate) fn output_positions(&self, n: NodeId) -> &[u32] {
        self.output_refs.get(&n).map_or(&[], |p| p.as_slice())
    }

    /// Empties output entry `pos` (its node no longer counts as an output) until
    /// [`GraphData::fill_output`] gives it a new source.
    pub(crate) fn release_output(&mut self, pos: usize) {
        let (n, _) = self.outputs[pos];
        if let Some(ps) = self.output_refs.get_mut(&n) {
            ps.retain(|p| *p as usize != pos);
            if ps.is_empty() {
                self.output_refs.remove(&n);
            }
        }
        self.outputs[pos].0 = NodeId::default();
    }

    /// Sets output entry `pos` to output `index` of `n`.
    pub(crate) fn fill_output(&mut self, pos: usize, n: NodeId, index: u32) {
        let ps = self.output_refs.entry(n).or_default();
        let at = ps.partition_point(|&p| (p as usize) < pos);
        ps.insert(at, pos as u32);
        self.outputs[pos] = (n, index);
    }

    /// Drops node `n` from the output list.
    pub(crate) fn remove_output_node(&mut self, n: NodeId) {
        if self.output_refs.remove(&n).is_some() {
            self.outputs.retain(|&(x, _)| x != n);
            self.index_outputs();
        }
    }
}

/// The root graph and owner of all subgraphs.
#[derive(Debug, Clone)]
pub struct ComputeGraph {
    pub(crate) nodes: SlotMap<NodeId, Node>,
    pub(crate) graphs: SlotMap<GraphId, GraphData>,
    pub(crate) root: GraphId,
    /// Subgraphs in the root's flat list order (GE's `sub_graph_`).
    pub(crate) subgraphs: Vec<GraphId>,
    pub(crate) subgraph_names: HashMap<String, GraphId>,
    pub(crate) hasher: DefaultHashBuilder,
    /// Topological ranks kept for patches (`patch_ranks`): invalidated by every edit that adds
    /// a link, kept valid by the patches themselves.
    pub(crate) topo_ranks: crate::patch_ranks::TopoRanks,
    /// Bumped by every structural edit (`touch`): what the cached topologies are checked
    /// against.
    pub(crate) revision: u64,
    /// The topologies of the current revision (`topology.rs`).
    pub(crate) topology: crate::topology::TopologyCache,
}

impl Default for ComputeGraph {
    fn default() -> Self {
        Self::new("graph")
    }
}

impl ComputeGraph {
    pub fn new(name: impl Into<String>) -> Self {
        let mut graphs = SlotMap::with_key();
        let root = graphs.insert(GraphData {
            name: name.into(),
            ..Default::default()
        });
        ComputeGraph {
            nodes: SlotMap::with_key(),
            graphs,
            root,
            subgraphs: Vec::new(),
            subgraph_names: HashMap::new(),
            hasher: DefaultHashBuilder::default(),
            topo_ranks: Default::default(),
            revision: 0,
            topology: Default::default(),
        }
    }

    /// Reserves room for `n` more nodes.
    pub fn reserve_nodes(&mut self, n: usize) {
        self.nodes.reserve(n);
        let root = self.root;
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        self.graphs[root]
            .names
            .reserve(n, |id| hasher.hash_one(nodes[*id].name()));
    }

    pub fn root(&self) -> GraphId {
        self.root
    }
    pub fn name(&self) -> &str {
        &self.graphs[self.root].name
    }

    pub(crate) fn gdata(&self, g: GraphId) -> Result<&GraphData> {
        self.graphs.get(g).ok_or(IrError::StaleGraph)
    }
    pub(crate) fn gdata_mut(&mut self, g: GraphId) -> Result<&mut GraphData> {
        self.graphs.get_mut(g).ok_or(IrError::StaleGraph)
    }
    pub(crate) fn node_ref(&self, n: NodeId) -> Result<&Node> {
        self.nodes.get(n).ok_or(IrError::StaleNode)
    }

    // ---- nodes ----

    /// The node, or `None` for a stale handle.
    pub fn node(&self, n: NodeId) -> Option<&Node> {
        self.nodes.get(n)
    }
    pub fn contains_node(&self, n: NodeId) -> bool {
        self.nodes.contains_key(n)
    }
    /// The node's op.
    pub fn op(&self, n: NodeId) -> Option<&OpDesc> {
        self.nodes.get(n).map(|n| &n.op)
    }
    /// The node's op, for edits that keep the port counts (descs, attrs, metadata). Changing the
    /// name goes through `rename_node`; adding ports through `add_input`/`insert_input`.
    pub fn op_mut(&mut self, n: NodeId) -> Option<&mut OpDesc> {
        self.nodes.get_mut(n).map(|n| &mut n.op)
    }
    /// Every node's op with its id, in slot order (not a graph's order), for the edits
    /// [`ComputeGraph::op_mut`] allows: one borrow for all of them, so that a caller may edit
    /// many ops in parallel.
    pub fn ops_mut(&mut self) -> impl Iterator<Item = (NodeId, &mut OpDesc)> {
        self.nodes.iter_mut().map(|(k, n)| (k, &mut n.op))
    }
    /// Takes node `n`'s op out, leaving an empty op behind, and drops its name from the
    /// graph's name index. What moves nodes to another graph uses it instead of cloning the op;
    /// the node left behind is a shell (its links and place in the order only) to be removed.
    pub fn take_op(&mut self, n: NodeId) -> Result<OpDesc> {
        self.node_ref(n)?;
        self.unindex_name(n);
        Ok(std::mem::take(&mut self.nodes[n].op))
    }

    /// Node count over the root and all subgraphs.
    pub fn total_node_count(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn hash_name(&self, name: &str) -> u64 {
        self.hasher.hash_one(name)
    }

    /// Finds a node by name in graph `g`.
    pub fn find_node(&self, g: GraphId, name: &str) -> Option<NodeId> {
        let data = self.graphs.get(g)?;
        data.names
            .find(self.hash_name(name), |id| self.nodes[*id].name() == name)
            .copied()
    }

    /// Adds a node to the end of graph `g`'s order, with one anchor per input and output desc
    /// plus the control pair. Node names are unique per graph.
    pub fn add_node(&mut self, g: GraphId, op: OpDesc) -> Result<NodeId> {
        let gd = self.gdata(g)?;
        if self.find_node(g, op.name()).is_some() {
            return Err(IrError::DuplicateNodeName {
                graph: gd.name.clone(),
                name: op.name().to_string(),
            });
        }
        let hash = self.hash_name(op.name());
        self.touch();
        let id = self.nodes.insert(Node::new(op, g));
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        self.graphs[g]
            .names
            .insert_unique(hash, id, |k| hasher.hash_one(nodes[*k].name()));
        self.layout_push_back(g, id);
        Ok(id)
    }

    /// Adds a node to the root graph.
    pub fn add_root_node(&mut self, op: OpDesc) -> Result<NodeId> {
        self.add_node(self.root, op)
    }

    /// Adds a node right before `before` in its graph's order.
    pub fn add_node_before(&mut self, before: NodeId, op: OpDesc) -> Result<NodeId> {
        let g = self.node_ref(before)?.graph;
        let id = self.add_node(g, op)?;
        self.layout_remove(id);
        self.layout_insert_before(before, id);
        Ok(id)
    }

    /// Adds a node right after `after` in its graph's order.
    pub fn add_node_after(&mut self, after: NodeId, op: OpDesc) -> Result<NodeId> {
        let g = self.node_ref(after)?.graph;
        let id = self.add_node(g, op)?;
        self.layout_remove(id);
        self.layout_insert_after(after, id);
        Ok(id)
    }

    /// Renames a node, keeping names unique in its graph.
    pub fn rename_node(&mut self, n: NodeId, name: &str) -> Result<()> {
        let node = self.node_ref(n)?;
        let g = node.graph;
        if node.name() == name {
            return Ok(());
        }
        if self.find_node(g, name).is_some() {
            return Err(IrError::DuplicateNodeName {
                graph: self.graphs[g].name.clone(),
                name: name.to_string(),
            });
        }
        self.unindex_name(n);
        self.nodes[n].op.set_name(name);
        self.index_name(n);
        Ok(())
    }

    pub(crate) fn index_name(&mut self, n: NodeId) {
        let g = self.nodes[n].graph;
        let hash = self.hash_name(self.nodes[n].name());
        let (nodes, hasher) = (&self.nodes, &self.hasher);
        self.graphs[g]
            .names
            .insert_unique(hash, n, |k| hasher.hash_one(nodes[*k].name()));
    }

    pub(crate) fn unindex_name(&mut self, n: NodeId) {
        let g = self.nodes[n].graph;
        let hash = self.hash_name(self.nodes[n].name());
        if let Ok(entry) = self.graphs[g].names.find_entry(hash, |k| *k == n) {
            entry.remove();
        }
    }

    // ---- graph I/O lists ----

    pub fn input_nodes(&self, g: GraphId) -> &[NodeId] {
        self.graphs.get(g).map_or(&[], |d| &d.inputs)
    }
    /// Appends `n` to the graph's input nodes (once).
    pub fn add_input_node(&mut self, n: NodeId) -> Result<()> {
        let g = self.node_ref(n)?.graph;
        let d = &mut self.graphs[g];
        if !d.inputs.contains(&n) {
            d.inputs.push(n);
        }
        Ok(())
    }
    pub fn set_input_nodes(&mut self, g: GraphId, inputs: Vec<NodeId>) -> Result<()> {
        for &n in &inputs {
            if self.node_ref(n)?.graph != g {
                return Err(IrError::Verify(format!(
                    "input node `{}` is not in graph `{}`",
                    self.nodes[n].name(),
                    self.gdata(g)?.name
                )));
            }
        }
        self.gdata_mut(g)?.inputs = inputs;
        Ok(())
    }
    /// Output nodes with the output index of each (GE's output_nodes_info_).
    pub fn output_nodes(&self, g: GraphId) -> &[(NodeId, u32)] {
        self.graphs.get(g).map_or(&[], |d| &d.outputs)
    }
    /// Whether node `n` is on its graph's output list.
    pub fn is_output_node(&self, n: NodeId) -> bool {
        self.nodes
            .get(n)
            .and_then(|node| self.graphs.get(node.graph))
            .is_some_and(|d| d.output_refs.contains_key(&n))
    }
    pub fn add_output_node(&mut self, n: NodeId, index: u32) -> Result<()> {
        let node = self.node_ref(n)?;
        if index as usize >= node.out_data.len() && !node.out_data.is_empty() {
            return Err(IrError::AnchorOutOfRange {
                node: node.name().to_string(),
                side: crate::error::AnchorSide::Out,
                index: index as i32,
                count: node.out_data.len(),
            });
        }
        let g = node.graph;
        self.graphs[g].push_output(n, index);
        Ok(())
    }
    pub fn set_output_nodes(&mut self, g: GraphId, outputs: Vec<(NodeId, u32)>) -> Result<()> {
        for &(n, _) in &outputs {
            if self.node_ref(n)?.graph != g {
                return Err(IrError::Verify(format!(
                    "output node `{}` is not in graph `{}`",
                    self.nodes[n].name(),
                    self.gdata(g)?.name
                )));
            }
        }
        self.gdata_mut(g)?.set_outputs(outputs);
        Ok(())
    }

    // ---- graphs and subgraphs ----

    pub fn graph_name(&self, g: GraphId) -> Option<&str> {
        self.graphs.get(g).map(|d| d.name.as_str())
    }
    pub fn graph_attrs(&self, g: GraphId) -> Option<&AttrMap> {
        self.graphs.get(g).map(|d| &d.attrs)
    }
    pub fn graph_attrs_mut(&mut self, g: GraphId) -> Option<&mut AttrMap> {
        self.graphs.get_mut(g).map(|d| &mut d.attrs)
    }
    pub fn contains_graph(&self, g: GraphId) -> bool {
        self.graphs.contains_key(g)
    }
    /// The graph's direct node count.
    pub fn node_count(&self, g: GraphId) -> usize {
        self.graphs.get(g).map_or(0, |d| d.len)
    }
    /// Subgraphs in the root's flat order.
    pub fn subgraphs(&self) -> &[GraphId] {
        &self.subgraphs
    }
    pub fn subgraph_by_name(&self, name: &str) -> Option<GraphId> {
        self.subgraph_names.get(name).copied()
    }
    pub fn parent_graph(&self, g: GraphId) -> Option<GraphId> {
        self.graphs.get(g).and_then(|d| d.parent_graph)
    }
    pub fn parent_node(&self, g: GraphId) -> Option<NodeId> {
        self.graphs.get(g).and_then(|d| d.parent_node)
    }

    /// Creates an empty subgraph owned by the root, attached to `parent_node` as subgraph slot
    /// `index` (the parent's OpDesc records the instance name). Names are unique over the root.
    pub fn add_subgraph(
        &mut self,
        parent_node: NodeId,
        index: usize,
        name: impl Into<String>,
    ) -> Result<GraphId> {
        let name = name.into();
        let parent_graph = self.node_ref(parent_node)?.graph;
        if name == self.graphs[self.root].name || self.subgraph_names.contains_key(&name) {
            return Err(IrError::DuplicateGraphName { name });
        }
        if let Some(old) = self.nodes[parent_node]
            .op
            .subgraph_instance_names()
            .get(index)
            .filter(|n| !n.is_empty())
        {
            return Err(IrError::Verify(format!(
                "node `{}` already has subgraph `{old}` in slot {index}",
                self.nodes[parent_node].name()
            )));
        }
        let g = self.graphs.insert(GraphData {
            name: name.clone(),
            parent_graph: Some(parent_graph),
            parent_node: Some(parent_node),
            ..Default::default()
        });
        self.subgraphs.push(g);
        self.subgraph_names.insert(name.clone(), g);
        self.nodes[parent_node]
            .op
            .set_subgraph_instance_name(index, name);
        Ok(g)
    }

    /// Creates a detached subgraph (no parent yet), as a loader does before it links ownership.
    pub fn add_detached_subgraph(&mut self, name: impl Into<String>) -> Result<GraphId> {
        let name = name.into();
        if name == self.graphs[self.root].name || self.subgraph_names.contains_key(&name) {
            return Err(IrError::DuplicateGraphName { name });
        }
        let g = self.graphs.insert(GraphData {
            name: name.clone(),
            ..Default::default()
        });
        self.subgraphs.push(g);
        self.subgraph_names.insert(name, g);
        Ok(g)
    }

    /// Attaches a detached subgraph to `parent_node` (as GE's RebuildOwnership does).
    pub fn set_subgraph_parent(&mut self, g: GraphId, parent_node: NodeId) -> Result<()> {
        let pg = self.node_ref(parent_node)?.graph;
        if g == self.root {
            return Err(IrError::Verify("the root graph has no parent".into()));
        }
        let d = self.gdata_mut(g)?;
        d.parent_graph = Some(pg);
        d.parent_node = Some(parent_node);
        Ok(())
    }

    /// Removes a subgraph, its nodes, and the subgraphs nested under them; the parent's instance
    /// name is cleared.
    pub fn remove_subgraph(&mut self, g: GraphId) -> Result<()> {
        if g == self.root {
            return Err(IrError::Verify("cannot remove the root graph".into()));
        }
        let d = self.gdata(g)?;
        let (name, parent) = (d.name.clone(), d.parent_node);
        // Nested subgraphs first.
        let nested: Vec<GraphId> = self
            .subgraphs
            .iter()
            .copied()
            .filter(|&s| {
                self.graphs[s]
                    .parent_node
                    .is_some_and(|p| self.nodes.get(p).is_some_and(|p| p.graph == g))
            })
            .collect();
        for s in nested {
            self.remove_subgraph(s)?;
        }
        self.touch();
        let nodes: Vec<NodeId> = self.nodes_of(g).collect();
        for n in nodes {
            self.nodes.remove(n);
        }
        self.graphs.remove(g);
        self.subgraphs.retain(|&s| s != g);
        self.subgraph_names.remove(&name);
        if let Some(p) = parent.and_then(|p| self.nodes.get_mut(p)) {
            p.op.remove_subgraph_instance_name(&name);
        }
        Ok(())
    }

    /// The subgraphs of node `n` by slot, resolved through its instance names.
    pub fn node_subgraphs(&self, n: NodeId) -> Vec<GraphId> {
        self.nodes.get(n).map_or_else(Vec::new, |node| {
            node.op
                .subgraph_instance_names()
                .iter()
                .filter_map(|s| self.subgraph_names.get(s).copied())
                .collect()
        })
    }

    /// Nodes of graph `g` in order.
    pub fn nodes_of(&self, g: GraphId) -> NodeIter<'_> {
        NodeIter {
            graph: self,
            next: self.graphs.get(g).and_then(|d| d.first),
        }
    }

    /// All nodes: each node of `g`, then (recursively) the nodes of its subgraphs in slot order,
    /// then the next node (GE's GetAllNodes pre-order walk).
    pub fn all_nodes(&self, g: GraphId) -> Vec<NodeId> {
        let mut out = Vec::new();
        self.collect_all(g, &mut out, 0);
        out
    }

    fn collect_all(&self, g: GraphId, out: &mut Vec<NodeId>, depth: usize) {
        // Ownership cycles are rejected by the verifier; the depth bound keeps a broken graph
        // from recursing forever.
        if depth > 1024 {
            return;
        }
        for n in self.nodes_of(g) {
            out.push(n);
            for s in self.node_subgraphs(n) {
                if self.graphs[s].parent_node == Some(n) {
                    self.collect_all(s, out, depth + 1);
                }
            }
        }
    }

    /// Graph `g`'s node names in order.
    pub fn node_names(&self, g: GraphId) -> Vec<&str> {
        self.nodes_of(g).map(|n| self.nodes[n].name()).collect()
    }

    /// The graph a node belongs to.
    pub fn graph_of(&self, n: NodeId) -> Option<GraphId> {
        self.nodes.get(n).map(|n| n.graph)
    }

    /// Every node of every graph, in storage order rather than graph order: one sequential
    /// sweep of the node table, for scans that do not care about order (following a graph's
    /// order jumps around memory, which at a million nodes costs a cache miss per node).
    pub fn nodes_unordered(&self) -> impl Iterator<Item = (NodeId, &Node)> + '_ {
        self.nodes.iter()
    }

    /// Node name for messages (`"<removed>"` for a stale handle).
    pub fn name_of(&self, n: NodeId) -> &str {
        self.nodes.get(n).map_or("<removed>", |n| n.name())
    }
}

/// Iterates a graph's nodes in order.
pub struct NodeIter<'a> {
    graph: &'a ComputeGraph,
    next: Option<NodeId>,
}

impl Iterator for NodeIter<'_> {
    type Item = NodeId;
    fn next(&mut self) -> Option<NodeId> {
        let cur = self.next?;
        self.next = self.graph.nodes[cur].next;
        Some(cur)
    }
}
