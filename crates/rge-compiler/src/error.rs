//! The compiler's error type. Every variant names what is at fault: the node, the engine, the
//! option or the stage.

use thiserror::Error;

use rge_engine::EngineError;
use rge_ir::IrError;

/// Why no engine took a node: each engine asked, in cost order, with its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct NoEngine {
    pub node: String,
    pub op_type: String,
    /// `(engine, answer)` for every atomic engine, in the order they were considered.
    pub reasons: Vec<(String, String)>,
}

impl std::fmt::Display for NoEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "no engine supports node `{}` (type {})",
            self.node, self.op_type
        )?;
        if self.reasons.is_empty() {
            return f.write_str(": no engine is registered");
        }
        f.write_str(":")?;
        for (e, r) in &self.reasons {
            write!(f, "\n  {e}: {r}")?;
        }
        Ok(())
    }
}

#[derive(Debug, Error)]
pub enum CompileError {
    /// Building the engine registry failed (duplicate name, unknown composite member…).
    #[error("engine registry: {0}")]
    Registry(String),
    /// A bad option value.
    #[error("option `{key}`: {message}")]
    Option { key: String, message: String },
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("graph `{graph}`: {source}")]
    Ir {
        graph: String,
        #[source]
        source: IrError,
    },
    #[error("{0}")]
    NoEngine(Box<NoEngine>),
    /// A node's placement is impossible for another reason (unknown specified engine…).
    #[error("node `{node}`: {message}")]
    Placement { node: String, message: String },
    #[error("partitioning graph `{graph}`: {message}")]
    Partition { graph: String, message: String },
    /// A pipeline stage failed.
    #[error("stage `{stage}`: {message}")]
    Stage { stage: String, message: String },
    #[error("dumping to `{path}`: {message}")]
    Dump { path: String, message: String },
}

impl CompileError {
    pub(crate) fn ir(graph: &str, source: IrError) -> Self {
        CompileError::Ir {
            graph: graph.to_string(),
            source,
        }
    }
}

pub type CompileResult<T> = std::result::Result<T, CompileError>;
