//! rge's `comm` engine (the seed's HCCL engine DNN_HCCL, cost 2, `independent`): GE's
//! collective ops (HcomAllReduce, HcomBroadcast, HcomAllGather, HcomReduceScatter,
//! HcomAllToAll, HcomSend/HcomReceive) over a [`Communicator`] of one of two backends — the
//! in-process one (ranks are threads; [`local_world`]) and MPI (feature `mpi`, Open MPI through
//! the `mpi` crate) — and the passes and helpers of distributed runs (see
//! `docs/comm-engine.md`).

pub mod comm;
pub mod engine;
pub mod error;
pub mod fusion;
pub mod group;
pub mod kernels;
pub mod local;
pub mod reduce;

pub use comm::{gather_to_root, Communicator};
pub use engine::{comm_engine, kernel_set, COLLECTIVE_OPS, COMM};
pub use error::{CommError, CommResult};
pub use group::{Groups, WORLD_GROUP};
pub use local::{local_world, solo, LocalComm, DEFAULT_TIMEOUT};
pub use reduce::ReduceOp;
#[cfg(feature = "mpi")]
pub mod mpi_backend;
pub mod tensor_parallel;
