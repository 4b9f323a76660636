//! What each name of one graph means, worked out from the file alone so that it can be done
//! while the graph's nodes are made (`Importer::import_graph`): every value name is hashed here,
//! once per use, and none while linking.

use hashbrown::HashMap;
use rge_ir::{AttrMap, NodeId, OutAnchor, TensorDesc};
use smallvec::SmallVec;

use super::names;
use super::nodes::Nodes;
use super::types::desc_from_type;
use crate::onnx_proto::GraphProto;

/// A producer of a value: its position (-1 for graph inputs, initializers and captures; else
/// the node's index) and its anchor.
pub(super) type Entry = (i64, OutAnchor);

/// A frame's values: each name's producers in file order.
pub(super) type Values<'p> = HashMap<&'p str, SmallVec<[Entry; 1]>>;

/// `Plan::typed`: node outputs (node, output) with their descs, or (entry, message).
pub(super) type Typed = Result<Vec<((u32, u32), TensorDesc)>, (usize, String)>;

/// A producer as planned (16 bytes: the plan keeps one per node input): output `.1` of node
/// `.0` of this graph, whose node does not exist yet ([`real`] gives the anchor), or one that
/// exists (a graph input or initializer, position -1).
#[derive(Clone, Copy, Debug)]
pub(super) enum Src {
    Node(u32, u32),
    Anchor(OutAnchor),
}

impl Src {
    fn of(e: Entry) -> Src {
        match u32::try_from(e.0) {
            Ok(i) => Src::Node(i, e.1.index as u32),
            Err(_) => Src::Anchor(e.1),
        }
    }
}

/// The producer a consumer's name means.
#[derive(Clone, Copy, Debug)]
pub(super) enum Found {
    /// No producer of the name in this graph.
    None,
    /// The latest producer before the consumer.
    Before(Src),
    /// The first producer at or after the consumer (a forward reference).
    After(Src),
}

pub(super) struct Plan<'p> {
    /// The frame's values with the graph's node outputs added (placeholder anchors: [`fix`]).
    pub(super) values: Values<'p>,
    /// Whether some name has two producers (or a producer and a graph input or initializer).
    pub(super) shared: bool,
    /// Per node input, node by node (empty names included: `None`).
    pub(super) inputs: Vec<Found>,
    /// The node outputs that `value_info` or the graph's outputs type, by (node, output), each
    /// with the desc it ends with (its `_onnx_name` aside); or the first bad type, as (entry of
    /// `value_info` then outputs, message).
    pub(super) typed: Typed,
    /// Per graph output, for a consumer after the last node.
    pub(super) outputs: Vec<Found>,
    /// Per named node output, in order: the attributes that name it (`_onnx_name` = its
    /// name), where every output keeps its name with nothing to record (no name has two
    /// producers and the model has no bodies); else empty.
    pub(super) names: Vec<AttrMap>,
    /// Per graph output: its type's desc (the NetOutput input).
    pub(super) out_descs: Vec<Result<TensorDesc, String>>,
}

/// The anchor of `s` once the graph's nodes are `ids`.
pub(super) fn real(s: Src, ids: &[NodeId]) -> OutAnchor {
    match s {
        Src::Node(i, j) => ids[i as usize].out(j as usize),
        Src::Anchor(a) => a,
    }
}

/// Gives the node entries of `values` their anchors.
pub(super) fn fix(values: &mut Values<'_>, ids: &[NodeId]) {
    for list in values.values_mut() {
        for e in list.iter_mut() {
            e.1 = real(Src::of(*e), ids);
        }
    }
}

/// Adds the node outputs of `gp` to `values` (the frame's graph inputs and initializers) and
/// resolves every name its nodes, `value_info` and outputs use, as `Importer::resolve` does
/// within one graph; makes what the import then only moves into place. `has_bodies`: whether
/// the model has body graphs.
pub(super) fn plan<'p>(
    gp: &'p GraphProto,
    nodes: Nodes<'p>,
    mut values: Values<'p>,
    has_bodies: bool,
) -> Plan<'p> {
    // Node positions are u32 in the plan (a file of 2 GiB at most has fewer nodes).
    assert!(u32::try_from(nodes.len()).is_ok(), "too many nodes");
    let mut shared = false;
    for (i, np) in nodes.iter().enumerate() {
        for (j, out) in np.output().iter().enumerate() {
            if !out.is_empty() {
                let e = values.entry(out).or_default();
                shared |= !e.is_empty();
                e.push((i as i64, NodeId::default().out(j)));
            }
        }
    }
    let find = |name: &str, pos: i64| -> Found {
        let Some(list) = values.get(name) else {
            return Found::None;
        };
        if let Some(&e) = list.iter().rev().find(|(p, _)| *p < pos) {
            return Found::Before(Src::of(e));
        }
        match list.iter().find(|(p, _)| *p >= pos) {
            Some(&e) => Found::After(Src::of(e)),
            None => Found::None,
        }
    };
    let inputs = nodes
        .iter()
        .enumerate()
        .flat_map(|(i, np)| np.input().iter().map(move |x| (i as i64, x)))
        .map(|(i, x)| {
            if x.is_empty() {
                Found::None
            } else {
                find(x, i)
            }
        })
        .collect();
    // Per `value_info` entry, then per graph output: the name's last producer.
    let last: Vec<Option<Src>> = gp
        .value_info
        .iter()
        .chain(&gp.output)
        .map(|v| {
            let list = values.get(v.name.as_str())?;
            list.last().map(|&e| Src::of(e))
        })
        .collect();
    let end = nodes.len() as i64;
    let outputs = gp.output.iter().map(|v| find(&v.name, end)).collect();
    let names = if shared || has_bodies {
        Vec::new()
    } else {
        let outs = nodes.iter().flat_map(|n| n.output().iter());
        outs.filter(|o| !o.is_empty())
            .map(|o| {
                let mut a = AttrMap::new();
                a.set_static(names::ONNX_NAME, o);
                a
            })
            .collect()
    };
    let typed = typed(gp, &last);
    let out_descs = gp
        .output
        .iter()
        .map(|vo| desc_from_type(vo.r#type.as_ref()))
        .collect();
    Plan {
        values,
        shared,
        inputs,
        typed,
        outputs,
        names,
        out_descs,
    }
}

/// `Plan::typed`: `value_info` types go to the producing node's output desc (the producer the
/// name means at the end of the graph); then graph output types go to producers still
/// undescribed. Names of graph inputs and initializers are skipped. Every node output starts
/// undescribed (as made), so this follows the descs without the graph.
fn typed(gp: &GraphProto, last: &[Option<Src>]) -> Typed {
    let described = |d: &TensorDesc| {
        d.dtype() != rge_ir::DataType::Undefined
            || !d.shape().is_scalar()
            || d.attrs().contains(names::ONNX_TYPE)
    };
    let mut out: HashMap<(u32, u32), TensorDesc> = HashMap::new();
    let vis = gp.value_info.iter().map(|v| (v, true));
    let all = vis.chain(gp.output.iter().map(|v| (v, false)));
    for (k, ((vi, always), l)) in all.zip(last).enumerate() {
        let Some(Src::Node(i, j)) = *l else {
            continue;
        };
        if vi.r#type.is_none() {
            continue;
        }
        let desc = desc_from_type(vi.r#type.as_ref()).map_err(|m| (k, m))?;
        match out.entry((i, j)) {
            hashbrown::hash_map::Entry::Occupied(mut e) => {
                if always || !described(e.get()) {
                    e.insert(desc);
                }
            }
            hashbrown::hash_map::Entry::Vacant(e) => {
                e.insert(desc);
            }
        }
    }
    let mut out: Vec<_> = out.into_iter().collect();
    out.sort_unstable_by_key(|e| e.0);
    Ok(out)
}
