//! The binary ModelDef written op by op: each OpDef is built, encoded and dropped before the
//! next, so writing a model never holds the whole ModelDef (about ten times the size of its
//! bytes: a map per op and per tensor desc) beside the graph. The bytes are those of
//! `ModelDef::encode_to_vec` on the full message — fields in number order, ops in graph order —
//! so the file is the same either way (a test checks it).

use std::sync::atomic::{AtomicUsize, Ordering};

use prost::encoding::{encode_key, encode_varint, WireType};
use prost::Message;
use rayon::prelude::*;
use rge_ir::{AttrMap, ComputeGraph, GraphId, NodeId, TensorDesc};

use super::writer::Writer;
use crate::ge_proto::{GraphDef, ModelDef, OpDef};

/// A model to write, borrowing its graph (no copy of the graph to save it).
#[derive(Debug, Clone, Copy)]
pub struct GeModelRef<'a> {
    pub name: &'a str,
    pub version: u32,
    pub custom_version: &'a str,
    pub attrs: &'a AttrMap,
    pub graph: &'a ComputeGraph,
}

/// Ops encoded per parallel task.
const OPS_PER_TASK: usize = 1024;

/// The default of [`WriteOptions::keep_bytes`](super::WriteOptions::keep_bytes): 64 MiB.
pub const DEFAULT_KEEP_BYTES: usize = 64 << 20;

/// ModelDef's `graph` and GraphDef's `op` field numbers.
const MODEL_GRAPH_TAG: u32 = 7;
const GRAPH_OP_TAG: u32 = 6;
/// OpDef's `attr` field number.
const OP_ATTR_TAG: u32 = 10;
/// OpDef's `input_desc` and `output_desc` field numbers (`subgraph_name`, 35, is the only
/// field after them).
const OP_INPUT_DESC_TAG: u32 = 33;
const OP_OUTPUT_DESC_TAG: u32 = 34;

/// Appends a length-delimited field: key, length, bytes.
fn put_message_bytes(tag: u32, bytes: &[u8], out: &mut Vec<u8>) {
    put_message_key(tag, bytes.len(), out);
    out.extend_from_slice(bytes);
}

/// Appends a length-delimited field's key and length.
fn put_message_key(tag: u32, len: usize, out: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(len as u64, out);
}

/// A model's bytes ready to write: the fields around the ops, and the ops in chunks. A length
/// pass encodes every chunk once, to learn each graph's length (a length-delimited field's
/// length comes before its bytes), and keeps the chunks' bytes while their total stays within
/// the options' budget ([`WriteOptions::keep_bytes`]); the write pass encodes the others again, a
/// window of chunks at a time. So a model that fits the budget is encoded once, and a larger
/// one is written holding at most the budget and one window beside the graph (the file of a
/// million-node graph is about half a gigabyte).
pub(crate) struct Encoded<'a> {
    writer: &'a Writer<'a>,
    graph: &'a ComputeGraph,
    head: Vec<u8>,
    graphs: Vec<EncodedGraph>,
    tail: Vec<u8>,
}

/// One GraphDef: its key and length, the fields before the ops, the ops' chunks, the rest.
struct EncodedGraph {
    key: Vec<u8>,
    head: Vec<u8>,
    nodes: Vec<NodeId>,
    /// Per chunk of [`OPS_PER_TASK`] nodes: its bytes, or `None` to encode again when writing.
    chunks: Vec<Option<Vec<u8>>>,
    tail: Vec<u8>,
    /// The GraphDef's length: head, ops and tail.
    payload_len: u64,
}

impl Encoded<'_> {
    /// The total length in bytes.
    pub(crate) fn len(&self) -> u64 {
        let graph = |g: &EncodedGraph| g.key.len() as u64 + g.payload_len;
        (self.head.len() + self.tail.len()) as u64 + self.graphs.iter().map(graph).sum::<u64>()
    }

    /// Writes the bytes to `w`.
    pub(crate) fn write_to(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        w.write_all(&self.head)?;
        let window = rayon::current_num_threads().max(1) * 4;
        for g in &self.graphs {
            w.write_all(&g.key)?;
            w.write_all(&g.head)?;
            let chunks: Vec<&[NodeId]> = g.nodes.chunks(OPS_PER_TASK).collect();
            for (kept, nodes) in g.chunks.chunks(window).zip(chunks.chunks(window)) {
                // The chunks the length pass dropped, encoded again on the pool's threads.
                let again: Vec<Option<Vec<u8>>> = kept
                    .par_iter()
                    .zip(nodes.par_iter())
                    .map(|(k, nodes)| {
                        k.is_none().then(|| {
                            let mut part = Vec::new();
                            self.writer.encode_chunk(self.graph, nodes, &mut part);
                            part
                        })
                    })
                    .collect();
                for (k, a) in kept.iter().zip(&again) {
                    if let Some(bytes) = k.as_ref().or(a.as_ref()) {
                        w.write_all(bytes)?;
                    }
                }
            }
            w.write_all(&g.tail)?;
        }
        w.write_all(&self.tail)
    }

    /// The bytes in one buffer.
    pub(crate) fn concat(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(usize::try_from(self.len()).unwrap_or(0));
        self.write_to(&mut out).expect("writing to memory");
        out
    }
}

impl Writer<'_> {
    /// The model's bytes, streamed (inline weights only: the other modes rewrite the ModelDef).
    pub(crate) fn encode_model<'a>(&'a self, m: &GeModelRef<'a>) -> Encoded<'a> {
        let cg = m.graph;
        // Fields 1–3 (before `graph`), then each graph, then 11–12.
        let mut head = Vec::new();
        ModelDef {
            name: m.name.to_string(),
            version: m.version,
            custom_version: m.custom_version.to_string(),
            ..Default::default()
        }
        .encode_raw(&mut head);
        let budget = AtomicUsize::new(self.opts.keep_bytes.unwrap_or(DEFAULT_KEEP_BYTES));
        let graphs = std::iter::once(cg.root())
            .chain(cg.subgraphs().iter().copied())
            .map(|g| self.encode_graph(cg, g, &budget))
            .collect();
        let mut tail = Vec::new();
        ModelDef {
            attr: self.write_attrs(m.attrs, &|_| false),
            ..Default::default()
        }
        .encode_raw(&mut tail);
        Encoded {
            writer: self,
            graph: cg,
            head,
            graphs,
            tail,
        }
    }

    /// One GraphDef: the length pass over its ops, keeping what `budget` allows.
    fn encode_graph(&self, cg: &ComputeGraph, g: GraphId, budget: &AtomicUsize) -> EncodedGraph {
        let mut head = self.write_graph_fields(cg, g);
        let tail = GraphDef {
            attr: std::mem::take(&mut head.attr),
            attr_groups: head.attr_groups.take(),
            ..Default::default()
        }
        .encode_to_vec();
        let head = head.encode_to_vec();
        // Each OpDef depends on the graph only: chunks of ops are encoded on the pool's threads
        // (a 100k-node model saved in half the time on two cores). A chunk is encoded into the
        // thread's scratch buffer and copied out at its exact length only when kept.
        let nodes: Vec<NodeId> = cg.nodes_of(g).collect();
        let (lens, chunks): (Vec<usize>, Vec<Option<Vec<u8>>>) = nodes
            .par_chunks(OPS_PER_TASK)
            .map_init(Vec::new, |scratch, chunk| {
                scratch.clear();
                self.encode_chunk(cg, chunk, scratch);
                let len = scratch.len();
                let keep = budget
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| b.checked_sub(len))
                    .is_ok();
                (len, keep.then(|| scratch.clone()))
            })
            .unzip();
        let payload = head.len() + lens.iter().sum::<usize>() + tail.len();
        let mut key = Vec::new();
        put_message_key(MODEL_GRAPH_TAG, payload, &mut key);
        EncodedGraph {
            key,
            head,
            nodes,
            chunks,
            tail,
            payload_len: payload as u64,
        }
    }

    /// The ops of `nodes`, each as GraphDef's `op` field.
    fn encode_chunk(&self, cg: &ComputeGraph, nodes: &[NodeId], out: &mut Vec<u8>) {
        let mut op_bytes = Vec::new();
        for &n in nodes {
            op_bytes.clear();
            self.encode_node(cg, n, &mut op_bytes);
            put_message_bytes(GRAPH_OP_TAG, &op_bytes, out);
        }
    }
}

impl Writer<'_> {
    /// One OpDef's bytes, its descs encoded one at a time: the fields before `input_desc`
    /// (numbered below 33), each input then output desc (an input desc equal to the one before
    /// it reuses its bytes), then `subgraph_name` (35). No OpDef holds every desc at once, so a
    /// node with a million inputs costs a million small encodes at most, not a million
    /// TensorDescriptor messages in memory.
    fn encode_node(&self, cg: &ComputeGraph, n: NodeId, out: &mut Vec<u8>) {
        let (mut def, attr) = self.node_fields_and_attrs(cg, n);
        // OpDef's fields in number order: name, type and input; attr (encoded directly); the
        // legacy fields; the descs; subgraph_name.
        let head = OpDef {
            name: std::mem::take(&mut def.name),
            r#type: std::mem::take(&mut def.r#type),
            input: std::mem::take(&mut def.input),
            ..Default::default()
        };
        let tail = OpDef {
            subgraph_name: std::mem::take(&mut def.subgraph_name),
            ..Default::default()
        };
        head.encode_raw(out);
        attr.encode(self, OP_ATTR_TAG, out);
        def.encode_raw(out);
        if let Some(op) = cg.op(n) {
            let mut desc = Vec::new();
            // An input desc equal to the one before it reuses its bytes.
            let mut last: Option<&TensorDesc> = None;
            for d in op.inputs() {
                if last != Some(d) {
                    desc.clear();
                    self.encode_desc(d, &mut desc);
                    last = Some(d);
                }
                put_message_bytes(OP_INPUT_DESC_TAG, &desc, out);
            }
            for d in op.outputs() {
                desc.clear();
                self.encode_desc(d, &mut desc);
                put_message_bytes(OP_OUTPUT_DESC_TAG, &desc, out);
            }
        }
        tail.encode_raw(out);
    }
}

/// ModelDef's header fields and GraphDef's, split from the repeated messages that make their
/// bulk: a model read graph by graph and op by op (each OpDef decoded, read into the graph and
/// dropped before the next), never the whole ModelDef in memory.
pub(crate) struct SplitModel {
    /// Every field but `graph`.
    pub(crate) header: ModelDef,
    pub(crate) graphs: Vec<SplitGraph>,
}

/// A GraphDef without its ops, and the ops' encoded bytes (slices of the file's bytes).
pub(crate) struct SplitGraph {
    pub(crate) header: GraphDef,
    pub(crate) ops: Vec<bytes::Bytes>,
}

/// The ops of a graph to read: decoded already, or encoded (decoded one at a time).
#[derive(Clone, Copy)]
pub(crate) enum OpSource<'a> {
    Decoded(&'a [crate::ge_proto::OpDef]),
    Encoded(&'a [bytes::Bytes]),
}

/// An encoded op that does not decode: the caller decodes the whole model again for the
/// canonical error.
#[derive(Debug)]
pub(crate) struct BadOp;

impl OpSource<'_> {
    /// Calls `f` on every op in order.
    pub(crate) fn for_each<E: From<BadOp>>(
        self,
        mut f: impl FnMut(&crate::ge_proto::OpDef) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            OpSource::Decoded(ops) => ops.iter().try_for_each(f),
            OpSource::Encoded(ops) => ops.iter().try_for_each(|b| {
                let od = crate::ge_proto::OpDef::decode(b.clone()).map_err(|_| BadOp)?;
                f(&od)
            }),
        }
    }
}

/// One field of a message: its number and its bytes (key included), or, for a
/// length-delimited one, also the payload.
struct Field {
    tag: u32,
    whole: std::ops::Range<usize>,
    payload: Option<std::ops::Range<usize>>,
}

/// The fields of a message, in order; `None` when the bytes are not well formed (or use
/// groups): the caller then decodes the usual way and reports that decoder's error.
fn fields(b: &[u8]) -> Option<Vec<Field>> {
    let mut out = Vec::new();
    let mut pos = 0usize;
    let varint = |pos: &mut usize| -> Option<u64> {
        let mut buf = b.get(*pos..)?;
        let start = buf.len();
        let v = prost::encoding::decode_varint(&mut buf).ok()?;
        *pos += start - buf.len();
        Some(v)
    };
    while pos < b.len() {
        let start = pos;
        let key = varint(&mut pos)?;
        let (tag, wire) = (u32::try_from(key >> 3).ok()?, key & 7);
        let mut payload = None;
        match wire {
            0 => {
                varint(&mut pos)?;
            }
            1 => pos = pos.checked_add(8)?,
            2 => {
                let len = usize::try_from(varint(&mut pos)?).ok()?;
                let end = pos.checked_add(len)?;
                payload = Some(pos..end);
                pos = end;
            }
            5 => pos = pos.checked_add(4)?,
            _ => return None,
        }
        if pos > b.len() {
            return None;
        }
        out.push(Field {
            tag,
            whole: start..pos,
            payload,
        });
    }
    Some(out)
}

/// Splits `msg` into the fields numbered `tag` (payloads) and the rest (re-encoded bytes).
fn split_repeated(msg: &bytes::Bytes, tag: u32) -> Option<(Vec<u8>, Vec<bytes::Bytes>)> {
    let mut rest = Vec::new();
    let mut parts = Vec::new();
    for f in fields(msg)? {
        match (f.tag == tag, f.payload) {
            (true, Some(p)) => parts.push(msg.slice(p)),
            (true, None) => return None,
            (false, _) => rest.extend_from_slice(&msg[f.whole]),
        }
    }
    Some((rest, parts))
}

impl SplitModel {
    /// Splits a binary ModelDef; `None` when it is not well formed (decode it whole for the
    /// error).
    pub(crate) fn split(bytes: &bytes::Bytes) -> Option<SplitModel> {
        let (rest, graphs) = split_repeated(bytes, MODEL_GRAPH_TAG)?;
        let header = ModelDef::decode(rest.as_slice()).ok()?;
        let graphs = graphs
            .iter()
            .map(|g| {
                let (rest, ops) = split_repeated(g, GRAPH_OP_TAG)?;
                Some(SplitGraph {
                    header: GraphDef::decode(rest.as_slice()).ok()?,
                    ops,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(SplitModel { header, graphs })
    }
}
