//! Errors as Python exceptions: rge's own failures are `rge.RgeError` (a `RuntimeError`) with
//! the command line's message; a bad input is a `ValueError` naming it (a wrong Python type is
//! a `TypeError`, raised where the argument is read); a bad option a `ValueError` naming it.

use pyo3::create_exception;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::PyErr;
use rge::cli::CliError;
use rge_runtime::RuntimeError;

create_exception!(
    rge,
    RgeError,
    PyRuntimeError,
    "A model that rge cannot load, compile or run (the message is the command line's)."
);

/// A command-line error as a Python exception.
pub fn cli(e: CliError) -> PyErr {
    RgeError::new_err(e.message)
}

/// A runtime error as a Python exception: input and option errors are `ValueError`s.
pub fn runtime(e: RuntimeError) -> PyErr {
    match e {
        RuntimeError::Input { .. } | RuntimeError::Option { .. } => {
            PyValueError::new_err(e.to_string())
        }
        other => RgeError::new_err(other.to_string()),
    }
}
