//! ONNX import and export for rge-ir.
//!
//! [`import_file`] / [`import_bytes`] read an ONNX `ModelProto` into an [`OnnxModel`], whose
//! `graph` is an rge [`ComputeGraph`] (checked with `verify()`); [`export`] / [`write_file`] write
//! an `OnnxModel` or a bare `ComputeGraph` back as ONNX. The mapping, the attributes rge adds
//! (all named `_onnx_*`, listed in [`names`]) and every decision about odd input are in
//! `docs/onnx.md`.
//!
//! Weights are in memory once: the model is decoded from one [`Bytes`] buffer (a map of the
//! file), and each large initializer's `raw_data` becomes one owned, 16-byte-aligned copy whose
//! file pages are handed back (`crate::mmap`), which the runtime then shares without copying;
//! small ones stay slices of the buffer.
//!
//! ```no_run
//! let model = rge_formats::onnx::import_file("model.onnx")?;
//! println!("{}", model.graph.dump_text());
//! rge_formats::onnx::write_file("copy.onnx", &model)?;
//! # Ok::<(), rge_formats::onnx::OnnxError>(())
//! ```

mod attrs;
mod decode;
mod error;
mod export;
mod external;
mod import;
pub mod names;
mod nodes;
mod plan;
mod scope;
mod tensor;
mod types;

use std::path::{Path, PathBuf};

use bytes::Bytes;
use prost::Message;
use rge_ir::ComputeGraph;

use crate::mmap::FileBytes;

pub use error::{OnnxError, Result};
pub use tensor::{decode_strings, encode_strings};

use crate::onnx_proto::{FunctionProto, ModelProto};
use nodes::NodeTable;

/// An imported ONNX model: the graph and the model-level fields ONNX keeps around it.
#[derive(Debug, Clone)]
pub struct OnnxModel {
    /// The root graph with its subgraphs.
    pub graph: ComputeGraph,
    /// `ModelProto.ir_version`.
    pub ir_version: i64,
    /// `(domain, version)` of each operator set import, in file order.
    pub opset_imports: Vec<(String, i64)>,
    pub producer_name: String,
    pub producer_version: String,
    pub domain: String,
    pub model_version: i64,
    pub doc_string: String,
    /// `(key, value)` pairs in file order.
    pub metadata_props: Vec<(String, String)>,
    /// Model-local functions, kept as they are and written back on export.
    pub functions: Vec<FunctionProto>,
    /// What the importer changed to fit rge (renamed values and nodes); empty for a clean model.
    pub warnings: Vec<String>,
}

/// Equality ignores `warnings`.
impl PartialEq for OnnxModel {
    fn eq(&self, o: &Self) -> bool {
        self.graph == o.graph
            && self.ir_version == o.ir_version
            && self.opset_imports == o.opset_imports
            && self.producer_name == o.producer_name
            && self.producer_version == o.producer_version
            && self.domain == o.domain
            && self.model_version == o.model_version
            && self.doc_string == o.doc_string
            && self.metadata_props == o.metadata_props
            && self.functions == o.functions
    }
}

impl OnnxModel {
    /// A model around `graph` with the versions [`export`] would choose for it.
    pub fn new(graph: ComputeGraph) -> Self {
        let opset_imports = export::graph_opsets(&graph);
        OnnxModel {
            ir_version: export::ir_version_for(&opset_imports),
            opset_imports,
            graph,
            producer_name: "rge".into(),
            producer_version: env!("CARGO_PKG_VERSION").into(),
            domain: String::new(),
            model_version: 0,
            doc_string: String::new(),
            metadata_props: Vec::new(),
            functions: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// Converts one decoded `TensorProto` (a `.pb` test input, say) into a tensor; `origin` names
/// it in messages. External data is refused (there is no model directory to resolve it in).
pub fn tensor_from_proto(
    tp: &crate::onnx_proto::TensorProto,
    origin: &str,
) -> Result<rge_ir::Tensor> {
    let mut ext = external::External::new(None);
    let at = tensor::At {
        file: origin,
        at: &"tensor",
    };
    tensor::tensor_from_proto(tp, &mut ext, &at)
}

/// The `TensorProto` of a tensor (raw data or string data), named `name`.
pub fn tensor_to_proto(
    t: &rge_ir::Tensor,
    name: &str,
) -> std::result::Result<crate::onnx_proto::TensorProto, String> {
    tensor::tensor_to_proto(t, name)
}

/// Reads and imports an ONNX file. External data is resolved in the file's directory.
pub fn import_file(path: impl AsRef<Path>) -> Result<OnnxModel> {
    // Mapped, not read: each weight is copied once out of the map, its pages handed back.
    let (file, origin, dir) = open_model(path.as_ref())?;
    let bytes = file.bytes().clone();
    let (model, nodes) = decode(&bytes, &origin)?;
    let ext = external::External::new(Some(dir)).with_model_file(file);
    let m = build(&model, nodes.as_ref(), &origin, ext);
    drop_model(model, nodes);
    verified(m?, &origin)
}

/// Reads and imports an ONNX file, leaving its inline weights as slices of the mapped file
/// (returned beside the model): nothing of a weight is in memory until it is read. For passes
/// that keep only part of each weight (the comm engine's tensor-parallel sharding), so that
/// the parts another process keeps are never read here; call [`own_weights`] after them.
pub fn import_file_mapped(path: impl AsRef<Path>) -> Result<(OnnxModel, FileBytes)> {
    let (file, origin, dir) = open_model(path.as_ref())?;
    let bytes = file.bytes().clone();
    let (model, nodes) = decode(&bytes, &origin)?;
    let m = build(
        &model,
        nodes.as_ref(),
        &origin,
        external::External::new(Some(dir)),
    );
    drop_model(model, nodes);
    Ok((verified(m?, &origin)?, file))
}

/// `bytes` decoded, a large graph's nodes apart (`decode.rs`).
fn decode<'b>(bytes: &'b Bytes, origin: &str) -> Result<(ModelProto, Option<NodeTable<'b>>)> {
    decode::decode_model(bytes).map_err(|source| OnnxError::Decode {
        file: origin.to_string(),
        source,
    })
}

/// Drops a decoded model, a large one on another thread: freeing what is left of it (the
/// graph's outputs, the nodes decoded whole) is a few milliseconds that nothing waits for.
fn drop_model(model: ModelProto, nodes: Option<NodeTable<'_>>) {
    if let Some(t) = nodes {
        let protos = t.into_protos();
        rayon::spawn(move || drop((model, protos)));
    }
}

/// The file mapped, the name for messages and the directory external data is resolved in.
fn open_model(path: &Path) -> Result<(FileBytes, String, PathBuf)> {
    let origin = path.display().to_string();
    let file = crate::mmap::open_file(path).map_err(|source| OnnxError::Io {
        file: origin.clone(),
        source,
    })?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((file, origin, dir))
}

/// Gives every constant of `graph` (subgraphs too) that is still a slice of `file` its one
/// owned, aligned copy, then hands every page of the file back to the OS: after a pass that
/// replaced some weights by parts of them, what is left is in memory once and the parts read
/// for the pass are not kept. Constants of other memory are left as they are.
pub fn own_weights(graph: &mut ComputeGraph, file: &FileBytes) {
    for n in graph.all_nodes(graph.root()) {
        let Some(op) = graph.op_mut(n) else { continue };
        if let Some(rge_ir::AttrValue::Tensor(t)) = op.attrs_mut().get_mut("value") {
            if file.contains(&t.data) {
                t.data = file.owned_aligned(&t.data);
            }
        }
    }
    file.release_pages();
}

/// Imports a model from memory. `origin` names the model in messages; when it is the path of an
/// existing file (or has a directory part), external data is resolved in that directory,
/// otherwise tensors with external data are an error.
pub fn import_bytes(bytes: Bytes, origin: &str) -> Result<OnnxModel> {
    let p = Path::new(origin);
    let dir = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => Some(d.to_path_buf()),
        _ if p.is_file() => Some(PathBuf::from(".")),
        _ => None,
    };
    import_bytes_in(bytes, origin, dir.as_deref())
}

/// Imports a model from memory, resolving external data in `base_dir` (none: refused).
pub fn import_bytes_in(bytes: Bytes, origin: &str, base_dir: Option<&Path>) -> Result<OnnxModel> {
    let (model, nodes) = decode(&bytes, origin)?;
    let ext = external::External::new(base_dir.map(Path::to_path_buf));
    let m = build(&model, nodes.as_ref(), origin, ext);
    drop_model(model, nodes);
    verified(m?, origin)
}

/// Imports a decoded `ModelProto` (its `raw_data` buffers are shared, not copied).
pub fn import_proto(
    model: &ModelProto,
    origin: &str,
    base_dir: Option<&Path>,
) -> Result<OnnxModel> {
    import_proto_with(
        model,
        origin,
        external::External::new(base_dir.map(Path::to_path_buf)),
    )
}

fn import_proto_with(
    model: &ModelProto,
    origin: &str,
    ext: external::External,
) -> Result<OnnxModel> {
    verified(build(model, None, origin, ext)?, origin)
}

/// The model, its graph not yet verified. `nodes`: the model's graph's nodes when `decode`
/// took them apart.
fn build(
    model: &ModelProto,
    nodes: Option<&NodeTable<'_>>,
    origin: &str,
    ext: external::External,
) -> Result<OnnxModel> {
    let mut imp = import::Importer::new(origin, ext, model, nodes);
    imp.import_root(model)?;
    let graph = std::mem::take(&mut imp.g);
    Ok(OnnxModel {
        graph,
        ir_version: model.ir_version,
        opset_imports: model
            .opset_import
            .iter()
            .map(|o| (o.domain.clone(), o.version))
            .collect(),
        producer_name: model.producer_name.clone(),
        producer_version: model.producer_version.clone(),
        domain: model.domain.clone(),
        model_version: model.model_version,
        doc_string: model.doc_string.clone(),
        metadata_props: model
            .metadata_props
            .iter()
            .map(|p| (p.key.clone(), p.value.clone()))
            .collect(),
        functions: model.functions.clone(),
        warnings: imp.warnings,
    })
}

/// `m` once its graph passes `verify()`.
fn verified(m: OnnxModel, origin: &str) -> Result<OnnxModel> {
    m.graph.verify().map_err(|source| OnnxError::Ir {
        file: origin.to_string(),
        at: format!("graph `{}`", m.graph.name()),
        source: Box::new(source),
    })?;
    Ok(m)
}

/// What [`export`] writes: an imported model, or a bare graph (versions then come from the
/// graph's `_onnx_opset_*` attributes, else defaults).
#[derive(Clone, Copy)]
pub enum Source<'a> {
    Model(&'a OnnxModel),
    Graph(&'a ComputeGraph),
}

impl<'a> From<&'a OnnxModel> for Source<'a> {
    fn from(m: &'a OnnxModel) -> Self {
        Source::Model(m)
    }
}

impl<'a> From<&'a ComputeGraph> for Source<'a> {
    fn from(g: &'a ComputeGraph) -> Self {
        Source::Graph(g)
    }
}

/// The ONNX `ModelProto` of a model or graph. Tensor data is shared with the graph, not copied.
pub fn export<'a>(src: impl Into<Source<'a>>) -> Result<ModelProto> {
    match src.into() {
        Source::Model(m) => export::export_model(m),
        Source::Graph(g) => export::export_graph(g),
    }
}

/// Exports and writes an ONNX file.
pub fn write_file<'a>(path: impl AsRef<Path>, src: impl Into<Source<'a>>) -> Result<()> {
    let path = path.as_ref();
    let proto = export(src)?;
    std::fs::write(path, proto.encode_to_vec()).map_err(|source| OnnxError::Io {
        file: path.display().to_string(),
        source,
    })
}
