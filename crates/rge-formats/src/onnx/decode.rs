//! Decoding a `ModelProto` with the graph's nodes apart and in parallel: for a large graph they
//! are most of the file, and one prost decode of 100k nodes took 90 ms in a fresh process,
//! most of it allocating (each node a `NodeProto` and five to ten strings).
//!
//! The nodes become a [`NodeTable`]: a node of strings only (no attributes: most nodes of a
//! large graph) is a view of the file, validated as prost validates it; any other node is
//! decoded from its own record framed as `ModelProto.graph.node`, so that prost's nesting
//! limit counts the same levels. The rest of the model is decoded from the file's bytes less
//! the node records. What the importer reads is then what one `ModelProto::decode` gives, and
//! any failure or unusual layout falls back to that one decode, which then gives its own result
//! or error. Weights stay slices of the buffer (no record is copied).

use std::sync::atomic::{AtomicBool, Ordering};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use prost::Message;
use rayon::prelude::*;

use super::nodes::{Io, Item, NodeTable, NodeView};
use crate::onnx_proto::ModelProto;

/// Graphs with fewer nodes are decoded in one piece (the split would gain nothing).
const PARALLEL_NODES: usize = 2048;

/// `ModelProto.graph` and `GraphProto.node`.
const MODEL_GRAPH: u64 = 7;
const GRAPH_NODE: u64 = 1;
const LEN: u64 = 2;

/// Decodes `bytes` as `ModelProto::decode` does, except that a large graph's nodes come apart
/// as a table (the graph then lists none).
pub(crate) fn decode_model(
    bytes: &Bytes,
) -> Result<(ModelProto, Option<NodeTable<'_>>), prost::DecodeError> {
    match split_decode(bytes) {
        Some((m, t)) => Ok((m, Some(t))),
        None => ModelProto::decode(bytes.clone()).map(|m| (m, None)),
    }
}

/// One field record: its field number and wire type, where it starts, where its payload starts
/// (for length-delimited records) and where it ends.
#[derive(Clone, Copy)]
struct Record {
    field: u64,
    wire: u64,
    start: usize,
    payload: usize,
    end: usize,
}

fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for i in 0..10 {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

/// The records of one message, then `None` at the end; `Some(None)` for anything but plain
/// well-formed records (groups, bad keys, truncation: the one decode then reports it).
struct Records<'a> {
    b: &'a [u8],
    at: usize,
}

impl Iterator for Records<'_> {
    type Item = Option<Record>;

    fn next(&mut self) -> Option<Option<Record>> {
        (self.at < self.b.len()).then(|| {
            let r = record(self.b, self.at);
            // A bad record ends the walk.
            self.at = r.map_or(self.b.len(), |r| r.end);
            r
        })
    }
}

fn records(b: &[u8]) -> Records<'_> {
    Records { b, at: 0 }
}

fn record(b: &[u8], start: usize) -> Option<Record> {
    let mut at = start;
    let key = varint(b, &mut at)?;
    let (field, wire) = (key >> 3, key & 7);
    if key > u64::from(u32::MAX) || field == 0 {
        return None;
    }
    let mut payload = at;
    let end = match wire {
        0 => {
            varint(b, &mut at)?;
            at
        }
        1 => at.checked_add(8)?,
        LEN => {
            let n = usize::try_from(varint(b, &mut at)?).ok()?;
            payload = at;
            at.checked_add(n)?
        }
        5 => at.checked_add(4)?,
        _ => return None,
    };
    (end <= b.len()).then_some(Record {
        field,
        wire,
        start,
        payload,
        end,
    })
}

fn key_and_len(out: &mut impl BufMut, field: u64, len: usize) {
    prost::encoding::encode_varint(field << 3 | LEN, out);
    prost::encoding::encode_varint(len as u64, out);
}

fn split_decode(bytes: &Bytes) -> Option<(ModelProto, NodeTable<'_>)> {
    let mut graph = None;
    for r in records(bytes) {
        let r = r?;
        if r.field == MODEL_GRAPH {
            if graph.is_some() || r.wire != LEN {
                return None;
            }
            graph = Some(r);
        }
    }
    let g = graph?;
    let gbytes = bytes.slice(g.payload..g.end);
    // The model less the nodes: its records in order, the graph's re-framed around its other
    // records (runs of them, such as the graph's outputs, one segment each).
    let mut segs = vec![bytes.slice(..g.start), Bytes::new()];
    let mut nodes = Vec::new();
    let (mut rest_len, mut run) = (0usize, None::<(usize, usize)>);
    for r in records(&gbytes) {
        let r = r?;
        match (r.field, r.wire) {
            (GRAPH_NODE, LEN) => {
                // u32 offsets: a message is under 2 GiB.
                nodes.push((u32::try_from(r.payload).ok()?, u32::try_from(r.end).ok()?));
                if let Some((a, b)) = run.take() {
                    segs.push(gbytes.slice(a..b));
                }
            }
            (GRAPH_NODE, _) => return None,
            _ => {
                rest_len += r.end - r.start;
                run = Some((run.map_or(r.start, |x| x.0), r.end));
            }
        }
    }
    if let Some((a, b)) = run {
        segs.push(gbytes.slice(a..b));
    }
    if nodes.len() < PARALLEL_NODES {
        return None;
    }
    let mut header = Vec::with_capacity(16);
    key_and_len(&mut header, MODEL_GRAPH, rest_len);
    segs[1] = Bytes::from(header);
    segs.push(bytes.slice(g.end..));

    let failed = AtomicBool::new(false);
    let mut items = Vec::new();
    let (model, ()) = rayon::join(
        || ModelProto::decode(Rope::new(segs)).ok(),
        || {
            nodes
                .par_iter()
                .map(|&(payload, end)| {
                    decode_node(bytes, g.payload, &gbytes, payload as usize, end as usize)
                        .unwrap_or_else(|| {
                            failed.store(true, Ordering::Relaxed);
                            Item::Proto(Box::default())
                        })
                })
                // Written in place: one allocation, no copy.
                .collect_into_vec(&mut items)
        },
    );
    if failed.load(Ordering::Relaxed) {
        return None;
    }
    Some((model?, NodeTable { items }))
}

/// `NodeProto` fields that are strings: input, output, name, op_type, doc_string, domain,
/// overload.
fn string_field(field: u64) -> bool {
    matches!(field, 1..=4 | 6..=8)
}

/// A node of strings only (no attributes: most of a large graph) as a view of `b`, read as
/// prost decodes it (a repeated field appends, a singular one takes the last value; strings
/// must be UTF-8). `None` for any other node, or a bad one.
fn plain_node(b: &[u8]) -> Option<NodeView<'_>> {
    let (mut ins, mut outs) = (0, 0);
    for r in records(b) {
        let r = r?;
        if !string_field(r.field) || r.wire != LEN {
            return None;
        }
        ins += usize::from(r.field == 1);
        outs += usize::from(r.field == 2);
    }
    let mut n = NodeView {
        name: "",
        op_type: "",
        domain: "",
        overload: "",
        doc_string: "",
        io: Io::new(ins + outs),
        inputs: ins,
    };
    let (mut i, mut o) = (0, ins);
    for r in records(b).flatten() {
        let s = std::str::from_utf8(&b[r.payload..r.end]).ok()?;
        match r.field {
            1 => {
                n.io.as_mut_slice()[i] = s;
                i += 1;
            }
            2 => {
                n.io.as_mut_slice()[o] = s;
                o += 1;
            }
            3 => n.name = s,
            4 => n.op_type = s,
            6 => n.doc_string = s,
            7 => n.domain = s,
            _ => n.overload = s,
        }
    }
    Some(n)
}

/// The node record at `payload..end` of `gbytes`, which is `bytes[goff..]`, read as
/// `ModelProto::decode` would as part of the graph.
fn decode_node<'b>(
    bytes: &'b Bytes,
    goff: usize,
    gbytes: &Bytes,
    payload: usize,
    end: usize,
) -> Option<Item<'b>> {
    // A view borrows `bytes`, which outlives the table.
    if let Some(n) = plain_node(&bytes[goff + payload..goff + end]) {
        return Some(Item::View(n));
    }
    // `ModelProto { graph: GraphProto { node: [this] } }`, so that prost's nesting limit counts
    // the same levels and bytes fields are slices of the buffer.
    let n = end - payload;
    let mut inner = [0u8; 12];
    let mut w = &mut inner[..];
    key_and_len(&mut w, GRAPH_NODE, n);
    let inner_len = 12 - w.len();
    let mut head = [0u8; 24];
    let mut w = &mut head[..];
    key_and_len(&mut w, MODEL_GRAPH, inner_len + n);
    w.put_slice(&inner[..inner_len]);
    let head_len = 24 - w.len();
    let buf = (&head[..head_len]).chain(gbytes.slice(payload..end));
    let node = ModelProto::decode(buf).ok()?.graph?.node.pop()?;
    Some(Item::Proto(Box::new(node)))
}

/// Several buffers read as one. Records never straddle two (each is one or more whole
/// records, or a header), so `copy_to_bytes` of a field's bytes slices one without a copy.
struct Rope {
    segs: Vec<Bytes>,
    /// The current segment: the first not yet used up.
    at: usize,
    remaining: usize,
}

impl Rope {
    fn new(segs: Vec<Bytes>) -> Self {
        let remaining = segs.iter().map(Bytes::len).sum();
        let mut r = Rope {
            segs,
            at: 0,
            remaining,
        };
        r.skip_empty();
        r
    }

    fn skip_empty(&mut self) {
        while self.at < self.segs.len() && self.segs[self.at].is_empty() {
            self.at += 1;
        }
    }
}

impl Buf for Rope {
    fn remaining(&self) -> usize {
        self.remaining
    }

    fn chunk(&self) -> &[u8] {
        self.segs.get(self.at).map_or(&[], |s| s.as_ref())
    }

    fn advance(&mut self, mut cnt: usize) {
        assert!(cnt <= self.remaining, "advance past the end");
        self.remaining -= cnt;
        while cnt > 0 {
            let s = &mut self.segs[self.at];
            let k = cnt.min(s.len());
            s.advance(k);
            cnt -= k;
            self.skip_empty();
        }
    }

    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        match self.segs.get_mut(self.at) {
            Some(s) if s.len() >= len => {
                let b = s.split_to(len);
                self.remaining -= len;
                self.skip_empty();
                b
            }
            _ => {
                let mut b = BytesMut::with_capacity(len);
                b.put(self.take(len));
                b.freeze()
            }
        }
    }
}
