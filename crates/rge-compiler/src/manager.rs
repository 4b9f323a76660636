//! The engine manager (GE's `DNNEngineManager` + `OpsKernelManager`): engines are registered
//! into a builder — built-ins in code, plugins from shared libraries, the custom engine for user
//! ops — then frozen into a shared, immutable [`EngineManager`] (ARCHITECTURE.md decision 4).
//! Engines are finalized when the manager is dropped.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use rge_engine::{load_engine_plugin, Engine, EngineOptions};

use crate::custom::{CustomEngine, CustomOpCheck};
use crate::error::{CompileError, CompileResult};
use crate::options::{CompileOptions, CoreEngineType, EXCLUDE_ALIASES, OPTION_EXCLUDE_ENGINES};

/// An engine's index in its manager (registration order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EngineId(pub u16);

impl EngineId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Collects engines; [`EngineManagerBuilder::build`] checks and freezes them.
pub struct EngineManagerBuilder {
    engines: Vec<Box<dyn Engine>>,
    custom: Option<CustomEngine>,
    options: EngineOptions,
}

impl Default for EngineManagerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl EngineManagerBuilder {
    /// A builder holding the custom engine (cost 0, no ops yet), as GE's OpsKernelManager
    /// creates it at initialization.
    pub fn new() -> Self {
        EngineManagerBuilder {
            engines: Vec::new(),
            custom: Some(CustomEngine::new()),
            options: EngineOptions::new(),
        }
    }

    /// A builder without the custom engine.
    pub fn without_custom_engine() -> Self {
        EngineManagerBuilder {
            custom: None,
            ..Self::new()
        }
    }

    /// Options every engine is initialized with, and plugins loaded after this call.
    pub fn options(&mut self, options: EngineOptions) -> &mut Self {
        self.options = options;
        self
    }

    /// Registers an engine (names must be unique; checked at `build`).
    pub fn register(&mut self, engine: impl Engine + 'static) -> &mut Self {
        self.engines.push(Box::new(engine));
        self
    }

    pub fn register_boxed(&mut self, engine: Box<dyn Engine>) -> &mut Self {
        self.engines.push(engine);
        self
    }

    /// Loads an engine plugin (shared library) and registers its engines. The plugin is
    /// initialized with the builder's options now and finalized when the manager is dropped.
    pub fn load_plugin(&mut self, path: &Path) -> CompileResult<&mut Self> {
        let engines = load_engine_plugin(path, &self.options)?;
        self.engines.extend(engines);
        Ok(self)
    }

    /// Gives the custom engine a kernel for a user op type (every instance supported).
    pub fn custom_op(&mut self, op_type: impl Into<String>) -> &mut Self {
        self.custom
            .get_or_insert_with(CustomEngine::new)
            .add_op(op_type.into(), None);
        self
    }

    /// Gives the custom engine a kernel for a user op type, with a per-instance check.
    pub fn custom_op_checked(
        &mut self,
        op_type: impl Into<String>,
        check: impl Fn(&rge_ir::OpDesc) -> rge_engine::Support + Send + Sync + 'static,
    ) -> &mut Self {
        let check: CustomOpCheck = Box::new(check);
        self.custom
            .get_or_insert_with(CustomEngine::new)
            .add_op(op_type.into(), Some(check));
        self
    }

    /// Checks (valid attributes, unique names, composite members that exist and are atomic),
    /// initializes every engine, and freezes them.
    pub fn build(self) -> CompileResult<Arc<EngineManager>> {
        let mut engines = Vec::with_capacity(self.engines.len() + 1);
        if let Some(c) = self.custom {
            engines.push(Box::new(c) as Box<dyn Engine>);
        }
        engines.extend(self.engines);
        if engines.len() > usize::from(u16::MAX) {
            return Err(CompileError::Registry("too many engines".into()));
        }
        let mut names = HashMap::with_capacity(engines.len());
        for (i, e) in engines.iter().enumerate() {
            e.attributes().validate()?;
            if names
                .insert(e.name().to_string(), EngineId(i as u16))
                .is_some()
            {
                return Err(CompileError::Registry(format!(
                    "engine `{}` is registered twice",
                    e.name()
                )));
            }
        }
        let mut composite_of = vec![None; engines.len()];
        for (i, e) in engines.iter().enumerate() {
            for m in e.attributes().kind.members() {
                let Some(&mid) = names.get(m) else {
                    return Err(CompileError::Registry(format!(
                        "composite engine `{}` names member `{m}`, which is not registered",
                        e.name()
                    )));
                };
                if !engines[mid.index()].attributes().is_atomic() {
                    return Err(CompileError::Registry(format!(
                        "composite engine `{}` names member `{m}`, which is not atomic",
                        e.name()
                    )));
                }
                // The first registered composite engine owns a member (GE's atomic_2_composite_).
                if composite_of[mid.index()].is_none() {
                    composite_of[mid.index()] = Some(EngineId(i as u16));
                }
            }
        }
        for e in engines.iter_mut() {
            e.initialize(&self.options)?;
        }
        let mut by_cost: Vec<EngineId> = (0..engines.len()).map(|i| EngineId(i as u16)).collect();
        // Stable: equal costs keep registration order.
        by_cost.sort_by_key(|id| engines[id.index()].attributes().compute_cost);
        Ok(Arc::new(EngineManager {
            engines,
            names,
            by_cost,
            composite_of,
        }))
    }
}

/// Why an engine is excluded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExcludeReason {
    /// The other core engine was chosen.
    CoreEngineType(CoreEngineType),
    /// Listed in `ge.exec.exclude_engines`.
    Option,
}

impl fmt::Display for ExcludeReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExcludeReason::CoreEngineType(t) => {
                write!(f, "excluded (core engine type is {})", t.engine())
            }
            ExcludeReason::Option => write!(f, "excluded by {OPTION_EXCLUDE_ENGINES}"),
        }
    }
}

/// The excluded engines of one compilation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exclusions {
    reasons: Vec<Option<ExcludeReason>>,
}

impl Exclusions {
    pub fn reason(&self, id: EngineId) -> Option<&ExcludeReason> {
        self.reasons.get(id.index()).and_then(Option::as_ref)
    }
    pub fn is_excluded(&self, id: EngineId) -> bool {
        self.reason(id).is_some()
    }
}

/// The frozen registry.
pub struct EngineManager {
    engines: Vec<Box<dyn Engine>>,
    names: HashMap<String, EngineId>,
    by_cost: Vec<EngineId>,
    composite_of: Vec<Option<EngineId>>,
}

impl fmt::Debug for EngineManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.engines.iter().map(|e| e.name()))
            .finish()
    }
}

impl Drop for EngineManager {
    fn drop(&mut self) {
        for e in self.engines.iter().rev() {
            e.finalize();
        }
    }
}

impl EngineManager {
    /// A builder (with the custom engine).
    pub fn builder() -> EngineManagerBuilder {
        EngineManagerBuilder::new()
    }

    pub fn len(&self) -> usize {
        self.engines.len()
    }
    pub fn is_empty(&self) -> bool {
        self.engines.is_empty()
    }
    pub fn engine(&self, id: EngineId) -> &dyn Engine {
        &*self.engines[id.index()]
    }
    pub fn name(&self, id: EngineId) -> &str {
        self.engines[id.index()].name()
    }
    pub fn id(&self, name: &str) -> Option<EngineId> {
        self.names.get(name).copied()
    }
    pub fn get(&self, name: &str) -> Option<&dyn Engine> {
        self.id(name).map(|id| self.engine(id))
    }
    /// Engines in registration order.
    pub fn ids(&self) -> impl Iterator<Item = EngineId> + '_ {
        (0..self.engines.len()).map(|i| EngineId(i as u16))
    }
    /// Engines by ascending compute cost; equal costs in registration order.
    pub fn by_cost(&self) -> &[EngineId] {
        &self.by_cost
    }
    /// The composite engine an atomic engine belongs to (the first registered one).
    pub fn composite_of(&self, id: EngineId) -> Option<EngineId> {
        self.composite_of[id.index()]
    }
    /// The kernel library name of an engine's store ("" without a store).
    pub fn kernel_lib(&self, id: EngineId) -> &str {
        self.engine(id)
            .kernel_store()
            .map_or("", |s| s.kernel_lib_name())
    }

    /// Resolves an engine name or GE accelerator alias.
    pub fn resolve(&self, name: &str) -> Option<EngineId> {
        self.id(name).or_else(|| {
            EXCLUDE_ALIASES
                .iter()
                .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
                .and_then(|(_, rge)| self.id(rge))
        })
    }

    /// The exclusions of `options`: the core engine not chosen, and the listed engines (each
    /// must name a registered engine or a GE alias of one).
    pub fn exclusions(&self, options: &CompileOptions) -> CompileResult<Exclusions> {
        let mut reasons = vec![None; self.engines.len()];
        if let Some(core) = options.core_engine_type {
            if let Some(id) = self.id(core.excluded_engine()) {
                reasons[id.index()] = Some(ExcludeReason::CoreEngineType(core));
            }
        }
        for name in &options.exclude_engines {
            let id = self.resolve(name).ok_or_else(|| CompileError::Option {
                key: OPTION_EXCLUDE_ENGINES.into(),
                message: format!(
                    "unknown engine `{name}` (registered: {})",
                    self.engines
                        .iter()
                        .map(|e| e.name())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            })?;
            reasons[id.index()].get_or_insert(ExcludeReason::Option);
        }
        Ok(Exclusions { reasons })
    }
}
