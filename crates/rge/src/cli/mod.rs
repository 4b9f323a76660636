//! The `rge` commands as functions that return their output, so tests can call them.

pub mod bench;
pub mod check;
pub mod compile;
pub mod conformance;
pub mod convert;
pub mod distributed;
pub mod engines;
pub mod explain;
pub mod inputs;
pub mod inspect;
pub mod memory_limit;
pub mod ops;
pub mod profile_summary;
pub mod progress;
pub mod run;
pub mod shape_args;
pub mod shapes;
pub mod sort;

/// A command's failure: the message to print, and the exit code.
#[derive(Debug)]
pub struct CliError {
    pub message: String,
    pub code: i32,
    /// What the command printed before failing (a report whose verdict is the failure).
    pub output: String,
}

impl CliError {
    pub fn new(message: impl std::fmt::Display) -> Self {
        CliError {
            message: message.to_string(),
            code: 1,
            output: String::new(),
        }
    }

    /// A failure that still prints `output` (to stdout) before the message.
    pub fn with_output(output: String, message: impl std::fmt::Display) -> Self {
        CliError {
            output,
            ..CliError::new(message)
        }
    }
}

impl<E: std::error::Error> From<E> for CliError {
    fn from(e: E) -> Self {
        CliError::new(e)
    }
}

pub type CliResult = Result<String, CliError>;
