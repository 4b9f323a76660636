//! Per-stage graph dumps, as GE's stage dumps: one file `NN_<stage>.txt` per stage with
//! rge-ir's `dump_text()`, into the directory of option `rge.dumpGraph` or `RGE_DUMP_GRAPH`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rge_ir::ComputeGraph;

use crate::error::{CompileError, CompileResult};

/// Writes numbered stage dumps (or nothing, without a directory).
#[derive(Debug, Default)]
pub struct Dumper {
    dir: Option<PathBuf>,
    next: u32,
    written: Vec<PathBuf>,
}

impl Dumper {
    /// A dumper into `dir` (created if missing); `None` dumps nothing.
    pub fn new(dir: Option<PathBuf>) -> CompileResult<Self> {
        if let Some(d) = &dir {
            std::fs::create_dir_all(d).map_err(|e| CompileError::Dump {
                path: d.display().to_string(),
                message: e.to_string(),
            })?;
        }
        Ok(Dumper {
            dir,
            next: 0,
            written: Vec::new(),
        })
    }

    pub fn enabled(&self) -> bool {
        self.dir.is_some()
    }

    /// The files written so far.
    pub fn written(&self) -> &[PathBuf] {
        &self.written
    }

    fn write(&mut self, stage: &str, text: impl FnOnce() -> String) -> CompileResult<()> {
        let Some(dir) = &self.dir else {
            return Ok(());
        };
        let path = dir.join(format!("{:02}_{stage}.txt", self.next));
        self.next += 1;
        write_file(&path, &text())?;
        self.written.push(path);
        Ok(())
    }

    /// Dumps one graph after `stage`.
    pub fn graph(&mut self, stage: &str, graph: &ComputeGraph) -> CompileResult<()> {
        self.write(stage, || graph.dump_text())
    }

    /// Dumps partition graphs after `stage`, one after another.
    pub fn partitions(&mut self, stage: &str, graphs: &[ComputeGraph]) -> CompileResult<()> {
        self.write(stage, || {
            let mut s = String::new();
            for g in graphs {
                let _ = writeln!(s, "{}", g.dump_text());
            }
            s
        })
    }
}

fn write_file(path: &Path, text: &str) -> CompileResult<()> {
    std::fs::write(path, text).map_err(|e| CompileError::Dump {
        path: path.display().to_string(),
        message: e.to_string(),
    })
}
