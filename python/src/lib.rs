//! The `rge` Python module: an `InferenceSession` shaped like onnxruntime's over rge's compiler
//! and runtime (the command line's engine set and options), numpy arrays in and out.
//!
//! - `convert`: numpy arrays ⇄ runtime values (zero-copy where the layout allows);
//! - `options`: the session's keyword options → the command line's engine and session options;
//! - `session`: `InferenceSession`, `NodeArg`, `compile`.

mod convert;
mod errors;
mod options;
mod session;

use pyo3::prelude::*;

/// The `rge` extension module.
#[pymodule(name = "rge")]
fn rge_module(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("RgeError", m.py().get_type::<errors::RgeError>())?;
    m.add_class::<session::InferenceSession>()?;
    m.add_class::<session::NodeArg>()?;
    m.add_function(wrap_pyfunction!(session::compile, m)?)?;
    m.add_function(wrap_pyfunction!(session::get_available_engines, m)?)?;
    Ok(())
}
