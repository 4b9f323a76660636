//! Loading and saving models by file extension: `.onnx`; GE ModelDef binary (`.pb`, `.air`,
//! `.ge`) and text (`.txt`, `.pbtxt`); writing also to the readable dump (`.dump`) and DOT.

use std::path::{Path, PathBuf};

use rge_formats::ge::{GeModel, WriteOptions};
use rge_formats::onnx::{self, OnnxModel};
use rge_ir::ComputeGraph;

/// A model file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    Onnx,
    GeBinary,
    GeText,
    Dump,
    Dot,
}

impl FileFormat {
    pub fn name(self) -> &'static str {
        match self {
            FileFormat::Onnx => "onnx",
            FileFormat::GeBinary => "ge-modeldef-binary",
            FileFormat::GeText => "ge-modeldef-text",
            FileFormat::Dump => "dump",
            FileFormat::Dot => "dot",
        }
    }

    /// The format an extension names.
    pub fn from_path(path: &Path) -> Result<Self, ModelError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase())
            .unwrap_or_default();
        Ok(match ext.as_str() {
            "onnx" => FileFormat::Onnx,
            "pb" | "air" | "ge" => FileFormat::GeBinary,
            "txt" | "pbtxt" => FileFormat::GeText,
            "dump" => FileFormat::Dump,
            "dot" => FileFormat::Dot,
            _ => {
                return Err(ModelError::UnknownExtension {
                    path: path.to_path_buf(),
                })
            }
        })
    }
}

/// The newest ONNX opset rge knows: onnx 1.23.2's, whose operators rge's prototypes follow and
/// whose node tests CI runs. A model importing a newer one is refused (its ops may mean what
/// rge does not know).
pub const NEWEST_ONNX_OPSET: i64 = 28;

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{}: imports ONNX opset {version} (domain `{domain}`), newer than any rge knows (the newest is {NEWEST_ONNX_OPSET}); export the model for opset {NEWEST_ONNX_OPSET} or older", path.display())]
    UnknownOpset {
        path: PathBuf,
        domain: String,
        version: i64,
    },
    #[error("{}: unknown file extension (expected .onnx, .pb, .txt, .pbtxt, .dump or .dot)", path.display())]
    UnknownExtension { path: PathBuf },
    #[error("{}: not a model rge reads ({tried})", path.display())]
    Unrecognised { path: PathBuf, tried: String },
    #[error("{}: {format} files can be written, not read", path.display())]
    WriteOnly { path: PathBuf, format: &'static str },
    #[error(transparent)]
    Onnx(#[from] onnx::OnnxError),
    #[error(transparent)]
    Ge(#[from] rge_formats::ge::GeError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A loaded model: the graph plus what its format keeps around it.
#[derive(Debug)]
pub enum Model {
    Onnx(OnnxModel),
    Ge(GeModel),
}

impl Model {
    pub fn graph(&self) -> &ComputeGraph {
        match self {
            Model::Onnx(m) => &m.graph,
            Model::Ge(m) => &m.graph,
        }
    }
    pub fn graph_mut(&mut self) -> &mut ComputeGraph {
        match self {
            Model::Onnx(m) => &mut m.graph,
            Model::Ge(m) => &mut m.graph,
        }
    }
    pub fn format(&self) -> FileFormat {
        match self {
            Model::Onnx(_) => FileFormat::Onnx,
            Model::Ge(_) => FileFormat::GeBinary,
        }
    }
}

/// Reads a model. A known extension names the format; any other file (a compiled `.om`, a
/// `.bin`, no extension) is recognised by its content: ONNX, then GE ModelDef binary, then
/// GE text.
pub fn load(path: &Path) -> Result<(Model, FileFormat), ModelError> {
    let format = match FileFormat::from_path(path) {
        Ok(f) => f,
        Err(ModelError::UnknownExtension { .. }) => return load_by_content(path),
        Err(e) => return Err(e),
    };
    let model = match format {
        FileFormat::Onnx => Model::Onnx(check_opsets(path, onnx::import_file(path)?)?),
        FileFormat::GeBinary => Model::Ge(GeModel::read_binary(path)?),
        FileFormat::GeText => Model::Ge(GeModel::read_text(path)?),
        FileFormat::Dump | FileFormat::Dot => {
            return Err(ModelError::WriteOnly {
                path: path.to_path_buf(),
                format: format.name(),
            })
        }
    };
    Ok((model, format))
}

/// [`load`], but an ONNX model's inline weights stay slices of the mapped file, returned beside
/// it (`rge_formats::onnx::import_file_mapped`): for the tensor-parallel pass, which keeps a
/// part of each weight; `rge_formats::onnx::own_weights` after it. Other formats load as
/// [`load`] does (no file returned).
pub fn load_mapped(
    path: &Path,
) -> Result<(Model, Option<rge_formats::mmap::FileBytes>), ModelError> {
    if FileFormat::from_path(path).ok() == Some(FileFormat::Onnx) {
        let (m, file) = onnx::import_file_mapped(path)?;
        return Ok((Model::Onnx(check_opsets(path, m)?), Some(file)));
    }
    load(path).map(|(m, _)| (m, None))
}

/// Refuses an ONNX model importing a default-domain opset newer than [`NEWEST_ONNX_OPSET`].
pub fn check_opsets(path: &Path, m: OnnxModel) -> Result<OnnxModel, ModelError> {
    for (domain, version) in &m.opset_imports {
        if (domain.is_empty() || domain == "ai.onnx") && *version > NEWEST_ONNX_OPSET {
            return Err(ModelError::UnknownOpset {
                path: path.to_path_buf(),
                domain: if domain.is_empty() {
                    "ai.onnx".into()
                } else {
                    domain.clone()
                },
                version: *version,
            });
        }
    }
    Ok(m)
}

fn load_by_content(path: &Path) -> Result<(Model, FileFormat), ModelError> {
    let bytes = bytes::Bytes::from(std::fs::read(path).map_err(|source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    })?);
    let origin = path.display().to_string();
    // A compiled model is a GE ModelDef carrying rge's marker: try that first, so an ONNX
    // decoder never mistakes it for a model of its own.
    if rge_runtime::saved::has_compiled_marker(&bytes) {
        if let Ok(m) = GeModel::from_binary_bytes(bytes.clone(), &origin) {
            return Ok((Model::Ge(m), FileFormat::GeBinary));
        }
    }
    let onnx_err = match onnx::import_bytes_in(bytes.clone(), &origin, path.parent()) {
        Ok(m) => return Ok((Model::Onnx(check_opsets(path, m)?), FileFormat::Onnx)),
        Err(e) => e.to_string(),
    };
    let ge_err = match GeModel::from_binary_bytes(bytes.clone(), &origin) {
        Ok(m) if m.graph.node_count(m.graph.root()) > 0 => {
            return Ok((Model::Ge(m), FileFormat::GeBinary))
        }
        Ok(_) => "no graph".to_string(),
        Err(e) => e.to_string(),
    };
    let text_err = match std::str::from_utf8(&bytes).map(|t| GeModel::from_text_str(t, &origin)) {
        Ok(Ok(m)) => return Ok((Model::Ge(m), FileFormat::GeText)),
        Ok(Err(e)) => e.to_string(),
        Err(_) => "not UTF-8".to_string(),
    };
    Err(ModelError::Unrecognised {
        path: path.to_path_buf(),
        tried: format!("ONNX: {onnx_err}; GE ModelDef binary: {ge_err}; GE text: {text_err}"),
    })
}

/// Writes a model in the format the extension names.
pub fn save(model: &Model, path: &Path) -> Result<(), ModelError> {
    let io = |source| ModelError::Io {
        path: path.to_path_buf(),
        source,
    };
    match FileFormat::from_path(path)? {
        FileFormat::Onnx => match model {
            Model::Onnx(m) => onnx::write_file(path, m)?,
            Model::Ge(m) => onnx::write_file(path, &m.graph)?,
        },
        f @ (FileFormat::GeBinary | FileFormat::GeText) => {
            let owned;
            let ge = match model {
                Model::Ge(m) => m,
                Model::Onnx(m) => {
                    owned = GeModel::new(m.graph.clone());
                    &owned
                }
            };
            let opts = WriteOptions::default();
            if f == FileFormat::GeBinary {
                ge.write_binary(path, &opts)?
            } else {
                ge.write_text(path, &opts)?
            }
        }
        FileFormat::Dump => std::fs::write(path, model.graph().dump_text()).map_err(io)?,
        FileFormat::Dot => std::fs::write(path, model.graph().dump_dot()).map_err(io)?,
    }
    Ok(())
}
