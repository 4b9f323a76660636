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

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("{}: unknown file extension (expected .onnx, .pb, .txt, .pbtxt, .dump or .dot)", path.display())]
    UnknownExtension { path: PathBuf },
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

/// Reads a model; the format comes from the extension.
pub fn load(path: &Path) -> Result<(Model, FileFormat), ModelError> {
    let format = FileFormat::from_path(path)?;
    let model = match format {
        FileFormat::Onnx => Model::Onnx(onnx::import_file(path)?),
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
