//! The C ABI of engine plugins, version 2 (ARCHITECTURE.md decision 8; `include/rge_engine.h`
//! is the same contract for C and C++).
//!
//! A plugin is a shared library exporting one function, [`RGE_ENGINE_PLUGIN_ENTRY`]:
//! `const RgePluginHeader *rge_engine_plugin_entry(void)`. It returns a pointer to a static
//! function table that starts with [`RgePluginHeader`] — the ABI version and the table's size
//! — in every version, so a host reads the version before anything else and refuses a plugin
//! of another version without touching the rest. Version 2's table is [`RgeEnginePluginV2`]:
//! GE's `Initialize`, `GetOpsKernelInfoStores` (here `get_engines`, which also carries the
//! engine attributes, scheduling flags and kernel definitions), `CheckSupported`,
//! `CompileOp`, the graph optimizer (GE's `GetGraphOptimizerObjs` + `Optimize*Graph`), the
//! kernel builder (`CalcOpRunningParam`, `GenerateTask`), `Finalize`, and (new in version 2)
//! runnable kernels: `kernel_create`, `kernel_infer`, `kernel_compute`, `kernel_destroy`.
//!
//! Data crosses as UTF-8 JSON documents (schemas in `docs/engines.md`) in byte buffers, and
//! tensors as [`RgeTensorView`]s: the host lends [`RgeBytes`] and views for the length of a
//! call; the plugin returns [`RgeBuf`]s that the host hands back to the plugin's `free_buf`.
//! Status codes: [`RGE_OK`] (0), [`RGE_ERROR`] with a UTF-8 message in the out buffer, or
//! [`RGE_PANICKED`] for a plugin that caught a panic (message likewise); `check_supported`
//! returns 1 (supported) or 0 (not supported, the reason in the out buffer). Every function may
//! be called from several threads at once, except `initialize` and `finalize`, which the host
//! calls once each, first and last. A plugin written in Rust must not let a panic unwind into
//! the host (that aborts the process): [`guard`] catches it.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The ABI version this crate speaks.
pub const RGE_ENGINE_ABI_VERSION: u32 = 2;

/// The symbol every engine plugin exports.
pub const RGE_ENGINE_PLUGIN_ENTRY: &str = "rge_engine_plugin_entry";

/// Success.
pub const RGE_OK: i32 = 0;
/// `check_supported`: the op is supported.
pub const RGE_SUPPORTED: i32 = 1;
/// `check_supported`: the op is not supported (reason in the out buffer).
pub const RGE_NOT_SUPPORTED: i32 = 0;
/// A failure; the message is in the out buffer.
pub const RGE_ERROR: i32 = -1;
/// The plugin caught a panic (or a C++ exception); the message is in the out buffer. The
/// plugin stays usable.
pub const RGE_PANICKED: i32 = -2;

/// Bytes lent by the caller for the length of one call.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RgeBytes {
    pub ptr: *const u8,
    pub len: usize,
}

impl RgeBytes {
    /// Lends `s`.
    pub fn from_slice(s: &[u8]) -> Self {
        RgeBytes {
            ptr: s.as_ptr(),
            len: s.len(),
        }
    }

    /// The lent bytes.
    ///
    /// # Safety
    /// `ptr` must point to `len` readable bytes that stay valid and unchanged for `'a`
    /// (or `len` must be 0).
    pub unsafe fn as_slice<'a>(self) -> &'a [u8] {
        if self.len == 0 || self.ptr.is_null() {
            &[]
        } else {
            // SAFETY: the caller guarantees `len` readable bytes at `ptr` for `'a`.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }
}

/// Bytes allocated by the plugin and returned to the host, which releases them with the
/// plugin's `free_buf`. An empty buffer is `{NULL, 0}`.
#[repr(C)]
#[derive(Debug)]
pub struct RgeBuf {
    pub ptr: *mut u8,
    pub len: usize,
}

impl RgeBuf {
    /// The empty buffer.
    pub const EMPTY: RgeBuf = RgeBuf {
        ptr: std::ptr::null_mut(),
        len: 0,
    };

    /// Hands `v` over as a buffer (for plugins written in Rust; reclaim it with
    /// [`RgeBuf::into_boxed`]).
    pub fn from_vec(v: Vec<u8>) -> RgeBuf {
        if v.is_empty() {
            return RgeBuf::EMPTY;
        }
        let b = v.into_boxed_slice();
        let len = b.len();
        RgeBuf {
            ptr: Box::into_raw(b).cast::<u8>(),
            len,
        }
    }

    /// Takes back a buffer made by [`RgeBuf::from_vec`].
    ///
    /// # Safety
    /// `self` must come from [`RgeBuf::from_vec`] in the same program (same allocator) and
    /// must not be used again.
    pub unsafe fn into_boxed(self) -> Box<[u8]> {
        if self.ptr.is_null() || self.len == 0 {
            return Box::new([]);
        }
        let raw = std::ptr::slice_from_raw_parts_mut(self.ptr, self.len);
        // SAFETY: the caller guarantees the buffer was made by `from_vec`, i.e. by
        // `Box::<[u8]>::into_raw` with this length, and is not used again.
        unsafe { Box::from_raw(raw) }
    }
}

/// The first fields of every version's table.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RgePluginHeader {
    /// The ABI version of the table that follows.
    pub abi_version: u32,
    /// `sizeof` the whole table, header included.
    pub table_size: u32,
}

/// A kernel instance made by `kernel_create`: opaque to the host (may be null for a
/// stateless kernel), released by `kernel_destroy`.
pub type RgeKernelHandle = *mut c_void;

/// A tensor crossing the ABI: element type, dims and bytes, in the host's memory. Inputs are
/// lent read-only for the length of one call; outputs are memory the host allocated from
/// `kernel_infer`'s answer, for the plugin to fill. Absent (optional) tensors are all zero:
/// dtype 0 (ONNX `UNDEFINED`), rank 0, null pointers, length 0.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RgeTensorView {
    /// ONNX `TensorProto.DataType` code (1 FLOAT, 7 INT64, …); strings do not cross.
    pub dtype: i32,
    /// The number of dims.
    pub rank: u32,
    /// `rank` dims (null when `rank` is 0).
    pub dims: *const i64,
    /// The elements, packed in row-major order (sub-byte types two or four to a byte); at
    /// least 16-byte aligned when `len` > 0.
    pub data: *mut c_void,
    /// The length of `data` in bytes.
    pub len: usize,
}

impl RgeTensorView {
    /// The view of an absent tensor.
    pub const ABSENT: RgeTensorView = RgeTensorView {
        dtype: 0,
        rank: 0,
        dims: std::ptr::null(),
        data: std::ptr::null_mut(),
        len: 0,
    };

    /// True for an absent tensor (dtype 0).
    pub fn is_absent(&self) -> bool {
        self.dtype == 0
    }

    /// The dims.
    ///
    /// # Safety
    /// `dims` must point to `rank` readable `i64`s valid for `'a` (or `rank` must be 0).
    pub unsafe fn dims<'a>(&self) -> &'a [i64] {
        if self.rank == 0 || self.dims.is_null() {
            &[]
        } else {
            // SAFETY: the caller guarantees `rank` readable dims at `dims` for `'a`.
            unsafe { std::slice::from_raw_parts(self.dims, self.rank as usize) }
        }
    }

    /// The bytes, read-only.
    ///
    /// # Safety
    /// `data` must point to `len` readable bytes valid and unchanged for `'a` (or `len` 0).
    pub unsafe fn bytes<'a>(&self) -> &'a [u8] {
        if self.len == 0 || self.data.is_null() {
            &[]
        } else {
            // SAFETY: the caller guarantees `len` readable bytes at `data` for `'a`.
            unsafe { std::slice::from_raw_parts(self.data.cast::<u8>(), self.len) }
        }
    }

    /// The bytes, writable (an output view).
    ///
    /// # Safety
    /// `data` must point to `len` writable bytes valid for `'a` that nothing else reads or
    /// writes meanwhile (or `len` must be 0).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn bytes_mut<'a>(&self) -> &'a mut [u8] {
        if self.len == 0 || self.data.is_null() {
            &mut []
        } else {
            // SAFETY: the caller guarantees exclusive, writable `len` bytes at `data` for `'a`.
            unsafe { std::slice::from_raw_parts_mut(self.data.cast::<u8>(), self.len) }
        }
    }
}

/// Version 2's function table. Optional functions may be null.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RgeEnginePluginV2 {
    pub header: RgePluginHeader,
    /// GE's `Initialize(options)`: options as a JSON object of strings. Called once, first.
    pub initialize: unsafe extern "C" fn(options: RgeBytes, err: *mut RgeBuf) -> i32,
    /// The engines this plugin provides (attributes, flags, op infos, kernel definitions,
    /// which capabilities), as the JSON document `{"engines": [...]}`.
    pub get_engines: unsafe extern "C" fn(out: *mut RgeBuf) -> i32,
    /// GE's `CheckSupported` for engine `engine` (its index in `get_engines`) and one op (JSON).
    /// Optional: without it every op that a listed type or kernel definition fits is supported.
    pub check_supported:
        Option<unsafe extern "C" fn(engine: u32, op: RgeBytes, reason: *mut RgeBuf) -> i32>,
    /// GE's `CompileOp` for one op (JSON); out: `{"attrs": {...}}` to set on the op.
    pub compile_op:
        Option<unsafe extern "C" fn(engine: u32, op: RgeBytes, out: *mut RgeBuf) -> i32>,
    /// The graph optimizer: `stage` is 0 original, 1 fused, 2 whole; the graph as JSON; out: an
    /// edit list `{"set_attrs": [{"node": name, "attrs": {...}}]}`.
    pub optimize_graph: Option<
        unsafe extern "C" fn(engine: u32, stage: u32, graph: RgeBytes, out: *mut RgeBuf) -> i32,
    >,
    /// GE's `CalcOpRunningParam` for one op (JSON); out:
    /// `{"output_sizes": [...], "workspace": [...]}`.
    pub calc_running_params:
        Option<unsafe extern "C" fn(engine: u32, op: RgeBytes, out: *mut RgeBuf) -> i32>,
    /// GE's `GenerateTask` for one op (JSON); out: the task's bytes, opaque to the host.
    pub generate_task:
        Option<unsafe extern "C" fn(engine: u32, op: RgeBytes, out: *mut RgeBuf) -> i32>,
    /// GE's `Finalize`. Called once, last, before the library is unloaded.
    pub finalize: unsafe extern "C" fn() -> i32,
    /// Releases a buffer the plugin returned.
    pub free_buf: unsafe extern "C" fn(buf: RgeBuf),
    /// The factory of a kernel the engine's `kernels` list defines, for one node (the kernel
    /// op JSON: `{"name", "type", "domain", "opset", "attrs", "inputs": [{"dtype"}],
    /// "outputs": [...]}`, dtypes as ONNX names or null when unknown). Writes the new kernel's
    /// handle; on failure a message to `err`. Required when an engine lists kernels, as are the
    /// three functions below.
    pub kernel_create: Option<
        unsafe extern "C" fn(
            engine: u32,
            op: RgeBytes,
            handle: *mut RgeKernelHandle,
            err: *mut RgeBuf,
        ) -> i32,
    >,
    /// Called before every compute with the inputs' views (data included: shapes may depend
    /// on values); out: `{"outputs": [{"dtype": "FLOAT", "shape": [2, 3]} | null, ...],
    /// "workspace": bytes}` (null: the output is not produced).
    pub kernel_infer: Option<
        unsafe extern "C" fn(
            handle: RgeKernelHandle,
            inputs: *const RgeTensorView,
            n_inputs: usize,
            out: *mut RgeBuf,
        ) -> i32,
    >,
    /// Computes: reads the inputs, fills the outputs (allocated by the host as `kernel_infer`
    /// answered), may use `workspace_len` scratch bytes at `workspace` (16-byte aligned, null
    /// when 0). On failure a message to `err`.
    pub kernel_compute: Option<
        unsafe extern "C" fn(
            handle: RgeKernelHandle,
            inputs: *const RgeTensorView,
            n_inputs: usize,
            outputs: *const RgeTensorView,
            n_outputs: usize,
            workspace: *mut c_void,
            workspace_len: usize,
            err: *mut RgeBuf,
        ) -> i32,
    >,
    /// Releases a kernel; the host calls it once per handle, when no compute is running.
    pub kernel_destroy: Option<unsafe extern "C" fn(handle: RgeKernelHandle)>,
}

/// The type of [`RGE_ENGINE_PLUGIN_ENTRY`].
pub type RgeEnginePluginEntry = unsafe extern "C" fn() -> *const RgePluginHeader;

/// Writes `bytes` to the out buffer `out` as an [`RgeBuf::from_vec`] buffer (for plugins
/// written in Rust, whose `free_buf` takes it back with [`RgeBuf::into_boxed`]). A buffer
/// already there is released first; a null `out` is ignored.
///
/// # Safety
/// `out` must be null or point to a writable [`RgeBuf`] holding either the empty buffer or
/// one made by [`RgeBuf::from_vec`] in this library.
pub unsafe fn put_buf(out: *mut RgeBuf, bytes: Vec<u8>) {
    if out.is_null() {
        return;
    }
    // SAFETY: the caller guarantees `out` is a valid, writable RgeBuf.
    let old = unsafe { std::ptr::replace(out, RgeBuf::from_vec(bytes)) };
    // SAFETY: per the caller, a non-empty old buffer was made by `from_vec` here.
    drop(unsafe { old.into_boxed() });
}

/// Runs the body of a plugin function so that no panic unwinds across `extern "C"` (which
/// would abort the host): `Ok(code)` is returned as is, `Err(message)` becomes [`RGE_ERROR`]
/// with the message in `out_msg`, a panic becomes [`RGE_PANICKED`] with the panic's message.
///
/// ```
/// use rge_engine::abi::{guard, RgeBuf, RGE_OK};
///
/// unsafe extern "C" fn kernel_destroy_all(err: *mut RgeBuf) -> i32 {
///     // SAFETY: `err` is the host's out buffer.
///     unsafe { guard(err, || { /* … */ Ok(RGE_OK) }) }
/// }
/// ```
///
/// # Safety
/// `out_msg` as for [`put_buf`].
pub unsafe fn guard(out_msg: *mut RgeBuf, f: impl FnOnce() -> Result<i32, String>) -> i32 {
    let (code, msg) = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(code)) => return code,
        Ok(Err(msg)) => (RGE_ERROR, msg),
        Err(payload) => (RGE_PANICKED, panic_message(payload.as_ref())),
    };
    // SAFETY: forwarded from the caller.
    unsafe { put_buf(out_msg, msg.into_bytes()) };
    code
}

/// The message of a panic payload (`panic!` with a literal or a format string).
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_round_trip() {
        let b = RgeBuf::from_vec(b"hello".to_vec());
        assert_eq!(b.len, 5);
        // SAFETY: made by `from_vec` just above, used once.
        let back = unsafe { b.into_boxed() };
        assert_eq!(&*back, b"hello");
        assert!(RgeBuf::from_vec(Vec::new()).ptr.is_null());
        let s = b"abc";
        // SAFETY: `s` outlives the slice.
        assert_eq!(unsafe { RgeBytes::from_slice(s).as_slice() }, b"abc");
    }

    #[test]
    fn header_is_first() {
        assert_eq!(std::mem::offset_of!(RgeEnginePluginV2, header), 0);
        assert_eq!(std::mem::size_of::<RgePluginHeader>(), 8);
    }

    #[test]
    fn guard_maps_errors_and_panics() {
        let mut buf = RgeBuf::EMPTY;
        let take = |b: &mut RgeBuf| {
            let b = std::mem::replace(b, RgeBuf::EMPTY);
            // SAFETY: `guard` wrote it with `from_vec`.
            String::from_utf8(unsafe { b.into_boxed() }.into_vec()).unwrap()
        };
        // SAFETY: `buf` is a valid out buffer.
        assert_eq!(unsafe { guard(&mut buf, || Ok(RGE_OK)) }, RGE_OK);
        assert!(buf.ptr.is_null());
        // SAFETY: as above.
        let code = unsafe { guard(&mut buf, || Err("no".into())) };
        assert_eq!((code, take(&mut buf).as_str()), (RGE_ERROR, "no"));
        // (The default hook prints this panic; the guard still returns.)
        // SAFETY: as above.
        let code = unsafe { guard(&mut buf, || panic!("boom {}", 7)) };
        assert_eq!((code, take(&mut buf).as_str()), (RGE_PANICKED, "boom 7"));
    }

    /// The layout `include/rge_engine.h` declares (checked there with the same numbers).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn layout_matches_the_c_header() {
        assert_eq!(std::mem::size_of::<RgeEnginePluginV2>(), 112);
        assert_eq!(std::mem::offset_of!(RgeEnginePluginV2, kernel_create), 80);
        assert_eq!(std::mem::size_of::<RgeTensorView>(), 32);
        assert_eq!(std::mem::offset_of!(RgeTensorView, data), 16);
    }

    #[test]
    fn absent_view_is_empty() {
        let v = RgeTensorView::ABSENT;
        assert!(v.is_absent());
        // SAFETY: null pointers with zero lengths are allowed.
        assert!(unsafe { v.dims() }.is_empty() && unsafe { v.bytes() }.is_empty());
    }
}
