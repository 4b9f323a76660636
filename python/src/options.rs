//! `InferenceSession`'s keyword options, checked and turned into the command line's engine
//! options (`rge::engines::EngineArgs`, the one place engine options are built) and session
//! options. A bad option is a `ValueError` (a bad type a `TypeError`) naming it.

use std::path::PathBuf;

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use rge::engines::EngineArgs;
use rge_runtime::{ExecutorKind, ThreadPinning};

/// What a session was asked for.
#[derive(Debug, Clone)]
pub struct Options {
    pub engines: EngineArgs,
    pub threads: Option<usize>,
    pub pin_threads: ThreadPinning,
    pub executor: ExecutorKind,
    /// `--shape NAME=DIMS` values.
    pub shapes: Vec<String>,
    pub profiling: bool,
    pub profile_prefix: String,
}

/// A list of names: a str (comma separated) or a sequence of str.
fn names(option: &str, ob: &Bound<'_, PyAny>) -> PyResult<Vec<String>> {
    if let Ok(s) = ob.cast::<PyString>() {
        return Ok(s
            .extract::<String>()?
            .split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect());
    }
    ob.extract::<Vec<String>>().map_err(|_| {
        PyTypeError::new_err(format!(
            "option `{option}`: expected a list of engine names or a comma-separated str"
        ))
    })
}

/// Every engine name of the standard set plus `plugins`' engines.
pub fn engine_names(plugins: &[PathBuf]) -> Result<Vec<String>, rge_runtime::RuntimeError> {
    let set = rge::engines::engine_set(&EngineArgs {
        plugins: plugins.to_vec(),
        ..EngineArgs::default()
    })?;
    Ok(rge::compiler::report::list_engines(set.manager())
        .into_iter()
        .map(|r| r.name)
        .collect())
}

/// The engine that runs graph inputs, outputs and views: never left out by `engines=`.
const ALWAYS: &str = "local";

/// Reads the keyword options.
#[allow(clippy::too_many_arguments)]
pub fn read(
    threads: Option<i64>,
    pin_threads: Option<String>,
    engines: Option<&Bound<'_, PyAny>>,
    exclude_engines: Option<&Bound<'_, PyAny>>,
    engine_type: Option<String>,
    engine_plugins: Option<Vec<PathBuf>>,
    executor: Option<String>,
    shapes: Option<&Bound<'_, PyDict>>,
    enable_profiling: bool,
    profile_file_prefix: Option<String>,
) -> PyResult<Options> {
    let threads = match threads {
        None => None,
        Some(t) if t >= 1 => Some(t as usize),
        Some(t) => {
            return Err(PyValueError::new_err(format!(
                "option `threads`: must be at least 1, got {t}"
            )))
        }
    };
    let pin_threads = match pin_threads {
        None => ThreadPinning::Auto,
        Some(p) => p
            .parse::<ThreadPinning>()
            .map_err(|e| PyValueError::new_err(format!("option `pin_threads`: {e}")))?,
    };
    let plugins = engine_plugins.unwrap_or_default();
    let mut exclude: Vec<String> = match exclude_engines {
        Some(e) => names("exclude_engines", e)?,
        None => Vec::new(),
    };
    if let Some(e) = engines {
        let wanted = names("engines", e)?;
        let all = engine_names(&plugins).map_err(crate::errors::runtime)?;
        for w in &wanted {
            if !all.iter().any(|a| a == w) {
                return Err(PyValueError::new_err(format!(
                    "option `engines`: no engine `{w}` (engines: {})",
                    all.join(", ")
                )));
            }
        }
        for a in all {
            if a != ALWAYS && !wanted.contains(&a) && !exclude.contains(&a) {
                exclude.push(a);
            }
        }
    }
    let executor = match executor {
        None if threads.is_some_and(|t| t > 1) => ExecutorKind::Parallel,
        None => ExecutorKind::Sequential,
        Some(e) => e
            .parse::<ExecutorKind>()
            .map_err(|e| PyValueError::new_err(e.to_string()))?,
    };
    let mut shape_args = Vec::new();
    if let Some(d) = shapes {
        for (k, v) in d.iter() {
            let name: String = k.extract().map_err(|_| {
                PyTypeError::new_err("option `shapes`: keys must be input names (str)")
            })?;
            let dims: Vec<i64> = v.extract().map_err(|_| {
                PyTypeError::new_err(format!(
                    "option `shapes`: the dims of `{name}` must be a list of int"
                ))
            })?;
            let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
            shape_args.push(format!("{name}={}", dims.join(",")));
        }
    }
    Ok(Options {
        engines: EngineArgs {
            exclude_engines: (!exclude.is_empty()).then(|| exclude.join(",")),
            engine_type,
            plugins,
            ..EngineArgs::default()
        },
        threads,
        pin_threads,
        executor,
        shapes: shape_args,
        profiling: enable_profiling,
        profile_prefix: profile_file_prefix.unwrap_or_else(|| "rge_profile".into()),
    })
}
