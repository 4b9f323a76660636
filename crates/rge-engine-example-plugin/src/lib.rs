//! An example engine plugin: one engine, `example` (cost 6, DEVICE, attach), listing
//! `ExampleOp` (any dtype; placed, compiled and built into an opaque task) and `Relu`, with
//! runnable kernels for `Relu` (FLOAT, opsets 6+: max(x, 0)) and two test ops of domain
//! `com.rge.example`: `Fail` (always fails with "Fail was asked to fail") and `Panic` (panics
//! inside compute; the guard turns it into `RGE_PANICKED`). It also has a graph optimizer that
//! marks the ops it sees and a kernel builder. It implements the version-2 C ABI of
//! `rge_engine::abi` by hand, as a C plugin would (`crates/rge-engine/include/rge_engine.h`).
//!
//! Options it reads at initialize: `example.fail` = "1" makes initialize fail;
//! `example.finalize_marker` = a file path that finalize writes "finalized" to.
//!
//! Extra entry points for the host's tests: `rge_engine_plugin_entry_wrong_abi` (a table that
//! claims ABI version 999), `rge_engine_plugin_entry_v1` (claims version 1) and
//! `rge_engine_plugin_entry_bad_kernels` (a kernel with an unknown dtype name);
//! `rge_example_live_kernels()` counts the kernels created and not yet destroyed.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use rge_engine::abi::{
    guard, put_buf, RgeBuf, RgeBytes, RgeEnginePluginV2, RgeKernelHandle, RgePluginHeader,
    RgeTensorView, RGE_ENGINE_ABI_VERSION, RGE_ERROR, RGE_NOT_SUPPORTED, RGE_OK, RGE_SUPPORTED,
};
use serde_json::{json, Value};

/// Where finalize writes its marker, if asked to.
static FINALIZE_MARKER: Mutex<Option<String>> = Mutex::new(None);

/// Kernels created and not yet destroyed.
static LIVE_KERNELS: AtomicUsize = AtomicUsize::new(0);

/// ONNX's code of FLOAT.
const FLOAT: i32 = 1;

/// The scratch bytes Relu asks for, to exercise the host's workspace path.
const RELU_WORKSPACE: usize = 64;

/// Writes `bytes` to `out` (if not null).
fn put(out: *mut RgeBuf, bytes: Vec<u8>) {
    // SAFETY: the host passes null or a valid, writable out buffer (empty, or filled by this
    // plugin with `RgeBuf::from_vec`) per the ABI.
    unsafe { put_buf(out, bytes) };
}

/// Runs `f` without letting a panic cross the C boundary.
fn guarded(out: *mut RgeBuf, f: impl FnOnce() -> Result<i32, String>) -> i32 {
    // SAFETY: `out` is the host's out buffer, as for `put`.
    unsafe { guard(out, f) }
}

fn parse(bytes: RgeBytes) -> Result<Value, String> {
    // SAFETY: the host lends `len` bytes for the length of the call.
    let s = unsafe { bytes.as_slice() };
    serde_json::from_slice(s).map_err(|e| format!("example: bad JSON from host: {e}"))
}

unsafe extern "C" fn initialize(options: RgeBytes, err: *mut RgeBuf) -> i32 {
    guarded(err, || {
        let opts = parse(options)?;
        if opts.get("example.fail").and_then(Value::as_str) == Some("1") {
            return Err("example: asked to fail by option `example.fail`".into());
        }
        if let Some(marker) = opts.get("example.finalize_marker").and_then(Value::as_str) {
            *FINALIZE_MARKER.lock().map_err(|e| e.to_string())? = Some(marker.to_string());
        }
        Ok(RGE_OK)
    })
}

/// The engine list; `relu_dtype` is the dtype name Relu's kernel declares.
fn engines_doc(relu_dtype: &str) -> Value {
    let float = json!([["FLOAT"]]);
    json!({"engines": [{
        "name": "example",
        "cost": 6,
        "runtime": "DEVICE",
        "mem_types": ["HBM"],
        "attach": true,
        "kernel_lib": "example_kernel_store",
        "ops": [{"type": "ExampleOp"}, {"type": "Relu", "flag_async": true}],
        "kernels": [
            {"op_type": "Relu", "since": 6, "inputs": [[relu_dtype]], "outputs": float},
            {"op_type": "Fail", "domain": "com.rge.example", "inputs": float, "outputs": float},
            {"op_type": "Panic", "domain": "com.rge.example", "inputs": float, "outputs": float}
        ],
        "optimizer": {"original": true, "fused": true},
        "builder": true
    }]})
}

unsafe extern "C" fn get_engines(out: *mut RgeBuf) -> i32 {
    guarded(out, || {
        put(out, engines_doc("FLOAT").to_string().into_bytes());
        Ok(RGE_OK)
    })
}

unsafe extern "C" fn get_engines_bad_kernels(out: *mut RgeBuf) -> i32 {
    guarded(out, || {
        put(out, engines_doc("FLOT").to_string().into_bytes());
        Ok(RGE_OK)
    })
}

unsafe extern "C" fn check_supported(engine: u32, op: RgeBytes, reason: *mut RgeBuf) -> i32 {
    guarded(reason, || {
        if engine != 0 {
            return Err(format!("example: no engine {engine}"));
        }
        let op = parse(op)?;
        // Types are the kernel definitions' business; this answers for attributes.
        if op["attrs"]["reject"].as_bool() == Some(true) {
            put(reason, b"example: attribute `reject` is set".to_vec());
            return Ok(RGE_NOT_SUPPORTED);
        }
        Ok(RGE_SUPPORTED)
    })
}

unsafe extern "C" fn compile_op(_engine: u32, _op: RgeBytes, out: *mut RgeBuf) -> i32 {
    guarded(out, || {
        put(
            out,
            json!({"attrs": {"_example_compiled": true}})
                .to_string()
                .into_bytes(),
        );
        Ok(RGE_OK)
    })
}

unsafe extern "C" fn optimize_graph(
    _engine: u32,
    stage: u32,
    graph: RgeBytes,
    out: *mut RgeBuf,
) -> i32 {
    guarded(out, || {
        let g = parse(graph)?;
        let nodes = g["nodes"].as_array().cloned().unwrap_or_default();
        let own: Vec<&Value> = nodes
            .iter()
            .filter(|n| n["type"] != "End" && n["type"] != "PlaceHolder")
            .collect();
        let edits: Vec<Value> = own
            .iter()
            .filter(|n| stage != 0 || n["type"] == "ExampleOp")
            .map(|n| {
                let attrs = if stage == 0 {
                    json!({"_example_seen_original": true})
                } else {
                    json!({"_example_fused": own.len()})
                };
                json!({"node": n["name"], "attrs": attrs})
            })
            .collect();
        put(out, json!({"set_attrs": edits}).to_string().into_bytes());
        Ok(RGE_OK)
    })
}

unsafe extern "C" fn calc_running_params(_engine: u32, op: RgeBytes, out: *mut RgeBuf) -> i32 {
    guarded(out, || {
        let op = parse(op)?;
        let sizes: Vec<i64> = op["outputs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| {
                let dims: Vec<i64> = d["shape"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_i64)
                    .collect();
                if dims.iter().any(|&x| x < 0) {
                    -1
                } else {
                    dims.iter().product::<i64>() * 4
                }
            })
            .collect();
        put(
            out,
            json!({"output_sizes": sizes, "workspace": [64]})
                .to_string()
                .into_bytes(),
        );
        Ok(RGE_OK)
    })
}

unsafe extern "C" fn generate_task(_engine: u32, op: RgeBytes, out: *mut RgeBuf) -> i32 {
    guarded(out, || {
        let op = parse(op)?;
        let name = op["name"].as_str().unwrap_or("?");
        put(out, format!("example-task:{name}").into_bytes());
        Ok(RGE_OK)
    })
}

unsafe extern "C" fn finalize() -> i32 {
    let marker = FINALIZE_MARKER.lock().ok().and_then(|mut m| m.take());
    if let Some(path) = marker {
        if std::fs::write(path, "finalized").is_err() {
            return RGE_ERROR;
        }
    }
    RGE_OK
}

unsafe extern "C" fn free_buf(buf: RgeBuf) {
    // SAFETY: every buffer this plugin hands out is made by `RgeBuf::from_vec`, and the host
    // returns each exactly once.
    drop(unsafe { buf.into_boxed() });
}

/// One kernel instance; its handle is a `Box<ExampleKernel>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ExampleKernel {
    Relu,
    Fail,
    Panic,
}

/// The views the host lends.
///
/// # Safety
/// `ptr` must point to `n` views valid for `'a` (or `n` must be 0).
unsafe fn views<'a>(ptr: *const RgeTensorView, n: usize) -> &'a [RgeTensorView] {
    if n == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: the caller guarantees `n` readable views at `ptr`.
        unsafe { std::slice::from_raw_parts(ptr, n) }
    }
}

/// The kernel behind a handle.
///
/// # Safety
/// `handle` must be null or come from `kernel_create` and not be destroyed yet.
unsafe fn kernel<'a>(handle: RgeKernelHandle) -> Result<&'a ExampleKernel, String> {
    // SAFETY: per the caller, a non-null handle is a live `Box<ExampleKernel>`.
    unsafe { handle.cast::<ExampleKernel>().as_ref() }.ok_or_else(|| "example: null kernel".into())
}

/// The one FLOAT input every example kernel takes.
fn float_input(inputs: &[RgeTensorView]) -> Result<&RgeTensorView, String> {
    match inputs {
        [x] if x.dtype == FLOAT => Ok(x),
        [x] => Err(format!(
            "example: input has dtype code {}, FLOAT expected",
            x.dtype
        )),
        _ => Err(format!("example: 1 input expected, got {}", inputs.len())),
    }
}

unsafe extern "C" fn kernel_create(
    engine: u32,
    op: RgeBytes,
    handle: *mut RgeKernelHandle,
    err: *mut RgeBuf,
) -> i32 {
    guarded(err, || {
        if engine != 0 {
            return Err(format!("example: no engine {engine}"));
        }
        if handle.is_null() {
            return Err("example: no handle slot".into());
        }
        let op = parse(op)?;
        let k = match (op["domain"].as_str().unwrap_or(""), op["type"].as_str()) {
            ("", Some("Relu")) => ExampleKernel::Relu,
            ("com.rge.example", Some("Fail")) => ExampleKernel::Fail,
            ("com.rge.example", Some("Panic")) => ExampleKernel::Panic,
            (d, t) => return Err(format!("example: no kernel for {t:?} in domain {d:?}")),
        };
        if let Some(t) = op["inputs"][0]["dtype"].as_str().filter(|t| *t != "FLOAT") {
            return Err(format!("example: {k:?} takes FLOAT, not {t}"));
        }
        LIVE_KERNELS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: checked non-null; the host passes a writable handle slot.
        unsafe { handle.write(Box::into_raw(Box::new(k)).cast::<c_void>()) };
        Ok(RGE_OK)
    })
}

unsafe extern "C" fn kernel_infer(
    handle: RgeKernelHandle,
    inputs: *const RgeTensorView,
    n_inputs: usize,
    out: *mut RgeBuf,
) -> i32 {
    guarded(out, || {
        // SAFETY: the host passes a live handle of ours and `n_inputs` views for the call.
        let (k, inputs) = unsafe { (kernel(handle)?, views(inputs, n_inputs)) };
        let x = float_input(inputs)?;
        // SAFETY: the host lends `rank` dims with the view.
        let dims = unsafe { x.dims() };
        let workspace = if *k == ExampleKernel::Relu {
            RELU_WORKSPACE
        } else {
            0
        };
        let answer =
            json!({"outputs": [{"dtype": "FLOAT", "shape": dims}], "workspace": workspace});
        put(out, answer.to_string().into_bytes());
        Ok(RGE_OK)
    })
}

#[allow(clippy::too_many_arguments)] // the ABI's signature
unsafe extern "C" fn kernel_compute(
    handle: RgeKernelHandle,
    inputs: *const RgeTensorView,
    n_inputs: usize,
    outputs: *const RgeTensorView,
    n_outputs: usize,
    workspace: *mut c_void,
    workspace_len: usize,
    err: *mut RgeBuf,
) -> i32 {
    guarded(err, || {
        // SAFETY: the host passes a live handle of ours and the views for the call.
        let (k, inputs, outputs) = unsafe {
            (
                kernel(handle)?,
                views(inputs, n_inputs),
                views(outputs, n_outputs),
            )
        };
        match k {
            ExampleKernel::Fail => return Err("Fail was asked to fail".into()),
            ExampleKernel::Panic => panic!("Panic was asked to panic"),
            ExampleKernel::Relu => {}
        }
        if workspace.is_null() || workspace_len < RELU_WORKSPACE {
            return Err(format!(
                "example: Relu asked for {RELU_WORKSPACE} workspace bytes, got {workspace_len}"
            ));
        }
        let x = float_input(inputs)?;
        let [y] = outputs else {
            return Err(format!("example: 1 output expected, got {}", outputs.len()));
        };
        // SAFETY: the input is lent read-only and the output is ours to fill for this call;
        // the host never gives an output that overlaps an input here (no in-place reuse).
        let (x, y) = unsafe { (x.bytes(), y.bytes_mut()) };
        if x.len() != y.len() || x.len() % 4 != 0 {
            return Err(format!(
                "example: Relu input of {} bytes, output of {}",
                x.len(),
                y.len()
            ));
        }
        for (o, i) in y.chunks_exact_mut(4).zip(x.chunks_exact(4)) {
            let v = f32::from_ne_bytes([i[0], i[1], i[2], i[3]]);
            // `v < 0` keeps NaN as NaN, as ONNX's Relu does.
            let r = if v < 0.0 { 0.0 } else { v };
            o.copy_from_slice(&r.to_ne_bytes());
        }
        Ok(RGE_OK)
    })
}

unsafe extern "C" fn kernel_destroy(handle: RgeKernelHandle) {
    if !handle.is_null() {
        // SAFETY: a non-null handle is a `Box<ExampleKernel>` from `kernel_create`, destroyed
        // once by the host.
        drop(unsafe { Box::from_raw(handle.cast::<ExampleKernel>()) });
        LIVE_KERNELS.fetch_sub(1, Ordering::SeqCst);
    }
}

const TABLE_SIZE: u32 = std::mem::size_of::<RgeEnginePluginV2>() as u32;

type GetEngines = unsafe extern "C" fn(*mut RgeBuf) -> i32;

const fn table(abi_version: u32, get_engines: GetEngines) -> RgeEnginePluginV2 {
    RgeEnginePluginV2 {
        header: RgePluginHeader {
            abi_version,
            table_size: TABLE_SIZE,
        },
        initialize,
        get_engines,
        check_supported: Some(check_supported),
        compile_op: Some(compile_op),
        optimize_graph: Some(optimize_graph),
        calc_running_params: Some(calc_running_params),
        generate_task: Some(generate_task),
        finalize,
        free_buf,
        kernel_create: Some(kernel_create),
        kernel_infer: Some(kernel_infer),
        kernel_compute: Some(kernel_compute),
        kernel_destroy: Some(kernel_destroy),
    }
}

static TABLE: RgeEnginePluginV2 = table(RGE_ENGINE_ABI_VERSION, get_engines);
static WRONG_ABI: RgeEnginePluginV2 = table(999, get_engines);
static V1_ABI: RgeEnginePluginV2 = table(1, get_engines);
static BAD_KERNELS: RgeEnginePluginV2 = table(RGE_ENGINE_ABI_VERSION, get_engines_bad_kernels);

/// The standard entry point.
#[no_mangle]
pub extern "C" fn rge_engine_plugin_entry() -> *const RgePluginHeader {
    &TABLE.header
}

/// A table claiming ABI version 999, for tests of the host's version check.
#[no_mangle]
pub extern "C" fn rge_engine_plugin_entry_wrong_abi() -> *const RgePluginHeader {
    &WRONG_ABI.header
}

/// A table claiming ABI version 1 (before runnable kernels), for the version check's test.
#[no_mangle]
pub extern "C" fn rge_engine_plugin_entry_v1() -> *const RgePluginHeader {
    &V1_ABI.header
}

/// A table whose Relu kernel names an unknown dtype, for the host's description check.
#[no_mangle]
pub extern "C" fn rge_engine_plugin_entry_bad_kernels() -> *const RgePluginHeader {
    &BAD_KERNELS.header
}

/// Kernels created and not yet destroyed (for tests that the host destroys what it creates).
#[no_mangle]
pub extern "C" fn rge_example_live_kernels() -> usize {
    LIVE_KERNELS.load(Ordering::SeqCst)
}
