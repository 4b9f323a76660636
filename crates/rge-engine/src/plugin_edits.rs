//! A plugin optimizer's answer (the edits document, schema in `docs/engines.md`) carried out
//! through the [`GraphRewriter`], so a plugin is held to the same checks as a built-in engine:
//!
//! ```json
//! {"patches": [{"remove": ["a", "b"],
//!               "add": [op + "inputs_from": ["x:0" | "" ...]],
//!               "replace": {"b:0": "fused:0"},
//!               "control": "fused" | null}],
//!  "set_attrs": [{"node": "c", "attrs": {...}}]}
//! ```
//!
//! Patches act on the root graph (the one the plugin was shown), in order, each all or
//! nothing. `"src:idx"` names a node added by the same patch or an existing one; `replace`
//! maps each removed output still read to what replaces it; `control` carries the removed
//! nodes' control edges to a node, `null` drops them. Then `set_attrs` are checked together
//! and applied together (nodes by name, after the patches).

use serde_json::{Map, Value};

use rge_ir::{AttrValue, GraphPatch, NodeId, Outlet, PatchNode};

use crate::error::{EngineError, EngineResult};
use crate::json::{attr_from_json, op_from_json};
use crate::rewriter::GraphRewriter;

/// Carries out `edits` through `rw`.
pub fn apply_plugin_edits(rw: &mut GraphRewriter<'_>, edits: &Value) -> EngineResult<()> {
    let engine = rw.engine().to_string();
    let bad = |m: String| EngineError::engine(&engine, m);
    if let Some(list) = edits.get("patches") {
        let list = list
            .as_array()
            .ok_or_else(|| bad("`patches` is not a list".into()))?;
        for (i, p) in list.iter().enumerate() {
            let patch = patch_from_json(rw, p).map_err(|m| bad(format!("patch {i}: {m}")))?;
            rw.apply(patch)?;
        }
    }
    let Some(list) = edits.get("set_attrs") else {
        return Ok(());
    };
    let list = list
        .as_array()
        .ok_or_else(|| bad("`set_attrs` is not a list".into()))?;
    let mut planned: Vec<(NodeId, String, AttrValue)> = Vec::new();
    for e in list {
        let name = e
            .get("node")
            .and_then(Value::as_str)
            .ok_or_else(|| bad("an edit has no `node` name".into()))?;
        let g = rw.graph();
        let n = g
            .find_node(g.root(), name)
            .ok_or_else(|| bad(format!("edit names unknown node `{name}`")))?;
        rw.check_annotatable(n)?;
        let attrs = e
            .get("attrs")
            .and_then(Value::as_object)
            .ok_or_else(|| bad(format!("edit of `{name}` has no `attrs` object")))?;
        for (k, v) in attrs {
            let a = attr_from_json(v).ok_or_else(|| {
                bad(format!(
                    "edit of `{name}`: attribute `{k}` has an unsupported value"
                ))
            })?;
            planned.push((n, k.clone(), a));
        }
    }
    for (n, k, a) in planned {
        rw.set_attr(n, k, a)?;
    }
    Ok(())
}

/// One patch of the document, with names resolved against the root graph and the patch's
/// own new nodes.
fn patch_from_json(rw: &GraphRewriter<'_>, p: &Value) -> Result<GraphPatch, String> {
    let g = rw.graph();
    let root = g.root();
    let old = |name: &str| {
        g.find_node(root, name)
            .ok_or_else(|| format!("no node named `{name}`"))
    };
    let mut patch = GraphPatch::in_graph(root);
    for name in strings(p, "remove")? {
        patch.remove(old(name)?);
    }
    let added: Vec<&Value> = match p.get("add") {
        None => Vec::new(),
        Some(v) => v.as_array().ok_or("`add` is not a list")?.iter().collect(),
    };
    let mut names: Vec<String> = Vec::with_capacity(added.len());
    for (k, v) in added.iter().enumerate() {
        let op = op_from_json(v).ok_or_else(|| format!("new node {k} is not an op"))?;
        names.push(op.name().to_string());
        patch.add_node(op);
    }
    // New names shadow a removed node of the same name (a replacement keeps its name).
    let outlet = |s: &str| -> Result<Outlet, String> {
        let (name, index) = s
            .rsplit_once(':')
            .and_then(|(n, i)| Some((n, i.parse::<usize>().ok()?)))
            .ok_or_else(|| format!("`{s}` is not `node:index`"))?;
        Ok(match names.iter().position(|n| n == name) {
            Some(k) => Outlet::new_node(k, index),
            None => Outlet::old(old(name)?, index),
        })
    };
    for (k, v) in added.iter().enumerate() {
        let Some(froms) = v.get("inputs_from") else {
            continue;
        };
        let froms = froms
            .as_array()
            .ok_or_else(|| format!("`inputs_from` of new node `{}` is not a list", names[k]))?;
        for (j, f) in froms.iter().enumerate() {
            let f = f
                .as_str()
                .ok_or_else(|| format!("input {j} of new node `{}` is not a string", names[k]))?;
            if !f.is_empty() {
                patch.connect(outlet(f)?, k, j);
            }
        }
    }
    let empty = Map::new();
    let replace = match p.get("replace") {
        None => &empty,
        Some(v) => v.as_object().ok_or("`replace` is not an object")?,
    };
    for (from, to) in replace {
        let (name, index) = from
            .rsplit_once(':')
            .and_then(|(n, i)| Some((n, i.parse::<usize>().ok()?)))
            .ok_or_else(|| format!("`{from}` is not `node:index`"))?;
        let to = to
            .as_str()
            .ok_or_else(|| format!("the replacement of `{from}` is not a string"))?;
        patch.shunt(old(name)?, index, outlet(to)?);
    }
    match p.get("control") {
        None => {}
        Some(Value::Null) => {
            patch.drop_control();
        }
        Some(Value::String(name)) => {
            let to = match names.iter().position(|n| n == name) {
                Some(k) => PatchNode::New(k),
                None => PatchNode::Old(old(name)?),
            };
            patch.carry_control_to(to);
        }
        Some(_) => return Err("`control` is neither a node name nor null".into()),
    }
    Ok(patch)
}

fn strings<'v>(v: &'v Value, key: &str) -> Result<Vec<&'v str>, String> {
    match v.get(key) {
        None => Ok(Vec::new()),
        Some(a) => a
            .as_array()
            .and_then(|a| a.iter().map(Value::as_str).collect::<Option<Vec<_>>>())
            .ok_or_else(|| format!("`{key}` is not a list of node names")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::optimizer::OptimizeStage;
    use rge_ir::{ComputeGraph, OpDesc};
    use serde_json::json;

    /// ph → a → b → end: a partition as a fused-stage plugin sees it.
    fn partition() -> ComputeGraph {
        let mut g = ComputeGraph::new("p");
        let ph = g
            .add_root_node(OpDesc::new("ph", "PlaceHolder").with_ports(0, 1))
            .unwrap();
        let a = g
            .add_root_node(OpDesc::new("a", "Relu").with_ports(1, 1))
            .unwrap();
        let b = g
            .add_root_node(OpDesc::new("b", "Abs").with_ports(1, 1))
            .unwrap();
        let end = g
            .add_root_node(OpDesc::new("end", "End").with_ports(1, 0))
            .unwrap();
        g.add_edge(ph, 0, a, 0).unwrap();
        g.add_edge(a, 0, b, 0).unwrap();
        g.add_edge(b, 0, end, 0).unwrap();
        g
    }

    #[test]
    fn a_plugin_fuses_through_a_patch() {
        let mut g = partition();
        let edits = json!({
            "patches": [{"remove": ["a", "b"],
                "add": [{"name": "a_b", "type": "ReluAbs", "inputs": [{}], "outputs": [{}],
                         "inputs_from": ["ph:0"]}],
                "replace": {"b:0": "a_b:0"}}],
            "set_attrs": [{"node": "a_b", "attrs": {"_fused": 2}}]});
        let mut rw = GraphRewriter::new(&mut g, "plug", OptimizeStage::Fused);
        apply_plugin_edits(&mut rw, &edits).unwrap();
        g.verify().unwrap();
        let f = g.find_node(g.root(), "a_b").unwrap();
        let end = g.find_node(g.root(), "end").unwrap();
        assert_eq!(g.node(end).unwrap().peer_of_input(0), Some(f.out(0)));
        assert_eq!(g.op(f).unwrap().attrs().get_int("_fused").unwrap(), Some(2));
        assert_eq!(g.node_names(g.root()), ["ph", "a_b", "end"]);
    }

    #[test]
    fn bad_plugin_edits_are_refused_whole() {
        let mut g = partition();
        let before = g.clone();
        let cases = [
            (
                json!({"patches": [{"remove": ["end"]}]}),
                "engine `plug`: node `end` (End) is protected",
            ),
            (
                json!({"patches": [{"remove": ["b"]}]}),
                "engine `plug`: output 0 of removed node `b` feeds `end:0`",
            ),
            (
                json!({"patches": [{"remove": ["zz"]}]}),
                "engine `plug`: patch 0: no node named `zz`",
            ),
            (
                json!({"set_attrs": [{"node": "a", "attrs": {"x": 1}},
                                     {"node": "ph", "attrs": {"x": 1}}]}),
                "`ph` (PlaceHolder) is protected",
            ),
        ];
        for (edits, message) in cases {
            let mut rw = GraphRewriter::new(&mut g, "plug", OptimizeStage::Fused);
            let e = apply_plugin_edits(&mut rw, &edits).unwrap_err();
            assert!(e.to_string().contains(message), "{e}");
            assert!(g == before, "{message}: the graph changed");
        }
    }
}
