//! rge runtime (engines.md §4.6): lowering through node converters into an execution graph,
//! static memory planning in one arena, executors (sequential, topological, parallel, priority,
//! stream), the Session, the single-op API and saved compiled models. Page: `docs/runtime.md`.

pub mod allocator;
mod assemble;
pub mod converters;
pub mod engines;
pub mod error;
pub mod exec;
pub mod flat;
pub mod fold;
pub mod fold_pass;
mod frame;
pub mod io;
mod keep_awake;
pub mod kernel_check;
pub mod kernels;
pub mod lower;
mod lower_prep;
pub mod memory;
pub mod model;
mod phony;
pub mod pinning;
pub mod plan;
pub mod profile;
pub mod program;
pub mod release;
pub mod saved;
pub mod session;
pub mod shape_cache;
pub mod single_op;
pub mod transfer;

pub use converters::{Converter, ConverterRegistry, Placement};
pub use engines::{is_local_op, EngineSet, EngineSetBuilder, LOCAL_OPS};
pub use error::{RuntimeError, RuntimeResult};
pub use exec::{run_program, ExecutorKind, RunOptions};
pub use fold::{fold_constants, FoldOptions, FoldReport};
pub use model::Model;
pub use pinning::ThreadPinning;
pub use plan::MemoryPlan;
pub use profile::Profiler;
pub use program::Program;
pub use saved::{is_compiled_model, save_model, save_model_into};
pub use session::{Session, SessionOptions};
pub use shape_cache::{ShapeSpecializedModel, DEFAULT_SHAPE_CACHE_CAPACITY};
pub use single_op::{OpSpec, SingleOp};
