//! The pipeline's named stages: their names in order, their timings (`StageTime`, kept in the
//! compiled model), the one-line log (`RGE_LOG` or `CompileOptions::verbose`), and the
//! verifier run after every stage in debug builds (ARCHITECTURE.md decision 12).

use std::time::{Duration, Instant};

use rge_ir::ComputeGraph;

use crate::error::{CompileError, CompileResult};

/// The stages in the order they run (`infer` only with an infer pass, `optimize_graph*`
/// only with graph passes, the `*_composite` ones only when a composite engine is in use).
pub const STAGE_NAMES: [&str; 17] = [
    "infer",
    "optimize_graph",
    "optimize_original",
    "optimize_graph_late",
    "place",
    "reassign",
    "partition_composite",
    "optimize_fused_composite",
    "merge_composite",
    "partition_atomic",
    "optimize_fused_atomic",
    "merge_atomic",
    "optimize_whole",
    "compile_ops",
    "running_params",
    "generate_kernels",
    "streams",
];

/// The anchor before every stage, for a pass inserted first.
pub const INPUT_STAGE: &str = "input";

/// Stages that work on the partition graphs: nothing can be inserted after them.
pub const PARTITION_STAGES: [&str; 4] = [
    "partition_composite",
    "optimize_fused_composite",
    "partition_atomic",
    "optimize_fused_atomic",
];

/// Stages after which the node set is fixed (nodes have been compiled).
pub const FIXED_NODE_STAGES: [&str; 4] = [
    "compile_ops",
    "running_params",
    "generate_kernels",
    "streams",
];

/// The environment variable that turns on the stage log (`info`, `debug` or `1`).
pub const LOG_ENV: &str = "RGE_LOG";

/// How long one stage took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StageTime {
    pub name: String,
    pub elapsed: Duration,
}

/// Whether an `RGE_LOG` value turns the stage log on.
pub fn log_level_enables(value: &str) -> bool {
    matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "info" | "debug" | "1"
    )
}

/// Whether `RGE_LOG` is set to a value that turns the stage log on.
pub fn log_enabled_by_env() -> bool {
    std::env::var(LOG_ENV).is_ok_and(|v| log_level_enables(&v))
}

/// The log line of one stage: `rge: stage <name> <ms> ms`, then where the kernel reports
/// it (Linux) the process's memory after the stage: `(rss <MiB> MiB, peak <MiB> MiB)`.
pub fn stage_log_line(name: &str, elapsed: Duration) -> String {
    let mut line = format!("rge: stage {name} {:.3} ms", elapsed.as_secs_f64() * 1e3);
    if let Some((rss, peak)) = process_memory() {
        let mib = |b: u64| b as f64 / f64::from(1u32 << 20);
        line += &format!(" (rss {:.0} MiB, peak {:.0} MiB)", mib(rss), mib(peak));
    }
    line
}

/// Resident and peak resident bytes of this process (`VmRSS`, `VmHWM`), where
/// `/proc/self/status` has them.
pub fn process_memory() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |key: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(key))?;
        let kib: u64 = line[key.len()..]
            .trim()
            .trim_end_matches("kB")
            .trim()
            .parse()
            .ok()?;
        Some(kib * 1024)
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// Where an inserted pass may go: after `input` or a stage that works on the whole graph.
pub fn check_insert_point(after: &str) -> Result<(), String> {
    if PARTITION_STAGES.contains(&after) {
        return Err(format!(
            "stage `{after}` works on partition graphs; insert before the partitioning or after its merge"
        ));
    }
    if after != INPUT_STAGE && !STAGE_NAMES.contains(&after) {
        return Err(format!(
            "no stage named `{after}` (stages: {INPUT_STAGE}, {})",
            STAGE_NAMES.join(", ")
        ));
    }
    Ok(())
}

/// Times stages, logs them, and verifies the graph after each in debug builds.
#[derive(Debug)]
pub(crate) struct StageClock {
    times: Vec<StageTime>,
    log: bool,
    verify: bool,
}

impl StageClock {
    pub(crate) fn new(log: bool) -> Self {
        StageClock {
            times: Vec::new(),
            log,
            verify: cfg!(debug_assertions),
        }
    }

    /// Runs stage `name`, recording how long it took when it succeeds.
    pub(crate) fn run<T>(
        &mut self,
        name: &str,
        f: impl FnOnce() -> CompileResult<T>,
    ) -> CompileResult<T> {
        let start = Instant::now();
        let out = f()?;
        let elapsed = start.elapsed();
        if self.log {
            eprintln!("{}", stage_log_line(name, elapsed));
        }
        self.times.push(StageTime {
            name: name.to_string(),
            elapsed,
        });
        Ok(out)
    }

    /// In debug builds, the verifier on `graph`; a failure names the stage.
    pub(crate) fn verify(&self, stage: &str, graph: &ComputeGraph) -> CompileResult<()> {
        if !self.verify {
            return Ok(());
        }
        graph.verify().map_err(|e| CompileError::Stage {
            stage: stage.to_string(),
            message: format!("the graph verifier failed after this stage: {e}"),
        })
    }

    /// [`StageClock::verify`] on every partition graph.
    pub(crate) fn verify_all(&self, stage: &str, graphs: &[ComputeGraph]) -> CompileResult<()> {
        graphs.iter().try_for_each(|g| self.verify(stage, g))
    }

    pub(crate) fn into_times(self) -> Vec<StageTime> {
        self.times
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_line_and_levels() {
        let line = stage_log_line("place", Duration::from_micros(1500));
        assert!(line.starts_with("rge: stage place 1.500 ms"), "{line}");
        assert!(log_level_enables("info") && log_level_enables("DEBUG") && log_level_enables("1"));
        assert!(!log_level_enables("") && !log_level_enables("0") && !log_level_enables("warn"));
    }

    #[test]
    fn insert_points_are_checked() {
        assert!(check_insert_point("place").is_ok());
        assert!(check_insert_point("input").is_ok());
        assert!(check_insert_point("optimize_fused_atomic")
            .unwrap_err()
            .contains("partition graphs"));
        assert!(check_insert_point("plcae")
            .unwrap_err()
            .contains("no stage named `plcae`"));
    }

    #[test]
    fn a_failed_stage_records_no_time() {
        let mut c = StageClock::new(false);
        c.run("a", || Ok(())).unwrap();
        let e = c
            .run("b", || -> CompileResult<()> {
                Err(CompileError::Registry("x".into()))
            })
            .unwrap_err();
        assert_eq!(e.to_string(), "engine registry: x");
        let names: Vec<String> = c.into_times().into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["a"]);
    }
}
