//! `rge explain --html FILE`: one self-contained page (no scripts, no external resources) with
//! the partitioned graph as inline SVG, the engine legend, the transfers and a node table.

use std::collections::HashMap;
use std::fmt::Write;

use super::layout::{layout, Layout, NODE_H, NODE_W};
use super::report::{flops_label, ExplainReport, NodeExplain};

/// Engine colours, by the engine's place in [`ExplainReport::engine_summary`] (repeating).
pub const PALETTE: [&str; 12] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#2f4b7c", "#a0cbe8",
];

/// Node names cut to fit a box; the full name is in the tooltip and the table.
const NAME_CHARS: usize = 24;
const OP_CHARS: usize = 30;

const STYLE: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 8px}
.stats{color:#555;margin:0 0 8px}
.legend{list-style:none;padding:0;margin:0;display:flex;flex-wrap:wrap;gap:8px 20px}
.legend li{display:flex;align-items:center;gap:6px}
.swatch{display:inline-block;width:14px;height:14px;border-radius:3px;border:1px solid #0004;vertical-align:middle}
.graph-wrap{overflow:auto;border:1px solid #ddd;border-radius:6px;background:#fcfcfc;max-height:85vh}
svg text{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif}
.node text.name{font-size:12px;font-weight:600}.node text.op{font-size:10px}
.edge-label{font-size:10px;fill:#444;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
.partition text{font-size:10px;fill:#555}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;white-space:nowrap}td.nw{white-space:nowrap}
tr:target{background:#fff6d5}
";

/// The page: header, legend, graph, transfers, then one table row per node.
pub fn render_html(report: &ExplainReport) -> String {
    let engines = report.engine_summary();
    let colors: HashMap<&str, &str> = engines
        .iter()
        .enumerate()
        .map(|(i, e)| (e.name.as_str(), PALETTE[i % PALETTE.len()]))
        .collect();
    let color = |engine: &str| colors.get(engine).copied().unwrap_or("#999999");
    let lay = layout(report);
    let constants = report.nodes.iter().filter(|n| n.constant).count();

    let mut out = String::with_capacity(4096 + report.nodes.len() * 1200);
    let model = esc(&report.model);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>rge explain: {model}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n\
         <h1>rge explain: {model}</h1>\n"
    );
    let _ = writeln!(
        out,
        "<p class=\"stats\">{} nodes ({} constants folded away in the graph), {} edges, \
         {} partitions, {} transfers, {} FLOPs</p>",
        report.nodes.len(),
        constants,
        report.edges.len(),
        lay.partitions.len(),
        report.transfers.len(),
        esc(&flops_label(report.total_flops()))
    );

    out.push_str("<h2>Engines</h2>\n<ul class=\"legend\">\n");
    for e in &engines {
        let _ = writeln!(
            out,
            "<li class=\"legend-item\" data-engine=\"{name}\"><span class=\"swatch\" \
             style=\"background:{c}\"></span><b>{name}</b> cost {cost}{space}: {nodes} \
             node{s}, {share:.1}% of FLOPs</li>",
            name = esc(&e.name),
            c = color(&e.name),
            cost = e.cost,
            space = if e.memory_space.is_empty() {
                String::new()
            } else {
                format!(", {}", esc(&e.memory_space))
            },
            nodes = e.nodes,
            s = if e.nodes == 1 { "" } else { "s" },
            share = e.flops_share * 100.0,
        );
    }
    out.push_str("</ul>\n<h2>Graph</h2>\n<div class=\"graph-wrap\">\n");
    svg(&mut out, report, &lay, &color);
    out.push_str("</div>\n");
    transfers(&mut out, report);
    node_table(&mut out, report, &color);
    out.push_str("</body>\n</html>\n");
    out
}

fn svg<'a>(
    out: &mut String,
    report: &ExplainReport,
    lay: &Layout,
    color: &impl Fn(&str) -> &'a str,
) {
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"graph\" width=\"{w:.0}\" \
         height=\"{h:.0}\" viewBox=\"0 0 {w:.0} {h:.0}\" role=\"img\" \
         aria-label=\"partitioned graph\">",
        w = lay.width,
        h = lay.height
    );
    out.push_str(
        "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" \
         markerWidth=\"7\" markerHeight=\"7\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" \
         fill=\"#666\"/></marker></defs>\n",
    );

    // Partition tiles under everything, coloured by the partition's engine.
    let part_engine: HashMap<&str, &str> = report
        .partitions
        .iter()
        .map(|p| (p.name.as_str(), p.engine.as_str()))
        .chain(
            report
                .nodes
                .iter()
                .filter_map(|n| n.partition.as_deref().map(|p| (p, n.engine.as_str()))),
        )
        .rev()
        .collect();
    out.push_str("<g class=\"partitions\">\n");
    for t in &lay.tiles {
        let name = &lay.partitions[t.partition];
        let c = color(part_engine.get(name.as_str()).copied().unwrap_or(""));
        let _ = write!(
            out,
            "<g class=\"partition\" data-partition=\"{n}\"><title>partition {n}</title>\
             <rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" rx=\"8\" \
             fill=\"{c}\" fill-opacity=\"0.12\" stroke=\"{c}\" stroke-opacity=\"0.7\" \
             stroke-dasharray=\"5 3\"/>",
            n = esc(name),
            x = t.x,
            y = t.y,
            w = t.w,
            h = t.h
        );
        if t.labelled {
            let _ = write!(
                out,
                "<text x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                t.x + 6.0,
                t.y + 13.0,
                esc(name)
            );
        }
        out.push_str("</g>\n");
    }
    out.push_str("</g>\n<g class=\"edges\" fill=\"none\">\n");
    for p in &lay.edges {
        let e = &report.edges[p.edge];
        let (stroke, dash) = if p.back {
            ("#c0392b", " stroke-dasharray=\"4 3\"")
        } else {
            ("#777", "")
        };
        let _ = write!(
            out,
            "<g class=\"edge\"><title>{} → {}</title><path d=\"{}\" stroke=\"{stroke}\" \
             stroke-width=\"1.3\"{dash} marker-end=\"url(#arrow)\"/>",
            esc(&format!("{}:{}", e.from, e.from_output)),
            esc(&format!(
                "{}:{} {}",
                e.to,
                e.to_input,
                tensor_label(&e.shape, &e.dtype)
            )),
            path_d(&p.points)
        );
        if let Some((x, y)) = p.label {
            let _ = write!(
                out,
                "<text class=\"edge-label\" x=\"{x:.1}\" y=\"{y:.1}\">{}</text>",
                esc(&tensor_label(&e.shape, &e.dtype))
            );
        }
        out.push_str("</g>\n");
    }
    out.push_str("</g>\n<g class=\"nodes\">\n");
    let fed = constant_feeds(report);
    for (i, (n, placed)) in report.nodes.iter().zip(&lay.nodes).enumerate() {
        let Some(p) = placed else { continue };
        let fill = color(&n.engine);
        let ink = ink_for(fill);
        let dash = if n.fused_into.is_some() {
            " stroke-dasharray=\"4 2\""
        } else {
            ""
        };
        let mut op_line = format!("{} · {}", n.op_type, n.engine);
        if let Some(s) = n.stream {
            let _ = write!(op_line, " · s{s}");
        }
        let _ = writeln!(
            out,
            "<a href=\"#node-{i}\"><g class=\"node\" data-engine=\"{engine}\" \
             data-name=\"{name}\"><title>{title}</title><rect x=\"{x:.1}\" y=\"{y:.1}\" \
             width=\"{NODE_W}\" height=\"{NODE_H}\" rx=\"6\" fill=\"{fill}\" stroke=\"#333\" \
             stroke-width=\"1\"{dash}/>\
             <text class=\"name\" x=\"{cx:.1}\" y=\"{ty:.1}\" text-anchor=\"middle\" \
             fill=\"{ink}\">{short}</text>\
             <text class=\"op\" x=\"{cx:.1}\" y=\"{oy:.1}\" text-anchor=\"middle\" \
             fill=\"{ink}\">{op}</text></g></a>",
            engine = esc(&n.engine),
            name = esc(&n.name),
            title = esc(&node_title(n, fed.get(i).map_or(&[][..], Vec::as_slice))),
            x = p.x,
            y = p.y,
            cx = p.x + NODE_W / 2.0,
            ty = p.y + 17.0,
            oy = p.y + 32.0,
            short = esc(&truncate(&n.name, NAME_CHARS)),
            op = esc(&truncate(&op_line, OP_CHARS)),
        );
    }
    out.push_str("</g>\n</svg>\n");
}

/// Per node index, the constants that feed it (they are not drawn).
fn constant_feeds(report: &ExplainReport) -> Vec<Vec<String>> {
    let index: HashMap<&str, usize> = report
        .nodes
        .iter()
        .enumerate()
        .rev()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut fed = vec![Vec::new(); report.nodes.len()];
    for e in &report.edges {
        let (Some(&u), Some(&v)) = (index.get(e.from.as_str()), index.get(e.to.as_str())) else {
            continue;
        };
        if report.nodes[u].constant && !fed[v].contains(&e.from) {
            fed[v].push(e.from.clone());
        }
    }
    fed
}

fn node_title(n: &NodeExplain, constants: &[String]) -> String {
    let mut lines = vec![n.name.clone(), format!("{} on {}", n.op_type, n.engine)];
    if let Some(p) = &n.partition {
        lines.push(format!("partition {p}"));
    }
    if let Some(s) = n.stream {
        lines.push(format!("stream {s}"));
    }
    if let Some(k) = &n.kernel {
        lines.push(format!("kernel {k}"));
    }
    if !n.memory_space.is_empty() {
        lines.push(format!("memory {}", n.memory_space));
    }
    if n.flops > 0 {
        lines.push(format!("{} FLOPs", flops_label(n.flops)));
    }
    if !constants.is_empty() {
        lines.push(format!("constants: {}", constants.join(", ")));
    }
    if let Some(f) = &n.fused_into {
        lines.push(format!("fused into {f}"));
    }
    for c in n.candidates_by_cost() {
        lines.push(c.line());
    }
    lines.extend(n.notes.iter().cloned());
    lines.join("\n")
}

fn transfers(out: &mut String, report: &ExplainReport) {
    out.push_str("<h2>Transfers</h2>\n");
    if report.transfers.is_empty() {
        out.push_str("<p class=\"transfers\">none</p>\n");
        return;
    }
    out.push_str(
        "<table class=\"transfers\">\n<tr><th>name</th><th>tensor</th><th>from</th>\
         <th>to</th><th>between</th></tr>\n",
    );
    for t in &report.transfers {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} → {}</td></tr>",
            esc(&t.name),
            esc(&t.tensor),
            esc(&t.from_space),
            esc(&t.to_space),
            esc(&t.from_node),
            esc(&t.to_node)
        );
    }
    out.push_str("</table>\n");
}

fn node_table<'a>(out: &mut String, report: &ExplainReport, color: &impl Fn(&str) -> &'a str) {
    out.push_str(
        "<h2>Nodes</h2>\n<table class=\"nodes\">\n<tr><th>name</th><th>op</th><th>engine</th>\
         <th>partition</th><th>stream</th><th>kernel</th><th>memory</th><th>FLOPs</th>\
         <th>engines asked</th><th>notes</th></tr>\n",
    );
    for (i, n) in report.nodes.iter().enumerate() {
        let asked: Vec<String> = n
            .candidates_by_cost()
            .iter()
            .map(|c| esc(&c.line()))
            .collect();
        let mut notes: Vec<String> = Vec::new();
        if n.constant {
            notes.push("constant".into());
        }
        if let Some(f) = &n.fused_into {
            notes.push(format!("fused into {}", esc(f)));
        }
        notes.extend(n.notes.iter().map(|s| esc(s)));
        let _ = writeln!(
            out,
            "<tr id=\"node-{i}\"><td>{}</td><td>{}</td><td class=\"nw\"><span class=\"swatch\" \
             style=\"background:{}\"></span> {}</td><td>{}</td><td class=\"num\">{}</td>\
             <td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            esc(&n.name),
            esc(&n.op_type),
            color(&n.engine),
            esc(&n.engine),
            esc(n.partition.as_deref().unwrap_or("")),
            n.stream.map_or(String::new(), |s| s.to_string()),
            esc(n.kernel.as_deref().unwrap_or("")),
            esc(&n.memory_space),
            if n.flops > 0 {
                esc(&flops_label(n.flops))
            } else {
                String::new()
            },
            asked.join("<br>"),
            notes.join("<br>")
        );
    }
    out.push_str("</table>\n");
}

/// SVG path data: curves between points one above the other, lines otherwise.
fn path_d(points: &[(f64, f64)]) -> String {
    let mut d = String::new();
    let Some(&(x0, y0)) = points.first() else {
        return d;
    };
    let _ = write!(d, "M{x0:.1},{y0:.1}");
    for w in points.windows(2) {
        let ((ax, ay), (bx, by)) = (w[0], w[1]);
        if by > ay + 1.0 && (ax - bx).abs() > 0.5 {
            let my = (ay + by) / 2.0;
            let _ = write!(d, " C{ax:.1},{my:.1} {bx:.1},{my:.1} {bx:.1},{by:.1}");
        } else {
            let _ = write!(d, " L{bx:.1},{by:.1}");
        }
    }
    d
}

/// `1x3x224x224 FLOAT` (a GE `DT_` prefix dropped for room).
fn tensor_label(shape: &str, dtype: &str) -> String {
    let dtype = dtype.strip_prefix("DT_").unwrap_or(dtype);
    match (shape.is_empty(), dtype.is_empty()) {
        (true, _) => dtype.to_string(),
        (false, true) => shape.to_string(),
        (false, false) => format!("{shape} {dtype}"),
    }
}

fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max - 1).collect();
    t.push('…');
    t
}

/// Dark text on light fills, white on dark ones.
fn ink_for(fill: &str) -> &'static str {
    let hex = fill.trim_start_matches('#');
    let channel = |i: usize| {
        hex.get(i..i + 2)
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .map_or(0.5, |v| v as f64 / 255.0)
    };
    let luma = 0.299 * channel(0) + 0.587 * channel(2) + 0.114 * channel(4);
    if luma > 0.6 {
        "#1a1a1a"
    } else {
        "#ffffff"
    }
}

/// Text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::explain::report::{
        Candidate, EdgeExplain, EngineSummary, PartitionExplain, TransferExplain,
    };

    fn node(name: &str, op: &str, engine: &str, part: Option<&str>) -> NodeExplain {
        NodeExplain {
            name: name.into(),
            op_type: op.into(),
            engine: engine.into(),
            partition: part.map(str::to_string),
            constant: op == "Const",
            flops: if op == "Const" { 0 } else { 100 },
            ..NodeExplain::default()
        }
    }

    fn edge(from: &str, to: &str, to_input: usize) -> EdgeExplain {
        EdgeExplain {
            from: from.into(),
            to: to.into(),
            to_input,
            dtype: "DT_FLOAT".into(),
            shape: "1x8".into(),
            ..EdgeExplain::default()
        }
    }

    fn report() -> ExplainReport {
        let nasty = "x<y>&\"z'";
        ExplainReport {
            model: "m<1>.onnx".into(),
            nodes: vec![
                node("in", "Data", "local", None),
                node("w", "Const", "local", None),
                node(nasty, "MatMul", "dense", Some("p1")),
                NodeExplain {
                    candidates: vec![Candidate {
                        engine: "dense".into(),
                        cost: 1,
                        reason: "dtype <int8> & more".into(),
                        ..Candidate::default()
                    }],
                    fused_into: Some("fuse&co".into()),
                    ..node("relu", "Relu", "cpu", Some("p2"))
                },
            ],
            edges: vec![
                edge("in", nasty, 0),
                edge("w", nasty, 1),
                edge(nasty, "relu", 0),
            ],
            partitions: vec![
                PartitionExplain {
                    name: "p1".into(),
                    engine: "dense".into(),
                    stream: Some(0),
                    nodes: vec![nasty.into()],
                },
                PartitionExplain {
                    name: "p2".into(),
                    engine: "cpu".into(),
                    stream: Some(1),
                    nodes: vec!["relu".into()],
                },
            ],
            engines: vec![EngineSummary {
                name: "dense".into(),
                cost: 1,
                ..EngineSummary::default()
            }],
            transfers: vec![TransferExplain {
                name: "copy<0>".into(),
                from_space: "HBM".into(),
                to_space: "DDR".into(),
                tensor: "t".into(),
                from_node: nasty.into(),
                to_node: "relu".into(),
            }],
            passes: Vec::new(),
        }
    }

    fn svg_part(page: &str) -> &str {
        let a = page.find("<svg").unwrap();
        let b = page.find("</svg>").unwrap();
        &page[a..b]
    }

    #[test]
    fn text_is_escaped() {
        let page = render_html(&report());
        assert!(!page.contains("x<y>"), "raw name leaked");
        assert!(!page.contains("m<1>") && !page.contains("copy<0>"));
        assert!(!page.contains("<int8>") && !page.contains("fuse&co"));
        assert!(page.contains("x&lt;y&gt;&amp;&quot;z&#39;"));
        assert!(page.contains("dtype &lt;int8&gt; &amp; more"));
        assert!(page.contains("<title>rge explain: m&lt;1&gt;.onnx</title>"));
        assert!(!page.contains("<script"), "no scripts");
        // Self-contained: the SVG namespace is the only address.
        assert_eq!(page.matches("http").count(), 1);
        assert!(!page.contains("<link") && !page.contains("src="));
    }

    #[test]
    fn constants_are_folded_away() {
        let page = render_html(&report());
        let svg = svg_part(&page);
        assert_eq!(svg.matches("<g class=\"node\"").count(), 3);
        assert!(!svg.contains("data-name=\"w\""));
        assert_eq!(
            svg.matches("<g class=\"edge\"").count(),
            2,
            "w's edge is not drawn"
        );
        // The consumer says which constants feed it; the table still lists w.
        assert!(svg.contains("constants: w"));
        assert!(page.contains("<tr id=\"node-1\"><td>w</td>"));
        assert!(
            svg.contains("1x8 FLOAT"),
            "edge labels carry shape and dtype"
        );
    }

    #[test]
    fn legend_partitions_and_transfers() {
        let page = render_html(&report());
        assert!(page.contains("<ul class=\"legend\">"));
        // dense first (listed), then engines the nodes add.
        let dense = page.find("data-engine=\"dense\"><span").unwrap();
        let local = page.find("data-engine=\"local\"><span").unwrap();
        assert!(dense < local);
        assert!(page.contains(&format!("background:{}", PALETTE[0])));
        assert!(page.contains("<b>dense</b> cost 1: 1 node, 33.3% of FLOPs"));
        assert!(page.contains("<b>local</b> cost 0: 2 nodes, 33.3% of FLOPs"));
        let svg = svg_part(&page);
        assert_eq!(svg.matches("<g class=\"partition\"").count(), 2);
        assert!(svg.contains(">p1</text>") && svg.contains(">p2</text>"));
        assert!(page.contains("<td>copy&lt;0&gt;</td>"));
        assert!(
            svg.contains("stroke-dasharray=\"4 2\""),
            "fused nodes are dashed"
        );
    }

    #[test]
    fn a_thousand_nodes_render() {
        // A chain with skips, on three engines, in five partitions.
        let engines = ["dense", "vector", "cpu"];
        let mut r = ExplainReport::default();
        for i in 0..1000 {
            let e = engines[(i / 200) % 3];
            let p = format!("part{}", i / 200);
            r.nodes.push(node(&format!("n{i}"), "Add", e, Some(&p)));
            if i > 0 {
                r.edges
                    .push(edge(&format!("n{}", i - 1), &format!("n{i}"), 0));
            }
            if i >= 7 && i % 7 == 0 {
                r.edges
                    .push(edge(&format!("n{}", i - 7), &format!("n{i}"), 1));
            }
        }
        let page = render_html(&r);
        let svg = svg_part(&page);
        assert_eq!(svg.matches("<g class=\"node\"").count(), 1000);
        assert!(page.len() < 3_000_000, "{} bytes", page.len());
    }

    #[test]
    fn helpers() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
        assert_eq!(tensor_label("2x3", "DT_FLOAT16"), "2x3 FLOAT16");
        assert_eq!(tensor_label("", "FLOAT"), "FLOAT");
        assert_eq!(ink_for("#edc948"), "#1a1a1a");
        assert_eq!(ink_for("#4e79a7"), "#ffffff");
        assert_eq!(path_d(&[(0.0, 0.0), (0.0, 10.0)]), "M0.0,0.0 L0.0,10.0");
        assert!(path_d(&[(0.0, 0.0), (5.0, 10.0)]).contains(" C0.0,5.0 5.0,5.0 5.0,10.0"));
    }
}
