//! External tensor data (`data_location: EXTERNAL`): `location` (a relative path inside the
//! model's directory), `offset` and `length` (decimal strings). Paths are confined to the model's
//! directory: absolute paths, `..` and symbolic links that lead outside are refused; every range
//! is checked against the file's size before any memory is allocated for it.
//!
//! Each data file is memory-mapped once (`crate::mmap`); a large tensor becomes one owned aligned
//! copy of its range, whose pages are handed back (small ones stay slices of the map).

use std::collections::HashMap;
use std::fs::File;
use std::path::{Component, Path, PathBuf};

use bytes::Bytes;

use super::error::{OnnxError, Result};
use super::tensor::At;
use crate::mmap::FileBytes;
use crate::onnx_proto::TensorProto;

/// Resolves and reads external data for one model.
#[derive(Debug, Default)]
pub(crate) struct External {
    /// The model's directory; `None` when the model did not come from a file.
    base: Option<PathBuf>,
    /// Canonical base, computed on first use.
    base_canon: Option<PathBuf>,
    files: HashMap<PathBuf, FileBytes>,
    /// The model file's bytes (weights inside it are copied out of it by [`External::own`]).
    model: Option<FileBytes>,
}

impl External {
    pub(crate) fn new(base: Option<PathBuf>) -> Self {
        External {
            base,
            ..Default::default()
        }
    }

    /// With the model file's bytes, so that inline weights are made owned and aligned.
    pub(crate) fn with_model_file(mut self, file: FileBytes) -> Self {
        self.model = Some(file);
        self
    }

    /// `data`, a slice of the model file, as the weight's one owned aligned copy (the file's
    /// pages under it handed back: `crate::mmap`). A model imported from memory keeps slices
    /// of the caller's buffer (there are no pages to hand back; the runtime copies what is
    /// not aligned).
    pub(crate) fn own(&self, data: &Bytes) -> Bytes {
        match &self.model {
            Some(f) => f.owned_aligned(data),
            None => data.clone(),
        }
    }

    /// The bytes of `tp`'s external data, which must be exactly `expect` bytes.
    pub(crate) fn load(&mut self, tp: &TensorProto, expect: i64, at: &At) -> Result<Bytes> {
        let err = |msg: String| OnnxError::ExternalData {
            file: at.file.to_string(),
            tensor: if tp.name.is_empty() {
                at.at.to_string()
            } else {
                tp.name.clone()
            },
            msg,
        };
        let (mut location, mut offset, mut length) = (None, None, None);
        for e in &tp.external_data {
            match e.key.as_str() {
                "location" => location = Some(e.value.as_str()),
                "offset" => offset = Some(e.value.as_str()),
                "length" => length = Some(e.value.as_str()),
                _ => {}
            }
        }
        let location = location
            .filter(|l| !l.is_empty())
            .ok_or_else(|| err("no `location` key".into()))?;
        let parse = |key: &str, v: &str| {
            v.trim()
                .parse::<u64>()
                .map_err(|_| err(format!("`{key}` is `{v}`, not a byte count")))
        };
        let offset = offset.map(|v| parse("offset", v)).transpose()?.unwrap_or(0);
        let length = length.map(|v| parse("length", v)).transpose()?;
        let path = self.resolve(location).map_err(err)?;
        let file = match self.files.get(&path) {
            Some(d) => d.clone(),
            None => {
                let f = File::open(&path).map_err(|e| err(format!("`{location}`: {e}")))?;
                let meta = f
                    .metadata()
                    .map_err(|e| err(format!("`{location}`: {e}")))?;
                if !meta.is_file() {
                    return Err(err(format!("`{location}` is not a regular file")));
                }
                let d = if meta.len() == 0 {
                    FileBytes::in_memory(Bytes::new())
                } else {
                    crate::mmap::map_file_bytes(&f)
                        .map_err(|e| err(format!("mapping `{location}`: {e}")))?
                };
                self.files.insert(path.clone(), d.clone());
                d
            }
        };
        let data = file.bytes();
        let size = data.len() as u64;
        let length = length.unwrap_or_else(|| size.saturating_sub(offset));
        let end = offset.checked_add(length).filter(|&e| e <= size);
        if end.is_none() {
            return Err(err(format!(
                "bytes {offset}..{} are beyond the end of `{location}` ({size} bytes)",
                offset as u128 + length as u128
            )));
        }
        if u64::try_from(expect).ok() != Some(length) {
            return Err(err(format!(
                "`length` is {length} bytes; the tensor's dims and type need {expect}"
            )));
        }
        // In range of a mapped length, so both fit usize.
        Ok(file.owned_aligned(&data.slice(offset as usize..(offset + length) as usize)))
    }

    /// The canonical path of `location`, checked to lie inside the model's directory.
    fn resolve(&mut self, location: &str) -> Result<PathBuf, String> {
        let Some(base) = &self.base else {
            return Err(format!(
                "`{location}`: the model was not read from a file, so there is no directory to \
                 resolve external data in"
            ));
        };
        let rel = Path::new(location);
        if !rel
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(format!(
                "`{location}` must be a relative path inside the model's directory"
            ));
        }
        if self.base_canon.is_none() {
            let c = base
                .canonicalize()
                .map_err(|e| format!("model directory `{}`: {e}", base.display()))?;
            self.base_canon = Some(c);
        }
        let canon_base = self.base_canon.as_ref().expect("set above");
        let full = base
            .join(rel)
            .canonicalize()
            .map_err(|e| format!("`{location}`: {e}"))?;
        if !full.starts_with(canon_base) {
            return Err(format!(
                "`{location}` leads outside the model's directory (through a link)"
            ));
        }
        Ok(full)
    }
}
