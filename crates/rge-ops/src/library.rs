//! Loading op libraries (the seed's OpsProtoManager, §5.1/5.3): `dlopen` through
//! `libloading`, the ABI version checked, each op's prototype parsed, then registered with the
//! override window open (an op library may replace a built-in or an earlier library's op);
//! the window closes when loading ends, locking the registry again.

use std::ffi::{c_char, c_void, CStr, CString};
use std::path::Path;
use std::sync::Arc;

use rge_ir::{AttrValue, DataType, Format, Shape};

use crate::abi::*;
use crate::ctx::InferCtx;
use crate::error::{OpError, OpResult, OpsError};
use crate::proto::{InferImpl, OpProto};
use crate::registry::OpRegistryBuilder;

/// A loaded library, kept open as long as any registry or prototype refers to it.
pub struct LoadedLibrary {
    pub path: String,
    pub name: String,
    _lib: libloading::Library,
}

/// An op implemented by a library.
pub struct PluginOp {
    pub library: String,
    lib: Arc<LoadedLibrary>,
    infer: RgeInferFn,
    user_data: usize,
}

impl std::fmt::Debug for PluginOp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PluginOp({})", self.library)
    }
}

/// What was loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct LibraryInfo {
    pub path: String,
    pub name: String,
    /// (domain, op type, since version) of each registered op.
    pub ops: Vec<(String, String, i64)>,
}

/// Reads a C string field; null is "".
///
/// # Safety
/// `p` is null or points to a NUL-terminated string that outlives the call.
unsafe fn cstr(p: *const c_char, what: &str) -> Result<String, String> {
    if p.is_null() {
        return Ok(String::new());
    }
    // SAFETY: the caller guarantees a NUL-terminated string.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map(str::to_string)
        .map_err(|_| format!("{what} is not UTF-8"))
}

fn parse_constraints(mut proto: OpProto, s: &str) -> Result<OpProto, String> {
    for part in s.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, types) = part
            .split_once(':')
            .ok_or_else(|| format!("type constraint `{part}` has no `:`"))?;
        let allowed: Vec<DataType> = types
            .split(',')
            .map(|t| {
                crate::abi::dtype_from_name(t).ok_or_else(|| format!("unknown type `{}`", t.trim()))
            })
            .collect::<Result<_, _>>()?;
        proto = proto.tc(name.trim(), &allowed);
    }
    Ok(proto)
}

/// Loads the op library at `path` into `builder`: the override window is open while its ops
/// register and closed afterwards. A library of another ABI version is refused.
pub fn load_op_library(
    builder: &mut OpRegistryBuilder,
    path: impl AsRef<Path>,
) -> Result<LibraryInfo, OpsError> {
    load_op_library_symbol(builder, path, RGE_OP_LIBRARY_SYMBOL)
}

/// [`load_op_library`] through another entry symbol (a library may hold several tables).
pub fn load_op_library_symbol(
    builder: &mut OpRegistryBuilder,
    path: impl AsRef<Path>,
    symbol: &str,
) -> Result<LibraryInfo, OpsError> {
    let path_str = path.as_ref().display().to_string();
    let lib_err = |message: String| OpsError::Library {
        path: path_str.clone(),
        message,
    };
    // SAFETY: loading a shared library runs its initializers; loading an op library is an
    // explicit request to run its code, as dlopen in the seed's OpsProtoManager is.
    let lib =
        unsafe { libloading::Library::new(path.as_ref()) }.map_err(|e| lib_err(e.to_string()))?;
    // SAFETY: the symbol is declared by the ABI as `const RgeOpLibrary *rge_op_library(void)`.
    let entry: RgeOpLibraryEntry = unsafe {
        *lib.get::<RgeOpLibraryEntry>(symbol.as_bytes())
            .map_err(|e| lib_err(format!("no `{symbol}` symbol: {e}")))?
    };
    // SAFETY: calling the entry point as the ABI declares it; it returns a static table.
    let table = unsafe { entry() };
    if table.is_null() {
        return Err(lib_err(format!("`{symbol}` returned null")));
    }
    // SAFETY: non-null, and the ABI makes it a pointer to a table that lives as long as the
    // library is loaded (we keep it loaded).
    let table = unsafe { &*table };
    if table.abi_version != RGE_OPS_ABI_VERSION {
        return Err(OpsError::AbiVersion {
            path: path_str,
            found: table.abi_version,
            expected: RGE_OPS_ABI_VERSION,
        });
    }
    // SAFETY: `name` is null or a NUL-terminated static string (ABI).
    let name = unsafe { cstr(table.name, "library name") }.map_err(lib_err)?;
    let defs: &[RgeOpDef] = if table.op_count == 0 {
        &[]
    } else if table.ops.is_null() {
        return Err(lib_err("op table is null".into()));
    } else {
        // SAFETY: the ABI makes `ops` an array of `op_count` defs living with the library.
        unsafe { std::slice::from_raw_parts(table.ops, table.op_count) }
    };
    let loaded = Arc::new(LoadedLibrary {
        path: path_str.clone(),
        name: name.clone(),
        _lib: lib,
    });
    let mut protos = Vec::with_capacity(defs.len());
    for (i, d) in defs.iter().enumerate() {
        // SAFETY: each string field is null or a NUL-terminated static string (ABI).
        let read = |p: *const c_char, what: &str| unsafe { cstr(p, what) };
        let ctx = |m: String| lib_err(format!("op {i}: {m}"));
        let domain = read(d.domain, "domain").map_err(ctx)?;
        let op_type = read(d.op_type, "op type").map_err(ctx)?;
        let ctx = |m: String| lib_err(format!("op `{op_type}`: {m}"));
        let sig = read(d.signature, "signature").map_err(ctx)?;
        let attrs = read(d.attributes, "attributes").map_err(ctx)?;
        let tcs = read(d.type_constraints, "type constraints").map_err(ctx)?;
        let Some(infer) = d.infer else {
            return Err(ctx("no infer function".into()));
        };
        let mut proto = OpProto::new(&domain, &op_type, d.since_version)
            .sig(&sig)
            .attrs(&attrs);
        proto = parse_constraints(proto, &tcs).map_err(ctx)?;
        proto.source = path_str.clone();
        proto.infer = InferImpl::Plugin(Arc::new(PluginOp {
            library: path_str.clone(),
            lib: loaded.clone(),
            infer,
            user_data: d.user_data as usize,
        }));
        proto.check().map_err(ctx)?;
        protos.push(proto);
    }
    let ops = protos
        .iter()
        .map(|p| (p.domain.clone(), p.op_type.clone(), p.since_version))
        .collect();
    builder.open_override_window();
    let result = builder.register_all(protos);
    builder.close_override_window();
    result?;
    builder.keep_library(loaded);
    Ok(LibraryInfo {
        path: path_str,
        name,
        ops,
    })
}

impl PluginOp {
    /// Calls the library's infer function with the node's inputs and attributes.
    pub(crate) fn infer(&self, ctx: &mut InferCtx<'_>) -> OpResult<()> {
        let _keep = &self.lib;
        let inputs: Vec<RgeTensor> = ctx
            .inputs()
            .iter()
            .map(|i| match i {
                None => RgeTensor {
                    present: 0,
                    dtype: DataType::Undefined.ge_value(),
                    format: Format::ND.raw(),
                    rank: -1,
                    dims: std::ptr::null(),
                },
                Some(t) => RgeTensor {
                    present: 1,
                    dtype: t.dtype.ge_value(),
                    format: t.format.raw(),
                    rank: t.rank().map_or(-1, |r| r as i32),
                    dims: t.shape.dims().as_ptr(),
                },
            })
            .collect();
        // Attribute names and data, kept alive across the call.
        let mut names: Vec<CString> = Vec::new();
        let mut strings: Vec<CString> = Vec::new();
        let mut floats: Vec<Vec<f64>> = Vec::new();
        let mut attrs: Vec<RgeAttr> = Vec::new();
        for (name, v) in ctx.attrs().iter() {
            let Ok(cname) = CString::new(name) else {
                continue;
            };
            let mut a = RgeAttr {
                name: cname.as_ptr(),
                kind: RGE_ATTR_INT,
                i: 0,
                f: 0.0,
                s: std::ptr::null(),
                ints: std::ptr::null(),
                floats: std::ptr::null(),
                len: 0,
            };
            match v {
                AttrValue::Int(x) => a.i = *x,
                AttrValue::Float(x) => {
                    a.kind = RGE_ATTR_FLOAT;
                    a.f = f64::from(*x);
                }
                AttrValue::String(s) => {
                    let Ok(c) = CString::new(s.as_str()) else {
                        continue;
                    };
                    a.kind = RGE_ATTR_STRING;
                    a.s = c.as_ptr();
                    strings.push(c);
                }
                AttrValue::ListInt(x) => {
                    a.kind = RGE_ATTR_INTS;
                    a.ints = x.as_ptr();
                    a.len = x.len();
                }
                AttrValue::ListFloat(x) => {
                    let f: Vec<f64> = x.iter().map(|&v| f64::from(v)).collect();
                    a.kind = RGE_ATTR_FLOATS;
                    a.floats = f.as_ptr();
                    a.len = f.len();
                    floats.push(f);
                }
                _ => continue,
            }
            names.push(cname);
            attrs.push(a);
        }
        let mut outputs = vec![
            RgeTensorOut {
                dtype: DataType::Undefined.ge_value(),
                format: Format::ND.raw(),
                rank: -1,
                dims: [0; RGE_MAX_RANK],
            };
            ctx.output_count()
        ];
        let mut error = vec![0 as c_char; 512];
        let node = CString::new(ctx.node_name()).unwrap_or_default();
        let mut args = RgeInferArgs {
            node_name: node.as_ptr(),
            opset: ctx.opset(),
            inputs: inputs.as_ptr(),
            n_inputs: inputs.len(),
            attrs: attrs.as_ptr(),
            n_attrs: attrs.len(),
            outputs: outputs.as_mut_ptr(),
            n_outputs: outputs.len(),
            error: error.as_mut_ptr(),
            error_cap: error.len(),
        };
        // SAFETY: every pointer in `args` points into buffers that live until after the call
        // (inputs, attrs, names, strings, floats, outputs, error, node), with the lengths
        // given; the function pointer came from the library, which `self.lib` keeps loaded.
        let rc = unsafe { (self.infer)(self.user_data as *mut c_void, &mut args) };
        if rc != 0 {
            let last = error.len() - 1;
            error[last] = 0;
            // SAFETY: the buffer is NUL-terminated (its last byte was just set to 0).
            let msg = unsafe { CStr::from_ptr(error.as_ptr()) }
                .to_string_lossy()
                .into_owned();
            return Err(OpError(format!(
                "op library `{}` failed ({rc}): {msg}",
                self.library
            )));
        }
        for (i, o) in outputs.iter().enumerate() {
            let dtype = DataType::from_ge_value(i64::from(o.dtype)).ok_or_else(|| {
                OpError(format!(
                    "op library gave output {i} unknown data type {}",
                    o.dtype
                ))
            })?;
            let shape = match o.rank {
                -1 => Shape::unknown_rank(),
                r if (0..=RGE_MAX_RANK as i32).contains(&r) => {
                    let dims = &o.dims[..r as usize];
                    if dims.iter().any(|&d| d < -1) {
                        return Err(OpError(format!(
                            "op library gave output {i} bad dims {dims:?}"
                        )));
                    }
                    Shape::from_slice(dims)
                }
                r => return Err(OpError(format!("op library gave output {i} bad rank {r}"))),
            };
            ctx.set_output(i, dtype, shape);
        }
        Ok(())
    }
}
