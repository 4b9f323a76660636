//! The C ABI of engine plugins, version 1 (ARCHITECTURE.md decision 8; `include/rge_engine.h`
//! is the same contract for C and C++).
//!
//! A plugin is a shared library exporting one function, [`RGE_ENGINE_PLUGIN_ENTRY`]:
//! `const RgePluginHeader *rge_engine_plugin_entry(void)`. It returns a pointer to a static
//! function table that starts with [`RgePluginHeader`] — the ABI version and the table's size
//! — in every version, so a host reads the version before anything else and refuses a plugin
//! of another version without touching the rest. Version 1's table is [`RgeEnginePluginV1`]:
//! GE's `Initialize`, `GetOpsKernelInfoStores` (here `get_engines`, which also carries the
//! engine attributes and scheduling flags), `CheckSupported`, `CompileOp`, the graph
//! optimizer (GE's `GetGraphOptimizerObjs` + `Optimize*Graph`), the kernel builder
//! (`CalcOpRunningParam`, `GenerateTask`) and `Finalize`.
//!
//! Data crosses as UTF-8 JSON documents (schemas in `docs/engines.md`) in byte buffers: the
//! host lends [`RgeBytes`] for the length of a call; the plugin returns [`RgeBuf`]s that the
//! host hands back to the plugin's `free_buf`. Status codes: [`RGE_OK`] (0) or a negative
//! error code with a UTF-8 message in the out buffer; `check_supported` returns 1 (supported)
//! or 0 (not supported, the reason in the out buffer). Every function may be called from
//! several threads at once, except `initialize` and `finalize`, which the host calls once
//! each, first and last.

/// The ABI version this crate speaks.
pub const RGE_ENGINE_ABI_VERSION: u32 = 1;

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

/// Version 1's function table. Optional functions may be null.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RgeEnginePluginV1 {
    pub header: RgePluginHeader,
    /// GE's `Initialize(options)`: options as a JSON object of strings. Called once, first.
    pub initialize: unsafe extern "C" fn(options: RgeBytes, err: *mut RgeBuf) -> i32,
    /// The engines this plugin provides (attributes, flags, op infos, which capabilities),
    /// as the JSON document `{"engines": [...]}`.
    pub get_engines: unsafe extern "C" fn(out: *mut RgeBuf) -> i32,
    /// GE's `CheckSupported` for engine `engine` (its index in `get_engines`) and one op (JSON).
    pub check_supported:
        unsafe extern "C" fn(engine: u32, op: RgeBytes, reason: *mut RgeBuf) -> i32,
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
}

/// The type of [`RGE_ENGINE_PLUGIN_ENTRY`].
pub type RgeEnginePluginEntry = unsafe extern "C" fn() -> *const RgePluginHeader;

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
        assert_eq!(std::mem::offset_of!(RgeEnginePluginV1, header), 0);
        assert_eq!(std::mem::size_of::<RgePluginHeader>(), 8);
    }
}
