//! GE `ge.proto.ModelDef` ↔ rge-ir, binary (`.pb`/`.air` ModelDef) and protobuf text
//! (`ge_proto_*.txt` dumps), following GE's serializer rule by rule (reference §6–§8;
//! `docs/ge-modeldef.md` lists every rule and rge's own encoding decisions).
//!
//! ```
//! use rge_formats::ge::{GeModel, WriteOptions};
//! use rge_ir::{ComputeGraph, DataType, OpDesc, Shape, TensorDesc};
//!
//! let mut g = ComputeGraph::new("main");
//! let desc = TensorDesc::with_shape_dtype(Shape::new([2]), DataType::Float);
//! let x = g.add_root_node(OpDesc::new("x", "Data").with_input("x", desc.clone()).with_output("y", desc.clone())).unwrap();
//! let r = g.add_root_node(OpDesc::new("relu", "Relu").with_input("x", desc.clone()).with_output("y", desc)).unwrap();
//! g.add_edge(x, 0, r, 0).unwrap();
//! let model = GeModel::dump_model(g);
//! let text = model.to_text(&WriteOptions::dump()).unwrap();
//! let back = GeModel::from_text_str(&text, "dump.txt").unwrap();
//! assert_eq!(back, model);
//! assert_eq!(back.to_text(&WriteOptions::dump()).unwrap(), text);
//! ```

mod attr;
mod desc;
mod entries;
mod error;
pub mod keys;
mod om;
mod op;
mod reader;
mod stream;
mod weights;
mod writer;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use bytes::Bytes;
use prost::Message;
use rge_ir::{AttrMap, ComputeGraph};

pub use desc::MAX_DATALESS_TENSOR_BYTES;
pub use error::{GeError, MAX_MODEL_BYTES};
pub use stream::{GeModelRef, DEFAULT_KEEP_BYTES};
pub use weights::ExternalWeight;

use crate::ge_proto::ModelDef;
use crate::text_format::{parse_model_def, print_model_def};

/// A GE model: the ModelDef-level fields and attributes, and the root graph with its subgraphs
/// (graph[0]'s attributes are the root graph's attributes).
#[derive(Debug, Clone, PartialEq)]
pub struct GeModel {
    pub name: String,
    pub version: u32,
    pub custom_version: String,
    pub attrs: AttrMap,
    pub graph: ComputeGraph,
}

/// How to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Accept ops whose `subgraph_name` names a graph the model does not hold (a partial model,
    /// SOURCES.md fact 10); the op keeps the name. By default that is an error.
    pub allow_missing_subgraphs: bool,
    /// Leave separated weights (`location`/`length` on a Const) unresolved.
    pub keep_external_weights: bool,
}

/// Where the model comes from: a name for messages and the directory separated weights are
/// relative to (none for a model in memory: its `location` attrs then stay unresolved).
#[derive(Debug, Clone, Default)]
pub struct ReadContext {
    pub origin: String,
    pub base_dir: Option<PathBuf>,
    pub options: ReadOptions,
}

impl ReadContext {
    /// A context for a model named `origin` in messages, without a directory.
    pub fn new(origin: impl Into<String>) -> Self {
        ReadContext {
            origin: origin.into(),
            ..Default::default()
        }
    }

    /// The context of the model file `path`: its name and directory.
    pub fn for_file(path: &Path, options: ReadOptions) -> Self {
        let dir = path.parent().map_or_else(
            || PathBuf::from("."),
            |p| {
                if p.as_os_str().is_empty() {
                    PathBuf::from(".")
                } else {
                    p.to_path_buf()
                }
            },
        );
        ReadContext {
            origin: path.display().to_string(),
            base_dir: Some(dir),
            options,
        }
    }

    pub fn with_options(mut self, options: ReadOptions) -> Self {
        self.options = options;
        self
    }

    pub fn with_base_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.base_dir = Some(dir.into());
        self
    }
}

/// Where Const weights go when writing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum WeightMode {
    /// In the `value` attr (a TensorDef with data).
    #[default]
    Inline,
    /// In files `air_weight/<model>/<type>_<graph>_<op>_file` beside the model, named by the
    /// attrs `location` and `length` (GE's separated weights); `value` keeps its desc.
    External,
    /// Dropped, as GE's dumps below level 1 do.
    Omit,
}

/// How to write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// Dump mode: every OpDef gets `_src_out_peer_index_for_ge_txt_load`, so that fan-out order
    /// survives a round trip (GE's `ge_proto_*.txt` dumps).
    pub dump: bool,
    pub weights: WeightMode,
    /// Binary files with inline weights are written op by op in two passes: the first learns
    /// the graphs' lengths, the second writes. Encoded ops up to this many bytes are kept
    /// between the passes; the rest are encoded again (`None`: 64 MiB). Bounds what saving a
    /// large model holds beside its graph; the bytes written are the same for any value.
    pub keep_bytes: Option<usize>,
}

impl WriteOptions {
    /// Dump mode with inline weights.
    pub fn dump() -> Self {
        WriteOptions {
            dump: true,
            weights: WeightMode::Inline,
            keep_bytes: None,
        }
    }

    pub fn with_weights(mut self, weights: WeightMode) -> Self {
        self.weights = weights;
        self
    }
}

fn too_large(file: &str, size: u64) -> GeError {
    GeError::TooLarge {
        file: file.to_string(),
        size,
        limit: MAX_MODEL_BYTES,
    }
}

/// Reads a whole file, refusing files over GE's limit before reading them.
fn read_file(path: &Path) -> Result<Vec<u8>, GeError> {
    let file = path.display().to_string();
    let io = |source| GeError::Io {
        file: file.clone(),
        source,
    };
    let f = std::fs::File::open(path).map_err(io)?;
    let size = f.metadata().map_err(io)?.len();
    if size > MAX_MODEL_BYTES {
        return Err(too_large(&file, size));
    }
    let mut buf = Vec::with_capacity(size as usize);
    f.take(MAX_MODEL_BYTES + 1)
        .read_to_end(&mut buf)
        .map_err(io)?;
    if buf.len() as u64 > MAX_MODEL_BYTES {
        return Err(too_large(&file, buf.len() as u64));
    }
    Ok(buf)
}

impl GeModel {
    /// A model holding `graph`, with no attributes.
    pub fn new(graph: ComputeGraph) -> Self {
        GeModel {
            name: String::new(),
            version: 0,
            custom_version: String::new(),
            attrs: AttrMap::new(),
            graph,
        }
    }

    /// A model as GE's graph dumps make it (`Model("", "")` + `Model::Init`): no name, version
    /// 0, and the int attrs `memory_size`, `p2p_memory_size`, `stream_num`, `event_num`,
    /// `label_num`, `weight_size` (0) and `target_type` "MINI".
    pub fn dump_model(graph: ComputeGraph) -> Self {
        let mut m = GeModel::new(graph);
        for k in [
            "memory_size",
            "p2p_memory_size",
            "stream_num",
            "event_num",
            "label_num",
            "weight_size",
        ] {
            m.attrs.set(k, 0i64);
        }
        m.attrs.set("target_type", "MINI");
        m
    }

    /// Converts a ModelDef (OM-compressed attributes are decoded first).
    pub fn from_model_def(def: &ModelDef, ctx: &ReadContext) -> Result<Self, GeError> {
        let decoded = om::decode(def);
        let def = decoded.as_ref().unwrap_or(def);
        reader::Reader::new(ctx)
            .read_model(def)
            .map_err(|f| f.into_error(&ctx.origin))
    }

    /// Reads a binary ModelDef from memory; Const weights stay slices of `bytes`.
    pub fn from_binary_bytes(bytes: Bytes, origin: &str) -> Result<Self, GeError> {
        Self::from_binary_bytes_with(bytes, &ReadContext::new(origin))
    }

    pub fn from_binary_bytes_with(bytes: Bytes, ctx: &ReadContext) -> Result<Self, GeError> {
        if bytes.len() as u64 > MAX_MODEL_BYTES {
            return Err(too_large(&ctx.origin, bytes.len() as u64));
        }
        // Op by op when the file is well formed and not OM-compressed; otherwise (and for the
        // canonical error of an op that does not decode) the whole ModelDef at once.
        if let Some(split) = stream::SplitModel::split(&bytes) {
            if !om::is_compressed(&split.header) {
                match reader::Reader::new(ctx).read_split_model(&split) {
                    Ok(m) => return Ok(m),
                    Err(f) if !f.is_bad_op() => return Err(f.into_error(&ctx.origin)),
                    Err(_) => {}
                }
            }
        }
        let def = ModelDef::decode(bytes).map_err(|source| GeError::Decode {
            file: ctx.origin.clone(),
            source,
        })?;
        Self::from_model_def(&def, ctx)
    }

    /// Reads a ModelDef in protobuf text format from memory.
    pub fn from_text_str(text: &str, origin: &str) -> Result<Self, GeError> {
        Self::from_text_str_with(text, &ReadContext::new(origin))
    }

    pub fn from_text_str_with(text: &str, ctx: &ReadContext) -> Result<Self, GeError> {
        if text.len() as u64 > MAX_MODEL_BYTES {
            return Err(too_large(&ctx.origin, text.len() as u64));
        }
        let def = parse_model_def(text).map_err(|source| GeError::Text {
            file: ctx.origin.clone(),
            source,
        })?;
        Self::from_model_def(&def, ctx)
    }

    /// Reads a binary ModelDef file (at most [`MAX_MODEL_BYTES`]).
    pub fn read_binary(path: impl AsRef<Path>) -> Result<Self, GeError> {
        Self::read_binary_with(path, &ReadOptions::default())
    }

    pub fn read_binary_with(
        path: impl AsRef<Path>,
        options: &ReadOptions,
    ) -> Result<Self, GeError> {
        let path = path.as_ref();
        let data = read_file(path)?;
        Self::from_binary_bytes_with(
            Bytes::from(data),
            &ReadContext::for_file(path, options.clone()),
        )
    }

    /// Reads a text ModelDef file (a `ge_proto_*.txt` dump).
    pub fn read_text(path: impl AsRef<Path>) -> Result<Self, GeError> {
        Self::read_text_with(path, &ReadOptions::default())
    }

    pub fn read_text_with(path: impl AsRef<Path>, options: &ReadOptions) -> Result<Self, GeError> {
        let path = path.as_ref();
        let data = read_file(path)?;
        let text = String::from_utf8(data).map_err(|e| GeError::Io {
            file: path.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
        })?;
        Self::from_text_str_with(&text, &ReadContext::for_file(path, options.clone()))
    }

    /// The ModelDef. With [`WeightMode::External`] the weights are left out; use
    /// [`Self::to_model_def_and_weights`] to get them.
    pub fn to_model_def(&self, opts: &WriteOptions) -> ModelDef {
        self.to_model_def_and_weights(opts).0
    }

    /// The ModelDef and, with [`WeightMode::External`], the weight files to write beside it.
    pub fn to_model_def_and_weights(&self, opts: &WriteOptions) -> (ModelDef, Vec<ExternalWeight>) {
        self.borrowed().to_model_def_and_weights(opts)
    }

    /// The model with its graph borrowed.
    pub fn borrowed(&self) -> GeModelRef<'_> {
        GeModelRef {
            name: &self.name,
            version: self.version,
            custom_version: &self.custom_version,
            attrs: &self.attrs,
            graph: &self.graph,
        }
    }

    pub(crate) fn in_memory_only(opts: &WriteOptions) -> Result<(), GeError> {
        if opts.weights == WeightMode::External {
            return Err(GeError::Invalid {
                file: "<memory>".into(),
                at: "model".into(),
                message: "external weights need a model path: use write_binary or write_text"
                    .into(),
            });
        }
        Ok(())
    }

    /// The binary ModelDef: deterministic (fields in number order, map entries by key).
    pub fn to_binary_bytes(&self, opts: &WriteOptions) -> Result<Bytes, GeError> {
        self.borrowed().to_binary_bytes(opts)
    }

    /// The ModelDef in protobuf text format, as GE's dumps print it.
    pub fn to_text(&self, opts: &WriteOptions) -> Result<String, GeError> {
        Self::in_memory_only(opts)?;
        Ok(print_model_def(&self.to_model_def(opts)))
    }

    /// Writes a binary ModelDef file (and, with external weights, the weight files beside it).
    pub fn write_binary(&self, path: impl AsRef<Path>, opts: &WriteOptions) -> Result<(), GeError> {
        self.borrowed().write_binary(path, opts)
    }

    /// Writes a text ModelDef file (and, with external weights, the weight files beside it).
    pub fn write_text(&self, path: impl AsRef<Path>, opts: &WriteOptions) -> Result<(), GeError> {
        let path = path.as_ref();
        let (def, weights) = self.to_model_def_and_weights(opts);
        write_out(path, print_model_def(&def).as_bytes(), &weights)
    }
}

impl GeModelRef<'_> {
    /// The ModelDef and, with [`WeightMode::External`], the weight files to write beside it.
    pub fn to_model_def_and_weights(&self, opts: &WriteOptions) -> (ModelDef, Vec<ExternalWeight>) {
        let mut def = writer::Writer { opts }.write_model(self);
        let weights = match opts.weights {
            WeightMode::Inline => Vec::new(),
            WeightMode::External => weights::externalize(&mut def),
            WeightMode::Omit => {
                weights::omit(&mut def);
                Vec::new()
            }
        };
        (def, weights)
    }

    /// The binary ModelDef (see [`GeModel::to_binary_bytes`]).
    pub fn to_binary_bytes(&self, opts: &WriteOptions) -> Result<Bytes, GeError> {
        GeModel::in_memory_only(opts)?;
        self.encode_binary(opts, "<memory>")
    }

    /// Writes a binary ModelDef file (and, with external weights, the weight files beside it).
    pub fn write_binary(&self, path: impl AsRef<Path>, opts: &WriteOptions) -> Result<(), GeError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        if opts.weights == WeightMode::Inline {
            let writer = writer::Writer { opts };
            let encoded = self.encode_checked(&writer, &file)?;
            let io = |source| GeError::Io {
                file: file.clone(),
                source,
            };
            let mut out = std::io::BufWriter::with_capacity(
                1 << 20,
                std::fs::File::create(path).map_err(io)?,
            );
            encoded.write_to(&mut out).map_err(io)?;
            return out.flush().map_err(io);
        }
        let (def, weights) = self.to_model_def_and_weights(opts);
        write_out(path, &encode(&def, &file)?, &weights)
    }

    /// Inline weights: streamed op by op ([`stream`]); the other modes rewrite the ModelDef.
    fn encode_binary(&self, opts: &WriteOptions, file: &str) -> Result<Bytes, GeError> {
        if opts.weights != WeightMode::Inline {
            return encode(&self.to_model_def_and_weights(opts).0, file);
        }
        // In memory the whole model is kept anyway: nothing is encoded twice.
        let opts = WriteOptions {
            keep_bytes: Some(usize::MAX),
            ..opts.clone()
        };
        let writer = writer::Writer { opts: &opts };
        Ok(Bytes::from(self.encode_checked(&writer, file)?.concat()))
    }

    /// The binary ModelDef with inline weights, ready to write, within protobuf's size limit.
    fn encode_checked<'a>(
        &'a self,
        writer: &'a writer::Writer<'a>,
        file: &str,
    ) -> Result<stream::Encoded<'a>, GeError> {
        let encoded = writer.encode_model(self);
        if encoded.len() > MAX_MODEL_BYTES {
            return Err(too_large(file, encoded.len()));
        }
        Ok(encoded)
    }
}

fn encode(def: &ModelDef, file: &str) -> Result<Bytes, GeError> {
    let len = def.encoded_len() as u64;
    if len > MAX_MODEL_BYTES {
        return Err(too_large(file, len));
    }
    Ok(Bytes::from(def.encode_to_vec()))
}

fn write_out(path: &Path, data: &[u8], weights: &[ExternalWeight]) -> Result<(), GeError> {
    let dir = path.parent().unwrap_or(Path::new(""));
    weights::write_files(dir, weights)
        .and_then(|()| std::fs::write(path, data))
        .map_err(|source| GeError::Io {
            file: path.display().to_string(),
            source,
        })
}
