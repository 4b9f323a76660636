//! A layered DAG layout for the HTML graph (Sugiyama-style, top to bottom): longest-path
//! layers from the sources (nodes with more consumers than producers then sink towards their
//! consumers), dummy nodes on links that span layers, barycenter sweeps that keep
//! each partition's nodes together within a layer, then x positions pulled towards neighbours.
//! Constant nodes and their links are left out.

use std::collections::{HashMap, HashSet, VecDeque};

use super::report::ExplainReport;

pub(super) const NODE_W: f64 = 180.0;
pub(super) const NODE_H: f64 = 40.0;
const LAYER_GAP: f64 = 64.0;
const DUMMY_W: f64 = 12.0;
const GAP: f64 = 28.0;
/// Between two dummies, and (wider, clear of tiles) between a dummy and a node.
const DUMMY_GAP: f64 = 8.0;
const DUMMY_NODE_GAP: f64 = 16.0;
/// Extra room between nodes of different partitions, so their tiles do not touch.
const GROUP_GAP: f64 = 12.0;
const MARGIN: f64 = 24.0;
/// Tiles reach this far around their nodes; the top part holds the partition's name.
const TILE_PAD: f64 = 8.0;
const TILE_TOP: f64 = 20.0;
const TILE_BOTTOM: f64 = 12.0;
const SWEEPS: usize = 4;
/// Beyond this many dummy nodes long links are drawn straight (bounds work on dense graphs).
const MAX_DUMMIES: usize = 200_000;
/// A partition spanning many layers gets its name again every this many layers.
const RELABEL_LAYERS: usize = 8;

/// Where everything goes; coordinates in SVG pixels.
#[derive(Debug, Clone, Default)]
pub(super) struct Layout {
    pub width: f64,
    pub height: f64,
    /// Per report node: its layer and box top-left, `None` when not drawn.
    pub nodes: Vec<Option<Placed>>,
    pub edges: Vec<EdgePath>,
    pub tiles: Vec<Tile>,
    /// Partition names, report's first, then any only nodes name; tiles index these.
    pub partitions: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Placed {
    pub layer: usize,
    pub x: f64,
    pub y: f64,
}

/// One drawn link (links repeating an output to the same consumer are drawn once).
#[derive(Debug, Clone)]
pub(super) struct EdgePath {
    /// Index into the report's edges.
    pub edge: usize,
    pub points: Vec<(f64, f64)>,
    /// Goes against the layering (only in a cyclic report).
    pub back: bool,
    /// Where the tensor's label goes: once per producer output.
    pub label: Option<(f64, f64)>,
}

/// A partition's run of adjacent nodes in one layer.
#[derive(Debug, Clone)]
pub(super) struct Tile {
    pub partition: usize,
    pub x: f64,
    pub y: f64,
    pub w: f64,
    pub h: f64,
    pub labelled: bool,
}

struct VNode {
    /// The report node, `None` for a dummy.
    node: Option<usize>,
    layer: usize,
    group: Option<usize>,
    preds: Vec<usize>,
    succs: Vec<usize>,
    width: f64,
}

pub(super) fn layout(report: &ExplainReport) -> Layout {
    let n = report.nodes.len();
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(n);
    for (i, node) in report.nodes.iter().enumerate() {
        index.entry(node.name.as_str()).or_insert(i);
    }
    let visible: Vec<bool> = report.nodes.iter().map(|n| !n.constant).collect();

    let mut partitions: Vec<String> = Vec::new();
    let mut part_index: HashMap<String, usize> = HashMap::new();
    let names = report.partitions.iter().map(|p| &p.name);
    for name in names.chain(report.nodes.iter().filter_map(|n| n.partition.as_ref())) {
        if !part_index.contains_key(name) {
            part_index.insert(name.clone(), partitions.len());
            partitions.push(name.clone());
        }
    }
    let part_of: Vec<Option<usize>> = report
        .nodes
        .iter()
        .map(|n| {
            n.partition
                .as_ref()
                .and_then(|p| part_index.get(p).copied())
        })
        .collect();

    // The links to draw, and the node pairs they join.
    let mut drawn: Vec<(usize, usize, usize)> = Vec::new();
    let mut seen = HashSet::new();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    let mut pair_seen = HashSet::new();
    for (ei, e) in report.edges.iter().enumerate() {
        let (Some(&u), Some(&v)) = (index.get(e.from.as_str()), index.get(e.to.as_str())) else {
            continue;
        };
        if u == v || !visible[u] || !visible[v] || !seen.insert((u, v, e.from_output)) {
            continue;
        }
        drawn.push((u, v, ei));
        if pair_seen.insert((u, v)) {
            pairs.push((u, v));
        }
    }

    let order = topo_order(n, &visible, &pairs);
    let mut rank = vec![usize::MAX; n];
    for (r, &v) in order.iter().enumerate() {
        rank[v] = r;
    }
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(u, v) in &pairs {
        preds[v].push(u);
    }
    let mut layer = vec![0usize; n];
    for &v in &order {
        layer[v] = preds[v]
            .iter()
            .filter(|&&u| rank[u] < rank[v])
            .map(|&u| layer[u] + 1)
            .max()
            .unwrap_or(0);
    }

    // A node with more consumers than producers moves down to just above its first consumer:
    // shorter links in total (nodes fed only by folded constants would sit at the top).
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut ins = vec![0usize; n];
    for &(u, v) in &pairs {
        if rank[u] < rank[v] {
            succs[u].push(v);
            ins[v] += 1;
        }
    }
    for _ in 0..2 {
        for &v in order.iter().rev() {
            if ins[v] >= succs[v].len() {
                continue;
            }
            if let Some(first) = succs[v].iter().map(|&s| layer[s]).min() {
                layer[v] = layer[v].max(first.saturating_sub(1));
            }
        }
    }

    // The virtual graph: real nodes in topological order, then dummies.
    let mut vnodes: Vec<VNode> = Vec::with_capacity(order.len());
    let mut vid_of = vec![usize::MAX; n];
    for &v in &order {
        vid_of[v] = vnodes.len();
        vnodes.push(VNode {
            node: Some(v),
            layer: layer[v],
            group: part_of[v],
            preds: Vec::new(),
            succs: Vec::new(),
            width: NODE_W,
        });
    }
    let mut pairs_by_rank = pairs.clone();
    pairs_by_rank.sort_by_key(|&(u, v)| (rank[u], rank[v]));
    let mut chains: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
    let mut dummies = 0usize;
    for &(u, v) in &pairs_by_rank {
        let (a, b) = (vid_of[u], vid_of[v]);
        let mut chain = vec![a];
        if layer[v] > layer[u] {
            let span = layer[v] - layer[u];
            if span == 1 || dummies + span - 1 <= MAX_DUMMIES {
                let group = if part_of[u] == part_of[v] {
                    part_of[u]
                } else {
                    None
                };
                for l in layer[u] + 1..layer[v] {
                    chain.push(vnodes.len());
                    vnodes.push(VNode {
                        node: None,
                        layer: l,
                        group,
                        preds: Vec::new(),
                        succs: Vec::new(),
                        width: DUMMY_W,
                    });
                }
                dummies += span - 1;
                chain.push(b);
                for w in chain.windows(2) {
                    vnodes[w[0]].succs.push(w[1]);
                    vnodes[w[1]].preds.push(w[0]);
                }
            } else {
                chain.push(b);
            }
        } else {
            chain.push(b);
        }
        chains.insert((u, v), chain);
    }

    let layer_count = vnodes.iter().map(|v| v.layer + 1).max().unwrap_or(0);
    let mut layers: Vec<Vec<usize>> = vec![Vec::new(); layer_count];
    for (id, v) in vnodes.iter().enumerate() {
        layers[v.layer].push(id);
    }
    order_layers(&vnodes, &mut layers);
    let x = x_positions(&vnodes, &layers);

    let y_of = |l: usize| MARGIN + TILE_TOP + l as f64 * (NODE_H + LAYER_GAP);
    let mut out = Layout {
        width: MARGIN * 2.0 + NODE_W,
        height: MARGIN * 2.0 + NODE_H,
        nodes: vec![None; n],
        partitions,
        ..Layout::default()
    };
    for (id, v) in vnodes.iter().enumerate() {
        out.width = out.width.max(x[id] + v.width / 2.0 + MARGIN);
        if let Some(i) = v.node {
            out.nodes[i] = Some(Placed {
                layer: v.layer,
                x: x[id] - NODE_W / 2.0,
                y: y_of(v.layer),
            });
        }
    }
    if layer_count > 0 {
        out.height = y_of(layer_count - 1) + NODE_H + TILE_BOTTOM + MARGIN;
    }
    out.edges = edge_paths(report, &drawn, &chains, &vnodes, &x, &out.nodes, y_of);
    out.tiles = tiles(&vnodes, &layers, &x, y_of);
    out
}

/// Kahn's order over the visible nodes (ties in report order); nodes on cycles follow in
/// report order.
fn topo_order(n: usize, visible: &[bool], pairs: &[(usize, usize)]) -> Vec<usize> {
    let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut indeg = vec![0usize; n];
    for &(u, v) in pairs {
        succs[u].push(v);
        indeg[v] += 1;
    }
    let mut queue: VecDeque<usize> = (0..n).filter(|&v| visible[v] && indeg[v] == 0).collect();
    let mut order = Vec::with_capacity(n);
    let mut done = vec![false; n];
    while let Some(u) = queue.pop_front() {
        done[u] = true;
        order.push(u);
        for &v in &succs[u] {
            indeg[v] -= 1;
            if indeg[v] == 0 {
                queue.push_back(v);
            }
        }
    }
    order.extend((0..n).filter(|&v| visible[v] && !done[v]));
    order
}

/// Barycenter sweeps down and up; within a layer a partition's nodes stay together, the
/// groups ordered by their members' mean barycenter.
fn order_layers(vnodes: &[VNode], layers: &mut [Vec<usize>]) {
    let mut pos = vec![0usize; vnodes.len()];
    for layer in layers.iter() {
        for (p, &v) in layer.iter().enumerate() {
            pos[v] = p;
        }
    }
    let count = layers.len();
    for _ in 0..SWEEPS {
        for layer in layers.iter_mut().skip(1) {
            reorder(vnodes, layer, &mut pos, true);
        }
        for layer in layers[..count.saturating_sub(1)].iter_mut().rev() {
            reorder(vnodes, layer, &mut pos, false);
        }
    }
}

fn reorder(vnodes: &[VNode], layer: &mut [usize], pos: &mut [usize], down: bool) {
    let key = |v: usize| {
        let nbrs = if down {
            &vnodes[v].preds
        } else {
            &vnodes[v].succs
        };
        if nbrs.is_empty() {
            pos[v] as f64
        } else {
            nbrs.iter().map(|&w| pos[w] as f64).sum::<f64>() / nbrs.len() as f64
        }
    };
    let keys: HashMap<usize, f64> = layer.iter().map(|&v| (v, key(v))).collect();
    let mut group_sum: HashMap<usize, (f64, usize)> = HashMap::new();
    for &v in layer.iter() {
        if let Some(g) = vnodes[v].group {
            let e = group_sum.entry(g).or_insert((0.0, 0));
            e.0 += keys[&v];
            e.1 += 1;
        }
    }
    let sort_key = |v: usize| {
        let own = keys[&v];
        match vnodes[v].group {
            Some(g) => {
                let (s, c) = group_sum[&g];
                (s / c as f64, 0, g, own, pos[v])
            }
            None => (own, 1, v, own, pos[v]),
        }
    };
    layer.sort_by(|&a, &b| {
        let (ka, kb) = (sort_key(a), sort_key(b));
        ka.0.total_cmp(&kb.0)
            .then(ka.1.cmp(&kb.1))
            .then(ka.2.cmp(&kb.2))
            .then(ka.3.total_cmp(&kb.3))
            .then(ka.4.cmp(&kb.4))
    });
    for (p, &v) in layer.iter().enumerate() {
        pos[v] = p;
    }
}

/// The least distance between the centres of two neighbours in a layer.
fn separation(a: &VNode, b: &VNode) -> f64 {
    let both_real = a.node.is_some() && b.node.is_some();
    let gap = match (a.node.is_some(), b.node.is_some()) {
        (true, true) => GAP,
        (false, false) => DUMMY_GAP,
        _ => DUMMY_NODE_GAP,
    };
    let apart = if both_real && a.group != b.group {
        GROUP_GAP
    } else {
        0.0
    };
    (a.width + b.width) / 2.0 + gap + apart
}

/// Centre x of every virtual node: packed and centred, then a few passes that move each
/// node towards its neighbours' mean while keeping the layer's order and separations.
fn x_positions(vnodes: &[VNode], layers: &[Vec<usize>]) -> Vec<f64> {
    let mut x = vec![0.0; vnodes.len()];
    for layer in layers {
        let mut at = 0.0;
        for (i, &v) in layer.iter().enumerate() {
            if i > 0 {
                at += separation(&vnodes[layer[i - 1]], &vnodes[v]);
            }
            x[v] = at;
        }
        for &v in layer {
            x[v] -= at / 2.0;
        }
    }
    let count = layers.len();
    for _ in 0..SWEEPS {
        for layer in layers[..count.saturating_sub(1)].iter().rev() {
            settle(vnodes, layer, &mut x, false);
        }
        for layer in layers.iter().skip(1) {
            settle(vnodes, layer, &mut x, true);
        }
    }
    let left = vnodes
        .iter()
        .enumerate()
        .map(|(i, v)| x[i] - v.width / 2.0)
        .fold(f64::INFINITY, f64::min);
    if left.is_finite() {
        for xi in &mut x {
            *xi += MARGIN - left;
        }
    }
    x
}

/// Moves a layer towards the mean x of each node's neighbours above (`down`) or below: the
/// average of a left-to-right and a right-to-left packing, which both keep the separations.
fn settle(vnodes: &[VNode], layer: &[usize], x: &mut [f64], down: bool) {
    if layer.is_empty() {
        return;
    }
    let want: Vec<f64> = layer
        .iter()
        .map(|&v| {
            let nbrs = if down {
                &vnodes[v].preds
            } else {
                &vnodes[v].succs
            };
            if nbrs.is_empty() {
                x[v]
            } else {
                nbrs.iter().map(|&w| x[w]).sum::<f64>() / nbrs.len() as f64
            }
        })
        .collect();
    let k = layer.len();
    let sep: Vec<f64> = (1..k)
        .map(|i| separation(&vnodes[layer[i - 1]], &vnodes[layer[i]]))
        .collect();
    let mut left = want.clone();
    for i in 1..k {
        left[i] = left[i].max(left[i - 1] + sep[i - 1]);
    }
    let mut right = want;
    for i in (0..k - 1).rev() {
        right[i] = right[i].min(right[i + 1] - sep[i]);
    }
    for (i, &v) in layer.iter().enumerate() {
        x[v] = (left[i] + right[i]) / 2.0;
    }
}

/// Spreads `count` ports over a node's width; the offset of port `i` from the centre.
fn port_offset(i: usize, count: usize) -> f64 {
    if count <= 1 {
        return 0.0;
    }
    let step = ((NODE_W - 24.0) / count as f64).min(14.0);
    (i as f64 - (count - 1) as f64 / 2.0) * step
}

fn edge_paths(
    report: &ExplainReport,
    drawn: &[(usize, usize, usize)],
    chains: &HashMap<(usize, usize), Vec<usize>>,
    vnodes: &[VNode],
    x: &[f64],
    placed: &[Option<Placed>],
    y_of: impl Fn(usize) -> f64,
) -> Vec<EdgePath> {
    // Input ports by (to_input, edge); output ports by output index.
    let mut ins: HashMap<usize, Vec<(usize, usize)>> = HashMap::new();
    let mut outs: HashMap<usize, Vec<usize>> = HashMap::new();
    for &(u, v, ei) in drawn {
        ins.entry(v)
            .or_default()
            .push((report.edges[ei].to_input, ei));
        outs.entry(u)
            .or_default()
            .push(report.edges[ei].from_output);
    }
    for list in ins.values_mut() {
        list.sort_unstable();
    }
    for list in outs.values_mut() {
        list.sort_unstable();
        list.dedup();
    }
    let mut labelled = HashSet::new();
    let mut paths = Vec::with_capacity(drawn.len());
    for &(u, v, ei) in drawn {
        let (Some(pu), Some(pv), Some(chain)) = (placed[u], placed[v], chains.get(&(u, v))) else {
            continue;
        };
        let e = &report.edges[ei];
        let out_list = &outs[&u];
        let out_rank = out_list.binary_search(&e.from_output).unwrap_or(0);
        let in_list = &ins[&v];
        let in_rank = in_list.binary_search(&(e.to_input, ei)).unwrap_or(0);
        let start = (
            pu.x + NODE_W / 2.0 + port_offset(out_rank, out_list.len()),
            pu.y + NODE_H,
        );
        let end = (
            pv.x + NODE_W / 2.0 + port_offset(in_rank, in_list.len()),
            pv.y,
        );
        let mut points = vec![start];
        for &d in &chain[1..chain.len() - 1] {
            let y = y_of(vnodes[d].layer);
            points.push((x[d], y));
            points.push((x[d], y + NODE_H));
        }
        points.push(end);
        let label = labelled
            .insert((u, e.from_output))
            .then_some((start.0 + 5.0, start.1 + 13.0 + 11.0 * out_rank as f64));
        paths.push(EdgePath {
            edge: ei,
            points,
            back: pv.layer <= pu.layer,
            label,
        });
    }
    paths
}

/// One tile per run of same-partition real nodes in a layer (dummies between them ignored); a
/// run right below one of the same partition and width extends that tile downwards.
fn tiles(
    vnodes: &[VNode],
    layers: &[Vec<usize>],
    x: &[f64],
    y_of: impl Fn(usize) -> f64,
) -> Vec<Tile> {
    let mut tiles: Vec<Tile> = Vec::new();
    // Per partition: its last tile and the layer that tile ends in.
    let mut last: HashMap<usize, (usize, usize)> = HashMap::new();
    let mut last_label: HashMap<usize, usize> = HashMap::new();
    for (l, layer) in layers.iter().enumerate() {
        let real: Vec<usize> = layer
            .iter()
            .copied()
            .filter(|&v| vnodes[v].node.is_some())
            .collect();
        let mut i = 0;
        while i < real.len() {
            let Some(g) = vnodes[real[i]].group else {
                i += 1;
                continue;
            };
            let mut j = i;
            while j + 1 < real.len() && vnodes[real[j + 1]].group == Some(g) {
                j += 1;
            }
            let x0 = x[real[i]] - NODE_W / 2.0 - TILE_PAD;
            let w = x[real[j]] + NODE_W / 2.0 + TILE_PAD - x0;
            let bottom = y_of(l) + NODE_H + TILE_BOTTOM;
            i = j + 1;
            let mut follows = false;
            if let Some(&(t, end)) = last.get(&g) {
                let tile = &mut tiles[t];
                follows = end + 1 == l;
                if follows && (tile.x - x0).abs() < 0.5 && (tile.w - w).abs() < 0.5 {
                    tile.h = bottom - tile.y;
                    last.insert(g, (t, l));
                    continue;
                }
            }
            // A tile right below one of its partition reads as its continuation.
            let labelled = !follows
                || last_label
                    .get(&g)
                    .is_none_or(|&at| l >= at + RELABEL_LAYERS);
            if labelled {
                last_label.insert(g, l);
            }
            let y = y_of(l) - TILE_TOP;
            last.insert(g, (tiles.len(), l));
            tiles.push(Tile {
                partition: g,
                x: x0,
                y,
                w,
                h: bottom - y,
                labelled,
            });
        }
    }
    tiles
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::report::{EdgeExplain, NodeExplain};

    pub(crate) fn report(nodes: &[(&str, Option<&str>)], edges: &[(&str, &str)]) -> ExplainReport {
        ExplainReport {
            nodes: nodes
                .iter()
                .map(|(name, part)| NodeExplain {
                    name: name.to_string(),
                    op_type: "Add".into(),
                    engine: "cpu".into(),
                    partition: part.map(str::to_string),
                    constant: name.starts_with('w'),
                    ..NodeExplain::default()
                })
                .collect(),
            edges: edges
                .iter()
                .map(|(a, b)| EdgeExplain {
                    from: a.to_string(),
                    to: b.to_string(),
                    shape: "2x2".into(),
                    dtype: "FLOAT".into(),
                    ..EdgeExplain::default()
                })
                .collect(),
            ..ExplainReport::default()
        }
    }

    #[test]
    fn producers_lie_above_consumers() {
        // Listed out of order on purpose.
        let r = report(
            &[
                ("c", None),
                ("b", None),
                ("a", None),
                ("d", None),
                ("w", None),
            ],
            &[
                ("a", "b"),
                ("b", "c"),
                ("a", "d"),
                ("d", "c"),
                ("a", "c"),
                ("w", "c"),
            ],
        );
        let lay = layout(&r);
        let at = |name: &str| {
            let i = r.nodes.iter().position(|n| n.name == name).unwrap();
            lay.nodes[i].unwrap()
        };
        assert_eq!(at("a").layer, 0);
        assert_eq!(at("b").layer, 1);
        assert_eq!(at("d").layer, 1);
        assert_eq!(at("c").layer, 2);
        assert!(at("a").y < at("b").y && at("b").y < at("c").y);
        assert!(lay.nodes[4].is_none(), "constants are not placed");
        // a->c spans two layers: it bends through a dummy, and no edge comes from w.
        assert_eq!(lay.edges.len(), 5);
        let long = lay.edges.iter().find(|e| e.edge == 4).unwrap();
        assert_eq!(long.points.len(), 4);
        assert!(lay.edges.iter().all(|e| !e.back));
        // Nodes of one layer do not overlap.
        assert!((at("b").x - at("d").x).abs() >= NODE_W + GAP - 1e-9);
        assert!(lay.width >= 2.0 * NODE_W && lay.height > 3.0 * NODE_H);
    }

    #[test]
    fn crossings_are_removed_and_partitions_kept_together() {
        // Two chains whose second layer is listed crossed: x1->y2, x2->y1.
        let r = report(
            &[
                ("x1", Some("p")),
                ("x2", Some("q")),
                ("y2", Some("q")),
                ("y1", Some("p")),
                ("z", Some("p")),
            ],
            &[("x1", "y1"), ("x2", "y2"), ("y1", "z")],
        );
        let lay = layout(&r);
        let x = |i: usize| lay.nodes[i].unwrap().x;
        assert_eq!(x(0) < x(1), x(3) < x(2), "no crossing");
        assert_eq!(lay.partitions, ["p", "q"]);
        // p: x1, y1, z stacked in three layers, q: x2, y2 in two; one labelled tile each.
        assert_eq!(lay.tiles.len(), 2, "{:?}", lay.tiles);
        assert!(lay.tiles.iter().all(|t| t.labelled));
        let p = lay.tiles.iter().find(|t| t.partition == 0).unwrap();
        assert!((p.h - (3.0 * NODE_H + 2.0 * LAYER_GAP + TILE_TOP + TILE_BOTTOM)).abs() < 1e-6);
        // Straight chain: z lies right below y1.
        assert!((x(4) - x(3)).abs() < 1e-6);
    }

    #[test]
    fn cycles_and_unknown_names_do_not_break_it() {
        let r = report(
            &[("a", None), ("b", None), ("c", None)],
            &[
                ("a", "b"),
                ("b", "c"),
                ("c", "b"),
                ("c", "nowhere"),
                ("a", "a"),
            ],
        );
        let lay = layout(&r);
        assert!(lay.nodes.iter().all(Option::is_some));
        assert_eq!(lay.edges.len(), 3);
        assert_eq!(lay.edges.iter().filter(|e| e.back).count(), 1);
        let empty = layout(&ExplainReport::default());
        assert!(empty.nodes.is_empty() && empty.width > 0.0);
    }
}
