//! The C ABI of op libraries (ARCHITECTURE.md decision 8). An op library is a shared library
//! that exports
//!
//! ```c
//! const RgeOpLibrary *rge_op_library(void);
//! ```
//!
//! returning a static table: the ABI version (checked on load: a library built for another
//! version is refused), a name, and one [`RgeOpDef`] per op. Prototypes cross as C strings in
//! the prototype notation of [`crate::proto`] (`"x:T -> y:T"`, `"scale:float=1.0"`) and type
//! constraints as `"T: float, float16; I: int64"`; inference crosses as plain structs: the
//! inputs' data types (`ge::DataType` values), formats and dims, the attributes, and output
//! slots the library fills. Nothing Rust-specific crosses, so a C or C++ library can implement
//! it; `include/rge_ops.h` is the same ABI as a C header.

use std::ffi::{c_char, c_void};

/// The ABI version this rge speaks.
pub const RGE_OPS_ABI_VERSION: u32 = 1;
/// The symbol an op library exports.
pub const RGE_OP_LIBRARY_SYMBOL: &str = "rge_op_library";
/// The most dims an output may have.
pub const RGE_MAX_RANK: usize = 16;

/// Attribute kinds in [`RgeAttr::kind`].
pub const RGE_ATTR_INT: u32 = 0;
pub const RGE_ATTR_FLOAT: u32 = 1;
pub const RGE_ATTR_STRING: u32 = 2;
pub const RGE_ATTR_INTS: u32 = 3;
pub const RGE_ATTR_FLOATS: u32 = 4;

/// One input of a node.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RgeTensor {
    /// 0: the input is absent (an omitted optional input); 1: present.
    pub present: u32,
    /// `ge::DataType` value (DT_UNDEFINED = 28 when unknown).
    pub dtype: i32,
    /// `ge::Format` value (ND = 2).
    pub format: u32,
    /// Rank, or -1 for an unknown rank.
    pub rank: i32,
    /// `rank` dims; -1 is an unknown dim.
    pub dims: *const i64,
}

/// One output slot, filled by the library.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RgeTensorOut {
    pub dtype: i32,
    pub format: u32,
    /// Rank (≤ [`RGE_MAX_RANK`]) or -1 for an unknown rank.
    pub rank: i32,
    pub dims: [i64; RGE_MAX_RANK],
}

/// One attribute of a node.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct RgeAttr {
    pub name: *const c_char,
    /// One of the `RGE_ATTR_*` kinds.
    pub kind: u32,
    pub i: i64,
    pub f: f64,
    /// For strings: NUL-terminated UTF-8.
    pub s: *const c_char,
    /// For ints / floats: `len` elements.
    pub ints: *const i64,
    pub floats: *const f64,
    pub len: usize,
}

/// The arguments of an infer call.
#[repr(C)]
#[derive(Debug)]
pub struct RgeInferArgs {
    pub node_name: *const c_char,
    pub opset: i64,
    pub inputs: *const RgeTensor,
    pub n_inputs: usize,
    pub attrs: *const RgeAttr,
    pub n_attrs: usize,
    pub outputs: *mut RgeTensorOut,
    pub n_outputs: usize,
    /// A buffer for an error message (NUL-terminated) when the call returns non-zero.
    pub error: *mut c_char,
    pub error_cap: usize,
}

/// An infer function: 0 on success, non-zero with a message in `args.error` on failure.
pub type RgeInferFn = unsafe extern "C" fn(user_data: *mut c_void, args: *mut RgeInferArgs) -> i32;

/// One op of a library.
#[repr(C)]
#[derive(Debug)]
pub struct RgeOpDef {
    pub domain: *const c_char,
    pub op_type: *const c_char,
    pub since_version: i64,
    /// Prototype notation, e.g. `"x:T -> y:T"`.
    pub signature: *const c_char,
    /// Attribute notation, e.g. `"scale:float=1.0"` (may be null).
    pub attributes: *const c_char,
    /// `"T: float, float16; I: int64"` (may be null).
    pub type_constraints: *const c_char,
    pub infer: Option<RgeInferFn>,
    pub user_data: *mut c_void,
}

/// What `rge_op_library()` returns.
#[repr(C)]
#[derive(Debug)]
pub struct RgeOpLibrary {
    pub abi_version: u32,
    pub name: *const c_char,
    pub op_count: usize,
    pub ops: *const RgeOpDef,
}

// SAFETY: the descriptor tables are immutable data (pointers to static strings and functions)
// that a library hands out for reading only; sharing them between threads is sound.
unsafe impl Sync for RgeOpDef {}
// SAFETY: as above.
unsafe impl Sync for RgeOpLibrary {}

/// The entry point's type.
pub type RgeOpLibraryEntry = unsafe extern "C" fn() -> *const RgeOpLibrary;

/// Parses an ONNX-style element type name ("float", "int64", "bfloat16"…).
pub fn dtype_from_name(s: &str) -> Option<rge_ir::DataType> {
    use rge_ir::DataType::*;
    Some(match s.trim() {
        "float" | "float32" => Float,
        "float16" => Float16,
        "double" | "float64" => Double,
        "bfloat16" => Bf16,
        "int8" => Int8,
        "int16" => Int16,
        "int32" => Int32,
        "int64" => Int64,
        "uint8" => Uint8,
        "uint16" => Uint16,
        "uint32" => Uint32,
        "uint64" => Uint64,
        "bool" => Bool,
        "string" => String,
        "complex64" => Complex64,
        "complex128" => Complex128,
        "float8e4m3fn" => Float8E4M3Fn,
        "float8e4m3fnuz" => Float8E4M3Fnuz,
        "float8e5m2" => Float8E5M2,
        "float8e5m2fnuz" => Float8E5M2Fnuz,
        "float8e8m0" => Float8E8M0,
        "float4e2m1" => Float4E2M1,
        "int4" => Int4,
        "uint4" => Uint4,
        "int2" => Int2,
        "uint2" => Uint2,
        _ => return None,
    })
}
