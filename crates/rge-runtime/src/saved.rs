//! Saved compiled models (the seed's offline model): the compiled graph — engines and stream
//! ids on its ops, partitions recorded by placement, constants inline — in GE's ModelDef
//! container, with GE's model attributes `memory_size` (the planned arena), `stream_num`,
//! `event_num` and `weight_size`, plus `_rge_compiled`. Loading lowers the graph as it is (no
//! compile pipeline: no inference, placement or partitioning) and uses the saved memory plan's
//! buffer offsets (`_rge_memory_offsets`, checked against the lowered program) — so a model
//! saved by one rge loads with the same plan under a later planner; models saved without them
//! are planned again and must come out at the saved `memory_size`.

use std::path::Path;
use std::sync::Arc;

use rge_formats::ge::{GeModel, GeModelRef, WriteOptions, DEFAULT_KEEP_BYTES};
use rge_ir::AttrValue;

use crate::error::{RuntimeError, RuntimeResult};
use crate::model::Model;
use crate::session::Session;

/// The model attribute marking a compiled model, with the format version.
pub const COMPILED_ATTR: &str = "_rge_compiled";
const FORMAT: i64 = 1;
/// The buffer offsets of the memory plan (optional: models saved without it are planned again).
const OFFSETS_ATTR: &str = "_rge_memory_offsets";

fn weight_bytes(m: &Model) -> i64 {
    m.program()
        .consts
        .iter()
        .map(|t| t.dtype().bytes_for(t.len()) as i64)
        .sum()
}

/// Writes `model` to `path` (GE ModelDef binary).
pub fn save_model(model: &Model, path: &Path) -> RuntimeResult<()> {
    let recorded = kernels_recorded(model.graph(), model.program());
    save_keeping(model, path, None, recorded)
}

/// [`save_model`] for a model the caller is done running (what `rge compile` does). Its lowered
/// steps (the kernels and their state) are dropped before writing (the model can be saved
/// again, not run), and the writer keeps
/// encoded ops in memory up to the headroom under the process's peak so far (never less
/// than the default budget), so that saving encodes each op once when that fits without
/// raising the peak: a million-node graph's 550 MB file was encoded one and a half times
/// over with the default 64 MiB.
pub fn save_model_into(model: &mut Model, path: &Path) -> RuntimeResult<()> {
    // Without the steps, the kernels recorded on the nodes are what is written: only drop
    // them when the nodes record the same.
    let recorded = kernels_recorded(model.graph(), model.program());
    if recorded {
        if let Some(p) = Arc::get_mut(&mut model.program) {
            p.steps = Vec::new();
        }
    }
    let headroom = rge_compiler::stages::process_memory()
        .map(|(rss, peak)| usize::try_from(peak.saturating_sub(rss)).unwrap_or(usize::MAX));
    let keep = headroom.map(|h| h.saturating_sub(KEEP_MARGIN).max(DEFAULT_KEEP_BYTES));
    save_keeping(model, path, keep, recorded)
}

/// What [`save_model_into`] leaves of the headroom: the write buffer, one window of ops
/// encoded again, and allocator slack.
const KEEP_MARGIN: usize = 32 << 20;

/// Writes `model`, keeping up to `keep_bytes` of encoded ops in memory (`None`: the default);
/// `recorded`: its nodes record the kernels its steps run ([`kernels_recorded`]).
fn save_keeping(
    model: &Model,
    path: &Path,
    keep_bytes: Option<usize>,
    recorded: bool,
) -> RuntimeResult<()> {
    if crate::release::weights_released(model.graph()) {
        return Err(RuntimeError::file(
            path.display(),
            "the model was built for running: the weights its kernels packed were released; \
             build it with keep_compiled_state (what `rge compile` does) to save it",
        ));
    }
    // Compiles record each node's kernel; models compiled before that get them from the
    // program, on a copy. Otherwise the graph is written as it is, op by op, never copied.
    let copy;
    let graph = if recorded {
        model.graph()
    } else {
        let mut g = model.graph().clone();
        record_kernels(&mut g, model.program());
        copy = g;
        &copy
    };
    let mut a = rge_ir::AttrMap::new();
    a.set(COMPILED_ATTR, FORMAT);
    a.set("memory_size", model.plan().arena_bytes as i64);
    a.set(
        OFFSETS_ATTR,
        AttrValue::ListInt(model.plan().offsets.iter().map(|&o| o as i64).collect()),
    );
    a.set("stream_num", i64::from(model.stream_count));
    a.set("event_num", model.event_count as i64);
    a.set("weight_size", weight_bytes(model));
    a.set("target_type", "rge");
    let ge = GeModelRef {
        name: model.graph().name(),
        version: 0,
        custom_version: "",
        attrs: &a,
        graph,
    };
    let opts = WriteOptions {
        keep_bytes,
        ..WriteOptions::default()
    };
    ge.write_binary(path, &opts)
        .map_err(|e| RuntimeError::file(path.display(), e))
}

/// The kernel of each step, by node name.
fn kernels_by_node(program: &crate::program::Program) -> std::collections::HashMap<&str, &str> {
    program
        .steps
        .iter()
        .map(|s| (s.node.as_str(), &*s.kernel_name))
        .collect()
}

/// True when every root node already records the kernel its step runs.
fn kernels_recorded(graph: &rge_ir::ComputeGraph, program: &crate::program::Program) -> bool {
    let by_name = kernels_by_node(program);
    graph.nodes_of(graph.root()).all(|n| {
        let Some(op) = graph.op(n) else { return true };
        by_name.get(op.name()).is_none_or(|&k| {
            op.attrs().get_str(crate::lower::KERNEL_ATTR).ok().flatten() == Some(k)
        })
    })
}

/// The engine every node was placed on, from the attribute placement records it in (GE's
/// `_lxfusion_engine_name`; the in-memory engine name is not serialized).
fn restore_engines(graph: &mut rge_ir::ComputeGraph) {
    let graphs: Vec<rge_ir::GraphId> = std::iter::once(graph.root())
        .chain(graph.subgraphs().iter().copied())
        .collect();
    for g in graphs {
        for n in graph.all_nodes(g) {
            if let Some(op) = graph.op_mut(n) {
                let engine = op
                    .attrs()
                    .get_str(rge_compiler::attr_names::LXFUSION_ENGINE_NAME)
                    .ok()
                    .flatten()
                    .map(str::to_string);
                if let Some(e) = engine.filter(|e| !e.is_empty()) {
                    op.set_engine_name(e);
                }
            }
        }
    }
}

/// Records on each node the kernel definition that runs it (checked on load).
fn record_kernels(graph: &mut rge_ir::ComputeGraph, program: &crate::program::Program) {
    let by_name = kernels_by_node(program);
    let nodes: Vec<rge_ir::NodeId> = graph.nodes_of(graph.root()).collect();
    for n in nodes {
        let kernel = graph.op(n).and_then(|o| by_name.get(o.name()).copied());
        if let (Some(k), Some(op)) = (kernel, graph.op_mut(n)) {
            op.attrs_mut().set(crate::lower::KERNEL_ATTR, k);
        }
    }
}

/// The one field of a GE ModelDef the marker check reads: its `attr` map (field 11), values
/// left undecoded. Decoding skips every other field by its length without reading it.
#[derive(Clone, PartialEq, prost::Message)]
struct ModelDefAttrs {
    #[prost(map = "string, bytes", tag = "11")]
    attr: std::collections::HashMap<String, Vec<u8>>,
}

/// True when `bytes`, read as a GE ModelDef, have an `attr` entry keyed by the compiled-model
/// marker: a cheap check before decoding (a file is recognised by its content, whatever its
/// name). The graphs, where the weights are, are skipped without being touched: an ONNX model
/// of 400 MB is told apart reading a few of its pages (a byte scan read it all, 0.2 s and its
/// size in memory). Bytes that are not such a protobuf message answer false.
pub fn has_compiled_marker(bytes: &[u8]) -> bool {
    <ModelDefAttrs as prost::Message>::decode(bytes)
        .is_ok_and(|m| m.attr.contains_key(COMPILED_ATTR))
}

/// True when the file at `path` is a compiled model rge wrote (by content, any file name).
/// The file is mapped, not read: for a model that is not compiled only its top-level field
/// headers are touched.
pub fn is_compiled_model(path: &Path) -> bool {
    let Ok(file) = rge_formats::mmap::open_file(path) else {
        return false;
    };
    has_compiled_marker(file.bytes())
        && GeModel::from_binary_bytes(file.bytes().clone(), &path.display().to_string())
            .ok()
            .is_some_and(|m| m.attrs.contains(COMPILED_ATTR))
}

fn int_attr(m: &GeModel, key: &str) -> Option<i64> {
    match m.attrs.get(key) {
        Some(AttrValue::Int(v)) => Some(*v),
        _ => None,
    }
}

impl Session {
    /// Loads a compiled model saved by [`save_model`] and lowers it, without compiling.
    pub fn load_model(&self, path: &Path) -> RuntimeResult<Arc<Model>> {
        let origin = path.display().to_string();
        let ge = GeModel::read_binary(path).map_err(|e| RuntimeError::file(&origin, e))?;
        match int_attr(&ge, COMPILED_ATTR) {
            Some(FORMAT) => {}
            Some(v) => {
                return Err(RuntimeError::file(
                    &origin,
                    format!("compiled-model format {v}, this rge reads {FORMAT}"),
                ))
            }
            None => {
                return Err(RuntimeError::file(
                    &origin,
                    format!(
                    "not a compiled model (no `{COMPILED_ATTR}`): compile it with `rge compile`"
                ),
                ))
            }
        }
        let streams = int_attr(&ge, "stream_num").unwrap_or(0).max(0) as u32;
        let events = int_attr(&ge, "event_num").unwrap_or(0).max(0) as usize;
        let saved_arena = int_attr(&ge, "memory_size");
        let offsets: Option<Vec<usize>> = match ge.attrs.get(OFFSETS_ATTR) {
            None => None,
            Some(AttrValue::ListInt(v)) => Some(
                v.iter()
                    .map(|&o| usize::try_from(o))
                    .collect::<Result<_, _>>()
                    .map_err(|_| {
                        RuntimeError::file(
                            &origin,
                            format!("`{OFFSETS_ATTR}` holds a negative offset"),
                        )
                    })?,
            ),
            Some(_) => {
                return Err(RuntimeError::file(
                    &origin,
                    format!("`{OFFSETS_ATTR}` is not a list of ints"),
                ))
            }
        };
        let mut graph = ge.graph;
        restore_engines(&mut graph);
        let model = self
            .model_from_saved(graph, streams, events, offsets.as_deref())
            .map_err(|e| match e {
                // A session option (memory_limit) is at fault, not the file.
                RuntimeError::Option { .. } => e,
                e => RuntimeError::file(&origin, e),
            })?;
        if let Some(s) = saved_arena {
            if s != model.plan().arena_bytes as i64 {
                return Err(RuntimeError::file(
                    &origin,
                    format!(
                        "the saved memory plan has {s} bytes, lowering planned {}",
                        model.plan().arena_bytes
                    ),
                ));
            }
        }
        Ok(Arc::new(model))
    }
}

#[cfg(test)]
mod marker_tests {
    use super::*;

    /// A length-delimited field.
    fn field(number: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![(number << 3) | 2, body.len() as u8];
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn the_marker_is_an_attr_key_not_any_bytes() {
        let entry = |key: &str| field(11, &field(1, key.as_bytes()));
        // name, version (varint), a graph holding the marker's bytes, then attr entries.
        let mut m = field(1, b"model");
        m.extend_from_slice(&[2 << 3, 7]);
        m.extend(field(7, COMPILED_ATTR.as_bytes()));
        assert!(!has_compiled_marker(&m), "inside a graph: not the marker");
        m.extend(entry("other"));
        assert!(!has_compiled_marker(&m));
        m.extend(entry(COMPILED_ATTR));
        assert!(has_compiled_marker(&m));
        // Truncated or not protobuf at all: false, never a panic.
        for cut in 0..m.len() {
            let _ = has_compiled_marker(&m[..cut]);
        }
        assert!(!has_compiled_marker(
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"
        ));
        assert!(!has_compiled_marker(&[0x5a, 0xff, 0xff, 0xff, 0xff, 0x0f]));
    }
}
