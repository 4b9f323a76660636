//! An example engine plugin: one engine, `example` (cost 6, DEVICE, attach), with kernels for
//! `ExampleOp` (any dtype) and `Relu` (DT_FLOAT only), a graph optimizer that marks the ops it
//! sees, and a kernel builder. It implements the version-1 C ABI of `rge_engine::abi` by hand,
//! as a C plugin would (`crates/rge-engine/include/rge_engine.h`).
//!
//! Options it reads at initialize: `example.fail` = "1" makes initialize fail;
//! `example.finalize_marker` = a file path that finalize writes "finalized" to.
//!
//! It also exports `rge_engine_plugin_entry_wrong_abi`, a table that claims ABI version 999,
//! so that tests can check that a host refuses it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

use rge_engine::abi::{
    RgeBuf, RgeBytes, RgeEnginePluginV1, RgePluginHeader, RGE_ENGINE_ABI_VERSION, RGE_ERROR,
    RGE_NOT_SUPPORTED, RGE_OK, RGE_SUPPORTED,
};
use serde_json::{json, Value};

/// Where finalize writes its marker, if asked to.
static FINALIZE_MARKER: Mutex<Option<String>> = Mutex::new(None);

/// Writes `bytes` to `out` (if not null).
fn put(out: *mut RgeBuf, bytes: Vec<u8>) {
    if !out.is_null() {
        // SAFETY: the host passes a valid, writable out buffer per the ABI.
        unsafe { out.write(RgeBuf::from_vec(bytes)) };
    }
}

/// Runs `f` without letting a panic cross the C boundary.
fn guarded(out: *mut RgeBuf, f: impl FnOnce() -> Result<i32, String>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(code)) => code,
        Ok(Err(msg)) => {
            put(out, msg.into_bytes());
            RGE_ERROR
        }
        Err(_) => {
            put(out, b"example plugin panicked".to_vec());
            RGE_ERROR
        }
    }
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

unsafe extern "C" fn get_engines(out: *mut RgeBuf) -> i32 {
    guarded(out, || {
        let doc = json!({"engines": [{
            "name": "example",
            "cost": 6,
            "runtime": "DEVICE",
            "mem_types": ["HBM"],
            "attach": true,
            "kernel_lib": "example_kernel_store",
            "ops": [{"type": "ExampleOp"}, {"type": "Relu", "flag_async": true}],
            "optimizer": {"original": true, "fused": true},
            "builder": true
        }]});
        put(out, doc.to_string().into_bytes());
        Ok(RGE_OK)
    })
}

unsafe extern "C" fn check_supported(engine: u32, op: RgeBytes, reason: *mut RgeBuf) -> i32 {
    guarded(reason, || {
        if engine != 0 {
            return Err(format!("example: no engine {engine}"));
        }
        let op = parse(op)?;
        if op["attrs"]["reject"].as_bool() == Some(true) {
            put(reason, b"example: attribute `reject` is set".to_vec());
            return Ok(RGE_NOT_SUPPORTED);
        }
        if op["type"] == "Relu" && op["inputs"][0]["dtype"] != "DT_FLOAT" {
            put(reason, b"example: Relu only for DT_FLOAT inputs".to_vec());
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

const TABLE_SIZE: u32 = std::mem::size_of::<RgeEnginePluginV1>() as u32;

const fn table(abi_version: u32) -> RgeEnginePluginV1 {
    RgeEnginePluginV1 {
        header: RgePluginHeader {
            abi_version,
            table_size: TABLE_SIZE,
        },
        initialize,
        get_engines,
        check_supported,
        compile_op: Some(compile_op),
        optimize_graph: Some(optimize_graph),
        calc_running_params: Some(calc_running_params),
        generate_task: Some(generate_task),
        finalize,
        free_buf,
    }
}

static TABLE: RgeEnginePluginV1 = table(RGE_ENGINE_ABI_VERSION);
static WRONG_ABI: RgeEnginePluginV1 = table(999);

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
