//! Compile options (engines.md §3.4): the core engine type, excluded engines, core count,
//! engine parallelism, graph dumps; readable from GE's option keys.

use std::collections::BTreeMap;
use std::path::PathBuf;

use rge_engine::standard::{DENSE, VECTOR};
use rge_engine::EngineOptions;

use crate::error::{CompileError, CompileResult};

/// GE's `ge.engineType`: which of the two mutually exclusive core engines is in use.
pub const OPTION_ENGINE_TYPE: &str = "ge.engineType";
/// GE's `ge.exec.exclude_engines`: engines never chosen ("," or "|" separated).
pub const OPTION_EXCLUDE_ENGINES: &str = "ge.exec.exclude_engines";
/// GE's `ge.aicoreNum`: cores for the core engine.
pub const OPTION_CORE_NUM: &str = "ge.aicoreNum";
/// GE's `ge.exec.enableEngineParallel`: "1"/"0".
pub const OPTION_ENGINE_PARALLEL: &str = "ge.exec.enableEngineParallel";
/// rge: a directory for per-stage graph dumps.
pub const OPTION_DUMP_GRAPH: &str = "rge.dumpGraph";
/// rge: the environment variable for per-stage graph dumps (used when the option is unset).
pub const DUMP_GRAPH_ENV: &str = "RGE_DUMP_GRAPH";

/// The core engine type. `dense` (GE's AIcoreEngine) and `vector` (GE's VectorEngine) are
/// mutually exclusive once one is chosen (`ge.engineType`): the other is excluded. Without the
/// option both stay (each op goes to the cheaper one that runs it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum CoreEngineType {
    #[default]
    Dense,
    Vector,
}

impl CoreEngineType {
    /// rge's names and GE's ("AIcoreEngine", "AiCore", "VectorEngine", "VectorCore",
    /// "AiVector"), any case.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "dense" | "aicoreengine" | "aicore" => Some(CoreEngineType::Dense),
            "vector" | "vectorengine" | "vectorcore" | "aivector" => Some(CoreEngineType::Vector),
            _ => None,
        }
    }

    /// The engine in use.
    pub fn engine(self) -> &'static str {
        match self {
            CoreEngineType::Dense => DENSE,
            CoreEngineType::Vector => VECTOR,
        }
    }

    /// The core engine this choice excludes.
    pub fn excluded_engine(self) -> &'static str {
        match self {
            CoreEngineType::Dense => VECTOR,
            CoreEngineType::Vector => DENSE,
        }
    }
}

/// GE's accelerator names for `ge.exec.exclude_engines` and the rge engines they mean.
pub const EXCLUDE_ALIASES: &[(&str, &str)] = &[
    ("AiCore", "dense"),
    ("AiVector", "vector"),
    ("Dsa", "rng"),
    ("Dvpp", "media"),
    ("AiCpuAscend", "cpu"),
    ("AiCpu", "cpu_tf"),
    ("HostCpu", "host"),
    ("Hccl", "comm"),
    ("FftsPlus", "fused"),
];

/// Options of one compilation.
#[derive(Debug, Clone)]
pub struct CompileOptions {
    /// The chosen core engine type; `None` (the default) keeps both core engines.
    pub core_engine_type: Option<CoreEngineType>,
    /// Engines never chosen, by rge name or GE accelerator name.
    pub exclude_engines: Vec<String>,
    /// Cores for the core engine (passed to engines; `None` = all).
    pub core_num: Option<u32>,
    /// Partitions of different engines may run on parallel streams (default); when off, every
    /// stream-assigned partition except those of independent engines shares one stream.
    pub engine_parallel: bool,
    /// Directory for per-stage dumps (`NN_<stage>.txt`); when unset, `RGE_DUMP_GRAPH`.
    pub dump_dir: Option<PathBuf>,
    /// Print one line per pipeline stage to stderr (`rge: stage <name> <ms> ms`); also on
    /// when `RGE_LOG` is `info`, `debug` or `1`.
    pub verbose: bool,
    /// Work budget of one cluster-merge check (clusters and edges visited) in partitioning;
    /// a check that would need more refuses the merge. See `docs/partitioning.md`.
    pub merge_search_budget: u32,
    /// The cluster-merge algorithm (rge's, or GE's reference for comparison).
    pub merge_algorithm: crate::partition::MergeAlgorithm,
    /// The graph optimization level and the passes turned off (`rge.optimization`,
    /// `rge.disabledPasses`; docs/optimizations.md).
    pub optimization: crate::optimize::OptSettings,
    /// Every option as given, handed to engines and graph passes.
    pub raw: EngineOptions,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            core_engine_type: None,
            exclude_engines: Vec::new(),
            core_num: None,
            engine_parallel: true,
            dump_dir: None,
            verbose: false,
            merge_search_budget: 256,
            merge_algorithm: crate::partition::MergeAlgorithm::Incremental,
            optimization: crate::optimize::OptSettings::default(),
            raw: EngineOptions::new(),
        }
    }
}

fn bad(key: &str, message: impl Into<String>) -> CompileError {
    CompileError::Option {
        key: key.to_string(),
        message: message.into(),
    }
}

/// Splits an engine list on ',' and '|', trimming, dropping empty items.
pub fn split_engine_list(s: &str) -> Vec<String> {
    s.split([',', '|'])
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(String::from)
        .collect()
}

/// Parses an optimization level (`none`, `basic`, `all`); an error names the option.
pub fn parse_opt_level(v: &str) -> CompileResult<crate::optimize::OptLevel> {
    crate::optimize::OptLevel::parse(v).ok_or_else(|| {
        bad(
            crate::optimize::OPTION_OPTIMIZATION,
            format!("`{v}` is not an optimization level (none, basic or all)"),
        )
    })
}

impl CompileOptions {
    /// Reads GE's option keys (and rge's `rge.dumpGraph`); unknown keys are kept in `raw` only.
    pub fn from_options(options: &BTreeMap<String, String>) -> CompileResult<Self> {
        let mut o = CompileOptions {
            raw: options.clone(),
            ..Default::default()
        };
        if let Some(v) = options.get(OPTION_ENGINE_TYPE) {
            o.core_engine_type = Some(CoreEngineType::parse(v).ok_or_else(|| {
                bad(
                    OPTION_ENGINE_TYPE,
                    format!("`{v}` is not a core engine type (dense or vector)"),
                )
            })?);
        }
        if let Some(v) = options.get(OPTION_EXCLUDE_ENGINES) {
            o.exclude_engines = split_engine_list(v);
        }
        if let Some(v) = options.get(OPTION_CORE_NUM) {
            let n: u32 =
                v.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    bad(OPTION_CORE_NUM, format!("`{v}` is not a positive integer"))
                })?;
            o.core_num = Some(n);
        }
        if let Some(v) = options.get(OPTION_ENGINE_PARALLEL) {
            o.engine_parallel = match v.trim() {
                "1" | "true" | "True" => true,
                "0" | "false" | "False" => false,
                _ => return Err(bad(OPTION_ENGINE_PARALLEL, format!("`{v}` is not 0 or 1"))),
            };
        }
        if let Some(v) = options.get(OPTION_DUMP_GRAPH) {
            o.dump_dir = (!v.is_empty()).then(|| PathBuf::from(v));
        }
        if let Some(v) = options.get(crate::optimize::OPTION_OPTIMIZATION) {
            o.optimization.level = parse_opt_level(v)?;
        }
        if let Some(v) = options.get(crate::optimize::OPTION_DISABLED_PASSES) {
            o.optimization.disabled = split_engine_list(v);
        }
        Ok(o)
    }

    /// The dump directory: the option, else `RGE_DUMP_GRAPH` when set and non-empty.
    pub fn resolved_dump_dir(&self) -> Option<PathBuf> {
        self.dump_dir.clone().or_else(|| {
            std::env::var_os(DUMP_GRAPH_ENV)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        })
    }

    /// The options engines are initialized with: `raw` plus the resolved typed values.
    pub fn engine_options(&self) -> EngineOptions {
        let mut m = self.raw.clone();
        if let Some(t) = self.core_engine_type {
            m.insert(OPTION_ENGINE_TYPE.into(), t.engine().into());
        }
        if let Some(n) = self.core_num {
            m.insert(OPTION_CORE_NUM.into(), n.to_string());
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn ge_keys_are_read_and_checked() {
        let o = CompileOptions::from_options(&opts(&[
            (OPTION_ENGINE_TYPE, "VectorEngine"),
            (OPTION_EXCLUDE_ENGINES, "AiCpu| media ,"),
            (OPTION_CORE_NUM, "8"),
            (OPTION_ENGINE_PARALLEL, "0"),
        ]))
        .unwrap();
        assert_eq!(o.core_engine_type, Some(CoreEngineType::Vector));
        let d = CompileOptions::from_options(&BTreeMap::new()).unwrap();
        assert_eq!(
            d.core_engine_type, None,
            "the default keeps both core engines"
        );
        assert_eq!(o.exclude_engines, ["AiCpu", "media"]);
        assert_eq!(o.core_num, Some(8));
        assert!(!o.engine_parallel);
        let e = CompileOptions::from_options(&opts(&[(OPTION_ENGINE_TYPE, "tpu")])).unwrap_err();
        assert!(e.to_string().contains("ge.engineType"), "{e}");
        assert!(CompileOptions::from_options(&opts(&[(OPTION_CORE_NUM, "0")])).is_err());
        assert_eq!(CoreEngineType::Vector.excluded_engine(), "dense");
    }

    #[test]
    fn optimization_keys_are_read_and_checked() {
        use crate::optimize::{OptLevel, OPTION_DISABLED_PASSES, OPTION_OPTIMIZATION};
        let o = CompileOptions::from_options(&opts(&[
            (OPTION_OPTIMIZATION, "basic"),
            (OPTION_DISABLED_PASSES, "dead_nodes, cast_elimination"),
        ]))
        .unwrap();
        assert_eq!(o.optimization.level, OptLevel::Basic);
        assert_eq!(o.optimization.disabled, ["dead_nodes", "cast_elimination"]);
        assert_eq!(CompileOptions::default().optimization.level, OptLevel::All);
        let e = CompileOptions::from_options(&opts(&[(OPTION_OPTIMIZATION, "max")])).unwrap_err();
        assert!(e.to_string().contains("rge.optimization"), "{e}");
    }
}
