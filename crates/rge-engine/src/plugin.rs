//! The host side of the plugin ABI: loading a shared library, checking its ABI version, and
//! wrapping each engine it provides as an [`Engine`] whose kernel store holds the kernels the
//! plugin defines ([`PluginComputeKernel`]s, run through `kernel_infer`/`kernel_compute`). The
//! library is finalized and unloaded when the last engine or kernel from it is dropped (GE's
//! `Finalize` on shutdown).

use std::any::Any;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use rge_ir::{ComputeGraph, NodeId, OpDesc};

use rge_kernels::{
    DType, Kernel as ComputeKernel, KernelCtx, KernelDef, KernelError, KernelInit, KernelResult,
    KernelSet, PortDef,
};

use crate::abi::{
    RgeBuf, RgeBytes, RgeEnginePluginEntry, RgeEnginePluginV2, RgeKernelHandle, RgePluginHeader,
    RgeTensorView, RGE_ENGINE_ABI_VERSION, RGE_ENGINE_PLUGIN_ENTRY, RGE_ERROR, RGE_NOT_SUPPORTED,
    RGE_OK, RGE_PANICKED, RGE_SUPPORTED,
};
use crate::attrs::{EngineAttributes, SchedulingFlags};
use crate::builder::{Kernel, KernelBuilder, RunningParams};
use crate::engine::{Engine, EngineOptions};
use crate::error::{EngineError, EngineResult};
use crate::json::{self, EngineDescription, KernelDescription};
use crate::kernels::{op_domain, KernelStore};
use crate::optimizer::{GraphOptimizer, OptimizeStage};
use crate::store::{KernelInfoStore, OpInfo, OpTypes, Support};

/// A loaded plugin library with its version-2 table. Finalized, then unloaded, on drop.
pub struct PluginLibrary {
    path: String,
    table: RgeEnginePluginV2,
    // Present when the table has every kernel function.
    kernel_fns: Option<KernelFns>,
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
        // SAFETY: `finalize` comes from the version-2 table of the still-loaded library; it is
        // called once, after `initialize` succeeded, and nothing calls the plugin after (every
        // engine and kernel holds an `Arc` of this library).
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
    let need = std::mem::size_of::<RgeEnginePluginV2>();
    if (header.table_size as usize) < need {
        return Err(err(format!(
            "its version-2 table is {} bytes, at least {need} expected",
            header.table_size
        )));
    }
    // SAFETY: the header says this is a version-2 table of at least the v2 size; the table is
    // static in the library, which stays loaded as long as `PluginLibrary` lives.
    let table: RgeEnginePluginV2 =
        unsafe { std::ptr::read(header_ptr.cast::<RgeEnginePluginV2>()) };

    let opts = serde_json::to_vec(options).map_err(|e| err(e.to_string()))?;
    let mut buf = RgeBuf::EMPTY;
    // SAFETY: version-2 `initialize`, called once, first; `opts` outlives the call.
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
    let kernel_fns = KernelFns::of(&table);
    let library = Arc::new(PluginLibrary {
        path: shown,
        table,
        kernel_fns,
        _lib: lib,
    });
    // SAFETY: version-2 `get_engines` with a valid out buffer.
    let doc = library.call_json("get_engines", |out| unsafe { (table.get_engines)(out) })?;
    let descs = json::engines_from_json(&doc).map_err(|m| library.error(m))?;
    let mut engines: Vec<Box<dyn Engine>> = Vec::with_capacity(descs.len());
    for (index, desc) in descs.into_iter().enumerate() {
        desc.attrs
            .validate()
            .map_err(|e| library.error(e.to_string()))?;
        if !desc.kernels.is_empty() && library.kernel_fns.is_none() {
            return Err(library.error(format!(
                "engine `{}` lists kernels but the table lacks kernel_create, kernel_infer, \
                 kernel_compute or kernel_destroy",
                desc.attrs.name
            )));
        }
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
        let mut infos: BTreeMap<String, OpInfo> = desc
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
        let kernels = plugin_kernel_set(&lib, index, &name, &desc.kernels);
        let kernels = KernelStore::new(&name, &desc.kernel_lib, desc.attrs.compute_cost, kernels);
        for (_, t) in kernels.kernels().op_types() {
            infos
                .entry(t.to_string())
                .or_insert_with(|| info(false, false));
        }
        PluginEngine {
            attrs: desc.attrs,
            flags: desc.flags,
            store: PluginStore {
                lib,
                index,
                name,
                infos,
                any,
                kernels,
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

/// A plugin engine's store: the op types it lists (with GE's flags) and a [`KernelStore`] over
/// the kernels it defines. Ops a kernel definition names are answered by selection (types,
/// opsets, then the plugin's `check_supported` as the definition's check); ops only listed
/// are answered by the plugin's `check_supported`.
struct PluginStore {
    lib: Arc<PluginLibrary>,
    index: u32,
    name: String,
    infos: BTreeMap<String, OpInfo>,
    any: Option<OpInfo>,
    kernels: KernelStore,
}

/// Asks the plugin's `check_supported` (every op is supported without one).
fn plugin_check(lib: &PluginLibrary, index: u32, op: &OpDesc) -> Support {
    let Some(f) = lib.table.check_supported else {
        return Support::Yes;
    };
    let doc = json::op_json(op).to_string();
    // SAFETY: version-2 `check_supported`; `doc` outlives the call; thread-safe per ABI.
    let (code, bytes) =
        lib.call(|out| unsafe { f(index, RgeBytes::from_slice(doc.as_bytes()), out) });
    match code {
        RGE_SUPPORTED => Support::Yes,
        RGE_NOT_SUPPORTED => Support::No(String::from_utf8_lossy(&bytes).into_owned()),
        c => Support::No(format!(
            "plugin error {c} in check_supported: {}",
            String::from_utf8_lossy(&bytes)
        )),
    }
}

impl KernelInfoStore for PluginStore {
    fn kernel_lib_name(&self) -> &str {
        self.kernels.kernel_lib_name()
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
        let set = self.kernels.kernels();
        if set.has_op(op_domain(op), op.op_type()) {
            return self.kernels.check_supported(op);
        }
        // A type listed without a kernel definition (or any type, for `any_op`): placed,
        // compiled and built through the plugin's other functions, so the plugin answers. A
        // type defined only in another domain gets selection's reason.
        if self.any.is_some() || !set.op_types().any(|(_, t)| t == op.op_type()) {
            return plugin_check(&self.lib, self.index, op);
        }
        self.kernels.check_supported(op)
    }

    fn kernel_set(&self) -> Option<&KernelSet> {
        let set = self.kernels.kernels();
        (!set.is_empty()).then_some(set)
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
            // SAFETY: version-2 `compile_op`; `doc` outlives the call.
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
    /// Shows the plugin the graph, and carries out its edits through the rewriter (checked
    /// patches, boundary nodes protected in the fused stage).
    fn run(
        &self,
        stage: OptimizeStage,
        graph: &mut crate::rewriter::GraphRewriter<'_>,
    ) -> EngineResult<()> {
        let Some(f) = self
            .lib
            .table
            .optimize_graph
            .filter(|_| self.stages.contains(&stage))
        else {
            return Ok(());
        };
        let doc = json::graph_json(graph.graph()).to_string();
        // SAFETY: version-1 `optimize_graph`; `doc` outlives the call.
        let edits = self.lib.call_json("optimize_graph", |out| unsafe {
            f(
                self.index,
                stage as u32,
                RgeBytes::from_slice(doc.as_bytes()),
                out,
            )
        })?;
        crate::plugin_edits::apply_plugin_edits(graph, &edits).map_err(|e| match e {
            EngineError::Engine { message, .. } => {
                EngineError::engine(&self.name, format!("{} optimizer: {message}", stage.name()))
            }
            other => other,
        })
    }
}

impl GraphOptimizer for PluginOptimizer {
    fn optimize_original_graph(
        &self,
        graph: &mut crate::rewriter::GraphRewriter<'_>,
    ) -> EngineResult<()> {
        self.run(OptimizeStage::Original, graph)
    }
    fn optimize_fused_graph(
        &self,
        graph: &mut crate::rewriter::GraphRewriter<'_>,
    ) -> EngineResult<()> {
        self.run(OptimizeStage::Fused, graph)
    }
    fn optimize_whole_graph(
        &self,
        graph: &mut crate::rewriter::GraphRewriter<'_>,
    ) -> EngineResult<()> {
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
        // SAFETY: version-2 `calc_running_params`; `doc` outlives the call.
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
        // SAFETY: version-2 `generate_task`; `doc` outlives the call.
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

type CreateFn = unsafe extern "C" fn(u32, RgeBytes, *mut RgeKernelHandle, *mut RgeBuf) -> i32;
type InferFn =
    unsafe extern "C" fn(RgeKernelHandle, *const RgeTensorView, usize, *mut RgeBuf) -> i32;
type ComputeFn = unsafe extern "C" fn(
    RgeKernelHandle,
    *const RgeTensorView,
    usize,
    *const RgeTensorView,
    usize,
    *mut c_void,
    usize,
    *mut RgeBuf,
) -> i32;
type DestroyFn = unsafe extern "C" fn(RgeKernelHandle);

/// The kernel functions of a version-2 table, all present (checked once at load, so a kernel
/// never meets a null one).
#[derive(Clone, Copy)]
struct KernelFns {
    create: CreateFn,
    infer: InferFn,
    compute: ComputeFn,
    destroy: DestroyFn,
}

impl KernelFns {
    fn of(t: &RgeEnginePluginV2) -> Option<Self> {
        Some(KernelFns {
            create: t.kernel_create?,
            infer: t.kernel_infer?,
            compute: t.kernel_compute?,
            destroy: t.kernel_destroy?,
        })
    }
}

/// The kernel definitions of engine `index` (named `engine`) from its description: each
/// def's factory is the plugin's `kernel_create`; its check the plugin's `check_supported`.
fn plugin_kernel_set(
    lib: &Arc<PluginLibrary>,
    index: u32,
    engine: &str,
    kernels: &[KernelDescription],
) -> KernelSet {
    let mut set = KernelSet::new();
    for k in kernels {
        let name = format!("{engine}.{}", k.op_type);
        let ports = |p: &[rge_kernels::TypeSet]| p.iter().map(|t| PortDef::types(*t)).collect();
        let (flib, fname) = (lib.clone(), name.clone());
        let mut def = KernelDef::new(name, k.op_type.clone(), move |init| {
            PluginComputeKernel::create(&flib, index, &fname, init)
        })
        .domain(&k.domain)
        .opsets(k.since, k.until)
        .inputs(ports(&k.inputs))
        .outputs(ports(&k.outputs));
        if lib.table.check_supported.is_some() {
            let clib = lib.clone();
            def = def.with_check(move |op| match plugin_check(&clib, index, op) {
                Support::Yes => Ok(()),
                Support::No(reason) => Err(reason),
            });
        }
        set.add(def);
    }
    set
}

/// A kernel a plugin made (`kernel_create`): each compute asks the plugin for the outputs'
/// types and shapes (`kernel_infer`), allocates them and the workspace, and runs
/// `kernel_compute` over tensor views. Dropping it calls `kernel_destroy`.
pub struct PluginComputeKernel {
    lib: Arc<PluginLibrary>,
    fns: KernelFns,
    handle: RgeKernelHandle,
    kernel: String,
}

// SAFETY: the handle is only ever passed back to the plugin, whose kernel functions the ABI
// requires to be callable from several threads at once (and `kernel_destroy` from any thread).
unsafe impl Send for PluginComputeKernel {}
// SAFETY: as for `Send`: `compute` takes `&self` and the ABI makes concurrent calls safe.
unsafe impl Sync for PluginComputeKernel {}

impl std::fmt::Debug for PluginComputeKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginComputeKernel")
            .field("kernel", &self.kernel)
            .field("plugin", &self.lib.path)
            .finish()
    }
}

impl Drop for PluginComputeKernel {
    fn drop(&mut self) {
        // SAFETY: `kernel_destroy` of the library that made the handle (kept loaded by
        // `self.lib`); called once, and no compute runs since we are dropped.
        unsafe { (self.fns.destroy)(self.handle) };
    }
}

fn dims_i64(shape: &[usize]) -> KernelResult<Vec<i64>> {
    shape
        .iter()
        .map(|&d| i64::try_from(d).map_err(|_| KernelError::invalid(format!("dim {d} overflows"))))
        .collect()
}

fn view(dtype: DType, dims: &[i64], data: *mut c_void, len: usize) -> RgeTensorView {
    RgeTensorView {
        dtype: dtype.onnx(),
        rank: dims.len() as u32,
        dims: if dims.is_empty() {
            std::ptr::null()
        } else {
            dims.as_ptr()
        },
        data,
        len,
    }
}

impl PluginComputeKernel {
    fn create(
        lib: &Arc<PluginLibrary>,
        index: u32,
        kernel: &str,
        init: &KernelInit<'_>,
    ) -> KernelResult<Box<dyn ComputeKernel>> {
        let fns = lib.kernel_fns.ok_or_else(|| {
            KernelError::unsupported(format!(
                "engine plugin `{}` has no kernel functions",
                lib.path
            ))
        })?;
        let doc = json::kernel_op_json(init).to_string();
        let mut handle: RgeKernelHandle = std::ptr::null_mut();
        // SAFETY: version-2 `kernel_create`; `doc` outlives the call and `handle` is writable.
        let (code, msg) = lib.call(|err| unsafe {
            (fns.create)(
                index,
                RgeBytes::from_slice(doc.as_bytes()),
                &mut handle,
                err,
            )
        });
        if code != RGE_OK {
            return Err(kernel_error(&lib.path, kernel, "kernel_create", code, &msg));
        }
        Ok(Box::new(PluginComputeKernel {
            lib: lib.clone(),
            fns,
            handle,
            kernel: kernel.to_string(),
        }))
    }

    /// The kernel definition's name, e.g. `example.Relu`.
    pub fn name(&self) -> &str {
        &self.kernel
    }

    /// The plugin file.
    pub fn plugin_path(&self) -> &str {
        &self.lib.path
    }

    fn error(&self, what: &str, code: i32, msg: &[u8]) -> KernelError {
        kernel_error(&self.lib.path, &self.kernel, what, code, msg)
    }
}

fn kernel_error(path: &str, kernel: &str, what: &str, code: i32, msg: &[u8]) -> KernelError {
    let msg = String::from_utf8_lossy(msg);
    KernelError::invalid(match code {
        RGE_PANICKED => {
            format!("engine plugin `{path}`: kernel `{kernel}` panicked in {what}: {msg}")
        }
        RGE_ERROR => format!("engine plugin `{path}`: kernel `{kernel}` failed in {what}: {msg}"),
        c => format!(
            "engine plugin `{path}`: kernel `{kernel}` failed in {what} (status {c}): {msg}"
        ),
    })
}

impl ComputeKernel for PluginComputeKernel {
    fn compute(&self, ctx: &mut KernelCtx<'_>) -> KernelResult<()> {
        let mut inputs = Vec::with_capacity(ctx.input_count());
        for i in 0..ctx.input_count() {
            inputs.push(match ctx.opt_input(i)? {
                None => None,
                Some(t) => {
                    let bytes = t.bytes().map_err(|_| {
                        KernelError::unsupported(format!(
                            "input {i}: string tensors do not cross the plugin ABI"
                        ))
                    })?;
                    Some((t.dtype(), dims_i64(t.shape())?, bytes))
                }
            });
        }
        let in_views: Vec<RgeTensorView> = inputs
            .iter()
            .map(|t| match t {
                None => RgeTensorView::ABSENT,
                // Lent read-only: the ABI forbids writing inputs.
                Some((dt, dims, b)) => view(*dt, dims, b.as_ptr().cast_mut().cast(), b.len()),
            })
            .collect();

        // SAFETY: version-2 `kernel_infer` with this kernel's handle; the views, their dims
        // and data outlive the call.
        let (code, answer) = self.lib.call(|out| unsafe {
            (self.fns.infer)(self.handle, in_views.as_ptr(), in_views.len(), out)
        });
        if code != RGE_OK {
            return Err(self.error("kernel_infer", code, &answer));
        }
        let infer = serde_json::from_slice(&answer)
            .map_err(|e| e.to_string())
            .and_then(|v| json::infer_result_from_json(&v))
            .map_err(|m| {
                self.error(
                    "kernel_infer",
                    RGE_ERROR,
                    format!("bad answer: {m}").as_bytes(),
                )
            })?;
        if infer.outputs.len() > ctx.output_count() {
            return Err(self.error(
                "kernel_infer",
                RGE_ERROR,
                format!(
                    "bad answer: {} outputs, the node has {}",
                    infer.outputs.len(),
                    ctx.output_count()
                )
                .as_bytes(),
            ));
        }

        let mut outputs = Vec::with_capacity(infer.outputs.len());
        for (i, o) in infer.outputs.iter().enumerate() {
            outputs.push(match o {
                None => None,
                Some(o) => {
                    let dims = dims_i64(&o.shape)?;
                    let buf = ctx.output_bytes(i, o.dtype, &o.shape)?;
                    Some((o.dtype, dims, buf))
                }
            });
        }
        let out_views: Vec<RgeTensorView> = outputs
            .iter_mut()
            .map(|t| match t {
                None => RgeTensorView::ABSENT,
                Some((dt, dims, b)) => view(*dt, dims, b.as_mut_ptr().cast(), b.len()),
            })
            .collect();

        let mut workspace: Vec<u128> = Vec::new();
        let words = infer.workspace.div_ceil(16);
        workspace.try_reserve_exact(words).map_err(|_| {
            KernelError::invalid(format!(
                "engine plugin `{}`: kernel `{}` asks for {} workspace bytes, which cannot be allocated",
                self.lib.path, self.kernel, infer.workspace
            ))
        })?;
        workspace.resize(words, 0);
        let ws_ptr: *mut c_void = if infer.workspace == 0 {
            std::ptr::null_mut()
        } else {
            workspace.as_mut_ptr().cast()
        };

        // SAFETY: version-2 `kernel_compute` with this kernel's handle; the input views point
        // to the lent inputs, the output views to memory the sink gave for this call (not
        // touched here until the call returns), the workspace to `workspace`; all outlive it.
        let (code, msg) = self.lib.call(|err| unsafe {
            (self.fns.compute)(
                self.handle,
                in_views.as_ptr(),
                in_views.len(),
                out_views.as_ptr(),
                out_views.len(),
                ws_ptr,
                infer.workspace,
                err,
            )
        });
        if code != RGE_OK {
            return Err(self.error("kernel_compute", code, &msg));
        }
        // Later kernels read bools as 0/1; a C plugin may have written any non-zero byte.
        for (_, _, b) in outputs.iter_mut().flatten().filter(|o| o.0 == DType::Bool) {
            for x in b.iter_mut() {
                *x = u8::from(*x != 0);
            }
        }
        Ok(())
    }
}
