//! The `rge` commands as functions that return their output, so tests can call them.

pub mod bench;
pub mod compile;
pub mod conformance;
pub mod convert;
pub mod engines;
pub mod explain;
pub mod inspect;
pub mod ops;
pub mod run;
pub mod shape_args;
pub mod shapes;
pub mod sort;

/// A command's failure: the message to print, and the exit code.
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub code: i32,
}

impl CliError {
    pub fn new(message: impl std::fmt::Display) -> Self {
        CliError {
            message: message.to_string(),
            code: 1,
        }
    }
}

impl<E: std::error::Error> From<E> for CliError {
    fn from(e: E) -> Self {
        CliError::new(e)
    }
}

pub type CliResult = Result<String, CliError>;
