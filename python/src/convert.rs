//! numpy arrays ⇄ runtime values.
//!
//! Inputs: a C-contiguous, aligned, native-byte-order array of a numeric or bool dtype is
//! viewed in place (no copy); any other array of a supported dtype is copied once into a
//! C-contiguous tensor; string arrays (`str` or `object` of `str`) become string tensors.
//! Outputs: a numeric tensor's buffer is handed to numpy as the array's memory (no copy), kept
//! alive by the array's base object; strings become `object` arrays of `str`, sequences lists,
//! optionals the value or `None`, maps dicts and sequences of maps lists of dicts (as
//! onnxruntime gives them); a dict input is a map.

use numpy::npyffi::{self, npy_intp, PY_ARRAY_API};
use numpy::{PyArrayDescr, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use rge_kernels::{Buffer, DType, MapValue, Tensor, TensorData, TensorRef, Value, ValueRef};

/// numpy's name of each dtype rge shares with numpy.
const NUMPY_NAMES: &[(DType, &str)] = &[
    (DType::Float, "float32"),
    (DType::Double, "float64"),
    (DType::Float16, "float16"),
    (DType::Int8, "int8"),
    (DType::Int16, "int16"),
    (DType::Int32, "int32"),
    (DType::Int64, "int64"),
    (DType::Uint8, "uint8"),
    (DType::Uint16, "uint16"),
    (DType::Uint32, "uint32"),
    (DType::Uint64, "uint64"),
    (DType::Bool, "bool"),
    (DType::Complex64, "complex64"),
    (DType::Complex128, "complex128"),
];

/// The numpy dtype name of `d`, when numpy has one.
pub fn numpy_name(d: DType) -> Option<&'static str> {
    NUMPY_NAMES.iter().find(|(t, _)| *t == d).map(|(_, n)| *n)
}

/// onnxruntime's type string of a tensor of `d`: `tensor(float)`, `tensor(int64)` …
pub fn ort_type(d: Option<DType>) -> String {
    let name = match d {
        None => return "tensor(undefined)".into(),
        Some(DType::Float) => "float".to_string(),
        Some(DType::Double) => "double".to_string(),
        Some(DType::Float16) => "float16".to_string(),
        Some(DType::Bfloat16) => "bfloat16".to_string(),
        Some(DType::String) => "string".to_string(),
        Some(d) => d.name().to_ascii_lowercase(),
    };
    format!("tensor({name})")
}

/// The rge dtype of a numpy dtype (native byte order), or `None`.
fn dtype_of(d: &Bound<'_, PyArrayDescr>) -> Option<DType> {
    let size = d.itemsize();
    let t = match (d.kind(), size) {
        (b'f', 4) => DType::Float,
        (b'f', 8) => DType::Double,
        (b'f', 2) => DType::Float16,
        (b'i', 1) => DType::Int8,
        (b'i', 2) => DType::Int16,
        (b'i', 4) => DType::Int32,
        (b'i', 8) => DType::Int64,
        (b'u', 1) => DType::Uint8,
        (b'u', 2) => DType::Uint16,
        (b'u', 4) => DType::Uint32,
        (b'u', 8) => DType::Uint64,
        (b'b', 1) => DType::Bool,
        (b'c', 8) => DType::Complex64,
        (b'c', 16) => DType::Complex128,
        _ => return None,
    };
    Some(t)
}

/// One input as read from Python: an array viewed in place, or a value rge owns.
pub enum Input<'py> {
    /// A C-contiguous aligned array: its memory is viewed for the run.
    View {
        array: Bound<'py, PyUntypedArray>,
        dtype: DType,
        shape: Vec<usize>,
    },
    Owned(Value),
}

impl Input<'_> {
    /// The runtime view of this input. The array stays referenced by `self`, so its memory
    /// outlives the view.
    pub fn as_value_ref(&self) -> PyResult<ValueRef<'_>> {
        match self {
            Input::Owned(v) => Ok(v.as_ref()),
            Input::View {
                array,
                dtype,
                shape,
            } => {
                let nbytes = dtype.bytes_for(shape.iter().product());
                // SAFETY: the array has elements and is C-contiguous and aligned (checked in
                // `read_input`), so its `nbytes` bytes from `data` are its elements; `self`
                // holds a reference to the array, which keeps the memory alive for `'_`.
                let bytes: &[u8] = unsafe {
                    let data = (*array.as_array_ptr()).fields.data as *const u8;
                    std::slice::from_raw_parts(data, nbytes)
                };
                TensorRef::new(*dtype, shape, bytes)
                    .map(ValueRef::Tensor)
                    .map_err(|e| PyValueError::new_err(e.to_string()))
            }
        }
    }
}

fn type_name(ob: &Bound<'_, PyAny>) -> String {
    ob.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// Reads input `name` from a Python object: a numpy array (or anything `numpy.asarray` turns
/// into one, such as a list or a scalar: made of `want`, the dtype the model takes), or a dict
/// for an input that is not `tensor_only` (a map). Errors name the input: a wrong dtype or a
/// non-array is a `TypeError`.
pub fn read_input<'py>(
    name: &str,
    ob: &Bound<'py, PyAny>,
    want: Option<DType>,
    tensor_only: bool,
) -> PyResult<Input<'py>> {
    let py = ob.py();
    if let (Ok(d), false) = (ob.cast::<PyDict>(), tensor_only) {
        return read_map(name, d, want).map(|m| Input::Owned(Value::Map(m)));
    }
    let np = py.import("numpy")?;
    let array: Bound<'py, PyUntypedArray> = match ob.cast::<PyUntypedArray>() {
        Ok(a) => a.clone(),
        Err(_) => {
            if ob.is_none() || ob.is_callable() || ob.hasattr("keys")? {
                return Err(PyTypeError::new_err(format!(
                    "input `{name}`: expected a numpy array, got {}",
                    type_name(ob)
                )));
            }
            let np_dtype = want.and_then(numpy_name);
            let converted = np.call_method1("asarray", (ob, np_dtype)).map_err(|e| {
                PyTypeError::new_err(format!(
                    "input `{name}`: expected a numpy array, got {} ({e})",
                    type_name(ob)
                ))
            })?;
            let a = converted.cast_into::<PyUntypedArray>().map_err(|_| {
                PyTypeError::new_err(format!("input `{name}`: numpy.asarray gave no array"))
            })?;
            if a.dtype().kind() == b'O' {
                return Err(PyTypeError::new_err(format!(
                    "input `{name}`: expected a numpy array, got {}",
                    type_name(ob)
                )));
            }
            a
        }
    };
    let descr = array.dtype();
    let shape = array.shape().to_vec();
    let kind = descr.kind();
    let got = if kind == b'U' || kind == b'O' || kind == b'S' {
        Some(DType::String)
    } else {
        dtype_of(&descr)
    };
    let Some(dtype) = got else {
        return Err(PyTypeError::new_err(format!(
            "input `{name}`: numpy dtype {} has no rge counterpart",
            descr.str()?
        )));
    };
    if let Some(want) = want.filter(|w| *w != dtype) {
        return Err(PyTypeError::new_err(format!(
            "input `{name}`: the model takes {}, got a numpy array of {} (dtype {})",
            ort_type(Some(want)),
            ort_type(Some(dtype)),
            descr.str()?
        )));
    }
    if dtype == DType::String {
        return read_strings(name, &array, &shape);
    }
    let native = descr.is_native_byteorder().unwrap_or(true);
    if shape.contains(&0) {
        // No elements: an owned empty tensor (a view of no bytes has no aligned address).
        let t = Tensor::zeros(dtype, &shape)
            .map_err(|e| PyValueError::new_err(format!("input `{name}`: {e}")))?;
        return Ok(Input::Owned(Value::Tensor(t)));
    }
    if array.is_c_contiguous() && array.is_aligned() && native {
        return Ok(Input::View {
            array,
            dtype,
            shape,
        });
    }
    // Not viewable in place: one copy into a C-contiguous native array, then into a tensor.
    let contiguous = np.call_method1(
        "ascontiguousarray",
        (&array, numpy_name(dtype).unwrap_or("float32")),
    )?;
    let contiguous = contiguous.cast_into::<PyUntypedArray>()?;
    let n: usize = shape.iter().product();
    let nbytes = dtype.bytes_for(n);
    let bytes: &[u8] = if nbytes == 0 {
        &[]
    } else {
        // SAFETY: `ascontiguousarray` returned a C-contiguous native array of `dtype` with
        // this shape, alive in `contiguous` for the borrow.
        unsafe {
            std::slice::from_raw_parts(
                (*contiguous.as_array_ptr()).fields.data as *const u8,
                nbytes,
            )
        }
    };
    let t = Tensor::from_bytes(dtype, &shape, bytes)
        .map_err(|e| PyValueError::new_err(format!("input `{name}`: {e}")))?;
    Ok(Input::Owned(Value::Tensor(t)))
}

/// A dict as a map: keys all `int` (int64) or all `str`, values of the model's value type
/// (`want`; float when unknown).
fn read_map(name: &str, d: &Bound<'_, PyDict>, want: Option<DType>) -> PyResult<MapValue> {
    let bad = |what: String| PyTypeError::new_err(format!("input `{name}`: {what}"));
    let n = d.len();
    let keys = if d.keys().iter().all(|k| k.is_instance_of::<PyString>()) {
        let k: Vec<String> = d
            .keys()
            .iter()
            .map(|k| k.extract())
            .collect::<PyResult<_>>()?;
        Tensor::from_strings(&[n], k)
    } else {
        let k: Vec<i64> = d
            .keys()
            .iter()
            .map(|k| k.extract::<i64>())
            .collect::<PyResult<_>>()
            .map_err(|_| bad("map keys must be all int or all str".into()))?;
        Tensor::from_vec(&[n], k)
    };
    let values = d.values();
    let wrong = |_| bad(format!("map values must be {}", ort_type(want)));
    let values = match want.unwrap_or(DType::Float) {
        DType::Float => Tensor::from_vec(
            &[n],
            values
                .iter()
                .map(|v| v.extract::<f32>())
                .collect::<PyResult<Vec<_>>>()
                .map_err(wrong)?,
        ),
        DType::Double => Tensor::from_vec(
            &[n],
            values
                .iter()
                .map(|v| v.extract::<f64>())
                .collect::<PyResult<Vec<_>>>()
                .map_err(wrong)?,
        ),
        DType::Int64 => Tensor::from_vec(
            &[n],
            values
                .iter()
                .map(|v| v.extract::<i64>())
                .collect::<PyResult<Vec<_>>>()
                .map_err(wrong)?,
        ),
        DType::String => Tensor::from_strings(
            &[n],
            values
                .iter()
                .map(|v| v.extract::<String>())
                .collect::<PyResult<Vec<_>>>()
                .map_err(wrong)?,
        ),
        other => {
            return Err(bad(format!(
                "maps of {} values are not supported",
                ort_type(Some(other))
            )))
        }
    };
    let (keys, values) = (
        keys.map_err(|e| bad(e.to_string()))?,
        values.map_err(|e| bad(e.to_string()))?,
    );
    MapValue::new(keys, values).map_err(|e| PyValueError::new_err(format!("input `{name}`: {e}")))
}

fn read_strings<'py>(
    name: &str,
    array: &Bound<'py, PyUntypedArray>,
    shape: &[usize],
) -> PyResult<Input<'py>> {
    let flat = array.call_method1("reshape", (-1,))?;
    let mut values = Vec::with_capacity(shape.iter().product());
    for item in flat.try_iter()? {
        let item = item?;
        let s = if let Ok(s) = item.cast::<PyString>() {
            s.extract::<String>()?
        } else if let Ok(b) = item.extract::<Vec<u8>>() {
            String::from_utf8(b).map_err(|_| {
                PyValueError::new_err(format!("input `{name}`: a bytes element is not UTF-8"))
            })?
        } else {
            return Err(PyTypeError::new_err(format!(
                "input `{name}`: an object array must hold str, found {}",
                type_name(&item)
            )));
        };
        values.push(s);
    }
    let t = Tensor::from_strings(shape, values)
        .map_err(|e| PyValueError::new_err(format!("input `{name}`: {e}")))?;
    Ok(Input::Owned(Value::Tensor(t)))
}

/// What keeps an output's memory alive: the numpy array's base object.
#[pyclass(frozen, module = "rge")]
pub struct OutputBuffer {
    _buffer: Buffer,
}

/// A numpy array over `t`'s own memory (no copy), or a copy where numpy cannot share it.
fn tensor_to_numpy<'py>(py: Python<'py>, name: &str, t: Tensor) -> PyResult<Bound<'py, PyAny>> {
    let dtype = t.dtype();
    let shape: Vec<usize> = t.shape().to_vec();
    let np_name = numpy_name(dtype);
    match (t.into_data(), np_name) {
        (TensorData::Strings(s), _) => {
            let list = PyList::new(py, s)?;
            let np = py.import("numpy")?;
            let arr = np.call_method1("array", (list, "object"))?;
            arr.call_method1("reshape", (shape,))
        }
        (TensorData::Bytes(mut buffer), Some(np_name)) => {
            let descr = PyArrayDescr::new(py, np_name)?;
            let mut dims: Vec<npy_intp> = shape.iter().map(|&d| d as npy_intp).collect();
            let data = buffer.as_mut_slice().as_mut_ptr();
            let holder = Bound::new(py, OutputBuffer { _buffer: buffer })?;
            // SAFETY: `data` points at the buffer now owned by `holder`, whose heap memory
            // does not move; it holds the C-contiguous elements of `dims` in numpy's layout
            // for `descr` (rge tensors are row-major, native byte order, and 16-byte aligned).
            // The new array takes the descr reference and, through SetBaseObject, `holder`'s,
            // so the memory lives as long as the array.
            unsafe {
                let ptr = PY_ARRAY_API.PyArray_NewFromDescr(
                    py,
                    npyffi::get_type_object(py, npyffi::NpyTypes::PyArray_Type),
                    descr.into_dtype_ptr(),
                    dims.len() as std::ffi::c_int,
                    dims.as_mut_ptr(),
                    std::ptr::null_mut(),
                    data.cast(),
                    npyffi::NPY_ARRAY_WRITEABLE,
                    std::ptr::null_mut(),
                );
                if ptr.is_null() {
                    return Err(PyErr::fetch(py));
                }
                let rc = PY_ARRAY_API.PyArray_SetBaseObject(
                    py,
                    ptr.cast::<npyffi::PyArrayObject>(),
                    holder.into_ptr(),
                );
                let arr = Bound::from_owned_ptr(py, ptr);
                if rc != 0 {
                    return Err(PyErr::fetch(py));
                }
                Ok(arr)
            }
        }
        (TensorData::Bytes(_), None) => Err(PyTypeError::new_err(format!(
            "output `{name}`: rge's {dtype} has no numpy dtype"
        ))),
    }
}

/// A runtime value as a Python object: a numpy array, a list (sequence), `None` (empty
/// optional), a dict (map) or a list of dicts (sequence of maps).
pub fn value_to_py<'py>(py: Python<'py>, name: &str, v: Value) -> PyResult<Bound<'py, PyAny>> {
    match v {
        Value::Tensor(t) => tensor_to_numpy(py, name, t),
        Value::Sequence { items, .. } => {
            let list = PyList::empty(py);
            for t in items {
                list.append(tensor_to_numpy(py, name, t)?)?;
            }
            Ok(list.into_any())
        }
        Value::Optional(None) => Ok(py.None().into_bound(py)),
        Value::Optional(Some(v)) => value_to_py(py, name, *v),
        Value::Map(m) => map_to_py(py, name, m),
        Value::MapSequence { items, .. } => {
            let list = PyList::empty(py);
            for m in items {
                list.append(map_to_py(py, name, m)?)?;
            }
            Ok(list.into_any())
        }
    }
}

/// A map as a Python dict of Python scalars (what onnxruntime returns for maps).
fn map_to_py<'py>(
    py: Python<'py>,
    name: &str,
    m: rge_kernels::MapValue,
) -> PyResult<Bound<'py, PyAny>> {
    let keys = tensor_to_numpy(py, name, m.keys().clone())?.call_method0("tolist")?;
    let values = tensor_to_numpy(py, name, m.values().clone())?.call_method0("tolist")?;
    let dict = pyo3::types::PyDict::new(py);
    for (k, v) in keys.try_iter()?.zip(values.try_iter()?) {
        dict.set_item(k?, v?)?;
    }
    Ok(dict.into_any())
}
