//! Input prologues: a Concat of channels, a per-channel affine map and an optional Relu in
//! front of a pointwise FusedConvNhwc — DenseNet's Concat, BatchNormalization and Relu before
//! each 1×1 convolution, which a channels-last region turns into
//! `Relu(Add(Mul(Concat(…), s), t))` with `[C]` constants, or a CSP block's Concat before its
//! 1×1 convolution — become the convolution's own input prologue (`conv_prologue.rs`: the
//! parts as inputs 0 and 6…, S and H, `input_activation`), read in bands as the convolution
//! reads its input instead of as passes of their own.
//!
//! Only when each absorbed value has the next node as its only reader (and is not a graph
//! output), the constants are f32 with one value per input channel, the Concat joins 4-D f32
//! values along the channels, and the convolution is ungrouped, 1×1, stride 1 and unpadded
//! (where the bands pay; elsewhere the kernel would read the whole image first, which saves
//! nothing).

use rge_ir::{AttrValue, ComputeGraph, DataType, GraphPatch, NodeId, OpDesc, OutAnchor, Outlet};

use crate::conv_prologue::{FIRST_EXTRA_PART, INPUT_ACTIVATION, INPUT_ACTIVATION_PARAMS};
use crate::fuse::{const_input, has_control, producer, single_reader, FUSED_ATTR, RGE_DOMAIN};
use crate::layout::{pointwise_window, CONV_NHWC};

/// What a convolution absorbs: `[relu](concat(parts)·s + t)`, with the map or the
/// concatenation or both.
struct Chain {
    /// The input's parts: a Concat's inputs, or the one value read.
    parts: Vec<OutAnchor>,
    /// The Mul's and the Add's constants, when there is a map.
    affine: Option<(OutAnchor, OutAnchor)>,
    /// The absorbed nodes.
    nodes: Vec<NodeId>,
    relu: bool,
}

/// Whether `op` is a FusedConvNhwc that runs pointwise (1×1, stride 1, unpadded, ungrouped)
/// and has no prologue yet (its four inputs X, W, B and Z only).
fn pointwise_conv(op: &OpDesc) -> bool {
    // The type first: the dense optimizer asks this of every node of the graph.
    op.op_type() == CONV_NHWC
        && op.domain() == RGE_DOMAIN
        && pointwise_window(op)
        && op.input_count() == 4
}

/// A `[C]` f32 constant feeding input `i` of `n`, with `C = channels`.
fn channel_const(g: &ComputeGraph, n: NodeId, i: usize, channels: i64) -> Option<OutAnchor> {
    let (_, t) = const_input(g, n, i)?;
    (t.shape() == [channels as usize] && t.as_slice::<f32>().is_ok()).then(|| producer(g, n, i))?
}

/// Whether `n` is a plain ONNX op of type `ty` without control edges whose only reader is
/// input `input` of `reader`.
fn feeds_only(g: &ComputeGraph, n: NodeId, ty: &str, reader: NodeId, input: usize) -> bool {
    g.op(n)
        .is_some_and(|o| o.op_type() == ty && o.domain().is_empty())
        && !has_control(g, n)
        && single_reader(g, n, 0) == Some((reader, input))
}

/// A map `[relu](x·s + t)` before a convolution.
struct MapBefore {
    /// s and t.
    consts: (OutAnchor, OutAnchor),
    /// Relu (when there is one), Add, Mul.
    nodes: Vec<NodeId>,
    relu: bool,
    x: OutAnchor,
}

/// The map before input 0 of `c`, if there is one.
fn affine_before(g: &ComputeGraph, c: NodeId, channels: i64) -> Option<MapBefore> {
    let mut at = producer(g, c, 0)?;
    let mut nodes = Vec::new();
    let relu = feeds_only(g, at.node, "Relu", c, 0);
    let mut reader = c;
    if relu {
        nodes.push(at.node);
        reader = at.node;
        at = producer(g, at.node, 0)?;
    }
    let add = at.node;
    if !feeds_only(g, add, "Add", reader, 0) {
        return None;
    }
    let shift = channel_const(g, add, 1, channels)?;
    let mul = producer(g, add, 0)?.node;
    if !feeds_only(g, mul, "Mul", add, 0) {
        return None;
    }
    let scale = channel_const(g, mul, 1, channels)?;
    nodes.extend([add, mul]);
    Some(MapBefore {
        consts: (scale, shift),
        nodes,
        relu,
        x: producer(g, mul, 0)?,
    })
}

/// The chain before input 0 of convolution `c`, whose input has `channels` channels: a map, a
/// concatenation of the channels (of 4-D f32 values of the same image size), or both.
fn chain_before(g: &ComputeGraph, c: NodeId, channels: i64) -> Option<Chain> {
    let (affine, mut nodes, relu, x) = match affine_before(g, c, channels) {
        Some(m) => (Some(m.consts), m.nodes, m.relu, m.x),
        None => (None, Vec::new(), false, producer(g, c, 0)?),
    };
    let reader = nodes.last().copied().unwrap_or(c);
    let concat = g.op(x.node).filter(|o| {
        feeds_only(g, x.node, "Concat", reader, 0)
            && matches!(o.attrs().get("axis"), Some(AttrValue::Int(3 | -1)))
            && o.inputs().iter().all(|d| {
                d.dtype() == DataType::Float
                    && d.shape().dims().len() == 4
                    && d.shape().is_fully_known()
            })
    });
    let parts = match concat {
        Some(o) => {
            let parts: Option<Vec<OutAnchor>> = (0..o.input_count())
                .map(|i| producer(g, x.node, i))
                .collect();
            nodes.push(x.node);
            parts?
        }
        None if affine.is_some() => vec![x],
        None => return None,
    };
    Some(Chain {
        parts,
        affine,
        nodes,
        relu,
    })
}

/// The pointwise convolutions that may take a prologue ([`fold_into`] each in turn: a fold
/// replaces its convolution, which may be a part of another's concatenation).
pub(crate) fn candidates(g: &ComputeGraph) -> Vec<NodeId> {
    g.nodes_of(g.root())
        .filter(|&c| g.op(c).is_some_and(pointwise_conv) && !has_control(g, c))
        .collect()
}

/// The patch folding what feeds convolution `c` into its prologue, if anything does.
pub(crate) fn fold_into(g: &ComputeGraph, c: NodeId) -> Result<Option<GraphPatch>, String> {
    let root = g.root();
    let Some(op) = g.op(c).filter(|o| pointwise_conv(o)) else {
        return Ok(None);
    };
    let Some(x_desc) = op.input(0) else {
        return Ok(None);
    };
    let channels = match x_desc.shape().dims() {
        [_, _, _, ch] if *ch > 0 => *ch,
        _ => return Ok(None),
    };
    let Some(chain) = chain_before(g, c, channels) else {
        return Ok(None);
    };
    let desc = |a: OutAnchor| {
        g.op(a.node)
            .and_then(|o| o.output(a.index.max(0) as usize))
            .cloned()
            .unwrap_or_default()
    };
    let mut conv = op.clone();
    if let Some(d) = conv.input_mut(0) {
        *d = desc(chain.parts[0]);
    }
    let (s_desc, h_desc) = match chain.affine {
        Some((s, h)) => (desc(s), desc(h)),
        None => Default::default(),
    };
    conv.add_input("S", s_desc).map_err(|e| e.to_string())?;
    conv.add_input("H", h_desc).map_err(|e| e.to_string())?;
    let extra = chain.parts.len() - 1;
    if extra > 0 {
        conv.add_dynamic_inputs("Xs", extra)
            .map_err(|e| e.to_string())?;
        for (k, &a) in chain.parts[1..].iter().enumerate() {
            if let Some(d) = conv.input_mut(FIRST_EXTRA_PART + k) {
                *d = desc(a);
            }
        }
    }
    let attrs = conv.attrs_mut();
    attrs.set(INPUT_ACTIVATION, if chain.relu { "Relu" } else { "" });
    attrs.set(INPUT_ACTIVATION_PARAMS, AttrValue::ListFloat(Vec::new()));
    let mut replaced = match attrs.get(FUSED_ATTR) {
        Some(AttrValue::ListString(v)) => v.clone(),
        _ => vec![op.name().to_string()],
    };
    replaced.extend(chain.nodes.iter().map(|&n| g.name_of(n).to_string()));
    attrs.set(FUSED_ATTR, AttrValue::ListString(replaced));

    let mut patch = GraphPatch::in_graph(root);
    patch.remove(c);
    for &n in &chain.nodes {
        patch.remove(n);
    }
    let k = patch.add_node(conv);
    let old = |a: OutAnchor| Outlet::old(a.node, a.index.max(0) as usize);
    patch.connect(old(chain.parts[0]), k, 0);
    for i in 1..4 {
        if let Some(a) = producer(g, c, i) {
            patch.connect(old(a), k, i);
        }
    }
    if let Some((s, h)) = chain.affine {
        patch.connect(old(s), k, 4);
        patch.connect(old(h), k, 5);
    }
    for (i, &a) in chain.parts[1..].iter().enumerate() {
        patch.connect(old(a), k, FIRST_EXTRA_PART + i);
    }
    patch.shunt(c, 0, Outlet::new_node(k, 0));
    Ok(Some(patch))
}
