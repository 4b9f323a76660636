//! `rge.InferenceSession`: loads (or compiles) a model once with the command line's engine set
//! and runs it from any number of Python threads at once (the GIL is released during a run).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use rge::cli::shape_args::{self, Built};
use rge::ports::{self, Dim, Port};
use rge_kernels::{DType, ValueRef};
use rge_runtime::{ExecutorKind, Profiler};

use crate::convert::{self, Input};
use crate::errors;
use crate::options::{self, Options};

/// A graph input or output: name, shape and type, as onnxruntime's `NodeArg`.
#[pyclass(frozen, module = "rge")]
pub struct NodeArg {
    name: String,
    shape: Option<Vec<Py<PyAny>>>,
    type_: String,
}

#[pymethods]
impl NodeArg {
    /// The input or output name.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// Each dim: an int, the model's dim name (str), or None (unknown); None for an unknown
    /// rank.
    #[getter]
    fn shape(&self, py: Python<'_>) -> Option<Vec<Py<PyAny>>> {
        self.shape
            .as_ref()
            .map(|d| d.iter().map(|x| x.clone_ref(py)).collect())
    }

    /// onnxruntime's type string, e.g. `tensor(float)`.
    #[getter(r#type)]
    fn type_(&self) -> &str {
        &self.type_
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let shape = match &self.shape {
            None => "None".to_string(),
            Some(d) => {
                let parts: PyResult<Vec<String>> = d
                    .iter()
                    .map(|x| Ok(x.bind(py).repr()?.to_string()))
                    .collect();
                format!("[{}]", parts?.join(", "))
            }
        };
        Ok(format!(
            "NodeArg(name='{}', type='{}', shape={shape})",
            self.name, self.type_
        ))
    }
}

fn node_arg(py: Python<'_>, p: &Port, dtype: Option<DType>) -> PyResult<NodeArg> {
    let shape = match &p.dims {
        None => None,
        Some(d) => Some(
            d.iter()
                .map(|x| -> PyResult<Py<PyAny>> {
                    Ok(match x {
                        Dim::Known(v) => v.into_pyobject(py)?.into_any().unbind(),
                        Dim::Named(n) => n.into_pyobject(py)?.into_any().unbind(),
                        Dim::Unknown => py.None(),
                    })
                })
                .collect::<PyResult<Vec<_>>>()?,
        ),
    };
    Ok(NodeArg {
        name: p.name.clone(),
        shape,
        type_: convert::ort_type(dtype.or_else(|| DType::from_ir(p.dtype))),
    })
}

/// An inference session over one model (ONNX, GE ModelDef, or an rge compiled model).
#[pyclass(frozen, module = "rge")]
pub struct InferenceSession {
    path: PathBuf,
    built: Built,
    options: Options,
    /// Input names in run order.
    input_names: Vec<String>,
    inputs: Vec<Port>,
    input_dtypes: Vec<Option<DType>>,
    /// Per input: it must be a tensor (a dict is refused rather than read as a map).
    input_tensor: Vec<bool>,
    outputs: Vec<Port>,
    profiler: Mutex<Option<Arc<Profiler>>>,
}

fn build(path: &Path, o: &Options) -> Result<Built, rge::cli::CliError> {
    let s = rge::cli::run::session(o.executor, o.threads, o.pin_threads, &o.engines)?;
    shape_args::build(&s, path, &o.shapes)
}

fn path_of(ob: &Bound<'_, PyAny>, what: &str) -> PyResult<PathBuf> {
    ob.extract::<PathBuf>().map_err(|_| {
        PyTypeError::new_err(format!(
            "{what}: expected a path (str or os.PathLike), got {}",
            ob.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default()
        ))
    })
}

#[pymethods]
impl InferenceSession {
    /// `InferenceSession(path, threads=None, engines=None, exclude_engines=None,
    /// engine_type=None, engine_plugins=None, executor=None, shapes=None,
    /// enable_profiling=False, profile_file_prefix="rge_profile", pin_threads="auto")`
    #[new]
    #[pyo3(signature = (path, threads=None, engines=None, exclude_engines=None, engine_type=None,
        engine_plugins=None, executor=None, shapes=None, enable_profiling=false,
        profile_file_prefix=None, providers=None, pin_threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        threads: Option<i64>,
        engines: Option<&Bound<'_, PyAny>>,
        exclude_engines: Option<&Bound<'_, PyAny>>,
        engine_type: Option<String>,
        engine_plugins: Option<Vec<PathBuf>>,
        executor: Option<String>,
        shapes: Option<&Bound<'_, PyDict>>,
        enable_profiling: bool,
        profile_file_prefix: Option<String>,
        providers: Option<&Bound<'_, PyAny>>,
        pin_threads: Option<String>,
    ) -> PyResult<Self> {
        // onnxruntime's `providers=` is accepted and ignored: rge places nodes by engine cost.
        let _ = providers;
        let path = path_of(path, "path")?;
        let options = options::read(
            threads,
            pin_threads,
            engines,
            exclude_engines,
            engine_type,
            engine_plugins,
            executor,
            shapes,
            enable_profiling,
            profile_file_prefix,
        )?;
        let built = py.detach(|| build(&path, &options)).map_err(errors::cli)?;
        let graph = match &built {
            Built::Fixed(m) => m.graph(),
            Built::PerShape(m) => m.graph(),
        };
        let declared = ports::inputs(graph);
        let specs = built.inputs();
        let mut inputs = Vec::with_capacity(specs.len());
        for s in &specs {
            let port = declared
                .iter()
                .find(|p| p.name == s.name)
                .cloned()
                .unwrap_or_else(|| Port {
                    name: s.name.clone(),
                    dtype: s.dtype.map_or(rge_ir::DataType::Undefined, DType::to_ir),
                    dims: s.dims.as_ref().map(|d| {
                        d.iter()
                            .map(|&x| if x < 0 { Dim::Unknown } else { Dim::Known(x) })
                            .collect()
                    }),
                });
            inputs.push(port);
        }
        let mut outputs = ports::outputs(graph);
        if let Built::Fixed(m) = &built {
            for (p, n) in outputs.iter_mut().zip(m.output_names()) {
                p.name = n.to_string();
            }
        }
        let profiler = Mutex::new(options.profiling.then(|| Arc::new(Profiler::new())));
        Ok(InferenceSession {
            input_names: specs.iter().map(|s| s.name.clone()).collect(),
            input_dtypes: specs.iter().map(|s| s.dtype).collect(),
            input_tensor: specs.iter().map(|s| s.tensor).collect(),
            inputs,
            outputs,
            path,
            built,
            options,
            profiler,
        })
    }

    /// The model's inputs, in run order.
    fn get_inputs(&self, py: Python<'_>) -> PyResult<Vec<NodeArg>> {
        self.inputs
            .iter()
            .zip(&self.input_dtypes)
            .map(|(p, d)| node_arg(py, p, *d))
            .collect()
    }

    /// The model's outputs, in the order `run` returns them.
    fn get_outputs(&self, py: Python<'_>) -> PyResult<Vec<NodeArg>> {
        self.outputs.iter().map(|p| node_arg(py, p, None)).collect()
    }

    /// The model file this session runs.
    #[getter]
    fn model_path(&self) -> String {
        self.path.display().to_string()
    }

    /// `run(output_names, input_feed)`: runs the model on `input_feed` (a dict of input name
    /// to numpy array) and returns the outputs named in `output_names` (None: all) as numpy
    /// arrays. The GIL is released while the model runs.
    #[pyo3(signature = (output_names, input_feed, run_options=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        output_names: Option<&Bound<'py, PyAny>>,
        input_feed: &Bound<'py, PyAny>,
        run_options: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let _ = run_options;
        let feed = input_feed.cast::<PyDict>().map_err(|_| {
            PyTypeError::new_err(format!(
                "input_feed: expected a dict of input name to numpy array, got {}",
                input_feed
                    .get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_default()
            ))
        })?;
        let wanted = self.selected_outputs(output_names)?;
        let mut given: Vec<Option<Input<'py>>> =
            (0..self.input_names.len()).map(|_| None).collect();
        for (k, v) in feed.iter() {
            let name: String = k.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "input_feed: keys must be input names (str), got {}",
                    k.repr().map(|r| r.to_string()).unwrap_or_default()
                ))
            })?;
            let Some(i) = self.input_names.iter().position(|n| *n == name) else {
                return Err(PyValueError::new_err(format!(
                    "input `{name}`: the model has no such input (inputs: {})",
                    self.input_names.join(", ")
                )));
            };
            given[i] = Some(convert::read_input(
                &name,
                &v,
                self.input_dtypes[i],
                self.input_tensor[i],
            )?);
        }
        let missing: Vec<&str> = self
            .input_names
            .iter()
            .zip(&given)
            .filter(|(_, g)| g.is_none())
            .map(|(n, _)| n.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(PyValueError::new_err(format!(
                "missing input{} {} (the model takes: {})",
                if missing.len() > 1 { "s" } else { "" },
                missing
                    .iter()
                    .map(|m| format!("`{m}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
                self.input_names.join(", ")
            )));
        }
        let inputs: Vec<Input<'py>> = given.into_iter().flatten().collect();
        let refs: Vec<ValueRef<'_>> = inputs
            .iter()
            .zip(&self.input_names)
            .map(|(i, n)| {
                i.as_value_ref()
                    .map_err(|e| PyValueError::new_err(format!("input `{n}`: {e}")))
            })
            .collect::<PyResult<_>>()?;
        let profiler = self.profiler.lock().ok().and_then(|p| p.clone());
        let executor = self.options.executor;
        let built = &self.built;
        let outs = py
            .detach(|| run_built(built, &refs, executor, profiler.as_deref()))
            .map_err(errors::runtime)?;
        drop(refs);
        drop(inputs);
        let list = PyList::empty(py);
        let mut outs: Vec<Option<rge_kernels::Value>> = outs.into_iter().map(Some).collect();
        for i in wanted {
            let v = outs[i]
                .take()
                .ok_or_else(|| PyValueError::new_err("output_names: an output is named twice"))?;
            list.append(convert::value_to_py(py, &self.outputs[i].name, v)?)?;
        }
        Ok(list)
    }

    /// Writes the compiled model (placement, kernels, memory plan, weights) to `path`; a new
    /// `InferenceSession(path)` runs it without compiling again.
    fn save(&self, py: Python<'_>, path: &Bound<'_, PyAny>) -> PyResult<()> {
        let out = path_of(path, "path")?;
        let src = self.path.clone();
        let o = self.options.clone();
        py.detach(|| rge::cli::compile::run_with_shapes(&src, &out, &o.engines, &o.shapes))
            .map(|_| ())
            .map_err(errors::cli)
    }

    /// Every placement decision as `rge explain --json` reports it, as a dict.
    fn explain<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let src = self.path.clone();
        let engines = self.options.engines.clone();
        let json = py
            .detach(|| rge::cli::explain::run(&src, &engines, true, None))
            .map_err(errors::cli)?;
        py.import("json")?.call_method1("loads", (json,))
    }

    /// Starts collecting step timings (also on with `enable_profiling=True`).
    fn start_profiling(&self) {
        if let Ok(mut p) = self.profiler.lock() {
            if p.is_none() {
                *p = Some(Arc::new(Profiler::new()));
            }
        }
    }

    /// Stops profiling, writes the Chrome trace as PREFIX_<time>.json and returns its path
    /// (onnxruntime's `end_profiling`); "" when profiling was off.
    fn end_profiling(&self) -> PyResult<String> {
        let Some(p) = self.profiler.lock().ok().and_then(|mut p| p.take()) else {
            return Ok(String::new());
        };
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_micros())
            .unwrap_or(0);
        let path = format!("{}_{stamp}.json", self.options.profile_prefix);
        std::fs::write(&path, p.chrome_trace())
            .map_err(|e| errors::RgeError::new_err(format!("{path}: {e}")))?;
        Ok(path)
    }

    /// The engines a node may be placed on (onnxruntime's providers).
    fn get_providers(&self) -> PyResult<Vec<String>> {
        get_available_engines(self.options.engines.plugins.clone())
    }

    fn __repr__(&self) -> String {
        format!("InferenceSession('{}')", self.path.display())
    }
}

impl InferenceSession {
    /// Indices of the outputs `output_names` asks for (None or []: all).
    fn selected_outputs(&self, names: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<usize>> {
        let names: Vec<String> = match names {
            None => Vec::new(),
            Some(n) if n.is_none() => Vec::new(),
            Some(n) => n.extract().map_err(|_| {
                PyTypeError::new_err("output_names: expected None or a list of output names")
            })?,
        };
        if names.is_empty() {
            return Ok((0..self.outputs.len()).collect());
        }
        names
            .iter()
            .map(|n| {
                self.outputs
                    .iter()
                    .position(|p| &p.name == n)
                    .ok_or_else(|| {
                        PyValueError::new_err(format!(
                            "output `{n}`: the model has no such output (outputs: {})",
                            self.outputs
                                .iter()
                                .map(|p| p.name.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        ))
                    })
            })
            .collect()
    }
}

fn run_built(
    built: &Built,
    refs: &[ValueRef<'_>],
    executor: ExecutorKind,
    profiler: Option<&Profiler>,
) -> rge_runtime::RuntimeResult<Vec<rge_kernels::Value>> {
    match built {
        Built::Fixed(m) => m.run_refs(refs, executor, profiler),
        Built::PerShape(m) => m.run_refs(refs, executor, profiler),
    }
}

/// `compile(model, output, **options)`: compiles `model` and writes the compiled model to
/// `output` (what `rge compile` does), with `InferenceSession`'s engine options.
#[pyfunction]
#[pyo3(signature = (model, output, engines=None, exclude_engines=None, engine_type=None,
    engine_plugins=None, shapes=None))]
#[allow(clippy::too_many_arguments)]
pub fn compile(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    output: &Bound<'_, PyAny>,
    engines: Option<&Bound<'_, PyAny>>,
    exclude_engines: Option<&Bound<'_, PyAny>>,
    engine_type: Option<String>,
    engine_plugins: Option<Vec<PathBuf>>,
    shapes: Option<&Bound<'_, PyDict>>,
) -> PyResult<()> {
    let src = path_of(model, "model")?;
    let out = path_of(output, "output")?;
    let o = options::read(
        None,
        None,
        engines,
        exclude_engines,
        engine_type,
        engine_plugins,
        None,
        shapes,
        false,
        None,
    )?;
    py.detach(|| rge::cli::compile::run_with_shapes(&src, &out, &o.engines, &o.shapes))
        .map(|_| ())
        .map_err(errors::cli)
}

/// The engine names of the standard set (and of `engine_plugins`' engines), cheapest first.
#[pyfunction]
#[pyo3(signature = (engine_plugins=Vec::new()))]
pub fn get_available_engines(engine_plugins: Vec<PathBuf>) -> PyResult<Vec<String>> {
    options::engine_names(&engine_plugins).map_err(errors::runtime)
}
