//! Weights outside the model: GE's separated weights (`location` + `length` attrs on
//! Const/Constant, reference §7.6), read relative to the model file's directory and written
//! to `air_weight/<model>/<type>_<graph>_<op>_file`; and dropping weights for dumps.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use bytes::Bytes;
use rge_ir::{AttrValue, OpDesc, Tensor};

use super::desc::check_tensor;
use super::error::{fault, Fault, Within};
use super::keys::{is_const, LENGTH, LOCATION, WEIGHTS};
use super::reader::Reader;
use crate::ge_proto::attr_def::Value as V;
use crate::ge_proto::{AttrDef, ModelDef};

/// A weight file to write next to the model: `location` is relative to the model's directory,
/// '/'-separated.
#[derive(Debug, Clone, PartialEq)]
pub struct ExternalWeight {
    pub location: String,
    pub data: Bytes,
}

/// `location` resolved under `base`; it must stay inside `base` (no absolute path, no `..`
/// above it, no symlink out of it).
fn resolve(base: &Path, location: &str) -> Result<PathBuf, Fault> {
    let rel = Path::new(location);
    let mut depth = 0i64;
    for c in rel.components() {
        match c {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return Err(fault(format!(
                        "weight path `{location}` escapes the model's directory"
                    )));
                }
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(fault(format!(
                    "weight path `{location}` is absolute; it must be relative to the model"
                )))
            }
        }
    }
    if depth == 0 {
        return Err(fault(format!("weight path `{location}` names no file")));
    }
    let full = base.join(rel);
    let open_err =
        |e: std::io::Error| fault(format!("cannot open weight file `{}`: {e}", full.display()));
    let cbase = base.canonicalize().map_err(open_err)?;
    let cfull = full.canonicalize().map_err(open_err)?;
    if !cfull.starts_with(&cbase) {
        return Err(fault(format!(
            "weight path `{location}` leads out of the model's directory"
        )));
    }
    Ok(cfull)
}

/// The first `length` bytes of the file; the file must hold them.
fn read_prefix(path: &Path, length: u64) -> Result<Bytes, Fault> {
    let err =
        |e: std::io::Error| fault(format!("cannot read weight file `{}`: {e}", path.display()));
    let f = std::fs::File::open(path).map_err(err)?;
    let meta = f.metadata().map_err(err)?;
    if !meta.is_file() {
        return Err(fault(format!(
            "weight path `{}` is not a file",
            path.display()
        )));
    }
    if length > meta.len() {
        return Err(fault(format!(
            "`length` is {length} bytes, but weight file `{}` holds {}",
            path.display(),
            meta.len()
        )));
    }
    let cap = usize::try_from(length).map_err(|_| fault("`length` does not fit in memory"))?;
    let mut buf = Vec::with_capacity(cap);
    f.take(length).read_to_end(&mut buf).map_err(err)?;
    if buf.len() != cap {
        return Err(fault(format!(
            "weight file `{}` shrank while being read",
            path.display()
        )));
    }
    Ok(Bytes::from(buf))
}

impl Reader<'_> {
    /// Loads a Const's separated weights into its `value` attr and drops `location`/`length`.
    /// Without a model directory (or with `keep_external_weights`) the attrs stay as they are.
    pub(crate) fn load_external_weights(&self, op: &mut OpDesc) -> Result<(), Fault> {
        if !is_const(op.op_type()) {
            return Ok(());
        }
        let location = match op.attrs().get(LOCATION) {
            None => return Ok(()),
            Some(AttrValue::String(s)) => s.clone(),
            Some(v) => {
                return Err(fault(format!(
                    "attr `{LOCATION}` is {}, not a string",
                    v.kind_name()
                )))
            }
        };
        let Some(base) = &self.ctx.base_dir else {
            return Ok(());
        };
        if self.ctx.options.keep_external_weights {
            return Ok(());
        }
        let length = match op.attrs().get(LENGTH) {
            Some(AttrValue::Int(n)) => {
                u64::try_from(*n).map_err(|_| fault(format!("attr `{LENGTH}` is {n}")))?
            }
            _ => {
                return Err(fault(format!(
                    "attr `{LOCATION}` comes without an int `{LENGTH}`"
                )))
            }
        };
        let path = resolve(base, &location)?;
        let data = read_prefix(&path, length)?;
        let desc = match op.attrs_mut().remove(WEIGHTS) {
            None => op.output(0).cloned().unwrap_or_default(),
            Some(AttrValue::Tensor(t)) if t.data.is_empty() => t.desc,
            Some(AttrValue::Tensor(_)) => {
                return Err(fault(format!(
                    "the op has inline weights and `{LOCATION}` `{location}`"
                )))
            }
            Some(v) => {
                return Err(fault(format!(
                    "attr `{WEIGHTS}` is {}, not a tensor",
                    v.kind_name()
                )))
            }
        };
        check_tensor(&desc, data.len()).within(|| format!("weights from `{location}`"))?;
        let attrs = op.attrs_mut();
        attrs.set(WEIGHTS, Tensor::new(desc, data));
        attrs.remove(LOCATION);
        attrs.remove(LENGTH);
        Ok(())
    }
}

/// A file-name part: characters other than ASCII letters, digits, '.', '-' and '_' become '_'.
fn file_part(s: &str, default: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        default.to_string()
    } else if s.chars().all(|c| c == '.') {
        "_".repeat(s.len())
    } else {
        s
    }
}

/// Moves the weights of every Const/Constant of the top-level graphs out of `def`: the data is
/// cleared and the op gets `location` and `length` (GE's `SeparateModelDef`).
pub(crate) fn externalize(def: &mut ModelDef) -> Vec<ExternalWeight> {
    let model = file_part(&def.name, "model");
    let mut used = HashSet::new();
    let mut out = Vec::new();
    for gd in &mut def.graph {
        let graph = file_part(&gd.name, "graph");
        for od in &mut gd.op {
            if !is_const(&od.r#type) {
                continue;
            }
            let Some(AttrDef {
                value: Some(V::T(t)),
            }) = od.attr.get_mut(WEIGHTS)
            else {
                continue;
            };
            if t.data.is_empty() {
                continue;
            }
            let data = std::mem::take(&mut t.data);
            let stem = format!(
                "air_weight/{model}/{}_{graph}_{}_file",
                file_part(&od.r#type, "op"),
                file_part(&od.name, "op")
            );
            let mut location = stem.clone();
            let mut k = 1;
            while !used.insert(location.clone()) {
                location = format!("{stem}{k}");
                k += 1;
            }
            od.attr.insert(
                LOCATION.into(),
                AttrDef {
                    value: Some(V::S(Bytes::copy_from_slice(location.as_bytes()))),
                },
            );
            od.attr.insert(
                LENGTH.into(),
                AttrDef {
                    value: Some(V::I(data.len() as i64)),
                },
            );
            out.push(ExternalWeight { location, data });
        }
    }
    out
}

/// Drops the `value` attr of every Const/Constant (a dump without weights, SOURCES.md fact 11).
pub(crate) fn omit(def: &mut ModelDef) {
    for gd in &mut def.graph {
        for od in &mut gd.op {
            if is_const(&od.r#type) {
                od.attr.remove(WEIGHTS);
            }
        }
    }
}

/// Writes the weight files under `dir`.
pub(crate) fn write_files(dir: &Path, weights: &[ExternalWeight]) -> std::io::Result<()> {
    for w in weights {
        let path = dir.join(&w.location);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, &w.data)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_parts_stay_inside() {
        assert_eq!(file_part("conv1/weight:0", "x"), "conv1_weight_0");
        assert_eq!(file_part("", "model"), "model");
        assert_eq!(file_part("..", "model"), "__");
    }

    #[test]
    fn paths_must_stay_relative() {
        let base = std::env::temp_dir();
        assert!(resolve(&base, "../x").is_err());
        assert!(resolve(&base, "a/../../x").is_err());
        assert!(resolve(&base, "/etc/passwd").is_err());
        assert!(resolve(&base, ".").is_err());
    }
}
