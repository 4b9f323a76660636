//! Name resolution across nested graphs, implicit captures, and the cycle check.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use hashbrown::HashMap;

use rge_ir::attr_names::{DATA_INDEX, PARENT_NODE_INDEX};
use rge_ir::{GraphId, NodeId, OutAnchor, TensorDesc};

use super::error::{OnnxError, Result};
use super::import::Importer;
use super::names;

impl<'p> Importer<'p> {
    /// The producer `name` means for a consumer at position `pos` of frame `level`: the latest
    /// producer before `pos` in this graph; else an enclosing graph's value (captured); else the
    /// first producer at or after `pos` (a forward reference).
    pub(super) fn resolve(
        &mut self,
        level: usize,
        name: &'p str,
        pos: i64,
    ) -> Result<Option<OutAnchor>> {
        if let Some(list) = self.frames[level].values.get(name) {
            if let Some(&(_, a)) = list.iter().rev().find(|(p, _)| *p < pos) {
                return Ok(Some(a));
            }
        }
        if level > 0 {
            if let Some(a) = self.capture(level, name)? {
                return Ok(Some(a));
            }
        }
        let f = &mut self.frames[level];
        let later = f
            .values
            .get(name)
            .and_then(|l| l.iter().find(|(p, _)| *p >= pos));
        if let Some(&(_, a)) = later {
            f.forward = true;
            return Ok(Some(a));
        }
        Ok(None)
    }

    /// Captures outer value `name` into the body of frame `level`: the parent node gets an extra
    /// input linked from the outer producer (once per parent, shared by its bodies), and the body
    /// a Data node bound to it by `_parent_node_index`. `None` if no enclosing graph has it.
    fn capture(&mut self, level: usize, name: &'p str) -> Result<Option<OutAnchor>> {
        let pi = level - 1;
        let (pnode, ppos) = (self.parents[pi].node, self.parents[pi].pos);
        let k = match self.parents[pi].captures.get(name) {
            Some(&k) => k,
            None => {
                let Some(src) = self.resolve(level - 1, name, ppos)? else {
                    return Ok(None);
                };
                let at = self.g.name_of(pnode).to_string();
                let k = self
                    .g
                    .append_input(pnode, "", TensorDesc::default())
                    .map_err(self.ir(&at))?;
                self.link(src, pnode, k)?;
                self.parents[pi].captures.insert(name.to_string(), k);
                k
            }
        };
        let desc = self
            .g
            .op(pnode)
            .and_then(|o| o.input(k))
            .cloned()
            .unwrap_or_default();
        let src = self.g.node(pnode).and_then(|n| n.peer_of_input(k));
        let base = src
            .and_then(|s| self.value_name_of(s))
            .unwrap_or_else(|| name.to_string());
        let gid = self.frames[level].graph;
        let mut node_name = base.clone();
        let mut n = 0;
        while self.g.find_node(gid, &node_name).is_some() {
            n += 1;
            node_name = format!("{base}_{n}");
        }
        let id = self.add_data(level, &node_name, desc, None, Some(k))?;
        if let Some(op) = self.g.op_mut(id) {
            op.attrs_mut().set(names::CAPTURE, true);
        }
        let e = self.frames[level].values.entry(name).or_default();
        e.insert(0, (-1, id.out(0)));
        Ok(Some(id.out(0)))
    }

    /// Puts the capture inputs of parent `p` (those after its `formal` ONNX inputs) in the order
    /// of the outer values' names, and its bodies' capture Data nodes (`_parent_node_index`,
    /// `index`, place in the order) with them, so that the result does not depend on the order
    /// in which the bodies' nodes happened to be read (an unsorted body, once exported sorted,
    /// imports the same).
    pub(super) fn canonical_captures(&mut self, p: NodeId, formal: usize) -> Result<()> {
        let at = self.g.name_of(p).to_string();
        let node = self.g.node(p).expect("live parent");
        let srcs: Vec<OutAnchor> = (formal..node.in_data_count())
            .filter_map(|k| node.peer_of_input(k))
            .collect();
        let keys: Vec<String> = srcs
            .iter()
            .map(|&s| self.value_name_of(s).unwrap_or_default())
            .collect();
        let mut order: Vec<usize> = (0..srcs.len()).collect();
        order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
        if order.iter().enumerate().all(|(i, &o)| i == o) {
            return Ok(());
        }
        let mut new_of_old = vec![0usize; srcs.len()];
        for (pos, &old) in order.iter().enumerate() {
            new_of_old[old] = pos;
        }
        for k in (formal..formal + srcs.len()).rev() {
            self.g.remove_input(p, k).map_err(self.ir(&at))?;
        }
        for &old in &order {
            let k = self
                .g
                .append_input(p, "", TensorDesc::default())
                .map_err(self.ir(&at))?;
            self.link(srcs[old], p, k)?;
        }
        for sub in self.g.node_subgraphs(p) {
            let (mut data, mut caps, mut rest) = (Vec::new(), Vec::new(), Vec::new());
            for n in self.g.nodes_of(sub).collect::<Vec<_>>() {
                let op = self.g.op_mut(n).expect("live");
                if op.attrs().get_bool(names::CAPTURE) == Ok(Some(true)) {
                    let old = op
                        .attrs()
                        .get_int(PARENT_NODE_INDEX)
                        .ok()
                        .flatten()
                        .unwrap_or(0);
                    let new = usize::try_from(old)
                        .ok()
                        .and_then(|o| o.checked_sub(formal))
                        .and_then(|o| new_of_old.get(o))
                        .map_or(old, |&x| (formal + x) as i64);
                    op.attrs_mut().set(PARENT_NODE_INDEX, new);
                    caps.push((new, n));
                } else if rge_ir::op_types::is_data(op.op_type()) {
                    data.push(n);
                } else {
                    rest.push(n);
                }
            }
            caps.sort_by_key(|c| c.0);
            for (i, &(_, n)) in caps.iter().enumerate() {
                let op = self.g.op_mut(n).expect("live");
                op.attrs_mut().set(DATA_INDEX, (data.len() + i) as i64);
            }
            data.extend(caps.into_iter().map(|c| c.1));
            self.g
                .set_input_nodes(sub, data.clone())
                .map_err(self.ir(&at))?;
            data.extend(rest);
            self.g.set_node_order(sub, &data).map_err(self.ir(&at))?;
        }
        Ok(())
    }

    /// The ONNX value name of an output, following captures out to the defining graph.
    pub(super) fn value_name_of(&self, mut a: OutAnchor) -> Option<String> {
        for _ in 0..=self.frames.len() {
            let op = self.g.op(a.node)?;
            let desc = op.output(usize::try_from(a.index).ok()?)?;
            if let Ok(Some(v)) = desc.attrs().get_str(names::ONNX_NAME) {
                return Some(v.to_string());
            }
            if op.attrs().get_bool(names::CAPTURE) != Ok(Some(true)) {
                return None;
            }
            let k = op.attrs().get_int(PARENT_NODE_INDEX).ok()??;
            let parent = self.g.parent_node(self.g.graph_of(a.node)?)?;
            a = self
                .g
                .node(parent)?
                .peer_of_input(usize::try_from(k).ok()?)?;
        }
        None
    }

    /// Puts graph `gid` in topological order (stable: ready nodes in their file order), or
    /// reports a cycle by its nodes.
    pub(super) fn sort_graph(&mut self, gid: GraphId) -> Result<()> {
        let nodes: Vec<NodeId> = self.g.nodes_of(gid).collect();
        let index: HashMap<NodeId, usize> =
            nodes.iter().enumerate().map(|(i, &n)| (n, i)).collect();
        let node = |i: usize| self.g.node(nodes[i]).expect("live node");
        let mut indeg: Vec<usize> = (0..nodes.len())
            .map(|i| {
                node(i)
                    .all_in_peers()
                    .filter(|p| index.contains_key(&p.node))
                    .count()
            })
            .collect();
        let mut ready: BinaryHeap<Reverse<usize>> = (0..nodes.len())
            .filter(|&i| indeg[i] == 0)
            .map(Reverse)
            .collect();
        let mut order = Vec::with_capacity(nodes.len());
        while let Some(Reverse(i)) = ready.pop() {
            order.push(nodes[i]);
            for c in node(i).all_out_peers() {
                if let Some(&j) = index.get(&c.node) {
                    indeg[j] -= 1;
                    if indeg[j] == 0 {
                        ready.push(Reverse(j));
                    }
                }
            }
        }
        if order.len() == nodes.len() {
            let at = self.g.graph_name(gid).unwrap_or_default().to_string();
            return self.g.set_node_order(gid, &order).map_err(self.ir(at));
        }
        // Walk back from a node left over through left-over producers until one repeats.
        let start = (0..nodes.len())
            .find(|&i| indeg[i] > 0)
            .expect("a node is left");
        let mut path: Vec<usize> = Vec::new();
        let mut seen: HashMap<usize, usize> = HashMap::new();
        let mut cur = start;
        let first = loop {
            if let Some(&k) = seen.get(&cur) {
                break k;
            }
            seen.insert(cur, path.len());
            path.push(cur);
            cur = node(cur)
                .all_in_peers()
                .filter_map(|p| index.get(&p.node).copied())
                .find(|&j| indeg[j] > 0)
                .expect("a node left over has a producer left over");
        };
        let mut cycle: Vec<String> = path[first..]
            .iter()
            .rev()
            .map(|&i| self.g.name_of(nodes[i]).to_string())
            .collect();
        cycle.push(cycle[0].clone());
        Err(OnnxError::Cycle {
            file: self.file.clone(),
            graph: self.g.graph_name(gid).unwrap_or_default().to_string(),
            nodes: cycle,
        })
    }
}
