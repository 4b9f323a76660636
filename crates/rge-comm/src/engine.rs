//! The `comm` engine (the seed's DNN_HCCL, cost 2, the only engine with `independent`: its
//! partitions get a stream of their own, so collectives overlap computation on the compute
//! streams; `docs/streams.md`). Its kernels are the Hcom collectives over one rank's
//! [`Communicator`]; a process builds its engine set with the communicator of its rank.

use std::sync::Arc;

use rge_engine::{
    BasicEngine, EngineAttributes, EngineKind, EngineResult, KernelStore, RuntimeType,
};
use rge_kernels::{DType, KernelDef, KernelSet, PortDef, TypeSet};

use crate::comm::Communicator;
use crate::kernels;

/// The engine's name.
pub const COMM: &str = "comm";

/// The collective op types the engine runs.
pub const COLLECTIVE_OPS: &[&str] = &[
    "HcomAllReduce",
    "HcomBroadcast",
    "HcomAllGather",
    "HcomReduceScatter",
    "HcomAllToAll",
    "HcomSend",
    "HcomReceive",
];

fn numeric() -> TypeSet {
    TypeSet::of(&[
        DType::Float,
        DType::Double,
        DType::Float16,
        DType::Bfloat16,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::Uint8,
        DType::Uint16,
        DType::Uint32,
        DType::Uint64,
    ])
}

fn movable() -> TypeSet {
    numeric().union(TypeSet::of(&[DType::Bool]))
}

/// The comm engine's kernel definitions over `comm`.
pub fn kernel_set(comm: Arc<dyn Communicator>) -> KernelSet {
    let mut set = KernelSet::new();
    for &op in COLLECTIVE_OPS {
        let c = comm.clone();
        let types = match op {
            "HcomAllReduce" | "HcomReduceScatter" => numeric(),
            _ => movable(),
        };
        let def = KernelDef::new(format!("{COMM}.{op}"), op, move |init| {
            kernels::create(op, init, &c)
        });
        let def = match op {
            "HcomSend" => def.inputs(vec![PortDef::types(types)]),
            "HcomReceive" => def.outputs(vec![PortDef::types(types)]),
            _ => def.all_inputs(types).all_outputs(types),
        };
        set.add(def);
    }
    set
}

/// The comm engine over one rank's communicator.
pub fn comm_engine(comm: Arc<dyn Communicator>) -> EngineResult<BasicEngine> {
    let engine = match BasicEngine::standard(COMM) {
        Some(e) => e,
        None => BasicEngine::new(EngineAttributes {
            name: COMM.into(),
            mem_types: vec!["HBM".into()],
            compute_cost: 2,
            runtime: RuntimeType::Device,
            input_format: rge_ir::Format::RESERVED,
            output_format: rge_ir::Format::RESERVED,
            kind: EngineKind::Atomic,
        }),
    };
    Ok(engine
        .with_store(KernelStore::new(COMM, "hccl_kernels", 2, kernel_set(comm)))
        .with_optimizer(crate::fusion::AllReduceFusion))
}
