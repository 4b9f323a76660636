//! Protobuf text format for GE's `ge.proto` messages, byte-compatible with the
//! output of C++ `google::protobuf::TextFormat::Print` (what GE writes as
//! `ge_proto_*.txt` dumps).
//!
//! The printer and parser work directly on the prost-generated structs in
//! [`crate::ge_proto`]; the printing rules are described in `docs/text-format.md`.
//!
//! ```
//! use rge_formats::ge_proto::{GraphDef, ModelDef};
//! use rge_formats::text_format::{parse_model_def, print_model_def};
//!
//! let model = ModelDef {
//!     graph: vec![GraphDef { name: "g".into(), ..Default::default() }],
//!     ..Default::default()
//! };
//! let text = print_model_def(&model);
//! assert_eq!(text, "graph {\n  name: \"g\"\n}\n");
//! assert_eq!(parse_model_def(&text).unwrap(), model);
//! ```

mod float;
mod lexer;
mod messages;
mod parser;
mod printer;

use crate::ge_proto;

pub use float::format_float;

/// Maximum nesting depth of messages accepted by the parser.
pub const MAX_DEPTH: usize = 100;

/// A text-format parse error, located at a 1-based line and column (columns
/// count Unicode scalar values).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{line}:{column}: {message}")]
pub struct TextFormatError {
    /// 1-based line of the offending token.
    pub line: usize,
    /// 1-based column of the offending token.
    pub column: usize,
    /// What went wrong.
    pub message: String,
}

/// Prints a `ModelDef` exactly as C++ `TextFormat::Print` does.
pub fn print_model_def(model: &ge_proto::ModelDef) -> String {
    model.to_text_format()
}

/// Parses a `ModelDef` from protobuf text format.
pub fn parse_model_def(text: &str) -> Result<ge_proto::ModelDef, TextFormatError> {
    ge_proto::ModelDef::from_text_format(text)
}

mod sealed {
    pub trait Sealed {}
}

/// Text-format printing and parsing, implemented for every message of
/// [`crate::ge_proto`].
pub trait TextFormat: Sized + sealed::Sealed {
    /// Prints the message as C++ `TextFormat::Print` does (fields at indentation 0).
    fn to_text_format(&self) -> String;
    /// Parses a message from text format.
    fn from_text_format(text: &str) -> Result<Self, TextFormatError>;
}

impl<T: messages::TextMessage> sealed::Sealed for T {}

impl<T: messages::TextMessage> TextFormat for T {
    fn to_text_format(&self) -> String {
        let mut p = printer::Printer::new();
        self.print_fields(&mut p);
        p.finish()
    }

    fn from_text_format(text: &str) -> Result<Self, TextFormatError> {
        parser::Parser::new(text).parse_top_level()
    }
}
