//! An example op library. Built as a `cdylib`, it exports `rge_op_library()` (the rge-ops C
//! ABI, version 1) with one op, `com.example.MyScale` (y = x * scale): its prototype in the
//! notation strings and its shape inference as an `extern "C"` function over the ABI's plain
//! structs. A second op, `com.example.MyConcatPair`, shows an op that checks its inputs and
//! reports an error through the ABI. Only the `#[repr(C)]` types of `rge_ops::abi` are used;
//! a C library including `rge_ops.h` would do the same.

use std::ffi::{c_char, c_void};

use rge_ops::abi::{
    RgeInferArgs, RgeOpDef, RgeOpLibrary, RgeTensorOut, RGE_MAX_RANK, RGE_OPS_ABI_VERSION,
};

/// Writes `msg` into the ABI's error buffer (truncated, NUL-terminated).
///
/// # Safety
/// `args.error` points to `args.error_cap` writable bytes (ABI).
unsafe fn set_error(args: &mut RgeInferArgs, msg: &str) {
    if args.error.is_null() || args.error_cap == 0 {
        return;
    }
    let n = msg.len().min(args.error_cap - 1);
    // SAFETY: the buffer has `error_cap` bytes and we write at most `error_cap` of them.
    unsafe {
        std::ptr::copy_nonoverlapping(msg.as_ptr().cast::<c_char>(), args.error, n);
        *args.error.add(n) = 0;
    }
}

/// MyScale: one input x, attribute `scale` (float); y has x's type and shape.
unsafe extern "C" fn my_scale_infer(_user: *mut c_void, args: *mut RgeInferArgs) -> i32 {
    // SAFETY: rge passes a valid, exclusive pointer for the duration of the call (ABI).
    let args = unsafe { &mut *args };
    if args.n_inputs < 1 || args.n_outputs < 1 {
        // SAFETY: see `set_error`.
        unsafe { set_error(args, "MyScale needs one input and one output") };
        return 1;
    }
    // SAFETY: `inputs` holds `n_inputs` elements and `outputs` `n_outputs` (ABI).
    let (x, y) = unsafe { (&*args.inputs, &mut *args.outputs) };
    if x.present == 0 {
        // SAFETY: see `set_error`.
        unsafe { set_error(args, "input x is missing") };
        return 2;
    }
    *y = RgeTensorOut {
        dtype: x.dtype,
        format: x.format,
        rank: x.rank,
        dims: [0; RGE_MAX_RANK],
    };
    if x.rank > 0 {
        let r = x.rank as usize;
        if r > RGE_MAX_RANK {
            // SAFETY: see `set_error`.
            unsafe { set_error(args, "rank too large") };
            return 3;
        }
        // SAFETY: `dims` holds `rank` elements (ABI).
        let dims = unsafe { std::slice::from_raw_parts(x.dims, r) };
        y.dims[..r].copy_from_slice(dims);
    }
    0
}

/// MyConcatPair: two rank-1 inputs of one type; y is their concatenation.
unsafe extern "C" fn my_concat_pair_infer(_user: *mut c_void, args: *mut RgeInferArgs) -> i32 {
    // SAFETY: as in `my_scale_infer`.
    let args = unsafe { &mut *args };
    if args.n_inputs != 2 || args.n_outputs != 1 {
        // SAFETY: see `set_error`.
        unsafe { set_error(args, "MyConcatPair takes two inputs and one output") };
        return 1;
    }
    // SAFETY: `inputs` holds two elements, `outputs` one (checked above, ABI).
    let (a, b, y) = unsafe { (&*args.inputs, &*args.inputs.add(1), &mut *args.outputs) };
    if a.rank != 1 || b.rank != 1 {
        // SAFETY: see `set_error`.
        unsafe { set_error(args, "both inputs must be 1-D") };
        return 2;
    }
    // SAFETY: rank-1 inputs have one dim each (ABI).
    let (da, db) = unsafe { (*a.dims, *b.dims) };
    *y = RgeTensorOut {
        dtype: a.dtype,
        format: a.format,
        rank: 1,
        dims: [0; RGE_MAX_RANK],
    };
    y.dims[0] = if da < 0 || db < 0 { -1 } else { da + db };
    0
}

static OPS: [RgeOpDef; 2] = [
    RgeOpDef {
        domain: c"com.example".as_ptr(),
        op_type: c"MyScale".as_ptr(),
        since_version: 1,
        signature: c"x:T -> y:T".as_ptr(),
        attributes: c"scale:float=1.0".as_ptr(),
        type_constraints: c"T: float, float16, double, bfloat16".as_ptr(),
        infer: Some(my_scale_infer),
        user_data: std::ptr::null_mut(),
    },
    RgeOpDef {
        domain: c"com.example".as_ptr(),
        op_type: c"MyConcatPair".as_ptr(),
        since_version: 1,
        signature: c"a:T, b:T -> y:T".as_ptr(),
        attributes: std::ptr::null(),
        type_constraints: c"T: float, int64".as_ptr(),
        infer: Some(my_concat_pair_infer),
        user_data: std::ptr::null_mut(),
    },
];

static LIBRARY: RgeOpLibrary = RgeOpLibrary {
    abi_version: RGE_OPS_ABI_VERSION,
    name: c"rge-ops-example".as_ptr(),
    op_count: OPS.len(),
    ops: OPS.as_ptr(),
};

/// The ABI entry point.
#[no_mangle]
pub extern "C" fn rge_op_library() -> *const RgeOpLibrary {
    &LIBRARY
}

/// A second entry point that claims a wrong ABI version, for the loader's refusal test
/// (`RGE_OPS_EXAMPLE_BAD_ABI`-style checks load it through a renamed symbol).
static BAD_LIBRARY: RgeOpLibrary = RgeOpLibrary {
    abi_version: RGE_OPS_ABI_VERSION + 1000,
    name: c"rge-ops-example-bad".as_ptr(),
    op_count: 0,
    ops: std::ptr::null(),
};

/// Returns a table with a wrong ABI version (tests load it via `load_op_library_symbol`).
#[no_mangle]
pub extern "C" fn rge_op_library_bad_abi() -> *const RgeOpLibrary {
    &BAD_LIBRARY
}
