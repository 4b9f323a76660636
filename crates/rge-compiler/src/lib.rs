//! rge-compiler: from a graph to a compiled model (engines.md §2–§4.4, §4.7, §4.8).
//!
//! - [`manager`]: the engine manager ([`EngineManagerBuilder`] → frozen [`EngineManager`]):
//!   built-in engines, plugin engines, the custom engine (cost 0) for user ops, exclusions.
//! - [`options`]: [`CompileOptions`] (core engine type, excluded engines, core count, engine
//!   parallelism, dumps), readable from GE's option keys.
//! - [`placer`] + [`reassign`] + [`placement`]: every node gets an engine, with its reasons.
//! - [`partition`]: stage / dynamic-shape / composite / atomic partitioning with a near-linear,
//!   cycle-free cluster merge; End/PlaceHolder pairs; materializing and merging back.
//! - [`streams`]: streams per partition and events between them.
//! - [`pipeline`]: the compile pipeline and its stage dumps; [`stages`]: stage names, times,
//!   the stage log and the debug verifier; [`model`]: the compiled model.
//! - [`report`]: what `rge engines`, `rge place` and `rge partition` print.
//!
//! Pages: `docs/engines.md`, `docs/placement.md`, `docs/partitioning.md`, `docs/streams.md`,
//! `docs/pipeline.md`.

pub mod attr_names;
pub mod custom;
pub mod dump;
pub mod error;
pub mod graph_copy;
pub mod manager;
pub mod model;
pub mod optimize;
pub mod options;
pub mod partition;
pub mod pipeline;
pub mod placement;
pub mod placer;
pub mod reassign;
pub mod report;
pub mod stages;
pub mod streams;

pub use error::{CompileError, CompileResult, NoEngine};
pub use manager::{EngineId, EngineManager, EngineManagerBuilder, ExcludeReason, Exclusions};
pub use model::{CompiledModel, CompiledNode, PartitionSummary};
pub use options::{CompileOptions, CoreEngineType};
pub use partition::{
    merge_partitions, partition, MergeAlgorithm, PartitionInfo, PartitionMode, PartitionPlan,
};
pub use pipeline::{FnPass, GraphPass, Pipeline};
pub use placement::{Decision, NodePlacement, Placement, TypeAnswer};
pub use placer::{place, PlaceMode, Placer};
pub use reassign::{default_passes, DynamicDataFlowPass, HostExecPass, ReassignCtx, ReassignPass};
pub use stages::{stage_log_line, StageTime, STAGE_NAMES};
pub use streams::{assign_partition_streams, events, Event, PartitionStreams};
