//! rge's engines: names, costs, runtime types and scheduling flags (ARCHITECTURE.md, "The
//! engines and their counterparts"). The real engines come in later issues; this table is what
//! they register with, so that placement and streams behave as GE's.

use crate::attrs::{EngineAttributes, RuntimeType, SchedulingFlags};

/// One row of the destination table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StandardEngine {
    /// rge's engine name.
    pub name: &'static str,
    /// GE's engine it stands for.
    pub ge_counterpart: &'static str,
    pub compute_cost: u8,
    pub runtime: RuntimeType,
    /// Members of a composite engine (empty for atomic ones).
    pub composite_members: &'static [&'static str],
    pub flags: SchedulingFlags,
}

impl StandardEngine {
    /// The attributes this engine registers with.
    pub fn attributes(&self) -> EngineAttributes {
        let a = EngineAttributes::new(self.name, self.compute_cost).with_runtime(self.runtime);
        if self.composite_members.is_empty() {
            a
        } else {
            a.composite(self.composite_members.iter().copied())
        }
    }
}

pub const CUSTOM: &str = "custom";
pub const DENSE: &str = "dense";
pub const FUSED: &str = "fused";
pub const VECTOR: &str = "vector";
pub const RNG: &str = "rng";
pub const RTS: &str = "rts";
pub const COMM: &str = "comm";
pub const CPU: &str = "cpu";
pub const CPU_TF: &str = "cpu_tf";
pub const MEDIA: &str = "media";
pub const LOCAL: &str = "local";
pub const HOST: &str = "host";

const fn row(
    name: &'static str,
    ge_counterpart: &'static str,
    compute_cost: u8,
    runtime: RuntimeType,
    composite_members: &'static [&'static str],
    flags: SchedulingFlags,
) -> StandardEngine {
    StandardEngine {
        name,
        ge_counterpart,
        compute_cost,
        runtime,
        composite_members,
        flags,
    }
}

/// rge's engines in GE's registration order of their counterparts' costs. Flags follow
/// `engine_conf.json` by counterpart (ge-reference §5.1).
pub const STANDARD_ENGINES: &[StandardEngine] = &[
    row(
        CUSTOM,
        "DNN_VM_CUSTOM",
        0,
        RuntimeType::Device,
        &[],
        SchedulingFlags::NONE,
    ),
    row(
        DENSE,
        "AIcoreEngine",
        1,
        RuntimeType::Device,
        &[],
        SchedulingFlags::NONE,
    ),
    row(
        FUSED,
        "ffts_plus",
        1,
        RuntimeType::Device,
        &[DENSE, VECTOR],
        SchedulingFlags::SKIP_ATTACH,
    ),
    row(
        VECTOR,
        "VectorEngine",
        2,
        RuntimeType::Device,
        &[],
        SchedulingFlags::NONE,
    ),
    row(
        RNG,
        "DSAEngine",
        2,
        RuntimeType::Device,
        &[],
        SchedulingFlags::NONE,
    ),
    row(
        RTS,
        "DNN_VM_RTS",
        2,
        RuntimeType::Device,
        &[],
        SchedulingFlags::SKIP_ATTACH,
    ),
    row(
        COMM,
        "DNN_HCCL",
        2,
        RuntimeType::Device,
        &[],
        SchedulingFlags::INDEPENDENT,
    ),
    row(
        CPU,
        "DNN_VM_AICPU_ASCEND",
        3,
        RuntimeType::Device,
        &[],
        SchedulingFlags::ATTACH,
    ),
    row(
        CPU_TF,
        "DNN_VM_AICPU",
        4,
        RuntimeType::Device,
        &[],
        SchedulingFlags::ATTACH,
    ),
    row(
        MEDIA,
        "DNN_VM_DVPP",
        5,
        RuntimeType::Device,
        &[],
        SchedulingFlags::ATTACH,
    ),
    row(
        LOCAL,
        "DNN_VM_GE_LOCAL",
        9,
        RuntimeType::Device,
        &[],
        SchedulingFlags::SKIP_ATTACH,
    ),
    row(
        HOST,
        "DNN_VM_HOST_CPU",
        10,
        RuntimeType::Host,
        &[],
        SchedulingFlags::SKIP_ATTACH,
    ),
];

/// The table row of a standard engine.
pub fn standard_engine(name: &str) -> Option<&'static StandardEngine> {
    STANDARD_ENGINES.iter().find(|e| e.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_the_destination() {
        let costs: Vec<(&str, u8)> = STANDARD_ENGINES
            .iter()
            .map(|e| (e.name, e.compute_cost))
            .collect();
        assert_eq!(
            costs,
            [
                ("custom", 0),
                ("dense", 1),
                ("fused", 1),
                ("vector", 2),
                ("rng", 2),
                ("rts", 2),
                ("comm", 2),
                ("cpu", 3),
                ("cpu_tf", 4),
                ("media", 5),
                ("local", 9),
                ("host", 10)
            ]
        );
        for e in STANDARD_ENGINES {
            e.attributes().validate().unwrap();
        }
        assert_eq!(standard_engine(HOST).unwrap().runtime, RuntimeType::Host);
        assert!(standard_engine(COMM).unwrap().flags.independent);
        assert!(!standard_engine(FUSED).unwrap().attributes().is_atomic());
        let local = standard_engine(LOCAL).unwrap().flags;
        assert!(local.skip_assign_stream && local.attach);
        assert_eq!(
            standard_engine(RTS).unwrap().flags,
            SchedulingFlags::SKIP_ATTACH
        );
    }
}
