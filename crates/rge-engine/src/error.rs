//! The engine layer's error type. Every variant names the engine (and plugin file) at fault.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum EngineError {
    /// An engine operation failed (optimizer, compile, running params, task generation).
    #[error("engine `{engine}`: {message}")]
    Engine { engine: String, message: String },
    /// A plugin could not be loaded or answered badly.
    #[error("engine plugin `{path}`: {message}")]
    Plugin { path: String, message: String },
    /// A plugin speaks another ABI version.
    #[error(
        "engine plugin `{path}`: ABI version {found}, this rge speaks version {expected}; rebuild the plugin against rge-engine {expected}"
    )]
    AbiVersion {
        path: String,
        found: u32,
        expected: u32,
    },
    /// Invalid engine attributes or flags.
    #[error("invalid engine `{engine}`: {message}")]
    Invalid { engine: String, message: String },
    /// An IR error raised while an engine edited a graph.
    #[error("engine `{engine}`: {source}")]
    Ir {
        engine: String,
        #[source]
        source: rge_ir::IrError,
    },
    /// A rewrite an engine's optimizer asked for was refused; the graph is unchanged.
    #[error("engine `{engine}`: {source}")]
    Patch {
        engine: String,
        // Boxed: patch errors are large and rare.
        #[source]
        source: Box<rge_ir::PatchError>,
    },
}

impl EngineError {
    /// An [`EngineError::Engine`] for `engine`.
    pub fn engine(engine: impl Into<String>, message: impl Into<String>) -> Self {
        EngineError::Engine {
            engine: engine.into(),
            message: message.into(),
        }
    }

    /// Wraps a refused patch of `engine`.
    pub fn patch(engine: impl Into<String>, source: rge_ir::PatchError) -> Self {
        EngineError::Patch {
            engine: engine.into(),
            source: Box::new(source),
        }
    }

    /// Wraps an IR error raised by `engine`.
    pub fn ir(engine: impl Into<String>, source: rge_ir::IrError) -> Self {
        EngineError::Ir {
            engine: engine.into(),
            source,
        }
    }
}

pub type EngineResult<T> = std::result::Result<T, EngineError>;
