//! What an engine is, as the placer and partitioner see it: GE's `DNNEngineAttribute`
//! (engines.md §3.5, ge-reference §5.2) and the scheduling flags of `engine_conf.json` (§5.1).

use std::fmt;

use rge_ir::Format;

use crate::error::{EngineError, EngineResult};

/// The highest compute cost (GE's COST_10). Lower costs are preferred.
pub const MAX_COMPUTE_COST: u8 = 10;

/// Where an engine's kernels run (GE's `RuntimeType`; the value is GE's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RuntimeType {
    Host = 0,
    #[default]
    Device = 1,
}

impl RuntimeType {
    /// "HOST" or "DEVICE".
    pub const fn name(self) -> &'static str {
        match self {
            RuntimeType::Host => "HOST",
            RuntimeType::Device => "DEVICE",
        }
    }

    /// Parses "HOST"/"DEVICE" (any case).
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_uppercase().as_str() {
            "HOST" => Some(RuntimeType::Host),
            "DEVICE" => Some(RuntimeType::Device),
            _ => None,
        }
    }
}

impl fmt::Display for RuntimeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Atomic engines take single ops; a composite engine (GE's ffts_plus, rge's `fused`) manages
/// regions of ops placed on its atomic member engines (engines.md §4.8).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum EngineKind {
    #[default]
    Atomic,
    Composite {
        /// The atomic engines whose ops this engine may take over, by name.
        members: Vec<String>,
    },
}

impl EngineKind {
    pub fn is_atomic(&self) -> bool {
        matches!(self, EngineKind::Atomic)
    }
    /// The member engines of a composite engine (empty for an atomic one).
    pub fn members(&self) -> &[String] {
        match self {
            EngineKind::Atomic => &[],
            EngineKind::Composite { members } => members,
        }
    }
}

/// GE's `DNNEngineAttribute`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineAttributes {
    /// The engine name (unique in a registry).
    pub name: String,
    /// Memory types (GE always has `["HBM"]`).
    pub mem_types: Vec<String>,
    /// 0 (most preferred) to 10; placement asks engines in ascending cost.
    pub compute_cost: u8,
    pub runtime: RuntimeType,
    pub input_format: Format,
    pub output_format: Format,
    /// Atomic, or composite with its member engines.
    pub kind: EngineKind,
}

impl EngineAttributes {
    /// An atomic DEVICE engine with memory type HBM and RESERVED formats, as GE registers them.
    pub fn new(name: impl Into<String>, compute_cost: u8) -> Self {
        EngineAttributes {
            name: name.into(),
            mem_types: vec!["HBM".to_string()],
            compute_cost,
            runtime: RuntimeType::Device,
            input_format: Format::RESERVED,
            output_format: Format::RESERVED,
            kind: EngineKind::Atomic,
        }
    }

    /// Sets the runtime type.
    pub fn with_runtime(mut self, runtime: RuntimeType) -> Self {
        self.runtime = runtime;
        self
    }

    /// Makes the engine composite over `members`.
    pub fn composite<S: Into<String>>(mut self, members: impl IntoIterator<Item = S>) -> Self {
        self.kind = EngineKind::Composite {
            members: members.into_iter().map(Into::into).collect(),
        };
        self
    }

    pub fn is_atomic(&self) -> bool {
        self.kind.is_atomic()
    }

    /// Checks the name (non-empty, no whitespace or commas, which option lists use as
    /// separators), the cost range and a composite engine's member list.
    pub fn validate(&self) -> EngineResult<()> {
        let bad = |message: String| EngineError::Invalid {
            engine: self.name.clone(),
            message,
        };
        if self.name.is_empty()
            || self
                .name
                .chars()
                .any(|c| c.is_whitespace() || c == ',' || c == '|')
        {
            return Err(bad(
                "an engine name must be non-empty, without spaces, ',' or '|'".into(),
            ));
        }
        if self.compute_cost > MAX_COMPUTE_COST {
            return Err(bad(format!(
                "compute cost {} is out of range 0..={MAX_COMPUTE_COST}",
                self.compute_cost
            )));
        }
        if let EngineKind::Composite { members } = &self.kind {
            if members.is_empty() {
                return Err(bad("a composite engine needs at least one member".into()));
            }
            if members.iter().any(|m| m == &self.name) {
                return Err(bad("a composite engine cannot be its own member".into()));
            }
        }
        Ok(())
    }
}

/// Scheduling flags per engine, as `engine_conf.json` has them (ge-reference §5.1): missing
/// keys are false.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct SchedulingFlags {
    /// The engine's partitions get their own stream (GE: only HCCL; rge: `comm`).
    pub independent: bool,
    /// The engine's partitions may reuse the stream of the partition they depend on, even
    /// when that partition's engine differs.
    pub attach: bool,
    /// The engine's partitions get no stream at all.
    pub skip_assign_stream: bool,
}

impl SchedulingFlags {
    pub const NONE: SchedulingFlags = SchedulingFlags {
        independent: false,
        attach: false,
        skip_assign_stream: false,
    };
    pub const ATTACH: SchedulingFlags = SchedulingFlags {
        independent: false,
        attach: true,
        skip_assign_stream: false,
    };
    pub const SKIP_ATTACH: SchedulingFlags = SchedulingFlags {
        independent: false,
        attach: true,
        skip_assign_stream: true,
    };
    pub const INDEPENDENT: SchedulingFlags = SchedulingFlags {
        independent: true,
        attach: false,
        skip_assign_stream: false,
    };

    /// "independent", "attach", "skip" joined by '+', or "-" for none (listings).
    pub fn describe(self) -> String {
        let mut v = Vec::new();
        if self.independent {
            v.push("independent");
        }
        if self.skip_assign_stream {
            v.push("skip");
        }
        if self.attach {
            v.push("attach");
        }
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join("+")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validate_rejects_bad_attributes() {
        assert!(EngineAttributes::new("dense", 1).validate().is_ok());
        assert!(EngineAttributes::new("", 1).validate().is_err());
        assert!(EngineAttributes::new("a b", 1).validate().is_err());
        assert!(EngineAttributes::new("a,b", 1).validate().is_err());
        let e = EngineAttributes::new("x", 11).validate().unwrap_err();
        assert!(e.to_string().contains("out of range"), "{e}");
        let empty: [&str; 0] = [];
        assert!(EngineAttributes::new("f", 1)
            .composite(empty)
            .validate()
            .is_err());
        assert!(EngineAttributes::new("f", 1)
            .composite(["f"])
            .validate()
            .is_err());
        assert!(EngineAttributes::new("f", 1)
            .composite(["dense", "vector"])
            .validate()
            .is_ok());
    }

    #[test]
    fn flags_describe() {
        assert_eq!(SchedulingFlags::NONE.describe(), "-");
        assert_eq!(SchedulingFlags::SKIP_ATTACH.describe(), "skip+attach");
        assert_eq!(SchedulingFlags::INDEPENDENT.describe(), "independent");
        assert_eq!(RuntimeType::parse("host"), Some(RuntimeType::Host));
    }
}
