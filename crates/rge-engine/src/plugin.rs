//! The host side of the plugin ABI: loading a shared library, checking its ABI version, and
//! wrapping each engine it provides as an [`Engine`]. The library is finalized and unloaded
//! when the last engine from it is dropped (GE's `Finalize` on shutdown).

use std::any::Any;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use rge_ir::{ComputeGraph, NodeId, OpDesc};

use crate::abi::{
    RgeBuf, RgeBytes, RgeEnginePluginEntry, RgeEnginePluginV1, RgePluginHeader,
    RGE_ENGINE_ABI_VERSION, RGE_ENGINE_PLUGIN_ENTRY, RGE_NOT_SUPPORTED, RGE_OK, RGE_SUPPORTED,
};
use crate::attrs::{EngineAttributes, SchedulingFlags};
use crate::builder::{Kernel, KernelBuilder, RunningParams};
use crate::engine::{Engine, EngineOptions};
use crate::error::{EngineError, EngineResult};
use crate::json::{self, EngineDescription};
use crate::optimizer::{GraphOptimizer, OptimizeStage};
use crate::store::{KernelInfoStore, OpInfo, OpTypes, Support};

/// A loaded plugin library with its version-1 table. Finalized, then unloaded, on drop.
pub struct PluginLibrary {
    path: String,
    table: RgeEnginePluginV1,
    // Dropped after `Drop::drop` has called `finalize`.
    _lib: libloading::Library,
}

impl std::fmt::Debug for PluginLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginLibrary")
            .field("path", &self.path)
            .finish()
    }
}

impl Drop for PluginLibrary {
    fn drop(&mut self) {
        // SAFETY: `finalize` comes from the version-1 table of the still-loaded library;
        // it is called once, after `initialize` succeeded, and nothing calls the plugin after.
        let _ = unsafe { (self.table.finalize)() };
    }
}

impl PluginLibrary {
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Calls a plugin function that fills one out buffer, and takes the buffer back.
    fn call(&self, f: impl FnOnce(*mut RgeBuf) -> i32) -> (i32, Vec<u8>) {
        let mut buf = RgeBuf::EMPTY;
        let code = f(&mut buf);
        let bytes = if buf.ptr.is_null() || buf.len == 0 {
            Vec::new()
        } else {
            // SAFETY: the plugin returned `len` readable bytes at `ptr`, owned by it until we
            // hand them to its `free_buf`, which happens right after this copy.
            unsafe { std::slice::from_raw_parts(buf.ptr, buf.len) }.to_vec()
        };
        if !buf.ptr.is_null() {
            // SAFETY: the buffer came from this plugin and is released once.
            unsafe { (self.table.free_buf)(buf) };
        }
        (code, bytes)
    }

    fn error(&self, message: impl Into<String>) -> EngineError {
        EngineError::Plugin {
            path: self.path.clone(),
            message: message.into(),
        }
    }

    fn call_json(&self, what: &str, f: impl FnOnce(*mut RgeBuf) -> i32) -> EngineResult<Value> {
        let (code, bytes) = self.call(f);
        if code != RGE_OK {
            return Err(self.error(format!(
                "{what} failed ({code}): {}",
                String::from_utf8_lossy(&bytes)
            )));
        }
        if bytes.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&bytes)
            .map_err(|e| self.error(format!("{what} returned invalid JSON: {e}")))
    }
}

/// Loads the engine plugin at `path` through its standard entry point.
pub fn load_engine_plugin(
    path: &Path,
    options: &EngineOptions,
) -> EngineResult<Vec<Box<dyn Engine>>> {
    load_engine_plugin_with_entry(path, RGE_ENGINE_PLUGIN_ENTRY, options)
}

/// Loads the engine plugin at `path` through the entry point `entry` (a plugin may export
/// several, e.g. for tests). Refuses a plugin whose ABI version is not
/// [`RGE_ENGINE_ABI_VERSION`] before calling anything else in it.
pub fn load_engine_plugin_with_entry(
    path: &Path,
    entry: &str,
    options: &EngineOptions,
) -> EngineResult<Vec<Box<dyn Engine>>> {
    let shown = path.display().to_string();
    let err = |message: String| EngineError::Plugin {
        path: shown.clone(),
        message,
    };
    // SAFETY: loading a library runs its initializers; engine plugins are trusted code that
    // the user asked to load, as in GE's PluginManager.
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| err(e.to_string()))?;
    let mut symbol = entry.as_bytes().to_vec();
    symbol.push(0);
    // SAFETY: the entry symbol has the type the ABI defines (`RgeEnginePluginEntry`).
    let entry_fn: RgeEnginePluginEntry = unsafe {
        *lib.get::<RgeEnginePluginEntry>(&symbol)
            .map_err(|e| err(format!("no entry point `{entry}`: {e}")))?
    };
    // SAFETY: calling the entry point as the ABI defines; it takes nothing and returns a
    // pointer to a static table (or null).
    let header_ptr = unsafe { entry_fn() };
    if header_ptr.is_null() {
        return Err(err(format!("entry point `{entry}` returned no table")));
    }
    // SAFETY: every version's table starts with `RgePluginHeader`, so reading the header
    // is valid whatever the version.
    let header: RgePluginHeader = unsafe { std::ptr::read(header_ptr) };
    if header.abi_version != RGE_ENGINE_ABI_VERSION {
        return Err(EngineError::AbiVersion {
            path: shown,
            found: header.abi_version,
            expected: RGE_ENGINE_ABI_VERSION,
        });
    }
    let need = std::mem::size_of::<RgeEnginePluginV1>();
    if (header.table_size as usize) < need {
        return Err(err(format!(
            "its version-1 table is {} bytes, at least {need} expected",
            header.table_size
        )));
    }
    // SAFETY: the header says this is a version-1 table of at least the v1 size; the table is
    // static in the library, which stays loaded as long as `PluginLibrary` lives.
    let table: RgeEnginePluginV1 =
        unsafe { std::ptr::read(header_ptr.cast::<RgeEnginePluginV1>()) };

    let opts = serde_json::to_vec(options).map_err(|e| err(e.to_string()))?;
    let mut buf = RgeBuf::EMPTY;
    // SAFETY: version-1 `initialize`, called once, first; `opts` outlives the call.
    let code = unsafe { (table.initialize)(RgeBytes::from_slice(&opts), &mut buf) };
    let message = if buf.ptr.is_null() {
        String::new()
    } else {
        // SAFETY: the plugin returned `len` bytes at `ptr`; released right after.
        let s = String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(buf.ptr, buf.len) })
            .into_owned();
        // SAFETY: the buffer came from this plugin and is released once.
        unsafe { (table.free_buf)(buf) };
        s
    };
    if code != RGE_OK {
        return Err(err(format!("initialize failed ({code}): {message}")));
    }
    let library = Arc::new(PluginLibrary {
        path: shown,
        table,
        _lib: lib,
    });
    // SAFETY: version-1 `get_engines` with a valid out buffer.
    let doc = library.call_json("get_engines", |out| unsafe { (table.get_engines)(out) })?;
    let descs = json::engines_from_json(&doc).map_err(|m| library.error(m))?;
    let mut engines: Vec<Box<dyn Engine>> = Vec::with_capacity(descs.len());
    for (index, desc) in descs.into_iter().enumerate() {
        desc.attrs
            .validate()
            .map_err(|e| library.error(e.to_string()))?;
        engines.push(Box::new(PluginEngine::new(
            library.clone(),
            index as u32,
            desc,
        )));
    }
    Ok(engines)
}

/// One engine of a plugin.
pub struct PluginEngine {
    attrs: EngineAttributes,
    flags: SchedulingFlags,
    store: PluginStore,
    optimizer: Option<PluginOptimizer>,
    builder: Option<PluginBuilder>,
}

impl PluginEngine {
    fn new(lib: Arc<PluginLibrary>, index: u32, desc: EngineDescription) -> Self {
        let name = desc.attrs.name.clone();
        let info = |partial, asynch| OpInfo {
            engine: name.clone(),
            kernel_lib: desc.kernel_lib.clone(),
            compute_cost: desc.attrs.compute_cost,
            flag_partial: partial,
            flag_async: asynch,
        };
        let infos: BTreeMap<String, OpInfo> = desc
            .ops
            .iter()
            .map(|(t, p, a)| (t.clone(), info(*p, *a)))
            .collect();
        let any = desc.any_op.then(|| info(false, false));
        let optimizer = (!desc.optimizer_stages.is_empty() && lib.table.optimize_graph.is_some())
            .then(|| PluginOptimizer {
                lib: lib.clone(),
                index,
                name: name.clone(),
                stages: desc.optimizer_stages.clone(),
            });
        let builder = (desc.builder
            && lib.table.calc_running_params.is_some()
            && lib.table.generate_task.is_some())
        .then(|| PluginBuilder {
            lib: lib.clone(),
            index,
            name: name.clone(),
        });
        PluginEngine {
            attrs: desc.attrs,
            flags: desc.flags,
            store: PluginStore {
                lib,
                index,
                name,
                kernel_lib: desc.kernel_lib,
                infos,
                any,
            },
            optimizer,
            builder,
        }
    }

    /// The library this engine comes from.
    pub fn library(&self) -> &PluginLibrary {
        &self.store.lib
    }
}

impl Engine for PluginEngine {
    fn attributes(&self) -> &EngineAttributes {
        &self.attrs
    }
    fn scheduling(&self) -> SchedulingFlags {
        self.flags
    }
    fn kernel_store(&self) -> Option<&dyn KernelInfoStore> {
        Some(&self.store)
    }
    fn graph_optimizer(&self) -> Option<&dyn GraphOptimizer> {
        self.optimizer.as_ref().map(|o| o as &dyn GraphOptimizer)
    }
    fn kernel_builder(&self) -> Option<&dyn KernelBuilder> {
        self.builder.as_ref().map(|b| b as &dyn KernelBuilder)
    }
}

struct PluginStore {
    lib: Arc<PluginLibrary>,
    index: u32,
    name: String,
    kernel_lib: String,
    infos: BTreeMap<String, OpInfo>,
    any: Option<OpInfo>,
}

impl KernelInfoStore for PluginStore {
    fn kernel_lib_name(&self) -> &str {
        &self.kernel_lib
    }
    fn op_info(&self, op_type: &str) -> Option<&OpInfo> {
        self.infos.get(op_type).or(self.any.as_ref())
    }
    fn op_types(&self) -> OpTypes {
        if self.any.is_some() {
            OpTypes::Any
        } else {
            OpTypes::Listed(self.infos.keys().cloned().collect())
        }
    }
    fn check_supported(&self, op: &OpDesc) -> Support {
        let doc = json::op_json(op).to_string();
        let f = self.lib.table.check_supported;
        // SAFETY: version-1 `check_supported`; `doc` outlives the call; thread-safe per ABI.
        let (code, bytes) = self
            .lib
            .call(|out| unsafe { f(self.index, RgeBytes::from_slice(doc.as_bytes()), out) });
        match code {
            RGE_SUPPORTED => Support::Yes,
            RGE_NOT_SUPPORTED => Support::No(String::from_utf8_lossy(&bytes).into_owned()),
            c => Support::No(format!(
                "plugin error {c} in check_supported: {}",
                String::from_utf8_lossy(&bytes)
            )),
        }
    }
    fn compile_ops(&self, graph: &mut ComputeGraph, nodes: &[NodeId]) -> EngineResult<()> {
        let Some(f) = self.lib.table.compile_op else {
            return Ok(());
        };
        for &n in nodes {
            let op = graph
                .op_mut(n)
                .ok_or_else(|| EngineError::engine(&self.name, "stale node handle"))?;
            let doc = json::op_json(op).to_string();
            // SAFETY: version-1 `compile_op`; `doc` outlives the call.
            let v = self.lib.call_json("compile_op", |out| unsafe {
                f(self.index, RgeBytes::from_slice(doc.as_bytes()), out)
            })?;
            if let Some(attrs) = v.get("attrs").and_then(Value::as_object) {
                for (k, a) in attrs {
                    let a = json::attr_from_json(a).ok_or_else(|| {
                        self.lib.error(format!(
                            "compile_op of `{}`: attribute `{k}` has an unsupported value",
                            op.name()
                        ))
                    })?;
                    op.attrs_mut().set(k.clone(), a);
                }
            }
        }
        Ok(())
    }
}

struct PluginOptimizer {
    lib: Arc<PluginLibrary>,
    index: u32,
    name: String,
    stages: Vec<OptimizeStage>,
}

impl PluginOptimizer {
    fn run(&self, stage: OptimizeStage, graph: &mut ComputeGraph) -> EngineResult<()> {
        let Some(f) = self
            .lib
            .table
            .optimize_graph
            .filter(|_| self.stages.contains(&stage))
        else {
            return Ok(());
        };
        let doc = json::graph_json(graph).to_string();
        // SAFETY: version-1 `optimize_graph`; `doc` outlives the call.
        let edits = self.lib.call_json("optimize_graph", |out| unsafe {
            f(
                self.index,
                stage as u32,
                RgeBytes::from_slice(doc.as_bytes()),
                out,
            )
        })?;
        json::apply_graph_edits(graph, &edits).map_err(|m| {
            EngineError::engine(&self.name, format!("{} optimizer: {m}", stage.name()))
        })
    }
}

impl GraphOptimizer for PluginOptimizer {
    fn optimize_original_graph(&self, graph: &mut ComputeGraph) -> EngineResult<()> {
        self.run(OptimizeStage::Original, graph)
    }
    fn optimize_fused_graph(&self, graph: &mut ComputeGraph) -> EngineResult<()> {
        self.run(OptimizeStage::Fused, graph)
    }
    fn optimize_whole_graph(&self, graph: &mut ComputeGraph) -> EngineResult<()> {
        self.run(OptimizeStage::Whole, graph)
    }
}

struct PluginBuilder {
    lib: Arc<PluginLibrary>,
    index: u32,
    name: String,
}

/// A task generated by a plugin: its bytes, opaque to rge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginKernel {
    pub engine: String,
    pub task: Vec<u8>,
}

impl Kernel for PluginKernel {
    fn engine(&self) -> &str {
        &self.engine
    }
    fn describe(&self) -> String {
        format!("{} task ({} bytes)", self.engine, self.task.len())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl PluginBuilder {
    fn op_doc(&self, graph: &ComputeGraph, node: NodeId) -> EngineResult<String> {
        let op = graph
            .op(node)
            .ok_or_else(|| EngineError::engine(&self.name, "stale node handle"))?;
        Ok(json::op_json(op).to_string())
    }
}

impl KernelBuilder for PluginBuilder {
    fn calc_running_params(
        &self,
        graph: &ComputeGraph,
        node: NodeId,
    ) -> EngineResult<RunningParams> {
        let f = self.lib.table.calc_running_params.expect("checked at load");
        let doc = self.op_doc(graph, node)?;
        // SAFETY: version-1 `calc_running_params`; `doc` outlives the call.
        let v = self.lib.call_json("calc_running_params", |out| unsafe {
            f(self.index, RgeBytes::from_slice(doc.as_bytes()), out)
        })?;
        json::running_params_from_json(&v).map_err(|m| self.lib.error(m))
    }

    fn generate_kernel(
        &self,
        graph: &ComputeGraph,
        node: NodeId,
        _params: &RunningParams,
    ) -> EngineResult<Box<dyn Kernel>> {
        let f = self.lib.table.generate_task.expect("checked at load");
        let doc = self.op_doc(graph, node)?;
        // SAFETY: version-1 `generate_task`; `doc` outlives the call.
        let (code, task) = self
            .lib
            .call(|out| unsafe { f(self.index, RgeBytes::from_slice(doc.as_bytes()), out) });
        if code != RGE_OK {
            return Err(self.lib.error(format!(
                "generate_task failed ({code}): {}",
                String::from_utf8_lossy(&task)
            )));
        }
        Ok(Box::new(PluginKernel {
            engine: self.name.clone(),
            task,
        }))
    }
}
